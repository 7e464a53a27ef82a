/* OpenAI's Responses protocol (model.h has its wire format): the
 * conversation as "instructions" and input items, and the reply's output
 * items. No previous_response_id: store is off, so every turn sends the
 * whole input, the previous outputs (reasoning included) verbatim. */

#include <stdlib.h>
#include <string.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/json.h"

/* A 1x1 grey PNG: a computer_call_output must carry a screenshot, and a
 * native result whose frame was pruned or unchanged has no bytes. */
#define PLACEHOLDER_PNG_URL                                                                                            \
	"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg=="

static void add_input_text(cJSON *content, const char *text)
{
	if (!text || !*text)
		return;
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "input_text");
	cJSON_AddStringToObject(t, "text", text);
	cJSON_AddItemToArray(content, t);
}

static void add_input_image(cJSON *content, const struct rk_model_part *p)
{
	char *label = rk_model_image_label(p, NULL);
	add_input_text(content, label);
	free(label);
	cJSON *img = cJSON_CreateObject();
	cJSON_AddStringToObject(img, "type", "input_image");
	if (p->file_id) { /* uploaded once (model_files.c) */
		cJSON_AddStringToObject(img, "file_id", p->file_id);
	} else {
		char *url = rk_model_part_data_url(p);
		cJSON_AddStringToObject(img, "image_url", url);
		free(url);
	}
	cJSON_AddStringToObject(img, "detail", "auto"); /* required in a message's content */
	cJSON_AddItemToArray(content, img);
}

static cJSON *part_content(const struct rk_model_message *m)
{
	cJSON *content = cJSON_CreateArray();
	for (size_t k = 0; k < m->nparts; k++) {
		if (m->parts[k].kind == RK_MODEL_IMAGE)
			add_input_image(content, &m->parts[k]);
		else
			add_input_text(content, m->parts[k].text);
	}
	return content;
}

static void add_user(cJSON *input, cJSON *content)
{
	if (cJSON_GetArraySize(content) == 0) {
		cJSON_Delete(content);
		return;
	}
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "role", "user");
	cJSON_AddItemToObject(u, "content", content);
	cJSON_AddItemToArray(input, u);
}

/* An assistant turn rebuilt from its text and calls (a turn of another
 * protocol, or one without the vendor's form). */
static void add_assistant_rebuilt(cJSON *input, const struct rk_model_message *m)
{
	char *text = rk_model_joined_text(m);
	if (*text) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "role", "assistant");
		cJSON_AddStringToObject(a, "content", text);
		cJSON_AddItemToArray(input, a);
	}
	free(text);
	for (size_t i = 0; i < m->ncalls; i++) {
		const struct rk_model_tool_call *call = &m->calls[i];
		const char *id = call->id ? call->id : "";
		cJSON *o = cJSON_CreateObject();
		if (call->native) {
			cJSON_AddStringToObject(o, "type", "computer_call");
			cJSON_AddStringToObject(o, "id", id);
			cJSON_AddStringToObject(o, "call_id", id);
			cJSON *args = rk_model_args_object(call->arguments);
			cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(args, "actions");
			if (v)
				cJSON_AddItemToObject(o, "actions", v);
			else if ((v = cJSON_DetachItemFromObjectCaseSensitive(args, "action")) != NULL)
				cJSON_AddItemToObject(o, "action", v);
			cJSON_Delete(args);
			cJSON *checks = call->safety_checks ? cJSON_Parse(call->safety_checks) : NULL;
			if (!cJSON_IsArray(checks)) {
				cJSON_Delete(checks);
				checks = cJSON_CreateArray();
			}
			cJSON_AddItemToObject(o, "pending_safety_checks", checks);
			cJSON_AddStringToObject(o, "status", "completed");
		} else {
			cJSON_AddStringToObject(o, "type", "function_call");
			cJSON_AddStringToObject(o, "call_id", id);
			cJSON_AddStringToObject(o, "name", call->name ? call->name : "");
			cJSON_AddStringToObject(o, "arguments", call->arguments ? call->arguments : "{}");
		}
		cJSON_AddItemToArray(input, o);
	}
}

/* A native result: the screenshot as computer_call_output; its text (the
 * item has no room for it) goes into notes, sent after the run of
 * results. */
static void add_computer_output(cJSON *input, const struct rk_model_message *m, cJSON *notes)
{
	const char *id = m->tool_call_id ? m->tool_call_id : "";
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "computer_call_output");
	cJSON_AddStringToObject(o, "call_id", id);
	cJSON *shot = cJSON_AddObjectToObject(o, "output");
	cJSON_AddStringToObject(shot, "type", "computer_screenshot");
	char *url = NULL;
	const char *file_id = NULL;
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (size_t k = 0; k < m->nparts; k++) {
		const struct rk_model_part *p = &m->parts[k];
		if (p->kind == RK_MODEL_IMAGE && !url && !file_id) {
			if (p->file_id)
				file_id = p->file_id; /* uploaded once (model_files.c) */
			else
				url = rk_model_part_data_url(p);
			continue;
		}
		const char *t = p->kind == RK_MODEL_TEXT ? p->text : "(a further image was left out)";
		if (!t || !*t)
			continue;
		rk_buf_adds(&b, b.len ? "\n" : "");
		rk_buf_adds(&b, t);
	}
	if (file_id)
		cJSON_AddStringToObject(shot, "file_id", file_id);
	else
		cJSON_AddStringToObject(shot, "image_url", url ? url : PLACEHOLDER_PNG_URL);
	free(url);
	cJSON *ack = m->acknowledged ? cJSON_Parse(m->acknowledged) : NULL;
	if (cJSON_IsArray(ack))
		cJSON_AddItemToObject(o, "acknowledged_safety_checks", ack);
	else
		cJSON_Delete(ack);
	cJSON_AddItemToArray(input, o);
	if (b.len) {
		char *note = rk_xasprintf("computer call %s: %s", id, b.data);
		add_input_text(notes, note);
		free(note);
	}
	rk_buf_release(&b);
}

static void add_function_output(cJSON *input, const struct rk_model_message *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "function_call_output");
	cJSON_AddStringToObject(o, "call_id", m->tool_call_id ? m->tool_call_id : "");
	if (rk_model_has_image(m)) {
		/* text and images together: the output may be a content list */
		cJSON *content = part_content(m);
		for (int i = 0; i < cJSON_GetArraySize(content); i++) {
			cJSON *img = cJSON_GetArrayItem(content, i);
			if (!strcmp(rk_json_string(img, "type", ""), "input_image"))
				cJSON_DeleteItemFromObjectCaseSensitive(img, "detail");
		}
		cJSON_AddItemToObject(o, "output", content);
	} else {
		char *text = rk_model_joined_text(m);
		cJSON_AddStringToObject(o, "output", text);
		free(text);
	}
	cJSON_AddItemToArray(input, o);
}

static cJSON *tool_json(const struct rk_model_tool *t)
{
	cJSON *o = cJSON_CreateObject();
	if (t->native_type) {
		cJSON_AddStringToObject(o, "type", t->native_type);
		if (!strcmp(t->native_type, "computer_use_preview")) {
			cJSON_AddNumberToObject(o, "display_width", t->display_w);
			cJSON_AddNumberToObject(o, "display_height", t->display_h);
			cJSON_AddStringToObject(o, "environment", "linux");
		}
		return o; /* the GA tool has no fields: the screenshots say the size */
	}
	cJSON_AddStringToObject(o, "type", "function");
	cJSON_AddStringToObject(o, "name", t->name);
	if (t->description)
		cJSON_AddStringToObject(o, "description", t->description);
	cJSON *params = t->parameters ? cJSON_Duplicate(t->parameters, 1) : NULL;
	if (!params) {
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "type", "object");
		cJSON_AddObjectToObject(params, "properties");
	}
	cJSON_AddItemToObject(o, "parameters", params);
	cJSON_AddFalseToObject(o, "strict"); /* our schemas are not all strict-mode schemas */
	return o;
}

int rk_model_responses_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			       const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	int rc = rk_model_check_native(RK_MODEL_API_RESPONSES, tools, ntools, err);
	if (rc)
		return rc;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "model", cfg->model ? cfg->model : "");
	char *system = rk_model_system_text(c);
	if (system && *system)
		cJSON_AddStringToObject(req, "instructions", system);
	free(system);
	cJSON *input = cJSON_AddArrayToObject(req, "input");
	cJSON *notes = NULL; /* native results' text, after their run */
	for (size_t i = 0; i < c->n; i++) {
		const struct rk_model_message *m = c->msgs[i];
		switch (m->role) {
		case RK_MODEL_SYSTEM:
			break;
		case RK_MODEL_USER:
			add_user(input, part_content(m));
			break;
		case RK_MODEL_ASSISTANT: {
			cJSON *items = m->vendor_json && m->vendor_api == RK_MODEL_API_RESPONSES
					       ? cJSON_Parse(m->vendor_json)
					       : NULL;
			if (cJSON_IsArray(items)) {
				cJSON *it;
				while ((it = cJSON_DetachItemFromArray(items, 0)) != NULL)
					cJSON_AddItemToArray(input, it);
			} else {
				add_assistant_rebuilt(input, m);
			}
			cJSON_Delete(items);
			break;
		}
		case RK_MODEL_TOOL:
			if (m->native) {
				if (!notes)
					notes = cJSON_CreateArray();
				add_computer_output(input, m, notes);
			} else {
				add_function_output(input, m);
			}
			if (notes && (i + 1 == c->n || c->msgs[i + 1]->role != RK_MODEL_TOOL)) {
				add_user(input, notes);
				notes = NULL;
			}
			break;
		}
	}
	int preview = 0;
	if (ntools) {
		cJSON *arr = cJSON_AddArrayToObject(req, "tools");
		for (size_t i = 0; i < ntools; i++) {
			cJSON_AddItemToArray(arr, tool_json(&tools[i]));
			preview |= tools[i].native_type && !strcmp(tools[i].native_type, "computer_use_preview");
		}
	}
	if (preview)
		cJSON_AddStringToObject(req, "truncation", "auto"); /* the preview tool requires it */
	cJSON_AddFalseToObject(req, "store");
	/* with nothing stored, reasoning comes back encrypted to be replayed */
	cJSON *inc = cJSON_AddArrayToObject(req, "include");
	cJSON_AddItemToArray(inc, cJSON_CreateString("reasoning.encrypted_content"));
	if (cfg->max_tokens > 0)
		cJSON_AddNumberToObject(req, "max_output_tokens", cfg->max_tokens);
	/* caching is automatic; the key keeps a run's requests on one cache */
	if (cfg->prompt_cache && cfg->cache_key)
		cJSON_AddStringToObject(req, "prompt_cache_key", cfg->cache_key);
	if (cfg->compact_request) {
		/* POST /responses/compact takes the conversation, not a turn's settings */
		static const char *const keep[] = {"model", "input", "instructions", "prompt_cache_key"};
		cJSON *only = cJSON_CreateObject();
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(req, keep[i]);
			if (v)
				cJSON_AddItemToObject(only, keep[i], v);
		}
		cJSON_Delete(req);
		req = only;
	}
	*out = req;
	return 0;
}

static void add_text(struct rk_buf *b, int *any, const char *t)
{
	if (*any)
		rk_buf_addc(b, '\n');
	rk_buf_adds(b, t);
	*any = 1;
}

static int add_call(struct rk_model_reply *r, const cJSON *item, int native, struct rk_error *err)
{
	const char *id = rk_json_string(item, "call_id", NULL);
	if (!id || !*id)
		return rk_model_malformed(err,
					  native ? "a computer_call has no call_id" : "a function_call has no call_id",
					  NULL, 0);
	struct rk_model_tool_call *c = &r->calls[r->ncalls++];
	c->id = rk_xstrdup(id);
	if (!native) {
		const char *name = rk_json_string(item, "name", NULL);
		if (!name || !*name)
			return rk_model_malformed(err, "a function_call has no name", NULL, 0);
		c->name = rk_xstrdup(name);
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(item, "arguments");
		c->arguments = cJSON_IsString(args) ? rk_xstrdup(args->valuestring)
			       : args		    ? cJSON_PrintUnformatted(args)
						    : rk_xstrdup("");
		return 0;
	}
	c->name = rk_xstrdup("computer");
	c->native = 1;
	/* the GA tool's batch, or the preview's single action */
	cJSON *args = cJSON_CreateObject();
	const cJSON *actions = cJSON_GetObjectItemCaseSensitive(item, "actions");
	const cJSON *action = cJSON_GetObjectItemCaseSensitive(item, "action");
	if (cJSON_IsArray(actions))
		cJSON_AddItemToObject(args, "actions", cJSON_Duplicate(actions, 1));
	else if (cJSON_IsObject(action))
		cJSON_AddItemToObject(args, "action", cJSON_Duplicate(action, 1));
	c->arguments = cJSON_PrintUnformatted(args);
	cJSON_Delete(args);
	const cJSON *checks = cJSON_GetObjectItemCaseSensitive(item, "pending_safety_checks");
	if (cJSON_IsArray(checks) && cJSON_GetArraySize(checks) > 0)
		c->safety_checks = cJSON_PrintUnformatted(checks);
	return 0;
}

int rk_model_responses_reply(const cJSON *doc, const char *body, size_t len, const struct rk_model_tool *tools,
			     size_t ntools, struct rk_model_reply *r, struct rk_error *err)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	if (cJSON_IsObject(e)) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_model_server_message(body, len, &b);
		int rc = rk_error_set(err, RK_EFAILED, "the model endpoint answered with an error: %s", b.data);
		rk_buf_release(&b);
		return rc;
	}
	const cJSON *output = cJSON_GetObjectItemCaseSensitive(doc, "output");
	if (!cJSON_IsArray(output))
		return rk_model_malformed(err, "no output list", body, len);
	size_t n = (size_t)cJSON_GetArraySize(output);
	r->calls = rk_xcalloc(n ? n : 1, sizeof(*r->calls));
	struct rk_buf text = RK_BUF_INIT, refusal = RK_BUF_INIT;
	rk_buf_init(&text);
	rk_buf_init(&refusal);
	int any_text = 0, any_refusal = 0, rc = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, output)
	{
		const char *type = rk_json_string(item, "type", "");
		if (!strcmp(type, "message")) {
			const cJSON *p;
			cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(item, "content"))
			{
				const char *pt = rk_json_string(p, "type", "");
				if (!strcmp(pt, "output_text"))
					add_text(&text, &any_text, rk_json_string(p, "text", ""));
				else if (!strcmp(pt, "refusal"))
					add_text(&refusal, &any_refusal, rk_json_string(p, "refusal", ""));
			}
		} else if (!strcmp(type, "function_call") || !strcmp(type, "computer_call")) {
			if ((rc = add_call(r, item, type[0] == 'c', err)) < 0)
				break;
		}
		/* reasoning and the rest ride in vendor_json */
	}
	if (rc < 0) {
		rk_buf_release(&text);
		rk_buf_release(&refusal);
		return rc;
	}
	r->text = any_text ? rk_buf_detach(&text, NULL) : NULL;
	if (!any_text)
		rk_buf_release(&text);
	/* a refusal part is the model declining, not an answer */
	r->refusal = any_refusal ? rk_buf_detach(&refusal, NULL) : NULL;
	if (!any_refusal)
		rk_buf_release(&refusal);
	r->vendor_json = cJSON_PrintUnformatted(output);
	r->vendor_api = RK_MODEL_API_RESPONSES;
	const char *reason = rk_json_string(cJSON_GetObjectItemCaseSensitive(doc, "incomplete_details"), "reason",
					    NULL);
	r->finish_reason = rk_xstrdup(reason ? reason : rk_json_string(doc, "status", NULL));
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
	r->prompt_tokens = rk_model_json_count(usage, "input_tokens");
	r->completion_tokens = rk_model_json_count(usage, "output_tokens");
	r->cached_tokens = rk_model_json_count(cJSON_GetObjectItemCaseSensitive(usage, "input_tokens_details"),
					       "cached_tokens");
	(void)tools;
	(void)ntools;
	return 0;
}
