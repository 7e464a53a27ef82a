/* The daytona and box providers against their emulators, beside the one
 * synchronous vendor call that is the floor for the same work.
 *
 *   bench: daytona_exec_rtt ours=V ms base=V ms ratio=R
 *       `true` through the provider (session, wrapper, polled logs, exact
 *       status: spawn -> eof -> wait) vs one POST /process/execute of `true`
 *   bench: daytona_file_rtt ours=V ms base=V ms ratio=R
 *       write then read 4 KiB (upload, contained move, info, download) vs one
 *       upload and one download
 *   bench: box_exec_rtt, box_file_rtt: the same against the box emulator
 *       (detached command + status polls; file call + artifact read)
 *
 * Medians of 15. Each emulator is started for the run and stopped after (it
 * removes its containers). Prints `skip: ...` and exits 0 without node,
 * dockerd or the image. RAKAZO_BENCH names one figure. */

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "providers/provider.h"
#include "emulator.h"

#define N 15

extern const struct rk_provider_ops rk_provider_daytona;
extern const struct rk_provider_ops rk_provider_box;

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

static int wanted(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || strcmp(w, name) == 0;
}

static int run_true(const struct rk_provider_ops *ops, const struct rk_machine *m)
{
	struct rk_error e;
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = "true"};
	if (ops->exec_spawn(m, &req, &p, &e) != 0) {
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
	struct rk_exit_status st = {0};
	int rc = eof ? p->ops->wait(p, &st, &e) : -1;
	p->ops->free(p);
	rk_buf_release(&out);
	return rc == 0 && st.exited && st.code == 0 ? 0 : -1;
}

/* One raw vendor call: method url body, the key in a header. */
static int raw(const char *method, const char *url, const char *auth, const char *body, size_t len,
	       const char *ct)
{
	const char *headers[] = {auth, NULL};
	struct rk_http_request req = {.method = method, .url = url, .headers = headers, .body = body,
				      .body_len = len, .content_type = ct};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	int rc = rk_http_do(&req, &r, &e);
	if (rc)
		fprintf(stderr, "%s %s: %s\n", method, url, e.message);
	rk_http_response_release(&r);
	return rc;
}

static void one(const char *kind, const struct rk_provider_ops *ops, const char *key_env, const char *url_env,
		const char *url_suffix)
{
	char name_exec[64], name_file[64];
	snprintf(name_exec, sizeof(name_exec), "%s_exec_rtt", kind);
	snprintf(name_file, sizeof(name_file), "%s_file_rtt", kind);
	if (!wanted(name_exec) && !wanted(name_file))
		return;
	char tmpl[] = "/tmp/rakazo-bench-XXXXXX";
	char *dir = mkdtemp(tmpl);
	char *pf = rk_xasprintf("%s/port", dir);
	char *key = rk_xasprintf("bench-%s-key", kind);
	pid_t pid = rk_bench_emulator(kind, pf, key);
	if (pid < 0) {
		printf("skip: %s: the emulator did not start (node, dockerd, the image)\n", kind);
		goto out;
	}
	struct rk_buf b;
	rk_buf_init(&b);
	rk_fs_read_all(pf, 4096, &b, NULL);
	while (b.len && (b.data[b.len - 1] == '\n'))
		b.data[--b.len] = 0;
	char *api = rk_xasprintf("%s%s", b.data, url_suffix);
	setenv(key_env, key, 1);
	setenv(url_env, api, 1);
	char *id = rk_id_new("cmp");
	char *home = rk_xasprintf("%s/home", dir), *run = rk_xasprintf("%s/run", dir);
	rk_fs_mkdirs(home, 0755, NULL);
	rk_fs_mkdirs(run, 0755, NULL);
	struct rk_machine m = {.computer_id = id, .home_key = id, .data_dir = dir, .home_dir = home, .run_dir = run};
	struct rk_provision_result pr = {0};
	struct rk_error e;
	if (ops->provision(&m, &pr, &e) != 0) {
		printf("skip: %s: provision: %s\n", kind, e.message);
		goto stop;
	}
	m.ref = pr.ref;
	char *auth = rk_xasprintf("Authorization: Bearer %s", key);
	char *exec_url, *up_url, *down_url;
	const char *exec_body;
	if (!strcmp(kind, "daytona")) {
		exec_url = rk_xasprintf("%s/toolbox/%s/process/execute", b.data, pr.ref);
		exec_body = "{\"command\":\"true\"}";
		up_url = rk_xasprintf("%s/toolbox/%s/files/upload-v2?path=%%2Ftmp%%2Fb.bin", b.data, pr.ref);
		down_url = rk_xasprintf("%s/toolbox/%s/files/download?path=%%2Ftmp%%2Fb.bin", b.data, pr.ref);
	} else {
		exec_url = rk_xasprintf("%s/boxes/%s/command", api, pr.ref);
		exec_body = "{\"command\":\"true\",\"timeoutSeconds\":30}";
		up_url = rk_xasprintf("%s/boxes/%s/files", api, pr.ref);
		down_url = rk_xasprintf("%s/boxes/%s/artifacts/raw?path=%%2Ftmp%%2Fb.bin", api, pr.ref);
	}
	char data[4096];
	memset(data, 'x', sizeof(data));
	/* multipart for daytona, base64 JSON for box */
	struct rk_buf up;
	rk_buf_init(&up);
	const char *up_ct;
	if (!strcmp(kind, "daytona")) {
		rk_buf_adds(&up, "--rkb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b\"\r\n\r\n");
		rk_buf_add(&up, data, sizeof(data));
		rk_buf_adds(&up, "\r\n--rkb--\r\n");
		up_ct = "multipart/form-data; boundary=rkb";
	} else {
		rk_buf_adds(&up, "{\"path\":\"/tmp/b.bin\",\"encoding\":\"base64\",\"content\":\"");
		for (size_t i = 0; i < sizeof(data) / 3 * 4 + 4; i++)
			rk_buf_addc(&up, 'e');
		rk_buf_adds(&up, "\"}");
		up_ct = NULL;
	}
	double ours[N], base[N];
	if (wanted(name_exec)) {
		run_true(ops, &m); /* warm */
		for (int i = 0; i < N; i++) {
			int64_t t0 = rk_monotonic_us();
			if (run_true(ops, &m) != 0)
				break;
			ours[i] = (double)(rk_monotonic_us() - t0) / 1000.0;
			t0 = rk_monotonic_us();
			raw("POST", exec_url, auth, exec_body, strlen(exec_body), NULL);
			base[i] = (double)(rk_monotonic_us() - t0) / 1000.0;
		}
		double o = median(ours, N), bs = median(base, N);
		printf("bench: %s ours=%.1f ms base=%.1f ms ratio=%.2f\n", name_exec, o, bs, o / bs);
	}
	if (wanted(name_file)) {
		for (int i = 0; i < N; i++) {
			struct rk_buf rb;
			rk_buf_init(&rb);
			int64_t t0 = rk_monotonic_us();
			ops->file_write(&m, "bench/f.bin", data, sizeof(data), 0, &e);
			ops->file_read(&m, "bench/f.bin", 1 << 20, &rb, &e);
			ours[i] = (double)(rk_monotonic_us() - t0) / 1000.0;
			rk_buf_release(&rb);
			t0 = rk_monotonic_us();
			raw("POST", up_url, auth, up.data, up.len, up_ct);
			raw("GET", down_url, auth, NULL, 0, NULL);
			base[i] = (double)(rk_monotonic_us() - t0) / 1000.0;
		}
		double o = median(ours, N), bs = median(base, N);
		printf("bench: %s ours=%.1f ms base=%.1f ms ratio=%.2f\n", name_file, o, bs, o / bs);
	}
	ops->destroy(&m, &e);
	rk_buf_release(&up);
	free(exec_url);
	free(up_url);
	free(down_url);
	free(auth);
	free(pr.ref);
stop:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	rk_buf_release(&b);
	free(api);
	free(id);
	free(home);
	free(run);
out:
	rk_fs_remove_tree(dir, NULL);
	free(pf);
	free(key);
}

int main(void)
{
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *l = rk_id_new("bench");
		setenv("RAKAZO_TEST_LABEL", l, 1);
		free(l);
	}
	one("daytona", &rk_provider_daytona, "DAYTONA_API_KEY", "DAYTONA_API_URL", "/api");
	one("box", &rk_provider_box, "BOX_API_KEY", "BOX_API_URL", "/api/box/v1");
	return 0;
}
