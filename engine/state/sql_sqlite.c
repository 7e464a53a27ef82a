/* The SQLite driver of sql.h: the embedded default, one file under the data
 * directory in WAL mode. The only engine file that includes sqlite3.h. */

#include <sqlite3.h>
#include <stdlib.h>

#include "engine/state/sql_driver.h"

struct sq_stmt {
	struct rk_stmt base;
	sqlite3_stmt *h;
};

#define H(db) ((sqlite3 *)(db)->conn)
#define S(st) (((struct sq_stmt *)(st))->h)

static int sq_open(struct rk_db *db, const char *target, int flags)
{
	int f = 0;
	if (flags & RK_SQL_OPEN_READONLY)
		f |= SQLITE_OPEN_READONLY;
	if (flags & RK_SQL_OPEN_READWRITE)
		f |= SQLITE_OPEN_READWRITE;
	if (flags & RK_SQL_OPEN_CREATE)
		f |= SQLITE_OPEN_CREATE;
	f |= (flags & RK_SQL_OPEN_NOMUTEX) ? SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_FULLMUTEX;
	sqlite3 *h = NULL;
	int rc = sqlite3_open_v2(target, &h, f, NULL);
	db->conn = h;
	return rc;
}

static void sq_close(struct rk_db *db)
{
	if (db->conn)
		sqlite3_close_v2(H(db));
	db->conn = NULL;
}

static int sq_exec(struct rk_db *db, const char *sql)
{
	return sqlite3_exec(H(db), sql, NULL, NULL, NULL);
}

static int sq_prepare(struct rk_db *db, const char *sql, struct rk_stmt **out)
{
	sqlite3_stmt *h = NULL;
	int rc = sqlite3_prepare_v2(H(db), sql, -1, &h, NULL);
	if (rc != SQLITE_OK)
		return rc;
	struct sq_stmt *st = malloc(sizeof(*st));
	if (!st) {
		sqlite3_finalize(h);
		return SQLITE_NOMEM;
	}
	st->base.drv = &rk_sql_sqlite;
	st->base.db = db;
	st->h = h;
	*out = &st->base;
	return SQLITE_OK;
}

static int sq_bind_int64(struct rk_stmt *st, int i, int64_t v)
{
	return sqlite3_bind_int64(S(st), i, v);
}

static int sq_bind_double(struct rk_stmt *st, int i, double v)
{
	return sqlite3_bind_double(S(st), i, v);
}

static int sq_bind_text(struct rk_stmt *st, int i, const char *s, int len)
{
	return sqlite3_bind_text(S(st), i, s, len, SQLITE_TRANSIENT);
}

static int sq_bind_blob(struct rk_stmt *st, int i, const void *p, size_t n)
{
	return sqlite3_bind_blob64(S(st), i, p, n, SQLITE_TRANSIENT);
}

static int sq_bind_null(struct rk_stmt *st, int i)
{
	return sqlite3_bind_null(S(st), i);
}

static int sq_step(struct rk_stmt *st)
{
	return sqlite3_step(S(st));
}

static int sq_column_type(struct rk_stmt *st, int i)
{
	return sqlite3_column_type(S(st), i);
}

static int64_t sq_column_int64(struct rk_stmt *st, int i)
{
	return sqlite3_column_int64(S(st), i);
}

static double sq_column_double(struct rk_stmt *st, int i)
{
	return sqlite3_column_double(S(st), i);
}

static const unsigned char *sq_column_text(struct rk_stmt *st, int i)
{
	return sqlite3_column_text(S(st), i);
}

static const void *sq_column_blob(struct rk_stmt *st, int i)
{
	return sqlite3_column_blob(S(st), i);
}

static int sq_column_bytes(struct rk_stmt *st, int i)
{
	return sqlite3_column_bytes(S(st), i);
}

static void sq_finalize(struct rk_stmt *st)
{
	sqlite3_finalize(S(st));
	free(st);
}

static int64_t sq_changes(struct rk_db *db)
{
	return sqlite3_changes(H(db));
}

static int sq_in_transaction(struct rk_db *db)
{
	return !sqlite3_get_autocommit(H(db));
}

static int sq_errcode(struct rk_db *db)
{
	return db->conn ? sqlite3_errcode(H(db)) & 0xff : RK_SQL_CANTOPEN;
}

static const char *sq_errmsg(struct rk_db *db)
{
	return db->conn ? sqlite3_errmsg(H(db)) : "out of memory";
}

static void sq_busy_timeout(struct rk_db *db, int ms)
{
	sqlite3_busy_timeout(H(db), ms);
}

static const char *sq_version(void)
{
	return sqlite3_libversion();
}

const struct rk_sql_driver rk_sql_sqlite = {
	.name = "sqlite",
	.dialect = RK_DIALECT_SQLITE,
	.open = sq_open,
	.close = sq_close,
	.exec = sq_exec,
	.prepare = sq_prepare,
	.bind_int64 = sq_bind_int64,
	.bind_double = sq_bind_double,
	.bind_text = sq_bind_text,
	.bind_blob = sq_bind_blob,
	.bind_null = sq_bind_null,
	.step = sq_step,
	.column_type = sq_column_type,
	.column_int64 = sq_column_int64,
	.column_double = sq_column_double,
	.column_text = sq_column_text,
	.column_blob = sq_column_blob,
	.column_bytes = sq_column_bytes,
	.finalize = sq_finalize,
	.changes = sq_changes,
	.in_transaction = sq_in_transaction,
	.errcode = sq_errcode,
	.errmsg = sq_errmsg,
	.busy_timeout = sq_busy_timeout,
	.version = sq_version,
};
