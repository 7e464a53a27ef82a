#include "engine/machine/lease.h"

#include <string.h>

#include "engine/machine/reservation.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

/* In the caller's transaction: the lease goes to holder when it is free,
 * expired or already holder's, and its fence grows by one; a live lease of
 * another holder is RK_ECONFLICT, naming it. */
static int take(struct rk_db *db, const char *computer_id, const char *bot_id, const char *holder, int64_t ttl_ms,
		int64_t now_ms, struct rk_lease *out, struct rk_error *err)
{
	struct rk_lease cur = {0};
	struct rk_error e2;
	int r = rk_db_lease_get(db, computer_id, bot_id, &cur, &e2);
	if (r && e2.code != RK_ENOTFOUND)
		return rk_error_set(err, e2.code, "%s", e2.message);
	if (r == 0 && cur.holder && cur.expires_at > now_ms && strcmp(cur.holder, holder) != 0) {
		r = rk_error_set(err, RK_ECONFLICT, "bot '%s' on computer '%s' is leased by '%s' until %lld", bot_id,
				 computer_id, cur.holder, (long long)cur.expires_at);
		rk_lease_release_record(&cur);
		return r;
	}
	int64_t fence = cur.fence + 1;
	rk_lease_release_record(&cur);
	if ((r = rk_db_lease_put(db, computer_id, bot_id, holder, fence, now_ms + ttl_ms, now_ms, err)))
		return r;
	if (out) {
		out->computer_id = rk_xstrdup(computer_id);
		out->bot_id = rk_xstrdup(bot_id);
		out->holder = rk_xstrdup(holder);
		out->fence = fence;
		out->expires_at = now_ms + ttl_ms;
	}
	return 0;
}

int rk_lease_acquire(struct rk_engine *eng, const char *computer_id, const char *bot_id, const char *holder,
		     int64_t ttl_ms, struct rk_lease *out, struct rk_error *err)
{
	if (ttl_ms < 1000 || ttl_ms > 24LL * 3600 * 1000)
		return rk_error_set(err, RK_EINVALID, "lease ttl must be from 1000 ms to 24 h");
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	/* an update or recovery job's reservation excludes new leases (issue 8) */
	if ((r = rk_reservation_check(eng->db, computer_id, err)) ||
	    (r = take(eng->db, computer_id, bot_id, holder, ttl_ms, rk_now_ms(), out, err)) ||
	    (r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		rk_lease_release_record(out);
	}
	return r;
}

int rk_lease_check(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
		   struct rk_error *err)
{
	struct rk_lease cur = {0};
	int r = rk_db_lease_get(eng->db, computer_id, bot_id, &cur, err);
	if (r)
		return r == -RK_ENOTFOUND ? rk_error_set(err, RK_ESTALE, "no live lease for bot '%s'", bot_id) : r;
	int live = cur.fence == fence && cur.holder && cur.expires_at > rk_now_ms();
	rk_lease_release_record(&cur);
	if (!live)
		return rk_error_set(err, RK_ESTALE,
				    "lease token %lld for bot '%s' on computer '%s' is stale: another holder took it",
				    (long long)fence, bot_id, computer_id);
	return 0;
}

static int in_txn(struct rk_engine *eng, int r, struct rk_error *err)
{
	if (r == 0)
		r = rk_db_commit(eng->db, err);
	if (r)
		rk_db_rollback(eng->db);
	return r;
}

int rk_lease_renew(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence, int64_t ttl_ms,
		   struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	return in_txn(eng, rk_db_lease_renew(eng->db, computer_id, bot_id, fence, ttl_ms, rk_now_ms(), err), err);
}

int rk_lease_release(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
		     struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	return in_txn(eng, rk_db_lease_drop(eng->db, computer_id, bot_id, fence, err), err);
}

int rk_lease_fenced_write(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
			  const char *what, struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	return in_txn(eng, rk_db_lease_fenced_write(eng->db, computer_id, bot_id, fence, what, rk_now_ms(), err), err);
}

cJSON *rk_lease_to_json(const struct rk_lease *l)
{
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "computer_id", l->computer_id);
	cJSON_AddStringToObject(o, "bot_id", l->bot_id);
	rk_json_add_str_or_null(o, "holder", l->holder);
	cJSON_AddNumberToObject(o, "fence", (double)l->fence);
	if (l->expires_at)
		cJSON_AddStringToObject(o, "expires_at", rk_iso8601(l->expires_at, buf, sizeof(buf)));
	else
		cJSON_AddNullToObject(o, "expires_at");
	return o;
}
