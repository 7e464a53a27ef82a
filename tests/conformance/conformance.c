/* The provider conformance suite: every provider in the registry must pass
 * it unchanged. `conformance PROVIDER` runs it against one provider through
 * the vtable alone, in a temporary data directory. A provider whose backend
 * is down is skipped, unless RAKAZO_REQUIRE_<NAME>=1 (e.g.
 * RAKAZO_REQUIRE_DOCKER=1), when that is a failure. */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/util/buf.h"
#include "../../engine/util/fs.h"
#include "../../engine/util/id.h"
#include "../../engine/util/time.h"
#include "../../providers/provider.h"
#include "../unit/check.h"

static const struct rk_provider_ops *ops;
static char *data_dir;

struct machine {
	struct rk_machine m;
	char *id, *home, *run, *ref;
};

static void machine_init(struct machine *mc, const char *ref)
{
	memset(mc, 0, sizeof(*mc));
	mc->id = rk_id_new("cmp");
	mc->home = rk_xasprintf("%s/homes/%s", data_dir, mc->id);
	mc->run = rk_xasprintf("%s/run/%s", data_dir, mc->id);
	rk_fs_mkdirs(mc->home, 0755, NULL);
	rk_fs_mkdirs(mc->run, 0755, NULL);
	mc->ref = rk_xstrdup(ref);
	mc->m.computer_id = mc->id;
	mc->m.home_key = mc->id;
	mc->m.data_dir = data_dir;
	mc->m.home_dir = mc->home;
	mc->m.run_dir = mc->run;
	mc->m.ref = mc->ref;
}

static void machine_set_ref(struct machine *mc, char *ref)
{
	free(mc->ref);
	mc->ref = ref;
	mc->m.ref = ref;
}

static void machine_release(struct machine *mc)
{
	free(mc->id);
	free(mc->home);
	free(mc->run);
	free(mc->ref);
}

static int provision(struct machine *mc, struct rk_provision_result *pr)
{
	struct rk_error e;
	memset(pr, 0, sizeof(*pr));
	int r = ops->provision(&mc->m, pr, &e);
	if (r)
		printf("  provision: %s: %s\n", rk_code_name(e.code), e.message);
	else
		machine_set_ref(mc, rk_xstrdup(pr->ref));
	return r;
}

/* Runs a command to its end (bounded): output, status; input written first. */
static int run(struct machine *mc, const char *cmd, const char *input, int tty, struct rk_buf *out,
	       struct rk_exit_status *st)
{
	struct rk_error e;
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = cmd, .tty = tty, .rows = 24, .cols = 80};
	if (ops->exec_spawn(&mc->m, &req, &p, &e) != 0) {
		printf("  exec %s: %s\n", cmd, e.message);
		return -1;
	}
	if (input) {
		p->ops->write(p, input, strlen(input), &e);
		if (!tty)
			p->ops->close_stdin(p, &e);
	}
	int eof = 0;
	int64_t deadline = rk_monotonic_ms() + 30000;
	while (!eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		if (p->ops->read(p, out, &eof, &e) != 0)
			break;
	}
	memset(st, 0, sizeof(*st));
	int r = eof ? p->ops->wait(p, st, &e) : -1;
	p->ops->free(p);
	return r;
}

static struct machine main_m;

TEST(provision_fresh)
{
	struct rk_provision_result pr;
	REQUIRE(provision(&main_m, &pr) == 0);
	CHECK(pr.ref && *pr.ref);
	CHECK_EQ_INT(pr.fresh, 1);
	CHECK_EQ_INT(pr.replaced, 0);
	free(pr.ref);
	enum rk_machine_state s;
	struct rk_error e;
	CHECK(ops->status(&main_m.m, &s, &e) == 0);
	CHECK_EQ_INT(s, RK_MACHINE_RUNNING);
}

TEST(exec_echo)
{
	struct rk_buf out = RK_BUF_INIT;
	struct rk_exit_status st;
	rk_buf_init(&out);
	REQUIRE(run(&main_m, "echo graphical-ok", NULL, 0, &out, &st) == 0);
	CHECK_EQ_STR(out.data, "graphical-ok\n");
	CHECK_EQ_INT(st.exited, 1);
	CHECK_EQ_INT(st.code, 0);
	CHECK_EQ_INT(st.signo, 0);
	rk_buf_release(&out);
}

TEST(exec_exit_code_and_stderr_merged)
{
	struct rk_buf out;
	struct rk_exit_status st;
	rk_buf_init(&out);
	REQUIRE(run(&main_m, "echo out; echo err >&2; exit 3", NULL, 0, &out, &st) == 0);
	CHECK(strstr(out.data, "out\n") && strstr(out.data, "err\n"));
	CHECK_EQ_INT(st.code, 3);
	rk_buf_release(&out);
}

TEST(exec_signal)
{
	struct rk_buf out;
	struct rk_exit_status st;
	rk_buf_init(&out);
	REQUIRE(run(&main_m, "kill -TERM $$", NULL, 0, &out, &st) == 0);
	CHECK_EQ_INT(st.signo, SIGTERM);
	rk_buf_release(&out);
}

TEST(exec_stdin_and_eof)
{
	struct rk_buf out;
	struct rk_exit_status st;
	rk_buf_init(&out);
	REQUIRE(run(&main_m, "read x; echo got $x; cat", "abc\nrest\n", 0, &out, &st) == 0);
	CHECK_EQ_STR(out.data, "got abc\nrest\n");
	CHECK_EQ_INT(st.code, 0);
	rk_buf_release(&out);
}

TEST(exec_interrupt)
{
	struct rk_error e;
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = "sleep 100"};
	REQUIRE(ops->exec_spawn(&main_m.m, &req, &p, &e) == 0);
	rk_sleep_ms(300);
	CHECK(p->ops->signal(p, SIGINT, &e) == 0);
	struct rk_buf out;
	rk_buf_init(&out);
	int eof = 0;
	int64_t deadline = rk_monotonic_ms() + 10000;
	while (!eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &out, &eof, &e);
	}
	CHECK(eof);
	struct rk_exit_status st = {0};
	if (eof)
		CHECK(p->ops->wait(p, &st, &e) == 0);
	CHECK(st.signo == SIGINT || st.code == 130);
	p->ops->free(p);
	rk_buf_release(&out);
}

TEST(exec_tty_repl)
{
	if (!(ops->caps & RK_CAP_TTY)) {
		check_skip("no tty capability");
		return;
	}
	struct rk_error e;
	struct rk_proc *p = NULL;
	struct rk_exec_request req = {.command = "python3 -q", .tty = 1, .rows = 24, .cols = 80};
	REQUIRE(ops->exec_spawn(&main_m.m, &req, &p, &e) == 0);
	struct rk_buf out;
	rk_buf_init(&out);
	int eof = 0, wrote = 0, done = 0;
	int64_t deadline = rk_monotonic_ms() + 15000;
	while (!eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		p->ops->read(p, &out, &eof, &e);
		if (!wrote && strstr(out.data, ">>> ")) {
			p->ops->write(p, "print(6*7)\n", 11, &e);
			wrote = 1;
		}
		/* Ctrl-D only once the prompt is back: readline drops input typed before it */
		if (wrote && !done && strstr(out.data, "42\r\n>>> ")) {
			p->ops->write(p, "\x04", 1, &e);
			done = 1;
		}
	}
	CHECK(strstr(out.data, "42\r\n") != NULL);
	if (!eof)
		printf("  tty output so far: %s\n", out.data);
	CHECK(eof);
	p->ops->free(p);
	rk_buf_release(&out);
}

TEST(exec_large_output)
{
	struct rk_buf out;
	struct rk_exit_status st;
	rk_buf_init(&out);
	REQUIRE(run(&main_m, "head -c 300000 /dev/zero | tr '\\0' a", NULL, 0, &out, &st) == 0);
	CHECK_EQ_INT(out.len, 300000);
	rk_buf_release(&out);
}

TEST(files_write_list_read)
{
	struct rk_error e;
	REQUIRE(ops->file_write(&main_m.m, "notes/result.txt", "all good", 8, 0, &e) == 0);
	struct rk_file_entry *es = NULL;
	size_t n = 0;
	REQUIRE(ops->file_list(&main_m.m, "notes", &es, &n, &e) == 0);
	CHECK_EQ_INT(n, 1);
	if (n == 1) {
		CHECK_EQ_STR(es[0].name, "result.txt");
		CHECK_EQ_INT(es[0].type, RK_FILE_REGULAR);
		CHECK_EQ_INT(es[0].size, 8);
		CHECK_EQ_INT(es[0].executable, 0);
	}
	rk_file_entries_free(es, n);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK(ops->file_read(&main_m.m, "notes/result.txt", 1024, &b, &e) == 0);
	CHECK_EQ_STR(b.data, "all good");
	rk_buf_release(&b);
	/* the command sees the same file */
	struct rk_exit_status st;
	rk_buf_init(&b);
	CHECK(run(&main_m, "cat notes/result.txt", NULL, 0, &b, &st) == 0);
	CHECK_EQ_STR(b.data, "all good");
	rk_buf_release(&b);
}

TEST(files_binary_executable)
{
	unsigned char bin[256];
	for (int i = 0; i < 256; i++)
		bin[i] = (unsigned char)i;
	struct rk_error e;
	REQUIRE(ops->file_write(&main_m.m, "bin/tool", bin, sizeof(bin), 1, &e) == 0);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK(ops->file_read(&main_m.m, "bin/tool", 1024, &b, &e) == 0);
	CHECK_EQ_INT(b.len, 256);
	CHECK(b.len == 256 && memcmp(b.data, bin, 256) == 0);
	rk_buf_release(&b);
	struct rk_file_entry *es = NULL;
	size_t n = 0;
	REQUIRE(ops->file_list(&main_m.m, "bin", &es, &n, &e) == 0);
	CHECK(n == 1 && es[0].executable == 1);
	rk_file_entries_free(es, n);
}

TEST(files_limits_and_missing)
{
	struct rk_error e;
	REQUIRE(ops->file_write(&main_m.m, "five.txt", "12345", 5, 0, &e) == 0);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = ops->file_read(&main_m.m, "five.txt", 4, &b, &e);
	CHECK_EQ_INT(r, -RK_ETOOLARGE);
	CHECK_EQ_STR(e.message, "computer file exceeds 4 bytes");
	CHECK_EQ_INT(b.len, 0);
	CHECK(ops->file_read(&main_m.m, "five.txt", 5, &b, &e) == 0);
	CHECK_EQ_STR(b.data, "12345");
	rk_buf_reset(&b);
	r = ops->file_read(&main_m.m, "no/such/file", 100, &b, &e);
	CHECK_EQ_INT(r, -RK_ENOTFOUND);
	CHECK(ops->file_remove(&main_m.m, "five.txt", &e) == 0);
	CHECK_EQ_INT(ops->file_read(&main_m.m, "five.txt", 5, &b, &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(ops->file_remove(&main_m.m, "five.txt", &e), -RK_ENOTFOUND);
	rk_buf_release(&b);
}

TEST(files_symlink_cannot_escape)
{
	/* a link the machine made must not carry a write out to this host */
	char *outside = rk_xasprintf("%s/outside", data_dir);
	rk_fs_mkdirs(outside, 0755, NULL);
	char *cmd = rk_xasprintf("ln -sfn %s link && ln -sfn %s/secret.txt filelink", outside, outside);
	struct rk_buf b;
	struct rk_exit_status st;
	rk_buf_init(&b);
	CHECK(run(&main_m, cmd, NULL, 0, &b, &st) == 0);
	struct rk_error e;
	ops->file_write(&main_m.m, "link/x.txt", "no", 2, 0, &e);
	ops->file_write(&main_m.m, "filelink", "no", 2, 0, &e);
	char *x = rk_xasprintf("%s/x.txt", outside), *s = rk_xasprintf("%s/secret.txt", outside);
	CHECK(!rk_fs_exists(x));
	CHECK(!rk_fs_exists(s));
	free(x);
	free(s);
	free(cmd);
	free(outside);
	rk_buf_release(&b);
}

TEST(export_import_roundtrip)
{
	struct machine other;
	machine_init(&other, NULL);
	struct rk_provision_result pr;
	REQUIRE(provision(&other, &pr) == 0);
	free(pr.ref);
	char tmpl[] = "/tmp/rakazo-conf-XXXXXX";
	int fd = mkstemp(tmpl);
	REQUIRE(fd >= 0);
	unlink(tmpl);
	struct rk_error e;
	CHECK(ops->workspace_export(&main_m.m, fd, &e) == 0);
	lseek(fd, 0, SEEK_SET);
	int ir = ops->workspace_import(&other.m, fd, &e);
	if (ir)
		printf("  import: %s\n", e.message);
	CHECK(ir == 0);
	close(fd);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK(ops->file_read(&other.m, "notes/result.txt", 1024, &b, &e) == 0);
	CHECK_EQ_STR(b.data, "all good");
	rk_buf_reset(&b);
	CHECK(ops->file_read(&other.m, "bin/tool", 1024, &b, &e) == 0);
	CHECK_EQ_INT(b.len, 256);
	rk_buf_release(&b);
	struct rk_file_entry *es = NULL;
	size_t n = 0;
	CHECK(ops->file_list(&other.m, "bin", &es, &n, &e) == 0);
	CHECK(n == 1 && es[0].executable == 1);
	rk_file_entries_free(es, n);
	/* a hostile stream is refused */
	char tmpl2[] = "/tmp/rakazo-conf-XXXXXX";
	fd = mkstemp(tmpl2);
	unlink(tmpl2);
	(void)!write(fd, "not a tar at all", 16);
	lseek(fd, 0, SEEK_SET);
	CHECK(ops->workspace_import(&other.m, fd, &e) != 0);
	close(fd);
	ops->destroy(&other.m, &e);
	machine_release(&other);
}

TEST(stop_keeps_files)
{
	struct rk_error e;
	CHECK(ops->stop(&main_m.m, &e) == 0);
	CHECK(ops->stop(&main_m.m, &e) == 0); /* idempotent */
	enum rk_machine_state s;
	CHECK(ops->status(&main_m.m, &s, &e) == 0);
	CHECK_EQ_INT(s, RK_MACHINE_STOPPED);
	char *old = rk_xstrdup(main_m.ref);
	struct rk_provision_result pr;
	REQUIRE(provision(&main_m, &pr) == 0);
	CHECK_EQ_STR(pr.ref, old);
	CHECK_EQ_INT(pr.fresh, 0);
	free(pr.ref);
	free(old);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK(ops->file_read(&main_m.m, "notes/result.txt", 1024, &b, &e) == 0);
	CHECK_EQ_STR(b.data, "all good");
	rk_buf_release(&b);
}

TEST(pause_resume)
{
	if (!(ops->caps & RK_CAP_PAUSE)) {
		check_skip("no pause capability");
		return;
	}
	struct rk_error e;
	REQUIRE(ops->pause(&main_m.m, &e) == 0);
	enum rk_machine_state s;
	CHECK(ops->status(&main_m.m, &s, &e) == 0);
	CHECK_EQ_INT(s, RK_MACHINE_PAUSED);
	CHECK(ops->resume(&main_m.m, &e) == 0);
	CHECK(ops->status(&main_m.m, &s, &e) == 0);
	CHECK_EQ_INT(s, RK_MACHINE_RUNNING);
	struct rk_buf b;
	struct rk_exit_status st;
	rk_buf_init(&b);
	CHECK(run(&main_m, "echo back", NULL, 0, &b, &st) == 0);
	CHECK_EQ_STR(b.data, "back\n");
	rk_buf_release(&b);
}

TEST(destroy_then_replace)
{
	struct rk_error e;
	CHECK(ops->destroy(&main_m.m, &e) == 0);
	CHECK(ops->destroy(&main_m.m, &e) == 0); /* idempotent */
	enum rk_machine_state s;
	CHECK(ops->status(&main_m.m, &s, &e) == 0);
	CHECK_EQ_INT(s, RK_MACHINE_GONE);
	struct rk_provision_result pr;
	REQUIRE(provision(&main_m, &pr) == 0);
	CHECK_EQ_INT(pr.fresh, 1);
	CHECK_EQ_INT(pr.replaced, 1);
	free(pr.ref);
	ops->destroy(&main_m.m, &e);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: conformance PROVIDER\n");
		return 2;
	}
	ops = rk_provider_find(argv[1]);
	if (!ops) {
		fprintf(stderr, "conformance: no provider '%s'\n", argv[1]);
		return 2;
	}
	char env[64];
	snprintf(env, sizeof(env), "RAKAZO_REQUIRE_%s", argv[1]);
	for (char *p = env; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	struct rk_error e;
	if (ops->check && ops->check(&e) != 0) {
		const char *req = getenv(env);
		if (req && !strcmp(req, "1")) {
			printf("conformance %s: backend required but unavailable: %s\n", argv[1], e.message);
			printf("conformance: 0 passed, 1 failed\n");
			return 1;
		}
		printf("skip: %s: %s\n", argv[1], e.message);
		printf("conformance: 0 passed, 0 failed\n");
		return 0;
	}
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *label = rk_id_new("conf");
		setenv("RAKAZO_TEST_LABEL", label, 1);
		free(label);
	}
	char tmpl[] = "/tmp/rakazo-conformance-XXXXXX";
	data_dir = mkdtemp(tmpl);
	machine_init(&main_m, NULL);
	printf("conformance: provider %s\n", argv[1]);
	RUN(provision_fresh);
	RUN(exec_echo);
	RUN(exec_exit_code_and_stderr_merged);
	RUN(exec_signal);
	RUN(exec_stdin_and_eof);
	RUN(exec_interrupt);
	RUN(exec_tty_repl);
	RUN(exec_large_output);
	RUN(files_write_list_read);
	RUN(files_binary_executable);
	RUN(files_limits_and_missing);
	RUN(files_symlink_cannot_escape);
	RUN(export_import_roundtrip);
	RUN(stop_keeps_files);
	RUN(pause_resume);
	RUN(destroy_then_replace);
	ops->destroy(&main_m.m, &e);
	machine_release(&main_m);
	rk_fs_remove_tree(data_dir, NULL);
	printf("conformance: %d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
