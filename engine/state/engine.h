#ifndef RK_ENGINE_H
#define RK_ENGINE_H
/* The engine handle: the data directory, the database and who is acting.
 * cmd/ and tui/ open one per process with rk_engine_open. */

#include "engine/state/db.h"
#include "engine/util/ipc.h"
#include "engine/util/err.h"

struct rk_engine {
	char *data_dir;
	struct rk_db *db;
	char *owner;   /* who acts: RAKAZO_OWNER, else "user:<login>" */
	char *self_exe; /* path of the rakazo binary, for spawning the worker and holders */
};

/* DATA_DIR: RAKAZO_DATA_DIR, else $XDG_DATA_HOME/rakazo, else ~/.local/share/rakazo. malloc'd. */
char *rk_data_dir_resolve(void);
int rk_engine_open(struct rk_engine **out, struct rk_error *err);
void rk_engine_free(struct rk_engine *eng);

/* Starts a detached helper process (rk_ipc_spawn). SQLite must not live on
 * in a forked child, so the database is closed around the fork and opened
 * again; the helper opens its own. */
int rk_engine_spawn(struct rk_engine *eng, rk_ipc_main_fn fn, void *arg, struct rk_error *err);

#endif
