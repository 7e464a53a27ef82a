/* The runs table: its SQL (see db_runs.h). The small statement helpers are
 * copies of db.c's static ones, kept here so the two files stay apart. */

#include "db_runs.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/time.h"

static const char *const states[] = {"queued",      "running",     "waiting_takeover", "waiting_approval",
				     "completed",   "failed",      "interrupted",      "cancelled", NULL};

int rk_run_state_valid(const char *state)
{
	for (size_t i = 0; state && states[i]; i++)
		if (!strcmp(states[i], state))
			return 1;
	return 0;
}

int rk_run_state_is_final(const char *state)
{
	return state && (!strcmp(state, "completed") || !strcmp(state, "failed") || !strcmp(state, "interrupted") ||
			 !strcmp(state, "cancelled"));
}

static int sql_error(struct rk_db *db, struct rk_error *err, const char *what)
{
	int rc = sqlite3_errcode(db->handle);
	enum rk_code code = RK_EFAILED;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		code = RK_EUNAVAILABLE;
	else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		code = RK_ECORRUPT;
	else if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_IOERR || rc == SQLITE_FULL)
		code = RK_EIO;
	else if (rc == SQLITE_CONSTRAINT)
		code = RK_ECONFLICT;
	return rk_error_set(err, code, "database: %s: %s", what, sqlite3_errmsg(db->handle));
}

static sqlite3_stmt *prep(struct rk_db *db, const char *sql, struct rk_error *err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->handle, sql, -1, &st, NULL) != SQLITE_OK) {
		sql_error(db, err, "prepare failed");
		return NULL;
	}
	return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? rk_xstrdup((const char *)t) : NULL;
}

static int64_t col_int(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static int step_done(struct rk_db *db, sqlite3_stmt *st, const char *what, struct rk_error *err)
{
	int rc = sqlite3_step(st);
	int r = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = sql_error(db, err, what);
	sqlite3_finalize(st);
	return r;
}

/* Fails with not_found when the statement touched no row. */
static int step_one(struct rk_db *db, sqlite3_stmt *st, const char *id, const char *what, struct rk_error *err)
{
	int r = step_done(db, st, what, err);
	if (r == 0 && sqlite3_changes(db->handle) == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "no run '%s'", id);
	return r;
}

#define RUN_COLS                                                                                              \
	"id, bot_id, thread_id, computer_id, task, model, state, final_answer, error, steps, input_tokens, "  \
	"output_tokens, worker_pid, heartbeat_at, created_at, started_at, finished_at"

static void run_from_row(sqlite3_stmt *st, struct rk_run_row *r)
{
	r->id = col_text(st, 0);
	r->bot_id = col_text(st, 1);
	r->thread_id = col_text(st, 2);
	r->computer_id = col_text(st, 3);
	r->task = col_text(st, 4);
	r->model = col_text(st, 5);
	r->state = col_text(st, 6);
	r->final_answer = col_text(st, 7);
	r->error = col_text(st, 8);
	r->steps = col_int(st, 9);
	r->input_tokens = col_int(st, 10);
	r->output_tokens = col_int(st, 11);
	r->worker_pid = col_int(st, 12);
	r->heartbeat_at = col_int(st, 13);
	r->created_at = col_int(st, 14);
	r->started_at = col_int(st, 15);
	r->finished_at = col_int(st, 16);
}

void rk_run_row_release(struct rk_run_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->bot_id);
	free(r->thread_id);
	free(r->computer_id);
	free(r->task);
	free(r->model);
	free(r->state);
	free(r->final_answer);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

void rk_run_rows_free(struct rk_run_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		rk_run_row_release(&rows[i]);
	free(rows);
}

int rk_db_run_insert(struct rk_db *db, const struct rk_run_row *r, struct rk_error *err)
{
	if (!r->id || !r->task || !rk_run_state_valid(r->state))
		return rk_error_set(err, RK_EINVALID, "a run needs an id, a task and a valid state");
	sqlite3_stmt *st = prep(db,
				"INSERT INTO runs (id, bot_id, thread_id, computer_id, task, model, state, created_at) "
				"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
				err);
	if (!st)
		return -err->code;
	bind_text(st, 1, r->id);
	bind_text(st, 2, r->bot_id);
	bind_text(st, 3, r->thread_id);
	bind_text(st, 4, r->computer_id);
	bind_text(st, 5, r->task);
	bind_text(st, 6, r->model);
	bind_text(st, 7, r->state);
	sqlite3_bind_int64(st, 8, r->created_at > 0 ? r->created_at : rk_now_ms());
	return step_done(db, st, "insert run", err);
}

int rk_db_run_get(struct rk_db *db, const char *id, struct rk_run_row *out, struct rk_error *err)
{
	sqlite3_stmt *st = prep(db, "SELECT " RUN_COLS " FROM runs WHERE id = ?", err);
	if (!st)
		return -err->code;
	bind_text(st, 1, id);
	int rc = sqlite3_step(st), r = 0;
	if (rc == SQLITE_ROW)
		run_from_row(st, out);
	else if (rc == SQLITE_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "no run '%s' (see `rakazo run list`)", id);
	else
		r = sql_error(db, err, "get run");
	sqlite3_finalize(st);
	return r;
}

int rk_db_run_list(struct rk_db *db, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		   struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = prep(db,
				"SELECT " RUN_COLS " FROM runs WHERE ?1 IS NULL OR computer_id = ?1 "
				"ORDER BY created_at DESC, rowid DESC LIMIT ?2",
				err);
	if (!st)
		return -err->code;
	bind_text(st, 1, computer_id);
	sqlite3_bind_int64(st, 2, limit ? (int64_t)limit : 100);
	size_t cap = 0;
	int rc, r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = rk_xrealloc(*out, cap * sizeof(**out));
		}
		memset(&(*out)[*n], 0, sizeof(**out));
		run_from_row(st, &(*out)[(*n)++]);
	}
	if (rc != SQLITE_DONE) {
		r = sql_error(db, err, "list runs");
		rk_run_rows_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	return r;
}

int rk_db_run_set_state(struct rk_db *db, const char *id, const char *state, int64_t worker_pid,
			struct rk_error *err)
{
	if (!rk_run_state_valid(state))
		return rk_error_set(err, RK_EINVALID, "no run state '%s'", state ? state : "");
	sqlite3_stmt *st = prep(db,
				"UPDATE runs SET state = ?2, worker_pid = coalesce(?3, worker_pid), heartbeat_at = ?4, "
				"started_at = CASE WHEN ?2 = 'running' THEN coalesce(started_at, ?4) ELSE started_at END, "
				"finished_at = CASE WHEN ?5 THEN ?4 ELSE finished_at END WHERE id = ?1",
				err);
	if (!st)
		return -err->code;
	bind_text(st, 1, id);
	bind_text(st, 2, state);
	bind_opt(st, 3, worker_pid);
	sqlite3_bind_int64(st, 4, rk_now_ms());
	sqlite3_bind_int(st, 5, rk_run_state_is_final(state));
	return step_one(db, st, id, "set run state", err);
}

int rk_db_run_progress(struct rk_db *db, const char *id, int64_t steps, int64_t input_tokens,
		       int64_t output_tokens, struct rk_error *err)
{
	sqlite3_stmt *st = prep(db,
				"UPDATE runs SET steps = ?2, input_tokens = ?3, output_tokens = ?4, heartbeat_at = ?5 "
				"WHERE id = ?1",
				err);
	if (!st)
		return -err->code;
	bind_text(st, 1, id);
	sqlite3_bind_int64(st, 2, steps);
	sqlite3_bind_int64(st, 3, input_tokens);
	sqlite3_bind_int64(st, 4, output_tokens);
	sqlite3_bind_int64(st, 5, rk_now_ms());
	return step_one(db, st, id, "update run progress", err);
}

int rk_db_run_heartbeat(struct rk_db *db, const char *id, struct rk_error *err)
{
	sqlite3_stmt *st = prep(db, "UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1", err);
	if (!st)
		return -err->code;
	bind_text(st, 1, id);
	sqlite3_bind_int64(st, 2, rk_now_ms());
	return step_one(db, st, id, "run heartbeat", err);
}

int rk_db_run_finish(struct rk_db *db, const char *id, const char *state, const char *final_answer,
		     const char *error, struct rk_error *err)
{
	if (!rk_run_state_is_final(state))
		return rk_error_set(err, RK_EINVALID, "'%s' is not a final run state", state ? state : "");
	sqlite3_stmt *st = prep(db,
				"UPDATE runs SET state = ?2, final_answer = ?3, error = ?4, heartbeat_at = ?5, "
				"finished_at = ?5 WHERE id = ?1",
				err);
	if (!st)
		return -err->code;
	bind_text(st, 1, id);
	bind_text(st, 2, state);
	bind_text(st, 3, final_answer);
	bind_text(st, 4, error);
	sqlite3_bind_int64(st, 5, rk_now_ms());
	return step_one(db, st, id, "finish run", err);
}
