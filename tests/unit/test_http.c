/* engine/util/http: the retry policy, error mapping and lost replies, against
 * a local libmicrohttpd server on loopback. */

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"
#include "engine/util/http.h"
#include "check.h"

static atomic_int hits;      /* requests that reached the handler's end */
static atomic_int flaky_left; /* failures /flaky still gives before a 200 */
static char last_auth[256];
static char last_body[256];

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
	RUN(helpers);
	RUN(listen_parse);
	MHD_stop_daemon(server);
	return check_summary("http");
}
