/* The OpenAI-compatible chat-completions protocol (model.h has its wire
 * format): the conversation as "messages", and the reply's first choice. */

#include <stdlib.h>
#include <string.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/json.h"

static void add_image_parts(cJSON *content, const struct rk_model_part *p, const char *call_id)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "text");
	char *label = rk_model_image_label(p, call_id);
	cJSON_AddStringToObject(t, "text", label);
	free(label);
	cJSON_AddItemToArray(content, t);

	char *url = rk_model_part_data_url(p);
	cJSON *img = cJSON_CreateObject();
	cJSON_AddStringToObject(img, "type", "image_url");
	cJSON *iu = cJSON_AddObjectToObject(img, "image_url");
	cJSON_AddStringToObject(iu, "url", url);
	free(url);
	cJSON_AddItemToArray(content, img);
}

static const char *role_name(enum rk_model_role r)
{
	switch (r) {
	case RK_MODEL_SYSTEM:
		return "system";
	case RK_MODEL_USER:
		return "user";
	case RK_MODEL_ASSISTANT:
		return "assistant";
	case RK_MODEL_TOOL:
		return "tool";
	}
	return "user";
}

static cJSON *message_json(const struct rk_model_message *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "role", role_name(m->role));
	if (m->role == RK_MODEL_USER && rk_model_has_image(m)) {
		cJSON *content = cJSON_AddArrayToObject(o, "content");
		for (size_t k = 0; k < m->nparts; k++) {
			const struct rk_model_part *p = &m->parts[k];
			if (p->kind == RK_MODEL_IMAGE) {
				add_image_parts(content, p, NULL);
			} else {
				cJSON *t = cJSON_CreateObject();
				cJSON_AddStringToObject(t, "type", "text");
				cJSON_AddStringToObject(t, "text", p->text);
				cJSON_AddItemToArray(content, t);
			}
		}
		return o;
	}
	char *text = rk_model_joined_text(m);
	if (m->role == RK_MODEL_TOOL) {
		cJSON_AddStringToObject(o, "tool_call_id", m->tool_call_id ? m->tool_call_id : "");
		if (!*text && rk_model_has_image(m)) {
			free(text);
			text = rk_xstrdup("(the screenshot follows in the next message)");
		}
	}
	if (m->role == RK_MODEL_ASSISTANT && !*text && m->ncalls)
		cJSON_AddNullToObject(o, "content");
	else
		cJSON_AddStringToObject(o, "content", text);
	free(text);
	if (m->role == RK_MODEL_ASSISTANT && m->ncalls) {
		cJSON *calls = cJSON_AddArrayToObject(o, "tool_calls");
		for (size_t i = 0; i < m->ncalls; i++) {
			cJSON *tc = cJSON_CreateObject();
			cJSON_AddStringToObject(tc, "id", m->calls[i].id ? m->calls[i].id : "");
			cJSON_AddStringToObject(tc, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(tc, "function");
			cJSON_AddStringToObject(fn, "name", m->calls[i].name ? m->calls[i].name : "");
			cJSON_AddStringToObject(fn, "arguments", m->calls[i].arguments ? m->calls[i].arguments : "{}");
			cJSON_AddItemToArray(calls, tc);
		}
	}
	return o;
}

int rk_model_chat_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			  const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	int rc = rk_model_check_native(RK_MODEL_API_CHAT, tools, ntools, err);
	if (rc)
		return rc;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "model", cfg->model ? cfg->model : "");
	cJSON *msgs = cJSON_AddArrayToObject(req, "messages");
	for (size_t i = 0; i < c->n; i++) {
		const struct rk_model_message *m = c->msgs[i];
		cJSON_AddItemToArray(msgs, message_json(m));
		if (m->role != RK_MODEL_TOOL || (i + 1 < c->n && c->msgs[i + 1]->role == RK_MODEL_TOOL))
			continue;
		/* the end of a run of tool results: their images, in one user message */
		size_t first = i;
		while (first > 0 && c->msgs[first - 1]->role == RK_MODEL_TOOL)
			first--;
		cJSON *content = NULL;
		for (size_t j = first; j <= i; j++) {
			const struct rk_model_message *t = c->msgs[j];
			for (size_t k = 0; k < t->nparts; k++) {
				if (t->parts[k].kind != RK_MODEL_IMAGE)
					continue;
				if (!content)
					content = cJSON_CreateArray();
				add_image_parts(content, &t->parts[k], t->tool_call_id);
			}
		}
		if (content) {
			cJSON *u = cJSON_CreateObject();
			cJSON_AddStringToObject(u, "role", "user");
			cJSON_AddItemToObject(u, "content", content);
			cJSON_AddItemToArray(msgs, u);
		}
	}
	if (ntools) {
		cJSON *arr = cJSON_AddArrayToObject(req, "tools");
		for (size_t i = 0; i < ntools; i++) {
			cJSON *t = cJSON_CreateObject();
			cJSON_AddStringToObject(t, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(t, "function");
			cJSON_AddStringToObject(fn, "name", tools[i].name);
			if (tools[i].description)
				cJSON_AddStringToObject(fn, "description", tools[i].description);
			cJSON *params = tools[i].parameters ? cJSON_Duplicate(tools[i].parameters, 1) : NULL;
			if (!params) {
				params = cJSON_CreateObject();
				cJSON_AddStringToObject(params, "type", "object");
				cJSON_AddObjectToObject(params, "properties");
			}
			cJSON_AddItemToObject(fn, "parameters", params);
			cJSON_AddItemToArray(arr, t);
		}
		cJSON_AddStringToObject(req, "tool_choice", "auto");
	}
	if (cfg->max_tokens > 0)
		cJSON_AddNumberToObject(req, "max_tokens", cfg->max_tokens);
	*out = req;
	return 0;
}

int rk_model_chat_reply(const cJSON *doc, const char *body, size_t len, struct rk_model_reply *r, struct rk_error *err)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
	if (e && !cJSON_IsNull(e) && !cJSON_IsArray(choices)) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_model_server_message(body, len, &b);
		int rc = rk_error_set(err, RK_EFAILED, "the model endpoint answered with an error: %s", b.data);
		rk_buf_release(&b);
		return rc;
	}
	if (!cJSON_IsArray(choices) || cJSON_GetArraySize(choices) < 1)
		return rk_model_malformed(err, "no choices", body, len);
	const cJSON *choice = cJSON_GetArrayItem(choices, 0);
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
	if (!cJSON_IsObject(msg))
		return rk_model_malformed(err, "choices[0] has no message object", body, len);
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	if (cJSON_IsString(content)) {
		r->text = rk_xstrdup(content->valuestring);
	} else if (cJSON_IsArray(content)) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		const cJSON *p;
		cJSON_ArrayForEach(p, content)
		{
			const char *t = rk_json_string(p, "text", NULL);
			if (t)
				rk_buf_adds(&b, t);
		}
		r->text = rk_buf_detach(&b, NULL);
	} else if (content && !cJSON_IsNull(content)) {
		return rk_model_malformed(err, "message.content is neither text nor null", NULL, 0);
	}
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	if (calls && !cJSON_IsNull(calls)) {
		if (!cJSON_IsArray(calls))
			return rk_model_malformed(err, "message.tool_calls is not a list", NULL, 0);
		size_t n = (size_t)cJSON_GetArraySize(calls);
		r->calls = rk_xcalloc(n ? n : 1, sizeof(*r->calls));
		const cJSON *tc;
		cJSON_ArrayForEach(tc, calls)
		{
			const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
			const char *name = rk_json_string(fn, "name", NULL);
			if (!name || !*name)
				return rk_model_malformed(err, "a tool call has no function name", NULL, 0);
			struct rk_model_tool_call *c = &r->calls[r->ncalls++];
			const char *id = rk_json_string(tc, "id", NULL);
			c->id = id && *id ? rk_xstrdup(id) : rk_xasprintf("call_%zu", r->ncalls);
			c->name = rk_xstrdup(name);
			const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
			if (cJSON_IsString(args))
				c->arguments = rk_xstrdup(args->valuestring);
			else if (args && !cJSON_IsNull(args))
				c->arguments = cJSON_PrintUnformatted(args); /* some servers send an object */
			else
				c->arguments = rk_xstrdup("");
		}
	}
	r->finish_reason = rk_xstrdup(rk_json_string(choice, "finish_reason", NULL));
	const char *refusal = rk_json_string(msg, "refusal", NULL);
	if (refusal && *refusal)
		r->refusal = rk_xstrdup(refusal);
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
	r->prompt_tokens = rk_model_json_count(usage, "prompt_tokens");
	r->completion_tokens = rk_model_json_count(usage, "completion_tokens");
	r->cached_tokens = rk_model_json_count(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"),
					       "cached_tokens");
	return 0;
}
