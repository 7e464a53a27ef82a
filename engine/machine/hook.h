#ifndef RK_HOOK_H
#define RK_HOOK_H
/* Hooks: how a module of the machine wing tells a higher one that something
 * happened without calling up. The lifecycle (execution.c) announces a
 * provision, a resume, a stop or pause and a delete, and a caller's wait;
 * idle announces a computer that went down; display a display closing; team
 * a person's control released; the worker asks for the runs' reaping and
 * their automatic resume. The
 * module that answers (checkpoint, worker, team, gateway, the run loop) is
 * named in one table, rk_engine_hooks_init (engine/agent/hooks.h), which
 * every process that opens an engine calls once (forked helpers inherit it).
 *
 * One answer per event, a fixed table of typed function pointers. A hook
 * left unanswered is an error (RK_EFAILED, "engine hook X is not
 * registered"), never a silent skip: a checkpoint or a revocation that does
 * not happen must not look like one that did. */

#include <cJSON.h>

#include "engine/machine/machine.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"

struct rk_hooks {
	/* lifecycle (execution.c, the worker's side), answered by checkpoint;
	 * a failure fails the command */
	/* before a provision: the workspace a provider mounts is made whole */
	int (*before_provision)(struct rk_engine *eng, const struct rk_computer *c, cJSON *result,
				struct rk_error *err);
	/* after a provision, before any tool: a replacement gets the latest workspace */
	int (*after_provision)(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
			       const struct rk_provision_result *pr, cJSON *result, struct rk_error *err);
	/* after a resume, before any tool: a revision made while it was down comes in */
	int (*after_resume)(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
			    cJSON *result, struct rk_error *err);
	/* before a stop or pause (op): a failure leaves the machine as it is */
	int (*before_lifecycle)(struct rk_engine *eng, const struct rk_computer *c, const char *op,
				struct rk_error *err);
	/* the machine of c was destroyed by a delete */
	int (*deleted)(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err);

	/* a caller waits for a saved command (execution.c): some worker must run it */
	int (*waiting)(struct rk_engine *eng, struct rk_error *err);
	/* idle.c: the machine of computer_id stopped or failed, its displays went with it */
	int (*computer_down)(struct rk_engine *eng, const char *computer_id, struct rk_error *err);
	/* display.c: a display is about to close; a failure keeps it as it is */
	int (*display_closing)(struct rk_engine *eng, const char *computer_id, int display, struct rk_error *err);
	/* team.c: a person released control of bot_id's screen */
	int (*control_released)(struct rk_engine *eng, const char *computer_id, const char *bot_id,
				struct rk_error *err);
	/* worker.c, each pass: runs whose process went quiet end; *marked counts them */
	int (*reap_runs)(struct rk_engine *eng, int *marked, struct rk_error *err);
	/* worker.c, each pass after reap_runs: interrupted runs that asked for it
	 * are resumed in processes of their own; *resumed counts them */
	int (*resume_runs)(struct rk_engine *eng, int *resumed, struct rk_error *err);
};

/* Answers the events h has a function for (NULL fields are left as they
 * are). Once per process, before any thread starts; not thread-safe. */
void rk_hooks_register(const struct rk_hooks *h);
/* The table (never NULL; a field is NULL while nothing answers it). */
const struct rk_hooks *rk_hooks(void);
/* 0 when every event is answered; RK_EFAILED naming the first that is not. */
int rk_hooks_check(struct rk_error *err);
/* Forgets every answer (tests). */
void rk_hooks_reset(void);
/* The error a raiser returns for an event nothing answers. */
int rk_hook_unset(const char *event, struct rk_error *err);

/* Raises event (a field of struct rk_hooks) with the arguments that follow
 * err: its answer's return value, or rk_hook_unset's error. */
#define RK_HOOK(event, err, ...) (rk_hooks()->event ? rk_hooks()->event(__VA_ARGS__) : rk_hook_unset(#event, err))

#endif
