/* make bench: the screen engine against the exec-style baseline on a real
 * Xvfb + x11vnc (rakazo-desktop's flags) with tests/fixtures/xclient.py.
 *
 *   observe         rk_screen_observe, 1280x800, the screen changed since
 *                   the last one  vs  `import -window root png:-`
 *   observe_dedupe  rk_screen_observe of an unchanged screen for the same
 *                   consumer (no base)
 *   act_settle      click + settle (300 ms, the default) + screenshot  vs
 *                   `xdotool click --delay 0 1` + `import` (no settle)
 *   type_unicode    typing 200 mixed characters  vs  `xdotool type --delay 0`
 *
 * Prints `bench: NAME ours=V ms base=V ms ratio=R` with p50 (p95 in a
 * second line `bench-p95: ...`). Without Xvfb, x11vnc, xdotool, import or a
 * python3 with tkinter it prints "skip: ..." and exits 0. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../engine/actions.h"
#include "../../engine/screen.h"
#include "../../engine/util/fs.h"
#include "../../engine/util/time.h"

#define N 20
#define WAIT_MS 5000

static char dir[256], sock[300], python[64], fixture[512], display[16];
static pid_t xvfb_pid, vnc_pid, client_pid;
static struct rk_screen *screen;
static struct rk_error err;

static int have(const char *prog)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
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

static void teardown(void)
{
	rk_screen_free(screen);
	stop(&client_pid);
	stop(&vnc_pid);
	stop(&xvfb_pid);
	if (dir[0])
		rk_fs_remove_tree(dir, NULL);
}

static const char *setup(void)
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
	const char *src = getenv("RAKAZO_SRC_DIR");
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/xclient.py", src ? src : ".");
	if (!rk_fs_exists(fixture))
		return "tests/fixtures/xclient.py (run from the source tree)";
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
	snprintf(log, sizeof(log), "%s/x11vnc.log", dir);
	char *vargv[] = {"x11vnc", "-display", display, "-unixsock", sock, "-rfbport", "0", "-forever", "-shared",
			 "-nopw", "-nonap", "-wait", "5", "-defer", "5", "-noxrecord", "-noxfixes", "-xkb",
			 "-add_keysyms", "-quiet", NULL};
	vnc_pid = spawn(vargv, log, -1);
	snprintf(log, sizeof(log), "%s/client.log", dir);
	char *cargv[] = {python, fixture, dir, NULL};
	client_pid = spawn(cargv, log, -1);
	char ready[300];
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	for (int i = 0; i < WAIT_MS / 20 && !(rk_fs_exists(ready) && rk_fs_exists(sock)); i++)
		rk_sleep_ms(20);
	if (rk_screen_open_vnc(sock, &screen, &err) < 0)
		return "a VNC connection";
	rk_sleep_ms(1500); /* x11vnc is slow for about a second after its first client */
	return NULL;
}

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

/* Runs sh -c cmd, reading all its output; returns the milliseconds taken. */
static double run_cmd(const char *cmd)
{
	int64_t t0 = rk_monotonic_us();
	FILE *f = popen(cmd, "r");
	char buf[65536];
	size_t total = 0, n;
	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		total += n;
	if (f)
		pclose(f);
	(void)total;
	return (rk_monotonic_us() - t0) / 1000.0;
}

static double act_ms(const char *json, int settle_ms, int observe)
{
	struct rk_action_batch b;
	if (rk_action_batch_parse(json, strlen(json), &b, &err) < 0)
		return -1;
	struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
	ao.settle_ms = settle_ms;
	ao.observe = observe;
	struct rk_act_result r;
	int64_t t0 = rk_monotonic_us();
	int rc = rk_screen_act(screen, &b, &ao, &r, &err);
	double ms = (rk_monotonic_us() - t0) / 1000.0;
	rk_act_result_release(&r);
	rk_action_batch_release(&b);
	return rc < 0 ? -1 : ms;
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
		printf("bench: %s ours=%.2f ms base=- ms ratio=-\n", name, o50);
		printf("bench-p95: %s ours=%.2f ms\n", name, o95);
		return;
	}
	double b50 = pct(base, n, 0.5), b95 = pct(base, n, 0.95);
	printf("bench: %s ours=%.2f ms base=%.2f ms ratio=%.3f\n", name, o50, b50, b50 > 0 ? o50 / b50 : 0);
	printf("bench-p95: %s ours=%.2f ms base=%.2f ms\n", name, o95, b95);
	fflush(stdout);
}

/* Moves the pointer one pixel, so the next observe has a changed frame. */
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

int main(void)
{
	alarm(600);
	const char *missing = setup();
	if (missing) {
		printf("skip: screen_bench needs %s\n", missing);
		teardown();
		return 0;
	}
	double ours[N], base[N];
	if (wanted("observe")) {
		for (int i = 0; i < N; i++) {
			nudge(i);
			struct rk_observation o;
			int64_t t0 = rk_monotonic_us();
			if (rk_screen_observe(screen, NULL, &o, &err) < 0)
				goto fail;
			ours[i] = (rk_monotonic_us() - t0) / 1000.0;
			rk_observation_release(&o);
			base[i] = run_cmd("import -window root png:-");
		}
		report("observe", ours, base, N);
	}
	if (wanted("observe_dedupe")) {
		struct rk_observe_options oo = {1024, 1024, "bench"};
		struct rk_observation o;
		rk_screen_observe(screen, &oo, &o, &err);
		rk_observation_release(&o);
		for (int i = 0; i < N; i++) {
			int64_t t0 = rk_monotonic_us();
			if (rk_screen_observe(screen, &oo, &o, &err) < 0)
				goto fail;
			ours[i] = (rk_monotonic_us() - t0) / 1000.0;
			rk_observation_release(&o);
		}
		report("observe_dedupe", ours, NULL, N);
	}
	if (wanted("act_settle")) {
		for (int i = 0; i < N; i++) {
			char json[128], cmd[200];
			snprintf(json, sizeof(json), "[{\"action\":\"click\",\"x\":%d,\"y\":%d}]", 100 + 40 * i, 300);
			if ((ours[i] = act_ms(json, -1, 1)) < 0)
				goto fail;
			snprintf(cmd, sizeof(cmd), "xdotool mousemove %d 400 click --delay 0 1 && import -window root png:-",
				 100 + 40 * i);
			base[i] = run_cmd(cmd);
		}
		report("act_settle", ours, base, N);
	}
	if (wanted("type_unicode")) {
		/* 200 characters: ASCII with a few outside the keymap, repeated */
		const char *unit = "The quick brown fox ä é ñ 漢 😀 jumps! "; /* 40 characters */
		char text[1024] = "";
		for (int i = 0; i < 5; i++)
			strcat(text, unit);
		char json[1200];
		snprintf(json, sizeof(json), "[{\"action\":\"type\",\"text\":\"%s\"}]", text);
		int n = 5;
		for (int i = 0; i < n; i++) {
			if ((ours[i] = act_ms(json, 0, 0)) < 0)
				goto fail;
			char cmd[1400];
			snprintf(cmd, sizeof(cmd), "xdotool type --delay 0 '%s'", text);
			base[i] = run_cmd(cmd);
		}
		report("type_unicode", ours, base, n);
	}
	teardown();
	return 0;
fail:
	printf("bench: screen_bench failed: %s\n", err.message);
	teardown();
	return 1;
}
