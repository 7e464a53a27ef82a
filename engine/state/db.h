#ifndef RK_DB_H
#define RK_DB_H
/* State in SQLite (WAL) under DATA_DIR/rakazo.db, or in PostgreSQL when
 * RAKAZO_DATABASE_URL names one, through sql.h's statement interface. This file is the only one
 * that holds SQL for the core tables; modules call these typed functions.
 * Strings in records are malloc'd and owned by the record (release it). */

#include <cJSON.h>
#include <stdint.h>

#include "engine/state/sql.h"
#include "engine/util/err.h"
#include "engine/util/names.h"

/* memory_fts's text-search vector on PostgreSQL: migration 9 indexes this
 * expression and engine/state/db_memory.c searches by it (the same text, or the
 * index goes unused). 'simple': every word, no stemming or stop words, like
 * SQLite's unicode61 FTS5 tokenizer. */
#define RK_MEMORY_PG_TSV "to_tsvector('simple', coalesce(path, '') || ' ' || coalesce(content, ''))"

/* Opens (creating) DATA_DIR/rakazo.db and applies pending migrations, each in
 * its own transaction. Caller frees with rk_db_close. */
int rk_db_open(const char *data_dir, struct rk_db **out, struct rk_error *err);
void rk_db_close(struct rk_db *db);
int rk_db_schema_version(struct rk_db *db);
int rk_db_migration_count(void);
/* PRAGMA integrity_check; *result is "ok" or the first problems (malloc'd). */
int rk_db_integrity_check(struct rk_db *db, char **result, struct rk_error *err);
/* PRAGMA journal_mode as the database reports it ("wal"), or on PostgreSQL
 * the server version ("15.4"); malloc'd. */
int rk_db_journal_mode(struct rk_db *db, char **result, struct rk_error *err);

/* BEGIN IMMEDIATE (takes the write lock at once, so a read-then-write cannot
 * race another process), COMMIT, ROLLBACK. */
int rk_db_begin(struct rk_db *db, struct rk_error *err);
int rk_db_commit(struct rk_db *db, struct rk_error *err);
void rk_db_rollback(struct rk_db *db);
int rk_db_exec(struct rk_db *db, const char *sql, struct rk_error *err);
/* For the table access in engine/state/ only (scripts/layer-check.sh
 * refuses SQL anywhere else): a prepared statement (NULL with err filled),
 * and stepping one that returns no rows (finalized). */
struct rk_stmt *rk_db_prepare(struct rk_db *db, const char *sql, struct rk_error *err);
int rk_db_step_done(struct rk_db *db, struct rk_stmt *st, const char *what, struct rk_error *err);
int rk_db_sql_error(struct rk_db *db, struct rk_error *err, const char *what);
#if defined(__clang_analyzer__) && !defined(RK_DB_C)
#define rk_db_sql_error(...) rk_error_negative_(rk_db_sql_error(__VA_ARGS__)) /* a code < 0, as err.h says */
#endif
/* Binds s as text (a copy), or NULL. */
void rk_db_bind_text(struct rk_stmt *st, int i, const char *s);
/* Column i as a malloc'd string, or NULL. */
char *rk_db_col_text(struct rk_stmt *st, int i);
/* A result column as a JSON member: type 's' text (null for NULL), 'i' an
 * integer, 'b' a boolean, 't' ms since the epoch as ISO-8601 (null for NULL). */
struct rk_db_json_col {
	const char *key;
	char type;
};
/* Steps st to its end into *out, a cJSON array of one object per row with
 * the columns in order as cols names them ({NULL} ends it); finalizes st. */
int rk_db_json_rows(struct rk_db *db, struct rk_stmt *st, const struct rk_db_json_col *cols, const char *what,
		    cJSON **out, struct rk_error *err);
/* Steps st to its end into a malloc'd array of size-byte elements filled by
 * from_row; on failure releases what it read. Finalizes st. */
int rk_db_collect(struct rk_db *db, struct rk_stmt *st, size_t size, void (*from_row)(struct rk_stmt *, void *),
		  void (*release)(void *), void **out, size_t *n, const char *what, struct rk_error *err);

/* --- computers ---------------------------------------------------------- */
/* A computer's state (computers.state, rk_computer.state): the name stored
 * and shown is rk_computer_state_name(); a paired machine is offline until
 * it connects. */
#define RK_COMPUTER_STATES(X)                                                                                          \
	X(RK_COMPUTER_STARTING, "starting")                                                                            \
	X(RK_COMPUTER_RUNNING, "running")                                                                              \
	X(RK_COMPUTER_PAUSED, "paused")                                                                                \
	X(RK_COMPUTER_STOPPED, "stopped")                                                                              \
	X(RK_COMPUTER_OFFLINE, "offline")                                                                              \
	X(RK_COMPUTER_FAILED, "failed")                                                                                \
	X(RK_COMPUTER_RESTORING, "restoring")                                                                          \
	X(RK_COMPUTER_DELETED, "deleted")
RK_NAMES_ENUM(rk_computer_state, RK_COMPUTER_STATE, RK_COMPUTER_STATES);

/* A computer's mode (computers.mode): private to its owner, or a team
 * computer whose screen bots and people share (engine/machine/team.h). */
#define RK_COMPUTER_MODES(X)                                                                                           \
	X(RK_COMPUTER_PRIVATE, "private")                                                                              \
	X(RK_COMPUTER_TEAM, "team")
RK_NAMES_ENUM(rk_computer_mode, RK_COMPUTER_MODE, RK_COMPUTER_MODES);

/* A session's state (exec_sessions.state, rk_session_row.state). */
#define RK_SESSION_STATES(X)                                                                                           \
	X(RK_SESSION_RUNNING, "running")                                                                               \
	X(RK_SESSION_ENDED, "ended")
RK_NAMES_ENUM(rk_session_state, RK_SESSION_STATE, RK_SESSION_STATES);

struct rk_computer {
	char *id, *name, *kind, *provider_ref, *home_key, *home_revision, *state, *mode, *owner, *options;
	char *resources; /* the limits asked at create with defaults filled (rk_limits_to_json), or NULL */
	int desktop;
	int64_t pause_after; /* seconds; -1 = never */
	int revisions_kept;
	int64_t created_at, updated_at;
};
void rk_computer_release(struct rk_computer *c);
int rk_db_computer_insert(struct rk_db *db, const struct rk_computer *c, struct rk_error *err);
/* By id, or by name among computers not deleted. RK_ENOTFOUND when none. */
int rk_db_computer_get(struct rk_db *db, const char *id_or_name, struct rk_computer *out, struct rk_error *err);
/* All computers not deleted, by creation time; *out is malloc'd (free each
 * with rk_computer_release, then the array). */
int rk_db_computer_list(struct rk_db *db, struct rk_computer **out, size_t *n, struct rk_error *err);
int rk_db_computer_set_state(struct rk_db *db, const char *id, const char *state, struct rk_error *err);
int rk_db_computer_set_ref(struct rk_db *db, const char *id, const char *ref, struct rk_error *err);
int rk_db_computer_set_home_revision(struct rk_db *db, const char *id, const char *revision, struct rk_error *err);
int rk_db_computer_mark_deleted(struct rk_db *db, const char *id, struct rk_error *err);
/* ref_kind: the provider kind that made the current provider_ref (a ref of
 * another kind means a replacement). mark sets it to the computer's kind;
 * *out is malloc'd, NULL when unknown. */
int rk_db_computer_mark_ref_kind(struct rk_db *db, const char *id, struct rk_error *err);
int rk_db_computer_ref_kind(struct rk_db *db, const char *id, char **out, struct rk_error *err);

/* --- home revisions (a mirror of the home store's, for queries) --------------- */
struct rk_workspace_checkpoint_row {
	const char *id, *home_key, *computer_id, *reason, *kind, *checksum;
	int64_t bytes, files, created_at;
};
int rk_db_home_revision_record(struct rk_db *db, const struct rk_workspace_checkpoint_row *h, struct rk_error *err);
/* Deletes the rows of home_key whose id is not among keep[0..n). */
int rk_db_home_revision_prune(struct rk_db *db, const char *home_key, const char *const *keep, size_t n,
			      struct rk_error *err);

/* --- lifecycle executions -------------------------------------------------- */
struct rk_execution {
	char *id, *computer_id, *op, *command_key, *body, *body_hash, *state, *phase;
	char *error_code, *error_message, *result;
	int64_t created_at, started_at, finished_at, provider_call_at, cancel_requested, worker_pid;
	char *worker_id; /* the workers row of whoever claimed it (NULL before several workers) */
	char *key_scope; /* who the command key belongs to (the submitter's owner); "" before migration 10 */
};
void rk_execution_release(struct rk_execution *e);
int rk_db_execution_insert(struct rk_db *db, const struct rk_execution *e, struct rk_error *err);
int rk_db_execution_get(struct rk_db *db, const char *id, struct rk_execution *out, struct rk_error *err);
/* The execution saved under command key in scope: a key is only ever found by
 * the identity that used it. */
int rk_db_execution_by_key(struct rk_db *db, const char *scope, const char *key, struct rk_execution *out,
			   struct rk_error *err);
/* The unfinished (pending, running or outcome_unknown) execution of a computer, if any. */
int rk_db_execution_active(struct rk_db *db, const char *computer_id, struct rk_execution *out, struct rk_error *err);
/* The oldest pending execution, marked running by the worker (worker_pid,
 * worker_id); RK_ENOTFOUND when none. Run it inside rk_db_begin: that
 * transaction is what keeps two workers from claiming one command. */
int rk_db_execution_claim(struct rk_db *db, int64_t worker_pid, const char *worker_id, struct rk_execution *out,
			  struct rk_error *err);
/* Writes state, phase, errors, result, times, cancel flag and worker of e. */
int rk_db_execution_update(struct rk_db *db, const struct rk_execution *e, struct rk_error *err);
int rk_db_execution_request_cancel(struct rk_db *db, const char *id, struct rk_error *err);
/* Ids of executions in state running (for recovery after a worker crash); malloc'd array of malloc'd ids. */
int rk_db_execution_running_ids(struct rk_db *db, char ***ids, size_t *n, struct rk_error *err);
int rk_db_execution_list(struct rk_db *db, const char *computer_id, struct rk_execution **out, size_t *n,
			 struct rk_error *err);
int rk_db_execution_count_pending(struct rk_db *db, struct rk_error *err);
/* Every unsettled (pending or running) execution and the sequence of its
 * last event (0: none yet), for a poller that wakes the event streams
 * concerned; an execution missing from it has settled. malloc'd. */
struct rk_execution_mark {
	char *id;
	int64_t last_sequence;
};
int rk_db_execution_marks(struct rk_db *db, struct rk_execution_mark **out, size_t *n, struct rk_error *err);
void rk_execution_marks_free(struct rk_execution_mark *m, size_t n);

struct rk_event {
	int64_t sequence;
	char *type, *data;
	int64_t created_at;
};
/* Appends an event with the next sequence (1, 2, ...); data is JSON or NULL. */
int rk_db_event_append(struct rk_db *db, const char *execution_id, const char *type, const char *data,
		       struct rk_error *err);
int rk_db_events_after(struct rk_db *db, const char *execution_id, int64_t after, struct rk_event **out, size_t *n,
		       struct rk_error *err);
void rk_events_free(struct rk_event *ev, size_t n);

/* --- fenced leases ------------------------------------------------------------ */
struct rk_lease {
	char *computer_id, *bot_id, *holder;
	int64_t fence, expires_at;
};
void rk_lease_release_record(struct rk_lease *l);
/* A bot's live execution lease on the computer at now_ms, if any: 1 with
 * its bot_id and holder in *out (release it), 0 when none is live (or the
 * read failed), < 0 when the query cannot be made. */
int rk_db_lease_live_any(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_lease *out,
			 struct rk_error *err);
/* In the caller's transaction: writes the (computer, bot) lease as given
 * (holder, fence, expiry), whatever it was. The rule of who may take it is
 * rk_lease_acquire's (engine/machine/lease.c). */
int rk_db_lease_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *holder, int64_t fence,
		    int64_t expires_at, int64_t now_ms, struct rk_error *err);
/* Extends or drops the lease only while fence is current and unexpired: RK_ESTALE otherwise. */
int rk_db_lease_renew(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence, int64_t ttl_ms,
		      int64_t now_ms, struct rk_error *err);
int rk_db_lease_drop(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence,
		     struct rk_error *err);
int rk_db_lease_get(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_lease *out,
		    struct rk_error *err);
/* A write that carries a fence: appends to the lease's audit log only when the
 * fence is live (used by tests and by fenced state writes). */
int rk_db_lease_fenced_write(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence,
			     const char *what, int64_t now_ms, struct rk_error *err);

/* 1 when a person's control lease of (computer, bot) is live at now_ms (bot
 * NULL: of any bot), 0 otherwise or on a database error; *holder
 * malloc'd when asked. */
int rk_db_control_live(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t now_ms, char **holder);

/* --- usage ------------------------------------------------------------------ */
int rk_db_usage_open(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err);
int rk_db_usage_close(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err);


/* --- exec sessions and terminal history --------------------------------------- */
struct rk_session_row {
	char *id, *computer_id, *owner, *command, *state;
	int tty;
	int64_t holder_pid, exit_code, signal, created_at, last_used_at; /* exit_code/signal -1 = none */
};
void rk_session_row_release(struct rk_session_row *s);
int rk_db_session_insert(struct rk_db *db, const struct rk_session_row *s, struct rk_error *err);
int rk_db_session_get(struct rk_db *db, const char *id, struct rk_session_row *out, struct rk_error *err);
int rk_db_session_touch(struct rk_db *db, const char *id, int64_t holder_pid, struct rk_error *err);
int rk_db_session_end(struct rk_db *db, const char *id, int64_t exit_code, int64_t signal, struct rk_error *err);
/* The command ended (its end may not have been read yet): for idle suspension. */
int rk_db_session_command_ended(struct rk_db *db, const char *id, struct rk_error *err);
int rk_db_session_list(struct rk_db *db, const char *computer_id, struct rk_session_row **out, size_t *n,
		       struct rk_error *err);

struct rk_history_entry {
	int64_t id;
	char *session_id, *bot_id, *kind;
	char *data;
	size_t data_len;
	int64_t exit_code, signal, created_at; /* -1 = none */
};
/* kind: command, input, output, exit. */
int rk_db_history_append(struct rk_db *db, const char *computer_id, const char *session_id, const char *bot_id,
			 const char *kind, const void *data, size_t len, int64_t exit_code, int64_t signal,
			 struct rk_error *err);
/* Entries after id `after` (0: from the start), oldest first, at most limit (0: 1000). */
int rk_db_history_list(struct rk_db *db, const char *computer_id, const char *session_id, int64_t after, size_t limit,
		       struct rk_history_entry **out, size_t *n, struct rk_error *err);
void rk_history_free(struct rk_history_entry *h, size_t n);

#endif
