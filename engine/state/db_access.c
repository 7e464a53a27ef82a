/* The access wing's tables: their SQL (see db_access.h), through db.h's
 * statement helpers. */

#include "engine/state/db_access.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

/* Binds the n strings v (each a copy, or NULL) as parameters first, first + 1 ... */
static void bind_texts(struct rk_stmt *st, int first, const char *const *v, int n)
{
	for (int i = 0; i < n; i++)
		rk_db_bind_text(st, first + i, v[i]);
}
#define BIND_TEXTS(st, first, ...)                                                                                     \
	bind_texts(st, first, (const char *const[]){__VA_ARGS__},                                                      \
		   (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

/* --- spaces ------------------------------------------------------------- */

int rk_db_space_insert(struct rk_db *db, const char *id, const char *description, const char *created_by,
		       const char *run_id, int64_t created_at, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO spaces (id, description, created_by, run_id, created_at) "
					   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, id, description, created_by, run_id);
	rk_stmt_bind_int64(st, 5, created_at);
	int r = rk_db_step_done(db, st, "create the space", err);
	return r ? r : rk_db_changes(db) > 0;
}

int rk_db_space_list(struct rk_db *db, cJSON **out, struct rk_error *err)
{
	/* the recorded spaces, and every space a computer lives in (used by name) */
	struct rk_stmt *st = rk_db_prepare(
		db,
		"WITH names(id) AS (SELECT 'default' UNION SELECT id FROM spaces UNION SELECT space_id FROM computer_access) "
		"SELECT n.id, s.description, s.created_by, s.run_id, s.created_at, "
		"  (SELECT count(*) FROM computers c LEFT JOIN computer_access ca ON ca.computer_id = c.id "
		"   WHERE coalesce(ca.space_id, 'default') = n.id AND c.state != 'deleted') "
		"FROM names n LEFT JOIN spaces s ON s.id = n.id ORDER BY n.id != 'default', n.id",
		err);
	if (!st)
		return -rk_err(err)->code;
	static const struct rk_db_json_col cols[] = {{"id", 's'},
						     {"description", 's'},
						     {"created_by", 's'},
						     {"run_id", 's'},
						     {"created_at", 't'},
						     {"computers", 'i'},
						     {0}};
	return rk_db_json_rows(db, st, cols, "list spaces", out, err);
}

/* --- computer_access ------------------------------------------------------ */

int rk_db_computer_access_insert(struct rk_db *db, const char *computer_id, const char *space, const char *owner,
				 struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO computer_access (computer_id, space_id, owner) VALUES (?, ?, ?) "
					   "ON CONFLICT (computer_id) DO NOTHING",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, computer_id, space, owner);
	return rk_db_step_done(db, st, "record the computer's space", err);
}

int rk_db_computer_access_get(struct rk_db *db, const char *computer_id, char **space, char **owner,
			      struct rk_error *err)
{
	*space = *owner = NULL;
	struct rk_stmt *st = rk_db_prepare(db, "SELECT space_id, owner FROM computer_access WHERE computer_id = ?",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		*space = rk_db_col_text(st, 0);
		*owner = rk_db_col_text(st, 1);
	} else if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "read the computer's space");
	}
	rk_stmt_finalize(st);
	return r;
}

/* --- approval rules ------------------------------------------------------- */

#define SHARED_USER RK_APPROVAL_SHARED_USER

int rk_db_approval_rule_insert(struct rk_db *db, const struct rk_approval_rule_row *r, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "INSERT INTO approval_rules (id, space_id, user_id, effect, match, value, "
					   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, r->id, r->space_id, r->user_id, r->effect, r->match, r->value);
	rk_stmt_bind_int64(st, 7, r->created_at);
	return rk_db_step_done(db, st, "add the rule", err);
}

int rk_db_approval_rule_list(struct rk_db *db, const char *space, const char *user, cJSON **out, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT id, effect, match, value, user_id = '" SHARED_USER
					   "', space_id, created_at "
					   "FROM approval_rules WHERE space_id = ? AND user_id IN (?, '" SHARED_USER
					   "') "
					   "ORDER BY CASE match WHEN 'tool' THEN 0 WHEN 'connector' THEN 1 ELSE 2 END, "
					   "value, effect",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, space);
	rk_db_bind_text(st, 2, user);
	static const struct rk_db_json_col cols[] = {{"id", 's'},	  {"effect", 's'},
						     {"match", 's'},	  {"value", 's'},
						     {"shared", 'b'},	  {"space", 's'},
						     {"created_at", 't'}, {0}};
	return rk_db_json_rows(db, st, cols, "list rules", out, err);
}

int rk_db_approval_rule_delete(struct rk_db *db, const char *id, const char *space, const char *user,
			       struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "DELETE FROM approval_rules WHERE id = ? AND space_id = ? AND user_id IN (?, '" SHARED_USER "')",
		err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, id, space, user);
	int r = rk_db_step_done(db, st, "remove the rule", err);
	return r ? r : (int)rk_db_changes(db);
}

int rk_db_approval_rule_find(struct rk_db *db, const char *space, const char *user, const char *match,
			     const char *value, char **id, char **effect, struct rk_error *err)
{
	*id = *effect = NULL;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT id, effect FROM approval_rules WHERE space_id = ? AND "
					   "user_id IN (?, '" SHARED_USER "') AND match = ? AND value = ? "
					   "ORDER BY effect = 'require_approval' DESC, created_at LIMIT 1",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, space, user, match, value);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		*id = rk_db_col_text(st, 0);
		*effect = rk_db_col_text(st, 1);
		r = 1;
	} else if (rc != RK_SQL_DONE) {
		r = rk_db_sql_error(db, err, "read rules");
	}
	rk_stmt_finalize(st);
	return r;
}

/* --- approvals ------------------------------------------------------------ */

int rk_db_approval_insert(struct rk_db *db, const struct rk_approval_row *r, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "INSERT INTO approvals (id, run_id, tool, arguments, reason, created_at, user_id) "
				    "VALUES (?, ?, ?, ?, ?, ?, ?)",
				    err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, r->id, r->run_id, r->tool, r->arguments, r->reason);
	rk_stmt_bind_int64(st, 6, r->created_at);
	rk_db_bind_text(st, 7, r->user_id);
	return rk_db_step_done(db, st, "record the approval", err);
}

int rk_db_approval_get(struct rk_db *db, const char *id, struct rk_approval_decided *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = rk_db_prepare(db, "SELECT state, note, decided_by FROM approvals WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		out->state = rk_db_col_text(st, 0);
		out->note = rk_db_col_text(st, 1);
		out->decided_by = rk_db_col_text(st, 2);
	} else {
		r = rc == RK_SQL_DONE ? rk_error_set(err, RK_ENOTFOUND, "approval %s is gone", id)
				      : rk_db_sql_error(db, err, "read the approval");
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_approval_pending_user(struct rk_db *db, const char *run_id, char **user_id, struct rk_error *err)
{
	*user_id = NULL;
	struct rk_stmt *st = rk_db_prepare(db, "SELECT user_id FROM approvals WHERE run_id = ? AND state = 'pending'",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	*user_id = rk_stmt_step(st) == RK_SQL_ROW ? rk_db_col_text(st, 0) : NULL;
	rk_stmt_finalize(st);
	return 0;
}

int rk_db_approval_decide(struct rk_db *db, const char *run_id, const char *state, const char *note,
			  const char *decided_by, int64_t decided_at, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "UPDATE approvals SET state = ?, note = ?, decided_by = ?, decided_at = ? "
					   "WHERE run_id = ? AND state = 'pending'",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, state, note, decided_by);
	rk_stmt_bind_int64(st, 4, decided_at);
	rk_db_bind_text(st, 5, run_id);
	int r = rk_db_step_done(db, st, "decide", err);
	return r ? r : (int)rk_db_changes(db);
}

int rk_db_approval_pending(struct rk_db *db, const char *run_id, cJSON **out, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT id, run_id, tool, arguments, reason, created_at FROM approvals "
					   "WHERE state = 'pending' AND (?1 IS NULL OR run_id = ?1) ORDER BY created_at",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, run_id);
	static const struct rk_db_json_col cols[] =
		{{"id", 's'}, {"run_id", 's'}, {"tool", 's'}, {"arguments", 's'}, {"reason", 's'}, {"created_at", 't'},
		 {0}};
	return rk_db_json_rows(db, st, cols, "list approvals", out, err);
}

int rk_db_run_swap_state(struct rk_db *db, const char *run_id, const char *from, const char *to, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE runs SET state = ? WHERE id = ? AND state = ?", err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, to, run_id, from);
	return rk_db_step_done(db, st, "set the run's state", err);
}

/* --- secrets -------------------------------------------------------------- */

void rk_secret_row_release(struct rk_secret_row *r)
{
	if (!r)
		return;
	char *strings[] = {r->id, r->user_id, r->space_id, r->bot_id, r->name, r->origin, r->auth, r->auth_param};
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		free(strings[i]);
	free(r->nonce);
	free(r->ciphertext);
	memset(r, 0, sizeof(*r));
}

void rk_secret_rows_free(struct rk_secret_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		rk_secret_row_release(&rows[i]);
	free(rows);
}

/* Column i, a blob, as a malloc'd copy (NULL and 0 when empty). */
static unsigned char *col_blob(struct rk_stmt *st, int i, size_t *len)
{
	int n = rk_stmt_column_bytes(st, i);
	*len = n > 0 ? (size_t)n : 0;
	if (!*len)
		return NULL;
	unsigned char *p = rk_xmalloc(*len);
	memcpy(p, rk_stmt_column_blob(st, i), *len);
	return p;
}

int rk_db_secret_put(struct rk_db *db, const struct rk_secret_seal *r, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		"INSERT INTO secrets (id, user_id, space_id, bot_id, name, origin, auth, auth_param, nonce, ciphertext, "
		"created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11) "
		"ON CONFLICT (user_id, space_id, bot_id, name) DO UPDATE SET origin = excluded.origin, "
		"auth = excluded.auth, auth_param = excluded.auth_param, nonce = excluded.nonce, "
		"ciphertext = excluded.ciphertext, updated_at = excluded.updated_at",
		err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, r->id, r->user_id, r->space_id, r->bot_id, r->name, r->origin, r->auth, r->auth_param);
	rk_stmt_bind_blob(st, 9, r->nonce, (int)r->nonce_len);
	rk_stmt_bind_blob(st, 10, r->ciphertext, (int)r->ciphertext_len);
	rk_stmt_bind_int64(st, 11, r->at);
	return rk_db_step_done(db, st, "store the secret", err);
}

int rk_db_secret_list(struct rk_db *db, const char *user, const char *space, cJSON **out, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		"SELECT name, nullif(bot_id, ''), origin, auth || coalesce(':' || auth_param, ''), 'set', created_at, "
		"updated_at, NULL FROM secrets WHERE user_id = ?1 AND space_id = ?2 "
		"UNION ALL SELECT q.name, nullif(q.bot_id, ''), q.origin, q.auth || coalesce(':' || q.auth_param, ''), "
		"'requested', q.created_at, "
		"q.created_at, q.reason FROM secret_requests q WHERE q.user_id = ?1 AND q.space_id = ?2 "
		"AND NOT EXISTS (SELECT 1 FROM secrets s WHERE s.user_id = q.user_id AND s.space_id = q.space_id "
		"AND s.name = q.name AND s.bot_id IN (q.bot_id, '')) "
		"AND q.rowid = (SELECT max(rowid) FROM secret_requests r WHERE r.user_id = q.user_id AND "
		"r.space_id = q.space_id AND r.name = q.name AND r.bot_id = q.bot_id) "
		"ORDER BY 1, 2",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, user);
	rk_db_bind_text(st, 2, space);
	static const struct rk_db_json_col cols[] = {{"name", 's'},	  {"bot", 's'},	   {"origin", 's'},
						     {"auth", 's'},	  {"state", 's'},  {"created_at", 't'},
						     {"updated_at", 't'}, {"reason", 's'}, {0}};
	return rk_db_json_rows(db, st, cols, "list secrets", out, err);
}

int rk_db_secret_delete(struct rk_db *db, const char *user, const char *space, const char *bot, const char *name,
			struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "DELETE FROM secrets WHERE user_id = ? AND space_id = ? AND bot_id = ? AND name = ?", err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, user, space, bot, name);
	int r = rk_db_step_done(db, st, "remove the secret", err);
	return r ? r : (int)rk_db_changes(db);
}

int rk_db_secret_find(struct rk_db *db, const char *user, const char *space, const char *name, const char *bot,
		      struct rk_secret_row *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT bot_id, origin, auth, auth_param, nonce, ciphertext FROM secrets "
					   "WHERE user_id = ? AND space_id = ? AND name = ? AND bot_id IN (?, '') "
					   "ORDER BY bot_id = '' LIMIT 1",
					   err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, user, space, name, bot);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		out->bot_id = rk_db_col_text(st, 0);
		out->origin = rk_db_col_text(st, 1);
		out->auth = rk_db_col_text(st, 2);
		out->auth_param = rk_db_col_text(st, 3);
		out->nonce = col_blob(st, 4, &out->nonce_len);
		out->ciphertext = col_blob(st, 5, &out->ciphertext_len);
	} else if (rc == RK_SQL_DONE) {
		r = rk_error_set(err, RK_ENOTFOUND, "no secret '%s'", name);
	} else {
		r = rk_db_sql_error(db, err, "read the secret");
	}
	rk_stmt_finalize(st);
	return r;
}

static void secret_of_user_row(struct rk_stmt *st, void *p)
{
	struct rk_secret_row *s = p;
	s->space_id = rk_db_col_text(st, 0);
	s->bot_id = rk_db_col_text(st, 1);
	s->name = rk_db_col_text(st, 2);
	s->nonce = col_blob(st, 3, &s->nonce_len);
	s->ciphertext = col_blob(st, 4, &s->ciphertext_len);
}

static void secret_row_free(void *p)
{
	rk_secret_row_release(p);
}

int rk_db_secret_list_user(struct rk_db *db, const char *user, struct rk_secret_row **out, size_t *n,
			   struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT space_id, bot_id, name, nonce, ciphertext FROM secrets WHERE user_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, user);
	return rk_db_collect(db, st, sizeof(**out), secret_of_user_row, secret_row_free, (void **)out, n,
			     "read secrets", err);
}

int rk_db_secret_request_insert(struct rk_db *db, const struct rk_secret_request_row *r, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "INSERT INTO secret_requests (id, run_id, user_id, space_id, bot_id, name, "
				    "origin, auth, auth_param, reason, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
				    err);
	if (!st)
		return -rk_err(err)->code;
	BIND_TEXTS(st, 1, r->id, r->run_id, r->user_id, r->space_id, r->bot_id, r->name, r->origin, r->auth,
		   r->auth_param, r->reason);
	rk_stmt_bind_int64(st, 11, r->created_at);
	return rk_db_step_done(db, st, "record the secret request", err);
}
