#ifndef RK_CMD_H
#define RK_CMD_H
/* The command table: each cmd/<name>.c exports one struct cmd_entry; main.c
 * lists them. A command either runs itself or has verbs (`computer create`). */

#include <stdint.h>

#include "engine/state/engine.h"
#include "engine/util/err.h"
#include "engine/util/fs.h"
#include "opt.h"

struct cmd_ctx {
	char **args; /* positional arguments (after the verb) */
	int nargs;
	struct rk_error err;
	struct rk_engine *eng; /* opened on first use by cmd_engine() */
};

/* Returns 0, or a negative rk code with ctx->err filled. */
typedef int (*cmd_fn)(struct cmd_ctx *ctx);

struct cmd_verb {
	const char *name;
	const char *args; /* "COMPUTER [PATH]" */
	const char *summary;
	const struct rk_opt *opts;
	cmd_fn run;
	const struct cmd_verb *verbs; /* a verb with verbs of its own (`execution show`) */
};

struct cmd_entry {
	const char *name;
	const char *args;
	const char *summary;
	const char *description; /* a paragraph for --help */
	const struct rk_opt *opts;
	cmd_fn run;		      /* NULL when the command has verbs */
	const struct cmd_verb *verbs; /* NULL-name terminated */
};

int cmd_engine(struct cmd_ctx *ctx);
/* The one resolver on the command line (engine/access/authz.h rk_authz_resolve):
 * the computer ref names, as the caller sees it (RAKAZO_USER in
 * RAKAZO_SPACE, a bot with RAKAZO_OWNER=bot:NAME), when the caller may do
 * capability ("computers.use", ...; NULL: found only) on it. Another
 * space's computer is not_found, one without the right denied (exit 8).
 * Opens the engine; release c with rk_computer_release. */
int cmd_target(struct cmd_ctx *ctx, const char *ref, const char *capability, struct rk_computer *c);
/* cmd_target for a command on a screen: ref may also be COMPUTER:BOT (the
 * bot's screen) or COMPUTER:.N (display N). *bot and *display hold the
 * --bot and --display flags; the target's screen fills them, and a
 * different screen named both ways is a usage error. */
int cmd_target_screen(struct cmd_ctx *ctx, const char *ref, const char *capability, struct rk_computer *c,
		      const char **bot, int64_t *display);
/* 1 when the caller may use c (what lists show). */
int cmd_may_use(struct cmd_ctx *ctx, const struct rk_computer *c);
/* RK_EUSAGE unless min <= nargs <= max (max < 0: any). */
int cmd_want_args(struct cmd_ctx *ctx, int min, int max, const char *what);

/* Where a verb writes a binary stream (an archive): the file path, written
 * whole or not at all, or stdout when path is NULL or "-", refused when
 * stdout is a terminal (what names the stream in that message). */
struct cmd_sink {
	int fd, to_file;
	struct rk_fs_output out;
};
int cmd_sink_open(struct cmd_ctx *ctx, struct cmd_sink *s, const char *path, const char *what);
/* Keeps the file when r is 0, else removes it; returns r or the commit's failure. */
int cmd_sink_close(struct cmd_ctx *ctx, struct cmd_sink *s, int r);

extern const struct cmd_entry *const cmd_table[];
const struct cmd_entry *cmd_find(const char *name);

#endif
