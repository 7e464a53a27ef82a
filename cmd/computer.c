/* rakazo computer: computers, their saved lifecycle commands, shell
 * sessions, files and workspaces. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/machine/checkpoint.h"
#include "engine/access/authz.h"
#include "engine/machine/computer.h"
#include "engine/machine/execution.h"
#include "engine/machine/lease.h"
#include "engine/machine/idle.h"
#include "engine/machine/reservation.h"
#include "engine/machine/session.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"
#include "cmd.h"
#include "out.h"

/* options shared by several verbs (one process runs one verb) */
static const char *o_key, *o_provider, *o_name, *o_mode, *o_options, *o_screen, *o_pause_after, *o_cwd, *o_output,
	*o_outcome, *o_bot, *o_holder, *o_session, *o_what, *o_encoding;
static int o_wait, o_no_desktop, o_tty, o_follow, o_executable, o_base64, o_team, o_private, o_org;
static const char *o_kind, *o_memory, *o_cpus, *o_pids;
static int64_t o_timeout = 300, o_rows = 24, o_cols = 80, o_yield = 0, o_max_output = RK_SESSION_OUTPUT_DEFAULT,
	       o_after = 0, o_max_bytes = RK_FILE_READ_DEFAULT_MAX, o_ttl = RK_LEASE_DEFAULT_TTL_MS, o_fence = 0,
	       o_revisions = 1, o_limit = 1000;
static struct rk_opt_list o_env;

#define OPT_KEY                                                                                                        \
	OPT_STRING("command-key", 'k', &o_key, "KEY", "idempotency key: the same key and body give the same execution")
#define OPT_WAIT OPT_BOOL("wait", 'w', &o_wait, "wait until the command has finished")
#define OPT_TIMEOUT                                                                                                    \
	OPT_INT("timeout", 0, &o_timeout, "SECONDS", "with --wait: give up after this long (default 300)", 1, 86400)

/* --- helpers ----------------------------------------------------------------- */

/* A computer of the current space (RAKAZO_SPACE): another space's is not
 * found; the caller checks its own right (grant, revoke). */
static int find_computer(struct cmd_ctx *ctx, const char *ref, struct rk_computer *c)
{
	return cmd_target(ctx, ref, NULL, c);
}

/* A computer the caller may use (computers.use: its owner, any member for an
 * org computer, a bot with a grant), checked on every call, so a revoke
 * stops the next one. */
static int load_computer(struct cmd_ctx *ctx, const char *ref, struct rk_computer *c)
{
	return cmd_target(ctx, ref, "computers.use", c);
}

/* The capability check (engine/access/authz.h) for computers.create. */
static int authorize_create(struct cmd_ctx *ctx)
{
	struct rk_actor a;
	int r = cmd_engine(ctx);
	if (r || (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	r = rk_authz_check(ctx->eng, &a, "computers.create", NULL, &ctx->err);
	rk_actor_release(&a);
	return r;
}

/* After a create: the new computer's space and owner (a member, or the org with --org). */
static int record_place(struct cmd_ctx *ctx, const char *computer_id)
{
	struct rk_actor a;
	int r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err);
	if (r)
		return r;
	char *owner = o_org ? rk_xstrdup("org") : rk_xasprintf("user:%s", a.user);
	r = rk_authz_computer_record(ctx->eng, computer_id, a.space, owner, &ctx->err);
	free(owner);
	rk_actor_release(&a);
	return r;
}

#define OPT_FENCE                                                                                                      \
	OPT_INT("fence", 0, &o_fence, "TOKEN", "with --bot: act under this execution lease token", 1, INT64_MAX)
#define OPT_FILE_BOT OPT_STRING("bot", 'b', &o_bot, "BOT", "as this bot: its lease, and its folder on a Team computer")

/* A bot's call (engine/machine/team.h): checks or takes its lease, makes its Team
 * folders, and maps path to where the bot means it (*where, malloc'd). */
static int bot_begin(struct cmd_ctx *ctx, struct rk_computer *c, const char *path, struct rk_team_call *call,
		     char **where)
{
	*where = NULL;
	if (o_fence && !o_bot)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--fence is the token of a bot's lease: give --bot too");
	if (!o_bot)
		return 0;
	int r = rk_team_path(c, o_bot, path, where, &ctx->err);
	if (r == 0 && (r = rk_team_call_begin(ctx->eng, c, o_bot, o_fence, RK_TEAM_USE_WORK, call, &ctx->err)) != 0) {
		free(*where);
		*where = NULL;
	}
	return r;
}

/* A session verb (input, resize, kill) as a bot: the lease checked (or
 * taken) for this call alone, so a stale --fence is refused on every one. */
static int bot_session_begin(struct cmd_ctx *ctx, struct rk_computer *c, struct rk_team_call *call)
{
	char *where = NULL;
	int r = bot_begin(ctx, c, NULL, call, &where);
	free(where);
	return r;
}

/* Prints a receipt, or waits and prints the finished execution. */
static int show_receipt(struct cmd_ctx *ctx, struct rk_execution *e, int existed)
{
	int r = 0;
	if (!rk_execution_state_is_final(e->state) && rk_execution_state_of(e->state) != RK_EXECUTION_OUTCOME_UNKNOWN)
		r = rk_worker_ensure(ctx->eng, &ctx->err);
	if (r == 0 && o_wait) {
		struct rk_execution done = {0};
		out_progress("waiting for %s (%s)...", e->id, e->op);
		r = rk_execution_wait(ctx->eng, e->id, o_timeout * 1000, &done, &ctx->err);
		if (r == 0) {
			rk_execution_release(e);
			*e = done;
		}
	}
	if (r)
		return r;
	int failed = o_wait && rk_execution_state_of(e->state) != RK_EXECUTION_SUCCEEDED;
	/* under --json a failure is only the error line, stdout stays empty */
	if (!(failed && opt_json)) {
		cJSON *doc = rk_execution_to_json(e);
		if (existed)
			cJSON_AddBoolToObject(doc, "reused", 1);
		out_doc(doc);
	}
	if (o_wait && rk_execution_state_of(e->state) == RK_EXECUTION_FAILED)
		return rk_error_set(&ctx->err, rk_code_from_name(e->error_code), "%s %s failed (execution %s): %s",
				    e->op, e->computer_id, e->id, e->error_message ? e->error_message : "failed");
	if (o_wait && rk_execution_state_of(e->state) == RK_EXECUTION_OUTCOME_UNKNOWN)
		return rk_error_set(&ctx->err, RK_EOUTCOME_UNKNOWN,
				    "%s %s: the provider's reply was lost; check it, then `rakazo computer execution "
				    "decide %s --outcome succeeded|failed`",
				    e->op, e->computer_id, e->id);
	if (o_wait && rk_execution_state_of(e->state) == RK_EXECUTION_CANCELLED)
		return rk_error_set(&ctx->err, RK_EINTERRUPTED, "%s was cancelled", e->id);
	return 0;
}

static int submit(struct cmd_ctx *ctx, const char *op, const char *computer, cJSON *body)
{
	int r = cmd_engine(ctx);
	if (r) {
		cJSON_Delete(body);
		return r;
	}
	struct rk_submit s = {.op = op, .computer = computer, .body = body, .command_key = o_key};
	struct rk_execution e = {0};
	int existed = 0;
	r = rk_execution_submit(ctx->eng, &s, &e, &existed, &ctx->err);
	cJSON_Delete(body);
	if (r == 0 && rk_lifecycle_op_of(op) == RK_LIFECYCLE_CREATE && e.computer_id)
		r = record_place(ctx, e.computer_id);
	if (r == 0) {
		if (!o_key && !opt_json)
			out_progress("command key: %s (pass it again with --command-key to retry safely)",
				     e.command_key);
		r = show_receipt(ctx, &e, existed);
	}
	rk_execution_release(&e);
	return r;
}

/* Reads all of fd (a file, a pipe, stdin), bounded. */
static int read_fd_all(int fd, size_t max, struct rk_buf *out, struct rk_error *err)
{
	char buf[65536];
	for (;;) {
		ssize_t n = rk_fs_read_fd(fd, buf, sizeof(buf));
		if (n < 0)
			return rk_error_errno(err, RK_EIO, errno, "cannot read the input");
		if (n == 0)
			return 0;
		if (out->len + (size_t)n > max)
			return rk_error_set(err, RK_ETOOLARGE, "input exceeds %zu bytes", max);
		rk_buf_add(out, buf, (size_t)n);
	}
}

/* --- providers, create, list, show --------------------------------------------- */

static int run_providers(struct cmd_ctx *ctx)
{
	static const struct {
		unsigned bit;
		const char *name;
	} caps[] = {{RK_CAP_DESKTOP, "desktop"},
		    {RK_CAP_MULTI_SCREEN, "multiScreen"},
		    {RK_CAP_TTY, "tty"},
		    {RK_CAP_PAGE_BROWSER, "pageBrowser"},
		    {RK_CAP_SNAPSHOTS, "snapshots"},
		    {RK_CAP_PERSISTENT_HOME, "persistentHome"},
		    {RK_CAP_TAKEOVER, "takeover"},
		    {RK_CAP_VNC, "vnc"},
		    {RK_CAP_PAUSE, "pause"},
		    {RK_CAP_HOST_HOME, "hostHome"},
		    {RK_CAP_HOST_EXEC, "hostExec"},
		    {RK_CAP_LIMIT_MEMORY, "memoryLimit"},
		    {RK_CAP_LIMIT_CPUS, "cpusLimit"},
		    {RK_CAP_LIMIT_PIDS, "pidsLimit"}};
	(void)ctx;
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; rk_providers[i]; i++) {
		const struct rk_provider_ops *p = rk_providers[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", p->name);
		cJSON *cj = cJSON_AddObjectToObject(o, "capabilities");
		struct rk_buf list;
		rk_buf_init(&list);
		for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			int on = (p->caps & caps[k].bit) != 0;
			cJSON_AddBoolToObject(cj, caps[k].name, on);
			if (on)
				rk_buf_printf(&list, "%s%s", list.len ? "," : "", caps[k].name);
		}
		struct rk_error e;
		int ok = !p->check || p->check(&e) == 0;
		/* the limits it enforces, with what a computer gets unless asked (null: none) */
		struct rk_limits lim = {0};
		rk_limits_defaults(p->caps, &lim);
		cJSON_AddItemToObject(o, "limits", rk_limits_to_json(&lim));
		cJSON_AddBoolToObject(o, "available", ok);
		if (!ok)
			cJSON_AddStringToObject(o, "reason", e.message);
		cJSON_AddStringToObject(o, "caps", list.data);
		cJSON_AddStringToObject(o, "summary", p->summary);
		rk_buf_release(&list);
		cJSON_AddItemToArray(rows, o);
	}
	static const struct out_col cols[] = {{"name", "PROVIDER"},
					      {"available", "AVAILABLE"},
					      {"caps", "CAPABILITIES"},
					      {"summary", "SUMMARY"},
					      {0}};
	out_list(rows, cols);
	return 0;
}

static const struct rk_opt create_opts[] = {
	OPT_STRING("provider", 'p', &o_provider, "NAME",
		   "provider: docker (default), e2b, daytona, box, or fake (a test double run on this host)"),
	OPT_STRING("name", 'n', &o_name, "NAME", "the computer's name (letters, digits, - _ .)"),
	OPT_STRING("mode", 0, &o_mode, "team|private", "a Team computer shared by bots, or a Private one (default)"),
	OPT_BOOL("team", 0, &o_team, "a Team computer: bots work in bots/<bot>/, shared work in shared/"),
	OPT_BOOL("private", 0, &o_private, "a Private computer: the whole workspace is the bot's"),
	OPT_BOOL("no-desktop", 0, &o_no_desktop, "no graphical desktop"),
	OPT_STRING("pause-after", 0, &o_pause_after, "SECONDS|never", "pause when idle this long (default 600)"),
	OPT_INT("revisions", 0, &o_revisions, "N", "workspace checkpoints to keep (default 1)", 1, 1000),
	OPT_STRING("options", 0, &o_options, "JSON",
		   "provider options as a JSON object, e.g. '{\"network\":\"none\"}'"),
	OPT_STRING("screen", 0, &o_screen, "WIDTHxHEIGHT", "the desktop's size, e.g. 1920x1080 (default 1280x800)"),
	OPT_STRING("memory", 0, &o_memory, "SIZE", "memory limit, e.g. 512m or 2g (docker default 4g)"),
	OPT_STRING("cpus", 0, &o_cpus, "N", "CPU limit, e.g. 0.5 (docker default 2)"),
	OPT_STRING("pids", 0, &o_pids, "N", "limit on processes and threads, 64 or more (docker default 1024)"),
	OPT_BOOL("org", 0, &o_org, "owned by the organization (every member may use it), not by you"),
	OPT_KEY,
	OPT_WAIT,
	OPT_TIMEOUT,
	OPT_END,
};

static int run_create(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 1, "at most a NAME");
	if (r)
		return r;
	const char *name = o_name ? o_name : ctx->nargs ? ctx->args[0] : NULL;
	if (!name)
		return rk_error_set(&ctx->err, RK_EUSAGE, "a computer needs a name: --name NAME");
	if (o_team + o_private + !!o_mode > 1)
		return rk_error_set(&ctx->err, RK_EUSAGE, "give one of --team, --private or --mode");
	if (o_team || o_private)
		o_mode = o_team ? "team" : "private";
	if ((r = authorize_create(ctx)))
		return r;
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", name);
	cJSON_AddStringToObject(body, "provider", o_provider ? o_provider : "docker");
	cJSON_AddStringToObject(body, "mode", o_mode ? o_mode : "private");
	cJSON_AddBoolToObject(body, "desktop", !o_no_desktop);
	if (o_pause_after && !strcmp(o_pause_after, "never")) {
		cJSON_AddNullToObject(body, "pause_after");
	} else if (o_pause_after) {
		char *end;
		long long v = strtoll(o_pause_after, &end, 10);
		if (end == o_pause_after || *end) {
			cJSON_Delete(body);
			return rk_error_set(&ctx->err, RK_EUSAGE, "--pause-after takes seconds or 'never', not '%s'",
					    o_pause_after);
		}
		cJSON_AddNumberToObject(body, "pause_after", (double)v);
	} else {
		cJSON_AddNumberToObject(body, "pause_after", 600);
	}
	cJSON_AddNumberToObject(body, "revisions", (double)o_revisions);
	if (o_options) {
		cJSON *opt = rk_json_parse(o_options, strlen(o_options), "--options", &ctx->err);
		if (!opt) {
			cJSON_Delete(body);
			return -ctx->err.code;
		}
		if (!cJSON_IsObject(opt)) {
			cJSON_Delete(opt);
			cJSON_Delete(body);
			return rk_error_set(&ctx->err, RK_EINVALID, "--options must be a JSON object");
		}
		cJSON_AddItemToObject(body, "options", opt);
	}
	if (o_screen) {
		cJSON *opt = cJSON_GetObjectItemCaseSensitive(body, "options");
		if (!opt)
			opt = cJSON_AddObjectToObject(body, "options");
		cJSON_DeleteItemFromObjectCaseSensitive(opt, "screen");
		cJSON_AddStringToObject(opt, "screen", o_screen);
	}
	if (o_memory || o_cpus || o_pids) {
		struct rk_limits lim = {0};
		if ((o_memory && rk_limits_parse_memory(o_memory, "--memory", &lim.memory, &ctx->err)) ||
		    (o_cpus && rk_limits_parse_cpus(o_cpus, "--cpus", &lim.cpus, &ctx->err)) ||
		    (o_pids && rk_limits_parse_pids(o_pids, "--pids", &lim.pids, &ctx->err))) {
			cJSON_Delete(body);
			return -ctx->err.code;
		}
		/* only what was asked: the engine fills the provider's defaults */
		cJSON *res = cJSON_AddObjectToObject(body, "resources");
		if (o_memory)
			cJSON_AddNumberToObject(res, "memory", (double)lim.memory);
		if (o_cpus)
			cJSON_AddNumberToObject(res, "cpus", lim.cpus);
		if (o_pids)
			cJSON_AddNumberToObject(res, "pids", (double)lim.pids);
	}
	const struct rk_provider_ops *p = rk_provider_find(o_provider ? o_provider : "docker");
	const char *quiet = getenv("RAKAZO_FAKE_QUIET");
	if ((r = submit(ctx, "create", NULL, body)) == 0 && p && (p->caps & RK_CAP_HOST_EXEC) && !(quiet && *quiet))
		fprintf(stderr,
			"rakazo: warning: provider %s is a test double: the commands of computer %s run on this host "
			"as this user, unconfined\n",
			p->name, name);
	return r;
}

static int run_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct rk_computer *cs;
	size_t n;
	if ((r = rk_computer_list(ctx->eng, &cs, &n, &ctx->err)))
		return r;
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		if (cmd_may_use(ctx, &cs[i])) /* the current space's, the caller's own */
			cJSON_AddItemToArray(rows, rk_computer_to_json(&cs[i]));
		rk_computer_release(&cs[i]);
	}
	free(cs);
	static const struct out_col cols[] = {{"name", "NAME"},
					      {"id", "ID"},
					      {"provider", "PROVIDER"},
					      {"state", "STATE"},
					      {"mode", "MODE"},
					      {"home_revision", "CHECKPOINT"},
					      {0}};
	out_list(rows, cols);
	return 0;
}

static int run_show(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	cJSON *doc = rk_computer_to_json(&c);
	struct rk_execution e = {0};
	struct rk_error e2;
	if (rk_computer_execution_active(ctx->eng, c.id, &e, &e2) == 0) {
		cJSON_AddStringToObject(doc, "execution_id", e.id);
		rk_execution_release(&e);
	} else {
		cJSON_AddNullToObject(doc, "execution_id");
	}
	/* Team computers (issue 8): describe()'s capabilities, the bots' screens,
	 * a reservation, the idle schedule and a deferred checkpoint */
	cJSON_AddItemToObject(doc, "capabilities", rk_team_capabilities(&c));
	cJSON *screens = NULL;
	if (rk_team_screen_list(ctx->eng, &c, &screens, &e2) == 0)
		cJSON_AddItemToObject(doc, "screens", screens);
	cJSON *j = rk_reservation_to_json(ctx->eng->db, c.id);
	cJSON_AddItemToObject(doc, "reservation", j ? j : cJSON_CreateNull());
	j = rk_idle_to_json(ctx->eng, &c);
	cJSON_AddItemToObject(doc, "idle", j ? j : cJSON_CreateNull());
	j = rk_idle_deferred_to_json(ctx->eng->db, c.id);
	cJSON_AddItemToObject(doc, "deferred_checkpoint", j ? j : cJSON_CreateNull());
	rk_computer_release(&c);
	out_doc(doc);
	return 0;
}

static int lifecycle(struct cmd_ctx *ctx, const char *op)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r)
		return r;
	struct rk_computer c = {0};
	r = cmd_target(ctx, ctx->args[0],
		       rk_lifecycle_op_of(op) == RK_LIFECYCLE_DELETE ? "computers.delete" : "computers.use", &c);
	rk_computer_release(&c);
	if (r)
		return r;
	return submit(ctx, op, ctx->args[0], cJSON_CreateObject());
}

static int run_pause(struct cmd_ctx *ctx)
{
	return lifecycle(ctx, "pause");
}
static int run_resume(struct cmd_ctx *ctx)
{
	return lifecycle(ctx, "resume");
}
static int run_stop(struct cmd_ctx *ctx)
{
	return lifecycle(ctx, "stop");
}
static int run_delete(struct cmd_ctx *ctx)
{
	return lifecycle(ctx, "delete");
}

static const struct rk_opt lifecycle_opts[] = {OPT_KEY, OPT_WAIT, OPT_TIMEOUT, OPT_END};

/* --- executions ------------------------------------------------------------------ */

/* A lifecycle command is the business of whoever may use its computer. */
static int exe_authorize(struct cmd_ctx *ctx, const char *ref)
{
	struct rk_execution e = {0};
	struct rk_actor a;
	int r = cmd_engine(ctx);
	if (r || (r = rk_execution_get(ctx->eng, ref, &e, &ctx->err)))
		return r;
	if (e.computer_id && (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)) == 0) {
		r = rk_authz_check_id(ctx->eng, &a, e.computer_id, "computers.use", &ctx->err);
		rk_actor_release(&a);
	}
	rk_execution_release(&e);
	return r;
}

static int run_exe_show(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "EXECUTION");
	if (r || (r = exe_authorize(ctx, ctx->args[0])))
		return r;
	struct rk_execution e = {0};
	if ((r = rk_execution_get(ctx->eng, ctx->args[0], &e, &ctx->err)))
		return r;
	out_doc(rk_execution_to_json(&e));
	rk_execution_release(&e);
	return 0;
}

static int run_exe_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 1, "[COMPUTER]");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct rk_computer c = {0};
	if (ctx->nargs && (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_execution *es;
	size_t n;
	r = rk_computer_executions(ctx->eng, ctx->nargs ? c.id : NULL, &es, &n, &ctx->err);
	rk_computer_release(&c);
	if (r)
		return r;
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		struct rk_computer ec = {0};
		struct rk_error e2;
		/* without a COMPUTER: the commands of the computers the caller may use */
		if (ctx->nargs || !es[i].computer_id ||
		    (rk_computer_get(ctx->eng, es[i].computer_id, &ec, &e2) == 0 && cmd_may_use(ctx, &ec)))
			cJSON_AddItemToArray(rows, rk_execution_to_json(&es[i]));
		rk_computer_release(&ec);
		rk_execution_release(&es[i]);
	}
	free(es);
	static const struct out_col cols[] = {{"id", "EXECUTION"},	 {"op", "OP"},
					      {"state", "STATE"},	 {"computer_id", "COMPUTER"},
					      {"created_at", "CREATED"}, {0}};
	out_list(rows, cols);
	return 0;
}

static volatile sig_atomic_t follow_stop;
static void on_follow_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

static const struct rk_opt events_opts[] = {
	OPT_INT("after-sequence", 0, &o_after, "N", "only events after this sequence number", 0, INT64_MAX),
	OPT_BOOL("follow", 'f', &o_follow, "keep printing new events (NDJSON with --json) until the command ends"),
	OPT_END,
};

static void print_event(const struct rk_event *ev)
{
	cJSON *doc = rk_event_to_json(ev);
	char when[40];
	char *human = rk_xasprintf("%4lld  %s  %-16s %s", (long long)ev->sequence,
				   rk_iso8601(ev->created_at, when, sizeof(when)), ev->type, ev->data ? ev->data : "");
	out_stream(doc, human);
	free(human);
}

static int run_exe_events(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "EXECUTION");
	if (r || (r = exe_authorize(ctx, ctx->args[0])))
		return r;
	struct rk_execution e = {0};
	if ((r = rk_execution_get(ctx->eng, ctx->args[0], &e, &ctx->err)))
		return r;
	int64_t after = o_after;
	if (!o_follow) {
		struct rk_event *ev;
		size_t n;
		if ((r = rk_computer_execution_events(ctx->eng, e.id, after, &ev, &n, &ctx->err)) == 0) {
			if (opt_json) {
				cJSON *arr = cJSON_CreateArray();
				for (size_t i = 0; i < n; i++)
					cJSON_AddItemToArray(arr, rk_event_to_json(&ev[i]));
				out_doc(arr);
			} else {
				for (size_t i = 0; i < n; i++)
					print_event(&ev[i]);
			}
			rk_events_free(ev, n);
		}
		rk_execution_release(&e);
		return r;
	}
	/* closing this stream (Ctrl-C, a closed pipe) never stops the command itself */
	signal(SIGINT, on_follow_signal);
	signal(SIGTERM, on_follow_signal);
	rk_worker_ensure(ctx->eng, NULL);
	int settled = 0;
	while (!follow_stop) {
		struct rk_event *ev;
		size_t n;
		if ((r = rk_computer_execution_events(ctx->eng, e.id, after, &ev, &n, &ctx->err)))
			break;
		for (size_t i = 0; i < n; i++) {
			print_event(&ev[i]);
			after = ev[i].sequence;
		}
		rk_events_free(ev, n);
		if (ferror(stdout))
			break;
		if (settled)
			break;
		struct rk_execution now = {0};
		if (rk_execution_get(ctx->eng, e.id, &now, NULL) == 0) {
			settled = rk_execution_state_is_final(now.state) ||
				  rk_execution_state_of(now.state) == RK_EXECUTION_OUTCOME_UNKNOWN;
			rk_execution_release(&now);
		}
		if (!settled)
			rk_sleep_ms(50);
	}
	rk_execution_release(&e);
	if (r == 0 && follow_stop)
		return rk_error_set(&ctx->err, RK_EINTERRUPTED, "stopped following; the command goes on");
	return r;
}

static int run_exe_cancel(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "EXECUTION");
	if (r || (r = exe_authorize(ctx, ctx->args[0])))
		return r;
	struct rk_execution e = {0};
	if ((r = rk_execution_cancel(ctx->eng, ctx->args[0], &e, &ctx->err)))
		return r;
	out_doc(rk_execution_to_json(&e));
	rk_execution_release(&e);
	return 0;
}

static const struct rk_opt decide_opts[] = {
	OPT_STRING("outcome", 0, &o_outcome, "succeeded|failed", "what the provider shows happened"),
	OPT_END,
};

static int run_exe_decide(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "EXECUTION");
	if (r)
		return r;
	if (!o_outcome)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--outcome succeeded|failed is required");
	if ((r = exe_authorize(ctx, ctx->args[0])))
		return r;
	struct rk_execution e = {0};
	if ((r = rk_execution_decide(ctx->eng, ctx->args[0], o_outcome, &e, &ctx->err)))
		return r;
	out_doc(rk_execution_to_json(&e));
	rk_execution_release(&e);
	return 0;
}

static const struct rk_opt no_opts[] = {OPT_END};

static const struct cmd_verb execution_verbs[] = {
	{"show", "EXECUTION", "show a lifecycle command's saved state", no_opts, run_exe_show, NULL},
	{"list", "[COMPUTER]", "list lifecycle commands", no_opts, run_exe_list, NULL},
	{"events", "EXECUTION", "print a command's events (--follow streams them)", events_opts, run_exe_events, NULL},
	{"cancel", "EXECUTION", "cancel a command that has not reached its provider", no_opts, run_exe_cancel, NULL},
	{"decide", "EXECUTION --outcome succeeded|failed", "settle an outcome_unknown command", decide_opts,
	 run_exe_decide, NULL},
	{0},
};

/* --- shell sessions ---------------------------------------------------------------- */

static int print_reply(struct cmd_ctx *ctx, struct rk_session_reply *rep)
{
	if (opt_json) {
		out_doc(rk_session_reply_to_json(rep));
		return 0;
	}
	fwrite(rep->output, 1, rep->output_len, stdout);
	fflush(stdout);
	if (rep->truncated)
		fprintf(stderr, "rakazo: output truncated to its last %lld bytes\n", (long long)o_max_output);
	if (rep->running)
		fprintf(stderr, "rakazo: session %s still running; continue with `rakazo computer input %s %s ...`\n",
			rep->session, ctx->args[0], rep->session);
	else if (rep->lost)
		fprintf(stderr, "rakazo: the computer went away while the command ran; how it ended is unknown\n");
	else if (rep->signo > 0)
		fprintf(stderr, "rakazo: command ended by signal %d\n", rep->signo);
	else if (rep->exited && rep->exit_code)
		fprintf(stderr, "rakazo: command exited with status %d\n", rep->exit_code);
	return 0;
}

static const struct rk_opt exec_opts[] = {
	OPT_STRING("cwd", 'C', &o_cwd, "DIR", "working directory (relative: inside the workspace)"),
	OPT_LIST("env", 'e', &o_env, "K=V", "set an environment variable (repeatable)"),
	OPT_BOOL("tty", 't', &o_tty, "give the command a terminal (stdout and stderr merged)"),
	OPT_INT("rows", 0, &o_rows, "N", "terminal rows (default 24)", 1, 1000),
	OPT_INT("cols", 0, &o_cols, "N", "terminal columns (default 80)", 1, 1000),
	OPT_INT("yield-ms", 'y', &o_yield, "MS", "wait this long for the command (250 to 30000, default 10000)", 0,
		INT64_MAX),
	OPT_INT("max-output", 0, &o_max_output, "BYTES", "at most this much new output per answer (default 65536)", 1,
		64 * 1024 * 1024),
	OPT_STRING("bot", 0, &o_bot, "BOT", "the bot it runs for: its lease, its folder on a Team computer, history"),
	OPT_FENCE,
	OPT_END,
};

static int run_exec(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, -1, "COMPUTER -- COMMAND...");
	if (r)
		return r;
	for (int i = 0; i < o_env.n; i++)
		if (!strchr(o_env.items[i], '=') || o_env.items[i][0] == '=')
			return rk_error_set(&ctx->err, RK_EUSAGE, "--env takes K=V, not '%s'", o_env.items[i]);
	if (o_yield && (r = rk_session_check_yield(o_yield, &ctx->err)))
		return r;
	struct rk_computer c = {0};
	if ((r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_buf cmd;
	rk_buf_init(&cmd);
	for (int i = 1; i < ctx->nargs; i++)
		rk_buf_printf(&cmd, "%s%s", i > 1 ? " " : "", ctx->args[i]);
	const char **env = rk_xcalloc((size_t)o_env.n + 1, sizeof(*env));
	for (int i = 0; i < o_env.n; i++)
		env[i] = o_env.items[i];
	struct rk_team_call call = {0};
	char *cwd = NULL;
	if ((r = bot_begin(ctx, &c, o_cwd, &call, &cwd)))
		goto out;
	struct rk_session_request req = {.command = cmd.data,
					 .cwd = cwd ? (*cwd ? cwd : NULL) : o_cwd,
					 .env = env,
					 .tty = o_tty,
					 .rows = (int)o_rows,
					 .cols = (int)o_cols,
					 .yield_ms = o_yield,
					 .max_output = (size_t)o_max_output,
					 .bot_id = o_bot};
	struct rk_session_reply rep = {0};
	r = rk_session_start(ctx->eng, &c, &req, &rep, &ctx->err);
	if (r == 0)
		r = print_reply(ctx, &rep);
	rk_session_reply_release(&rep);
	rk_team_call_end(ctx->eng, &call);
out:
	free(cwd);
	free(env);
	rk_buf_release(&cmd);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt input_opts[] = {
	OPT_INT("yield-ms", 'y', &o_yield, "MS", "wait this long for output (250 to 30000, default 1000)", 0,
		INT64_MAX),
	OPT_INT("max-output", 0, &o_max_output, "BYTES", "at most this much new output (default 65536)", 1,
		64 * 1024 * 1024),
	OPT_FILE_BOT,
	OPT_FENCE,
	OPT_END,
};

static int run_input(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 3, "COMPUTER SESSION [CHARS]");
	if (r)
		return r;
	struct rk_buf data;
	rk_buf_init(&data);
	if (ctx->nargs == 3 && (r = rk_unescape_c(ctx->args[2], &data, &ctx->err))) {
		rk_buf_release(&data);
		return r;
	}
	struct rk_computer c = {0};
	struct rk_team_call call = {0};
	if ((r = load_computer(ctx, ctx->args[0], &c)) == 0 && (r = bot_session_begin(ctx, &c, &call)) == 0) {
		struct rk_session_reply rep = {0};
		r = rk_session_input(ctx->eng, c.id, ctx->args[1], data.data, data.len, o_yield ? o_yield : 1000,
				     (size_t)o_max_output, &rep, &ctx->err);
		if (r == 0)
			r = print_reply(ctx, &rep);
		rk_session_reply_release(&rep);
		rk_team_call_end(ctx->eng, &call);
	}
	rk_computer_release(&c);
	rk_buf_release(&data);
	return r;
}

static const struct rk_opt resize_opts[] = {
	OPT_INT("rows", 0, &o_rows, "N", "terminal rows", 1, 1000),
	OPT_INT("cols", 0, &o_cols, "N", "terminal columns", 1, 1000),
	OPT_FILE_BOT,
	OPT_FENCE,
	OPT_END,
};
static const struct rk_opt kill_opts[] = {OPT_FILE_BOT, OPT_FENCE, OPT_END};

static int run_resize(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 2, "COMPUTER SESSION");
	struct rk_computer c = {0};
	struct rk_team_call call = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	if ((r = bot_session_begin(ctx, &c, &call)) == 0) {
		r = rk_session_resize(ctx->eng, c.id, ctx->args[1], (int)o_rows, (int)o_cols, &ctx->err);
		rk_team_call_end(ctx->eng, &call);
	}
	if (r == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "session", ctx->args[1]);
		cJSON_AddNumberToObject(o, "rows", (double)o_rows);
		cJSON_AddNumberToObject(o, "cols", (double)o_cols);
		out_doc(o);
	}
	rk_computer_release(&c);
	return r;
}

static int run_kill(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 2, "COMPUTER SESSION");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_session_reply rep = {0};
	struct rk_team_call call = {0};
	if ((r = bot_session_begin(ctx, &c, &call)) == 0) {
		r = rk_session_kill(ctx->eng, c.id, ctx->args[1], &rep, &ctx->err);
		rk_team_call_end(ctx->eng, &call);
	}
	if (r == 0)
		r = print_reply(ctx, &rep);
	rk_session_reply_release(&rep);
	rk_computer_release(&c);
	return r;
}

static int run_sessions(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_session_row *rows;
	size_t n;
	r = rk_computer_sessions(ctx->eng, c.id, &rows, &n, &ctx->err);
	rk_computer_release(&c);
	if (r)
		return r;
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char when[40];
		cJSON_AddStringToObject(o, "id", rows[i].id);
		cJSON_AddStringToObject(o, "state", rows[i].state);
		cJSON_AddStringToObject(o, "owner", rows[i].owner);
		cJSON_AddBoolToObject(o, "tty", rows[i].tty);
		cJSON_AddStringToObject(o, "command", rows[i].command);
		if (rows[i].exit_code >= 0)
			cJSON_AddNumberToObject(o, "exit_code", (double)rows[i].exit_code);
		else
			cJSON_AddNullToObject(o, "exit_code");
		cJSON_AddStringToObject(o, "last_used_at", rk_iso8601(rows[i].last_used_at, when, sizeof(when)));
		cJSON_AddItemToArray(arr, o);
		rk_session_row_release(&rows[i]);
	}
	free(rows);
	static const struct out_col cols[] = {{"id", "SESSION"},
					      {"state", "STATE"},
					      {"exit_code", "EXIT"},
					      {"command", "COMMAND"},
					      {0}};
	out_list(arr, cols);
	return 0;
}

static const struct rk_opt history_opts[] = {
	OPT_STRING("session", 's', &o_session, "SESSION", "only this session"),
	OPT_INT("after", 0, &o_after, "ID", "only entries after this id", 0, INT64_MAX),
	OPT_INT("limit", 0, &o_limit, "N", "at most this many entries (default 1000)", 1, 100000),
	OPT_BOOL("follow", 'f', &o_follow, "keep printing new entries (NDJSON with --json) until interrupted"),
	OPT_END,
};

#define HISTORY_POLL_MS 200

static cJSON *history_entry_json(const struct rk_history_entry *h)
{
	cJSON *o = cJSON_CreateObject();
	char when[40];
	cJSON_AddNumberToObject(o, "id", (double)h->id);
	rk_json_add_str_or_null(o, "session", h->session_id);
	rk_json_add_str_or_null(o, "bot", h->bot_id);
	cJSON_AddStringToObject(o, "kind", h->kind);
	cJSON_AddStringToObject(o, "data", h->data);
	if (h->exit_code >= 0)
		cJSON_AddNumberToObject(o, "exit_code", (double)h->exit_code);
	if (h->signal >= 0)
		cJSON_AddNumberToObject(o, "signal", (double)h->signal);
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(h->created_at, when, sizeof(when)));
	return o;
}

/* An entry as people read it: "$ command", the raw input and output, "[exit N]". */
static void history_entry_print(const struct rk_history_entry *h)
{
	enum rk_history_kind kind = rk_history_kind_of(h->kind);
	if (kind == RK_HISTORY_COMMAND)
		printf("$ %s\n", h->data);
	else if (kind == RK_HISTORY_OUTPUT || kind == RK_HISTORY_INPUT)
		fwrite(h->data, 1, h->data_len, stdout);
	else if (kind == RK_HISTORY_EXIT)
		h->signal >= 0	    ? printf("[signal %lld]\n", (long long)h->signal)
		: h->exit_code >= 0 ? printf("[exit %lld]\n", (long long)h->exit_code)
				    : printf("[ended]\n");
}

static int run_history(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	char *id = rk_xstrdup(c.id);
	rk_computer_release(&c);
	int64_t after = o_after;
	cJSON *arr = o_follow ? NULL : cJSON_CreateArray();
	if (o_follow) {
		/* --follow: every entry as it comes (one JSON line each with --json), until a signal */
		signal(SIGINT, on_follow_signal);
		signal(SIGTERM, on_follow_signal);
	}
	for (;;) {
		struct rk_history_entry *h;
		size_t n;
		if ((r = rk_computer_history(ctx->eng, id, o_session, after, (size_t)o_limit, &h, &n, &ctx->err)))
			break;
		for (size_t i = 0; i < n; i++) {
			after = h[i].id;
			if (arr && opt_json)
				cJSON_AddItemToArray(arr, history_entry_json(&h[i]));
			else if (opt_json)
				out_stream(history_entry_json(&h[i]), NULL);
			else
				history_entry_print(&h[i]);
		}
		rk_history_free(h, n);
		fflush(stdout);
		if (!o_follow || follow_stop || ferror(stdout))
			break;
		if (n < (size_t)o_limit) /* caught up: wait for more */
			for (int t = 0; t < HISTORY_POLL_MS / 50 && !follow_stop; t++)
				rk_sleep_ms(50);
	}
	free(id);
	if (arr && r == 0 && opt_json)
		out_doc(arr);
	else
		cJSON_Delete(arr);
	return r;
}

/* --- files ------------------------------------------------------------------------- */

static const struct rk_opt file_opts[] = {OPT_FILE_BOT, OPT_FENCE, OPT_END};

static int run_file_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 2, "COMPUTER [PATH]");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_file_entry *es;
	size_t n;
	struct rk_team_call call = {0};
	char *where = NULL;
	const char *path = ctx->nargs > 1 ? ctx->args[1] : "";
	if ((r = bot_begin(ctx, &c, path, &call, &where)) == 0)
		r = rk_computer_file_list(ctx->eng, &c, where ? where : path, &es, &n, &ctx->err);
	rk_team_call_end(ctx->eng, &call);
	free(where);
	rk_computer_release(&c);
	if (r)
		return r;
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, rk_file_entry_to_json(&es[i]));
	rk_file_entries_free(es, n);
	static const struct out_col cols[] = {{"type", "TYPE"},
					      {"size", "SIZE"},
					      {"mtime", "MODIFIED"},
					      {"name", "NAME"},
					      {0}};
	out_list(arr, cols);
	return 0;
}

static const struct rk_opt read_opts[] = {
	OPT_STRING("output", 'o', &o_output, "FILE", "write the bytes to FILE (- for stdout)"),
	OPT_INT("max-bytes", 0, &o_max_bytes, "N", "refuse files larger than this (default 16 MiB)", 1,
		RK_FILE_READ_LIMIT),
	OPT_STRING("encoding", 0, &o_encoding, "utf8|base64",
		   "with --json: how content is given (default: utf8 when valid)"),
	OPT_FILE_BOT,
	OPT_FENCE,
	OPT_END,
};

static int run_file_read(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 2, "COMPUTER PATH");
	if (r)
		return r;
	if (o_encoding && strcmp(o_encoding, "utf8") && strcmp(o_encoding, "base64"))
		return rk_error_set(&ctx->err, RK_EUSAGE, "--encoding must be utf8 or base64");
	struct rk_computer c = {0};
	if ((r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_buf data;
	rk_buf_init(&data);
	struct rk_team_call call = {0};
	char *where = NULL;
	if ((r = bot_begin(ctx, &c, ctx->args[1], &call, &where)) == 0)
		r = rk_computer_file_read(ctx->eng, &c, where ? where : ctx->args[1], (size_t)o_max_bytes, &data,
					  &ctx->err);
	rk_team_call_end(ctx->eng, &call);
	free(where);
	rk_computer_release(&c);
	if (r)
		goto out;
	if (o_output && strcmp(o_output, "-")) {
		if ((r = rk_fs_write_atomic(o_output, data.data, data.len, 0644, &ctx->err)))
			goto out;
		if (opt_json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", ctx->args[1]);
			cJSON_AddNumberToObject(o, "size", (double)data.len);
			cJSON_AddStringToObject(o, "written_to", o_output);
			out_doc(o);
		}
	} else if (opt_json) {
		int utf8 = o_encoding ? !strcmp(o_encoding, "utf8") : rk_utf8_valid(data.data, data.len);
		if (utf8 && !rk_utf8_valid(data.data, data.len)) {
			r = rk_error_set(&ctx->err, RK_EINVALID, "%s is not valid UTF-8: use --encoding base64",
					 ctx->args[1]);
			goto out;
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", ctx->args[1]);
		cJSON_AddNumberToObject(o, "size", (double)data.len);
		cJSON_AddStringToObject(o, "encoding", utf8 ? "utf8" : "base64");
		if (utf8) {
			cJSON_AddStringToObject(o, "content", data.data);
		} else {
			size_t n = sodium_base64_encoded_len(data.len, sodium_base64_VARIANT_ORIGINAL);
			char *b = rk_xmalloc(n);
			sodium_bin2base64(b, n, (const unsigned char *)data.data, data.len,
					  sodium_base64_VARIANT_ORIGINAL);
			cJSON_AddStringToObject(o, "content", b);
			free(b);
		}
		out_doc(o);
	} else if (o_output) { /* -o -: the bytes as they are, even to a terminal */
		fwrite(data.data, 1, data.len, stdout);
		fflush(stdout);
	} else { /* a terminal shows the file's control characters escaped */
		size_t n = out_text(stdout, data.data, data.len);
		fflush(stdout);
		if (n)
			out_progress("rakazo: %zu control characters in %s are shown escaped (\\x1b); for the bytes "
				     "as they are, use -o FILE, -o - or a pipe",
				     n, ctx->args[1]);
	}
out:
	rk_buf_release(&data);
	return r;
}

static const struct rk_opt write_opts[] = {
	OPT_BOOL("executable", 'x', &o_executable, "mark the file executable (mode 0700; else 0600)"),
	OPT_BOOL("base64", 0, &o_base64, "the input is base64 text to decode"),
	OPT_FILE_BOT,
	OPT_FENCE,
	OPT_END,
};

static int run_file_write(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 3, "COMPUTER PATH [FILE|-]");
	if (r)
		return r;
	struct rk_buf data;
	rk_buf_init(&data);
	const char *src = ctx->nargs == 3 ? ctx->args[2] : "-";
	if (!strcmp(src, "-"))
		r = read_fd_all(0, RK_FILE_WRITE_LIMIT, &data, &ctx->err);
	else
		r = rk_fs_read_all(src, RK_FILE_WRITE_LIMIT, &data, &ctx->err);
	if (r == 0 && o_base64) {
		unsigned char *bin = rk_xmalloc(data.len + 1);
		size_t n = 0;
		if (sodium_base642bin(bin, data.len + 1, data.data, data.len, " \t\r\n", &n, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0)
			r = rk_error_set(&ctx->err, RK_EINVALID, "the input is not valid base64");
		else {
			rk_buf_reset(&data);
			rk_buf_add(&data, bin, n);
		}
		free(bin);
	}
	struct rk_computer c = {0};
	struct rk_team_call call = {0};
	char *where = NULL;
	if (r == 0 && (r = load_computer(ctx, ctx->args[0], &c)) == 0 &&
	    (r = bot_begin(ctx, &c, ctx->args[1], &call, &where)) == 0)
		r = rk_computer_file_write(ctx->eng, &c, where ? where : ctx->args[1], data.data, data.len,
					   o_executable, &ctx->err);
	rk_team_call_end(ctx->eng, &call);
	if (r == 0 && where && strcmp(where, ctx->args[1]))
		out_progress("wrote %s", where);
	free(where);
	rk_computer_release(&c);
	if (r == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", ctx->args[1]);
		cJSON_AddNumberToObject(o, "size", (double)data.len);
		cJSON_AddBoolToObject(o, "executable", o_executable);
		if (opt_json)
			out_doc(o);
		else
			cJSON_Delete(o);
	}
	rk_buf_release(&data);
	return r;
}

static int run_file_remove(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, 2, "COMPUTER PATH");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	struct rk_team_call call = {0};
	char *where = NULL;
	if ((r = bot_begin(ctx, &c, ctx->args[1], &call, &where)) == 0)
		r = rk_computer_file_remove(ctx->eng, &c, where ? where : ctx->args[1], &ctx->err);
	rk_team_call_end(ctx->eng, &call);
	free(where);
	rk_computer_release(&c);
	if (r == 0 && opt_json)
		out_removed("path", ctx->args[1]);
	return r;
}

static const struct cmd_verb file_verbs[] = {
	{"list", "COMPUTER [PATH]", "list a directory (name, type, size, mtime)", file_opts, run_file_list, NULL},
	{"read", "COMPUTER PATH", "print a file (bytes; --json gives utf8 or base64)", read_opts, run_file_read, NULL},
	{"write", "COMPUTER PATH [FILE|-]", "write a file from FILE or stdin", write_opts, run_file_write, NULL},
	{"remove", "COMPUTER PATH", "remove a file or an empty directory", file_opts, run_file_remove, NULL},
	{0},
};

static const struct rk_opt export_opts[] = {
	OPT_STRING("output", 'o', &o_output, "FILE", "write the tar to FILE (default: stdout)"),
	OPT_END,
};

static int run_export(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r)
		return r;
	struct cmd_sink sink;
	if ((r = cmd_sink_open(ctx, &sink, o_output, "a tar stream")))
		return r;
	struct rk_computer c = {0};
	if ((r = load_computer(ctx, ctx->args[0], &c)) == 0)
		r = rk_computer_export(ctx->eng, &c, sink.fd, &ctx->err);
	rk_computer_release(&c);
	return cmd_sink_close(ctx, &sink, r);
}

static int run_import(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 2, "COMPUTER [FILE|-]");
	if (r)
		return r;
	int fd = 0;
	if (ctx->nargs == 2 && strcmp(ctx->args[1], "-")) {
		fd = open(ctx->args[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return rk_error_errno(&ctx->err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno,
					      "cannot open %s", ctx->args[1]);
	}
	struct rk_computer c = {0};
	if ((r = load_computer(ctx, ctx->args[0], &c)) == 0)
		r = rk_computer_import(ctx->eng, &c, fd, &ctx->err);
	rk_computer_release(&c);
	if (fd > 0)
		close(fd);
	return r;
}

/* --- leases -------------------------------------------------------------------------- */

static const struct rk_opt lease_opts[] = {
	OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot the lease is for"),
	OPT_STRING("holder", 0, &o_holder, "HOLDER", "who holds it (default: you)"),
	OPT_INT("ttl-ms", 0, &o_ttl, "MS", "lease time (default 300000)", 1000, 86400000),
	OPT_INT("fence", 0, &o_fence, "TOKEN", "the fencing token from acquire", 1, INT64_MAX),
	OPT_STRING("what", 0, &o_what, "TEXT", "with write: what the fenced write records"),
	OPT_END,
};

static int lease_prep(struct cmd_ctx *ctx, struct rk_computer *c, int need_fence, const char *capability)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r)
		return r;
	if (!o_bot)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--bot BOT is required");
	if (need_fence && !o_fence)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--fence TOKEN is required");
	return cmd_target(ctx, ctx->args[0], capability, c);
}

static int run_lease_acquire(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = lease_prep(ctx, &c, 0, "computers.acquire");
	if (r)
		return r;
	struct rk_lease l = {0};
	r = rk_lease_acquire(ctx->eng, c.id, o_bot, o_holder ? o_holder : ctx->eng->owner, o_ttl, &l, &ctx->err);
	if (r == 0)
		out_doc(rk_lease_to_json(&l));
	rk_lease_release_record(&l);
	rk_computer_release(&c);
	return r;
}

static int lease_simple(struct cmd_ctx *ctx, const char *op)
{
	struct rk_computer c = {0};
	int r = lease_prep(ctx, &c, 1, "computers.use");
	if (r)
		return r;
	if (!strcmp(op, "renew"))
		r = rk_lease_renew(ctx->eng, c.id, o_bot, o_fence, o_ttl, &ctx->err);
	else if (!strcmp(op, "release"))
		r = rk_lease_release(ctx->eng, c.id, o_bot, o_fence, &ctx->err);
	else
		r = rk_lease_fenced_write(ctx->eng, c.id, o_bot, o_fence, o_what ? o_what : "write", &ctx->err);
	if (r == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "computer_id", c.id);
		cJSON_AddStringToObject(o, "bot_id", o_bot);
		cJSON_AddNumberToObject(o, "fence", (double)o_fence);
		cJSON_AddStringToObject(o, "done", op);
		out_doc(o);
	}
	rk_computer_release(&c);
	return r;
}

static int run_lease_renew(struct cmd_ctx *ctx)
{
	return lease_simple(ctx, "renew");
}
static int run_lease_release(struct cmd_ctx *ctx)
{
	return lease_simple(ctx, "release");
}
static int run_lease_write(struct cmd_ctx *ctx)
{
	return lease_simple(ctx, "write");
}

static int run_lease_show(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = lease_prep(ctx, &c, 0, "computers.use");
	if (r)
		return r;
	struct rk_lease l = {0};
	r = rk_computer_lease(ctx->eng, c.id, o_bot, &l, &ctx->err);
	if (r == 0)
		out_doc(rk_lease_to_json(&l));
	rk_lease_release_record(&l);
	rk_computer_release(&c);
	return r;
}

static const struct cmd_verb lease_verbs[] = {
	{"acquire", "COMPUTER --bot BOT", "take the bot's execution lease (prints the fencing token)", lease_opts,
	 run_lease_acquire, NULL},
	{"renew", "COMPUTER --bot BOT --fence TOKEN", "extend a live lease", lease_opts, run_lease_renew, NULL},
	{"release", "COMPUTER --bot BOT --fence TOKEN", "give a lease back", lease_opts, run_lease_release, NULL},
	{"write", "COMPUTER --bot BOT --fence TOKEN", "a write guarded by the token (refused when stale)", lease_opts,
	 run_lease_write, NULL},
	{"show", "COMPUTER --bot BOT", "show the lease and its current token", lease_opts, run_lease_show, NULL},
	{0},
};

/* --- image ------------------------------------------------------------------------------ */

static char *find_image_script(void)
{
	const char *dir = getenv("RAKAZO_IMAGE_DIR");
	if (dir && *dir)
		return rk_xasprintf("%s/build.sh", dir);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			const char *rel[] = {"../share/rakazo/image/build.sh", "../image/build.sh", "image/build.sh"};
			for (size_t i = 0; i < 3; i++) {
				char *p = rk_xasprintf("%s/%s", self, rel[i]);
				if (access(p, R_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	return NULL;
}

static int run_image_build(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r)
		return r;
	char *script = find_image_script();
	if (!script)
		return rk_error_set(&ctx->err, RK_ENOTFOUND,
				    "cannot find the image recipe (image/build.sh); set RAKAZO_IMAGE_DIR");
	int64_t t0 = rk_monotonic_ms();
	pid_t pid = fork();
	if (pid == 0) {
		if (opt_json) /* keep stdout for the one JSON document */
			dup2(2, 1);
		execl("/bin/sh", "sh", script, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(script);
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		return rk_error_set(&ctx->err, code == 5 ? RK_EUNAVAILABLE : RK_EFAILED,
				    "the image build failed (see above)");
	}
	if (opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "image", RK_IMAGE_TAG);
		cJSON_AddNumberToObject(o, "seconds", (double)(rk_monotonic_ms() - t0) / 1000.0);
		out_doc(o);
	}
	return 0;
}

static int run_image_tag(struct cmd_ctx *ctx)
{
	(void)ctx;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "image", getenv("RAKAZO_IMAGE") ? getenv("RAKAZO_IMAGE") : RK_IMAGE_TAG);
	if (opt_json)
		out_doc(o);
	else {
		puts(cJSON_GetObjectItem(o, "image")->valuestring);
		cJSON_Delete(o);
	}
	return 0;
}

static const struct cmd_verb image_verbs[] = {
	{"build", "", "build the computer image from Debian packages (reused when its recipe is built)", no_opts,
	 run_image_build, NULL},
	{"tag", "", "print the image tag this rakazo uses", no_opts, run_image_tag, NULL},
	{0},
};

/* --- rights (engine/access/authz.h) --------------------------------------------------------------- */

static const struct rk_opt grant_opts[] = {
	OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot"),
	OPT_END,
};

/* grant|revoke COMPUTER --bot BOT */
static int grant_or_revoke(struct cmd_ctx *ctx, int grant)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r)
		return r;
	if (!o_bot)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--bot BOT is required");
	struct rk_computer c = {0};
	struct rk_actor a;
	if ((r = find_computer(ctx, ctx->args[0], &c)))
		return r;
	if ((r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)) == 0) {
		r = grant ? rk_authz_grant(ctx->eng, &a, &c, o_bot, &ctx->err)
			  : rk_authz_revoke(ctx->eng, &a, &c, o_bot, &ctx->err);
		rk_actor_release(&a);
	}
	if (r == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "computer_id", c.id);
		cJSON_AddStringToObject(o, "computer", c.name);
		cJSON_AddStringToObject(o, "bot", o_bot);
		cJSON_AddBoolToObject(o, "granted", grant);
		out_doc(o);
	}
	rk_computer_release(&c);
	return r;
}

static int run_grant(struct cmd_ctx *ctx)
{
	return grant_or_revoke(ctx, 1);
}
static int run_revoke(struct cmd_ctx *ctx)
{
	return grant_or_revoke(ctx, 0);
}

static int run_rights(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	cJSON *arr;
	if ((r = rk_authz_rights(ctx->eng, &c, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"bot", "BOT"},
						      {"granted_by", "GRANTED BY"},
						      {"created_at", "SINCE"},
						      {0}};
		out_list(arr, cols);
	}
	rk_computer_release(&c);
	return r;
}

/* --- the table ----------------------------------------------------------------------------- */

/* --- reservations: update and recovery jobs ---------------------------------------------- */

static const struct rk_opt job_opts[] = {
	OPT_STRING("kind", 0, &o_kind, "update|recovery", "what the job is (default update)"),
	OPT_END,
};

/* An update or recovery job: holds the computer's reservation while COMMAND
 * runs in it (a session), storing its phases and heartbeating. */
static int run_job(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 2, -1, "COMPUTER -- COMMAND...");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	const char *kind = o_kind ? o_kind : "update";
	struct rk_buf cmd;
	rk_buf_init(&cmd);
	for (int i = 1; i < ctx->nargs; i++)
		rk_buf_printf(&cmd, "%s%s", i > 1 ? " " : "", ctx->args[i]);
	struct rk_session_reply rep = {0};
	struct rk_buf output;
	rk_buf_init(&output);
	if ((r = rk_reservation_begin(ctx->eng, &c, kind, &ctx->err)))
		goto out;
	if (rk_reservation_kind_of(kind) == RK_RESERVATION_UPDATE) {
		/* the workspace as it was, in case the update goes wrong */
		if ((r = rk_reservation_phase(ctx->eng, c.id, "checkpoint", &ctx->err)) ||
		    (r = rk_checkpoint_create(ctx->eng, &c, "update", 1, NULL, &ctx->err)))
			goto end;
	}
	if ((r = rk_reservation_phase(ctx->eng, c.id, "running", &ctx->err)))
		goto end;
	/* a short first wait, so the session is on record at once */
	struct rk_session_request req = {.command = cmd.data,
					 .yield_ms = RK_SESSION_YIELD_MIN_MS,
					 .max_output = 1 << 20};
	if ((r = rk_session_start(ctx->eng, &c, &req, &rep, &ctx->err)))
		goto end;
	rk_buf_add(&output, rep.output, rep.output_len);
	if (rep.session && (r = rk_reservation_operation(ctx->eng, c.id, rep.session, &ctx->err)))
		goto end;
	while (rep.running) {
		char *sid = rk_xstrdup(rep.session);
		rk_session_reply_release(&rep);
		if ((r = rk_reservation_heartbeat(ctx->eng, c.id, &ctx->err)) ||
		    (r = rk_session_input(ctx->eng, c.id, sid, "", 0, 1000, 1 << 20, &rep, &ctx->err))) {
			free(sid);
			goto end;
		}
		free(sid);
		rk_buf_add(&output, rep.output, rep.output_len);
	}
	if ((r = rk_reservation_phase(ctx->eng, c.id, "done", &ctx->err)))
		goto end;
end:
	if (r == 0 || ctx->err.code != RK_ESTALE) {
		struct rk_error e2;
		if (rk_reservation_end(ctx->eng, c.id, &e2) != 0 && r == 0)
			r = rk_error_set(&ctx->err, e2.code, "%s", e2.message);
	}
	if (r == 0) {
		if (opt_json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "computer", c.name);
			cJSON_AddStringToObject(o, "kind", kind);
			cJSON_AddNumberToObject(o, "exit_code", rep.exited ? rep.exit_code : -1);
			rk_buf_add(&output, "", 1);
			cJSON_AddStringToObject(o, "output", output.data);
			out_doc(o);
		} else {
			fwrite(output.data, 1, output.len, stdout);
			fflush(stdout);
		}
		if (!rep.exited || rep.exit_code != 0)
			r = rk_error_set(&ctx->err, RK_EFAILED, "the %s command %s", kind,
					 rep.lost ? "was lost with the machine" : "did not exit with status 0");
	}
out:
	rk_session_reply_release(&rep);
	rk_buf_release(&output);
	rk_buf_release(&cmd);
	rk_computer_release(&c);
	return r;
}

static int run_release(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	struct rk_computer c = {0};
	if (r || (r = load_computer(ctx, ctx->args[0], &c)))
		return r;
	r = rk_reservation_release(ctx->eng, &c, &ctx->err);
	if (r == 0 && opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "computer", c.name);
		cJSON_AddBoolToObject(o, "released", 1);
		out_doc(o);
	}
	rk_computer_release(&c);
	return r;
}

static const struct cmd_verb computer_verbs[] = {
	{"create", "--name NAME [--provider P]", "create a computer (a saved command)", create_opts, run_create, NULL},
	{"list", "", "list computers", no_opts, run_list, NULL},
	{"show", "COMPUTER", "show a computer", no_opts, run_show, NULL},
	{"pause", "COMPUTER", "pause a computer (a saved command)", lifecycle_opts, run_pause, NULL},
	{"resume", "COMPUTER", "resume a paused or stopped computer (a saved command)", lifecycle_opts, run_resume,
	 NULL},
	{"stop", "COMPUTER", "stop a computer, keeping its workspace (a saved command)", lifecycle_opts, run_stop,
	 NULL},
	{"delete", "COMPUTER", "delete a computer, its machine and its files (a saved command)", lifecycle_opts,
	 run_delete, NULL},
	{"execution", "VERB ...", "lifecycle commands: show, list, events, cancel, decide", NULL, NULL,
	 execution_verbs},
	{"exec", "COMPUTER [options] -- COMMAND...", "run a command with bash -lc in a session", exec_opts, run_exec,
	 NULL},
	{"input", "COMPUTER SESSION [CHARS]", "send stdin (C escapes: \\n, \\x03 Ctrl-C, \\x04 Ctrl-D) and read output",
	 input_opts, run_input, NULL},
	{"resize", "COMPUTER SESSION --rows R --cols C", "resize a session's terminal", resize_opts, run_resize, NULL},
	{"kill", "COMPUTER SESSION", "stop a session's command and give its last output", kill_opts, run_kill, NULL},
	{"sessions", "COMPUTER", "list shell sessions", no_opts, run_sessions, NULL},
	{"history", "COMPUTER", "the terminal history: commands, input, output, exits", history_opts, run_history,
	 NULL},
	{"file", "VERB ...", "files: list, read, write, remove", NULL, NULL, file_verbs},
	{"export", "COMPUTER [-o FILE]", "the whole workspace as a tar stream", export_opts, run_export, NULL},
	{"import", "COMPUTER [FILE|-]", "unpack a tar stream into the workspace", no_opts, run_import, NULL},
	{"lease", "VERB ...", "fenced execution leases: acquire, renew, release, write, show", NULL, NULL, lease_verbs},
	{"job", "COMPUTER [--kind update|recovery] -- COMMAND...",
	 "run an update or recovery job: it reserves the computer while COMMAND runs", job_opts, run_job, NULL},
	{"release", "COMPUTER", "free the reservation of a job that stopped (its owner only)", no_opts, run_release,
	 NULL},
	{"image", "VERB ...", "the computer image: build, tag", NULL, NULL, image_verbs},
	{"providers", "", "list providers and their capabilities", no_opts, run_providers, NULL},
	{"grant", "COMPUTER --bot BOT", "let a bot use a computer", grant_opts, run_grant, NULL},
	{"revoke", "COMPUTER --bot BOT", "take a bot's right away (its next action is refused)", grant_opts, run_revoke,
	 NULL},
	{"rights", "COMPUTER", "list the bots that may use a computer", no_opts, run_rights, NULL},
	{0},
};

const struct cmd_entry cmd_computer = {
	.name = "computer",
	.args = "VERB [ARGS...]",
	.summary = "computers: lifecycle, shell sessions, files and workspaces",
	.description = "create, pause, resume, stop and delete are saved commands: each returns an execution\n"
		       "receipt at once (--wait blocks until it ends), the same --command-key and body give\n"
		       "the same execution, and only one runs per computer at a time.",
	.verbs = computer_verbs,
};
