/* OpenAI-compatible chat completions (POST .../chat/completions): the
 * protocol rakazo keeps for local and open models. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/json.h"
#include "engine/util/time.h"
#include "tests/emulators/model/model.h"

static char *content_text(const cJSON *content)
{
	if (cJSON_IsString(content))
		return rk_xstrdup(content->valuestring);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	const cJSON *p;
	cJSON_ArrayForEach(p, content)
	{
		const char *t = rk_json_string(p, "text", NULL);
		if (t) {
			if (b.len)
				rk_buf_addc(&b, '\n');
			rk_buf_adds(&b, t);
		}
	}
	return rk_buf_detach(&b, NULL);
}

/* Counts and checks the images of one message's content (data URLs of
 * image_url parts). */
static int count_images(const cJSON *content, struct summary *s)
{
	int n = 0;
	const cJSON *p;
	if (!cJSON_IsArray(content))
		return 0;
	cJSON_ArrayForEach(p, content)
	{
		const char *type = rk_json_string(p, "type", "");
		if (strcmp(type, "image_url") != 0)
			continue;
		n++;
		const cJSON *iu = cJSON_GetObjectItemCaseSensitive(p, "image_url");
		const char *url = cJSON_IsString(iu) ? iu->valuestring : rk_json_string(iu, "url", "");
		struct image img;
		image_check_data_url(url, &img);
		summary_add_image(s, &img);
	}
	return n;
}

static void check_tool_ids(const cJSON *msgs, struct summary *s)
{
	int n = cJSON_GetArraySize(msgs);
	for (int i = 0; i < n && !s->ids_problem[0]; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		const char *role = rk_json_string(m, "role", "");
		if (strcmp(role, "tool") == 0) {
			/* it answers a call of the nearest assistant message before it */
			const char *id = rk_json_string(m, "tool_call_id", "");
			int found = 0;
			for (int j = i - 1; j >= 0 && !found; j--) {
				const cJSON *a = cJSON_GetArrayItem(msgs, j);
				if (strcmp(rk_json_string(a, "role", ""), "tool") == 0)
					continue;
				const cJSON *tc;
				cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(a, "tool_calls"))
				{
					found |= strcmp(rk_json_string(tc, "id", ""), id) == 0;
				}
				break;
			}
			if (!found)
				snprintf(s->ids_problem, sizeof(s->ids_problem),
					 "message %d: tool_call_id \"%.80s\" answers no call of the assistant message "
					 "right before the tool results",
					 i, id);
		} else if (strcmp(role, "assistant") == 0) {
			/* every call is answered by the run of tool messages after it */
			const cJSON *tc;
			cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(m, "tool_calls"))
			{
				const char *id = rk_json_string(tc, "id", "");
				int found = 0;
				for (int j = i + 1; j < n; j++) {
					const cJSON *t = cJSON_GetArrayItem(msgs, j);
					if (strcmp(rk_json_string(t, "role", ""), "tool") != 0)
						break;
					found |= strcmp(rk_json_string(t, "tool_call_id", ""), id) == 0;
				}
				if (!found && !s->ids_problem[0])
					snprintf(s->ids_problem, sizeof(s->ids_problem),
						 "message %d: the assistant's tool call \"%.80s\" has no tool message "
						 "right after it",
						 i, id);
			}
		}
	}
}

static void summarize(const cJSON *req, struct summary *s)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	s->model = rk_json_string(req, "model", NULL);
	s->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stream"));
	if (!cJSON_IsObject(req) || !s->model || !cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
		if (req)
			snprintf(s->invalid_why, sizeof(s->invalid_why),
				 "the request needs a \"model\" string and a non-empty \"messages\" list");
		return;
	}
	s->valid = 1;
	s->messages = cJSON_GetArraySize(msgs);
	for (int i = 0; i < s->messages; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		const char *role = rk_json_string(m, "role", NULL);
		if (!role) {
			s->valid = 0;
			snprintf(s->invalid_why, sizeof(s->invalid_why), "message %d has no role", i);
			continue;
		}
		cJSON_AddItemToArray(s->roles, cJSON_CreateString(role));
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		char *text = content_text(content);
		summary_add_text(s, text);
		free(text);
		int imgs = count_images(content, s);
		if (strcmp(role, "tool") == 0) {
			s->last_tool = i;
			s->images_after_last_tool = imgs;
			free(s->last_tool_text);
			s->last_tool_text = content_text(content);
		} else if (s->last_tool >= 0) {
			s->images_after_last_tool += imgs;
		}
	}
	check_tool_ids(msgs, s);
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(req, "tools"))
	{
		const char *name = rk_json_string(cJSON_GetObjectItemCaseSensitive(t, "function"), "name", NULL);
		if (name)
			cJSON_AddItemToArray(s->tools, cJSON_CreateString(name));
	}
}

void chat_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s, struct verdict *v)
{
	summarize(req, s);
	record(v, "request_valid", s->valid, "%s", s->valid ? "model and messages present" : s->invalid_why);
	if (!s->valid)
		return;
	record(v, "images_valid", s->bad_images == 0, "%d of %d images are bad%s%s", s->bad_images, s->images,
	       s->bad_images ? ": " : "", s->bad_image_why);
	record(v, "tool_call_ids_match", s->ids_problem[0] == 0, "%s",
	       s->ids_problem[0] ? s->ids_problem : "every tool result answers a call");
	openai_cache_check(req, s, v);
}

cJSON *chat_render(const struct answer *a)
{
	const cJSON *reply = a->reply;
	cJSON *doc = cJSON_CreateObject();
	char id[64];
	snprintf(id, sizeof(id), "chatcmpl-scripted-%d", a->step);
	cJSON_AddStringToObject(doc, "id", id);
	cJSON_AddStringToObject(doc, "object", "chat.completion");
	cJSON_AddNumberToObject(doc, "created", (double)(rk_now_ms() / 1000));
	cJSON_AddStringToObject(doc, "model", "scripted");
	cJSON *choices = cJSON_AddArrayToObject(doc, "choices");
	cJSON *choice = cJSON_CreateObject();
	cJSON_AddItemToArray(choices, choice);
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON *msg = cJSON_AddObjectToObject(choice, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	const char *content = rk_json_string(reply, "content", NULL);
	rk_json_add_str_or_null(msg, "content", content);
	/* a declined request: message.refusal (null otherwise) */
	rk_json_add_str_or_null(msg, "refusal", rk_json_string(reply, "refusal", NULL));
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(reply, "tool_calls");
	int ncalls = 0;
	if (cJSON_GetArraySize(calls) > 0) {
		cJSON *out = cJSON_AddArrayToObject(msg, "tool_calls");
		const cJSON *c;
		cJSON_ArrayForEach(c, calls)
		{
			cJSON *tc = cJSON_CreateObject();
			const char *cid = rk_json_string(c, "id", NULL);
			char gen[64];
			snprintf(gen, sizeof(gen), "call_%d_%d", a->step, ncalls + 1);
			cJSON_AddStringToObject(tc, "id", cid ? cid : gen);
			cJSON_AddStringToObject(tc, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(tc, "function");
			cJSON_AddStringToObject(fn, "name", rk_json_string(c, "name", ""));
			char *args = call_arguments(c, a->last_session);
			cJSON_AddStringToObject(fn, "arguments", args);
			free(args);
			cJSON_AddItemToArray(out, tc);
			ncalls++;
		}
	}
	const char *finish = rk_json_string(reply, "finish_reason", ncalls ? "tool_calls" : "stop");
	cJSON_AddStringToObject(choice, "finish_reason", finish);
	struct cache_usage cu;
	prompt_cache(a->s->prompt, &cu);
	cJSON *usage = cJSON_AddObjectToObject(doc, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", (double)cu.total);
	cJSON_AddNumberToObject(usage, "completion_tokens", 7 + 20 * ncalls);
	cJSON_AddNumberToObject(usage, "total_tokens", (double)cu.total + 7 + 20 * ncalls);
	cJSON *details = cJSON_AddObjectToObject(usage, "prompt_tokens_details");
	cJSON_AddNumberToObject(details, "cached_tokens", (double)cu.read);
	cJSON_AddNumberToObject(details, "audio_tokens", 0);
	return doc;
}

/* One chunk of the stream: the completion's id, created and model, one
 * choice with delta (taken) and finish_reason. */
static void chunk(struct rk_buf *sse, const cJSON *completion, cJSON *delta, const char *finish)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "id", rk_json_string(completion, "id", ""));
	cJSON_AddStringToObject(c, "object", "chat.completion.chunk");
	cJSON_AddItemToObject(c, "created",
			      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(completion, "created"), 1));
	cJSON_AddStringToObject(c, "model", rk_json_string(completion, "model", ""));
	cJSON *choice = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "choices"), choice);
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON_AddItemToObject(choice, "delta", delta);
	rk_json_add_str_or_null(choice, "finish_reason", finish);
	sse_event(sse, NULL, c);
	cJSON_Delete(c);
}

void chat_stream(const cJSON *completion, int include_usage, struct rk_buf *sse)
{
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(completion, "choices"), 0);
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "role", "assistant");
	cJSON_AddStringToObject(d, "content", "");
	chunk(sse, completion, d, NULL);
	const char *text = rk_json_string(msg, "content", NULL);
	for (size_t off = 0, len = text ? strlen(text) : 0, n; off < len; off += n) {
		n = utf8_piece(text + off, len - off, 9);
		d = cJSON_CreateObject();
		char *piece = rk_xstrndup(text + off, n);
		cJSON_AddStringToObject(d, "content", piece);
		free(piece);
		chunk(sse, completion, d, NULL);
	}
	/* a refusal comes as delta.refusal pieces, as the vendor streams it */
	const char *refusal = rk_json_string(msg, "refusal", NULL);
	for (size_t off = 0, len = refusal ? strlen(refusal) : 0, n; off < len; off += n) {
		n = utf8_piece(refusal + off, len - off, 9);
		d = cJSON_CreateObject();
		char *piece = rk_xstrndup(refusal + off, n);
		cJSON_AddStringToObject(d, "refusal", piece);
		free(piece);
		chunk(sse, completion, d, NULL);
	}
	const cJSON *tc;
	int i = 0;
	cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"))
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
		const char *args = rk_json_string(fn, "arguments", "");
		size_t len = strlen(args), off = 0, n = 0;
		do {
			n = utf8_piece(args + off, len - off, len / 3 + 1);
			cJSON *call = cJSON_CreateObject();
			cJSON_AddNumberToObject(call, "index", i);
			cJSON *f = cJSON_CreateObject();
			if (off == 0) {
				cJSON_AddStringToObject(call, "id", rk_json_string(tc, "id", ""));
				cJSON_AddStringToObject(call, "type", "function");
				cJSON_AddStringToObject(f, "name", rk_json_string(fn, "name", ""));
			}
			char *piece = rk_xstrndup(args + off, n);
			cJSON_AddStringToObject(f, "arguments", piece);
			free(piece);
			cJSON_AddItemToObject(call, "function", f);
			d = cJSON_CreateObject();
			cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "tool_calls"), call);
			chunk(sse, completion, d, NULL);
			off += n;
		} while (off < len);
		i++;
	}
	chunk(sse, completion, cJSON_CreateObject(), rk_json_string(choice, "finish_reason", "stop"));
	if (include_usage) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "id", rk_json_string(completion, "id", ""));
		cJSON_AddStringToObject(c, "object", "chat.completion.chunk");
		cJSON_AddItemToObject(c, "created",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(completion, "created"), 1));
		cJSON_AddStringToObject(c, "model", rk_json_string(completion, "model", ""));
		cJSON_AddArrayToObject(c, "choices");
		cJSON_AddItemToObject(c, "usage",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(completion, "usage"), 1));
		sse_event(sse, NULL, c);
		cJSON_Delete(c);
	}
	rk_buf_adds(sse, "data: [DONE]\n\n");
}
