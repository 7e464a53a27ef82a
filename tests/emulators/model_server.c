/* model_server: a scripted model server for tests. It speaks three wire
 * protocols from one scenario file, one step per request, whichever
 * endpoint the request hits:
 *   POST .../chat/completions  OpenAI-compatible chat completions
 *   POST .../messages          the Anthropic Messages API (?beta=true too)
 *   POST .../responses         the OpenAI Responses API
 * (any prefix: /v1/messages and /messages alike), and GET .../models,
 * and the vendors' Files APIs (tests/emulators/model/files.c): POST
 * .../files (multipart/form-data), GET .../files, GET and DELETE
 * .../files/ID, in Anthropic's shape when an anthropic-version header came
 * (the files-api-2025-04-14 beta required) and OpenAI's otherwise (a
 * "purpose" required). Files take no step; an image in a request may refer
 * to one (Messages {"type":"file","file_id"} source, Responses input_image
 * or computer_screenshot file_id): its stored bytes are checked and
 * estimated as an inline image's would be, and an unknown or deleted id is
 * refused as the vendor does (Messages 404 not_found_error, Responses 400
 * invalid_request_error). A scenario's "files_api": false makes the
 * endpoint one without the API (404 on .../files).
 *
 *   {"comment": "...",
 *    "steps": [
 *      {"expect": {"tools_include": ["computer_observe"]},
 *       "reply": {"content": "text", "tool_calls": [{"name": "computer_observe", "arguments": {}}]}},
 *      {"fault": "status", "status": 429, "retry_after": 1},
 *      {"fault": "status", "status": 400, "type": "invalid_request_error",
 *       "param": "input[3].content", "code": "..", "message": ".."} (param and code: OpenAI's
 *       protocols only, as the vendors send them),
 *      {"fault": "garbage"}, {"fault": "hang", "ms": 3000}, {"fault": "close"},
 *      {"fault": "raw", "body": "{...}"} (that text as a 200 JSON reply),
 *      {"fault": "cut", "reply": {...}} (half the answer, then the connection drops),
 *      {"fault": "stream_error", "reply": {...}, "after": "start"|"text", "error_type": "..."}
 *        (a stream's first events, up to the start (default) or through the
 *        first text delta, then the vendor's error event: Messages "event:
 *        error" {"type":"error","error":{"type": error_type (default
 *        overloaded_error), "message"}}, Responses "error" {code, message,
 *        param, sequence_number}, chat a chunk {"error": {...}}; a request
 *        without "stream" gets HTTP 529 (Messages) or 500 instead),
 *      {"reply": {"content": "done"}}],
 *    "files_api": true}
 *
 * A streamed answer can be slowed: "event_delay_ms": N waits N ms before
 * each event after the first, "stall_ms": N sends the first event and then
 * nothing for N ms (a model that stalls; the wait ends early when the client
 * hangs up, and the stream then ends there).
 *
 * (a bare list of steps is taken too). A step {"repeat": N, ...} is N
 * copies of itself, so a 200-step run needs no 200-step file. Two more
 * top-level keys:
 *   "context_window": N   a request of more than N input tokens (counted
 *                         as its usage counts them) is refused with the
 *                         vendor's own 400: Messages "prompt is too long:
 *                         N tokens > M maximum", Responses and chat
 *                         code context_length_exceeded (--context-window
 *                         N sets it too); each request's input_tokens
 *                         are in the report
 *   "summary": {"match": "text", "reply": {...}, "expect": {...}}
 *                         a request whose system prompt (Messages system,
 *                         Responses instructions, chat system messages)
 *                         holds match is a summary request: answered
 *                         with this reply and these expectations, taking
 *                         no step; the report counts them ("summaries")
 * A reply is protocol-neutral:
 *   content: "text"                      the assistant's text
 *   tool_calls: [{"name", "arguments", "id"?}]  arguments an object, or a
 *                                        string sent as written (malformed on purpose)
 *   reasoning: "text"                    a thinking block (Messages, when the request
 *                                        turns thinking on) or a reasoning item (Responses)
 *   finish_reason: "length"              cut short (max_tokens; Responses: incomplete);
 *                                        chat sends any finish_reason as given
 *   stop_reason: "..."                   Messages: sent as given
 *   refusal: "text"                      the model declines: Messages stop_reason "refusal"
 *                                        and stop_details {type: "refusal", category:
 *                                        refusal_category or null, explanation: text},
 *                                        Responses a refusal content part, chat message.refusal
 *   finish_reason: "content_filter"      Responses: incomplete, reason content_filter
 * and each protocol renders it in its own shape with vendor-shaped ids
 * (toolu_..., call_..., fc_..., cu_...) and usage: input tokens estimated
 * piece by piece (each block's JSON at 4 bytes a token, each image at
 * w*h/750), split as the vendors' prompt caches would split them
 * (tests/emulators/model/cache.c: Messages by its cache_control
 * breakpoints, Responses and chat automatically, in 128-token steps from
 * 1024, partitioned by prompt_cache_key). A call named "computer"
 * becomes the native computer call when the request declared a native
 * computer tool: Messages: a tool_use of "computer" whose input is the
 * arguments; Responses: a computer_call with actions = arguments.actions
 * ({"type":"computer"}) or action = arguments.action (computer_use_preview),
 * and arguments.pending_safety_checks as its pending_safety_checks. Any
 * other call is a function call. A string argument "$last_session" is the
 * "session" of the last tool result (a shell call still running), so a
 * step can go on with write_stdin. A request with "stream": true gets the
 * vendor's server-sent events, in its order (Messages: message_start,
 * content_block_start/delta/stop, message_delta, message_stop; Responses:
 * response.created, response.in_progress, response.output_item.added, ...
 * response.completed; chat: chat.completion.chunk and [DONE]).
 *
 * "expect" asserts on the request the step receives:
 *   protocol: "chat"|"messages"|"responses"  the endpoint it hit
 *   stream: true|false                   it asked for a stream
 *   model: "name"
 *   messages_min: N                      messages (Responses: input items)
 *   messages_contain: "text"             some message's text (or the system prompt) holds it
 *   last_tool_result_contains: "text"    the last tool result holds it
 *   tool_result_has_image: true|false    the last tool result came with an image
 *   image_count_min: N, image_count_max: N
 *   no_image_for_duplicate_frame: true   no two images in the request are the same bytes
 *   image_media_type: "image/png"        the last image's type
 *   image_size: [w, h]                   the last image's decoded size
 *   image_max_long_edge: N               no image is longer than N pixels on a side
 *   image_matches_display: true          the last image is the size the native tool declares
 *   tools_include: ["name", ...]         the request offers these tools ("computer" for a native one)
 *   native_tool_type: "computer_20251124"|"computer"|"computer_use_preview"|null
 *                                        the native computer tool declared (null: none)
 *   display_width: N, display_height: N  the size that native tool declares
 *   has_authorization: true|false        an "Authorization: Bearer" header came
 *   x_api_key: true|false                an "x-api-key" header came
 *   anthropic_version: "2023-06-01"      the anthropic-version header
 *   anthropic_beta_includes: "beta"|["beta", ...]  the anthropic-beta header lists them
 *   acknowledged_safety_checks: ["id"]   the last computer_call_output acknowledges exactly these
 *   store: true|false                    Responses: "store" (absent means on); without this
 *                                        key every Responses request must turn store off
 *   previous_response_id: true|false     Responses: the request continues a served response
 *   cache_breakpoints_min: N             Messages: the request carries at least N cache_control
 *                                        breakpoints (a top-level cache_control counts as one)
 *   prompt_cache_key: true|false|"key"   Responses, chat: the request's prompt_cache_key
 * and every request is checked for what the vendor would refuse:
 *   all: JSON with a model and messages (input); images are base64 PNG or
 *     JPEG whose bytes decode as the type they claim;
 *   chat: tool_call_ids that answer the assistant's calls;
 *   Messages: x-api-key or Authorization: Bearer, anthropic-version,
 *     max_tokens, well-formed tools, the anthropic-beta a native tool
 *     needs (computer_20250124: computer-use-2025-01-24, computer_20251124:
 *     computer-use-2025-11-24), every tool_result answering a tool_use of
 *     the assistant message right before it and every tool_use answered,
 *     one turn's results in one user message ahead of its other content,
 *     and with thinking on, thinking blocks replayed with their tool calls;
 *   Responses: Authorization: Bearer, store off (see above), well-formed
 *     tools, function_call_output and computer_call_output answering calls
 *     of the input or of the previous_response_id chain and every call
 *     answered, a previous_response_id that names a response served here
 *     with store on, computer_call_output.output a computer_screenshot
 *     data URL acknowledging only checks its call had, and reasoning items
 *     replayed before their calls (with store off, with their
 *     encrypted_content).
 * A failed check makes that step's answer an HTTP 500 whose JSON error
 * names the step and the check, and is recorded. What the vendor refuses
 * with a 400 of its own is answered with that 400 invalid_request_error
 * and recorded as a failed check too: cache_control (Messages: more than
 * 4 breakpoints, a type other than ephemeral, a ttl other than 5m or 1h,
 * one on a thinking or an empty text block, a 1h one after a 5m one) and
 * prompt_cache_key (Responses, chat: not a string).
 *
 *   model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running]
 *                [--context-window N]
 *
 * --dump appends each request body as it came, one per line, so a test can
 * look at everything the model was sent (tests/security/redaction.bats).
 *
 * Binds 127.0.0.1 only (port 0: an ephemeral one), prints "listening on
 * http://127.0.0.1:PORT" on stdout, and after the last step (or on SIGTERM
 * or SIGINT) writes the report (JSON: each request's summary and every
 * assertion; a request's summary has its protocol, stream, roles, tools,
 * images and last_image, native_tool and display, and per protocol
 * anthropic_version, anthropic_beta, beta_query and cache_breakpoints, or
 * prompt_cache_key, store, previous_response_id and the response_id
 * served; and the usage answered; and received_ms, the wall clock in ms
 * when the request came) and exits 0 when every
 * step was served and every assertion held, 1 otherwise, 2 for a bad
 * scenario or usage. --keep-running serves until a signal; requests past
 * the last step are then failures. After the last step the server waits
 * for the uploaded files still live to be deleted (a client deletes them
 * at its end), up to 10 s; the report's "files" says how many were
 * uploaded (and their bytes), deleted, left live, uploaded twice with the
 * same bytes, and referred to, and each request's summary its
 * file_images (images by file id), inline_images (and their base64
 * characters, inline_image_chars) and files_live (the uploaded files not
 * deleted when it came). */

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "tests/emulators/model/model.h"

#define BODY_MAX (64u << 20)
#define FILES_GRACE_MS 10000 /* after the last step: for the client to delete its files */

static const char *expect_keys[] = {"last_tool_result_contains",
				    "tool_result_has_image",
				    "no_image_for_duplicate_frame",
				    "messages_min",
				    "image_count_min",
				    "image_count_max",
				    "tools_include",
				    "has_authorization",
				    "model",
				    "messages_contain",
				    "protocol",
				    "stream",
				    "image_media_type",
				    "image_size",
				    "image_max_long_edge",
				    "image_matches_display",
				    "native_tool_type",
				    "display_width",
				    "display_height",
				    "x_api_key",
				    "anthropic_version",
				    "anthropic_beta_includes",
				    "acknowledged_safety_checks",
				    "store",
				    "previous_response_id",
				    "cache_breakpoints_min",
				    "prompt_cache_key",
				    NULL};

static struct {
	pthread_mutex_t mu;
	cJSON *scenario;
	cJSON *steps; /* borrowed from scenario */
	int nsteps;
	int next_step; /* the step the next request gets */
	int finished;  /* requests whose answer is done (sent or dropped) */
	int failures;
	int keep_running;
	int64_t done_at; /* when the last step's answer was done; 0: not yet */
	volatile int done; /* the server is stopping: a stalled stream stops waiting */
	int files_off;	 /* the scenario's "files_api": false */
	cJSON *requests; /* the report's list */
	cJSON *failure_list;
	const char *path;
	FILE *dump;
	long context_window;  /* input tokens a request may hold; 0: no limit */
	const cJSON *summary; /* the scenario's "summary" (borrowed), NULL: none */
	int summaries;	      /* summary requests answered */
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct request {
	struct rk_buf body;
	int too_large;
	int counted;	     /* took a step (or was past the end) */
	int64_t received_ms; /* wall clock when its first bytes came (the report's received_ms) */
};

/* ---- scenario ---- */

static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "model_server: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void check_step(const cJSON *step, int n)
{
	if (!cJSON_IsObject(step))
		die_usage("step %d must be an object", n);
	const cJSON *expect = cJSON_GetObjectItemCaseSensitive(step, "expect");
	if (expect) {
		if (!cJSON_IsObject(expect))
			die_usage("step %d: expect must be an object", n);
		const cJSON *e;
		cJSON_ArrayForEach(e, expect)
		{
			int known = 0;
			for (int i = 0; expect_keys[i]; i++)
				known |= strcmp(e->string, expect_keys[i]) == 0;
			if (!known)
				die_usage("step %d: unknown expectation \"%s\"", n, e->string);
		}
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(expect, "image_size");
		if (size && (cJSON_GetArraySize(size) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(size, 0)) ||
			     !cJSON_IsNumber(cJSON_GetArrayItem(size, 1))))
			die_usage("step %d: image_size is [width, height]", n);
	}
	const char *fault = rk_json_string(step, "fault", NULL);
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(step, "reply");
	if (fault) {
		if (strcmp(fault, "status") && strcmp(fault, "garbage") && strcmp(fault, "hang") &&
		    strcmp(fault, "close") && strcmp(fault, "raw") && strcmp(fault, "cut") && strcmp(fault, "stream_error"))
			die_usage("step %d: fault must be status, garbage, raw, hang, cut, stream_error or close", n);
		if (strcmp(fault, "stream_error") == 0 && !cJSON_IsObject(reply))
			die_usage("step %d: a stream_error fault needs the \"reply\" it starts", n);
		const char *after = rk_json_string(step, "after", "start");
		if (strcmp(after, "start") && strcmp(after, "text"))
			die_usage("step %d: after must be start or text", n);
		if (strcmp(fault, "status") == 0 && !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(step, "status")))
			die_usage("step %d: a status fault needs \"status\"", n);
		if (strcmp(fault, "cut") == 0 && !cJSON_IsObject(reply))
			die_usage("step %d: a cut fault needs the \"reply\" it cuts", n);
	} else if (!cJSON_IsObject(reply)) {
		die_usage("step %d needs a \"reply\" object or a \"fault\"", n);
	}
	const char *waits[] = {"event_delay_ms", "stall_ms", NULL};
	for (int i = 0; waits[i]; i++) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(step, waits[i]);
		if (w && (!cJSON_IsNumber(w) || w->valuedouble < 0 || w->valuedouble > 600000))
			die_usage("step %d: %s must be a number of ms from 0 to 600000", n, waits[i]);
	}
	if (reply) {
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(reply, "tool_calls");
		const cJSON *c;
		if (calls && !cJSON_IsArray(calls))
			die_usage("step %d: reply.tool_calls must be a list", n);
		cJSON_ArrayForEach(c, calls)
		{
			if (!rk_json_string(c, "name", NULL))
				die_usage("step %d: every tool call needs a name", n);
		}
	}
}

/* A step {"repeat": N, ...} stands for N copies of itself (without
 * "repeat"), so a long run needs no long file. */
static void expand_repeats(cJSON *steps)
{
	cJSON *out = cJSON_CreateArray(), *st;
	int i = 0;
	while ((st = cJSON_DetachItemFromArray(steps, 0)) != NULL) {
		i++;
		const cJSON *rep = cJSON_GetObjectItemCaseSensitive(st, "repeat");
		int n = 1;
		if (rep) {
			if (!cJSON_IsNumber(rep) || rep->valuedouble < 1 || rep->valuedouble > 100000)
				die_usage("step %d: repeat is a count from 1 to 100000", i);
			n = (int)rep->valuedouble;
			cJSON_DeleteItemFromObjectCaseSensitive(st, "repeat");
		}
		for (int k = 1; k < n; k++)
			cJSON_AddItemToArray(out, cJSON_Duplicate(st, 1));
		cJSON_AddItemToArray(out, st);
	}
	while ((st = cJSON_DetachItemFromArray(out, 0)) != NULL)
		cJSON_AddItemToArray(steps, st);
	cJSON_Delete(out);
}

static void load_scenario(const char *path)
{
	struct rk_buf b = RK_BUF_INIT;
	struct rk_error e;
	rk_buf_init(&b);
	if (rk_fs_read_all(path, 16u << 20, &b, &e) < 0)
		die_usage("%s", e.message);
	srv.scenario = rk_json_parse(b.data, b.len, "the scenario", &e);
	rk_buf_release(&b);
	if (!srv.scenario)
		die_usage("%s: %s", path, e.message);
	srv.steps = cJSON_IsArray(srv.scenario) ? srv.scenario
						: cJSON_GetObjectItemCaseSensitive(srv.scenario, "steps");
	if (!cJSON_IsArray(srv.steps) || cJSON_GetArraySize(srv.steps) == 0)
		die_usage("%s: the scenario needs a non-empty \"steps\" list", path);
	expand_repeats(srv.steps);
	srv.nsteps = cJSON_GetArraySize(srv.steps);
	const cJSON *fa = cJSON_IsObject(srv.scenario) ? cJSON_GetObjectItemCaseSensitive(srv.scenario, "files_api")
						       : NULL;
	if (fa && !cJSON_IsBool(fa))
		die_usage("%s: \"files_api\" must be true or false", path);
	srv.files_off = cJSON_IsFalse(fa);
	const cJSON *cw = cJSON_GetObjectItemCaseSensitive(srv.scenario, "context_window");
	if (cw && (!cJSON_IsNumber(cw) || cw->valuedouble < 1))
		die_usage("%s: context_window is a number of tokens", path);
	if (cw && !srv.context_window)
		srv.context_window = (long)cw->valuedouble;
	srv.summary = cJSON_IsObject(srv.scenario) ? cJSON_GetObjectItemCaseSensitive(srv.scenario, "summary") : NULL;
	if (srv.summary) {
		if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(srv.summary, "match")))
			die_usage("%s: summary needs \"match\", the text its requests' system prompt holds", path);
		check_step(srv.summary, 0);
		if (rk_json_string(srv.summary, "fault", NULL))
			die_usage("%s: summary takes a reply, not a fault", path);
	}
	for (int i = 0; i < srv.nsteps; i++)
		check_step(cJSON_GetArrayItem(srv.steps, i), i + 1);
}

/* ---- assertions ---- */

static int has_name(const cJSON *arr, const char *name)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
	{
		if (cJSON_IsString(x) && strcmp(x->valuestring, name) == 0)
			return 1;
	}
	return 0;
}

/* The same ids, in any order. */
static int same_ids(const cJSON *want, const cJSON *got)
{
	const cJSON *x;
	if (cJSON_GetArraySize(want) != cJSON_GetArraySize(got))
		return 0;
	cJSON_ArrayForEach(x, want)
	{
		if (!cJSON_IsString(x) || !has_name(got, x->valuestring))
			return 0;
	}
	return 1;
}

static void assert_breakpoints(const cJSON *e, const struct summary *s, struct verdict *v)
{
	const char *k = "cache_breakpoints_min";
	if (s->proto != PROTO_MESSAGES) {
		record(v, k, 0, "cache_control breakpoints are a Messages API idea; this request came on %s",
		       protocol_name(s->proto));
		return;
	}
	int n = prompt_breakpoints(s->prompt);
	record(v, k, n >= e->valueint, "%d cache_control breakpoints, wanted at least %d", n, e->valueint);
}

/* true: some prompt_cache_key came, false: none, "key": that one. */
static void assert_cache_key(const cJSON *e, const struct summary *s, struct verdict *v)
{
	const char *k = "prompt_cache_key", *got = s->cache_key;
	if (s->proto == PROTO_MESSAGES) {
		record(v, k, 0, "prompt_cache_key is an OpenAI setting; this request came on messages");
		return;
	}
	int ok = cJSON_IsString(e) ? got && strcmp(got, e->valuestring) == 0 : cJSON_IsTrue(e) == (got != NULL);
	record(v, k, ok, "prompt_cache_key is %s%.100s%s", got ? "\"" : "", got ? got : "absent", got ? "\"" : "");
}

static void assert_expect(const cJSON *expect, const struct summary *s, const struct http_in *h, struct verdict *v)
{
	const cJSON *e;
	const struct image *img = &s->last_image;
	cJSON_ArrayForEach(e, expect)
	{
		const char *k = e->string;
		const char *want = cJSON_IsString(e) ? e->valuestring : "";
		if (strcmp(k, "last_tool_result_contains") == 0) {
			int ok = s->last_tool_text && strstr(s->last_tool_text, want);
			record(v, k, ok, "wanted \"%.100s\" in the last tool result, which is \"%.200s\"", want,
			       s->last_tool < 0 ? "(no tool result)" : s->last_tool_text);
		} else if (strcmp(k, "tool_result_has_image") == 0) {
			int got = s->images_after_last_tool > 0;
			record(v, k, s->last_tool >= 0 && cJSON_IsTrue(e) == got, "%s",
			       s->last_tool < 0 ? "the request has no tool result"
			       : got		? "the last tool result came with an image"
						: "the last tool result came without an image");
		} else if (strcmp(k, "no_image_for_duplicate_frame") == 0) {
			int ok = !cJSON_IsTrue(e) || s->duplicate_images == 0;
			record(v, k, ok, "%d images repeat the bytes of an earlier one", s->duplicate_images);
		} else if (strcmp(k, "messages_min") == 0) {
			record(v, k, s->messages >= e->valueint, "%d messages, wanted at least %d", s->messages,
			       e->valueint);
		} else if (strcmp(k, "image_count_min") == 0) {
			record(v, k, s->images >= e->valueint, "%d images, wanted at least %d", s->images, e->valueint);
		} else if (strcmp(k, "image_count_max") == 0) {
			record(v, k, s->images <= e->valueint, "%d images, wanted at most %d", s->images, e->valueint);
		} else if (strcmp(k, "tools_include") == 0) {
			const cJSON *name;
			const char *missing = NULL;
			cJSON_ArrayForEach(name, e)
			{
				if (cJSON_IsString(name) && !has_name(s->tools, name->valuestring) && !missing)
					missing = name->valuestring;
			}
			record(v, k, missing == NULL, "%s%s", missing ? "missing tool " : "all offered",
			       missing ? missing : "");
		} else if (strcmp(k, "has_authorization") == 0) {
			int has_auth = has_bearer(h);
			record(v, k, cJSON_IsTrue(e) == has_auth, "%s",
			       has_auth ? "a bearer Authorization header came" : "no bearer Authorization header came");
		} else if (strcmp(k, "messages_contain") == 0) {
			int ok = s->all_text.data && strstr(s->all_text.data, want);
			record(v, k, ok, "wanted \"%.100s\" in some message", want);
		} else if (strcmp(k, "model") == 0) {
			record(v, k, strcmp(want, s->model) == 0, "model \"%.100s\", wanted \"%.100s\"", s->model,
			       want);
		} else if (strcmp(k, "protocol") == 0) {
			record(v, k, strcmp(want, protocol_name(s->proto)) == 0, "the request came on %s, wanted %.40s",
			       protocol_name(s->proto), want);
		} else if (strcmp(k, "stream") == 0) {
			record(v, k, cJSON_IsTrue(e) == s->stream, "the request %s a stream",
			       s->stream ? "asked for" : "did not ask for");
		} else if (strcmp(k, "image_media_type") == 0) {
			record(v, k, s->images > 0 && strcmp(img->mime, want) == 0,
			       "the last image is %.40s, wanted %.40s", s->images ? img->mime : "(no image)", want);
		} else if (strcmp(k, "image_size") == 0) {
			int w = cJSON_GetArrayItem(e, 0)->valueint, hh = cJSON_GetArrayItem(e, 1)->valueint;
			record(v, k, s->images > 0 && img->ok && img->w == w && img->h == hh,
			       "the last image is %dx%d, wanted %dx%d", s->images ? img->w : 0, s->images ? img->h : 0,
			       w, hh);
		} else if (strcmp(k, "image_max_long_edge") == 0) {
			record(v, k, s->max_long_edge <= e->valueint, "the longest image edge is %d, wanted at most %d",
			       s->max_long_edge, e->valueint);
		} else if (strcmp(k, "image_matches_display") == 0) {
			int same = s->images > 0 && img->ok && s->display_w && img->w == s->display_w &&
				   img->h == s->display_h;
			record(v, k, cJSON_IsTrue(e) == same, "the last image is %dx%d, the native tool declares %dx%d",
			       s->images ? img->w : 0, s->images ? img->h : 0, s->display_w, s->display_h);
		} else if (strcmp(k, "native_tool_type") == 0) {
			int ok = cJSON_IsNull(e) ? s->native_type == NULL
						 : s->native_type && !strcmp(s->native_type, want);
			record(v, k, ok, "the native computer tool is %.40s, wanted %.40s",
			       s->native_type ? s->native_type : "(none)", cJSON_IsNull(e) ? "none" : want);
		} else if (strcmp(k, "display_width") == 0 || strcmp(k, "display_height") == 0) {
			int got = k[8] == 'w' ? s->display_w : s->display_h;
			record(v, k, s->native_type && got == e->valueint, "the native tool declares %d, wanted %d",
			       got, e->valueint);
		} else if (strcmp(k, "x_api_key") == 0) {
			int got = h->x_api_key && h->x_api_key[0];
			record(v, k, cJSON_IsTrue(e) == got, "%s",
			       got ? "an x-api-key header came" : "no x-api-key header came");
		} else if (strcmp(k, "anthropic_version") == 0) {
			const char *got = h->anthropic_version ? h->anthropic_version : "(none)";
			record(v, k, strcmp(got, want) == 0, "anthropic-version is %.60s, wanted %.60s", got, want);
		} else if (strcmp(k, "anthropic_beta_includes") == 0) {
			const char *missing = NULL;
			const cJSON *b, *list = cJSON_IsArray(e) ? e : NULL;
			if (cJSON_IsString(e) && !messages_beta_has(h->anthropic_beta, want))
				missing = want;
			cJSON_ArrayForEach(b, list)
			{
				if (!missing && cJSON_IsString(b) &&
				    !messages_beta_has(h->anthropic_beta, b->valuestring))
					missing = b->valuestring;
			}
			record(v, k, !missing, "anthropic-beta is \"%.200s\"%s%.60s",
			       h->anthropic_beta ? h->anthropic_beta : "(none)", missing ? ", missing " : "",
			       missing ? missing : "");
		} else if (strcmp(k, "acknowledged_safety_checks") == 0) {
			char *got = s->acknowledged ? cJSON_PrintUnformatted(s->acknowledged) : NULL;
			record(v, k, s->acknowledged && same_ids(e, s->acknowledged),
			       "the last computer_call_output acknowledges %.200s",
			       got ? got : "nothing (there is none)");
			free(got);
		} else if (strcmp(k, "store") == 0) {
			if (s->proto != PROTO_RESPONSES) /* responses_check holds it to this */
				record(v, k, 0, "store is a Responses API setting; this request came on %s",
				       protocol_name(s->proto));
		} else if (strcmp(k, "previous_response_id") == 0) {
			record(v, k, cJSON_IsTrue(e) == s->previous_response, "the request %s previous_response_id",
			       s->previous_response ? "has a" : "has no");
		} else if (strcmp(k, "cache_breakpoints_min") == 0) {
			assert_breakpoints(e, s, v);
		} else if (strcmp(k, "prompt_cache_key") == 0) {
			assert_cache_key(e, s, v);
		}
	}
}

/* ---- answers ---- */

/* What the vendors add to every answer: a request id. */
static void vendor_headers(struct MHD_Response *r, enum protocol proto)
{
	if (proto == PROTO_CHAT)
		return;
	char *id = vendor_id("req_", 24, 0);
	MHD_add_response_header(r, proto == PROTO_MESSAGES ? "request-id" : "x-request-id", id);
	free(id);
}

static enum MHD_Result send_json(struct MHD_Connection *conn, enum protocol proto, unsigned status, const cJSON *doc,
				 int retry_after)
{
	char *text = cJSON_PrintUnformatted(doc);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	vendor_headers(r, proto);
	if (retry_after >= 0) {
		char v[32];
		snprintf(v, sizeof(v), "%d", retry_after);
		MHD_add_response_header(r, "Retry-After", v);
	}
	enum MHD_Result res = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return res;
}

/* {"error": {"message", "type"}}; the Messages API adds "type": "error". */
static enum MHD_Result send_error(struct MHD_Connection *conn, enum protocol proto, unsigned status, const char *type,
				  const char *msg, int retry_after)
{
	cJSON *doc = cJSON_CreateObject();
	if (proto == PROTO_MESSAGES)
		cJSON_AddStringToObject(doc, "type", "error");
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", type);
	enum MHD_Result res = send_json(conn, proto, status, doc, retry_after);
	cJSON_Delete(doc);
	return res;
}

/* A scripted status fault: {"error": {"message", "type"}} with the step's
 * "type" (default scripted_fault) and, as OpenAI sends them, its "param"
 * and "code" (Messages: none; its message names the field). */
static enum MHD_Result send_fault(struct MHD_Connection *conn, enum protocol proto, unsigned status,
				  const cJSON *st, const char *msg, int retry_after)
{
	cJSON *doc = cJSON_CreateObject();
	if (proto == PROTO_MESSAGES)
		cJSON_AddStringToObject(doc, "type", "error");
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", rk_json_string(st, "type", "scripted_fault"));
	if (proto != PROTO_MESSAGES) {
		rk_json_add_str_or_null(e, "param", rk_json_string(st, "param", NULL));
		rk_json_add_str_or_null(e, "code", rk_json_string(st, "code", NULL));
	}
	enum MHD_Result res = send_json(conn, proto, status, doc, retry_after);
	cJSON_Delete(doc);
	return res;
}

/* What the vendor answers a request it refuses: a 400 invalid_request_error
 * (OpenAI's names the param and a code). */
static enum MHD_Result send_refusal(struct MHD_Connection *conn, enum protocol proto, const struct verdict *v)
{
	cJSON *doc = cJSON_CreateObject();
	if (proto == PROTO_MESSAGES)
		cJSON_AddStringToObject(doc, "type", "error");
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "message", v->refusal);
	cJSON_AddStringToObject(e, "type", v->refusal_type ? v->refusal_type : "invalid_request_error");
	if (proto != PROTO_MESSAGES) {
		rk_json_add_str_or_null(e, "param", v->refusal_param);
		rk_json_add_str_or_null(e, "code", v->refusal_code);
	} else if (v->refusal_error_code) {
		cJSON *d = cJSON_AddObjectToObject(e, "details");
		cJSON_AddStringToObject(d, "error_code", v->refusal_error_code);
	}
	enum MHD_Result res = send_json(conn, proto, v->refusal_status ? v->refusal_status : 400, doc, -1);
	cJSON_Delete(doc);
	return res;
}

/* A body handed out in small pieces (so a client meets events split
 * across reads), ending early with a dropped connection when cut. A stream
 * can wait between its events (ends: where each event ends). */
struct body_out {
	char *data;
	size_t limit;
	int cut;
	size_t *ends; /* event ends, NULL: no waits */
	size_t nends, next;
	size_t waited; /* events waited before so far */
	int64_t delay_ms, stall_ms;
	int fd; /* the client's socket, -1: unknown */
};

/* Waits ms, or less when the client hangs up or the server stops: -1 then. */
static int wait_for_client(int fd, int64_t ms)
{
	int64_t until = rk_monotonic_ms() + ms;
	for (int64_t left; (left = until - rk_monotonic_ms()) > 0;) {
		if (srv.done)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
		int n = fd >= 0 ? poll(&p, 1, left < 50 ? (int)left : 50) : 0;
		if (fd < 0)
			rk_sleep_ms(left < 50 ? left : 50);
		if (n > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
			return -1;
		if (n > 0) {
			char c;
			if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
				return -1;
			rk_sleep_ms(left < 50 ? left : 50); /* bytes we do not read: do not spin on them */
		}
	}
	return 0;
}

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct body_out *b = cls;
	if (pos >= b->limit)
		return b->cut ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = b->limit - (size_t)pos;
	if (b->ends) {
		while (b->next < b->nends && b->ends[b->next] <= pos)
			b->next++;
		/* at the start of event next (> 0), not waited for yet */
		if (b->next > 0 && b->waited < b->next && pos == b->ends[b->next - 1]) {
			b->waited = b->next;
			int64_t ms = b->next == 1 && b->stall_ms ? b->stall_ms : b->delay_ms;
			if (ms > 0 && wait_for_client(b->fd, ms) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (b->next < b->nends && b->ends[b->next] - pos < n)
			n = b->ends[b->next] - pos; /* an event goes out before the wait for the next */
	}
	if (n > max)
		n = max;
	if (n > 97)
		n = 97;
	memcpy(buf, b->data + pos, n);
	return (ssize_t)n;
}

static void body_free(void *cls)
{
	struct body_out *b = cls;
	free(b->data);
	free(b->ends);
	free(b);
}

/* Where each event of an SSE text ends (after its blank line). */
static size_t event_ends(const char *text, size_t len, size_t **out)
{
	size_t n = 0, cap = 16;
	*out = rk_xmalloc(cap * sizeof(**out));
	for (const char *p = text; (p = strstr(p, "\n\n")) != NULL && (size_t)(p - text) < len; p += 2) {
		if (n == cap)
			*out = rk_xrealloc(*out, (cap *= 2) * sizeof(**out));
		(*out)[n++] = (size_t)(p - text) + 2;
	}
	return n;
}

static enum MHD_Result send_pieces(struct MHD_Connection *conn, enum protocol proto, char *text, size_t len, int sse,
				   int cut, const cJSON *step)
{
	struct body_out *b = rk_xcalloc(1, sizeof(*b));
	b->data = text;
	b->limit = cut ? len / 2 : len;
	b->cut = cut;
	b->fd = -1;
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(step, "event_delay_ms");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(step, "stall_ms");
	b->delay_ms = cJSON_IsNumber(d) ? (int64_t)d->valuedouble : 0;
	b->stall_ms = cJSON_IsNumber(st) ? (int64_t)st->valuedouble : 0;
	if (sse && (b->delay_ms || b->stall_ms)) {
		b->nends = event_ends(text, len, &b->ends);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		b->fd = ci ? ci->connect_fd : -1;
	}
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, body_read, b, body_free);
	MHD_add_response_header(r, "Content-Type", sse ? "text/event-stream; charset=utf-8" : "application/json");
	if (sse)
		MHD_add_response_header(r, "Cache-Control", "no-cache");
	vendor_headers(r, proto);
	enum MHD_Result res = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return res;
}

/* A stream_error step: sse cut after its start (or its first text delta)
 * and the vendor's error event after. */
static void stream_error(struct rk_buf *sse, enum protocol proto, const cJSON *st)
{
	const char *after = rk_json_string(st, "after", "start");
	const char *type = rk_json_string(st, "error_type", proto == PROTO_MESSAGES ? "overloaded_error" : "server_error");
	size_t *ends = NULL;
	size_t n = event_ends(sse->data, sse->len, &ends), keep = 0, k = 0;
	if (!strcmp(after, "text")) {
		static const char *const marks[] = {"\"text_delta\"", "response.output_text.delta", "\"content\":\""};
		const char *mark = marks[proto == PROTO_MESSAGES ? 0 : proto == PROTO_RESPONSES ? 1 : 2];
		for (size_t start = 0; k < n; start = ends[k++]) {
			char *ev = rk_xstrndup(sse->data + start, ends[k] - start);
			const char *hit = strstr(ev, mark);
			/* chat's first chunk has content "": not text yet */
			int text = hit && !(proto == PROTO_CHAT && hit[strlen(mark)] == '"');
			free(ev);
			if (text) {
				k++;
				break;
			}
		}
	} else {
		/* Messages: message_start; Responses: created, in_progress; chat: the role chunk */
		k = proto == PROTO_RESPONSES ? 2 : 1;
	}
	keep = k && k <= n ? ends[k - 1] : 0;
	free(ends);
	sse->len = keep;
	sse->data[keep] = '\0';
	char *msg = rk_xasprintf("%s (scripted mid-stream error)",
				 !strcmp(type, "overloaded_error") ? "Overloaded" : "The server had an error");
	cJSON *doc = cJSON_CreateObject();
	if (proto == PROTO_MESSAGES) {
		cJSON_AddStringToObject(doc, "type", "error");
		cJSON *e = cJSON_AddObjectToObject(doc, "error");
		cJSON_AddStringToObject(e, "type", type);
		cJSON_AddStringToObject(e, "message", msg);
		sse_event(sse, "error", doc);
	} else if (proto == PROTO_RESPONSES) {
		cJSON_AddStringToObject(doc, "type", "error");
		cJSON_AddStringToObject(doc, "code", type);
		cJSON_AddStringToObject(doc, "message", msg);
		cJSON_AddNullToObject(doc, "param");
		cJSON_AddNumberToObject(doc, "sequence_number", (double)k);
		sse_event(sse, "error", doc);
	} else {
		cJSON *e = cJSON_AddObjectToObject(doc, "error");
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "type", type);
		cJSON_AddNullToObject(e, "param");
		cJSON_AddNullToObject(e, "code");
		sse_event(sse, NULL, doc);
	}
	cJSON_Delete(doc);
	free(msg);
}

static void note_failure(const char *msg)
{
	srv.failures++;
	cJSON_AddItemToArray(srv.failure_list, cJSON_CreateString(msg));
	fprintf(stderr, "model_server: %s\n", msg);
}

static void add_entry_summary(cJSON *entry, const struct summary *s, const struct http_in *h, size_t bytes)
{
	cJSON_AddNumberToObject(entry, "bytes", (double)bytes);
	cJSON_AddNumberToObject(entry, "messages", s->messages);
	cJSON_AddItemToObject(entry, "roles", cJSON_Duplicate(s->roles, 1));
	cJSON_AddNumberToObject(entry, "images", s->images);
	cJSON_AddNumberToObject(entry, "file_images", s->file_images);
	cJSON_AddNumberToObject(entry, "inline_images", s->images - s->file_images);
	cJSON_AddNumberToObject(entry, "files_live", files_live());
	cJSON_AddNumberToObject(entry, "inline_image_chars", (double)s->inline_chars);
	cJSON_AddNumberToObject(entry, "duplicate_images", s->duplicate_images);
	cJSON_AddItemToObject(entry, "tools", cJSON_Duplicate(s->tools, 1));
	cJSON_AddBoolToObject(entry, "authorization", has_bearer(h));
	rk_json_add_str_or_null(entry, "last_tool_result", s->last_tool_text);
	cJSON_AddBoolToObject(entry, "stream", s->stream);
	rk_json_add_str_or_null(entry, "native_tool", s->native_type);
	if (s->native_type && s->display_w) {
		cJSON *d = cJSON_AddArrayToObject(entry, "display");
		cJSON_AddItemToArray(d, cJSON_CreateNumber(s->display_w));
		cJSON_AddItemToArray(d, cJSON_CreateNumber(s->display_h));
	}
	if (s->images) {
		cJSON *li = cJSON_AddObjectToObject(entry, "last_image");
		cJSON_AddStringToObject(li, "media_type", s->last_image.mime);
		cJSON_AddNumberToObject(li, "width", s->last_image.w);
		cJSON_AddNumberToObject(li, "height", s->last_image.h);
	}
	if (s->proto == PROTO_MESSAGES) {
		rk_json_add_str_or_null(entry, "anthropic_version", h->anthropic_version);
		rk_json_add_str_or_null(entry, "anthropic_beta", h->anthropic_beta);
		cJSON_AddBoolToObject(entry, "beta_query", h->beta_query && strcmp(h->beta_query, "true") == 0);
		cJSON_AddNumberToObject(entry, "cache_breakpoints", prompt_breakpoints(s->prompt));
	} else {
		rk_json_add_str_or_null(entry, "prompt_cache_key", s->cache_key);
	}
	if (s->proto == PROTO_RESPONSES) {
		cJSON_AddBoolToObject(entry, "store", s->store);
		cJSON_AddBoolToObject(entry, "previous_response_id", s->previous_response);
	}
}

/* Whether v, printed, holds text (as JSON escapes it: the match is plain prose). */
static int json_holds(const cJSON *v, const char *text)
{
	char *printed = v ? cJSON_PrintUnformatted(v) : NULL;
	int found = printed && strstr(printed, text) != NULL;
	free(printed);
	return found;
}

/* Whether req's system prompt (Messages: system; Responses: instructions;
 * chat: its system messages) holds text. */
static int system_holds(const cJSON *req, enum protocol proto, const char *text)
{
	if (proto == PROTO_MESSAGES)
		return json_holds(cJSON_GetObjectItemCaseSensitive(req, "system"), text);
	if (proto == PROTO_RESPONSES)
		return json_holds(cJSON_GetObjectItemCaseSensitive(req, "instructions"), text);
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(req, "messages"))
	{
		if (!strcmp(rk_json_string(m, "role", ""), "system") &&
		    json_holds(cJSON_GetObjectItemCaseSensitive(m, "content"), text))
			return 1;
	}
	return 0;
}

/* The window: a request of more input tokens than it holds is refused with
 * the vendor's own 400 (counted as the usage would count them). */
static void check_window(const struct summary *s, struct verdict *v, cJSON *entry)
{
	long tokens = prompt_tokens(s->prompt);
	cJSON_AddNumberToObject(entry, "input_tokens", (double)tokens);
	if (tokens <= srv.context_window) {
		record(v, "context_window", 1, "%ld input tokens, the window holds %ld", tokens, srv.context_window);
		return;
	}
	char msg[300];
	if (s->proto == PROTO_MESSAGES) {
		snprintf(msg, sizeof(msg), "prompt is too long: %ld tokens > %ld maximum", tokens, srv.context_window);
		refuse(v, "context_window", NULL, NULL, msg);
	} else if (s->proto == PROTO_RESPONSES) {
		snprintf(msg, sizeof(msg),
			 "Your input exceeds the context window of this model. Please adjust your input and try "
			 "again.");
		refuse(v, "context_window", "input", "context_length_exceeded", msg);
	} else {
		snprintf(msg, sizeof(msg),
			 "This model's maximum context length is %ld tokens. However, your messages resulted in %ld "
			 "tokens. Please reduce the length of the messages.",
			 srv.context_window, tokens);
		refuse(v, "context_window", "messages", "context_length_exceeded", msg);
	}
}

/* Answers one model request on protocol proto. */
static enum MHD_Result serve(struct MHD_Connection *conn, struct request *rq, enum protocol proto, int compact)
{
	pthread_mutex_lock(&srv.mu);
	if (srv.dump) {
		fwrite(rq->body.data, 1, rq->body.len, srv.dump);
		fputc('\n', srv.dump);
		fflush(srv.dump);
	}
	struct rk_error e;
	cJSON *req = rq->too_large ? NULL : rk_json_parse(rq->body.data, rq->body.len, "the request body", &e);
	/* a summary request is answered by the scenario's "summary", and takes no step */
	int summary = srv.summary && req &&
		      (compact || (proto == PROTO_MESSAGES && cJSON_GetObjectItemCaseSensitive(req, "compaction")) ||
		       system_holds(req, proto, rk_json_string(srv.summary, "match", "")));
	int step = summary ? -1 : srv.next_step++;
	rq->counted = !summary;
	cJSON *entry = cJSON_CreateObject();
	cJSON_AddNumberToObject(entry, "step", step + 1);
	cJSON_AddStringToObject(entry, "protocol", protocol_name(proto));
	cJSON_AddNumberToObject(entry, "received_ms", (double)rq->received_ms);
	if (summary) {
		cJSON_AddBoolToObject(entry, "summary", 1);
		srv.summaries++;
	}
	cJSON_AddItemToArray(srv.requests, entry);
	if (step >= srv.nsteps) {
		char msg[200];
		snprintf(msg, sizeof(msg), "request %d: the scenario has only %d steps", step + 1, srv.nsteps);
		note_failure(msg);
		cJSON_AddStringToObject(entry, "action", "past_the_end");
		cJSON_AddNumberToObject(entry, "status", 500);
		pthread_mutex_unlock(&srv.mu);
		cJSON_Delete(req);
		return send_error(conn, proto, 500, "scenario_exhausted", msg, -1);
	}
	const cJSON *st = summary ? srv.summary : cJSON_GetArrayItem(srv.steps, step);
	const cJSON *expect = cJSON_GetObjectItemCaseSensitive(st, "expect");
	struct http_in h = {
		.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
		.x_api_key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key"),
		.anthropic_version = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-version"),
		.anthropic_beta = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-beta"),
		.beta_query = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "beta"),
	};

	struct summary s;
	summary_init(&s, proto);
	s.compact = compact;
	if (!req)
		snprintf(s.invalid_why, sizeof(s.invalid_why), "%s",
			 rq->too_large ? "the request body is too large" : e.message);
	struct verdict v = {.list = cJSON_CreateArray()};
	if (proto == PROTO_MESSAGES)
		messages_check(req, &h, expect, &s, &v);
	else if (proto == PROTO_RESPONSES)
		responses_check(req, &h, expect, &s, &v);
	else
		chat_check(req, &h, expect, &s, &v);
	if (s.valid)
		assert_expect(expect, &s, &h, &v);
	if (s.valid && srv.context_window > 0)
		check_window(&s, &v, entry);
	add_entry_summary(entry, &s, &h, rq->body.len);
	cJSON *last_result = s.last_tool_text ? cJSON_Parse(s.last_tool_text) : NULL;
	char last_session[128]; /* a session id is short */
	snprintf(last_session, sizeof(last_session), "%s", rk_json_string(last_result, "session", ""));
	cJSON_Delete(last_result);
	cJSON_AddItemToObject(entry, "assertions", v.list);

	enum MHD_Result res;
	if (v.refused_by) {
		char msg[800];
		snprintf(msg, sizeof(msg), "step %d: assertion failed: %s: %s", step + 1, v.refused_by, v.refusal);
		note_failure(msg);
		cJSON_AddStringToObject(entry, "action", "refused");
		cJSON_AddNumberToObject(entry, "status", v.refusal_status ? v.refusal_status : 400);
		pthread_mutex_unlock(&srv.mu);
		res = send_refusal(conn, proto, &v);
		goto out;
	}
	if (v.first_failed[0]) {
		char msg[800];
		snprintf(msg, sizeof(msg), "step %d: assertion failed: %s", step + 1, v.first_failed);
		note_failure(msg);
		cJSON_AddStringToObject(entry, "action", "assertion_failed");
		cJSON_AddNumberToObject(entry, "status", 500);
		pthread_mutex_unlock(&srv.mu);
		res = send_error(conn, proto, 500, "scenario_assertion", msg, -1);
		goto out;
	}

	const char *fault = rk_json_string(st, "fault", NULL);
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(st, "reply");
	cJSON_AddStringToObject(entry, "action", fault ? fault : "reply");
	if (fault && strcmp(fault, "status") == 0) {
		int status = cJSON_GetObjectItemCaseSensitive(st, "status")->valueint;
		const cJSON *ra = cJSON_GetObjectItemCaseSensitive(st, "retry_after");
		cJSON_AddNumberToObject(entry, "status", status);
		char msg[200];
		snprintf(msg, sizeof(msg), "%s", rk_json_string(st, "message", "scripted failure"));
		pthread_mutex_unlock(&srv.mu);
		res = send_fault(conn, proto, (unsigned)status, st, msg, cJSON_IsNumber(ra) ? ra->valueint : -1);
		goto out;
	}
	if (fault && strcmp(fault, "garbage") == 0) {
		cJSON_AddNumberToObject(entry, "status", 200);
		pthread_mutex_unlock(&srv.mu);
		static const char junk[] = "<html><body>502 Bad Gateway (not JSON)</body></html>\n";
		struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(junk) - 1, (void *)junk,
									 MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Content-Type", "text/html");
		res = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		goto out;
	}
	if (fault && strcmp(fault, "raw") == 0) {
		cJSON_AddNumberToObject(entry, "status", 200);
		const char *body = rk_json_string(st, "body", "");
		struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
									 MHD_RESPMEM_MUST_COPY);
		pthread_mutex_unlock(&srv.mu);
		MHD_add_response_header(r, "Content-Type", "application/json");
		res = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		goto out;
	}
	if (fault && strcmp(fault, "close") == 0) {
		cJSON_AddNumberToObject(entry, "status", 0);
		pthread_mutex_unlock(&srv.mu);
		res = MHD_NO; /* drops the connection without an answer */
		goto out;
	}
	int64_t hang_ms = 0;
	if (fault && strcmp(fault, "hang") == 0) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(st, "ms");
		hang_ms = cJSON_IsNumber(ms) ? (int64_t)ms->valuedouble : 5000;
		cJSON_AddNumberToObject(entry, "hang_ms", (double)hang_ms);
	}
	cJSON_AddNumberToObject(entry, "status", 200);
	struct answer a = {.reply = reply,
			   .req = req,
			   .s = &s,
			   .step = step + 1,
			   .body_len = rq->body.len,
			   .last_session = last_session};
	struct rk_buf sse = RK_BUF_INIT;
	rk_buf_init(&sse);
	cJSON *doc = NULL;
	if (reply && proto == PROTO_MESSAGES) {
		doc = messages_render(&a, s.stream ? &sse : NULL);
	} else if (reply && compact) {
		doc = responses_compact_render(&a);
		s.stream = 0; /* /responses/compact answers with JSON */
	} else if (reply && proto == PROTO_RESPONSES) {
		doc = responses_render(&a, s.stream ? &sse : NULL);
		cJSON_AddStringToObject(entry, "response_id", rk_json_string(doc, "id", ""));
	} else if (reply) {
		doc = chat_render(&a);
		if (s.stream) {
			const cJSON *opts = cJSON_GetObjectItemCaseSensitive(req, "stream_options");
			chat_stream(doc, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opts, "include_usage")), &sse);
		}
	}
	if (doc)
		cJSON_AddItemToObject(entry, "usage",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(doc, "usage"), 1));
	pthread_mutex_unlock(&srv.mu);
	if (hang_ms > 0)
		rk_sleep_ms(hang_ms);
	int cut = fault && strcmp(fault, "cut") == 0;
	int serr = fault && strcmp(fault, "stream_error") == 0;
	if (!doc) {
		res = send_error(conn, proto, 500, "scripted_fault", "the hang is over and this step has no reply", -1);
	} else if (serr && !s.stream) {
		res = proto == PROTO_MESSAGES
			      ? send_error(conn, proto, 529, rk_json_string(st, "error_type", "overloaded_error"),
					   "Overloaded (scripted)", -1)
			      : send_error(conn, proto, 500, rk_json_string(st, "error_type", "server_error"),
					   "The server had an error (scripted)", -1);
	} else if (s.stream) {
		if (serr)
			stream_error(&sse, proto, st);
		size_t len;
		char *text = rk_buf_detach(&sse, &len);
		res = send_pieces(conn, proto, text, len, 1, cut, st);
	} else if (cut) {
		char *text = cJSON_PrintUnformatted(doc);
		res = send_pieces(conn, proto, text, strlen(text), 0, 1, st);
	} else {
		res = send_json(conn, proto, 200, doc, -1);
	}
	cJSON_Delete(doc);
	rk_buf_release(&sse);
out:
	summary_release(&s);
	cJSON_Delete(req);
	return res;
}

static enum MHD_Result send_models(struct MHD_Connection *conn)
{
	int anthropic = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-version") != NULL;
	cJSON *doc = cJSON_Parse(
		anthropic ? "{\"data\":[{\"type\":\"model\",\"id\":\"scripted\",\"display_name\":"
			    "\"Scripted\",\"created_at\":\"2025-01-01T00:00:00Z\"}],\"has_more\":false,"
			    "\"first_id\":\"scripted\",\"last_id\":\"scripted\"}"
			  : "{\"object\":\"list\",\"data\":[{\"id\":\"scripted\",\"object\":\"model\"}]}");
	enum MHD_Result res = send_json(conn, anthropic ? PROTO_MESSAGES : PROTO_CHAT, 200, doc, -1);
	cJSON_Delete(doc);
	return res;
}

/* A Files API request (files.c); it takes no step. */
static enum MHD_Result serve_files(struct MHD_Connection *conn, struct request *rq, const char *method,
				   const char *tail)
{
	struct http_in h = {
		.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
		.x_api_key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key"),
		.anthropic_version = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-version"),
		.anthropic_beta = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-beta"),
	};
	const char *ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	unsigned status;
	enum protocol proto;
	pthread_mutex_lock(&srv.mu);
	cJSON *doc = rq->too_large ? NULL
				   : files_serve(method, tail, ctype, rq->body.data ? rq->body.data : "", rq->body.len,
						 &h, srv.files_off, &status, &proto);
	pthread_mutex_unlock(&srv.mu);
	if (!doc)
		return send_error(conn, PROTO_CHAT, 413, "request_too_large", "the upload is too large", -1);
	enum MHD_Result res = send_json(conn, proto, status, doc, -1);
	cJSON_Delete(doc);
	return res;
}

static int ends_with(const char *url, const char *tail)
{
	size_t ul = strlen(url), tl = strlen(tail);
	return ul >= tl && strcmp(url + ul - tl, tail) == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;
	if (!rq) {
		rq = rk_xcalloc(1, sizeof(*rq));
		rq->received_ms = rk_now_ms();
		rk_buf_init(&rq->body);
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->body.len + *upload_size > BODY_MAX)
			rq->too_large = 1;
		else
			rk_buf_add(&rq->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") == 0 && ends_with(url, "/models"))
		return send_models(conn);
	const char *files = strstr(url, "/files");
	if (files && (files[6] == '\0' || files[6] == '/'))
		return serve_files(conn, rq, method, files + 6);
	if (strcmp(method, "POST") == 0 && ends_with(url, "/chat/completions"))
		return serve(conn, rq, PROTO_CHAT, 0);
	if (strcmp(method, "POST") == 0 && ends_with(url, "/messages"))
		return serve(conn, rq, PROTO_MESSAGES, 0);
	if (strcmp(method, "POST") == 0 && ends_with(url, "/responses"))
		return serve(conn, rq, PROTO_RESPONSES, 0);
	if (strcmp(method, "POST") == 0 && ends_with(url, "/responses/compact"))
		return serve(conn, rq, PROTO_RESPONSES, 1);
	return send_error(conn, PROTO_CHAT, 404, "not_found",
			  "only POST .../chat/completions, .../messages and .../responses are scripted here", -1);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct request *rq = *con_cls;
	if (!rq)
		return;
	if (rq->counted) {
		pthread_mutex_lock(&srv.mu);
		srv.finished++;
		if (srv.finished >= srv.nsteps && !srv.keep_running && !srv.done_at)
			srv.done_at = rk_monotonic_ms();
		pthread_mutex_unlock(&srv.mu);
	}
	rk_buf_release(&rq->body);
	free(rq);
	*con_cls = NULL;
}

static int write_report(const char *path, int completed, int ok)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "scenario", srv.path);
	cJSON_AddNumberToObject(doc, "steps", srv.nsteps);
	cJSON_AddNumberToObject(doc, "served", srv.next_step);
	cJSON_AddNumberToObject(doc, "summaries", srv.summaries);
	cJSON_AddBoolToObject(doc, "completed", completed);
	cJSON_AddBoolToObject(doc, "ok", ok);
	cJSON_AddItemToObject(doc, "failures", srv.failure_list);
	cJSON_AddItemToObject(doc, "files", files_report());
	cJSON_AddItemToObject(doc, "requests", srv.requests);
	srv.failure_list = srv.requests = NULL;
	char *text = cJSON_Print(doc);
	cJSON_Delete(doc);
	struct rk_error e;
	size_t len = strlen(text);
	text = rk_xrealloc(text, len + 2);
	text[len++] = '\n';
	int rc = rk_fs_write_atomic(path, text, len, 0644, &e);
	free(text);
	if (rc < 0)
		fprintf(stderr, "model_server: cannot write the report: %s\n", e.message);
	return rc;
}

int main(int argc, char **argv)
{
	const char *scenario = NULL, *report = NULL;
	long port = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--report") == 0 && i + 1 < argc)
			report = argv[++i];
		else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
			if (!(srv.dump = fopen(argv[++i], "a")))
				die_usage("--dump: cannot open the file");
		} else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--keep-running") == 0)
			srv.keep_running = 1;
		else if (strcmp(argv[i], "--context-window") == 0 && i + 1 < argc) {
			srv.context_window = strtol(argv[++i], NULL, 10);
			if (srv.context_window < 1)
				die_usage("--context-window is a number of tokens");
		}
		else if (argv[i][0] == '-' || scenario)
			die_usage(
				"usage: model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running] "
				"[--context-window N]");
		else
			scenario = argv[i];
	}
	if (!scenario)
		die_usage("usage: model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running] "
				"[--context-window N]");
	if (port < 0 || port > 65535)
		die_usage("--port must be from 0 to 65535");
	srv.path = scenario;
	load_scenario(scenario);
	srv.requests = cJSON_CreateArray();
	srv.failure_list = cJSON_CreateArray();

	/* every thread leaves SIGTERM/SIGINT to the main one's sigtimedwait */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
							MHD_USE_ERROR_LOG,
						0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
						(struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
						MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "model_server: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
		return 2;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on http://127.0.0.1:%u\n", info ? (unsigned)info->port : (unsigned)port);
	fflush(stdout);

	struct timespec tick = {0, 50 * 1000 * 1000};
	int signalled = 0;
	for (;;) {
		int sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			signalled = 1;
			break;
		}
		pthread_mutex_lock(&srv.mu);
		int end = srv.done_at && (files_live() == 0 || rk_monotonic_ms() - srv.done_at >= FILES_GRACE_MS);
		pthread_mutex_unlock(&srv.mu);
		if (end)
			break;
	}
	srv.done = 1; /* a stalled stream stops waiting */
	MHD_stop_daemon(d);

	pthread_mutex_lock(&srv.mu);
	int completed = srv.next_step >= srv.nsteps;
	if (!completed) {
		char msg[200];
		snprintf(msg, sizeof(msg), "stopped%s after %d of %d steps", signalled ? " by a signal" : "",
			 srv.next_step, srv.nsteps);
		note_failure(msg);
	}
	int ok = completed && srv.failures == 0;
	int rc = report ? write_report(report, completed, ok) : 0;
	pthread_mutex_unlock(&srv.mu);
	cJSON_Delete(srv.scenario);
	cJSON_Delete(srv.requests);
	cJSON_Delete(srv.failure_list);
	messages_release();
	responses_release();
	cache_release();
	files_release();
	image_cache_release();
	return ok && rc == 0 ? 0 : 1;
}
