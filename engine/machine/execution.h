#ifndef RK_EXECUTION_H
#define RK_EXECUTION_H
/* Saved lifecycle commands (create, pause, resume, stop, delete). A command
 * is recorded with its command key and runs in the background worker; the
 * same key and body give back the same execution, one lifecycle command at
 * a time per computer, and a provider reply that was lost leaves the
 * execution outcome_unknown until the operator decides it. */

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/names.h"

struct rk_submit {
	const char *op;		 /* create | pause | resume | stop | delete */
	const char *computer;	 /* id or name; NULL for create */
	const cJSON *body;	 /* create: {name, provider, desktop, pause_after, mode, options} */
	const char *command_key; /* NULL: one is generated */
	const char *key_scope;	 /* whose key it is; NULL: the engine's owner (a token, a user) */
};

/* Records the command (or finds the one saved under the same key). *existed
 * is 1 when the key was already used with the same body. RK_ECONFLICT when
 * the key was used for a different command, or when another lifecycle
 * command of the computer has not finished (the message names it). A key
 * is looked up only in its scope: another identity's same key is another
 * command. */
int rk_execution_submit(struct rk_engine *eng, const struct rk_submit *req, struct rk_execution *out, int *existed,
			struct rk_error *err);
int rk_execution_get(struct rk_engine *eng, const char *id, struct rk_execution *out, struct rk_error *err);
/* Cancels a pending command at once; a running one stops before its provider call. */
int rk_execution_cancel(struct rk_engine *eng, const char *id, struct rk_execution *out, struct rk_error *err);
/* Settles an outcome_unknown execution: outcome is "succeeded" or "failed". */
int rk_execution_decide(struct rk_engine *eng, const char *id, const char *outcome, struct rk_execution *out,
			struct rk_error *err);
/* Polls until the execution leaves pending/running or timeout_ms passes (RK_ETIMEOUT). */
int rk_execution_wait(struct rk_engine *eng, const char *id, int64_t timeout_ms, struct rk_execution *out,
		      struct rk_error *err);
int rk_execution_state_is_final(const char *state); /* succeeded, failed, cancelled */

/* The receipt / resource as JSON (caller owns it). */
cJSON *rk_execution_to_json(const struct rk_execution *e);
cJSON *rk_event_to_json(const struct rk_event *ev);

/* Worker side: runs one claimed execution to its end. */
int rk_execution_run(struct rk_engine *eng, struct rk_execution *e, struct rk_error *err);
/* After a worker crash: executions left running by a worker that alive()
 * says is gone (every one, when alive is NULL) go back to pending, or to
 * outcome_unknown when their provider call was in flight. Each is checked
 * again inside its own transaction, so two workers never both take one. */
int rk_execution_recover(struct rk_engine *eng, int (*alive)(struct rk_engine *, const struct rk_execution *, void *),
			 void *arg, struct rk_error *err);

/* A saved command's state (lifecycle_executions.state, rk_execution.state).
 * outcome_unknown: the provider's reply was lost; the operator settles it. */
#define RK_EXECUTION_STATES(X)                                                                                         \
	X(RK_EXECUTION_PENDING, "pending")                                                                             \
	X(RK_EXECUTION_RUNNING, "running")                                                                             \
	X(RK_EXECUTION_SUCCEEDED, "succeeded")                                                                         \
	X(RK_EXECUTION_FAILED, "failed")                                                                               \
	X(RK_EXECUTION_CANCELLED, "cancelled")                                                                         \
	X(RK_EXECUTION_OUTCOME_UNKNOWN, "outcome_unknown")
RK_NAMES_ENUM(rk_execution_state, RK_EXECUTION_STATE, RK_EXECUTION_STATES);

/* What a saved command does (lifecycle_executions.op, rk_execution.op). */
#define RK_LIFECYCLE_OPS(X)                                                                                            \
	X(RK_LIFECYCLE_CREATE, "create")                                                                               \
	X(RK_LIFECYCLE_PAUSE, "pause")                                                                                 \
	X(RK_LIFECYCLE_RESUME, "resume")                                                                               \
	X(RK_LIFECYCLE_STOP, "stop")                                                                                   \
	X(RK_LIFECYCLE_DELETE, "delete")
RK_NAMES_ENUM(rk_lifecycle_op, RK_LIFECYCLE_OP, RK_LIFECYCLE_OPS);

#endif
