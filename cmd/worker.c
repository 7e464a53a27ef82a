/* rakazo worker: runs pending lifecycle commands in the foreground. */

#include <signal.h>
#include <string.h>

#include "engine/machine/worker.h"
#include "cmd.h"
#include "out.h"

static int once, join;
static int64_t idle_exit = 0;
static volatile int stop_requested;

static const struct rk_opt worker_opts[] = {
	OPT_BOOL("once", 0, &once, "run what is pending, then exit"),
	OPT_BOOL("join", 0, &join, "run alongside other --join workers of this data directory or database"),
	OPT_INT("idle-exit", 0, &idle_exit, "SECONDS", "exit after this long with nothing to do (0: never)", 0,
		86400 * 365),
	OPT_END,
};

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int run_worker(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)))
		return r;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	struct rk_worker_options opt = {.idle_exit_ms = idle_exit * 1000,
					.once = once,
					.stop = &stop_requested,
					.join = join};
	out_progress("rakazo worker: running commands for %s (Ctrl-C stops it)", ctx->eng->data_dir);
	r = rk_worker_run(ctx->eng, &opt, &ctx->err);
	if (r == 0 && stop_requested)
		return rk_error_set(&ctx->err, RK_EINTERRUPTED, "worker stopped by a signal");
	return r;
}

const struct cmd_entry cmd_worker = {
	.name = "worker",
	.args = "[--once] [--idle-exit SECONDS] [--join]",
	.summary = "run pending lifecycle commands in the foreground",
	.description = "The CLI starts a worker on demand, so this is only needed to watch one work or to run\n"
		       "one under a service manager. One worker runs per data directory; a second one exits\n"
		       "with the conflict status, unless every worker is started with --join: then several\n"
		       "share the data directory, or (RAKAZO_DATABASE_URL) one PostgreSQL state from several\n"
		       "hosts. Workers heart-beat every second; one unheard for 15 s (RAKAZO_WORKER_DEAD_MS),\n"
		       "or whose process is gone on this host, loses its command to the others: it goes back\n"
		       "to pending, or to outcome_unknown when a provider call was in flight; never twice.",
	.opts = worker_opts,
	.run = run_worker,
};
