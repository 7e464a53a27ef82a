/* rakazo screen: look at and act on a computer's display. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "../engine/display.h"
#include "../engine/util/buf.h"
#include "../engine/util/fs.h"
#include "../engine/util/json.h"
#include "../engine/util/time.h"
#include "../tui/halfblock.h"
#include "cmd.h"
#include "out.h"

static int64_t o_display = 0, o_max_w = 0, o_max_h = 0, o_settle = -1, o_interval = 100;
static const char *o_output, *o_actions, *o_consumer;
static int o_no_observe;

#define OPT_DISPLAY OPT_INT("display", 'd', &o_display, "N", "display number (default 0)", 0, 63)
#define OPT_SIZE                                                                                             \
	OPT_INT("max-width", 0, &o_max_w, "PX", "downscale the image to at most this width (aspect kept)", 0,   \
		10000),                                                                                     \
	OPT_INT("max-height", 0, &o_max_h, "PX", "downscale the image to at most this height", 0, 10000),       \
	OPT_STRING("consumer", 0, &o_consumer, "NAME", "dedupe: an unchanged frame for NAME comes without image")

static int load(struct cmd_ctx *ctx, struct rk_computer *c)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r || (r = cmd_engine(ctx)))
		return r;
	return rk_db_computer_get(ctx->eng->db, ctx->args[0], c, &ctx->err);
}

/* Writes png to o_output (a file, or - for stdout); stdout only when not a terminal. */
static int write_png(struct cmd_ctx *ctx, const unsigned char *png, size_t len, cJSON *meta)
{
	if (!png)
		return 0;
	if (!o_output) {
		if (opt_json)
			return 0;
		if (isatty(1))
			return rk_error_set(&ctx->err, RK_EUSAGE,
					    "refusing to write a PNG to a terminal: use -o FILE, -o -, or --json");
		o_output = "-";
	}
	if (!strcmp(o_output, "-")) {
		if (opt_json)
			return rk_error_set(&ctx->err, RK_EUSAGE, "-o - and --json both want stdout");
		fwrite(png, 1, len, stdout);
		fflush(stdout);
		return 0;
	}
	int r = rk_fs_write_atomic(o_output, png, len, 0644, &ctx->err);
	if (r == 0 && meta)
		cJSON_AddStringToObject(meta, "path", o_output);
	return r;
}

static const struct rk_opt shot_opts[] = {
	OPT_DISPLAY,
	OPT_STRING("output", 'o', &o_output, "FILE", "write the PNG to FILE (- for stdout)"),
	OPT_SIZE,
	OPT_END,
};

static int run_shot(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	if (r)
		return r;
	struct rk_display_observe_options oo = {(int)o_max_w, (int)o_max_h, o_consumer};
	struct rk_display_shot shot = {0};
	r = rk_display_observe(ctx->eng, &c, (int)o_display, &oo, &shot, &ctx->err);
	if (r == 0 && (r = write_png(ctx, shot.png, shot.png_len, shot.meta)) == 0 && (opt_json || (o_output && strcmp(o_output, "-")))) {
		out_doc(shot.meta);
		shot.meta = NULL;
	}
	rk_display_shot_release(&shot);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt act_opts[] = {
	OPT_DISPLAY,
	OPT_STRING("actions", 'a', &o_actions, "JSON|@FILE|-", "the batch: a JSON array of actions, or {\"actions\":[...]}"),
	OPT_INT("settle-ms", 0, &o_settle, "MS", "quiet time that ends settling (default 300, at most 3000)", 0, 3000),
	OPT_BOOL("no-observe", 0, &o_no_observe, "no screenshot afterwards"),
	OPT_STRING("output", 'o', &o_output, "FILE", "write the screenshot after the batch to FILE"),
	OPT_SIZE,
	OPT_END,
};

static int run_act(struct cmd_ctx *ctx)
{
	if (!o_actions)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--actions JSON|@FILE|- is required");
	struct rk_buf batch;
	rk_buf_init(&batch);
	int r;
	if (!strcmp(o_actions, "-")) {
		char buf[65536];
		ssize_t n;
		r = 0;
		while ((n = rk_fs_read_fd(0, buf, sizeof(buf))) > 0 && batch.len < 4 * 1024 * 1024)
			rk_buf_add(&batch, buf, (size_t)n);
	} else if (o_actions[0] == '@') {
		r = rk_fs_read_all(o_actions + 1, 4 * 1024 * 1024, &batch, &ctx->err);
	} else {
		rk_buf_adds(&batch, o_actions);
		r = 0;
	}
	struct rk_computer c = {0};
	if (r == 0)
		r = load(ctx, &c);
	if (r == 0) {
		struct rk_display_observe_options oo = {(int)o_max_w, (int)o_max_h, o_consumer};
		struct rk_display_act_result res = {0};
		r = rk_display_act(ctx->eng, &c, (int)o_display, batch.data, (int)o_settle, o_no_observe ? 0 : -1, &oo,
				   &res, &ctx->err);
		if (r == 0 && (r = write_png(ctx, res.png, res.png_len, NULL)) == 0 && (opt_json || !res.png || (o_output && strcmp(o_output, "-")))) {
			out_doc(res.result);
			res.result = NULL;
		}
		rk_display_act_result_release(&res);
	}
	rk_computer_release(&c);
	rk_buf_release(&batch);
	return r;
}

static const struct rk_opt info_opts[] = {OPT_DISPLAY, OPT_END};

static int run_info(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	if (r)
		return r;
	cJSON *info = NULL;
	if ((r = rk_display_info(ctx->eng, &c, (int)o_display, &info, &ctx->err)) == 0) {
		cJSON_AddStringToObject(info, "computer", c.name);
		out_doc(info);
	}
	rk_computer_release(&c);
	return r;
}

static int run_close(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	if (r)
		return r;
	r = rk_display_close(ctx->eng, &c, (int)o_display, &ctx->err);
	rk_computer_release(&c);
	return r;
}

/* --- watch: the desktop in the terminal, in truecolor half blocks ---------------------- */

static volatile sig_atomic_t watch_stop, watch_resized;
static struct termios saved_tio;
static int tio_saved;

static void restore_terminal(void)
{
	fputs("\033[0m\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (tio_saved)
		tcsetattr(0, TCSANOW, &saved_tio);
}

static void on_watch_signal(int sig)
{
	if (sig == SIGWINCH)
		watch_resized = 1;
	else
		watch_stop = 1;
}

/* The picture goes under the status line; tui/halfblock.c draws it. */
static void draw_frame(const unsigned char *rgb, int w, int h, int cols, int rows, const char *status)
{
	struct rk_buf b;
	rk_buf_init(&b);
	int image_rows = rows - 1;
	tui_halfblock_render(&b, rgb, w, h, 1, 1, image_rows, cols, 1);
	int used = (h + 1) / 2 < image_rows ? (h + 1) / 2 : image_rows;
	rk_buf_printf(&b, "\033[%d;1H\033[0m\033[K%s", used + 1, status);
	fwrite(b.data, 1, b.len, stdout);
	fflush(stdout);
	rk_buf_release(&b);
}

static const struct rk_opt watch_opts[] = {
	OPT_DISPLAY,
	OPT_INT("interval-ms", 0, &o_interval, "MS", "how often to look for a change (default 100)", 20, 10000),
	OPT_END,
};

static int run_watch(struct cmd_ctx *ctx)
{
	if (!isatty(1) || !isatty(0))
		return rk_error_set(&ctx->err, RK_EUSAGE, "screen watch needs a terminal; use `screen shot` in scripts");
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	if (r)
		return r;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watch_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	if (tcgetattr(0, &saved_tio) == 0) {
		struct termios raw = saved_tio;
		raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
		tio_saved = 1;
	}
	atexit(restore_terminal);
	fputs("\033[?1049h\033[?25l\033[2J", stdout);
	char consumer[64];
	snprintf(consumer, sizeof(consumer), "watch-%d", (int)getpid());
	uint64_t frames = 0;
	while (!watch_stop) {
		struct winsize ws = {0};
		ioctl(1, TIOCGWINSZ, &ws);
		int cols = ws.ws_col ? ws.ws_col : 80, rows = ws.ws_row ? ws.ws_row : 24;
		struct rk_display_observe_options oo = {cols, (rows - 1) * 2, watch_resized ? NULL : consumer};
		if (watch_resized) {
			fputs("\033[2J", stdout);
			watch_resized = 0;
		}
		struct rk_display_shot shot = {0};
		r = rk_display_observe(ctx->eng, &c, (int)o_display, &oo, &shot, &ctx->err);
		if (r)
			break;
		if (shot.png) {
			unsigned char *rgb;
			int w, h;
			if (tui_png_decode(shot.png, shot.png_len, &rgb, &w, &h) == 0) {
				char status[256];
				frames++;
				snprintf(status, sizeof(status), " %s :%d  %dx%d  frame %llu  q quits", c.name, (int)o_display,
					 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(shot.meta, "screen_width")),
					 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(shot.meta, "screen_height")),
					 (unsigned long long)frames);
				draw_frame(rgb, w, h, cols, rows, status);
				free(rgb);
			}
		}
		rk_display_shot_release(&shot);
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		if (poll(&pfd, 1, (int)o_interval) > 0) {
			char ch;
			if (read(0, &ch, 1) == 1 && (ch == 'q' || ch == 'Q' || ch == 3))
				break;
		}
	}
	restore_terminal();
	tio_saved = 0;
	rk_computer_release(&c);
	return r;
}

static const struct cmd_verb screen_verbs[] = {
	{"shot", "COMPUTER [-o FILE|-]", "take a screenshot (PNG; --json gives its metadata)", shot_opts, run_shot, NULL},
	{"act", "COMPUTER --actions JSON|@FILE|-", "run a batch of actions, settle, and take a screenshot", act_opts,
	 run_act, NULL},
	{"info", "COMPUTER", "the display's size and transport", info_opts, run_info, NULL},
	{"watch", "COMPUTER", "watch the desktop live in the terminal (truecolor half blocks)", watch_opts, run_watch,
	 NULL},
	{"close", "COMPUTER", "close the display: its holder and its desktop stack", info_opts, run_close, NULL},
	{0},
};

const struct cmd_entry cmd_screen = {
	.name = "screen",
	.args = "VERB COMPUTER [options]",
	.summary = "screenshots and batched actions on a computer's desktop",
	.description = "The first call starts the desktop (Xvfb, openbox, x11vnc on a unix socket, Chromium)\n"
		       "and a holder that keeps one VNC connection open, so later calls only encode a PNG.\n"
		       "Coordinates in actions are in the screenshot's space (after --max-width/--max-height).",
	.verbs = screen_verbs,
};
