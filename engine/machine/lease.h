#ifndef RK_LEASE_H
#define RK_LEASE_H
/* Fenced execution leases per (computer, bot): acquire bumps a fencing token
 * that only grows, and every write that carries an older token is refused. */

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"

#define RK_LEASE_DEFAULT_TTL_MS (5 * 60 * 1000)

int rk_lease_acquire(struct rk_engine *eng, const char *computer_id, const char *bot_id, const char *holder,
		     int64_t ttl_ms, struct rk_lease *out, struct rk_error *err);
int rk_lease_renew(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence, int64_t ttl_ms,
		   struct rk_error *err);
int rk_lease_release(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
		     struct rk_error *err);
/* 0 when fence is the live token of (computer, bot) now; RK_ESTALE otherwise. */
int rk_lease_check(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
		   struct rk_error *err);
/* A write guarded by the fence (recorded in lease_writes); RK_ESTALE when superseded. */
int rk_lease_fenced_write(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
			  const char *what, struct rk_error *err);
cJSON *rk_lease_to_json(const struct rk_lease *l);

#endif
