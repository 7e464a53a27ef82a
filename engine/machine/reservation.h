#ifndef RK_RESERVATION_H
#define RK_RESERVATION_H
/* Computer-level reservations (issue 8): an update or recovery job holds
 * one for the whole computer, which excludes new execution leases, stop,
 * takeover and idle suspension. The job stores its phases as it goes and
 * heartbeats; a job silent for RAKAZO_RESERVATION_SILENT_MS (10 min) is
 * marked interrupted by the worker's scan and keeps its reservation, since
 * a silent job may still be acting. Only its owner's `rakazo computer
 * release C` frees it then, after confirming that the job's process and
 * its provider operation (a shell session) have stopped. A stale heartbeat
 * alone never frees it. */

#include <cJSON.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/names.h"

#define RK_RESERVATION_SILENT_DEFAULT_MS (10 * 60 * 1000)

/* kind: update | recovery. RK_ECONFLICT when the computer is reserved, or
 * while a bot holds a live lease or a person has control (stop them first). */
int rk_reservation_begin(struct rk_engine *eng, const struct rk_computer *c, const char *kind, struct rk_error *err);
/* The job's progress: stores the phase (and its history) and heartbeats.
 * RK_ESTALE when this process no longer holds the reservation. */
int rk_reservation_phase(struct rk_engine *eng, const char *computer_id, const char *phase, struct rk_error *err);
/* Names the provider operation (a session id) the job is waiting on. */
int rk_reservation_operation(struct rk_engine *eng, const char *computer_id, const char *operation,
			     struct rk_error *err);
/* The job is alive (heartbeat only). */
int rk_reservation_heartbeat(struct rk_engine *eng, const char *computer_id, struct rk_error *err);
/* The job ends: its own reservation goes. */
int rk_reservation_end(struct rk_engine *eng, const char *computer_id, struct rk_error *err);

/* In the caller's transaction (or none): RK_ECONFLICT when c is reserved, naming the job; 0 otherwise. */
int rk_reservation_check(struct rk_db *db, const char *computer_id, struct rk_error *err);
/* Marks jobs silent longer than RAKAZO_RESERVATION_SILENT_MS interrupted. */
int rk_reservation_scan(struct rk_engine *eng, struct rk_error *err);
/* `rakazo computer release C`: by the owner only (RK_EDENIED), once the job's
 * process has ended and its session is no longer running (RK_ECONFLICT). */
int rk_reservation_release(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err);
/* {kind, owner, worker_pid, operation, phase, state, heartbeat_at, created_at, phases[]}, or NULL when none. */
cJSON *rk_reservation_to_json(struct rk_db *db, const char *computer_id);

/* A reservation's state (computer_reservations.state): interrupted once its
 * job went silent; only its owner's release frees it then. */
#define RK_RESERVATION_STATES(X)                                                                                       \
	X(RK_RESERVATION_ACTIVE, "active")                                                                             \
	X(RK_RESERVATION_INTERRUPTED, "interrupted")
RK_NAMES_ENUM(rk_reservation_state, RK_RESERVATION_STATE, RK_RESERVATION_STATES);

/* The job a reservation is for (computer_reservations.kind). */
#define RK_RESERVATION_KINDS(X)                                                                                        \
	X(RK_RESERVATION_UPDATE, "update")                                                                             \
	X(RK_RESERVATION_RECOVERY, "recovery")
RK_NAMES_ENUM(rk_reservation_kind, RK_RESERVATION_KIND, RK_RESERVATION_KINDS);

#endif
