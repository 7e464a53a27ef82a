#ifndef RK_IDLE_H
#define RK_IDLE_H
/* Idle suspension and deferred Team checkpoints (issue 6).
 *
 * The worker keeps one saved idle schedule per running computer whose
 * pause_after is set: when the computer has been idle that long (no active
 * run, live execution lease, running shell session, person's control,
 * unfinished lifecycle command or reservation), the worker submits a saved
 * pause (command key idle:<computer>:<due>), which checkpoints the workspace
 * first and pauses the machine as its own lifecycle execution. Scans run
 * every RAKAZO_IDLE_SCAN_MS (1000); for tests RAKAZO_IDLE_SECOND_MS scales
 * one second of pause_after.
 *
 * On a Team computer a checkpoint asked for while another bot's execution
 * lease or a person's control is live is recorded as deferred, and made
 * when the last of them ends (or when the computer idles). */

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"

/* The computer was used now. Never fails the caller. */
void rk_idle_touch(struct rk_engine *eng, const char *computer_id);
/* 1 when c is busy now (*why malloc'd, may be NULL), 0 when idle. */
int rk_idle_busy(struct rk_engine *eng, const struct rk_computer *c, char **why);
/* One pass: refresh schedules, submit the pauses that are due, make the
 * deferred checkpoints whose blockers are gone, mark silent reservations
 * interrupted. *pending (may be NULL): schedules still waiting. */
int rk_idle_scan(struct rk_engine *eng, int *pending, struct rk_error *err);
int64_t rk_idle_scan_interval_ms(void);
/* How long a shell session may go without a call before its holder ends it
 * (engine/machine/session.h): RAKAZO_SESSION_IDLE_MS, else 30 min. */
int64_t rk_idle_session_ms(void);
/* {last_active_at, due_at, busy, why} of c, or NULL when it has no schedule. */
cJSON *rk_idle_to_json(struct rk_engine *eng, const struct rk_computer *c);

/* A checkpoint of c on behalf of bot (NULL: nobody). On a Team computer
 * with another bot's lease or a person's control live it is deferred
 * (returns 1, recorded); otherwise made now (returns 0). */
int rk_idle_checkpoint(struct rk_engine *eng, const struct rk_computer *c, const char *bot, const char *reason,
		       struct rk_error *err);
/* The checkpoint at a run's end (run_id may be NULL), on behalf of the
 * run's bot as rk_idle_checkpoint. failed: best effort (the error is logged
 * and 0 returned); otherwise a failure is returned, and the run must not be
 * finalized as completed without its checkpoint. Deferred counts as made. */
int rk_idle_run_end(struct rk_engine *eng, const char *computer_id, const char *run_id, int failed,
		    struct rk_error *err);
/* Makes c's deferred checkpoint if nothing blocks it any more: 1 made, 0 nothing to do or still blocked. */
int rk_idle_flush_deferred(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err);
/* {reason, blocked_by, created_at} or NULL. */
cJSON *rk_idle_deferred_to_json(struct rk_db *db, const char *computer_id);

#endif
