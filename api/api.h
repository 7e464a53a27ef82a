#ifndef RK_API_H
#define RK_API_H
/* The Computers HTTP API (`rakazo serve`), without the HTTP: a request
 * (method, path, query, body, bearer token) goes in, a status and one JSON
 * document come out, or an event stream to pump (GET .../observe). The
 * transport (libmicrohttpd, in cmd/serve.c) holds one engine per thread.
 *
 * Auth: bearer tokens made by `rakazo serve token create`; only a SHA-256
 * of the secret is stored and it is compared in constant time. A token
 * made for a bot acts as that bot: it reaches only the computers the bot
 * has a right to (PUT /v1/computers/:id/bots/:botId), checked again on
 * every call, so taking the right away stops the next input or read.
 *
 * Errors: {"error": {"category", "code", "message", "errorId"}}; the
 * category is one of the safe ones (invalid_request, unauthorized,
 * forbidden, not_found, route_not_found, method_not_allowed, too_large,
 * ComputerConflict, ComputerUnsupported, ComputerExecutionFailed); a
 * failure inside the machine keeps its detail in the log under errorId. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"
#include "engine/util/buf.h"

#define RK_API_BODY_MAX (24u * 1024 * 1024) /* a 16 MiB file as base64, with room */

/* --- tokens (engine/state/db_api.c) ----------------------------------------------------- */
struct rk_api_token {
	char *id, *name, *bot_id; /* bot_id NULL: a member's token */
	int64_t created_at, last_used_at, revoked_at; /* 0: never */
};
void rk_api_token_release(struct rk_api_token *t);
/* Makes a token; *secret (malloc'd) is the bearer text, shown once. */
int rk_api_token_create(struct rk_db *db, const char *name, const char *bot_id, char **secret,
			struct rk_api_token *out, struct rk_error *err);
int rk_api_token_list(struct rk_db *db, struct rk_api_token **out, size_t *n, struct rk_error *err);
/* By id or name; RK_ENOTFOUND when none is live. */
int rk_api_token_revoke(struct rk_db *db, const char *id_or_name, struct rk_api_token *out, struct rk_error *err);
/* The live token whose secret this is; RK_EDENIED otherwise. */
int rk_api_token_verify(struct rk_db *db, const char *secret, struct rk_api_token *out, struct rk_error *err);
/* 1 while token id is live, 0 once revoked or gone. */
int rk_api_token_live(struct rk_db *db, const char *id, struct rk_error *err);
cJSON *rk_api_token_to_json(const struct rk_api_token *t);

/* --- rights (engine/state/db_api.c) ------------------------------------------------------ */
struct rk_api_right {
	char *computer_id, *bot_id, *granted_by;
	int64_t created_at;
};
void rk_api_right_release(struct rk_api_right *r);
int rk_api_right_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *granted_by,
		     struct rk_api_right *out, struct rk_error *err);
int rk_api_right_get(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_api_right *out,
		     struct rk_error *err);
int rk_api_right_delete(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_error *err);
int rk_api_right_list(struct rk_db *db, const char *computer_id, struct rk_api_right **out, size_t *n,
		      struct rk_error *err);

/* Paired machines: a computer of kind "paired" (offline until its machine
 * connects) and its secret, shown once as "cmp_....SECRET". */
int rk_api_pair_create(struct rk_db *db, const char *name, const char *owner, char **computer_id, char **secret,
		       struct rk_error *err);
/* The computer whose machine secret this is; RK_EDENIED otherwise. */
int rk_api_pair_verify(struct rk_db *db, const char *secret, char **computer_id, struct rk_error *err);

/* At a server's start: no paired machine is connected to it yet. */
int rk_api_pair_reset(struct rk_db *db, struct rk_error *err);

/* The server's end of a paired machine's connection (api/pair.c):
 * serves the paired provider's calls for computer_id over fd until the
 * connection breaks or a newer one replaces it, then closes fd. Blocks. */
void rk_api_pair_link(const char *data_dir, const char *computer_id, int fd, const char *extra, size_t extra_len);

/* Usage records of a computer, oldest first: *out holds 2*n values (started,
 * ended; ended 0 while open). malloc'd. */
int rk_api_usage_list(struct rk_db *db, const char *computer_id, int64_t **out, size_t *n, struct rk_error *err);

/* A loopback listener in this process forwarding to port inside c (through
 * the provider's exec and bash's /dev/tcp) for the token token_id (acting
 * as bot_id, or NULL for a member). A connection is carried only after it
 * sent *secret (malloc'd, hex) and a newline. The same token forwarding the
 * same port again gets the same *local_port and a new *secret, which
 * replaces the old one for new connections (engine/gateway/port.c). */
int rk_api_port_forward(struct rk_engine *eng, const struct rk_computer *c, int port, const char *token_id,
			const char *bot_id, int *local_port, char **secret, struct rk_error *err);
/* Ends the forwards (listener closed, connections cut) whose token was
 * revoked, whose bot lost its right to the computer, or whose computer is
 * gone or not running. The server calls it a few times a second (it looks
 * at the database at most every 250 ms). */
void rk_api_port_sweep(struct rk_engine *eng);

/* --- requests (api/api.c) ---------------------------------------------------------- */
struct rk_api_request {
	const char *method;
	const char *path; /* "/v1/computers/cmp_.../files", no query */
	/* A query parameter, or NULL when absent. */
	const char *(*query)(void *ctx, const char *key);
	void *query_ctx;
	const char *authorization; /* the Authorization header, or NULL */
	const char *last_event_id; /* the Last-Event-ID header, or NULL */
	const char *upgrade;       /* the Upgrade header, or NULL */
	const char *body;
	size_t body_len;
	int body_too_large; /* the transport stopped reading past RK_API_BODY_MAX */
	/* The providers this server offers (`rakazo serve --providers`),
	 * NULL-terminated; NULL offers none. A create naming another is 400,
	 * and a computer on another (made from the CLI, say) is 403 on every
	 * route. Paired machines join through the API and are always served.
	 * A provider whose commands run on this host (RK_CAP_HOST_EXEC) is
	 * never reachable with a bot's token, offered or not. */
	const char *const *providers;
	/* the caller as rk_api_admit found it on this request's headers, or
	 * NULL: the Authorization header is checked */
	const struct rk_api_token *admitted;
	/* the peer's address ("127.0.0.2"), or NULL: names it in the log */
	const char *peer;
};

struct rk_api_response {
	int status;
	cJSON *doc;          /* owned; NULL for an event stream */
	char *sse_execution; /* an event stream of this execution, from sse_after */
	char *upgrade_pair;  /* switch the connection to a paired machine's link for this computer */
	char *sse_token;     /* the stream's token id: the stream ends when it is revoked */
	int64_t sse_after;
};
void rk_api_response_release(struct rk_api_response *r);

/* Answers one request. eng->owner is set to the caller for its duration. */
void rk_api_handle(struct rk_engine *eng, const struct rk_api_request *req, struct rk_api_response *out);

/* The transport's check on the headers alone, before it reads any body:
 * 1 when the request may go on, its route needing no token (tok->id NULL)
 * or carrying a live one (*tok, the caller's to release; hand it to
 * rk_api_handle as req->admitted); 0 with the answer (404, 405, 401, or
 * 503 when the tokens cannot be read) in *out. */
int rk_api_admit(struct rk_engine *eng, const struct rk_api_request *req, struct rk_api_token *tok,
		 struct rk_api_response *out);

/* The next piece of an execution's event stream as server-sent events:
 * waits up to wait_ms for events after *after, appends them ("id: N",
 * "event: TYPE", "data: JSON") and moves *after on. *done is set once the
 * execution has settled and every event is out. Nothing is appended when
 * nothing happened. */
int rk_api_sse_next(struct rk_engine *eng, const char *execution_id, int64_t *after, int64_t wait_ms, int *done,
		    struct rk_buf *out, struct rk_error *err);

/* The route table (method, OpenAPI-style path), for `rakazo serve routes`
 * and the test that holds it equal to api/openapi.json. */
struct rk_api_route_info {
	const char *method, *path;
	int auth;  /* 0: no token needed */
	int forks; /* may start a helper process (the worker, a session or display holder) */
};
size_t rk_api_route_count(void);
/* 1 when the request's route may fork a helper. A helper forked (without
 * exec) from a process with other threads inherits their SQLite connections'
 * state half-copied, so such requests must run in a single-threaded process:
 * the transport hands them to one (cmd/serve.c). */
int rk_api_route_forks(const char *method, const char *path);
const struct rk_api_route_info *rk_api_route(size_t i);

#endif
