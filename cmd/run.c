/* rakazo run: an agent run on a computer (here, or --detach'ed), and the
 * records of past runs.
 *
 *   rakazo run [options] TASK...     a task (its words joined by spaces)
 *   rakazo run [options] [-]         the task from stdin
 *   rakazo run start [options] TASK  the same, for a task whose first word is a verb
 *   rakazo run list                  runs, newest first
 *   rakazo run show ID               one run, with its counters
 *   rakazo run logs ID [--follow] [--after N]   its stored events
 *   rakazo run cancel ID [--wait S]  stop it at its next step
 *   rakazo run resume ID [--detach]  continue an interrupted run
 *   rakazo run continue ID [--note TEXT]   end the takeover it waits in
 *
 * The verbs are recognised only as the first argument on its own, so a
 * quoted task ("list the files") is always a task. The command is a plain
 * one (not a verb table) because main.c's verb dispatch refuses a first
 * argument that is not a verb; the few verbs are dispatched here. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/access/approval.h"
#include "engine/util/log.h"
#include "engine/agent/model.h"
#include "engine/agent/run.h"
#include "engine/agent/run_log.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "cmd.h"
#include "out.h"

#define TASK_MAX (1u << 20)

static const char *o_computer, *o_bot, *o_thread, *o_model, *o_base_url, *o_api;
static const char *o_note, *o_trigger, *o_max_cost;
static int64_t o_max_steps = 0, o_max_wall = 0, o_max_tokens = 0, o_retries = -1, o_limit = 50, o_after = 0,
	       o_wait = 60, o_older_than = -1;
static int o_detach, o_follow, o_dry_run, o_no_stream, o_no_auto_resume;

static const struct rk_opt run_opts[] = {
	OPT_STRING("computer", 'c', &o_computer, "COMPUTER", "the computer to run on (default: the only one)"),
	OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot the run acts as"),
	OPT_STRING("thread", 't', &o_thread, "THREAD", "the thread the run belongs to"),
	OPT_STRING("model", 'm', &o_model, "MODEL",
		   "the model: anthropic/NAME, openai/NAME or a name the endpoint knows (else RAKAZO_MODEL or the "
		   "config file)"),
	OPT_STRING(
		"api", 0, &o_api, "messages|responses|chat",
		"the protocol (else RAKAZO_MODEL_API, the config file, or what --model's prefix implies; default chat)"),
	OPT_STRING(
		"base-url", 0, &o_base_url, "URL",
		"the API root (else RAKAZO_MODEL_BASE_URL, the config file, or the vendor's for anthropic/ and openai/)"),
	OPT_STRING("model-base-url", 0, &o_base_url, "URL", "the same as --base-url"),
	OPT_INT("model-retries", 0, &o_retries, "N", "retries of a failed model call (default 4)", 0, 20),
	OPT_BOOL("no-stream", 0, &o_no_stream,
		 "ask the model for whole replies instead of a stream (also \"stream\": false in the config file)"),
	OPT_INT("max-steps", 0, &o_max_steps, "N", "model turns before the run fails with max_steps (default 30)", 1,
		10000),
	OPT_INT("max-wall", 0, &o_max_wall, "SECONDS", "fail the run (max_wall) after this long (default: no limit)", 1,
		7 * 86400),
	OPT_INT("max-tokens", 0, &o_max_tokens, "N", "fail the run (max_tokens) past this many tokens", 1,
		INT64_C(1) << 40),
	OPT_STRING("max-cost", 0, &o_max_cost, "USD",
		   "fail the run (max_cost) once it has spent this many US dollars (needs the model's price)"),
	OPT_STRING("trigger", 0, &o_trigger, "person|webhook",
		   "who started the run (default person); webhook: calls that change data need approval"),
	OPT_BOOL("no-auto-resume", 0, &o_no_auto_resume,
		 "leave the run interrupted if its process dies (default: a worker resumes it once)"),
	OPT_INT("limit", 'n', &o_limit, "N", "list: at most N runs (default 50)", 1, 10000),
	OPT_BOOL("detach", 'd', &o_detach, "start (or resume) the run in a process of its own and print its id"),
	OPT_BOOL("follow", 'f', &o_follow, "logs: keep printing events until the run ends"),
	OPT_INT("after", 0, &o_after, "N", "logs: only events after sequence number N", 0, INT64_MAX),
	OPT_INT("wait", 0, &o_wait, "SECONDS", "cancel: wait this long for the run to end (default 60, 0: no wait)", 0,
		3600),
	OPT_STRING("note", 0, &o_note, "TEXT", "continue, approve, deny: a note for the model"),
	OPT_INT("older-than", 0, &o_older_than, "DAYS",
		"prune: the runs that ended more than DAYS days ago (0: every ended run)", 0, 36500),
	OPT_BOOL("dry-run", 0, &o_dry_run, "prune: print what would be removed, remove nothing"),
	OPT_END,
};

static volatile sig_atomic_t cancel_flag, wake_flag;

/* SIGINT/SIGTERM interrupt the run; SIGUSR1 (from `run cancel`) wakes it to
 * look at its row. */
static void on_signal(int sig)
{
	if (sig != SIGUSR1)
		cancel_flag = 1;
	wake_flag = 1;
}

static cJSON *run_to_json(const struct rk_run_row *r)
{
	char t[32];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "state", r->state);
	rk_json_add_str_or_null(o, "computer_id", r->computer_id);
	rk_json_add_str_or_null(o, "bot_id", r->bot_id);
	rk_json_add_str_or_null(o, "thread_id", r->thread_id);
	rk_json_add_str_or_null(o, "model", r->model);
	cJSON_AddStringToObject(o, "task", r->task);
	cJSON_AddNumberToObject(o, "steps", (double)r->steps);
	cJSON *u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)r->input_tokens);
	cJSON_AddNumberToObject(u, "output_tokens", (double)r->output_tokens);
	/* parts of input_tokens: read from the model's prompt cache, written to it */
	cJSON_AddNumberToObject(u, "cached_input_tokens", (double)r->cached_tokens);
	cJSON_AddNumberToObject(u, "cache_write_input_tokens", (double)r->cache_write_tokens);
	cJSON_AddNumberToObject(u, "images", (double)(r->images > 0 ? r->images : 0));
	if (r->cost_micro >= 0)
		cJSON_AddNumberToObject(u, "cost_usd", (double)r->cost_micro / 1e6);
	else
		cJSON_AddNullToObject(u, "cost_usd"); /* the model has no price */
	rk_json_add_str_or_null(o, "final_answer", r->final_answer);
	rk_json_add_str_or_null(o, "error", r->error);
	rk_json_add_str_or_null(o, "reason", r->reason);
	cJSON_AddNumberToObject(o, "attempts", (double)(r->attempts > 0 ? r->attempts : 0));
	cJSON_AddNumberToObject(o, "auto_resumes_left", (double)(r->auto_resumes_left > 0 ? r->auto_resumes_left : 0));
	cJSON_AddBoolToObject(o, "cancel_requested", r->cancel_requested > 0);
	rk_json_add_str_or_null(o, "takeover_reason", r->takeover_reason);
	rk_json_add_str_or_null(o, "lease_bot", r->lease_bot);
	if (r->lease_fence > 0)
		cJSON_AddNumberToObject(o, "lease_fence", (double)r->lease_fence);
	else
		cJSON_AddNullToObject(o, "lease_fence");
	if (r->worker_pid >= 0)
		cJSON_AddNumberToObject(o, "worker_pid", (double)r->worker_pid);
	else
		cJSON_AddNullToObject(o, "worker_pid");
	const struct {
		const char *key;
		int64_t v;
	} times[] = {{"created_at", r->created_at},
		     {"started_at", r->started_at},
		     {"heartbeat_at", r->heartbeat_at},
		     {"finished_at", r->finished_at}};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		rk_json_add_str_or_null(o, times[i].key, times[i].v >= 0 ? rk_iso8601(times[i].v, t, sizeof(t)) : NULL);
	return o;
}

/* A run is the business of whoever may use its computer (engine/access/authz.h),
 * deleted or not: RK_EDENIED, or RK_ENOTFOUND from another space. ref is an
 * id or a unique prefix (rk_run_get); *id (may be NULL) gets the whole id,
 * malloc'd, when allowed. */
static int run_authorize(struct cmd_ctx *ctx, const char *ref, char **id, struct rk_error *err)
{
	struct rk_run_row row = {0};
	struct rk_actor a;
	int r = cmd_engine(ctx);
	if (r || (r = rk_run_get(ctx->eng, ref, &row, err)))
		return r;
	if (row.computer_id && (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, err)) == 0) {
		r = rk_authz_check_id(ctx->eng, &a, row.computer_id, "computers.use", err);
		rk_actor_release(&a);
	}
	if (r == 0 && id)
		*id = rk_xstrdup(row.id);
	rk_run_row_release(&row);
	return r;
}

/* 1 when the caller may see the runs of computer_id. */
static int may_see(struct cmd_ctx *ctx, const char *computer_id)
{
	struct rk_actor a;
	struct rk_error e;
	if (!computer_id || rk_actor_resolve(&a, ctx->eng, NULL, NULL, &e))
		return 0;
	int ok = rk_authz_check_id(ctx->eng, &a, computer_id, "computers.use", &e) == 0;
	rk_actor_release(&a);
	return ok;
}

static int run_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	struct rk_computer c = {0};
	if (r || (r = cmd_engine(ctx)))
		return r;
	if (o_computer && (r = cmd_target(ctx, o_computer, "computers.use", &c)))
		return r;
	struct rk_error e;
	if (rk_run_reap(ctx->eng, NULL, &e))
		rk_log(RK_LOG_WARN, "stale runs: %s", e.message);
	struct rk_run_row *rows;
	size_t n;
	r = rk_run_list(ctx->eng, o_computer ? c.id : NULL, (size_t)o_limit, &rows, &n, &ctx->err);
	rk_computer_release(&c);
	if (r)
		return r;
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		if (o_computer || may_see(ctx, rows[i].computer_id)) /* the caller's computers' runs */
			cJSON_AddItemToArray(arr, run_to_json(&rows[i]));
	rk_run_rows_free(rows, n);
	static const struct out_col cols[] = {{"id", "ID"},	  {"state", "STATE"},
					      {"steps", "STEPS"}, {"created_at", "CREATED"},
					      {"task", "TASK"},	  {0}};
	out_list(arr, cols);
	return 0;
}

/* An attach_file result event's attachment (engine/agent/tools.h) into arr. */
static void add_attachment(cJSON *arr, const char *event_json)
{
	cJSON *ev = cJSON_Parse(event_json);
	cJSON *res = cJSON_Parse(rk_json_string(ev, "output", ""));
	const char *id = rk_json_string(res, "attachment_id", NULL);
	if (!strcmp(rk_json_string(ev, "name", ""), "attach_file") && id) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "id", id);
		cJSON_AddStringToObject(a, "path", rk_json_string(res, "path", ""));
		cJSON_AddStringToObject(a, "mime_type", rk_json_string(res, "mime_type", ""));
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(res, "bytes");
		cJSON_AddNumberToObject(a, "bytes", cJSON_IsNumber(b) ? b->valuedouble : 0);
		cJSON_AddStringToObject(a, "stored", rk_json_string(res, "stored", ""));
		cJSON_AddItemToArray(arr, a);
	}
	cJSON_Delete(res);
	cJSON_Delete(ev);
}

/* A model.turn event as a step of `run show`: {step, finish_reason, stop,
 * tool_calls, usage}. */
static void add_turn(cJSON *arr, const char *event_json)
{
	cJSON *ev = cJSON_Parse(event_json);
	if (!ev)
		return;
	cJSON *t = cJSON_CreateObject();
	static const char *const keys[] = {"step", "finish_reason", "stop", "refusal", "tool_calls", "usage"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(ev, keys[i]);
		if (v)
			cJSON_AddItemToObject(t, keys[i], v);
	}
	cJSON_AddItemToArray(arr, t);
	cJSON_Delete(ev);
}

static int run_show(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct rk_error e;
	if (rk_run_reap(ctx->eng, NULL, &e))
		rk_log(RK_LOG_WARN, "stale runs: %s", e.message);
	struct rk_run_row row = {0};
	if ((r = run_authorize(ctx, ctx->args[0], NULL, &ctx->err)) ||
	    (r = rk_run_get(ctx->eng, ctx->args[0], &row, &ctx->err)))
		return r;
	cJSON *o = run_to_json(&row);
	/* counters from its stored events */
	struct rk_run_event *ev = NULL;
	size_t n = 0;
	int64_t after = 0, events = 0, calls = 0, errors = 0, takeovers = 0, last = 0;
	cJSON *attachments = cJSON_AddArrayToObject(o, "attachments");
	cJSON *turns = cJSON_AddArrayToObject(o, "turns");
	while ((r = rk_run_events(ctx->eng, row.id, after, 1000, &ev, &n, &ctx->err)) == 0 && n) {
		for (size_t i = 0; i < n; i++) {
			events++;
			last = ev[i].seq;
			if (!strcmp(ev[i].type, "tool.call"))
				calls++;
			else if (!strcmp(ev[i].type, "tool.result") && strstr(ev[i].data, "\"error\":{"))
				errors++;
			else if (!strcmp(ev[i].type, "tool.result") && strstr(ev[i].data, "\"attach_file\""))
				add_attachment(attachments, ev[i].data);
			else if (!strcmp(ev[i].type, "run.waiting_takeover"))
				takeovers++;
			else if (!strcmp(ev[i].type, "model.turn"))
				add_turn(turns, ev[i].data);
		}
		after = ev[n - 1].seq;
		rk_run_events_free(ev, n);
		ev = NULL;
	}
	rk_run_row_release(&row);
	if (r) {
		cJSON_Delete(o);
		return r;
	}
	cJSON *k = cJSON_AddObjectToObject(o, "counters");
	cJSON_AddNumberToObject(k, "events", (double)events);
	cJSON_AddNumberToObject(k, "last_seq", (double)last);
	cJSON_AddNumberToObject(k, "tool_calls", (double)calls);
	cJSON_AddNumberToObject(k, "tool_errors", (double)errors);
	cJSON_AddNumberToObject(k, "takeovers", (double)takeovers);
	out_doc(o);
	return 0;
}

static int run_logs(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct rk_run_row row = {0};
	if ((r = run_authorize(ctx, ctx->args[0], NULL, &ctx->err)) ||
	    (r = rk_run_get(ctx->eng, ctx->args[0], &row, &ctx->err)))
		return r;
	char *id = rk_xstrdup(row.id);
	rk_run_row_release(&row);
	int64_t after = o_after;
	int64_t next_reap = 0;
	for (;;) {
		struct rk_run_event *ev = NULL;
		size_t n = 0;
		if ((r = rk_run_events(ctx->eng, id, after, 1000, &ev, &n, &ctx->err)))
			break;
		for (size_t i = 0; i < n; i++) {
			cJSON *doc = cJSON_Parse(ev[i].data);
			if (!doc)
				continue;
			if (opt_json) {
				out_stream(doc, NULL);
			} else {
				char *line = rk_run_event_line(doc, 0);
				out_stream(doc, line);
				free(line);
			}
			after = ev[i].seq;
		}
		rk_run_events_free(ev, n);
		fflush(stdout);
		if (n == 1000)
			continue;
		if (!o_follow)
			break;
		/* --follow: until the run has ended and its last event is out */
		if (rk_monotonic_ms() >= next_reap) {
			struct rk_error e;
			rk_run_reap(ctx->eng, NULL, &e);
			next_reap = rk_monotonic_ms() + 2000;
		}
		if ((r = rk_run_get(ctx->eng, id, &row, &ctx->err)))
			break;
		int ended = rk_run_state_is_final(row.state);
		rk_run_row_release(&row);
		if (ended) {
			int64_t last = 0;
			if ((r = rk_run_event_last(ctx->eng, id, &last, &ctx->err)) || last <= after)
				break;
			continue;
		}
		rk_sleep_ms(200);
	}
	free(id);
	return r;
}

/* The run's record as a document. */
static int print_run(struct cmd_ctx *ctx, const char *id)
{
	struct rk_run_row row = {0};
	int r = rk_run_get(ctx->eng, id, &row, &ctx->err);
	if (r)
		return r;
	out_doc(run_to_json(&row));
	rk_run_row_release(&row);
	return 0;
}

static int run_cancel(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	if (r || (r = cmd_engine(ctx)))
		return r;
	char *id = NULL;
	if ((r = run_authorize(ctx, ctx->args[0], &id, &ctx->err)) == 0 &&
	    (r = rk_run_cancel(ctx->eng, id, o_wait * 1000, &ctx->err)) == 0)
		r = print_run(ctx, id);
	free(id);
	return r;
}

/* The ids removed, one a line (for xargs and the like), or {"removed": [...], "dry_run": B}. */
static void print_removed(char **ids, size_t n, int dry_run)
{
	if (!out_is_json()) {
		for (size_t i = 0; i < n; i++)
			puts(ids[i]);
		return;
	}
	cJSON *doc = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(doc, "removed");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(ids[i]));
	cJSON_AddBoolToObject(doc, "dry_run", dry_run);
	out_doc(doc);
}

/* Every ID is tried: those removed are printed, each failure is one error
 * line, and the last one sets the exit status. */
static int run_rm(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 10000, "ID...");
	if (r || (r = cmd_engine(ctx)))
		return r;
	char **removed = rk_xcalloc((size_t)ctx->nargs, sizeof(*removed));
	size_t n = 0;
	int failed = 0;
	for (int i = 0; i < ctx->nargs; i++) {
		struct rk_error e;
		char *id = NULL;
		if (run_authorize(ctx, ctx->args[i], &id, &e) == 0 && rk_run_remove(ctx->eng, id, &e) == 0) {
			removed[n++] = id;
			continue;
		}
		free(id);
		if (failed)
			out_error(&ctx->err); /* the last one is main's to print */
		ctx->err = e;
		failed = 1;
	}
	print_removed(removed, n, 0);
	for (size_t i = 0; i < n; i++)
		free(removed[i]);
	free(removed);
	return failed ? -(int)ctx->err.code : 0;
}

static int run_prune(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r == 0 && o_older_than < 0)
		r = rk_error_set(&ctx->err, RK_EUSAGE, "prune needs --older-than DAYS (0: every ended run)");
	if (r || (r = cmd_engine(ctx)))
		return r;
	char **ids = NULL;
	size_t n = 0;
	r = rk_run_prune(ctx->eng, rk_now_ms() - o_older_than * 86400000, o_dry_run, &ids, &n, &ctx->err);
	print_removed(ids, n, o_dry_run);
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return r;
}

static int run_continue(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	if (r || (r = cmd_engine(ctx)))
		return r;
	char *id = NULL;
	if ((r = run_authorize(ctx, ctx->args[0], &id, &ctx->err)) == 0 &&
	    (r = rk_run_continue(ctx->eng, id, o_note, &ctx->err)) == 0)
		r = print_run(ctx, id);
	free(id);
	return r;
}

/* What the terminal shows of a streamed turn: its text as it comes (on
 * stderr, ended by a newline before the next line) and the calls already
 * printed when they were decided, so tool.call does not print them again. */
static struct {
	int in_text;	  /* streamed text ends without a newline yet */
	int step_text;	  /* the step's text was streamed */
	int answer_shown; /* the last turn (the answer) was streamed */
	cJSON *shown;	  /* ids of the step's calls printed from model.tool_call */
	int shown_step;
} tty;

static void end_text(void)
{
	if (tty.in_text)
		out_progress("%s", "");
	tty.in_text = 0;
}

/* A turn that ended other than with an answer or calls (run.h): said
 * always, on stderr, since it changes what the run does next. */
static void print_stop(const cJSON *ev)
{
	const char *stop = rk_json_string(ev, "stop", NULL);
	if (!stop)
		return;
	const char *fin = rk_json_string(ev, "finish_reason", "");
	char *m;
	if (!strcmp(stop, "refusal"))
		m = rk_xasprintf("the model refused (%s): %.500s", fin, rk_json_string(ev, "refusal", ""));
	else if (!strcmp(stop, "max_tokens"))
		m = rk_xasprintf("the model's reply was cut at its output limit (%s): a cut reply is not an answer "
				 "and its tool calls are not run; the model is asked again",
				 fin);
	else if (!strcmp(stop, "pause_turn"))
		m = rk_xasprintf("the model paused its turn (%s); it goes on", fin);
	else if (!strcmp(stop, "context_window"))
		m = rk_xasprintf("the conversation filled the model's context window (%s)", fin);
	else
		m = rk_xasprintf("the model's reply stopped: %s (%s)", stop, fin);
	for (char *p = m; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' '; /* the model's words must not drive the terminal */
	out_warning(m);
	free(m);
}

/* Progress on a terminal, or the NDJSON stream. */
static void on_event(const cJSON *ev, void *cb_ctx)
{
	(void)cb_ctx;
	if (opt_json) {
		out_stream(cJSON_Duplicate(ev, 1), NULL);
		return;
	}
	const char *type = rk_json_string(ev, "type", "");
	if (!strcmp(type, "model.text")) {
		const char *t = rk_json_string(ev, "text", "");
		if (out_progress_piece(t, strlen(t)) == 0 && *t) {
			tty.in_text = t[strlen(t) - 1] != '\n';
			tty.step_text = 1;
		}
		return;
	}
	end_text();
	if (!strcmp(type, "run.started")) {
		out_progress("run %s on %s (%s)", rk_json_string(ev, "run_id", ""), rk_json_string(ev, "computer", ""),
			     rk_json_string(ev, "model", ""));
	} else if (!strcmp(type, "tool.call") || !strcmp(type, "model.tool_call")) {
		const char *id = rk_json_string(ev, "id", "");
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(ev, "step");
		int step = cJSON_IsNumber(st) ? st->valueint : 0;
		if (step != tty.shown_step) {
			cJSON_Delete(tty.shown);
			tty.shown = NULL;
			tty.shown_step = step;
		}
		const cJSON *s;
		int shown = 0;
		cJSON_ArrayForEach(s, tty.shown)
		{
			shown |= !strcmp(s->valuestring, id);
		}
		if (shown)
			return;
		if (type[0] == 'm' && *id) {
			if (!tty.shown)
				tty.shown = cJSON_CreateArray();
			cJSON_AddItemToArray(tty.shown, cJSON_CreateString(id));
		}
		char *a = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(ev, "arguments"));
		out_progress("  %s %.200s", rk_json_string(ev, "name", ""), a ? a : "");
		free(a);
	} else if (!strcmp(type, "tool.result")) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
		if (e)
			out_progress("    error: %s", rk_json_string(e, "message", ""));
	} else if (!strcmp(type, "model.turn")) {
		const char *text = rk_json_string(ev, "text", NULL);
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(ev, "tool_calls");
		if (text && !tty.step_text && cJSON_IsNumber(calls) && calls->valueint > 0)
			out_progress("model: %.300s", text);
		tty.answer_shown = tty.step_text && cJSON_IsNumber(calls) && calls->valueint == 0;
		tty.step_text = 0;
		print_stop(ev);
	} else if (!strcmp(type, "run.checkpoint")) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
		if (e)
			out_progress("checkpoint failed: %s", rk_json_string(e, "message", ""));
	}
}

static int read_task(struct cmd_ctx *ctx, int first, struct rk_buf *task)
{
	if (ctx->nargs > first && !(ctx->nargs == first + 1 && !strcmp(ctx->args[first], "-"))) {
		for (int i = first; i < ctx->nargs; i++) {
			if (i > first)
				rk_buf_addc(task, ' ');
			rk_buf_adds(task, ctx->args[i]);
		}
	} else {
		if (ctx->nargs <= first && isatty(0))
			return rk_error_set(&ctx->err, RK_EUSAGE,
					    "missing TASK (give it as arguments, or `-` and on stdin)");
		char chunk[8192];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
			if (task->len + n > TASK_MAX)
				return rk_error_set(&ctx->err, RK_ETOOLARGE, "the task on stdin exceeds %u bytes",
						    TASK_MAX);
			rk_buf_add(task, chunk, n);
		}
		while (task->len && (task->data[task->len - 1] == '\n' || task->data[task->len - 1] == '\r'))
			task->data[--task->len] = 0;
	}
	if (!task->len)
		return rk_error_set(&ctx->err, RK_EUSAGE, "the task is empty");
	return 0;
}

/* Runs fn with SIGINT/SIGTERM interrupting the run and SIGUSR1 waking it. */
struct signals {
	struct sigaction old_int, old_term, old_usr1;
};

static void signals_on(struct signals *s)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &s->old_int);
	sigaction(SIGTERM, &sa, &s->old_term);
	sigaction(SIGUSR1, &sa, &s->old_usr1);
}

static void signals_off(struct signals *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
	sigaction(SIGUSR1, &s->old_usr1, NULL);
}

/* After a run here: the answer on stdout (human mode), or the error named. */
static int run_done(struct cmd_ctx *ctx, const char *id, int r)
{
	if (r == 0 && !opt_json) {
		struct rk_run_row row = {0};
		struct rk_error e;
		/* on one terminal the answer was just streamed: not twice */
		if (rk_run_get(ctx->eng, id, &row, &e) == 0 && row.final_answer && !(tty.answer_shown && isatty(1))) {
			out_text(stdout, row.final_answer, strlen(row.final_answer)); /* the model's words only */
			fputc('\n', stdout);
		}
		rk_run_row_release(&row);
		out_progress("run %s completed", id);
	} else if (r && id) {
		rk_error_prefix(&ctx->err, "run %s failed", id);
	}
	return r;
}

/* --detach: the id (human) or the queued run (JSON) on stdout. */
static int print_detached(struct cmd_ctx *ctx, const char *id)
{
	struct rk_run_row row = {0};
	int r = rk_run_get(ctx->eng, id, &row, &ctx->err);
	if (r)
		return r;
	if (opt_json)
		out_doc(run_to_json(&row));
	else
		puts(id);
	rk_run_row_release(&row);
	out_progress("run %s detached: `rakazo run logs %s --follow`", id, id);
	return 0;
}

/* --max-cost USD: a positive amount of US dollars ("0.50", "2"). */
static int parse_cost(struct cmd_ctx *ctx, double *out)
{
	*out = 0;
	if (!o_max_cost)
		return 0;
	char *end;
	errno = 0;
	double v = strtod(o_max_cost, &end);
	if (end == o_max_cost || *end || errno || !(v > 0) || v > 1e9)
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "--max-cost: '%s' is not an amount of US dollars greater than 0 (e.g. 0.50)",
				    o_max_cost);
	*out = v;
	return 0;
}

static int run_task(struct cmd_ctx *ctx, int first)
{
	struct rk_buf task = RK_BUF_INIT;
	rk_buf_init(&task);
	int r = read_task(ctx, first, &task);
	if (r == 0)
		r = cmd_engine(ctx);
	if (r) {
		rk_buf_release(&task);
		return r;
	}
	double max_cost = 0;
	if ((r = parse_cost(ctx, &max_cost))) {
		rk_buf_release(&task);
		return r;
	}
	struct rk_model_flags mf = RK_MODEL_FLAGS_INIT;
	mf.base_url = o_base_url;
	mf.model = o_model;
	mf.api = o_api;
	mf.max_retries = (int)o_retries;
	mf.no_stream = o_no_stream;
	struct rk_run_options ro = {.computer = o_computer,
				    .bot = o_bot,
				    .thread = o_thread,
				    .task = task.data,
				    .model = &mf,
				    .max_steps = (int)o_max_steps,
				    .max_wall_ms = o_max_wall * 1000,
				    .max_tokens = o_max_tokens,
				    .max_cost = max_cost,
				    .trigger = o_trigger,
				    .no_auto_resume = o_no_auto_resume,
				    .cancel = &cancel_flag,
				    .wake = &wake_flag};
	char *id = NULL;
	if (o_detach) {
		r = rk_run_create(ctx->eng, &ro, &id, &ctx->err);
		if (r == 0 && (r = rk_run_detach(ctx->eng, id, &ctx->err)) == 0)
			r = print_detached(ctx, id);
	} else {
		struct signals sg;
		signals_on(&sg);
		r = rk_run_start(ctx->eng, &ro, on_event, NULL, &id, &ctx->err);
		signals_off(&sg);
		r = run_done(ctx, id, r);
	}
	free(id);
	rk_buf_release(&task);
	return r;
}

static int run_resume(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	if (r || (r = cmd_engine(ctx)))
		return r;
	double max_cost = 0;
	if ((r = parse_cost(ctx, &max_cost)))
		return r;
	struct rk_run_resume_options ro = {.max_steps = (int)o_max_steps,
					   .max_wall_ms = o_max_wall * 1000,
					   .max_tokens = o_max_tokens,
					   .max_cost = max_cost,
					   .detach = o_detach};
	struct rk_run_exec x = {on_event, NULL, &cancel_flag, &wake_flag};
	struct rk_run_row row = {0};
	if ((r = run_authorize(ctx, ctx->args[0], NULL, &ctx->err)) ||
	    (r = rk_run_get(ctx->eng, ctx->args[0], &row, &ctx->err)))
		return r;
	char *id = rk_xstrdup(row.id);
	rk_run_row_release(&row);
	struct signals sg;
	signals_on(&sg);
	r = rk_run_resume(ctx->eng, id, &ro, &x, &ctx->err);
	signals_off(&sg);
	if (o_detach)
		r = r ? r : print_detached(ctx, id);
	else
		r = run_done(ctx, id, r);
	free(id);
	return r;
}

/* execute RUN (not in the help: the worker's auto-resume starts it,
 * engine/agent/run.h): runs the queued run here, in a process exec'd
 * afresh. SIGTERM/SIGINT interrupt it, SIGUSR1 (`run cancel`) wakes it. */
static int run_execute(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 2, "RUN");
	if (r || (r = cmd_engine(ctx)))
		return r;
	signal(SIGHUP, SIG_IGN);
	struct rk_run_exec x = {NULL, NULL, &cancel_flag, &wake_flag};
	struct signals sg;
	signals_on(&sg);
	r = rk_run_execute(ctx->eng, ctx->args[1], &x, &ctx->err);
	signals_off(&sg);
	return r;
}

/* approve|deny RUN: decides the call the run waits on (engine/access/approval.h). */
static int run_decide(struct cmd_ctx *ctx, int approve)
{
	int r = cmd_want_args(ctx, 2, 2, "RUN");
	struct rk_actor a;
	if (r || (r = cmd_engine(ctx)) || (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	struct rk_run_row row = {0};
	if ((r = rk_run_get(ctx->eng, ctx->args[1], &row, &ctx->err)) == 0 &&
	    (r = rk_approval_decide(ctx->eng, &a, row.id, approve, o_note, &ctx->err)) == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "run_id", row.id);
		cJSON_AddStringToObject(o, "decision", approve ? "approved" : "denied");
		rk_json_add_str_or_null(o, "note", o_note);
		out_doc(o);
	}
	rk_run_row_release(&row);
	rk_actor_release(&a);
	return r;
}

static const struct {
	const char *name;
	cmd_fn fn;
} verbs[] = {
	{"list", run_list},	{"show", run_show},	    {"logs", run_logs}, {"cancel", run_cancel},
	{"resume", run_resume}, {"continue", run_continue}, {"rm", run_rm},	{"prune", run_prune},
};

static int run_main(struct cmd_ctx *ctx)
{
	if (!ctx->nargs)
		return run_task(ctx, 0);
	const char *verb = ctx->args[0];
	if ((!strcmp(verb, "approve") || !strcmp(verb, "deny")) && ctx->nargs <= 2)
		return run_decide(ctx, !strcmp(verb, "approve"));
	if (!strcmp(verb, "execute") && ctx->nargs == 2 && !strncmp(ctx->args[1], "run_", 4))
		return run_execute(ctx);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(verb, verbs[i].name))
			continue;
		ctx->args++, ctx->nargs--;
		int r = verbs[i].fn(ctx);
		ctx->args--, ctx->nargs++; /* main.c frees the array it made */
		return r;
	}
	if (!strcmp(verb, "start"))
		return run_task(ctx, 1);
	return run_task(ctx, 0);
}

const struct cmd_entry cmd_run = {
	.name = "run",
	.args = "[options] [start] TASK... | - | list | show ID | logs ID | cancel ID | resume ID | continue ID | "
		"approve|deny RUN [--note TEXT] | rm ID... | prune --older-than DAYS [--dry-run]",
	.summary = "run an agent on a computer; list, show, follow, cancel, resume, continue, approve and remove runs",
	.description = "`rakazo run TASK...` runs the agent loop here until the model answers (exit 0, the answer on\n"
		       "stdout) or the run fails: max_steps, max_wall, max_tokens or max_cost (exit 1, 6 for\n"
		       "max_wall), the model's refusal, a reply cut at its output limit twice (output_limit), a model\n"
		       "endpoint that is down (exit 5, after the retries), interrupted by Ctrl-C (exit 130). `-` or no\n"
		       "TASK reads the task from stdin. With --json the run's events stream as NDJSON on stdout\n"
		       "(run.started, model.turn, tool.call, tool.result, run.checkpoint, run.finished); a failure\n"
		       "also puts one error line on stderr. `list` and `show ID` show recorded runs. The verbs count\n"
		       "only as the first argument on its own: a task whose first word is one needs `start`.\n"
		       "--detach starts the run in a process of its own and prints its id. `logs ID [--follow]\n"
		       "[--after N]` prints its stored events; `cancel ID` stops it at its next step (its shell\n"
		       "sessions killed); `resume ID` continues an interrupted run (or one failed by a limit or the\n"
		       "model) from its stored conversation; `continue ID [--note TEXT]` ends the takeover a run\n"
		       "waits in (request_takeover). A second run of the same bot on the same computer is a conflict\n"
		       "(exit 4) while the first is live. A run whose process dies (or stops heart-beating) is\n"
		       "resumed once by a worker (event run.auto_resumed) unless it was started with\n"
		       "--no-auto-resume.\n"
		       "A call that needs approval (`rakazo approval`) pauses the run in waiting_approval until\n"
		       "`rakazo run approve RUN` or `rakazo run deny RUN [--note TEXT]` from another terminal.\n"
		       "`rm ID...` removes ended runs (events, conversation, attachments; a live one is a conflict,\n"
		       "exit 4: cancel it first) and prints their ids; `prune --older-than DAYS [--dry-run]` does so\n"
		       "for every run that ended more than DAYS days ago. Terminal history, memory revisions and\n"
		       "approval decisions stay.",
	.opts = run_opts,
	.run = run_main,
};
