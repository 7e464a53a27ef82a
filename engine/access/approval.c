/* Approval rules, the judge and the wait for a person (see approval.h). */

#include "engine/access/approval.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/access/secret.h"
#include "engine/state/db_access.h"
#include "engine/state/db_runs.h"
#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_approval_state, RK_APPROVAL_STATE, RK_APPROVAL_STATES)

#define SHARED_USER RK_APPROVAL_SHARED_USER
#define POLL_MS 200
#define HEARTBEAT_MS 5000

static const struct {
	const char *tool, *connector, *category;
	int exempt;
} tools[] = {
	{"computer_observe", "computer", "read", 0},
	{"computer_act", "computer", "act", 1},
	/* a vendor's native computer tool (engine/agent/computer_tool.h): an act */
	{"computer", "computer", "act", 1},
	{"browser_act", "browser", "act", 1},
	{"shell", "computer", "shell", 1},
	{"write_stdin", "computer", "shell", 1},
	{"read_file", "computer", "read", 0},
	{"write_file", "computer", "write", 0},
	{"list_files", "computer", "read", 0},
	{"request_secret", "secrets", "read", 0},
	{"secret_request", "http", "network", 0},
	{"memory_read", "memory", "read", 0},
	{"memory_search", "memory", "read", 0},
	{"memory_write", "memory", "write", 0},
	{"create_space", "spaces", "write", 0},
	/* capabilities (engine/access/authz.h): tool and connector rules only */
	{"computers.use", "computers", NULL, 0},
	{"computers.acquire", "computers", NULL, 0},
	{"computers.create", "computers", NULL, 0},
	{"computers.delete", "computers", NULL, 0},
	{"computers.expose", "computers", NULL, 0},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static int tool_index(const char *tool)
{
	for (size_t i = 0; tool && i < NTOOLS; i++)
		if (!strcmp(tools[i].tool, tool))
			return (int)i;
	return -1;
}

const char *rk_approval_category(const char *tool)
{
	int i = tool_index(tool);
	return i < 0 ? NULL : tools[i].category;
}

const char *rk_approval_connector(const char *tool)
{
	int i = tool_index(tool);
	return i < 0 ? NULL : tools[i].connector;
}

int rk_approval_exempt(const char *tool)
{
	int i = tool_index(tool);
	return i >= 0 && tools[i].exempt;
}

/* Changes data or acts outside: what the judge looks at. */
static int changes_data(const char *tool)
{
	const char *c = rk_approval_category(tool);
	return c && (!strcmp(c, "write") || !strcmp(c, "shell") || !strcmp(c, "act") || !strcmp(c, "network"));
}

/* --- rules ---------------------------------------------------------------------------- */

static int value_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.' || *s == ':'))
			return 0;
	return 1;
}

int rk_approval_rule_add(struct rk_engine *eng, const struct rk_actor *a, const char *effect, const char *match,
			 const char *value, int shared, char **id, struct rk_error *err)
{
	*id = NULL;
	if (!effect || (strcmp(effect, "allow") != 0 && strcmp(effect, "require_approval") != 0))
		return rk_error_set(err, RK_EUSAGE, "--effect is allow or require_approval, not '%s'",
				    effect ? effect : "");
	if (!match || (strcmp(match, "tool") != 0 && strcmp(match, "connector") != 0 && strcmp(match, "category") != 0))
		return rk_error_set(err, RK_EUSAGE, "--match is tool, connector or category, not '%s'",
				    match ? match : "");
	if (!value_ok(value))
		return rk_error_set(err, RK_EUSAGE, "--value '%s' is not valid: 1 to 128 letters, digits and _ - . :",
				    value ? value : "");
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot set approval rules");
	char *nid = rk_id_new("apr");
	struct rk_approval_rule_row row = {.id = nid,
					   .space_id = a->space,
					   .user_id = shared ? SHARED_USER : a->user,
					   .effect = effect,
					   .match = match,
					   .value = value,
					   .created_at = rk_now_ms()};
	int r = rk_db_approval_rule_insert(eng->db, &row, err);
	if (r == -RK_ECONFLICT)
		r = rk_error_set(err, RK_ECONFLICT, "that rule exists already (%s %s=%s)", effect, match, value);
	if (r) {
		free(nid);
		return r;
	}
	*id = nid;
	return 0;
}

int rk_approval_rule_list(struct rk_engine *eng, const struct rk_actor *a, cJSON **out, struct rk_error *err)
{
	return rk_db_approval_rule_list(eng->db, a->space, a->user, out, err);
}

int rk_approval_rule_remove(struct rk_engine *eng, const struct rk_actor *a, const char *id, struct rk_error *err)
{
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot remove approval rules");
	int r = rk_db_approval_rule_delete(eng->db, id, a->space, a->user, err);
	if (r == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "no rule '%s' of %s in space '%s'", id ? id : "", a->user,
				 a->space);
	return r < 0 ? r : 0;
}

/* --- the decision ------------------------------------------------------------------------- */

/* The rules of one level that match: *found set when any did, *ask when
 * one of them requires approval. */
static int level(struct rk_engine *eng, const struct rk_actor *a, const char *match, const char *value, int *found,
		 int *ask, char *rule_id, size_t idsize, struct rk_error *err)
{
	*found = *ask = 0;
	if (!value)
		return 0;
	char *id = NULL, *effect = NULL;
	int r = rk_db_approval_rule_find(eng->db, a->space, a->user, match, value, &id, &effect, err);
	if (r == 1) {
		*found = 1;
		*ask = !strcmp(effect, "require_approval");
		snprintf(rule_id, idsize, "%s", id);
		r = 0;
	}
	free(id);
	free(effect);
	return r;
}

/* The judge the agent wing registered (NULL: none in this process). */
static _Atomic(rk_approval_judge_fn) the_judge;

void rk_approval_set_judge(rk_approval_judge_fn fn)
{
	atomic_store(&the_judge, fn);
}

/* The judge's verdict: 0 allow, 1 ask (also when none is registered, with why in reason). */
static int judge(struct rk_engine *eng, const char *tool, const char *args_json, char *reason, size_t size)
{
	rk_approval_judge_fn fn = atomic_load(&the_judge);
	if (!fn) {
		snprintf(reason, size, "judge: none in this process: asking a person");
		return 1;
	}
	return fn(eng->data_dir, tool, args_json, reason, size);
}

/* Tools no rule can let through without a person. */
static int always_asks(const char *tool)
{
	return tool && !strcmp(tool, "create_space");
}

int rk_approval_evaluate(struct rk_engine *eng, const struct rk_actor *a, const char *tool, const char *args_json,
			 unsigned flags, struct rk_approval_decision *d, struct rk_error *err)
{
	memset(d, 0, sizeof(*d));
	if (flags & RK_APPROVAL_FLAGGED) {
		d->ask = 1;
		snprintf(d->source, sizeof(d->source), "vendor");
		snprintf(d->reason, sizeof(d->reason),
			 "the model's vendor flagged this %s call with a safety check (see its arguments)", tool);
		return 0;
	}
	if (always_asks(tool)) {
		d->ask = 1;
		snprintf(d->source, sizeof(d->source), "policy");
		snprintf(d->reason, sizeof(d->reason), "%s always needs a person's approval", tool);
		return 0;
	}
	int strict = (flags & RK_APPROVAL_WEBHOOK) && changes_data(tool);
	const struct {
		const char *match, *value;
	} levels[] = {
		{"tool", tool},
		{"connector", rk_approval_connector(tool)},
		{"category", rk_approval_exempt(tool) ? NULL : rk_approval_category(tool)},
	};
	for (size_t i = 0; i < 3; i++) {
		int found, ask;
		char id[64] = "";
		int r = level(eng, a, levels[i].match, levels[i].value, &found, &ask, id, sizeof(id), err);
		if (r)
			return r;
		if (found && strict && !ask && i > 0)
			break; /* a webhook's run: only a tool rule allows a changing call */
		if (found) {
			d->ask = ask;
			snprintf(d->source, sizeof(d->source), "rule");
			snprintf(d->reason, sizeof(d->reason), "rule %s: %s %s=%s", id,
				 ask ? "require_approval" : "allow", levels[i].match, levels[i].value);
			return 0;
		}
	}
	if (strict) {
		d->ask = 1;
		snprintf(d->source, sizeof(d->source), "webhook");
		snprintf(d->reason, sizeof(d->reason),
			 "a run started by a webhook needs approval for %s (it changes data or acts outside); a tool "
			 "rule can allow it",
			 tool);
		return 0;
	}
	const char *jm = getenv("RAKAZO_JUDGE_MODEL");
	if ((flags & RK_APPROVAL_JUDGE) && jm && *jm && changes_data(tool)) {
		d->ask = judge(eng, tool, args_json, d->reason, sizeof(d->reason));
		snprintf(d->source, sizeof(d->source), "judge");
		rk_log(RK_LOG_INFO, "approval: %s: %s", tool, d->reason);
		return 0;
	}
	snprintf(d->source, sizeof(d->source), "default");
	snprintf(d->reason, sizeof(d->reason), "no rule matched");
	return 0;
}

/* --- waiting for a person ------------------------------------------------------------------- */

static int set_run_state(struct rk_engine *eng, const char *run_id, const char *from, const char *to,
			 struct rk_error *err)
{
	return rk_db_run_swap_state(eng->db, run_id, from, to, err);
}

static int approval_state(struct rk_engine *eng, const char *id, char *state, size_t ssize, char **note, char **by,
			  struct rk_error *err)
{
	struct rk_approval_decided s;
	int r = rk_db_approval_get(eng->db, id, &s, err);
	if (r == 0) {
		snprintf(state, ssize, "%s", s.state ? s.state : "");
		*note = s.note;
		*by = s.decided_by;
		free(s.state);
	}
	return r;
}

/* rk_approval_check with the arguments redacted. */
static int approval_wait(struct rk_engine *eng, const struct rk_actor *a, const char *run_id,
			 volatile sig_atomic_t *cancel, const char *tool, const char *args_json, unsigned flags,
			 struct rk_approval_decision *d, struct rk_error *err)
{
	int r = rk_approval_evaluate(eng, a, tool, args_json, flags | RK_APPROVAL_JUDGE, d, err);
	if (r || !d->ask)
		return r;
	if (!run_id)
		return rk_error_set(err, RK_EDENIED, "%s needs approval (%s), and no run is waiting for a person", tool,
				    d->reason);
	char *id = rk_id_new("apv");
	struct rk_approval_row row = {.id = id,
				      .run_id = run_id,
				      .tool = tool,
				      .arguments = args_json,
				      .reason = d->reason,
				      .user_id = a->user,
				      .created_at = rk_now_ms()};
	/* the row and the run's state together: whoever sees one sees the other */
	if ((r = rk_db_begin(eng->db, err))) {
		free(id);
		return r;
	}
	if ((r = rk_db_approval_insert(eng->db, &row, err)) ||
	    (r = set_run_state(eng, run_id, "running", "waiting_approval", err)) || (r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		free(id);
		return r;
	}
	rk_log(RK_LOG_INFO, "run %s: %s waits for approval %s (%s)", run_id, tool, id, d->reason);
	char state[16] = "pending";
	char *note = NULL, *by = NULL;
	int64_t beat = rk_monotonic_ms();
	for (;;) {
		free(note);
		free(by);
		note = by = NULL;
		if ((r = approval_state(eng, id, state, sizeof(state), &note, &by, err)))
			break;
		if (rk_approval_state_of(state) != RK_APPROVAL_PENDING)
			break;
		if (cancel && *cancel) {
			r = rk_error_set(err, RK_EINTERRUPTED, "interrupted while %s waited for approval", tool);
			break;
		}
		if (rk_monotonic_ms() - beat >= HEARTBEAT_MS) {
			struct rk_error e2;
			rk_db_run_heartbeat(eng->db, run_id, &e2);
			beat = rk_monotonic_ms();
		}
		rk_sleep_ms(POLL_MS);
	}
	struct rk_error e3;
	set_run_state(eng, run_id, "waiting_approval", "running", &e3);
	if (r == 0 && rk_approval_state_of(state) == RK_APPROVAL_DENIED)
		r = rk_error_set(err, RK_EDENIED, "%s denied %s%s%s", by ? by : "a person", tool, note ? ": " : "",
				 note ? note : "");
	if (r == 0) {
		snprintf(d->source, sizeof(d->source), "person");
		snprintf(d->reason, sizeof(d->reason), "approved by %s%s%.180s", by ? by : "a person", note ? ": " : "",
			 note ? note : "");
	}
	free(note);
	free(by);
	free(id);
	return r;
}

int rk_approval_check(struct rk_engine *eng, const struct rk_actor *a, const char *run_id,
		      volatile sig_atomic_t *cancel, const char *tool, const char *args_json, unsigned flags,
		      struct rk_approval_decision *d, struct rk_error *err)
{
	/* the arguments as the judge and a person see them, and as the
	 * approval keeps them: without the user's secrets (engine/access/secret.h),
	 * which a model may have put there */
	struct rk_secret_redactor *red = rk_secret_redactor_new(eng, a);
	char *shown = rk_secret_redactor_text(red, args_json && *args_json ? args_json : "{}");
	rk_secret_redactor_free(red);
	int r = approval_wait(eng, a, run_id, cancel, tool, shown, flags, d, err);
	free(shown);
	return r;
}

int rk_approval_decide(struct rk_engine *eng, const struct rk_actor *a, const char *run_id, int approve,
		       const char *note, struct rk_error *err)
{
	if (note && strlen(note) > 2000)
		return rk_error_set(err, RK_EINVALID, "--note exceeds 2000 characters");
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "bot '%s' cannot decide approvals: a person does", a->bot);
	/* only the person whose run it is decides */
	char *owner = NULL;
	int r = rk_db_approval_pending_user(eng->db, run_id, &owner, err);
	if (r)
		return r;
	if (owner && strcmp(owner, a->user) != 0) {
		r = rk_error_set(err, RK_EDENIED, "run %s is %s's: only they can approve or deny its calls", run_id,
				 owner);
		free(owner);
		return r;
	}
	free(owner);
	char *by = rk_xasprintf("user:%s", a->user);
	r = rk_db_approval_decide(eng->db, run_id, approve ? "approved" : "denied", note, by, rk_now_ms(), err);
	free(by);
	if (r == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "run %s has no call waiting for approval", run_id);
	return r < 0 ? r : 0;
}

int rk_approval_pending(struct rk_engine *eng, const char *run_id, cJSON **out, struct rk_error *err)
{
	return rk_db_approval_pending(eng->db, run_id, out, err);
}
