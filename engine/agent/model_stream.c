/* A streamed reply: the server-sent events of the three protocols read as
 * they arrive (an event may be split across reads, its data over several
 * "data:" lines; comments and pings are skipped), the text and each
 * decided tool call handed to the sink, and at the end the reply body the
 * vendor would have sent unstreamed, so model_call.c reads it with the
 * same parser and a streamed turn is stored exactly as a whole one
 * (vendor_json included: thinking and reasoning keep their signatures).
 *
 * The events, as the vendors' docs and official SDKs have them:
 *   messages   message_start {message}, content_block_start {index,
 *              content_block}, content_block_delta {index, delta: text_delta
 *              .text | input_json_delta .partial_json | thinking_delta
 *              .thinking | signature_delta .signature | citations_delta
 *              .citation}, content_block_stop, message_delta {delta
 *              {stop_reason ...}, usage}, message_stop, ping, error {error}
 *   responses  response.created ... response.output_item.added/.done
 *              {output_index, item}, response.output_text.delta {delta},
 *              response.function_call_arguments.delta/.done,
 *              response.completed | .incomplete | .failed {response}, error
 *   chat       data: chat.completion.chunk {choices[0].delta {content,
 *              tool_calls[{index, id, function {name, arguments}}]},
 *              finish_reason}, a last chunk with usage, data: [DONE] */

#include <stdlib.h>
#include <string.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"

struct rk_model_stream {
	enum rk_model_api api;
	const struct rk_model_sink *sink;
	size_t max_bytes, seen;
	struct rk_buf line; /* the line being read */
	int cr;		    /* the last byte was a CR */
	struct rk_buf event, data;
	int any_data;
	int started;	    /* output reached the sink (or would have, with none) */
	int done;	    /* the protocol's last event came */
	int raw;	    /* not a stream at all: a whole JSON reply */
	struct rk_buf body; /* raw: the bytes */
	char *error;	    /* an error event's words, NULL: none */
	char *bad;	    /* why an event could not be read, NULL: none */
	/* messages: the message; blocks' accumulated JSON text by index */
	cJSON *msg;
	struct rk_buf *parts;
	size_t nparts;
	/* responses: the final response, and the items seen done */
	cJSON *response, *items;
	/* chat: the completion's fields, text, calls by index */
	cJSON *chunk0, *calls, *usage;
	struct rk_buf text;
	struct rk_buf refusal; /* chat: delta.refusal pieces */
	char *finish;
	int any_text;
	int calls_told; /* how many of calls went to the sink */
};

struct rk_model_stream *rk_model_stream_new(int api, const struct rk_model_sink *sink, size_t max_bytes)
{
	struct rk_model_stream *s = rk_xcalloc(1, sizeof(*s));
	s->api = (enum rk_model_api)api;
	s->sink = sink;
	s->max_bytes = max_bytes;
	rk_buf_init(&s->line);
	rk_buf_init(&s->event);
	rk_buf_init(&s->data);
	rk_buf_init(&s->body);
	rk_buf_init(&s->text);
	rk_buf_init(&s->refusal);
	s->items = cJSON_CreateArray();
	s->calls = cJSON_CreateArray();
	return s;
}

void rk_model_stream_free(struct rk_model_stream *s)
{
	if (!s)
		return;
	rk_buf_release(&s->line);
	rk_buf_release(&s->event);
	rk_buf_release(&s->data);
	rk_buf_release(&s->body);
	rk_buf_release(&s->text);
	rk_buf_release(&s->refusal);
	for (size_t i = 0; i < s->nparts; i++)
		rk_buf_release(&s->parts[i]);
	free(s->parts);
	free(s->error);
	free(s->bad);
	free(s->finish);
	cJSON_Delete(s->msg);
	cJSON_Delete(s->response);
	cJSON_Delete(s->items);
	cJSON_Delete(s->chunk0);
	cJSON_Delete(s->calls);
	cJSON_Delete(s->usage);
	free(s);
}

int rk_model_stream_started(const struct rk_model_stream *s)
{
	return s->started;
}

static void say_text(struct rk_model_stream *s, const char *t)
{
	if (!t || !*t)
		return;
	s->started = 1;
	if (s->sink && s->sink->text)
		s->sink->text(s->sink->ctx, t, strlen(t));
}

static void say_call(struct rk_model_stream *s, const char *id, const char *name, const char *args)
{
	s->started = 1;
	if (s->sink && s->sink->tool_call)
		s->sink->tool_call(s->sink->ctx, id ? id : "", name ? name : "", args && *args ? args : "{}");
}

static void set_error(struct rk_model_stream *s, const cJSON *e)
{
	if (s->error)
		return;
	const char *type = rk_json_string(e, "type", NULL);
	if (type && !strcmp(type, "error"))
		type = NULL; /* the event's own type (Responses): its code says more */
	const char *code = rk_json_string(e, "code", NULL);
	const char *msg = rk_json_string(e, "message", NULL);
	s->error = rk_xasprintf("%s%s%s",
				type   ? type
				: code ? code
				       : "",
				(type || code) && msg ? ": " : "",
				msg	       ? msg
				: type || code ? ""
					       : "an error without a message");
}

static void set_bad(struct rk_model_stream *s, const char *why)
{
	if (!s->bad)
		s->bad = rk_xstrdup(why);
}

/* Appends text to a string member of obj (made when absent). */
static void append_member(cJSON *obj, const char *key, const char *text)
{
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(obj, key);
	char *joined = rk_xasprintf("%s%s", cJSON_IsString(cur) ? cur->valuestring : "", text ? text : "");
	if (cur)
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(joined));
	else
		cJSON_AddStringToObject(obj, key, joined);
	free(joined);
}

/* ---- messages ---- */

static cJSON *messages_block(struct rk_model_stream *s, const cJSON *ev, size_t *index)
{
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(ev, "index");
	cJSON *content = cJSON_GetObjectItemCaseSensitive(s->msg, "content");
	if (!cJSON_IsNumber(i) || i->valuedouble < 0 || !content) {
		set_bad(s, "a content block event without a message_start or an index");
		return NULL;
	}
	*index = (size_t)i->valuedouble;
	cJSON *b = cJSON_GetArrayItem(content, (int)*index);
	if (!b)
		set_bad(s, "a content block event for a block never started");
	return b;
}

static void messages_event(struct rk_model_stream *s, const char *type, const cJSON *ev)
{
	if (!strcmp(type, "message_start")) {
		cJSON_Delete(s->msg);
		s->msg = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "message"), 1);
		if (!cJSON_IsObject(s->msg)) {
			set_bad(s, "message_start without a message");
			return;
		}
		cJSON_ReplaceItemInObjectCaseSensitive(s->msg, "content", cJSON_CreateArray());
	} else if (!strcmp(type, "content_block_start")) {
		cJSON *content = cJSON_GetObjectItemCaseSensitive(s->msg, "content");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(ev, "content_block");
		const cJSON *i = cJSON_GetObjectItemCaseSensitive(ev, "index");
		if (!content || !cJSON_IsObject(b) || !cJSON_IsNumber(i) ||
		    (int)i->valuedouble != cJSON_GetArraySize(content)) {
			set_bad(s, "a content_block_start out of order");
			return;
		}
		cJSON_AddItemToArray(content, cJSON_Duplicate(b, 1));
		size_t k = (size_t)i->valuedouble;
		s->parts = rk_xrealloc(s->parts, (k + 1) * sizeof(*s->parts));
		rk_buf_init(&s->parts[k]);
		s->nparts = k + 1;
	} else if (!strcmp(type, "content_block_delta")) {
		size_t k;
		cJSON *b = messages_block(s, ev, &k);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "delta");
		if (!b)
			return;
		const char *dt = rk_json_string(d, "type", "");
		if (!strcmp(dt, "text_delta")) {
			append_member(b, "text", rk_json_string(d, "text", ""));
			say_text(s, rk_json_string(d, "text", ""));
		} else if (!strcmp(dt, "input_json_delta")) {
			rk_buf_adds(&s->parts[k], rk_json_string(d, "partial_json", ""));
		} else if (!strcmp(dt, "thinking_delta")) {
			append_member(b, "thinking", rk_json_string(d, "thinking", ""));
		} else if (!strcmp(dt, "signature_delta")) {
			append_member(b, "signature", rk_json_string(d, "signature", ""));
		} else if (!strcmp(dt, "citations_delta")) {
			cJSON *c = cJSON_GetObjectItemCaseSensitive(b, "citations");
			if (!cJSON_IsArray(c)) {
				c = cJSON_CreateArray();
				if (cJSON_GetObjectItemCaseSensitive(b, "citations"))
					cJSON_ReplaceItemInObjectCaseSensitive(b, "citations", c);
				else
					cJSON_AddItemToObject(b, "citations", c);
			}
			cJSON_AddItemToArray(c, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(d, "citation"), 1));
		}
	} else if (!strcmp(type, "content_block_stop")) {
		size_t k;
		cJSON *b = messages_block(s, ev, &k);
		if (!b || !cJSON_GetObjectItemCaseSensitive(b, "input"))
			return;
		/* a tool call's input: its JSON pieces joined ("" is {}); text
		 * that is not JSON stays text, as a whole reply would carry it */
		const char *json = s->parts[k].len ? s->parts[k].data : "{}";
		cJSON *input = cJSON_Parse(json);
		cJSON_ReplaceItemInObjectCaseSensitive(b, "input", input ? input : cJSON_CreateString(json));
		if (!strcmp(rk_json_string(b, "type", ""), "tool_use")) {
			char *args = input ? cJSON_PrintUnformatted(input) : rk_xstrdup(json);
			say_call(s, rk_json_string(b, "id", ""), rk_json_string(b, "name", ""), args);
			free(args);
		}
	} else if (!strcmp(type, "message_delta")) {
		if (!s->msg) {
			set_bad(s, "message_delta without a message_start");
			return;
		}
		const cJSON *m;
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(ev, "delta"))
		{
			if (cJSON_GetObjectItemCaseSensitive(s->msg, m->string))
				cJSON_ReplaceItemInObjectCaseSensitive(s->msg, m->string, cJSON_Duplicate(m, 1));
			else
				cJSON_AddItemToObject(s->msg, m->string, cJSON_Duplicate(m, 1));
		}
		/* the counts it gives replace message_start's (the SDK does the
		 * same); a null leaves the old one */
		cJSON *usage = cJSON_GetObjectItemCaseSensitive(s->msg, "usage");
		if (!usage)
			usage = cJSON_AddObjectToObject(s->msg, "usage");
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(ev, "usage"))
		{
			if (cJSON_IsNull(m) && cJSON_GetObjectItemCaseSensitive(usage, m->string))
				continue;
			if (cJSON_GetObjectItemCaseSensitive(usage, m->string))
				cJSON_ReplaceItemInObjectCaseSensitive(usage, m->string, cJSON_Duplicate(m, 1));
			else
				cJSON_AddItemToObject(usage, m->string, cJSON_Duplicate(m, 1));
		}
	} else if (!strcmp(type, "message_stop")) {
		s->done = 1;
	} else if (!strcmp(type, "error")) {
		set_error(s, cJSON_GetObjectItemCaseSensitive(ev, "error"));
	}
	/* ping and events added later are skipped */
}

/* ---- responses ---- */

static void responses_event(struct rk_model_stream *s, const char *type, const cJSON *ev)
{
	if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.refusal.delta")) {
		say_text(s, rk_json_string(ev, "delta", ""));
	} else if (!strcmp(type, "response.output_item.done")) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(ev, "item");
		const char *it = rk_json_string(item, "type", "");
		cJSON_AddItemToArray(s->items, cJSON_Duplicate(item, 1));
		if (!strcmp(it, "function_call")) {
			say_call(s, rk_json_string(item, "call_id", ""), rk_json_string(item, "name", ""),
				 rk_json_string(item, "arguments", ""));
		} else if (!strcmp(it, "computer_call")) {
			cJSON *args = cJSON_CreateObject();
			const char *k = cJSON_GetObjectItemCaseSensitive(item, "actions") ? "actions" : "action";
			cJSON_AddItemToObject(args, k, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item, k), 1));
			char *a = cJSON_PrintUnformatted(args);
			say_call(s, rk_json_string(item, "call_id", ""), "computer", a);
			free(a);
			cJSON_Delete(args);
		}
	} else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete")) {
		cJSON_Delete(s->response);
		s->response = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "response"), 1);
		if (!cJSON_IsObject(s->response))
			set_bad(s, "a response.completed without its response");
		s->done = 1;
	} else if (!strcmp(type, "response.failed")) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(ev, "response");
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
		if (e && !cJSON_IsNull(e))
			set_error(s, e);
		else
			set_error(s, cJSON_GetObjectItemCaseSensitive(ev, "error"));
		s->done = 1;
	} else if (!strcmp(type, "error")) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
		set_error(s, cJSON_IsObject(e) ? e : ev);
	}
}

/* ---- chat ---- */

/* Tells the sink the calls before index upto, which the model has finished. */
static void chat_calls_upto(struct rk_model_stream *s, int upto)
{
	for (; s->calls_told < upto && s->calls_told < cJSON_GetArraySize(s->calls); s->calls_told++) {
		const cJSON *c = cJSON_GetArrayItem(s->calls, s->calls_told);
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
		say_call(s, rk_json_string(c, "id", ""), rk_json_string(fn, "name", ""),
			 rk_json_string(fn, "arguments", ""));
	}
}

static void chat_event(struct rk_model_stream *s, const char *data)
{
	if (!strcmp(data, "[DONE]")) {
		chat_calls_upto(s, cJSON_GetArraySize(s->calls));
		s->done = 1;
		return;
	}
	cJSON *ev = cJSON_Parse(data);
	if (!cJSON_IsObject(ev)) {
		set_bad(s, "a chunk that is not a JSON object");
		cJSON_Delete(ev);
		return;
	}
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
	if (e && !cJSON_IsNull(e)) {
		set_error(s, cJSON_IsObject(e) ? e : ev);
		cJSON_Delete(ev);
		return;
	}
	if (!s->chunk0)
		s->chunk0 = cJSON_Duplicate(ev, 1);
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(ev, "usage");
	if (cJSON_IsObject(u)) {
		cJSON_Delete(s->usage);
		s->usage = cJSON_Duplicate(u, 1);
	}
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "choices"), 0);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(choice, "delta");
	const char *t = rk_json_string(d, "content", NULL);
	if (t && *t) {
		rk_buf_adds(&s->text, t);
		s->any_text = 1;
		say_text(s, t);
	}
	/* a declined request streams its words as delta.refusal */
	const char *rf = rk_json_string(d, "refusal", NULL);
	if (rf)
		rk_buf_adds(&s->refusal, rf);
	const cJSON *tc;
	cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(d, "tool_calls"))
	{
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(tc, "index");
		int i = cJSON_IsNumber(ix) ? ix->valueint : cJSON_GetArraySize(s->calls) - 1;
		if (i < 0 || i > cJSON_GetArraySize(s->calls)) {
			set_bad(s, "a tool call chunk out of order");
			break;
		}
		/* a new index: the ones before it are whole */
		chat_calls_upto(s, i);
		cJSON *call = cJSON_GetArrayItem(s->calls, i);
		if (!call) {
			call = cJSON_CreateObject();
			cJSON_AddStringToObject(call, "id", "");
			cJSON_AddStringToObject(call, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(call, "function");
			cJSON_AddStringToObject(fn, "name", "");
			cJSON_AddStringToObject(fn, "arguments", "");
			cJSON_AddItemToArray(s->calls, call);
		}
		cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(tc, "function");
		append_member(call, "id", rk_json_string(tc, "id", ""));
		append_member(fn, "name", rk_json_string(f, "name", ""));
		append_member(fn, "arguments", rk_json_string(f, "arguments", ""));
	}
	const char *fin = rk_json_string(choice, "finish_reason", NULL);
	if (fin) {
		free(s->finish);
		s->finish = rk_xstrdup(fin);
		chat_calls_upto(s, cJSON_GetArraySize(s->calls));
	}
	cJSON_Delete(ev);
}

/* ---- server-sent events ---- */

static void dispatch(struct rk_model_stream *s)
{
	if (!s->any_data) {
		rk_buf_reset(&s->event);
		return;
	}
	if (s->api == RK_MODEL_API_CHAT) {
		chat_event(s, s->data.data);
	} else {
		cJSON *ev = cJSON_ParseWithLength(s->data.data, s->data.len);
		if (!cJSON_IsObject(ev)) {
			set_bad(s, "an event whose data is not a JSON object");
		} else {
			/* the data's "type" is the event's name (both vendors send both) */
			const char *type = rk_json_string(ev, "type", s->event.data);
			if (s->api == RK_MODEL_API_MESSAGES)
				messages_event(s, type, ev);
			else
				responses_event(s, type, ev);
		}
		cJSON_Delete(ev);
	}
	rk_buf_reset(&s->event);
	rk_buf_reset(&s->data);
	s->any_data = 0;
}

static void on_line(struct rk_model_stream *s, char *line, size_t len)
{
	if (len == 0) {
		dispatch(s);
		return;
	}
	if (line[0] == ':')
		return; /* a comment: keep-alive */
	char *colon = memchr(line, ':', len);
	size_t nl = colon ? (size_t)(colon - line) : len;
	const char *v = colon ? colon + 1 : "";
	if (*v == ' ')
		v++;
	if (nl == 5 && !strncmp(line, "event", 5)) {
		rk_buf_reset(&s->event);
		rk_buf_adds(&s->event, v);
	} else if (nl == 4 && !strncmp(line, "data", 4)) {
		if (s->any_data)
			rk_buf_addc(&s->data, '\n');
		rk_buf_adds(&s->data, v);
		s->any_data = 1;
	}
	/* id, retry and unknown fields mean nothing here */
}

/* Whether p (n bytes, the stream's first) opens as server-sent events: a
 * comment, or a field the vendors send, or a read cut inside one. */
static int sse_opening(const char *p, size_t n)
{
	static const char *const fields[] = {"event:", "data:", "id:", "retry:"};
	if (p[0] == ':')
		return 1;
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		size_t fl = strlen(fields[f]);
		if (!strncmp(p, fields[f], n < fl ? n : fl))
			return 1;
	}
	return 0;
}

int rk_model_stream_feed(struct rk_model_stream *s, const void *data, size_t len)
{
	s->seen += len;
	if (s->max_bytes && s->seen > s->max_bytes)
		return -1;
	const char *p = data;
	if (!s->raw && s->seen == len) {
		size_t i = 0;
		while (i < len && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
			i++;
		/* a server that ignored "stream" sent the whole reply (JSON, or
		 * an error page the reply parser names): anything that does not
		 * open with an SSE field or comment */
		s->raw = i < len && !sse_opening(p + i, len - i);
	}
	if (s->raw) {
		rk_buf_add(&s->body, data, len);
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		char c = p[i];
		/* a line ends at CR, LF or CRLF (one end, even split across reads) */
		if (c == '\n' && s->cr) {
			s->cr = 0;
			continue;
		}
		s->cr = c == '\r';
		if (c == '\r' || c == '\n') {
			on_line(s, s->line.data, s->line.len);
			rk_buf_reset(&s->line);
			continue;
		}
		rk_buf_addc(&s->line, c);
	}
	return 0;
}

char *rk_model_stream_body(struct rk_model_stream *s, size_t *len, struct rk_error *err)
{
	*len = 0;
	if (s->raw)
		return rk_buf_detach(&s->body, len);
	if (s->line.len) {
		on_line(s, s->line.data, s->line.len);
		rk_buf_reset(&s->line);
	}
	dispatch(s); /* an event without its blank line at the very end */
	if (s->error) {
		rk_error_set(err, RK_EUNAVAILABLE, "the model endpoint's stream reported an error: %s", s->error);
		return NULL;
	}
	if (s->bad) {
		rk_model_malformed(err, s->bad, NULL, 0);
		return NULL;
	}
	if (!s->done) {
		rk_error_set(err, RK_EUNAVAILABLE, "the model endpoint's stream ended before its last event");
		return NULL;
	}
	cJSON *doc = NULL;
	if (s->api == RK_MODEL_API_MESSAGES) {
		doc = s->msg;
		s->msg = NULL;
		if (!doc) {
			rk_model_malformed(err, "the stream has no message_start", NULL, 0);
			return NULL;
		}
	} else if (s->api == RK_MODEL_API_RESPONSES) {
		doc = s->response;
		s->response = NULL;
		if (!doc) {
			rk_model_malformed(err, "the stream has no response.completed", NULL, 0);
			return NULL;
		}
		/* the final response carries the output; the items seen done
		 * stand in when a server leaves it out */
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(doc, "output");
		if (!cJSON_IsArray(out) || !cJSON_GetArraySize(out)) {
			if (out)
				cJSON_ReplaceItemInObjectCaseSensitive(doc, "output", s->items);
			else
				cJSON_AddItemToObject(doc, "output", s->items);
			s->items = NULL;
		}
	} else {
		doc = cJSON_CreateObject();
		const char *keys[] = {"id", "created", "model", "system_fingerprint"};
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->chunk0, keys[i]);
			if (v)
				cJSON_AddItemToObject(doc, keys[i], cJSON_Duplicate(v, 1));
		}
		cJSON_AddStringToObject(doc, "object", "chat.completion");
		cJSON *choice = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "choices"), choice);
		cJSON_AddNumberToObject(choice, "index", 0);
		cJSON *m = cJSON_AddObjectToObject(choice, "message");
		cJSON_AddStringToObject(m, "role", "assistant");
		if (s->any_text)
			cJSON_AddStringToObject(m, "content", s->text.data);
		else
			cJSON_AddNullToObject(m, "content");
		if (s->refusal.len)
			cJSON_AddStringToObject(m, "refusal", s->refusal.data);
		if (cJSON_GetArraySize(s->calls)) {
			cJSON_AddItemToObject(m, "tool_calls", s->calls);
			s->calls = NULL;
		}
		rk_json_add_str_or_null(choice, "finish_reason", s->finish);
		if (s->usage) {
			cJSON_AddItemToObject(doc, "usage", s->usage);
			s->usage = NULL;
		}
	}
	char *body = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	*len = strlen(body);
	return body;
}
