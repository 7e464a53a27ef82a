#ifndef RK_DB_RUNS_H
#define RK_DB_RUNS_H
/* The runs table (migration 1 in db.c): one row per agent run. Its SQL lives
 * here, beside db.c. Strings in a record are malloc'd and owned by it. */

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "util/err.h"

/* queued, running, waiting_takeover, waiting_approval (engine/approval.h), completed, failed, interrupted, cancelled */
int rk_run_state_valid(const char *state);
int rk_run_state_is_final(const char *state); /* completed, failed, interrupted, cancelled */

struct rk_run_row {
	char *id, *bot_id, *thread_id, *computer_id, *task, *model, *state, *final_answer, *error;
	int64_t steps, input_tokens, output_tokens;
	int64_t worker_pid, heartbeat_at, created_at, started_at, finished_at; /* -1: none */
};
void rk_run_row_release(struct rk_run_row *r);

/* Inserts r (id, task and state required; created_at 0: now). */
int rk_db_run_insert(struct rk_db *db, const struct rk_run_row *r, struct rk_error *err);
/* RK_ENOTFOUND when there is no run id. */
int rk_db_run_get(struct rk_db *db, const char *id, struct rk_run_row *out, struct rk_error *err);
/* Newest first, at most limit (0: 100); computer_id NULL: all. *out is malloc'd. */
int rk_db_run_list(struct rk_db *db, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		   struct rk_error *err);
void rk_run_rows_free(struct rk_run_row *rows, size_t n);

/* state: running sets started_at (once) and worker_pid; a final state sets finished_at. */
int rk_db_run_set_state(struct rk_db *db, const char *id, const char *state, int64_t worker_pid,
			struct rk_error *err);
/* Steps and token totals, and the heartbeat (now). */
int rk_db_run_progress(struct rk_db *db, const char *id, int64_t steps, int64_t input_tokens,
		       int64_t output_tokens, struct rk_error *err);
int rk_db_run_heartbeat(struct rk_db *db, const char *id, struct rk_error *err);
/* Ends the run: state (final), and the answer or the error (either may be NULL). */
int rk_db_run_finish(struct rk_db *db, const char *id, const char *state, const char *final_answer,
		     const char *error, struct rk_error *err);

#endif
