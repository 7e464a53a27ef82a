#ifndef RK_MODEL_WIRE_H
#define RK_MODEL_WIRE_H
/* What the model client's files share; not a public header. Each protocol
 * (model_chat.c, model_messages.c, model_responses.c) turns the
 * conversation into its request body and its reply body into a struct
 * rk_model_reply, with the helpers model.c defines; model_call.c does HTTP,
 * retries and errors. This header includes no model header (model.c
 * includes it, and the module graph allows no cycle): the types are
 * model.h's, declared here only by name. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

struct rk_model_config;
struct rk_model_conversation;
struct rk_model_http;
struct rk_model_message;
struct rk_model_part;
struct rk_model_reply;
struct rk_model_sink;
struct rk_model_tool;

/* Request bodies: 0 and *out (the caller's), or RK_EINVALID when a tool
 * cannot be sent in the protocol. */
int rk_model_chat_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			  const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err);
int rk_model_messages_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			      const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err);
int rk_model_responses_request(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			       const struct rk_model_tool *tools, size_t ntools, cJSON **out, struct rk_error *err);

/* Reply bodies (doc parsed already, owned by the caller); r is empty on
 * entry and released by the caller on failure. */
int rk_model_chat_reply(const cJSON *doc, const char *body, size_t len, struct rk_model_reply *r, struct rk_error *err);
int rk_model_messages_reply(const cJSON *doc, const char *body, size_t len, const struct rk_model_tool *tools,
			    size_t ntools, struct rk_model_reply *r, struct rk_error *err);
int rk_model_responses_reply(const cJSON *doc, const char *body, size_t len, const struct rk_model_tool *tools,
			     size_t ntools, struct rk_model_reply *r, struct rk_error *err);

/* ---- streamed replies (model_stream.c) ---- */

/* A stream of protocol api (an enum rk_model_api) being read, its text and
 * tool calls going to sink (may be NULL) as they come. */
struct rk_model_stream;
struct rk_model_stream *rk_model_stream_new(int api, const struct rk_model_sink *sink, size_t max_bytes);
void rk_model_stream_free(struct rk_model_stream *s);
/* The bytes as they arrive, cut anywhere. 0, or -1 past max_bytes. */
int rk_model_stream_feed(struct rk_model_stream *s, const void *data, size_t len);
/* Whether output (text or a tool call) has been handed on. */
int rk_model_stream_started(const struct rk_model_stream *s);
/* After the last byte: the reply body the events add up to, the one the
 * vendor sends unstreamed (malloc'd; *len its length), for
 * rk_model_reply_parse. NULL with err: RK_EUNAVAILABLE for an error event
 * ("the model endpoint's stream reported an error: TYPE: MESSAGE") or a
 * stream that ended before its last event, RK_EFAILED for one that
 * cannot be read. A server that ignored the stream request and sent one
 * JSON reply gets that reply back. */
char *rk_model_stream_body(struct rk_model_stream *s, size_t *len, struct rk_error *err);

/* ---- screenshots through the Files APIs (model_files.c) ---- */

/* Adds the files beta (files-api-2025-04-14) to a messages request's
 * anthropic-beta header when c refers to uploaded files (model_files.c);
 * 1 when it does. */
int rk_model_files_http(const struct rk_model_config *cfg, const struct rk_model_conversation *c,
			struct rk_model_http *h);

/* ---- shared helpers (model.c) ---- */

/* The first bytes of an untrusted body, printable and quoted, for a message. */
void rk_model_excerpt(struct rk_buf *out, const char *s, size_t len, size_t max);
/* RK_EFAILED "the model endpoint returned a malformed reply: WHY[: EXCERPT]". */
int rk_model_malformed(struct rk_error *err, const char *why, const char *body, size_t len);
/* The message in an error body: {"error":{"message":..}} (with OpenAI's
 * param and Anthropic's error type), {"error":".."}, {"message":..},
 * {"detail":..}, else an excerpt of the text. */
void rk_model_server_message(const char *body, size_t len, struct rk_buf *out);

/* An image part's type: its mime, or "image/png". */
const char *rk_model_part_mime(const struct rk_model_part *p);
/* "data:MIME;base64,..." of an image part (caller frees). */
char *rk_model_part_data_url(const struct rk_model_part *p);
/* The text part said before an image: "screenshot: LABEL", or with a call
 * "screenshot from tool call ID: LABEL" (caller frees). */
char *rk_model_image_label(const struct rk_model_part *p, const char *call_id);
/* The TEXT parts of m joined by newlines (caller frees). */
char *rk_model_joined_text(const struct rk_model_message *m);
int rk_model_has_image(const struct rk_model_message *m);
/* The text of the SYSTEM messages, joined by a blank line; NULL when none
 * (caller frees). */
char *rk_model_system_text(const struct rk_model_conversation *c);
/* Whether tools can go in api (an enum rk_model_api): each protocol has its own vendor's native
 * types (messages "computer_..." but the preview, responses "computer" and
 * "computer_use_preview"), chat none; RK_EINVALID naming the type. */
int rk_model_check_native(int api, const struct rk_model_tool *tools, size_t ntools, struct rk_error *err);
/* Takes p's file id (model_files.c) off it: into c's stale files, to be
 * deleted, unless another image of c still refers to it. */
void rk_model_file_drop(struct rk_model_conversation *c, struct rk_model_part *p);
/* The first native tool of tools, or NULL. */
const struct rk_model_tool *rk_model_native_tool(const struct rk_model_tool *tools, size_t ntools);
/* A tool call's arguments as a JSON value (caller deletes): the object it
 * holds, {} when empty or malformed (the model's own mistake goes back as
 * it is in the vendor's form). */
cJSON *rk_model_args_object(const char *arguments);
/* A number in obj, or -1. */
int64_t rk_model_json_count(const cJSON *obj, const char *key);

#endif
