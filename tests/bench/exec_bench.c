/* Exec through the docker provider against the docker CLI.
 *
 *   bench: provision ours=V ms base=V ms ratio=R        provision to the first `true` done
 *                                                       vs `docker run -d IMAGE` + `docker exec C true`
 *                                                       (CLI), the same image, no network
 *   bench: exec_rtt ours=V ms base=V ms ratio=R         `true`: exec_spawn -> eof -> wait
 *                                                       vs `docker exec C true` (CLI)
 *
 * Medians, ours and the baseline interleaved: 30 round trips; 5 provisions
 * (RAKAZO_BENCH_PROVISIONS=N for more), each a fresh container removed after. Everything it creates carries the label
 * rakazo.test=<random> and only that is removed. Exits 0 with `skip: docker
 * not running` when there is no daemon. RAKAZO_BENCH=provision|exec_rtt runs
 * one figure (the other is skipped where it can be). */

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/docker/api.h"
#include "providers/provider.h"

#define N 30
#define NPROV_DEFAULT 5
#define NPROV_MAX 50

#ifndef RK_IMAGE_TAG
#define RK_IMAGE_TAG "rakazo-computer:latest"
#endif

extern const struct rk_provider_ops rk_provider_docker;
static const struct rk_provider_ops *P = &rk_provider_docker;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_ms(int64_t *us, int n)
{
	qsort(us, (size_t)n, sizeof(us[0]), cmp_i64);
	return (n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2) / 1000.0;
}

/* `true` through the provider: spawn, read to eof, wait. 0 when it exited 0. */
static int run_true(const struct rk_machine *m)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "true"};
	struct rk_proc *p = NULL;
	if (P->exec_spawn(m, &req, &p, &err) != 0) {
		fprintf(stderr, "exec_bench: exec: %s\n", err.message);
		return -1;
	}
	struct rk_buf out;
	rk_buf_init(&out);
	int eof = 0, rc = 0;
	int64_t deadline = rk_monotonic_ms() + 20000;
	while (!eof && rc == 0 && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		rc = p->ops->read(p, &out, &eof, &err);
	}
	struct rk_exit_status st = {0};
	if (rc == 0 && eof)
		rc = p->ops->wait(p, &st, &err);
	p->ops->free(p);
	rk_buf_release(&out);
	return rc == 0 && eof && st.exited && st.code == 0 ? 0 : -1;
}

/* `docker exec ID true` with the CLI; 0 when it exited 0. */
static int cli_true(const char *id)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execlp("docker", "docker", "exec", id, "true", (char *)NULL);
		_exit(127);
	}
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0)
		;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1;
}

/* The image both sides start: the provider's (RAKAZO_IMAGE, else this build's). */
static const char *image(void)
{
	const char *env = getenv("RAKAZO_IMAGE");
	return env && *env ? env : RK_IMAGE_TAG;
}

/* `docker run -d --network none --label rakazo.test=LABEL IMAGE`, then
 * `docker exec ID true`: the CLI's way to a container that has run a
 * command. The id (malloc'd) goes to *id for removal; 0 when both worked. */
static int cli_provision(const char *label, char **id)
{
	*id = NULL;
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0)
			dup2(null, 0);
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		char lab[128];
		snprintf(lab, sizeof(lab), "rakazo.test=%s", label);
		execlp("docker", "docker", "run", "-d", "--network", "none", "--label", lab, image(), (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	char buf[256];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) - 1 && (n = read(pfd[0], buf + got, sizeof(buf) - 1 - got)) != 0) {
		if (n > 0)
			got += (size_t)n;
	}
	buf[got] = '\0';
	close(pfd[0]);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0)
		;
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !*buf)
		return -1;
	*id = rk_xstrdup(buf);
	return cli_true(*id);
}

static void remove_container(const char *id)
{
	struct rk_error err;
	struct rk_docker_resp d;
	char *del = rk_xasprintf("/containers/%s?force=1&v=1", id);
	rk_docker_resp_init(&d);
	rk_docker_json("DELETE", del, NULL, 1, &d, &err);
	rk_docker_resp_release(&d);
	free(del);
}

/* A machine of its own under data_dir for one provision (names malloc'd). */
struct bench_machine {
	struct rk_machine m;
	char *cid, *home, *run;
};

static void bench_machine_init(struct bench_machine *b, const char *data_dir, const char *rnd, int i)
{
	memset(b, 0, sizeof(*b));
	b->cid = rk_xasprintf("cmp_bench_%s_%d", rnd, i);
	b->home = rk_xasprintf("%s/homes/%s", data_dir, b->cid);
	b->run = rk_xasprintf("%s/run/%s", data_dir, b->cid);
	rk_fs_mkdirs(b->home, 0755, NULL);
	rk_fs_mkdirs(b->run, 0755, NULL);
	b->m = (struct rk_machine){
		.computer_id = b->cid, .home_key = b->cid, .data_dir = data_dir, .home_dir = b->home, .run_dir = b->run,
	};
}

static void bench_machine_release(struct bench_machine *b)
{
	free(b->cid);
	free(b->home);
	free(b->run);
}

/* provision + the first `true`, timed; the machine is destroyed after. */
static int our_provision(const char *data_dir, const char *rnd, int i, int64_t *us)
{
	struct bench_machine b;
	struct rk_error err;
	struct rk_provision_result res = {0};
	bench_machine_init(&b, data_dir, rnd, i);
	int64_t t0 = rk_monotonic_us();
	int rc = P->provision(&b.m, &res, &err);
	if (rc != 0)
		fprintf(stderr, "exec_bench: provision: %s\n", err.message);
	b.m.ref = res.ref;
	if (rc == 0 && (rc = run_true(&b.m)) != 0)
		fprintf(stderr, "exec_bench: the first exec failed\n");
	*us = rk_monotonic_us() - t0;
	if (b.m.ref)
		P->destroy(&b.m, &err);
	free(res.ref);
	bench_machine_release(&b);
	return rc;
}

/* Only what carries our label. */
static void remove_labelled(const char *label)
{
	char *f = rk_xasprintf("{\"label\":[\"rakazo.test=%s\"]}", label);
	char *enc = rk_docker_urlencode(f);
	char *path = rk_xasprintf("/containers/json?all=1&filters=%s", enc);
	struct rk_docker_resp r;
	struct rk_error err;
	rk_docker_resp_init(&r);
	if (rk_docker_json("GET", path, NULL, 0, &r, &err) == 0 && r.status == 200) {
		cJSON *doc = cJSON_ParseWithLength(r.body.data, r.body.len);
		cJSON *it;
		cJSON_ArrayForEach(it, doc) {
			const char *id = rk_json_string(it, "Id", NULL);
			if (!id)
				continue;
			char *del = rk_xasprintf("/containers/%s?force=1&v=1", id);
			struct rk_docker_resp d;
			rk_docker_resp_init(&d);
			rk_docker_json("DELETE", del, NULL, 1, &d, &err);
			rk_docker_resp_release(&d);
			free(del);
		}
		cJSON_Delete(doc);
	}
	rk_docker_resp_release(&r);
	free(path);
	free(enc);
	free(f);
}

/* build/tests/bench/exec_bench -> build/rakazo-agent, unless RAKAZO_AGENT says. */
static void find_agent(void)
{
	if (getenv("RAKAZO_AGENT"))
		return;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	char *agent = rk_xasprintf("%s/../../rakazo-agent", exe);
	setenv("RAKAZO_AGENT", agent, 1);
	free(agent);
}

int main(void)
{
	const char *only = getenv("RAKAZO_BENCH");
	int want_prov = !only || !*only || strcmp(only, "provision") == 0;
	int want_rtt = !only || !*only || strcmp(only, "exec_rtt") == 0;
	if (!want_prov && !want_rtt)
		return 0;
	struct rk_error err;
	if (P->check(&err) != 0) {
		printf("skip: docker not running\n");
		return 0;
	}
	find_agent();
	char *rnd = rk_id_new("t");
	char label[64];
	snprintf(label, sizeof(label), "exec-bench-%s", rnd + 2);
	setenv("RAKAZO_TEST_LABEL", label, 1);
	char data_dir[] = "/tmp/rk-exec-bench-XXXXXX";
	if (!mkdtemp(data_dir)) {
		fprintf(stderr, "exec_bench: cannot make a temp dir\n");
		free(rnd);
		return 1;
	}
	chmod(data_dir, 0755);
	int status = 0;
	struct bench_machine bm;
	bench_machine_init(&bm, data_dir, rnd + 2, 0);
	struct rk_machine m = bm.m;
	struct rk_provision_result res = {0};

	if (want_prov) {
		const char *e = getenv("RAKAZO_BENCH_PROVISIONS");
		int np = e && atoi(e) > 0 ? atoi(e) : NPROV_DEFAULT;
		if (np > NPROV_MAX)
			np = NPROV_MAX;
		int64_t ours[NPROV_MAX], base[NPROV_MAX];
		for (int i = 0; i < np && status == 0; i++) {
			if (our_provision(data_dir, rnd + 2, i + 1, &ours[i]) != 0) {
				status = 1;
				break;
			}
			char *id = NULL;
			int64_t s = rk_monotonic_us();
			int rc = cli_provision(label, &id);
			base[i] = rk_monotonic_us() - s;
			if (id)
				remove_container(id);
			free(id);
			if (rc != 0) {
				printf("skip: provision: `docker run -d %s` + `docker exec true` failed (no docker CLI?)\n",
				       image());
				want_prov = 0;
				break;
			}
		}
		if (status != 0)
			goto out;
		if (want_prov) {
			double o = median_ms(ours, np), b = median_ms(base, np);
			printf("bench: provision ours=%.1f ms base=%.1f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0.0);
			fflush(stdout);
		}
	}

	if (want_rtt) {
		if (P->provision(&m, &res, &err) != 0) {
			fprintf(stderr, "exec_bench: provision: %s\n", err.message);
			status = 1;
			goto out;
		}
		m.ref = res.ref;
		if (run_true(&m) != 0) {
			fprintf(stderr, "exec_bench: the first exec failed\n");
			status = 1;
			goto out;
		}
		int64_t ours[N], base[N];
		/* one of each to warm caches; not counted */
		run_true(&m);
		if (cli_true(res.ref) != 0) {
			printf("skip: exec_rtt: `docker exec %.12s true` failed (no docker CLI?)\n", res.ref);
			goto out;
		}
		for (int i = 0; i < N && status == 0; i++) {
			int64_t s = rk_monotonic_us();
			if (run_true(&m) != 0)
				status = 1;
			ours[i] = rk_monotonic_us() - s;
			s = rk_monotonic_us();
			if (cli_true(res.ref) != 0)
				status = 1;
			base[i] = rk_monotonic_us() - s;
		}
		if (status != 0) {
			fprintf(stderr, "exec_bench: a `true` round trip failed\n");
			goto out;
		}
		double o = median_ms(ours, N), b = median_ms(base, N);
		printf("bench: exec_rtt ours=%.1f ms base=%.1f ms ratio=%.2f\n", o, b, b > 0 ? o / b : 0.0);
	}
out:
	fflush(stdout);
	if (m.ref)
		P->destroy(&m, &err);
	remove_labelled(label);
	rk_fs_remove_tree(data_dir, NULL);
	free(res.ref);
	bench_machine_release(&bm);
	free(rnd);
	return status;
}
