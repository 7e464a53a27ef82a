#include "engine/machine/reservation.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/state/db.h"
#include "engine/util/host.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_reservation_kind, RK_RESERVATION_KIND, RK_RESERVATION_KINDS)

RK_NAMES_DEFINE(rk_reservation_state, RK_RESERVATION_STATE, RK_RESERVATION_STATES)

static int64_t silent_ms(void)
{
	const char *v = getenv("RAKAZO_RESERVATION_SILENT_MS");
	long long n = v && *v ? atoll(v) : 0;
	return n > 0 ? n : RK_RESERVATION_SILENT_DEFAULT_MS;
}

int rk_reservation_check(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT kind, phase, state, owner FROM computer_reservations WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	int r = 0;
	int rc = rk_stmt_step(st);
	if (rc == RK_SQL_ROW) {
		const char *state = (const char *)rk_stmt_column_text(st, 2);
		int interrupted = rk_reservation_state_of(state) == RK_RESERVATION_INTERRUPTED;
		r = rk_error_set(
			err, RK_ECONFLICT, "computer %s is reserved by %s's %s job (phase %s%s)%s", computer_id,
			(const char *)rk_stmt_column_text(st, 3), (const char *)rk_stmt_column_text(st, 0),
			(const char *)rk_stmt_column_text(st, 1), interrupted ? ", interrupted" : "",
			interrupted ? ": once its job has stopped, its owner frees it with `rakazo computer release`"
				    : "");
	} else if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "reservation");
	}
	rk_stmt_finalize(st);
	return r;
}

static int record_phase(struct rk_db *db, const char *computer_id, const char *kind, const char *phase,
			struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO reservation_phases (computer_id, kind, phase, created_at) VALUES "
					   "(?, ?, ?, ?)",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, kind);
	rk_db_bind_text(st, 3, phase);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	return rk_db_step_done(db, st, "reservation phase", err);
}

int rk_reservation_begin(struct rk_engine *eng, const struct rk_computer *c, const char *kind, struct rk_error *err)
{
	if (rk_reservation_kind_of(kind) == RK_RESERVATION_KIND_UNKNOWN)
		return rk_error_set(err, RK_EINVALID, "a reservation is for an update or a recovery job, not '%s'",
				    kind ? kind : "");
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	if ((r = rk_reservation_check(eng->db, c->id, err)))
		goto fail;
	int64_t now = rk_now_ms();
	struct rk_stmt *st =
		rk_db_prepare(eng->db,
			      "SELECT bot_id, holder FROM execution_leases WHERE computer_id = ? AND holder IS NOT "
			      "NULL AND expires_at > ? LIMIT 1",
			      err);
	if (!st)
		goto fail_code;
	rk_db_bind_text(st, 1, c->id);
	rk_stmt_bind_int64(st, 2, now);
	if (rk_stmt_step(st) == RK_SQL_ROW) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "bot '%s' holds a live execution lease on computer '%s' (%s): stop it first",
				 (const char *)rk_stmt_column_text(st, 0), c->name,
				 (const char *)rk_stmt_column_text(st, 1));
		rk_stmt_finalize(st);
		goto fail;
	}
	rk_stmt_finalize(st);
	char *holder = NULL;
	if (rk_db_control_live(eng->db, c->id, NULL, now, &holder)) {
		r = rk_error_set(err, RK_ECONFLICT, "%s has control of a screen on computer '%s': release it first",
				 holder ? holder : "a person", c->name);
		free(holder);
		goto fail;
	}
	st = rk_db_prepare(eng->db,
			   "INSERT INTO computer_reservations (computer_id, kind, owner, worker_pid, phase, state, "
			   "heartbeat_at, created_at) VALUES (?, ?, ?, ?, 'reserved', 'active', ?, ?)",
			   err);
	if (!st)
		goto fail_code;
	rk_db_bind_text(st, 1, c->id);
	rk_db_bind_text(st, 2, kind);
	rk_db_bind_text(st, 3, eng->owner);
	rk_stmt_bind_int64(st, 4, getpid());
	rk_stmt_bind_int64(st, 5, now);
	rk_stmt_bind_int64(st, 6, now);
	if ((r = rk_db_step_done(eng->db, st, "reserve", err)) ||
	    (r = record_phase(eng->db, c->id, kind, "reserved", err)) || (r = rk_db_commit(eng->db, err)))
		goto fail;
	rk_log(RK_LOG_INFO, "reservation %s: %s job by %s (pid %d)", c->id, kind, eng->owner, (int)getpid());
	return 0;
fail_code:
	r = -rk_err(err)->code;
fail:
	rk_db_rollback(eng->db);
	return r;
}

/* An update of our own reservation (this pid's), with a heartbeat. */
static int own_update(struct rk_engine *eng, const char *computer_id, const char *column, const char *value,
		      struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	char *sql = rk_xasprintf("UPDATE computer_reservations SET %s = ?3, heartbeat_at = ?4 WHERE computer_id = ?1 "
				 "AND worker_pid = ?2 AND state = 'active' RETURNING kind",
				 column);
	struct rk_stmt *st = rk_db_prepare(eng->db, sql, err);
	free(sql);
	if (!st) {
		rk_db_rollback(eng->db);
		return -rk_err(err)->code;
	}
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, getpid());
	rk_db_bind_text(st, 3, value);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	char *kind = NULL;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		kind = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	if (!kind) {
		rk_db_rollback(eng->db);
		return rk_error_set(err, RK_ESTALE,
				    "this job no longer holds computer %s's reservation (it was marked interrupted or "
				    "released)",
				    computer_id);
	}
	if (!strcmp(column, "phase"))
		r = record_phase(eng->db, computer_id, kind, value, err);
	free(kind);
	if (r == 0)
		r = rk_db_commit(eng->db, err);
	if (r)
		rk_db_rollback(eng->db);
	return r;
}

int rk_reservation_phase(struct rk_engine *eng, const char *computer_id, const char *phase, struct rk_error *err)
{
	return own_update(eng, computer_id, "phase", phase, err);
}

int rk_reservation_operation(struct rk_engine *eng, const char *computer_id, const char *operation,
			     struct rk_error *err)
{
	return own_update(eng, computer_id, "operation", operation, err);
}

int rk_reservation_heartbeat(struct rk_engine *eng, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(eng->db,
					   "UPDATE computer_reservations SET heartbeat_at = ? WHERE computer_id = ? AND "
					   "worker_pid = ? AND state = 'active'",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, rk_now_ms());
	rk_db_bind_text(st, 2, computer_id);
	rk_stmt_bind_int64(st, 3, getpid());
	int r = rk_db_step_done(eng->db, st, "reservation heartbeat", err);
	if (r == 0 && rk_db_changes(eng->db) == 0)
		return rk_error_set(err, RK_ESTALE, "this job no longer holds computer %s's reservation", computer_id);
	return r;
}

int rk_reservation_end(struct rk_engine *eng, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(eng->db,
				    "DELETE FROM computer_reservations WHERE computer_id = ? AND worker_pid = ? AND "
				    "state = 'active'",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, getpid());
	int r = rk_db_step_done(eng->db, st, "end reservation", err);
	if (r == 0 && rk_db_changes(eng->db) == 0)
		return rk_error_set(err, RK_ESTALE, "this job no longer holds computer %s's reservation", computer_id);
	return r;
}

int rk_reservation_scan(struct rk_engine *eng, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(eng->db,
				    "UPDATE computer_reservations SET state = 'interrupted' WHERE state = 'active' AND "
				    "heartbeat_at < ? RETURNING computer_id, kind, phase",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, rk_now_ms() - silent_ms());
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW)
		rk_log(RK_LOG_WARN, "reservation %s: the %s job went silent in phase %s: marked interrupted (kept)",
		       (const char *)rk_stmt_column_text(st, 0), (const char *)rk_stmt_column_text(st, 1),
		       (const char *)rk_stmt_column_text(st, 2));
	rk_stmt_finalize(st);
	return rc == RK_SQL_DONE ? 0 : rk_db_sql_error(eng->db, err, "scan reservations");
}

static int pid_alive(int64_t pid)
{
	return rk_host_pid_alive(NULL, pid) == 1;
}

int rk_reservation_release(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(eng->db,
				    "SELECT owner, worker_pid, operation, state, kind FROM computer_reservations WHERE "
				    "computer_id = ?",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, c->id);
	if (rk_stmt_step(st) != RK_SQL_ROW) {
		rk_stmt_finalize(st);
		return rk_error_set(err, RK_ENOTFOUND, "computer '%s' has no reservation", c->name);
	}
	char *owner = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	int64_t pid = rk_stmt_column_type(st, 1) == RK_SQL_NULL ? 0 : rk_stmt_column_int64(st, 1);
	const unsigned char *op = rk_stmt_column_text(st, 2);
	char *operation = op ? rk_xstrdup((const char *)op) : NULL;
	rk_stmt_finalize(st);
	int r = 0;
	if (strcmp(owner, eng->owner) != 0) {
		r = rk_error_set(err, RK_EDENIED, "computer '%s' is reserved by %s: only they can release it", c->name,
				 owner);
		goto out;
	}
	if (pid_alive(pid) && pid != getpid()) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "the job holding computer '%s' (pid %lld) is still running: stop it first", c->name,
				 (long long)pid);
		goto out;
	}
	if (operation) {
		struct rk_session_row s = {0};
		struct rk_error e2;
		if (rk_db_session_get(eng->db, operation, &s, &e2) == 0) {
			int running = rk_session_state_of(s.state) == RK_SESSION_RUNNING && pid_alive(s.holder_pid);
			rk_session_row_release(&s);
			if (running) {
				r = rk_error_set(
					err, RK_ECONFLICT,
					"the job's command (session %s) still runs in computer '%s': end it with "
					"`rakazo computer kill %s %s` first",
					operation, c->name, c->name, operation);
				goto out;
			}
		}
	}
	st = rk_db_prepare(eng->db, "DELETE FROM computer_reservations WHERE computer_id = ?", err);
	if (!st) {
		r = -rk_err(err)->code;
		goto out;
	}
	rk_db_bind_text(st, 1, c->id);
	r = rk_db_step_done(eng->db, st, "release reservation", err);
	if (r == 0)
		rk_log(RK_LOG_INFO, "reservation %s: released by %s", c->id, eng->owner);
out:
	free(owner);
	free(operation);
	return r;
}

cJSON *rk_reservation_to_json(struct rk_db *db, const char *computer_id)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT kind, owner, worker_pid, operation, phase, state, heartbeat_at, created_at "
				    "FROM computer_reservations WHERE computer_id = ?",
				    NULL);
	if (!st)
		return NULL;
	rk_db_bind_text(st, 1, computer_id);
	cJSON *o = NULL;
	char buf[40];
	if (rk_stmt_step(st) == RK_SQL_ROW) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "kind", (const char *)rk_stmt_column_text(st, 0));
		cJSON_AddStringToObject(o, "owner", (const char *)rk_stmt_column_text(st, 1));
		cJSON_AddNumberToObject(o, "worker_pid", (double)rk_stmt_column_int64(st, 2));
		rk_json_add_str_or_null(o, "operation", (const char *)rk_stmt_column_text(st, 3));
		cJSON_AddStringToObject(o, "phase", (const char *)rk_stmt_column_text(st, 4));
		cJSON_AddStringToObject(o, "state", (const char *)rk_stmt_column_text(st, 5));
		cJSON_AddStringToObject(o, "heartbeat_at", rk_iso8601(rk_stmt_column_int64(st, 6), buf, sizeof(buf)));
		cJSON_AddStringToObject(o, "created_at", rk_iso8601(rk_stmt_column_int64(st, 7), buf, sizeof(buf)));
	}
	rk_stmt_finalize(st);
	if (!o)
		return NULL;
	cJSON *phases = cJSON_AddArrayToObject(o, "phases");
	st = rk_db_prepare(db,
			   "SELECT phase FROM reservation_phases WHERE computer_id = ? AND id > coalesce((SELECT max(id) "
			   "FROM reservation_phases WHERE computer_id = ?1 AND phase = 'reserved'), 0) - 1 ORDER BY id",
			   NULL);
	if (st) {
		rk_db_bind_text(st, 1, computer_id);
		while (rk_stmt_step(st) == RK_SQL_ROW)
			cJSON_AddItemToArray(phases, cJSON_CreateString((const char *)rk_stmt_column_text(st, 0)));
		rk_stmt_finalize(st);
	}
	return o;
}
