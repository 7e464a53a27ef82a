/* The workers table: its SQL (see db_worker.h), through db.h's statement
 * helpers. */

#include "engine/state/db_worker.h"

#include <stdlib.h>
#include <string.h>

void rk_worker_row_release(struct rk_worker_row *w)
{
	if (!w)
		return;
	free(w->id);
	free(w->host_key);
	memset(w, 0, sizeof(*w));
}

void rk_worker_rows_free(struct rk_worker_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rk_worker_row_release(&rows[i]);
	free(rows);
}

int rk_db_worker_insert(struct rk_db *db, const char *id, const char *host, const char *host_key, int64_t pid,
			int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO workers (id, host, host_key, pid, started_at, heartbeat_at) "
					   "VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, host);
	rk_db_bind_text(st, 3, host_key);
	rk_stmt_bind_int64(st, 4, pid);
	rk_stmt_bind_int64(st, 5, now_ms);
	return rk_db_step_done(db, st, "register worker", err);
}

int rk_db_worker_heartbeat(struct rk_db *db, const char *id, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE workers SET heartbeat_at = ?2 WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, now_ms);
	int r = rk_db_step_done(db, st, "worker heartbeat", err);
	return r < 0 ? r : rk_db_changes(db) > 0;
}

int rk_db_worker_delete(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM workers WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	return rk_db_step_done(db, st, "forget worker", err);
}

int rk_db_worker_get(struct rk_db *db, const char *id, struct rk_worker_row *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = rk_db_prepare(db, "SELECT host_key, pid, heartbeat_at FROM workers WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	int found = rk_stmt_step(st) == RK_SQL_ROW;
	if (found) {
		out->host_key = rk_db_col_text(st, 0);
		out->pid = rk_stmt_column_int64(st, 1);
		out->heartbeat_at = rk_stmt_column_int64(st, 2);
	}
	rk_stmt_finalize(st);
	return found;
}

static void worker_row(struct rk_stmt *st, void *p)
{
	struct rk_worker_row *w = p;
	w->id = rk_db_col_text(st, 0);
	w->host_key = rk_db_col_text(st, 1);
	w->pid = rk_stmt_column_int64(st, 2);
	w->heartbeat_at = rk_stmt_column_int64(st, 3);
}

static void worker_release_any(void *p)
{
	rk_worker_row_release(p);
}

int rk_db_worker_list(struct rk_db *db, struct rk_worker_row **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "SELECT id, host_key, pid, heartbeat_at FROM workers", err);
	if (!st)
		return -rk_err(err)->code;
	return rk_db_collect(db, st, sizeof(**out), worker_row, worker_release_any, (void **)out, n, "list workers",
			     err);
}
