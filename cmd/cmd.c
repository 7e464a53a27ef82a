/* The helpers every command calls: the engine handle, the target resolver
 * as the caller sees it, argument counts. Kept out of main.c so that the
 * commands depend on this file and main.c on the commands, not both ways. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "cmd.h"

int cmd_engine(struct cmd_ctx *ctx)
{
	if (ctx->eng)
		return 0;
	return rk_engine_open(&ctx->eng, &ctx->err);
}

int cmd_target(struct cmd_ctx *ctx, const char *ref, const char *capability, struct rk_computer *c)
{
	struct rk_actor a;
	int r = cmd_engine(ctx);
	memset(c, 0, sizeof(*c));
	if (r || (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	r = rk_authz_resolve(ctx->eng, &a, ref, capability, c, &ctx->err);
	rk_actor_release(&a);
	return r;
}

int cmd_target_screen(struct cmd_ctx *ctx, const char *ref, const char *capability, struct rk_computer *c,
		      const char **bot, int64_t *display)
{
	static char *target_bot; /* what *bot points at, for the life of the command */
	struct rk_actor a;
	struct rk_target t;
	int r = cmd_engine(ctx);
	memset(c, 0, sizeof(*c));
	if (r || (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	r = rk_target_resolve(ctx->eng, &a, ref, capability, &t, &ctx->err);
	rk_actor_release(&a);
	if (r)
		return r;
	if (t.bot && *bot && strcmp(t.bot, *bot))
		r = rk_error_set(&ctx->err, RK_EUSAGE, "'%s' names bot %s's screen: leave out --bot %s", ref, t.bot,
				 *bot);
	else if (t.display >= 0 && *display && t.display != *display)
		r = rk_error_set(&ctx->err, RK_EUSAGE, "'%s' names display %d: leave out --display", ref, t.display);
	if (r) {
		rk_target_release(&t);
		return r;
	}
	if (t.bot) {
		free(target_bot);
		*bot = target_bot = t.bot;
		t.bot = NULL;
	}
	if (t.display >= 0)
		*display = t.display;
	*c = t.computer;
	return 0;
}

int cmd_may_use(struct cmd_ctx *ctx, const struct rk_computer *c)
{
	struct rk_actor a;
	if (cmd_engine(ctx) || rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err))
		return 0;
	int ok = rk_authz_may_use(ctx->eng, &a, c);
	rk_actor_release(&a);
	return ok;
}

int cmd_sink_open(struct cmd_ctx *ctx, struct cmd_sink *s, const char *path, const char *what)
{
	s->fd = 1;
	s->to_file = path && strcmp(path, "-");
	if (!s->to_file)
		return isatty(1) ? rk_error_set(&ctx->err, RK_EUSAGE,
						"refusing to write %s to a terminal: use -o FILE or a pipe", what)
				 : 0;
	int r = rk_fs_output_open(&s->out, path, 0600, &ctx->err);
	if (r == 0)
		s->fd = s->out.fd;
	return r;
}

int cmd_sink_close(struct cmd_ctx *ctx, struct cmd_sink *s, int r)
{
	if (!s->to_file)
		return r;
	if (r == 0)
		return rk_fs_output_commit(&s->out, &ctx->err);
	rk_fs_output_abort(&s->out);
	return r;
}

int cmd_want_args(struct cmd_ctx *ctx, int min, int max, const char *what)
{
	if (ctx->nargs < min)
		return rk_error_set(&ctx->err, RK_EUSAGE, "missing %s", what);
	if (max >= 0 && ctx->nargs > max)
		return rk_error_set(&ctx->err, RK_EUSAGE, "unexpected argument '%s' (expected %s)", ctx->args[max],
				    what);
	return 0;
}
