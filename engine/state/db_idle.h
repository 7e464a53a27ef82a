#ifndef RK_DB_IDLE_H
#define RK_DB_IDLE_H
/* Idle suspension's tables and reads (engine/machine/idle.h): idle_schedules
 * (when a computer was last used and when its pause is due),
 * deferred_checkpoints (a Team checkpoint waiting for its blockers), and
 * what keeps a computer busy or when it was last used, read across the
 * leases, control, runs, lifecycle commands and sessions. Their SQL lives
 * here; the rules (what counts as busy, when to pause) stay in
 * engine/machine/idle.c. Strings in a record are malloc'd and owned by it. */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* --- idle_schedules -------------------------------------------------------- */

/* Records use of the computer at at (kept when an earlier use), its pause
 * due at due (0: none), updated now_ms. */
int rk_db_idle_schedule_put(struct rk_db *db, const char *computer_id, int64_t at, int64_t due, int64_t now_ms,
			    struct rk_error *err);
int rk_db_idle_schedule_drop(struct rk_db *db, const char *computer_id, struct rk_error *err);
/* 1 with *last_active_at and *due_at (-1: none) when the computer has a
 * schedule, 0 when not (or the read failed). */
int rk_db_idle_schedule_get(struct rk_db *db, const char *computer_id, int64_t *last_active_at, int64_t *due_at);

/* --- busy and last use ------------------------------------------------------- */

/* What keeps the computer busy at now_ms, as a sentence (malloc'd), or NULL:
 * a bot's live execution lease, a person's control, a queued or running run
 * (or one waiting for a takeover that is live), an unfinished lifecycle
 * command. Sessions are read with rk_db_idle_sessions. */
char *rk_db_idle_busy_reason(struct rk_db *db, const char *computer_id, int64_t now_ms);
/* A session whose command has not ended; holder_host NULL for a holder
 * from before hosts were kept. */
struct rk_idle_session {
	char *id, *holder_host;
	int64_t holder_pid, last_used_at;
};
void rk_idle_sessions_free(struct rk_idle_session *s, size_t n);
/* The computer's running sessions whose command has not ended; *out malloc'd. */
int rk_db_idle_sessions(struct rk_db *db, const char *computer_id, struct rk_idle_session **out, size_t *n,
			struct rk_error *err);
/* The latest sign of use of the computer: its schedule's last use, its
 * sessions', leases', runs' and lifecycle commands' times (0: none, or the
 * read failed). */
int64_t rk_db_idle_last_active(struct rk_db *db, const char *computer_id);

/* --- deferred_checkpoints ----------------------------------------------------- */

struct rk_deferred_row {
	char *reason, *blocked_by; /* blocked_by may be NULL */
	int64_t created_at;
};
void rk_deferred_row_release(struct rk_deferred_row *d);
/* What blocks a Team checkpoint asked for by bot (NULL: nobody) at now_ms,
 * as a sentence (malloc'd), or NULL: another bot's live execution lease or
 * any person's control. */
char *rk_db_deferred_blocker(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t now_ms);
/* Records (or replaces) the computer's deferred checkpoint. */
int rk_db_deferred_put(struct rk_db *db, const char *computer_id, const char *reason, const char *blocked_by,
		       int64_t now_ms, struct rk_error *err);
/* 1 with *out when the computer has a deferred checkpoint, 0 when not (or
 * the read failed), < 0 when the query cannot be made. */
int rk_db_deferred_get(struct rk_db *db, const char *computer_id, struct rk_deferred_row *out, struct rk_error *err);
int rk_db_deferred_drop(struct rk_db *db, const char *computer_id, struct rk_error *err);

#endif
