#ifndef RK_TEST_MODEL_H
#define RK_TEST_MODEL_H
/* The scripted model server's pieces (tests/emulators/model_server.c is the
 * server; see its header comment for the scenario format). Each protocol
 * reads a request into a struct summary and records its own checks, then
 * renders the step's protocol-neutral reply as that vendor's JSON document
 * or its stream of server-sent events. Everything here runs under the
 * server's one lock, so module state needs no locking of its own. */

#include <cJSON.h>
#include <stddef.h>

#include "engine/util/buf.h"

enum protocol { PROTO_CHAT, PROTO_MESSAGES, PROTO_RESPONSES };

const char *protocol_name(enum protocol p);

/* The request's headers and query that the checks look at (NULL: absent). */
struct http_in {
	const char *authorization;     /* Authorization */
	const char *x_api_key;	       /* x-api-key */
	const char *anthropic_version; /* anthropic-version */
	const char *anthropic_beta;    /* anthropic-beta */
	const char *beta_query;	       /* ?beta= */
};

int has_bearer(const struct http_in *h);

/* ---- images ---- */

struct image {
	char mime[32]; /* what the request says it is */
	int ok;	       /* the bytes decode as that format */
	int w, h;
	char why[160];	/* when !ok */
	char hex[65];	/* sha256 of the bytes */
	size_t encoded; /* base64 characters in the request */
};

/* Decodes base64 data claimed to be of type mime (image/png or image/jpeg)
 * fully, with libpng or libjpeg, into *img. Results are remembered by hash. */
void image_check_base64(const char *mime, const char *b64, struct image *img);
/* The same for a data URL ("data:image/png;base64,..."). */
void image_check_data_url(const char *url, struct image *img);
/* The same for bytes already decoded (an uploaded file's). */
void image_check_bytes(const char *mime, const void *bytes, size_t len, struct image *img);
void image_cache_release(void);

/* ---- what a request holds ---- */

struct summary {
	enum protocol proto;
	int valid;
	char invalid_why[1100];
	int messages; /* messages, or Responses input items */
	int images;
	int bad_images;
	int file_images; /* of images: referred to by an uploaded file's id */
	size_t inline_chars; /* the base64 characters of the inline images */
	char bad_image_why[300]; /* the first bad image's problem */
	int duplicate_images;
	cJSON *seen;		    /* hashes of the images so far (owned) */
	int last_tool;		    /* index of the message holding the last tool result, -1 */
	int images_after_last_tool; /* images in the last tool result and after it */
	char *last_tool_text;	    /* malloc'd */
	struct rk_buf all_text;	    /* every message's text (and the system prompt), one a line */
	char ids_problem[400];	    /* "" when tool results and calls pair up */
	cJSON *tools;		    /* names (owned) */
	cJSON *roles;		    /* owned */
	const char *model;
	int stream;
	const char *native_type;  /* the declared native computer tool's type, NULL */
	int display_w, display_h; /* its declared size, 0 when it has none */
	struct image last_image;  /* valid when images > 0 */
	int max_long_edge;	  /* the longest image edge */
	cJSON *acknowledged;	  /* ids the last computer_call_output acknowledges, NULL: none came */
	int previous_response;	  /* Responses: previous_response_id was given */
	int store;		  /* Responses: "store" (absent: 1) */
	struct prompt *prompt;	  /* the prompt as the cache sees it (owned), NULL until read */
	const char *cache_key;	  /* OpenAI: prompt_cache_key, NULL when absent */
	int compact;		  /* Responses: a POST .../responses/compact */
};

void summary_init(struct summary *s, enum protocol p);
void summary_release(struct summary *s);
/* Counts one image, checking it and noting a repeat of earlier bytes; *img
 * is copied. */
void summary_add_image(struct summary *s, const struct image *img);
/* Appends text to all_text. */
void summary_add_text(struct summary *s, const char *text);

/* ---- assertions ---- */

struct verdict {
	cJSON *list; /* [{"name", "ok", "detail"}] */
	char first_failed[600];
	/* A request the vendor itself refuses is answered as the vendor does: a
	 * 400 invalid_request_error with the vendor's message. */
	const char *refused_by; /* the check's name, NULL: not refused */
	char refusal[500];
	const char *refusal_param; /* OpenAI's "param" and "code", NULL: none */
	const char *refusal_code;
	unsigned refusal_status;  /* 0: 400 */
	const char *refusal_type; /* NULL: invalid_request_error */
	const char *refusal_error_code; /* Anthropic's error.details.error_code, NULL: none */
};

void record(struct verdict *v, const char *name, int ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Records check name as failed with the vendor's own 400 message; the first
 * refusal is the answer. param and code as OpenAI sends them (NULL: none). */
void refuse(struct verdict *v, const char *name, const char *param, const char *code, const char *msg);

/* Each protocol reads req (NULL when it is not JSON: s->invalid_why says
 * why) into s and records the checks every request of it gets. expect is
 * the step's "expect" (NULL: none), for the defaults it may change. */
void chat_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s, struct verdict *v);
void messages_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s,
		    struct verdict *v);
void responses_check(const cJSON *req, const struct http_in *h, const cJSON *expect, struct summary *s,
		     struct verdict *v);

/* ---- answers ---- */

/* What a step answers with, from the scenario's reply. */
struct answer {
	const cJSON *reply;	  /* the step's "reply" */
	const cJSON *req;	  /* the request */
	const struct summary *s;  /* what it held */
	int step;		  /* 1-based */
	size_t body_len;	  /* the request's bytes */
	const char *last_session; /* for "$last_session" arguments */
};

/* A tool call's arguments as JSON text with "$last_session" substituted
 * (malloc'd); a string stays as it is, valid JSON or not. */
char *call_arguments(const cJSON *call, const char *last_session);
/* The same as an object: NULL when the arguments are a string that is not
 * a JSON object (then *raw is that string, borrowed). */
cJSON *call_arguments_object(const cJSON *call, const char *last_session, const char **raw);
/* A vendor-shaped id: prefix then n characters of [0-9A-Za-z] (hex: of
 * [0-9a-f]). Malloc'd. */
char *vendor_id(const char *prefix, int n, int hex);
/* The one token estimate: what a piece of a request (a block, a tool, an
 * input item) would plausibly cost. Its JSON text (printed: v as sent,
 * or NULL to print it here) by ceil(bytes / 4), less its base64 images,
 * which cost ceil(w * h / 750) of their decoded size each. */
long json_tokens(const cJSON *v, const char *printed);
/* Splits s[0..len) into pieces of about size bytes that do not cut a UTF-8
 * character; returns the length of the first piece (0 only when len is 0). */
size_t utf8_piece(const char *s, size_t len, size_t size);
/* One server-sent event: "event: NAME\ndata: JSON\n\n" (name NULL: no event line). */
void sse_event(struct rk_buf *out, const char *name, const cJSON *data);

/* The chat completion (JSON) for a reply. */
cJSON *chat_render(const struct answer *a);
/* The Messages API message; stream: its events into *sse too. */
cJSON *messages_render(const struct answer *a, struct rk_buf *sse);
/* The compacted response of POST /responses/compact: the request's user
 * messages, then one compaction item holding the reply's content. */
cJSON *responses_compact_render(const struct answer *a);
/* The Responses API response, remembered for previous_response_id; sse as above. */
cJSON *responses_render(const struct answer *a, struct rk_buf *sse);
/* Chat completion chunks for a completion, ending with "data: [DONE]". */
void chat_stream(const cJSON *completion, int include_usage, struct rk_buf *sse);
/* Whether an anthropic-beta header value lists want. */
int messages_beta_has(const char *header, const char *want);
/* The beta the Messages "compaction" parameter needs. */
#define COMPACTION_BETA "compact-2026-09-04"
void messages_release(void);
void responses_release(void);

/* ---- the vendors' Files APIs (files.c) ----
 * POST .../files (multipart/form-data), GET .../files, GET and DELETE
 * .../files/ID, in Anthropic's shape when an anthropic-version header came
 * (@anthropic-ai/sdk 1.17 resources/beta/files: the files-api-2025-04-14
 * beta is required) and OpenAI's otherwise (openai 7.60 resources/files:
 * "purpose" is required). The bytes are kept in memory until deleted; the
 * protocols resolve a file_id in a request to them. */

struct stored_file {
	char id[64];
	enum protocol vendor; /* PROTO_MESSAGES or PROTO_RESPONSES */
	char mime[64], filename[128], purpose[32];
	struct rk_buf bytes;
	int deleted;
	long long created; /* unix seconds */
};

/* Answers a Files API request (tail: what follows ".../files", "" or
 * "/ID"); *status and *proto (the vendor whose error shape to use) are
 * set, and the document to send is returned (the caller's). off: the
 * scenario says the endpoint has no Files API (a 404 like a server
 * without the route). */
cJSON *files_serve(const char *method, const char *tail, const char *content_type, const char *body, size_t len,
		   const struct http_in *h, int off, unsigned *status, enum protocol *proto);
/* A live file (not deleted) by id, NULL when none. */
const struct stored_file *files_find(const char *id);
/* Checks an image that refers to file id in a request on protocol p into
 * *img, counted in s (file_images); a missing or deleted file, a file of
 * the other vendor or not an image, or (Messages) no files beta refuses the
 * request as the vendor does. where names the place ("input[3].content[1]"). */
void files_image(const char *id, enum protocol p, const struct http_in *h, const char *where, struct summary *s,
		 struct verdict *v, struct image *img);
/* The report's "files" object: uploaded, uploaded_bytes, deleted, live,
 * duplicate_uploads, referenced. */
cJSON *files_report(void);
int files_live(void);
void files_release(void);

/* ---- prompt caches (cache.c) ---- */

/* A request's prompt in the order the vendor renders it, in pieces (a tool,
 * a system block, a message's content block; for OpenAI a tool, the
 * instructions, a message or an input item), each with its tokens and the
 * hash of everything up to it. */
struct prompt;

/* How a request's input tokens split; read + created + uncached = total. */
struct cache_usage {
	long total;
	long read;		     /* read from the cache */
	long created;		     /* written to it (Messages) */
	long created_5m, created_1h; /* created, by the ttl of the breakpoint */
	long uncached;		     /* neither: after the last breakpoint */
};

/* Messages: the prompt of req (tools, system, messages) with its
 * cache_control breakpoints, into *out (to prompt_free). A cache_control
 * the API refuses fills problem with the API's message and returns -1. */
int messages_prompt(const cJSON *req, const struct summary *s, struct prompt **out, char *problem, size_t sz);
/* OpenAI (Responses or chat): refuses a prompt_cache_key that is not a
 * string (as the API does), else reads it and the prompt into s, in the
 * cache partition of that key. */
void openai_cache_check(const cJSON *req, struct summary *s, struct verdict *v);
/* The cache_control breakpoints a Messages prompt carries (the top-level
 * automatic one included). */
int prompt_breakpoints(const struct prompt *p);
/* Answers the prompt from the cache and writes to it what the vendor would:
 * Messages at its breakpoints, OpenAI every prefix of 1024 tokens or more. */
void prompt_cache(struct prompt *p, struct cache_usage *u);
void prompt_free(struct prompt *p);
/* Every input token of the prompt, as the usage counts them. */
long prompt_tokens(const struct prompt *p);
void cache_release(void);

#endif
