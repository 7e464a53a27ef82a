#ifndef RK_WORKER_H
#define RK_WORKER_H
/* The background worker: it runs pending lifecycle commands. The CLI starts
 * one on demand; `rakazo worker` runs one in the foreground. One runs per
 * DATA_DIR (a lock file says which) unless every worker --joins: then
 * several share it, and workers on other hosts share a PostgreSQL state.
 * Each registers in the workers table and heart-beats from a thread; a
 * worker gone quiet (or whose pid is gone, on its host) loses its
 * command to the others: requeued, or outcome_unknown past the provider
 * call, never run twice. */

#include <stdint.h>

#include "engine/state/engine.h"

struct rk_worker_options {
	int64_t idle_exit_ms; /* exit after this long with nothing to do; 0 = never */
	int once;	      /* run what is pending, then return */
	volatile int *stop;   /* set by a signal handler to stop between commands */
	int join;	      /* share the data directory with other --join workers */
};

/* RK_ECONFLICT when another worker holds the lock. */
int rk_worker_run(struct rk_engine *eng, const struct rk_worker_options *opt, struct rk_error *err);
/* Starts a detached worker (`rakazo worker --idle-exit 30`) unless one runs. */
int rk_worker_ensure(struct rk_engine *eng, struct rk_error *err);
/* 1 when a worker holds the lock now. */
int rk_worker_running(struct rk_engine *eng);

#endif
