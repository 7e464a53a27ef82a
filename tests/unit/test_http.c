/* engine/util/http: the retry policy, error mapping and lost replies, against
 * a local libmicrohttpd server on loopback. */

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"
#include "engine/util/http.h"
#include "check.h"

static atomic_int hits;      /* requests that reached the handler's end */
static atomic_int flaky_left; /* failures /flaky still gives before a 200 */
static char last_auth[256];
static char last_body[256];
static char last_ua[128];
static char last_ae[128];

/* {"ok":1}, gzipped */
static const char gz_ok[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x56\xca\xcf\x56\xb2\x32\xac\x05\x00"
			    "\x09\x8c\x54\x10\x08\x00\x00\x00";

struct conn {
	struct rk_buf body;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body, const char *h,
			     const char *v)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (h)
		MHD_add_response_header(r, h, v);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct conn *k = *state;
	if (!k) {
		k = calloc(1, sizeof(*k));
		rk_buf_init(&k->body);
		*state = k;
		return MHD_YES;
	}
	if (*upload_size) {
		rk_buf_add(&k->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	atomic_fetch_add(&hits, 1);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
	snprintf(last_auth, sizeof(last_auth), "%s", auth ? auth : "");
	snprintf(last_body, sizeof(last_body), "%s %s", method, k->body.data);
	const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
	snprintf(last_ua, sizeof(last_ua), "%s", ua ? ua : "");
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
	snprintf(last_ae, sizeof(last_ae), "%s", ae ? ae : "");
	if (strcmp(url, "/gz") == 0 || strcmp(url, "/odd") == 0) {
		int gz = strcmp(url, "/gz") == 0;
		struct MHD_Response *r = MHD_create_response_from_buffer(gz ? sizeof(gz_ok) - 1 : 2,
									 (void *)(gz ? gz_ok : "xx"), MHD_RESPMEM_MUST_COPY);
		MHD_add_response_header(r, "Content-Encoding", gz ? "gzip" : "compress");
		enum MHD_Result ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strcmp(url, "/ok") == 0)
		return reply(c, 200, "{\"ok\":true}", NULL, NULL);
	if (strcmp(url, "/flaky") == 0) {
		if (atomic_fetch_sub(&flaky_left, 1) > 0)
			return reply(c, 429, "{\"code\":429,\"message\":\"rate limit\"}", "Retry-After", "0");
		return reply(c, 201, "{\"sandboxID\":\"s1\"}", NULL, NULL);
	}
	if (strcmp(url, "/flaky500") == 0) {
		if (atomic_fetch_sub(&flaky_left, 1) > 0)
			return reply(c, 500, "{\"code\":500,\"message\":\"internal\"}", NULL, NULL);
		return reply(c, 200, "{}", NULL, NULL);
	}
	if (strcmp(url, "/busy") == 0)
		return reply(c, 503, "{\"message\":\"overloaded\"}", NULL, NULL);
	if (strcmp(url, "/far") == 0)
		return reply(c, 429, "{\"message\":\"slow down\"}", "Retry-After", "3600");
	if (strcmp(url, "/missing") == 0)
		return reply(c, 404, "{\"code\":404,\"message\":\"sandbox \\\"x\\\" not found\"}", NULL, NULL);
	if (strcmp(url, "/denied") == 0)
		return reply(c, 401, "{\"message\":\"Invalid API key\"}", NULL, NULL);
	if (strcmp(url, "/gateway") == 0)
		return reply(c, 502, "bad gateway\n<html>", NULL, NULL);
	if (strcmp(url, "/drop") == 0)
		return MHD_NO; /* the action happened; the reply never comes */
	if (strcmp(url, "/slow") == 0) {
		usleep(1500 * 1000);
		return reply(c, 200, "{}", NULL, NULL);
	}
	if (strcmp(url, "/big") == 0) {
		char big[4096];
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		return reply(c, 200, big, NULL, NULL);
	}
	return reply(c, 404, "{\"message\":\"no route\"}", NULL, NULL);
}

static void done(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode t)
{
	struct conn *k = *state;
	if (k) {
		rk_buf_release(&k->body);
		free(k);
	}
	*state = NULL;
}

static struct MHD_Daemon *server;
static char base[64];

static int call(const char *path, const char *method, int mutating, struct rk_http_response *r, struct rk_error *e)
{
	char url[128];
	snprintf(url, sizeof(url), "%s%s", base, path);
	const char *hdrs[] = {"X-API-Key: secret-key-123", NULL};
	const char *body = strcmp(method, "GET") == 0 ? NULL : "{\"templateID\":\"desktop\"}";
	struct rk_http_request q = {
		.method = method,
		.url = url,
		.headers = hdrs,
		.body = body,
		.body_len = body ? strlen(body) : 0,
		.mutating = mutating,
		.timeout_ms = 400,
		.max_response = 1000,
	};
	rk_http_response_init(r);
	atomic_store(&hits, 0);
	return rk_http_do(&q, r, e);
}

TEST(ok_sends_headers_and_body)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/ok", "POST", 1, &r, &e), 0);
	CHECK_EQ_INT(r.status, 200);
	CHECK_EQ_STR(r.body.data, "{\"ok\":true}");
	CHECK_EQ_STR(r.content_type, "application/json");
	CHECK_EQ_STR(last_auth, "secret-key-123");
	CHECK_EQ_STR(last_body, "POST {\"templateID\":\"desktop\"}");
	CHECK_EQ_INT(r.attempts, 1);
	rk_http_response_release(&r);
}

TEST(retries_429_then_succeeds)
{
	struct rk_http_response r;
	struct rk_error e;
	atomic_store(&flaky_left, 2);
	CHECK_EQ_INT(call("/flaky", "POST", 1, &r, &e), 0);
	CHECK_EQ_INT(r.status, 201);
	CHECK_EQ_INT(r.attempts, 3);
	CHECK_EQ_INT(atomic_load(&hits), 3);
	rk_http_response_release(&r);
}

TEST(retries_500_on_reads_only)
{
	struct rk_http_response r;
	struct rk_error e;
	atomic_store(&flaky_left, 1);
	CHECK_EQ_INT(call("/flaky500", "GET", 0, &r, &e), 0);
	CHECK_EQ_INT(r.attempts, 2);
	rk_http_response_release(&r);
	/* a mutating call takes the vendor's 500 as its answer */
	atomic_store(&flaky_left, 1);
	CHECK_EQ_INT(call("/flaky500", "POST", 1, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "internal (HTTP 500)") != NULL);
	rk_http_response_release(&r);
}

TEST(gives_up_after_max_attempts)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/busy", "POST", 1, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 4);
	CHECK_EQ_INT(atomic_load(&hits), 4);
	CHECK_EQ_INT(r.status, 503);
	CHECK(strstr(e.message, "overloaded") != NULL);
	rk_http_response_release(&r);
}

TEST(far_retry_after_is_not_waited_for)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/far", "GET", 0, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "retry after 3600 s") != NULL);
	rk_http_response_release(&r);
}

TEST(vendor_errors_map_to_codes)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/missing", "GET", 0, &r, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(r.status, 404);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "sandbox \"x\" not found (HTTP 404)") != NULL);
	rk_http_response_release(&r);
	CHECK_EQ_INT(call("/denied", "DELETE", 1, &r, &e), -RK_EDENIED);
	CHECK(strstr(e.message, "Invalid API key") != NULL);
	CHECK(strstr(e.message, "secret-key-123") == NULL);
	rk_http_response_release(&r);
}

TEST(lost_reply_after_mutation_is_outcome_unknown)
{
	struct rk_http_response r;
	struct rk_error e;
	/* first a call that leaves a connection open for reuse */
	CHECK_EQ_INT(call("/ok", "GET", 0, &r, &e), 0);
	rk_http_response_release(&r);
	CHECK_EQ_INT(call("/drop", "POST", 1, &r, &e), -RK_EOUTCOME_UNKNOWN);
	CHECK_EQ_INT(atomic_load(&hits), 1); /* not repeated */
	CHECK(strstr(e.message, "check before retrying") != NULL);
	rk_http_response_release(&r);
	/* a gateway's 502 on a mutation is no answer either */
	CHECK_EQ_INT(call("/gateway", "POST", 1, &r, &e), -RK_EOUTCOME_UNKNOWN);
	CHECK_EQ_INT(r.attempts, 1);
	rk_http_response_release(&r);
	/* a read is repeated (libcurl may add a resend of its own on a reused
	 * connection), then fails plainly */
	CHECK_EQ_INT(call("/drop", "GET", 0, &r, &e), -RK_EUNAVAILABLE);
	CHECK(atomic_load(&hits) >= 4);
	rk_http_response_release(&r);
}

TEST(slow_reply_times_out)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/slow", "POST", 1, &r, &e), -RK_EOUTCOME_UNKNOWN);
	rk_http_response_release(&r);
	struct rk_http_request q = {.method = "GET", .url = NULL, .timeout_ms = 300, .max_attempts = 2};
	char url[128];
	snprintf(url, sizeof(url), "%s/slow", base);
	q.url = url;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_ETIMEOUT);
	CHECK_EQ_INT(r.attempts, 2);
	rk_http_response_release(&r);
}

TEST(refused_connection_is_unavailable)
{
	struct rk_http_request q = {.method = "POST", .url = "http://127.0.0.1:1/x", .mutating = 1, .body = "{}",
				    .body_len = 2, .max_attempts = 2};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_EUNAVAILABLE); /* nothing was sent: not outcome_unknown */
	CHECK_EQ_INT(r.attempts, 2);
	CHECK(strstr(e.message, "cannot reach") != NULL);
	rk_http_response_release(&r);
}

TEST(reply_size_is_bounded)
{
	struct rk_http_response r;
	struct rk_error e;
	CHECK_EQ_INT(call("/big", "GET", 0, &r, &e), -RK_ETOOLARGE);
	rk_http_response_release(&r);
	/* an error's body is not held to the caller's limit: its code and
	 * message still come through (a 404 on a small read is not_found) */
	char url[128];
	snprintf(url, sizeof(url), "%s/missing", base);
	struct rk_http_request q = {.method = "GET", .url = url, .max_response = 4};
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_ENOTFOUND);
	CHECK(strstr(e.message, "not found") != NULL);
	rk_http_response_release(&r);
}

static int collect(void *ctx, const void *data, size_t len)
{
	rk_buf_add(ctx, data, len);
	return 0;
}

TEST(streaming_hands_bytes_over)
{
	struct rk_buf got;
	rk_buf_init(&got);
	char url[128];
	snprintf(url, sizeof(url), "%s/ok", base);
	struct rk_http_request q = {.method = "GET", .url = url, .on_data = collect, .on_data_ctx = &got};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_STR(got.data, "{\"ok\":true}");
	CHECK_EQ_INT(r.body.len, 0);
	rk_http_response_release(&r);
	/* an error reply is not streamed: it stays in the body for the message */
	rk_buf_reset(&got);
	snprintf(url, sizeof(url), "%s/missing", base);
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(got.len, 0);
	rk_http_response_release(&r);
	rk_buf_release(&got);
}

TEST(any_status_is_the_callers)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/missing", base);
	struct rk_http_request q = {.method = "GET", .url = url, .any_status = 1};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_INT(r.status, 404);
	CHECK(strstr(r.body.data, "not found") != NULL);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_NONE);
	rk_http_response_release(&r);
	/* and no status is retried */
	snprintf(url, sizeof(url), "%s/busy", base);
	rk_http_response_init(&r);
	atomic_store(&hits, 0);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_INT(r.status, 503);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK_EQ_INT(atomic_load(&hits), 1);
	rk_http_response_release(&r);
}

TEST(truncate_cuts_and_succeeds)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/big", base);
	struct rk_http_request q = {.method = "GET", .url = url, .max_response = 1000, .truncate = 1};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_INT(r.truncated, 1);
	CHECK_EQ_INT(r.body.len, 1000);
	CHECK_EQ_INT(r.status, 200);
	rk_http_response_release(&r);
}

static void count_header(void *ctx, const char *line, size_t len)
{
	struct rk_buf *b = ctx;
	rk_buf_add(b, line, len);
}

TEST(headers_agent_and_streamed_body)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/ok", base);
	struct rk_buf h;
	rk_buf_init(&h);
	struct rk_http_request q = {.method = "GET", .url = url, .user_agent = "rk-test/1", .on_header = count_header,
				    .on_header_ctx = &h};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK(strncmp(h.data, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(h.data, "\r\nContent-Type: application/json\r\n") != NULL);
	CHECK_EQ_STR(last_ua, "rk-test/1");
	rk_http_response_release(&r);
	rk_buf_release(&h);
}

static ssize_t read_parts(void *ctx, void *dst, size_t cap)
{
	int *n = ctx;
	static const char *const parts[] = {"chunk1", "chunk2"};
	if (*n >= 2)
		return 0;
	size_t len = strlen(parts[*n]);
	memcpy(dst, parts[(*n)++], len < cap ? len : cap);
	return (ssize_t)len;
}

static ssize_t read_fails(void *ctx, void *dst, size_t cap)
{
	return -1;
}

TEST(body_read_streams_and_is_sent_once)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/ok", base);
	int n = 0;
	struct rk_http_request q = {.method = "PUT", .url = url, .body_read = read_parts, .body_read_ctx = &n,
				    .content_type = "application/x-tar"};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_STR(last_body, "PUT chunk1chunk2");
	rk_http_response_release(&r);
	/* a streamed body cannot be replayed: a 503 is final */
	snprintf(url, sizeof(url), "%s/busy", base);
	n = 0;
	rk_http_response_init(&r);
	atomic_store(&hits, 0);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 1);
	rk_http_response_release(&r);
	/* a reader that fails stops the call */
	q.body_read = read_fails;
	snprintf(url, sizeof(url), "%s/ok", base);
	rk_http_response_init(&r);
	CHECK(rk_http_do(&q, &r, &e) < 0);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_STOPPED);
	rk_http_response_release(&r);
}

TEST(encoding_policies)
{
	char url[128];
	snprintf(url, sizeof(url), "%s/gz", base);
	struct rk_http_request q = {.method = "GET", .url = url, .encoding = RK_HTTP_ENCODING_IDENTITY};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_STR(last_ae, "identity");
	CHECK_EQ_STR(r.body.data, "{\"ok\":1}"); /* decoded all the same */
	rk_http_response_release(&r);
	q.encoding = RK_HTTP_ENCODING_NONE;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK_EQ_STR(last_ae, "");
	CHECK_EQ_INT(r.body.len, sizeof(gz_ok) - 1); /* as sent */
	rk_http_response_release(&r);
	q.encoding = RK_HTTP_ENCODING_ANY;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	CHECK(strstr(last_ae, "gzip") != NULL);
	CHECK_EQ_STR(r.body.data, "{\"ok\":1}");
	rk_http_response_release(&r);
	/* an encoding that cannot be decoded fails the identity policy */
	snprintf(url, sizeof(url), "%s/odd", base);
	q.encoding = RK_HTTP_ENCODING_IDENTITY;
	q.max_attempts = 1;
	rk_http_response_init(&r);
	CHECK(rk_http_do(&q, &r, &e) < 0);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_ENCODING);
	CHECK(r.failure_text != NULL);
	rk_http_response_release(&r);
}

TEST(failures_are_classified)
{
	struct rk_http_request q = {.method = "GET", .url = "http://127.0.0.1:1/x", .max_attempts = 1};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_CONNECT);
	CHECK_EQ_INT(r.connected, 0);
	rk_http_response_release(&r);
	char url[128];
	snprintf(url, sizeof(url), "%s/slow", base);
	q.url = url;
	q.timeout_ms = 300;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_ETIMEOUT);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_TIMEOUT);
	CHECK_EQ_INT(r.connected, 1);
	rk_http_response_release(&r);
	q.url = "ftp://127.0.0.1/x";
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_EINVALID);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_URL);
	rk_http_response_release(&r);
}

/* A keep-alive HTTP server on a unix socket that counts its connections. */
static atomic_int unix_conns;

static void *unix_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		static const char rep[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
		if (write(fd, rep, sizeof(rep) - 1) < 0)
			break;
		have = 0;
	}
	close(fd);
	return NULL;
}

static void *unix_accept(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		atomic_fetch_add(&unix_conns, 1);
		pthread_t t;
		pthread_create(&t, NULL, unix_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

/* libcurl's connections to path are closed on exec (it does not open them
 * so by itself): the commands we start do not inherit a connection to the
 * docker daemon. */
static int connections_cloexec(const char *path)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int ok = 1, seen = 0;
	while (d && (de = readdir(d)) != NULL) {
		int fd = atoi(de->d_name);
		struct sockaddr_un peer;
		socklen_t sl = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		if (de->d_name[0] == '.' || getpeername(fd, (struct sockaddr *)&peer, &sl) != 0 ||
		    peer.sun_family != AF_UNIX || strcmp(peer.sun_path, path) != 0)
			continue;
		seen = 1;
		if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			ok = 0;
	}
	if (d)
		closedir(d);
	return ok && seen;
}

TEST(unix_socket_keeps_its_connection)
{
	char dir[] = "/tmp/rk-http-unix-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s.sock", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(lfd, 8) == 0);
	pthread_t t;
	pthread_create(&t, NULL, unix_accept, (void *)(intptr_t)lfd);
	struct rk_http_request q = {.method = "GET", .url = "http://docker/v1.41/_ping", .unix_socket = sa.sun_path,
				    .max_attempts = 1};
	struct rk_http_response r;
	struct rk_error e;
	for (int i = 0; i < 3; i++) {
		rk_http_response_init(&r);
		CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
		CHECK_EQ_STR(r.body.data, "ok");
		rk_http_response_release(&r);
	}
	CHECK_EQ_INT(atomic_load(&unix_conns), 1); /* one kept connection */
	CHECK(connections_cloexec(sa.sun_path));
	q.mutating = 1; /* a new connection */
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	rk_http_response_release(&r);
	CHECK_EQ_INT(atomic_load(&unix_conns), 2);
	q.mutating = 0;
	q.no_reuse = 1; /* one of its own */
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	rk_http_response_release(&r);
	CHECK_EQ_INT(atomic_load(&unix_conns), 3);
	q.no_reuse = 0;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), 0);
	rk_http_response_release(&r);
	CHECK_EQ_INT(atomic_load(&unix_conns), 3);
	/* no daemon behind the path: no connection */
	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(t, NULL);
	unlink(sa.sun_path);
	q.no_reuse = 1;
	rk_http_response_init(&r);
	CHECK_EQ_INT(rk_http_do(&q, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.failure, RK_HTTP_FAIL_CONNECT);
	rk_http_response_release(&r);
	rmdir(dir);
}

TEST(url_parse)
{
	struct rk_http_url u;
	CHECK_EQ_INT(rk_http_url_parse("https://api.example.com/v1/x?a=1", &u), 0);
	CHECK_EQ_STR(u.scheme, "https");
	CHECK_EQ_STR(u.host, "api.example.com");
	CHECK_EQ_STR(u.port, "443");
	CHECK_EQ_STR(u.path, "/v1/x");
	CHECK_EQ_STR(u.query, "a=1");
	CHECK(u.user == NULL && u.password == NULL);
	rk_http_url_release(&u);
	CHECK_EQ_INT(rk_http_url_parse("http://me:pw@h:8080", &u), 0);
	CHECK_EQ_STR(u.user, "me");
	CHECK_EQ_STR(u.password, "pw");
	CHECK_EQ_STR(u.port, "8080");
	rk_http_url_release(&u);
	CHECK_EQ_INT(rk_http_url_parse("not a url", &u), -RK_EINVALID);
	rk_http_url_release(&u);
	CHECK(rk_http_version() != NULL && *rk_http_version());
}

TEST(helpers)
{
	CHECK_EQ_INT(rk_http_retry_after("7"), 7);
	CHECK_EQ_INT(rk_http_retry_after(" 0"), 0);
	CHECK_EQ_INT(rk_http_retry_after("soon"), -1);
	CHECK_EQ_INT(rk_http_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0); /* in the past */
	char m[320];
	const char *j = "{\"error\":{\"message\":\"quota\"}}";
	rk_http_error_message(j, strlen(j), m, sizeof(m));
	CHECK_EQ_STR(m, "quota");
	rk_http_error_message("plain text\nmore", 15, m, sizeof(m));
	CHECK_EQ_STR(m, "plain text");
	char *s = rk_http_escape("/home/user/a b&c");
	CHECK_EQ_STR(s, "%2Fhome%2Fuser%2Fa%20b%26c");
	free(s);
	CHECK_EQ_INT(rk_http_status_code(409), RK_ECONFLICT);
	CHECK_EQ_INT(rk_http_status_code(502), RK_EUNAVAILABLE);
	setenv("RK_TEST_SECRET", "from-env", 1);
	s = rk_http_secret("RK_TEST_SECRET", "e2b", "api_key");
	CHECK_EQ_STR(s, "from-env");
	free(s);
	char dir[] = "/tmp/rk-http-XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	char path[128];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f != NULL);
	fputs("{\"providers\":{\"e2b\":{\"api_key\":\"from-config\"}}}", f);
	fclose(f);
	setenv("RAKAZO_CONFIG", path, 1);
	s = rk_http_secret("RK_TEST_SECRET_UNSET", "e2b", "api_key");
	CHECK_EQ_STR(s, "from-config");
	free(s);
	CHECK(rk_http_secret("RK_TEST_SECRET_UNSET", "daytona", "api_key") == NULL);
	unlink(path);
	rmdir(dir);
	unsetenv("RAKAZO_CONFIG");
}

/* issue 20: both servers listen on loopback unless --public */
TEST(listen_parse)
{
	struct sockaddr_in sa;
	int lo = -1;
	struct rk_error e;
	CHECK_EQ_INT(rk_listen_parse("127.0.0.1:7380", "x", 0, &sa, &lo, &e), 0);
	CHECK(lo == 1 && ntohs(sa.sin_port) == 7380);
	CHECK_EQ_INT(rk_listen_parse("localhost:0", "x", 0, &sa, &lo, &e), 0);
	CHECK(lo == 1 && sa.sin_addr.s_addr == htonl(0x7f000001));
	CHECK_EQ_INT(rk_listen_parse("127.9.8.7:1", "x", 0, &sa, &lo, &e), 0);
	CHECK_EQ_INT(rk_listen_parse("0.0.0.0:80", "the API", 0, &sa, &lo, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "the API") && strstr(e.message, "--public"));
	CHECK_EQ_INT(rk_listen_parse("192.0.2.1:80", "x", 0, &sa, &lo, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_listen_parse("0.0.0.0:80", "x", 1, &sa, &lo, &e), 0);
	CHECK(lo == 0);
	const char *bad[] = {"nonsense", ":80", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:8x",
			     "example.org:80", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK_EQ_INT(rk_listen_parse(bad[i], "x", 1, &sa, &lo, &e), -RK_EUSAGE);
}

int main(void)
{
	setenv("RAKAZO_HTTP_BACKOFF_MS", "1", 1);
	server = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				  handler, NULL, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
	if (!server) {
		printf("cannot start the test server\nunit: 0 passed, 1 failed\n");
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", (unsigned)info->port);
	RUN(ok_sends_headers_and_body);
	RUN(retries_429_then_succeeds);
	RUN(retries_500_on_reads_only);
	RUN(gives_up_after_max_attempts);
	RUN(far_retry_after_is_not_waited_for);
	RUN(vendor_errors_map_to_codes);
	RUN(lost_reply_after_mutation_is_outcome_unknown);
	RUN(slow_reply_times_out);
	RUN(refused_connection_is_unavailable);
	RUN(reply_size_is_bounded);
	RUN(streaming_hands_bytes_over);
	RUN(any_status_is_the_callers);
	RUN(truncate_cuts_and_succeeds);
	RUN(headers_agent_and_streamed_body);
	RUN(body_read_streams_and_is_sent_once);
	RUN(encoding_policies);
	RUN(failures_are_classified);
	RUN(unix_socket_keeps_its_connection);
	RUN(url_parse);
	RUN(helpers);
	RUN(listen_parse);
	MHD_stop_daemon(server);
	return check_summary("http");
}
