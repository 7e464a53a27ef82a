#ifndef RK_MCP_H
#define RK_MCP_H
/* The Model Context Protocol server, without the transport: one JSON-RPC
 * message goes in, at most one reply comes out. `rakazo mcp` (cmd/mcp.c)
 * feeds it the lines of stdin; `rakazo serve` feeds it the bodies POSTed to
 * /mcp. Both protocol eras are served by the same table:
 *
 *   legacy   `initialize` (2025-11-25, 2025-06-18, 2025-03-26) opens a
 *            session; later requests carry no version of their own
 *   modern   2026-07-28: no handshake; every request carries _meta with
 *            io.modelcontextprotocol/protocolVersion and clientCapabilities,
 *            every result a resultType; server/discover names the versions
 *
 * Errors are the spec's: -32700 for a line that is not JSON, -32600 for
 * what is not a request (or is too large), -32601 for an unknown method,
 * -32602 for bad params and unknown tools, -32022 for a protocol version
 * this server does not speak. A tool's own failure (a bad argument, a
 * denied right, a provider error) is a result with isError set, and nothing
 * runs for an argument that does not fit the tool's inputSchema.
 *
 * Every tool acts as the caller (engine/access/actor.h: the environment's
 * user or bot on stdio, the token's bot over HTTP), through the one
 * resolver and the approval rules the CLI and the agent's tools use
 * (engine/access/authz.h, approval.h); a call that needs a person's approval
 * is refused with how to give it. State spanning calls is a handle passed
 * as an argument (a computer's name or id), never the connection's. */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/engine.h"
#include "engine/util/buf.h"

#define RK_MCP_MESSAGE_MAX (24u * 1024 * 1024) /* a 16 MiB file as base64, with room */
#define RK_MCP_IMAGE_BYTES_DEFAULT (1024 * 1024)
#define RK_MCP_IMAGE_EDGE_DEFAULT 2000

/* JSON-RPC and MCP error codes */
#define RK_MCP_PARSE_ERROR (-32700)
#define RK_MCP_INVALID_REQUEST (-32600)
#define RK_MCP_METHOD_NOT_FOUND (-32601)
#define RK_MCP_INVALID_PARAMS (-32602)
#define RK_MCP_INTERNAL_ERROR (-32603)
#define RK_MCP_UNSUPPORTED_VERSION (-32022)

struct rk_mcp_options {
	const char *transport; /* "stdio" or "http", for the log */
	/* Over HTTP: the token's bot (NULL: the server's member acts), and the
	 * providers the server offers (NULL-terminated; NULL: all of them). */
	const char *bot_id;
	const char *const *providers;
	size_t max_image_bytes; /* 0: RK_MCP_IMAGE_BYTES_DEFAULT */
	int max_image_edge;	/* 0: RK_MCP_IMAGE_EDGE_DEFAULT */
	/* Over HTTP, the request's MCP-Protocol-Version, Mcp-Method and
	 * Mcp-Name headers, or NULL: a 2026-07-28 request must carry the first
	 * two (and Mcp-Name for tools/call), equal to its body's (-32020). */
	const char *header_version, *header_method, *header_name;
};

struct rk_mcp;
/* A server over eng (borrowed; it must outlive the server). Strings in opt
 * are borrowed too. */
struct rk_mcp *rk_mcp_new(struct rk_engine *eng, const struct rk_mcp_options *opt);
void rk_mcp_free(struct rk_mcp *m);

/* What rk_mcp_handle found. */
struct rk_mcp_reply {
	int replied;	/* out holds one JSON-RPC response (no newline) */
	int error_code; /* the JSON-RPC error of that response, 0 for a result */
	int was_request;
	int modern;	/* it was a 2026-07-28 request */
	int meta_error; /* refused for its _meta or headers, before its method */
	/* The Streamable HTTP status for it: 200 for a response, 202 for none,
	 * 400 for a message that is not one or breaks the 2026-07-28 rules
	 * (_meta, the version, the headers), 404 for a 2026-07-28 request of an
	 * unknown method. */
	int http_status;
};

/* Handles one message of len bytes (a line without its newline, a body).
 * Appends the response to out when there is one (a notification or a
 * client's response gets none). */
void rk_mcp_handle(struct rk_mcp *m, const char *msg, size_t len, struct rk_buf *out, struct rk_mcp_reply *rep);

/* The error response for a message the transport refused before reading it
 * whole (RK_MCP_INVALID_REQUEST, id null). */
void rk_mcp_error_response(struct rk_buf *out, int code, const char *message);

/* The protocol versions served, newest first, NULL-terminated. */
extern const char *const rk_mcp_versions[];
/* 1 when v is one of them. */
int rk_mcp_version_known(const char *v);

/* The tools' names, in tools/list order, NULL-terminated (for the man
 * page's test). */
const char *rk_mcp_tool_name(size_t i);

#endif
