/* The screen gateway's WebSocket side (libwebsockets): each connection
 * presents ?token=..., is authorized before the upgrade (401/403 with no
 * upgrade otherwise) and again once established, and is then joined to
 * its capability's forwarder socket; bytes go both ways as binary frames.
 * What may reach the desktop is the forwarder's business (gateway.c).
 * Between its services the loop sweeps the capabilities whose maker lost
 * the right (rk_gateway_sweep), which drops their clients. */

#include "engine/gateway/gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "engine/gateway/ws_buf.h"

#define TOKEN_MAX 128

struct server {
	struct rk_engine *eng;
	struct lws_vhost *vh;
};

/* One browser connection (the "binary" protocol's session data). */
struct conn {
	struct lws *wsi;
	struct lws *raw;      /* the forwarder connection, or NULL */
	struct rk_buf to_ws;  /* LWS_PRE headroom, then forwarder bytes for the browser */
	struct rk_buf to_raw; /* LWS_PRE headroom, then browser bytes for the forwarder */
	size_t sent;	      /* bytes of to_ws already sent */
	int closing;
	int inited;
};

static void conn_init(struct conn *c, struct lws *wsi)
{
	memset(c, 0, sizeof(*c));
	c->wsi = wsi;
	rk_buf_init(&c->to_ws);
	rk_buf_init(&c->to_raw);
	c->inited = 1;
}

static struct server *server_of(struct lws *wsi)
{
	return lws_context_user(lws_get_context(wsi));
}

static int token_of(struct lws *wsi, char *buf, int len)
{
	const char *v = lws_get_urlarg_by_name(wsi, "token=", buf, len);
	if (!v)
		return -1;
	/* lws leaves "token=" in front of the value in buf */
	if (v != buf)
		memmove(buf, v, strlen(v) + 1);
	return 0;
}

static int refuse(struct lws *wsi, int status, const char *msg)
{
	rk_log(RK_LOG_INFO, "gateway: refused a connection (%d): %s", status, msg);
	if (lws_return_http_status(wsi, (unsigned)status, msg))
		return -1;
	return 1;
}

static int authorize(struct lws *wsi, struct rk_gateway_cap *cap, struct rk_error *err)
{
	char tok[TOKEN_MAX];
	if (token_of(wsi, tok, sizeof(tok)) != 0)
		return rk_error_set(err, RK_EDENIED, "no screen token given: connect to /websockify?token=TOKEN");
	int r = rk_gateway_authorize(server_of(wsi)->eng, tok, cap, err);
	memset(tok, 0, sizeof(tok));
	return r;
}

static int on_established(struct lws *wsi, struct conn *c)
{
	struct server *s = server_of(wsi);
	struct rk_gateway_cap cap;
	struct rk_error err;
	if (authorize(wsi, &cap, &err) != 0) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)err.message,
				 strlen(err.message) > 120 ? 120 : strlen(err.message));
		return -1;
	}
	int fd = rk_gateway_connect(&cap, &err);
	if (fd < 0) {
		rk_gateway_cap_release(&cap);
		return -1;
	}
	lws_adopt_desc_t d = {.vh = s->vh,
			      .type = LWS_ADOPT_SOCKET,
			      .vh_prot_name = "rk-forwarder",
			      .parent = wsi,
			      .opaque = c};
	d.fd.sockfd = fd;
	c->raw = lws_adopt_descriptor_vhost_via_info(&d);
	rk_log(RK_LOG_INFO, "gateway: %s connection on capability %s", rk_gateway_policy_name(cap.policy), cap.id);
	rk_gateway_cap_release(&cap);
	return c->raw ? 0 : -1; /* a failed adopt closed fd */
}

static int cb_browser(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct conn *c = user;
	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
		struct rk_gateway_cap cap;
		struct rk_error err;
		if (authorize(wsi, &cap, &err) != 0)
			return refuse(wsi, rk_gateway_http_status(err.code), err.message);
		rk_gateway_cap_release(&cap);
		return 0;
	}
	case LWS_CALLBACK_HTTP:
		/* not an upgrade (files, when served, are the mount's) */
		if (lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
					   "the screen gateway speaks WebSocket: connect to /websockify?token=TOKEN"))
			return -1;
		return lws_http_transaction_completed(wsi) ? -1 : 0;
	case LWS_CALLBACK_ESTABLISHED:
		conn_init(c, wsi);
		return on_established(wsi, c);
	case LWS_CALLBACK_RECEIVE:
		if (!c->raw)
			return -1;
		rk_ws_buf_queue(&c->to_raw, in, len, wsi, c->raw);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE: {
		int sr = rk_ws_buf_send(wsi, &c->to_ws, &c->sent);
		if (sr < 0)
			return -1;
		if (sr > 0)
			return 0;
		if (c->raw)
			lws_rx_flow_control(c->raw, 1);
		if (c->closing) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)"screen closed", 13);
			return -1;
		}
		return 0;
	}
	case LWS_CALLBACK_CLOSED:
		if (c && c->inited) {
			if (c->raw) {
				lws_set_opaque_user_data(c->raw, NULL);
				lws_set_timeout(c->raw, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
				c->raw = NULL;
			}
			rk_buf_release(&c->to_ws);
			rk_buf_release(&c->to_raw);
			c->inited = 0;
		}
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static int cb_forwarder(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct conn *c = lws_get_opaque_user_data(wsi);
	switch (reason) {
	case LWS_CALLBACK_RAW_RX:
		if (!c)
			return -1;
		/* read on while the browser side keeps up; pause past a bound */
		rk_ws_buf_queue(&c->to_ws, in, len, wsi, c->wsi);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (!c)
			return -1;
		switch (rk_ws_buf_send_raw(wsi, &c->to_raw)) {
		case -1:
			return -1;
		case 1:
			lws_rx_flow_control(c->wsi, 1);
		}
		return 0;
	case LWS_CALLBACK_RAW_CLOSE:
		if (c) {
			/* the forwarder ended (revoked, expired, slot gone): the
			 * browser goes too, after what was already read */
			c->raw = NULL;
			c->closing = 1;
			lws_callback_on_writable(c->wsi);
		}
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols protocols[] = {
	/* noVNC asks for "binary" or no sub-protocol; either lands here */
	{"binary", cb_browser, sizeof(struct conn), 65536, 0, NULL, 0},
	{"rk-forwarder", cb_forwarder, 0, 262144, 0, NULL, 0},
	{NULL, NULL, 0, 0, 0, NULL, 0},
};

static void lws_to_log(int level, const char *line)
{
	rk_log(level & LLL_ERR ? RK_LOG_ERROR : RK_LOG_INFO, "gateway: lws: %.*s", (int)strcspn(line, "\n"), line);
}

/* Tries the address first, so a taken port or a foreign address is a
 * clear error (lws only says it failed, and leaks on the way). */
static int probe_listen(const struct sockaddr_in *sa, const char *host, int port, struct rk_error *err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rk_error_errno(err, RK_EUNAVAILABLE, errno, "cannot make a socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int e = errno;
	close(fd);
	if (r != 0)
		return rk_error_errno(err, RK_EUNAVAILABLE, e, "the screen gateway cannot listen on %s:%d", host, port);
	return 0;
}

int rk_gateway_serve(struct rk_engine *eng, const struct rk_gateway_server_options *opt, struct rk_error *err)
{
	struct sockaddr_in sa;
	int loopback;
	int r = rk_listen_parse(opt->listen ? opt->listen : RK_GATEWAY_DEFAULT_LISTEN, "the screen gateway",
				opt->public_ok, &sa, &loopback, err);
	if (r)
		return r;
	char host[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	int port = ntohs(sa.sin_port);
	if ((r = probe_listen(&sa, host, port, err)))
		return r;
	lws_set_log_level(LLL_ERR | LLL_WARN, lws_to_log);
	struct server s = {.eng = eng};
	struct lws_http_mount mount = {
		.mountpoint = "/",
		.mountpoint_len = 1,
		.origin = opt->web_dir,
		.def = "vnc.html",
		.origin_protocol = LWSMPRO_FILE,
	};
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.port = port;
	info.iface = host;
	info.protocols = protocols;
	info.user = &s;
	info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;
	info.mounts = opt->web_dir ? &mount : NULL;
	info.vhost_name = "rakazo-gateway";
	struct lws_context *ctx = lws_create_context(&info);
	if (!ctx)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "the screen gateway cannot listen on %s:%d (in use, or not an address of this "
				    "machine)",
				    host, port);
	s.vh = lws_get_vhost_by_name(ctx, "rakazo-gateway");
	int bound = s.vh ? lws_get_vhost_listen_port(s.vh) : -1;
	if (!s.vh || bound <= 0) {
		lws_context_destroy(ctx);
		return rk_error_set(err, RK_EUNAVAILABLE, "the screen gateway cannot listen on %s:%d", host, port);
	}
	char addr[160];
	snprintf(addr, sizeof(addr), "%s:%d", host, bound);
	char *dir = rk_xasprintf("%s/run/gateway", eng->data_dir);
	char *apath = rk_xasprintf("%s/address", dir);
	char *line = rk_xasprintf("%s\n", addr);
	struct rk_error e2;
	if (rk_fs_mkdirs(dir, 0700, &e2) == 0)
		rk_fs_write_atomic(apath, line, strlen(line), 0600, &e2);
	rk_log(RK_LOG_INFO, "gateway: listening on %s", addr);
	if (opt->on_listening)
		opt->on_listening(addr, opt->arg);
	int64_t next_sweep = 0;
	int sweep_failing = 0;
	while (!opt->stop || !*opt->stop) {
		if (lws_service(ctx, 250) < 0)
			break;
		if (rk_monotonic_ms() < next_sweep)
			continue;
		/* capabilities whose maker lost the right end here, and so do
		 * their clients (told once per spell of failures) */
		int n;
		if (rk_gateway_sweep(eng, &n, &e2) != 0) {
			if (!sweep_failing)
				rk_log(RK_LOG_WARN, "gateway: cannot check the makers of capabilities: %s", e2.message);
			sweep_failing = 1;
		} else {
			sweep_failing = 0;
		}
		next_sweep = rk_monotonic_ms() + RK_GATEWAY_SWEEP_MS;
	}
	lws_context_destroy(ctx);
	/* the address file goes only if it is still this gateway's */
	struct rk_buf b;
	rk_buf_init(&b);
	if (rk_fs_read_all(apath, 256, &b, &e2) == 0 && b.len == strlen(line) && !memcmp(b.data, line, b.len))
		unlink(apath);
	rk_buf_release(&b);
	free(line);
	free(apath);
	free(dir);
	return 0;
}
