/* rakazo mcp: the MCP server over stdio (api/mcp.h), the form an agent host
 * starts as a subprocess. One JSON-RPC message a line in, one a line out;
 * stdout carries nothing else, the log goes to stderr. Ends at end of input. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/mcp.h"
#include "engine/util/fs.h"
#include "cmd.h"
#include "out.h"

static int64_t o_image_bytes = RK_MCP_IMAGE_BYTES_DEFAULT, o_image_edge = RK_MCP_IMAGE_EDGE_DEFAULT;

static const struct rk_opt mcp_opts[] = {
	OPT_INT("max-image-bytes", 0, &o_image_bytes, "BYTES", "largest screenshot in a result (default 1048576)", 1024,
		64 * 1024 * 1024),
	OPT_INT("max-image-edge", 0, &o_image_edge, "PX", "longest screenshot edge in a result (default 2000)", 64,
		8192),
	OPT_END,
};

static int run_mcp(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)))
		return r;
	signal(SIGPIPE, SIG_IGN); /* a host that went away ends us through write's error */
	struct rk_mcp_options opt = {.transport = "stdio",
				     .max_image_bytes = (size_t)o_image_bytes,
				     .max_image_edge = (int)o_image_edge};
	struct rk_mcp *m = rk_mcp_new(ctx->eng, &opt);
	struct rk_buf in, out;
	rk_buf_init(&in);
	rk_buf_init(&out);
	int skipping = 0, eof = 0; /* skipping: the rest of a line past the limit */
	while (!eof) {
		rk_buf_grow(&in, 65536);
		ssize_t n = read(0, in.data + in.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			eof = 1;
			if (in.len == 0 || skipping)
				break;
			rk_buf_addc(&in, '\n'); /* the last line without its newline */
		} else {
			in.len += (size_t)n;
			in.data[in.len] = 0;
		}
		size_t start = 0;
		for (;;) {
			char *nl = memchr(in.data + start, '\n', in.len - start);
			if (!nl)
				break;
			size_t len = (size_t)(nl - (in.data + start));
			const char *line = in.data + start;
			start += len + 1;
			if (skipping) {
				skipping = 0;
				continue;
			}
			if (len && line[len - 1] == '\r')
				len--;
			if (len == 0)
				continue;
			struct rk_mcp_reply rep;
			rk_buf_reset(&out);
			rk_mcp_handle(m, line, len, &out, &rep);
			if (rep.replied) {
				rk_buf_addc(&out, '\n');
				if (rk_fs_write_fd(1, out.data, out.len)) {
					eof = 1;
					break;
				}
			}
		}
		if (skipping)
			rk_buf_reset(&in); /* still inside the line that was too large */
		else
			rk_buf_consume(&in, start);
		if (!skipping && in.len > RK_MCP_MESSAGE_MAX) {
			/* answered now, and the rest of the line is dropped unread */
			rk_buf_reset(&out);
			char *msg = rk_xasprintf("message too large: over %u bytes", RK_MCP_MESSAGE_MAX);
			rk_mcp_error_response(&out, RK_MCP_INVALID_REQUEST, msg);
			free(msg);
			rk_buf_addc(&out, '\n');
			if (rk_fs_write_fd(1, out.data, out.len))
				break;
			rk_buf_reset(&in);
			skipping = 1;
		}
	}
	rk_buf_release(&in);
	rk_buf_release(&out);
	rk_mcp_free(m);
	return 0;
}

const struct cmd_entry cmd_mcp = {
	.name = "mcp",
	.args = "[--max-image-bytes BYTES] [--max-image-edge PX]",
	.summary = "serve the computers to an agent host over MCP (stdio)",
	.description = "Speaks the Model Context Protocol on stdin and stdout, one JSON-RPC message a line:\n"
		       "the 2026-07-28 revision (no handshake) and initialize with 2025-11-25 or 2025-06-18.\n"
		       "Add it to a host with `claude mcp add rakazo -- rakazo mcp`. See rakazo-mcp(1).",
	.opts = mcp_opts,
	.run = run_mcp,
};
