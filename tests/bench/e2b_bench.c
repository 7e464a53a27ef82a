/* The e2b provider against the E2B emulator, beside the vendor's own SDK
 * making the same calls to the same sandbox (tests/sdk/bench-e2b.mjs).
 *
 *   bench: e2b_exec_rtt ours=V ms base=V ms ratio=R   `true`: spawn -> eof -> wait
 *                                                     vs the SDK's commands.run('true')
 *   bench: e2b_file_rtt ours=V ms base=V ms ratio=R   write then read 4 KiB
 *                                                     vs files.write + files.read
 *
 * Medians of 20. The emulator is started for the run and stopped after (it
 * removes its containers). Exits 0 with `skip: ...` without node, dockerd or
 * the SDKs (sh tests/sdk/setup.sh). RAKAZO_BENCH names one figure. */

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "providers/provider.h"

#define N 20

extern const struct rk_provider_ops rk_provider_e2b;

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

static int run_true(const struct rk_machine *m)
{
	struct rk_error e;
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = "true"};
	if (rk_provider_e2b.exec_spawn(m, &req, &p, &e) != 0) {
		fprintf(stderr, "exec: %s\n", e.message);
		return -1;
	}
	struct rk_buf out;
	rk_buf_init(&out);
	int eof = 0;
	while (!eof) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 1000);
		if (p->ops->read(p, &out, &eof, &e) != 0)
			break;
	}
	struct rk_exit_status st;
	int rc = p->ops->wait(p, &st, &e);
	p->ops->free(p);
	rk_buf_release(&out);
	return rc == 0 && st.exited && st.code == 0 ? 0 : -1;
}

static int wanted(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || strcmp(w, name) == 0;
}

int main(void)
{
	if (!wanted("e2b_exec_rtt") && !wanted("e2b_file_rtt"))
		return 0;
	if (system("command -v node >/dev/null 2>&1 && [ -d tests/sdk/node_modules/e2b ] && "
		   "curl -sf --max-time 5 --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null") != 0) {
		printf("skip: e2b bench needs node, dockerd and the SDKs (sh tests/sdk/setup.sh)\n");
		return 0;
	}
	char dir[] = "/tmp/rakazo-e2b-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "sh tests/emulators/e2b/start.sh %s", dir);
	FILE *f = popen(cmd, "r");
	char url[128] = "";
	if (!f || !fgets(url, sizeof(url), f)) {
		fprintf(stderr, "bench: cannot start the e2b emulator\n");
		return 1;
	}
	pclose(f);
	url[strcspn(url, "\n")] = '\0';
	setenv("E2B_API_URL", url, 1);
	setenv("E2B_SANDBOX_URL", url, 1);
	setenv("E2B_API_KEY", "e2b_bench_key", 1);
	setenv("E2B_DOMAIN", "emulator.invalid", 1);
	char *pidfile = rk_xasprintf("%s/e2b-emulator.pid", dir);
	struct rk_buf pidb;
	rk_buf_init(&pidb);
	rk_fs_read_all(pidfile, 64, &pidb, NULL);
	pid_t emu = (pid_t)atoi(pidb.data);

	char *id = rk_id_new("cmp");
	char *run = rk_xasprintf("%s/run", dir), *home = rk_xasprintf("%s/home", dir);
	rk_fs_mkdirs(run, 0700, NULL);
	rk_fs_mkdirs(home, 0700, NULL);
	struct rk_machine m = {.computer_id = id, .home_key = id, .data_dir = dir, .home_dir = home, .run_dir = run};
	struct rk_provision_result pr;
	struct rk_error e;
	int status = 0;
	if (rk_provider_e2b.provision(&m, &pr, &e) != 0) {
		fprintf(stderr, "bench: provision: %s\n", e.message);
		status = 1;
		goto out;
	}
	m.ref = pr.ref;
	run_true(&m); /* warm */
	double ex[N], fi[N];
	char data[4096];
	memset(data, 'x', sizeof(data));
	for (int i = 0; i < N; i++) {
		int64_t t = rk_monotonic_us();
		if (run_true(&m) != 0) {
			status = 1;
			goto out;
		}
		ex[i] = (double)(rk_monotonic_us() - t) / 1000.0;
		t = rk_monotonic_us();
		struct rk_buf b;
		rk_buf_init(&b);
		if (rk_provider_e2b.file_write(&m, "bench.txt", data, sizeof(data), 0, &e) != 0 ||
		    rk_provider_e2b.file_read(&m, "bench.txt", 1 << 20, &b, &e) != 0 || b.len != sizeof(data)) {
			fprintf(stderr, "bench: files: %s\n", e.message);
			rk_buf_release(&b);
			status = 1;
			goto out;
		}
		rk_buf_release(&b);
		fi[i] = (double)(rk_monotonic_us() - t) / 1000.0;
	}
	double ours_exec = median(ex, N), ours_file = median(fi, N);
	snprintf(cmd, sizeof(cmd), "node tests/sdk/bench-e2b.mjs %s %d", pr.ref, N);
	f = popen(cmd, "r");
	double base_exec = 0, base_file = 0;
	char line[128];
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "exec_rtt %lf", &base_exec);
		sscanf(line, "file_rtt %lf", &base_file);
	}
	if (f)
		pclose(f);
	if (base_exec <= 0 || base_file <= 0) {
		fprintf(stderr, "bench: the SDK baseline did not run\n");
		status = 1;
	} else {
		if (wanted("e2b_exec_rtt"))
			printf("bench: e2b_exec_rtt ours=%.1f ms base=%.1f ms ratio=%.2f\n", ours_exec, base_exec,
			       ours_exec / base_exec);
		if (wanted("e2b_file_rtt"))
			printf("bench: e2b_file_rtt ours=%.1f ms base=%.1f ms ratio=%.2f\n", ours_file, base_file,
			       ours_file / base_file);
	}
	rk_provider_e2b.destroy(&m, &e);
	free(pr.ref);
out:
	if (emu > 0)
		kill(emu, SIGTERM);
	sleep(1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	rk_buf_release(&pidb);
	free(pidfile);
	free(id);
	free(run);
	free(home);
	return status;
}
