/* The screen gateway's WebSocket upstreams (see gateway_upstream.h):
 * libwebsockets' client side, bridged to a socket pair so the forwarder's
 * relay reads and writes it as it does a VNC socket. */

#include "engine/gateway/gateway_upstream.h"

#include <errno.h>
#include <libwebsockets.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/util/buf.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "engine/gateway/ws_buf.h"

/* --- addresses ------------------------------------------------------------------- */

struct url_parts {
	char *scheme; /* lowercase */
	char *host;   /* without brackets */
	int port;     /* 0: none given */
	char *path;   /* from the first '/', without query; "/" when none */
	char *query;  /* without '?', or NULL */
};

static void url_parts_release(struct url_parts *u)
{
	free(u->scheme);
	free(u->host);
	free(u->path);
	rk_free_secret(&u->query);
	memset(u, 0, sizeof(*u));
}

/* Splits scheme://[user@]host[:port][/path][?query][#fragment]. */
static int url_split(const char *url, struct url_parts *u)
{
	memset(u, 0, sizeof(*u));
	const char *sep = url ? strstr(url, "://") : NULL;
	if (!sep || sep == url)
		return -1;
	u->scheme = rk_xstrndup(url, (size_t)(sep - url));
	for (char *p = u->scheme; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	const char *a = sep + 3;
	size_t alen = strcspn(a, "/?#");
	const char *at = memchr(a, '@', alen);
	if (at) { /* credentials in the address are never carried on */
		alen -= (size_t)(at + 1 - a);
		a = at + 1;
	}
	const char *hend;
	if (*a == '[') {
		hend = memchr(a, ']', alen);
		if (!hend)
			goto bad;
		u->host = rk_xstrndup(a + 1, (size_t)(hend - a - 1));
		hend++;
	} else {
		hend = memchr(a, ':', alen);
		if (!hend)
			hend = a + alen;
		u->host = rk_xstrndup(a, (size_t)(hend - a));
	}
	if (!*u->host)
		goto bad;
	if (hend < a + alen) {
		if (*hend != ':')
			goto bad;
		char *end = NULL;
		long port = strtol(hend + 1, &end, 10);
		if (end != a + alen || port < 1 || port > 65535)
			goto bad;
		u->port = (int)port;
	}
	const char *rest = a + alen;
	size_t plen = strcspn(rest, "?#");
	u->path = plen && *rest == '/' ? rk_xstrndup(rest, plen) : rk_xstrdup("/");
	if (rest[plen] == '?') {
		const char *q = rest + plen + 1;
		u->query = rk_xstrndup(q, strcspn(q, "#"));
	}
	return 0;
bad:
	url_parts_release(u);
	return -1;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* The value of name in a query string, percent-decoded (malloc'd), or NULL. */
static char *query_value(const char *query, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = query; p && *p;) {
		size_t len = strcspn(p, "&");
		if (len > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			struct rk_buf b;
			rk_buf_init(&b);
			for (size_t i = nl + 1; i < len; i++) {
				if (p[i] == '%' && i + 2 < len && hexval(p[i + 1]) >= 0 && hexval(p[i + 2]) >= 0) {
					rk_buf_addc(&b, (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2])));
					i += 2;
				} else {
					rk_buf_addc(&b, p[i] == '+' ? ' ' : p[i]);
				}
			}
			return rk_buf_detach(&b, NULL);
		}
		p += len;
		if (*p == '&')
			p++;
	}
	return NULL;
}

static char *authority(const struct url_parts *u)
{
	int v6 = strchr(u->host, ':') != NULL;
	if (u->port)
		return rk_xasprintf("%s%s%s:%d", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
	return rk_xasprintf("%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "");
}

char *rk_upstream_from_novnc(const char *page_url, struct rk_error *err)
{
	struct url_parts u;
	if (url_split(page_url, &u) != 0 || (strcmp(u.scheme, "http") && strcmp(u.scheme, "https"))) {
		if (u.scheme)
			url_parts_release(&u);
		rk_error_set(err, RK_EINVALID, "the desktop's noVNC address is not an http(s) URL");
		return NULL;
	}
	char *path = query_value(u.query, "path");
	if (!path)
		path = rk_xstrdup(RK_NOVNC_WEBSOCKIFY_PATH);
	char *auth = authority(&u);
	const char *slash = *path == '/' ? "" : "/";
	int with_query = u.query && *u.query && !strchr(path, '?');
	char *ws = rk_xasprintf("%s://%s%s%s%s%s", strcmp(u.scheme, "https") ? "ws" : "wss", auth, slash, path,
				with_query ? "?" : "", with_query ? u.query : "");
	rk_free_secret(&path);
	free(auth);
	url_parts_release(&u);
	return ws;
}

char *rk_upstream_public(const char *ws_url)
{
	return rk_xstrndup(ws_url, strcspn(ws_url, "?#"));
}

int rk_upstream_of(struct rk_engine *eng, struct rk_computer *c, int display, char **ws_url, struct rk_error *err)
{
	*ws_url = NULL;
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	char *page = NULL;
	if (!mc.ops->display_novnc)
		r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' serves no noVNC page of its own", c->kind);
	else
		r = rk_machine_display_novnc(&mc, display, &page, err);
	rk_machine_ctx_release(&mc);
	if (r)
		return r;
	*ws_url = rk_upstream_from_novnc(page, err);
	rk_free_secret(&page);
	return *ws_url ? 0 : -rk_err(err)->code;
}

/* --- the bridge ------------------------------------------------------------------- */

enum { UP_CONNECTING, UP_OPEN, UP_FAILED };

struct rk_upstream {
	int fd;	       /* the caller's end of the socket pair */
	int bridge_fd; /* ours, until lws adopts it */
	struct lws_context *ctx;
	struct lws *ws;	      /* the upstream WebSocket */
	struct lws *raw;      /* our end, once adopted */
	struct rk_buf to_ws;  /* LWS_PRE, then the caller's bytes for upstream */
	struct rk_buf to_raw; /* LWS_PRE, then upstream payloads for the caller */
	size_t sent;	      /* bytes of to_ws already sent */
	int state;
	int close_ws, close_raw; /* the other side ended: close once what it sent is passed */
	unsigned http_status;
	char why[128];
	lws_sorted_usec_list_t deadline; /* wakes the connect loop when its time is up */
	int timed_out;
	atomic_int stop;
	pthread_t thread;
	int threaded;
};

static int cb_upstream(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct rk_upstream *u = lws_context_user(lws_get_context(wsi));
	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		u->http_status = lws_http_client_http_response(wsi);
		/* lws says what failed in a fixed phrase; cut any address after '?' */
		snprintf(u->why, sizeof(u->why), "%.*s", in ? (int)strcspn(in, "?") : 0, in ? (const char *)in : "");
		u->state = UP_FAILED;
		u->ws = NULL;
		return 0;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		u->state = UP_OPEN;
		return 0;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		rk_ws_buf_queue(&u->to_raw, in, len, wsi, u->raw);
		return 0;
	case LWS_CALLBACK_CLIENT_WRITEABLE: {
		int r = rk_ws_buf_send(wsi, &u->to_ws, &u->sent);
		if (r < 0)
			return -1;
		if (r > 0)
			return 0; /* more to send: lws calls again */
		if (u->raw)
			lws_rx_flow_control(u->raw, 1);
		if (u->close_ws) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"", 0);
			return -1;
		}
		return 0;
	}
	case LWS_CALLBACK_CLIENT_CLOSED:
		u->ws = NULL;
		if (u->state == UP_CONNECTING) {
			u->state = UP_FAILED;
			snprintf(u->why, sizeof(u->why), "closed before the upgrade");
		}
		if (u->raw) { /* the caller reads the end after what came */
			u->close_raw = 1;
			lws_callback_on_writable(u->raw);
		}
		return 0;
	case LWS_CALLBACK_RAW_RX:
		rk_ws_buf_queue(&u->to_ws, in, len, wsi, u->ws);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE: {
		int sr = rk_ws_buf_send_raw(wsi, &u->to_raw);
		if (sr < 0)
			return -1;
		if (sr > 0 && u->ws)
			lws_rx_flow_control(u->ws, 1);
		return u->close_raw ? -1 : 0;
	}
	case LWS_CALLBACK_RAW_CLOSE:
		u->raw = NULL;
		if (u->ws) {
			u->close_ws = 1;
			lws_callback_on_writable(u->ws);
		}
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols up_protocols[] = {
	/* the WebSocket sub-protocol websockify and noVNC agree on */
	{"binary", cb_upstream, 0, 65536, 0, NULL, 0},
	{"rk-upstream-raw", cb_upstream, 0, 262144, 0, NULL, 0},
	{NULL, NULL, 0, 0, 0, NULL, 0},
};

/* lws's own complaints, for the log; never past a '?' (an address's query). */
static void lws_to_log(int level, const char *line)
{
	rk_log(level & LLL_ERR ? RK_LOG_ERROR : RK_LOG_WARN, "gateway: upstream: lws: %.*s", (int)strcspn(line, "?\n"),
	       line);
}

static void on_deadline(lws_sorted_usec_list_t *sul)
{
	struct rk_upstream *u = lws_container_of(sul, struct rk_upstream, deadline);
	u->timed_out = 1;
	lws_cancel_service(u->ctx); /* the timer runs inside a wait: end it now */
}

static void *bridge_main(void *arg)
{
	struct rk_upstream *u = arg;
	while (!atomic_load(&u->stop) && (u->ws || u->raw))
		if (lws_service(u->ctx, 250) < 0)
			break;
	return NULL;
}

static int open_failed(struct rk_upstream *u, const char *pub, int timed_out, int timeout_ms, struct rk_error *err)
{
	if (timed_out)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "the desktop's websockify endpoint %s did not answer within %d s: is the desktop "
				    "running?",
				    pub, timeout_ms / 1000);
	if (u->http_status == 401 || u->http_status == 403)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "the desktop's websockify endpoint %s refused its secret (HTTP %u): the desktop was "
				    "restarted or its address changed; share the screen again",
				    pub, u->http_status);
	if (u->http_status && u->http_status != 101)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "the desktop's websockify endpoint %s answered HTTP %u, not a WebSocket: is the "
				    "desktop running?",
				    pub, u->http_status);
	return rk_error_set(err, RK_EUNAVAILABLE,
			    "cannot reach the desktop's websockify endpoint %s (%s): is the "
			    "desktop running?",
			    pub, *u->why ? u->why : "connection failed");
}

int rk_upstream_open(const char *ws_url, int timeout_ms, struct rk_upstream **out, struct rk_error *err)
{
	*out = NULL;
	struct url_parts p;
	if (url_split(ws_url, &p) != 0 || (strcmp(p.scheme, "ws") && strcmp(p.scheme, "wss"))) {
		if (p.scheme)
			url_parts_release(&p);
		return rk_error_set(err, RK_EINVALID, "a desktop's websockify address is a ws:// or wss:// URL");
	}
	int tls = !strcmp(p.scheme, "wss");
	char *pub = rk_upstream_public(ws_url);
	char *auth = authority(&p);
	char *origin = rk_xasprintf("%s://%s", tls ? "https" : "http", auth);
	char *path = rk_xasprintf("%s%s%s", p.path, p.query ? "?" : "", p.query ? p.query : "");
	struct rk_upstream *u = rk_xcalloc(1, sizeof(*u));
	u->fd = u->bridge_fd = -1;
	rk_buf_init(&u->to_ws);
	rk_buf_init(&u->to_raw);
	int r = 0, sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot make a socket pair");
		goto out;
	}
	u->fd = sv[0];
	u->bridge_fd = sv[1];
	lws_set_log_level(LLL_ERR | LLL_WARN, lws_to_log);
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = up_protocols;
	info.user = u;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.options = tls ? LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT : 0;
	u->ctx = lws_create_context(&info);
	if (!u->ctx) {
		r = rk_error_set(err, RK_EUNAVAILABLE, "cannot start a WebSocket client for %s", pub);
		goto out;
	}
	struct lws_client_connect_info ci;
	memset(&ci, 0, sizeof(ci));
	ci.context = u->ctx;
	ci.address = p.host;
	ci.port = p.port ? p.port : tls ? 443 : 80;
	ci.path = path;
	ci.host = auth;
	ci.origin = origin;
	ci.protocol = "binary";
	ci.local_protocol_name = "binary";
	ci.ssl_connection = tls ? LCCSCF_USE_SSL : 0;
	struct lws *ws = lws_client_connect_via_info(&ci);
	if (u->state == UP_CONNECTING)
		u->ws = ws;
	/* lws_service waits for the next event of its own (its timeout
	 * argument is ignored): a timer of ours is one */
	lws_sul_schedule(u->ctx, 0, &u->deadline, on_deadline, (lws_usec_t)timeout_ms * 1000);
	while (u->state == UP_CONNECTING && u->ws && !u->timed_out)
		lws_service(u->ctx, 0);
	lws_sul_cancel(&u->deadline);
	if (u->state != UP_OPEN) {
		r = open_failed(u, pub, u->state == UP_CONNECTING && u->ws, timeout_ms, err);
		goto out;
	}
	lws_sock_file_fd_type fd;
	fd.sockfd = u->bridge_fd;
	u->bridge_fd = -1; /* lws owns it now, and closes it even when adopting fails */
	u->raw = lws_adopt_descriptor_vhost(lws_get_vhost(u->ws), LWS_ADOPT_SOCKET, fd, "rk-upstream-raw", NULL);
	if (!u->raw) {
		r = rk_error_set(err, RK_EUNAVAILABLE, "cannot bridge the desktop's websockify endpoint %s", pub);
		goto out;
	}
	if (rk_ws_buf_len(&u->to_raw))
		lws_callback_on_writable(u->raw);
	if (pthread_create(&u->thread, NULL, bridge_main, u) != 0) {
		r = rk_error_set(err, RK_EUNAVAILABLE, "cannot start the bridge to %s", pub);
		goto out;
	}
	u->threaded = 1;
out:
	rk_free_secret(&path);
	free(origin);
	free(auth);
	free(pub);
	url_parts_release(&p);
	if (r) {
		rk_upstream_free(u);
		return r;
	}
	*out = u;
	return 0;
}

int rk_upstream_fd(const struct rk_upstream *u)
{
	return u->fd;
}

void rk_upstream_free(struct rk_upstream *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->threaded) {
		atomic_store(&u->stop, 1);
		lws_cancel_service(u->ctx);
		pthread_join(u->thread, NULL);
	}
	if (u->ctx)
		lws_context_destroy(u->ctx);
	if (u->bridge_fd >= 0)
		close(u->bridge_fd);
	rk_buf_release(&u->to_ws);
	rk_buf_release(&u->to_raw);
	free(u);
}

int rk_upstream_probe(const char *ws_url, int timeout_ms, struct rk_error *err)
{
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	struct rk_upstream *u = NULL;
	int r = rk_upstream_open(ws_url, timeout_ms, &u, err);
	if (r)
		return r;
	char v[12];
	size_t got = 0;
	while (got < sizeof(v)) {
		int64_t left = deadline - rk_monotonic_ms();
		struct pollfd pf = {.fd = u->fd, .events = POLLIN};
		int pr = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		ssize_t n = pr > 0 ? read(u->fd, v + got, sizeof(v) - got) : -1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(v) || memcmp(v, "RFB ", 4) != 0) {
		char *pub = rk_upstream_public(ws_url);
		r = rk_error_set(err, RK_EUNAVAILABLE,
				 got < sizeof(v) ? "the desktop's websockify endpoint %s let us in but no VNC server "
						   "spoke: is the desktop running?"
						 : "the desktop's websockify endpoint %s does not speak RFB (VNC)",
				 pub);
		free(pub);
	}
	rk_upstream_free(u);
	return r;
}
