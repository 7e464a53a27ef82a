#ifndef RK_DB_WORKER_H
#define RK_DB_WORKER_H
/* The workers table (engine/machine/worker.h): who runs lifecycle commands,
 * from which host and process, last heard when. Its SQL lives here; the
 * rules (when a worker counts as dead, what happens to its commands) stay
 * in engine/machine/worker.c. Strings in a record are malloc'd and owned by
 * it. */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

struct rk_worker_row {
	char *id, *host_key; /* host_key: engine/util/host.h */
	int64_t pid, heartbeat_at;
};
void rk_worker_row_release(struct rk_worker_row *w);
void rk_worker_rows_free(struct rk_worker_row *rows, size_t n);

/* Registers worker id, process pid on host (host_key), started and heard now_ms. */
int rk_db_worker_insert(struct rk_db *db, const char *id, const char *host, const char *host_key, int64_t pid,
			int64_t now_ms, struct rk_error *err);
/* Worker id heard at now_ms: 1 when its row was there to touch, 0 when it
 * is gone, < 0 on failure. */
int rk_db_worker_heartbeat(struct rk_db *db, const char *id, int64_t now_ms, struct rk_error *err);
int rk_db_worker_delete(struct rk_db *db, const char *id, struct rk_error *err);
/* 1 with worker id's host_key, pid and heartbeat_at in *out, 0 when there
 * is no such row (or the read failed), < 0 when the query cannot be made. */
int rk_db_worker_get(struct rk_db *db, const char *id, struct rk_worker_row *out, struct rk_error *err);
/* Every worker; *out malloc'd. */
int rk_db_worker_list(struct rk_db *db, struct rk_worker_row **out, size_t *n, struct rk_error *err);

#endif
