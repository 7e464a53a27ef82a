/* The OpenAI Responses API (POST .../responses), as the openai SDK 7.60's
 * type definitions describe it (resources/responses/responses.d.ts). The
 * responses served are kept by id, so previous_response_id works as it
 * does at the vendor: only for a response created with store on. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "tests/emulators/model/model.h"

struct served {
	char *id;
	int stored;
	cJSON *calls;  /* {call_id: item type} of its whole context: the chain before, its input, its output */
	cJSON *output; /* its output items */
};

static struct served *served;
static size_t nserved, capserved;
/* {call item id: the id of the reasoning item served right before it} */
static cJSON *reasoning_before;
/* {reasoning id: its encrypted_content ("" when none was sent)} for the
 * responses served with store off: the vendor kept no copy of those */
static cJSON *unstored_reasoning;
/* {call_id: [pending safety check ids]} */
static cJSON *pending_of;

static struct served *find_served(const char *id)
{
	for (size_t i = 0; id && i < nserved; i++) {
		if (strcmp(served[i].id, id) == 0)
			return &served[i];
	}
	return NULL;
}

static int is_call(const char *type)
{
	return !strcmp(type, "function_call") || !strcmp(type, "computer_call");
}

static const char *output_of(const char *call_type)
{
	return strcmp(call_type, "computer_call") == 0 ? "computer_call_output" : "function_call_output";
}

/* The text of a message's or an output's content (string or parts), its
 * images checked and counted. */
/* What the checks of one request need besides the request. */
struct ctx {
	const struct http_in *h;
	struct verdict *v;
};

static char *parts(const cJSON *content, struct summary *s, int *images, const struct ctx *x, int item)
{
	*images = 0;
	if (cJSON_IsString(content))
		return rk_xstrdup(content->valuestring);
	struct rk_buf t = RK_BUF_INIT;
	rk_buf_init(&t);
	const cJSON *p;
	cJSON_ArrayForEach(p, content)
	{
		const char *type = rk_json_string(p, "type", "");
		if (!strcmp(type, "input_text") || !strcmp(type, "output_text") || !strcmp(type, "text")) {
			if (t.len)
				rk_buf_addc(&t, '\n');
			rk_buf_adds(&t, rk_json_string(p, "text", ""));
		} else if (strcmp(type, "input_image") == 0) {
			struct image img;
			const char *url = rk_json_string(p, "image_url", NULL);
			const char *file_id = rk_json_string(p, "file_id", NULL);
			(*images)++;
			if (file_id && !url) { /* an uploaded file (files.c) */
				char where[64];
				snprintf(where, sizeof(where), "input[%d].content", item);
				files_image(file_id, PROTO_RESPONSES, x->h, where, s, x->v, &img);
				continue;
			}
			if (url && !file_id) {
				image_check_data_url(url, &img);
			} else {
				memset(&img, 0, sizeof(img));
				snprintf(img.why, sizeof(img.why), "an input_image needs one of image_url and file_id");
			}
			summary_add_image(s, &img);
		}
	}
	return rk_buf_detach(&t, NULL);
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
		const char *type = rk_json_string(t, "type", "");
		const char *name = rk_json_string(t, "name", NULL);
		if (strcmp(type, "function") == 0) {
			const cJSON *params = cJSON_GetObjectItemCaseSensitive(t, "parameters");
			if (!name && !problem[0])
				snprintf(problem, sz, "tool %d: a function tool needs a name", i);
			else if (params && !cJSON_IsObject(params) && !cJSON_IsNull(params) && !problem[0])
				snprintf(problem, sz, "tool %d (\"%.60s\"): parameters must be an object", i, name);
		} else if (strcmp(type, "computer") == 0) {
			s->native_type = "computer";
			name = "computer";
		} else if (strcmp(type, "computer_use_preview") == 0) {
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(t, "display_width");
			const cJSON *h = cJSON_GetObjectItemCaseSensitive(t, "display_height");
			s->native_type = "computer_use_preview";
			s->display_w = cJSON_IsNumber(w) ? w->valueint : 0;
			s->display_h = cJSON_IsNumber(h) ? h->valueint : 0;
			name = "computer";
			if ((s->display_w <= 0 || s->display_h <= 0 || !rk_json_string(t, "environment", NULL)) &&
			    !problem[0])
				snprintf(problem, sz,
					 "tool %d: computer_use_preview needs display_width, display_height and environment",
					 i);
		} else if (!type[0] && !problem[0]) {
			snprintf(problem, sz, "tool %d has no type", i);
		}
		cJSON_AddItemToArray(s->tools, cJSON_CreateString(name ? name : type));
		i++;
	}
}

struct walk {
	char ids[400];	     /* outputs and calls that do not pair up */
	char computer[400];  /* a computer_call_output that is not a screenshot */
	char reasoning[400]; /* reasoning items not replayed as the vendor needs */
	char invalid[300];
};

/* Whether call_id was called before input item `before`, or in the chain of
 * prev; the call's type in *type. */
static int called(const cJSON *input, int before, const struct served *prev, const char *call_id, const char **type)
{
	for (int j = 0; j < before; j++) {
		const cJSON *it = cJSON_GetArrayItem(input, j);
		const char *t = rk_json_string(it, "type", "");
		if (is_call(t) && strcmp(rk_json_string(it, "call_id", ""), call_id) == 0) {
			*type = t;
			return 1;
		}
	}
	*type = prev ? rk_json_string(prev->calls, call_id, NULL) : NULL;
	return *type != NULL;
}

static int answered(const cJSON *input, int after, const char *call_id, const char *out_type)
{
	for (int j = after; j < cJSON_GetArraySize(input); j++) {
		const cJSON *it = cJSON_GetArrayItem(input, j);
		if (strcmp(rk_json_string(it, "type", ""), out_type) == 0 &&
		    strcmp(rk_json_string(it, "call_id", ""), call_id) == 0)
			return 1;
	}
	return 0;
}

static void acknowledged(const cJSON *it, struct summary *s, struct walk *w, int i)
{
	const char *call_id = rk_json_string(it, "call_id", "");
	const cJSON *pending = cJSON_GetObjectItemCaseSensitive(pending_of, call_id);
	cJSON_Delete(s->acknowledged);
	s->acknowledged = cJSON_CreateArray();
	const cJSON *a;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(it, "acknowledged_safety_checks"))
	{
		const char *id = rk_json_string(a, "id", NULL);
		int known = !pending;
		const cJSON *p;
		cJSON_ArrayForEach(p, pending)
		{
			known |= id && cJSON_IsString(p) && strcmp(p->valuestring, id) == 0;
		}
		if ((!id || !known) && !w->computer[0])
			snprintf(w->computer, sizeof(w->computer),
				 "input item %d acknowledges safety check \"%.60s\", which the call \"%.60s\" did not have",
				 i, id ? id : "(no id)", call_id);
		cJSON_AddItemToArray(s->acknowledged, cJSON_CreateString(id ? id : ""));
	}
}

static void computer_output(const cJSON *it, struct summary *s, struct walk *w, int i, const struct ctx *x)
{
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(it, "output");
	const char *url = rk_json_string(out, "image_url", NULL);
	const char *file_id = rk_json_string(out, "file_id", NULL);
	if (strcmp(rk_json_string(out, "type", ""), "computer_screenshot") != 0 || !url == !file_id) {
		if (!w->computer[0])
			snprintf(w->computer, sizeof(w->computer),
				 "input item %d: a computer_call_output's output is {\"type\":\"computer_screenshot\", "
				 "\"image_url\":\"data:...\"} or {\"type\":\"computer_screenshot\", \"file_id\":...}",
				 i);
		return;
	}
	struct image img;
	if (file_id) { /* an uploaded file (files.c) */
		char where[64];
		snprintf(where, sizeof(where), "input[%d].output.file_id", i);
		files_image(file_id, PROTO_RESPONSES, x->h, where, s, x->v, &img);
	} else {
		image_check_data_url(url, &img);
		summary_add_image(s, &img);
	}
	s->images_after_last_tool = 1;
}

/* A compaction item's encrypted_content: the summary, base64, then "."
 * and a hash over it with the emulator's key (fixed: a resumed run talks
 * to another server process). */
#define COMPACTION_KEY "model-emulator-compaction-key-1"
static char *compaction_seal(const char *summary)
{
	char *b64 = rk_base64_encode(summary, strlen(summary));
	char *keyed = rk_xasprintf("%s|%s", COMPACTION_KEY, b64);
	char hex[65];
	rk_sha256_hex(keyed, strlen(keyed), hex);
	char *out = rk_xasprintf("%s.%s", b64, hex);
	free(keyed);
	free(b64);
	return out;
}

/* The summary a sealed encrypted_content holds, or NULL when it does not
 * verify (malloc'd). */
static char *compaction_text(const char *sealed)
{
	const char *dot = strrchr(sealed, '.');
	if (!dot)
		return NULL;
	char *b64 = rk_xstrndup(sealed, (size_t)(dot - sealed));
	char *keyed = rk_xasprintf("%s|%s", COMPACTION_KEY, b64);
	char hex[65];
	rk_sha256_hex(keyed, strlen(keyed), hex);
	free(keyed);
	char *text = NULL;
	struct rk_buf raw = RK_BUF_INIT;
	rk_buf_init(&raw);
	if (strcmp(hex, dot + 1) == 0 && rk_base64_decode(b64, &raw) >= 0)
		text = rk_xstrndup(raw.data ? raw.data : "", raw.len);
	rk_buf_release(&raw);
	free(b64);
	return text;
}

cJSON *responses_compact_render(const struct answer *a)
{
	cJSON *doc = cJSON_CreateObject();
	char *id = vendor_id("resp_", 48, 1);
	cJSON_AddStringToObject(doc, "id", id);
	free(id);
	cJSON_AddStringToObject(doc, "object", "response.compaction");
	cJSON_AddNumberToObject(doc, "created_at", (double)(rk_now_ms() / 1000));
	cJSON *out = cJSON_AddArrayToObject(doc, "output");
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(a->req, "input"))
	{
		const char *type = rk_json_string(it, "type", "message");
		if (!strcmp(type, "message") && !strcmp(rk_json_string(it, "role", ""), "user")) {
			cJSON *m = cJSON_Duplicate(it, 1);
			cJSON_ReplaceItemInObjectCaseSensitive(m, "type", cJSON_CreateString("message"));
			if (!cJSON_GetObjectItemCaseSensitive(m, "type"))
				cJSON_AddStringToObject(m, "type", "message");
			cJSON_AddItemToArray(out, m);
		}
	}
	const char *text = rk_json_string(a->reply, "content", "");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "compaction");
	char *cid = vendor_id("cmp_", 48, 1);
	cJSON_AddStringToObject(c, "id", cid);
	free(cid);
	char *sealed = compaction_seal(text);
	cJSON_AddStringToObject(c, "encrypted_content", sealed);
	free(sealed);
	cJSON_AddItemToArray(out, c);
	struct cache_usage cu;
	prompt_cache(a->s->prompt, &cu);
	cJSON *u = cJSON_AddObjectToObject(doc, "usage");
	long o = 1 + (long)strlen(text) / 4;
	cJSON_AddNumberToObject(u, "input_tokens", (double)cu.total);
	cJSON *d = cJSON_AddObjectToObject(u, "input_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", (double)cu.read);
	cJSON_AddNumberToObject(u, "output_tokens", (double)o);
	cJSON *od = cJSON_AddObjectToObject(u, "output_tokens_details");
	cJSON_AddNumberToObject(od, "reasoning_tokens", 0);
	cJSON_AddNumberToObject(u, "total_tokens", (double)(cu.total + o));
	return doc;
}

/* Reads the input items: text, images, tool outputs, and whether calls and
 * outputs pair up. */
static void walk_input(const cJSON *input, const struct served *prev, struct summary *s, struct walk *w,
		       const struct ctx *x)
{
	cJSON *reasoning_seen = cJSON_CreateObject();
	int n = cJSON_GetArraySize(input);
	for (int i = 0; i < n; i++) {
		const cJSON *it = cJSON_GetArrayItem(input, i);
		const char *type = rk_json_string(it, "type", NULL);
		const char *role = rk_json_string(it, "role", NULL);
		const char *call_id = rk_json_string(it, "call_id", "");
		if ((!type && role) || (type && strcmp(type, "message") == 0)) {
			if (!role) {
				snprintf(w->invalid, sizeof(w->invalid), "input item %d: a message has no role", i);
				break;
			}
			cJSON_AddItemToArray(s->roles, cJSON_CreateString(role));
			int images;
			char *text = parts(cJSON_GetObjectItemCaseSensitive(it, "content"), s, &images, x, i);
			summary_add_text(s, text);
			free(text);
			if (s->last_tool >= 0)
				s->images_after_last_tool += images;
			continue;
		}
		if (!type) {
			snprintf(w->invalid, sizeof(w->invalid), "input item %d has no type", i);
			break;
		}
		cJSON_AddItemToArray(s->roles, cJSON_CreateString(type));
		if (is_call(type)) {
			if (!call_id[0] && !w->ids[0])
				snprintf(w->ids, sizeof(w->ids), "input item %d: a %s has no call_id", i, type);
			else if (!answered(input, i + 1, call_id, output_of(type)) && !w->ids[0])
				snprintf(w->ids, sizeof(w->ids), "input item %d: the %s \"%.80s\" has no %s after it",
					 i, type, call_id, output_of(type));
			const char *rid = rk_json_string(reasoning_before, rk_json_string(it, "id", ""), NULL);
			if (rid && !cJSON_HasObjectItem(reasoning_seen, rid) && !w->reasoning[0])
				snprintf(w->reasoning, sizeof(w->reasoning),
					 "input item %d: the %s \"%.60s\" comes without the reasoning item \"%.60s\" served "
					 "before it",
					 i, type, rk_json_string(it, "id", ""), rid);
		} else if (!strcmp(type, "function_call_output") || !strcmp(type, "computer_call_output")) {
			const char *ctype;
			if (!called(input, i, prev, call_id, &ctype)) {
				if (!w->ids[0])
					snprintf(w->ids, sizeof(w->ids),
						 "input item %d: the %s for \"%.80s\" answers no call (in the input or via "
						 "previous_response_id)",
						 i, type, call_id);
			} else if (strcmp(output_of(ctype), type) != 0 && !w->ids[0]) {
				snprintf(w->ids, sizeof(w->ids), "input item %d: a %s answers the %s \"%.80s\"", i,
					 type, ctype, call_id);
			}
			s->last_tool = i;
			s->images_after_last_tool = 0;
			free(s->last_tool_text);
			if (strcmp(type, "computer_call_output") == 0) {
				s->last_tool_text = rk_xstrdup("");
				computer_output(it, s, w, i, x);
				acknowledged(it, s, w, i);
			} else {
				int images;
				s->last_tool_text =
					parts(cJSON_GetObjectItemCaseSensitive(it, "output"), s, &images, x, i);
				s->images_after_last_tool = images;
				summary_add_text(s, s->last_tool_text);
			}
		} else if (strcmp(type, "reasoning") == 0) {
			const char *id = rk_json_string(it, "id", "");
			const cJSON *kept = cJSON_GetObjectItemCaseSensitive(unstored_reasoning, id);
			const char *enc = rk_json_string(it, "encrypted_content", NULL);
			if (kept && (!enc || strcmp(enc, kept->valuestring) != 0) && !w->reasoning[0])
				snprintf(w->reasoning, sizeof(w->reasoning),
					 "input item %d: the reasoning item \"%.60s\" came from a response with store off, so "
					 "it must carry its encrypted_content (include \"reasoning.encrypted_content\")",
					 i, id);
			cJSON_AddTrueToObject(reasoning_seen, id);
		} else if (strcmp(type, "compaction") == 0) {
			/* one that /responses/compact made here, as it made it */
			char *text = compaction_text(rk_json_string(it, "encrypted_content", ""));
			if (!text && !w->invalid[0])
				snprintf(w->invalid, sizeof(w->invalid),
					 "input item %d: the compaction item's encrypted_content was not made by "
					 "/responses/compact (or was changed)",
					 i);
			if (text)
				summary_add_text(s, text);
			free(text);
		} else {
			snprintf(w->invalid, sizeof(w->invalid), "input item %d: type \"%.40s\" is not emulated", i,
				 type);
			break;
		}
	}
	cJSON_Delete(reasoning_seen);
}

/* With previous_response_id, the calls the response ended with are answered
 * now (input: the request's input, a list or a string). */
static void check_ended(const cJSON *input, const struct served *prev, struct walk *w)
{
	const cJSON *o, *ended = prev ? prev->output : NULL;
	cJSON_ArrayForEach(o, ended)
	{
		const char *type = rk_json_string(o, "type", "");
		const char *call_id = rk_json_string(o, "call_id", "");
		if (is_call(type) && !answered(input, 0, call_id, output_of(type)) && !w->ids[0])
			snprintf(w->ids, sizeof(w->ids), "the previous response's %s \"%.80s\" has no %s in the input",
				 type, call_id, output_of(type));
	}
}

void responses_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s,
		     struct verdict *v)
{
	s->model = rk_json_string(req, "model", NULL);
	s->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stream"));
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(req, "input");
	if (!cJSON_IsObject(req) || !s->model || !(cJSON_IsString(input) || cJSON_IsArray(input))) {
		if (req)
			snprintf(s->invalid_why, sizeof(s->invalid_why),
				 "the request needs a \"model\" string and an \"input\" string or list");
		record(v, "request_valid", 0, "%s", s->invalid_why);
		return;
	}
	s->valid = 1;
	const cJSON *store = cJSON_GetObjectItemCaseSensitive(req, "store");
	s->store = !cJSON_IsFalse(store);
	const char *prev_id = rk_json_string(req, "previous_response_id", NULL);
	s->previous_response = prev_id != NULL;
	const struct served *prev = find_served(prev_id);
	const char *instructions = rk_json_string(req, "instructions", NULL);
	if (instructions)
		summary_add_text(s, instructions);

	struct walk w = {.ids = ""};
	char tools[400] = "";
	check_tools(req, s, tools, sizeof(tools));
	if (cJSON_IsString(input)) {
		s->messages = 1;
		cJSON_AddItemToArray(s->roles, cJSON_CreateString("user"));
		summary_add_text(s, input->valuestring);
	} else {
		s->messages = cJSON_GetArraySize(input);
		struct ctx x = {h, v};
		walk_input(input, prev, s, &w, &x);
	}
	check_ended(input, prev, &w);
	if (w.invalid[0]) {
		s->valid = 0;
		snprintf(s->invalid_why, sizeof(s->invalid_why), "%s", w.invalid);
	}
	record(v, "request_valid", s->valid, "%s", s->valid ? "model and input present" : s->invalid_why);
	if (!s->valid)
		return;
	record(v, "authorization", has_bearer(h), "%s",
	       has_bearer(h) ? "an Authorization: Bearer header came" : "no Authorization: Bearer header came");
	openai_cache_check(req, s, v);
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(expect, "store");
	int want_store = cJSON_IsBool(want) ? cJSON_IsTrue(want) : 0;
	if (s->compact) /* /responses/compact has no store: it keeps nothing */
		want_store = s->store;
	record(v, "store", s->store == want_store, "store is %s, wanted %s%s", s->store ? "on" : "off",
	       want_store ? "on" : "off", cJSON_IsBool(want) ? "" : " (the default unless the step's expect says so)");
	record(v, "tools_valid", tools[0] == 0, "%s", tools[0] ? tools : "every tool is well formed");
	if (prev_id)
		record(v, "previous_response_id", prev && prev->stored, "%s \"%.80s\"",
		       !prev	      ? "no response was served with the id"
		       : prev->stored ? "continues"
				      : "was created with store off, so the vendor kept no copy of",
		       prev_id);
	record(v, "images_valid", s->bad_images == 0, "%d of %d images are bad%s%s", s->bad_images, s->images,
	       s->bad_images ? ": " : "", s->bad_image_why);
	record(v, "computer_call_output", w.computer[0] == 0, "%s",
	       w.computer[0] ? w.computer : "every computer_call_output is a screenshot");
	snprintf(s->ids_problem, sizeof(s->ids_problem), "%s", w.ids);
	record(v, "call_ids_match", w.ids[0] == 0, "%s",
	       w.ids[0] ? w.ids : "every call has its output and every output its call");
	record(v, "reasoning_replayed", w.reasoning[0] == 0, "%s",
	       w.reasoning[0] ? w.reasoning : "reasoning items come back as needed");
}

/* ---- answers ---- */

static cJSON *text_part(const char *text)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", "output_text");
	cJSON_AddItemToObject(p, "annotations", cJSON_CreateArray());
	cJSON_AddItemToObject(p, "logprobs", cJSON_CreateArray());
	cJSON_AddStringToObject(p, "text", text);
	return p;
}

static cJSON *computer_call(const cJSON *args, const char *native, const char *call_id)
{
	cJSON *it = cJSON_CreateObject();
	char *id = vendor_id("cu_", 48, 1);
	cJSON_AddStringToObject(it, "id", id);
	free(id);
	cJSON_AddStringToObject(it, "type", "computer_call");
	cJSON_AddStringToObject(it, "call_id", call_id);
	const cJSON *actions = cJSON_GetObjectItemCaseSensitive(args, "actions");
	const cJSON *action = cJSON_GetObjectItemCaseSensitive(args, "action");
	if (strcmp(native, "computer") == 0) {
		cJSON *list = actions ? cJSON_Duplicate(actions, 1) : cJSON_CreateArray();
		if (!actions && action)
			cJSON_AddItemToArray(list, cJSON_Duplicate(action, 1));
		cJSON_AddItemToObject(it, "actions", list);
	} else {
		cJSON_AddItemToObject(it, "action",
				      cJSON_Duplicate(action ? action : cJSON_GetArrayItem(actions, 0), 1));
	}
	const cJSON *checks = cJSON_GetObjectItemCaseSensitive(args, "pending_safety_checks");
	cJSON_AddItemToObject(it, "pending_safety_checks", checks ? cJSON_Duplicate(checks, 1) : cJSON_CreateArray());
	cJSON_AddStringToObject(it, "status", "completed");
	cJSON *ids = cJSON_CreateArray();
	const cJSON *c;
	cJSON_ArrayForEach(c, checks)
	{
		cJSON_AddItemToArray(ids, cJSON_CreateString(rk_json_string(c, "id", "")));
	}
	cJSON_AddItemToObject(pending_of, call_id, ids);
	return it;
}

static int wants_encrypted(const cJSON *req)
{
	const cJSON *i;
	cJSON_ArrayForEach(i, cJSON_GetObjectItemCaseSensitive(req, "include"))
	{
		if (cJSON_IsString(i) && strcmp(i->valuestring, "reasoning.encrypted_content") == 0)
			return 1;
	}
	return 0;
}

static cJSON *output_items(const struct answer *a, long *out_tokens, long *reasoning_tokens)
{
	const cJSON *reply = a->reply;
	cJSON *output = cJSON_CreateArray();
	const char *reasoning = rk_json_string(reply, "reasoning", NULL);
	char *rid = NULL;
	if (reasoning) {
		rid = vendor_id("rs_", 48, 1);
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "id", rid);
		cJSON_AddStringToObject(it, "type", "reasoning");
		cJSON *sum = cJSON_CreateObject();
		cJSON_AddStringToObject(sum, "type", "summary_text");
		cJSON_AddStringToObject(sum, "text", reasoning);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(it, "summary"), sum);
		char *enc = NULL;
		if (wants_encrypted(a->req)) {
			enc = vendor_id("gAAAAA", 160, 0);
			cJSON_AddStringToObject(it, "encrypted_content", enc);
		}
		if (!a->s->store)
			cJSON_AddStringToObject(unstored_reasoning, rid, enc ? enc : "");
		free(enc);
		cJSON_AddItemToArray(output, it);
		*reasoning_tokens = 10 + (long)strlen(reasoning) / 4;
	}
	const char *text = rk_json_string(reply, "content", NULL);
	const char *refusal = rk_json_string(reply, "refusal", NULL);
	if ((text && text[0]) || refusal) {
		cJSON *it = cJSON_CreateObject();
		char *id = vendor_id("msg_", 48, 1);
		cJSON_AddStringToObject(it, "id", id);
		free(id);
		cJSON_AddStringToObject(it, "type", "message");
		cJSON_AddStringToObject(it, "status", "completed");
		cJSON_AddStringToObject(it, "role", "assistant");
		cJSON *content = cJSON_AddArrayToObject(it, "content");
		if (text && text[0])
			cJSON_AddItemToArray(content, text_part(text));
		if (refusal) {
			/* ResponseOutputRefusal: {type: "refusal", refusal} */
			cJSON *p = cJSON_CreateObject();
			cJSON_AddStringToObject(p, "type", "refusal");
			cJSON_AddStringToObject(p, "refusal", refusal);
			cJSON_AddItemToArray(content, p);
			*out_tokens += (long)strlen(refusal) / 4;
		}
		cJSON_AddItemToArray(output, it);
		*out_tokens += text ? (long)strlen(text) / 4 : 0;
	}
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(reply, "tool_calls"))
	{
		const char *name = rk_json_string(c, "name", "");
		const char *given = rk_json_string(c, "id", NULL);
		char *call_id = given ? rk_xstrdup(given) : vendor_id("call_", 24, 0);
		cJSON *it;
		const char *raw;
		cJSON *args = a->s->native_type && strcmp(name, "computer") == 0
				      ? call_arguments_object(c, a->last_session, &raw)
				      : NULL;
		if (args) {
			it = computer_call(args, a->s->native_type, call_id);
			cJSON_Delete(args);
		} else {
			it = cJSON_CreateObject();
			char *id = vendor_id("fc_", 48, 1);
			cJSON_AddStringToObject(it, "id", id);
			free(id);
			cJSON_AddStringToObject(it, "type", "function_call");
			cJSON_AddStringToObject(it, "status", "completed");
			char *text_args = call_arguments(c, a->last_session);
			cJSON_AddStringToObject(it, "arguments", text_args);
			free(text_args);
			cJSON_AddStringToObject(it, "call_id", call_id);
			cJSON_AddStringToObject(it, "name", name);
		}
		if (rid)
			cJSON_AddStringToObject(reasoning_before, rk_json_string(it, "id", ""), rid);
		cJSON_AddItemToArray(output, it);
		free(call_id);
		*out_tokens += 20;
	}
	free(rid);
	return output;
}

/* Remembers the response for previous_response_id: its id, store, and
 * every call its context holds. */
static void remember(const cJSON *doc, const struct answer *a)
{
	if (nserved == capserved) {
		capserved = capserved ? 2 * capserved : 16;
		served = rk_xrealloc(served, capserved * sizeof(*served));
	}
	struct served *r = &served[nserved];
	const struct served *prev = find_served(rk_json_string(a->req, "previous_response_id", NULL));
	r->id = rk_xstrdup(rk_json_string(doc, "id", ""));
	r->stored = a->s->store;
	r->calls = prev ? cJSON_Duplicate(prev->calls, 1) : cJSON_CreateObject();
	r->output = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "output"), 1);
	const cJSON *lists[2] = {cJSON_GetObjectItemCaseSensitive(a->req, "input"), r->output};
	for (int l = 0; l < 2; l++) {
		const cJSON *it, *list = cJSON_IsArray(lists[l]) ? lists[l] : NULL;
		cJSON_ArrayForEach(it, list)
		{
			const char *type = rk_json_string(it, "type", "");
			const char *call_id = rk_json_string(it, "call_id", NULL);
			if (is_call(type) && call_id && !cJSON_HasObjectItem(r->calls, call_id))
				cJSON_AddStringToObject(r->calls, call_id, type);
		}
	}
	nserved++;
}

static void emit(struct rk_buf *sse, int *seq, cJSON *e)
{
	cJSON_AddNumberToObject(e, "sequence_number", (*seq)++);
	sse_event(sse, rk_json_string(e, "type", ""), e);
	cJSON_Delete(e);
}

static cJSON *event(const char *type, const char *item_id, int output_index)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", type);
	if (item_id)
		cJSON_AddStringToObject(e, "item_id", item_id);
	if (output_index >= 0)
		cJSON_AddNumberToObject(e, "output_index", output_index);
	return e;
}

static void deltas(struct rk_buf *sse, int *seq, const char *type, const char *item_id, int index, int content_index,
		   int summary_index, const char *text, size_t size)
{
	for (size_t off = 0, len = strlen(text), n; off < len; off += n) {
		n = utf8_piece(text + off, len - off, size);
		cJSON *e = event(type, item_id, index);
		if (content_index >= 0)
			cJSON_AddNumberToObject(e, "content_index", content_index);
		if (summary_index >= 0)
			cJSON_AddNumberToObject(e, "summary_index", summary_index);
		char *piece = rk_xstrndup(text + off, n);
		cJSON_AddStringToObject(e, "delta", piece);
		free(piece);
		if (content_index >= 0)
			cJSON_AddItemToObject(e, "logprobs", cJSON_CreateArray());
		emit(sse, seq, e);
	}
}

static void stream_item(struct rk_buf *sse, int *seq, const cJSON *item, int index)
{
	const char *type = rk_json_string(item, "type", "");
	const char *id = rk_json_string(item, "id", "");
	cJSON *added = cJSON_Duplicate(item, 1);
	if (strcmp(type, "message") == 0) {
		cJSON_ReplaceItemInObjectCaseSensitive(added, "content", cJSON_CreateArray());
		cJSON_ReplaceItemInObjectCaseSensitive(added, "status", cJSON_CreateString("in_progress"));
	} else if (strcmp(type, "function_call") == 0) {
		cJSON_ReplaceItemInObjectCaseSensitive(added, "arguments", cJSON_CreateString(""));
		cJSON_ReplaceItemInObjectCaseSensitive(added, "status", cJSON_CreateString("in_progress"));
	} else if (strcmp(type, "reasoning") == 0) {
		cJSON_ReplaceItemInObjectCaseSensitive(added, "summary", cJSON_CreateArray());
	} else if (strcmp(type, "computer_call") == 0) {
		cJSON_ReplaceItemInObjectCaseSensitive(added, "status", cJSON_CreateString("in_progress"));
	}
	cJSON *e = event("response.output_item.added", NULL, index);
	cJSON_AddItemToObject(e, "item", added);
	emit(sse, seq, e);

	if (strcmp(type, "message") == 0) {
		const cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item, "content"), 0);
		const char *text = rk_json_string(part, "text", "");
		e = event("response.content_part.added", id, index);
		cJSON_AddNumberToObject(e, "content_index", 0);
		cJSON_AddItemToObject(e, "part", text_part(""));
		emit(sse, seq, e);
		deltas(sse, seq, "response.output_text.delta", id, index, 0, -1, text, 10);
		e = event("response.output_text.done", id, index);
		cJSON_AddNumberToObject(e, "content_index", 0);
		cJSON_AddStringToObject(e, "text", text);
		cJSON_AddItemToObject(e, "logprobs", cJSON_CreateArray());
		emit(sse, seq, e);
		e = event("response.content_part.done", id, index);
		cJSON_AddNumberToObject(e, "content_index", 0);
		cJSON_AddItemToObject(e, "part", cJSON_Duplicate(part, 1));
		emit(sse, seq, e);
	} else if (strcmp(type, "function_call") == 0) {
		const char *args = rk_json_string(item, "arguments", "");
		deltas(sse, seq, "response.function_call_arguments.delta", id, index, -1, -1, args,
		       strlen(args) / 4 + 1);
		e = event("response.function_call_arguments.done", id, index);
		cJSON_AddStringToObject(e, "arguments", args);
		cJSON_AddStringToObject(e, "name", rk_json_string(item, "name", ""));
		emit(sse, seq, e);
	} else if (strcmp(type, "reasoning") == 0) {
		const cJSON *sum = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item, "summary"), 0);
		const char *text = rk_json_string(sum, "text", "");
		e = event("response.reasoning_summary_part.added", id, index);
		cJSON_AddNumberToObject(e, "summary_index", 0);
		cJSON_AddItemToObject(e, "part", cJSON_Parse("{\"type\":\"summary_text\",\"text\":\"\"}"));
		emit(sse, seq, e);
		deltas(sse, seq, "response.reasoning_summary_text.delta", id, index, -1, 0, text, 16);
		e = event("response.reasoning_summary_text.done", id, index);
		cJSON_AddNumberToObject(e, "summary_index", 0);
		cJSON_AddStringToObject(e, "text", text);
		emit(sse, seq, e);
		e = event("response.reasoning_summary_part.done", id, index);
		cJSON_AddNumberToObject(e, "summary_index", 0);
		cJSON_AddItemToObject(e, "part", cJSON_Duplicate(sum, 1));
		emit(sse, seq, e);
	}
	e = event("response.output_item.done", NULL, index);
	cJSON_AddItemToObject(e, "item", cJSON_Duplicate(item, 1));
	emit(sse, seq, e);
}

/* response.created and response.in_progress, each item's events, then
 * response.completed (response.incomplete) with the whole response. */
static void stream(const cJSON *doc, struct rk_buf *sse)
{
	int seq = 0;
	cJSON *early = cJSON_Duplicate(doc, 1);
	cJSON_ReplaceItemInObjectCaseSensitive(early, "status", cJSON_CreateString("in_progress"));
	cJSON_ReplaceItemInObjectCaseSensitive(early, "output", cJSON_CreateArray());
	cJSON_ReplaceItemInObjectCaseSensitive(early, "usage", cJSON_CreateNull());
	cJSON_ReplaceItemInObjectCaseSensitive(early, "completed_at", cJSON_CreateNull());
	cJSON_ReplaceItemInObjectCaseSensitive(early, "incomplete_details", cJSON_CreateNull());
	const char *names[2] = {"response.created", "response.in_progress"};
	for (int i = 0; i < 2; i++) {
		cJSON *e = event(names[i], NULL, -1);
		cJSON_AddItemToObject(e, "response", cJSON_Duplicate(early, 1));
		emit(sse, &seq, e);
	}
	cJSON_Delete(early);
	int index = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "output"))
	{
		stream_item(sse, &seq, item, index++);
	}
	int incomplete = strcmp(rk_json_string(doc, "status", ""), "incomplete") == 0;
	cJSON *e = event(incomplete ? "response.incomplete" : "response.completed", NULL, -1);
	cJSON_AddItemToObject(e, "response", cJSON_Duplicate(doc, 1));
	emit(sse, &seq, e);
}

static void add_copy(cJSON *doc, const cJSON *req, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
	cJSON_AddItemToObject(doc, key, v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
}

cJSON *responses_render(const struct answer *a, struct rk_buf *sse)
{
	if (!reasoning_before) {
		reasoning_before = cJSON_CreateObject();
		unstored_reasoning = cJSON_CreateObject();
		pending_of = cJSON_CreateObject();
	}
	const cJSON *req = a->req;
	cJSON *doc = cJSON_CreateObject();
	char *id = vendor_id("resp_", 48, 1);
	cJSON_AddStringToObject(doc, "id", id);
	free(id);
	cJSON_AddStringToObject(doc, "object", "response");
	double now = (double)(rk_now_ms() / 1000);
	cJSON_AddNumberToObject(doc, "created_at", now);
	const char *finish = rk_json_string(a->reply, "finish_reason", NULL);
	/* incomplete_details.reason: "max_output_tokens" or "content_filter" */
	const char *why = !finish				  ? NULL
			  : strcmp(finish, "length") == 0	  ? "max_output_tokens"
			  : strcmp(finish, "content_filter") == 0 ? "content_filter"
								  : NULL;
	int incomplete = why != NULL;
	cJSON_AddStringToObject(doc, "status", incomplete ? "incomplete" : "completed");
	cJSON_AddFalseToObject(doc, "background");
	if (incomplete)
		cJSON_AddNullToObject(doc, "completed_at");
	else
		cJSON_AddNumberToObject(doc, "completed_at", now);
	cJSON_AddNullToObject(doc, "error");
	if (incomplete)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(doc, "incomplete_details"), "reason", why);
	else
		cJSON_AddNullToObject(doc, "incomplete_details");
	add_copy(doc, req, "instructions");
	add_copy(doc, req, "max_output_tokens");
	cJSON_AddNullToObject(doc, "max_tool_calls");
	cJSON_AddStringToObject(doc, "model", a->s->model ? a->s->model : "scripted");
	long out = 1, reasoning = 0;
	cJSON_AddItemToObject(doc, "output", output_items(a, &out, &reasoning));
	cJSON_AddTrueToObject(doc, "parallel_tool_calls");
	add_copy(doc, req, "previous_response_id");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(req, "reasoning");
	cJSON_AddItemToObject(doc, "reasoning",
			      r ? cJSON_Duplicate(r, 1) : cJSON_Parse("{\"effort\":null,\"summary\":null}"));
	cJSON_AddStringToObject(doc, "service_tier", "default");
	cJSON_AddBoolToObject(doc, "store", a->s->store);
	cJSON_AddNumberToObject(doc, "temperature", 1);
	cJSON_AddItemToObject(doc, "text", cJSON_Parse("{\"format\":{\"type\":\"text\"},\"verbosity\":\"medium\"}"));
	cJSON_AddStringToObject(doc, "tool_choice", "auto");
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
	cJSON_AddItemToObject(doc, "tools", tools ? cJSON_Duplicate(tools, 1) : cJSON_CreateArray());
	cJSON_AddNumberToObject(doc, "top_p", 1);
	cJSON_AddStringToObject(doc, "truncation", "disabled");
	struct cache_usage cu;
	prompt_cache(a->s->prompt, &cu);
	long in = cu.total;
	cJSON *u = cJSON_AddObjectToObject(doc, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)in);
	cJSON *d = cJSON_AddObjectToObject(u, "input_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", (double)cu.read);
	cJSON_AddNumberToObject(d, "cache_write_tokens", 0);
	cJSON_AddNumberToObject(u, "output_tokens", (double)(out + reasoning));
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens",
				(double)reasoning);
	cJSON_AddNumberToObject(u, "total_tokens", (double)(in + out + reasoning));
	cJSON_AddNullToObject(doc, "user");
	cJSON_AddItemToObject(doc, "metadata", cJSON_CreateObject());
	remember(doc, a);
	if (sse)
		stream(doc, sse);
	return doc;
}

void responses_release(void)
{
	for (size_t i = 0; i < nserved; i++) {
		free(served[i].id);
		cJSON_Delete(served[i].calls);
		cJSON_Delete(served[i].output);
	}
	free(served);
	served = NULL;
	nserved = capserved = 0;
	cJSON_Delete(reasoning_before);
	cJSON_Delete(unstored_reasoning);
	cJSON_Delete(pending_of);
	reasoning_before = unstored_reasoning = pending_of = NULL;
}
