#include "engine/machine/reservation.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/state/db_reservation.h"
#include "engine/util/host.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_reservation_kind, RK_RESERVATION_KIND, RK_RESERVATION_KINDS)

RK_NAMES_DEFINE(rk_reservation_state, RK_RESERVATION_STATE, RK_RESERVATION_STATES)

static int64_t silent_ms(void)
{
	const char *v = getenv("RAKAZO_RESERVATION_SILENT_MS");
	long long n = v && *v ? atoll(v) : 0;
	return n > 0 ? n : RK_RESERVATION_SILENT_DEFAULT_MS;
}

int rk_reservation_check(struct rk_db *db, const char *computer_id, struct rk_error *err)
{
	struct rk_reservation_row res;
	int r = rk_db_reservation_get(db, computer_id, &res, err);
	if (r <= 0)
		return r;
	int interrupted = rk_reservation_state_of(res.state) == RK_RESERVATION_INTERRUPTED;
	r = rk_error_set(err, RK_ECONFLICT, "computer %s is reserved by %s's %s job (phase %s%s)%s", computer_id,
			 res.owner, res.kind, res.phase, interrupted ? ", interrupted" : "",
			 interrupted ? ": once its job has stopped, its owner frees it with `rakazo computer release`"
				     : "");
	rk_reservation_row_release(&res);
	return r;
}

static int record_phase(struct rk_db *db, const char *computer_id, const char *kind, const char *phase,
			struct rk_error *err)
{
	return rk_db_reservation_phase_add(db, computer_id, kind, phase, rk_now_ms(), err);
}

int rk_reservation_begin(struct rk_engine *eng, const struct rk_computer *c, const char *kind, struct rk_error *err)
{
	if (rk_reservation_kind_of(kind) == RK_RESERVATION_KIND_UNKNOWN)
		return rk_error_set(err, RK_EINVALID, "a reservation is for an update or a recovery job, not '%s'",
				    kind ? kind : "");
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	if ((r = rk_reservation_check(eng->db, c->id, err)))
		goto fail;
	int64_t now = rk_now_ms();
	struct rk_lease live;
	if ((r = rk_db_lease_live_any(eng->db, c->id, now, &live, err)) < 0)
		goto fail;
	if (r) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "bot '%s' holds a live execution lease on computer '%s' (%s): stop it first",
				 live.bot_id, c->name, live.holder);
		rk_lease_release_record(&live);
		goto fail;
	}
	char *holder = NULL;
	if (rk_db_control_live(eng->db, c->id, NULL, now, &holder)) {
		r = rk_error_set(err, RK_ECONFLICT, "%s has control of a screen on computer '%s': release it first",
				 holder ? holder : "a person", c->name);
		free(holder);
		goto fail;
	}
	if ((r = rk_db_reservation_insert(eng->db, c->id, kind, eng->owner, getpid(), now, err)) ||
	    (r = record_phase(eng->db, c->id, kind, "reserved", err)) || (r = rk_db_commit(eng->db, err)))
		goto fail;
	rk_log(RK_LOG_INFO, "reservation %s: %s job by %s (pid %d)", c->id, kind, eng->owner, (int)getpid());
	return 0;
fail:
	rk_db_rollback(eng->db);
	return r;
}

/* An update of our own reservation (this pid's), with a heartbeat. */
static int own_update(struct rk_engine *eng, const char *computer_id, enum rk_reservation_field field,
		      const char *value, struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	char *kind = NULL;
	if ((r = rk_db_reservation_update_own(eng->db, computer_id, getpid(), field, value, rk_now_ms(), &kind, err)) <
	    0) {
		rk_db_rollback(eng->db);
		return r;
	}
	if (!kind) {
		rk_db_rollback(eng->db);
		return rk_error_set(err, RK_ESTALE,
				    "this job no longer holds computer %s's reservation (it was marked interrupted or "
				    "released)",
				    computer_id);
	}
	r = 0;
	if (field == RK_RESERVATION_FIELD_PHASE)
		r = record_phase(eng->db, computer_id, kind, value, err);
	free(kind);
	if (r == 0)
		r = rk_db_commit(eng->db, err);
	if (r)
		rk_db_rollback(eng->db);
	return r;
}

int rk_reservation_phase(struct rk_engine *eng, const char *computer_id, const char *phase, struct rk_error *err)
{
	return own_update(eng, computer_id, RK_RESERVATION_FIELD_PHASE, phase, err);
}

int rk_reservation_operation(struct rk_engine *eng, const char *computer_id, const char *operation,
			     struct rk_error *err)
{
	return own_update(eng, computer_id, RK_RESERVATION_FIELD_OPERATION, operation, err);
}

int rk_reservation_heartbeat(struct rk_engine *eng, const char *computer_id, struct rk_error *err)
{
	int r = rk_db_reservation_heartbeat(eng->db, computer_id, getpid(), rk_now_ms(), err);
	if (r == 0)
		return rk_error_set(err, RK_ESTALE, "this job no longer holds computer %s's reservation", computer_id);
	return r < 0 ? r : 0;
}

int rk_reservation_end(struct rk_engine *eng, const char *computer_id, struct rk_error *err)
{
	int r = rk_db_reservation_delete_own(eng->db, computer_id, getpid(), err);
	if (r == 0)
		return rk_error_set(err, RK_ESTALE, "this job no longer holds computer %s's reservation", computer_id);
	return r < 0 ? r : 0;
}

int rk_reservation_scan(struct rk_engine *eng, struct rk_error *err)
{
	struct rk_reservation_row *silent;
	size_t n;
	int r = rk_db_reservation_interrupt_silent(eng->db, rk_now_ms() - silent_ms(), &silent, &n, err);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++)
		rk_log(RK_LOG_WARN, "reservation %s: the %s job went silent in phase %s: marked interrupted (kept)",
		       silent[i].computer_id, silent[i].kind, silent[i].phase);
	rk_reservation_rows_free(silent, n);
	return 0;
}

static int pid_alive(int64_t pid)
{
	return rk_host_pid_alive(NULL, pid) == 1;
}

int rk_reservation_release(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_reservation_row res;
	int r = rk_db_reservation_get(eng->db, c->id, &res, err);
	if (r < 0)
		return r;
	if (r == 0)
		return rk_error_set(err, RK_ENOTFOUND, "computer '%s' has no reservation", c->name);
	const char *owner = res.owner, *operation = res.operation;
	int64_t pid = res.worker_pid;
	if (strcmp(owner, eng->owner) != 0) {
		r = rk_error_set(err, RK_EDENIED, "computer '%s' is reserved by %s: only they can release it", c->name,
				 owner);
		goto out;
	}
	if (pid_alive(pid) && pid != getpid()) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "the job holding computer '%s' (pid %lld) is still running: stop it first", c->name,
				 (long long)pid);
		goto out;
	}
	if (operation) {
		struct rk_session_row s = {0};
		struct rk_error e2;
		if (rk_db_session_get(eng->db, operation, &s, &e2) == 0) {
			int running = rk_session_state_of(s.state) == RK_SESSION_RUNNING && pid_alive(s.holder_pid);
			rk_session_row_release(&s);
			if (running) {
				r = rk_error_set(
					err, RK_ECONFLICT,
					"the job's command (session %s) still runs in computer '%s': end it with "
					"`rakazo computer kill %s %s` first",
					operation, c->name, c->name, operation);
				goto out;
			}
		}
	}
	r = rk_db_reservation_delete(eng->db, c->id, err);
	if (r == 0)
		rk_log(RK_LOG_INFO, "reservation %s: released by %s", c->id, eng->owner);
out:
	rk_reservation_row_release(&res);
	return r;
}

cJSON *rk_reservation_to_json(struct rk_db *db, const char *computer_id)
{
	struct rk_reservation_row res;
	if (rk_db_reservation_get(db, computer_id, &res, NULL) <= 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "kind", res.kind);
	cJSON_AddStringToObject(o, "owner", res.owner);
	cJSON_AddNumberToObject(o, "worker_pid", (double)res.worker_pid);
	rk_json_add_str_or_null(o, "operation", res.operation);
	cJSON_AddStringToObject(o, "phase", res.phase);
	cJSON_AddStringToObject(o, "state", res.state);
	cJSON_AddStringToObject(o, "heartbeat_at", rk_iso8601(res.heartbeat_at, buf, sizeof(buf)));
	cJSON_AddStringToObject(o, "created_at", rk_iso8601(res.created_at, buf, sizeof(buf)));
	rk_reservation_row_release(&res);
	cJSON *phases = cJSON_AddArrayToObject(o, "phases");
	char **names;
	size_t n;
	if (rk_db_reservation_phases(db, computer_id, &names, &n, NULL) == 0) {
		for (size_t i = 0; i < n; i++) {
			cJSON_AddItemToArray(phases, cJSON_CreateString(names[i]));
			free(names[i]);
		}
		free(names);
	}
	return o;
}
