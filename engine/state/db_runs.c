/* The runs table: its SQL (see db_runs.h), through db.h's statement helpers. */

#include "engine/state/db_runs.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/host.h"
#include "engine/util/buf.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_run_state, RK_RUN_STATE, RK_RUN_STATES)

int rk_run_state_valid(const char *state)
{
	return rk_run_state_of(state) != RK_RUN_STATE_UNKNOWN;
}

int rk_run_state_is_final(const char *state)
{
	enum rk_run_state s = rk_run_state_of(state);
	return s == RK_RUN_COMPLETED || s == RK_RUN_FAILED || s == RK_RUN_INTERRUPTED || s == RK_RUN_CANCELLED;
}

static void bind_opt(struct rk_stmt *st, int i, int64_t v)
{
	if (v < 0)
		rk_stmt_bind_null(st, i);
	else
		rk_stmt_bind_int64(st, i, v);
}

static int64_t col_int(struct rk_stmt *st, int i)
{
	return rk_stmt_column_type(st, i) == RK_SQL_NULL ? -1 : rk_stmt_column_int64(st, i);
}

/* Fails with not_found when the statement touched no row. */
static int step_one(struct rk_db *db, struct rk_stmt *st, const char *id, const char *what, struct rk_error *err)
{
	int r = rk_db_step_done(db, st, what, err);
	if (r == 0 && rk_db_changes(db) == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "no run '%s'", id);
	return r;
}

#define RUN_COLS                                                                                                       \
	"id, bot_id, thread_id, computer_id, task, model, state, final_answer, error, steps, input_tokens, "           \
	"output_tokens, worker_pid, heartbeat_at, created_at, started_at, finished_at, reason, options, "              \
	"cancel_requested, lease_bot, lease_fence, takeover_reason, takeover_note, attempts, worker_host, "            \
	"cached_tokens, cache_write_tokens, auto_resumes_left, images, cost_micro_usd"

static void run_from_row(struct rk_stmt *st, struct rk_run_row *r)
{
	r->id = rk_db_col_text(st, 0);
	r->bot_id = rk_db_col_text(st, 1);
	r->thread_id = rk_db_col_text(st, 2);
	r->computer_id = rk_db_col_text(st, 3);
	r->task = rk_db_col_text(st, 4);
	r->model = rk_db_col_text(st, 5);
	r->state = rk_db_col_text(st, 6);
	r->final_answer = rk_db_col_text(st, 7);
	r->error = rk_db_col_text(st, 8);
	r->steps = col_int(st, 9);
	r->input_tokens = col_int(st, 10);
	r->output_tokens = col_int(st, 11);
	r->worker_pid = col_int(st, 12);
	r->heartbeat_at = col_int(st, 13);
	r->created_at = col_int(st, 14);
	r->started_at = col_int(st, 15);
	r->finished_at = col_int(st, 16);
	r->reason = rk_db_col_text(st, 17);
	r->options = rk_db_col_text(st, 18);
	r->cancel_requested = col_int(st, 19);
	r->lease_bot = rk_db_col_text(st, 20);
	r->lease_fence = col_int(st, 21);
	r->takeover_reason = rk_db_col_text(st, 22);
	r->takeover_note = rk_db_col_text(st, 23);
	r->attempts = col_int(st, 24);
	r->worker_host = rk_db_col_text(st, 25);
	r->cached_tokens = col_int(st, 26);
	r->cache_write_tokens = col_int(st, 27);
	r->auto_resumes_left = col_int(st, 28);
	r->images = col_int(st, 29);
	r->cost_micro = col_int(st, 30);
}

void rk_run_row_release(struct rk_run_row *r)
{
	if (!r)
		return;
	free(r->worker_host);
	free(r->id);
	free(r->bot_id);
	free(r->thread_id);
	free(r->computer_id);
	free(r->task);
	free(r->model);
	free(r->state);
	free(r->final_answer);
	free(r->error);
	free(r->reason);
	free(r->options);
	free(r->lease_bot);
	free(r->takeover_reason);
	free(r->takeover_note);
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
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "INSERT INTO runs (id, bot_id, thread_id, computer_id, task, model, state, created_at, "
			      "options, heartbeat_at, lease_bot, lease_fence, auto_resumes_left) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?8, ?10, ?11, ?12)",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, r->id);
	rk_db_bind_text(st, 2, r->bot_id);
	rk_db_bind_text(st, 3, r->thread_id);
	rk_db_bind_text(st, 4, r->computer_id);
	rk_db_bind_text(st, 5, r->task);
	rk_db_bind_text(st, 6, r->model);
	rk_db_bind_text(st, 7, r->state);
	rk_stmt_bind_int64(st, 8, r->created_at > 0 ? r->created_at : rk_now_ms());
	rk_db_bind_text(st, 9, r->options);
	rk_db_bind_text(st, 10, r->lease_bot);
	if (r->lease_fence > 0)
		rk_stmt_bind_int64(st, 11, r->lease_fence);
	else
		rk_stmt_bind_null(st, 11);
	rk_stmt_bind_int64(st, 12, r->auto_resumes_left > 0 ? r->auto_resumes_left : 0);
	return rk_db_step_done(db, st, "insert run", err);
}

int rk_db_run_get(struct rk_db *db, const char *id, struct rk_run_row *out, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "SELECT " RUN_COLS " FROM runs WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW)
		run_from_row(st, out);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "no run '%s' (see `rakazo run list`)", id);
	else
		r = rk_db_sql_error(db, err, "get run");
	rk_stmt_finalize(st);
	return r;
}

/* Steps st to its end, collecting run rows; finalizes st. */
static int collect_runs(struct rk_db *db, struct rk_stmt *st, struct rk_run_row **out, size_t *n, struct rk_error *err)
{
	size_t cap = 0;
	int rc, r = 0;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = rk_xrealloc(*out, cap * sizeof(**out));
		}
		memset(&(*out)[*n], 0, sizeof(**out));
		run_from_row(st, &(*out)[(*n)++]);
	}
	if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "list runs");
		rk_run_rows_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_run_list(struct rk_db *db, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		   struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT " RUN_COLS " FROM runs WHERE ?1 IS NULL OR computer_id = ?1 "
					   "ORDER BY created_at DESC, rowid DESC LIMIT ?2",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, limit ? (int64_t)limit : 100);
	return collect_runs(db, st, out, n, err);
}

int rk_db_run_list_prefix(struct rk_db *db, const char *prefix, size_t limit, struct rk_run_row **out, size_t *n,
			  struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT " RUN_COLS
					   " FROM runs WHERE substr(id, 1, CAST(?2 AS INTEGER)) = ?1 "
					   "ORDER BY created_at DESC, rowid DESC LIMIT ?3",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, prefix);
	rk_stmt_bind_int64(st, 2, (int64_t)strlen(prefix));
	rk_stmt_bind_int64(st, 3, limit ? (int64_t)limit : 100);
	return collect_runs(db, st, out, n, err);
}

int rk_db_run_set_state(struct rk_db *db, const char *id, const char *state, int64_t worker_pid, struct rk_error *err)
{
	if (!rk_run_state_valid(state))
		return rk_error_set(err, RK_EINVALID, "no run state '%s'", state ? state : "");
	struct rk_stmt *st = rk_db_prepare(
		db,
		"UPDATE runs SET state = ?2, worker_pid = coalesce(?3, worker_pid), heartbeat_at = ?4, "
		"worker_host = CASE WHEN ?3 IS NULL THEN worker_host ELSE ?6 END, "
		"started_at = CASE WHEN ?2 = 'running' THEN coalesce(started_at, ?4) ELSE started_at END, "
		"finished_at = CASE WHEN ?5 <> 0 THEN ?4 ELSE finished_at END WHERE id = ?1",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, state);
	bind_opt(st, 3, worker_pid);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	rk_stmt_bind_int(st, 5, rk_run_state_is_final(state));
	rk_db_bind_text(st, 6, rk_host_key());
	return step_one(db, st, id, "set run state", err);
}

int rk_db_run_progress(struct rk_db *db, const char *id, int64_t steps, const struct rk_run_usage *usage,
		       struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "UPDATE runs SET steps = ?2, input_tokens = ?3, output_tokens = ?4, "
					   "heartbeat_at = ?5, cached_tokens = ?6, cache_write_tokens = ?7, images = ?8, "
					   "cost_micro_usd = ?9 WHERE id = ?1",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, steps);
	rk_stmt_bind_int64(st, 3, usage->input);
	rk_stmt_bind_int64(st, 4, usage->output);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	rk_stmt_bind_int64(st, 6, usage->cached);
	rk_stmt_bind_int64(st, 7, usage->cache_write);
	rk_stmt_bind_int64(st, 8, usage->images);
	if (usage->cost_micro >= 0)
		rk_stmt_bind_int64(st, 9, usage->cost_micro);
	else
		rk_stmt_bind_null(st, 9);
	return step_one(db, st, id, "update run progress", err);
}

int rk_db_run_heartbeat(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, rk_now_ms());
	return step_one(db, st, id, "run heartbeat", err);
}

int rk_db_run_finish(struct rk_db *db, const char *id, const char *state, const char *final_answer, const char *error,
		     struct rk_error *err)
{
	if (!rk_run_state_is_final(state))
		return rk_error_set(err, RK_EINVALID, "'%s' is not a final run state", state ? state : "");
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "UPDATE runs SET state = ?2, final_answer = ?3, error = ?4, heartbeat_at = ?5, "
				    "finished_at = ?5 WHERE id = ?1",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, state);
	rk_db_bind_text(st, 3, final_answer);
	rk_db_bind_text(st, 4, error);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	return step_one(db, st, id, "finish run", err);
}

int rk_db_run_set_meta(struct rk_db *db, const char *id, const char *reason, const char *options, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "UPDATE runs SET reason = coalesce(?2, reason), options = coalesce(?3, options) "
				    "WHERE id = ?1",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, reason);
	rk_db_bind_text(st, 3, options);
	return step_one(db, st, id, "set run meta", err);
}

int rk_db_run_begin_attempt(struct rk_db *db, const char *id, int64_t worker_pid, const char *lease_bot,
			    int64_t lease_fence, struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "UPDATE runs SET state = 'running', worker_pid = ?2, worker_host = ?6, lease_bot = ?3, "
			      "lease_fence = ?4, "
			      "attempts = attempts + 1, heartbeat_at = ?5, started_at = coalesce(started_at, ?5), "
			      "finished_at = NULL, reason = NULL, error = NULL, final_answer = NULL, "
			      "takeover_reason = NULL, takeover_note = NULL WHERE id = ?1",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, worker_pid);
	rk_db_bind_text(st, 3, lease_bot);
	bind_opt(st, 4, lease_fence);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	rk_db_bind_text(st, 6, rk_host_key());
	return step_one(db, st, id, "begin run attempt", err);
}

int rk_db_run_request_cancel(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE runs SET cancel_requested = 1 WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	return step_one(db, st, id, "request run cancel", err);
}

int rk_db_run_wait_takeover(struct rk_db *db, const char *id, const char *reason, struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "UPDATE runs SET state = 'waiting_takeover', takeover_reason = ?2, takeover_note = NULL, "
			      "heartbeat_at = ?3 WHERE id = ?1",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, reason);
	rk_stmt_bind_int64(st, 3, rk_now_ms());
	return step_one(db, st, id, "run waits for a takeover", err);
}

int rk_db_run_end_takeover(struct rk_db *db, const char *id, const char *note, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "UPDATE runs SET state = 'running', takeover_note = ?2 "
					   "WHERE id = ?1 AND state = 'waiting_takeover'",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, note);
	int r = rk_db_step_done(db, st, "end run takeover", err);
	return r ? r : rk_db_changes(db) > 0;
}

int rk_db_run_mark_interrupted(struct rk_db *db, const char *id, int64_t heartbeat_at, const char *reason,
			       const char *error, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "UPDATE runs SET state = 'interrupted', reason = ?3, error = ?4, finished_at = ?5 "
				    "WHERE id = ?1 AND state IN ('queued','running','waiting_takeover') "
				    "AND coalesce(heartbeat_at, -1) = ?2",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, heartbeat_at);
	rk_db_bind_text(st, 3, reason);
	rk_db_bind_text(st, 4, error);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	int r = rk_db_step_done(db, st, "mark run interrupted", err);
	return r ? r : rk_db_changes(db) > 0;
}

int rk_db_run_list_live(struct rk_db *db, struct rk_run_row **out, size_t *n, struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT " RUN_COLS
					   " FROM runs WHERE state IN ('queued','running','waiting_takeover') "
					   "ORDER BY created_at, rowid",
					   err);
	if (!st)
		return -rk_err(err)->code;
	size_t cap = 0;
	int rc, r = 0;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = rk_xrealloc(*out, cap * sizeof(**out));
		}
		memset(&(*out)[*n], 0, sizeof(**out));
		run_from_row(st, &(*out)[(*n)++]);
	}
	if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "list live runs");
		rk_run_rows_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	rk_stmt_finalize(st);
	return r;
}

/* The reasons the reaper gives a run whose process died or went quiet: the
 * only interruptions an automatic resume answers. */
#define AUTO_RESUME_REASONS "('worker_gone','stale')"

int rk_db_run_list_auto_resumable(struct rk_db *db, struct rk_run_row **out, size_t *n, struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT " RUN_COLS
					   " FROM runs WHERE state = 'interrupted' AND reason IN " AUTO_RESUME_REASONS
					   " AND auto_resumes_left > 0 ORDER BY created_at, rowid",
					   err);
	if (!st)
		return -rk_err(err)->code;
	return collect_runs(db, st, out, n, err);
}

int rk_db_run_claim_auto_resume(struct rk_db *db, const char *id, struct rk_error *err)
{
	/* one statement: of two workers (or a worker and a `run resume`) that
	 * saw it interrupted, only the first changes the row */
	struct rk_stmt *st = rk_db_prepare(
		db,
		"UPDATE runs SET state = 'queued', auto_resumes_left = auto_resumes_left - 1, "
		"heartbeat_at = ?2 WHERE id = ?1 AND state = 'interrupted' AND reason IN " AUTO_RESUME_REASONS
		" AND auto_resumes_left > 0",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, rk_now_ms());
	int r = rk_db_step_done(db, st, "claim run auto-resume", err);
	return r ? r : rk_db_changes(db) > 0;
}

int rk_db_run_live_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, char **state, char **run_id,
			  struct rk_error *err)
{
	*state = NULL;
	if (run_id)
		*run_id = NULL;
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT state, id FROM runs WHERE computer_id = ? AND coalesce(lease_bot, bot_id, "
				    "'default') = ? AND state IN "
				    "('queued','running','waiting_takeover') ORDER BY CASE state WHEN 'running' THEN 0 "
				    "WHEN 'queued' THEN 1 ELSE 2 END, created_at DESC LIMIT 1",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	int rc = rk_stmt_step(st);
	if (rc == RK_SQL_ROW) {
		*state = rk_db_col_text(st, 0);
		if (run_id)
			*run_id = rk_db_col_text(st, 1);
	}
	rk_stmt_finalize(st);
	return rc == RK_SQL_ROW || rc == RK_SQL_DONE ? 0 : rk_db_sql_error(db, err, "run state");
}

static int delete_rows(struct rk_db *db, const char *sql, const char *id, const char *what, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	return rk_db_step_done(db, st, what, err);
}

int rk_db_run_delete(struct rk_db *db, const char *id, struct rk_error *err)
{
	int r = rk_db_begin(db, err);
	if (r)
		return r;
	/* the state is read inside the write transaction: a resume cannot
	 * start the run between the check and the delete */
	struct rk_run_row row = {0};
	if ((r = rk_db_run_get(db, id, &row, err)) == 0 && !rk_run_state_is_final(row.state))
		r = rk_error_set(err, RK_ECONFLICT, "run %s is %s: cancel it (rakazo run cancel) before removing it",
				 id, row.state);
	rk_run_row_release(&row);
	if (r == 0)
		r = delete_rows(db, "DELETE FROM run_events WHERE run_id = ?1", id, "remove run events", err);
	if (r == 0)
		r = delete_rows(db, "DELETE FROM run_messages WHERE run_id = ?1", id, "remove run messages", err);
	if (r == 0)
		r = delete_rows(db, "DELETE FROM runs WHERE id = ?1", id, "remove run", err);
	if (r == 0)
		return rk_db_commit(db, err);
	rk_db_rollback(db);
	return r;
}

int rk_db_run_ended_before(struct rk_db *db, int64_t before_ms, char ***ids, size_t *n, struct rk_error *err)
{
	*ids = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(
		db,
		"SELECT id FROM runs WHERE state IN ('completed','failed','interrupted','cancelled') "
		"AND coalesce(finished_at, created_at) < ?1 ORDER BY coalesce(finished_at, created_at), id",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, before_ms);
	size_t cap = 0;
	int rc, r = 0;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*ids = rk_xrealloc(*ids, cap * sizeof(**ids));
		}
		(*ids)[(*n)++] = rk_db_col_text(st, 0);
	}
	if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "list ended runs");
		for (size_t i = 0; i < *n; i++)
			free((*ids)[i]);
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
	rk_stmt_finalize(st);
	return r;
}

void rk_run_events_free(struct rk_run_event *ev, size_t n)
{
	for (size_t i = 0; ev && i < n; i++) {
		free(ev[i].type);
		free(ev[i].data);
	}
	free(ev);
}

int rk_db_run_event_append(struct rk_db *db, const char *run_id, int64_t seq, const char *type, const char *data,
			   struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "INSERT INTO run_events (run_id, seq, type, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	rk_stmt_bind_int64(st, 2, seq);
	rk_db_bind_text(st, 3, type);
	rk_db_bind_text(st, 4, data);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	return rk_db_step_done(db, st, "store run event", err);
}

int rk_db_run_event_last(struct rk_db *db, const char *run_id, int64_t *seq, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "SELECT coalesce(max(seq), 0) FROM run_events WHERE run_id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	int r = 0;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		*seq = rk_stmt_column_int64(st, 0);
	else
		r = rk_db_sql_error(db, err, "last run event");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_run_events_after(struct rk_db *db, const char *run_id, int64_t after, size_t limit, struct rk_run_event **out,
			   size_t *n, struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT seq, type, data, created_at FROM run_events WHERE run_id = ?1 AND seq > ?2 "
				    "ORDER BY seq LIMIT ?3",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	rk_stmt_bind_int64(st, 2, after);
	rk_stmt_bind_int64(st, 3, limit ? (int64_t)limit : 1000);
	size_t cap = 0;
	int rc, r = 0;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			*out = rk_xrealloc(*out, cap * sizeof(**out));
		}
		struct rk_run_event *e = &(*out)[(*n)++];
		e->seq = rk_stmt_column_int64(st, 0);
		e->type = rk_db_col_text(st, 1);
		e->data = rk_db_col_text(st, 2);
		e->created_at = rk_stmt_column_int64(st, 3);
	}
	if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "list run events");
		rk_run_events_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_run_message_append(struct rk_db *db, const char *run_id, int64_t seq, const char *data, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "INSERT INTO run_messages (run_id, seq, data) VALUES (?1, ?2, ?3)", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	rk_stmt_bind_int64(st, 2, seq);
	rk_db_bind_text(st, 3, data);
	return rk_db_step_done(db, st, "store run message", err);
}

int rk_db_run_messages(struct rk_db *db, const char *run_id, char **json_array, struct rk_error *err)
{
	*json_array = NULL;
	struct rk_stmt *st = rk_db_prepare(db, "SELECT data FROM run_messages WHERE run_id = ?1 ORDER BY seq", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	rk_buf_addc(&b, '[');
	int rc, r = 0, first = 1;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (!first)
			rk_buf_addc(&b, ',');
		first = 0;
		const char *t = (const char *)rk_stmt_column_text(st, 0);
		rk_buf_adds(&b, t ? t : "null");
	}
	rk_buf_addc(&b, ']');
	if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "list run messages");
		rk_buf_release(&b);
	} else {
		*json_array = rk_buf_detach(&b, NULL);
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_run_thread_previous(struct rk_db *db, const char *thread_id, const char *bot_id, const char *run_id,
			      char **prev, struct rk_error *err)
{
	*prev = NULL;
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "SELECT id FROM runs WHERE thread_id = ?1 AND coalesce(bot_id, '') = coalesce(?2, '') "
			      "AND id != ?3 AND state IN ('completed','failed','cancelled','interrupted') "
			      "AND rowid < (SELECT rowid FROM runs WHERE id = ?3) "
			      "ORDER BY rowid DESC LIMIT 1",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, thread_id);
	rk_db_bind_text(st, 2, bot_id);
	rk_db_bind_text(st, 3, run_id);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW)
		*prev = rk_db_col_text(st, 0);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "thread '%s' has no earlier run", thread_id);
	else
		r = rk_db_sql_error(db, err, "read the thread's runs");
	rk_stmt_finalize(st);
	return r;
}
