/* Idle event streams: the CPU `rakazo serve` spends while N clients watch a
 * command that does nothing (it stays pending: no worker), against the CPU
 * it spends while one client does, in one run.
 *
 *   bench: sse_idle_cpu ours=V ms/s base=V ms/s ratio=R   200 idle streams vs 1
 *
 * CPU is the server's threads' run time (/proc/PID/task/x/schedstat, in ns)
 * over MEASURE_MS, once the streams are open and settled. A poller that fans
 * out keeps the ratio near 1; a poll per stream makes it grow with N.
 * RAKAZO_BIN names the binary (make bench sets it). */

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"
#include "serve.h"

#define STREAMS 200
#define SETTLE_MS 1500
#define MEASURE_MS 5000

static char token[300];
static int port;

/* The run time of every thread of pid so far, in ns. */
static long long cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	long long total = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[300];
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
		FILE *f = fopen(p, "r");
		long long ns = 0;
		if (f && fscanf(f, "%lld", &ns) == 1)
			total += ns;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return total;
}

/* Opens an event stream of execution exe and reads until its first event;
 * the socket, or -1. */
static int open_stream(const char *exe)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto fail;
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "GET /v1/executions/%s/observe?afterSequence=0 HTTP/1.1\r\nHost: bench\r\n"
			 "Authorization: Bearer %s\r\n\r\n",
			 exe, token);
	if (write(fd, req, (size_t)n) != n)
		goto fail;
	struct rk_buf got = RK_BUF_INIT;
	rk_buf_init(&got);
	struct timeval tv = {.tv_sec = 30};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[4096];
	ssize_t r;
	while (!strstr(got.data, "event: submitted") && (r = read(fd, buf, sizeof(buf))) > 0)
		rk_buf_add(&got, buf, (size_t)r);
	int ok = strstr(got.data, "event: submitted") != NULL;
	rk_buf_release(&got);
	if (ok)
		return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The server's CPU in ms per second with n idle streams open; -1 on failure. */
static double idle_cpu(pid_t srv, const char *exe, int n)
{
	int fds[STREAMS];
	int open = 0;
	double rate = -1;
	for (; open < n; open++)
		if ((fds[open] = open_stream(exe)) < 0) {
			fprintf(stderr, "sse_bench: stream %d of %d did not open\n", open + 1, n);
			goto out;
		}
	rk_sleep_ms(SETTLE_MS);
	long long c0 = cpu_ns(srv);
	int64_t t0 = rk_monotonic_ms();
	rk_sleep_ms(MEASURE_MS);
	rate = (double)(cpu_ns(srv) - c0) / 1e6 / ((double)(rk_monotonic_ms() - t0) / 1000.0);
out:
	for (int i = 0; i < open; i++)
		close(fds[i]);
	rk_sleep_ms(500); /* the streams notice and end */
	return rate;
}

/* A pending command's execution id: a fake computer's create, with no worker to run it. */
static int pending_execution(const char *bin, char *exe, size_t size)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "RAKAZO_NO_WORKER=1 '%s' computer create --provider fake --name sse --json 2>/dev/null",
		 bin);
	FILE *p = popen(cmd, "r");
	struct rk_buf out = RK_BUF_INIT;
	rk_buf_init(&out);
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		rk_buf_add(&out, buf, n);
	if (p)
		pclose(p);
	cJSON *d = cJSON_Parse(out.data);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "id");
	int ok = cJSON_IsString(id);
	if (ok)
		snprintf(exe, size, "%s", id->valuestring);
	cJSON_Delete(d);
	rk_buf_release(&out);
	return ok ? 0 : -1;
}

int main(void)
{
	const char *b = getenv("RAKAZO_BENCH");
	if (b && *b && strcmp(b, "sse_idle_cpu"))
		return 0;
	const char *bin = getenv("RAKAZO_BIN");
	if (!bin || !*bin)
		bin = "build/rakazo";
	setenv("RAKAZO_NO_WORKER", "1", 1);
	int rc = 1;
	char exe[128];
	struct rk_bench_serve srv;
	if (rk_bench_serve_start(&srv, "sse_bench", bin))
		goto out;
	if (pending_execution(bin, exe, sizeof(exe))) {
		fprintf(stderr, "sse_bench: cannot make a pending command (%s)\n", bin);
		goto out;
	}
	snprintf(token, sizeof(token), "%s", srv.token);
	const char *colon = strrchr(srv.url, ':');
	port = colon ? atoi(colon + 1) : 0;
	double base = idle_cpu(srv.pid, exe, 1), ours = base >= 0 ? idle_cpu(srv.pid, exe, STREAMS) : -1;
	if (base < 0 || ours < 0)
		goto out;
	printf("bench: sse_idle_cpu ours=%.1f ms/s base=%.1f ms/s ratio=%.2f\n", ours, base,
	       base > 0.05 ? ours / base : ours / 0.05);
	fflush(stdout);
	rc = 0;
out:
	rk_bench_serve_stop(&srv, "sse_bench");
	return rc;
}
