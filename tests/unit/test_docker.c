/* The docker provider against the real daemon and the real computer image.
 * Everything this test creates carries the label rakazo.test=<random> and
 * only those containers are removed at the end: the daemon is shared.
 * Skips (counting nothing) when docker is down, unless RAKAZO_REQUIRE_DOCKER
 * is set. RAKAZO_DOCKER_BENCH=1 adds timings (printed, never asserted).
 *
 * Commands go through the in-container exec agent (build/rakazo-agent, found
 * through RAKAZO_AGENT, which this test sets when it is unset) and the exec
 * tests then run again with RAKAZO_DOCKER_EXEC=api, the docker exec path:
 * both must behave the same. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/docker/api.h"
#include "providers/provider.h"
#include "check.h"

extern const struct rk_provider_ops rk_provider_docker;
static const struct rk_provider_ops *P = &rk_provider_docker;

static char test_label[64];
static char data_dir[256];

struct comp {
	struct rk_machine m;
	char *id, *home, *run, *ref;
};

static void comp_init(struct comp *c, const char *tag)
{
	memset(c, 0, sizeof(*c));
	char *rnd = rk_id_new("t");
	c->id = rk_xasprintf("cmp_%s_%s", tag, rnd + 2);
	free(rnd);
	c->home = rk_xasprintf("%s/homes/%s", data_dir, c->id);
	c->run = rk_xasprintf("%s/run/%s", data_dir, c->id);
	c->m.computer_id = c->id;
	c->m.home_key = c->id;
	c->m.data_dir = data_dir;
	c->m.home_dir = c->home;
	c->m.run_dir = c->run;
}

static void comp_set_ref(struct comp *c, char *ref)
{
	free(c->ref);
	c->ref = ref;
	c->m.ref = ref;
}

static int comp_provision(struct comp *c, struct rk_provision_result *res, struct rk_error *err)
{
	memset(res, 0, sizeof(*res));
	int rc = P->provision(&c->m, res, err);
	if (rc == 0)
		comp_set_ref(c, rk_xstrdup(res->ref));
	free(res->ref);
	res->ref = NULL;
	return rc;
}

static void comp_free(struct comp *c)
{
	free(c->id);
	free(c->home);
	free(c->run);
	free(c->ref);
}

struct result {
	struct rk_buf out;
	struct rk_exit_status st;
	int rc, eof;
	struct rk_error err;
};

/* Drains p until eof or timeout_ms; then waits. */
static void drain(struct rk_proc *p, struct result *r, int64_t timeout_ms)
{
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	while (!r->eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		if ((r->rc = p->ops->read(p, &r->out, &r->eof, &r->err)) < 0)
			return;
	}
	if (r->eof)
		r->rc = p->ops->wait(p, &r->st, &r->err);
}

static void run_cmd(struct comp *c, const char *cmd, const char *input, int tty, struct result *r)
{
	memset(r, 0, sizeof(*r));
	rk_buf_init(&r->out);
	struct rk_exec_request req = {.command = cmd, .tty = tty};
	struct rk_proc *p = NULL;
	r->rc = P->exec_spawn(&c->m, &req, &p, &r->err);
	if (r->rc < 0) {
		printf("  exec failed: %s\n", r->err.message);
		return;
	}
	if (input) {
		p->ops->write(p, input, strlen(input), &r->err);
		p->ops->close_stdin(p, &r->err);
	}
	drain(p, r, 20000);
	p->ops->free(p);
}

static struct comp c1, c2;
static int docker_up;

/* Commands are expected to go through the agent (not RAKAZO_DOCKER_EXEC=api,
 * the agent binary is there, the host user can reach its socket). */
static int agent_expected(void)
{
	const char *mode = getenv("RAKAZO_DOCKER_EXEC");
	const char *bin = getenv("RAKAZO_AGENT");
	return !(mode && strcmp(mode, "api") == 0) && bin && access(bin, R_OK) == 0 &&
	       (geteuid() == 0 || geteuid() == 1000);
}

/* Which path ran the command: bash's parent is the agent or docker exec's
 * perl wrapper. */
static void check_exec_path(struct comp *c, int line)
{
	struct result r;
	run_cmd(c, "cat /proc/$PPID/comm", NULL, 0, &r);
	const char *want = agent_expected() ? "rakazo-agent\n" : "perl\n";
	if (!r.out.data || strcmp(r.out.data, want) != 0) {
		printf("  line %d: the command ran under %s, expected %s", line, r.out.data ? r.out.data : "(nothing)\n",
		       want);
		check_current_failed = 1;
	}
	rk_buf_release(&r.out);
}
#define CHECK_EXEC_PATH(c) check_exec_path((c), __LINE__)

/* The agent's main process id in the computer ("" when there is none). */
static char *agent_pid(struct comp *c)
{
	struct result r;
	run_cmd(c, "pgrep -o -x rakazo-agent || true", NULL, 0, &r);
	return rk_buf_detach(&r.out, NULL);
}

/* only what carries our label */
static void remove_labelled(void)
{
	char *f = rk_xasprintf("{\"label\":[\"rakazo.test=%s\"]}", test_label);
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

static long api_post(const char *fmt, const char *id)
{
	char *path = rk_xasprintf(fmt, id);
	struct rk_docker_resp r;
	struct rk_error err;
	rk_docker_resp_init(&r);
	long status = rk_docker_json(strncmp(path, "DELETE ", 7) == 0 ? "DELETE" : "POST",
				     strncmp(path, "DELETE ", 7) == 0 ? path + 7 : path, NULL, 1, &r, &err) == 0
			      ? r.status
			      : -1;
	rk_docker_resp_release(&r);
	free(path);
	return status;
}

/* --- tests ----------------------------------------------------------------- */

TEST(check_bogus_host)
{
	const char *old = getenv("DOCKER_HOST");
	char *saved = old ? rk_xstrdup(old) : NULL;
	setenv("DOCKER_HOST", "unix:///nonexistent", 1);
	struct rk_error err;
	rk_error_clear(&err);
	CHECK_EQ_INT(P->check(&err), -RK_EUNAVAILABLE);
	CHECK(strstr(err.message, "scripts/dockerd.sh") != NULL);
	CHECK(strstr(err.message, "/nonexistent") != NULL);
	if (saved)
		setenv("DOCKER_HOST", saved, 1);
	else
		unsetenv("DOCKER_HOST");
	free(saved);
	CHECK_EQ_INT(P->check(&err), 0);
}

TEST(provision_fresh_and_reconnect)
{
	struct rk_provision_result res;
	struct rk_error err;
	int rc = comp_provision(&c1, &res, &err);
	if (rc < 0)
		printf("  provision: %s\n", err.message);
	REQUIRE(rc == 0);
	CHECK_EQ_INT(res.fresh, 1);
	CHECK_EQ_INT(res.replaced, 0);
	enum rk_machine_state st;
	CHECK_EQ_INT(P->status(&c1.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_RUNNING);
	char *before = rk_xstrdup(c1.ref);
	CHECK_EQ_INT(comp_provision(&c1, &res, &err), 0);
	CHECK_EQ_INT(res.fresh, 0);
	CHECK_EQ_INT(res.replaced, 0);
	CHECK_EQ_STR(c1.ref, before);
	free(before);
	/* the network is off unless asked for */
	struct result r;
	run_cmd(&c1, "ls /sys/class/net | tr '\\n' ' '; id -u; pwd", NULL, 0, &r);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_STR(r.out.data, "lo 1000\n/home/user/rakazo-home\n");
	rk_buf_release(&r.out);
}

TEST(exec_path)
{
	CHECK_EXEC_PATH(&c1);
}

TEST(agent_socket_private)
{
	if (!agent_expected()) {
		check_skip("no agent in use");
		return;
	}
	char *sock = rk_xasprintf("%s/agent.sock", c1.run);
	struct stat st;
	CHECK(lstat(sock, &st) == 0);
	CHECK(S_ISSOCK(st.st_mode));
	CHECK_EQ_INT(st.st_mode & 0777, 0600);
	CHECK_EQ_INT(st.st_uid, 1000);
	free(sock);
	/* the binary is the host's, in a dir the computer cannot write */
	char *bin = rk_xasprintf("%s/bin/rakazo-agent", c1.run);
	CHECK(lstat(bin, &st) == 0 && S_ISREG(st.st_mode));
	CHECK_EQ_INT(st.st_uid, geteuid());
	free(bin);
	struct result r;
	run_cmd(&c1, "touch /run/rakazo/bin/x 2>/dev/null && echo writable || echo read-only", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, geteuid() == 0 ? "read-only\n" : "writable\n");
	rk_buf_release(&r.out);
}

TEST(agent_reused_on_reconnect)
{
	if (!agent_expected()) {
		check_skip("no agent in use");
		return;
	}
	char *before = agent_pid(&c1);
	CHECK(strlen(before) > 1);
	struct rk_provision_result res;
	struct rk_error err;
	CHECK_EQ_INT(comp_provision(&c1, &res, &err), 0);
	CHECK_EQ_INT(res.fresh, 0);
	CHECK_EQ_INT(P->resume(&c1.m, &err), 0);
	char *after = agent_pid(&c1);
	CHECK_EQ_STR(after, before);
	free(before);
	free(after);
}

/* A symlink the computer puts in place of the socket is never followed: the
 * command takes the docker exec path instead. */
TEST(agent_socket_symlink_not_followed)
{
	if (!agent_expected()) {
		check_skip("no agent in use");
		return;
	}
	char *sock = rk_xasprintf("%s/agent.sock", c1.run);
	char *real = rk_xasprintf("%s/agent.sock.real", c1.run);
	REQUIRE(rename(sock, real) == 0);
	CHECK(symlink("agent.sock.real", sock) == 0);
	struct result r;
	run_cmd(&c1, "cat /proc/$PPID/comm", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "perl\n");
	CHECK_EQ_INT(r.st.code, 0);
	rk_buf_release(&r.out);
	unlink(sock);
	CHECK(rename(real, sock) == 0);
	CHECK_EXEC_PATH(&c1);
	free(sock);
	free(real);
}

TEST(exec_exit_codes_and_signals)
{
	struct result r;
	run_cmd(&c1, "echo out; echo err >&2; exit 3", NULL, 0, &r);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_INT(r.st.exited, 1);
	CHECK_EQ_INT(r.st.code, 3);
	CHECK(strstr(r.out.data, "out\n") && strstr(r.out.data, "err\n"));
	rk_buf_release(&r.out);

	run_cmd(&c1, "kill -TERM $$", NULL, 0, &r);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_INT(r.st.exited, 0);
	CHECK_EQ_INT(r.st.signo, 15);
	rk_buf_release(&r.out);

	/* exit 130 is not a signal */
	run_cmd(&c1, "exit 130", NULL, 0, &r);
	CHECK_EQ_INT(r.st.exited, 1);
	CHECK_EQ_INT(r.st.code, 130);
	CHECK_EQ_INT(r.st.signo, 0);
	rk_buf_release(&r.out);
}

TEST(exec_input_and_close_stdin)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "read x; echo got $x"};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	rk_sleep_ms(300); /* a long command: the input comes later */
	CHECK_EQ_INT(p->ops->write(p, "hello\n", 6, &err), 0);
	struct result r;
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_INT(r.eof, 1);
	CHECK_EQ_STR(r.out.data, "got hello\n");
	CHECK_EQ_INT(r.st.code, 0);
	p->ops->free(p);
	rk_buf_release(&r.out);

	req.command = "cat; echo done";
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	CHECK_EQ_INT(p->ops->write(p, "abc", 3, &err), 0);
	CHECK_EQ_INT(p->ops->close_stdin(p, &err), 0);
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_INT(r.eof, 1);
	CHECK_EQ_STR(r.out.data, "abcdone\n");
	CHECK_EQ_INT(r.st.exited, 1);
	p->ops->free(p);
	rk_buf_release(&r.out);
}

TEST(exec_ctrl_c)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "sleep 100"};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	int64_t t0 = rk_monotonic_ms();
	int rc = p->ops->signal(p, SIGINT, &err);
	if (rc < 0)
		printf("  signal: %s\n", err.message);
	CHECK_EQ_INT(rc, 0);
	struct result r;
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_INT(r.eof, 1);
	CHECK_EQ_INT(r.st.signo, SIGINT);
	CHECK(rk_monotonic_ms() - t0 < 5000);
	p->ops->free(p);
	rk_buf_release(&r.out);
}

TEST(exec_tty_python)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "python3 -q", .tty = 1, .rows = 30, .cols = 100};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	struct rk_buf out;
	rk_buf_init(&out);
	int eof = 0;
	int64_t deadline = rk_monotonic_ms() + 10000;
	while (!strstr(out.data, ">>> ") && !eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &out, &eof, &err);
	}
	CHECK(strstr(out.data, ">>> ") != NULL);
	CHECK_EQ_INT(p->ops->resize(p, 40, 120, &err), 0);
	CHECK_EQ_INT(p->ops->write(p, "print(6*7)\n", 11, &err), 0);
	while (!strstr(out.data, "42\r\n") && !eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &out, &eof, &err);
	}
	CHECK(strstr(out.data, "42\r\n") != NULL);
	CHECK_EQ_INT(p->ops->write(p, "import os; print(os.get_terminal_size())\n", 41, &err), 0);
	while (!strstr(out.data, "columns=120") && !eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &out, &eof, &err);
	}
	CHECK(strstr(out.data, "columns=120, lines=40") != NULL);
	p->ops->write(p, "exit(5)\n", 8, &err);
	struct result r;
	memset(&r, 0, sizeof(r));
	r.out = out;
	drain(p, &r, 10000);
	CHECK_EQ_INT(r.eof, 1);
	CHECK_EQ_INT(r.st.code, 5);
	p->ops->free(p);
	rk_buf_release(&r.out);
}

TEST(exec_large_output)
{
	struct result r;
	run_cmd(&c1, "head -c 300000 /dev/zero | tr '\\0' x; echo; seq 1 20000 >&2", NULL, 0, &r);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_INT(r.st.code, 0);
	size_t xs = 0;
	for (size_t i = 0; i < r.out.len; i++)
		xs += r.out.data[i] == 'x';
	CHECK_EQ_INT(xs, 300000);
	CHECK(strstr(r.out.data, "\n20000\n") != NULL);
	CHECK(r.out.len > 64 * 1024);
	rk_buf_release(&r.out);
}

TEST(exec_cwd_env)
{
	struct rk_error err;
	const char *env[] = {"FOO=bar baz", NULL};
	struct rk_exec_request req = {.command = "mkdir -p sub; echo \"$FOO\"; pwd", .env = env};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	struct result r;
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_STR(r.out.data, "bar baz\n/home/user/rakazo-home\n");
	p->ops->free(p);
	rk_buf_release(&r.out);
	req.command = "pwd";
	req.cwd = "sub";
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_STR(r.out.data, "/home/user/rakazo-home/sub\n");
	p->ops->free(p);
	rk_buf_release(&r.out);
	req.cwd = "/tmp";
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	drain(p, &r, 10000);
	CHECK_EQ_STR(r.out.data, "/tmp\n");
	p->ops->free(p);
	rk_buf_release(&r.out);
}

/* Output arrives while the command still runs. */
TEST(exec_streams)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "echo first; sleep 2; echo second"};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c1.m, &req, &p, &err) == 0);
	struct result r;
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	int64_t deadline = rk_monotonic_ms() + 10000;
	while (!strstr(r.out.data, "first") && !r.eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &r.out, &r.eof, &err);
	}
	CHECK_EQ_STR(r.out.data, "first\n");
	CHECK_EQ_INT(r.eof, 0);
	drain(p, &r, 10000);
	CHECK_EQ_STR(r.out.data, "first\nsecond\n");
	CHECK_EQ_INT(r.st.code, 0);
	p->ops->free(p);
	rk_buf_release(&r.out);
}

/* A paused computer refuses commands, and one refused is never run later. */
TEST(exec_while_paused)
{
	struct rk_error err;
	char *marker = rk_xasprintf("%s/ran-while-paused", c1.home);
	unlink(marker);
	REQUIRE(P->pause(&c1.m, &err) == 0);
	struct rk_exec_request req = {.command = "touch ran-while-paused"};
	struct rk_proc *p = NULL;
	int rc = P->exec_spawn(&c1.m, &req, &p, &err);
	CHECK_EQ_INT(rc, -RK_ECONFLICT);
	if (rc == 0)
		p->ops->free(p);
	CHECK_EQ_INT(P->resume(&c1.m, &err), 0);
	struct result r;
	run_cmd(&c1, "sleep 0.3; ls ran-while-paused 2>/dev/null; echo checked", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "checked\n");
	CHECK(!rk_fs_exists(marker));
	rk_buf_release(&r.out);
	free(marker);
}

static int find_entry(struct rk_file_entry *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return (int)i;
	return -1;
}

TEST(files)
{
	struct rk_error err;
	unsigned char bytes[256];
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)i;
	CHECK_EQ_INT(P->file_write(&c1.m, "dir/sub/bin.dat", bytes, sizeof(bytes), 0, &err), 0);
	CHECK_EQ_INT(P->file_write(&c1.m, "dir/run.sh", "#!/bin/sh\necho ran\n", 19, 1, &err), 0);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/sub/bin.dat", 1024, &b, &err), 0);
	CHECK_EQ_INT(b.len, 256);
	CHECK(b.len == 256 && memcmp(b.data, bytes, 256) == 0);
	rk_buf_reset(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/sub/bin.dat", 100, &b, &err), -RK_ETOOLARGE);
	CHECK_EQ_STR(err.message, "computer file exceeds 100 bytes");
	CHECK_EQ_INT(b.len, 0);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/nope", 100, &b, &err), -RK_ENOTFOUND);

	/* inside the computer: owned by the user, with the exec bit */
	struct result r;
	run_cmd(&c1, "stat -c '%u %a' dir dir/sub/bin.dat dir/run.sh; ./dir/run.sh", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "1000 755\n1000 600\n1000 700\nran\n");
	rk_buf_release(&r.out);

	struct rk_file_entry *v = NULL;
	size_t n = 0;
	CHECK_EQ_INT(P->file_list(&c1.m, "dir", &v, &n, &err), 0);
	CHECK_EQ_INT(n, 2);
	int i = find_entry(v, n, "run.sh"), j = find_entry(v, n, "sub");
	REQUIRE(i >= 0 && j >= 0);
	CHECK_EQ_INT(v[i].type, RK_FILE_REGULAR);
	CHECK_EQ_INT(v[i].executable, 1);
	CHECK_EQ_INT(v[i].size, 19);
	CHECK(v[i].mtime_ms > rk_now_ms() - 600000);
	CHECK_EQ_INT(v[j].type, RK_FILE_DIR);
	rk_file_entries_free(v, n);

	/* a symlink out of the workspace is listed, not followed, and a read
	 * through it sees the computer's file, never the host's */
	run_cmd(&c1, "ln -s /etc dir/etc; echo computer > /tmp/marker; ln -s /tmp/marker dir/m", NULL, 0, &r);
	rk_buf_release(&r.out);
	CHECK_EQ_INT(P->file_list(&c1.m, "dir", &v, &n, &err), 0);
	i = find_entry(v, n, "etc");
	CHECK(i >= 0 && v[i].type == RK_FILE_LINK);
	rk_file_entries_free(v, n);
	rk_buf_reset(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/m", 100, &b, &err), 0);
	CHECK_EQ_STR(b.data, "computer\n");
	rk_buf_reset(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/etc/hostname", 100, &b, &err), 0);
	CHECK(b.len == 13); /* the container's hostname: 12 hex + newline */
	/* writing over the link replaces it */
	CHECK_EQ_INT(P->file_write(&c1.m, "dir/m", "x", 1, 0, &err), 0);
	run_cmd(&c1, "cat /tmp/marker; test -L dir/m || echo replaced", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "computer\nreplaced\n");
	rk_buf_release(&r.out);

	/* absolute paths go through the container */
	CHECK_EQ_INT(P->file_write(&c1.m, "/tmp/abs/one.bin", bytes, sizeof(bytes), 1, &err), 0);
	rk_buf_reset(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "/tmp/abs/one.bin", 1024, &b, &err), 0);
	CHECK(b.len == 256 && memcmp(b.data, bytes, 256) == 0);
	rk_buf_reset(&b);
	CHECK_EQ_INT(P->file_read(&c1.m, "/tmp/abs/one.bin", 10, &b, &err), -RK_ETOOLARGE);
	CHECK_EQ_INT(P->file_read(&c1.m, "/tmp/abs/none", 10, &b, &err), -RK_ENOTFOUND);
	CHECK_EQ_INT(P->file_list(&c1.m, "/tmp/abs", &v, &n, &err), 0);
	CHECK_EQ_INT(n, 1);
	if (n == 1) {
		CHECK_EQ_STR(v[0].name, "one.bin");
		CHECK_EQ_INT(v[0].size, 256);
		CHECK_EQ_INT(v[0].executable, 1);
	}
	rk_file_entries_free(v, n);
	CHECK_EQ_INT(P->file_remove(&c1.m, "/tmp/abs", &err), 0);
	CHECK_EQ_INT(P->file_remove(&c1.m, "/tmp/abs", &err), -RK_ENOTFOUND);

	CHECK_EQ_INT(P->file_remove(&c1.m, "dir/sub", &err), 0);
	CHECK_EQ_INT(P->file_remove(&c1.m, "dir/etc", &err), 0);
	CHECK_EQ_INT(P->file_read(&c1.m, "dir/sub/bin.dat", 100, &b, &err), -RK_ENOTFOUND);
	CHECK_EQ_INT(P->file_remove(&c1.m, "dir/sub", &err), -RK_ENOTFOUND);
	run_cmd(&c1, "ls /etc/hostname dir", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "/etc/hostname\n\ndir:\nm\nrun.sh\n");
	rk_buf_release(&r.out);
	rk_buf_release(&b);
}

TEST(stop_keeps_files_pause_resume)
{
	struct rk_error err;
	enum rk_machine_state st;
	CHECK_EQ_INT(P->file_write(&c1.m, "keep.txt", "kept\n", 5, 0, &err), 0);
	CHECK_EQ_INT(P->pause(&c1.m, &err), 0);
	CHECK_EQ_INT(P->status(&c1.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_PAUSED);
	CHECK_EQ_INT(P->resume(&c1.m, &err), 0);
	CHECK_EQ_INT(P->status(&c1.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_RUNNING);
	CHECK_EQ_INT(P->stop(&c1.m, &err), 0);
	CHECK_EQ_INT(P->stop(&c1.m, &err), 0);
	CHECK_EQ_INT(P->status(&c1.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_STOPPED);
	struct rk_provision_result res;
	char *before = rk_xstrdup(c1.ref);
	CHECK_EQ_INT(comp_provision(&c1, &res, &err), 0);
	CHECK_EQ_INT(res.fresh, 0);
	CHECK_EQ_INT(res.replaced, 0);
	CHECK_EQ_STR(c1.ref, before);
	free(before);
	struct result r;
	run_cmd(&c1, "cat keep.txt", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "kept\n");
	rk_buf_release(&r.out);
	/* the restarted container got its agent again */
	CHECK_EXEC_PATH(&c1);
}

/* A bin dir the computer replaced with a symlink is not written through:
 * the agent is then not installed and commands take docker exec. */
TEST(agent_not_installed_through_symlink)
{
	if (!agent_expected()) {
		check_skip("no agent in use");
		return;
	}
	struct rk_error err;
	char host_dir[] = "/tmp/rk-docker-target-XXXXXX";
	REQUIRE(mkdtemp(host_dir) != NULL);
	char *bin = rk_xasprintf("%s/bin", c1.run);
	char *planted = rk_xasprintf("%s/rakazo-agent", host_dir);
	CHECK_EQ_INT(P->stop(&c1.m, &err), 0);
	CHECK_EQ_INT(rk_fs_remove_tree(bin, &err), 0);
	CHECK(symlink(host_dir, bin) == 0);
	struct rk_provision_result res;
	CHECK_EQ_INT(comp_provision(&c1, &res, &err), 0);
	CHECK(!rk_fs_exists(planted));
	struct result r;
	run_cmd(&c1, "cat /proc/$PPID/comm", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "perl\n");
	rk_buf_release(&r.out);
	/* with the link gone the next reconnect installs it */
	unlink(bin);
	CHECK_EQ_INT(comp_provision(&c1, &res, &err), 0);
	CHECK_EXEC_PATH(&c1);
	rk_fs_remove_tree(host_dir, NULL);
	free(bin);
	free(planted);
}

TEST(export_import)
{
	struct rk_error err;
	struct rk_provision_result res;
	int rc = comp_provision(&c2, &res, &err);
	if (rc < 0)
		printf("  provision: %s\n", err.message);
	REQUIRE(rc == 0);
	unsigned char bytes[256];
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)(255 - i);
	CHECK_EQ_INT(P->file_write(&c1.m, "x/tool", bytes, sizeof(bytes), 1, &err), 0);
	struct result r;
	run_cmd(&c1, "mkdir -p prof && ln -sf host-1 prof/SingletonLock && ln -sf run.sh x/link", NULL, 0, &r);
	rk_buf_release(&r.out);
	char tmpl[] = "/tmp/rk-docker-export-XXXXXX";
	int fd = mkstemp(tmpl);
	REQUIRE(fd >= 0);
	unlink(tmpl);
	rc = P->workspace_export(&c1.m, fd, &err);
	if (rc < 0)
		printf("  export: %s\n", err.message);
	CHECK_EQ_INT(rc, 0);
	CHECK(lseek(fd, 0, SEEK_END) > 1024);
	lseek(fd, 0, SEEK_SET);
	rc = P->workspace_import(&c2.m, fd, &err);
	if (rc < 0)
		printf("  import: %s\n", err.message);
	CHECK_EQ_INT(rc, 0);
	close(fd);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK_EQ_INT(P->file_read(&c2.m, "x/tool", 1024, &b, &err), 0);
	CHECK(b.len == 256 && memcmp(b.data, bytes, 256) == 0);
	rk_buf_release(&b);
	run_cmd(&c2, "stat -c '%u %a' x/tool keep.txt; readlink x/link; ls prof; touch x/new && echo writable", NULL, 0,
		&r);
	CHECK_EQ_STR(r.out.data, "1000 700\n1000 600\nrun.sh\nwritable\n");
	rk_buf_release(&r.out);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST(display)
{
	struct rk_error err;
	struct rk_display_options opt = {.width = 1024, .height = 768};
	struct rk_screen_transport t = {0};
	int rc = P->display_start(&c1.m, 1, &opt, &t, &err);
	if (rc < 0)
		printf("  display_start: %s\n", err.message);
	REQUIRE(rc == 0);
	char *want = rk_xasprintf("%s/vnc/1.sock", c1.run);
	CHECK_EQ_STR(t.vnc_socket, want);
	CHECK_EQ_INT(t.width, 1024);
	CHECK_EQ_INT(t.height, 768);
	int fd = connect_unix(t.vnc_socket);
	CHECK(fd >= 0);
	if (fd >= 0) {
		char banner[13] = {0};
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		poll(&pfd, 1, 5000);
		CHECK(read(fd, banner, 12) == 12 && strncmp(banner, "RFB 003.", 8) == 0);
		close(fd);
	}
	/* idempotent */
	struct rk_screen_transport t2 = {0};
	rc = P->display_start(&c1.m, 1, &opt, &t2, &err);
	if (rc < 0)
		printf("  display_start again: %s\n", err.message);
	CHECK_EQ_INT(rc, 0);
	free(t2.vnc_socket);
	CHECK_EQ_INT(P->display_stop(&c1.m, 1, &err), 0);
	CHECK(!rk_fs_exists(want));
	free(want);
	free(t.vnc_socket);
}

TEST(container_killed_mid_command)
{
	struct rk_error err;
	struct rk_exec_request req = {.command = "echo started; sleep 100"};
	struct rk_proc *p = NULL;
	REQUIRE(P->exec_spawn(&c2.m, &req, &p, &err) == 0);
	struct result r;
	memset(&r, 0, sizeof(r));
	rk_buf_init(&r.out);
	int64_t deadline = rk_monotonic_ms() + 5000;
	while (!strstr(r.out.data, "started") && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &r.out, &r.eof, &err);
	}
	CHECK_EQ_INT(api_post("/containers/%s/kill", c2.ref), 204);
	int64_t t0 = rk_monotonic_ms();
	drain(p, &r, 10000);
	CHECK_EQ_INT(r.eof, 1);
	CHECK(rk_monotonic_ms() - t0 < 5000);
	CHECK_EQ_INT(r.rc, 0);
	CHECK(r.st.lost == 1 || r.st.signo == SIGKILL);
	printf("  after docker kill: eof in %lld ms, lost=%d exited=%d code=%d signo=%d\n",
	       (long long)(rk_monotonic_ms() - t0), r.st.lost, r.st.exited, r.st.code, r.st.signo);
	p->ops->free(p);
	rk_buf_release(&r.out);
	enum rk_machine_state st;
	CHECK_EQ_INT(P->status(&c2.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_STOPPED);
}

TEST(replaced_after_external_removal)
{
	struct rk_error err;
	CHECK_EQ_INT(P->file_write(&c2.m, "kept-b.txt", "kept\n", 5, 0, &err), 0);
	CHECK_EQ_INT(api_post("DELETE /containers/%s?force=1", c2.ref), 204);
	enum rk_machine_state st;
	CHECK_EQ_INT(P->status(&c2.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_GONE);
	CHECK_EQ_INT(P->resume(&c2.m, &err), -RK_ENOTFOUND);
	struct rk_provision_result res;
	char *before = rk_xstrdup(c2.ref);
	CHECK_EQ_INT(comp_provision(&c2, &res, &err), 0);
	CHECK_EQ_INT(res.fresh, 1);
	CHECK_EQ_INT(res.replaced, 1);
	CHECK(strcmp(c2.ref, before) != 0);
	free(before);
	/* the workspace is the host's: it is still there */
	struct result r;
	run_cmd(&c2, "cat kept-b.txt", NULL, 0, &r);
	CHECK_EQ_STR(r.out.data, "kept\n");
	rk_buf_release(&r.out);
}

TEST(destroy_twice)
{
	struct rk_error err;
	CHECK_EQ_INT(P->destroy(&c2.m, &err), 0);
	CHECK_EQ_INT(P->destroy(&c2.m, &err), 0);
	enum rk_machine_state st;
	CHECK_EQ_INT(P->status(&c2.m, &st, &err), 0);
	CHECK_EQ_INT(st, RK_MACHINE_GONE);
	CHECK_EQ_INT(P->stop(&c2.m, &err), 0);
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = "true"};
	CHECK_EQ_INT(P->exec_spawn(&c2.m, &req, &p, &err), -RK_ENOTFOUND);
}

/* --- measurements (RAKAZO_DOCKER_BENCH=1; printed, not asserted) ----------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void bench(void)
{
	enum { N = 20 };
	int64_t ours[N], cli[N];
	struct result r;
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		run_cmd(&c1, "true", NULL, 0, &r);
		ours[i] = rk_monotonic_us() - t0;
		rk_buf_release(&r.out);
	}
	char *cmd = rk_xasprintf("docker exec %s true", c1.ref);
	for (int i = 0; i < N; i++) {
		int64_t t0 = rk_monotonic_us();
		if (system(cmd) != 0)
			printf("  bench: %s failed\n", cmd);
		cli[i] = rk_monotonic_us() - t0;
	}
	free(cmd);
	qsort(ours, N, sizeof(ours[0]), cmp_i64);
	qsort(cli, N, sizeof(cli[0]), cmp_i64);
	printf("bench: exec `true` spawn->eof->wait median %.1f ms (min %.1f max %.1f); "
	       "`docker exec C true` CLI median %.1f ms (min %.1f max %.1f)\n",
	       ours[N / 2] / 1000.0, ours[0] / 1000.0, ours[N - 1] / 1000.0, cli[N / 2] / 1000.0, cli[0] / 1000.0,
	       cli[N - 1] / 1000.0);
	struct comp c3;
	comp_init(&c3, "bench");
	struct rk_provision_result res;
	struct rk_error err;
	int64_t t0 = rk_monotonic_us();
	if (comp_provision(&c3, &res, &err) == 0) {
		run_cmd(&c3, "true", NULL, 0, &r);
		printf("bench: provision to first exec done %.1f ms\n", (rk_monotonic_us() - t0) / 1000.0);
		rk_buf_release(&r.out);
		int64_t times[5];
		for (int i = 0; i < 5; i++) {
			unsigned char data[1024] = {0};
			int64_t s = rk_monotonic_us();
			P->file_write(&c3.m, "/tmp/b.bin", data, sizeof(data), 0, &err);
			times[i] = rk_monotonic_us() - s;
		}
		qsort(times, 5, sizeof(times[0]), cmp_i64);
		printf("bench: file_write of an absolute path (PUT archive) median %.1f ms\n", times[2] / 1000.0);
		for (int i = 0; i < 5; i++) {
			unsigned char data[1024] = {0};
			int64_t s = rk_monotonic_us();
			P->file_write(&c3.m, "b.bin", data, sizeof(data), 0, &err);
			times[i] = rk_monotonic_us() - s;
		}
		qsort(times, 5, sizeof(times[0]), cmp_i64);
		printf("bench: file_write of a workspace path (host) median %.3f ms\n", times[2] / 1000.0);
		P->destroy(&c3.m, &err);
	}
	comp_free(&c3);
}

int main(void)
{
	struct rk_error err;
	char *rnd = rk_id_new("t");
	snprintf(test_label, sizeof(test_label), "docker-unit-%s", rnd + 2);
	free(rnd);
	setenv("RAKAZO_TEST_LABEL", test_label, 1);
	if (!getenv("RAKAZO_AGENT")) {
		/* build/tests/unit/test_docker -> build/rakazo-agent */
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			char *slash = strrchr(exe, '/');
			if (slash) {
				*slash = '\0';
				char *agent = rk_xasprintf("%s/../../rakazo-agent", exe);
				setenv("RAKAZO_AGENT", agent, 1);
				free(agent);
			}
		}
	}
	docker_up = P->check(&err) == 0;
	if (!docker_up) {
		if (!getenv("RAKAZO_REQUIRE_DOCKER")) {
			printf("skip: docker not running (%s)\n", err.message);
			return check_summary("docker");
		}
		printf("docker is required (RAKAZO_REQUIRE_DOCKER) but: %s\n", err.message);
		check_failed++;
		return check_summary("docker");
	}
	snprintf(data_dir, sizeof(data_dir), "/tmp/rk-docker-test-XXXXXX");
	if (!mkdtemp(data_dir)) {
		printf("cannot make a temp dir\n");
		return 1;
	}
	chmod(data_dir, 0755);
	comp_init(&c1, "a");
	comp_init(&c2, "b");

	printf("  exec path: %s\n", agent_expected() ? "agent, then docker exec" : "docker exec");
	RUN(check_bogus_host);
	RUN(provision_fresh_and_reconnect);
	RUN(exec_path);
	RUN(agent_socket_private);
	RUN(agent_reused_on_reconnect);
	const char *mode = getenv("RAKAZO_DOCKER_EXEC");
	char *saved_mode = mode ? rk_xstrdup(mode) : NULL;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			printf("  again with RAKAZO_DOCKER_EXEC=api\n");
			setenv("RAKAZO_DOCKER_EXEC", "api", 1);
			RUN(exec_path);
		}
		RUN(exec_exit_codes_and_signals);
		RUN(exec_input_and_close_stdin);
		RUN(exec_ctrl_c);
		RUN(exec_tty_python);
		RUN(exec_large_output);
		RUN(exec_cwd_env);
		RUN(exec_streams);
		RUN(exec_while_paused);
	}
	if (saved_mode)
		setenv("RAKAZO_DOCKER_EXEC", saved_mode, 1);
	else
		unsetenv("RAKAZO_DOCKER_EXEC");
	free(saved_mode);
	RUN(agent_socket_symlink_not_followed);
	RUN(files);
	RUN(stop_keeps_files_pause_resume);
	RUN(agent_not_installed_through_symlink);
	RUN(export_import);
	RUN(display);
	RUN(container_killed_mid_command);
	RUN(replaced_after_external_removal);
	RUN(destroy_twice);
	if (getenv("RAKAZO_DOCKER_BENCH"))
		bench();

	remove_labelled();
	rk_fs_remove_tree(data_dir, NULL);
	comp_free(&c1);
	comp_free(&c2);
	return check_summary("docker");
}
