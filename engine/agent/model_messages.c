/* Anthropic's Messages protocol (model.h has its wire format): the
 * conversation as "system" and alternating user and assistant turns, and
 * the reply's content blocks. */

#include <stdlib.h>
#include <string.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"

#define TOOLSET_PREFIX "computer_toolset_"

static int is_toolset(const struct rk_model_tool *native)
{
	return native && strncmp(native->native_type, TOOLSET_PREFIX, strlen(TOOLSET_PREFIX)) == 0;
}

static void add_text_block(cJSON *blocks, const char *text)
{
	if (!text || !*text)
		return; /* the API refuses an empty text block */
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "text");
	cJSON_AddStringToObject(t, "text", text);
	cJSON_AddItemToArray(blocks, t);
}

static void add_image_block(cJSON *blocks, const struct rk_model_part *p)
{
	char *label = rk_model_image_label(p, NULL);
	add_text_block(blocks, label);
	free(label);
	cJSON *img = cJSON_CreateObject();
	cJSON_AddStringToObject(img, "type", "image");
	cJSON *src = cJSON_AddObjectToObject(img, "source");
	if (p->file_id) { /* uploaded once (model_files.c) */
		cJSON_AddStringToObject(src, "type", "file");
		cJSON_AddStringToObject(src, "file_id", p->file_id);
		cJSON_AddItemToArray(blocks, img);
		return;
	}
	cJSON_AddStringToObject(src, "type", "base64");
	cJSON_AddStringToObject(src, "media_type", rk_model_part_mime(p));
	char *b64 = rk_base64_encode(p->png, p->png_len);
	cJSON_AddStringToObject(src, "data", b64);
	free(b64);
	cJSON_AddItemToArray(blocks, img);
}

/* A USER or TOOL message's parts as content blocks. */
static cJSON *part_blocks(const struct rk_model_message *m)
{
	cJSON *blocks = cJSON_CreateArray();
	for (size_t k = 0; k < m->nparts; k++) {
		if (m->parts[k].kind == RK_MODEL_IMAGE)
			add_image_block(blocks, &m->parts[k]);
		else
			add_text_block(blocks, m->parts[k].text);
	}
	return blocks;
}

/* An assistant turn rebuilt from its text and calls (a turn of another
 * protocol, or one without the vendor's form). */
static cJSON *assistant_blocks(const struct rk_model_message *m, const struct rk_model_tool *native)
{
	cJSON *blocks = cJSON_CreateArray();
	char *text = rk_model_joined_text(m);
	add_text_block(blocks, text);
	free(text);
	for (size_t i = 0; i < m->ncalls; i++) {
		const struct rk_model_tool_call *call = &m->calls[i];
		cJSON *u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "type", "tool_use");
		cJSON_AddStringToObject(u, "id", call->id ? call->id : "");
		cJSON *input = rk_model_args_object(call->arguments);
		const char *action = rk_json_string(input, "action", NULL);
		if (call->native && is_toolset(native) && action) {
			/* a toolset's member is named after the action */
			cJSON_AddStringToObject(u, "name", action);
			cJSON_AddStringToObject(u, "toolset_name", "computer");
			cJSON_DeleteItemFromObjectCaseSensitive(input, "action");
		} else {
			cJSON_AddStringToObject(u, "name", call->name ? call->name : "");
		}
		cJSON_AddItemToObject(u, "input", input);
		cJSON_AddItemToArray(blocks, u);
	}
	return blocks;
}

static cJSON *tool_result_block(const struct rk_model_message *m, const struct rk_model_tool *native)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "type", "tool_result");
	cJSON_AddStringToObject(r, "tool_use_id", m->tool_call_id ? m->tool_call_id : "");
	if (m->native && is_toolset(native))
		cJSON_AddStringToObject(r, "toolset_name", "computer");
	cJSON *content = part_blocks(m);
	if (cJSON_GetArraySize(content) > 0)
		cJSON_AddItemToObject(r, "content", content);
	else
		cJSON_Delete(content);
	return r;
}

/* Appends blocks (taken) as a turn of role, into the last turn when it has
 * the same role: the API wants user and assistant to alternate. */
static void add_turn(cJSON *msgs, const char *role, cJSON *blocks)
{
	if (cJSON_GetArraySize(blocks) == 0) {
		cJSON_Delete(blocks);
		return;
	}
	cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	if (last && !strcmp(rk_json_string(last, "role", ""), role)) {
		cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
		cJSON *b;
		while ((b = cJSON_DetachItemFromArray(blocks, 0)) != NULL)
			cJSON_AddItemToArray(content, b);
		cJSON_Delete(blocks);
		return;
	}
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "role", role);
	cJSON_AddItemToObject(msg, "content", blocks);
	cJSON_AddItemToArray(msgs, msg);
}

static cJSON *tool_json(const struct rk_model_tool *t)
{
	cJSON *o = cJSON_CreateObject();
	if (t->native_type) {
		cJSON_AddStringToObject(o, "type", t->native_type);
		if (is_toolset(t)) {
			/* a toolset entry has no name or display; zoom is one of
			 * its members, on unless turned off */
			if (!t->enable_zoom) {
				cJSON *zoom = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "configs"), "zoom");
				cJSON_AddFalseToObject(zoom, "enabled");
			}
			return o;
		}
		cJSON_AddStringToObject(o, "name", "computer");
		cJSON_AddNumberToObject(o, "display_width_px", t->display_w);
		cJSON_AddNumberToObject(o, "display_height_px", t->display_h);
		if (t->enable_zoom && !strcmp(t->native_type, "computer_20251124"))
			cJSON_AddTrueToObject(o, "enable_zoom");
		return o;
	}
	cJSON_AddStringToObject(o, "name", t->name);
	if (t->description)
		cJSON_AddStringToObject(o, "description", t->description);
	cJSON *schema = t->parameters ? cJSON_Duplicate(t->parameters, 1) : NULL;
	if (!schema) {
		schema = cJSON_CreateObject();
		cJSON_AddStringToObject(schema, "type", "object");
		cJSON_AddObjectToObject(schema, "properties");
	}
	cJSON_AddItemToObject(o, "input_schema", schema);
	return o;
}

static void mark(cJSON *block)
{
	if (!cJSON_IsObject(block) || cJSON_GetObjectItemCaseSensitive(block, "cache_control"))
		return;
	cJSON *cc = cJSON_AddObjectToObject(block, "cache_control");
	cJSON_AddStringToObject(cc, "type", "ephemeral");
}

/* Prompt caching's breakpoints (three of the four the API allows): the end
 * of the tools and system prompt, which never change in a run, and the last
 * block of each of the last two user turns. The newest is where the next
 * request's read will start; the one before is what this request reads,
 * however many blocks the turn between added (the API looks back only 20
 * blocks from a breakpoint). */
static void mark_cache_breakpoints(cJSON *req)
{
	cJSON *system = cJSON_GetObjectItemCaseSensitive(req, "system");
	if (cJSON_IsString(system)) {
		cJSON *blocks = cJSON_CreateArray();
		add_text_block(blocks, system->valuestring);
		mark(cJSON_GetArrayItem(blocks, 0));
		cJSON_ReplaceItemInObjectCaseSensitive(req, "system", blocks);
	} else {
		cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
		mark(cJSON_GetArrayItem(tools, cJSON_GetArraySize(tools) - 1));
	}
	cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	int marked = 0;
	for (int i = cJSON_GetArraySize(msgs) - 1; i >= 0 && marked < 2; i--) {
		cJSON *m = cJSON_GetArrayItem(msgs, i);
		if (strcmp(rk_json_string(m, "role", ""), "user") != 0)
			continue;
		cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		mark(cJSON_GetArrayItem(content, cJSON_GetArraySize(content) - 1));
		marked++;
	}
}

int rk_model_messages_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			      const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	int rc = rk_model_check_native(RK_MODEL_API_MESSAGES, tools, ntools, err);
	if (rc)
		return rc;
	const struct rk_model_tool *native = rk_model_native_tool(tools, ntools);
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "model", cfg->model ? cfg->model : "");
	cJSON_AddNumberToObject(req, "max_tokens", cfg->max_tokens > 0 ? cfg->max_tokens : RK_MODEL_MAX_TOKENS_DEFAULT);
	char *system = rk_model_system_text(c);
	if (system && *system)
		cJSON_AddStringToObject(req, "system", system);
	free(system);
	cJSON *msgs = cJSON_AddArrayToObject(req, "messages");
	for (size_t i = 0; i < c->n; i++) {
		const struct rk_model_message *m = c->msgs[i];
		switch (m->role) {
		case RK_MODEL_SYSTEM:
			break;
		case RK_MODEL_USER:
			add_turn(msgs, "user", part_blocks(m));
			break;
		case RK_MODEL_TOOL: {
			cJSON *blocks = cJSON_CreateArray();
			cJSON_AddItemToArray(blocks, tool_result_block(m, native));
			add_turn(msgs, "user", blocks);
			break;
		}
		case RK_MODEL_ASSISTANT: {
			/* the reply's own content: thinking blocks and all */
			cJSON *blocks = m->vendor_json && m->vendor_api == RK_MODEL_API_MESSAGES
						? cJSON_Parse(m->vendor_json)
						: NULL;
			if (!cJSON_IsArray(blocks)) {
				cJSON_Delete(blocks);
				blocks = assistant_blocks(m, native);
			}
			add_turn(msgs, "assistant", blocks);
			break;
		}
		}
	}
	if (ntools) {
		cJSON *arr = cJSON_AddArrayToObject(req, "tools");
		for (size_t i = 0; i < ntools; i++)
			cJSON_AddItemToArray(arr, tool_json(&tools[i]));
	}
	if (cfg->prompt_cache)
		mark_cache_breakpoints(req);
	if (cfg->compact_request) /* the vendor summarises the conversation (model_compact.c) */
		cJSON_AddItemToObject(req, "compaction", cJSON_Parse("{\"type\":\"summarize\"}"));
	*out = req;
	return 0;
}

/* A tool_use block as a call; native when it calls the declared native
 * tool (a toolset's member: its action goes into the arguments). */
static int add_call(struct rk_model_reply *r, const cJSON *b, const struct rk_model_tool *native, struct rk_error *err)
{
	const char *id = rk_json_string(b, "id", NULL);
	const char *name = rk_json_string(b, "name", NULL);
	if (!id || !*id || !name || !*name)
		return rk_model_malformed(err, "a tool_use block has no id or name", NULL, 0);
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(b, "input");
	if (input && !cJSON_IsObject(input))
		return rk_model_malformed(err, "a tool_use block's input is not an object", NULL, 0);
	struct rk_model_tool_call *c = &r->calls[r->ncalls++];
	c->id = rk_xstrdup(id);
	const char *toolset = rk_json_string(b, "toolset_name", NULL);
	if (native && toolset && !strcmp(toolset, "computer") && is_toolset(native)) {
		cJSON *args = cJSON_CreateObject();
		cJSON_AddStringToObject(args, "action", name);
		const cJSON *f;
		cJSON_ArrayForEach(f, input)
		{
			if (strcmp(f->string, "action") != 0)
				cJSON_AddItemToObject(args, f->string, cJSON_Duplicate(f, 1));
		}
		c->arguments = cJSON_PrintUnformatted(args);
		cJSON_Delete(args);
		c->name = rk_xstrdup("computer");
		c->native = 1;
		return 0;
	}
	c->name = rk_xstrdup(name);
	c->arguments = input ? cJSON_PrintUnformatted(input) : rk_xstrdup("{}");
	c->native = native && !is_toolset(native) && !strcmp(name, "computer");
	return 0;
}

int rk_model_messages_reply(const cJSON *doc, const char *body, size_t len, const struct rk_model_tool *tools,
			    size_t ntools, struct rk_model_reply *r, struct rk_error *err)
{
	if (!strcmp(rk_json_string(doc, "type", ""), "error") ||
	    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "error"))) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_model_server_message(body, len, &b);
		int rc = rk_error_set(err, RK_EFAILED, "the model endpoint answered with an error: %s", b.data);
		rk_buf_release(&b);
		return rc;
	}
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(doc, "content");
	if (!cJSON_IsArray(content))
		return rk_model_malformed(err, "no content list", body, len);
	const struct rk_model_tool *native = rk_model_native_tool(tools, ntools);
	size_t n = (size_t)cJSON_GetArraySize(content);
	r->calls = rk_xcalloc(n ? n : 1, sizeof(*r->calls));
	struct rk_buf text = RK_BUF_INIT;
	rk_buf_init(&text);
	int any_text = 0, rc = 0;
	const cJSON *b;
	cJSON_ArrayForEach(b, content)
	{
		const char *type = rk_json_string(b, "type", "");
		if (!strcmp(type, "text")) {
			if (any_text)
				rk_buf_addc(&text, '\n');
			rk_buf_adds(&text, rk_json_string(b, "text", ""));
			any_text = 1;
		} else if (!strcmp(type, "tool_use")) {
			if ((rc = add_call(r, b, native, err)) < 0)
				break;
		}
		/* thinking, redacted_thinking and the rest ride in vendor_json */
	}
	if (rc < 0) {
		rk_buf_release(&text);
		return rc;
	}
	r->text = any_text ? rk_buf_detach(&text, NULL) : NULL;
	if (!any_text)
		rk_buf_release(&text);
	r->vendor_json = cJSON_PrintUnformatted(content);
	r->vendor_api = RK_MODEL_API_MESSAGES;
	r->finish_reason = rk_xstrdup(rk_json_string(doc, "stop_reason", NULL));
	/* the safety classifiers stopped the reply: stop_details (RefusalStopDetails)
	 * may explain why and name a policy category; else its text (if any) says no */
	if (r->finish_reason && !strcmp(r->finish_reason, "refusal")) {
		const cJSON *sd = cJSON_GetObjectItemCaseSensitive(doc, "stop_details");
		const char *why = rk_json_string(sd, "explanation", NULL);
		const char *cat = rk_json_string(sd, "category", NULL);
		if (!why || !*why)
			why = r->text && *r->text ? r->text : "the model declined to go on (stop_reason refusal)";
		r->refusal = cat && *cat ? rk_xasprintf("%s (category %s)", why, cat) : rk_xstrdup(why);
	}
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
	int64_t in = rk_model_json_count(usage, "input_tokens");
	int64_t read = rk_model_json_count(usage, "cache_read_input_tokens");
	int64_t written = rk_model_json_count(usage, "cache_creation_input_tokens");
	r->prompt_tokens = in < 0 ? -1 : in + (read > 0 ? read : 0) + (written > 0 ? written : 0);
	r->completion_tokens = rk_model_json_count(usage, "output_tokens");
	r->cached_tokens = read;
	r->cache_write_tokens = written;
	return 0;
}
