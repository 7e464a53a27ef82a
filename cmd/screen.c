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

#include "engine/machine/display.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "../tui/halfblock.h"
#include "cmd.h"
#include "out.h"
#include "screen_gateway.h"
#include "termimg.h"

static int64_t o_display = 0, o_max_w = 0, o_max_h = 0, o_settle = -1, o_interval = 100, o_fence = 0, o_ttl = 0;
static const char *o_output, *o_actions, *o_consumer, *o_bot, *o_mode;
static int o_no_observe;

#define OPT_DISPLAY OPT_INT("display", 'd', &o_display, "N", "display number (default 0)", 0, 63)
#define OPT_BOT OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot's own screen (started on its first call)")
#define OPT_FENCE                                                                                                      \
	OPT_INT("fence", 0, &o_fence, "TOKEN", "with --bot: act under this execution lease token", 1, INT64_MAX)
#define OPT_SIZE                                                                                                       \
	OPT_INT("max-width", 0, &o_max_w, "PX", "downscale the image to at most this width (aspect kept)", 0, 10000),  \
		OPT_INT("max-height", 0, &o_max_h, "PX", "downscale the image to at most this height", 0, 10000),      \
		OPT_STRING("consumer", 0, &o_consumer, "NAME",                                                         \
			   "dedupe: an unchanged frame for NAME comes without image")

static int load(struct cmd_ctx *ctx, struct rk_computer *c)
{
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	return r ? r : cmd_target_screen(ctx, ctx->args[0], "computers.use", c, &o_bot, &o_display);
}

/* --bot picks the bot's screen; --display and --fence do not mix with it that way. */
static int bot_or_display(struct cmd_ctx *ctx)
{
	if (o_bot && o_display)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--bot gives the bot's own screen: leave out --display");
	if (o_fence && !o_bot)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--fence is the token of a bot's lease: give --bot too");
	return 0;
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
	OPT_DISPLAY, OPT_BOT,
	OPT_FENCE,   OPT_STRING("output", 'o', &o_output, "FILE", "write the PNG to FILE (- for stdout)"),
	OPT_SIZE,    OPT_END,
};

static int run_shot(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	if (r)
		return r;
	struct rk_display_observe_options oo = {.max_width = (int)o_max_w,
						.max_height = (int)o_max_h,
						.consumer = o_consumer};
	struct rk_display_shot shot = {0};
	if ((r = bot_or_display(ctx)) == 0)
		r = o_bot ? rk_team_screen_observe(ctx->eng, &c, o_bot, o_fence, &oo, &shot, &ctx->err)
			  : rk_display_observe(ctx->eng, &c, (int)o_display, &oo, &shot, &ctx->err);
	if (r == 0 && (r = write_png(ctx, shot.png, shot.png_len, shot.meta)) == 0 &&
	    (opt_json || (o_output && strcmp(o_output, "-")))) {
		out_doc(shot.meta);
		shot.meta = NULL;
	}
	rk_display_shot_release(&shot);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt act_opts[] = {
	OPT_DISPLAY,
	OPT_BOT,
	OPT_FENCE,
	OPT_STRING("actions", 'a', &o_actions, "JSON|@FILE|-",
		   "the batch: a JSON array of actions, or {\"actions\":[...]}"),
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
		struct rk_display_observe_options oo = {.max_width = (int)o_max_w,
							.max_height = (int)o_max_h,
							.consumer = o_consumer};
		struct rk_display_act_result res = {0};
		if ((r = bot_or_display(ctx)) == 0)
			r = o_bot ? rk_team_screen_act(ctx->eng, &c, o_bot, o_fence, batch.data, (int)o_settle,
						       o_no_observe ? 0 : -1, &oo, &res, &ctx->err)
				  : rk_display_act(ctx->eng, &c, (int)o_display, batch.data, (int)o_settle,
						   o_no_observe ? 0 : -1, &oo, &res, &ctx->err);
		if (r == 0 && (r = write_png(ctx, res.png, res.png_len, NULL)) == 0 &&
		    (opt_json || !res.png || (o_output && strcmp(o_output, "-")))) {
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

/* --- watch: the desktop in the terminal: kitty graphics, sixel or half blocks ----------- */

static volatile sig_atomic_t watch_stop, watch_resized;
static struct termios saved_tio;
static int tio_saved;

static int watch_mode = TERMIMG_HALFBLOCK;

static void restore_terminal(void)
{
	if (watch_mode == TERMIMG_KITTY)
		fputs("\033_Ga=d,d=A,q=2\033\\", stdout);
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

/* The terminal's size in cells and, when it says, in pixels per cell. */
struct term_size {
	int cols, rows, cell_w, cell_h;
};

static struct term_size term_size(void)
{
	struct winsize ws = {0};
	ioctl(1, TIOCGWINSZ, &ws);
	struct term_size t = {ws.ws_col ? ws.ws_col : 80, ws.ws_row ? ws.ws_row : 24, 0, 0};
	if (ws.ws_xpixel && ws.ws_ypixel) {
		t.cell_w = ws.ws_xpixel / t.cols;
		t.cell_h = ws.ws_ypixel / t.rows;
	}
	return t;
}

/* The largest picture worth asking for: half blocks draw one pixel a
 * column and two a row; kitty and sixel draw pixels (the terminal's when it
 * says, else 8x16 cells; kitty scales the PNG itself, so at most the screen). */
static void watch_box(int mode, const struct term_size *t, int *max_w, int *max_h)
{
	int rows = t->rows > 1 ? t->rows - 1 : 1;
	if (mode == TERMIMG_HALFBLOCK) {
		*max_w = t->cols;
		*max_h = rows * 2;
	} else {
		*max_w = t->cols * (t->cell_w ? t->cell_w : 8);
		*max_h = rows * (t->cell_h ? t->cell_h : 16);
		if (mode == TERMIMG_KITTY && !t->cell_w) {
			*max_w = 1280;
			*max_h = 800;
		}
	}
}

/* One frame under the status line, drawn in the mode's way; png is the
 * observation (kitty sends it as it is), rgb its pixels. */
static void draw_frame(int mode, const unsigned char *png, size_t png_len, const unsigned char *rgb, int w, int h,
		       const struct term_size *t, const char *status)
{
	struct rk_buf b;
	rk_buf_init(&b);
	int image_rows = t->rows - 1, used;
	if (mode == TERMIMG_KITTY) {
		int c, r;
		termimg_fit(w, h, t->cols, image_rows, t->cell_w, t->cell_h, &c, &r);
		rk_buf_adds(&b, "\033[1;1H");
		termimg_kitty(&b, png, png_len, c, r);
		used = r;
	} else if (mode == TERMIMG_SIXEL) {
		rk_buf_adds(&b, "\033[1;1H");
		termimg_sixel(&b, rgb, w, h);
		int ch = t->cell_h ? t->cell_h : 16;
		used = (h + ch - 1) / ch;
	} else {
		tui_halfblock_render(&b, rgb, w, h, 1, 1, image_rows, t->cols, 1);
		used = (h + 1) / 2;
	}
	if (used > image_rows)
		used = image_rows;
	rk_buf_printf(&b, "\033[%d;1H\033[0m\033[K%s", used + 1, status);
	fwrite(b.data, 1, b.len, stdout);
	fflush(stdout);
	rk_buf_release(&b);
}

static const struct rk_opt watch_opts[] = {
	OPT_DISPLAY,
	OPT_INT("interval-ms", 0, &o_interval, "MS", "how often to look for a change (default 100)", 20, 10000),
	OPT_STRING("mode", 'm', &o_mode, "MODE",
		   "auto (default: what the terminal answers), halfblock, kitty or sixel"),
	OPT_END,
};

static int run_watch(struct cmd_ctx *ctx)
{
	int mode = o_mode ? termimg_mode_parse(o_mode) : TERMIMG_AUTO;
	if (mode < 0)
		return rk_error_set(&ctx->err, RK_EUSAGE, "unknown --mode '%s': use auto, halfblock, kitty or sixel",
				    o_mode);
	struct rk_computer c = {0};
	int r = load(ctx, &c); /* who may watch first: a stranger learns no more than denied */
	if (r)
		return r;
	if (!isatty(1) || !isatty(0)) {
		rk_computer_release(&c);
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "screen watch needs a terminal; use `screen shot` in scripts");
	}
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
	/* what the terminal draws: asked before anything is shown (300 ms at most) */
	watch_mode = mode == TERMIMG_AUTO ? termimg_detect(0, 1, 300) : mode;
	atexit(restore_terminal);
	fputs("\033[?1049h\033[?25l\033[2J", stdout);
	char consumer[64];
	snprintf(consumer, sizeof(consumer), "watch-%d", (int)getpid());
	uint64_t frames = 0;
	while (!watch_stop) {
		struct term_size t = term_size();
		struct rk_display_observe_options oo = {.consumer = watch_resized ? NULL : consumer};
		watch_box(watch_mode, &t, &oo.max_width, &oo.max_height);
		if (watch_resized) {
			fputs(watch_mode == TERMIMG_KITTY ? "\033_Ga=d,d=A,q=2\033\\\033[2J" : "\033[2J", stdout);
			watch_resized = 0;
		}
		struct rk_display_shot shot = {0};
		r = rk_display_observe(ctx->eng, &c, (int)o_display, &oo, &shot, &ctx->err);
		if (r)
			break;
		/* only a changed frame comes with a picture: nothing else is drawn */
		if (shot.png) {
			unsigned char *rgb;
			int w, h;
			if (tui_png_decode(shot.png, shot.png_len, &rgb, &w, &h) == 0) {
				char status[256];
				frames++;
				snprintf(status, sizeof(status), " %s :%d  %dx%d  frame %llu  q quits  %s", c.name,
					 (int)o_display,
					 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(shot.meta, "screen_width")),
					 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(shot.meta, "screen_height")),
					 (unsigned long long)frames, termimg_mode_name(watch_mode));
				draw_frame(watch_mode, shot.png, shot.png_len, rgb, w, h, &t, status);
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

/* --- a bot's screen: release, takeover, control ------------------------------------------ */

static int need_bot(struct cmd_ctx *ctx, struct rk_computer *c)
{
	int r = load(ctx, c);
	if (r == 0 && !o_bot)
		r = rk_error_set(&ctx->err, RK_EUSAGE, "--bot BOT is required");
	return r;
}

/* {computer, bot_id, released: true} under --json. */
static void print_released(const struct rk_computer *c)
{
	if (!opt_json)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "computer", c->name);
	cJSON_AddStringToObject(o, "bot_id", o_bot);
	cJSON_AddBoolToObject(o, "released", 1);
	out_doc(o);
}

static const struct rk_opt release_opts[] = {OPT_BOT, OPT_FENCE, OPT_END};

static int run_release(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = need_bot(ctx, &c);
	if (r == 0)
		r = rk_team_screen_release(ctx->eng, &c, o_bot, o_fence, &ctx->err);
	if (r == 0)
		print_released(&c);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt takeover_opts[] = {
	OPT_BOT,
	OPT_INT("ttl-ms", 0, &o_ttl, "MS", "how long control lasts (default 15 min, RAKAZO_TAKEOVER_TTL_MS)", 1000,
		86400000),
	OPT_END,
};

static int run_takeover(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = need_bot(ctx, &c);
	cJSON *o = NULL;
	if (r == 0 && (r = rk_team_takeover(ctx->eng, &c, o_bot, o_ttl, &o, &ctx->err)) == 0)
		out_doc(o);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt control_opts[] = {OPT_BOT, OPT_END};

static int run_release_control(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = need_bot(ctx, &c);
	if (r == 0)
		r = rk_team_release_control(ctx->eng, &c, o_bot, &ctx->err);
	if (r == 0)
		print_released(&c);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt no_opts[] = {OPT_END};

static int run_list(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = load(ctx, &c);
	cJSON *arr = NULL;
	if (r == 0 && (r = rk_team_screen_list(ctx->eng, &c, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"slot", "SLOT"},	      {"bot_id", "BOT"},
						      {"state", "STATE"},     {"generation", "GENERATION"},
						      {"control", "CONTROL"}, {0}};
		out_list(arr, cols);
	}
	rk_computer_release(&c);
	return r;
}

static const struct cmd_verb screen_verbs[] = {
	{"shot", "COMPUTER [-o FILE|-]", "take a screenshot (PNG; --json gives its metadata)", shot_opts, run_shot,
	 NULL},
	{"act", "COMPUTER --actions JSON|@FILE|-", "run a batch of actions, settle, and take a screenshot", act_opts,
	 run_act, NULL},
	{"info", "COMPUTER", "the display's size and transport", info_opts, run_info, NULL},
	{"watch", "COMPUTER [--mode auto|halfblock|kitty|sixel]",
	 "watch the desktop live in the terminal (kitty graphics, sixel or truecolor half blocks)", watch_opts,
	 run_watch, NULL},
	{"close", "COMPUTER", "close the display: its holder and its desktop stack", info_opts, run_close, NULL},
	{"list", "COMPUTER", "the bots' screens: slot, bot, state, generation, who has control", no_opts, run_list,
	 NULL},
	{"release", "COMPUTER --bot BOT", "close a bot's desktop (Chromium cleanly; its profile stays)", release_opts,
	 run_release, NULL},
	{"takeover", "COMPUTER --bot BOT", "take exclusive control of a bot's screen (stop the bot first)",
	 takeover_opts, run_takeover, NULL},
	{"release-control", "COMPUTER --bot BOT", "give control of a bot's screen back", control_opts,
	 run_release_control, NULL},
	{"share", "COMPUTER --view|--control [--bot B|--display N] [--ttl S]",
	 "a revocable capability URL for the screen gateway", screen_share_opts, cmd_screen_share, NULL},
	{"revoke", "TOKEN|ID|--all", "revoke screen capabilities (their clients are disconnected)", screen_revoke_opts,
	 cmd_screen_revoke, NULL},
	{"shares", "[--all]", "the live screen capabilities (never their tokens)", screen_shares_opts,
	 cmd_screen_shares, NULL},
	{"gateway", "[--listen HOST:PORT]", "one WebSocket port relaying RFB (noVNC) for every shared screen",
	 screen_gateway_opts, cmd_screen_gateway, NULL},
	{0},
};

const struct cmd_entry cmd_screen = {
	.name = "screen",
	.args = "VERB COMPUTER [options]",
	.summary = "screenshots and batched actions on a computer's desktop",
	.description = "The first call starts the desktop (Xvfb, openbox, x11vnc on a unix socket, Chromium)\n"
		       "and a holder that keeps one VNC connection open, so later calls only encode a PNG.\n"
		       "Coordinates in actions are in the screenshot's space (after --max-width/--max-height).\n"
		       "COMPUTER may name a screen: COMPUTER:BOT is --bot BOT, COMPUTER:.N is --display N.",
	.verbs = screen_verbs,
};
