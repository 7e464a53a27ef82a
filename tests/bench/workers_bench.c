/* make bench: lifecycle commands per second with 1, 2 and 4 workers, on
 * SQLite and on PostgreSQL (issue 14).
 *
 * For each backend and worker count: COMPUTERS fake computers, then N
 * `rakazo worker --join` processes, while this process keeps every computer
 * busy (a pause, then a resume, ... each saved as `rakazo computer pause`
 * saves it) for RUN_MS. The fake provider takes DELAY_MS per call, as a
 * real one takes its time: what more workers buy is overlap.
 *
 *   lifecycle_cps_BACKEND_w1  commands finished per second, one worker
 *   lifecycle_cps_BACKEND_wN  the same with N workers; base: one worker,
 *                             the same run
 *
 * PostgreSQL is a throwaway server (scripts/pg.sh, a unix socket); without
 * its server installed that half prints "skip: ...". */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/state/engine.h"
#include "engine/machine/execution.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"
#include "pg_server.h"

#define COMPUTERS 8
#define RUN_MS 6000
#define DELAY_MS "40"

static const char *rakazo_bin(void)
{
	const char *b = getenv("RAKAZO_BIN");
	return b && *b ? b : "build/rakazo";
}

static pid_t start_worker(void)
{
	pid_t p = fork();
	if (p == 0) {
		int dn = open("/dev/null", 0);
		if (dn >= 0) {
			dup2(dn, 1);
			dup2(dn, 2);
		}
		execl(rakazo_bin(), "rakazo", "worker", "--join", (char *)NULL);
		_exit(127);
	}
	return p;
}

/* Submits op on computer i; its execution id in id (malloc'd) or NULL. */
static char *submit(struct rk_engine *eng, const char *op, const char *name)
{
	struct rk_submit s = {.op = op, .computer = name};
	struct rk_execution x = {0};
	struct rk_error e;
	int existed;
	char *id = NULL;
	if (rk_execution_submit(eng, &s, &x, &existed, &e) == 0)
		id = strdup(x.id);
	else
		fprintf(stderr, "workers_bench: %s %s: %s\n", op, name, e.message);
	rk_execution_release(&x);
	return id;
}

/* 1 done (succeeded), 0 not yet, -1 ended otherwise. */
static int settled(struct rk_engine *eng, const char *id)
{
	struct rk_execution x = {0};
	struct rk_error e;
	int r = 0;
	if (rk_execution_get(eng, id, &x, &e) == 0) {
		if (!strcmp(x.state, "succeeded"))
			r = 1;
		else if (rk_execution_state_is_final(x.state) || !strcmp(x.state, "outcome_unknown"))
			r = -1;
	}
	rk_execution_release(&x);
	return r;
}

/* The throwaway PostgreSQL's directory, when measuring on it. */
static const char *pg_dir;

/* One measurement: commands per second with n workers, in a fresh data
 * directory (and on PostgreSQL a fresh database); < 0 on failure. */
static double measure(int n)
{
	char dir[] = "/tmp/rk-workers-bench-XXXXXX";
	if (!mkdtemp(dir))
		return -1;
	if (pg_dir) {
		char *mk = rk_xasprintf("psql -h %s -U rakazo -d postgres -qtAc 'CREATE DATABASE wb_%d' >/dev/null", pg_dir, n);
		char *url = rk_xasprintf("postgresql://rakazo@/wb_%d?host=%s", n, pg_dir);
		int ok = system(mk) == 0;
		setenv("RAKAZO_DATABASE_URL", url, 1);
		free(mk);
		free(url);
		if (!ok)
			return -1;
	}
	setenv("RAKAZO_DATA_DIR", dir, 1);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		fprintf(stderr, "workers_bench: %s\n", e.message);
		return -1;
	}
	char *ids[COMPUTERS] = {0};
	char names[COMPUTERS][16];
	for (int i = 0; i < COMPUTERS; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		cJSON *body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "name", names[i]);
		cJSON_AddStringToObject(body, "provider", "fake");
		cJSON_AddBoolToObject(body, "desktop", 0);
		struct rk_submit s = {.op = "create", .body = body};
		struct rk_execution x = {0};
		int existed;
		if (rk_execution_submit(eng, &s, &x, &existed, &e) == 0)
			ids[i] = strdup(x.id);
		rk_execution_release(&x);
		cJSON_Delete(body);
	}
	pid_t w[4];
	for (int i = 0; i < n; i++)
		w[i] = start_worker();
	/* the creates first, untimed */
	int64_t until = rk_monotonic_ms() + 60000;
	for (int i = 0; i < COMPUTERS; i++)
		while (ids[i] && settled(eng, ids[i]) == 0 && rk_monotonic_ms() < until)
			rk_sleep_ms(5);
	long done = 0, bad = 0, k[COMPUTERS] = {0};
	for (int i = 0; i < COMPUTERS; i++) {
		free(ids[i]);
		ids[i] = submit(eng, "pause", names[i]);
	}
	int64_t t0 = rk_monotonic_ms();
	while (rk_monotonic_ms() - t0 < RUN_MS && !bad) {
		for (int i = 0; i < COMPUTERS; i++) {
			int s = ids[i] ? settled(eng, ids[i]) : -1;
			if (s < 0) {
				bad = 1;
				break;
			}
			if (s == 0)
				continue;
			done++;
			k[i]++;
			free(ids[i]);
			ids[i] = submit(eng, k[i] % 2 ? "resume" : "pause", names[i]);
		}
		rk_sleep_ms(2);
	}
	int64_t ms = rk_monotonic_ms() - t0;
	for (int i = 0; i < n; i++) {
		kill(w[i], SIGTERM);
		waitpid(w[i], NULL, 0);
	}
	for (int i = 0; i < COMPUTERS; i++)
		free(ids[i]);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	if (bad) {
		fprintf(stderr, "workers_bench: a command did not succeed\n");
		return -1;
	}
	return done * 1000.0 / (double)ms;
}

static int backend(const char *name)
{
	static const int counts[] = {1, 2, 4};
	double cps[3];
	for (int i = 0; i < 3; i++)
		if ((cps[i] = measure(counts[i])) < 0)
			return -1;
	printf("bench: lifecycle_cps_%s_w1 ours=%.1f cmd/s\n", name, cps[0]);
	for (int i = 1; i < 3; i++)
		printf("bench: lifecycle_cps_%s_w%d ours=%.1f cmd/s base=%.1f cmd/s ratio=%.2f\n", name, counts[i], cps[i],
		       cps[0], cps[i] / cps[0]);
	return 0;
}

int main(void)
{
	rk_engine_hooks_init();
	const char *w = getenv("RAKAZO_BENCH");
	if (w && *w && strncmp(w, "lifecycle_cps_", 14) != 0)
		return 0;
	setenv("RAKAZO_NO_WORKER", "1", 1);
	setenv("RAKAZO_FAKE_DELAY_MS", DELAY_MS, 1);
	unsetenv("RAKAZO_DATABASE_URL");
	int r = backend("sqlite");
	if (system("ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1") != 0) {
		printf("skip: lifecycle_cps_postgresql_* (PostgreSQL's server is not installed: make deps)\n");
		return r ? 1 : 0;
	}
	char pg[] = "/tmp/rk-workers-pg-XXXXXX";
	if (!mkdtemp(pg))
		return 1;
	char url[1024];
	int up = bench_pg_start(pg, url, sizeof(url));
	if (!up) {
		fprintf(stderr, "workers_bench: the PostgreSQL server did not start\n");
		r = -1;
	} else {
		pg_dir = pg;
		r |= backend("postgresql");
	}
	if (bench_pg_stop(pg) != 0)
		fprintf(stderr, "workers_bench: stopping the server failed\n");
	rk_fs_remove_tree(pg, NULL);
	return r ? 1 : 0;
}
