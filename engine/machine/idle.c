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
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "INSERT INTO idle_schedules (computer_id, last_active_at, due_at, updated_at) VALUES "
			      "(?1, ?2, ?3, ?4) ON CONFLICT (computer_id) DO UPDATE SET last_active_at = "
			      "max(idle_schedules.last_active_at, ?2), due_at = ?3, updated_at = ?4",
			      NULL);
	if (!st)
		return;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, at);
	if (due > 0)
		rk_stmt_bind_int64(st, 3, due);
	else
		rk_stmt_bind_null(st, 3);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	rk_db_step_done(db, st, "idle schedule", NULL);
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

/* One query that names what keeps c busy, or NULL. */
static char *busy_reason(struct rk_engine *eng, const struct rk_computer *c)
{
	int64_t now = rk_now_ms();
	struct rk_error e;
	if (rk_reservation_check(eng->db, c->id, &e) != 0)
		return rk_xstrdup(e.message);
	static const char *const checks[][2] = {
		{"SELECT 'bot ' || bot_id || ' holds its execution lease' FROM execution_leases WHERE computer_id = ?1 "
		 "AND holder IS NOT NULL AND expires_at > ?2 LIMIT 1",
		 NULL},
		{"SELECT holder || ' has control of bot ' || bot_id || '''s screen' FROM control_leases WHERE computer_id = "
		 "?1 AND expires_at > ?2 LIMIT 1",
		 NULL},
		{"SELECT 'run ' || r.id || ' is ' || r.state FROM runs r WHERE r.computer_id = ?1 AND (r.state IN "
		 "('queued','running') OR (r.state = 'waiting_takeover' AND EXISTS (SELECT 1 FROM control_leases k WHERE "
		 "k.computer_id = ?1 AND k.bot_id = r.bot_id AND k.expires_at > ?2))) LIMIT 1",
		 NULL},
		{"SELECT 'lifecycle command ' || id || ' (' || op || ') is ' || state FROM lifecycle_executions WHERE "
		 "computer_id = ?1 AND state IN ('pending','running','outcome_unknown') AND ?2 = ?2 LIMIT 1",
		 NULL},
	};
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		struct rk_stmt *st = rk_db_prepare(eng->db, checks[i][0], NULL);
		if (!st)
			continue;
		rk_db_bind_text(st, 1, c->id);
		rk_stmt_bind_int64(st, 2, now);
		char *why = NULL;
		if (rk_stmt_step(st) == RK_SQL_ROW)
			why = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
		rk_stmt_finalize(st);
		if (why)
			return why;
	}
	/* a session counts while its holder process lives; a holder on another
	 * host, whose pid means nothing here, while it could still be alive:
	 * a holder ends its session after the session idle limit without a call */
	struct rk_stmt *st = rk_db_prepare(eng->db,
					   "SELECT id, holder_pid, holder_host, last_used_at FROM exec_sessions WHERE "
					   "computer_id = ? AND state = 'running' AND command_ended_at IS NULL",
					   NULL);
	char *why = NULL;
	if (st) {
		rk_db_bind_text(st, 1, c->id);
		while (!why && rk_stmt_step(st) == RK_SQL_ROW) {
			int alive = rk_host_pid_alive((const char *)rk_stmt_column_text(st, 2),
						      rk_stmt_column_int64(st, 1));
			if (alive < 0)
				alive = now - rk_stmt_column_int64(st, 3) < rk_idle_session_ms();
			if (alive > 0)
				why = rk_xasprintf("session %s is running", (const char *)rk_stmt_column_text(st, 0));
		}
		rk_stmt_finalize(st);
	}
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
	int64_t last = c->updated_at;
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"SELECT max(coalesce((SELECT last_active_at FROM idle_schedules WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(max(last_used_at, coalesce(command_ended_at, 0))) FROM exec_sessions WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(updated_at) FROM execution_leases WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(coalesce(finished_at, heartbeat_at, created_at)) FROM runs WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(finished_at) FROM lifecycle_executions WHERE computer_id = ?1), 0))",
		NULL);
	if (st) {
		rk_db_bind_text(st, 1, c->id);
		if (rk_stmt_step(st) == RK_SQL_ROW && rk_stmt_column_int64(st, 0) > last)
			last = rk_stmt_column_int64(st, 0);
		rk_stmt_finalize(st);
	}
	return last;
}

static void drop_schedule(struct rk_db *db, const char *computer_id)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM idle_schedules WHERE computer_id = ?", NULL);
	if (st) {
		rk_db_bind_text(st, 1, computer_id);
		rk_db_step_done(db, st, "drop idle schedule", NULL);
	}
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
	struct rk_stmt *st = rk_db_prepare(eng->db,
					   "SELECT last_active_at, due_at FROM idle_schedules WHERE computer_id = ?",
					   NULL);
	if (!st)
		return NULL;
	rk_db_bind_text(st, 1, c->id);
	cJSON *o = NULL;
	char buf[40];
	if (rk_stmt_step(st) == RK_SQL_ROW) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "last_active_at", rk_iso8601(rk_stmt_column_int64(st, 0), buf, sizeof(buf)));
		if (rk_stmt_column_type(st, 1) == RK_SQL_NULL)
			cJSON_AddNullToObject(o, "due_at");
		else
			cJSON_AddStringToObject(o, "due_at", rk_iso8601(rk_stmt_column_int64(st, 1), buf, sizeof(buf)));
	}
	rk_stmt_finalize(st);
	if (o) {
		char *why = NULL;
		cJSON_AddBoolToObject(o, "busy", rk_idle_busy(eng, c, &why));
		rk_json_add_str_or_null(o, "why", why);
		free(why);
	}
	return o;
}

/* --- deferred Team checkpoints --------------------------------------------------------------- */

/* What blocks a Team checkpoint asked for by bot: another bot's live lease
 * or any person's control. malloc'd, or NULL. */
static char *blocker(struct rk_engine *eng, const struct rk_computer *c, const char *bot)
{
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"SELECT 'bot ' || bot_id || '''s execution lease' FROM execution_leases WHERE computer_id = ?1 AND "
		"holder IS NOT NULL AND expires_at > ?3 AND (?2 IS NULL OR bot_id <> ?2) UNION ALL "
		"SELECT holder || '''s control of bot ' || bot_id || '''s screen' FROM control_leases WHERE "
		"computer_id = ?1 AND expires_at > ?3 LIMIT 1",
		NULL);
	if (!st)
		return NULL;
	rk_db_bind_text(st, 1, c->id);
	rk_db_bind_text(st, 2, bot);
	rk_stmt_bind_int64(st, 3, rk_now_ms());
	char *why = NULL;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		why = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	return why;
}

static int drop_deferred(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM deferred_checkpoints WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_step_done(db, st, "deferred checkpoint", err);
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
		struct rk_stmt *st =
			rk_db_prepare(eng->db,
				      "INSERT INTO deferred_checkpoints (computer_id, reason, blocked_by, created_at) "
				      "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (computer_id) DO UPDATE SET reason = ?2, "
				      "blocked_by = ?3",
				      err);
		int r = st ? 0 : -rk_err(err)->code;
		if (st) {
			rk_db_bind_text(st, 1, c->id);
			rk_db_bind_text(st, 2, reason);
			rk_db_bind_text(st, 3, why);
			rk_stmt_bind_int64(st, 4, rk_now_ms());
			r = rk_db_step_done(eng->db, st, "defer checkpoint", err);
		}
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
	struct rk_stmt *st = rk_db_prepare(eng->db, "SELECT reason FROM deferred_checkpoints WHERE computer_id = ?",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, c->id);
	char *reason = NULL;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		reason = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	if (!reason)
		return 0;
	int r = 0;
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
	free(reason);
	return r;
}

cJSON *rk_idle_deferred_to_json(struct rk_db *db, const char *computer_id)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT reason, blocked_by, created_at FROM deferred_checkpoints WHERE computer_id = ?", NULL);
	if (!st)
		return NULL;
	rk_db_bind_text(st, 1, computer_id);
	cJSON *o = NULL;
	char buf[40];
	if (rk_stmt_step(st) == RK_SQL_ROW) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "reason", (const char *)rk_stmt_column_text(st, 0));
		rk_json_add_str_or_null(o, "blocked_by", (const char *)rk_stmt_column_text(st, 1));
		cJSON_AddStringToObject(o, "created_at", rk_iso8601(rk_stmt_column_int64(st, 2), buf, sizeof(buf)));
	}
	rk_stmt_finalize(st);
	return o;
}
