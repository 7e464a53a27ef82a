/* The S3 home store's checkpoint figure (issue 14), against a local s3rver
 * on loopback (tests/s3/start.sh), on the home checkpoint_bench generates:
 * 10,000 small text files (1-16 KB) plus three 37 MB random files, ~200 MB.
 *   checkpoint_s3_incremental  a checkpoint after a 1 MB change (ours) vs
 *                              the full first upload of the same home (base)
 * The full upload is one run into an empty prefix (it takes a while); the
 * incremental is the median of five. Prints what went up, and how long a
 * whole restore takes, on stderr.
 * Prints "skip: ..." when node or s3rver is missing. */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "engine/store/workspace.h"
#include "engine/util/time.h"
#include "home_gen.h"

static int64_t checkpoint_us(struct rk_workspace_store *s, const char *src)
{
	struct rk_workspace_checkpoint_req req = {.src_dir = src, .reason = "bench", .kind = RK_WORKSPACE_SNAPSHOT, .keep = 5};
	struct rk_workspace_checkpoint rev = {0};
	struct rk_error e;
	int64_t t0 = rk_monotonic_us();
	int r = s->ops->checkpoint(s, "h200", &req, &rev, &e);
	int64_t t = rk_monotonic_us() - t0;
	if (r)
		fprintf(stderr, "s3 checkpoint failed: %s\n", e.message);
	rk_workspace_checkpoint_release(&rev);
	return r ? -1 : t;
}

int main(void)
{
	const char *w = getenv("RAKAZO_BENCH");
	if (w && *w && strcmp(w, "checkpoint_s3_incremental"))
		return 0;
	char tmpl[] = "/tmp/rk-s3bench-XXXXXX";
	char *root = mkdtemp(tmpl);
	if (!root) {
		perror("mkdtemp");
		return 1;
	}
	char *cmd = rk_xasprintf("sh tests/s3/start.sh '%s/s3' rakazo-bench %d", root, (int)getpid());
	FILE *p = popen(cmd, "r");
	free(cmd);
	char line[256], *endpoint = NULL;
	pid_t pid = 0;
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "endpoint=", 9))
			endpoint = rk_xstrdup(line + 9);
		else if (!strncmp(line, "pid=", 4))
			pid = (pid_t)atoi(line + 4);
	}
	if (p)
		pclose(p);
	if (!endpoint || pid <= 0) {
		printf("skip: checkpoint_s3_incremental: s3rver did not start (sh tests/s3/setup.sh installs it)\n");
		rk_fs_remove_tree(root, NULL);
		return 0;
	}
	setenv("RAKAZO_S3_ENDPOINT", endpoint, 1);
	setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
	char *data = rk_path_join(root, "data");
	char *home = rk_path_join(root, "data/homes/h200");
	generate(home, 10000, 3, 37);
	struct rk_error e;
	struct rk_workspace_store *s = rk_workspace_store_s3_new("s3://rakazo-bench/bench", data, &e);
	int status = 1;
	if (!s) {
		fprintf(stderr, "s3 store: %s\n", e.message);
		goto out;
	}
	struct rk_workspace_s3_stats st0, st1, st2;
	int64_t full = checkpoint_us(s, home);
	rk_workspace_s3_stats(s, &st0);
	enum { N = 5 };
	int64_t inc[N];
	char *change = rk_path_join(home, "change.bin");
	unsigned char *mb = rk_xmalloc(1 << 20);
	status = full < 0;
	for (int i = 0; i < N; i++) {
		rk_workspace_s3_stats(s, &st1);
		rk_random_bytes(mb, 1 << 20);
		write_file(change, mb, 1 << 20);
		if ((inc[i] = checkpoint_us(s, home)) < 0)
			status = 1;
	}
	rk_workspace_s3_stats(s, &st2);
	free(mb);
	free(change);
	if (status == 0) {
		double b = (double)full / 1000.0, o = median_ms(inc, N);
		fprintf(stderr, "s3 full: %lld objects, %.1f MB up; last incremental: %lld objects, %.2f MB up\n",
			(long long)(st0.object_puts + st0.multipart_uploads), (double)st0.bytes_uploaded / 1048576.0,
			(long long)(st2.object_puts + st2.multipart_uploads - st1.object_puts - st1.multipart_uploads),
			(double)(st2.bytes_uploaded - st1.bytes_uploaded) / 1048576.0);
		printf("bench: checkpoint_s3_incremental ours=%.1f ms base=%.1f ms ratio=%.3f\n", o, b, o / b);
		/* for the report: a whole restore (downloads checked, swapped in) */
		char *dest = rk_path_join(root, "restored");
		int64_t t0 = rk_monotonic_us();
		int r = s->ops->restore(s, "h200", NULL, dest, NULL, &e);
		fprintf(stderr, "s3 restore of the home: %s in %.1f ms\n", r ? e.message : "ok",
			(double)(rk_monotonic_us() - t0) / 1000.0);
		free(dest);
	}
	s->ops->free(s);
out:
	kill(pid, SIGTERM);
	rk_fs_remove_tree(root, NULL);
	free(data);
	free(home);
	free(endpoint);
	return status;
}
