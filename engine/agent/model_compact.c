/* Context management: when to compact a conversation, and the compaction
 * by a summary the model writes (model_compact.h). Above the call
 * (model_call.c): it makes one. */

#include "engine/agent/model_compact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/agent/model_wire.h"
#include "engine/util/buf.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"

/* the summary's own length: enough for a long run, small beside a window */
#define SUMMARY_MAX_TOKENS 2048
#define IMAGE_TOKENS_DEFAULT 1500

static const char summary_prompt[] = RK_MODEL_COMPACT_PROMPT_HEAD
	" so that it fits the model's context window. You get the task and a transcript of the older part of the "
	"run: the assistant's messages, the tools it called and what they returned. Write a summary the agent "
	"will continue from, in place of that transcript: what has been done and found, the current state of the "
	"computer and of any files, programs, pages or shell sessions involved, decisions taken and why, what "
	"failed, and what remains to be done. Keep exact names, paths, URLs, ids, numbers and the words of any "
	"note a person left. Write it as plain prose and lists, no preamble, and call no tool.";

void rk_model_compaction_release(struct rk_model_compaction *k)
{
	if (!k)
		return;
	free(k->summary);
	free(k->note);
	k->summary = k->note = NULL;
}

int rk_model_compact_due(const struct rk_model_config *cfg, int64_t prompt_tokens, int64_t growth)
{
	if (cfg->compact == RK_MODEL_COMPACT_OFF || cfg->compact_at <= 0 || cfg->context_window <= 0 ||
	    prompt_tokens < 0)
		return 0;
	return (double)(prompt_tokens + (growth > 0 ? growth : 0)) >= cfg->compact_at * (double)cfg->context_window;
}

/* ---- estimates ---- */

static int64_t image_tokens(const struct rk_model_part *p)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	if (p->png_len >= 24 && !memcmp(p->png, sig, 8)) {
		const unsigned char *d = p->png + 16; /* IHDR: width, height, big-endian */
		int64_t w = ((int64_t)d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
		int64_t h = ((int64_t)d[4] << 24) | (d[5] << 16) | (d[6] << 8) | d[7];
		if (w > 0 && h > 0 && w < 100000 && h < 100000)
			return (w * h + 749) / 750;
	}
	return IMAGE_TOKENS_DEFAULT;
}

int64_t rk_model_message_tokens(const struct rk_model_message *m)
{
	size_t bytes = 0;
	int64_t t = 4; /* the message's own framing */
	for (size_t k = 0; k < m->nparts; k++) {
		if (m->parts[k].kind == RK_MODEL_IMAGE)
			t += image_tokens(&m->parts[k]);
		else if (m->parts[k].text)
			bytes += strlen(m->parts[k].text);
	}
	for (size_t i = 0; i < m->ncalls; i++)
		bytes += (m->calls[i].name ? strlen(m->calls[i].name) : 0) +
			 (m->calls[i].arguments ? strlen(m->calls[i].arguments) : 0) + 40;
	if (m->vendor_json && strlen(m->vendor_json) > bytes)
		bytes = strlen(m->vendor_json);
	return t + (int64_t)(bytes + 3) / 4;
}

int64_t rk_model_request_tokens(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
				const struct rk_model_tool *tools, size_t ntools)
{
	cJSON *req = rk_model_request_json(cfg, c, tools, ntools);
	if (!req) {
		int64_t t = 0;
		for (size_t i = 0; i < c->n; i++)
			t += rk_model_message_tokens(c->msgs[i]);
		return t;
	}
	char *text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	int64_t len = (int64_t)strlen(text), images = 0;
	free(text);
	/* the images ride as base64 text; they cost by their size instead */
	for (size_t i = 0; i < c->n; i++)
		for (size_t k = 0; k < c->msgs[i]->nparts; k++) {
			const struct rk_model_part *p = &c->msgs[i]->parts[k];
			if (p->kind != RK_MODEL_IMAGE)
				continue;
			len -= (int64_t)(p->png_len + 2) / 3 * 4;
			images += image_tokens(p);
		}
	return (len > 0 ? (len + 3) / 4 : 0) + images;
}

/* ---- the transcript the summariser reads ---- */

/* s clipped to max characters: its head and tail with the middle left out,
 * not cutting a UTF-8 character. */
static void add_clipped(struct rk_buf *b, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max) {
		rk_buf_adds(b, s);
		return;
	}
	size_t head = max * 2 / 3, tail = max - head;
	while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
		head--;
	size_t from = n - tail;
	while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80)
		from++;
	rk_buf_add(b, s, head);
	rk_buf_printf(b, " [... %zu characters left out ...] ", from - head);
	rk_buf_adds(b, s + from);
}

static void transcript_entry(struct rk_buf *b, const struct rk_model_message *m)
{
	char *text = rk_model_joined_text(m);
	int images = 0;
	for (size_t k = 0; k < m->nparts; k++)
		images += m->parts[k].kind == RK_MODEL_IMAGE;
	switch (m->role) {
	case RK_MODEL_USER:
		rk_buf_adds(b, "[user]\n");
		break;
	case RK_MODEL_ASSISTANT:
		rk_buf_adds(b, "[assistant]\n");
		break;
	case RK_MODEL_TOOL:
		rk_buf_printf(b, "[result of %s]\n", m->tool_call_id ? m->tool_call_id : "a call");
		break;
	case RK_MODEL_SYSTEM:
		rk_buf_adds(b, "[system]\n");
		break;
	}
	if (text && *text) {
		add_clipped(b, text, RK_MODEL_COMPACT_ENTRY_MAX);
		rk_buf_addc(b, '\n');
	}
	free(text);
	for (size_t i = 0; i < m->ncalls; i++) {
		rk_buf_printf(b, "call %s: %s ", m->calls[i].id ? m->calls[i].id : "",
			      m->calls[i].name ? m->calls[i].name : "");
		add_clipped(b, m->calls[i].arguments ? m->calls[i].arguments : "{}", RK_MODEL_COMPACT_ENTRY_MAX / 2);
		rk_buf_addc(b, '\n');
	}
	if (images)
		rk_buf_printf(b, "(%d screenshot%s attached)\n", images, images == 1 ? "" : "s");
	rk_buf_addc(b, '\n');
}

/* The transcript of msgs [from, to), at most max characters: when longer,
 * the first entry (an earlier summary, or the task) and the latest ones are
 * kept, the middle said to be left out. Malloc'd. */
static char *transcript(const struct rk_model_conversation *c, size_t from, size_t to, size_t max)
{
	struct rk_buf all = RK_BUF_INIT;
	rk_buf_init(&all);
	size_t first_end = 0;
	for (size_t i = from; i < to; i++) {
		transcript_entry(&all, c->msgs[i]);
		if (i == from)
			first_end = all.len;
	}
	if (all.len <= max)
		return rk_buf_detach(&all, NULL);
	struct rk_buf out = RK_BUF_INIT;
	rk_buf_init(&out);
	size_t head = first_end < max / 3 ? first_end : max / 3;
	while (head > 0 && ((unsigned char)all.data[head] & 0xC0) == 0x80)
		head--;
	size_t from_byte = all.len - (max - head);
	while (from_byte < all.len && ((unsigned char)all.data[from_byte] & 0xC0) == 0x80)
		from_byte++;
	rk_buf_add(&out, all.data, head);
	rk_buf_printf(&out, "\n[... %zu characters of the transcript left out ...]\n\n", from_byte - head);
	rk_buf_add(&out, all.data + from_byte, all.len - from_byte);
	rk_buf_release(&all);
	return rk_buf_detach(&out, NULL);
}

/* ---- the compaction ---- */

/* The index of the first message kept verbatim: the start of the last
 * keep assistant turns, fewer when they alone would pass budget tokens;
 * c->n when none is kept. */
static size_t cut_point(const struct rk_model_conversation *c, size_t head, int keep, int64_t budget)
{
	size_t cut = c->n;
	int64_t tail = 0;
	int turns = 0;
	for (size_t i = c->n; i-- > head && turns < keep;) {
		tail += rk_model_message_tokens(c->msgs[i]);
		if (tail > budget)
			break;
		if (c->msgs[i]->role == RK_MODEL_ASSISTANT) {
			cut = i;
			turns++;
		}
	}
	return cut;
}

/* The last screenshot with bytes in msgs [from, to), or NULL. */
static const struct rk_model_part *last_image(const struct rk_model_conversation *c, size_t from, size_t to)
{
	for (size_t i = to; i-- > from;)
		for (size_t k = c->msgs[i]->nparts; k-- > 0;)
			if (c->msgs[i]->parts[k].kind == RK_MODEL_IMAGE)
				return &c->msgs[i]->parts[k];
	return NULL;
}

/* A user message of c (not added to it) with text and a copy of img (may
 * be NULL): the screen as it was last seen, so the turns after it are not
 * blind. */
static struct rk_model_message *carry_message(struct rk_model_conversation *c, const char *text,
					      const struct rk_model_part *img)
{
	struct rk_model_message *m = rk_xcalloc(1, sizeof(*m));
	m->role = RK_MODEL_USER;
	rk_model_message_add_text(m, text);
	if (img) {
		char saved[sizeof(c->last_frame_hash)];
		memcpy(saved, c->last_frame_hash, sizeof(saved));
		rk_model_message_add_image_as(c, m, img->mime, img->png, img->png_len, NULL, img->label);
		snprintf(m->parts[m->nparts - 1].frame_hash, sizeof(m->parts[0].frame_hash), "%s", img->frame_hash);
		memcpy(c->last_frame_hash, saved, sizeof(saved));
	}
	return m;
}

/* Replaces msgs [from, c->n) of c with the given ones (taken). */
static void replace_tail(struct rk_model_conversation *c, size_t from, struct rk_model_message **with, size_t n)
{
	rk_model_conversation_truncate(c, from);
	for (size_t i = 0; i < n; i++) {
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 16;
			c->msgs = rk_xrealloc(c->msgs, c->cap * sizeof(*c->msgs));
		}
		c->msgs[c->n++] = with[i];
	}
}

/* The vendor's compaction (Messages: the "compaction" parameter;
 * Responses: POST /responses/compact): the whole conversation becomes one
 * assistant turn holding what the vendor returned (Messages: the signed
 * compaction block, sent back first; Responses: the user messages and
 * one encrypted compaction item, sent back as input items), both
 * verbatim, then a user message with the task, the caller's context and
 * the last screenshot. */
static int compact_on_server(const struct rk_model_config *cfg, struct rk_model_conversation *c,
			     const struct rk_model_tool *tools, size_t ntools, size_t head,
			     struct rk_model_compaction *k, struct rk_error *err)
{
	struct rk_model_config scfg = *cfg; /* shallow: nothing of it is released here */
	scfg.compact_request = 1;
	scfg.stream = 0; /* an internal request: nothing of it is the model's turn to show */
	scfg.sink = NULL;
	struct rk_model_reply reply = {0};
	int r = rk_model_complete(&scfg, c, tools, ntools, &reply, err);
	if (r)
		return r;
	k->prompt_tokens = reply.prompt_tokens;
	k->output_tokens = reply.completion_tokens;
	cJSON *blocks = reply.vendor_json ? cJSON_Parse(reply.vendor_json) : NULL;
	const cJSON *b;
	const char *content = NULL;
	cJSON_ArrayForEach(b, blocks)
	{
		/* Messages: the block's summary; Responses: an encrypted item */
		int messages = cfg->api == RK_MODEL_API_MESSAGES;
		const cJSON *ct = cJSON_GetObjectItemCaseSensitive(b, messages ? "content" : "encrypted_content");
		if (!strcmp(rk_json_string(b, "type", ""), "compaction") && cJSON_IsString(ct) && *ct->valuestring)
			content = messages ? ct->valuestring
					   : "(the vendor keeps it encrypted: only the responses protocol reads it)";
	}
	if (!content) {
		cJSON_Delete(blocks);
		rk_model_reply_release(&reply);
		return rk_error_set(err, RK_EFAILED, "the vendor's compaction produced no summary");
	}
	k->summary = rk_xstrdup(content);
	cJSON_Delete(blocks);
	k->method = "server";
	struct rk_model_message *with[2];
	/* the block goes back verbatim on Messages; another protocol reads its summary */
	with[0] = rk_xcalloc(1, sizeof(*with[0]));
	with[0]->role = RK_MODEL_ASSISTANT;
	char *text = rk_xasprintf("[a summary of the conversation before this point]\n%s", k->summary);
	rk_model_message_add_text(with[0], text);
	free(text);
	with[0]->vendor_json = reply.vendor_json;
	with[0]->vendor_api = reply.vendor_api;
	reply.vendor_json = NULL;
	rk_model_reply_release(&reply);
	struct rk_buf msg = RK_BUF_INIT;
	rk_buf_init(&msg);
	rk_buf_printf(&msg,
		      "The conversation before this point was compacted to fit the model's context window.\n\nThe "
		      "task (as given):\n\n%s\n",
		      k->task);
	if (k->context && *k->context)
		rk_buf_printf(&msg, "\n%s\n", k->context);
	rk_buf_adds(&msg, "\nGo on with the task.");
	with[1] = carry_message(c, msg.data, last_image(c, head, c->n));
	rk_buf_release(&msg);
	k->dropped = c->n - head;
	k->kept = 0;
	replace_tail(c, head, with, 2);
	k->after_tokens = rk_model_request_tokens(cfg, c, tools, ntools);
	return 0;
}

int rk_model_compact(const struct rk_model_config *cfg, struct rk_model_conversation *c,
		     const struct rk_model_tool *tools, size_t ntools, struct rk_model_compaction *k,
		     struct rk_error *err)
{
	k->method = "summary";
	k->summary = NULL;
	k->note = NULL;
	if (!k->task)
		k->task = "";
	k->kept = k->dropped = 0;
	k->prompt_tokens = k->output_tokens = -1;
	k->before_tokens = k->after_tokens = rk_model_request_tokens(cfg, c, tools, ntools);
	size_t head = 0;
	while (head < c->n && c->msgs[head]->role == RK_MODEL_SYSTEM)
		head++;
	if (cfg->compact == RK_MODEL_COMPACT_AUTO && cfg->api != RK_MODEL_API_CHAT && c->n > head + 1) {
		struct rk_error se;
		if (compact_on_server(cfg, c, tools, ntools, head, k, &se) == 0)
			return 0;
		if (se.code == RK_EINTERRUPTED) /* a cancel: no second request */
			return rk_error_set(err, RK_EINTERRUPTED, "%s", se.message);
		/* a proxy without the beta, a refusal: the summary still works */
		k->note = rk_xasprintf("the vendor's compaction failed, so the model summarised: %s", se.message);
		k->method = "summary";
	}
	int keep = k->keep_turns == 0 ? RK_MODEL_COMPACT_KEEP_TURNS : k->keep_turns < 0 ? 0 : k->keep_turns;
	int64_t window = cfg->context_window > 0 ? cfg->context_window : rk_model_context_window(cfg->api, cfg->model);
	size_t cut = cut_point(c, head, keep, window / 3);
	if (cut <= head + 1)
		return 0; /* nothing but the task (or a summary) before the kept turns */

	/* the summariser's request: no tools, its own system prompt, the
	 * transcript sized to half the window */
	struct rk_model_conversation *sc = rk_model_conversation_new();
	rk_model_add_message(sc, RK_MODEL_SYSTEM, summary_prompt);
	struct rk_buf ask = RK_BUF_INIT;
	rk_buf_init(&ask);
	char *tr = transcript(c, head, cut, (size_t)(window / 2) * 4);
	rk_buf_printf(&ask,
		      "The task of the run:\n\n%s\n\nThe transcript of the older part of the run:\n\n%s\n"
		      "Write the summary now.",
		      k->task, tr);
	free(tr);
	rk_model_add_message(sc, RK_MODEL_USER, ask.data);
	rk_buf_release(&ask);
	struct rk_model_config scfg = *cfg; /* shallow: nothing of it is released here */
	if (scfg.max_tokens <= 0 || scfg.max_tokens > SUMMARY_MAX_TOKENS)
		scfg.max_tokens = SUMMARY_MAX_TOKENS;
	scfg.cache_key = NULL; /* a request of another shape: no cache of the run's to share */
	scfg.stream = 0;       /* the summary is not the model's turn: not shown as it comes */
	scfg.sink = NULL;
	struct rk_model_reply reply = {0};
	int r = rk_model_complete(&scfg, sc, NULL, 0, &reply, err);
	rk_model_conversation_free(sc);
	if (r)
		return rk_error_prefix(err, "compaction: the summary request failed");
	k->prompt_tokens = reply.prompt_tokens;
	k->output_tokens = reply.completion_tokens;
	if (!reply.text || !reply.text[strspn(reply.text, " \t\r\n")]) {
		rk_model_reply_release(&reply);
		return rk_error_set(err, RK_EFAILED, "compaction: the model wrote no summary");
	}
	k->summary = reply.text;
	reply.text = NULL;
	rk_model_reply_release(&reply);

	/* the new conversation: system, the summary message, the kept turns */
	struct rk_buf msg = RK_BUF_INIT;
	rk_buf_init(&msg);
	rk_buf_printf(&msg,
		      "The earlier part of this run was compacted to fit the model's context window.\n\nThe task "
		      "(as given):\n\n%s\n\nA summary of the work so far:\n\n%s\n",
		      k->task, k->summary);
	if (k->context && *k->context)
		rk_buf_printf(&msg, "\n%s\n", k->context);
	rk_buf_printf(&msg, "\n%s Go on with the task.",
		      cut < c->n ? "The latest turns follow as they were." : "That is where the run is now.");
	struct rk_model_message *sm = carry_message(c, msg.data,
						    last_image(c, cut, c->n) ? NULL : last_image(c, head, cut));
	rk_buf_release(&msg);
	k->dropped = cut - head;
	k->kept = c->n - cut;
	for (size_t i = head; i < cut; i++)
		rk_model_message_free(c->msgs[i]);
	c->msgs[head] = sm;
	memmove(&c->msgs[head + 1], &c->msgs[cut], (c->n - cut) * sizeof(*c->msgs));
	c->n = head + 1 + k->kept;
	k->after_tokens = rk_model_request_tokens(cfg, c, tools, ntools);
	return 0;
}
