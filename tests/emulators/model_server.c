/* model_server: a scripted OpenAI-compatible chat-completions server for
 * tests. It replays a scenario file, step by step, one step per request:
 *
 *   {"comment": "...",
 *    "steps": [
 *      {"expect": {"tools_include": ["computer_observe"]},
 *       "reply": {"content": "text", "tool_calls": [{"name": "computer_observe", "arguments": {}}]}},
 *      {"fault": "status", "status": 429, "retry_after": 1},
 *      {"fault": "garbage"}, {"fault": "hang", "ms": 3000}, {"fault": "close"},
 *      {"fault": "raw", "body": "{...}"} (that text as a 200 JSON reply),
 *      {"reply": {"content": "done"}}]}
 *
 * (a bare list of steps is taken too). A string argument "$last_session" is
 * the "session" of the last tool result (a shell call still running), so a
 * step can go on with write_stdin. "expect" asserts on the request the
 * step receives:
 *   last_tool_result_contains: "text"    the last tool message holds it
 *   tool_result_has_image: true|false    the last tool result came with an image
 *   no_image_for_duplicate_frame: true   no two images in the request are the same bytes
 *   messages_min: N, image_count_min: N, image_count_max: N
 *   messages_contain: "text"             some message's text holds it
 *   tools_include: ["name", ...]         the request offers these tools
 *   has_authorization: true|false        an "Authorization: Bearer" header came
 *   model: "name"
 * and every request is checked for a sane shape (JSON with model and
 * messages, PNG data URLs, tool_call_ids that answer the assistant's calls).
 * A failed assertion makes that step's answer an HTTP 500 whose JSON error
 * names the step and the assertion, and is recorded.
 *
 *   model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running]
 *
 * --dump appends each request body as it came, one per line, so a test can
 * look at everything the model was sent (tests/security/redaction.bats).
 *
 * Binds 127.0.0.1 only (port 0: an ephemeral one), prints "listening on
 * http://127.0.0.1:PORT" on stdout, and after the last step (or on SIGTERM
 * or SIGINT) writes the report (JSON: each request's summary and every
 * assertion) and exits 0 when every step was served and every assertion
 * held, 1 otherwise, 2 for a bad scenario or usage. --keep-running serves
 * until a signal; requests past the last step are then failures. */

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

#define BODY_MAX (64u << 20)

static const char *expect_keys[] = {"last_tool_result_contains", "tool_result_has_image",
				    "no_image_for_duplicate_frame", "messages_min", "image_count_min",
				    "image_count_max", "tools_include", "has_authorization", "model", "messages_contain",
				    NULL};

static struct {
	pthread_mutex_t mu;
	cJSON *scenario;
	cJSON *steps;     /* borrowed from scenario */
	int nsteps;
	int next_step;    /* the step the next request gets */
	int finished;     /* requests whose answer is done (sent or dropped) */
	int failures;
	int keep_running;
	volatile int done;
	cJSON *requests;  /* the report's list */
	cJSON *failure_list;
	const char *path;
	FILE *dump;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct request {
	struct rk_buf body;
	int too_large;
	int counted;      /* took a step (or was past the end) */
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
	}
	const char *fault = rk_json_string(step, "fault", NULL);
	const cJSON *reply = cJSON_GetObjectItemCaseSensitive(step, "reply");
	if (fault) {
		if (strcmp(fault, "status") && strcmp(fault, "garbage") && strcmp(fault, "hang") && strcmp(fault, "close") &&
		    strcmp(fault, "raw"))
			die_usage("step %d: fault must be status, garbage, raw, hang or close", n);
		if (strcmp(fault, "status") == 0 && !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(step, "status")))
			die_usage("step %d: a status fault needs \"status\"", n);
	} else if (!cJSON_IsObject(reply)) {
		die_usage("step %d needs a \"reply\" object or a \"fault\"", n);
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
	srv.nsteps = cJSON_GetArraySize(srv.steps);
	for (int i = 0; i < srv.nsteps; i++)
		check_step(cJSON_GetArrayItem(srv.steps, i), i + 1);
}

/* ---- what a request holds ---- */

struct summary {
	int valid;
	char invalid_why[1100];
	int messages;
	int images;
	int bad_images;
	int duplicate_images;
	int last_tool;          /* index of the last tool message, -1 */
	int images_after_last_tool;
	char *last_tool_text;   /* malloc'd */
	struct rk_buf all_text; /* every message's text, one a line */
	char ids_problem[300];  /* "" when tool_call_ids are consistent */
	cJSON *tools;           /* names (owned) */
	cJSON *roles;           /* owned */
	const char *model;
};

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

/* Counts the images of one message's content, checking each is a PNG data
 * URL and remembering its hash in seen. */
static int count_images(const cJSON *content, cJSON *seen, struct summary *s)
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
		const char *prefix = "data:image/png;base64,";
		struct rk_buf png = RK_BUF_INIT;
		rk_buf_init(&png);
		if (strncmp(url, prefix, strlen(prefix)) != 0 || rk_base64_decode(url + strlen(prefix), &png) != 0 ||
		    png.len < 8 || memcmp(png.data, "\x89PNG\r\n\x1a\n", 8) != 0) {
			s->bad_images++;
		} else {
			char hex[65];
			rk_sha256_hex(png.data, png.len, hex);
			const cJSON *h;
			cJSON_ArrayForEach(h, seen)
			{
				if (strcmp(h->valuestring, hex) == 0)
					s->duplicate_images++;
			}
			cJSON_AddItemToArray(seen, cJSON_CreateString(hex));
		}
		rk_buf_release(&png);
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
	memset(s, 0, sizeof(*s));
	s->last_tool = -1;
	s->tools = cJSON_CreateArray();
	s->roles = cJSON_CreateArray();
	rk_buf_init(&s->all_text);
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	s->model = rk_json_string(req, "model", NULL);
	if (!cJSON_IsObject(req) || !s->model || !cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
		snprintf(s->invalid_why, sizeof(s->invalid_why),
			 "the request needs a \"model\" string and a non-empty \"messages\" list");
		return;
	}
	s->valid = 1;
	s->messages = cJSON_GetArraySize(msgs);
	cJSON *seen = cJSON_CreateArray();
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
		rk_buf_printf(&s->all_text, "%s\n", text);
		free(text);
		int imgs = count_images(content, seen, s);
		s->images += imgs;
		if (strcmp(role, "tool") == 0) {
			s->last_tool = i;
			s->images_after_last_tool = imgs;
			free(s->last_tool_text);
			s->last_tool_text = content_text(content);
		} else if (s->last_tool >= 0) {
			s->images_after_last_tool += imgs;
		}
	}
	cJSON_Delete(seen);
	check_tool_ids(msgs, s);
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(req, "tools"))
	{
		const char *name = rk_json_string(cJSON_GetObjectItemCaseSensitive(t, "function"), "name", NULL);
		if (name)
			cJSON_AddItemToArray(s->tools, cJSON_CreateString(name));
	}
}

static void summary_release(struct summary *s)
{
	free(s->last_tool_text);
	rk_buf_release(&s->all_text);
	cJSON_Delete(s->tools);
	cJSON_Delete(s->roles);
}

/* ---- assertions ---- */

struct verdict {
	cJSON *list;          /* [{"name", "ok", "detail"}] */
	char first_failed[600];
};

static void record(struct verdict *v, const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void record(struct verdict *v, const char *name, int ok, const char *fmt, ...)
{
	char detail[500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "name", name);
	cJSON_AddBoolToObject(a, "ok", ok);
	cJSON_AddStringToObject(a, "detail", detail);
	cJSON_AddItemToArray(v->list, a);
	if (!ok && !v->first_failed[0])
		snprintf(v->first_failed, sizeof(v->first_failed), "%s: %s", name, detail);
}

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

static void assert_request(const cJSON *expect, const struct summary *s, int has_auth, struct verdict *v)
{
	record(v, "request_valid", s->valid, "%s", s->valid ? "model and messages present" : s->invalid_why);
	if (!s->valid)
		return;
	record(v, "images_are_png", s->bad_images == 0, "%d of %d images are not PNG data URLs", s->bad_images,
	       s->images);
	record(v, "tool_call_ids_match", s->ids_problem[0] == 0, "%s",
	       s->ids_problem[0] ? s->ids_problem : "every tool result answers a call");
	const cJSON *e;
	cJSON_ArrayForEach(e, expect)
	{
		const char *k = e->string;
		if (strcmp(k, "last_tool_result_contains") == 0) {
			const char *want = cJSON_IsString(e) ? e->valuestring : "";
			int ok = s->last_tool_text && strstr(s->last_tool_text, want);
			record(v, k, ok, "wanted \"%.100s\" in the last tool result, which is \"%.200s\"", want,
			       s->last_tool < 0 ? "(no tool result)" : s->last_tool_text);
		} else if (strcmp(k, "tool_result_has_image") == 0) {
			int want = cJSON_IsTrue(e);
			int got = s->images_after_last_tool > 0;
			record(v, k, s->last_tool >= 0 && want == got, "%s",
			       s->last_tool < 0 ? "the request has no tool result"
			       : got ? "the last tool result came with an image"
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
			record(v, k, cJSON_IsTrue(e) == has_auth, "%s",
			       has_auth ? "a bearer Authorization header came" : "no bearer Authorization header came");
		} else if (strcmp(k, "messages_contain") == 0) {
			const char *want = cJSON_IsString(e) ? e->valuestring : "";
			int ok = s->all_text.data && strstr(s->all_text.data, want);
			record(v, k, ok, "wanted \"%.100s\" in some message", want);
		} else if (strcmp(k, "model") == 0) {
			const char *want = cJSON_IsString(e) ? e->valuestring : "";
			record(v, k, strcmp(want, s->model) == 0, "model \"%.100s\", wanted \"%.100s\"", s->model, want);
		}
	}
}

/* ---- answers ---- */

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, const cJSON *doc,
				 int retry_after)
{
	char *text = cJSON_PrintUnformatted(doc);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (retry_after >= 0) {
		char v[32];
		snprintf(v, sizeof(v), "%d", retry_after);
		MHD_add_response_header(r, "Retry-After", v);
	}
	enum MHD_Result res = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return res;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *type,
				  const char *msg, int retry_after)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", type);
	enum MHD_Result res = send_json(conn, status, doc, retry_after);
	cJSON_Delete(doc);
	return res;
}

static cJSON *completion(const cJSON *reply, int step, size_t body_len, const char *last_session)
{
	cJSON *doc = cJSON_CreateObject();
	char id[64];
	snprintf(id, sizeof(id), "chatcmpl-scripted-%d", step);
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
			snprintf(gen, sizeof(gen), "call_%d_%d", step, ncalls + 1);
			cJSON_AddStringToObject(tc, "id", cid ? cid : gen);
			cJSON_AddStringToObject(tc, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(tc, "function");
			cJSON_AddStringToObject(fn, "name", rk_json_string(c, "name", ""));
			const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "arguments");
			if (cJSON_IsString(args)) {
				cJSON_AddStringToObject(fn, "arguments", args->valuestring); /* raw, maybe malformed */
			} else {
				cJSON *given = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
				cJSON *m;
				cJSON_ArrayForEach(m, given)
				{
					if (cJSON_IsString(m) && !strcmp(m->valuestring, "$last_session"))
						cJSON_SetValuestring(m, last_session ? last_session : "");
				}
				char *a = cJSON_PrintUnformatted(given);
				cJSON_Delete(given);
				cJSON_AddStringToObject(fn, "arguments", a);
				free(a);
			}
			cJSON_AddItemToArray(out, tc);
			ncalls++;
		}
	}
	const char *finish = rk_json_string(reply, "finish_reason", ncalls ? "tool_calls" : "stop");
	cJSON_AddStringToObject(choice, "finish_reason", finish);
	cJSON *usage = cJSON_AddObjectToObject(doc, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", (double)(body_len / 4));
	cJSON_AddNumberToObject(usage, "completion_tokens", 7 + 20 * ncalls);
	cJSON_AddNumberToObject(usage, "total_tokens", (double)(body_len / 4) + 7 + 20 * ncalls);
	return doc;
}

static void note_failure(const char *msg)
{
	srv.failures++;
	cJSON_AddItemToArray(srv.failure_list, cJSON_CreateString(msg));
	fprintf(stderr, "model_server: %s\n", msg);
}

/* Answers a chat-completions request. */
static enum MHD_Result serve(struct MHD_Connection *conn, struct request *rq)
{
	pthread_mutex_lock(&srv.mu);
	int step = srv.next_step++;
	rq->counted = 1;
	if (srv.dump) {
		fwrite(rq->body.data, 1, rq->body.len, srv.dump);
		fputc('\n', srv.dump);
		fflush(srv.dump);
	}
	cJSON *entry = cJSON_CreateObject();
	cJSON_AddNumberToObject(entry, "step", step + 1);
	cJSON_AddItemToArray(srv.requests, entry);
	if (step >= srv.nsteps) {
		char msg[200];
		snprintf(msg, sizeof(msg), "request %d: the scenario has only %d steps", step + 1, srv.nsteps);
		note_failure(msg);
		cJSON_AddStringToObject(entry, "action", "past_the_end");
		cJSON_AddNumberToObject(entry, "status", 500);
		pthread_mutex_unlock(&srv.mu);
		return send_error(conn, 500, "scenario_exhausted", msg, -1);
	}
	const cJSON *st = cJSON_GetArrayItem(srv.steps, step);
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	int has_auth = auth && strncasecmp(auth, "Bearer ", 7) == 0 && auth[7];

	struct summary s;
	struct rk_error e;
	cJSON *req = rq->too_large ? NULL : rk_json_parse(rq->body.data, rq->body.len, "the request body", &e);
	summarize(req, &s);
	if (!req)
		snprintf(s.invalid_why, sizeof(s.invalid_why), "%s",
			 rq->too_large ? "the request body is too large" : e.message);
	cJSON_AddNumberToObject(entry, "bytes", (double)rq->body.len);
	cJSON_AddNumberToObject(entry, "messages", s.messages);
	cJSON_AddItemToObject(entry, "roles", cJSON_Duplicate(s.roles, 1));
	cJSON_AddNumberToObject(entry, "images", s.images);
	cJSON_AddNumberToObject(entry, "duplicate_images", s.duplicate_images);
	cJSON_AddItemToObject(entry, "tools", cJSON_Duplicate(s.tools, 1));
	cJSON_AddBoolToObject(entry, "authorization", has_auth);
	rk_json_add_str_or_null(entry, "last_tool_result", s.last_tool_text);
	cJSON *last_result = s.last_tool_text ? cJSON_Parse(s.last_tool_text) : NULL;
	char last_session[128]; /* a session id is short */
	snprintf(last_session, sizeof(last_session), "%s", rk_json_string(last_result, "session", ""));
	cJSON_Delete(last_result);

	struct verdict v = {.list = cJSON_CreateArray()};
	assert_request(cJSON_GetObjectItemCaseSensitive(st, "expect"), &s, has_auth, &v);
	cJSON_AddItemToObject(entry, "assertions", v.list);
	summary_release(&s);
	cJSON_Delete(req);

	if (v.first_failed[0]) {
		char msg[800];
		snprintf(msg, sizeof(msg), "step %d: assertion failed: %s", step + 1, v.first_failed);
		note_failure(msg);
		cJSON_AddStringToObject(entry, "action", "assertion_failed");
		cJSON_AddNumberToObject(entry, "status", 500);
		pthread_mutex_unlock(&srv.mu);
		return send_error(conn, 500, "scenario_assertion", msg, -1);
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
		return send_error(conn, (unsigned)status, "scripted_fault", msg, cJSON_IsNumber(ra) ? ra->valueint : -1);
	}
	if (fault && strcmp(fault, "garbage") == 0) {
		cJSON_AddNumberToObject(entry, "status", 200);
		pthread_mutex_unlock(&srv.mu);
		static const char junk[] = "<html><body>502 Bad Gateway (not JSON)</body></html>\n";
		struct MHD_Response *r =
			MHD_create_response_from_buffer(sizeof(junk) - 1, (void *)junk, MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Content-Type", "text/html");
		enum MHD_Result res = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		return res;
	}
	if (fault && strcmp(fault, "raw") == 0) {
		cJSON_AddNumberToObject(entry, "status", 200);
		const char *body = rk_json_string(st, "body", "");
		struct MHD_Response *r =
			MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
		pthread_mutex_unlock(&srv.mu);
		MHD_add_response_header(r, "Content-Type", "application/json");
		enum MHD_Result res = MHD_queue_response(conn, 200, r);
		MHD_destroy_response(r);
		return res;
	}
	if (fault && strcmp(fault, "close") == 0) {
		cJSON_AddNumberToObject(entry, "status", 0);
		pthread_mutex_unlock(&srv.mu);
		return MHD_NO; /* drops the connection without an answer */
	}
	int64_t hang_ms = 0;
	if (fault && strcmp(fault, "hang") == 0) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(st, "ms");
		hang_ms = cJSON_IsNumber(ms) ? (int64_t)ms->valuedouble : 5000;
		cJSON_AddNumberToObject(entry, "hang_ms", (double)hang_ms);
	}
	cJSON_AddNumberToObject(entry, "status", 200);
	cJSON *doc = reply ? completion(reply, step + 1, rq->body.len, last_session) : NULL;
	pthread_mutex_unlock(&srv.mu);
	if (hang_ms > 0)
		rk_sleep_ms(hang_ms);
	if (!doc)
		return send_error(conn, 500, "scripted_fault", "the hang is over and this step has no reply", -1);
	enum MHD_Result res = send_json(conn, 200, doc, -1);
	cJSON_Delete(doc);
	return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;
	if (!rq) {
		rq = rk_xcalloc(1, sizeof(*rq));
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
	size_t ul = strlen(url), sl = strlen("/chat/completions");
	if (strcmp(method, "GET") == 0 && ul >= 7 && strcmp(url + ul - 7, "/models") == 0) {
		cJSON *doc = cJSON_Parse("{\"object\":\"list\",\"data\":[{\"id\":\"scripted\",\"object\":\"model\"}]}");
		enum MHD_Result res = send_json(conn, 200, doc, -1);
		cJSON_Delete(doc);
		return res;
	}
	if (strcmp(method, "POST") != 0 || ul < sl || strcmp(url + ul - sl, "/chat/completions") != 0)
		return send_error(conn, 404, "not_found", "only POST .../chat/completions is scripted here", -1);
	return serve(conn, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct request *rq = *con_cls;
	if (!rq)
		return;
	if (rq->counted) {
		pthread_mutex_lock(&srv.mu);
		srv.finished++;
		if (srv.finished >= srv.nsteps && !srv.keep_running)
			srv.done = 1;
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
	cJSON_AddBoolToObject(doc, "completed", completed);
	cJSON_AddBoolToObject(doc, "ok", ok);
	cJSON_AddItemToObject(doc, "failures", srv.failure_list);
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
		else if (argv[i][0] == '-' || scenario)
			die_usage("usage: model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running]");
		else
			scenario = argv[i];
	}
	if (!scenario)
		die_usage("usage: model_server SCENARIO [--report FILE] [--dump FILE] [--port N] [--keep-running]");
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
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
		on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "model_server: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
		return 2;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on http://127.0.0.1:%u\n", info ? (unsigned)info->port : (unsigned)port);
	fflush(stdout);

	struct timespec tick = {0, 50 * 1000 * 1000};
	int signalled = 0;
	while (!srv.done) {
		int sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			signalled = 1;
			break;
		}
	}
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
	return ok && rc == 0 ? 0 : 1;
}
