/* rakazo tui: the dashboard (tui/). `rakazo` with no arguments on a
 * terminal opens it too (cmd/main.c). */

#include <stdlib.h>

#include "../tui/tui.h"
#include "cmd.h"
#include "out.h"

static const char *o_computer;

static const struct rk_opt tui_opts[] = {
	OPT_STRING("computer", 'c', &o_computer, "COMPUTER", "select this computer at start"),
	OPT_END,
};

static int run_tui(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r)
		return r;
	if (opt_json)
		return rk_error_set(&ctx->err, RK_EUSAGE, "rakazo tui is interactive and has no --json output");
	/* the feed opens its own engine handles; this one checks the data dir first */
	if ((r = cmd_engine(ctx)))
		return r;
	if (o_computer) {
		struct rk_computer c = {0};
		if ((r = cmd_target(ctx, o_computer, "computers.use", &c)))
			return r;
		rk_computer_release(&c);
	}
	const char *bench = getenv("RAKAZO_TUI_EXIT_AFTER_DRAW");
	struct rk_tui_options opt = {o_computer, bench && *bench && *bench != '0'};
	return rk_tui_run(&opt, &ctx->err);
}

const struct cmd_entry cmd_tui = {
	.name = "tui",
	.args = "[--computer COMPUTER]",
	.summary = "the dashboard: computers, runs, terminal history, files and the live screen",
	.description = "Keyboard first (hjkl or arrows, Tab between panes, / searches, ? shows every key),\n"
		       "the mouse too. Needs a terminal; NO_COLOR turns colours off. See rakazo-tui(1).",
	.opts = tui_opts,
	.run = run_tui,
};
