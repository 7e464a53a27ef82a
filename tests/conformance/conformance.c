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

#include "engine/screen/actions.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "providers/provider.h"
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
	/* files_symlink_cannot_escape left "link" (and, where the write was
	 * refused, "filelink"): symlinks out of the workspace. The export keeps
	 * them, and every import refuses the whole archive for them (issue 20),
	 * leaving nothing behind */
	CHECK(ops->workspace_export(&main_m.m, fd, &e) == 0);
	lseek(fd, 0, SEEK_SET);
	CHECK(ops->workspace_import(&other.m, fd, &e) == -RK_EINVALID);
	CHECK(strstr(e.message, "symlink that leaves the workspace") != NULL);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK_EQ_INT(ops->file_read(&other.m, "notes/result.txt", 1024, &b, &e), -RK_ENOTFOUND);
	CHECK(ops->file_remove(&main_m.m, "link", &e) == 0);
	ops->file_remove(&main_m.m, "filelink", &e); /* a link still where the write was refused */
	CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
	CHECK(ops->workspace_export(&main_m.m, fd, &e) == 0);
	lseek(fd, 0, SEEK_SET);
	int ir = ops->workspace_import(&other.m, fd, &e);
	if (ir)
		printf("  import: %s\n", e.message);
	CHECK(ir == 0);
	close(fd);
	rk_buf_reset(&b);
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

/* --- desktop (providers whose describe() says desktop) ----------------------- */

/* The width and height a PNG's IHDR gives, or -1. */
static void png_dims(const unsigned char *png, size_t len, int *w, int *h)
{
	*w = *h = -1;
	if (!png || len < 24 || memcmp(png, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(png + 12, "IHDR", 4) != 0)
		return;
	*w = (int)((unsigned)png[16] << 24 | (unsigned)png[17] << 16 | (unsigned)png[18] << 8 | png[19]);
	*h = (int)((unsigned)png[20] << 24 | (unsigned)png[21] << 16 | (unsigned)png[22] << 8 | png[23]);
}

/* The screen of a started display: VNC where the transport has it, else
 * the provider's capture and act. */
static struct rk_screen *screen_of(int display, const struct rk_screen_transport *tr)
{
	struct rk_error e;
	struct rk_screen *s = NULL;
	int rc = tr->vnc_socket ? rk_screen_open_vnc(tr->vnc_socket, &s, &e)
				: rk_screen_open_provider(ops, &main_m.m, display, &s, &e);
	if (rc) {
		printf("  screen %d: %s: %s\n", display, rk_code_name(e.code), e.message);
		return NULL;
	}
	return s;
}

/* Observes display's screen: a PNG whose size is the screen's, which is
 * the size the transport reported (when it reports one). */
static void check_frame(struct rk_screen *s, const struct rk_screen_transport *tr)
{
	struct rk_error e;
	struct rk_observation o;
	if (rk_screen_observe(s, NULL, &o, &e) != 0) {
		printf("  observe: %s: %s\n", rk_code_name(e.code), e.message);
		CHECK(0);
		return;
	}
	int pw, ph;
	png_dims(o.png, o.png_len, &pw, &ph);
	CHECK_EQ_INT(pw, o.width);
	CHECK_EQ_INT(ph, o.height);
	CHECK_EQ_INT(o.width, o.screen_width);
	CHECK_EQ_INT(o.height, o.screen_height);
	CHECK(o.width > 0 && o.height > 0);
	if (tr->width > 0) {
		CHECK_EQ_INT(o.screen_width, tr->width);
		CHECK_EQ_INT(o.screen_height, tr->height);
	}
	rk_observation_release(&o);
}

/* A started display's frame checked, then the display stopped and the
 * transport freed. */
static void check_frame_and_stop(int display, struct rk_screen_transport *tr)
{
	struct rk_error e;
	struct rk_screen *s = screen_of(display, tr);
	CHECK(s != NULL);
	if (s) {
		check_frame(s, tr);
		rk_screen_free(s);
	}
	CHECK(ops->display_stop(&main_m.m, display, &e) == 0);
	free(tr->vnc_socket);
	free(tr->cdp_socket);
}

TEST(desktop_observe_act_stop)
{
	if (!(ops->caps & RK_CAP_DESKTOP)) {
		check_skip("no desktop capability");
		return;
	}
	REQUIRE(ops->display_start && ops->display_stop);
	REQUIRE((ops->caps & RK_CAP_VNC) || (ops->capture && ops->act));
	struct rk_error e;
	struct rk_display_options opt = {.width = 1024, .height = 768};
	struct rk_screen_transport tr;
	if (ops->display_start(&main_m.m, 0, &opt, &tr, &e) != 0) {
		printf("  display_start 0: %s: %s\n", rk_code_name(e.code), e.message);
		CHECK(0);
		return;
	}
	/* describe() and the transport agree */
	CHECK_EQ_INT(tr.vnc_socket != NULL, (ops->caps & RK_CAP_VNC) != 0);
	struct rk_screen *s = screen_of(0, &tr);
	REQUIRE(s);
	check_frame(s, &tr);

	/* an action runs, and the pointer is where it was sent */
	struct rk_action_batch b;
	const char *moves = "{\"actions\":[{\"action\":\"move\",\"x\":37,\"y\":41}],\"settle_ms\":100}";
	REQUIRE(rk_action_batch_parse(moves, strlen(moves), &b, &e) == 0);
	struct rk_act_result r;
	int rc = rk_screen_act(s, &b, NULL, &r, &e);
	if (rc)
		printf("  act: %s: %s\n", rk_code_name(e.code), e.message);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(r.completed, 1);
	CHECK_EQ_INT(r.observed, 1);
	if (rc == 0 && r.observed) {
		CHECK_EQ_INT(r.obs.has_cursor, 1);
		CHECK_EQ_INT(r.obs.cursor_x, 37);
		CHECK_EQ_INT(r.obs.cursor_y, 41);
	}
	if (rc == 0)
		rk_act_result_release(&r);
	rk_action_batch_release(&b);
	rk_screen_free(s);

	/* start is idempotent: the same display, the same transport */
	struct rk_screen_transport again;
	CHECK(ops->display_start(&main_m.m, 0, &opt, &again, &e) == 0);
	CHECK_EQ_INT(again.width, tr.width);
	CHECK_EQ_INT(again.height, tr.height);
	free(again.vnc_socket);
	free(again.cdp_socket);

	/* stop, twice (idempotent); a VNC display's socket goes with it */
	CHECK(ops->display_stop(&main_m.m, 0, &e) == 0);
	CHECK(ops->display_stop(&main_m.m, 0, &e) == 0);
	if (tr.vnc_socket) {
		struct stat st;
		CHECK(stat(tr.vnc_socket, &st) != 0 && errno == ENOENT);
	}
	free(tr.vnc_socket);
	free(tr.cdp_socket);

	/* and it starts again */
	REQUIRE(ops->display_start(&main_m.m, 0, &opt, &tr, &e) == 0);
	check_frame_and_stop(0, &tr);
}

/* A second display as describe() says: its own size where multiScreen,
 * MULTI_SCREEN_UNAVAILABLE where not. */
TEST(desktop_second_screen)
{
	if (!(ops->caps & RK_CAP_DESKTOP)) {
		check_skip("no desktop capability");
		return;
	}
	struct rk_error e;
	struct rk_display_options opt = {.width = 800, .height = 600};
	struct rk_screen_transport tr;
	int rc = ops->display_start(&main_m.m, 1, &opt, &tr, &e);
	if (!(ops->caps & RK_CAP_MULTI_SCREEN)) {
		CHECK(rc != 0);
		if (rc)
			CHECK_EQ_STR(rk_code_name(e.code), "MULTI_SCREEN_UNAVAILABLE");
		return;
	}
	if (rc) {
		printf("  display_start 1: %s: %s\n", rk_code_name(e.code), e.message);
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(tr.width, 800);
	CHECK_EQ_INT(tr.height, 600);
	check_frame_and_stop(1, &tr);
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
	RUN(desktop_observe_act_stop);
	RUN(desktop_second_screen);
	RUN(stop_keeps_files);
	RUN(pause_resume);
	RUN(destroy_then_replace);
	ops->destroy(&main_m.m, &e);
	machine_release(&main_m);
	rk_fs_remove_tree(data_dir, NULL);
	printf("conformance: %d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
