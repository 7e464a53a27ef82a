/* The statement interface (sql.h): the backend chosen at open, then every
 * call handed to its driver. */

#include "engine/state/sql.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

const char *rk_sql_url(void)
{
	const char *u = getenv("RAKAZO_DATABASE_URL");
	return u && *u ? u : NULL;
}

char *rk_sql_url_redacted(const char *url)
{
	/* scheme://user:password@host/... -> scheme://user@host/...; and a
	 * password=... query parameter is dropped */
	struct rk_buf b;
	rk_buf_init(&b);
	const char *p = strstr(url, "://");
	const char *rest = url;
	if (p) {
		const char *auth = p + 3;
		size_t authlen = strcspn(auth, "/?#");
		const char *at = memchr(auth, '@', authlen);
		if (at) {
			const char *colon = memchr(auth, ':', (size_t)(at - auth));
			rk_buf_add(&b, url, (size_t)(auth - url));
			rk_buf_add(&b, auth, (size_t)((colon ? colon : at) - auth));
			rest = at;
		}
	}
	/* copy the rest, leaving out password=... parameters */
	while (*rest) {
		const char *q = strstr(rest, "password=");
		if (!q || (q != rest && q[-1] != '?' && q[-1] != '&')) {
			rk_buf_adds(&b, rest);
			break;
		}
		rk_buf_add(&b, rest, (size_t)(q - rest));
		rk_buf_adds(&b, "password=*");
		rest = q + strcspn(q, "&");
	}
	return rk_buf_detach(&b, NULL);
}

int rk_db_open_v2(const char *path, struct rk_db **out, int flags, const char *unused)
{
	(void)unused;
	struct rk_db *db = calloc(1, sizeof(*db));
	*out = db;
	if (!db)
		return RK_SQL_ERROR;
	const char *url = rk_sql_url();
	db->drv = url ? &rk_sql_pg : &rk_sql_sqlite;
	db->path = url ? rk_sql_url_redacted(url) : strdup(path);
	return db->drv->open(db, url ? url : path, flags);
}

void rk_db_close(struct rk_db *db)
{
	if (!db)
		return;
	if (db->drv)
		db->drv->close(db);
	free(db->path);
	free(db);
}

void rk_db_busy_timeout(struct rk_db *db, int ms)
{
	db->drv->busy_timeout(db, ms);
}

int rk_db_errcode(struct rk_db *db)
{
	return db->drv->errcode(db);
}

const char *rk_db_errmsg(struct rk_db *db)
{
	return db->drv->errmsg(db);
}

int64_t rk_db_changes(struct rk_db *db)
{
	return db->drv->changes(db);
}

int rk_db_in_transaction(struct rk_db *db)
{
	return db->drv->in_transaction(db);
}

enum rk_sql_dialect rk_db_dialect(const struct rk_db *db)
{
	return db->drv->dialect;
}

int rk_stmt_prepare_v2(struct rk_db *db, const char *sql, int len, struct rk_stmt **out, const char **tail)
{
	(void)len;
	if (tail)
		*tail = sql + strlen(sql);
	*out = NULL;
	return db->drv->prepare(db, sql, out);
}

int rk_stmt_bind_int(struct rk_stmt *st, int i, int v)
{
	return st->drv->bind_int64(st, i, v);
}

int rk_stmt_bind_int64(struct rk_stmt *st, int i, int64_t v)
{
	return st->drv->bind_int64(st, i, v);
}

int rk_stmt_bind_double(struct rk_stmt *st, int i, double v)
{
	return st->drv->bind_double(st, i, v);
}

int rk_stmt_bind_text(struct rk_stmt *st, int i, const char *s, int len)
{
	if (!s)
		return st->drv->bind_null(st, i);
	return st->drv->bind_text(st, i, s, len);
}

int rk_stmt_bind_blob(struct rk_stmt *st, int i, const void *p, int n)
{
	return st->drv->bind_blob(st, i, p, n < 0 ? 0 : (size_t)n);
}

int rk_stmt_bind_blob64(struct rk_stmt *st, int i, const void *p, uint64_t n)
{
	return st->drv->bind_blob(st, i, p, (size_t)n);
}

int rk_stmt_bind_null(struct rk_stmt *st, int i)
{
	return st->drv->bind_null(st, i);
}

int rk_stmt_step(struct rk_stmt *st)
{
	return st->drv->step(st);
}

int rk_stmt_column_type(struct rk_stmt *st, int i)
{
	return st->drv->column_type(st, i);
}

int rk_stmt_column_int(struct rk_stmt *st, int i)
{
	return (int)st->drv->column_int64(st, i);
}

int64_t rk_stmt_column_int64(struct rk_stmt *st, int i)
{
	return st->drv->column_int64(st, i);
}

double rk_stmt_column_double(struct rk_stmt *st, int i)
{
	return st->drv->column_double(st, i);
}

const unsigned char *rk_stmt_column_text(struct rk_stmt *st, int i)
{
	return st->drv->column_text(st, i);
}

const void *rk_stmt_column_blob(struct rk_stmt *st, int i)
{
	return st->drv->column_blob(st, i);
}

int rk_stmt_column_bytes(struct rk_stmt *st, int i)
{
	return st->drv->column_bytes(st, i);
}

void rk_stmt_finalize(struct rk_stmt *st)
{
	if (st)
		st->drv->finalize(st);
}
