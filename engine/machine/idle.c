#include "engine/machine/idle.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/machine/checkpoint.h"
#include "engine/machine/execution.h"
#include "engine/util/host.h"
#include "engine/machine/reservation.h"
#include "engine/machine/hook.h"
#include "engine/state/db_idle.h"
#include "engine/state/db_runs.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

static int64_t env_ms(const char *name, int64_t def)
{
	const char *v = getenv(name);
	long long n = v && *v ? atoll(v) : 0;
	return n > 0 ? n : def;
}

int64_t rk_idle_scan_interval_ms(void)
{
	return env_ms("RAKAZO_IDLE_SCAN_MS", 1000);
}

int64_t rk_idle_session_ms(void)
{
	return env_ms("RAKAZO_SESSION_IDLE_MS", 30LL * 60 * 1000);
}

static void set_active(struct rk_db *db, const char *computer_id, int64_t at, int64_t due)
{
	rk_db_idle_schedule_put(db, computer_id, at, due, rk_now_ms(), NULL);
}

void rk_idle_touch(struct rk_engine *eng, const char *computer_id)
{
	/* at most once a second per process and computer: a screen loop
	 * touches on every frame, and idleness is counted in seconds */
	static char last_id[64];
	static int64_t last_ms;
	int64_t now = rk_now_ms();
	if (!eng || !eng->db || !computer_id)
		return;
	if (now - last_ms < 1000 && !strcmp(last_id, computer_id))
		return;
	set_active(eng->db, computer_id, now, 0);
	snprintf(last_id, sizeof(last_id), "%s", computer_id);
	last_ms = now;
}

/* What keeps c busy, or NULL. */
static char *busy_reason(struct rk_engine *eng, const struct rk_computer *c)
{
	int64_t now = rk_now_ms();
	struct rk_error e;
	if (rk_reservation_check(eng->db, c->id, &e) != 0)
		return rk_xstrdup(e.message);
	char *why = rk_db_idle_busy_reason(eng->db, c->id, now);
	if (why)
		return why;
	/* a session counts while its holder process lives; a holder on another
	 * host, whose pid means nothing here, while it could still be alive:
	 * a holder ends its session after the session idle limit without a call */
	struct rk_idle_session *ss;
	size_t n;
	if (rk_db_idle_sessions(eng->db, c->id, &ss, &n, NULL) != 0)
		return NULL;
	for (size_t i = 0; !why && i < n; i++) {
		int alive = rk_host_pid_alive(ss[i].holder_host, ss[i].holder_pid);
		if (alive < 0)
			alive = now - ss[i].last_used_at < rk_idle_session_ms();
		if (alive > 0)
			why = rk_xasprintf("session %s is running", ss[i].id);
	}
	rk_idle_sessions_free(ss, n);
	return why;
}

int rk_idle_busy(struct rk_engine *eng, const struct rk_computer *c, char **why)
{
	char *w = busy_reason(eng, c);
	if (why)
		*why = w;
	else
		free(w);
	return w != NULL;
}

/* The latest sign of use of c: our stamps, its own updates, its sessions and runs. */
static int64_t last_active(struct rk_engine *eng, const struct rk_computer *c)
{
	int64_t last = c->updated_at, seen = rk_db_idle_last_active(eng->db, c->id);
	return seen > last ? seen : last;
}

static void drop_schedule(struct rk_db *db, const char *computer_id)
{
	rk_db_idle_schedule_drop(db, computer_id, NULL);
}

/* Submits the saved pause of an idle computer; the key makes it once per idle period. */
static void suspend(struct rk_engine *eng, const struct rk_computer *c, int64_t due)
{
	char *key = rk_xasprintf("idle:%s:%lld", c->id, (long long)due);
	cJSON *body = cJSON_CreateObject();
	/* one scope for every scanner, whoever runs it: the key dedupes between them */
	struct rk_submit req = {.op = "pause", .computer = c->id, .body = body, .command_key = key, .key_scope = "idle"};
	struct rk_execution e = {0};
	struct rk_error err;
	int existed = 0;
	if (rk_execution_submit(eng, &req, &e, &existed, &err) == 0) {
		if (!existed)
			rk_log(RK_LOG_INFO, "idle: computer %s idle since %lld: pausing it (%s)", c->id, (long long)due,
			       e.id);
		rk_execution_release(&e);
	} else {
		rk_log(RK_LOG_WARN, "idle: cannot pause computer %s: %s", c->id, err.message);
	}
	cJSON_Delete(body);
	free(key);
}

int rk_idle_scan(struct rk_engine *eng, int *pending, struct rk_error *err)
{
	if (pending)
		*pending = 0;
	int r = rk_reservation_scan(eng, err);
	if (r)
		return r;
	struct rk_computer *cs;
	size_t n;
	if ((r = rk_db_computer_list(eng->db, &cs, &n, err)))
		return r;
	int64_t second = env_ms("RAKAZO_IDLE_SECOND_MS", 1000), now = rk_now_ms();
	for (size_t i = 0; i < n; i++) {
		struct rk_computer *c = &cs[i];
		struct rk_error e;
		if (rk_idle_flush_deferred(eng, c, &e) < 0)
			rk_log(RK_LOG_WARN, "idle: deferred checkpoint of %s: %s", c->id, e.message);
		/* a stopped machine took its displays with it */
		enum rk_computer_state state = rk_computer_state_of(c->state);
		if (state == RK_COMPUTER_STOPPED || state == RK_COMPUTER_FAILED)
			RK_HOOK(computer_down, NULL, eng, c->id, NULL);
		if (state != RK_COMPUTER_RUNNING || c->pause_after < 0) {
			drop_schedule(eng->db, c->id);
			continue;
		}
		if (rk_idle_busy(eng, c, NULL)) {
			set_active(eng->db, c->id, now, now + c->pause_after * second);
			if (pending)
				(*pending)++;
			continue;
		}
		int64_t due = last_active(eng, c) + c->pause_after * second;
		set_active(eng->db, c->id, 0, due);
		if (now >= due)
			suspend(eng, c, due);
		else if (pending)
			(*pending)++;
	}
	for (size_t i = 0; i < n; i++)
		rk_computer_release(&cs[i]);
	free(cs);
	return 0;
}

cJSON *rk_idle_to_json(struct rk_engine *eng, const struct rk_computer *c)
{
	int64_t last_active_at, due_at;
	if (!rk_db_idle_schedule_get(eng->db, c->id, &last_active_at, &due_at))
		return NULL;
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "last_active_at", rk_iso8601(last_active_at, buf, sizeof(buf)));
	if (due_at < 0)
		cJSON_AddNullToObject(o, "due_at");
	else
		cJSON_AddStringToObject(o, "due_at", rk_iso8601(due_at, buf, sizeof(buf)));
	char *why = NULL;
	cJSON_AddBoolToObject(o, "busy", rk_idle_busy(eng, c, &why));
	rk_json_add_str_or_null(o, "why", why);
	free(why);
	return o;
}

/* --- deferred Team checkpoints --------------------------------------------------------------- */

/* What blocks a Team checkpoint asked for by bot: another bot's live lease
 * or any person's control. malloc'd, or NULL. */
static char *blocker(struct rk_engine *eng, const struct rk_computer *c, const char *bot)
{
	return rk_db_deferred_blocker(eng->db, c->id, bot, rk_now_ms());
}

static int drop_deferred(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	return rk_db_deferred_drop(db, computer_id, err);
}

/* A Private computer's browsers are closed cleanly first (and display 0's
 * started again), so the checkpoint holds their cookies and profile
 * databases. A Team computer's follow the deferral rules instead: its
 * other bots' browsers may be at work on other screens, so they are never
 * closed under them. */
int rk_idle_checkpoint(struct rk_engine *eng, const struct rk_computer *c, const char *bot, const char *reason,
		       struct rk_error *err)
{
	int team = rk_computer_mode_of(c->mode) == RK_COMPUTER_TEAM;
	char *why = team ? blocker(eng, c, bot) : NULL;
	if (why) {
		int r = rk_db_deferred_put(eng->db, c->id, reason, why, rk_now_ms(), err);
		if (r == 0)
			rk_log(RK_LOG_INFO, "checkpoint of %s (%s) deferred: %s is live", c->id, reason, why);
		free(why);
		return r ? r : 1;
	}
	int r = rk_checkpoint_create(eng, c, reason, team ? RK_QUIESCE_NONE : RK_QUIESCE, NULL, err);
	if (r == 0)
		drop_deferred(eng->db, c->id, NULL);
	return r;
}

int rk_idle_run_end(struct rk_engine *eng, const char *computer_id, const char *run_id, int failed,
		    struct rk_error *err)
{
	struct rk_computer c = {0};
	int r = rk_db_computer_get(eng->db, computer_id, &c, err);
	if (r)
		return failed ? 0 : r;
	char *reason = run_id ? rk_xasprintf("%s:%s", failed ? "run-failed" : "run", run_id)
			      : rk_xstrdup(failed ? "run-failed" : "run");
	struct rk_error e2;
	/* on a Team computer, deferred while another bot or a person is at work (issue 6) */
	struct rk_run_row run = {0};
	const char *bot = NULL;
	if (run_id && rk_db_run_get(eng->db, run_id, &run, NULL) == 0)
		bot = run.bot_id;
	r = rk_idle_checkpoint(eng, &c, bot, reason, failed ? &e2 : err);
	rk_run_row_release(&run);
	if (r > 0)
		r = 0; /* deferred: made when the last lease or control ends */
	if (r && failed) {
		rk_log(RK_LOG_WARN, "checkpoint after failed run %s: %s", run_id ? run_id : "", e2.message);
		r = 0;
	}
	free(reason);
	rk_computer_release(&c);
	return r;
}

int rk_idle_flush_deferred(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_deferred_row d;
	int r = rk_db_deferred_get(eng->db, c->id, &d, err);
	if (r <= 0)
		return r;
	const char *reason = d.reason;
	r = 0;
	char *why = blocker(eng, c, NULL);
	if (!why && rk_computer_state_of(c->state) == RK_COMPUTER_RUNNING) {
		r = rk_checkpoint_create(eng, c, reason, RK_QUIESCE_NONE, NULL, err);
		if (r == 0) {
			drop_deferred(eng->db, c->id, NULL);
			rk_log(RK_LOG_INFO, "deferred checkpoint of %s (%s) made", c->id, reason);
			r = 1;
		}
	} else if (!why && (rk_computer_state_of(c->state) == RK_COMPUTER_PAUSED ||
			    rk_computer_state_of(c->state) == RK_COMPUTER_STOPPED)) {
		/* the pause or stop checkpointed the workspace already */
		drop_deferred(eng->db, c->id, NULL);
	}
	free(why);
	rk_deferred_row_release(&d);
	return r;
}

cJSON *rk_idle_deferred_to_json(struct rk_db *db, const char *computer_id)
{
	struct rk_deferred_row d;
	if (rk_db_deferred_get(db, computer_id, &d, NULL) <= 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "reason", d.reason);
	rk_json_add_str_or_null(o, "blocked_by", d.blocked_by);
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(d.created_at, buf, sizeof(buf)));
	rk_deferred_row_release(&d);
	return o;
}
