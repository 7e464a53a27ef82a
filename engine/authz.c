/* Authorization: identity, computer ownership, bot grants, capabilities (see authz.h). */

#include "authz.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval.h"
#include "util/buf.h"
#include "util/time.h"

/* --- statement helpers --------------------------------------------------------- */

int rk_trust_sql_error(struct rk_db *db, struct rk_error *err, const char *what)
{
	int rc = sqlite3_errcode(db->handle);
	enum rk_code code = RK_EFAILED;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		code = RK_EUNAVAILABLE;
	else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		code = RK_ECORRUPT;
	else if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_IOERR || rc == SQLITE_FULL)
		code = RK_EIO;
	else if (rc == SQLITE_CONSTRAINT)
		code = RK_ECONFLICT;
	return rk_error_set(err, code, "database: %s: %s", what, sqlite3_errmsg(db->handle));
}

sqlite3_stmt *rk_trust_prep(struct rk_db *db, const char *sql, struct rk_error *err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->handle, sql, -1, &st, NULL) != SQLITE_OK) {
		rk_trust_sql_error(db, err, "prepare failed");
		return NULL;
	}
	return st;
}

int rk_trust_step_done(struct rk_db *db, sqlite3_stmt *st, const char *what, struct rk_error *err)
{
	int rc = sqlite3_step(st);
	int r = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = rk_trust_sql_error(db, err, what);
	sqlite3_finalize(st);
	return r;
}

void rk_trust_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

char *rk_trust_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? rk_xstrdup((const char *)t) : NULL;
}

int rk_trust_rows(struct rk_db *db, sqlite3_stmt *st, const struct rk_trust_col *cols, const char *what, cJSON **out,
		  struct rk_error *err)
{
	cJSON *arr = cJSON_CreateArray();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *o = cJSON_CreateObject();
		for (int i = 0; cols[i].key; i++) {
			int null = sqlite3_column_type(st, i) == SQLITE_NULL;
			char t[32];
			if (null && cols[i].type != 'b')
				cJSON_AddNullToObject(o, cols[i].key);
			else if (cols[i].type == 'i')
				cJSON_AddNumberToObject(o, cols[i].key, (double)sqlite3_column_int64(st, i));
			else if (cols[i].type == 'b')
				cJSON_AddBoolToObject(o, cols[i].key, sqlite3_column_int(st, i) != 0);
			else if (cols[i].type == 't')
				cJSON_AddStringToObject(o, cols[i].key, rk_iso8601(sqlite3_column_int64(st, i), t, sizeof(t)));
			else
				cJSON_AddStringToObject(o, cols[i].key, (const char *)sqlite3_column_text(st, i));
		}
		cJSON_AddItemToArray(arr, o);
	}
	int r = rc == SQLITE_DONE ? 0 : rk_trust_sql_error(db, err, what);
	sqlite3_finalize(st);
	if (r) {
		cJSON_Delete(arr);
		return r;
	}
	*out = arr;
	return 0;
}

int rk_trust_utf8(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
		if (k == 9 || c == 0 || i + k >= n)
			return 0;
		for (size_t j = 1; j <= k; j++)
			if (((unsigned char)s[i + j] & 0xC0) != 0x80)
				return 0;
		i += k + 1;
	}
	return 1;
}

/* --- identity -------------------------------------------------------------------- */

int rk_authz_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '@' || c == '+' || c == '-'))
			return 0;
	}
	return 1;
}

static char *login_name(struct rk_engine *eng)
{
	const char *u = getenv("RAKAZO_USER");
	if (u && *u)
		return rk_xstrdup(u);
	if (eng && eng->owner && !strncmp(eng->owner, "user:", 5))
		return rk_xstrdup(eng->owner + 5);
	struct passwd *pw = getpwuid(getuid());
	return pw ? rk_xstrdup(pw->pw_name) : rk_xasprintf("uid%d", (int)getuid());
}

int rk_actor_resolve(struct rk_actor *a, struct rk_engine *eng, const char *space, const char *bot,
		     struct rk_error *err)
{
	memset(a, 0, sizeof(*a));
	const char *sp = space && *space ? space : getenv("RAKAZO_SPACE");
	a->user = login_name(eng);
	a->space = rk_xstrdup(sp && *sp ? sp : RK_SPACE_DEFAULT);
	if (!(bot && *bot) && eng && eng->owner && !strncmp(eng->owner, "bot:", 4))
		bot = eng->owner + 4; /* RAKAZO_OWNER=bot:NAME: a bot acts */
	a->bot = bot && *bot ? rk_xstrdup(bot) : NULL;
	const char *bad = !rk_authz_name_ok(a->user) ? "user" : !rk_authz_name_ok(a->space) ? "space"
							   : a->bot && !rk_authz_name_ok(a->bot) ? "bot"
												 : NULL;
	if (bad) {
		int r = rk_error_set(err, RK_EINVALID,
				     "%s name '%s' is not valid: use 1 to 128 letters, digits and . _ @ + -", bad,
				     !strcmp(bad, "user") ? a->user : !strcmp(bad, "space") ? a->space : a->bot);
		rk_actor_release(a);
		return r;
	}
	return 0;
}

void rk_actor_release(struct rk_actor *a)
{
	if (!a)
		return;
	free(a->user);
	free(a->space);
	free(a->bot);
	memset(a, 0, sizeof(*a));
}

/* --- computers --------------------------------------------------------------------- */

int rk_authz_computer_record(struct rk_engine *eng, const char *computer_id, const char *space, const char *owner,
			     struct rk_error *err)
{
	sqlite3_stmt *st = rk_trust_prep(eng->db,
					 "INSERT INTO computer_access (computer_id, space_id, owner) VALUES (?, ?, ?) "
					 "ON CONFLICT (computer_id) DO NOTHING",
					 err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, computer_id);
	rk_trust_bind_text(st, 2, space);
	rk_trust_bind_text(st, 3, owner);
	return rk_trust_step_done(eng->db, st, "record the computer's space", err);
}

int rk_authz_computer_place(struct rk_engine *eng, const struct rk_computer *c, char **space, char **owner,
			    struct rk_error *err)
{
	*space = *owner = NULL;
	sqlite3_stmt *st =
		rk_trust_prep(eng->db, "SELECT space_id, owner FROM computer_access WHERE computer_id = ?", err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, c->id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*space = rk_trust_col_text(st, 0);
		*owner = rk_trust_col_text(st, 1);
	} else if (rc != SQLITE_DONE) {
		int r = rk_trust_sql_error(eng->db, err, "read the computer's space");
		sqlite3_finalize(st);
		return r;
	}
	sqlite3_finalize(st);
	if (!*space)
		*space = rk_xstrdup(RK_SPACE_DEFAULT);
	if (!*owner)
		*owner = rk_xstrdup(c->owner);
	return 0;
}

int rk_authz_visible(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c)
{
	char *space, *owner;
	struct rk_error e;
	if (rk_authz_computer_place(eng, c, &space, &owner, &e))
		return 0;
	int ok = !strcmp(space, a->space);
	free(space);
	free(owner);
	return ok;
}

int rk_authz_computer_get(struct rk_engine *eng, const struct rk_actor *a, const char *ref, struct rk_computer *out,
			  struct rk_error *err)
{
	int r = rk_db_computer_get(eng->db, ref, out, err);
	if (r)
		return r;
	if (!rk_authz_visible(eng, a, out)) {
		rk_computer_release(out);
		return rk_error_set(err, RK_ENOTFOUND, "no computer '%s' in space '%s'", ref, a->space);
	}
	return 0;
}

/* Is the person a the owner of c, or a member of its organization? */
static int person_may_manage(const struct rk_actor *a, const char *owner)
{
	if (!strcmp(owner, "org"))
		return 1;
	return !strncmp(owner, "user:", 5) && !strcmp(owner + 5, a->user);
}

static int has_grant(struct rk_engine *eng, const char *computer_id, const char *bot, int *yes, struct rk_error *err)
{
	*yes = 0;
	sqlite3_stmt *st =
		rk_trust_prep(eng->db, "SELECT 1 FROM computer_grants WHERE computer_id = ? AND bot_id = ?", err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, computer_id);
	rk_trust_bind_text(st, 2, bot);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*yes = 1;
	int r = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : rk_trust_sql_error(eng->db, err, "read grants");
	sqlite3_finalize(st);
	return r;
}

/* The rule decider: 0 when the ownership and grant rules allow it. */
static int rules_decide(struct rk_engine *eng, const struct rk_actor *a, const char *cap, const struct rk_computer *c,
			struct rk_error *err)
{
	if (!strcmp(cap, "computers.create")) {
		if (a->bot)
			return rk_error_set(err, RK_EDENIED,
					    "a bot cannot create a computer: a computer belongs to a member or the "
					    "organization; ask a person to create one and grant it to bot '%s'",
					    a->bot);
		return 0;
	}
	if (!c)
		return rk_error_set(err, RK_EINVALID, "%s needs a computer", cap);
	char *space, *owner;
	int r = rk_authz_computer_place(eng, c, &space, &owner, err);
	if (r)
		return r;
	if (strcmp(space, a->space) != 0) {
		r = rk_error_set(err, RK_ENOTFOUND, "no computer '%s' in space '%s'", c->name, a->space);
	} else if (a->bot) {
		int yes;
		if (!strcmp(cap, "computers.delete") || !strcmp(cap, "computers.expose"))
			r = rk_error_set(err, RK_EDENIED, "bot '%s' may not %s computer '%s': only its owner may",
					 a->bot, cap + strlen("computers."), c->name);
		else if ((r = has_grant(eng, c->id, a->bot, &yes, err)) == 0 && !yes)
			r = rk_error_set(err, RK_EDENIED,
					 "bot '%s' has no right to use computer '%s': `rakazo computer grant %s --bot %s`",
					 a->bot, c->name, c->name, a->bot);
	} else if (!person_may_manage(a, owner)) {
		r = rk_error_set(err, RK_EDENIED, "computer '%s' belongs to %s, not to %s", c->name, owner, a->user);
	}
	free(space);
	free(owner);
	return r;
}

int rk_authz_check(struct rk_engine *eng, const struct rk_actor *a, const char *capability,
		   const struct rk_computer *c, struct rk_error *err)
{
	int r = rules_decide(eng, a, capability, c, err);
	if (r)
		return r;
	/* then the approval rules, a capability being matched as a tool name */
	struct rk_approval_decision d;
	if ((r = rk_approval_evaluate(eng, a, capability, NULL, 0, &d, err)))
		return r;
	if (d.ask)
		return rk_error_set(err, RK_EDENIED, "%s needs approval (%s), which a command line cannot give",
				    capability, d.reason);
	return 0;
}

int rk_authz_grant(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		   struct rk_error *err)
{
	if (!rk_authz_name_ok(bot))
		return rk_error_set(err, RK_EINVALID, "bot name '%s' is not valid", bot);
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot grant rights");
	int r = rules_decide(eng, a, "computers.expose", c, err);
	if (r)
		return rk_error_prefix(err, "grant");
	sqlite3_stmt *st = rk_trust_prep(eng->db,
					 "INSERT INTO computer_grants (computer_id, bot_id, granted_by, created_at) "
					 "VALUES (?, ?, ?, ?) ON CONFLICT (computer_id, bot_id) DO NOTHING",
					 err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, c->id);
	rk_trust_bind_text(st, 2, bot);
	char *by = rk_xasprintf("user:%s", a->user);
	rk_trust_bind_text(st, 3, by);
	free(by);
	sqlite3_bind_int64(st, 4, rk_now_ms());
	return rk_trust_step_done(eng->db, st, "grant", err);
}

int rk_authz_revoke(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		    struct rk_error *err)
{
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot revoke rights");
	int r = rules_decide(eng, a, "computers.expose", c, err);
	if (r)
		return rk_error_prefix(err, "revoke");
	sqlite3_stmt *st =
		rk_trust_prep(eng->db, "DELETE FROM computer_grants WHERE computer_id = ? AND bot_id = ?", err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, c->id);
	rk_trust_bind_text(st, 2, bot);
	if ((r = rk_trust_step_done(eng->db, st, "revoke", err)))
		return r;
	if (sqlite3_changes(eng->db->handle) == 0)
		return rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no right to computer '%s'", bot, c->name);
	return 0;
}

int rk_authz_rights(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err)
{
	sqlite3_stmt *st = rk_trust_prep(eng->db,
					 "SELECT bot_id, granted_by, created_at FROM computer_grants WHERE computer_id = ? "
					 "ORDER BY created_at, bot_id",
					 err);
	if (!st)
		return -err->code;
	rk_trust_bind_text(st, 1, c->id);
	static const struct rk_trust_col cols[] = {{"bot", 's'}, {"granted_by", 's'}, {"created_at", 't'}, {0}};
	return rk_trust_rows(eng->db, st, cols, "read grants", out, err);
}
