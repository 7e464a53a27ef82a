#ifndef RK_RUN_H
#define RK_RUN_H
/* Runs: the agent loop. A run is a row in `runs` (engine/state/db_runs.h), a
 * conversation and a stream of events. The system prompt and the task go
 * to the model with the tools (engine/agent/tools.h, plus request_takeover here);
 * every tool call it makes is run in order and its result added
 * (screenshots as images, only the last keep_images of them with bytes, an
 * unchanged frame without any); this repeats until the model answers
 * without tool calls (completed, the answer stored) or a limit, an error, a
 * cancel or an interrupt ends it (the reason stored). Each model turn is one
 * step; the row's steps, tokens and heartbeat are written after each. At
 * the end the computer's workspace is checkpointed (rk_idle_run_end):
 * a completed run whose checkpoint fails is failed (reason "checkpoint"); a
 * failed run's checkpoint is best effort (reported as an event).
 *
 * Events go to the callback as cJSON objects (borrowed for the call) and
 * into run_events, each with "seq" (1, 2, ... per run, over its attempts),
 * "type", "run_id" and "time" (ISO-8601 UTC):
 *   run.started   {attempt, computer_id, computer, model, task, max_steps, resumed}
 *   model.text    {step, text}   a streamed turn's text as it comes, a line or about
 *                 100 ms at a time (their texts joined are the turn's text)
 *   model.tool_call {step, id, name, arguments}  a streamed turn's call as soon as the model
 *                 decided it (before model.turn; tool.call follows when it runs)
 *   model.turn    {step, finish_reason, stop|null, refusal?, text|null, tool_calls,
 *                  usage {input_tokens, output_tokens, cached_input_tokens,
 *                  cache_write_input_tokens, images, new_images, cost_usd|null}}
 *                  (stop: rk_model_stop_of's word for an unusual end; images: those
 *                  the request carried, new_images: added since the last one;
 *                  cost_usd: at the model's price, null without one)
 *   tool.call     {step, id, name, arguments (the parsed object, or the raw text when malformed)}
 *   tool.result   {step, id, name, output (the text the model got, clipped), error? {code, message},
 *                  frame_hash?, image: "sent"|"unchanged"|null}   (never image bytes)
 *   run.waiting_takeover {reason}          run.takeover_ended {note|null}
 *   run.compacted {step, method: server|summary, before_tokens, after_tokens, kept_messages,
 *                  dropped_messages, context_window, usage, note?}   (engine/agent/model_compact.h; stored as a marker and
 *                  the compacted conversation, which a resume replays)
 *   run.compaction_failed {step, method, before_tokens, error {code, message}}   (the run goes on)
 *   run.checkpoint {ok, error?}
 *   run.finished  {state, steps, usage (the run's totals, as model.turn's but
 *                  new_images), answer | reason + error}
 *   run.interrupted {reason, error, auto_resume}   (written by whoever found the run stale;
 *                  auto_resume: a worker will resume it)
 *   run.auto_resumed {from_attempt, reason, worker, previous}   (see Auto-resume)
 * Every event, stored message, history line and stored answer is redacted
 * with the values of the run's user's secrets (engine/access/secret.h), read again
 * each step.
 * Reasons: max_steps, max_wall, max_tokens, max_cost, model, refusal,
 * output_limit, context_window, content_filter, checkpoint, interrupted,
 * cancelled, lease_lost, stale, worker_gone, computer, database.
 *
 * Limits (max_steps, max_wall_ms, max_tokens) count per attempt: a resumed
 * run gets them afresh, while the row's steps and tokens are totals.
 * max_cost is the run's whole budget (its row's cost, over the attempts):
 * it needs a price for the model (RK_EUSAGE at create or resume without
 * one), and is checked before each model call. A run failed by max_cost or
 * output_limit can be resumed too.
 *
 * Unusual stops (model.h rk_model_stop_of): a refusal, a content filter or
 * a full context window fails the run with that reason (the reply's calls
 * are not run); a reply cut at the output limit (max_tokens) is never the
 * answer and its calls are never run (their arguments may be cut): each
 * gets an error result, or a cut answer a user message, and the model is
 * asked again; a second cut reply in a row fails the run (output_limit);
 * pause_turn sends the turn back as it is for the model to go on.
 *
 * The execution lease: a run holds the fenced (computer, bot) lease of
 * engine/machine/lease.h (bot "default" when the run has none) from its creation to
 * its end, holder = the run id, renewed with its heartbeat; every tool call
 * first checks that its fence is still live (else the run ends failed,
 * reason lease_lost). A second run for the same computer and bot is
 * RK_ECONFLICT while the first is live; different bots run side by side.
 *
 * Liveness: the process running a run heart-beats (each step, and every
 * second while it waits for a takeover). rk_run_reap ends as interrupted a
 * live run whose heartbeat is older than rk_run_stale_ms() (10 minutes;
 * RAKAZO_RUN_STALE_MS overrides) or whose process on this host is gone,
 * and drops its lease. `run list`, the worker's passes (each second; a new
 * run starts a worker when none runs, and the worker stays while a run is
 * live), resume, cancel and a new run call it. An interrupted run (and one failed by a limit or by
 * the model endpoint) can be resumed: the same run id and thread continue
 * from the stored messages (images are not stored: the model is told a
 * screenshot was there), and a call whose result was never stored gets an
 * error result saying its outcome is unknown.
 *
 * Auto-resume: a run made without no_auto_resume (`rakazo run
 * --no-auto-resume`; its options say "auto_resume") gets one automatic
 * resume (the row's auto_resumes_left). When the reaper marks it
 * interrupted because its process is gone (worker_gone) or went quiet
 * (stale), a worker's next pass (rk_run_auto_resume) claims it with one
 * conditional update (of racing workers, or a worker and a person's
 * resume, one wins; the reaper starts a worker if none runs), stores
 *   run.auto_resumed {from_attempt, reason, worker {host, pid}, previous {host_key, pid}}
 * and starts a process of its own for it (`rakazo run execute ID`, exec'd
 * afresh, with the run's model endpoint and the worker's environment for
 * the rest), whose run.started says resumed: true. It continues from the
 * stored messages like any resume: a committed step (its tool results
 * stored) is not run again. The process found quiet, if it still lives,
 * is fenced: its lease went with the interruption, so its next tool call
 * ends it with lease_lost. Once only: a run whose new attempt dies too
 * stays interrupted (run.interrupted says auto_resume: false) until a
 * person resumes it; other reasons (Ctrl-C, cancel, a failure) are never
 * resumed automatically.
 *
 * The engine never prints. */

#include <cJSON.h>
#include <signal.h>
#include <stdint.h>

#include "engine/state/db_runs.h"
#include "engine/state/engine.h"
#include "engine/agent/model.h"

#define RK_RUN_MAX_STEPS_DEFAULT 30
#define RK_RUN_STALE_MS_DEFAULT (10 * 60 * 1000)
#define RK_RUN_LEASE_BOT_DEFAULT "default"

typedef void (*rk_run_event_fn)(const cJSON *event, void *cb_ctx);

struct rk_run_options {
	const char *computer;		    /* id or name; NULL: the only computer there is */
	const char *bot;		    /* bot id, or NULL */
	const char *thread;		    /* thread id, or NULL */
	const char *task;		    /* required */
	const struct rk_model_flags *model; /* NULL: environment and config file only */
	int max_steps;			    /* model turns; 0: RK_RUN_MAX_STEPS_DEFAULT */
	int64_t max_wall_ms;		    /* 0: no limit */
	int64_t max_tokens;		    /* input + output tokens per attempt; 0: no limit */
	double max_cost;		    /* USD the whole run may spend; 0: no limit (needs a price) */
	const char *system_prompt;	    /* NULL: the built-in one */
	const char *trigger;	       /* who started it: "person" (NULL) or "webhook" (the stricter approval gate) */
	volatile sig_atomic_t *cancel; /* non-zero (e.g. from SIGINT): the run ends interrupted */
	volatile sig_atomic_t *wake;   /* non-zero: stop waiting (a model call, a backoff) and look at the
					* row (rk_run_cancel signals the run's process with SIGUSR1 for it);
					* set it from the SIGINT handler too. May be NULL. */
	int no_auto_resume;	       /* 1: a run whose process dies stays interrupted (see Auto-resume) */
};

/* How a created run is run in this process. */
struct rk_run_exec {
	rk_run_event_fn cb; /* may be NULL */
	void *cb_ctx;
	volatile sig_atomic_t *cancel; /* as in rk_run_options */
	volatile sig_atomic_t *wake;
};

/* Creates the run (state queued, its lease taken) and runs it to its end
 * here. *run_id (malloc'd) is set as soon as the row exists, so the caller
 * can name it even on failure. Returns 0 when the run completed; otherwise
 * a negative code with err saying why: the run failed ("max_steps: ...",
 * the model's error, ...), was cancelled or interrupted (RK_EINTERRUPTED,
 * the message says which), or it could not start (no model configured: RK_EUSAGE,
 * no such computer: RK_ENOTFOUND, the bot already runs there:
 * RK_ECONFLICT; then no row is made and *run_id stays NULL). */
int rk_run_start(struct rk_engine *eng, const struct rk_run_options *opt, rk_run_event_fn event_cb, void *cb_ctx,
		 char **run_id, struct rk_error *err);
/* Creates the queued run and takes its lease, without running it. */
int rk_run_create(struct rk_engine *eng, const struct rk_run_options *opt, char **run_id, struct rk_error *err);
/* Runs a queued run (or one rk_run_resume made ready) to its end here. */
int rk_run_execute(struct rk_engine *eng, const char *run_id, const struct rk_run_exec *x, struct rk_error *err);
/* Runs a queued run in a detached process of its own (it outlives the
 * caller); returns once that process is up. */
int rk_run_detach(struct rk_engine *eng, const char *run_id, struct rk_error *err);

/* Limits for a resume; 0 / NULL: the run's own. */
struct rk_run_resume_options {
	int max_steps;
	int64_t max_wall_ms, max_tokens;
	double max_cost;
	int detach; /* run it in a detached process instead of here */
};
/* Continues an interrupted run, or one failed by max_steps, max_wall,
 * max_tokens, the model or a lost lease: RK_ECONFLICT for any other state
 * (a live run, completed, cancelled). Runs it here (x) or detached. */
int rk_run_resume(struct rk_engine *eng, const char *run_id, const struct rk_run_resume_options *ro,
		  const struct rk_run_exec *x, struct rk_error *err);

/* Asks the run to stop: it ends cancelled at its next step boundary, its
 * running shell sessions killed. Waits up to wait_ms (0: not at all) for it
 * to end; RK_ETIMEOUT when it has not by then (the request stays). An
 * interrupted or queued run with no process is cancelled at once.
 * RK_ECONFLICT when it has already ended. */
int rk_run_cancel(struct rk_engine *eng, const char *run_id, int64_t wait_ms, struct rk_error *err);
/* Ends the takeover a run waits in: the note (may be NULL) goes to the
 * model as the result of its request_takeover. RK_ECONFLICT when the run is
 * not waiting for a takeover. */
int rk_run_continue(struct rk_engine *eng, const char *run_id, const char *note, struct rk_error *err);

/* Removes an ended run: its row, events and conversation, and its
 * attachments (DATA_DIR/attachments/RUN). RK_ECONFLICT while it is live
 * (cancel it first). Records that outlive runs stay: terminal history,
 * memory revisions, approval decisions. Reaps first, so a run whose process
 * is gone counts as ended. */
int rk_run_remove(struct rk_engine *eng, const char *run_id, struct rk_error *err);
/* The ids of ended runs that finished before before_ms (see
 * rk_db_run_ended_before), removed unless dry_run. *ids is malloc'd, each id
 * too: with an error it holds those removed before it. */
int rk_run_prune(struct rk_engine *eng, int64_t before_ms, int dry_run, char ***ids, size_t *n, struct rk_error *err);

/* Marks stale or orphaned live runs interrupted (see above); *marked (may
 * be NULL) counts them. */
int rk_run_reap(struct rk_engine *eng, int *marked, struct rk_error *err);
/* The worker's side of auto-resume (above): takes each interrupted run
 * with an automatic resume left, stores its run.auto_resumed and starts
 * `rakazo run execute ID` for it; *resumed (may be NULL) counts them. A run
 * whose process cannot start goes back to interrupted (its resume spent)
 * and is logged; only a database error is returned. */
int rk_run_auto_resume(struct rk_engine *eng, int *resumed, struct rk_error *err);
int64_t rk_run_stale_ms(void);

/* 1 when a run of bot (NULL: the default bot) on the computer waits for a
 * person to take over, 0 when none does (or on a database error). Such a
 * run keeps its lease but is not active: a takeover may go ahead. */
int rk_run_waiting_takeover(struct rk_engine *eng, const char *computer_id, const char *bot_id);
/* 1 when a run of bot on the computer is live and not waiting for a
 * takeover (a takeover should be refused), 0 otherwise. */
int rk_run_active(struct rk_engine *eng, const char *computer_id, const char *bot_id);

/* --- what a client reads (cmd/, tui/, api/ never call engine/state) --------- */

/* A run by its id or a unique prefix of it of at least RK_RUN_PREFIX_MIN
 * characters (the TUI shows the first 13): RK_ENOTFOUND when none fits,
 * RK_EINVALID, listing them, when several do. Release with rk_run_row_release. */
#define RK_RUN_PREFIX_MIN 6
int rk_run_get(struct rk_engine *eng, const char *ref, struct rk_run_row *out, struct rk_error *err);
/* Newest first, at most limit (0: 100); computer_id NULL: every computer's.
 * Free with rk_run_rows_free. */
int rk_run_list(struct rk_engine *eng, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		struct rk_error *err);
/* The run's stored events after seq after, at most limit (0: 1000)
 * (rk_run_events_free), and the last seq stored (0: none). */
int rk_run_events(struct rk_engine *eng, const char *run_id, int64_t after, size_t limit, struct rk_run_event **out,
		  size_t *n, struct rk_error *err);
int rk_run_event_last(struct rk_engine *eng, const char *run_id, int64_t *seq, struct rk_error *err);

#endif
