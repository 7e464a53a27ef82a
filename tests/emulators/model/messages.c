/* The Anthropic Messages API (POST .../messages; the SDK adds ?beta=true
 * to beta calls), as @anthropic-ai/sdk 1.17's type definitions describe it
 * (resources/messages/messages.d.ts, resources/beta/messages/messages.d.ts). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/id.h"
#include "engine/util/json.h"
#include "tests/emulators/model/model.h"

/* The native computer tool versions and the beta each needs. */
static const struct {
	const char *type, *beta;
} native_tools[] = {
	{"computer_20241022", "computer-use-2024-10-22"},
	{"computer_20250124", "computer-use-2025-01-24"},
	{"computer_20251124", "computer-use-2025-11-24"},
};

/* The signature of the thinking block served before each tool_use, by
 * tool_use id: with thinking on, that block must come back unchanged. */
static cJSON *thinking_of;

static const char *native_beta(const char *type)
{
	for (size_t i = 0; i < sizeof(native_tools) / sizeof(native_tools[0]); i++) {
		if (strcmp(type, native_tools[i].type) == 0)
			return native_tools[i].beta;
	}
	return NULL;
}

static int beta_has(const char *header, const char *want)
{
	size_t wl = strlen(want);
	for (const char *p = header; p && *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t m = n;
		while (m && (p[m - 1] == ' ' || p[m - 1] == '\t'))
			m--;
		if (m == wl && strncmp(p, want, wl) == 0)
			return 1;
		p += n;
	}
	return 0;
}

static int thinking_on(const cJSON *req)
{
	const char *t = rk_json_string(cJSON_GetObjectItemCaseSensitive(req, "thinking"), "type", NULL);
	return t && strcmp(t, "disabled") != 0;
}

/* What the checks of one request need besides the request. */
struct ctx {
	const struct http_in *h;
	struct verdict *v;
};

static void image_block(const cJSON *b, struct summary *s, const struct ctx *x, int msg)
{
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
	const char *type = rk_json_string(src, "type", "(none)");
	struct image img;
	if (strcmp(type, "file") == 0) { /* an uploaded file (files.c) */
		char where[64];
		snprintf(where, sizeof(where), "messages.%d", msg);
		files_image(rk_json_string(src, "file_id", NULL), PROTO_MESSAGES, x->h, where, s, x->v, &img);
		return;
	}
	if (strcmp(type, "base64") != 0) {
		memset(&img, 0, sizeof(img));
		snprintf(img.why, sizeof(img.why), "an image block's source is \"%.40s\", not base64 or file", type);
	} else {
		image_check_base64(rk_json_string(src, "media_type", ""), rk_json_string(src, "data", NULL), &img);
	}
	summary_add_image(s, &img);
}

/* A tool_result's content: its text (malloc'd), its images counted. */
static char *tool_result(const cJSON *b, struct summary *s, int *images, const struct ctx *x, int msg)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(b, "content");
	*images = 0;
	if (cJSON_IsString(content))
		return rk_xstrdup(content->valuestring);
	struct rk_buf t = RK_BUF_INIT;
	rk_buf_init(&t);
	const cJSON *p;
	cJSON_ArrayForEach(p, content)
	{
		const char *type = rk_json_string(p, "type", "");
		if (strcmp(type, "text") == 0) {
			if (t.len)
				rk_buf_addc(&t, '\n');
			rk_buf_adds(&t, rk_json_string(p, "text", ""));
		} else if (strcmp(type, "image") == 0) {
			image_block(p, s, x, msg);
			(*images)++;
		}
	}
	return rk_buf_detach(&t, NULL);
}

static int is_tool_result(const cJSON *b)
{
	return strcmp(rk_json_string(b, "type", ""), "tool_result") == 0;
}

static int has_tool_results(const cJSON *m)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
	{
		if (is_tool_result(b))
			return 1;
	}
	return 0;
}

static int has_tool_use(const cJSON *m, const char *id)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
	{
		if (strcmp(rk_json_string(b, "type", ""), "tool_use") == 0 &&
		    strcmp(rk_json_string(b, "id", ""), id) == 0)
			return 1;
	}
	return 0;
}

static int answers(const cJSON *m, const char *id)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
	{
		if (is_tool_result(b) && strcmp(rk_json_string(b, "tool_use_id", ""), id) == 0)
			return 1;
	}
	return 0;
}

/* Tool results answer the tool_use blocks of the assistant message right
 * before them, all of them, in one user message, ahead of its other
 * content. */
static void check_pairs(const cJSON *msgs, char *split, size_t splitsz, char *ids, size_t idssz)
{
	int n = cJSON_GetArraySize(msgs);
	for (int i = 0; i < n; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		const char *role = rk_json_string(m, "role", "");
		const cJSON *prev = i > 0 ? cJSON_GetArrayItem(msgs, i - 1) : NULL;
		if (strcmp(role, "user") == 0 && has_tool_results(m)) {
			if (!split[0] && prev && strcmp(rk_json_string(prev, "role", ""), "user") == 0 &&
			    has_tool_results(prev))
				snprintf(split, splitsz,
					 "messages %d and %d both hold tool results: the results of one assistant turn "
					 "go in one user message",
					 i - 1, i);
			int other = 0;
			const cJSON *b;
			cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
			{
				if (!is_tool_result(b)) {
					other = 1;
					continue;
				}
				const char *id = rk_json_string(b, "tool_use_id", "");
				if (ids[0]) {
					break;
				} else if (other) {
					snprintf(ids, idssz,
						 "message %d: the tool_result for \"%.80s\" comes after other content; "
						 "tool results go first",
						 i, id);
				} else if (!prev || strcmp(rk_json_string(prev, "role", ""), "assistant") != 0 ||
					   !has_tool_use(prev, id)) {
					snprintf(ids, idssz,
						 "message %d: the tool_result for \"%.80s\" answers no tool_use of the "
						 "assistant message right before it",
						 i, id);
				}
			}
		} else if (strcmp(role, "assistant") == 0 && !ids[0]) {
			const cJSON *next = i + 1 < n ? cJSON_GetArrayItem(msgs, i + 1) : NULL;
			const cJSON *b;
			cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
			{
				if (strcmp(rk_json_string(b, "type", ""), "tool_use") != 0)
					continue;
				const char *id = rk_json_string(b, "id", "");
				if (!next || strcmp(rk_json_string(next, "role", ""), "user") != 0 ||
				    !answers(next, id)) {
					snprintf(ids, idssz,
						 "message %d: tool_use \"%.80s\" has no tool_result in the user message "
						 "right after it",
						 i, id);
					break;
				}
			}
		}
	}
}

/* With thinking on, an assistant turn that used a tool goes back with the
 * thinking block served before it, signature and all. */
static void check_thinking(const cJSON *msgs, char *problem, size_t sz)
{
	const cJSON *m;
	int i = 0;
	cJSON_ArrayForEach(m, msgs)
	{
		const cJSON *b;
		const char *sig = NULL;
		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
		{
			const char *type = rk_json_string(b, "type", "");
			if (strcmp(type, "thinking") == 0 && !sig)
				sig = rk_json_string(b, "signature", "");
			if (strcmp(type, "tool_use") != 0)
				continue;
			const char *want = rk_json_string(thinking_of, rk_json_string(b, "id", ""), NULL);
			if (want && (!sig || strcmp(sig, want) != 0)) {
				snprintf(problem, sz,
					 "message %d: tool_use \"%.80s\" comes back without the thinking block served "
					 "before it (with thinking on, the assistant turn goes back unchanged)",
					 i, rk_json_string(b, "id", ""));
				return;
			}
		}
		i++;
	}
}

static void check_tools(const cJSON *req, struct summary *s, char *problem, size_t sz)
{
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
	if (tools && !cJSON_IsArray(tools)) {
		snprintf(problem, sz, "\"tools\" is not a list");
		return;
	}
	int i = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, tools)
	{
		const char *type = rk_json_string(t, "type", NULL);
		const char *name = rk_json_string(t, "name", NULL);
		if (type && strncmp(type, "computer_", 9) == 0) {
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(t, "display_width_px");
			const cJSON *h = cJSON_GetObjectItemCaseSensitive(t, "display_height_px");
			s->native_type = type;
			s->display_w = cJSON_IsNumber(w) ? w->valueint : 0;
			s->display_h = cJSON_IsNumber(h) ? h->valueint : 0;
			if (!native_beta(type) && !problem[0])
				snprintf(problem, sz,
					 "tool %d: \"%.40s\" is no computer tool version this emulator knows", i, type);
			else if ((!name || strcmp(name, "computer") != 0) && !problem[0])
				snprintf(problem, sz, "tool %d: a %s tool is named \"computer\"", i, type);
			else if ((s->display_w <= 0 || s->display_h <= 0) && !problem[0])
				snprintf(problem, sz, "tool %d: a %s tool needs display_width_px and display_height_px",
					 i, type);
		} else if (!type || strcmp(type, "custom") == 0) {
			if (!name && !problem[0])
				snprintf(problem, sz, "tool %d has no name", i);
			else if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "input_schema")) && !problem[0])
				snprintf(problem, sz, "tool %d (\"%.60s\") has no input_schema object", i, name);
		}
		cJSON_AddItemToArray(s->tools, cJSON_CreateString(name ? name : type ? type : ""));
		i++;
	}
}

static void summarize(const cJSON *req, struct summary *s, const struct ctx *x)
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
	const cJSON *system = cJSON_GetObjectItemCaseSensitive(req, "system");
	const cJSON *b, *blocks = cJSON_IsArray(system) ? system : NULL;
	if (cJSON_IsString(system))
		summary_add_text(s, system->valuestring);
	cJSON_ArrayForEach(b, blocks)
	{
		summary_add_text(s, rk_json_string(b, "text", ""));
	}
	s->messages = cJSON_GetArraySize(msgs);
	for (int i = 0; i < s->messages; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		const char *role = rk_json_string(m, "role", NULL);
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system"))) {
			s->valid = 0;
			snprintf(s->invalid_why, sizeof(s->invalid_why), "message %d: role must be user or assistant",
				 i);
			return;
		}
		if (!cJSON_IsString(content) && !cJSON_IsArray(content)) {
			s->valid = 0;
			snprintf(s->invalid_why, sizeof(s->invalid_why),
				 "message %d: content must be a string or a list of blocks", i);
			return;
		}
		cJSON_AddItemToArray(s->roles, cJSON_CreateString(role));
		if (cJSON_IsString(content)) {
			summary_add_text(s, content->valuestring);
			continue;
		}
		cJSON_ArrayForEach(b, content)
		{
			const char *type = rk_json_string(b, "type", NULL);
			if (!type) {
				s->valid = 0;
				snprintf(s->invalid_why, sizeof(s->invalid_why),
					 "message %d: a content block has no type", i);
				return;
			}
			if (strcmp(type, "text") == 0) {
				summary_add_text(s, rk_json_string(b, "text", ""));
			} else if (strcmp(type, "compaction") == 0) {
				summary_add_text(s, rk_json_string(b, "content", ""));
			} else if (strcmp(type, "image") == 0) {
				image_block(b, s, x, i);
				if (s->last_tool >= 0)
					s->images_after_last_tool++;
			} else if (strcmp(type, "tool_result") == 0) {
				int images;
				char *text = tool_result(b, s, &images, x, i);
				summary_add_text(s, text);
				free(s->last_tool_text);
				s->last_tool_text = text;
				s->last_tool = i;
				s->images_after_last_tool = images;
			}
		}
	}
}

/* ---- compaction (the "compaction" parameter and compaction blocks) ---- */

/* A compaction block's signature: over its content, with the emulator's
 * own key (fixed, as the vendor's outlives a connection: a resumed run
 * talks to another server process), so a block whose content was changed
 * no longer verifies. */
static char *compaction_signature(const char *content)
{
	static const char key[] = "model-emulator-compaction-key-1";
	char *text = rk_xasprintf("%s|%s", key, content ? content : "");
	char hex[65];
	rk_sha256_hex(text, strlen(text), hex);
	free(text);
	return rk_xasprintf("EqcmpCmp%s", hex);
}

static void refuse_code(struct verdict *v, const char *code, const char *msg)
{
	if (!v->refused_by)
		v->refusal_error_code = code;
	refuse(v, "compaction", NULL, NULL, msg);
}

/* What the API refuses about compaction: the parameter without its beta,
 * beside context_management, on a conversation ending mid-turn or with
 * nothing to summarise; a compaction block anywhere but first, more than
 * one with content, or one whose signature does not verify. */
static void check_compaction(const cJSON *req, const struct http_in *h, struct verdict *v)
{
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(req, "compaction");
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	int n = cJSON_GetArraySize(msgs), with_content = 0;
	if (cp && !cJSON_IsNull(cp)) {
		if (!cJSON_IsObject(cp) || strcmp(rk_json_string(cp, "type", ""), "summarize") != 0)
			refuse(v, "compaction", NULL, NULL, "compaction.type: Input should be 'summarize'");
		else if (!beta_has(h->anthropic_beta, COMPACTION_BETA))
			refuse(v, "compaction", NULL, NULL,
			       "compaction: this parameter needs the anthropic-beta header " COMPACTION_BETA);
		else if (cJSON_GetObjectItemCaseSensitive(req, "context_management"))
			refuse(v, "compaction", NULL, NULL, "compaction cannot be combined with context_management");
		const cJSON *last = cJSON_GetArrayItem(msgs, n - 1);
		if (last && !strcmp(rk_json_string(last, "role", ""), "assistant"))
			refuse_code(v, "compaction_incomplete_turn",
				    "The compaction request ends on an assistant turn that is not finished.");
	}
	for (int i = 0; i < n; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i), *b;
		int k = 0;
		cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content"))
		{
			if (strcmp(rk_json_string(b, "type", ""), "compaction") != 0) {
				k++;
				continue;
			}
			if (i != 0 || k != 0 || !strcmp(rk_json_string(m, "role", ""), "system")) {
				refuse_code(v, "compaction_block_misplaced",
					    "The compaction block is not the first block of the conversation, or is in a "
					    "system message.");
				return;
			}
			const char *content = rk_json_string(b, "content", NULL);
			if (content) {
				with_content++;
				char *want = compaction_signature(content);
				const char *sig = rk_json_string(b, "signature", "");
				if (strncmp(sig, "EqcmpCmp", 8) != 0)
					refuse_code(v, "compaction_signature_invalid",
						    "The compaction block's signature does not verify.");
				else if (strcmp(sig, want) != 0)
					refuse_code(v, "compaction_content_mismatch",
						    "The compaction block's content differs from the text its signature "
						    "recorded.");
				free(want);
			}
			k++;
		}
	}
	if (with_content > 1)
		refuse_code(v, "compaction_block_ambiguous",
			    "messages holds more than one compaction block with content. Send only the block the "
			    "conversation returned last.");
	if (!v->refused_by || strcmp(v->refused_by, "compaction") != 0)
		record(v, "compaction", 1, "%s", cp ? "a compaction request" : "compaction blocks in place");
}

void messages_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s,
		    struct verdict *v)
{
	struct ctx x = {h, v};
	summarize(req, s, &x);
	record(v, "request_valid", s->valid, "%s", s->valid ? "model and messages present" : s->invalid_why);
	if (!s->valid)
		return;
	int key = h->x_api_key && h->x_api_key[0];
	record(v, "api_key", key || has_bearer(h), "%s",
	       key	       ? "an x-api-key header came"
	       : has_bearer(h) ? "an Authorization: Bearer header came"
			       : "neither an x-api-key nor an Authorization: Bearer header came");
	record(v, "anthropic_version", h->anthropic_version && h->anthropic_version[0], "anthropic-version: %.40s",
	       h->anthropic_version ? h->anthropic_version : "(none)");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(req, "max_tokens");
	int mt_ok = cJSON_IsNumber(mt) && mt->valuedouble >= 1 && mt->valuedouble == (double)(long)mt->valuedouble;
	record(v, "max_tokens", mt_ok, "%s",
	       mt_ok ? "max_tokens present" : "max_tokens, a positive integer, is required");

	char problem[400] = "";
	if (messages_prompt(req, s, &s->prompt, problem, sizeof(problem)) < 0)
		refuse(v, "cache_control", NULL, NULL, problem);
	problem[0] = '\0';
	check_tools(req, s, problem, sizeof(problem));
	record(v, "tools_valid", problem[0] == 0, "%s", problem[0] ? problem : "every tool is well formed");
	const char *beta = s->native_type ? native_beta(s->native_type) : NULL;
	if (beta)
		record(v, "anthropic_beta", beta_has(h->anthropic_beta, beta),
		       "a %s tool needs anthropic-beta %s; got \"%.100s\"", s->native_type, beta,
		       h->anthropic_beta ? h->anthropic_beta : "(none)");
	record(v, "images_valid", s->bad_images == 0, "%d of %d images are bad%s%s", s->bad_images, s->images,
	       s->bad_images ? ": " : "", s->bad_image_why);

	char split[400] = "";
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	check_pairs(msgs, split, sizeof(split), s->ids_problem, sizeof(s->ids_problem));
	record(v, "tool_results_in_one_message", split[0] == 0, "%s",
	       split[0] ? split : "each turn's tool results are in one user message");
	record(v, "tool_use_ids_match", s->ids_problem[0] == 0, "%s",
	       s->ids_problem[0] ? s->ids_problem : "every tool_result answers a tool_use");
	check_compaction(req, h, v);
	if (thinking_on(req)) {
		problem[0] = '\0';
		check_thinking(msgs, problem, sizeof(problem));
		record(v, "thinking_replayed", problem[0] == 0, "%s",
		       problem[0] ? problem : "thinking blocks come back with their tool calls");
	}
}

int messages_beta_has(const char *header, const char *want)
{
	return beta_has(header, want);
}

/* usage as the API sends it; delta: message_delta's (no cache_creation
 * breakdown, no service fields). */
static cJSON *usage(const struct cache_usage *c, long out, int delta)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddNumberToObject(u, "input_tokens", (double)c->uncached);
	cJSON_AddNumberToObject(u, "cache_creation_input_tokens", (double)c->created);
	cJSON_AddNumberToObject(u, "cache_read_input_tokens", (double)c->read);
	if (!delta) {
		cJSON *cc = cJSON_AddObjectToObject(u, "cache_creation");
		cJSON_AddNumberToObject(cc, "ephemeral_1h_input_tokens", (double)c->created_1h);
		cJSON_AddNumberToObject(cc, "ephemeral_5m_input_tokens", (double)c->created_5m);
	}
	cJSON_AddNumberToObject(u, "output_tokens", (double)out);
	cJSON_AddNullToObject(u, "output_tokens_details");
	cJSON_AddNullToObject(u, "server_tool_use");
	if (!delta) {
		cJSON_AddNullToObject(u, "inference_geo");
		cJSON_AddStringToObject(u, "service_tier", "standard");
		cJSON_AddNullToObject(u, "speed");
	}
	return u;
}

static void stream_text(struct rk_buf *sse, int index, const char *delta_type, const char *field, const char *text,
			size_t size)
{
	for (size_t off = 0, len = strlen(text), n; off < len; off += n) {
		n = utf8_piece(text + off, len - off, size);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", "content_block_delta");
		cJSON_AddNumberToObject(e, "index", index);
		cJSON *d = cJSON_AddObjectToObject(e, "delta");
		cJSON_AddStringToObject(d, "type", delta_type);
		char *piece = rk_xstrndup(text + off, n);
		cJSON_AddStringToObject(d, field, piece);
		free(piece);
		sse_event(sse, "content_block_delta", e);
		cJSON_Delete(e);
	}
}

/* The events that build doc: message_start (its usage: the input's, c,
 * as the answer's), then each block's start, deltas and stop, then
 * message_delta and message_stop. raw[k] is block k's input as written
 * when it is not a JSON object (NULL otherwise). */
static void stream(const cJSON *doc, const char **raw, const struct cache_usage *c, struct rk_buf *sse)
{
	cJSON *start = cJSON_CreateObject();
	cJSON_AddStringToObject(start, "type", "message_start");
	cJSON *msg = cJSON_Duplicate(doc, 1);
	cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", cJSON_CreateArray());
	cJSON_ReplaceItemInObjectCaseSensitive(msg, "stop_reason", cJSON_CreateNull());
	cJSON_ReplaceItemInObjectCaseSensitive(msg, "stop_details", cJSON_CreateNull());
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(doc, "usage");
	long out = (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(u, "output_tokens"));
	cJSON_ReplaceItemInObjectCaseSensitive(msg, "usage", usage(c, 1, 0));
	cJSON_AddItemToObject(start, "message", msg);
	sse_event(sse, "message_start", start);
	cJSON_Delete(start);
	rk_buf_adds(sse, "event: ping\ndata: {\"type\": \"ping\"}\n\n");

	int k = 0;
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(doc, "content"))
	{
		const char *type = rk_json_string(b, "type", "");
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", "content_block_start");
		cJSON_AddNumberToObject(e, "index", k);
		cJSON *cb = cJSON_Duplicate(b, 1);
		if (strcmp(type, "text") == 0) {
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "text", cJSON_CreateString(""));
		} else if (strcmp(type, "thinking") == 0) {
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "thinking", cJSON_CreateString(""));
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "signature", cJSON_CreateString(""));
		} else if (strcmp(type, "tool_use") == 0) {
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "input", cJSON_CreateObject());
		} else if (strcmp(type, "compaction") == 0) {
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "content", cJSON_CreateNull());
			cJSON_ReplaceItemInObjectCaseSensitive(cb, "signature", cJSON_CreateString(""));
		}
		cJSON_AddItemToObject(e, "content_block", cb);
		sse_event(sse, "content_block_start", e);
		cJSON_Delete(e);
		if (strcmp(type, "text") == 0) {
			stream_text(sse, k, "text_delta", "text", rk_json_string(b, "text", ""), 10);
		} else if (strcmp(type, "thinking") == 0) {
			stream_text(sse, k, "thinking_delta", "thinking", rk_json_string(b, "thinking", ""), 16);
			stream_text(sse, k, "signature_delta", "signature", rk_json_string(b, "signature", ""),
				    1 << 20);
		} else if (strcmp(type, "compaction") == 0) {
			cJSON *e2 = cJSON_CreateObject();
			cJSON_AddStringToObject(e2, "type", "content_block_delta");
			cJSON_AddNumberToObject(e2, "index", k);
			cJSON *d2 = cJSON_AddObjectToObject(e2, "delta");
			cJSON_AddStringToObject(d2, "type", "compaction_delta");
			cJSON_AddStringToObject(d2, "content", rk_json_string(b, "content", ""));
			cJSON_AddNullToObject(d2, "encrypted_content");
			sse_event(sse, "content_block_delta", e2);
			cJSON_Delete(e2);
			stream_text(sse, k, "signature_delta", "signature", rk_json_string(b, "signature", ""),
				    1 << 20);
		} else if (strcmp(type, "tool_use") == 0) {
			char *json = raw[k] ? rk_xstrdup(raw[k])
					    : cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b, "input"));
			/* as the API does: an empty piece first, then the JSON in several */
			rk_buf_printf(sse,
				      "event: content_block_delta\ndata: "
				      "{\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"input_json_"
				      "delta\",\"partial_json\":\"\"}}\n\n",
				      k);
			stream_text(sse, k, "input_json_delta", "partial_json", json, strlen(json) / 4 + 1);
			free(json);
		}
		cJSON *stop = cJSON_CreateObject();
		cJSON_AddStringToObject(stop, "type", "content_block_stop");
		cJSON_AddNumberToObject(stop, "index", k);
		sse_event(sse, "content_block_stop", stop);
		cJSON_Delete(stop);
		k++;
	}

	cJSON *md = cJSON_CreateObject();
	cJSON_AddStringToObject(md, "type", "message_delta");
	cJSON *d = cJSON_AddObjectToObject(md, "delta");
	cJSON_AddItemToObject(d, "stop_reason",
			      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "stop_reason"), 1));
	cJSON_AddNullToObject(d, "stop_sequence");
	cJSON_AddItemToObject(d, "stop_details",
			      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "stop_details"), 1));
	cJSON_AddNullToObject(d, "container");
	cJSON_AddItemToObject(md, "usage", usage(c, out, 1));
	sse_event(sse, "message_delta", md);
	cJSON_Delete(md);
	rk_buf_adds(sse, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

cJSON *messages_render(const struct answer *a, struct rk_buf *sse)
{
	const cJSON *reply = a->reply;
	if (!thinking_of)
		thinking_of = cJSON_CreateObject();
	cJSON *doc = cJSON_CreateObject();
	char *id = vendor_id("msg_01", 22, 0);
	cJSON_AddStringToObject(doc, "id", id);
	free(id);
	cJSON_AddStringToObject(doc, "type", "message");
	cJSON_AddStringToObject(doc, "role", "assistant");
	cJSON_AddStringToObject(doc, "model", a->s->model ? a->s->model : "scripted");
	cJSON *content = cJSON_AddArrayToObject(doc, "content");
	const char *raw[64] = {0};
	int k = 0;
	long out = 1;

	if (cJSON_GetObjectItemCaseSensitive(a->req, "compaction")) {
		/* a compaction request: only the signed compaction block */
		const char *text = rk_json_string(reply, "content", "");
		char *sig = compaction_signature(text);
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "type", "compaction");
		cJSON_AddStringToObject(t, "content", text);
		cJSON_AddNullToObject(t, "encrypted_content");
		cJSON_AddStringToObject(t, "signature", sig);
		cJSON_AddItemToObject(t, "tool_changes", cJSON_CreateArray());
		cJSON_AddItemToArray(content, t);
		free(sig);
		cJSON_AddStringToObject(doc, "stop_reason", "compaction");
		cJSON_AddNullToObject(doc, "stop_sequence");
		cJSON_AddNullToObject(doc, "stop_details");
		cJSON_AddNullToObject(doc, "container");
		cJSON_AddNullToObject(doc, "diagnostics");
		struct cache_usage cu;
		prompt_cache(a->s->prompt, &cu);
		cJSON_AddItemToObject(doc, "usage", usage(&cu, 1 + (long)strlen(text) / 4, 0));
		if (sse)
			stream(doc, raw, &cu, sse);
		return doc;
	}

	const char *reasoning = rk_json_string(reply, "reasoning", NULL);
	char *signature = NULL;
	if (reasoning && thinking_on(a->req)) {
		signature = vendor_id("Eo", 120, 0);
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "type", "thinking");
		cJSON_AddStringToObject(t, "thinking", reasoning);
		cJSON_AddStringToObject(t, "signature", signature);
		cJSON_AddItemToArray(content, t);
		out += (long)strlen(reasoning) / 4;
		k++;
	}
	const char *text = rk_json_string(reply, "content", NULL);
	const char *refusal = rk_json_string(reply, "refusal", NULL);
	if (text && text[0]) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "type", "text");
		cJSON_AddStringToObject(t, "text", text);
		cJSON_AddNullToObject(t, "citations");
		cJSON_AddItemToArray(content, t);
		out += (long)strlen(text) / 4;
		k++;
	}
	int ncalls = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(reply, "tool_calls"))
	{
		cJSON *t = cJSON_CreateObject();
		const char *given = rk_json_string(c, "id", NULL);
		char *tid = given ? rk_xstrdup(given) : vendor_id("toolu_01", 22, 0);
		cJSON_AddStringToObject(t, "type", "tool_use");
		cJSON_AddStringToObject(t, "id", tid);
		cJSON_AddStringToObject(t, "name", rk_json_string(c, "name", ""));
		const char *bad;
		cJSON *input = call_arguments_object(c, a->last_session, &bad);
		if (!input)
			input = cJSON_CreateString(bad); /* malformed on purpose: as written */
		cJSON_AddItemToObject(t, "input", input);
		cJSON_AddItemToObject(t, "caller", cJSON_Parse("{\"type\":\"direct\"}"));
		cJSON_AddItemToArray(content, t);
		if (k < 64)
			raw[k] = bad;
		if (signature)
			cJSON_AddStringToObject(thinking_of, tid, signature);
		free(tid);
		k++;
		ncalls++;
		out += 20;
	}
	free(signature);
	const char *finish = rk_json_string(reply, "finish_reason", NULL);
	const char *stop = rk_json_string(reply, "stop_reason", NULL);
	if (!stop)
		stop = refusal ? "refusal"
		       : finish && strcmp(finish, "length") == 0 ? "max_tokens"
		       : ncalls					 ? "tool_use"
								 : "end_turn";
	cJSON_AddStringToObject(doc, "stop_reason", stop);
	cJSON_AddNullToObject(doc, "stop_sequence");
	if (refusal) {
		/* RefusalStopDetails: the policy category (or null) and why */
		cJSON *sd = cJSON_AddObjectToObject(doc, "stop_details");
		cJSON_AddStringToObject(sd, "type", "refusal");
		rk_json_add_str_or_null(sd, "category", rk_json_string(reply, "refusal_category", NULL));
		cJSON_AddStringToObject(sd, "explanation", refusal);
	} else {
		cJSON_AddNullToObject(doc, "stop_details");
	}
	cJSON_AddNullToObject(doc, "container");
	cJSON_AddNullToObject(doc, "diagnostics");
	struct cache_usage cu;
	prompt_cache(a->s->prompt, &cu);
	cJSON_AddItemToObject(doc, "usage", usage(&cu, out, 0));
	if (sse)
		stream(doc, raw, &cu, sse);
	return doc;
}

void messages_release(void)
{
	cJSON_Delete(thinking_of);
	thinking_of = NULL;
}
