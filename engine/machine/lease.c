#include "engine/machine/lease.h"

#include "engine/machine/reservation.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

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
	    (r = rk_db_lease_acquire(eng->db, computer_id, bot_id, holder, ttl_ms, rk_now_ms(), out, err)) ||
	    (r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		rk_lease_release_record(out);
	}
	return r;
}

static int in_txn(struct rk_engine *eng, int r, struct rk_error *err)
{
	if (r == 0)
		r = rk_db_commit(eng->db, err);
	if (r)
		rk_db_rollback(eng->db);
	return r;
}

int rk_lease_renew(struct rk_engine *eng, const char *computer_id, const char *bot_id, int64_t fence,
		   int64_t ttl_ms, struct rk_error *err)
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
	return in_txn(eng, rk_db_lease_fenced_write(eng->db, computer_id, bot_id, fence, what, rk_now_ms(), err),
		      err);
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
