#ifndef RK_DB_RESERVATION_H
#define RK_DB_RESERVATION_H
/* Computer reservations (engine/machine/reservation.h): computer_reservations,
 * one row per reserved computer, and reservation_phases, the phases its jobs
 * went through. Their SQL lives here; the rules (who may reserve or release,
 * when a job counts as silent) stay in engine/machine/reservation.c. Strings
 * in a record are malloc'd and owned by it (release it). */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

struct rk_reservation_row {
	char *computer_id, *kind, *owner, *phase, *state;
	char *operation;    /* the provider operation the job waits on, or NULL */
	int64_t worker_pid; /* 0: none */
	int64_t heartbeat_at, created_at;
};
void rk_reservation_row_release(struct rk_reservation_row *r);
void rk_reservation_rows_free(struct rk_reservation_row *rows, size_t n);

/* The computer's reservation: 1 with *out, 0 when it has none. */
int rk_db_reservation_get(struct rk_db *db, const char *computer_id, struct rk_reservation_row *out,
			  struct rk_error *err);
/* In the caller's transaction: the computer reserved for owner's kind job,
 * run by process pid: phase reserved, active, heartbeat now_ms. */
int rk_db_reservation_insert(struct rk_db *db, const char *computer_id, const char *kind, const char *owner,
			     int64_t pid, int64_t now_ms, struct rk_error *err);
/* Adds phase to the history of the computer's kind job. */
int rk_db_reservation_phase_add(struct rk_db *db, const char *computer_id, const char *kind, const char *phase,
				int64_t now_ms, struct rk_error *err);
/* The phases of the computer's latest job (from its reserved on), oldest
 * first; *phases is malloc'd, each phase too. */
int rk_db_reservation_phases(struct rk_db *db, const char *computer_id, char ***phases, size_t *n,
			     struct rk_error *err);

/* What a job names in its own reservation. */
enum rk_reservation_field { RK_RESERVATION_FIELD_PHASE, RK_RESERVATION_FIELD_OPERATION };
/* Sets field to value in the reservation process pid holds while it is
 * active, with a heartbeat at now_ms: 1 with *kind (malloc'd), the job's
 * kind; 0 when pid holds no active reservation of the computer (or the
 * write failed); < 0 when the statement cannot be made. */
int rk_db_reservation_update_own(struct rk_db *db, const char *computer_id, int64_t pid,
				 enum rk_reservation_field field, const char *value, int64_t now_ms, char **kind,
				 struct rk_error *err);
/* The heartbeat of the active reservation pid holds: the rows touched (0:
 * it holds none), or < 0. */
int rk_db_reservation_heartbeat(struct rk_db *db, const char *computer_id, int64_t pid, int64_t now_ms,
				struct rk_error *err);
/* Deletes the active reservation pid holds: the rows deleted (0: it holds
 * none), or < 0. */
int rk_db_reservation_delete_own(struct rk_db *db, const char *computer_id, int64_t pid, struct rk_error *err);
/* Deletes the computer's reservation, whoever holds it. */
int rk_db_reservation_delete(struct rk_db *db, const char *computer_id, struct rk_error *err);
/* Marks interrupted the active reservations whose heartbeat is older than
 * before_ms; *out (malloc'd) holds their computer_id, kind and phase. */
int rk_db_reservation_interrupt_silent(struct rk_db *db, int64_t before_ms, struct rk_reservation_row **out, size_t *n,
				       struct rk_error *err);

#endif
