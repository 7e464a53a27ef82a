#ifndef RK_MODEL_COMPACT_H
#define RK_MODEL_COMPACT_H
/* Context management: a conversation nearing the model's window
 * (cfg->context_window, cfg->compact_at; model.h) is compacted.
 *
 * When: after a turn whose tool results are in, when the input tokens the
 * vendor counted for that turn (its usage) plus the expected growth (the
 * reply's tokens and the results just added) reach compact_at x window
 * (rk_model_compact_due).
 *
 * How (rk_model_compact). The vendor's own compaction, where the
 * protocol has one and cfg->compact is auto: Messages' "compaction"
 * parameter ({"type": "summarize"}, anthropic-beta
 * RK_MODEL_COMPACTION_BETA; the SDK types of @anthropic-ai/sdk 1.17, as
 * its tool runner's compactBeforeNextTurn sends it): the whole
 * conversation, tools and all, goes out once more and the reply is one
 * signed compaction block; Responses' POST /responses/compact ({model,
 * input, instructions, prompt_cache_key}; the openai SDK 7.60's
 * responses.compact), whose output is the user messages and one
 * encrypted compaction item. The conversation becomes its system
 * messages, that output as one assistant turn (sent back verbatim: the
 * block first, as the API requires; the items as input), then a user
 * message with the task, the caller's context and the last screenshot. When that fails (a proxy without the beta, a
 * refusal) the summary is made instead, and k->note says why.
 * The summary, on every protocol: the model is asked, with no tools,
 * to summarise the older part of the conversation (a transcript of it, each
 * entry clipped, with a system prompt of its own that starts with
 * RK_MODEL_COMPACT_PROMPT_HEAD); the conversation becomes its system
 * messages, one user message holding the task verbatim, the summary, the
 * caller's context (memory, open shell sessions) and the latest screenshot
 * when the kept turns have none, then the last few turns verbatim. A kept
 * turn is whole: an assistant message with every result of its calls
 * (tool_use and tool_result, function_call and its output, reasoning
 * items with their calls: vendor_json stays as it was). Fewer turns are
 * kept when they alone would fill a third of the window.
 *
 * The engine never prints; errors are returned. */

#include <stddef.h>
#include <stdint.h>

#include "engine/agent/model.h"
#include "engine/util/err.h"

/* The summarisation request's system prompt begins with this (a test's
 * scripted model recognises the request by it). */
#define RK_MODEL_COMPACT_PROMPT_HEAD "You are compacting the conversation of an agent's run"
/* assistant turns kept verbatim after the summary */
#define RK_MODEL_COMPACT_KEEP_TURNS 3
/* characters of one transcript entry (a tool result, a reply) the summariser sees */
#define RK_MODEL_COMPACT_ENTRY_MAX 2000

struct rk_model_compaction {
	/* in */
	const char *task;    /* the run's task, kept verbatim (required) */
	const char *context; /* more that must survive (memory, open shell sessions); NULL: none */
	int keep_turns;	     /* 0: RK_MODEL_COMPACT_KEEP_TURNS; -1: none */
	/* out */
	const char *method;		      /* "server" or "summary" */
	char *summary;			      /* malloc'd: the summary the model (or the vendor) wrote */
	char *note;			      /* malloc'd: why the vendor's compaction was not used, or NULL */
	size_t kept, dropped;		      /* messages kept verbatim after the summary, and dropped */
	int64_t before_tokens, after_tokens;  /* estimates of the request before and after */
	int64_t prompt_tokens, output_tokens; /* the compaction call's usage (-1: not said) */
};
void rk_model_compaction_release(struct rk_model_compaction *k);

/* 1 when a conversation whose last request counted prompt_tokens input
 * tokens and has since grown by about growth should be compacted now. */
int rk_model_compact_due(const struct rk_model_config *cfg, int64_t prompt_tokens, int64_t growth);

/* Estimated tokens: of one message (text at 4 bytes a token, an image by
 * its size as Claude counts it, w*h/750), and of the whole request
 * rk_model_complete would send. */
int64_t rk_model_message_tokens(const struct rk_model_message *m);
int64_t rk_model_request_tokens(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
				const struct rk_model_tool *tools, size_t ntools);

/* Compacts c in place (see above). 0 with k filled (k->dropped 0: there
 * was nothing old enough to drop, c unchanged); else the model call's
 * error (c unchanged), or RK_EFAILED when the model wrote no summary. */
int rk_model_compact(const struct rk_model_config *cfg, struct rk_model_conversation *c,
		     const struct rk_model_tool *tools, size_t ntools, struct rk_model_compaction *k,
		     struct rk_error *err);

#endif
