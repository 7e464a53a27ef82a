/* Idle suspension's tables and reads: their SQL (see db_idle.h), through
 * db.h's statement helpers. */

#include "engine/state/db_idle.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

/* --- idle_schedules -------------------------------------------------------- */

int rk_db_idle_schedule_put(struct rk_db *db, const char *computer_id, int64_t at, int64_t due, int64_t now_ms,
			    struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "INSERT INTO idle_schedules (computer_id, last_active_at, due_at, updated_at) VALUES "
			      "(?1, ?2, ?3, ?4) ON CONFLICT (computer_id) DO UPDATE SET last_active_at = "
			      "max(idle_schedules.last_active_at, ?2), due_at = ?3, updated_at = ?4",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, at);
	if (due > 0)
		rk_stmt_bind_int64(st, 3, due);
	else
		rk_stmt_bind_null(st, 3);
	rk_stmt_bind_int64(st, 4, now_ms);
	return rk_db_step_done(db, st, "idle schedule", err);
}

int rk_db_idle_schedule_drop(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM idle_schedules WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_step_done(db, st, "drop idle schedule", err);
}

int rk_db_idle_schedule_get(struct rk_db *db, const char *computer_id, int64_t *last_active_at, int64_t *due_at)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT last_active_at, due_at FROM idle_schedules WHERE computer_id = ?",
					   NULL);
	if (!st)
		return 0;
	rk_db_bind_text(st, 1, computer_id);
	int found = rk_stmt_step(st) == RK_SQL_ROW;
	if (found) {
		*last_active_at = rk_stmt_column_int64(st, 0);
		*due_at = rk_stmt_column_type(st, 1) == RK_SQL_NULL ? -1 : rk_stmt_column_int64(st, 1);
	}
	rk_stmt_finalize(st);
	return found;
}

/* --- busy and last use ------------------------------------------------------- */

/* The first row's text of sql, run with ?1 the computer and ?2 now_ms (with
 * bot_param: ?2 the bot, ?3 now_ms), or NULL (also when it cannot be read). */
static char *first_text(struct rk_db *db, const char *sql, const char *computer_id, const char *bot_id, int64_t now_ms,
			int bot_param)
{
	struct rk_stmt *st = rk_db_prepare(db, sql, NULL);
	if (!st)
		return NULL;
	rk_db_bind_text(st, 1, computer_id);
	if (bot_param) {
		rk_db_bind_text(st, 2, bot_id);
		rk_stmt_bind_int64(st, 3, now_ms);
	} else {
		rk_stmt_bind_int64(st, 2, now_ms);
	}
	char *text = NULL;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		text = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	return text;
}

char *rk_db_idle_busy_reason(struct rk_db *db, const char *computer_id, int64_t now_ms)
{
	static const char *const checks[] = {
		"SELECT 'bot ' || bot_id || ' holds its execution lease' FROM execution_leases WHERE computer_id = ?1 "
		"AND holder IS NOT NULL AND expires_at > ?2 LIMIT 1",
		"SELECT holder || ' has control of bot ' || bot_id || '''s screen' FROM control_leases WHERE computer_id = "
		"?1 AND expires_at > ?2 LIMIT 1",
		"SELECT 'run ' || r.id || ' is ' || r.state FROM runs r WHERE r.computer_id = ?1 AND (r.state IN "
		"('queued','running') OR (r.state = 'waiting_takeover' AND EXISTS (SELECT 1 FROM control_leases k WHERE "
		"k.computer_id = ?1 AND k.bot_id = r.bot_id AND k.expires_at > ?2))) LIMIT 1",
		"SELECT 'lifecycle command ' || id || ' (' || op || ') is ' || state FROM lifecycle_executions WHERE "
		"computer_id = ?1 AND state IN ('pending','running','outcome_unknown') AND ?2 = ?2 LIMIT 1",
	};
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		char *why = first_text(db, checks[i], computer_id, NULL, now_ms, 0);
		if (why)
			return why;
	}
	return NULL;
}

void rk_idle_sessions_free(struct rk_idle_session *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].id);
		free(s[i].holder_host);
	}
	free(s);
}

static void idle_session_row(struct rk_stmt *st, void *p)
{
	struct rk_idle_session *s = p;
	s->id = rk_db_col_text(st, 0);
	s->holder_pid = rk_stmt_column_int64(st, 1);
	s->holder_host = rk_db_col_text(st, 2);
	s->last_used_at = rk_stmt_column_int64(st, 3);
}

static void idle_session_release(void *p)
{
	struct rk_idle_session *s = p;
	free(s->id);
	free(s->holder_host);
}

int rk_db_idle_sessions(struct rk_db *db, const char *computer_id, struct rk_idle_session **out, size_t *n,
			struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT id, holder_pid, holder_host, last_used_at FROM exec_sessions WHERE "
					   "computer_id = ? AND state = 'running' AND command_ended_at IS NULL",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_collect(db, st, sizeof(**out), idle_session_row, idle_session_release, (void **)out, n,
			     "running sessions", err);
}

int64_t rk_db_idle_last_active(struct rk_db *db, const char *computer_id)
{
	int64_t last = 0;
	struct rk_stmt *st = rk_db_prepare(
		db,
		"SELECT max(coalesce((SELECT last_active_at FROM idle_schedules WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(max(last_used_at, coalesce(command_ended_at, 0))) FROM exec_sessions WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(updated_at) FROM execution_leases WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(coalesce(finished_at, heartbeat_at, created_at)) FROM runs WHERE computer_id = ?1), 0),"
		" coalesce((SELECT max(finished_at) FROM lifecycle_executions WHERE computer_id = ?1), 0))",
		NULL);
	if (st) {
		rk_db_bind_text(st, 1, computer_id);
		if (rk_stmt_step(st) == RK_SQL_ROW)
			last = rk_stmt_column_int64(st, 0);
		rk_stmt_finalize(st);
	}
	return last;
}

/* --- deferred_checkpoints ----------------------------------------------------- */

void rk_deferred_row_release(struct rk_deferred_row *d)
{
	if (!d)
		return;
	free(d->reason);
	free(d->blocked_by);
	memset(d, 0, sizeof(*d));
}

char *rk_db_deferred_blocker(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t now_ms)
{
	return first_text(db,
			  "SELECT 'bot ' || bot_id || '''s execution lease' FROM execution_leases WHERE computer_id = ?1 "
			  "AND holder IS NOT NULL AND expires_at > ?3 AND (?2 IS NULL OR bot_id <> ?2) UNION ALL "
			  "SELECT holder || '''s control of bot ' || bot_id || '''s screen' FROM control_leases WHERE "
			  "computer_id = ?1 AND expires_at > ?3 LIMIT 1",
			  computer_id, bot_id, now_ms, 1);
}

int rk_db_deferred_put(struct rk_db *db, const char *computer_id, const char *reason, const char *blocked_by,
		       int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "INSERT INTO deferred_checkpoints (computer_id, reason, blocked_by, created_at) "
				    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (computer_id) DO UPDATE SET reason = ?2, "
				    "blocked_by = ?3",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, reason);
	rk_db_bind_text(st, 3, blocked_by);
	rk_stmt_bind_int64(st, 4, now_ms);
	return rk_db_step_done(db, st, "defer checkpoint", err);
}

int rk_db_deferred_get(struct rk_db *db, const char *computer_id, struct rk_deferred_row *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT reason, blocked_by, created_at FROM deferred_checkpoints WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	int found = rk_stmt_step(st) == RK_SQL_ROW;
	if (found) {
		out->reason = rk_db_col_text(st, 0);
		out->blocked_by = rk_db_col_text(st, 1);
		out->created_at = rk_stmt_column_int64(st, 2);
	}
	rk_stmt_finalize(st);
	return found;
}

int rk_db_deferred_drop(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM deferred_checkpoints WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_step_done(db, st, "deferred checkpoint", err);
}
