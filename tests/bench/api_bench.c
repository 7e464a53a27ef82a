/* The Computers API under load: 50 concurrent clients on loopback, each a
 * thread with its own keep-alive libcurl handle, against `rakazo serve` on a
 * fake computer in a temporary data directory.
 *
 *   bench: api_rps ours=V req/s base=V req/s ratio=R       GET /v1/executions/:id vs GET /v1/health
 *   bench: api_p99_get ours=V ms base=V ms ratio=R         (health: no token, no database)
 *   bench: api_rps_input ours=V req/s base=V req/s ratio=R a session input round trip ("x\n" to cat,
 *   bench: api_p99_input ours=V ms base=V ms ratio=R       yieldTimeMs 250: each reply waits that long,
 *                                                          so the bases are that floor (p99) and the
 *                                                          rate it allows 50 clients, 50 x 1000/250 =
 *                                                          200 req/s (rps: ratio 1 is no overhead)
 *
 * RAKAZO_BIN names the binary (make bench sets it); RAKAZO_BENCH=NAME runs
 * the group of that figure only (api_rps, api_p99_get: the GETs;
 * api_rps_input, api_p99_input: the inputs). */

#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"
#include "serve.h"

#define CLIENTS 50
#define GET_PER_CLIENT 200
#define INPUT_PER_CLIENT 6
#define YIELD_MS 250

static char url[256], auth[512];

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
	rk_buf_add(ud, p, size * n);
	return size * n;
}

/* One request on h; the reply lands in out. The HTTP status, or -1. */
static long request(CURL *h, const char *method, const char *path, const char *body, int with_auth,
		    struct rk_buf *out)
{
	char full[512];
	snprintf(full, sizeof(full), "%s%s", url, path);
	struct curl_slist *hdr = NULL;
	if (with_auth)
		hdr = curl_slist_append(hdr, auth);
	if (body)
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
	rk_buf_reset(out);
	curl_easy_setopt(h, CURLOPT_URL, full);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	if (!body)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	CURLcode rc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	long code = -1;
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

static const char *json_str(const char *text, const char *key, char *buf, size_t size)
{
	cJSON *d = cJSON_Parse(text);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);
	const char *r = NULL;
	if (cJSON_IsString(v)) {
		snprintf(buf, size, "%s", v->valuestring);
		r = buf;
	}
	cJSON_Delete(d);
	return r;
}

enum job { JOB_GET, JOB_HEALTH, JOB_INPUT };
struct worker {
	pthread_t t;
	enum job job;
	const char *execution, *computer;
	int64_t *lat_us;
	int n, failed;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	CURL *h = curl_easy_init();
	struct rk_buf out = RK_BUF_INIT;
	rk_buf_init(&out);
	char path[256], sid[128];
	if (w->job == JOB_INPUT) {
		snprintf(path, sizeof(path), "/v1/computers/%s/sessions", w->computer);
		long c = request(h, "POST", path, "{\"command\":\"cat\",\"yieldTimeMs\":250}", 1, &out);
		if (c != 200 || !json_str(out.data, "session", sid, sizeof(sid))) {
			w->failed = w->n;
			goto done;
		}
		snprintf(path, sizeof(path), "/v1/computers/%s/sessions/%s/input", w->computer, sid);
	} else if (w->job == JOB_GET) {
		snprintf(path, sizeof(path), "/v1/executions/%s", w->execution);
	} else {
		snprintf(path, sizeof(path), "/v1/health");
	}
	for (int i = 0; i < w->n; i++) {
		int64_t t0 = rk_monotonic_us();
		long c = w->job == JOB_INPUT ? request(h, "POST", path, "{\"chars\":\"x\\n\",\"yieldTimeMs\":250}", 1, &out)
					     : request(h, "GET", path, NULL, w->job == JOB_GET, &out);
		w->lat_us[i] = rk_monotonic_us() - t0;
		if (c != 200 || (w->job == JOB_INPUT && !strstr(out.data, "x\\n")))
			w->failed++;
	}
	if (w->job == JOB_INPUT) {
		snprintf(path, sizeof(path), "/v1/computers/%s/sessions/%s", w->computer, sid);
		request(h, "DELETE", path, NULL, 1, &out);
	}
done:
	rk_buf_release(&out);
	curl_easy_cleanup(h);
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Runs CLIENTS threads of job; *rps and *p99_ms out. Nonzero on failures. */
static int run_load(enum job job, const char *execution, const char *computer, int per, double *rps, double *p99_ms)
{
	struct worker w[CLIENTS];
	int64_t *lat = calloc((size_t)CLIENTS * (size_t)per, sizeof(*lat));
	int64_t t0 = rk_monotonic_us();
	for (int i = 0; i < CLIENTS; i++) {
		w[i] = (struct worker){.job = job, .execution = execution, .computer = computer, .lat_us = lat + i * per, .n = per};
		pthread_create(&w[i].t, NULL, work, &w[i]);
	}
	int failed = 0;
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(w[i].t, NULL);
		failed += w[i].failed;
	}
	double secs = (double)(rk_monotonic_us() - t0) / 1e6;
	size_t n = (size_t)CLIENTS * (size_t)per;
	qsort(lat, n, sizeof(*lat), cmp_i64);
	*rps = (double)n / secs;
	*p99_ms = (double)lat[(n * 99) / 100] / 1000.0;
	free(lat);
	if (failed)
		fprintf(stderr, "api_bench: %d of %zu requests failed\n", failed, n);
	return failed;
}

/* Whether RAKAZO_BENCH asks for one of the group's figures (NULL-ended). */
static int want(const char *const *group)
{
	const char *b = getenv("RAKAZO_BENCH");
	if (!b || !*b)
		return 1;
	for (; *group; group++)
		if (!strcmp(b, *group))
			return 1;
	return 0;
}

static const char *const get_group[] = {"api_rps", "api_p99_get", NULL};
static const char *const input_group[] = {"api_rps_input", "api_p99_input", NULL};

int main(void)
{
	if (!want(get_group) && !want(input_group))
		return 0;
	const char *bin = getenv("RAKAZO_BIN");
	if (!bin || !*bin)
		bin = "build/rakazo";
	int rc = 1;
	struct rk_bench_serve srv;
	struct rk_buf out = RK_BUF_INIT;
	rk_buf_init(&out);
	if (rk_bench_serve_start(&srv, "api_bench", bin))
		goto out;
	snprintf(url, sizeof(url), "%s", srv.url);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", srv.token);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURL *h = curl_easy_init();
	char exe[128], cmp[128];
	long c = request(h, "POST", "/v1/computers",
			 "{\"commandKey\":\"bench\",\"name\":\"bench\",\"source\":{\"provider\":\"fake\",\"template\":null}}", 1,
			 &out);
	if (c != 202 || !json_str(out.data, "id", exe, sizeof(exe)) || !json_str(out.data, "computerId", cmp, sizeof(cmp))) {
		fprintf(stderr, "api_bench: create: %ld %s\n", c, out.data);
		goto out;
	}
	char path[200], state[64] = "";
	snprintf(path, sizeof(path), "/v1/executions/%s", exe);
	for (int i = 0; i < 600 && strcmp(state, "succeeded"); i++) {
		request(h, "GET", path, NULL, 1, &out);
		if (!json_str(out.data, "state", state, sizeof(state)))
			break;
		if (strcmp(state, "succeeded"))
			rk_sleep_ms(50);
	}
	curl_easy_cleanup(h);
	if (strcmp(state, "succeeded")) {
		fprintf(stderr, "api_bench: the computer did not start (%s)\n", state);
		goto out;
	}
	double rps, p99, brps, bp99;
	rc = 0;
	if (want(get_group)) {
		rc |= run_load(JOB_HEALTH, NULL, NULL, GET_PER_CLIENT, &brps, &bp99);
		rc |= run_load(JOB_GET, exe, NULL, GET_PER_CLIENT, &rps, &p99);
		printf("bench: api_rps ours=%.0f req/s base=%.0f req/s ratio=%.3f\n", rps, brps, rps / brps);
		printf("bench: api_p99_get ours=%.2f ms base=%.2f ms ratio=%.3f\n", p99, bp99, p99 / bp99);
	}
	if (want(input_group)) {
		rc |= run_load(JOB_INPUT, NULL, cmp, INPUT_PER_CLIENT, &rps, &p99);
		double ceiling = CLIENTS * 1000.0 / YIELD_MS;
		printf("bench: api_rps_input ours=%.1f req/s base=%.0f req/s ratio=%.3f\n", rps, ceiling, rps / ceiling);
		printf("bench: api_p99_input ours=%.1f ms base=%d ms ratio=%.3f\n", p99, YIELD_MS, p99 / YIELD_MS);
	}
	fflush(stdout);
out:
	rk_bench_serve_stop(&srv, "api_bench");
	rk_buf_release(&out);
	return rc ? 1 : 0;
}
