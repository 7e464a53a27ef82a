/* Checkpoint figures (issue 6) on a generated home in /tmp: 10,000 small
 * text files (1-16 KB) plus a few big random files, ~200 MB in all.
 *   checkpoint_full         first snapshot into an empty store vs `tar --zstd -cf` of the same tree
 *   checkpoint_marker_20mb  `rakazo checkpoint create`'s path on a docker computer (a mounted
 *                           home, revisions_kept = 1: a marker; the computer's lock, the
 *                           home's recovery and the database record included) with a 20 MB
 *                           home, vs `tar --zstd -cf` of the same home
 *   checkpoint_marker_200mb the same with a 200 MB home: the time must not grow
 *                           (docker down: a fake computer, also mounted, and a note says so)
 *   checkpoint_incremental  a snapshot after a 1 MB change vs the full one (target ratio <= 0.05)
 * Each figure is the median of several runs, ours and base alternating.
 * RAKAZO_BENCH=NAME runs one figure. */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/checkpoint.h"
#include "engine/machine/execution.h"
#include "engine/store/workspace.h"
#include "engine/machine/worker.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "home_gen.h"

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static int64_t checkpoint_us(const char *data_dir, const char *key, const char *src, enum rk_workspace_kind kind,
			     int keep)
{
	struct rk_workspace_store *s = rk_workspace_store_local_new(data_dir);
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "bench", .kind = kind, .keep = keep};
	struct rk_workspace_checkpoint rev = {0};
	struct rk_error e;
	int64_t t0 = rk_monotonic_us();
	int r = s->ops->checkpoint(s, key, &req, &rev, &e);
	int64_t t = rk_monotonic_us() - t0;
	if (r)
		fprintf(stderr, "checkpoint failed: %s\n", e.message);
	rk_workspace_checkpoint_release(&rev);
	s->ops->free(s);
	return r ? -1 : t;
}

static int64_t tar_us(const char *src, const char *out)
{
	int64_t t0 = rk_monotonic_us();
	pid_t pid = fork();
	if (pid == 0) {
		execlp("tar", "tar", "--zstd", "-cf", out, "-C", src, ".", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	int64_t t = rk_monotonic_us() - t0;
	unlink(out);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

static void drop_store(const char *data_dir)
{
	char *p = rk_path_join(data_dir, "objects");
	rk_fs_remove_tree(p, NULL);
	free(p);
	p = rk_path_join(data_dir, "home-revisions");
	rk_fs_remove_tree(p, NULL);
	free(p);
}

/* --- the docker marker advance: rk_checkpoint_create on a mounted computer ------------- */

static struct rk_engine *eng;
static const char *marker_kind; /* "docker", or "fake" when docker is down */

static int lifecycle(const char *op, const char *computer, cJSON *body)
{
	struct rk_submit s = {.op = op, .computer = computer, .body = body};
	struct rk_execution x = {0}, done = {0};
	struct rk_error e;
	int existed;
	int r = rk_execution_submit(eng, &s, &x, &existed, &e);
	if (r == 0) {
		struct rk_worker_options o = {.once = 1};
		rk_worker_run(eng, &o, &e);
		r = rk_execution_get(eng, x.id, &done, &e);
		if (r == 0 && strcmp(done.state, "succeeded") != 0) {
			fprintf(stderr, "%s %s: %s\n", op, computer ? computer : "", done.error_message ? done.error_message : done.state);
			r = -1;
		}
	} else {
		fprintf(stderr, "%s: %s\n", op, e.message);
	}
	rk_execution_release(&x);
	rk_execution_release(&done);
	return r;
}

/* A computer (no desktop, one revision kept: its checkpoints are markers)
 * whose home holds the tree make() generates. Its home dir in *home. */
static int marker_computer(const char *name, struct rk_computer *c, char **home, void (*make)(const char *))
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "name", name);
	cJSON_AddStringToObject(b, "provider", marker_kind);
	cJSON_AddBoolToObject(b, "desktop", 0);
	cJSON_AddNumberToObject(b, "revisions", 1);
	int r = lifecycle("create", NULL, b);
	cJSON_Delete(b);
	struct rk_error e;
	if (r || rk_db_computer_get(eng->db, name, c, &e) != 0 || rk_workspace_dir(eng->data_dir, c->home_key, home, &e) != 0)
		return -1;
	make(*home);
	return 0;
}

static void make20(const char *home)
{
	generate(home, 1000, 1, 11); /* ~8.5 MB small + 11 MB + 1 MB */
}

static void make200(const char *home)
{
	generate(home, 10000, 3, 37);
}

/* The median of N marker checkpoints through rk_checkpoint_create (the
 * computer's lock, the home's recovery, the store's marker and the
 * database record), beside the median of tar --zstd of the same home. */
static int bench_marker(const char *figure, const char *name, void (*make)(const char *), const char *tarout,
			double *ours_ms)
{
	struct rk_computer c = {0};
	char *home = NULL;
	if (marker_computer(name, &c, &home, make) != 0) {
		fprintf(stderr, "%s: no %s computer\n", figure, marker_kind);
		return 1;
	}
	enum { N = 21, NB = 3 };
	int64_t ours[N], base[NB];
	int status = 0;
	tar_us(home, tarout); /* warm the page cache */
	for (int i = 0; i < N; i++) {
		struct rk_workspace_checkpoint rev = {0};
		struct rk_error e;
		int64_t t0 = rk_monotonic_us();
		int r = rk_checkpoint_create(eng, &c, "bench", RK_QUIESCE, &rev, &e);
		ours[i] = rk_monotonic_us() - t0;
		if (r || rev.kind != RK_WORKSPACE_MARKER) {
			fprintf(stderr, "%s: %s\n", figure, r ? e.message : "not a marker");
			status = 1;
		}
		rk_workspace_checkpoint_release(&rev);
		if (i < NB && (base[i] = tar_us(home, tarout)) < 0)
			status = 1;
	}
	*ours_ms = median_ms(ours, N);
	double b = median_ms(base, NB);
	printf("bench: %s ours=%.2f ms base=%.1f ms ratio=%.5f\n", figure, *ours_ms, b, *ours_ms / b);
	lifecycle("delete", name, NULL);
	free(home);
	rk_computer_release(&c);
	return status;
}

/* The engine on data, with the docker provider when it is up. */
static int open_engine(const char *data)
{
	setenv("RAKAZO_DATA_DIR", data, 1);
	if (!getenv("RAKAZO_OWNER"))
		setenv("RAKAZO_OWNER", "user:bench", 1);
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		fprintf(stderr, "engine: %s\n", e.message);
		return -1;
	}
	const struct rk_provider_ops *d = rk_provider_find("docker");
	marker_kind = d && d->check && d->check(&e) == 0 ? "docker" : "fake";
	printf("checkpoint_bench: markers on a %s computer%s\n", marker_kind,
	       strcmp(marker_kind, "docker") ? " (docker is down)" : "");
	return 0;
}

int main(void)
{
	rk_engine_hooks_init();
	if (!want("checkpoint_full") && !want("checkpoint_incremental") && !want("checkpoint_marker_20mb") &&
	    !want("checkpoint_marker_200mb"))
		return 0;
	char tmpl[] = "/tmp/rk-ckbench-XXXXXX";
	char *root = mkdtemp(tmpl);
	if (!root) {
		perror("mkdtemp");
		return 1;
	}
	char *data = rk_path_join(root, "data");
	char *home200 = rk_path_join(root, "data/homes/h200");
	char *tarout = rk_path_join(root, "base.tar.zst");
	/* 10,000 small files (~85 MB) + 3 x 37 MB random + 1 MB = ~197 MB */
	if (want("checkpoint_full") || want("checkpoint_incremental"))
		generate(home200, 10000, 3, 37);
	int status = 0;

	double full_ms = 0;
	if (want("checkpoint_full") || want("checkpoint_incremental")) {
		enum { N = 3 };
		int64_t ours[N], base[N];
		tar_us(home200, tarout); /* warm the page cache for both */
		for (int i = 0; i < N; i++) {
			drop_store(data);
			ours[i] = checkpoint_us(data, "h200", home200, RK_WORKSPACE_SNAPSHOT, 5);
			base[i] = tar_us(home200, tarout);
			if (ours[i] < 0 || base[i] < 0)
				status = 1;
		}
		full_ms = median_ms(ours, N);
		double b = median_ms(base, N);
		if (want("checkpoint_full"))
			printf("bench: checkpoint_full ours=%.1f ms base=%.1f ms ratio=%.3f\n", full_ms, b, full_ms / b);
	}
	if (want("checkpoint_incremental")) {
		enum { N = 5 };
		int64_t ours[N];
		char *p = rk_path_join(home200, "change.bin");
		unsigned char *mb = rk_xmalloc(1 << 20);
		for (int i = 0; i < N; i++) {
			rk_random_bytes(mb, 1 << 20);
			write_file(p, mb, 1 << 20);
			ours[i] = checkpoint_us(data, "h200", home200, RK_WORKSPACE_SNAPSHOT, 5);
			if (ours[i] < 0)
				status = 1;
		}
		free(mb);
		free(p);
		double o = median_ms(ours, N);
		printf("bench: checkpoint_incremental ours=%.1f ms base=%.1f ms ratio=%.3f\n", o, full_ms, o / full_ms);
	}
	if (want("checkpoint_marker_20mb") || want("checkpoint_marker_200mb")) {
		char *mdata = rk_path_join(root, "mdata");
		double m20 = 0, m200 = 0;
		if (open_engine(mdata) != 0) {
			status = 1;
		} else {
			if (want("checkpoint_marker_20mb"))
				status |= bench_marker("checkpoint_marker_20mb", "m20", make20, tarout, &m20);
			if (want("checkpoint_marker_200mb"))
				status |= bench_marker("checkpoint_marker_200mb", "m200", make200, tarout, &m200);
			if (m20 > 0 && m200 > 0)
				printf("checkpoint_bench: marker 200 MB / 20 MB = %.2f (flat: about 1)\n", m200 / m20);
			rk_engine_free(eng);
		}
		free(mdata);
	}
	rk_fs_remove_tree(root, NULL);
	free(data);
	free(home200);
	free(tarout);
	return status;
}
