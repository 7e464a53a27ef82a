#ifndef RK_TUI_TUI_H
#define RK_TUI_TUI_H
/* rakazo tui: the dashboard. One event loop on the UI thread (keys, mouse,
 * resize, and the feed's wake pipe), panels that draw from the feed's data,
 * one key table for dispatch, the footer and the help screen. The engine is
 * called only by the feed's threads (feed.h). */

#include <stddef.h>

#include "engine/util/err.h"
#include "feed.h"

struct rk_tui_options {
	const char *computer; /* select this computer (id or name) at start, or NULL */
	int exit_after_draw;  /* quit after the first full draw (the benchmark) */
};

/* Runs the dashboard on the terminal until the person quits. 0, or a
 * negative code with err set (no terminal, the engine cannot open). The
 * terminal is restored on every way out, fatal signals included. */
int rk_tui_run(const struct rk_tui_options *opt, struct rk_error *err);

#endif
