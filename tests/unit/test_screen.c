/* The screen engine against a real X server: Xvfb + x11vnc on a unix socket
 * (the flags of image/rootfs/usr/local/bin/rakazo-desktop, plus
 * -add_keysyms) and tests/fixtures/xclient.py, a Tk client that draws
 * where it is clicked and writes what it is typed to a file.
 *
 * Needs Xvfb, x11vnc and a python3 with tkinter (Debian: xvfb x11vnc
 * python3-tk). Without them it prints "skip: ..." and passes nothing; with
 * RAKAZO_REQUIRE_X=1 it fails instead. Every wait is bounded, and an alarm
 * ends a hung run. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/display.h"
#include "engine/machine/execution.h"
#include "engine/machine/window.h"
#include "engine/machine/worker.h"
#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/fake/machine.h"
#include "providers/provider.h"
#include "check.h"
#include "fresh_db.h"

#define W 1280
#define H 800
#define WAIT_MS 5000

static char dir[256];
static char sock[300];
static char python[256];
static char fixture[512];
static pid_t xvfb_pid, vnc_pid, client_pid;
static int display_no = -1;
static struct rk_screen *screen;
static struct rk_error err;
static struct rk_observe_options scaled = {.max_width = 1024, .max_height = 1024}; /* 1280x800 -> 1024x640 */

/* --- the X server and its client ----------------------------------------- */

static int have(const char *prog)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static int find_python(void)
{
	const char *cands[] = {"python3", "/usr/bin/python3"};
	for (size_t i = 0; i < 2; i++) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "%s -c 'import tkinter' >/dev/null 2>&1", cands[i]);
		if (system(cmd) == 0) {
			snprintf(python, sizeof(python), "%s", cands[i]);
			return 1;
		}
	}
	return 0;
}

static int find_fixture(void)
{
	/* __FILE__ is tests/unit/test_screen.c relative to where make ran */
	const char *cands[] = {"tests/fixtures/xclient.py", "../fixtures/xclient.py", "../../tests/fixtures/xclient.py"};
	const char *src = getenv("RAKAZO_SRC_DIR");
	if (src) {
		snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/xclient.py", src);
		if (rk_fs_exists(fixture))
			return 1;
	}
	char here[400];
	snprintf(here, sizeof(here), "%s", __FILE__);
	char *slash = strrchr(here, '/');
	if (slash) {
		*slash = 0;
		snprintf(fixture, sizeof(fixture), "%s/../fixtures/xclient.py", here);
		if (rk_fs_exists(fixture))
			return 1;
	}
	for (size_t i = 0; i < 3; i++) {
		snprintf(fixture, sizeof(fixture), "%s", cands[i]);
		if (rk_fs_exists(fixture))
			return 1;
	}
	return 0;
}

static pid_t spawn(char *const argv[], const char *log, int extra_fd)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		if (extra_fd >= 0 && extra_fd != 3) {
			dup2(extra_fd, 3);
		}
		setpgid(0, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void stop_pid(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(*pid, NULL, WNOHANG) == *pid) {
			*pid = 0;
			return;
		}
		rk_sleep_ms(20);
	}
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

static void teardown(void)
{
	rk_screen_free(screen);
	screen = NULL;
	stop_pid(&client_pid);
	stop_pid(&vnc_pid);
	stop_pid(&xvfb_pid);
	if (dir[0] && !getenv("RAKAZO_KEEP_TMP") && rk_fs_remove_tree(dir, &err) < 0)
		printf("  could not remove %s: %s\n", dir, err.message);
}

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int start_vnc(void)
{
	char disp[16], log[300];
	snprintf(disp, sizeof(disp), ":%d", display_no);
	path_in(log, sizeof(log), "x11vnc.log");
	unlink(sock);
	/* rakazo-desktop's flags, plus -add_keysyms for characters outside the keymap */
	char *argv[] = {"x11vnc", "-display", disp, "-unixsock", sock, "-rfbport", "0", "-forever", "-shared",
			"-nopw", "-nonap", "-wait", "5", "-defer", "5", "-noxrecord", "-noxfixes", "-xkb",
			"-add_keysyms", "-quiet", NULL};
	vnc_pid = spawn(argv, log, -1);
	for (int i = 0; i < WAIT_MS / 20; i++) {
		struct stat st;
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
			return 1;
		rk_sleep_ms(20);
	}
	printf("  x11vnc did not create %s\n", sock);
	return 0;
}

struct image {
	unsigned char *rgb;
	int w, h;
};
static int decode(const struct rk_observation *o, struct image *im);

/* Returns 1 when all is up; 0 (with a message) when it could not start. */
static int setup(const char **why)
{
	if (!have("Xvfb")) {
		*why = "Xvfb is not installed (Debian: xvfb)";
		return 0;
	}
	if (!have("x11vnc")) {
		*why = "x11vnc is not installed (Debian: x11vnc)";
		return 0;
	}
	if (!find_python()) {
		*why = "no python3 with tkinter (Debian: python3-tk)";
		return 0;
	}
	if (!find_fixture()) {
		*why = "tests/fixtures/xclient.py not found (run from the source tree or set RAKAZO_SRC_DIR)";
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/rk-screen-XXXXXX");
	if (!mkdtemp(dir)) {
		dir[0] = 0;
		*why = "mkdtemp failed";
		return 0;
	}
	path_in(sock, sizeof(sock), "vnc.sock");

	/* Xvfb picks a free display itself and writes its number to fd 3 */
	int pfd[2];
	if (pipe(pfd) != 0) {
		*why = "pipe failed";
		return 0;
	}
	char log[300], geom[32];
	path_in(log, sizeof(log), "xvfb.log");
	snprintf(geom, sizeof(geom), "%dx%dx24", W, H);
	char *xargv[] = {"Xvfb", "-displayfd", "3", "-screen", "0", geom, "-nolisten", "tcp", "-dpi", "96",
			 "+extension", "RANDR", "-noreset", NULL};
	xvfb_pid = spawn(xargv, log, pfd[1]);
	close(pfd[1]);
	char num[16] = {0};
	size_t got = 0;
	int64_t until = rk_monotonic_ms() + WAIT_MS;
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	while (rk_monotonic_ms() < until && !memchr(num, '\n', got) && got < sizeof(num) - 1) {
		ssize_t n = read(pfd[0], num + got, sizeof(num) - 1 - got);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			break;
		else
			rk_sleep_ms(20);
	}
	close(pfd[0]);
	if (!memchr(num, '\n', got)) {
		*why = "Xvfb did not start (see xvfb.log)";
		return -1;
	}
	display_no = atoi(num);
	if (!start_vnc()) {
		*why = "x11vnc did not start";
		return -1;
	}

	char disp[32], ready[300];
	snprintf(disp, sizeof(disp), "DISPLAY=:%d", display_no);
	path_in(log, sizeof(log), "client.log");
	path_in(ready, sizeof(ready), "ready");
	putenv(disp);
	char *cargv[] = {python, fixture, dir, NULL};
	client_pid = spawn(cargv, log, -1);
	for (int i = 0; i < WAIT_MS / 20 && !rk_fs_exists(ready); i++)
		rk_sleep_ms(20);
	if (!rk_fs_exists(ready)) {
		*why = "the X test client did not start (see client.log)";
		return -1;
	}
	if (rk_screen_open_vnc(sock, &screen, &err) < 0) {
		printf("  open: %s\n", err.message);
		*why = "rk_screen_open_vnc failed";
		return -1;
	}
	/* x11vnc is slow to pick up changes for about a second after its first
	 * client connects: click a corner and wait until the square shows */
	struct rk_action_batch b;
	const char *warm = "[{\"action\":\"click\",\"x\":20,\"y\":780}]";
	struct rk_act_result r;
	if (rk_action_batch_parse(warm, strlen(warm), &b, &err) < 0 || rk_screen_act(screen, &b, NULL, &r, &err) < 0) {
		*why = "the warm-up click failed";
		return -1;
	}
	rk_action_batch_release(&b);
	rk_act_result_release(&r);
	for (int i = 0; i < WAIT_MS / 50; i++) {
		struct rk_observation o;
		struct image im = {NULL, 0, 0};
		int red = 0;
		if (rk_screen_observe(screen, NULL, &o, &err) == 0 && decode(&o, &im))
			red = im.rgb[((size_t)770 * im.w + 10) * 3] == 255;
		free(im.rgb);
		rk_observation_release(&o);
		if (red)
			return 1;
		rk_sleep_ms(50);
	}
	*why = "the warm-up click never showed";
	return -1;
}

/* --- what the client saw ------------------------------------------------- */

static char *read_state(const char *name)
{
	char p[300];
	path_in(p, sizeof(p), name);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	if (rk_fs_read_all(p, 1 << 20, &b, NULL) < 0) {
		rk_buf_release(&b);
		return rk_xstrdup("");
	}
	return rk_buf_detach(&b, NULL);
}

/* Waits (bounded) until the events file holds line as a whole line. */
static int saw_event(const char *line)
{
	char want[256];
	snprintf(want, sizeof(want), "%s\n", line);
	int64_t until = rk_monotonic_ms() + WAIT_MS;
	do {
		char *ev = read_state("events");
		int ok = strncmp(ev, want, strlen(want)) == 0;
		if (!ok) {
			char nl_want[260];
			snprintf(nl_want, sizeof(nl_want), "\n%s", want);
			ok = strstr(ev, nl_want) != NULL;
		}
		free(ev);
		if (ok)
			return 1;
		rk_sleep_ms(20);
	} while (rk_monotonic_ms() < until);
	printf("  no event \"%s\" in events\n", line);
	return 0;
}

static size_t count_events(const char *prefix)
{
	char *ev = read_state("events");
	size_t n = 0, len = strlen(prefix);
	for (char *p = ev; p && *p;) {
		if (strncmp(p, prefix, len) == 0)
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	free(ev);
	return n;
}

static void clear_events(void)
{
	char p[300];
	path_in(p, sizeof(p), "events");
	int fd = open(p, O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
}

static int text_is(const char *want)
{
	int64_t until = rk_monotonic_ms() + WAIT_MS;
	char *t = NULL;
	do {
		free(t);
		t = read_state("text");
		if (strcmp(t, want) == 0) {
			free(t);
			return 1;
		}
		rk_sleep_ms(20);
	} while (rk_monotonic_ms() < until);
	printf("  text is \"%s\", expected \"%s\"\n", t, want);
	free(t);
	return 0;
}

/* --- helpers over the engine ---------------------------------------------- */

/* Runs a batch given as JSON; returns the rc; r is filled (release it). */
static int act(const char *json, const struct rk_observe_options *oo, int settle_ms, struct rk_act_result *r)
{
	struct rk_action_batch b;
	rk_error_clear(&err);
	memset(r, 0, sizeof(*r));
	int rc = rk_action_batch_parse(json, strlen(json), &b, &err);
	if (rc < 0) {
		printf("  parse: %s\n", err.message);
		return rc;
	}
	struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
	ao.settle_ms = settle_ms;
	if (oo)
		ao.observe_opt = *oo;
	rc = rk_screen_act(screen, &b, &ao, r, &err);
	rk_action_batch_release(&b);
	if (rc < 0)
		printf("  act: %s\n", err.message);
	return rc;
}

static int decode(const struct rk_observation *o, struct image *im)
{
	im->rgb = NULL;
	if (!o->png)
		return 0;
	return rk_picture_png_decode(o->png, o->png_len, &im->rgb, &im->w, &im->h, &err) == 0;
}

static int pixel_is(const struct image *im, int x, int y, int r, int g, int b)
{
	if (!im->rgb || x < 0 || y < 0 || x >= im->w || y >= im->h)
		return 0;
	const unsigned char *p = im->rgb + ((size_t)y * im->w + x) * 3;
	if (p[0] == r && p[1] == g && p[2] == b)
		return 1;
	printf("  pixel (%d, %d) is (%d, %d, %d), expected (%d, %d, %d)\n", x, y, p[0], p[1], p[2], r, g, b);
	return 0;
}

/* --- the tests ------------------------------------------------------------ */

TEST(observe_full_frame)
{
	struct rk_observation o;
	REQUIRE(rk_screen_observe(screen, NULL, &o, &err) == 0);
	CHECK_EQ_INT(o.width, W);
	CHECK_EQ_INT(o.height, H);
	CHECK_EQ_INT(o.screen_width, W);
	CHECK_EQ_INT(o.screen_height, H);
	CHECK(o.scale == 1.0);
	CHECK_EQ_STR(o.mime_type, "image/png");
	CHECK_EQ_INT(o.unchanged, 0);
	struct image im;
	REQUIRE(decode(&o, &im));
	CHECK_EQ_INT(im.w, W);
	CHECK_EQ_INT(im.h, H);
	CHECK(pixel_is(&im, 640, 500, 0x80, 0x80, 0x80)); /* the client's grey */
	/* the hash is of exactly the pixels sent */
	char hex[65];
	unsigned char d[32];
	crypto_generichash(d, sizeof(d), im.rgb, (size_t)im.w * im.h * 3, NULL, 0);
	sodium_bin2hex(hex, sizeof(hex), d, sizeof(d));
	CHECK_EQ_STR(o.frame_hash, hex);
	free(im.rgb);

	cJSON *j = rk_observation_to_json(&o);
	CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "frame_id")));
	CHECK_EQ_STR(cJSON_GetObjectItem(j, "mime_type")->valuestring, "image/png");
	CHECK_EQ_INT(cJSON_GetObjectItem(j, "width")->valueint, W);
	CHECK_EQ_INT(cJSON_GetObjectItem(j, "screen_height")->valueint, H);
	CHECK_EQ_STR(cJSON_GetObjectItem(j, "frame_hash")->valuestring, hex);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "unchanged")));
	const char *at = cJSON_GetObjectItem(j, "captured_at")->valuestring;
	CHECK(at && strlen(at) == 24 && at[23] == 'Z');
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "active_window")));
	cJSON_Delete(j);
	rk_observation_release(&o);
}

TEST(observe_scaled_and_dedupe)
{
	struct rk_observe_options oo = {.max_width = 1024, .max_height = 1024, .consumer = "dedupe-a"};
	struct rk_observation a, b, c;
	REQUIRE(rk_screen_observe(screen, &oo, &a, &err) == 0);
	CHECK_EQ_INT(a.width, 1024);
	CHECK_EQ_INT(a.height, 640);
	CHECK(a.scale > 0.7999 && a.scale < 0.8001);
	CHECK(a.png != NULL);
	struct image im;
	REQUIRE(decode(&a, &im));
	CHECK_EQ_INT(im.w, 1024);
	CHECK_EQ_INT(im.h, 640);
	CHECK(pixel_is(&im, 512, 400, 0x80, 0x80, 0x80));
	free(im.rgb);

	/* the same consumer again, nothing changed: metadata only */
	REQUIRE(rk_screen_observe(screen, &oo, &b, &err) == 0);
	CHECK_EQ_INT(b.unchanged, 1);
	CHECK(b.png == NULL);
	CHECK_EQ_INT(b.png_len, 0);
	CHECK_EQ_STR(b.frame_hash, a.frame_hash);
	CHECK(b.frame_id > a.frame_id);
	CHECK_EQ_INT(b.width, 1024);
	cJSON *j = rk_observation_to_json(&b);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "unchanged")));
	cJSON_Delete(j);

	/* another consumer still gets the image */
	oo.consumer = "dedupe-b";
	REQUIRE(rk_screen_observe(screen, &oo, &c, &err) == 0);
	CHECK_EQ_INT(c.unchanged, 0);
	CHECK(c.png != NULL);
	CHECK_EQ_STR(c.frame_hash, a.frame_hash);
	rk_observation_release(&a);
	rk_observation_release(&b);
	rk_observation_release(&c);
}

/* On the VNC mirror: a JPEG of the framebuffer. */
TEST(vnc_jpeg)
{
	struct rk_observe_options jo = {.max_width = 1024, .max_height = 1024, .format = RK_PICTURE_JPEG};
	struct rk_observation o;
	REQUIRE(rk_screen_observe(screen, &jo, &o, &err) == 0);
	CHECK_EQ_STR(o.mime_type, "image/jpeg");
	unsigned char *rgb = NULL;
	int w = 0, h = 0;
	REQUIRE(o.png && rk_picture_jpeg_decode(o.png, o.png_len, &rgb, &w, &h, &err) == 0);
	CHECK_EQ_INT(w, 1024);
	CHECK_EQ_INT(h, 640);
	const unsigned char *p = rgb + ((size_t)400 * w + 512) * 3; /* the client's grey */
	CHECK(abs(p[0] - 0x80) <= 3 && abs(p[1] - 0x80) <= 3 && abs(p[2] - 0x80) <= 3);
	free(rgb);
	rk_observation_release(&o);
}

/* On the VNC mirror: a zoom is exactly the full frame's crop, rescaled. */
TEST(vnc_zoom)
{
	struct rk_observation o, z;
	REQUIRE(rk_screen_observe(screen, NULL, &o, &err) == 0);
	struct image full, zim;
	REQUIRE(decode(&o, &full));
	struct rk_observe_options oo = {.max_width = 1024, .max_height = 1024};
	struct rk_picture_rect r = {101, 203, 301, 303}; /* screen [126, 377) x [253, 379) */
	REQUIRE(rk_screen_zoom(screen, &r, &oo, &z, &err) == 0);
	CHECK_EQ_INT(z.screen_region.x0, 126);
	CHECK_EQ_INT(z.screen_region.y0, 253);
	CHECK_EQ_INT(z.screen_region.x1, 377);
	CHECK_EQ_INT(z.screen_region.y1, 379);
	CHECK_EQ_INT(z.width, 1024);
	CHECK_EQ_INT(z.height, 514);
	REQUIRE(decode(&z, &zim));
	unsigned char *want = malloc((size_t)z.width * z.height * 3);
	rk_picture_scale(full.rgb + ((size_t)253 * W + 126) * 3, 251, 126, 3, (size_t)W * 3, want, z.width, z.height);
	CHECK(memcmp(want, zim.rgb, (size_t)z.width * z.height * 3) == 0);
	free(want);
	free(zim.rgb);
	free(full.rgb);
	rk_observation_release(&z);
	rk_observation_release(&o);
}

TEST(click_scaled_coordinates)
{
	clear_events();
	struct rk_act_result r;
	/* (200, 200) in the 1024x640 screenshot is (250, 250) on the screen */
	REQUIRE(act("[{\"action\":\"click\",\"x\":200,\"y\":200}]", &scaled, -1, &r) == 0);
	CHECK_EQ_INT(r.completed, 1);
	CHECK(r.observed);
	CHECK(saw_event("press 1 250 250"));
	CHECK(saw_event("release 1 250 250"));
	CHECK_EQ_INT(r.obs.width, 1024);
	CHECK(r.obs.has_cursor);
	CHECK_EQ_INT(r.obs.cursor_x, 200);
	CHECK_EQ_INT(r.obs.cursor_y, 200);
	struct image im;
	REQUIRE(decode(&r.obs, &im));
	/* the red square, up and left of the pointer (x11vnc draws the pointer) */
	CHECK(pixel_is(&im, 190, 190, 255, 0, 0));
	CHECK(pixel_is(&im, 150, 150, 0x80, 0x80, 0x80));
	free(im.rgb);
	rk_act_result_release(&r);
}

TEST(buttons_and_double_click)
{
	clear_events();
	struct rk_act_result r;
	REQUIRE(act("[{\"action\":\"click\",\"x\":400,\"y\":300,\"button\":\"middle\"},"
		    "{\"action\":\"right_click\",\"x\":500,\"y\":300},"
		    "{\"action\":\"double_click\",\"x\":600,\"y\":300}]",
		    NULL, -1, &r) == 0);
	CHECK_EQ_INT(r.completed, 3);
	CHECK(saw_event("press 2 400 300"));
	CHECK(saw_event("press 3 500 300"));
	CHECK(saw_event("double 1 600 300"));
	struct image im;
	REQUIRE(decode(&r.obs, &im));
	CHECK(pixel_is(&im, 390, 290, 0, 255, 0));
	CHECK(pixel_is(&im, 490, 290, 0, 0, 255));
	CHECK(pixel_is(&im, 590, 290, 255, 255, 0));
	free(im.rgb);
	rk_act_result_release(&r);
}

TEST(move_down_up_and_drag)
{
	clear_events();
	struct rk_act_result r;
	REQUIRE(act("[{\"action\":\"move\",\"x\":700,\"y\":500},{\"action\":\"down\"},{\"action\":\"up\"},"
		    "{\"action\":\"drag\",\"path\":[[100,450],[300,450],[300,650]]}]",
		    NULL, -1, &r) == 0);
	CHECK_EQ_INT(r.completed, 4);
	CHECK(saw_event("press 1 700 500"));
	CHECK(saw_event("release 1 700 500"));
	CHECK(saw_event("press 1 100 450"));
	CHECK(saw_event("release 1 300 650"));
	CHECK(count_events("motion ") >= 4);
	CHECK_EQ_INT(r.obs.cursor_x, 300);
	CHECK_EQ_INT(r.obs.cursor_y, 650);
	/* a dot where the drag passed: the first motion the client logged */
	char *ev = read_state("events");
	char *m = strstr(ev, "motion ");
	int mx = -1, my = -1;
	if (m)
		sscanf(m, "motion %d %d", &mx, &my);
	free(ev);
	struct image im;
	REQUIRE(decode(&r.obs, &im));
	CHECK(mx > 100 && mx <= 300);
	CHECK(pixel_is(&im, mx - 2, my - 2, 0, 0, 0));
	free(im.rgb);
	rk_act_result_release(&r);
}

TEST(scroll)
{
	clear_events();
	struct rk_act_result r;
	REQUIRE(act("[{\"action\":\"scroll\",\"x\":640,\"y\":400,\"dy\":3}]", NULL, -1, &r) == 0);
	CHECK_EQ_INT(count_events("scroll down 640 400"), 3);
	struct image im;
	REQUIRE(decode(&r.obs, &im));
	CHECK(pixel_is(&im, W - 40, 40, 164, 164, 164)); /* 128 + 3 * 12 */
	free(im.rgb);
	rk_act_result_release(&r);
	/* the reference's form: direction and amount */
	REQUIRE(act("[{\"action\":\"scroll\",\"direction\":\"up\",\"amount\":2}]", NULL, -1, &r) == 0);
	CHECK(saw_event("scroll up 640 400"));
	CHECK_EQ_INT(count_events("scroll up"), 2);
	REQUIRE(decode(&r.obs, &im));
	CHECK(pixel_is(&im, W - 40, 40, 140, 140, 140));
	free(im.rgb);
	rk_act_result_release(&r);
	/* sideways: shift + the wheel */
	REQUIRE(act("[{\"action\":\"scroll\",\"dx\":-1},{\"action\":\"scroll\",\"dx\":2}]", NULL, 0, &r) == 0);
	CHECK(saw_event("scroll left 640 400"));
	CHECK(saw_event("scroll right 640 400"));
	rk_act_result_release(&r);
}

TEST(type_ascii_and_unicode)
{
	struct rk_act_result r;
	/* focus the client, clear its text with BackSpaces it ignores when empty */
	REQUIRE(act("[{\"action\":\"click\",\"x\":900,\"y\":600}]", NULL, 0, &r) == 0);
	rk_act_result_release(&r);
	char *t = read_state("text");
	size_t n = strlen(t);
	free(t);
	for (size_t i = 0; i < n; i += 20) {
		REQUIRE(act("[{\"action\":\"key\",\"keys\":\"BackSpace\"},{\"action\":\"key\",\"keys\":\"BackSpace\"},"
			    "{\"action\":\"key\",\"keys\":\"BackSpace\"},{\"action\":\"key\",\"keys\":\"BackSpace\"}]",
			    NULL, 0, &r) == 0);
		rk_act_result_release(&r);
	}
	REQUIRE(act("[{\"action\":\"type\",\"text\":\"Hello, World! 123 ~`{}|\\\\\"}]", NULL, -1, &r) == 0);
	CHECK(text_is("Hello, World! 123 ~`{}|\\"));
	rk_act_result_release(&r);
	/* characters outside the keymap: x11vnc -add_keysyms maps them */
	REQUIRE(act("[{\"action\":\"key\",\"keys\":\"ctrl+a\"},{\"action\":\"type\",\"text\":\" äéñ 漢 😀\"}]", NULL, -1,
		    &r) == 0);
	CHECK(text_is("Hello, World! 123 ~`{}|\\ äéñ 漢 😀"));
	rk_act_result_release(&r);
	REQUIRE(act("[{\"action\":\"key\",\"keys\":\"BackSpace\"},{\"action\":\"key\",\"keys\":\"Enter\"},"
		    "{\"action\":\"type\",\"text\":\"ÄÉÑ\\nok\"}]",
		    NULL, -1, &r) == 0);
	CHECK(text_is("Hello, World! 123 ~`{}|\\ äéñ 漢 \nÄÉÑ\nok"));
	rk_act_result_release(&r);
}

TEST(key_combos)
{
	clear_events();
	struct rk_act_result r;
	REQUIRE(act("[{\"action\":\"key\",\"keys\":\"ctrl+shift+t\"},{\"action\":\"key\",\"keys\":\"esc\"},"
		    "{\"action\":\"key\",\"keys\":\"F5\"},{\"action\":\"key\",\"keys\":\"Enter\"},"
		    "{\"action\":\"key\",\"keys\":\"alt+Tab\"},{\"action\":\"key\",\"keys\":\"cmd+l\"},"
		    "{\"action\":\"key_down\",\"keys\":\"ctrl\"},{\"action\":\"key\",\"keys\":\"c\"},"
		    "{\"action\":\"key_up\",\"keys\":\"ctrl\"},{\"action\":\"key\",\"keys\":\"shift+1\"},"
		    "{\"action\":\"key\",\"keys\":\"shift+Left\"}]",
		    NULL, 0, &r) == 0);
	CHECK_EQ_INT(r.completed, 11);
	CHECK(saw_event("key shift exclam"));
	CHECK(saw_event("key shift Left"));
	CHECK(saw_event("key ctrl+shift T"));
	CHECK(saw_event("key - Escape"));
	CHECK(saw_event("key - F5"));
	CHECK(saw_event("key - Return"));
	CHECK(saw_event("key alt Tab"));
	CHECK(saw_event("key super l"));
	CHECK(saw_event("key ctrl c"));
	rk_act_result_release(&r);
}

TEST(person_input)
{
	clear_events();
	struct rk_action a;
	const char *t = "{\"action\":\"click\",\"x\":1000,\"y\":700,\"button\":\"right\"}";
	REQUIRE(rk_action_parse(t, strlen(t), &a, &err) == 0);
	CHECK_EQ_INT(rk_screen_input(screen, &a, &err), 0); /* screen coordinates, no scaling */
	CHECK(saw_event("press 3 1000 700"));
	rk_action_release(&a);
	t = "{\"action\":\"move\",\"x\":1280,\"y\":10}";
	REQUIRE(rk_action_parse(t, strlen(t), &a, &err) == 0);
	CHECK(rk_screen_input(screen, &a, &err) == -RK_EINVALID);
	rk_action_release(&a);
}

TEST(bad_batches_run_nothing)
{
	clear_events();
	struct rk_act_result r;
	/* (1024, 10) is off the 1024x640 screenshot, though it is on the screen */
	CHECK(act("[{\"action\":\"click\",\"x\":10,\"y\":10},{\"action\":\"click\",\"x\":1024,\"y\":10}]", &scaled,
		  0, &r) == -RK_EINVALID);
	CHECK_EQ_INT(err.code, RK_EINVALID);
	CHECK(strstr(err.message, "action 1: click: point (1024, 10) is off the screen") != NULL);
	CHECK_EQ_INT(r.completed, 0);
	CHECK_EQ_INT(r.observed, 0);
	rk_act_result_release(&r);
	rk_sleep_ms(200);
	CHECK_EQ_INT(count_events("press"), 0); /* the first click did not run */
	struct rk_action_batch empty = {NULL, 0, -1, -1};
	CHECK(rk_screen_act(screen, &empty, NULL, &r, &err) == -RK_EINVALID);
	rk_act_result_release(&r);
	/* observe=false returns no observation */
	REQUIRE(act("{\"actions\":[{\"action\":\"wait\",\"ms\":0}],\"observe\":false}", NULL, 0, &r) == 0);
	CHECK_EQ_INT(r.observed, 0);
	CHECK(r.obs.png == NULL);
	rk_act_result_release(&r);
}

/* --- the fake provider's display (no X needed) ----------------------------- */

static char fake_dir[256];

static void fake_machine(struct rk_machine *m)
{
	memset(m, 0, sizeof(*m));
	m->computer_id = "cmp_screen_test";
	m->home_key = "home";
	m->data_dir = fake_dir;
	m->home_dir = fake_dir;
	m->run_dir = fake_dir;
	m->ref = "fake_screen_ref";
}

TEST(fake_display)
{
	const struct rk_provider_ops *ops = rk_provider_find("fake");
	REQUIRE(ops && ops->display_start && ops->capture && ops->act);
	snprintf(fake_dir, sizeof(fake_dir), "/tmp/rk-fake-screen-XXXXXX");
	REQUIRE(mkdtemp(fake_dir) != NULL);
	struct rk_machine m;
	fake_machine(&m);
	struct rk_screen_transport tr;
	struct rk_display_options dopt = {1280, 800, NULL};
	REQUIRE(ops->display_start(&m, 1, &dopt, &tr, &err) == 0);
	CHECK(tr.vnc_socket == NULL);
	CHECK_EQ_INT(tr.width, 1280);
	struct rk_screen *s;
	REQUIRE(rk_screen_open_provider(ops, &m, 1, &s, &err) == 0);

	struct rk_observe_options oo = {.max_width = 1024, .max_height = 1024, .consumer = "fake"};
	struct rk_observation o;
	REQUIRE(rk_screen_observe(s, &oo, &o, &err) == 0);
	CHECK_EQ_INT(o.width, 1024);
	CHECK_EQ_INT(o.height, 640);
	CHECK_EQ_INT(o.screen_width, 1280);
	CHECK_EQ_STR(o.window_title, "fake desktop 1");
	struct image im;
	REQUIRE(decode(&o, &im));
	CHECK(pixel_is(&im, 500, 500, 128, 128, 128));
	CHECK(pixel_is(&im, 500, 25, 255, 255, 255)); /* the text field */
	free(im.rgb);
	rk_observation_release(&o);
	REQUIRE(rk_screen_observe(s, &oo, &o, &err) == 0);
	CHECK_EQ_INT(o.unchanged, 1);
	CHECK(o.png == NULL);
	rk_observation_release(&o);

	/* a click at (400, 400) in the 1024x640 image lands on (500, 500) */
	const char *batch = "{\"actions\":[{\"action\":\"click\",\"x\":400,\"y\":400},"
			    "{\"action\":\"right_click\",\"x\":480,\"y\":400},{\"action\":\"type\",\"text\":\"Hi!\"},"
			    "{\"action\":\"scroll\",\"dy\":2},{\"action\":\"key\",\"keys\":\"ctrl+s\"}],\"settle_ms\":0}";
	struct rk_action_batch b;
	REQUIRE(rk_action_batch_parse(batch, strlen(batch), &b, &err) == 0);
	struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
	ao.observe_opt = oo;
	struct rk_act_result r;
	REQUIRE(rk_screen_act(s, &b, &ao, &r, &err) == 0);
	rk_action_batch_release(&b);
	CHECK_EQ_INT(r.completed, 5);
	CHECK_EQ_INT(r.obs.unchanged, 0);
	CHECK_EQ_INT(r.obs.width, 1024);
	REQUIRE(decode(&r.obs, &im));
	CHECK(pixel_is(&im, 400, 400, 255, 0, 0));
	CHECK(pixel_is(&im, 480, 400, 0, 0, 255));
	CHECK_EQ_INT(r.obs.cursor_x, 480); /* image coordinates */
	free(im.rgb);
	rk_act_result_release(&r);
	REQUIRE(rk_screen_observe(s, NULL, &o, &err) == 0); /* full size */
	REQUIRE(decode(&o, &im));
	CHECK(pixel_is(&im, 500, 500, 255, 0, 0));
	CHECK(pixel_is(&im, 600, 500, 0, 0, 255));
	/* "H" at (28,33): its first column is full height, 2x scaled */
	CHECK(pixel_is(&im, 28, 33, 0, 0, 0));
	CHECK(pixel_is(&im, 29, 45, 0, 0, 0));
	CHECK(pixel_is(&im, 27, 33, 255, 255, 255));
	CHECK_EQ_INT(o.cursor_x, 600);
	free(im.rgb);
	rk_observation_release(&o);

	/* the state is on disk: another screen (another process) sees it */
	struct rk_screen *s2;
	REQUIRE(rk_screen_open_provider(ops, &m, 1, &s2, &err) == 0);
	REQUIRE(rk_screen_observe(s2, NULL, &o, &err) == 0);
	REQUIRE(decode(&o, &im));
	CHECK(pixel_is(&im, 500, 500, 255, 0, 0));
	free(im.rgb);
	rk_observation_release(&o);
	/* off-screen coordinates are refused before anything runs */
	batch = "[{\"action\":\"click\",\"x\":10,\"y\":10},{\"action\":\"move\",\"x\":1280,\"y\":0}]";
	REQUIRE(rk_action_batch_parse(batch, strlen(batch), &b, &err) == 0);
	CHECK(rk_screen_act(s2, &b, NULL, &r, &err) == -RK_EINVALID);
	CHECK_EQ_INT(r.completed, 0);
	rk_action_batch_release(&b);
	rk_act_result_release(&r);
	rk_screen_free(s2);

	/* stopped: a clear error */
	CHECK_EQ_INT(ops->display_stop(&m, 1, &err), 0);
	CHECK(rk_screen_observe(s, NULL, &o, &err) == -RK_EUNAVAILABLE);
	rk_screen_free(s);
	CHECK_EQ_INT(rk_fs_remove_tree(fake_dir, &err), 0);
}

/* A fake display of w x h, started as display n in a fresh directory
 * (fake_dir); the caller frees the screen, stops the display, removes the
 * directory (fake_done). */
static struct rk_screen *fake_open(struct rk_machine *m, int n, int w, int h)
{
	const struct rk_provider_ops *ops = rk_provider_find("fake");
	snprintf(fake_dir, sizeof(fake_dir), "/tmp/rk-fake-screen-XXXXXX");
	if (!ops || !mkdtemp(fake_dir))
		return NULL;
	fake_machine(m);
	struct rk_screen_transport tr;
	struct rk_display_options dopt = {w, h, NULL};
	struct rk_screen *s = NULL;
	if (ops->display_start(m, n, &dopt, &tr, &err) != 0 || rk_screen_open_provider(ops, m, n, &s, &err) != 0)
		printf("  fake display %dx%d: %s\n", w, h, err.message);
	return s;
}

static void fake_done(struct rk_screen *s, struct rk_machine *m, int n)
{
	rk_screen_free(s);
	rk_provider_find("fake")->display_stop(m, n, &err);
	rk_fs_remove_tree(fake_dir, &err);
}

/* Runs a batch on s in opt's image space, no settle, no observation. */
static int fake_act(struct rk_screen *s, const struct rk_observe_options *opt, const char *json)
{
	struct rk_action_batch b;
	if (rk_action_batch_parse(json, strlen(json), &b, &err) != 0)
		return -1;
	struct rk_act_options ao = RK_ACT_OPTIONS_INIT;
	ao.settle_ms = 0;
	ao.observe = 0;
	if (opt)
		ao.observe_opt = *opt;
	struct rk_act_result r;
	int rc = rk_screen_act(s, &b, &ao, &r, &err);
	rk_action_batch_release(&b);
	rk_act_result_release(&r);
	if (rc < 0)
		printf("  act: %s\n", err.message);
	return rc;
}

/* The fake display's pointer, in screen pixels: where its last click went. */
static int fake_pointer(const struct rk_machine *m, int n, int *x, int *y)
{
	char *mdir = rk_fake_machine_dir(m), *path = rk_xasprintf("%s/screen-%d.json", mdir, n);
	struct rk_buf b;
	rk_buf_init(&b);
	int ok = rk_fs_read_all(path, 1 << 20, &b, &err) == 0;
	cJSON *doc = ok ? cJSON_Parse(b.data) : NULL;
	const cJSON *c = cJSON_GetObjectItem(doc, "cursor");
	ok = cJSON_GetArraySize(c) == 2;
	if (ok) {
		*x = cJSON_GetArrayItem(c, 0)->valueint;
		*y = cJSON_GetArrayItem(c, 1)->valueint;
	}
	cJSON_Delete(doc);
	rk_buf_release(&b);
	free(path);
	free(mdir);
	return ok;
}

/* Issue 22: a 6-pixel target on a 1366x768, 1920x1080 or 2560x1440 screen,
 * seen in the image a model is sent (Claude's size, an XGA box), clicked
 * where the model sees its centre, is hit. The target is the middle 6x6 of
 * a red 10x10 click mark; the "model" takes the red-weighted centroid of the
 * scaled image and right-clicks there in image coordinates. */
TEST(fake_small_targets_hit)
{
	static const int sizes[][2] = {{1366, 768}, {1920, 1080}, {2560, 1440}, {1280, 800}};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int sw = sizes[i][0], sh = sizes[i][1];
		struct rk_machine m;
		struct rk_screen *s = fake_open(&m, 3, sw, sh);
		REQUIRE(s != NULL);
		for (int t = 0; t < 2; t++) {
			struct rk_observe_options oo = {0};
			if (t == 0)
				rk_picture_fit_pixels(sw, sh, 1568, 1150000, &oo.max_width, &oo.max_height);
			else
				oo.max_width = 1024, oo.max_height = 768;
			int iw, ih;
			rk_picture_fit(sw, sh, oo.max_width, oo.max_height, &iw, &ih);
			/* odd places, apart from each other, off the text field */
			for (int k = 0; k < 6; k++) {
				int tx = 37 + k * (sw - 80) / 6 + k * 7 + t * 21,
				    ty = 103 + k * (sh - 150) / 6 + t * 13;
				char json[200];
				snprintf(json, sizeof(json), "[{\"action\":\"click\",\"x\":%d,\"y\":%d}]", tx, ty);
				REQUIRE(fake_act(s, NULL, json) == 0); /* in screen pixels: the target */
				struct rk_observation o;
				REQUIRE(rk_screen_observe(s, &oo, &o, &err) == 0);
				CHECK_EQ_INT(o.width, iw);
				CHECK_EQ_INT(o.height, ih);
				struct image im;
				REQUIRE(decode(&o, &im));
				/* the model's view: where the red is, near the target */
				double sx = 0, sy = 0, sum = 0;
				int cx = (int)((int64_t)tx * iw / sw), cy = (int)((int64_t)ty * ih / sh);
				for (int y = cy - 12; y <= cy + 12; y++)
					for (int x = cx - 12; x <= cx + 12; x++) {
						if (x < 0 || y < 0 || x >= im.w || y >= im.h)
							continue;
						const unsigned char *p = im.rgb + ((size_t)y * im.w + x) * 3;
						double wgt = p[0] - (p[1] + p[2]) / 2.0;
						if (wgt <= 0)
							continue;
						sx += wgt * x, sy += wgt * y, sum += wgt;
					}
				free(im.rgb);
				rk_observation_release(&o);
				REQUIRE(sum > 0);
				int vx = (int)(sx / sum + 0.5), vy = (int)(sy / sum + 0.5);
				snprintf(json, sizeof(json), "[{\"action\":\"right_click\",\"x\":%d,\"y\":%d}]", vx,
					 vy);
				REQUIRE(fake_act(s, &oo, json) == 0);
				int px = -1, py = -1;
				REQUIRE(fake_pointer(&m, 3, &px, &py));
				/* the mark covers [t-5, t+5): its middle 6 are [t-3, t+3) */
				int hit = px >= tx - 3 && px < tx + 3 && py >= ty - 3 && py < ty + 3;
				if (!hit)
					printf("  %dx%d -> %dx%d: target (%d, %d), model clicked (%d, %d), landed (%d, %d)\n",
					       sw, sh, iw, ih, tx, ty, vx, vy, px, py);
				CHECK(hit);
				/* and the cursor the next observation reports is where it clicked */
				REQUIRE(rk_screen_observe(s, &oo, &o, &err) == 0);
				CHECK_EQ_INT(o.cursor_x, vx);
				CHECK_EQ_INT(o.cursor_y, vy);
				rk_observation_release(&o);
			}
		}
		fake_done(s, &m, 3);
	}
}

/* The cursor an observation reports (image coordinates) is the image pixel
 * an action there came from: a move to v reads back v, at every v that
 * the old left-edge mapping (x * w / sw) got wrong. */
TEST(fake_cursor_round_trip)
{
	struct rk_machine m;
	struct rk_screen *s = fake_open(&m, 4, 1920, 1080);
	REQUIRE(s != NULL);
	struct rk_observe_options oo = {0};
	rk_picture_fit_pixels(1920, 1080, 1568, 1150000, &oo.max_width, &oo.max_height);
	int tried = 0;
	for (int v = 0; v < oo.max_width && tried < 12; v++) {
		int x = rk_coord_to_screen(v, oo.max_width, 1920);
		if ((int)((int64_t)x * oo.max_width / 1920) == v)
			continue; /* the old mapping was right here */
		tried++;
		char json[120];
		snprintf(json, sizeof(json), "[{\"action\":\"move\",\"x\":%d,\"y\":%d}]", v, v / 2);
		REQUIRE(fake_act(s, &oo, json) == 0);
		struct rk_observation o;
		REQUIRE(rk_screen_observe(s, &oo, &o, &err) == 0);
		CHECK_EQ_INT(o.cursor_x, v);
		CHECK_EQ_INT(o.cursor_y, v / 2);
		rk_observation_release(&o);
	}
	CHECK_EQ_INT(tried, 12);
	fake_done(s, &m, 4);
}

/* JPEG on request: the mime type says it, the bytes are a JPEG of the same
 * size, the frame hash is the pixels' (so a PNG and a JPEG of one frame
 * share it), and an unchanged frame dedupes whatever the format. */
TEST(fake_jpeg_observe)
{
	struct rk_machine m;
	struct rk_screen *s = fake_open(&m, 5, 1920, 1080);
	REQUIRE(s != NULL);
	struct rk_observe_options png = {.max_width = 1430, .max_height = 804};
	struct rk_observe_options jpg = {.max_width = 1430, .max_height = 804, .format = RK_PICTURE_JPEG};
	struct rk_observation a, b;
	REQUIRE(rk_screen_observe(s, &png, &a, &err) == 0);
	REQUIRE(rk_screen_observe(s, &jpg, &b, &err) == 0);
	CHECK_EQ_STR(a.mime_type, "image/png");
	CHECK_EQ_STR(b.mime_type, "image/jpeg");
	CHECK_EQ_STR(a.frame_hash, b.frame_hash);
	REQUIRE(b.png && b.png_len > 3);
	CHECK(b.png[0] == 0xff && b.png[1] == 0xd8 && b.png[2] == 0xff);
	unsigned char *rgb = NULL;
	int w = 0, h = 0;
	REQUIRE(rk_picture_jpeg_decode(b.png, b.png_len, &rgb, &w, &h, &err) == 0);
	CHECK_EQ_INT(w, 1430);
	CHECK_EQ_INT(h, 804);
	/* the grey background survives JPEG within a step or two */
	const unsigned char *p = rgb + ((size_t)700 * w + 700) * 3;
	CHECK(abs(p[0] - 128) <= 2 && abs(p[1] - 128) <= 2 && abs(p[2] - 128) <= 2);
	free(rgb);
	cJSON *j = rk_observation_to_json(&b);
	CHECK_EQ_STR(cJSON_GetObjectItem(j, "mime_type")->valuestring, "image/jpeg");
	CHECK(cJSON_GetObjectItem(j, "zoom") == NULL);
	cJSON_Delete(j);
	/* a lower quality is a smaller JPEG of the same frame */
	struct rk_observation c;
	struct rk_observe_options low = jpg;
	low.quality = 20;
	REQUIRE(rk_screen_observe(s, &low, &c, &err) == 0);
	CHECK(c.png_len < b.png_len);
	CHECK_EQ_STR(c.frame_hash, b.frame_hash);
	rk_observation_release(&a);
	rk_observation_release(&b);
	rk_observation_release(&c);
	/* dedupe: a consumer's repeated frame is unchanged, JPEG or PNG */
	jpg.consumer = "run-jpeg";
	REQUIRE(rk_screen_observe(s, &jpg, &a, &err) == 0);
	CHECK_EQ_INT(a.unchanged, 0);
	CHECK(a.png != NULL);
	REQUIRE(rk_screen_observe(s, &jpg, &b, &err) == 0);
	CHECK_EQ_INT(b.unchanged, 1);
	CHECK(b.png == NULL);
	CHECK_EQ_STR(b.mime_type, "image/jpeg");
	rk_observation_release(&a);
	rk_observation_release(&b);
	REQUIRE(fake_act(s, &jpg, "[{\"action\":\"click\",\"x\":700,\"y\":400}]") == 0);
	REQUIRE(rk_screen_observe(s, &jpg, &a, &err) == 0);
	CHECK_EQ_INT(a.unchanged, 0); /* the screen changed */
	rk_observation_release(&a);
	/* bad options are refused before any capture */
	struct rk_observe_options bad = jpg;
	bad.quality = 101;
	CHECK_EQ_INT(rk_screen_observe(s, &bad, &a, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "quality") != NULL);
	bad.quality = 0;
	bad.format = (enum rk_picture_format)7;
	CHECK_EQ_INT(rk_screen_observe(s, &bad, &a, &err), -RK_EINVALID);
	fake_done(s, &m, 5);
}

/* Zoom: a region of the image, at the screen's full resolution, filling
 * the image size; pixel for pixel what cropping the full frame and
 * scaling it gives. */
TEST(fake_zoom)
{
	struct rk_machine m;
	struct rk_screen *s = fake_open(&m, 6, 1920, 1080);
	REQUIRE(s != NULL);
	struct rk_observe_options oo = {.max_width = 1430, .max_height = 804};
	/* a red mark at screen (1000, 500): image (744.8, 372.2) */
	REQUIRE(fake_act(s, NULL, "[{\"action\":\"click\",\"x\":1000,\"y\":500}]") == 0);
	struct rk_observation full;
	REQUIRE(rk_screen_observe(s, NULL, &full, &err) == 0);
	struct image fim;
	REQUIRE(decode(&full, &fim));
	CHECK_EQ_INT(fim.w, 1920);

	struct rk_picture_rect r = {715, 357, 775, 387}; /* 60x30 image pixels */
	struct rk_observation z;
	REQUIRE(rk_screen_zoom(s, &r, &oo, &z, &err) == 0);
	CHECK_EQ_INT(z.zoomed, 1);
	CHECK_EQ_STR(z.mime_type, "image/png");
	/* the screen pixels it touches: x from 715*1920/1430 = 960 to
	 * 775*1920/1430 = 1040.6 rounded up, y from 479.6 down to 519.9 up */
	CHECK_EQ_INT(z.screen_region.x0, 960);
	CHECK_EQ_INT(z.screen_region.y0, 479);
	CHECK_EQ_INT(z.screen_region.x1, 1041);
	CHECK_EQ_INT(z.screen_region.y1, 520);
	CHECK_EQ_INT(z.screen_width, 1920);
	/* 81x41 screen pixels filling 1430x804: the width binds */
	CHECK_EQ_INT(z.width, 1430);
	CHECK_EQ_INT(z.height, 724);
	CHECK_EQ_INT(z.has_cursor, 0);
	struct image zim;
	REQUIRE(decode(&z, &zim));
	unsigned char *want = malloc((size_t)z.width * z.height * 3);
	rk_picture_scale(fim.rgb + ((size_t)479 * 1920 + 960) * 3, 81, 41, 3, (size_t)1920 * 3, want, z.width,
			 z.height);
	CHECK(memcmp(want, zim.rgb, (size_t)z.width * z.height * 3) == 0);
	/* the mark [995, 1005) x [495, 505) is enlarged ~17x: red in the middle */
	CHECK(pixel_is(&zim, (1000 - 960) * 1430 / 81, (500 - 479) * 724 / 41, 255, 0, 0));
	CHECK(pixel_is(&zim, 10, 10, 128, 128, 128));
	free(want);
	free(zim.rgb);
	cJSON *j = rk_observation_to_json(&z);
	cJSON *zj = cJSON_GetObjectItem(j, "zoom");
	REQUIRE(zj != NULL);
	char *text = cJSON_PrintUnformatted(zj);
	CHECK_EQ_STR(text, "{\"region\":[715,357,775,387],\"screen_region\":[960,479,1041,520]}");
	free(text);
	CHECK_EQ_INT(cJSON_GetObjectItem(j, "width")->valueint, 1430);
	cJSON_Delete(j);
	rk_observation_release(&z);

	/* the whole image at full size is the full frame */
	struct rk_picture_rect all = {0, 0, 1920, 1080};
	REQUIRE(rk_screen_zoom(s, &all, NULL, &z, &err) == 0);
	CHECK_EQ_INT(z.width, 1920);
	REQUIRE(decode(&z, &zim));
	CHECK(memcmp(zim.rgb, fim.rgb, (size_t)1920 * 1080 * 3) == 0);
	CHECK_EQ_STR(z.frame_hash, full.frame_hash);
	free(zim.rgb);
	rk_observation_release(&z);
	free(fim.rgb);
	rk_observation_release(&full);

	/* JPEG on request */
	struct rk_observe_options jo = oo;
	jo.format = RK_PICTURE_JPEG;
	REQUIRE(rk_screen_zoom(s, &r, &jo, &z, &err) == 0);
	CHECK_EQ_STR(z.mime_type, "image/jpeg");
	CHECK(z.png && z.png[0] == 0xff && z.png[1] == 0xd8);
	rk_observation_release(&z);

	/* a zoom does not count as the consumer's frame */
	jo.consumer = "zoomer";
	REQUIRE(rk_screen_observe(s, &jo, &z, &err) == 0);
	rk_observation_release(&z);
	REQUIRE(rk_screen_zoom(s, &r, &jo, &z, &err) == 0);
	CHECK_EQ_INT(z.unchanged, 0);
	rk_observation_release(&z);
	REQUIRE(rk_screen_observe(s, &jo, &z, &err) == 0);
	CHECK_EQ_INT(z.unchanged, 1);
	rk_observation_release(&z);

	/* regions outside the image or upside down, named */
	struct rk_picture_rect bad = {0, 0, 1431, 10};
	CHECK_EQ_INT(rk_screen_zoom(s, &bad, &oo, &z, &err), -RK_EINVALID);
	CHECK_EQ_STR(err.message, "zoom: region: x1 (1431) is outside the 1430x804 image (at most 1430)");
	CHECK(z.png == NULL);
	bad = (struct rk_picture_rect){0, 0, 1430, 805};
	CHECK_EQ_INT(rk_screen_zoom(s, &bad, &oo, &z, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "y1 (805)") != NULL);
	bad = (struct rk_picture_rect){50, 0, 40, 10};
	CHECK_EQ_INT(rk_screen_zoom(s, &bad, &oo, &z, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "x1 (40) must be greater than x0 (50)") != NULL);
	bad = (struct rk_picture_rect){0, -2, 40, 10};
	CHECK_EQ_INT(rk_screen_zoom(s, &bad, &oo, &z, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "y0 (-2) must not be negative") != NULL);
	CHECK_EQ_INT(rk_screen_zoom(s, NULL, &oo, &z, &err), -RK_EINVALID);
	/* a one-pixel region: the screen pixels under one image pixel */
	struct rk_picture_rect one = {1429, 803, 1430, 804};
	REQUIRE(rk_screen_zoom(s, &one, &oo, &z, &err) == 0);
	CHECK_EQ_INT(z.screen_region.x1, 1920);
	CHECK_EQ_INT(z.screen_region.y1, 1080);
	CHECK(z.screen_region.x0 >= 1917 && z.screen_region.y0 >= 1077);
	rk_observation_release(&z);
	fake_done(s, &m, 6);
}

/* --- through a display holder (rk_display_*, as runs and the CLI call it) --- */

static char *display_data;

/* An engine in a fresh data directory with a fake computer "d". */
static struct rk_engine *display_engine(struct rk_computer *c)
{
	char tmpl[] = "/tmp/rk-display-XXXXXX";
	if (!mkdtemp(tmpl))
		return NULL;
	display_data = rk_xstrdup(tmpl);
	setenv("RAKAZO_DATA_DIR", display_data, 1);
	fresh_database();
	setenv("RAKAZO_OWNER", "user:unit", 1);
	rk_engine_hooks_init();
	struct rk_engine *eng = NULL;
	if (rk_engine_open(&eng, &err) != 0) {
		printf("  engine: %s\n", err.message);
		return NULL;
	}
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", "d");
	cJSON_AddStringToObject(body, "provider", "fake");
	struct rk_submit sub = {.op = "create", .body = body};
	struct rk_execution x = {0};
	int existed;
	if (rk_execution_submit(eng, &sub, &x, &existed, &err) == 0) {
		struct rk_worker_options wo = {.once = 1};
		rk_worker_run(eng, &wo, &err);
	}
	rk_execution_release(&x);
	cJSON_Delete(body);
	if (rk_db_computer_get(eng->db, "d", c, &err) != 0)
		printf("  computer: %s\n", err.message);
	return eng;
}

static void display_done(struct rk_engine *eng, struct rk_computer *c)
{
	CHECK_EQ_INT(rk_display_close(eng, c, 0, &err), 0);
	rk_computer_release(c);
	rk_engine_free(eng);
	rk_fs_remove_tree(display_data, NULL);
	free(display_data);
	display_data = NULL;
}

/* JPEG on request, with its mime type, for observe and act; PNG stays the
 * default; bad options are refused before the holder is called. */
TEST(display_jpeg)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = display_engine(&c);
	REQUIRE(eng && c.id);
	struct rk_display_shot shot = {0};
	struct rk_display_observe_options oo = {.max_width = 1024, .max_height = 1024};
	int rc = rk_display_observe(eng, &c, 0, &oo, &shot, &err);
	if (rc != 0)
		printf("  observe: %s\n", err.message);
	REQUIRE(rc == 0);
	CHECK_EQ_STR(shot.mime, "image/png");
	CHECK(shot.png && shot.png_len > 8 && !memcmp(shot.png, "\x89PNG", 4));
	char hash[65];
	snprintf(hash, sizeof(hash), "%s", rk_json_string(shot.meta, "frame_hash", ""));
	rk_display_shot_release(&shot);
	oo.format = RK_PICTURE_JPEG;
	REQUIRE(rk_display_observe(eng, &c, 0, &oo, &shot, &err) == 0);
	CHECK_EQ_STR(shot.mime, "image/jpeg");
	CHECK_EQ_STR(rk_json_string(shot.meta, "mime_type", ""), "image/jpeg");
	CHECK_EQ_STR(rk_json_string(shot.meta, "frame_hash", ""), hash);
	REQUIRE(shot.png && shot.png_len > 3);
	CHECK(shot.png[0] == 0xff && shot.png[1] == 0xd8);
	unsigned char *rgb = NULL;
	int w = 0, h = 0;
	CHECK_EQ_INT(rk_picture_jpeg_decode(shot.png, shot.png_len, &rgb, &w, &h, &err), 0);
	CHECK_EQ_INT(w, 1024);
	CHECK_EQ_INT(h, 640);
	free(rgb);
	rk_display_shot_release(&shot);

	/* act: the observation afterwards in the same format */
	struct rk_display_act_result res = {0};
	REQUIRE(rk_display_act(eng, &c, 0, "[{\"action\":\"click\",\"x\":400,\"y\":400}]", 0, 1, &oo, &res, &err) == 0);
	CHECK_EQ_STR(res.mime, "image/jpeg");
	CHECK(res.png && res.png[0] == 0xff && res.png[1] == 0xd8);
	rk_display_act_result_release(&res);

	oo.quality = 500;
	CHECK_EQ_INT(rk_display_observe(eng, &c, 0, &oo, &shot, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "quality") != NULL);
	CHECK(shot.meta == NULL && shot.png == NULL);
	CHECK_EQ_INT(rk_display_act(eng, &c, 0, "[{\"action\":\"wait\",\"ms\":0}]", 0, 1, &oo, &res, &err),
		     -RK_EINVALID);
	oo.quality = 0;
	oo.format = (enum rk_picture_format)9;
	CHECK_EQ_INT(rk_display_observe(eng, &c, 0, &oo, &shot, &err), -RK_EINVALID);
	display_done(eng, &c);
}

/* Zoom through the holder: the region in the options' image, at full
 * resolution, in the format asked for; regions checked. */
TEST(display_zoom)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = display_engine(&c);
	REQUIRE(eng && c.id);
	struct rk_display_observe_options oo = {.max_width = 1024, .max_height = 1024, .format = RK_PICTURE_JPEG};
	struct rk_display_act_result res = {0};
	REQUIRE(rk_display_act(eng, &c, 0, "[{\"action\":\"click\",\"x\":400,\"y\":400}]", 0, 0, &oo, &res, &err) == 0);
	rk_display_act_result_release(&res);
	/* around the click: (400, 400) in 1024x640 is (500, 500) on screen */
	struct rk_display_shot shot = {0};
	struct rk_picture_rect r = {384, 384, 416, 404};
	REQUIRE(rk_display_zoom(eng, &c, 0, &r, &oo, &shot, &err) == 0);
	CHECK_EQ_STR(shot.mime, "image/jpeg");
	const cJSON *z = cJSON_GetObjectItem(shot.meta, "zoom");
	REQUIRE(z != NULL);
	char *text = cJSON_PrintUnformatted(z);
	CHECK_EQ_STR(text, "{\"region\":[384,384,416,404],\"screen_region\":[480,480,520,505]}");
	free(text);
	/* 40x25 screen pixels filling 1024x640 */
	CHECK_EQ_INT(cJSON_GetObjectItem(shot.meta, "width")->valueint, 1024);
	CHECK_EQ_INT(cJSON_GetObjectItem(shot.meta, "height")->valueint, 640);
	unsigned char *rgb = NULL;
	int w = 0, h = 0;
	REQUIRE(rk_picture_jpeg_decode(shot.png, shot.png_len, &rgb, &w, &h, &err) == 0);
	/* the red mark [495, 505) fills the middle */
	const unsigned char *p = rgb + ((size_t)(20 * 640 / 25) * w + 20 * 1024 / 40) * 3;
	CHECK(p[0] > 200 && p[1] < 60 && p[2] < 60);
	free(rgb);
	rk_display_shot_release(&shot);
	oo.format = RK_PICTURE_PNG;
	REQUIRE(rk_display_zoom(eng, &c, 0, &r, &oo, &shot, &err) == 0);
	CHECK_EQ_STR(shot.mime, "image/png");
	rk_display_shot_release(&shot);

	/* outside the image (the holder knows its size), upside down, none */
	r = (struct rk_picture_rect){0, 0, 1025, 10};
	CHECK_EQ_INT(rk_display_zoom(eng, &c, 0, &r, &oo, &shot, &err), -RK_EINVALID);
	CHECK_EQ_STR(err.message, "zoom: region: x1 (1025) is outside the 1024x640 image (at most 1024)");
	CHECK(shot.meta == NULL && shot.png == NULL);
	r = (struct rk_picture_rect){10, 10, 10, 20};
	CHECK_EQ_INT(rk_display_zoom(eng, &c, 0, &r, &oo, &shot, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "x1 (10) must be greater than x0 (10)") != NULL);
	CHECK_EQ_INT(rk_display_zoom(eng, &c, 0, NULL, &oo, &shot, &err), -RK_EINVALID);
	display_done(eng, &c);
}

static void *killer(void *arg)
{
	rk_sleep_ms(300);
	kill(vnc_pid, SIGKILL);
	return arg;
}

TEST(display_dies_mid_batch)
{
	pthread_t t;
	struct rk_act_result r;
	REQUIRE(pthread_create(&t, NULL, killer, NULL) == 0);
	int rc = act("[{\"action\":\"move\",\"x\":10,\"y\":10},{\"action\":\"wait\",\"ms\":4000},"
		     "{\"action\":\"click\",\"x\":20,\"y\":20}]",
		     NULL, -1, &r);
	pthread_join(t, NULL);
	waitpid(vnc_pid, NULL, 0);
	vnc_pid = 0;
	CHECK_EQ_INT(rc, -RK_EUNAVAILABLE);
	CHECK_EQ_INT(err.code, RK_EUNAVAILABLE);
	CHECK(strstr(err.message, "action 1: wait: the display went away") != NULL);
	CHECK_EQ_INT(r.completed, 1);
	rk_act_result_release(&r);
	struct rk_observation o;
	CHECK(rk_screen_observe(screen, NULL, &o, &err) == -RK_EUNAVAILABLE);
	CHECK(rk_screen_act(screen, NULL, NULL, &r, &err) < 0);
	rk_screen_free(screen);
	screen = NULL;
	/* the socket is gone or dead: a clear error, no hang */
	struct rk_screen *s2 = NULL;
	CHECK(rk_screen_open_vnc(sock, &s2, &err) == -RK_EUNAVAILABLE);
	CHECK(s2 == NULL);
	/* and a restarted x11vnc works again */
	REQUIRE(start_vnc());
	REQUIRE(rk_screen_open_vnc(sock, &screen, &err) == 0);
	REQUIRE(rk_screen_observe(screen, NULL, &o, &err) == 0);
	CHECK_EQ_INT(o.width, W);
	rk_observation_release(&o);
}

TEST(window_probe_output)
{
	char *id, *title;
	CHECK_EQ_INT(rk_window_parse("6291469\nrakazo test client\n", &id, &title), 0);
	CHECK_EQ_STR(id, "0x60000d");
	CHECK_EQ_STR(title, "rakazo test client");
	free(id);
	free(title);
	CHECK_EQ_INT(rk_window_parse("", &id, &title), -1); /* no active window */
	CHECK(id == NULL && title == NULL);
	CHECK_EQ_INT(rk_window_parse("Error: no window\n", &id, &title), -1);
	CHECK_EQ_INT(rk_window_parse("42\n", &id, &title), 0); /* a window without a name */
	CHECK_EQ_STR(title, "");
	free(id);
	free(title);
}

/* A link planted where the socket should be (the computer can write that
 * directory) is never followed, neither as the socket nor as its directory. */
TEST(vnc_socket_links_refused)
{
	char real[300], link_sock[300], link_dir[300], via_dir[330];
	path_in(real, sizeof(real), "vnc.sock");
	path_in(link_sock, sizeof(link_sock), "planted.sock");
	path_in(link_dir, sizeof(link_dir), "planted-dir");
	snprintf(via_dir, sizeof(via_dir), "%s/vnc.sock", link_dir);
	unlink(link_sock);
	unlink(link_dir);
	REQUIRE(symlink(real, link_sock) == 0);
	REQUIRE(symlink(dir, link_dir) == 0);
	struct rk_screen *s2 = NULL;
	CHECK_EQ_INT(rk_screen_open_vnc(link_sock, &s2, &err), -RK_EUNAVAILABLE);
	CHECK(strstr(err.message, "symbolic link") != NULL);
	CHECK(s2 == NULL);
	CHECK_EQ_INT(rk_screen_open_vnc(via_dir, &s2, &err), -RK_EUNAVAILABLE);
	CHECK(strstr(err.message, "not a plain directory") != NULL);
	CHECK(s2 == NULL);
	/* a regular file is not a socket either */
	char plain[300];
	path_in(plain, sizeof(plain), "client.log");
	CHECK_EQ_INT(rk_screen_open_vnc(plain, &s2, &err), -RK_EUNAVAILABLE);
	CHECK(strstr(err.message, "not a socket") != NULL);
	/* the real one, through the same checks, works */
	REQUIRE(rk_screen_open_vnc(real, &s2, &err) == 0);
	rk_screen_free(s2);
	unlink(link_sock);
	unlink(link_dir);
}

int main(void)
{
	alarm(300); /* a hang is a failure, not a stuck CI job */
	signal(SIGPIPE, SIG_DFL); /* the engine must cope without SIG_IGN */
	RUN(fake_display);
	RUN(fake_small_targets_hit);
	RUN(fake_cursor_round_trip);
	RUN(fake_jpeg_observe);
	RUN(fake_zoom);
	RUN(display_jpeg);
	RUN(display_zoom);
	RUN(window_probe_output);
	const char *why = NULL;
	int up = setup(&why);
	if (up <= 0) {
		int required = getenv("RAKAZO_REQUIRE_X") && strcmp(getenv("RAKAZO_REQUIRE_X"), "1") == 0;
		if (up < 0 || required) {
			printf("FAIL screen setup: %s (logs in %s)\n", why, dir);
			setenv("RAKAZO_KEEP_TMP", "1", 1);
			teardown();
			check_failed++;
			return check_summary("screen");
		}
		printf("skip: %s\n", why);
		teardown();
		return check_summary("screen");
	}
	RUN(vnc_socket_links_refused);
	RUN(observe_full_frame);
	RUN(observe_scaled_and_dedupe);
	RUN(vnc_jpeg);
	RUN(vnc_zoom);
	RUN(click_scaled_coordinates);
	RUN(buttons_and_double_click);
	RUN(move_down_up_and_drag);
	RUN(scroll);
	RUN(type_ascii_and_unicode);
	RUN(key_combos);
	RUN(person_input);
	RUN(bad_batches_run_nothing);
	RUN(display_dies_mid_batch);
	teardown();
	return check_summary("screen");
}
