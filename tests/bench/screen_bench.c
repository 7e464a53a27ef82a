/* make bench: the screen engine against the exec-style baseline, on the
 * same display in one run, with tests/fixtures/xclient.py on it.
 *
 * Where: a docker computer's display :1 when docker is up (provisioned
 * through the docker provider's vtable, as tests/conformance does; ours is
 * rk_screen_open_vnc on the display's x11vnc socket, the baselines run
 * inside the same container through exec_spawn, as the reference captures
 * Box desktops). Only when docker is down: a host Xvfb + x11vnc with
 * rakazo-desktop's flags, the baselines as host processes.
 *
 *   observe         rk_screen_observe, 1280x800, the screen changed since
 *                   the last one  vs  `import -window root png:-`
 *   observe_dedupe  rk_screen_observe of an unchanged screen for the same
 *                   consumer (no base)
 *   act_settle      a click, then a screenshot that shows it. Ours: one
 *                   rk_screen_act with the product's default settle
 *                   (300 ms of no screen update, RK_SETTLE_MS_DEFAULT) and
 *                   its observation. Base: `xdotool click` then `import`,
 *                   repeated until the screenshot shows the click (an exec
 *                   agent has no other way to know it took effect; without
 *                   that it would often look at the old screen). Both
 *                   screenshots are checked for the red square.
 *   type_unicode    typing 200 mixed characters (ASCII, Latin-1, CJK, an
 *                   emoji)  vs  `xdotool type --delay 0`; the client's text
 *                   must then be exactly what was typed, for both, or the
 *                   bench fails.
 *   observe_jpeg    rk_screen_observe of a changed frame at a model's size
 *                   (rk_picture_fit_pixels: long edge 1568, 1.15 MP) as
 *                   JPEG quality 75  vs  the same as PNG; and
 *                   observe_jpeg_bytes, the images' sizes.
 *
 * Prints `bench: NAME ours=V ms base=V ms ratio=R` with p50, and
 * `bench: NAME_p95 ...` with p95. RAKAZO_BENCH=NAME runs only that figure.
 * Without docker and without the host tools it prints "skip: ..." and
 * exits 0; a failure (a wrong screenshot, lost text) exits 1. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/time.h"
#include "providers/provider.h"

#define N 20
#define N_TYPE 5
#define WAIT_MS 10000
#define DISPLAY_N 1

static struct rk_screen *screen;
static struct rk_error err;
static char failure[2048];

/* --- where the display runs: a docker computer, or the host ------------------------ */

static int on_docker;
static char dir[256]; /* host: the display's temp dir (sockets, client state); docker: the data dir */

/* docker */
static const struct rk_provider_ops *dops;
static struct rk_machine dm;
static char *d_id, *d_home, *d_run, *d_ref;

/* host */
static char sock[300], python[64], fixture[512], display[16];
static pid_t xvfb_pid, vnc_pid, client_pid;

static int fail(const char *fmt, const char *arg)
{
	snprintf(failure, sizeof(failure), fmt, arg ? arg : "");
	return -1;
}

/* Runs cmd (bash -lc in the computer, sh -c on the host) to its end, its
 * output in out; the milliseconds taken, or -1. */
static double run_cmd(const char *cmd, struct rk_buf *out)
{
	int64_t t0 = rk_monotonic_us();
	if (!on_docker) {
		FILE *f = popen(cmd, "r");
		char buf[65536];
		size_t n;
		while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			if (out)
				rk_buf_add(out, buf, n);
		int st = f ? pclose(f) : -1;
		double ms = (rk_monotonic_us() - t0) / 1000.0;
		return st == 0 ? ms : -1;
	}
	struct rk_exec_request req = {.command = cmd};
	struct rk_proc *p = NULL;
	if (dops->exec_spawn(&dm, &req, &p, &err) != 0)
		return -1;
	struct rk_buf sink;
	rk_buf_init(&sink);
	int eof = 0;
	int64_t deadline = rk_monotonic_ms() + 30000;
	while (!eof && rk_monotonic_ms() < deadline) {
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, 100);
		if (p->ops->read(p, out ? out : &sink, &eof, &err) != 0)
			break;
		if (!out)
			rk_buf_reset(&sink);
	}
	struct rk_exit_status st = {0};
	int r = eof ? p->ops->wait(p, &st, &err) : -1;
	p->ops->free(p);
	rk_buf_release(&sink);
	double ms = (rk_monotonic_us() - t0) / 1000.0;
	return r == 0 && st.exited && st.code == 0 ? ms : -1;
}

/* The client's state file NAME (text, scroll, events, ready) into out. */
static int read_state(const char *name, struct rk_buf *out)
{
	rk_buf_reset(out);
	char path[400];
	if (!on_docker) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		return rk_fs_read_all(path, 1 << 20, out, &err);
	}
	snprintf(path, sizeof(path), "st/%s", name);
	return dops->file_read(&dm, path, 1 << 20, out, &err);
}

static int have(const char *prog)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static const char *fixture_path(void)
{
	const char *src = getenv("RAKAZO_SRC_DIR");
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/xclient.py", src ? src : ".");
	return rk_fs_exists(fixture) ? NULL : "tests/fixtures/xclient.py (run from the source tree)";
}

/* 0 when the client wrote its ready file within WAIT_MS. */
static int wait_ready(void)
{
	struct rk_buf b;
	rk_buf_init(&b);
	int ok = -1;
	for (int64_t until = rk_monotonic_ms() + WAIT_MS; rk_monotonic_ms() < until; rk_sleep_ms(50))
		if (read_state("ready", &b) == 0 && b.len > 0) {
			ok = 0;
			break;
		}
	rk_buf_release(&b);
	return ok;
}

static void docker_teardown(void)
{
	if (d_ref) {
		struct rk_error e;
		dops->destroy(&dm, &e);
	}
	free(d_id);
	free(d_home);
	free(d_run);
	free(d_ref);
	d_ref = NULL;
}

/* NULL and on_docker=1 when a docker computer with the client on display
 * :1 is ready; NULL and on_docker=0 when docker is down; else what failed. */
static const char *docker_setup(void)
{
	struct rk_error e;
	dops = rk_provider_find("docker");
	if (!dops || !dops->check || dops->check(&e) != 0)
		return NULL;
	const char *missing = fixture_path();
	if (missing)
		return missing;
	on_docker = 1;
	if (!getenv("RAKAZO_TEST_LABEL")) {
		char *label = rk_id_new("bench");
		setenv("RAKAZO_TEST_LABEL", label, 1);
		free(label);
	}
	snprintf(dir, sizeof(dir), "/tmp/rk-screen-bench-XXXXXX");
	if (!mkdtemp(dir))
		return "mkdtemp";
	d_id = rk_id_new("cmp");
	d_home = rk_xasprintf("%s/homes/%s", dir, d_id);
	d_run = rk_xasprintf("%s/run/%s", dir, d_id);
	rk_fs_mkdirs(d_home, 0755, NULL);
	rk_fs_mkdirs(d_run, 0755, NULL);
	dm.computer_id = d_id;
	dm.home_key = d_id;
	dm.data_dir = dir;
	dm.home_dir = d_home;
	dm.run_dir = d_run;
	struct rk_provision_result pr = {0};
	if (dops->provision(&dm, &pr, &err) != 0)
		return "a docker computer (provision failed)";
	d_ref = pr.ref;
	dm.ref = d_ref;
	struct rk_buf py;
	rk_buf_init(&py);
	if (rk_fs_read_all(fixture, 1 << 20, &py, &err) != 0 ||
	    dops->file_write(&dm, "xclient.py", py.data, py.len, 0, &err) != 0) {
		rk_buf_release(&py);
		return "xclient.py in the computer";
	}
	rk_buf_release(&py);
	struct rk_display_options dopt = {.width = 1280, .height = 800};
	struct rk_screen_transport tr = {0};
	if (dops->display_start(&dm, DISPLAY_N, &dopt, &tr, &err) != 0)
		return "the computer's display :1";
	if (run_cmd("rm -rf st && mkdir st && DISPLAY=:1 setsid -f python3 xclient.py st </dev/null >/dev/null 2>&1", NULL) < 0 ||
	    wait_ready() != 0) {
		free(tr.vnc_socket);
		return "xclient.py running in the computer";
	}
	int r = rk_screen_open_vnc(tr.vnc_socket, &screen, &err);
	free(tr.vnc_socket);
	if (r < 0)
		return "a VNC connection to the computer's display";
	/* the baselines talk to the same display */
	setenv("RK_BENCH_DISPLAY", ":1", 1);
	rk_sleep_ms(1500); /* x11vnc is slow for about a second after its first client */
	return NULL;
}

static pid_t spawn(char *const argv[], const char *log, int fd3)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (fd3 >= 0 && fd3 != 3)
			dup2(fd3, 3);
		setpgid(0, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (int i = 0; i < 100 && waitpid(*pid, NULL, WNOHANG) != *pid; i++)
		rk_sleep_ms(20);
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, WNOHANG);
	*pid = 0;
}

static const char *host_setup(void)
{
	const char *progs[] = {"Xvfb", "x11vnc", "xdotool", "import"};
	for (size_t i = 0; i < 4; i++)
		if (!have(progs[i]))
			return progs[i];
	const char *py[] = {"python3", "/usr/bin/python3"};
	for (size_t i = 0; i < 2 && !python[0]; i++) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "%s -c 'import tkinter' >/dev/null 2>&1", py[i]);
		if (system(cmd) == 0)
			snprintf(python, sizeof(python), "%s", py[i]);
	}
	if (!python[0])
		return "python3-tk";
	const char *missing = fixture_path();
	if (missing)
		return missing;
	snprintf(dir, sizeof(dir), "/tmp/rk-screen-bench-XXXXXX");
	if (!mkdtemp(dir))
		return "mkdtemp";
	snprintf(sock, sizeof(sock), "%s/vnc.sock", dir);
	char log[300];
	int pfd[2];
	if (pipe(pfd) != 0)
		return "pipe";
	snprintf(log, sizeof(log), "%s/xvfb.log", dir);
	char *xargv[] = {"Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-dpi", "96",
			 "+extension", "RANDR", "-noreset", NULL};
	xvfb_pid = spawn(xargv, log, pfd[1]);
	close(pfd[1]);
	char num[16] = {0};
	size_t got = 0;
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (int64_t until = rk_monotonic_ms() + WAIT_MS; rk_monotonic_ms() < until && !memchr(num, '\n', got);) {
		ssize_t n = read(pfd[0], num + got, sizeof(num) - 1 - got);
		if (n > 0)
			got += (size_t)n;
		else
			rk_sleep_ms(20);
	}
	close(pfd[0]);
	if (!memchr(num, '\n', got))
		return "a running Xvfb";
	snprintf(display, sizeof(display), ":%d", atoi(num));
	setenv("DISPLAY", display, 1);
	setenv("RK_BENCH_DISPLAY", display, 1);
	snprintf(log, sizeof(log), "%s/x11vnc.log", dir);
	char *vargv[] = {"x11vnc", "-display", display, "-unixsock", sock, "-rfbport", "0", "-forever", "-shared",
			 "-nopw", "-nonap", "-wait", "5", "-defer", "5", "-noxrecord", "-noxfixes", "-xkb", "-quiet",
			 NULL};
	vnc_pid = spawn(vargv, log, -1);
	snprintf(log, sizeof(log), "%s/client.log", dir);
	char *cargv[] = {python, fixture, dir, NULL};
	client_pid = spawn(cargv, log, -1);
	for (int i = 0; i < WAIT_MS / 20 && !rk_fs_exists(sock); i++)
		rk_sleep_ms(20);
	if (wait_ready() != 0)
		return "xclient.py on the host Xvfb";
	if (rk_screen_open_vnc(sock, &screen, &err) < 0)
		return "a VNC connection";
	rk_sleep_ms(1500);
	return NULL;
}

static void teardown(void)
{
	rk_screen_free(screen);
	screen = NULL;
	if (on_docker) {
		docker_teardown();
	} else {
		stop(&client_pid);
		stop(&vnc_pid);
		stop(&xvfb_pid);
	}
	if (dir[0])
		rk_fs_remove_tree(dir, NULL);
}

/* --- measuring ---------------------------------------------------------------------- */

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static int wanted(const char *name)
{
	const char *w = getenv("RAKAZO_BENCH");
	return !w || !*w || strcmp(w, name) == 0;
}

static void report(const char *name, double *ours, double *base, int n)
{
	double o50 = pct(ours, n, 0.5), o95 = pct(ours, n, 0.95);
	if (!base) {
		printf("bench: %s ours=%.2f ms\n", name, o50);
		printf("bench: %s_p95 ours=%.2f ms\n", name, o95);
	} else {
		double b50 = pct(base, n, 0.5), b95 = pct(base, n, 0.95);
		/* microseconds show: the dedupe path is far under a millisecond */
		printf("bench: %s ours=%.3f ms base=%.3f ms ratio=%.4f\n", name, o50, b50, b50 > 0 ? o50 / b50 : 0);
		printf("bench: %s_p95 ours=%.3f ms base=%.3f ms ratio=%.4f\n", name, o95, b95, b95 > 0 ? o95 / b95 : 0);
	}
	fflush(stdout);
}

/* Moves the pointer one pixel (x11vnc draws it), so the next observe has
 * a changed frame. */
static void nudge(int i)
{
	struct rk_action a;
	memset(&a, 0, sizeof(a));
	a.kind = RK_ACT_MOVE;
	a.has_point = 1;
	a.at.x = 700 + i % 2;
	a.at.y = 500;
	rk_screen_input(screen, &a, &err);
	rk_sleep_ms(60); /* let the update arrive */
}

/* 1 when the PNG's pixel (x, y) is pure red (the client's left-click square). */
static int png_red_at(const unsigned char *png, size_t len, int x, int y)
{
	unsigned char *rgb = NULL;
	int w, h;
	struct rk_error e;
	if (!png || rk_picture_png_decode(png, len, &rgb, &w, &h, &e) != 0)
		return 0;
	int red = 0;
	if (x < w && y < h) {
		const unsigned char *p = rgb + ((size_t)y * w + x) * 3;
		red = p[0] == 255 && p[1] == 0 && p[2] == 0;
	}
	free(rgb);
	return red;
}

static int is_png(const struct rk_buf *b)
{
	return b->len > 8 && memcmp(b->data, "\x89PNG\r\n\x1a\n", 8) == 0;
}

static int bench_observe(double *ours, double *base)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "DISPLAY=%s import -window root png:-", getenv("RK_BENCH_DISPLAY"));
	struct rk_buf out;
	rk_buf_init(&out);
	for (int i = 0; i < N; i++) {
		nudge(i);
		struct rk_observation o;
		int64_t t0 = rk_monotonic_us();
		if (rk_screen_observe(screen, NULL, &o, &err) < 0)
			return fail("observe: %s", err.message);
		ours[i] = (rk_monotonic_us() - t0) / 1000.0;
		int unchanged = o.unchanged;
		rk_observation_release(&o);
		if (unchanged)
			return fail("observe: a frame without a consumer came unchanged%s", NULL);
		rk_buf_reset(&out);
		if ((base[i] = run_cmd(cmd, &out)) < 0 || !is_png(&out))
			return fail("observe: the baseline `import` gave no PNG%s", NULL);
	}
	rk_buf_release(&out);
	report("observe", ours, base, N);
	return 0;
}

/* The same changed frame at a model's size, as JPEG (ours) and PNG (base),
 * in turns: the time of each observe and the bytes each sends. */
static int bench_observe_jpeg(double *ours, double *base)
{
	int sw, sh;
	rk_screen_size(screen, &sw, &sh);
	struct rk_observe_options po = {0};
	rk_picture_fit_pixels(sw, sh, 1568, 1150000, &po.max_width, &po.max_height);
	struct rk_observe_options jo = po;
	jo.format = RK_PICTURE_JPEG;
	double jbytes[N], pbytes[N];
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 2; k++) {
			nudge(2 * i + k);
			struct rk_observation o;
			int64_t t0 = rk_monotonic_us();
			if (rk_screen_observe(screen, k ? &po : &jo, &o, &err) < 0)
				return fail("observe_jpeg: %s", err.message);
			(k ? base : ours)[i] = (rk_monotonic_us() - t0) / 1000.0;
			(k ? pbytes : jbytes)[i] = (double)o.png_len;
			int ok = o.png && strcmp(o.mime_type, k ? "image/png" : "image/jpeg") == 0;
			rk_observation_release(&o);
			if (!ok)
				return fail("observe_jpeg: no image of the type asked for%s", NULL);
		}
	}
	printf("screen_bench: observe_jpeg: %dx%d -> %dx%d\n", sw, sh, po.max_width, po.max_height);
	report("observe_jpeg", ours, base, N);
	double j50 = pct(jbytes, N, 0.5), p50 = pct(pbytes, N, 0.5);
	printf("bench: observe_jpeg_bytes ours=%.0f base=%.0f ratio=%.4f\n", j50, p50, p50 > 0 ? j50 / p50 : 0);
	fflush(stdout);
	return 0;
}

/* An unchanged screen for the same consumer (metadata only) against the
 * same observe of a changed frame (the pointer moved one pixel), in turns. */
static int bench_dedupe(double *ours, double *base)
{
	struct rk_observe_options oo = {.max_width = 1024, .max_height = 1024, .consumer = "bench"};
	struct rk_observation o;
	for (int i = 0; i < N; i++) {
		nudge(i);
		int64_t t0 = rk_monotonic_us();
		if (rk_screen_observe(screen, &oo, &o, &err) < 0)
			return fail("observe_dedupe: %s", err.message);
		base[i] = (rk_monotonic_us() - t0) / 1000.0;
		int unchanged = o.unchanged;
		rk_observation_release(&o);
		if (unchanged)
			return fail("observe_dedupe: a changed frame came without an image%s", NULL);
		t0 = rk_monotonic_us();
		if (rk_screen_observe(screen, &oo, &o, &err) < 0)
			return fail("observe_dedupe: %s", err.message);
		ours[i] = (rk_monotonic_us() - t0) / 1000.0;
		unchanged = o.unchanged;
		rk_observation_release(&o);
		if (!unchanged)
			return fail("observe_dedupe: an unchanged screen came with an image%s", NULL);
	}
	report("observe_dedupe", ours, base, N);
	return 0;
}

static int bench_act_settle(double *ours, double *base)
{
	const char *disp = getenv("RK_BENCH_DISPLAY");
	struct rk_buf out;
	rk_buf_init(&out);
	/* untimed warm-up: this figure run alone (no observe before it) saw
	 * its first click lost on a fresh x11vnc; click off the measured spots
	 * until one shows, then time */
	int warm = 0;
	for (int k = 0; k < 20 && !warm; k++) {
		const char *wj = "[{\"action\":\"click\",\"x\":1200,\"y\":700}]";
		struct rk_action_batch wb;
		struct rk_act_options wo = RK_ACT_OPTIONS_INIT;
		struct rk_act_result wr;
		if (rk_action_batch_parse(wj, strlen(wj), &wb, &err) < 0)
			return fail("act_settle: %s", err.message);
		if (rk_screen_act(screen, &wb, &wo, &wr, &err) == 0)
			warm = wr.observed && png_red_at(wr.obs.png, wr.obs.png_len, 1190, 690);
		rk_act_result_release(&wr);
		rk_action_batch_release(&wb);
		if (!warm)
			rk_sleep_ms(500);
	}
	if (!warm)
		return fail("act_settle: no click reached the client in 20 tries%s", NULL);
	for (int i = 0; i < N; i++) {
		/* 40 px apart: each click's square is new; checked 10 px up-left
		 * of the hotspot, where x11vnc's drawn pointer is not */
		int x = 100 + 40 * (i % 25), yo = 250, yb = 450;
		char json[128], cmd[300];
		snprintf(json, sizeof(json), "[{\"action\":\"click\",\"x\":%d,\"y\":%d}]", x, yo);
		struct rk_action_batch b;
		if (rk_action_batch_parse(json, strlen(json), &b, &err) < 0)
			return fail("act_settle: %s", err.message);
		struct rk_act_options ao = RK_ACT_OPTIONS_INIT; /* the default settle */
		struct rk_act_result r;
		int64_t t0 = rk_monotonic_us();
		int rc = rk_screen_act(screen, &b, &ao, &r, &err);
		ours[i] = (rk_monotonic_us() - t0) / 1000.0;
		rk_action_batch_release(&b);
		if (rc < 0)
			return fail("act_settle: %s", err.message);
		int shows = r.observed && png_red_at(r.obs.png, r.obs.png_len, x - 10, yo - 10);
		rk_act_result_release(&r);
		if (!shows) {
			/* how late the change came, for the failure message */
			int64_t t1 = rk_monotonic_ms();
			for (int k = 0; k < 100 && !shows; k++) {
				struct rk_observation o;
				rk_sleep_ms(20);
				if (rk_screen_observe(screen, NULL, &o, &err) == 0)
					shows = png_red_at(o.png, o.png_len, x - 10, yo - 10);
				rk_observation_release(&o);
			}
			char late[160];
			snprintf(late, sizeof(late), "click %d: settled after %.0f ms but the screenshot does not show the click; "
				 "it showed %lld ms later", i, ours[i], shows ? (long long)(rk_monotonic_ms() - t1) : -1LL);
			return fail("act_settle: %s", late);
		}

		snprintf(cmd, sizeof(cmd), "DISPLAY=%s xdotool mousemove %d %d click --delay 0 1", disp, x, yb);
		t0 = rk_monotonic_us();
		if (run_cmd(cmd, NULL) < 0)
			return fail("act_settle: the baseline `xdotool click` failed%s", NULL);
		snprintf(cmd, sizeof(cmd), "DISPLAY=%s import -window root png:-", disp);
		int seen = 0;
		for (int k = 0; k < 20 && !seen; k++) {
			rk_buf_reset(&out);
			if (run_cmd(cmd, &out) < 0 || !is_png(&out))
				return fail("act_settle: the baseline `import` gave no PNG%s", NULL);
			seen = png_red_at((const unsigned char *)out.data, out.len, x - 10, yb - 10);
		}
		base[i] = (rk_monotonic_us() - t0) / 1000.0;
		if (!seen)
			return fail("act_settle: the baseline's screenshots never showed its click%s", NULL);
	}
	rk_buf_release(&out);
	report("act_settle", ours, base, N);
	return 0;
}

/* Waits (bounded, not timed) until the client's text is want. */
static int text_is(const char *want)
{
	struct rk_buf b;
	rk_buf_init(&b);
	int ok = 0;
	for (int64_t until = rk_monotonic_ms() + WAIT_MS; !ok && rk_monotonic_ms() < until; rk_sleep_ms(50))
		ok = read_state("text", &b) == 0 && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0;
	if (!ok)
		fprintf(stderr, "screen_bench: the client's text is \"%.*s\"\n", (int)b.len, b.data ? b.data : "");
	rk_buf_release(&b);
	return ok;
}

static int probe_typing(void)
{
	const char *probe = "[{\"action\":\"type\",\"text\":\".\"}]";
	struct rk_buf b;
	rk_buf_init(&b);
	int ok = 0;
	for (int64_t until = rk_monotonic_ms() + WAIT_MS; !ok && rk_monotonic_ms() < until;) {
		struct rk_action_batch batch;
		if (rk_action_batch_parse(probe, strlen(probe), &batch, &err) < 0)
			break;
		struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
		ao.settle_ms = 0;
		ao.observe = 0;
		struct rk_act_result r;
		int ar = rk_screen_act(screen, &batch, &ao, &r, &err);
		rk_act_result_release(&r);
		rk_action_batch_release(&batch);
		if (ar < 0)
			break;
		for (int64_t t = rk_monotonic_ms() + 500; !ok && rk_monotonic_ms() < t; rk_sleep_ms(50))
			ok = read_state("text", &b) == 0 && b.len > 0 && b.data[b.len - 1] == '.';
	}
	rk_buf_release(&b);
	return ok ? 0 : fail("type_unicode: the client never received a typed probe%s", NULL);
}

static int bench_type(double *ours, double *base)
{
	/* 200 characters: ASCII with a few outside the keymap, repeated */
	const char *unit = "The quick brown fox ä é ñ 漢 😀 jumps ok! "; /* 40 characters */
	struct rk_buf text, want;
	rk_buf_init(&text);
	rk_buf_init(&want);
	for (int i = 0; i < 5; i++)
		rk_buf_adds(&text, unit);
	size_t chars = 0;
	for (size_t i = 0; i < text.len; i++)
		chars += ((unsigned char)text.data[i] & 0xC0) != 0x80; /* UTF-8 lead bytes */
	if (chars != 200) {
		rk_buf_release(&text);
		rk_buf_release(&want);
		return fail("type_unicode: the text has %s characters, not 200", chars < 200 ? "fewer" : "more");
	}
	char *json = rk_xasprintf("[{\"action\":\"type\",\"text\":\"%s\"}]", text.data);
	const char *disp = getenv("RK_BENCH_DISPLAY");
	char *cmd = rk_xasprintf("DISPLAY=%s xdotool type --delay 0 '%s'", disp, text.data);
	/* the window may be mapped before the window manager gives it the
	 * focus: typing goes nowhere until then, so type a probe until one
	 * arrives (untimed), then start from what the client has */
	int rc = probe_typing();
	if (rc < 0) {
		free(json);
		free(cmd);
		rk_buf_release(&text);
		rk_buf_release(&want);
		return rc;
	}
	read_state("text", &want);
	for (int i = 0; i < N_TYPE && rc == 0; i++) {
		struct rk_action_batch b;
		if (rk_action_batch_parse(json, strlen(json), &b, &err) < 0) {
			rc = fail("type_unicode: %s", err.message);
			break;
		}
		struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
		ao.settle_ms = 0;
		ao.observe = 0;
		struct rk_act_result r;
		int64_t t0 = rk_monotonic_us();
		int ar = rk_screen_act(screen, &b, &ao, &r, &err);
		ours[i] = (rk_monotonic_us() - t0) / 1000.0;
		rk_act_result_release(&r);
		rk_action_batch_release(&b);
		if (ar < 0) {
			rc = fail("type_unicode: %s", err.message);
			break;
		}
		rk_buf_adds(&want, text.data);
		if (!text_is(want.data)) {
			rc = fail("type_unicode: our typing did not give exactly the text%s", NULL);
			break;
		}
		if ((base[i] = run_cmd(cmd, NULL)) < 0) {
			rc = fail("type_unicode: the baseline `xdotool type` failed%s", NULL);
			break;
		}
		rk_buf_adds(&want, text.data);
		if (!text_is(want.data)) {
			rc = fail("type_unicode: the baseline `xdotool type` did not give exactly the text%s", NULL);
			break;
		}
	}
	if (rc == 0)
		report("type_unicode", ours, base, N_TYPE);
	free(json);
	free(cmd);
	rk_buf_release(&text);
	rk_buf_release(&want);
	return rc;
}

int main(void)
{
	alarm(900);
	const char *missing = docker_setup();
	if (!missing && !on_docker)
		missing = host_setup();
	if (missing) {
		if (on_docker) {
			printf("bench: screen_bench failed: %s: %s\n", missing, err.message);
			teardown();
			return 1;
		}
		printf("skip: screen_bench needs %s\n", missing);
		teardown();
		return 0;
	}
	printf("screen_bench: on %s\n", on_docker ? "a docker computer's display :1" : "a host Xvfb (docker is down)");
	double ours[N], base[N];
	int rc = 0;
	if (rc == 0 && wanted("observe"))
		rc = bench_observe(ours, base);
	if (rc == 0 && wanted("observe_dedupe"))
		rc = bench_dedupe(ours, base);
	if (rc == 0 && wanted("act_settle"))
		rc = bench_act_settle(ours, base);
	if (rc == 0 && wanted("type_unicode"))
		rc = bench_type(ours, base);
	if (rc == 0 && wanted("observe_jpeg"))
		rc = bench_observe_jpeg(ours, base);
	if (rc < 0)
		printf("bench: screen_bench failed: %s\n", failure);
	teardown();
	return rc < 0 ? 1 : 0;
}
