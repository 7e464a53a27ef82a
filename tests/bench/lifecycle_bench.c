/* make bench: lifecycle commands per second on each state backend (issue 14).
 *
 * One fake computer, then pause and resume commands one after the other for
 * BENCH_MS each: every command is saved (rk_execution_submit: its command
 * key, the one-at-a-time check, its events) and run by the worker in this
 * process (claim, phases, provider call, state, events), as `rakazo
 * computer pause --wait` has them done, without the process start.
 *
 *   lifecycle_cps  ours: on PostgreSQL (a throwaway server from
 *                  scripts/pg.sh, on a unix socket); base: on SQLite in
 *                  the data directory (the default), the same run
 *
 * Without a PostgreSQL server installed it prints "skip: ..." and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../engine/engine.h"
#include "../../engine/execution.h"
#include "../../engine/util/fs.h"
#include "../../engine/util/time.h"
#include "../../engine/worker.h"

#define BENCH_MS 4000

/* Commands per second for BENCH_MS on the backend the environment names; -1 on failure. */
static double measure(const char *data_dir)
{
	setenv("RAKAZO_DATA_DIR", data_dir, 1);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		fprintf(stderr, "lifecycle_bench: %s\n", e.message);
		return -1;
	}
	struct rk_worker_options once = {.once = 1};
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", "bench");
	cJSON_AddStringToObject(body, "provider", "fake");
	cJSON_AddBoolToObject(body, "desktop", 0);
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0};
	int existed;
	double cps = -1;
	if (rk_execution_submit(eng, &s, &x, &existed, &e) != 0)
		goto out;
	rk_worker_run(eng, &once, &e);
	long n = 0;
	int64_t t0 = rk_monotonic_ms(), t;
	while ((t = rk_monotonic_ms()) - t0 < BENCH_MS) {
		struct rk_submit l = {.op = n % 2 ? "resume" : "pause", .computer = "bench"};
		struct rk_execution y = {0}, z = {0};
		if (rk_execution_submit(eng, &l, &y, &existed, &e) != 0)
			goto out;
		rk_worker_run(eng, &once, &e);
		int ok = rk_execution_get(eng, y.id, &z, &e) == 0 && !strcmp(z.state, "succeeded");
		if (!ok)
			snprintf(e.message, sizeof(e.message), "%s ended %s", l.op, z.state ? z.state : "unknown");
		rk_execution_release(&y);
		rk_execution_release(&z);
		if (!ok)
			goto out;
		n++;
	}
	cps = n * 1000.0 / (double)(t - t0);
out:
	if (cps < 0)
		fprintf(stderr, "lifecycle_bench: %s\n", e.message);
	rk_execution_release(&x);
	cJSON_Delete(body);
	rk_engine_free(eng);
	return cps;
}

int main(void)
{
	const char *w = getenv("RAKAZO_BENCH");
	if (w && *w && strcmp(w, "lifecycle_cps") != 0)
		return 0;
	if (system("ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1") != 0) {
		printf("skip: lifecycle_cps (PostgreSQL's server is not installed: make deps)\n");
		return 0;
	}
	setenv("RAKAZO_NO_WORKER", "1", 1);
	unsetenv("RAKAZO_DATABASE_URL");
	char sq[] = "/tmp/rk-life-bench-XXXXXX", pg[] = "/tmp/rk-life-pg-XXXXXX";
	if (!mkdtemp(sq) || !mkdtemp(pg)) {
		fprintf(stderr, "lifecycle_bench: mkdtemp failed\n");
		return 1;
	}
	double base = measure(sq);
	char *start = rk_xasprintf("sh scripts/pg.sh start %s", pg);
	FILE *f = popen(start, "r");
	char url[1024] = "";
	int up = f && fgets(url, sizeof(url), f) && pclose(f) == 0;
	url[strcspn(url, "\n")] = '\0';
	double ours = -1;
	char *data = rk_xasprintf("%s/data-dir", pg);
	if (up) {
		setenv("RAKAZO_DATABASE_URL", url, 1);
		ours = measure(data);
	} else {
		fprintf(stderr, "lifecycle_bench: the PostgreSQL server did not start\n");
	}
	char *stop = rk_xasprintf("sh scripts/pg.sh stop %s >/dev/null", pg);
	if (system(stop) != 0)
		fprintf(stderr, "lifecycle_bench: stopping the server failed\n");
	rk_fs_remove_tree(sq, NULL);
	rk_fs_remove_tree(pg, NULL);
	free(start);
	free(stop);
	free(data);
	if (ours < 0 || base < 0)
		return 1;
	printf("bench: lifecycle_cps ours=%.1f cmd/s base=%.1f cmd/s ratio=%.2f\n", ours, base, ours / base);
	return 0;
}
