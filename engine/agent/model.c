/* The model client's base: the conversation, replies and tool calls, and
 * what the three protocols share (model_wire.h). The protocols are
 * model_chat.c, model_messages.c and model_responses.c, the configuration
 * model_config.c, and the call itself (HTTP, retries, the judge)
 * model_call.c, above them all: nothing here calls up. */

#include "engine/agent/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/agent/model_wire.h"
#include "engine/util/buf.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"

static const char *const api_names[] = {
	[RK_MODEL_API_CHAT] = "chat",
	[RK_MODEL_API_MESSAGES] = "messages",
	[RK_MODEL_API_RESPONSES] = "responses",
};

const char *rk_model_api_name(enum rk_model_api api)
{
	return (unsigned)api < sizeof(api_names) / sizeof(api_names[0]) ? api_names[api] : NULL;
}

/* ---- the conversation ---- */

struct rk_model_conversation *rk_model_conversation_new(void)
{
	return rk_xcalloc(1, sizeof(struct rk_model_conversation));
}

static void part_release(struct rk_model_part *p)
{
	free(p->text);
	free(p->label);
	free(p->png);
	free(p->file_id);
}

static void calls_free(struct rk_model_tool_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].id);
		free(calls[i].name);
		free(calls[i].arguments);
		free(calls[i].safety_checks);
	}
	free(calls);
}

void rk_model_message_free(struct rk_model_message *m)
{
	if (!m)
		return;
	for (size_t k = 0; k < m->nparts; k++)
		part_release(&m->parts[k]);
	free(m->parts);
	calls_free(m->calls, m->ncalls);
	free(m->tool_call_id);
	free(m->acknowledged);
	free(m->vendor_json);
	free(m);
}

void rk_model_conversation_truncate(struct rk_model_conversation *c, size_t from)
{
	while (c->n > from)
		rk_model_message_free(c->msgs[--c->n]);
	if (from == 0)
		c->last_frame_hash[0] = '\0';
}

void rk_model_conversation_free(struct rk_model_conversation *c)
{
	if (!c)
		return;
	rk_model_conversation_truncate(c, 0);
	free(c->msgs);
	for (size_t i = 0; i < c->nstale; i++)
		free(c->stale_files[i]);
	free(c->stale_files);
	free(c);
}

void rk_model_file_drop(struct rk_model_conversation *c, struct rk_model_part *p)
{
	char *id = p->file_id;
	p->file_id = NULL;
	if (!id)
		return;
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++) {
			const struct rk_model_part *o = &c->msgs[i]->parts[k];
			if (o->kind == RK_MODEL_IMAGE && o->file_id && !strcmp(o->file_id, id)) {
				free(id); /* still shown by another image */
				return;
			}
		}
	c->stale_files = rk_xrealloc(c->stale_files, (c->nstale + 1) * sizeof(*c->stale_files));
	c->stale_files[c->nstale++] = id;
}

static struct rk_model_part *new_part(struct rk_model_message *m)
{
	m->parts = rk_xrealloc(m->parts, (m->nparts + 1) * sizeof(*m->parts));
	struct rk_model_part *p = &m->parts[m->nparts++];
	memset(p, 0, sizeof(*p));
	return p;
}

void rk_model_message_add_text(struct rk_model_message *m, const char *text)
{
	struct rk_model_part *p = new_part(m);
	p->kind = RK_MODEL_TEXT;
	p->text = rk_xstrdup(text ? text : "");
}

struct rk_model_message *rk_model_add_message(struct rk_model_conversation *c, enum rk_model_role role,
					      const char *text)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->msgs = rk_xrealloc(c->msgs, c->cap * sizeof(*c->msgs));
	}
	struct rk_model_message *m = rk_xcalloc(1, sizeof(*m));
	m->role = role;
	if (text)
		rk_model_message_add_text(m, text);
	c->msgs[c->n++] = m;
	return m;
}

struct rk_model_message *rk_model_add_tool_result(struct rk_model_conversation *c, const char *call_id,
						  const char *text)
{
	struct rk_model_message *m = rk_model_add_message(c, RK_MODEL_TOOL, text);
	m->tool_call_id = rk_xstrdup(call_id ? call_id : "");
	return m;
}

struct rk_model_message *rk_model_add_reply(struct rk_model_conversation *c, const struct rk_model_reply *r)
{
	struct rk_model_message *m = rk_model_add_message(c, RK_MODEL_ASSISTANT, r->text);
	if (r->ncalls) {
		m->calls = rk_xcalloc(r->ncalls, sizeof(*m->calls));
		for (size_t i = 0; i < r->ncalls; i++) {
			m->calls[i].id = rk_xstrdup(r->calls[i].id);
			m->calls[i].name = rk_xstrdup(r->calls[i].name);
			m->calls[i].arguments = rk_xstrdup(r->calls[i].arguments);
			m->calls[i].native = r->calls[i].native;
			m->calls[i].safety_checks = rk_xstrdup(r->calls[i].safety_checks);
		}
		m->ncalls = r->ncalls;
	}
	m->vendor_json = rk_xstrdup(r->vendor_json);
	m->vendor_api = r->vendor_api;
	return m;
}

int rk_model_message_add_image(struct rk_model_conversation *c, struct rk_model_message *m, const void *png, size_t len,
			       const char *frame_hash, const char *label)
{
	return rk_model_message_add_image_as(c, m, NULL, png, len, frame_hash, label);
}

int rk_model_message_add_image_as(struct rk_model_conversation *c, struct rk_model_message *m, const char *mime,
				  const void *data, size_t len, const char *frame_hash, const char *label)
{
	struct rk_model_part *p = new_part(m);
	p->is_frame = 1;
	p->label = rk_xstrdup(label ? label : "screenshot");
	if (frame_hash)
		snprintf(p->frame_hash, sizeof(p->frame_hash), "%s", frame_hash);
	if (p->frame_hash[0] && strcmp(p->frame_hash, c->last_frame_hash) == 0) {
		p->kind = RK_MODEL_TEXT;
		p->text = rk_xasprintf("[screenshot unchanged since the previous one, so no image is attached: %s]",
				       p->label);
		return 0;
	}
	p->kind = RK_MODEL_IMAGE;
	p->png = rk_xmalloc(len ? len : 1);
	memcpy(p->png, data, len);
	p->png_len = len;
	snprintf(p->mime, sizeof(p->mime), "%s", mime && *mime ? mime : "image/png");
	snprintf(c->last_frame_hash, sizeof(c->last_frame_hash), "%s", p->frame_hash);
	return 1;
}

int rk_model_prune_images(struct rk_model_conversation *c, int keep_last, int block)
{
	if (keep_last <= 0)
		keep_last = RK_MODEL_KEEP_IMAGES_DEFAULT;
	if (block < 0)
		block = 0;
	if (rk_model_image_count(c) <= keep_last + block)
		return 0;
	int seen = 0, pruned = 0;
	for (size_t i = c->n; i-- > 0;) {
		struct rk_model_message *m = c->msgs[i];
		for (size_t k = m->nparts; k-- > 0;) {
			struct rk_model_part *p = &m->parts[k];
			if (p->kind != RK_MODEL_IMAGE)
				continue;
			if (++seen <= keep_last)
				continue;
			free(p->png);
			p->png = NULL;
			p->png_len = 0;
			p->kind = RK_MODEL_TEXT;
			p->pruned = 1;
			rk_model_file_drop(c, p);
			p->text = rk_xasprintf("[screenshot omitted to save context (only the last %d are kept): %s]",
					       keep_last, p->label);
			pruned++;
		}
	}
	return pruned;
}

int rk_model_image_count(const struct rk_model_conversation *c)
{
	int n = 0;
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++)
			n += c->msgs[i]->parts[k].kind == RK_MODEL_IMAGE;
	return n;
}

/* ---- what the protocols share ---- */

const char *rk_model_part_mime(const struct rk_model_part *p)
{
	return p->mime[0] ? p->mime : "image/png";
}

char *rk_model_part_data_url(const struct rk_model_part *p)
{
	char *b64 = rk_base64_encode(p->png, p->png_len);
	char *url = rk_xasprintf("data:%s;base64,%s", rk_model_part_mime(p), b64);
	free(b64);
	return url;
}

char *rk_model_image_label(const struct rk_model_part *p, const char *call_id)
{
	return call_id ? rk_xasprintf("screenshot from tool call %s: %s", call_id, p->label)
		       : rk_xasprintf("screenshot: %s", p->label);
}

char *rk_model_joined_text(const struct rk_model_message *m)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (size_t k = 0; k < m->nparts; k++) {
		if (m->parts[k].kind != RK_MODEL_TEXT)
			continue;
		if (b.len)
			rk_buf_addc(&b, '\n');
		rk_buf_adds(&b, m->parts[k].text);
	}
	return rk_buf_detach(&b, NULL);
}

int rk_model_has_image(const struct rk_model_message *m)
{
	for (size_t k = 0; k < m->nparts; k++)
		if (m->parts[k].kind == RK_MODEL_IMAGE)
			return 1;
	return 0;
}

char *rk_model_system_text(const struct rk_model_conversation *c)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	int any = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->msgs[i]->role != RK_MODEL_SYSTEM)
			continue;
		char *t = rk_model_joined_text(c->msgs[i]);
		if (any)
			rk_buf_adds(&b, "\n\n");
		rk_buf_adds(&b, t);
		free(t);
		any = 1;
	}
	if (!any) {
		rk_buf_release(&b);
		return NULL;
	}
	return rk_buf_detach(&b, NULL);
}

const struct rk_model_tool *rk_model_native_tool(const struct rk_model_tool *tools, size_t ntools)
{
	for (size_t i = 0; i < ntools; i++)
		if (tools[i].native_type)
			return &tools[i];
	return NULL;
}

cJSON *rk_model_args_object(const char *arguments)
{
	cJSON *v = arguments && *arguments ? cJSON_Parse(arguments) : NULL;
	if (cJSON_IsObject(v))
		return v;
	cJSON_Delete(v);
	return cJSON_CreateObject();
}

int64_t rk_model_json_count(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (int64_t)v->valuedouble : -1;
}

void rk_model_excerpt(struct rk_buf *out, const char *s, size_t len, size_t max)
{
	if (len == 0) {
		rk_buf_adds(out, "(empty body)");
		return;
	}
	rk_buf_addc(out, '"');
	for (size_t i = 0; i < len && i < max; i++) {
		unsigned char ch = (unsigned char)s[i];
		rk_buf_addc(out, ch >= 0x20 && ch < 0x7f ? (char)ch : ch == '\n' ? ' ' : '?');
	}
	rk_buf_adds(out, len > max ? "...\"" : "\"");
}

int rk_model_malformed(struct rk_error *err, const char *why, const char *body, size_t len)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	if (body)
		rk_model_excerpt(&b, body, len, 120);
	int rc = rk_error_set(err, RK_EFAILED, "the model endpoint returned a malformed reply: %s%s%s", why,
			      body ? ": " : "", b.data);
	rk_buf_release(&b);
	return rc;
}

void rk_model_server_message(const char *body, size_t len, struct rk_buf *out)
{
	cJSON *doc = cJSON_ParseWithLength(body, len);
	const char *msg = NULL, *param = NULL, *type = NULL;
	if (doc) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
		if (cJSON_IsObject(e)) {
			msg = rk_json_string(e, "message", NULL);
			/* the kind of error (both vendors' error.type); OpenAI
			 * names the request field at fault in param, Anthropic
			 * in the message ("messages.3.content.0: ...") */
			param = rk_json_string(e, "param", NULL);
			type = rk_json_string(e, "type", NULL);
		} else if (cJSON_IsString(e)) {
			msg = e->valuestring;
		}
		if (!msg)
			msg = rk_json_string(doc, "message", NULL);
		if (!msg)
			msg = rk_json_string(doc, "detail", NULL);
	}
	if (msg) {
		if (type && *type)
			rk_buf_printf(out, "%.64s: ", type);
		rk_model_excerpt(out, msg, strlen(msg), 400);
		if (param && *param) {
			rk_buf_adds(out, " (param: ");
			rk_model_excerpt(out, param, strlen(param), 100);
			rk_buf_adds(out, ")");
		}
	} else {
		rk_model_excerpt(out, body, len, 200);
	}
	cJSON_Delete(doc);
}

int rk_model_check_native(int api, const struct rk_model_tool *tools, size_t ntools, struct rk_error *err)
{
	for (size_t i = 0; i < ntools; i++) {
		const char *t = tools[i].native_type;
		if (!t)
			continue;
		if (api == RK_MODEL_API_CHAT)
			return rk_error_set(err, RK_EINVALID, "the chat protocol has no native computer tool");
		int ok = api == RK_MODEL_API_MESSAGES
				 ? strncmp(t, "computer_", 9) == 0 && strcmp(t, "computer_use_preview") != 0
				 : !strcmp(t, "computer") || !strcmp(t, "computer_use_preview");
		if (!ok)
			return rk_error_set(err, RK_EINVALID, "the %s protocol has no native tool of type '%.64s'",
					    rk_model_api_name((enum rk_model_api)api), t);
	}
	return 0;
}

/* ---- the reply ---- */

void rk_model_reply_release(struct rk_model_reply *r)
{
	if (!r)
		return;
	free(r->text);
	calls_free(r->calls, r->ncalls);
	free(r->finish_reason);
	free(r->vendor_json);
	free(r->refusal);
	memset(r, 0, sizeof(*r));
}

const char *rk_model_stop_of(const struct rk_model_reply *r)
{
	const char *f = r->finish_reason ? r->finish_reason : "";
	if (r->refusal || !strcmp(f, "refusal"))
		return "refusal";
	if (!strcmp(f, "max_tokens") || !strcmp(f, "max_output_tokens") || !strcmp(f, "length"))
		return "max_tokens";
	if (!strcmp(f, "pause_turn"))
		return "pause_turn";
	if (!strcmp(f, "model_context_window_exceeded"))
		return "context_window";
	if (!strcmp(f, "content_filter"))
		return "content_filter";
	return NULL;
}

int rk_model_tool_call_args(const struct rk_model_tool_call *call, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	const char *a = call->arguments ? call->arguments : "";
	size_t n = strlen(a);
	while (n && (a[n - 1] == ' ' || a[n - 1] == '\n' || a[n - 1] == '\t' || a[n - 1] == '\r'))
		n--;
	size_t s = strspn(a, " \n\t\r");
	if (s >= n) {
		*out = cJSON_CreateObject();
		return 0;
	}
	struct rk_error why;
	char *what = rk_xasprintf("the arguments for tool %s", call->name ? call->name : "");
	cJSON *doc = rk_json_parse(a + s, n - s, what, &why);
	free(what);
	if (!doc) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_model_excerpt(&b, a, strlen(a), 200);
		int rc = rk_error_set(err, RK_EINVALID, "%s: %s; send one JSON object", why.message, b.data);
		rk_buf_release(&b);
		return rc;
	}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return rk_error_set(err, RK_EINVALID, "the arguments for tool %s must be a JSON object", call->name);
	}
	*out = doc;
	return 0;
}
