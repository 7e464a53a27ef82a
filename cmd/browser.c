/* rakazo browser: drive a computer's visible Chromium tab over DevTools. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/machine/browser.h"
#include "engine/access/authz.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "cmd.h"
#include "out.h"

static int64_t o_display = 0, o_timeout = RK_BROWSER_NAVIGATE_TIMEOUT_MS, o_fence = 0;
static const char *o_action, *o_output, *o_profile, *o_bot;
static int o_screenshot;

#define OPT_DISPLAY OPT_INT("display", 'd', &o_display, "N", "the display whose browser to drive (default 0)", 0, 63)
#define OPT_PROFILE                                                                                                    \
	OPT_STRING("profile", 0, &o_profile, "DIR",                                                                    \
		   "the Chromium profile, relative to the workspace, if the browser must be started "                  \
		   "(default .browser-profiles/default on display 0)")
#define OPT_BOT OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot's own Chromium, on its own screen and profile")
#define OPT_FENCE                                                                                                      \
	OPT_INT("fence", 0, &o_fence, "TOKEN", "with --bot: act under this execution lease token", 1, INT64_MAX)

/* --bot drives the bot's own screen and profile; --fence needs --bot. */
static int screen_flags(struct cmd_ctx *ctx)
{
	if (o_bot && (o_display || o_profile))
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "--bot drives the bot's own screen and profile: leave out --display and --profile");
	if (o_fence && !o_bot)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--fence is the token of a bot's lease: give --bot too");
	return 0;
}

/* act: the command changes the page (refused while a person controls the bot's screen). */
static int connect_browser(struct cmd_ctx *ctx, int nargs, const char *what, int act, struct rk_computer *c,
			   struct rk_team_browser *tb)
{
	memset(tb, 0, sizeof(*tb));
	int r = cmd_want_args(ctx, nargs, nargs, what);
	if (r || (r = screen_flags(ctx)))
		return r;
	/* COMPUTER:BOT and COMPUTER:.N fill --bot and --display: check them again */
	if ((r = cmd_target_screen(ctx, ctx->args[0], "computers.use", c, &o_bot, &o_display)))
		return r;
	if ((r = screen_flags(ctx))) {
		rk_computer_release(c);
		return r;
	}
	return rk_team_browser_begin(ctx->eng, c, o_bot, o_fence, (int)o_display, o_profile, act, tb, &ctx->err);
}

static const struct rk_opt navigate_opts[] = {
	OPT_DISPLAY,
	OPT_BOT,
	OPT_FENCE,
	OPT_INT("timeout-ms", 0, &o_timeout, "MS", "wait at most this long for the page to load (default 30000)", 1,
		RK_BROWSER_TIMEOUT_MAX_MS),
	OPT_PROFILE,
	OPT_END,
};

static int run_navigate(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	struct rk_team_browser tb;
	int r = connect_browser(ctx, 2, "COMPUTER URL", 1, &c, &tb);
	cJSON *res = NULL;
	if (r == 0 && (r = rk_browser_navigate(tb.browser, ctx->args[1], (int)o_timeout, &res, &ctx->err)) == 0) {
		rk_team_browser_stamp(&tb, res);
		out_doc(res);
	}
	rk_team_browser_end(ctx->eng, &tb);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt snapshot_opts[] = {
	OPT_DISPLAY,
	OPT_BOT,
	OPT_FENCE,
	OPT_BOOL("screenshot", 0, &o_screenshot, "also capture the tab as a PNG (needs -o)"),
	OPT_STRING("output", 'o', &o_output, "FILE", "where the screenshot goes"),
	OPT_PROFILE,
	OPT_END,
};

static int run_snapshot(struct cmd_ctx *ctx)
{
	if (o_screenshot && !o_output)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--screenshot needs -o FILE");
	struct rk_computer c = {0};
	struct rk_team_browser tb;
	int r = connect_browser(ctx, 1, "COMPUTER", 0, &c, &tb);
	cJSON *snap = NULL;
	unsigned char *png = NULL;
	size_t png_len = 0;
	if (r == 0 && (r = rk_browser_snapshot(tb.browser, o_screenshot, &snap, &png, &png_len, &ctx->err)) == 0)
		rk_team_browser_stamp(&tb, snap);
	if (r == 0 && png && (r = rk_fs_write_atomic(o_output, png, png_len, 0644, &ctx->err)) == 0)
		cJSON_AddStringToObject(snap, "path", o_output);
	if (r == 0) {
		if (opt_json) {
			out_doc(snap);
		} else {
			/* the tree is what a person reads: as it is, under its page */
			char *text = rk_xasprintf("%s\n%s\n\n%s\n", rk_json_string(snap, "title", ""),
						  rk_json_string(snap, "url", ""), rk_json_string(snap, "tree", ""));
			out_text(stdout, text, strlen(text)); /* the page's words, never its escapes */
			free(text);
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(snap, "truncated")))
				printf("(truncated at %d bytes)\n", RK_BROWSER_SNAPSHOT_MAX);
			cJSON_Delete(snap);
		}
	}
	free(png);
	rk_team_browser_end(ctx->eng, &tb);
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt act_opts[] = {
	OPT_DISPLAY,
	OPT_BOT,
	OPT_FENCE,
	OPT_STRING("action", 'a', &o_action, "JSON|-",
		   "{\"action\":\"click|type|select|press|hover|scroll|fill_secret\",\"ref\":\"e3\",...}"),
	OPT_PROFILE,
	OPT_END,
};

static int run_act(struct cmd_ctx *ctx)
{
	if (!o_action)
		return rk_error_set(&ctx->err, RK_EUSAGE, "--action JSON|- is required");
	struct rk_buf text;
	rk_buf_init(&text);
	if (!strcmp(o_action, "-")) {
		char buf[65536];
		ssize_t n;
		while ((n = rk_fs_read_fd(0, buf, sizeof(buf))) > 0 && text.len < 1024 * 1024)
			rk_buf_add(&text, buf, (size_t)n);
	} else {
		rk_buf_adds(&text, o_action);
	}
	/* the action is checked before any computer is touched */
	cJSON *a = rk_json_parse(text.data, text.len, "--action", &ctx->err);
	rk_buf_release(&text);
	int r = a ? rk_browser_action_check(a, &ctx->err) : -(int)ctx->err.code;
	if (r) {
		cJSON_Delete(a);
		if (r != -RK_EINVALID)
			return r;
		char why[sizeof(ctx->err.message)];
		snprintf(why, sizeof(why), "%s", ctx->err.message);
		return rk_error_set(&ctx->err, RK_EUSAGE, "%s", why);
	}
	struct rk_computer c = {0};
	struct rk_team_browser tb;
	r = connect_browser(ctx, 1, "COMPUTER", 1, &c, &tb);
	cJSON *res = NULL;
	struct rk_actor who = {0};
	/* fill_secret types the person's secret, or the bot's with --bot */
	if (r == 0 && (r = rk_actor_resolve(&who, ctx->eng, NULL, o_bot, &ctx->err)) == 0) {
		struct rk_browser_secrets sec = {.eng = ctx->eng, .actor = &who};
		r = rk_browser_act(tb.browser, a, &sec, &res, &ctx->err);
	}
	rk_actor_release(&who);
	if (r == 0) {
		rk_team_browser_stamp(&tb, res);
		out_doc(res);
	}
	cJSON_Delete(a);
	rk_team_browser_end(ctx->eng, &tb);
	rk_computer_release(&c);
	return r;
}

static const struct cmd_verb browser_verbs[] = {
	{"navigate", "COMPUTER URL", "load URL in the visible tab and wait for it", navigate_opts, run_navigate, NULL},
	{"snapshot", "COMPUTER", "the page's interactive elements and text, with refs", snapshot_opts, run_snapshot,
	 NULL},
	{"act", "COMPUTER --action JSON", "click, type, select, press, hover, scroll or fill_secret by ref", act_opts,
	 run_act, NULL},
	{0},
};

const struct cmd_entry cmd_browser = {
	.name = "browser",
	.args = "VERB COMPUTER [options]",
	.summary = "drive a computer's Chromium tab by element refs (DevTools, no screenshots)",
	.description = "The tab is the one on the display's screen, so what these commands do is seen there.\n"
		       "Refs (e12) come from `snapshot` and stay with their element while it exists.\n"
		       "Chromium speaks DevTools on its own pipes inside the computer: no port is opened.\n"
		       "COMPUTER may name a screen: COMPUTER:BOT is --bot BOT, COMPUTER:.N is --display N.",
	.verbs = browser_verbs,
};
