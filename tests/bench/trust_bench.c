/* Trust figures (issue 11).
 *
 *   bench: secret_reveal ours=V us base=V us ratio=R   read + decrypt a sealed secret
 *                                                      vs reading the same row unsealed
 *   bench: secret_request ours=V ms base=V ms ratio=R  secret_request to the loopback echo_server
 *                                                      (origin check, decrypt, auth, redaction)
 *                                                      vs a plain libcurl GET of the same URL
 *   bench: redact ours=V MB/s                          all ten forms over a 1 MiB body
 *   bench: memory_search ours=V ms base=V ms ratio=R   FTS5 over 2000 documents vs the
 *                                                      substring scan it falls back to
 *   bench: approval_check ours=V us                    three rule levels, 50 rules
 *   bench: history_redact ours=V us base=V us ratio=R  a 4 KiB output record with the actor's
 *                                                      secrets (3) and the credential patterns
 *                                                      redacted, vs the same record stored as is
 *
 * Medians of 50 (search: 30). RAKAZO_BENCH=NAME runs one figure. */

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/access/approval.h"
#include "engine/access/authz.h"
#include "engine/state/engine.h"
#include "engine/agent/memory.h"
#include "engine/access/secret.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

#define N 50

static struct rk_engine *eng;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static void die(const char *what, const struct rk_error *e)
{
	fprintf(stderr, "trust_bench: %s: %s\n", what, e ? e->message : "");
	exit(1);
}

static void bench_reveal(struct rk_actor *a)
{
	struct rk_error e;
	if (rk_secret_set(eng, a, "bench", "https://api.example.com", "bearer", "sk-bench-0123456789abcdef", 25, &e))
		die("set", &e);
	int64_t ours[N], base[N];
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		char *v;
		size_t n;
		if (rk_secret_reveal(eng, a, "bench", &v, &n, &e))
			die("reveal", &e);
		rk_secret_value_free(v, n);
		int64_t t1 = rk_monotonic_us();
		struct rk_stmt *st;
		rk_stmt_prepare_v2(eng->db,
				   "SELECT bot_id, origin, auth, auth_param, nonce, ciphertext FROM secrets WHERE user_id = ? "
				   "AND space_id = ? AND name = ? AND bot_id IN (?, '') ORDER BY bot_id = '' LIMIT 1",
				   -1, &st, NULL);
		rk_stmt_bind_text(st, 1, a->user, -1);
		rk_stmt_bind_text(st, 2, a->space, -1);
		rk_stmt_bind_text(st, 3, "bench", -1);
		rk_stmt_bind_text(st, 4, "", -1);
		rk_stmt_step(st);
		rk_stmt_finalize(st);
		int64_t t2 = rk_monotonic_us();
		ours[i] = t1 - t0;
		base[i] = t2 - t1;
	}
	double o = median(ours, N), b = median(base, N);
	printf("bench: secret_reveal ours=%.0f us base=%.0f us ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
}

static size_t sink(char *p, size_t s, size_t n, void *u)
{
	(void)p;
	(void)u;
	return s * n;
}

static void bench_request(struct rk_actor *a)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char *bin = rk_xasprintf("%s/tests/fixtures/echo_server", build);
	int p[2];
	if (access(bin, X_OK) != 0 || pipe(p) != 0) {
		printf("skip: secret_request: %s is not built\n", bin);
		free(bin);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	free(bin);
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[128] = "", url[96] = "";
	if (!fgets(line, sizeof(line), f) || sscanf(line, "listening on %63s", url) != 1)
		die("echo_server did not start", NULL);
	fclose(f);
	struct rk_error e;
	if (rk_secret_set(eng, a, "echo", url, "bearer", "sk-bench-0123456789abcdef", 25, &e))
		die("set", &e);
	char *target = rk_xasprintf("%s/bench", url);
	struct rk_secret_http req = {.name = "echo", .url = target};
	int64_t ours[N], base[N];
	CURL *c = curl_easy_init();
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		cJSON *out;
		if (rk_secret_send(eng, a, &req, &out, &e))
			die("send", &e);
		cJSON_Delete(out);
		int64_t t1 = rk_monotonic_us();
		curl_easy_reset(c);
		curl_easy_setopt(c, CURLOPT_URL, target);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
		curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L); /* ours opens a connection per call too */
		curl_easy_perform(c);
		int64_t t2 = rk_monotonic_us();
		ours[i] = t1 - t0;
		base[i] = t2 - t1;
	}
	curl_easy_cleanup(c);
	free(target);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	double o = median(ours, N) / 1000.0, b = median(base, N) / 1000.0;
	printf("bench: secret_request ours=%.2f ms base=%.2f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
}

static void bench_redact(void)
{
	const char *secret = "sk-bench-0123456789abcdef";
	struct rk_buf body = RK_BUF_INIT;
	rk_buf_init(&body);
	while (body.len < (1u << 20))
		rk_buf_adds(&body, "{\"items\":[1,2,3],\"note\":\"nothing secret here, just text to scan\"},");
	int64_t t[N / 5];
	for (int i = 0; i < N / 5; i++) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		rk_buf_add(&b, body.data, body.len);
		int64_t t0 = rk_monotonic_us();
		rk_secret_redact(&b, secret, strlen(secret));
		t[i] = rk_monotonic_us() - t0;
		rk_buf_release(&b);
	}
	double us = median(t, N / 5);
	printf("bench: redact ours=%.0f MB/s\n", us > 0 ? (double)body.len / us : 0);
	rk_buf_release(&body);
}

static void bench_search(struct rk_actor *a)
{
	struct rk_error e;
	static const char *words[] = {"deploy", "invoice", "garden", "kernel", "piano", "ticket", "router", "budget"};
	for (int i = 0; i < 2000; i++) {
		struct rk_buf b = RK_BUF_INIT;
		rk_buf_init(&b);
		for (int k = 0; k < 40; k++)
			rk_buf_printf(&b, "%s%d ", words[(i * 7 + k * 3) % 8], (i + k) % 97);
		if (i % 250 == 0)
			rk_buf_adds(&b, "the zebracrossing rule");
		char *path = rk_xasprintf("doc%04d.md", i);
		cJSON *o;
		if (rk_memory_write(eng, a, path, b.data, -1, NULL, &o, &e))
			die("write", &e);
		cJSON_Delete(o);
		free(path);
		rk_buf_release(&b);
	}
	int64_t ours[30], base[30];
	for (int i = 0; i < 30; i++) {
		cJSON *o;
		int64_t t0 = rk_monotonic_us();
		if (rk_memory_search(eng, a, "zebracrossing rule", 20, &o, &e))
			die("search", &e);
		cJSON_Delete(o);
		int64_t t1 = rk_monotonic_us();
		/* the fallback's own query: a substring scan of every document */
		if (rk_memory_search(eng, a, "ebracrossin", 20, &o, &e))
			die("search", &e);
		cJSON_Delete(o);
		int64_t t2 = rk_monotonic_us();
		ours[i] = t1 - t0;
		base[i] = t2 - t1;
	}
	/* the substring case runs the (empty) FTS pass first; that is what a user gets */
	double o = median(ours, 30) / 1000.0, b = median(base, 30) / 1000.0;
	printf("bench: memory_search ours=%.2f ms base=%.2f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
}

static void bench_approval(struct rk_actor *a)
{
	struct rk_error e;
	for (int i = 0; i < 50; i++) {
		char v[32], *id;
		snprintf(v, sizeof(v), "tool_%d", i);
		if (rk_approval_rule_add(eng, a, i % 2 ? "allow" : "require_approval", i % 3 == 0 ? "tool" : "connector",
					 v, 0, &id, &e))
			die("rule", &e);
		free(id);
	}
	int64_t t[N];
	for (int i = 0; i < N; i++) {
		struct rk_approval_decision d;
		int64_t t0 = rk_monotonic_us();
		if (rk_approval_evaluate(eng, a, "write_file", "{}", 0, &d, &e))
			die("evaluate", &e);
		t[i] = rk_monotonic_us() - t0;
	}
	printf("bench: approval_check ours=%.0f us\n", median(t, N));
}

static void bench_history(struct rk_actor *a)
{
	struct rk_error e;
	const char *names[] = {"hist-a", "hist-b", "hist-c"};
	for (int i = 0; i < 3; i++)
		if (rk_secret_set(eng, a, names[i], "https://api.example.com", "bearer", "sk-hist-0123456789abcdef", 24,
				  &e))
			die("set", &e);
	struct rk_buf chunk;
	rk_buf_init(&chunk);
	while (chunk.len < 4096)
		rk_buf_adds(&chunk, "total 48 drwxr-xr-x 2 user user 4096 notes; export TOKEN=abc; curl -H "
				    "'Authorization: Bearer xyz' https://api.example.com/v1\n");
	int64_t ours[N], base[N];
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		struct rk_buf b;
		rk_buf_init(&b);
		rk_buf_add(&b, chunk.data, chunk.len);
		rk_secret_redact_history(eng, a, &b);
		if (rk_db_history_append(eng->db, "cmp_bench", "cse_bench", NULL, "output", b.data, b.len, -1, -1, &e))
			die("history", &e);
		rk_buf_release(&b);
		int64_t t1 = rk_monotonic_us();
		if (rk_db_history_append(eng->db, "cmp_bench", "cse_bench", NULL, "output", chunk.data, chunk.len, -1,
					 -1, &e))
			die("history", &e);
		int64_t t2 = rk_monotonic_us();
		ours[i] = t1 - t0;
		base[i] = t2 - t1;
	}
	rk_buf_release(&chunk);
	double o = median(ours, N), b = median(base, N);
	printf("bench: history_redact ours=%.0f us base=%.0f us ratio=%.2f\n", o, b, b > 0 ? o / b : 0);
}

int main(void)
{
	rk_engine_hooks_init();
	char tmpl[] = "/tmp/rakazo-trust-bench-XXXXXX";
	char *d = mkdtemp(tmpl);
	if (!d)
		return 1;
	setenv("RAKAZO_DATA_DIR", d, 1);
	setenv("RAKAZO_NO_WORKER", "1", 1);
	unsetenv("RAKAZO_JUDGE_MODEL");
	unsetenv("RAKAZO_MASTER_KEY");
	setenv("RAKAZO_USER", "bench", 1);
	struct rk_error e;
	if (rk_engine_open(&eng, &e))
		die("engine", &e);
	struct rk_actor a;
	if (rk_actor_resolve(&a, eng, NULL, NULL, &e))
		die("actor", &e);
	if (want("secret_reveal"))
		bench_reveal(&a);
	if (want("secret_request"))
		bench_request(&a);
	if (want("redact"))
		bench_redact();
	if (want("memory_search"))
		bench_search(&a);
	if (want("approval_check"))
		bench_approval(&a);
	if (want("history_redact"))
		bench_history(&a);
	rk_actor_release(&a);
	char *dir = rk_xstrdup(eng->data_dir);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, &e);
	free(dir);
	return 0;
}
