/* rakazo serve: the Computers HTTP API on libmicrohttpd (the routes are in
 * engine/api.c), and its tokens.
 *
 *   rakazo serve [--listen 127.0.0.1:PORT] [--providers LIST] [--token-file F] [--url-file F]
 *   rakazo serve token create NAME [--bot BOT] | token list | token revoke ID|NAME
 *   rakazo serve routes
 *
 * One thread per connection (a session call may wait up to 30 s, an event
 * stream for as long as its command runs), each with its own engine and so
 * its own SQLite connection. */

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../engine/api.h"
#include "../engine/util/buf.h"
#include "../engine/util/fs.h"
#include "../engine/util/id.h"
#include "../engine/util/json.h"
#include "../engine/util/log.h"
#include "../engine/util/time.h"
#include "cmd.h"
#include "out.h"

static const char *o_listen = "127.0.0.1:7380", *o_token_file, *o_url_file, *o_bot, *o_providers;

static const struct rk_opt serve_opts[] = {
	OPT_STRING("listen", 'l', &o_listen, "ADDR:PORT", "where to listen, a loopback address (default 127.0.0.1:7380; port 0 picks one)"),
	OPT_STRING("providers", 0, &o_providers, "LIST", "the providers the API offers, e.g. docker,e2b (default: those available here, never fake)"),
	OPT_STRING("token-file", 0, &o_token_file, "FILE", "a token for clients: made (mode 0600) when FILE is missing, checked when it exists"),
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

static void engine_free_cb(void *p) { rk_engine_free(p); }
static void engine_key_init(void) { pthread_key_create(&engine_key, engine_free_cb); }

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
	struct rk_buf body;
	int too_large;
};

static const char *query_cb(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

struct sse {
	char *execution;
	int64_t after, last_write;
	int done;
	struct rk_buf buf;
	size_t off;
};

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct sse *s = cls;
	(void)pos;
	while (s->off == s->buf.len) {
		if (s->done || stop_requested)
			return MHD_CONTENT_READER_END_OF_STREAM;
		rk_buf_reset(&s->buf);
		s->off = 0;
		struct rk_error err;
		struct rk_engine *eng = thread_engine(&err);
		if (!eng || rk_api_sse_next(eng, s->execution, &s->after, 1000, &s->done, &s->buf, &err)) {
			rk_log(RK_LOG_WARN, "api: event stream of %s: %s", s->execution, err.message);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		/* a comment now and then finds a reader that went away */
		if (!s->buf.len && !s->done && rk_monotonic_ms() - s->last_write > 15000)
			rk_buf_adds(&s->buf, ": keepalive\n\n");
	}
	size_t n = s->buf.len - s->off < max ? s->buf.len - s->off : max;
	memcpy(out, s->buf.data + s->off, n);
	s->off += n;
	s->last_write = rk_monotonic_ms();
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse *s = cls;
	free(s->execution);
	rk_buf_release(&s->buf);
	free(s);
}

static enum MHD_Result queue_json(struct MHD_Connection *conn, int status, cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);
	size_t len = strlen(text);
	text = realloc(text, len + 2);
	text[len++] = '\n';
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"rakazo\"");
	enum MHD_Result r = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
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
	size_t blen = cJSON_IsNumber(bl) && bl->valuedouble >= 0 && bl->valuedouble <= RK_API_BODY_MAX ? (size_t)bl->valuedouble : 0;
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
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
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
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
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
		doc = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(doc, "error");
		cJSON_AddStringToObject(e, "category", "ComputerExecutionFailed");
		cJSON_AddStringToObject(e, "code", "outcome_unknown");
		cJSON_AddStringToObject(e, "message", "the request's process ended without an answer; check before retrying");
		cJSON_AddStringToObject(e, "outcome", "unknown");
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

static enum MHD_Result answer(struct MHD_Connection *conn, const char *url, const char *method, struct req_state *st)
{
	if (rk_api_route_forks(method, url)) {
		int status = 502;
		cJSON *doc = brokered(conn, url, method, st, &status);
		enum MHD_Result r = queue_json(conn, status, doc);
		cJSON_Delete(doc);
		return r;
	}
	struct rk_error err;
	struct rk_engine *eng = thread_engine(&err);
	if (!eng) {
		rk_log(RK_LOG_ERROR, "api: cannot open the engine: %s", err.message);
		cJSON *doc = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(doc, "error");
		cJSON_AddStringToObject(e, "category", "ComputerExecutionFailed");
		cJSON_AddStringToObject(e, "code", rk_code_name(err.code));
		cJSON_AddStringToObject(e, "message", "the server cannot open its state; see its log");
		enum MHD_Result r = queue_json(conn, 503, doc);
		cJSON_Delete(doc);
		return r;
	}
	struct rk_api_request req = {
		.method = method,
		.path = url,
		.query = query_cb,
		.query_ctx = conn,
		.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
		.last_event_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID"),
		.body = st->body.data,
		.body_len = st->body.len,
		.body_too_large = st->too_large,
		.providers = offered,
	};
	struct rk_api_response out;
	req.upgrade = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
	rk_api_handle(eng, &req, &out);
	enum MHD_Result r;
	if (out.upgrade_pair) {
		struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, out.upgrade_pair);
		out.upgrade_pair = NULL;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "rakazo-pair");
		r = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
		MHD_destroy_response(resp);
	} else if (out.sse_execution) {
		struct sse *s = rk_xcalloc(1, sizeof(*s));
		s->execution = out.sse_execution;
		out.sse_execution = NULL;
		s->after = out.sse_after;
		s->last_write = rk_monotonic_ms();
		rk_buf_init(&s->buf);
		struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, s, sse_free);
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
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > RK_API_BODY_MAX) {
			/* answer before reading any of it */
			st->too_large = 1;
			return answer(conn, url, method, st);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!st->too_large && st->body.len + *upload_size <= RK_API_BODY_MAX)
			rk_buf_add(&st->body, upload, *upload_size);
		else {
			st->too_large = 1;
			rk_buf_release(&st->body);
			rk_buf_init(&st->body);
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

static int parse_listen(struct cmd_ctx *ctx, struct sockaddr_in *sa)
{
	const char *colon = strrchr(o_listen, ':');
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	char host[64];
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || (size_t)(colon - o_listen) >= sizeof(host) || colon[1] == '\0' || *end || port < 0 || port > 65535)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--listen takes ADDR:PORT, e.g. 127.0.0.1:7380, not '%s'", o_listen);
	memcpy(host, o_listen, (size_t)(colon - o_listen));
	host[colon - o_listen] = '\0';
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--listen: '%s' is not an IPv4 address", host);
	if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127)
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "--listen: %s is not a loopback address; the API speaks plain HTTP, so it listens "
				    "on 127.0.0.0/8 only (put a TLS proxy in front for more)",
				    host);
	sa->sin_port = htons((uint16_t)port);
	return 0;
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
			while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' || b.data[b.len - 1] == ' '))
				b.data[--b.len] = '\0';
			struct rk_api_token t = {0};
			if ((r = rk_api_token_verify(ctx->eng->db, b.data, &t, &ctx->err)))
				r = rk_error_prefix(&ctx->err, "--token-file %s", o_token_file);
			rk_api_token_release(&t);
		}
	} else {
		char *name = rk_id_new("serve"), *secret = NULL;
		struct rk_api_token t = {0};
		if ((r = rk_api_token_create(ctx->eng->db, name, NULL, &secret, &t, &ctx->err)) == 0) {
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

static int run_server(struct cmd_ctx *ctx)
{
	struct sockaddr_in sa;
	int r = parse_listen(ctx, &sa);
	/* the broker first: before any thread or database connection exists */
	if (r || (r = choose_providers(ctx)) || (r = broker_start(&ctx->err)) || (r = cmd_engine(ctx)))
		return r;
	if ((o_token_file && (r = token_file(ctx))) || (r = rk_api_pair_reset(ctx->eng->db, &ctx->err)))
		return r;
	/* the threads open their own engines; this one was for the setup */
	rk_engine_free(ctx->eng);
	ctx->eng = NULL;
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_signal;
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_UPGRADE, 0, NULL, NULL,
		on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)512, MHD_OPTION_END);
	if (!d)
		return rk_error_errno(&ctx->err, errno == EADDRINUSE ? RK_ECONFLICT : RK_EUNAVAILABLE, errno,
				      "cannot listen on %s", o_listen);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	char *url = rk_xasprintf("http://%s:%u", host, info ? (unsigned)info->port : (unsigned)ntohs(sa.sin_port));
	if (o_url_file && (r = rk_fs_write_atomic(o_url_file, url, strlen(url), 0644, &ctx->err))) {
		MHD_stop_daemon(d);
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
	free(url);
	while (!stop_requested)
		rk_sleep_ms(200);
	MHD_stop_daemon(d);
	return 0;
}

/* --- tokens and routes ---------------------------------------------------------------------- */

static int run_token(struct cmd_ctx *ctx)
{
	int r;
	if (ctx->nargs < 2)
		return rk_error_set(&ctx->err, RK_EUSAGE, "rakazo serve token needs create NAME, list or revoke ID|NAME");
	const char *verb = ctx->args[1];
	if ((r = cmd_engine(ctx)))
		return r;
	if (!strcmp(verb, "create")) {
		if (ctx->nargs != 3)
			return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve token create NAME [--bot BOT]");
		char *secret = NULL;
		struct rk_api_token t = {0};
		if ((r = rk_api_token_create(ctx->eng->db, ctx->args[2], o_bot, &secret, &t, &ctx->err)))
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
		struct rk_api_token *ts;
		size_t n;
		if ((r = rk_api_token_list(ctx->eng->db, &ts, &n, &ctx->err)))
			return r;
		cJSON *rows = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON_AddItemToArray(rows, rk_api_token_to_json(&ts[i]));
			rk_api_token_release(&ts[i]);
		}
		free(ts);
		static const struct out_col cols[] = {{"id", "TOKEN"},      {"name", "NAME"},         {"bot_id", "BOT"},
						      {"created_at", "CREATED"}, {"revoked_at", "REVOKED"}, {0}};
		out_list(rows, cols);
		return 0;
	}
	if (!strcmp(verb, "revoke")) {
		if (ctx->nargs != 3)
			return rk_error_set(&ctx->err, RK_EUSAGE, "usage: rakazo serve token revoke ID|NAME");
		struct rk_api_token t = {0};
		if ((r = rk_api_token_revoke(ctx->eng->db, ctx->args[2], &t, &ctx->err)))
			return r;
		out_doc(rk_api_token_to_json(&t));
		rk_api_token_release(&t);
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
	.args = "[--listen ADDR:PORT] [--providers LIST] [--token-file F] | token create NAME [--bot BOT] | token list | token revoke ID | routes",
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
