/* The agent loop, its stored events and conversation, cancel, resume,
 * takeover waits and stale-run detection (see run.h). */

#include "engine/agent/run.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/machine/idle.h"
#include "engine/state/db_runs.h"
#include "engine/machine/computer.h"
#include "engine/util/host.h"
#include "engine/machine/lease.h"
#include "engine/agent/computer_tool.h"
#include "engine/agent/memory.h"
#include "engine/agent/model_compact.h"
#include "engine/agent/run_log.h"
#include "engine/access/secret.h"
#include "engine/machine/session.h"
#include "engine/agent/tools.h"
#include "engine/machine/worker.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

static const char default_prompt[] =
	"You are an agent working on a sandboxed Linux computer through tools. Your workspace is the current "
	"directory of shell and the root of the file tools; files you leave there are kept. Work step by step: "
	"look before you act, check the result of each action, and prefer shell and the file tools where they do "
	"the job. When you need a person on the screen (a login, a captcha, a decision), call request_takeover "
	"with the reason and wait for their note. When the task is done, answer with a short summary of what you "
	"did and what you found, without calling a tool.";

#define LEASE_TTL_MS RK_RUN_STALE_MS_DEFAULT
#define OUTPUT_EVENT_MAX 4000 /* chars of a tool's text in its tool.result event */
#define TAKEOVER_POLL_MS 200

/* ---- request_takeover: a tool of the run itself ---------------------------- */

static const char takeover_schema[] =
	"{\"type\":\"object\",\"properties\":{\"reason\":{\"type\":\"string\","
	"\"description\":\"what the person should do on the screen\"}},\"required\":[\"reason\"],"
	"\"additionalProperties\":false}";

/* [0] no desktop, [1] a desktop, [2] a desktop with a page browser */
static struct rk_model_tool *all_tools[3];
static size_t all_ntools[3];
static pthread_once_t tools_once = PTHREAD_ONCE_INIT;

static void build_tools(void)
{
	for (int desktop = 0; desktop < 3; desktop++) {
		size_t n;
		const struct rk_model_tool *base = desktop == 2 ? rk_tools_with_browser(&n)
								: rk_tools_definitions(desktop, &n);
		all_tools[desktop] = rk_xcalloc(n + 1, sizeof(struct rk_model_tool));
		memcpy(all_tools[desktop], base, n * sizeof(*base));
		all_ntools[desktop] = n;
		if (desktop) {
			cJSON *schema = cJSON_Parse(takeover_schema);
			if (!schema)
				abort(); /* a typo in the schema above */
			all_tools[desktop][n] = (struct rk_model_tool){
				.name = "request_takeover",
				.description =
					"Ask a person to take over the screen (a login, a captcha, a choice only they can make). "
					"The run waits until they hand control back; their note is this call's result.",
				.parameters = schema};
			all_ntools[desktop] = n + 1;
		}
	}
}

static const struct rk_model_tool *run_tools(const struct rk_computer *c, size_t *n)
{
	pthread_once(&tools_once, build_tools);
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	int v = !c->desktop ? 0 : ops && (ops->caps & RK_CAP_PAGE_BROWSER) ? 2 : 1;
	*n = all_ntools[v];
	return all_tools[v];
}

/* ---- the run in this process ------------------------------------------------ */

struct run {
	struct rk_engine *eng;
	const struct rk_run_exec *x;
	char *id;
	struct rk_run_row row;
	struct rk_computer c;
	struct rk_model_config cfg;
	int max_steps;
	int64_t max_wall_ms, max_tokens;
	int64_t max_cost_micro;	   /* the run's whole spend, USD millionths; 0: no limit */
	int truncated;		   /* replies cut at the output limit in a row */
	int64_t new_images;	   /* screenshots added since the last request */
	const char *system_prompt; /* borrowed from opts */
	cJSON *opts;		   /* the row's options */
	int64_t steps;		   /* the row's totals */
	struct rk_run_usage usage;
	int64_t attempt_steps, attempt_tok; /* this attempt's */
	int64_t seq, msg_seq;
	int64_t fence;
	int64_t last_beat; /* monotonic ms of the last heartbeat */
	char **sessions;   /* shell sessions the run left running */
	size_t nsessions;
	struct rk_model_conversation *conv;
	struct rk_secret_redactor *red; /* the user's secrets, read again each step */
	volatile sig_atomic_t no_flag;
	/* the vendor's native computer tool, when the model has one (then the
	 * tools are the run's own list: the native tool for computer_observe
	 * and computer_act) */
	struct rk_computer_tool_spec native;
	int has_native;
	struct rk_model_tool *own_tools; /* malloc'd, or NULL: run_tools' */
	/* a streamed turn's text not yet in a model.text event, and when the
	 * last one went */
	struct rk_buf text;
	int64_t text_at;
	struct rk_model_sink sink;
};

/* The values of the secrets of a run's user (of bot_id), read now
 * (engine/access/secret.h). */
static struct rk_secret_redactor *run_redactor(struct rk_engine *eng, const char *bot_id)
{
	struct rk_actor a = {0};
	struct rk_error e;
	struct rk_secret_redactor *red = rk_secret_redactor_new(eng, rk_actor_resolve(&a, eng, NULL, bot_id, &e) == 0
									     ? &a
									     : NULL);
	rk_actor_release(&a);
	return red;
}

/* Reads the values again: a secret set since the last step is taken out of
 * what is stored too. */
static void reload_redactor(struct run *run)
{
	rk_secret_redactor_free(run->red);
	run->red = run_redactor(run->eng, run->row.bot_id);
}

/* s redacted with red, malloc'd (NULL stays NULL). */
static char *redacted_with(const struct rk_secret_redactor *red, const char *s)
{
	if (!s)
		return NULL;
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, s);
	rk_secret_redactor_buf(red, &b);
	return rk_buf_detach(&b, NULL);
}

static char *redacted(struct run *run, const char *s)
{
	return redacted_with(run->red, s);
}

static const char *lease_bot(const struct rk_run_row *row)
{
	return row->lease_bot ? row->lease_bot : row->bot_id ? row->bot_id : RK_RUN_LEASE_BOT_DEFAULT;
}

/* Event seq of type with the members of body (consumed; may be NULL),
 * redacted with red and stored; a failed store is logged. The event is
 * returned for the stream. */
static cJSON *event_store(struct rk_engine *eng, const struct rk_secret_redactor *red, const char *run_id, int64_t seq,
			  const char *type, cJSON *body)
{
	cJSON *ev = cJSON_CreateObject();
	char when[32];
	cJSON_AddNumberToObject(ev, "seq", (double)seq);
	cJSON_AddStringToObject(ev, "type", type);
	cJSON_AddStringToObject(ev, "run_id", run_id);
	cJSON_AddStringToObject(ev, "time", rk_iso8601(rk_now_ms(), when, sizeof(when)));
	if (body) {
		cJSON *m;
		while ((m = body->child)) {
			cJSON_DetachItemViaPointer(body, m);
			cJSON_AddItemToObject(ev, m->string, m);
		}
		cJSON_Delete(body);
	}
	rk_secret_redactor_json(red, ev);
	char *text = cJSON_PrintUnformatted(ev);
	struct rk_error e;
	if (rk_db_run_event_append(eng->db, run_id, seq, type, text, &e))
		rk_log(RK_LOG_WARN, "run %s: event %lld (%s) not stored: %s", run_id, (long long)seq, type, e.message);
	free(text);
	return ev;
}

/* A count the server may have left out (-1) as 0. */
static int64_t count(int64_t v)
{
	return v > 0 ? v : 0;
}

/* "usage": {input_tokens, output_tokens, cached_input_tokens,
 * cache_write_input_tokens, images, cost_usd}; the cached and written ones
 * are parts of input_tokens; cost_usd is null when the model has no price.
 * Returns the object. */
static cJSON *add_usage(cJSON *body, const struct rk_run_usage *u)
{
	cJSON *o = cJSON_AddObjectToObject(body, "usage");
	cJSON_AddNumberToObject(o, "input_tokens", (double)u->input);
	cJSON_AddNumberToObject(o, "output_tokens", (double)u->output);
	cJSON_AddNumberToObject(o, "cached_input_tokens", (double)u->cached);
	cJSON_AddNumberToObject(o, "cache_write_input_tokens", (double)u->cache_write);
	cJSON_AddNumberToObject(o, "images", (double)u->images);
	if (u->cost_micro >= 0)
		cJSON_AddNumberToObject(o, "cost_usd", (double)u->cost_micro / 1e6);
	else
		cJSON_AddNullToObject(o, "cost_usd");
	return o;
}

/* Stores and sends an event of type with the members of body (consumed; may
 * be NULL). A failed store is logged: the stream still gets the event. */
static void emit(struct run *run, const char *type, cJSON *body)
{
	cJSON *ev = event_store(run->eng, run->red, run->id, ++run->seq, type, body);
	if (run->x && run->x->cb)
		run->x->cb(ev, run->x->cb_ctx);
	cJSON_Delete(ev);
}

/* ---- a streamed turn: model.text and model.tool_call as they come ---- */

#define TEXT_EVERY_MS 100

/* Sends the streamed text held so far as one model.text event: all of it
 * at the end of a turn, else up to what could begin a secret (the redactor
 * must see a value whole) and not inside a character. */
static void flush_text(struct run *run, int all)
{
	size_t n = run->text.len;
	if (!all) {
		n -= rk_secret_redactor_hold(run->red, run->text.data, n);
		while (n > 0 && ((unsigned char)run->text.data[n] & 0xC0) == 0x80)
			n--;
	}
	if (!n)
		return;
	char *piece = rk_xstrndup(run->text.data, n);
	rk_buf_consume(&run->text, n);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "step", (double)(run->steps + 1));
	cJSON_AddStringToObject(b, "text", piece);
	free(piece);
	emit(run, "model.text", b);
	run->text_at = rk_monotonic_ms();
}

/* Text in events of a line or about TEXT_EVERY_MS, not a token each, so
 * run_events stays small. */
static void on_model_text(void *ctx, const char *delta, size_t len)
{
	struct run *run = ctx;
	rk_buf_add(&run->text, delta, len);
	if (memchr(delta, '\n', len) || rk_monotonic_ms() - run->text_at >= TEXT_EVERY_MS)
		flush_text(run, 0);
}

static void on_model_call(void *ctx, const char *id, const char *name, const char *arguments)
{
	struct run *run = ctx;
	flush_text(run, 1);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "step", (double)(run->steps + 1));
	cJSON_AddStringToObject(b, "id", id);
	cJSON_AddStringToObject(b, "name", name);
	cJSON *args = cJSON_Parse(arguments);
	cJSON_AddItemToObject(b, "arguments", cJSON_IsObject(args) ? args : cJSON_CreateString(arguments));
	if (!cJSON_IsObject(args))
		cJSON_Delete(args);
	emit(run, "model.tool_call", b);
}

/* Stores one conversation message (consumed). */
static void store_msg(struct run *run, cJSON *m)
{
	rk_secret_redactor_json(run->red, m);
	char *text = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	struct rk_error e;
	if (rk_db_run_message_append(run->eng->db, run->id, ++run->msg_seq, text, &e))
		rk_log(RK_LOG_WARN, "run %s: message %lld not stored: %s", run->id, (long long)run->msg_seq, e.message);
	free(text);
}

static cJSON *msg_json(const char *role, const char *text)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", role);
	rk_json_add_str_or_null(m, "text", text);
	return m;
}

/* A person's words (the task, the system prompt): the model gets them
 * without the user's secrets too, as it gets everything else. */
static void add_text_msg(struct run *run, enum rk_model_role role, const char *text)
{
	char *clean = redacted(run, text);
	rk_model_add_message(run->conv, role, clean);
	store_msg(run, msg_json(role == RK_MODEL_SYSTEM ? "system" : "user", clean));
	free(clean);
}

static void add_reply_msg(struct run *run, const struct rk_model_reply *reply)
{
	rk_model_add_reply(run->conv, reply);
	cJSON *m = msg_json("assistant", reply->text);
	cJSON *calls = cJSON_AddArrayToObject(m, "tool_calls");
	for (size_t i = 0; i < reply->ncalls; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "id", reply->calls[i].id ? reply->calls[i].id : "");
		cJSON_AddStringToObject(c, "name", reply->calls[i].name ? reply->calls[i].name : "");
		cJSON_AddStringToObject(c, "arguments", reply->calls[i].arguments ? reply->calls[i].arguments : "");
		if (reply->calls[i].native)
			cJSON_AddBoolToObject(c, "native", 1);
		if (reply->calls[i].safety_checks)
			cJSON_AddStringToObject(c, "safety_checks", reply->calls[i].safety_checks);
		cJSON_AddItemToArray(calls, c);
	}
	/* the vendor's own form of the turn (thinking, reasoning items), so a
	 * resume on the same protocol replays it verbatim */
	if (reply->vendor_json) {
		cJSON_AddStringToObject(m, "vendor_api", rk_model_api_name(reply->vendor_api));
		cJSON_AddStringToObject(m, "vendor_json", reply->vendor_json);
	}
	store_msg(run, m);
}

static struct rk_model_message *add_tool_msg(struct run *run, const char *call_id, const char *text,
					     const char *frame_label)
{
	struct rk_model_message *msg = rk_model_add_tool_result(run->conv, call_id, text);
	cJSON *m = msg_json("tool", text);
	cJSON_AddStringToObject(m, "tool_call_id", call_id);
	if (frame_label)
		cJSON_AddStringToObject(m, "frame", frame_label);
	store_msg(run, m);
	return msg;
}

/* A tool result that answers a native computer call (native) records so,
 * with the safety checks a person acknowledged, so a resume rebuilds the
 * vendor's own result item. */
static struct rk_model_message *add_result_msg(struct run *run, const char *call_id, const char *text,
					       const char *frame_label, int native, const char *acknowledged)
{
	struct rk_model_message *msg = rk_model_add_tool_result(run->conv, call_id, text);
	msg->native = native;
	msg->acknowledged = acknowledged ? rk_xstrdup(acknowledged) : NULL;
	cJSON *m = msg_json("tool", text);
	cJSON_AddStringToObject(m, "tool_call_id", call_id);
	if (frame_label)
		cJSON_AddStringToObject(m, "frame", frame_label);
	if (native)
		cJSON_AddBoolToObject(m, "native", 1);
	if (acknowledged)
		cJSON_AddItemToObject(m, "acknowledged", cJSON_Parse(acknowledged));
	store_msg(run, m);
	return msg;
}

/* The text parts of m joined by newlines (malloc'd); first_only: its first
 * text part alone (a tool result's own text, without the notes on its
 * screenshot). */
static char *msg_text(const struct rk_model_message *m, int first_only)
{
	struct rk_buf b;
	rk_buf_init(&b);
	for (size_t k = 0; k < m->nparts; k++) {
		if (m->parts[k].kind != RK_MODEL_TEXT || m->parts[k].is_frame)
			continue;
		if (b.len)
			rk_buf_addc(&b, '\n');
		rk_buf_adds(&b, m->parts[k].text);
		if (first_only)
			break;
	}
	return rk_buf_detach(&b, NULL);
}

/* Stores the whole conversation after a compaction marker, so a resume
 * (replay_messages) rebuilds the compacted conversation, not the full one.
 * Screenshots are not stored: a stored message names its frame. */
static void store_compacted(struct run *run, const struct rk_model_compaction *k)
{
	cJSON *mark = cJSON_CreateObject();
	cJSON_AddStringToObject(mark, "role", "compacted");
	cJSON_AddStringToObject(mark, "method", k->method);
	cJSON_AddNumberToObject(mark, "dropped", (double)k->dropped);
	store_msg(run, mark);
	for (size_t i = 0; i < run->conv->n; i++) {
		const struct rk_model_message *m = run->conv->msgs[i];
		const char *frame = NULL;
		for (size_t p = 0; p < m->nparts; p++)
			if (m->parts[p].is_frame)
				frame = m->parts[p].label;
		char *text = msg_text(m, m->role == RK_MODEL_TOOL);
		cJSON *j;
		if (m->role == RK_MODEL_ASSISTANT) {
			j = msg_json("assistant", *text ? text : NULL);
			cJSON *calls = cJSON_AddArrayToObject(j, "tool_calls");
			for (size_t c = 0; c < m->ncalls; c++) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "id", m->calls[c].id ? m->calls[c].id : "");
				cJSON_AddStringToObject(o, "name", m->calls[c].name ? m->calls[c].name : "");
				cJSON_AddStringToObject(o, "arguments",
							m->calls[c].arguments ? m->calls[c].arguments : "");
				if (m->calls[c].native)
					cJSON_AddBoolToObject(o, "native", 1);
				if (m->calls[c].safety_checks)
					cJSON_AddStringToObject(o, "safety_checks", m->calls[c].safety_checks);
				cJSON_AddItemToArray(calls, o);
			}
			if (m->vendor_json) {
				cJSON_AddStringToObject(j, "vendor_api", rk_model_api_name(m->vendor_api));
				cJSON_AddStringToObject(j, "vendor_json", m->vendor_json);
			}
		} else if (m->role == RK_MODEL_TOOL) {
			j = msg_json("tool", text);
			cJSON_AddStringToObject(j, "tool_call_id", m->tool_call_id ? m->tool_call_id : "");
			if (frame)
				cJSON_AddStringToObject(j, "frame", frame);
			if (m->native)
				cJSON_AddBoolToObject(j, "native", 1);
			if (m->acknowledged)
				cJSON_AddItemToObject(j, "acknowledged", cJSON_Parse(m->acknowledged));
		} else {
			j = msg_json(m->role == RK_MODEL_SYSTEM ? "system" : "user", text);
			if (frame)
				cJSON_AddStringToObject(j, "frame", frame);
		}
		free(text);
		store_msg(run, j);
	}
}

/* Adds the stored messages of run_id to the conversation. Its own (a
 * resume): they are stored already. Another run's (the thread's previous
 * one): its system message is left out and the rest are stored as this
 * run's, so a resume of this run rebuilds them too. A call of the last
 * assistant turn without a stored result gets one saying its outcome is
 * unknown, so the conversation is well formed again. *count: how many were
 * added. */
static int replay_messages(struct run *run, const char *run_id, int *count, struct rk_error *err)
{
	int own = !strcmp(run_id, run->id);
	char *text;
	int r = rk_db_run_messages(run->eng->db, run_id, &text, err);
	if (r)
		return r;
	cJSON *arr = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(arr);
		return rk_error_set(err, RK_ECORRUPT, "run %s: its stored conversation is not JSON", run_id);
	}
	*count = 0;
	cJSON *pending = cJSON_CreateArray(); /* call ids of the last assistant turn without a result */
	const cJSON *m;
	cJSON_ArrayForEach(m, arr)
	{
		const char *role = rk_json_string(m, "role", "");
		const char *mtext = rk_json_string(m, "text", NULL);
		if (!strcmp(role, "compacted")) {
			/* the conversation was compacted here: what follows is
			 * all of it (a thread's next run keeps its own system) */
			size_t keep = 0;
			while (!own && keep < run->conv->n && run->conv->msgs[keep]->role == RK_MODEL_SYSTEM)
				keep++;
			rk_model_conversation_truncate(run->conv, keep);
			cJSON_Delete(pending);
			pending = cJSON_CreateArray();
			if (own) {
				run->msg_seq++;
			} else {
				store_msg(run, cJSON_Duplicate(m, 1));
				for (size_t i = 0; i < keep; i++) {
					char *st = msg_text(run->conv->msgs[i], 0);
					store_msg(run, msg_json("system", st));
					free(st);
				}
			}
			*count = 0;
			continue;
		}
		if (!own && !strcmp(role, "system"))
			continue;
		if (own)
			run->msg_seq++;
		else
			store_msg(run, cJSON_Duplicate(m, 1));
		(*count)++;
		if (!strcmp(role, "system")) {
			rk_model_add_message(run->conv, RK_MODEL_SYSTEM, mtext);
		} else if (!strcmp(role, "user")) {
			struct rk_model_message *um = rk_model_add_message(run->conv, RK_MODEL_USER, mtext);
			const char *frame = rk_json_string(m, "frame", NULL);
			if (frame) { /* a compaction's summary carried the last screenshot */
				char *t = rk_xasprintf("[screenshot not kept across %s: %s]",
						       own ? "the resume" : "runs", frame);
				rk_model_message_add_text(um, t);
				free(t);
			}
		} else if (!strcmp(role, "assistant")) {
			const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
			size_t n = (size_t)cJSON_GetArraySize(calls), i = 0;
			struct rk_model_reply reply = {0};
			reply.text = (char *)mtext;
			const char *vapi = rk_json_string(m, "vendor_api", NULL);
			for (int k = RK_MODEL_API_CHAT; vapi && k <= RK_MODEL_API_RESPONSES; k++)
				if (!strcmp(vapi, rk_model_api_name((enum rk_model_api)k))) {
					reply.vendor_api = (enum rk_model_api)k;
					reply.vendor_json = (char *)rk_json_string(m, "vendor_json", NULL);
				}
			reply.calls = n ? rk_xcalloc(n, sizeof(*reply.calls)) : NULL;
			reply.ncalls = n;
			const cJSON *c;
			cJSON_Delete(pending);
			pending = cJSON_CreateArray();
			cJSON_ArrayForEach(c, (n ? calls : NULL)) /* (n: as many as reply.calls holds) */
			{
				reply.calls[i].id = (char *)rk_json_string(c, "id", "");
				reply.calls[i].name = (char *)rk_json_string(c, "name", "");
				reply.calls[i].arguments = (char *)rk_json_string(c, "arguments", "");
				reply.calls[i].native = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "native"));
				reply.calls[i].safety_checks = (char *)rk_json_string(c, "safety_checks", NULL);
				cJSON_AddItemToArray(pending, cJSON_CreateString(reply.calls[i].id));
				i++;
			}
			rk_model_add_reply(run->conv, &reply);
			free(reply.calls);
		} else if (!strcmp(role, "tool")) {
			const char *id = rk_json_string(m, "tool_call_id", "");
			struct rk_model_message *tm = rk_model_add_tool_result(run->conv, id, mtext);
			tm->native = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "native"));
			const cJSON *ack = cJSON_GetObjectItemCaseSensitive(m, "acknowledged");
			if (cJSON_IsArray(ack))
				tm->acknowledged = cJSON_PrintUnformatted(ack);
			const char *frame = rk_json_string(m, "frame", NULL);
			if (frame) {
				char *t = rk_xasprintf("[screenshot not kept across %s: %s]",
						       own ? "the resume" : "runs", frame);
				rk_model_message_add_text(tm, t);
				free(t);
			}
			for (int k = cJSON_GetArraySize(pending) - 1; k >= 0; k--)
				if (!strcmp(cJSON_GetArrayItem(pending, k)->valuestring, id))
					cJSON_DeleteItemFromArray(pending, k);
		}
	}
	cJSON_Delete(arr);
	const cJSON *id;
	cJSON_ArrayForEach(id, pending)
	{
		add_tool_msg(run, id->valuestring,
			     "{\"error\":{\"code\":\"outcome_unknown\",\"message\":\"the run stopped before this call's "
			     "result was stored: its effect is unknown, check before repeating it\"}}",
			     NULL);
	}
	cJSON_Delete(pending);
	return 0;
}

static int load_conversation(struct run *run, struct rk_error *err)
{
	int n;
	return replay_messages(run, run->id, &n, err);
}

/* The agent's session is its thread and bot, never its computer: a new run
 * of a thread goes on from the thread's previous run (of the same bot),
 * whichever computer that one had. Sets *prev (malloc'd) when it did. */
static int continue_thread(struct run *run, char **prev, int *count, struct rk_error *err)
{
	*prev = NULL;
	*count = 0;
	if (!run->row.thread_id)
		return 0;
	int r = rk_db_run_thread_previous(run->eng->db, run->row.thread_id, run->row.bot_id, run->id, prev, err);
	if (r == -RK_ENOTFOUND)
		return 0;
	return r ? r : replay_messages(run, *prev, count, err);
}

/* The computer to run on, as the starter a sees it (engine/access/authz.h): the
 * one named, else the only one a may use. */
static int pick_computer(struct rk_engine *eng, const struct rk_actor *a, const char *ref, struct rk_computer *out,
			 struct rk_error *err)
{
	if (ref)
		return rk_authz_resolve(eng, a, ref, NULL, out, err);
	struct rk_computer *cs;
	size_t n, m = 0;
	int r = rk_db_computer_list(eng->db, &cs, &n, err);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (rk_authz_may_use(eng, a, &cs[i]))
			cs[m++] = cs[i];
		else
			rk_computer_release(&cs[i]);
	}
	n = m;
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

/* The call's arguments as the tool reads them (strict JSON), else as text. */
static cJSON *call_arguments(const struct rk_model_tool_call *call)
{
	cJSON *a = NULL;
	if (rk_model_tool_call_args(call, &a, NULL))
		a = cJSON_CreateString(call->arguments ? call->arguments : "");
	return a;
}

/* Heartbeat (and lease renewal) when the last one is older than every_ms. */
static void beat(struct run *run, int64_t every_ms)
{
	int64_t now = rk_monotonic_ms();
	if (every_ms > 0 && now - run->last_beat < every_ms)
		return;
	run->last_beat = now;
	struct rk_error e;
	if (rk_db_run_heartbeat(run->eng->db, run->id, &e))
		rk_log(RK_LOG_WARN, "run %s: heartbeat: %s", run->id, e.message);
	if (rk_lease_renew(run->eng, run->c.id, lease_bot(&run->row), run->fence, LEASE_TTL_MS, &e))
		rk_log(RK_LOG_WARN, "run %s: lease renewal: %s", run->id, e.message);
}

/* Whether the row is no longer this attempt's (one under way): someone
 * else ended it (found it stale), queued it again for an automatic resume,
 * or a newer attempt took it, its lease fence moved on. */
static int superseded_in(const struct run *run, const struct rk_run_row *row)
{
	return rk_run_state_is_final(row->state) || rk_run_state_of(row->state) == RK_RUN_QUEUED ||
	       (row->lease_fence > 0 && run->fence > 0 && row->lease_fence != run->fence);
}

/* What the row says now: 0 go on; else the reason to stop ("cancelled", or
 * "superseded", above). */
static const char *look(struct run *run)
{
	if (run->x->cancel && *run->x->cancel)
		return "interrupted";
	struct rk_run_row row = {0};
	struct rk_error e;
	const char *why = NULL;
	if (rk_db_run_get(run->eng->db, run->id, &row, &e) == 0) {
		if (row.cancel_requested > 0)
			why = "cancelled";
		else if (superseded_in(run, &row))
			why = "superseded";
	}
	rk_run_row_release(&row);
	return why;
}

/* 1 when the row is no longer this attempt's: a process that stalled in a
 * model call writes nothing of the turn it gets back. */
static int taken_over(struct run *run)
{
	struct rk_run_row row = {0};
	struct rk_error e;
	int gone = rk_db_run_get(run->eng->db, run->id, &row, &e) == 0 && superseded_in(run, &row);
	rk_run_row_release(&row);
	return gone;
}

static int stop_error(struct run *run, const char *why, struct rk_error *err)
{
	if (!strcmp(why, "cancelled"))
		return rk_error_set(err, RK_EINTERRUPTED, "cancelled: the run was cancelled after %lld steps",
				    (long long)run->steps);
	if (!strcmp(why, "superseded"))
		return rk_error_set(err, RK_ECONFLICT,
				    "superseded: the run was ended, or taken over, by another process while this one "
				    "was stalled");
	return rk_error_set(err, RK_EINTERRUPTED, "interrupted: the run was interrupted after %lld steps",
			    (long long)run->steps);
}

static void note_session(struct run *run, const struct rk_tool_result *res, const char *name)
{
	if (strcmp(name, "shell") && strcmp(name, "write_stdin"))
		return;
	cJSON *doc = cJSON_Parse(res->text);
	const char *sid = rk_json_string(doc, "session", NULL);
	if (sid && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "running"))) {
		/* it ended: no longer one the run left running */
		for (size_t i = 0; i < run->nsessions; i++)
			if (!strcmp(run->sessions[i], sid)) {
				free(run->sessions[i]);
				run->sessions[i] = run->sessions[--run->nsessions];
				break;
			}
	} else if (sid && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "running"))) {
		size_t i;
		for (i = 0; i < run->nsessions && strcmp(run->sessions[i], sid); i++)
			;
		if (i == run->nsessions) {
			run->sessions = rk_xrealloc(run->sessions, (run->nsessions + 1) * sizeof(char *));
			run->sessions[run->nsessions++] = rk_xstrdup(sid);
		}
	}
	cJSON_Delete(doc);
}

static void kill_sessions(struct run *run)
{
	for (size_t i = 0; i < run->nsessions; i++) {
		struct rk_session_reply rep = {0};
		struct rk_error e;
		if (rk_session_kill(run->eng, run->c.id, run->sessions[i], &rep, &e) == 0)
			rk_log(RK_LOG_INFO, "run %s: killed shell session %s", run->id, run->sessions[i]);
		else if (e.code != RK_ENOTFOUND)
			rk_log(RK_LOG_WARN, "run %s: kill session %s: %s", run->id, run->sessions[i], e.message);
		rk_session_reply_release(&rep);
	}
}

/* One line of terminal history for a tool that changes the workspace. */
/* One terminal-history line for a tool that changes the computer or hands
 * something out (write_file, attach_file, open_path, launch_app): what and
 * its size, or its error. Read-only tools leave none; shell and write_stdin
 * are recorded by their session (engine/machine/session.c). */
static void record_history(struct run *run, const char *name, const char *args_json, const struct rk_tool_result *res)
{
	static const char *const recorded[][2] = {{"write_file", "path"},
						  {"attach_file", "path"},
						  {"open_path", "path"},
						  {"launch_app", "application"}};
	const char *key = NULL;
	for (size_t i = 0; i < sizeof(recorded) / sizeof(recorded[0]); i++)
		if (!strcmp(name, recorded[i][0]))
			key = recorded[i][1];
	if (!key)
		return;
	cJSON *a = cJSON_Parse(args_json ? args_json : "");
	cJSON *doc = cJSON_Parse(res->text);
	struct rk_buf line;
	rk_buf_init(&line);
	rk_buf_printf(&line, "%s %s", name, rk_json_string(a, key, "?"));
	const char *uri = rk_json_string(a, "uri", NULL);
	if (!strcmp(name, "launch_app") && uri && *uri)
		rk_buf_printf(&line, " %s", uri);
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(doc, "bytes");
	if (res->is_error)
		rk_buf_printf(&line, ": %s",
			      rk_json_string(cJSON_GetObjectItemCaseSensitive(doc, "error"), "message", "failed"));
	else if (cJSON_IsNumber(b))
		rk_buf_printf(&line, " (%lld bytes)", (long long)b->valuedouble);
	rk_secret_redactor_buf(run->red, &line);
	rk_secret_redact_patterns(&line);
	struct rk_error e;
	if (rk_db_history_append(run->eng->db, run->c.id, NULL, run->row.bot_id, "command", line.data, line.len,
				 res->is_error ? 1 : 0, -1, &e))
		rk_log(RK_LOG_WARN, "run %s: history: %s", run->id, e.message);
	rk_buf_release(&line);
	cJSON_Delete(doc);
	cJSON_Delete(a);
}

/* Keeps a small picture of the frame a tool result carries, for people
 * looking at the run later (engine/agent/run_log.h); a failure is only logged. */
static void keep_frame(struct run *run, const struct rk_tool_result *res)
{
	struct rk_error e;
	if (res->png && res->frame_hash[0] &&
	    rk_run_frame_keep(run->eng->data_dir, run->id, res->frame_hash, res->png, res->png_len, &e))
		rk_log(RK_LOG_WARN, "run %s: frame %.16s not kept: %s", run->id, res->frame_hash, e.message);
}

/* Waits in waiting_takeover until a person ends it (*note, malloc'd or
 * NULL), the run is cancelled or interrupted. */
static int wait_takeover(struct run *run, const char *reason, char **note, const char **why, struct rk_error *err)
{
	*note = NULL;
	char *shown = redacted(run, reason); /* the model's words, stored in the row */
	int r = rk_db_run_wait_takeover(run->eng->db, run->id, shown, err);
	free(shown);
	if (r)
		return r;
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "reason", reason);
	emit(run, "run.waiting_takeover", b);
	for (;;) {
		rk_sleep_ms(TAKEOVER_POLL_MS);
		beat(run, 1000);
		if (run->x->cancel && *run->x->cancel) {
			*why = "interrupted";
			return stop_error(run, *why, err);
		}
		struct rk_run_row row = {0};
		if ((r = rk_db_run_get(run->eng->db, run->id, &row, err)))
			return r;
		if (row.cancel_requested > 0)
			*why = "cancelled";
		else if (superseded_in(run, &row))
			*why = "superseded";
		else if (rk_run_state_of(row.state) == RK_RUN_RUNNING)
			*note = rk_xstrdup(row.takeover_note);
		int done = *why || rk_run_state_of(row.state) == RK_RUN_RUNNING;
		rk_run_row_release(&row);
		if (*why)
			return stop_error(run, *why, err);
		if (done)
			break;
	}
	b = cJSON_CreateObject();
	rk_json_add_str_or_null(b, "note", *note);
	emit(run, "run.takeover_ended", b);
	return 0;
}

/* Runs the calls of the last reply in order, adding each result. Returns 0,
 * or a negative code with *why set when the run must stop. */
static int run_calls(struct run *run, const struct rk_model_reply *reply, const char **why, struct rk_error *err)
{
	struct rk_tools_ctx tctx = {.eng = run->eng,
				    .computer = &run->c,
				    .bot_id = run->row.bot_id,
				    .fence = run->fence,
				    .run_id = run->id,
				    .cancel = run->x->cancel,
				    .webhook = !strcmp(rk_json_string(run->opts, "trigger", "person"), "webhook"),
				    .native = run->has_native ? &run->native : NULL};
	for (size_t i = 0; i < reply->ncalls; i++) {
		const struct rk_model_tool_call *call = &reply->calls[i];
		const char *cid = call->id ? call->id : "", *name = call->name ? call->name : "";
		int r = 0;
		if ((*why = look(run)))
			r = stop_error(run, *why, err);
		else if (rk_lease_check(run->eng, run->c.id, lease_bot(&run->row), run->fence, err)) {
			*why = "lease_lost";
			r = rk_error_set(err, RK_ESTALE,
					 "lease_lost: the execution lease of bot '%s' on computer '%s' was taken over "
					 "(fence %lld is stale); no more actions are made",
					 lease_bot(&run->row), run->c.name, (long long)run->fence);
		}
		if (r) {
			/* the calls not made still get a result, so a resume sees a whole turn */
			for (size_t k = i; k < reply->ncalls; k++)
				add_tool_msg(run, reply->calls[k].id ? reply->calls[k].id : "",
					     "{\"error\":{\"code\":\"interrupted\",\"message\":\"not run: the run was "
					     "stopped before this call\"}}",
					     NULL);
			return r;
		}
		cJSON *b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		cJSON_AddStringToObject(b, "id", cid);
		cJSON_AddStringToObject(b, "name", name);
		cJSON_AddItemToObject(b, "arguments", call_arguments(call));
		emit(run, "tool.call", b);

		struct rk_tool_result res = {0};
		int acknowledged = 0;
		if (!strcmp(name, "request_takeover") && run->c.desktop) {
			cJSON *a = NULL;
			rk_model_tool_call_args(call, &a, NULL);
			const char *reason = rk_json_string(a, "reason", NULL);
			char *note = NULL;
			r = wait_takeover(run, reason && reason[0] ? reason : "I need you on the screen.", &note, why,
					  err);
			cJSON_Delete(a);
			if (r) {
				add_tool_msg(run, cid,
					     "{\"error\":{\"code\":\"interrupted\",\"message\":\"the takeover did not "
					     "end: the run was stopped\"}}",
					     NULL);
				for (size_t k = i + 1; k < reply->ncalls; k++)
					add_tool_msg(run, reply->calls[k].id ? reply->calls[k].id : "",
						     "{\"error\":{\"code\":\"interrupted\",\"message\":\"not run\"}}",
						     NULL);
				return r;
			}
			cJSON *doc = cJSON_CreateObject();
			cJSON_AddBoolToObject(doc, "ok", 1);
			cJSON_AddStringToObject(doc, "message", "the person handed control back");
			rk_json_add_str_or_null(doc, "note", note);
			rk_secret_redactor_json(run->red, doc); /* the person's note, as the model gets it */
			res.text = cJSON_PrintUnformatted(doc);
			cJSON_Delete(doc);
			free(note);
		} else if (call->native) {
			rk_tools_native_call(&tctx, call, &res, &acknowledged);
		} else {
			rk_tools_call(&tctx, name, call->arguments, &res);
		}
		note_session(run, &res, name);
		record_history(run, name, call->arguments, &res);
		keep_frame(run, &res);
		struct rk_model_message *m = add_result_msg(run, cid, res.text, res.png ? res.label : NULL,
							    call->native, acknowledged ? call->safety_checks : NULL);
		const char *image = NULL;
		/* the Responses API's computer_call_output is a screenshot: it is
		 * sent even when the frame did not change */
		int dedupe = !(call->native && run->cfg.api == RK_MODEL_API_RESPONSES);
		if (res.png)
			image = rk_model_message_add_image_as(run->conv, m, res.mime[0] ? res.mime : "image/png",
							      res.png, res.png_len,
							      dedupe && res.frame_hash[0] ? res.frame_hash : NULL,
							      res.label)
					? "sent"
					: "unchanged";
		if (image && image[0] == 's')
			run->new_images++;

		b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		cJSON_AddStringToObject(b, "id", cid);
		cJSON_AddStringToObject(b, "name", name);
		size_t tl = strlen(res.text);
		if (tl > OUTPUT_EVENT_MAX) {
			while (tl > 0 && tl > OUTPUT_EVENT_MAX)
				tl--;
			while (tl > 0 && ((unsigned char)res.text[tl] & 0xC0) == 0x80)
				tl--;
			char *cut = rk_xasprintf("%.*s…", (int)tl, res.text);
			cJSON_AddStringToObject(b, "output", cut);
			free(cut);
		} else {
			cJSON_AddStringToObject(b, "output", res.text);
		}
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
		beat(run, 1000);
	}
	rk_model_prune_images(run->conv, run->cfg.keep_images, run->cfg.prune_block);
	return 0;
}

/* The vendor's native computer tool, when the run's model has one and the
 * computer a desktop: its screenshots are sized from the screen's size (one
 * small look), and it takes the place of computer_observe and computer_act
 * among the tools. RAKAZO_COMPUTER_TOOL=none keeps the function tools. */
static int native_setup(struct run *run, struct rk_error *err)
{
	if (!run->c.desktop)
		return 0;
	int r = rk_computer_tool_spec_for(run->cfg.api, run->cfg.model, &run->native, err);
	if (r <= 0)
		return r;
	struct rk_tools_ctx tctx = {.eng = run->eng,
				    .computer = &run->c,
				    .bot_id = run->row.bot_id,
				    .fence = run->fence,
				    .run_id = run->id,
				    .cancel = run->x->cancel};
	int w, h;
	if (rk_tools_screen_size(&tctx, &w, &h, err))
		return rk_error_prefix(err, "the native computer tool needs the screen's size");
	rk_computer_tool_fit(&run->native, w, h);
	if (run->row.bot_id)
		run->native.zoom = 0; /* a bot's own screen has no zoom (tools.c) */
	size_t n;
	const struct rk_model_tool *base = run_tools(&run->c, &n);
	run->own_tools = rk_xcalloc(n + 1, sizeof(*run->own_tools));
	size_t k = 0;
	rk_computer_tool_declare(&run->native, &run->own_tools[k++]);
	for (size_t i = 0; i < n; i++)
		if (strcmp(base[i].name, "computer_observe") != 0 && strcmp(base[i].name, "computer_act") != 0)
			run->own_tools[k++] = base[i];
	run->has_native = 1;
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", run->native.type);
	cJSON_AddNumberToObject(b, "display_width", run->native.display_w);
	cJSON_AddNumberToObject(b, "display_height", run->native.display_h);
	cJSON_AddNumberToObject(b, "screen_width", w);
	cJSON_AddNumberToObject(b, "screen_height", h);
	cJSON_AddBoolToObject(b, "zoom", run->native.zoom);
	emit(run, "run.computer_tool", b);
	return 0;
}

/* Answers each call of reply with an error result instead of running it
 * (so the conversation stays whole), the text saying why. */
static void calls_not_run(struct run *run, const struct rk_model_reply *reply, const char *why)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "code", "not_run");
	cJSON_AddStringToObject(e, "message", why);
	char *text = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	for (size_t i = 0; i < reply->ncalls; i++)
		add_result_msg(run, reply->calls[i].id ? reply->calls[i].id : "", text, NULL, reply->calls[i].native,
			       NULL);
	free(text);
}

/* A reply that ended other than with an answer or calls (model.h
 * rk_model_stop_of), already added to the conversation:
 *   refusal, content_filter, context_window: the run fails with that reason
 *     (its calls, if any, are not run);
 *   max_tokens: a reply cut at the output limit is never taken as the
 *     answer and its calls are never run (their arguments may be cut
 *     short): the model is told and asked again (*go_on), and a second cut
 *     reply in a row fails the run with reason output_limit;
 *   pause_turn: the turn is sent back as it is, so the model goes on
 *     (*go_on); calls it made run as usual.
 * 0 to go on as usual (or, with *go_on, with the next request). */
static int unusual_stop(struct run *run, const struct rk_model_reply *reply, const char *stop, int *go_on,
			const char **reason, struct rk_error *err)
{
	if (!strcmp(stop, "pause_turn")) {
		*go_on = reply->ncalls == 0;
		return 0;
	}
	if (!strcmp(stop, "max_tokens")) {
		if (++run->truncated >= 2) {
			calls_not_run(run, reply, "not run: the reply was cut at the output limit");
			*reason = "output_limit";
			return rk_error_set(err, RK_EFAILED,
					    "output_limit: the model's reply was cut at its output limit (%s) %d times "
					    "in a row; raise \"max_tokens\" in the config file's \"model\" (now %d) and "
					    "`rakazo run resume %s`",
					    reply->finish_reason ? reply->finish_reason : "max_tokens", run->truncated,
					    run->cfg.max_tokens, run->id);
		}
		static const char cut[] = "Your last reply was cut off at the output token limit";
		if (reply->ncalls) {
			calls_not_run(run, reply,
				      "not run: your last reply was cut off at the output token limit, so this call's "
				      "arguments may be incomplete; make the call again, keeping the reply shorter");
		} else {
			char *m = rk_xasprintf("%s. Go on from where it stopped, more briefly.", cut);
			add_text_msg(run, RK_MODEL_USER, m);
			free(m);
		}
		*go_on = 1;
		return 0;
	}
	calls_not_run(run, reply, "not run: the run ended");
	*reason = stop;
	if (!strcmp(stop, "refusal"))
		return rk_error_set(err, RK_EFAILED, "refusal: the model declined: %s", reply->refusal);
	if (!strcmp(stop, "content_filter"))
		return rk_error_set(err, RK_EFAILED,
				    "content_filter: the vendor's content filter stopped the model's reply (%s)%s%.300s",
				    reply->finish_reason ? reply->finish_reason : "content_filter",
				    reply->text ? ": " : "", reply->text ? reply->text : "");
	return rk_error_set(err, RK_EFAILED,
			    "context_window: the conversation filled the model's context window (%s); start a new "
			    "run, or use a model with a larger window",
			    reply->finish_reason ? reply->finish_reason : "");
}

/* What must outlive a compaction besides the task: the run's memory
 * documents (their contents, up to a budget) and the shell sessions it
 * left running. Malloc'd; "" when there is none. */
#define COMPACT_MEMORY_MAX 8000
static char *compact_context(struct run *run)
{
	struct rk_buf b;
	rk_buf_init(&b);
	struct rk_actor a = {0};
	struct rk_error e;
	cJSON *list = NULL;
	if (rk_actor_resolve(&a, run->eng, NULL, run->row.bot_id, &e) == 0 &&
	    rk_memory_read(run->eng, &a, NULL, &list, &e) == 0 && cJSON_GetArraySize(list) > 0) {
		rk_buf_adds(&b, "Your memory documents (memory_read has them whole):\n");
		size_t budget = COMPACT_MEMORY_MAX;
		const cJSON *d;
		cJSON_ArrayForEach(d, list)
		{
			const char *path = rk_json_string(d, "path", "");
			cJSON *doc = NULL;
			rk_buf_printf(&b, "- %s (revision %lld)", path,
				      (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(d, "revision")));
			if (budget > 0 && rk_memory_read(run->eng, &a, path, &doc, &e) == 0) {
				const char *content = rk_json_string(doc, "content", "");
				size_t n = strlen(content);
				if (n > budget) {
					n = budget;
					while (n > 0 && ((unsigned char)content[n] & 0xC0) == 0x80)
						n--;
				}
				rk_buf_printf(&b, ":\n%.*s%s", (int)n, content, n < strlen(content) ? " [...]" : "");
				budget -= n;
			}
			rk_buf_addc(&b, '\n');
			cJSON_Delete(doc);
		}
	}
	cJSON_Delete(list);
	rk_actor_release(&a);
	if (run->nsessions) {
		rk_buf_adds(&b, b.len ? "\n" : "");
		rk_buf_adds(&b, "Shell sessions this run left running (write_stdin goes on with one):");
		for (size_t i = 0; i < run->nsessions; i++)
			rk_buf_printf(&b, " %s", run->sessions[i]);
		rk_buf_addc(&b, '\n');
	}
	rk_secret_redactor_buf(run->red, &b);
	return rk_buf_detach(&b, NULL);
}

/* After a turn whose results are in: compacts the conversation when the
 * turn's input (prompt_tokens) and what it added since (growth) near the
 * model's window (engine/agent/model_compact.h). A failed compaction is
 * reported and the run goes on: the model may still fit, or will say it
 * does not. */
static void maybe_compact(struct run *run, int64_t prompt_tokens, int64_t growth, const struct rk_model_tool *tools,
			  size_t ntools)
{
	if (!rk_model_compact_due(&run->cfg, prompt_tokens, growth))
		return;
	char *task = redacted(run, run->row.task);
	char *context = compact_context(run);
	struct rk_model_compaction k = {.task = task, .context = context};
	struct rk_error e;
	int r = rk_model_compact(&run->cfg, run->conv, tools, ntools, &k, &e);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "step", (double)run->steps);
	cJSON_AddStringToObject(b, "method", k.method);
	cJSON_AddNumberToObject(b, "before_tokens", (double)(prompt_tokens + growth));
	if (r) {
		rk_log(RK_LOG_WARN, "run %s: %s", run->id, e.message);
		cJSON *o = cJSON_AddObjectToObject(b, "error");
		cJSON_AddStringToObject(o, "code", rk_code_name(e.code));
		cJSON_AddStringToObject(o, "message", e.message);
		emit(run, "run.compaction_failed", b);
	} else if (k.dropped == 0) {
		cJSON_Delete(b); /* nothing old enough to drop yet */
	} else {
		struct rk_run_usage u = {.input = count(k.prompt_tokens), .output = count(k.output_tokens)};
		run->usage.input += u.input;
		run->usage.output += u.output;
		run->attempt_tok += u.input + u.output;
		store_compacted(run, &k);
		cJSON_AddNumberToObject(b, "after_tokens", (double)k.after_tokens);
		cJSON_AddNumberToObject(b, "kept_messages", (double)k.kept);
		cJSON_AddNumberToObject(b, "dropped_messages", (double)k.dropped);
		cJSON_AddNumberToObject(b, "context_window", (double)run->cfg.context_window);
		if (k.note) /* the vendor's compaction failed: the model summarised */
			cJSON_AddStringToObject(b, "note", k.note);
		add_usage(b, &u);
		emit(run, "run.compacted", b);
		rk_log(RK_LOG_INFO, "run %s: compacted at step %lld: %zu messages summarised, about %lld tokens now",
		       run->id, (long long)run->steps, k.dropped, (long long)k.after_tokens);
	}
	rk_model_compaction_release(&k);
	free(context);
	free(task);
}

/* The loop. Returns 0 with *answer (malloc'd) set, or a negative code with
 * err and *reason set. */
static int loop(struct run *run, char **answer, const char **reason, struct rk_error *err)
{
	int64_t t0 = rk_monotonic_ms();
	size_t ntools;
	const struct rk_model_tool *tools = run_tools(&run->c, &ntools);
	int r = native_setup(run, err);
	if (r) {
		*reason = "model";
		return r;
	}
	if (run->own_tools) {
		for (ntools = 0; run->own_tools[ntools].name; ntools++)
			;
		tools = run->own_tools;
	}
	for (;;) {
		if ((*reason = look(run))) {
			r = stop_error(run, *reason, err);
			break;
		}
		if (run->attempt_steps >= run->max_steps) {
			*reason = "max_steps";
			r = rk_error_set(err, RK_EFAILED,
					 "max_steps: the model took %d steps without a final answer (raise --max-steps, "
					 "or `rakazo run resume` it)",
					 run->max_steps);
			break;
		}
		if (run->max_wall_ms > 0 && rk_monotonic_ms() - t0 >= run->max_wall_ms) {
			*reason = "max_wall";
			r = rk_error_set(err, RK_ETIMEOUT, "max_wall: the run took longer than %lld ms",
					 (long long)run->max_wall_ms);
			break;
		}
		if (run->max_tokens > 0 && run->attempt_tok >= run->max_tokens) {
			*reason = "max_tokens";
			r = rk_error_set(err, RK_EFAILED, "max_tokens: the run used %lld tokens (limit %lld)",
					 (long long)run->attempt_tok, (long long)run->max_tokens);
			break;
		}
		if (run->max_cost_micro > 0 && run->usage.cost_micro >= run->max_cost_micro) {
			*reason = "max_cost";
			r = rk_error_set(
				err, RK_EFAILED,
				"max_cost: the run spent $%.4f of its $%.4f budget (%s prices of %s); `rakazo run "
				"resume %s --max-cost USD` with a higher limit goes on",
				(double)run->usage.cost_micro / 1e6, (double)run->max_cost_micro / 1e6,
				run->cfg.price.source, run->cfg.model, run->id);
			break;
		}
		reload_redactor(run);
		struct rk_model_reply reply = {0};
		int64_t images = rk_model_image_count(run->conv), new_images = run->new_images;
		run->text_at = rk_monotonic_ms();
		r = rk_model_complete(&run->cfg, run->conv, tools, ntools, &reply, err);
		flush_text(run, 1);
		if (r) {
			if (rk_err(err)->code == RK_EINTERRUPTED) {
				/* woken: by a cancel, an interrupt, or for nothing (then ask again) */
				if ((*reason = look(run))) {
					r = stop_error(run, *reason, err);
					break;
				}
				if (run->x->wake)
					*run->x->wake = 0;
				continue;
			}
			*reason = "model";
			rk_error_prefix(err, "model");
			break;
		}
		if (taken_over(run)) {
			rk_model_reply_release(&reply);
			*reason = "superseded";
			r = stop_error(run, *reason, err);
			break;
		}
		run->steps++;
		run->attempt_steps++;
		run->new_images = 0;
		struct rk_run_usage turn = {.input = count(reply.prompt_tokens),
					    .output = count(reply.completion_tokens),
					    .cached = count(reply.cached_tokens),
					    .cache_write = count(reply.cache_write_tokens),
					    .images = images};
		turn.cost_micro = rk_model_cost_micro(&run->cfg.price, turn.input, turn.cached, turn.cache_write,
						      turn.output);
		run->usage.input += turn.input;
		run->usage.output += turn.output;
		run->usage.cached += turn.cached;
		run->usage.cache_write += turn.cache_write;
		run->usage.images += turn.images;
		if (turn.cost_micro >= 0)
			run->usage.cost_micro = (run->usage.cost_micro > 0 ? run->usage.cost_micro : 0) +
						turn.cost_micro;
		run->attempt_tok += turn.input + turn.output;
		struct rk_error e2;
		if (rk_db_run_progress(run->eng->db, run->id, run->steps, &run->usage, &e2))
			rk_log(RK_LOG_WARN, "run %s: %s", run->id, e2.message);
		beat(run, 0);

		cJSON *b = cJSON_CreateObject();
		cJSON_AddNumberToObject(b, "step", (double)run->steps);
		rk_json_add_str_or_null(b, "finish_reason", reply.finish_reason);
		rk_json_add_str_or_null(b, "text", reply.text);
		cJSON_AddNumberToObject(b, "tool_calls", (double)reply.ncalls);
		const char *stop = rk_model_stop_of(&reply);
		rk_json_add_str_or_null(b, "stop", stop);
		if (reply.refusal)
			cJSON_AddStringToObject(b, "refusal", reply.refusal);
		cJSON_AddNumberToObject(add_usage(b, &turn), "new_images", (double)new_images);
		emit(run, "model.turn", b);

		size_t added = run->conv->n; /* what this turn adds, for the growth estimate */
		int64_t prompt_tokens = reply.prompt_tokens;
		add_reply_msg(run, &reply);
		int go_on = 0;
		if (stop && (r = unusual_stop(run, &reply, stop, &go_on, reason, err)) == 0 && go_on) {
			rk_model_reply_release(&reply);
			continue;
		}
		if (r) {
			rk_model_reply_release(&reply);
			break;
		}
		if (!stop || strcmp(stop, "max_tokens"))
			run->truncated = 0;
		if (reply.ncalls == 0) {
			*answer = rk_xstrdup(reply.text ? reply.text : "");
			rk_model_reply_release(&reply);
			break;
		}
		r = run_calls(run, &reply, reason, err);
		rk_model_reply_release(&reply);
		if (r)
			break;
		int64_t growth = 0;
		for (size_t i = added; i < run->conv->n; i++)
			growth += rk_model_message_tokens(run->conv->msgs[i]);
		if (prompt_tokens < 0) { /* the server did not count: estimate the next request */
			prompt_tokens = rk_model_request_tokens(&run->cfg, run->conv, tools, ntools);
			growth = 0;
		}
		maybe_compact(run, prompt_tokens, growth, tools, ntools);
	}
	return r;
}

/* The checkpoint at the end. A completed run needs it (its failure fails
 * the run); a failed run's is best effort, reported as an event. */
static int checkpoint(struct run *run, int failed, struct rk_error *err)
{
	struct rk_error e = {0};
	/* a failed run's checkpoint is best effort, and deferred on a Team
	 * computer like a completed run's */
	int r = rk_idle_run_end(run->eng, run->c.id, run->id, failed, &e);
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

/* A cost limit needs a price: RK_EUSAGE before any spending when the model
 * has none. */
static int need_price(const struct rk_model_config *cfg, struct rk_error *err)
{
	if (cfg->price.known)
		return 0;
	return rk_error_set(err, RK_EUSAGE,
			    "--max-cost: no price is known for the model %s; put {\"model\": {\"price\": {\"input\": "
			    "USD, \"output\": USD, \"cached\": USD, \"cache_write\": USD}}} (per million tokens) in "
			    "%s",
			    cfg->model, cfg->config_path ? cfg->config_path : "DATA_DIR/config.json");
}

static cJSON *options_json(const struct rk_run_options *opt)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "max_steps", opt->max_steps > 0 ? opt->max_steps : RK_RUN_MAX_STEPS_DEFAULT);
	cJSON_AddNumberToObject(o, "max_wall_ms", (double)(opt->max_wall_ms > 0 ? opt->max_wall_ms : 0));
	cJSON_AddNumberToObject(o, "max_tokens", (double)(opt->max_tokens > 0 ? opt->max_tokens : 0));
	cJSON_AddNumberToObject(o, "max_cost", opt->max_cost > 0 ? opt->max_cost : 0);
	rk_json_add_str_or_null(o, "system_prompt", opt->system_prompt);
	cJSON_AddStringToObject(o, "trigger", opt->trigger ? opt->trigger : "person");
	cJSON_AddBoolToObject(o, "auto_resume", !opt->no_auto_resume);
	/* the flags given; the rest (and the key, never stored) comes from the
	 * environment and config file of the process that runs it, so a resume
	 * can point a run whose endpoint went down at a working one */
	if (opt->model && opt->model->base_url)
		cJSON_AddStringToObject(o, "model_base_url", opt->model->base_url);
	if (opt->model && opt->model->model)
		cJSON_AddStringToObject(o, "model", opt->model->model);
	if (opt->model && opt->model->api)
		cJSON_AddStringToObject(o, "model_api", opt->model->api);
	if (opt->model && opt->model->max_retries >= 0)
		cJSON_AddNumberToObject(o, "model_retries", opt->model->max_retries);
	if (opt->model && opt->model->config_path)
		cJSON_AddStringToObject(o, "model_config", opt->model->config_path);
	if (opt->model && opt->model->no_stream)
		cJSON_AddBoolToObject(o, "model_no_stream", 1);
	return o;
}

static int lease_conflict(struct rk_engine *eng, const struct rk_computer *c, const char *bot, struct rk_error *err)
{
	struct rk_lease l = {0};
	struct rk_error e;
	char *holder = NULL;
	if (rk_db_lease_get(eng->db, c->id, bot, &l, &e) == 0 && l.holder)
		holder = rk_xstrdup(l.holder);
	rk_lease_release_record(&l);
	if (holder && !strncmp(holder, "run_", 4))
		rk_error_set(err, RK_ECONFLICT,
			     "bot '%s' already runs on computer '%s' (run %s): wait for it, or `rakazo run cancel %s`",
			     bot, c->name, holder, holder);
	else
		rk_error_set(err, RK_ECONFLICT,
			     "the execution lease of bot '%s' on computer '%s' is held by %s: wait for it, or use "
			     "another --bot",
			     bot, c->name, holder ? holder : "someone else");
	free(holder);
	return -RK_ECONFLICT;
}

/* Whoever starts a run must be able to use its computer. A person who
 * starts a bot's run on a computer they manage gives that bot its right
 * (the same right `rakazo computer grant` records, so `rights` shows it and
 * a revoke stops the run's next action); a bot starts runs only as itself. */
static int authorize_starter(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c,
			     const char *bot, struct rk_error *err)
{
	int r;
	if (a->bot && bot && strcmp(a->bot, bot) != 0)
		r = rk_error_set(err, RK_EDENIED, "bot '%s' cannot start a run as bot '%s'", a->bot, bot);
	else if ((r = rk_authz_check(eng, a, "computers.use", c, err)) == 0 && bot && !a->bot)
		r = rk_authz_grant(eng, a, c, bot, err);
	return r;
}

int rk_run_create(struct rk_engine *eng, const struct rk_run_options *opt, char **run_id, struct rk_error *err)
{
	*run_id = NULL;
	if (!opt->task || !opt->task[0])
		return rk_error_set(err, RK_EUSAGE, "a run needs a task");
	if (opt->trigger && strcmp(opt->trigger, "person") && strcmp(opt->trigger, "webhook"))
		return rk_error_set(err, RK_EUSAGE, "a run's trigger is person or webhook, not '%s'", opt->trigger);
	struct rk_model_config cfg = {0};
	struct rk_computer c = {0};
	struct rk_actor a;
	int r = rk_actor_resolve(&a, eng, NULL, NULL, err);
	if (r)
		return r;
	if ((r = rk_model_config_load(opt->model, eng->data_dir, &cfg, err)) == 0 &&
	    (opt->max_cost <= 0 || (r = need_price(&cfg, err)) == 0) &&
	    (r = pick_computer(eng, &a, opt->computer, &c, err)) == 0)
		r = authorize_starter(eng, &a, &c, opt->bot, err);
	rk_actor_release(&a);
	if (r) {
		rk_computer_release(&c);
		rk_model_config_release(&cfg);
		return r;
	}
	struct rk_error e;
	if (rk_run_reap(eng, NULL, &e))
		rk_log(RK_LOG_WARN, "stale runs: %s", e.message);
	char *id = rk_id_new("run");
	const char *bot = opt->bot ? opt->bot : RK_RUN_LEASE_BOT_DEFAULT;
	struct rk_lease l = {0};
	if ((r = rk_lease_acquire(eng, c.id, bot, id, LEASE_TTL_MS, &l, err))) {
		if (r == -RK_ECONFLICT)
			r = lease_conflict(eng, &c, bot, err);
		goto out;
	}
	cJSON *oj = options_json(opt);
	/* the protocol the configuration chose: the row keeps the model's name
	 * without its vendor prefix, so a resume could not infer it again */
	if (!cJSON_GetObjectItemCaseSensitive(oj, "model_api"))
		cJSON_AddStringToObject(oj, "model_api", rk_model_api_name(cfg.api));
	/* the endpoint it starts with, whatever set it: an automatic resume
	 * runs in a process the worker starts, whose environment may differ */
	if (cfg.base_url)
		cJSON_AddStringToObject(oj, "model_endpoint", cfg.base_url);
	char *options = cJSON_PrintUnformatted(oj);
	cJSON_Delete(oj);
	struct rk_run_row row = {.id = id,
				 .bot_id = (char *)opt->bot,
				 .thread_id = (char *)opt->thread,
				 .computer_id = c.id,
				 .task = (char *)opt->task,
				 .model = cfg.model,
				 .state = "queued",
				 .options = options,
				 .lease_bot = (char *)bot,
				 .lease_fence = l.fence,
				 .auto_resumes_left = opt->no_auto_resume ? 0 : 1};
	r = rk_db_run_insert(eng->db, &row, err);
	free(options);
	if (r) {
		rk_lease_release(eng, c.id, bot, l.fence, &e);
		goto out;
	}
	*run_id = id;
	id = NULL;
	/* a worker watches live runs: it marks this one interrupted if its process dies */
	if (rk_worker_ensure(eng, &e))
		rk_log(RK_LOG_WARN, "run: no worker to watch it: %s", e.message);
out:
	rk_lease_release_record(&l);
	free(id);
	rk_computer_release(&c);
	rk_model_config_release(&cfg);
	return r;
}

/* The model configuration of a run's stored options (and its row's model). */
static int opts_config(struct rk_engine *eng, const cJSON *opts, const char *row_model, struct rk_model_config *cfg,
		       struct rk_error *err)
{
	struct rk_model_flags mf = RK_MODEL_FLAGS_INIT;
	mf.base_url = rk_json_string(opts, "model_base_url", NULL);
	mf.model = rk_json_string(opts, "model", row_model); /* a run keeps its model */
	mf.config_path = rk_json_string(opts, "model_config", NULL);
	mf.api = rk_json_string(opts, "model_api", NULL);
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(opts, "model_retries");
	if (cJSON_IsNumber(rt))
		mf.max_retries = rt->valueint;
	return rk_model_config_load(&mf, eng->data_dir, cfg, err);
}

/* Loads the model configuration from the run's stored options. */
static int run_config(struct run *run, struct rk_error *err)
{
	int r = opts_config(run->eng, run->opts, run->row.model, &run->cfg, err);
	if (r)
		return r;
	run->cfg.cancel = run->x->wake ? run->x->wake : run->x->cancel;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run->opts, "model_no_stream")))
		run->cfg.stream = 0;
	run->sink = (struct rk_model_sink){on_model_text, on_model_call, run};
	run->cfg.sink = &run->sink;
	/* a thread's runs share their conversation's prefix, so its cache too */
	run->cfg.cache_key = rk_xasprintf("rakazo-%s", run->row.thread_id ? run->row.thread_id : run->id);
	const cJSON *v;
	v = cJSON_GetObjectItemCaseSensitive(run->opts, "max_steps");
	run->max_steps = cJSON_IsNumber(v) && v->valueint > 0 ? v->valueint : RK_RUN_MAX_STEPS_DEFAULT;
	v = cJSON_GetObjectItemCaseSensitive(run->opts, "max_wall_ms");
	run->max_wall_ms = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(run->opts, "max_tokens");
	run->max_tokens = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(run->opts, "max_cost");
	run->max_cost_micro = cJSON_IsNumber(v) && v->valuedouble > 0 ? (int64_t)(v->valuedouble * 1e6 + 0.5) : 0;
	if (run->max_cost_micro > 0 && (r = need_price(&run->cfg, err)))
		return r;
	run->system_prompt = rk_json_string(run->opts, "system_prompt", NULL);
	return 0;
}

int rk_run_execute(struct rk_engine *eng, const char *run_id, const struct rk_run_exec *x, struct rk_error *err)
{
	static const struct rk_run_exec none = {0};
	struct run run = {.eng = eng, .x = x ? x : &none, .fence = -1};
	rk_buf_init(&run.text);
	int r = rk_db_run_get(eng->db, run_id, &run.row, err);
	if (r) {
		rk_buf_release(&run.text);
		return r;
	}
	if (rk_run_state_of(run.row.state) != RK_RUN_QUEUED) {
		r = rk_error_set(err, RK_ECONFLICT, "run %s is %s, not queued", run_id, run.row.state);
		rk_run_row_release(&run.row);
		return r;
	}
	run.id = rk_xstrdup(run.row.id);
	run.opts = cJSON_Parse(run.row.options ? run.row.options : "{}");
	if (!run.opts)
		run.opts = cJSON_CreateObject();
	run.steps = run.row.steps > 0 ? run.row.steps : 0;
	run.usage = (struct rk_run_usage){.input = count(run.row.input_tokens),
					  .output = count(run.row.output_tokens),
					  .cached = count(run.row.cached_tokens),
					  .cache_write = count(run.row.cache_write_tokens),
					  .images = count(run.row.images),
					  .cost_micro = run.row.cost_micro};
	run.conv = rk_model_conversation_new();
	reload_redactor(&run);
	char *answer = NULL;
	const char *reason = NULL;
	struct rk_error e2;
	int have_computer = 0, resumed = run.row.attempts > 0;
	if ((r = rk_db_run_event_last(eng->db, run.id, &run.seq, err))) {
		reason = "database";
		goto fail_early;
	}
	if ((r = rk_db_computer_get(eng->db, run.row.computer_id, &run.c, err))) {
		reason = "computer";
		goto fail_early;
	}
	have_computer = 1;
	if ((r = run_config(&run, err))) {
		reason = "model";
		goto fail_early;
	}
	/* the same holder takes its lease again (a detached child, a resume): the fence moves on */
	struct rk_lease l = {0};
	if ((r = rk_lease_acquire(eng, run.c.id, lease_bot(&run.row), run.id, LEASE_TTL_MS, &l, err))) {
		if (r == -RK_ECONFLICT)
			r = lease_conflict(eng, &run.c, lease_bot(&run.row), err);
		reason = "conflict";
		rk_lease_release_record(&l);
		goto fail_early;
	}
	run.fence = l.fence;
	rk_lease_release_record(&l);
	if ((r = rk_db_run_begin_attempt(eng->db, run.id, getpid(), lease_bot(&run.row), run.fence, err))) {
		reason = "database";
		goto fail_early;
	}
	run.last_beat = rk_monotonic_ms();
	rk_log(RK_LOG_INFO, "run %s: %s on %s with %s", run.id, resumed ? "resumed" : "started", run.c.id,
	       run.cfg.model);

	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "attempt", (double)(run.row.attempts + 1));
	cJSON_AddBoolToObject(b, "resumed", resumed);
	cJSON_AddStringToObject(b, "computer_id", run.c.id);
	cJSON_AddStringToObject(b, "computer", run.c.name);
	cJSON_AddStringToObject(b, "model", run.cfg.model);
	cJSON_AddStringToObject(b, "task", run.row.task);
	cJSON_AddNumberToObject(b, "max_steps", run.max_steps);
	emit(&run, "run.started", b);

	if (resumed) {
		if ((r = load_conversation(&run, err))) {
			reason = "database";
			goto finish;
		}
		char *t = rk_xasprintf("The run was stopped (%s) and is now resumed. Go on with the task from where "
				       "you were; check the state of anything you were doing before relying on it.",
				       run.row.reason ? run.row.reason : "interrupted");
		add_text_msg(&run, RK_MODEL_USER, t);
		free(t);
	} else {
		add_text_msg(&run, RK_MODEL_SYSTEM, run.system_prompt ? run.system_prompt : default_prompt);
		char *prev;
		int n;
		if ((r = continue_thread(&run, &prev, &n, err))) {
			reason = "database";
			goto finish;
		}
		if (prev) {
			cJSON *t = cJSON_CreateObject();
			cJSON_AddStringToObject(t, "thread_id", run.row.thread_id);
			rk_json_add_str_or_null(t, "bot_id", run.row.bot_id);
			cJSON_AddStringToObject(t, "previous_run_id", prev);
			cJSON_AddNumberToObject(t, "messages", n);
			emit(&run, "run.thread", t);
			free(prev);
		}
		add_text_msg(&run, RK_MODEL_USER, run.row.task);
	}
	/* a paused computer is resumed before the first step */
	if ((r = rk_computer_ensure_running(eng, &run.c, err))) {
		reason = "computer";
		rk_error_prefix(err, "computer '%s'", run.c.name);
		goto finish;
	}
	r = loop(&run, &answer, &reason, err);

finish:
	rk_model_files_end(&run.cfg, run.conv); /* the screenshots it uploaded: deleted */
	int superseded = reason && !strcmp(reason, "superseded");
	if (superseded) {
		/* someone else ended the run (found this process stalled): leave their record */
		rk_log(RK_LOG_WARN, "run %s: %s", run.id, rk_err(err)->message);
		goto out;
	}
	if (reason && !strcmp(reason, "cancelled"))
		kill_sessions(&run);
	int failed = r != 0;
	if (checkpoint(&run, failed, failed ? &e2 : err) && !failed) {
		r = -(int)rk_err(err)->code;
		reason = "checkpoint";
		free(answer);
		answer = NULL;
	}
	const char *state = r == 0				     ? "completed"
			    : reason && !strcmp(reason, "cancelled") ? "cancelled"
			    : rk_err(err)->code == RK_EINTERRUPTED   ? "interrupted"
								     : "failed";
	char *stored_answer = redacted(&run, answer), *stored_error = r ? redacted(&run, rk_err(err)->message) : NULL;
	if (rk_db_run_finish(eng->db, run.id, state, stored_answer, stored_error, &e2))
		rk_log(RK_LOG_ERROR, "run %s: cannot record its end (%s): %s", run.id, state, e2.message);
	free(stored_answer);
	free(stored_error);
	if (r && rk_db_run_set_meta(eng->db, run.id, reason ? reason : "failed", NULL, &e2))
		rk_log(RK_LOG_ERROR, "run %s: cannot record its reason: %s", run.id, e2.message);
	if (rk_lease_release(eng, run.c.id, lease_bot(&run.row), run.fence, &e2) && e2.code != RK_ESTALE)
		rk_log(RK_LOG_WARN, "run %s: lease release: %s", run.id, e2.message);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "state", state);
	cJSON_AddNumberToObject(b, "steps", (double)run.steps);
	add_usage(b, &run.usage);
	if (r == 0) {
		cJSON_AddStringToObject(b, "answer", answer);
	} else {
		cJSON_AddStringToObject(b, "reason", reason ? reason : "failed");
		cJSON *o = cJSON_AddObjectToObject(b, "error");
		cJSON_AddStringToObject(o, "code", rk_code_name(rk_err(err)->code));
		cJSON_AddStringToObject(o, "message", rk_err(err)->message);
	}
	emit(&run, "run.finished", b);
	rk_log(RK_LOG_INFO, "run %s: %s after %lld steps", run.id, state, (long long)run.steps);
	goto out;

fail_early:;
	/* it never got going: record why, so the row does not stay queued
	 * (the ';' above: a label before a declaration is C23, not C17) */
	char *why = redacted(&run, rk_err(err)->message);
	if (rk_db_run_finish(eng->db, run.id, "failed", NULL, why, &e2) == 0)
		rk_db_run_set_meta(eng->db, run.id, reason, NULL, &e2);
	free(why);
	if (reason && strcmp(reason, "conflict") && have_computer)
		rk_lease_release(eng, run.c.id, lease_bot(&run.row), run.fence > 0 ? run.fence : run.row.lease_fence,
				 &e2);
out:
	for (size_t i = 0; i < run.nsessions; i++)
		free(run.sessions[i]);
	free(run.sessions);
	free(answer);
	free(run.id);
	cJSON_Delete(run.opts);
	rk_model_conversation_free(run.conv);
	free(run.own_tools);
	rk_buf_release(&run.text);
	rk_secret_redactor_free(run.red);
	rk_run_row_release(&run.row);
	rk_computer_release(&run.c);
	rk_model_config_release(&run.cfg);
	return r;
}

int rk_run_start(struct rk_engine *eng, const struct rk_run_options *opt, rk_run_event_fn event_cb, void *cb_ctx,
		 char **run_id, struct rk_error *err)
{
	int r = rk_run_create(eng, opt, run_id, err);
	if (r)
		return r;
	struct rk_run_exec x = {event_cb, cb_ctx, opt->cancel, opt->wake};
	return rk_run_execute(eng, *run_id, &x, err);
}

/* ---- detached runs --------------------------------------------------------- */

static volatile sig_atomic_t detached_cancel, detached_wake;

static void detached_signal(int sig)
{
	if (sig != SIGUSR1)
		detached_cancel = 1;
	detached_wake = 1;
}

static void detached_main(void *arg, int ready_fd)
{
	const char *id = arg;
	struct rk_engine *eng = NULL;
	struct rk_error err = {0};
	struct sigaction sa = {0};
	sa.sa_handler = detached_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	if (rk_engine_open(&eng, &err)) {
		rk_ipc_ready(ready_fd, &err);
		_exit(1);
	}
	rk_ipc_ready(ready_fd, NULL);
	struct rk_run_exec x = {NULL, NULL, &detached_cancel, &detached_wake};
	int r = rk_run_execute(eng, id, &x, &err);
	rk_engine_free(eng);
	_exit(r == 0 ? 0 : 1);
}

int rk_run_detach(struct rk_engine *eng, const char *run_id, struct rk_error *err)
{
	char *id = rk_xstrdup(run_id);
	int r = rk_engine_spawn(eng, detached_main, id, err);
	free(id);
	if (r) {
		struct rk_error e2;
		rk_error_prefix(err, "run %s: cannot start its process", run_id);
		if (rk_db_run_finish(eng->db, run_id, "failed", NULL, rk_err(err)->message, &e2) == 0)
			rk_db_run_set_meta(eng->db, run_id, "worker_gone", NULL, &e2);
	}
	return r;
}

/* ---- resume, cancel, continue ---------------------------------------------- */

static int resumable(const struct rk_run_row *row)
{
	if (rk_run_state_of(row->state) == RK_RUN_INTERRUPTED)
		return 1;
	if (rk_run_state_of(row->state) != RK_RUN_FAILED || !row->reason)
		return 0;
	static const char *const ok[] = {"max_steps", "max_wall",   "max_tokens", "max_cost", "output_limit",
					 "model",     "lease_lost", "computer",	  NULL};
	for (size_t i = 0; ok[i]; i++)
		if (!strcmp(row->reason, ok[i]))
			return 1;
	return 0;
}

int rk_run_resume(struct rk_engine *eng, const char *run_id, const struct rk_run_resume_options *ro,
		  const struct rk_run_exec *x, struct rk_error *err)
{
	int r = rk_run_reap(eng, NULL, err);
	if (r)
		return r;
	struct rk_run_row row = {0};
	if ((r = rk_db_run_get(eng->db, run_id, &row, err)))
		return r;
	if (!resumable(&row)) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "run %s is %s%s%s: only an interrupted run, or one failed by a limit, the model or a "
				 "lost lease, can be resumed",
				 row.id, row.state, row.reason ? ", reason " : "", row.reason ? row.reason : "");
		rk_run_row_release(&row);
		return r;
	}
	cJSON *opts = cJSON_Parse(row.options ? row.options : "{}");
	if (!opts)
		opts = cJSON_CreateObject();
	if (ro && ro->max_steps > 0)
		cJSON_ReplaceItemInObject(opts, "max_steps", cJSON_CreateNumber(ro->max_steps));
	if (ro && ro->max_wall_ms > 0)
		cJSON_ReplaceItemInObject(opts, "max_wall_ms", cJSON_CreateNumber((double)ro->max_wall_ms));
	if (ro && ro->max_tokens > 0)
		cJSON_ReplaceItemInObject(opts, "max_tokens", cJSON_CreateNumber((double)ro->max_tokens));
	if (ro && ro->max_cost > 0) {
		/* a cost limit needs a price: a usage error before it is queued */
		struct rk_model_config cfg;
		if ((r = opts_config(eng, opts, row.model, &cfg, err)) == 0) {
			r = need_price(&cfg, err);
			rk_model_config_release(&cfg);
		}
		if (r) {
			cJSON_Delete(opts);
			rk_run_row_release(&row);
			return r;
		}
		if (cJSON_GetObjectItemCaseSensitive(opts, "max_cost"))
			cJSON_ReplaceItemInObject(opts, "max_cost", cJSON_CreateNumber(ro->max_cost));
		else
			cJSON_AddNumberToObject(opts, "max_cost", ro->max_cost);
	}
	char *options = cJSON_PrintUnformatted(opts);
	cJSON_Delete(opts);
	/* back to queued, only from the state it was read in (two resumes race: one wins) */
	if ((r = rk_db_begin(eng->db, err)) == 0) {
		struct rk_run_row now = {0};
		r = rk_db_run_get(eng->db, run_id, &now, err);
		if (r == 0 && strcmp(now.state, row.state))
			r = rk_error_set(err, RK_ECONFLICT, "run %s changed meanwhile: it is %s now", run_id,
					 now.state);
		if (r == 0)
			r = rk_db_run_set_state(eng->db, run_id, "queued", -1, err);
		if (r == 0)
			r = rk_db_run_set_meta(eng->db, run_id, NULL, options, err);
		if (r == 0)
			r = rk_db_commit(eng->db, err);
		if (r)
			rk_db_rollback(eng->db);
		rk_run_row_release(&now);
	}
	free(options);
	rk_run_row_release(&row);
	if (r)
		return r;
	if (ro && ro->detach)
		return rk_run_detach(eng, run_id, err);
	return rk_run_execute(eng, run_id, x, err);
}

/* ---- automatic resume -------------------------------------------------------- */

extern char **environ;

/* environ without the variables named in drop (each "NAME="), then add
 * (each "NAME=value", NULL ends it); the array is malloc'd, its strings
 * borrowed from environ and add. */
static char **env_with(const char *const *drop, char *const *add)
{
	size_t n = 0, k = 0;
	while (environ && environ[n])
		n++;
	while (add[k])
		k++;
	char **env = rk_xcalloc(n + k + 1, sizeof(*env));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		int skip = 0;
		for (size_t d = 0; drop[d] && !skip; d++)
			skip = !strncmp(environ[i], drop[d], strlen(drop[d]));
		if (!skip)
			env[m++] = environ[i];
	}
	for (size_t i = 0; i < k; i++)
		env[m++] = add[i];
	return env;
}

/* Starts `rakazo run execute ID` (self_exe) in a session of its own, stdio
 * on /dev/null, nobody's child. A fresh exec rather than rk_run_detach's
 * fork: the worker has threads (its heartbeat), and a fork of it inherits
 * whatever locks they held. Everything is made before fork: the children
 * make only async-signal-safe calls. The data directory and the run's
 * model endpoint go in its environment (the worker's may differ from the
 * one the run started in); the key comes from the worker's environment or
 * config file. Returns once the program is exec'd, or with why not. */
static int spawn_execute(struct rk_engine *eng, const char *run_id, const char *endpoint, struct rk_error *err)
{
	char *data = rk_xasprintf("RAKAZO_DATA_DIR=%s", eng->data_dir);
	char *base = endpoint ? rk_xasprintf("RAKAZO_MODEL_BASE_URL=%s", endpoint) : NULL;
	static const char *const drop_all[] = {"RAKAZO_DATA_DIR=", "RAKAZO_MODEL_BASE_URL=", NULL};
	static const char *const drop_data[] = {"RAKAZO_DATA_DIR=", NULL};
	char *add[] = {data, base, NULL};
	char **env = env_with(base ? drop_all : drop_data, add);
	char *argv[] = {"rakazo", "run", "execute", (char *)run_id, NULL};
	int fds[2], r = 0;
	if (pipe2(fds, O_CLOEXEC) != 0) {
		r = rk_error_errno(err, RK_EFAILED, errno, "cannot start run %s", run_id);
		goto out;
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		pid_t p2 = fork();
		if (p2 != 0)
			_exit(p2 < 0 ? 1 : 0);
		int dn = open("/dev/null", O_RDWR);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 1);
			dup2(dn, 2);
		}
		/* nothing of the worker's (its lock, its database) but the pipe that
		 * tells it the exec failed */
		if (fds[1] > 3)
			close_range(3, (unsigned)fds[1] - 1, 0);
		close_range((unsigned)fds[1] + 1, ~0U, 0);
		execve(eng->self_exe, argv, env);
		int e = errno;
		(void)!write(fds[1], &e, sizeof(e));
		_exit(127);
	}
	int fork_errno = errno;
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		r = rk_error_errno(err, RK_EFAILED, fork_errno, "cannot start run %s", run_id);
		goto out;
	}
	int status = 0, e = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	ssize_t got;
	while ((got = read(fds[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(fds[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r = rk_error_set(err, RK_EFAILED, "cannot start run %s: fork failed", run_id);
	else if (got == (ssize_t)sizeof(e))
		r = rk_error_errno(err, RK_EFAILED, e, "cannot start run %s: %s", run_id, eng->self_exe);
out:
	free(env);
	free(data);
	free(base);
	return r;
}

/* The one automatic resume of row (claimed by the caller): its event, then
 * the process that runs it. */
static int auto_resume_one(struct rk_engine *eng, const struct rk_run_row *row, struct rk_error *err)
{
	cJSON *opts = cJSON_Parse(row->options ? row->options : "{}");
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "from_attempt", (double)(row->attempts > 0 ? row->attempts : 0));
	cJSON_AddStringToObject(b, "reason", row->reason ? row->reason : "interrupted");
	cJSON *w = cJSON_AddObjectToObject(b, "worker");
	cJSON_AddStringToObject(w, "host", host);
	cJSON_AddNumberToObject(w, "pid", (double)getpid());
	cJSON *g = cJSON_AddObjectToObject(b, "previous");
	rk_json_add_str_or_null(g, "host_key", row->worker_host);
	cJSON_AddNumberToObject(g, "pid", (double)row->worker_pid);
	struct rk_secret_redactor *red = run_redactor(eng, row->bot_id);
	int64_t seq = 0;
	struct rk_error e;
	if (rk_db_run_event_last(eng->db, row->id, &seq, &e) == 0)
		cJSON_Delete(event_store(eng, red, row->id, seq + 1, "run.auto_resumed", b));
	else
		cJSON_Delete(b);
	rk_secret_redactor_free(red);
	rk_log(RK_LOG_INFO, "run %s: auto-resumed after %s (attempt %lld)", row->id, row->reason,
	       (long long)(row->attempts + 1));
	int r = spawn_execute(eng, row->id, rk_json_string(opts, "model_endpoint", NULL), err);
	cJSON_Delete(opts);
	if (r) {
		/* back to interrupted, its automatic resume spent: a person resumes it */
		rk_error_prefix(err, "run %s: its automatic resume", row->id);
		if (rk_db_run_finish(eng->db, row->id, "interrupted", NULL, rk_err(err)->message, &e) == 0)
			rk_db_run_set_meta(eng->db, row->id, "worker_gone", NULL, &e);
	}
	return r;
}

int rk_run_auto_resume(struct rk_engine *eng, int *resumed, struct rk_error *err)
{
	if (resumed)
		*resumed = 0;
	struct rk_run_row *rows;
	size_t n;
	int r = rk_db_run_list_auto_resumable(eng->db, &rows, &n, err);
	for (size_t i = 0; i < n && r == 0; i++) {
		int c = rk_db_run_claim_auto_resume(eng->db, rows[i].id, err);
		struct rk_error e;
		if (c < 0)
			r = c;
		else if (c > 0 && auto_resume_one(eng, &rows[i], &e) != 0)
			rk_log(RK_LOG_WARN, "%s", e.message); /* the run says so too; the others go on */
		else if (c > 0 && resumed)
			(*resumed)++;
	}
	rk_run_rows_free(rows, n);
	return r;
}

int rk_run_cancel(struct rk_engine *eng, const char *run_id, int64_t wait_ms, struct rk_error *err)
{
	int r = rk_run_reap(eng, NULL, err);
	struct rk_run_row row = {0};
	if (r || (r = rk_db_run_get(eng->db, run_id, &row, err)))
		return r;
	if (rk_run_state_is_final(row.state) && rk_run_state_of(row.state) != RK_RUN_INTERRUPTED) {
		r = rk_error_set(err, RK_ECONFLICT, "run %s has already ended: %s", row.id, row.state);
		goto out;
	}
	if ((r = rk_db_run_request_cancel(eng->db, row.id, err)))
		goto out;
	int64_t fresh = rk_now_ms() - rk_run_stale_ms();
	/* a run on another host is judged by its heartbeat, and hears of the
	 * cancel from the state rather than a signal */
	int alive = rk_host_pid_alive(row.worker_host, row.worker_pid);
	int live = alive != 0 && row.worker_pid > 0 && row.heartbeat_at >= fresh && !rk_run_state_is_final(row.state);
	if (!live && (rk_run_state_of(row.state) == RK_RUN_INTERRUPTED || row.worker_pid < 0)) {
		/* nothing runs it (an interrupted run, or a queued one no process took yet) */
		if ((r = rk_db_run_finish(eng->db, row.id, "cancelled", NULL, "cancelled: by `rakazo run cancel`",
					  err)) == 0 &&
		    (r = rk_db_run_set_meta(eng->db, row.id, "cancelled", NULL, err)) == 0 && row.lease_fence > 0) {
			struct rk_error e;
			rk_lease_release(eng, row.computer_id, lease_bot(&row), row.lease_fence, &e);
		}
		goto out;
	}
	if (live && alive == 1 && kill((pid_t)row.worker_pid, SIGUSR1) != 0)
		rk_log(RK_LOG_WARN, "run %s: cannot signal pid %lld: %s", row.id, (long long)row.worker_pid,
		       strerror(errno));
	int64_t deadline = rk_monotonic_ms() + wait_ms;
	while (wait_ms > 0) {
		struct rk_run_row now = {0};
		if ((r = rk_db_run_get(eng->db, run_id, &now, err)))
			goto out;
		int done = rk_run_state_is_final(now.state);
		rk_run_row_release(&now);
		if (done)
			goto out;
		if (rk_monotonic_ms() >= deadline) {
			r = rk_error_set(err, RK_ETIMEOUT,
					 "run %s has not stopped yet; it will at its next step (`rakazo run show %s`)",
					 run_id, run_id);
			goto out;
		}
		rk_sleep_ms(100);
	}
out:
	rk_run_row_release(&row);
	return r;
}

int rk_run_continue(struct rk_engine *eng, const char *run_id, const char *note, struct rk_error *err)
{
	int r = rk_run_reap(eng, NULL, err);
	struct rk_run_row row = {0};
	if (r || (r = rk_db_run_get(eng->db, run_id, &row, err)))
		return r;
	r = rk_db_run_end_takeover(eng->db, row.id, note, err);
	if (r == 0)
		r = rk_error_set(err, RK_ECONFLICT, "run %s is %s, not waiting for a takeover", row.id, row.state);
	else if (r > 0)
		r = 0;
	rk_run_row_release(&row);
	return r;
}

/* ---- removal ----------------------------------------------------------------- */

static int remove_one(struct rk_engine *eng, const char *run_id, struct rk_error *err)
{
	int r = rk_db_run_delete(eng->db, run_id, err);
	if (r)
		return r;
	/* the row goes first: attachments without a run are only disk, a run
	 * whose attachments went would point at nothing */
	char *dir = rk_xasprintf("%s/attachments/%s", eng->data_dir, run_id);
	struct rk_error e;
	if (!strchr(run_id, '/') && strcmp(run_id, "..") && rk_fs_remove_tree(dir, &e) != 0)
		r = rk_error_set(err, e.code, "run %s was removed, but not its attachments: %s", run_id, e.message);
	free(dir);
	return r;
}

int rk_run_remove(struct rk_engine *eng, const char *run_id, struct rk_error *err)
{
	int r = rk_run_reap(eng, NULL, err);
	return r ? r : remove_one(eng, run_id, err);
}

int rk_run_prune(struct rk_engine *eng, int64_t before_ms, int dry_run, char ***ids, size_t *n, struct rk_error *err)
{
	*ids = NULL;
	*n = 0;
	char **found = NULL;
	size_t nfound = 0;
	int r = rk_run_reap(eng, NULL, err);
	if (r == 0)
		r = rk_db_run_ended_before(eng->db, before_ms, &found, &nfound, err);
	for (size_t i = 0; i < nfound; i++) {
		int gone = 0;
		if (r == 0 && !dry_run && (r = remove_one(eng, found[i], err)) == -RK_ENOTFOUND) {
			r = 0; /* removed meanwhile by someone else */
			gone = 1;
		}
		if (r == 0 && !gone) {
			*ids = rk_xrealloc(*ids, (*n + 1) * sizeof(**ids));
			(*ids)[(*n)++] = found[i];
		} else {
			free(found[i]);
		}
	}
	free(found);
	return r;
}

/* ---- liveness ---------------------------------------------------------------- */

int64_t rk_run_stale_ms(void)
{
	const char *s = getenv("RAKAZO_RUN_STALE_MS");
	char *end;
	long long v = s && *s ? strtoll(s, &end, 10) : 0;
	if (s && *s && *end == 0 && v > 0)
		return v;
	return RK_RUN_STALE_MS_DEFAULT;
}

int rk_run_reap(struct rk_engine *eng, int *marked, struct rk_error *err)
{
	if (marked)
		*marked = 0;
	struct rk_run_row *rows;
	size_t n;
	int r = rk_db_run_list_live(eng->db, &rows, &n, err);
	if (r)
		return r;
	int64_t now = rk_now_ms(), stale = rk_run_stale_ms();
	int resumable_marked = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct rk_run_row *row = &rows[i];
		int64_t hb = row->heartbeat_at >= 0 ? row->heartbeat_at : row->created_at;
		const char *reason = NULL;
		char *msg = NULL;
		if (row->worker_pid > 0 && rk_run_state_of(row->state) != RK_RUN_QUEUED &&
		    rk_host_pid_alive(row->worker_host, row->worker_pid) == 0) {
			reason = "worker_gone";
			msg = rk_xasprintf("worker_gone: the process running it (pid %lld) is gone; `rakazo run resume "
					   "%s` continues it",
					   (long long)row->worker_pid, row->id);
		} else if (now - hb > stale) {
			reason = "stale";
			msg = rk_xasprintf("stale: no heartbeat for %lld s (limit %lld s); `rakazo run resume %s` "
					   "continues it",
					   (long long)((now - hb) / 1000), (long long)(stale / 1000), row->id);
		}
		if (!reason)
			continue;
		/* stored like the run's own events and error: redacted */
		struct rk_secret_redactor *red = run_redactor(eng, row->bot_id);
		char *shown = redacted_with(red, msg);
		free(msg);
		msg = shown;
		int m = rk_db_run_mark_interrupted(eng->db, row->id, row->heartbeat_at, reason, msg, err);
		if (m < 0) {
			r = m;
		} else if (m > 0) {
			if (marked)
				(*marked)++;
			resumable_marked |= row->auto_resumes_left > 0;
			rk_log(RK_LOG_WARN, "run %s: %s", row->id, msg);
			struct rk_error e;
			if (row->lease_fence > 0 && row->computer_id &&
			    rk_lease_release(eng, row->computer_id, lease_bot(row), row->lease_fence, &e) &&
			    e.code != RK_ESTALE && e.code != RK_ENOTFOUND)
				rk_log(RK_LOG_WARN, "run %s: lease release: %s", row->id, e.message);
			/* its stream ends with a word on why */
			int64_t seq = 0;
			if (rk_db_run_event_last(eng->db, row->id, &seq, &e) == 0) {
				cJSON *b = cJSON_CreateObject();
				cJSON_AddStringToObject(b, "reason", reason);
				cJSON_AddStringToObject(b, "error", msg);
				cJSON_AddBoolToObject(b, "auto_resume", row->auto_resumes_left > 0);
				cJSON_Delete(event_store(eng, red, row->id, seq + 1, "run.interrupted", b));
			}
		}
		rk_secret_redactor_free(red);
		free(msg);
	}
	rk_run_rows_free(rows, n);
	/* a worker resumes it (rk_run_auto_resume): there is one while a run is
	 * live, but a reaper may be the first to see it after that one left */
	struct rk_error we;
	if (resumable_marked && rk_worker_ensure(eng, &we))
		rk_log(RK_LOG_WARN, "run: no worker to resume it: %s", we.message);
	return r;
}

static int bot_run_in(struct rk_engine *eng, const char *computer_id, const char *bot_id, int waiting)
{
	struct rk_error e;
	rk_run_reap(eng, NULL, &e);
	struct rk_run_row *rows;
	size_t n;
	if (rk_db_run_list_live(eng->db, &rows, &n, &e))
		return 0;
	const char *bot = bot_id ? bot_id : RK_RUN_LEASE_BOT_DEFAULT;
	int found = 0;
	for (size_t i = 0; i < n && !found; i++)
		if (rows[i].computer_id && !strcmp(rows[i].computer_id, computer_id) &&
		    !strcmp(lease_bot(&rows[i]), bot))
			found = (rk_run_state_of(rows[i].state) == RK_RUN_WAITING_TAKEOVER) == waiting;
	rk_run_rows_free(rows, n);
	return found;
}

int rk_run_waiting_takeover(struct rk_engine *eng, const char *computer_id, const char *bot_id)
{
	return bot_run_in(eng, computer_id, bot_id, 1);
}

int rk_run_active(struct rk_engine *eng, const char *computer_id, const char *bot_id)
{
	return bot_run_in(eng, computer_id, bot_id, 0);
}

/* --- what a client reads -------------------------------------------------------- */

int rk_run_get(struct rk_engine *eng, const char *ref, struct rk_run_row *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int r = rk_db_run_get(eng->db, ref, out, err);
	if (r != -RK_ENOTFOUND || strlen(ref) < RK_RUN_PREFIX_MIN)
		return r;
	struct rk_run_row *rows = NULL;
	size_t n = 0;
	if ((r = rk_db_run_list_prefix(eng->db, ref, 10, &rows, &n, err)))
		return r;
	if (n == 1) {
		*out = rows[0];
		free(rows);
		return 0;
	}
	if (n == 0) {
		r = rk_error_set(err, RK_ENOTFOUND, "no run '%s' (see `rakazo run list`)", ref);
	} else {
		struct rk_buf ids;
		rk_buf_init(&ids);
		for (size_t i = 0; i < n; i++)
			rk_buf_printf(&ids, "%s%s", i ? ", " : "", rows[i].id);
		r = rk_error_set(err, RK_EINVALID, "'%s' is the start of %s%zu runs' ids: %s; give more of one", ref,
				 n == 10 ? "at least " : "", n, ids.data);
		rk_buf_release(&ids);
	}
	rk_run_rows_free(rows, n);
	return r;
}

int rk_run_list(struct rk_engine *eng, const char *computer_id, size_t limit, struct rk_run_row **out, size_t *n,
		struct rk_error *err)
{
	return rk_db_run_list(eng->db, computer_id, limit, out, n, err);
}

int rk_run_events(struct rk_engine *eng, const char *run_id, int64_t after, size_t limit, struct rk_run_event **out,
		  size_t *n, struct rk_error *err)
{
	return rk_db_run_events_after(eng->db, run_id, after, limit, out, n, err);
}

int rk_run_event_last(struct rk_engine *eng, const char *run_id, int64_t *seq, struct rk_error *err)
{
	return rk_db_run_event_last(eng->db, run_id, seq, err);
}
