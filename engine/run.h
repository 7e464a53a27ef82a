#ifndef RK_RUN_H
#define RK_RUN_H
/* Runs: the agent loop, in the calling process. A run is a row in `runs`
 * (engine/db_runs.h) and a conversation: the system prompt and the task go
 * to the model with the tools (engine/tools.h); every tool call it makes is
 * run in order and its result added (screenshots as images, only the last
 * keep_images of them with bytes, an unchanged frame without any); this
 * repeats until the model answers without tool calls (completed, the answer
 * stored) or a limit or an error ends it (failed, the reason stored). Each
 * model turn is one step; the row's steps, tokens and heartbeat are written
 * after each. At the end the computer's workspace is checkpointed
 * (rk_checkpoint_run_end): a completed run whose checkpoint fails is failed
 * (reason "checkpoint"); a failed run's checkpoint is best effort (logged
 * and reported as an event).
 *
 * Events go to the callback as cJSON objects (borrowed for the call), each
 * with "type", "run_id" and "time" (ISO-8601 UTC):
 *   run.started   {computer_id, computer, model, task, max_steps}
 *   model.turn    {step, finish_reason, text|null, tool_calls, usage {input_tokens, output_tokens}}
 *   tool.call     {step, id, name, arguments (the parsed object, or the raw text when malformed)}
 *   tool.result   {step, id, name, error? {code, message}, frame_hash?, image: "sent"|"unchanged"|null}
 *                 (never image bytes)
 *   run.checkpoint {ok, error?}
 *   run.finished  {state, steps, answer | reason + error}
 * Reasons: max_steps, max_wall, max_tokens, model, checkpoint, interrupted,
 * database. The engine never prints. */

#include <cJSON.h>
#include <signal.h>
#include <stdint.h>

#include "engine.h"
#include "model.h"

#define RK_RUN_MAX_STEPS_DEFAULT 30

typedef void (*rk_run_event_fn)(const cJSON *event, void *cb_ctx);

struct rk_run_options {
	const char *computer;  /* id or name; NULL: the only computer there is */
	const char *bot;       /* bot id, or NULL */
	const char *thread;    /* thread id, or NULL */
	const char *task;      /* required */
	const struct rk_model_flags *model; /* NULL: environment and config file only */
	int max_steps;         /* model turns; 0: RK_RUN_MAX_STEPS_DEFAULT */
	int64_t max_wall_ms;   /* 0: no limit */
	int64_t max_tokens;    /* input + output tokens over the run; 0: no limit */
	const char *system_prompt; /* NULL: the built-in one */
	volatile sig_atomic_t *cancel; /* non-zero (e.g. from SIGINT): the run ends interrupted */
};

/* Creates the run and runs it to its end. *run_id (malloc'd) is set as soon
 * as the row exists, so the caller can name it even on failure. Returns 0
 * when the run completed; otherwise a negative code with err saying why:
 * the run failed ("max_steps: ...", the model's error, ...) or was
 * interrupted, or it could not start (no model configured: RK_EUSAGE, no
 * such computer: RK_ENOTFOUND; then no row is made unless *run_id is set).
 * A model endpoint that is down fails the run with RK_EUNAVAILABLE after
 * the model client's retries. */
int rk_run_start(struct rk_engine *eng, const struct rk_run_options *opt, rk_run_event_fn event_cb, void *cb_ctx,
		 char **run_id, struct rk_error *err);

#endif
