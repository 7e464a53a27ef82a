/* The agent loop (see run.h). */

#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "db_runs.h"
#include "execution.h"
#include "tools.h"
#include "util/buf.h"
#include "util/id.h"
#include "util/json.h"
#include "util/log.h"
#include "util/time.h"

static const char default_prompt[] =
	"You are an agent working on a sandboxed Linux computer through tools. Your workspace is the current "
	"directory of shell and the root of the file tools; files you leave there are kept. Work step by step: "
	"look before you act, check the result of each action, and prefer shell and the file tools where they do "
	"the job. When the task is done, answer with a short summary of what you did and what you found, without "
	"calling a tool.";

struct run {
	struct rk_engine *eng;
	const struct rk_run_options *opt;
	rk_run_event_fn cb;
	void *cb_ctx;
	char *id;
	struct rk_computer c;
	struct rk_model_config cfg;
	int64_t steps, in_tok, out_tok;
};

/* Sends an event of type with the members of body (consumed; may be NULL). */
static void emit(struct run *run, const char *type, cJSON *body)
{
	if (!run->cb) {
		cJSON_Delete(body);
		return;
	}
	cJSON *ev = cJSON_CreateObject();
	char when[32];
	cJSON_AddStringToObject(ev, "type", type);
	cJSON_AddStringToObject(ev, "run_id", run->id);
	cJSON_AddStringToObject(ev, "time", rk_iso8601(rk_now_ms(), when, sizeof(when)));
	if (body) {
		cJSON *m;
		while ((m = body->child)) {
			cJSON_DetachItemViaPointer(body, m);
			cJSON_AddItemToObject(ev, m->string, m);
		}
		cJSON_Delete(body);
	}
	run->cb(ev, run->cb_ctx);
	cJSON_Delete(ev);
}

/* The computer to run on: the one named, else the only one. */
static int pick_computer(struct rk_engine *eng, const char *ref, struct rk_computer *out, struct rk_error *err)
{
	if (ref)
		return rk_db_computer_get(eng->db, ref, out, err);
	struct rk_computer *cs;
	size_t n;
	int r = rk_db_computer_list(eng->db, &cs, &n, err);
	if (r)
		return r;
	if (n == 1) {
		*out = cs[0];
		free(cs);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		rk_computer_release(&cs[i]);
	free(cs);
	if (n == 0)
		return rk_error_set(err, RK_ENOTFOUND,
				    "no computer to run on: create one with `rakazo computer create --name NAME`");
	return rk_error_set(err, RK_EUSAGE, "there are %zu computers: name one with --computer", n);
}

static cJSON *call_arguments(const struct rk_model_tool_call *call)
{
	cJSON *a = call->arguments && call->arguments[0] ? cJSON_Parse(call->arguments) : cJSON_CreateObject();
	if (!a)
		a = cJSON_CreateString(call->arguments);
	return a;
}

/* Runs the calls of the last reply in order, adding each result. */
static void run_calls(struct run *run, const struct rk_model_reply *reply, struct rk_model_conversation *conv)
{
	struct rk_tools_ctx tctx = {run->eng, &run->c, run->opt->bot, 0, 0, 0, run->id, run->opt->cancel};
	for (size_t i = 0; i < reply->ncalls; i++) {
		const struct rk_model_tool_call *call = &reply->calls[i];
		cJSON *b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		cJSON_AddStringToObject(b, "id", call->id ? call->id : "");
		cJSON_AddStringToObject(b, "name", call->name ? call->name : "");
		cJSON_AddItemToObject(b, "arguments", call_arguments(call));
		emit(run, "tool.call", b);

		struct rk_tool_result res;
		rk_tools_call(&tctx, call->name, call->arguments, &res);
		struct rk_model_message *m = rk_model_add_tool_result(conv, call->id ? call->id : "", res.text);
		const char *image = NULL;
		if (res.png)
			image = rk_model_message_add_image(conv, m, res.png, res.png_len,
							   res.frame_hash[0] ? res.frame_hash : NULL, res.label)
					? "sent"
					: "unchanged";

		b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		cJSON_AddStringToObject(b, "id", call->id ? call->id : "");
		cJSON_AddStringToObject(b, "name", call->name ? call->name : "");
		if (res.is_error) {
			cJSON *doc = cJSON_Parse(res.text);
			cJSON *e = doc ? cJSON_DetachItemFromObjectCaseSensitive(doc, "error") : NULL;
			cJSON_AddItemToObject(b, "error", e ? e : cJSON_CreateString(res.text));
			cJSON_Delete(doc);
		}
		if (res.frame_hash[0])
			cJSON_AddStringToObject(b, "frame_hash", res.frame_hash);
		rk_json_add_str_or_null(b, "image", image);
		emit(run, "tool.result", b);
		rk_tool_result_release(&res);
	}
	rk_model_prune_images(conv, run->cfg.keep_images);
}

/* The loop. Returns 0 with *answer (malloc'd) set, or a negative code with
 * err and *reason set. */
static int loop(struct run *run, char **answer, const char **reason, struct rk_error *err)
{
	const struct rk_run_options *opt = run->opt;
	int max_steps = opt->max_steps > 0 ? opt->max_steps : RK_RUN_MAX_STEPS_DEFAULT;
	int64_t t0 = rk_monotonic_ms();
	size_t ntools;
	const struct rk_model_tool *tools = rk_tools_definitions(run->c.desktop, &ntools);
	struct rk_model_conversation *conv = rk_model_conversation_new();
	rk_model_add_message(conv, RK_MODEL_SYSTEM, opt->system_prompt ? opt->system_prompt : default_prompt);
	rk_model_add_message(conv, RK_MODEL_USER, opt->task);
	int r = 0;
	for (;;) {
		if (opt->cancel && *opt->cancel) {
			*reason = "interrupted";
			r = rk_error_set(err, RK_EINTERRUPTED, "the run was interrupted after %lld steps",
					 (long long)run->steps);
			break;
		}
		if (run->steps >= max_steps) {
			*reason = "max_steps";
			r = rk_error_set(err, RK_EFAILED,
					 "max_steps: the model took %d steps without a final answer (raise --max-steps)",
					 max_steps);
			break;
		}
		if (opt->max_wall_ms > 0 && rk_monotonic_ms() - t0 >= opt->max_wall_ms) {
			*reason = "max_wall";
			r = rk_error_set(err, RK_ETIMEOUT, "max_wall: the run took longer than %lld ms",
					 (long long)opt->max_wall_ms);
			break;
		}
		if (opt->max_tokens > 0 && run->in_tok + run->out_tok >= opt->max_tokens) {
			*reason = "max_tokens";
			r = rk_error_set(err, RK_EFAILED, "max_tokens: the run used %lld tokens (limit %lld)",
					 (long long)(run->in_tok + run->out_tok), (long long)opt->max_tokens);
			break;
		}
		struct rk_model_reply reply = {0};
		if ((r = rk_model_complete(&run->cfg, conv, tools, ntools, &reply, err))) {
			*reason = err->code == RK_EINTERRUPTED ? "interrupted" : "model";
			rk_error_prefix(err, "model");
			break;
		}
		run->steps++;
		if (reply.prompt_tokens > 0)
			run->in_tok += reply.prompt_tokens;
		if (reply.completion_tokens > 0)
			run->out_tok += reply.completion_tokens;
		struct rk_error e2;
		if (rk_db_run_progress(run->eng->db, run->id, run->steps, run->in_tok, run->out_tok, &e2))
			rk_log(RK_LOG_WARN, "run %s: %s", run->id, e2.message);

		cJSON *b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		rk_json_add_str_or_null(b, "finish_reason", reply.finish_reason);
		rk_json_add_str_or_null(b, "text", reply.text);
		cJSON_AddNumberToObject(b, "tool_calls", (double)reply.ncalls);
		cJSON *u = cJSON_AddObjectToObject(b, "usage");
		cJSON_AddNumberToObject(u, "input_tokens", (double)reply.prompt_tokens);
		cJSON_AddNumberToObject(u, "output_tokens", (double)reply.completion_tokens);
		emit(run, "model.turn", b);

		rk_model_add_reply(conv, &reply);
		if (reply.ncalls == 0) {
			*answer = rk_xstrdup(reply.text ? reply.text : "");
			rk_model_reply_release(&reply);
			break;
		}
		run_calls(run, &reply, conv);
		rk_model_reply_release(&reply);
		if (rk_db_run_heartbeat(run->eng->db, run->id, &e2))
			rk_log(RK_LOG_WARN, "run %s: %s", run->id, e2.message);
	}
	rk_model_conversation_free(conv);
	return r;
}

/* The checkpoint at the end. A completed run needs it (its failure fails
 * the run); a failed run's is best effort, reported as an event. */
static int checkpoint(struct run *run, int failed, struct rk_error *err)
{
	struct rk_error e = {0};
	int r;
	if (!failed) {
		r = rk_checkpoint_run_end(run->eng, run->c.id, run->id, 0, &e);
	} else {
		char *why = rk_xasprintf("run-failed:%s", run->id);
		struct rk_computer c = {0};
		r = rk_db_computer_get(run->eng->db, run->c.id, &c, &e);
		if (r == 0)
			r = rk_checkpoint_create(run->eng, &c, why, 0, NULL, &e);
		rk_computer_release(&c);
		free(why);
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddBoolToObject(b, "ok", r == 0);
	if (r) {
		cJSON *o = cJSON_AddObjectToObject(b, "error");
		cJSON_AddStringToObject(o, "code", rk_code_name(e.code));
		cJSON_AddStringToObject(o, "message", e.message);
		rk_log(RK_LOG_WARN, "run %s: checkpoint: %s", run->id, e.message);
	}
	emit(run, "run.checkpoint", b);
	if (r && !failed) {
		*err = e;
		rk_error_prefix(err, "checkpoint: the run's work could not be checkpointed");
		return r;
	}
	return 0;
}

int rk_run_start(struct rk_engine *eng, const struct rk_run_options *opt, rk_run_event_fn event_cb, void *cb_ctx,
		 char **run_id, struct rk_error *err)
{
	*run_id = NULL;
	if (!opt->task || !opt->task[0])
		return rk_error_set(err, RK_EUSAGE, "a run needs a task");
	struct run run = {eng, opt, event_cb, cb_ctx, NULL, {0}, {0}, 0, 0, 0};
	int r = rk_model_config_load(opt->model, eng->data_dir, &run.cfg, err);
	if (r)
		return r;
	run.cfg.cancel = opt->cancel;
	if ((r = pick_computer(eng, opt->computer, &run.c, err))) {
		rk_model_config_release(&run.cfg);
		return r;
	}
	run.id = rk_id_new("run");
	struct rk_run_row row = {.id = run.id, .bot_id = (char *)opt->bot, .thread_id = (char *)opt->thread,
				 .computer_id = run.c.id, .task = (char *)opt->task, .model = run.cfg.model,
				 .state = "queued"};
	if ((r = rk_db_run_insert(eng->db, &row, err))) {
		free(run.id);
		rk_computer_release(&run.c);
		rk_model_config_release(&run.cfg);
		return r;
	}
	*run_id = rk_xstrdup(run.id);
	rk_log(RK_LOG_INFO, "run %s: started on %s with %s", run.id, run.c.id, run.cfg.model);

	char *answer = NULL;
	const char *reason = NULL;
	struct rk_error e2;
	if ((r = rk_db_run_set_state(eng->db, run.id, "running", getpid(), err))) {
		reason = "database";
		goto finish;
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "computer_id", run.c.id);
	cJSON_AddStringToObject(b, "computer", run.c.name);
	cJSON_AddStringToObject(b, "model", run.cfg.model);
	cJSON_AddStringToObject(b, "task", opt->task);
	cJSON_AddNumberToObject(b, "max_steps", opt->max_steps > 0 ? opt->max_steps : RK_RUN_MAX_STEPS_DEFAULT);
	emit(&run, "run.started", b);

	/* a paused computer is resumed before the first step */
	if ((r = rk_computer_ensure_running(eng, &run.c, err))) {
		reason = "computer";
		rk_error_prefix(err, "computer '%s'", run.c.name);
		goto finish;
	}
	r = loop(&run, &answer, &reason, err);

finish:;
	int failed = r != 0;
	if (checkpoint(&run, failed, failed ? &e2 : err) && !failed) {
		r = -(int)err->code;
		reason = "checkpoint";
		free(answer);
		answer = NULL;
	}
	const char *state = r == 0 ? "completed" : err->code == RK_EINTERRUPTED ? "interrupted" : "failed";
	if (rk_db_run_finish(eng->db, run.id, state, answer, r ? err->message : NULL, &e2))
		rk_log(RK_LOG_ERROR, "run %s: cannot record its end (%s): %s", run.id, state, e2.message);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "state", state);
	cJSON_AddNumberToObject(b, "steps", (double)run.steps);
	cJSON *u = cJSON_AddObjectToObject(b, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)run.in_tok);
	cJSON_AddNumberToObject(u, "output_tokens", (double)run.out_tok);
	if (r == 0) {
		cJSON_AddStringToObject(b, "answer", answer);
	} else {
		cJSON_AddStringToObject(b, "reason", reason ? reason : "failed");
		cJSON *o = cJSON_AddObjectToObject(b, "error");
		cJSON_AddStringToObject(o, "code", rk_code_name(err->code));
		cJSON_AddStringToObject(o, "message", err->message);
	}
	emit(&run, "run.finished", b);
	rk_log(RK_LOG_INFO, "run %s: %s after %lld steps", run.id, state, (long long)run.steps);
	free(answer);
	free(run.id);
	rk_computer_release(&run.c);
	rk_model_config_release(&run.cfg);
	return r;
}
