#ifndef RK_DB_RUNS_H
#define RK_DB_RUNS_H
/* The runs table (migration 1 in db.c, grown by migration 3) with its
 * run_events and run_messages: one row per agent run, its events by
 * sequence and its conversation. Its SQL lives here, beside db.c. Strings in
 * a record are malloc'd and owned by it. */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"
#include "engine/util/names.h"

/* A run's state; the name of each (rk_run_state_name) is what the runs
 * table stores and JSON shows. waiting_approval: engine/access/approval.h. */
#define RK_RUN_STATES(X)                                                                                               \
	X(RK_RUN_QUEUED, "queued")                                                                                     \
	X(RK_RUN_RUNNING, "running")                                                                                   \
	X(RK_RUN_WAITING_TAKEOVER, "waiting_takeover")                                                                 \
	X(RK_RUN_WAITING_APPROVAL, "waiting_approval")                                                                 \
	X(RK_RUN_COMPLETED, "completed")                                                                               \
	X(RK_RUN_FAILED, "failed")                                                                                     \
	X(RK_RUN_INTERRUPTED, "interrupted")                                                                           \
	X(RK_RUN_CANCELLED, "cancelled")
RK_NAMES_ENUM(rk_run_state, RK_RUN_STATE, RK_RUN_STATES);
/* queued, running, waiting_takeover, waiting_approval (engine/access/approval.h), completed, failed, interrupted, cancelled */
int rk_run_state_valid(const char *state);
int rk_run_state_is_final(const char *state); /* completed, failed, interrupted, cancelled */

struct rk_run_row {
	char *id, *bot_id, *thread_id, *computer_id, *task, *model, *state, *final_answer, *error;
	int64_t steps, input_tokens, output_tokens;
	int64_t cached_tokens, cache_write_tokens; /* of input_tokens: read from / written to the prompt cache */
	int64_t images;				   /* images sent to the model, each request's counted */
	int64_t cost_micro;			   /* USD millionths; -1: the model has no price */
	int64_t worker_pid, heartbeat_at, created_at, started_at, finished_at; /* -1: none */
	char *reason;  /* why it ended (max_steps, model, cancelled, stale ...), or NULL */
	char *options; /* JSON: the limits and model flags it was started with */
	int64_t cancel_requested;
	char *lease_bot;     /* the bot key of its execution lease */
	int64_t lease_fence; /* -1: it holds none */
	char *takeover_reason, *takeover_note;
	int64_t attempts;	   /* times a process ran it (1 + resumes) */
	char *worker_host;	   /* the host key worker_pid belongs to (engine/util/host.h), or NULL */
	int64_t auto_resumes_left; /* automatic resumes it may still get (engine/agent/run.h) */
};
void rk_run_row_release(struct rk_run_row *r);

/* Inserts r (id, task and state required; created_at 0: now; auto_resumes_left as given). */
int rk_db_run_insert(struct rk_db *db, const struct rk_run_row *r, struct rk_error *err);
/* RK_ENOTFOUND when there is no run id. */
int rk_db_run_get(struct rk_db *db, const char *id, struct rk_run_row *out, struct rk_error *err);
/* Newest first, at most limit (0: 100); computer_id NULL: all. *out is malloc'd. */
int rk_db_run_list(struct rk_db *db, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		   struct rk_error *err);
/* The runs whose id begins with prefix, newest first, at most limit (0: 100). */
int rk_db_run_list_prefix(struct rk_db *db, const char *prefix, size_t limit, struct rk_run_row **out, size_t *n,
			  struct rk_error *err);
void rk_run_rows_free(struct rk_run_row *rows, size_t n);

/* state: running sets started_at (once) and worker_pid; a final state sets finished_at. */
int rk_db_run_set_state(struct rk_db *db, const char *id, const char *state, int64_t worker_pid, struct rk_error *err);
/* A run's token totals; cached and cache_write are parts of input. images:
 * the images its requests carried; cost_micro: what they cost in USD
 * millionths (-1: the model has no price, stored as NULL). */
struct rk_run_usage {
	int64_t input, output, cached, cache_write;
	int64_t images, cost_micro;
};
/* Steps and token totals, and the heartbeat (now). */
int rk_db_run_progress(struct rk_db *db, const char *id, int64_t steps, const struct rk_run_usage *usage,
		       struct rk_error *err);
int rk_db_run_heartbeat(struct rk_db *db, const char *id, struct rk_error *err);
/* Ends the run: state (final), and the answer or the error (either may be NULL). */
int rk_db_run_finish(struct rk_db *db, const char *id, const char *state, const char *final_answer, const char *error,
		     struct rk_error *err);
/* Sets the reason and options columns (either may be NULL: unchanged). */
int rk_db_run_set_meta(struct rk_db *db, const char *id, const char *reason, const char *options, struct rk_error *err);

/* A process takes the run: state running, worker_pid, attempts + 1, the
 * lease it holds, the end fields cleared. */
int rk_db_run_begin_attempt(struct rk_db *db, const char *id, int64_t worker_pid, const char *lease_bot,
			    int64_t lease_fence, struct rk_error *err);
/* Sets cancel_requested; RK_ENOTFOUND when there is no such run. */
int rk_db_run_request_cancel(struct rk_db *db, const char *id, struct rk_error *err);
/* running -> waiting_takeover with the model's reason. */
int rk_db_run_wait_takeover(struct rk_db *db, const char *id, const char *reason, struct rk_error *err);
/* waiting_takeover -> running with the person's note (may be NULL). Returns
 * 1 when the run was waiting (and now is not), 0 when it was not. */
int rk_db_run_end_takeover(struct rk_db *db, const char *id, const char *note, struct rk_error *err);
/* Ends a live run (queued, running, waiting_takeover) as interrupted with
 * reason and error, only while its heartbeat is still heartbeat_at (so a
 * run that beat meanwhile is left alone). 1 when it was marked, 0 when not. */
int rk_db_run_mark_interrupted(struct rk_db *db, const char *id, int64_t heartbeat_at, const char *reason,
			       const char *error, struct rk_error *err);
/* Interrupted runs whose process died or went quiet (reason worker_gone or
 * stale) with an automatic resume left, oldest first. */
int rk_db_run_list_auto_resumable(struct rk_db *db, struct rk_run_row **out, size_t *n, struct rk_error *err);
/* Takes the run's automatic resume: such a run (as listed above) goes back
 * to queued, its resumes left one fewer, its heartbeat now. 1 when this
 * call took it, 0 when it was not (or no longer) such a run. */
int rk_db_run_claim_auto_resume(struct rk_db *db, const char *id, struct rk_error *err);
/* Live runs (queued, running, waiting_takeover), oldest first. */
int rk_db_run_list_live(struct rk_db *db, struct rk_run_row **out, size_t *n, struct rk_error *err);
/* The live run of bot on a computer (its lease's bot, else its bot, else
 * "default"): a running one first, then a queued one, then one waiting for
 * a takeover, the newest of each. *state and *run_id (may be NULL) are
 * malloc'd, or NULL when the bot has none. */
int rk_db_run_live_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, char **state, char **run_id,
			  struct rk_error *err);

/* Deletes the run id with its events and conversation, in one transaction,
 * only when it has ended (a final state): RK_ENOTFOUND when there is no
 * such run, RK_ECONFLICT when it is live. Approval decisions stay. */
int rk_db_run_delete(struct rk_db *db, const char *id, struct rk_error *err);
/* The ids of ended runs that finished (or, without an end time, were
 * created) before before_ms, oldest first; *ids is malloc'd, each id too. */
int rk_db_run_ended_before(struct rk_db *db, int64_t before_ms, char ***ids, size_t *n, struct rk_error *err);

/* --- events: what the run's stream printed, by sequence (1, 2, ...) --- */
struct rk_run_event {
	int64_t seq, created_at;
	char *type, *data; /* data: the whole event as JSON text */
};
void rk_run_events_free(struct rk_run_event *ev, size_t n);
int rk_db_run_event_append(struct rk_db *db, const char *run_id, int64_t seq, const char *type, const char *data,
			   struct rk_error *err);
/* The highest seq stored for run_id (0: none). */
int rk_db_run_event_last(struct rk_db *db, const char *run_id, int64_t *seq, struct rk_error *err);
/* Events with seq > after, in order, at most limit (0: 1000). */
int rk_db_run_events_after(struct rk_db *db, const char *run_id, int64_t after, size_t limit, struct rk_run_event **out,
			   size_t *n, struct rk_error *err);

/* --- the conversation, one JSON message per seq (no image bytes) --- */
int rk_db_run_message_append(struct rk_db *db, const char *run_id, int64_t seq, const char *data, struct rk_error *err);
/* The messages in order, as one JSON array text (malloc'd). */
int rk_db_run_messages(struct rk_db *db, const char *run_id, char **json_array, struct rk_error *err);
/* The latest ended run (completed, failed, cancelled, interrupted) of
 * thread_id and bot_id (NULL: runs without a bot) created before run_id,
 * as *prev (malloc'd); RK_ENOTFOUND when the thread has none. */
int rk_db_run_thread_previous(struct rk_db *db, const char *thread_id, const char *bot_id, const char *run_id,
			      char **prev, struct rk_error *err);

#endif
