#ifndef RK_MODEL_H
#define RK_MODEL_H
/* The model client: a conversation, tool definitions, and one call to a
 * model over the one HTTP client (engine/util/http.h), in one of three wire
 * protocols (enum rk_model_api):
 *   chat       OpenAI-compatible POST {base}/chat/completions (llama.cpp,
 *              vLLM, Ollama, OpenRouter ...)
 *   messages   Anthropic POST {base}/messages
 *   responses  OpenAI POST {base}/responses
 *
 * Configuration (rk_model_config_load), each field taken from the first
 * place that sets it:
 *   1. flags (struct rk_model_flags, filled by cmd/ from --model-... options)
 *   2. the environment: RAKAZO_MODEL_BASE_URL, RAKAZO_MODEL, RAKAZO_API_KEY,
 *      RAKAZO_MODEL_API
 *   3. the config file: flags->config_path, else RAKAZO_CONFIG, else
 *      DATA_DIR/config.json, an object whose "model" member holds
 *      {"base_url", "model", "api_key", "api", "timeout_s", "max_retries",
 *       "max_tokens", "keep_images", "prune_block", "prompt_cache", "stream",
 *       "upload_images", "price", "context_window", "compact_at", "compact"}; a
 *      missing file is not an error ("price": {"input",
 *      "output", "cached", "cache_write"}, USD per million tokens, overrides
 *      the built-in table of rk_model_price_lookup; input and output are
 *      required, cached and cache_write default to input)
 *   4. defaults, below.
 * The protocol: flags->api, RAKAZO_MODEL_API or "api" ("chat", "messages",
 * "responses"; anything else is RK_EUSAGE naming the three); when none is
 * set, the model name says: "anthropic/NAME" is messages and "openai/NAME"
 * is responses, each with the model NAME, unless a base URL is set whose
 * host is not the vendor's own (api.anthropic.com, api.openai.com): then the
 * name is a router's (OpenRouter's "anthropic/claude-...") and the protocol
 * is chat with the name unchanged, as before. Any other name is chat. With
 * an explicit protocol the vendor prefix that matches it is dropped under
 * the same rule. The base URL is the API root ("https://api.openai.com/v1",
 * "http://127.0.0.1:8000/v1"); without one, messages uses
 * https://api.anthropic.com/v1, responses https://api.openai.com/v1, and
 * chat is RK_EUSAGE "no model configured". A trailing "/" and the
 * protocol's own path ("/chat/completions", "/messages", "/responses") are
 * dropped from it.
 * The key: flags->api_key, RAKAZO_API_KEY, the config file's "api_key",
 * then the protocol's vendor variable: ANTHROPIC_API_KEY (messages),
 * OPENAI_API_KEY (responses); for chat OPENROUTER_API_KEY when the base URL
 * is openrouter.ai, else OPENAI_API_KEY, else OPENROUTER_API_KEY.
 * key_source names where it came from.
 *
 * Keys: the key is sent only as "Authorization: Bearer KEY" (chat,
 * responses) or "x-api-key: KEY" (messages); it never goes into the log or
 * an error message (any echo of it in a server's message is replaced by
 * "[redacted]").
 *
 * Chat wire format (documented because OpenAI-compatible servers differ):
 *   - a user message with an image is content [{"type":"text",...},
 *     {"type":"image_url","image_url":{"url":"data:MIME;base64,..."}}]
 *   - a tool result is {"role":"tool","tool_call_id":..,"content":"text"};
 *     its images cannot ride in a tool message on most servers, so after a
 *     run of consecutive tool messages one user message follows carrying
 *     their images, each preceded by a text part naming the tool call
 *     ("screenshot from tool call ID: LABEL").
 *   - a pruned image becomes a text part "[screenshot omitted ...: LABEL]"
 *     and an unchanged frame one "[screenshot unchanged ...: LABEL]", so the
 *     model still knows a frame was there and what it was (all protocols).
 *   - a native computer tool cannot be sent: RK_EINVALID.
 * Messages wire format: headers x-api-key, anthropic-version (the value the
 * official SDK sends, RK_MODEL_ANTHROPIC_VERSION) and, when a native tool
 * needs a beta (native_beta), anthropic-beta with the betas comma-joined and
 * the path /messages?beta=true. Body: model, max_tokens (cfg->max_tokens or
 * RK_MODEL_MAX_TOKENS_DEFAULT: the API requires it), system (the SYSTEM
 * messages' text, joined by a blank line), messages alternating user and
 * assistant (consecutive same-role messages merged; a run of tool results is
 * one user message of tool_result blocks whose content holds the text and
 * the images), images as {"type":"image","source":{"type":"base64",
 * "media_type":MIME,"data":..}} (uploaded: {"type":"file","file_id":..},
 * and files-api-2025-04-14 joins anthropic-beta), tools as {name,
 * description, input_schema}
 * and the native tool as {type, name:"computer", display_width_px,
 * display_height_px[, enable_zoom]} ("computer_toolset_20260801": {type,
 * configs}: the toolset's tool_use blocks are named after the action; they
 * come back as a native call whose arguments carry "action" like the
 * single tool's). An assistant turn is sent as the reply's own content
 * (vendor_json: thinking blocks kept verbatim).
 * Responses wire format: Authorization: Bearer; body model, instructions
 * (the SYSTEM text), input items: user messages {role:"user", content:
 * [input_text, input_image (data URL, or file_id once uploaded; detail
 * "auto")]}, assistant turns as
 * the previous response's output items verbatim (vendor_json, reasoning
 * included), function_call_output {call_id, output: text, or [input_text,
 * input_image] with images}, and for a native result computer_call_output
 * {call_id, output:{type:"computer_screenshot", image_url or file_id},
 * acknowledged_safety_checks} (the item has no room for text: a native
 * result's text follows the run of results as one user message, and a
 * result without image bytes carries a 1x1 placeholder); tools as
 * {type:"function", name, description, parameters, strict:false}, the native
 * one as {type:"computer"} or {type:"computer_use_preview", display_width,
 * display_height, environment:"linux"} (then also truncation "auto");
 * store false, include ["reasoning.encrypted_content"], max_output_tokens
 * when max_tokens is set; no previous_response_id: the whole input goes
 * each turn.
 *
 * Retries: connection failures, HTTP 429 (Retry-After honored, capped at
 * 60 s) and 5xx (Anthropic's 529 "overloaded" too) are retried up to
 * max_retries times with exponential backoff and jitter; other 4xx are not
 * (401/403: RK_EDENIED, 413: RK_ETOOLARGE, others RK_EINVALID, each with the
 * server's message after its error type ("invalid_request_error: ..."):
 * Anthropic's message names the field at fault ("messages.3.content.0: ..."),
 * OpenAI's "param" follows it as "(param: "input[3].content")"). A request that runs past timeout_ms is RK_ETIMEOUT and is
 * not retried (a slow model stays slow). Nothing here prints or exits. */

#include <cJSON.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/util/err.h"

#define RK_MODEL_TIMEOUT_MS_DEFAULT 120000
#define RK_MODEL_CONNECT_TIMEOUT_MS_DEFAULT 10000
#define RK_MODEL_RETRIES_DEFAULT 4
#define RK_MODEL_BACKOFF_MS_DEFAULT 500
#define RK_MODEL_KEEP_IMAGES_DEFAULT 2
/* screenshots beyond keep_images are dropped this many at a time, so the
 * prompt's prefix stays byte-identical (and cached) between drops */
#define RK_MODEL_PRUNE_BLOCK_DEFAULT 4
/* max_tokens on messages when none is configured (the API requires one) */
#define RK_MODEL_MAX_TOKENS_DEFAULT 4096
/* the anthropic-version header: what the official SDK (1.17) sends */
#define RK_MODEL_ANTHROPIC_VERSION "2026-10-21"

struct rk_model_reply;

/* Where a streamed reply goes as it arrives (struct rk_model_config.sink):
 * text as the model writes it, and each tool call as soon as the model has
 * decided it (its block or item ended, the arguments whole). Called on the
 * calling thread; either may be NULL. Output given here is never taken
 * back: once any was, a failed stream fails the call instead of retrying. */
struct rk_model_sink {
	void (*text)(void *ctx, const char *delta, size_t len);
	/* name and arguments as the vendor sent them (a native call: the
	 * vendor's name and input) */
	void (*tool_call)(void *ctx, const char *id, const char *name, const char *arguments);
	void *ctx;
};
/* How a conversation nearing the window is compacted: the config file's
 * "compact": "auto" (the vendor's server-side compaction where the
 * protocol has one, else a summary), "summary" (a summary the model
 * writes, on every protocol), "off" (never; true and false are auto and
 * off). */
enum rk_model_compact_mode { RK_MODEL_COMPACT_AUTO, RK_MODEL_COMPACT_SUMMARY, RK_MODEL_COMPACT_OFF };
#define RK_MODEL_COMPACT_AT_DEFAULT 0.8
/* the anthropic-beta of the Messages "compaction" parameter (SDK 1.17) */
#define RK_MODEL_COMPACTION_BETA "compact-2026-09-04"

/* The wire protocol a model is spoken to with (issue 22). */
enum rk_model_api {
	RK_MODEL_API_CHAT,	/* OpenAI-compatible /chat/completions (llama.cpp, vLLM, Ollama) */
	RK_MODEL_API_MESSAGES,	/* Anthropic /v1/messages */
	RK_MODEL_API_RESPONSES, /* OpenAI /v1/responses */
};
/* "chat", "messages", "responses"; NULL for no such value */
const char *rk_model_api_name(enum rk_model_api api);

/* What the command line gives; NULL / 0 / -1 fields are "not set". */
struct rk_model_flags {
	const char *base_url, *model, *api_key;
	const char *config_path;
	int64_t timeout_ms; /* 0: not set */
	int max_retries;    /* -1: not set */
	int max_tokens;	    /* 0: not set */
	int keep_images;    /* 0: not set */
	const char *api;    /* "chat", "messages", "responses"; NULL: not set */
	int no_stream;	    /* --no-stream: ask for whole replies */
};
#define RK_MODEL_FLAGS_INIT                                                                                            \
	{                                                                                                              \
		NULL, NULL, NULL, NULL, 0, -1, 0, 0, NULL, 0                                                           \
	}

/* A model's price in USD per million tokens (known 0: none). */
struct rk_model_price {
	int known;
	double input, output, cached, cache_write;
	const char *source; /* "config file", "built-in" */
};

struct rk_model_config {
	enum rk_model_api api;
	char *base_url; /* no trailing "/" */
	char *model;
	char *api_key;		/* NULL: no Authorization header; never log it */
	const char *key_source; /* "--api-key", "RAKAZO_API_KEY", "config file", "ANTHROPIC_API_KEY" ... or NULL */
	char *config_path;	/* the file consulted (it may not exist) */
	int64_t timeout_ms;	/* whole request, per attempt */
	int64_t connect_timeout_ms;
	int max_retries;    /* retries after the first attempt */
	int64_t backoff_ms; /* first backoff; doubles each retry (tests make it small) */
	int64_t retry_after_cap_ms;
	int max_tokens;	 /* 0: not sent (messages: RK_MODEL_MAX_TOKENS_DEFAULT) */
	int keep_images; /* for rk_model_prune_images by the caller */
	int prune_block; /* likewise; 0: drop one screenshot a turn */
	/* Prompt caching (on unless the config file's "prompt_cache" is false):
	 * messages marks cache_control breakpoints (the system prompt, and the
	 * last block of each of the last two user turns); responses sends
	 * cache_key as prompt_cache_key when the caller set one (a run: its
	 * thread's id, else its own). Chat sends neither: local servers cache prefixes on their own. */
	int prompt_cache;
	char *cache_key; /* NULL: none */
	/* Streaming (on unless the config file's "stream" is false or
	 * flags->no_stream): the request asks for server-sent events (chat also
	 * for the usage chunk), the reply is assembled from them into the same
	 * struct rk_model_reply a whole reply gives (model_stream.c), and sink
	 * (may be NULL; the caller's) sees the text and tool calls as they come.
	 * A stream that fails before any output reached the sink is retried like
	 * a 529; after, the call fails (RK_EUNAVAILABLE, "... after its output
	 * had started ..."). */
	int stream;
	const struct rk_model_sink *sink;
	/* Screenshots through the vendor's Files API (model_files.c): the
	 * config file's "upload_images", true, false or "auto" (the default:
	 * on for messages and responses). Chat has no Files API: always inline. */
	int upload_images;
	/* What the model costs: the config file's "price", else the built-in
	 * table's entry for model (price.known 0: neither has one). */
	struct rk_model_price price;
	/* Context management (engine/agent/model_compact.h): the model's
	 * window in input tokens ("context_window"; by default the model's
	 * own, rk_model_context_window), the fraction of it at which a run
	 * compacts its conversation ("compact_at", default
	 * RK_MODEL_COMPACT_AT_DEFAULT; 0: never) and how ("compact"). */
	int64_t context_window;
	double compact_at;
	enum rk_model_compact_mode compact;
	/* Set on a copy of the config for one request (model_compact.c): the
	 * vendor compacts the conversation instead of answering (messages:
	 * "compaction": {"type": "summarize"} with anthropic-beta
	 * RK_MODEL_COMPACTION_BETA, the reply one compaction block;
	 * responses: POST {base}/responses/compact with model, input,
	 * instructions and prompt_cache_key, the reply's output the user
	 * messages and one compaction item). */
	int compact_request;
	/* Optional: set to non-zero (a signal handler may) to stop a call or
	 * its backoff; the call returns RK_EINTERRUPTED. */
	volatile sig_atomic_t *cancel;
};

/* Fills cfg from flags (may be NULL), the environment and the config file.
 * data_dir locates the default config file (may be NULL: then only
 * RAKAZO_CONFIG or flags name one). RK_EUSAGE "no model configured: ..."
 * when no model, or for chat no base URL, is set anywhere, and for an
 * unknown protocol name; RK_EINVALID for a malformed config file or URL.
 * The caller releases cfg. */
int rk_model_config_load(const struct rk_model_flags *flags, const char *data_dir, struct rk_model_config *cfg,
			 struct rk_error *err);
void rk_model_config_release(struct rk_model_config *cfg);
/* The input window of model in api, in tokens, from a table of known
 * model names (Claude 200000, GPT-5 400000, GPT-4.1 1047576, GPT-4o
 * 128000, computer-use-preview 8192 ...), else the protocol's default:
 * messages 200000, responses 128000, chat 32768 (local servers often
 * run with less than their model could take). */
int64_t rk_model_context_window(enum rk_model_api api, const char *model);

/* ---- the conversation ---- */

enum rk_model_role { RK_MODEL_SYSTEM, RK_MODEL_USER, RK_MODEL_ASSISTANT, RK_MODEL_TOOL };
enum rk_model_part_kind { RK_MODEL_TEXT, RK_MODEL_IMAGE };

struct rk_model_part {
	enum rk_model_part_kind kind;
	char *text; /* TEXT: the text; IMAGE: NULL */
	/* IMAGE, and a TEXT part that stands for one (pruned or unchanged): */
	int is_frame;	     /* this part is (or was) a screenshot */
	int pruned;	     /* the bytes were dropped by rk_model_prune_images */
	char *label;	     /* metadata naming the frame ("frame 12, 1280x800 ...") */
	char frame_hash[65]; /* "" when the caller gave none */
	unsigned char *png;  /* IMAGE only: the encoded bytes, of mime's type */
	size_t png_len;
	char mime[16]; /* IMAGE: "image/png" or "image/jpeg" */
	/* IMAGE: the vendor's id for these bytes once uploaded through its
	 * Files API (rk_model_files_prepare); the requests refer to it instead
	 * of carrying the bytes. NULL: sent inline. */
	char *file_id;
};

struct rk_model_tool_call {
	char *id;
	char *name;
	char *arguments; /* the raw JSON text the model sent; see rk_model_tool_call_args */
	/* A call of the native computer tool: arguments is the vendor's input
	 * as JSON text (Messages: the tool_use input, {"action":..,...};
	 * Responses: {"actions":[...]} for the GA tool, {"action":{..}} for the
	 * preview). Responses' pending_safety_checks ride along as a JSON array
	 * text (NULL: none); they are acknowledged only when a person approves. */
	int native;
	char *safety_checks;
};

struct rk_model_message {
	enum rk_model_role role;
	struct rk_model_part *parts;
	size_t nparts;
	struct rk_model_tool_call *calls; /* ASSISTANT */
	size_t ncalls;
	char *tool_call_id; /* TOOL */
	/* TOOL: answers a native computer call (its image is the screenshot the
	 * vendor's tool expects); acknowledged is the JSON array text of the
	 * safety checks a person approved (Responses), or NULL. */
	int native;
	char *acknowledged;
	/* ASSISTANT: the vendor's own form of this turn, JSON text (messages:
	 * the reply's content array; responses: its output items), and the
	 * protocol it came from. A request in that protocol sends it verbatim
	 * (thinking and reasoning kept); any other rebuilds the turn from parts
	 * and calls. NULL: rebuilt always. */
	char *vendor_json;
	enum rk_model_api vendor_api;
};

struct rk_model_conversation {
	struct rk_model_message **msgs; /* pointers stay valid as messages are added */
	size_t n, cap;
	char last_frame_hash[65]; /* the hash of the last frame whose bytes were added */
	/* The vendor's Files API (model_files.c): uploaded files no image
	 * refers to any more (pruned), to delete; and whether uploads were
	 * given up (an endpoint without the API): inline from then on. */
	char **stale_files;
	size_t nstale;
	int files_off;
};

struct rk_model_conversation *rk_model_conversation_new(void);
void rk_model_conversation_free(struct rk_model_conversation *c);
/* Frees one message (not in a conversation any more); NULL is a no-op. */
void rk_model_message_free(struct rk_model_message *m);
/* Drops the messages from index from on (freed). */
void rk_model_conversation_truncate(struct rk_model_conversation *c, size_t from);

/* Appends a message; text may be NULL (no text part). The returned message
 * belongs to the conversation. */
struct rk_model_message *rk_model_add_message(struct rk_model_conversation *c, enum rk_model_role role,
					      const char *text);
/* A tool result for the assistant's call call_id. */
struct rk_model_message *rk_model_add_tool_result(struct rk_model_conversation *c, const char *call_id,
						  const char *text);
/* The assistant's reply (text, tool calls with their native flag and
 * safety checks, vendor_json), copied, so the next call carries it. */
struct rk_model_message *rk_model_add_reply(struct rk_model_conversation *c, const struct rk_model_reply *r);
void rk_model_message_add_text(struct rk_model_message *m, const char *text);
/* Adds a screenshot (PNG bytes, copied) to m, a USER or TOOL message of c.
 * frame_hash (may be NULL) identifies the frame (the screen engine's
 * sha256); label names it for the model. When frame_hash equals the last
 * frame added to c, no bytes are added: a text part says the screen is
 * unchanged. Returns 1 when the image was added, 0 for an unchanged frame. */
int rk_model_message_add_image(struct rk_model_conversation *c, struct rk_model_message *m, const void *png, size_t len,
			       const char *frame_hash, const char *label);
/* The same for an image of type mime ("image/png", "image/jpeg"; NULL or
 * "": PNG). */
int rk_model_message_add_image_as(struct rk_model_conversation *c, struct rk_model_message *m, const char *mime,
				  const void *data, size_t len, const char *frame_hash, const char *label);
/* Drops the bytes of every screenshot but the last keep_last (<= 0: the
 * default, 2), turning each into a text part that names the frame, once
 * more than keep_last + block of them have bytes (block 0: as soon as
 * there are more than keep_last). Dropping in blocks leaves the
 * conversation byte-identical between drops, so a vendor's prompt cache
 * keeps serving it. A pruned image's uploaded file, when no kept image
 * shares it, joins c->stale_files (deleted by the next
 * rk_model_files_prepare). Returns how many were pruned now. */
int rk_model_prune_images(struct rk_model_conversation *c, int keep_last, int block);
/* Screenshots in c that still carry bytes. */
int rk_model_image_count(const struct rk_model_conversation *c);

/* ---- tools and the call ---- */

struct rk_model_tool {
	const char *name;
	const char *description;
	const cJSON *parameters; /* a JSON-schema object; NULL: {"type":"object","properties":{}} */
	/* A vendor's native computer tool instead of a function tool (NULL for
	 * a function tool; then the fields below are unused). The type is the
	 * vendor's: "computer_20250124", "computer_20251124" (Messages), or
	 * "computer" (Responses, GA) / "computer_use_preview"; name is then
	 * "computer". display_w/h is the size of the screenshots the model is
	 * shown (already scaled); beta the anthropic-beta value the type
	 * needs (NULL: none). */
	const char *native_type;
	const char *native_beta;
	int display_w, display_h;
	int enable_zoom;
};

struct rk_model_reply {
	char *text; /* NULL when the model sent none */
	struct rk_model_tool_call *calls;
	size_t ncalls;
	/* the vendor's word: chat "stop", "tool_calls", "length"; messages
	 * stop_reason ("end_turn", "tool_use", "max_tokens" ...); responses
	 * incomplete_details.reason ("max_output_tokens" ...) when incomplete,
	 * else status ("completed"); NULL when absent */
	char *finish_reason;
	/* -1 when the server did not say; prompt_tokens counts every input
	 * token, cached or not (messages: input_tokens +
	 * cache_read_input_tokens + cache_creation_input_tokens), and
	 * cached_tokens those read from the vendor's prompt cache,
	 * cache_write_tokens those written to it (messages only: OpenAI does
	 * not bill writes) */
	int64_t prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens;
	/* The model declined: the refusal's words (a Responses refusal part,
	 * chat's message.refusal, or a Messages reply whose stop_reason is
	 * "refusal": its text, else a fixed sentence); NULL otherwise. */
	char *refusal;
	int attempts;	 /* HTTP requests it took (1 when no retry) */
	int http_status; /* of the last attempt; 0 when none was answered */
	/* the turn in the vendor's form (see struct rk_model_message), which
	 * rk_model_add_reply copies; NULL for chat */
	char *vendor_json;
	enum rk_model_api vendor_api;
};
void rk_model_reply_release(struct rk_model_reply *r);

/* Why a reply ended, when that is not the usual end of a turn (a final
 * answer or tool calls), in one word across the protocols:
 *   "refusal"         r->refusal set (Messages stop_reason refusal, a
 *                     Responses refusal part, chat message.refusal)
 *   "max_tokens"      cut at the output limit: Messages max_tokens,
 *                     Responses incomplete max_output_tokens, chat length
 *   "pause_turn"      Messages: a long server-side turn paused; send it back
 *   "context_window"  Messages model_context_window_exceeded
 *   "content_filter"  Responses incomplete content_filter, chat content_filter
 * NULL for an ordinary end (end_turn, tool_use, stop, completed ...). */
const char *rk_model_stop_of(const struct rk_model_reply *r);

/* ---- prices ---- */

/* The built-in price of model (a vendor's name, with or without a vendor
 * or router prefix ("anthropic/", "openai/"), a date suffix, or dots for
 * dashes: "claude-sonnet-4.5"), by the longest known prefix. 1 when known
 * (*out filled, source "built-in"), 0 when not. The table holds the
 * vendors' list prices (Anthropic's pricing page; OpenAI's as quoted on
 * 2026-11), standard tier, 5-minute cache writes. */
int rk_model_price_lookup(const char *model, struct rk_model_price *out);
/* What tokens cost at p, in millionths of a USD: input counts every input
 * token (cached and cache_write are parts of it, priced at their own
 * rates). -1 when p is not known. */
int64_t rk_model_cost_micro(const struct rk_model_price *p, int64_t input, int64_t cached, int64_t cache_write,
			    int64_t output);

/* The request body rk_model_complete sends (for tests and --dry-run), but
 * the members that ask for a stream ("stream", chat's "stream_options");
 * the caller owns it. NULL when the request cannot be made (a native tool
 * on chat, a native type the protocol does not have). */
cJSON *rk_model_request_json(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			     const struct rk_model_tool *tools, size_t ntools);

/* Where rk_model_complete sends it and with which headers, but the key. */
struct rk_model_http {
	char *url;		/* {base_url}{path} */
	const char *path;	/* in url: "/chat/completions", "/messages", "/messages?beta=true", "/responses" */
	char *headers[5];	/* "Name: value", NULL-terminated; never the key's */
	const char *key_header; /* the header the key goes in ("Authorization", "x-api-key"); NULL: no key */
};
/* Fills h (released with rk_model_http_release). RK_EINVALID when a tool
 * cannot be sent in cfg->api: "the chat protocol has no native computer
 * tool", or a native type of the other vendor. */
int rk_model_request_http(const struct rk_model_config *cfg, const struct rk_model_tool *tools, size_t ntools,
			  struct rk_model_http *h, struct rk_error *err);
void rk_model_http_release(struct rk_model_http *h);

/* Reads a 2xx reply body of protocol api into r (overwritten; released by
 * the caller on success, left empty on failure); tools are the ones the request declared (a
 * call of the native tool is native=1). RK_EFAILED "the model endpoint
 * returned a malformed reply: ..." or "... answered with an error: ...". */
int rk_model_reply_parse(enum rk_model_api api, const char *body, size_t len, const struct rk_model_tool *tools,
			 size_t ntools, struct rk_model_reply *r, struct rk_error *err);

/* One completion: POSTs the conversation and fills reply (released by the
 * caller; filled only on success). Errors: RK_EUNAVAILABLE (not reachable,
 * or 429/5xx after every retry), RK_ETIMEOUT, RK_EDENIED, RK_EINVALID,
 * RK_ETOOLARGE, RK_EFAILED "the model endpoint returned a malformed reply:
 * ...", RK_EINTERRUPTED (cfg->cancel); RK_EINVALID before any request
 * when a tool cannot go in cfg->api (rk_model_request_http). First it
 * uploads the conversation's new screenshots (rk_model_files_prepare), so
 * c changes: its images get file ids. A request that refers to uploaded
 * files and is refused (RK_EINVALID: a gateway that passes uploads but not
 * file sources, a file the vendor lost) is sent once more with every image
 * inline, and uploads stay off for the conversation. */
int rk_model_complete(const struct rk_model_config *cfg, struct rk_model_conversation *c,
		      const struct rk_model_tool *tools, size_t ntools, struct rk_model_reply *reply,
		      struct rk_error *err);

/* ---- screenshots sent once (model_files.c) ----
 * With cfg->upload_images on (messages, responses), each image of a
 * conversation is uploaded before the first request that carries it:
 *   messages   POST {base}/files, multipart/form-data with one part "file"
 *              (filename, Content-Type), headers x-api-key,
 *              anthropic-version and anthropic-beta: files-api-2025-04-14;
 *              the answer's "id" (file_...)
 *   responses  POST {base}/files, multipart/form-data with "purpose":
 *              "vision" and "file", Authorization: Bearer; the answer's "id"
 * and deleted with DELETE {base}/files/{id} (the same headers) once no
 * image refers to it: when it is pruned, and at the end (rk_model_files_end).
 * Identical bytes share one file. An upload answered with a 4xx other than
 * 408 and 429 (a proxy or a local server without the API), or with a 2xx
 * that holds no id, turns uploads off for the conversation, logged once;
 * a 5xx, 408, 429 or a network failure sends that turn's new images inline
 * and tries again next turn. Uploads are sent once each (no retry: a
 * repeat after a lost answer would leave an orphan file); a crashed run
 * leaves at most keep_images + prune_block + 1 files behind. */

/* Deletes c's stale files and uploads its images that have no file id
 * (best effort: a failure leaves the image inline). 0, or RK_EINTERRUPTED
 * (cfg->cancel) and nothing more is sent. Nothing is sent for chat, with
 * upload_images off, or once uploads were given up. */
int rk_model_files_prepare(const struct rk_model_config *cfg, struct rk_model_conversation *c, struct rk_error *err);
/* Deletes every file c uploaded (best effort, logged) and forgets their
 * ids: call it when the conversation ends. */
void rk_model_files_end(const struct rk_model_config *cfg, struct rk_model_conversation *c);
/* Moves c's file ids to its stale files (deleted at the next prepare or at
 * rk_model_files_end) and turns uploads off for c: the images go inline
 * from now on. Returns how many images referred to a file. */
int rk_model_files_forget(struct rk_model_conversation *c);

/* Checks cfg without spending a token: GET {base_url}/models with the
 * protocol's headers and key. 0 with *detail (malloc'd) saying the endpoint
 * is reachable, the key accepted and whether the model is listed;
 * RK_EDENIED when the key is refused, RK_EUNAVAILABLE when it is not
 * reachable, RK_EFAILED for another answer. */
int rk_model_probe(const struct rk_model_config *cfg, char **detail, struct rk_error *err);

/* Parses a tool call's arguments into an object (the caller owns *out): ""
 * is {}. RK_EINVALID naming the tool when they are malformed or not an
 * object, so the loop can hand the model that message as the tool result. */
int rk_model_tool_call_args(const struct rk_model_tool_call *call, cJSON **out, struct rk_error *err);

/* The approval judge (engine/access/approval.h): shows one tool call to
 * RAKAZO_JUDGE_MODEL (at RAKAZO_JUDGE_BASE_URL, else the model's base URL)
 * and answers 0 (ALLOW) or 1 (ASK, also for any other answer or an error),
 * with why in reason. */
int rk_model_judge(const char *data_dir, const char *tool, const char *args_json, char *reason, size_t size);
/* Registers rk_model_judge as the approval judge of this process; the agent
 * calls it where it sets up its tools (engine/agent/tools.c). Idempotent. */
void rk_model_judge_register(void);

#endif
