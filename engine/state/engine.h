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
	char *owner;	/* who acts: RAKAZO_OWNER, else "user:<login>" */
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

/* --- what `rakazo doctor` reports about the state ------------------------------ */

/* Where the state lives, named before it is opened, so that a check that
 * fails says where it looked (malloc'd): "postgresql: URL
 * (RAKAZO_DATABASE_URL)", the URL without its password, or "sqlite: ...". */
char *rk_engine_backend(void);
struct rk_engine_health {
	const char *path;	/* the database's (eng->db's) */
	int pg;			/* PostgreSQL, else SQLite */
	char *integrity;	/* "ok" when sound */
	char *mode;		/* SQLite's journal mode, PostgreSQL's server version, or "... unknown (why)" */
	int schema, migrations; /* the schema version, of how many */
};
/* What the database says of itself (not what was asked at open). An error
 * when the integrity check cannot run. Release with rk_engine_health_release. */
int rk_engine_health(struct rk_engine *eng, struct rk_engine_health *out, struct rk_error *err);
void rk_engine_health_release(struct rk_engine_health *h);
/* The SQL client libraries' versions. */
const char *rk_engine_sqlite_version(void);
const char *rk_engine_pg_version(void);

#endif
