/* make bench: the MCP server's observe round trip against the CLI's.
 *
 *   bench: mcp_observe ours=V ms base=V ms ratio=R
 *     ours: one tools/call screen_observe through a warm `rakazo mcp` (stdio:
 *           the request line written, the reply line read, the image in it
 *           checked as a PNG of the screen's size)
 *     base: one `rakazo screen shot COMPUTER -o FILE` (a process, as a user
 *           or a script runs it), on the same computer and display
 *   p50 of N each, after a warm-up of both; bench: mcp_observe_p95 too.
 *   Target: ratio at most 1.2.
 *
 * A docker computer in a temporary data directory (RAKAZO_BIN names the
 * binary; make bench sets it). Without docker it prints "skip: ..." and
 * exits 0; a wrong reply exits 1. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

#define N 20

static const char *bin;
static char dir[256];

/* Runs bin with args (NULL-terminated), stdout to /dev/null; its exit status. */
static int run(const char *const *args)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(bin, (char *const *)args);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static pid_t mcp_pid;
static FILE *mcp_in, *mcp_out;

static int mcp_start(void)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return -1;
	mcp_pid = fork();
	if (mcp_pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		close(in[1]);
		close(out[0]);
		execl(bin, bin, "mcp", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	mcp_in = fdopen(in[1], "w");
	mcp_out = fdopen(out[0], "r");
	return mcp_in && mcp_out ? 0 : -1;
}

/* Sends line, reads the reply line into reply. */
static int mcp_call(const char *line, struct rk_buf *reply)
{
	rk_buf_reset(reply);
	if (fputs(line, mcp_in) < 0 || fputc('\n', mcp_in) < 0 || fflush(mcp_in))
		return -1;
	int c;
	while ((c = fgetc(mcp_out)) != EOF && c != '\n')
		rk_buf_addc(reply, (char)c);
	return c == '\n' ? 0 : -1;
}

/* The reply of an observe: an image block of a PNG and no error. */
static int observe_ok(const struct rk_buf *reply)
{
	cJSON *d = cJSON_Parse(reply->data);
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, "result");
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "content"), 0);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "structuredContent");
	int ok = r && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError")) && c &&
		 !strcmp(cJSON_GetObjectItemCaseSensitive(c, "type")->valuestring, "image") &&
		 cJSON_GetObjectItemCaseSensitive(s, "width")->valueint > 0;
	cJSON_Delete(d);
	return ok;
}

int main(void)
{
	const char *want = getenv("RAKAZO_BENCH");
	if (want && *want && strncmp(want, "mcp_observe", 11)) {
		printf("skip: mcp_bench (only %s)\n", want);
		return 0;
	}
	bin = getenv("RAKAZO_BIN");
	if (!bin || !*bin)
		bin = "build/rakazo";
	if (access("/var/run/docker.sock", W_OK)) {
		printf("skip: mcp_observe (docker is not running)\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/rk-mcp-bench-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	char data[300], shot[300];
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(shot, sizeof(shot), "%s/shot.png", dir);
	mkdir(data, 0700);
	setenv("RAKAZO_DATA_DIR", data, 1);
	setenv("RAKAZO_OWNER", "user:bench", 1);
	int status = 0;
	const char *create[] = {bin, "computer", "create", "--name", "mcpb", "--wait", NULL};
	if (run(create)) {
		printf("skip: mcp_observe (no docker computer could be made)\n");
		goto out;
	}
	const char *shot_args[] = {bin, "screen", "shot", "mcpb", "-o", shot, NULL};
	struct rk_buf reply;
	rk_buf_init(&reply);
	static const char obs[] = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
				  "\"screen_observe\",\"arguments\":{\"computer\":\"mcpb\"}}}";
	double ours[N], base[N];
	if (run(shot_args) || mcp_start() ||
	    mcp_call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		     "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}",
		     &reply) ||
	    mcp_call(obs, &reply) || !observe_ok(&reply)) {
		fprintf(stderr, "mcp_bench: the warm-up failed: %.300s\n", reply.data);
		status = 1;
		goto stop;
	}
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		if (run(shot_args)) {
			fprintf(stderr, "mcp_bench: rakazo screen shot failed\n");
			status = 1;
			goto stop;
		}
		base[i] = (rk_monotonic_us() - t0) / 1000.0;
		t0 = rk_monotonic_us();
		if (mcp_call(obs, &reply) || !observe_ok(&reply)) {
			fprintf(stderr, "mcp_bench: observe failed: %.300s\n", reply.data);
			status = 1;
			goto stop;
		}
		ours[i] = (rk_monotonic_us() - t0) / 1000.0;
	}
	double o50 = pct(ours, N, 0.5), b50 = pct(base, N, 0.5), o95 = pct(ours, N, 0.95), b95 = pct(base, N, 0.95);
	printf("bench: mcp_observe ours=%.1f ms base=%.1f ms ratio=%.2f\n", o50, b50, o50 / b50);
	printf("bench: mcp_observe_p95 ours=%.1f ms base=%.1f ms ratio=%.2f\n", o95, b95, o95 / b95);
stop:
	if (mcp_in)
		fclose(mcp_in); /* end of input: the server exits */
	if (mcp_pid > 0)
		waitpid(mcp_pid, NULL, 0);
	if (mcp_out)
		fclose(mcp_out);
	rk_buf_release(&reply);
	const char *del[] = {bin, "computer", "delete", "mcpb", "--wait", NULL};
	if (run(del))
		fprintf(stderr, "mcp_bench: could not delete the bench computer\n");
out:;
	/* the worker the create started ends on its own when idle; not with its directory gone */
	char lock[320];
	snprintf(lock, sizeof(lock), "%s/worker.lock", data);
	FILE *lf = fopen(lock, "r");
	long wpid = 0;
	if (lf && fscanf(lf, "%ld", &wpid) == 1 && wpid > 1)
		kill((pid_t)wpid, SIGTERM);
	if (lf)
		fclose(lf);
	struct rk_error e;
	rk_fs_remove_tree(dir, &e);
	return status;
}
