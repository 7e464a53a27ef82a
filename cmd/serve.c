/* rakazo serve: the Computers HTTP API on libmicrohttpd (the routes are in
 * api/api.c), and its tokens.
 *
 *   rakazo serve [--listen 127.0.0.1:PORT] [--providers LIST] [--token-file F] [--url-file F]
 *   rakazo serve token create NAME [--bot BOT] | token list | token revoke ID|NAME
 *   rakazo serve routes
 *
 * One thread per connection (a session call may wait up to 30 s, an event
 * stream for as long as its command runs), each with its own engine and so
 * its own SQLite connection. The token is checked on the headers, before
 * any body is read; connections that show none get a bounded share of the
 * server (see "strangers" below). One poller thread wakes the event
 * streams (see "event streams"). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "engine/access/token.h"
#include "engine/machine/computer.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "cmd.h"
#include "out.h"

static const char *o_listen = "127.0.0.1:7380", *o_token_file, *o_url_file, *o_bot, *o_providers;
static int o_public;

static const struct rk_opt serve_opts[] = {
	OPT_STRING("listen", 'l', &o_listen, "ADDR:PORT",
		   "where to listen, a loopback address (default 127.0.0.1:7380; port 0 picks one)"),
	OPT_BOOL("public", 0, &o_public,
		 "let --listen be an address other machines reach (plain HTTP: put TLS in front)"),
	OPT_STRING("providers", 0, &o_providers, "LIST",
		   "the providers the API offers, e.g. docker,e2b (default: those available here, never fake)"),
	OPT_STRING("token-file", 0, &o_token_file, "FILE",
		   "a token for clients: made (mode 0600) when FILE is missing, checked when it exists"),
	OPT_STRING("url-file", 0, &o_url_file, "FILE", "write the base URL here once listening"),
	OPT_STRING("bot", 'b', &o_bot, "BOT", "with token create: the token acts as this bot"),
	OPT_END,
};

/* The providers the API offers (choose_providers), NULL-terminated; set
 * before the broker forks, so its children have them too. */
static const char **offered;

/* --- one engine per connection thread --------------------------------------------- */

static pthread_key_t engine_key;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static volatile sig_atomic_t stop_requested;

static void engine_free_cb(void *p)
{
	rk_engine_free(p);
}
static void engine_key_init(void)
{
	pthread_key_create(&engine_key, engine_free_cb);
}

static struct rk_engine *thread_engine(struct rk_error *err)
{
	pthread_once(&engine_once, engine_key_init);
	struct rk_engine *eng = pthread_getspecific(engine_key);
	if (!eng && rk_engine_open(&eng, err) == 0)
		pthread_setspecific(engine_key, eng);
	return eng;
}

/* --- requests ------------------------------------------------------------------------ */

struct req_state {
	struct rk_api_token tok; /* the caller, as the headers showed it */
	struct rk_buf body;
	size_t reserved; /* of the body budget */
	int too_large, busy;
};

/* --- strangers: connections that have shown no token --------------------------------- */
/* The network before authentication gets a bounded share of the server. A
 * connection is a stranger's until it shows a live token (or a paired
 * machine's secret). At most PEER_STRANGERS strangers per peer address are
 * let in; past STRANGERS in all, the oldest is cut to let a new one in (a
 * client with a token shows it at once, so it is never the oldest for
 * long, and the slots past STRANGERS stay for connections with a token).
 * Each is cut HEADERS_MS after it connected (idle, dribbling its headers,
 * or lingering after its answer, which also closes it); no body is read
 * before the token is checked. The bodies of authenticated requests share
 * BODY_BUDGET; MHD keeps the request line and headers within HEADER_BYTES. */
#define SLOTS 512u
#define PEER_SLOTS 256u
#define STRANGERS 256u
#define PEER_STRANGERS 64u
#define HEADERS_MS 10000
#define HEADER_BYTES 32768u
#define STACK_BYTES ((size_t)1 << 20)
#define BODY_BUDGET ((size_t)256 << 20)

struct peer {
	LIST_ENTRY(peer) link;
	int fd;				 /* a dup of the connection's socket: shutdown(2) through it cuts the
		 * connection, and the number cannot be reused under us */
	uint32_t addr;			 /* IPv4, network order */
	char addr_text[INET_ADDRSTRLEN]; /* the same, for the log */
	int64_t since;
	int trusted, cut;
};

static pthread_mutex_t peers_mu = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, peer) peers = LIST_HEAD_INITIALIZER(peers);
static size_t body_used;

static void cut(struct peer *p)
{
	if (p->fd >= 0)
		shutdown(p->fd, SHUT_RDWR);
	p->cut = 1;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	(void)cls;
	if (!addr || len < sizeof(struct sockaddr_in) || addr->sa_family != AF_INET)
		return MHD_NO;
	uint32_t a = ((const struct sockaddr_in *)addr)->sin_addr.s_addr;
	size_t same = 0, live = 0;
	struct peer *oldest = NULL;
	pthread_mutex_lock(&peers_mu);
	struct peer *p;
	LIST_FOREACH(p, &peers, link)
	if (!p->trusted && !p->cut) {
		live++;
		same += p->addr == a;
		if (!oldest || p->since <= oldest->since)
			oldest = p;
	}
	int ok = same < PEER_STRANGERS;
	if (ok && live >= STRANGERS && oldest)
		cut(oldest);
	pthread_mutex_unlock(&peers_mu);
	return ok ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	struct peer *p = *ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		p = rk_xcalloc(1, sizeof(*p));
		p->fd = fi ? fcntl(fi->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET)
			p->addr = ((const struct sockaddr_in *)ai->client_addr)->sin_addr.s_addr;
		inet_ntop(AF_INET, &p->addr, p->addr_text, sizeof(p->addr_text));
		p->since = rk_monotonic_ms();
		pthread_mutex_lock(&peers_mu);
		LIST_INSERT_HEAD(&peers, p, link);
		pthread_mutex_unlock(&peers_mu);
		*ctx = p;
	} else if (p) {
		pthread_mutex_lock(&peers_mu);
		LIST_REMOVE(p, link);
		pthread_mutex_unlock(&peers_mu);
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		*ctx = NULL;
	}
}

static struct peer *peer_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

static void trust(struct MHD_Connection *conn)
{
	struct peer *p = peer_of(conn);
	pthread_mutex_lock(&peers_mu);
	if (p)
		p->trusted = 1;
	pthread_mutex_unlock(&peers_mu);
}

static int trusted(struct MHD_Connection *conn)
{
	struct peer *p = peer_of(conn);
	pthread_mutex_lock(&peers_mu);
	int t = p && p->trusted;
	pthread_mutex_unlock(&peers_mu);
	return t;
}

/* Cuts the strangers' connections older than HEADERS_MS (the main loop
 * calls it a few times a second). */
static void cut_strangers(void)
{
	int64_t now = rk_monotonic_ms();
	size_t n = 0;
	pthread_mutex_lock(&peers_mu);
	struct peer *p;
	LIST_FOREACH(p, &peers, link)
	if (!p->trusted && !p->cut && now - p->since > HEADERS_MS) {
		cut(p);
		n++;
	}
	pthread_mutex_unlock(&peers_mu);
	if (n)
		rk_log(RK_LOG_INFO, "serve: cut %zu connection(s) that showed no token within %d s", n,
		       HEADERS_MS / 1000);
	rk_log_refusals_flush();
}

/* Takes n more bytes of the body budget for st; 0 when they are not there. */
static int body_reserve(struct req_state *st, size_t n)
{
	pthread_mutex_lock(&peers_mu);
	int ok = body_used + n <= BODY_BUDGET;
	if (ok) {
		body_used += n;
		st->reserved += n;
	}
	pthread_mutex_unlock(&peers_mu);
	return ok;
}

static void body_unreserve(struct req_state *st)
{
	pthread_mutex_lock(&peers_mu);
	body_used -= st->reserved;
	st->reserved = 0;
	pthread_mutex_unlock(&peers_mu);
}

static const char *query_cb(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

/* --- event streams: one poller wakes them all --------------------------------------- */
/* Each open event stream waits on a condition of its own. One thread reads,
 * every POLL_MS, the last event of every unsettled execution and whether the
 * streams' tokens are still live, and wakes only the streams concerned: N
 * idle streams cost one query a tick, not N, and a revoked token's streams
 * end within a tick or two. */
#define POLL_MS 100
#define KEEPALIVE_MS 15000

struct sse {
	LIST_ENTRY(sse) link;
	char *execution, *token;
	int64_t after, last_write;
	int done, revoked, wake;
	pthread_cond_t cond;
	struct rk_buf buf;
	size_t off;
};

static pthread_mutex_t sse_mu = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, sse) streams = LIST_HEAD_INITIALIZER(streams);

static void sse_wake(struct sse *s)
{
	s->wake = 1;
	pthread_cond_signal(&s->cond);
}

/* Whether token id is among ids[0..n) (the poller's small sets). */
static int among(char **ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ids[i], id))
			return 1;
	return 0;
}

/* One look at the database for every stream: new events, settled
 * executions, revoked tokens. */
static void poll_streams(struct rk_engine *eng)
{
	char **tokens = NULL, **revoked = NULL;
	size_t ntok = 0, nrev = 0;
	pthread_mutex_lock(&sse_mu);
	struct sse *s;
	LIST_FOREACH(s, &streams, link)
	if (s->token && !among(tokens, ntok, s->token)) {
		tokens = rk_xrealloc(tokens, (ntok + 1) * sizeof(*tokens));
		tokens[ntok++] = rk_xstrdup(s->token);
	}
	int any = !LIST_EMPTY(&streams);
	pthread_mutex_unlock(&sse_mu);
	if (!any)
		return;
	struct rk_error err;
	for (size_t i = 0; i < ntok; i++)
		if (rk_token_live(eng, tokens[i], &err) == 0) {
			revoked = rk_xrealloc(revoked, (nrev + 1) * sizeof(*revoked));
			revoked[nrev++] = tokens[i];
		}
	struct rk_execution_mark *marks = NULL;
	size_t nm = 0;
	int marked = rk_computer_execution_marks(eng, &marks, &nm, &err) == 0;
	if (!marked)
		rk_log(RK_LOG_WARN, "api: the event poller: %s", err.message);
	pthread_mutex_lock(&sse_mu);
	LIST_FOREACH(s, &streams, link)
	{
		if (s->token && among(revoked, nrev, s->token)) {
			s->revoked = 1;
			sse_wake(s);
			continue;
		}
		if (!marked) {
			sse_wake(s); /* let the stream look for itself */
			continue;
		}
		size_t i = 0;
		while (i < nm && strcmp(marks[i].id, s->execution))
			i++;
		/* settled (no longer listed) or with news */
		if (i == nm || marks[i].last_sequence > s->after)
			sse_wake(s);
	}
	pthread_mutex_unlock(&sse_mu);
	rk_execution_marks_free(marks, nm);
	for (size_t i = 0; i < ntok; i++)
		free(tokens[i]);
	free(tokens);
	free(revoked);
}

static int poller_quit; /* under sse_mu */

/* Runs until poller_quit (set once the daemon has stopped); after a stop
 * request it only wakes the streams, so they see it and end. */
static void *poller_main(void *arg)
{
	struct rk_engine *eng = arg;
	for (;;) {
		rk_sleep_ms(POLL_MS);
		pthread_mutex_lock(&sse_mu);
		int quit = poller_quit;
		struct sse *s;
		if (stop_requested)
			LIST_FOREACH(s, &streams, link)
		sse_wake(s);
		pthread_mutex_unlock(&sse_mu);
		if (quit)
			break;
		if (!stop_requested) {
			poll_streams(eng);
			rk_api_port_sweep(eng);
		}
	}
	rk_engine_free(eng);
	return NULL;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct sse *s = cls;
	(void)pos;
	while (s->off == s->buf.len) {
		pthread_mutex_lock(&sse_mu);
		int revoked = s->revoked;
		s->wake = 0;
		pthread_mutex_unlock(&sse_mu);
		if (revoked) {
			rk_log(RK_LOG_INFO, "api: event stream of %s ended: its token %s was revoked", s->execution,
			       s->token);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (s->done || stop_requested)
			return MHD_CONTENT_READER_END_OF_STREAM;
		rk_buf_reset(&s->buf);
		s->off = 0;
		struct rk_error err;
		struct rk_engine *eng = thread_engine(&err);
		int64_t after = s->after;
		if (!eng || rk_api_sse_next(eng, s->execution, &after, 0, &s->done, &s->buf, &err)) {
			rk_log(RK_LOG_WARN, "api: event stream of %s: %s", s->execution, err.message);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		pthread_mutex_lock(&sse_mu);
		s->after = after;
		if (!s->buf.len && !s->done) {
			/* nothing new: sleep until the poller has news, or a comment is
			 * due that finds a reader that went away */
			int64_t due = s->last_write + KEEPALIVE_MS;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t left = due - rk_monotonic_ms();
			if (left > 0) {
				ts.tv_sec += left / 1000;
				ts.tv_nsec += (left % 1000) * 1000000;
				if (ts.tv_nsec >= 1000000000) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000;
				}
				while (!s->wake && !s->revoked && !stop_requested &&
				       pthread_cond_timedwait(&s->cond, &sse_mu, &ts) == 0)
					;
			}
			if (!s->wake && !s->revoked && rk_monotonic_ms() >= due)
				rk_buf_adds(&s->buf, ": keepalive\n\n");
		}
		pthread_mutex_unlock(&sse_mu);
	}
	size_t n = s->buf.len - s->off < max ? s->buf.len - s->off : max;
	memcpy(out, s->buf.data + s->off, n);
	s->off += n;
	s->last_write = rk_monotonic_ms();
	return (ssize_t)n;
}

static struct sse *sse_new(char *execution, char *token, int64_t after)
{
	struct sse *s = rk_xcalloc(1, sizeof(*s));
	s->execution = execution;
	s->token = token;
	s->after = after;
	s->last_write = rk_monotonic_ms();
	rk_buf_init(&s->buf);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&sse_mu);
	LIST_INSERT_HEAD(&streams, s, link);
	pthread_mutex_unlock(&sse_mu);
	return s;
}

static void sse_free(void *cls)
{
	struct sse *s = cls;
	pthread_mutex_lock(&sse_mu);
	LIST_REMOVE(s, link);
	pthread_mutex_unlock(&sse_mu);
	pthread_cond_destroy(&s->cond);
	free(s->execution);
	free(s->token);
	rk_buf_release(&s->buf);
	free(s);
}

static enum MHD_Result queue_json(struct MHD_Connection *conn, int status, cJSON *doc)
{
	if (status == 202 && (!doc || cJSON_IsNull(doc))) {
		/* accepted with no body: an MCP notification (POST /mcp) */
		struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		enum MHD_Result r = MHD_queue_response(conn, 202, resp);
		MHD_destroy_response(resp);
		return r;
	}
	char *text = cJSON_PrintUnformatted(doc);
	size_t len = strlen(text);
	text = rk_xrealloc(text, len + 2);
	text[len++] = '\n';
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"rakazo\"");
	if (status == 503)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	/* a stranger's connection ends with its refusal */
	if (status >= 400 && !trusted(conn))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result r = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* {"error": {...}} for what the transport itself answers. */
static cJSON *error_doc(const char *category, const char *code, const char *message)
{
	cJSON *doc = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "category", category);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	/* as the engine's errors carry one (api/openapi.json's Error) */
	char *eid = rk_id_new("err");
	cJSON_AddStringToObject(e, "errorId", eid);
	free(eid);
	return doc;
}

static enum MHD_Result queue_error(struct MHD_Connection *conn, int status, const char *category, const char *code,
				   const char *message)
{
	cJSON *doc = error_doc(category, code, message);
	enum MHD_Result r = queue_json(conn, status, doc);
	cJSON_Delete(doc);
	return r;
}

/* --- a single-threaded process for the requests that fork ------------------------- */
/* A helper forked without exec from this threaded server would inherit the
 * other threads' SQLite state half-copied (their locks, a closed -shm fd):
 * its database calls fail or, worse, run unlocked. So requests whose route
 * may fork (rk_api_route_forks) go to a broker, forked before any thread or
 * database existed, which forks a fresh single-threaded child per request.
 * The child opens its own engine, answers, and exits. Wire, over a stream
 * socket passed to the broker: a JSON header line, the body bytes; back:
 * "STATUS\n" and the document. */

static int broker_sock = -1;

static int read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t w = write(fd, (const char *)buf + put, n - put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		put += (size_t)w;
	}
	return 0;
}

static const char *json_query_cb(void *ctx, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ctx, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void broker_child(int fd)
{
	signal(SIGCHLD, SIG_DFL);
	struct rk_buf line = RK_BUF_INIT, body = RK_BUF_INIT, out = RK_BUF_INIT;
	rk_buf_init(&line);
	rk_buf_init(&body);
	rk_buf_init(&out);
	char c;
	while (line.len < (1u << 20) && read_full(fd, &c, 1) == 0 && c != '\n')
		rk_buf_addc(&line, c);
	cJSON *h = cJSON_Parse(line.data);
	const cJSON *bl = cJSON_GetObjectItemCaseSensitive(h, "body_len");
	size_t blen = cJSON_IsNumber(bl) && bl->valuedouble >= 0 && bl->valuedouble <= RK_API_BODY_MAX
			      ? (size_t)bl->valuedouble
			      : 0;
	rk_buf_grow(&body, blen + 1);
	struct rk_engine *eng = NULL;
	struct rk_error err;
	if (!h || read_full(fd, body.data, blen) != 0) {
		rk_buf_adds(&out, "502\n{\"error\":{\"category\":\"ComputerExecutionFailed\",\"code\":\"failed\","
				  "\"message\":\"the request did not reach its handler\"}}");
	} else if (rk_engine_open(&eng, &err) != 0) {
		rk_buf_adds(&out, "503\n{\"error\":{\"category\":\"ComputerExecutionFailed\",\"code\":\"unavailable\","
				  "\"message\":\"the server cannot open its state; see its log\"}}");
	} else {
		body.len = blen;
		body.data[blen] = '\0';
		struct rk_api_request req = {
			.method = rk_json_string(h, "method", ""),
			.path = rk_json_string(h, "path", ""),
			.query = json_query_cb,
			.query_ctx = cJSON_GetObjectItemCaseSensitive(h, "query"),
			.authorization = rk_json_string(h, "authorization", NULL),
			.last_event_id = rk_json_string(h, "last_event_id", NULL),
			.body = body.data,
			.body_len = body.len,
			.body_too_large = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "too_large")),
			.providers = offered,
			.mcp_version = rk_json_string(h, "mcp_version", NULL),
			.mcp_method = rk_json_string(h, "mcp_method", NULL),
			.mcp_name = rk_json_string(h, "mcp_name", NULL),
			.origin = rk_json_string(h, "origin", NULL),
			.host = rk_json_string(h, "host", NULL),
		};
		struct rk_api_response resp;
		rk_api_handle(eng, &req, &resp);
		char *text = resp.doc ? cJSON_PrintUnformatted(resp.doc) : rk_xstrdup("null");
		rk_buf_printf(&out, "%d\n%s", resp.status, text);
		free(text);
		rk_api_response_release(&resp);
	}
	write_full(fd, out.data, out.len);
	close(fd);
	_exit(0);
}

static void broker_main(int sock)
{
	signal(SIGCHLD, SIG_IGN); /* the children reap themselves */
	signal(SIGINT, SIG_IGN);  /* it ends when the server closes its socket */
	signal(SIGTERM, SIG_DFL);
	for (;;) {
		char byte;
		struct iovec iov = {&byte, 1};
		char ctl[CMSG_SPACE(sizeof(int))];
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl,
				     .msg_controllen = sizeof(ctl)};
		ssize_t n = recvmsg(sock, &msg, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		if (!cm || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int fd;
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
		pid_t pid = fork();
		if (pid == 0) {
			close(sock);
			broker_child(fd);
		}
		close(fd);
	}
}

static int broker_start(struct rk_error *err)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot make the broker's socket");
	pid_t pid = fork();
	if (pid < 0)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot start the broker");
	if (pid == 0) {
		close(sp[0]);
		broker_main(sp[1]);
	}
	close(sp[1]);
	broker_sock = sp[0];
	return 0;
}

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	if (key && !cJSON_GetObjectItemCaseSensitive(cls, key))
		cJSON_AddStringToObject(cls, key, value ? value : "");
	return MHD_YES;
}

/* Runs the request in a broker child: *status and the document out. */
static cJSON *brokered(struct MHD_Connection *conn, const char *url, const char *method, struct req_state *st,
		       int *status)
{
	cJSON *h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "method", method);
	cJSON_AddStringToObject(h, "path", url);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query, cJSON_AddObjectToObject(h, "query"));
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *l = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID");
	if (a)
		cJSON_AddStringToObject(h, "authorization", a);
	if (l)
		cJSON_AddStringToObject(h, "last_event_id", l);
	/* the MCP transport's headers (POST /mcp) */
	static const char *const mcp_headers[][2] = {{"MCP-Protocol-Version", "mcp_version"},
						     {"Mcp-Method", "mcp_method"},
						     {"Mcp-Name", "mcp_name"},
						     {"Origin", "origin"},
						     {MHD_HTTP_HEADER_HOST, "host"}};
	for (size_t i = 0; i < sizeof(mcp_headers) / sizeof(mcp_headers[0]); i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, mcp_headers[i][0]);
		if (v)
			cJSON_AddStringToObject(h, mcp_headers[i][1], v);
	}
	cJSON_AddNumberToObject(h, "body_len", (double)st->body.len);
	cJSON_AddBoolToObject(h, "too_large", st->too_large);
	char *line = cJSON_PrintUnformatted(h);
	cJSON_Delete(h);
	cJSON *doc = NULL;
	struct rk_buf in = RK_BUF_INIT;
	rk_buf_init(&in);
	int sp[2] = {-1, -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0) {
		char byte = 'r';
		struct iovec iov = {&byte, 1};
		char ctl[CMSG_SPACE(sizeof(int))];
		memset(ctl, 0, sizeof(ctl));
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl,
				     .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sp[1], sizeof(int));
		int sent = sendmsg(broker_sock, &msg, MSG_NOSIGNAL) == 1;
		close(sp[1]);
		if (sent && write_full(sp[0], line, strlen(line)) == 0 && write_full(sp[0], "\n", 1) == 0 &&
		    write_full(sp[0], st->body.data, st->body.len) == 0) {
			char buf[65536];
			ssize_t n;
			while ((n = read(sp[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
				if (n > 0)
					rk_buf_add(&in, buf, (size_t)n);
		}
		close(sp[0]);
	}
	free(line);
	char *nl = strchr(in.data, '\n');
	if (nl && (doc = cJSON_Parse(nl + 1)))
		*status = atoi(in.data);
	rk_buf_release(&in);
	if (!doc) {
		*status = 502;
		doc = error_doc("ComputerExecutionFailed", "outcome_unknown",
				"the request's process ended without an answer; check before retrying");
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(doc, "error"), "outcome", "unknown");
		rk_log(RK_LOG_WARN, "api %s %s: the broker gave no answer", method, url);
	}
	return doc;
}

/* --- paired machines' connections --------------------------------------------------- */

struct link_args {
	char *computer_id;
	MHD_socket sock;
	struct MHD_UpgradeResponseHandle *urh;
	char *extra;
	size_t extra_len;
};

static void *link_main(void *arg)
{
	struct link_args *a = arg;
	char *dir = rk_data_dir_resolve();
	/* the link closes what it is given: hand it a copy, MHD closes its own */
	int fd = dup(a->sock);
	if (fd >= 0)
		rk_api_pair_link(dir, a->computer_id, fd, a->extra, a->extra_len);
	MHD_upgrade_action(a->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(dir);
	free(a->computer_id);
	free(a->extra);
	free(a);
	return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
		       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)conn;
	(void)con_cls;
	struct link_args *a = rk_xcalloc(1, sizeof(*a));
	a->computer_id = cls;
	a->sock = sock;
	a->urh = urh;
	a->extra = rk_xmalloc(extra_in_size + 1);
	memcpy(a->extra, extra_in, extra_in_size);
	a->extra_len = extra_in_size;
	pthread_t t;
	if (pthread_create(&t, NULL, link_main, a) != 0) {
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		free(a->computer_id);
		free(a->extra);
		free(a);
		return;
	}
	pthread_detach(t);
}

/* The request as the engine takes it: headers, query and the body so far. */
static void request_of(struct MHD_Connection *conn, const char *url, const char *method, const struct req_state *st,
		       struct rk_api_request *req)
{
	*req = (struct rk_api_request){
		.method = method,
		.path = url,
		.query = query_cb,
		.query_ctx = conn,
		.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
		.last_event_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID"),
		.upgrade = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE),
		.body = st->body.data,
		.body_len = st->body.len,
		.body_too_large = st->too_large,
		.admitted = &st->tok,
		.providers = offered,
		.peer = peer_of(conn) ? peer_of(conn)->addr_text : NULL,
		.mcp_version = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "MCP-Protocol-Version"),
		.mcp_method = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Mcp-Method"),
		.mcp_name = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Mcp-Name"),
		.origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"),
		.host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
	};
}

static enum MHD_Result no_engine(struct MHD_Connection *conn, const struct rk_error *err)
{
	rk_log(RK_LOG_ERROR, "api: cannot open the engine: %s", err->message);
	return queue_error(conn, 503, "ComputerExecutionFailed", rk_code_name(err->code),
			   "the server cannot open its state; see its log");
}

static enum MHD_Result answer(struct MHD_Connection *conn, const char *url, const char *method, struct req_state *st)
{
	if (st->busy)
		return queue_error(conn, 503, "ComputerExecutionFailed", "unavailable",
				   "the server holds too many request bodies at once; retry shortly");
	if (rk_api_route_forks(method, url)) {
		int status = 502;
		cJSON *doc = brokered(conn, url, method, st, &status);
		enum MHD_Result r = queue_json(conn, status, doc);
		cJSON_Delete(doc);
		return r;
	}
	struct rk_error err;
	struct rk_engine *eng = thread_engine(&err);
	if (!eng)
		return no_engine(conn, &err);
	struct rk_api_request req;
	request_of(conn, url, method, st, &req);
	struct rk_api_response out;
	rk_api_handle(eng, &req, &out);
	enum MHD_Result r;
	if (out.upgrade_pair) {
		trust(conn); /* the machine's secret was good */
		struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, out.upgrade_pair);
		out.upgrade_pair = NULL;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "rakazo-pair");
		r = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
		MHD_destroy_response(resp);
	} else if (out.sse_execution) {
		struct sse *s = sse_new(out.sse_execution, out.sse_token, out.sse_after);
		out.sse_execution = out.sse_token = NULL;
		struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, s,
									      sse_free);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		r = MHD_queue_response(conn, 200, resp);
		MHD_destroy_response(resp);
	} else {
		r = queue_json(conn, out.status, out.doc);
	}
	rk_api_response_release(&out);
	return r;
}

/* The first call of a request, its headers in: the token is checked before
 * any of the body is read, and the body's room is taken from the budget. */
static enum MHD_Result admit(struct MHD_Connection *conn, const char *url, const char *method, struct req_state *st)
{
	struct rk_error err;
	struct rk_engine *eng = thread_engine(&err);
	if (!eng)
		return no_engine(conn, &err);
	struct rk_api_request req;
	request_of(conn, url, method, st, &req);
	struct rk_api_response out;
	if (!rk_api_admit(eng, &req, &st->tok, &out)) {
		enum MHD_Result r = queue_json(conn, out.status, out.doc);
		rk_api_response_release(&out);
		return r;
	}
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
	if (!st->tok.id) {
		/* the routes open to all (health, a paired machine's connect) take no body */
		if (len || te)
			return queue_error(conn, 400, "invalid_request", rk_code_name(RK_EINVALID),
					   "this route takes no request body");
		return MHD_YES;
	}
	trust(conn);
	if (len > RK_API_BODY_MAX) {
		/* answer before reading any of it */
		st->too_large = 1;
		return answer(conn, url, method, st);
	}
	if (len && !body_reserve(st, (size_t)len)) {
		st->busy = 1;
		return answer(conn, url, method, st);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)version;
	struct req_state *st = *con_cls;
	if (!st) {
		st = rk_xcalloc(1, sizeof(*st));
		rk_buf_init(&st->body);
		*con_cls = st;
		return admit(conn, url, method, st);
	}
	if (*upload_size) {
		size_t need = st->body.len + *upload_size;
		if (!st->too_large && !st->busy && need > RK_API_BODY_MAX)
			st->too_large = 1;
		else if (!st->too_large && !st->busy && need > st->reserved && !body_reserve(st, need - st->reserved))
			st->busy = 1;
		if (!st->too_large && !st->busy) {
			rk_buf_add(&st->body, upload, *upload_size);
		} else if (st->body.len || st->reserved) {
			/* refused: what was held goes back now */
			rk_buf_release(&st->body);
			rk_buf_init(&st->body);
			body_unreserve(st);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return answer(conn, url, method, st);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode why)
{
	(void)cls;
	(void)conn;
	(void)why;
	struct req_state *st = *con_cls;
	if (st) {
		body_unreserve(st);
		rk_api_token_release(&st->tok);
		rk_buf_release(&st->body);
		free(st);
		*con_cls = NULL;
	}
}

/* --- the server ---------------------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* --providers, or by default every provider that provisions, passes its
 * check now and does not run commands on this host. A provider that does
 * (fake, a test double) is offered only when named, with a warning. */
static int choose_providers(struct cmd_ctx *ctx)
{
	size_t n = 0, all = 0;
	while (rk_providers[all])
		all++;
	offered = rk_xcalloc(all + 1, sizeof(*offered));
	if (!o_providers) {
		for (size_t i = 0; i < all; i++) {
			const struct rk_provider_ops *p = rk_providers[i];
			struct rk_error e;
			if ((p->caps & RK_CAP_HOST_EXEC) || !p->provision)
				continue;
			if (p->check && p->check(&e)) {
				rk_log(RK_LOG_INFO, "serve: provider %s is not offered: %s", p->name, e.message);
				continue;
			}
			offered[n++] = p->name;
		}
		return 0;
	}
	char *list = rk_xstrdup(o_providers), *save = NULL;
	int r = 0;
	for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const struct rk_provider_ops *p = rk_provider_find(name);
		size_t j;
		for (j = 0; j < n && strcmp(offered[j], name); j++)
			;
		if (!p || !p->provision) {
			r = rk_error_set(&ctx->err, RK_EUSAGE,
					 "--providers: '%s' is not a provider the API can make computers on (see `rakazo "
					 "computer providers`; paired machines join with `rakazo pair`)",
					 name);
			break;
		}
		if (j < n)
			continue; /* named twice */
		offered[n++] = p->name;
		if (p->caps & RK_CAP_HOST_EXEC)
			fprintf(stderr,
				"rakazo: warning: serve offers provider %s, a test double: the commands API callers run "
				"on its computers run on this host as this user (uid %d), with this data directory, its "
				"key and its database in reach; bots' tokens never reach it\n",
				p->name, (int)getuid());
	}
	free(list);
	return r;
}

/* --token-file: a token to hand clients, made when the file is missing. */
static int token_file(struct cmd_ctx *ctx)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	int r;
	if (access(o_token_file, F_OK) == 0) {
		if ((r = rk_fs_read_all(o_token_file, 4096, &b, &ctx->err)) == 0) {
			while (b.len &&
			       (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' || b.data[b.len - 1] == ' '))
				b.data[--b.len] = '\0';
			struct rk_api_token t = {0};
			if ((r = rk_token_verify(ctx->eng, b.data, &t, &ctx->err)))
				r = rk_error_prefix(&ctx->err, "--token-file %s", o_token_file);
			rk_api_token_release(&t);
		}
	} else {
		char *name = rk_id_new("serve"), *secret = NULL;
		struct rk_api_token t = {0};
		if ((r = rk_token_create(ctx->eng, name, NULL, &secret, &t, &ctx->err)) == 0) {
			char *line = rk_xasprintf("%s\n", secret);
			r = rk_fs_write_atomic(o_token_file, line, strlen(line), 0600, &ctx->err);
			free(line);
		}
		free(secret);
		free(name);
		rk_api_token_release(&t);
	}
	rk_buf_release(&b);
	return r;
}

static void stop_poller(pthread_t poller)
{
	pthread_mutex_lock(&sse_mu);
	poller_quit = 1;
	pthread_mutex_unlock(&sse_mu);
	pthread_join(poller, NULL);
}

static int run_server(struct cmd_ctx *ctx)
{
	struct sockaddr_in sa;
	int loopback = 1;
	int r = rk_listen_parse(o_listen, "the API", o_public, &sa, &loopback, &ctx->err);
	/* the broker first: before any thread or database connection exists */
	if (r || (r = choose_providers(ctx)) || (r = broker_start(&ctx->err)) || (r = cmd_engine(ctx)))
		return r;
	if ((o_token_file && (r = token_file(ctx))) || (r = rk_api_pair_reset(ctx->eng->db, &ctx->err)))
		return r;
	/* the connection threads open their own engines; this one, made for
	 * the setup, goes to the event streams' poller */
	pthread_t poller;
	if (pthread_create(&poller, NULL, poller_main, ctx->eng) != 0)
		return rk_error_errno(&ctx->err, RK_EFAILED, errno, "cannot start the event poller");
	ctx->eng = NULL;
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_signal;
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
							MHD_USE_POLL | MHD_ALLOW_UPGRADE,
						0, on_accept, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
						(struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
						MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
						MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
						MHD_OPTION_CONNECTION_LIMIT, SLOTS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
						PEER_SLOTS, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_BYTES,
						MHD_OPTION_THREAD_STACK_SIZE, STACK_BYTES, MHD_OPTION_END);
	if (!d) {
		r = rk_error_errno(&ctx->err, errno == EADDRINUSE ? RK_ECONFLICT : RK_EUNAVAILABLE, errno,
				   "cannot listen on %s", o_listen);
		stop_poller(poller);
		return r;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	char *url = rk_xasprintf("http://%s:%u", host, info ? (unsigned)info->port : (unsigned)ntohs(sa.sin_port));
	if (o_url_file && (r = rk_fs_write_atomic(o_url_file, url, strlen(url), 0644, &ctx->err))) {
		MHD_stop_daemon(d);
		stop_poller(poller);
		free(url);
		return r;
	}
	struct rk_buf names;
	rk_buf_init(&names);
	int n = 0;
	for (; offered[n]; n++)
		rk_buf_printf(&names, "%s%s", n ? "," : "", offered[n]);
	if (opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "url", url);
		cJSON_AddItemToObject(o, "providers", cJSON_CreateStringArray(offered, n));
		out_stream(o, NULL);
	} else {
		printf("%s\n", url);
	}
	fflush(stdout);
	out_progress("rakazo serve: the Computers API on %s/v1, providers %s (Ctrl-C stops it)", url,
		     names.len ? names.data : "none");
	rk_log(RK_LOG_INFO, "serve: listening on %s, providers %s", url, names.len ? names.data : "none");
	rk_buf_release(&names);
	if (!loopback)
		fprintf(stderr,
			"rakazo: warning: --public: the Computers API listens on %s, reachable from other machines, in "
			"plain HTTP without TLS: every route under /v1 (computers and their lifecycle, shell sessions, "
			"files, desktops, forwarded ports, paired machines, bot rights) answers anyone who holds a "
			"token, and tokens cross the network in clear. Put a TLS proxy in front.\n",
			url);
	free(url);
	while (!stop_requested) {
		rk_sleep_ms(200);
		cut_strangers();
	}
	MHD_stop_daemon(d);
	stop_poller(poller);
	return 0;
}

/* --- tokens and routes ---------------------------------------------------------------------- */

static int run_token(struct cmd_ctx *ctx)
{
	int r;
	if (ctx->nargs < 2)
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "rakazo serve token needs create NAME, list or revoke ID|NAME");
	const char *verb = ctx->args[1];
	if ((r = cmd_engine(ctx)))
		return r;
	if (!strcmp(verb, "create")) {
		if (ctx->nargs != 3)
			return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve token create NAME [--bot BOT]");
		char *secret = NULL;
		struct rk_api_token t = {0};
		if ((r = rk_token_create(ctx->eng, ctx->args[2], o_bot, &secret, &t, &ctx->err)))
			return r;
		if (opt_json) {
			cJSON *o = rk_api_token_to_json(&t);
			cJSON_AddStringToObject(o, "token", secret);
			out_doc(o);
		} else {
			printf("%s\n", secret);
			fflush(stdout);
			out_progress("token %s (%s): shown once; send it as Authorization: Bearer TOKEN", t.id, t.name);
		}
		free(secret);
		rk_api_token_release(&t);
		return 0;
	}
	if (!strcmp(verb, "list")) {
		if (ctx->nargs != 2)
			return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve token list");
		cJSON *rows;
		if ((r = rk_token_list(ctx->eng, &rows, &ctx->err)))
			return r;
		static const struct out_col cols[] = {{"id", "TOKEN"},		 {"name", "NAME"},
						      {"bot_id", "BOT"},	 {"created_at", "CREATED"},
						      {"revoked_at", "REVOKED"}, {0}};
		out_list(rows, cols);
		return 0;
	}
	if (!strcmp(verb, "revoke")) {
		if (ctx->nargs != 3)
			return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve token revoke ID|NAME");
		cJSON *doc;
		if ((r = rk_token_revoke(ctx->eng, ctx->args[2], &doc, &ctx->err)))
			return r;
		out_doc(doc);
		return 0;
	}
	return rk_error_set(&ctx->err, RK_EUSAGE, "rakazo serve token has no '%s' (create, list, revoke)", verb);
}

static int run_routes(struct cmd_ctx *ctx)
{
	if (ctx->nargs != 1)
		return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve routes");
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; i < rk_api_route_count(); i++) {
		const struct rk_api_route_info *ri = rk_api_route(i);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "method", ri->method);
		cJSON_AddStringToObject(o, "path", ri->path);
		cJSON_AddBoolToObject(o, "auth", ri->auth);
		cJSON_AddItemToArray(rows, o);
	}
	static const struct out_col cols[] = {{"method", "METHOD"}, {"path", "PATH"}, {"auth", "AUTH"}, {0}};
	out_list(rows, cols);
	return 0;
}

static int run_serve(struct cmd_ctx *ctx)
{
	if (ctx->nargs == 0)
		return run_server(ctx);
	if (!strcmp(ctx->args[0], "token"))
		return run_token(ctx);
	if (!strcmp(ctx->args[0], "routes"))
		return run_routes(ctx);
	return rk_error_set(&ctx->err, RK_EUSAGE, "rakazo serve takes options, `token ...` or `routes`, not '%s'",
			    ctx->args[0]);
}

const struct cmd_entry cmd_serve = {
	.name = "serve",
	.args = "[--listen ADDR:PORT [--public]] [--providers LIST] [--token-file F] | token create NAME [--bot BOT] | token list | token revoke ID | routes",
	.summary = "serve the Computers HTTP API (JSON under /v1, bearer tokens)",
	.description = "Without a word it serves until SIGINT or SIGTERM and prints its base URL on stdout.\n"
		       "`token create` prints a bearer token once (only a hash is kept); with --bot the token\n"
		       "acts as that bot and reaches only computers the bot has a right to. `routes` lists\n"
		       "the routes; api/openapi.json documents them. --providers names the providers it offers\n"
		       "(default: those available here; fake, whose commands run on this host, only when named).\n"
		       "See rakazo-serve(1).",
	.opts = serve_opts,
	.run = run_serve,
};
