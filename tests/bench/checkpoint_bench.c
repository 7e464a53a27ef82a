/* Checkpoint figures (issue 6) on a generated home in /tmp: 10,000 small
 * text files (1-16 KB) plus a few big random files, ~200 MB in all.
 *   checkpoint_full         first snapshot into an empty store vs `tar --zstd -cf` of the same tree
 *   checkpoint_marker_20mb  a marker checkpoint of a 20 MB home (revisions_kept = 1)
 *   checkpoint_marker_200mb the same on the 200 MB home: the time must not grow
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

#include "../../engine/home.h"
#include "../../engine/util/buf.h"
#include "../../engine/util/fs.h"
#include "../../engine/util/id.h"
#include "../../engine/util/time.h"
#include "home_gen.h"

static int want(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || !strcmp(w, name);
}

static int64_t checkpoint_us(const char *data_dir, const char *key, const char *src, enum rk_home_kind kind,
			     int keep)
{
	struct rk_home_store *s = rk_home_store_local_new(data_dir);
	struct rk_home_checkpoint_req req = {.src_dir = src, .reason = "bench", .kind = kind, .keep = keep};
	struct rk_home_revision rev = {0};
	struct rk_error e;
	int64_t t0 = rk_monotonic_us();
	int r = s->ops->checkpoint(s, key, &req, &rev, &e);
	int64_t t = rk_monotonic_us() - t0;
	if (r)
		fprintf(stderr, "checkpoint failed: %s\n", e.message);
	rk_home_revision_release(&rev);
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

int main(void)
{
	char tmpl[] = "/tmp/rk-ckbench-XXXXXX";
	char *root = mkdtemp(tmpl);
	if (!root) {
		perror("mkdtemp");
		return 1;
	}
	char *data = rk_path_join(root, "data");
	char *home200 = rk_path_join(root, "data/homes/h200");
	char *home20 = rk_path_join(root, "data/homes/h20");
	char *tarout = rk_path_join(root, "base.tar.zst");
	/* 10,000 small files (~85 MB) + 3 x 37 MB random + 1 MB = ~197 MB */
	generate(home200, 10000, 3, 37);
	int status = 0;

	double full_ms = 0;
	if (want("checkpoint_full") || want("checkpoint_incremental")) {
		enum { N = 3 };
		int64_t ours[N], base[N];
		tar_us(home200, tarout); /* warm the page cache for both */
		for (int i = 0; i < N; i++) {
			drop_store(data);
			ours[i] = checkpoint_us(data, "h200", home200, RK_HOME_SNAPSHOT, 5);
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
			ours[i] = checkpoint_us(data, "h200", home200, RK_HOME_SNAPSHOT, 5);
			if (ours[i] < 0)
				status = 1;
		}
		free(mb);
		free(p);
		double o = median_ms(ours, N);
		printf("bench: checkpoint_incremental ours=%.1f ms base=%.1f ms ratio=%.3f\n", o, full_ms, o / full_ms);
	}
	if (want("checkpoint_marker_20mb")) {
		generate(home20, 1000, 1, 11); /* ~8.5 MB small + 11 MB */
		enum { N = 21 };
		int64_t ours[N];
		for (int i = 0; i < N; i++)
			if ((ours[i] = checkpoint_us(data, "h20", home20, RK_HOME_MARKER, 1)) < 0)
				status = 1;
		printf("bench: checkpoint_marker_20mb ours=%.2f ms\n", median_ms(ours, N));
	}
	if (want("checkpoint_marker_200mb")) {
		enum { N = 21 };
		int64_t ours[N];
		for (int i = 0; i < N; i++)
			if ((ours[i] = checkpoint_us(data, "h200m", home200, RK_HOME_MARKER, 1)) < 0)
				status = 1;
		printf("bench: checkpoint_marker_200mb ours=%.2f ms\n", median_ms(ours, N));
	}
	rk_fs_remove_tree(root, NULL);
	free(data);
	free(home200);
	free(home20);
	free(tarout);
	return status;
}
