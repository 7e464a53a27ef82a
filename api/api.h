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

#include "engine/gateway/port.h"
#include "engine/state/db.h"
#include "engine/state/db_api.h"
#include "engine/state/engine.h"
#include "providers/provider.h"
#include "engine/util/buf.h"

#define RK_API_BODY_MAX (24u * 1024 * 1024) /* a 16 MiB file as base64, with room */

/* The server's end of a paired machine's connection (api/pair.c):
 * serves the paired provider's calls for computer_id over fd until the
 * connection breaks or a newer one replaces it, then closes fd. Blocks. */
void rk_api_pair_link(const char *data_dir, const char *computer_id, int fd, const char *extra, size_t extra_len);

/* --- requests (api/api.c) ---------------------------------------------------------- */
struct rk_api_request {
	const char *method;
	const char *path; /* "/v1/computers/cmp_.../files", no query */
	/* A query parameter, or NULL when absent. */
	const char *(*query)(void *ctx, const char *key);
	void *query_ctx;
	const char *authorization; /* the Authorization header, or NULL */
	const char *last_event_id; /* the Last-Event-ID header, or NULL */
	const char *upgrade;	   /* the Upgrade header, or NULL */
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
	/* POST /mcp (api/mcp.h): the Streamable HTTP transport's headers, or NULL */
	const char *mcp_version; /* MCP-Protocol-Version */
	const char *mcp_method;	 /* Mcp-Method */
	const char *mcp_name;	 /* Mcp-Name */
	const char *origin;	 /* Origin */
	const char *host;	 /* Host */
};

struct rk_api_response {
	int status;
	cJSON *doc;	     /* owned; NULL for an event stream */
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
