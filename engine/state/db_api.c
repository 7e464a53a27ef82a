/* The API's tables (migration 6 in db.c): tokens, rights, and reading
 * usage records, through db.h's statement helpers. */

#include "engine/state/db_api.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

/* --- tokens ------------------------------------------------------------------------ */

#define TOKEN_COLS "id, name, bot_id, created_at, coalesce(last_used_at,0), coalesce(revoked_at,0)"

void rk_api_token_release(struct rk_api_token *t)
{
	if (!t)
		return;
	free(t->id);
	free(t->name);
	free(t->bot_id);
	memset(t, 0, sizeof(*t));
}

static void token_from_row(struct rk_stmt *st, struct rk_api_token *t)
{
	t->id = rk_db_col_text(st, 0);
	t->name = rk_db_col_text(st, 1);
	t->bot_id = rk_db_col_text(st, 2);
	t->created_at = rk_stmt_column_int64(st, 3);
	t->last_used_at = rk_stmt_column_int64(st, 4);
	t->revoked_at = rk_stmt_column_int64(st, 5);
}

static int valid_label(const char *s, size_t max)
{
	if (!s || !*s || strlen(s) > max)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return 0;
	return 1;
}

int rk_api_token_create(struct rk_db *db, const char *name, const char *bot_id, char **secret, struct rk_api_token *out,
			struct rk_error *err)
{
	if (!valid_label(name, 64))
		return rk_error_set(err, RK_EINVALID, "a token name is 1 to 64 letters, digits, '-', '_' or '.'");
	if (bot_id && !valid_label(bot_id, 64))
		return rk_error_set(err, RK_EINVALID, "a bot id is 1 to 64 letters, digits, '-', '_' or '.'");
	unsigned char raw[32];
	rk_random_bytes(raw, sizeof(raw));
	char hexs[65], hash[65];
	sodium_bin2hex(hexs, sizeof(hexs), raw, sizeof(raw));
	rk_sha256_hex(hexs, 64, hash);
	char *id = rk_id_new("tok");
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO api_tokens (id, name, secret_hash, bot_id, created_at) "
					   "SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT EXISTS "
					   "(SELECT 1 FROM api_tokens WHERE name = ?2 AND revoked_at IS NULL)",
					   err);
	if (!st) {
		free(id);
		return -rk_err(err)->code;
	}
	int64_t now = rk_now_ms();
	rk_stmt_bind_text(st, 1, id, -1);
	rk_stmt_bind_text(st, 2, name, -1);
	rk_stmt_bind_text(st, 3, hash, -1);
	rk_db_bind_text(st, 4, bot_id);
	rk_stmt_bind_int64(st, 5, now);
	int r = rk_db_step_done(db, st, "create token", err);
	if (r == 0 && rk_db_changes(db) == 0)
		r = rk_error_set(err, RK_ECONFLICT, "a live token is already named '%s' (revoke it first)", name);
	if (r) {
		free(id);
		return r;
	}
	*secret = rk_xasprintf("%s.%s", id, hexs);
	sodium_memzero(hexs, sizeof(hexs));
	memset(out, 0, sizeof(*out));
	out->id = id;
	out->name = rk_xstrdup(name);
	out->bot_id = rk_xstrdup(bot_id);
	out->created_at = now;
	return 0;
}

static void token_row(struct rk_stmt *st, void *t)
{
	token_from_row(st, t);
}
static void token_free(void *t)
{
	rk_api_token_release(t);
}

int rk_api_token_list(struct rk_db *db, struct rk_api_token **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY created_at, id", err);
	if (!st)
		return -rk_err(err)->code;
	return rk_db_collect(db, st, sizeof(**out), token_row, token_free, (void **)out, n, "list tokens", err);
}

static int token_get(struct rk_db *db, const char *sql, const char *key, struct rk_api_token *out, char **hash,
		     struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, key, -1);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		memset(out, 0, sizeof(*out));
		token_from_row(st, out);
		if (hash)
			*hash = rk_db_col_text(st, 6);
	} else if (rc == RK_SQL_DONE) {
		r = rk_error_set(err, RK_ENOTFOUND, "no live token '%s'", key);
	} else {
		r = rk_db_sql_error(db, err, "read token");
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_api_token_revoke(struct rk_db *db, const char *id_or_name, struct rk_api_token *out, struct rk_error *err)
{
	int r = token_get(db,
			  "SELECT " TOKEN_COLS " FROM api_tokens WHERE (id = ?1 OR name = ?1) AND revoked_at IS NULL",
			  id_or_name, out, NULL, err);
	if (r)
		return r;
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE api_tokens SET revoked_at = ?2 WHERE id = ?1", err);
	if (!st) {
		rk_api_token_release(out);
		return -rk_err(err)->code;
	}
	out->revoked_at = rk_now_ms();
	rk_stmt_bind_text(st, 1, out->id, -1);
	rk_stmt_bind_int64(st, 2, out->revoked_at);
	if ((r = rk_db_step_done(db, st, "revoke token", err)))
		rk_api_token_release(out);
	return r;
}

int rk_api_token_live(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "SELECT 1 FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL", err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, id, -1);
	int rc = rk_stmt_step(st), r = rc == RK_SQL_ROW ? 1 : 0;
	if (rc != RK_SQL_ROW && rc != RK_SQL_DONE)
		r = rk_db_sql_error(db, err, "read token");
	rk_stmt_finalize(st);
	return r;
}

int rk_api_token_verify(struct rk_db *db, const char *secret, struct rk_api_token *out, struct rk_error *err)
{
	const char *dot = secret ? strchr(secret, '.') : NULL;
	char given[65];
	/* hash whatever came, so a wrong id costs the same as a wrong secret */
	rk_sha256_hex(dot ? dot + 1 : "", dot ? strlen(dot + 1) : 0, given);
	if (!dot || dot == secret || (size_t)(dot - secret) > 64)
		return rk_error_set(err, RK_EDENIED, "the bearer token is malformed");
	char *id = rk_xstrndup(secret, (size_t)(dot - secret));
	char *hash = NULL;
	struct rk_error e2;
	int r = token_get(db, "SELECT " TOKEN_COLS ", secret_hash FROM api_tokens WHERE id = ?1 AND revoked_at IS NULL",
			  id, out, &hash, &e2);
	free(id);
	if (r) {
		static const char zeros[65] = "0000000000000000000000000000000000000000000000000000000000000000";
		volatile int same = sodium_memcmp(given, zeros, 64);
		(void)same;
		if (e2.code != RK_ENOTFOUND)
			return rk_error_set(err, e2.code, "%s", e2.message);
		return rk_error_set(err, RK_EDENIED, "the bearer token is not known or was revoked");
	}
	int same = hash && strlen(hash) == 64 && sodium_memcmp(given, hash, 64) == 0;
	free(hash);
	if (!same) {
		rk_api_token_release(out);
		return rk_error_set(err, RK_EDENIED, "the bearer token is not known or was revoked");
	}
	/* at most one write a minute per token: reads stay reads under load */
	int64_t now = rk_now_ms();
	if (now - out->last_used_at > 60000) {
		struct rk_stmt *st = rk_db_prepare(db, "UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1", NULL);
		if (st) {
			rk_stmt_bind_text(st, 1, out->id, -1);
			rk_stmt_bind_int64(st, 2, now);
			rk_db_step_done(db, st, "touch token", NULL);
			out->last_used_at = now;
		}
	}
	return 0;
}


cJSON *rk_api_token_to_json(const struct rk_api_token *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", t->id);
	cJSON_AddStringToObject(o, "name", t->name);
	if (t->bot_id)
		cJSON_AddStringToObject(o, "bot_id", t->bot_id);
	else
		cJSON_AddNullToObject(o, "bot_id");
	rk_json_add_time(o, "created_at", t->created_at);
	rk_json_add_time(o, "last_used_at", t->last_used_at);
	rk_json_add_time(o, "revoked_at", t->revoked_at);
	return o;
}

/* --- rights -------------------------------------------------------------------------- */

void rk_api_right_release(struct rk_api_right *r)
{
	if (!r)
		return;
	free(r->computer_id);
	free(r->bot_id);
	free(r->granted_by);
	memset(r, 0, sizeof(*r));
}

static void right_from_row(struct rk_stmt *st, struct rk_api_right *r)
{
	r->computer_id = rk_db_col_text(st, 0);
	r->bot_id = rk_db_col_text(st, 1);
	r->granted_by = rk_db_col_text(st, 2);
	r->created_at = rk_stmt_column_int64(st, 3);
}

int rk_api_right_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *granted_by,
		     struct rk_api_right *out, struct rk_error *err)
{
	if (!valid_label(bot_id, 64))
		return rk_error_set(err, RK_EINVALID, "a bot id is 1 to 64 letters, digits, '-', '_' or '.'");
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO computer_rights (computer_id, bot_id, granted_by, created_at) "
					   "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (computer_id, bot_id) DO NOTHING",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, computer_id, -1);
	rk_stmt_bind_text(st, 2, bot_id, -1);
	rk_stmt_bind_text(st, 3, granted_by, -1);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	int r = rk_db_step_done(db, st, "grant right", err);
	return r ? r : rk_api_right_get(db, computer_id, bot_id, out, err);
}

int rk_api_right_get(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_api_right *out,
		     struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT computer_id, bot_id, granted_by, created_at FROM computer_rights "
					   "WHERE computer_id = ?1 AND bot_id = ?2",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, computer_id, -1);
	rk_stmt_bind_text(st, 2, bot_id, -1);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		memset(out, 0, sizeof(*out));
		right_from_row(st, out);
	} else if (rc == RK_SQL_DONE) {
		r = rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no right to computer %s", bot_id, computer_id);
	} else {
		r = rk_db_sql_error(db, err, "read right");
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_api_right_delete(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM computer_rights WHERE computer_id = ?1 AND bot_id = ?2",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, computer_id, -1);
	rk_stmt_bind_text(st, 2, bot_id, -1);
	int r = rk_db_step_done(db, st, "take right", err);
	if (r == 0 && rk_db_changes(db) == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no right to computer %s", bot_id, computer_id);
	return r;
}

static void right_row(struct rk_stmt *st, void *r)
{
	right_from_row(st, r);
}
static void right_free(void *r)
{
	rk_api_right_release(r);
}

int rk_api_right_list(struct rk_db *db, const char *computer_id, struct rk_api_right **out, size_t *n,
		      struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT computer_id, bot_id, granted_by, created_at FROM computer_rights "
					   "WHERE computer_id = ?1 ORDER BY created_at, bot_id",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, computer_id, -1);
	return rk_db_collect(db, st, sizeof(**out), right_row, right_free, (void **)out, n, "list rights", err);
}

int rk_api_usage_list(struct rk_db *db, const char *computer_id, int64_t **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "SELECT started_at, coalesce(ended_at, 0) FROM usage_records WHERE computer_id = ?1 "
			      "ORDER BY id",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_text(st, 1, computer_id, -1);
	size_t cap = 16, count = 0;
	int64_t *arr = rk_xcalloc(cap, sizeof(*arr));
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (count + 2 > cap) {
			cap *= 2;
			arr = rk_xrealloc(arr, cap * sizeof(*arr));
		}
		arr[count++] = rk_stmt_column_int64(st, 0);
		arr[count++] = rk_stmt_column_int64(st, 1);
	}
	int r = rc == RK_SQL_DONE ? 0 : rk_db_sql_error(db, err, "list usage");
	rk_stmt_finalize(st);
	if (r) {
		free(arr);
		return r;
	}
	*out = arr;
	*n = count / 2;
	return 0;
}

/* --- paired machines ------------------------------------------------------------------- */

int rk_api_pair_create(struct rk_db *db, const char *name, const char *owner, char **computer_id, char **secret,
		       struct rk_error *err)
{
	if (!valid_label(name, 64))
		return rk_error_set(err, RK_EINVALID, "a machine's name is 1 to 64 letters, digits, '-', '_' or '.'");
	unsigned char raw[32];
	rk_random_bytes(raw, sizeof(raw));
	char hexs[65], hash[65];
	sodium_bin2hex(hexs, sizeof(hexs), raw, sizeof(raw));
	rk_sha256_hex(hexs, 64, hash);
	char *id = rk_id_new("cmp");
	int64_t now = rk_now_ms();
	struct rk_computer c = {.id = id,
				.name = (char *)name,
				.kind = "paired",
				.provider_ref = id,
				.home_key = id,
				.state = "offline",
				.mode = "private",
				.owner = (char *)owner,
				.desktop = 0,
				.pause_after = -1,
				.revisions_kept = 1,
				.created_at = now,
				.updated_at = now};
	int r = rk_db_begin(db, err);
	if (r == 0 && (r = rk_db_computer_insert(db, &c, err)) == 0) {
		struct rk_stmt *st = rk_db_prepare(
			db, "INSERT INTO paired_machines (computer_id, secret_hash, created_at) VALUES (?1, ?2, ?3)",
			err);
		if (!st) {
			r = -rk_err(err)->code;
		} else {
			rk_stmt_bind_text(st, 1, id, -1);
			rk_stmt_bind_text(st, 2, hash, -1);
			rk_stmt_bind_int64(st, 3, now);
			r = rk_db_step_done(db, st, "pair machine", err);
		}
	}
	if (r == 0)
		r = rk_db_commit(db, err);
	if (r) {
		rk_db_rollback(db);
		free(id);
		return r;
	}
	*secret = rk_xasprintf("%s.%s", id, hexs);
	sodium_memzero(hexs, sizeof(hexs));
	*computer_id = id;
	return 0;
}

int rk_api_pair_verify(struct rk_db *db, const char *secret, char **computer_id, struct rk_error *err)
{
	const char *dot = secret ? strchr(secret, '.') : NULL;
	char given[65];
	rk_sha256_hex(dot ? dot + 1 : "", dot ? strlen(dot + 1) : 0, given);
	if (!dot || dot == secret || (size_t)(dot - secret) > 64)
		return rk_error_set(err, RK_EDENIED, "the machine secret is malformed");
	char *id = rk_xstrndup(secret, (size_t)(dot - secret));
	struct rk_stmt *st = rk_db_prepare(db, "SELECT secret_hash FROM paired_machines WHERE computer_id = ?1", err);
	if (!st) {
		free(id);
		return -rk_err(err)->code;
	}
	rk_stmt_bind_text(st, 1, id, -1);
	int same = 0;
	if (rk_stmt_step(st) == RK_SQL_ROW) {
		const char *h = (const char *)rk_stmt_column_text(st, 0);
		same = h && strlen(h) == 64 && sodium_memcmp(given, h, 64) == 0;
	}
	rk_stmt_finalize(st);
	if (!same) {
		free(id);
		return rk_error_set(err, RK_EDENIED, "the machine secret is not known");
	}
	*computer_id = id;
	return 0;
}

int rk_api_pair_reset(struct rk_db *db, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "UPDATE computers SET state = 'offline' WHERE kind = 'paired' AND state = 'running'", err);
	if (!st)
		return -(int)rk_err(err)->code;
	return rk_db_step_done(db, st, "reset paired machines", err);
}
