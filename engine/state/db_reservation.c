/* Computer reservations: their SQL (see db_reservation.h), through db.h's
 * statement helpers. */

#include "engine/state/db_reservation.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

void rk_reservation_row_release(struct rk_reservation_row *r)
{
	if (!r)
		return;
	free(r->computer_id);
	free(r->kind);
	free(r->owner);
	free(r->phase);
	free(r->state);
	free(r->operation);
	memset(r, 0, sizeof(*r));
}

void rk_reservation_rows_free(struct rk_reservation_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rk_reservation_row_release(&rows[i]);
	free(rows);
}

int rk_db_reservation_get(struct rk_db *db, const char *computer_id, struct rk_reservation_row *out,
			  struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT kind, owner, worker_pid, operation, phase, state, heartbeat_at, created_at "
				    "FROM computer_reservations WHERE computer_id = ?",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		out->computer_id = rk_xstrdup(computer_id);
		out->kind = rk_db_col_text(st, 0);
		out->owner = rk_db_col_text(st, 1);
		out->worker_pid = rk_stmt_column_type(st, 2) == RK_SQL_NULL ? 0 : rk_stmt_column_int64(st, 2);
		out->operation = rk_db_col_text(st, 3);
		out->phase = rk_db_col_text(st, 4);
		out->state = rk_db_col_text(st, 5);
		out->heartbeat_at = rk_stmt_column_int64(st, 6);
		out->created_at = rk_stmt_column_int64(st, 7);
		r = 1;
	} else if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "reservation");
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_reservation_insert(struct rk_db *db, const char *computer_id, const char *kind, const char *owner,
			     int64_t pid, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "INSERT INTO computer_reservations (computer_id, kind, owner, worker_pid, phase, "
				    "state, heartbeat_at, created_at) VALUES (?, ?, ?, ?, 'reserved', 'active', ?, ?)",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, kind);
	rk_db_bind_text(st, 3, owner);
	rk_stmt_bind_int64(st, 4, pid);
	rk_stmt_bind_int64(st, 5, now_ms);
	rk_stmt_bind_int64(st, 6, now_ms);
	return rk_db_step_done(db, st, "reserve", err);
}

int rk_db_reservation_phase_add(struct rk_db *db, const char *computer_id, const char *kind, const char *phase,
				int64_t now_ms, struct rk_error *err)
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
	rk_stmt_bind_int64(st, 4, now_ms);
	return rk_db_step_done(db, st, "reservation phase", err);
}

static void text_row(struct rk_stmt *st, void *p)
{
	*(char **)p = rk_db_col_text(st, 0);
}

static void free_any(void *p)
{
	free(*(char **)p);
}

int rk_db_reservation_phases(struct rk_db *db, const char *computer_id, char ***phases, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		"SELECT phase FROM reservation_phases WHERE computer_id = ? AND id > coalesce((SELECT max(id) "
		"FROM reservation_phases WHERE computer_id = ?1 AND phase = 'reserved'), 0) - 1 ORDER BY id",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_collect(db, st, sizeof(char *), text_row, free_any, (void **)phases, n, "reservation phases", err);
}

int rk_db_reservation_update_own(struct rk_db *db, const char *computer_id, int64_t pid,
				 enum rk_reservation_field field, const char *value, int64_t now_ms, char **kind,
				 struct rk_error *err)
{
	*kind = NULL;
	struct rk_stmt *st = rk_db_prepare(
		db,
		field == RK_RESERVATION_FIELD_PHASE
			? "UPDATE computer_reservations SET phase = ?3, heartbeat_at = ?4 WHERE computer_id = ?1 "
			  "AND worker_pid = ?2 AND state = 'active' RETURNING kind"
			: "UPDATE computer_reservations SET operation = ?3, heartbeat_at = ?4 WHERE computer_id = ?1 "
			  "AND worker_pid = ?2 AND state = 'active' RETURNING kind",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, pid);
	rk_db_bind_text(st, 3, value);
	rk_stmt_bind_int64(st, 4, now_ms);
	if (rk_stmt_step(st) == RK_SQL_ROW)
		*kind = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	return *kind != NULL;
}

int rk_db_reservation_heartbeat(struct rk_db *db, const char *computer_id, int64_t pid, int64_t now_ms,
				struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "UPDATE computer_reservations SET heartbeat_at = ? WHERE computer_id = ? AND "
					   "worker_pid = ? AND state = 'active'",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, now_ms);
	rk_db_bind_text(st, 2, computer_id);
	rk_stmt_bind_int64(st, 3, pid);
	int r = rk_db_step_done(db, st, "reservation heartbeat", err);
	return r ? r : (int)rk_db_changes(db);
}

int rk_db_reservation_delete_own(struct rk_db *db, const char *computer_id, int64_t pid, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "DELETE FROM computer_reservations WHERE computer_id = ? AND worker_pid = ? AND "
				    "state = 'active'",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, pid);
	int r = rk_db_step_done(db, st, "end reservation", err);
	return r ? r : (int)rk_db_changes(db);
}

int rk_db_reservation_delete(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM computer_reservations WHERE computer_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_step_done(db, st, "release reservation", err);
}

static void silent_row(struct rk_stmt *st, void *p)
{
	struct rk_reservation_row *r = p;
	r->computer_id = rk_db_col_text(st, 0);
	r->kind = rk_db_col_text(st, 1);
	r->phase = rk_db_col_text(st, 2);
}

static void reservation_release_any(void *p)
{
	rk_reservation_row_release(p);
}

int rk_db_reservation_interrupt_silent(struct rk_db *db, int64_t before_ms, struct rk_reservation_row **out, size_t *n,
				       struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "UPDATE computer_reservations SET state = 'interrupted' WHERE state = 'active' AND "
				    "heartbeat_at < ? RETURNING computer_id, kind, phase",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, before_ms);
	return rk_db_collect(db, st, sizeof(**out), silent_row, reservation_release_any, (void **)out, n,
			     "scan reservations", err);
}
