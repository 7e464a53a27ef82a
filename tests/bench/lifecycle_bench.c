/* make bench: lifecycle commands per second on each state backend (issue 14).
 *
 * One fake computer on each backend, then pause and resume commands one
 * after the other, on the two in turns of SLICE_MS for BENCH_MS in all (so
 * both see the same load on a shared machine): every command is saved (rk_execution_submit: its command
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

#include "engine/agent/hooks.h"
#include "engine/state/engine.h"
#include "engine/machine/execution.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"
#include "pg_server.h"

#define BENCH_MS 8000
#define SLICE_MS 250

/* One backend's engine with its computer, and what it did so far. */
struct side {
	struct rk_engine *eng;
	long n;
	int64_t ms;
};

/* Opens the engine of the backend the environment names, on data_dir, and
 * creates the computer; 0 or -1 (said on stderr). */
static int side_open(struct side *sd, const char *data_dir)
{
	setenv("RAKAZO_DATA_DIR", data_dir, 1);
	struct rk_error e;
	if (rk_engine_open(&sd->eng, &e) != 0) {
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
	int existed, r = rk_execution_submit(sd->eng, &s, &x, &existed, &e);
	if (r == 0)
		rk_worker_run(sd->eng, &once, &e);
	rk_execution_release(&x);
	cJSON_Delete(body);
	if (r)
		fprintf(stderr, "lifecycle_bench: create: %s\n", e.message);
	return r ? -1 : 0;
}

/* Pause and resume, one after the other, for ms; -1 when one did not succeed. */
static int side_run(struct side *sd, int64_t ms)
{
	struct rk_worker_options once = {.once = 1};
	struct rk_error e;
	int existed;
	int64_t t0 = rk_monotonic_ms(), t;
	while ((t = rk_monotonic_ms()) - t0 < ms) {
		struct rk_submit l = {.op = sd->n % 2 ? "resume" : "pause", .computer = "bench"};
		struct rk_execution y = {0}, z = {0};
		int ok = rk_execution_submit(sd->eng, &l, &y, &existed, &e) == 0;
		if (ok) {
			rk_worker_run(sd->eng, &once, &e);
			ok = rk_execution_get(sd->eng, y.id, &z, &e) == 0 && !strcmp(z.state, "succeeded");
			if (!ok && z.state)
				snprintf(e.message, sizeof(e.message), "%s ended %s", l.op, z.state);
		}
		rk_execution_release(&y);
		rk_execution_release(&z);
		if (!ok) {
			fprintf(stderr, "lifecycle_bench: %s\n", e.message);
			return -1;
		}
		sd->n++;
	}
	sd->ms += t - t0;
	return 0;
}

int main(void)
{
	rk_engine_hooks_init();
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
	char url[1024];
	int up = bench_pg_start(pg, url, sizeof(url));
	char *data = rk_xasprintf("%s/data-dir", pg);
	struct side base = {0}, ours = {0};
	int r = -1;
	/* both open at once, run in turns of SLICE_MS: the same load on each */
	if (!up)
		fprintf(stderr, "lifecycle_bench: the PostgreSQL server did not start\n");
	else if (side_open(&base, sq) == 0 && (setenv("RAKAZO_DATABASE_URL", url, 1), side_open(&ours, data)) == 0) {
		r = 0;
		for (int64_t done = 0; r == 0 && done < BENCH_MS; done += 2 * SLICE_MS)
			r = side_run(&base, SLICE_MS) || side_run(&ours, SLICE_MS) ? -1 : 0;
	}
	rk_engine_free(base.eng);
	rk_engine_free(ours.eng);
	if (bench_pg_stop(pg) != 0)
		fprintf(stderr, "lifecycle_bench: stopping the server failed\n");
	rk_fs_remove_tree(sq, NULL);
	rk_fs_remove_tree(pg, NULL);
	free(data);
	if (r)
		return 1;
	double ocps = ours.n * 1000.0 / (double)ours.ms, bcps = base.n * 1000.0 / (double)base.ms;
	printf("bench: lifecycle_cps ours=%.1f cmd/s base=%.1f cmd/s ratio=%.2f\n", ocps, bcps, ocps / bcps);
	return 0;
}
