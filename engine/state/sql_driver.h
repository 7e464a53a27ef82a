#ifndef RK_SQL_DRIVER_H
#define RK_SQL_DRIVER_H
/* What a SQL driver implements: the return codes, column types, open flags,
 * struct rk_sql_driver and the connection and statement handles it fills.
 * The drivers (engine/state/sql_sqlite.c, engine/state/sql_pg.c) include only
 * this header, and engine/state/sql.c (which chooses a driver and forwards
 * every call to it) includes it through sql.h: the drivers never use sql.c,
 * so the interface has no .c of its own. See sql.h for the statement calls. */

#include <stddef.h>
#include <stdint.h>

/* What step, prepare and rk_db_errcode answer (SQLite's numbers). */
enum rk_sql_rc {
	RK_SQL_OK = 0,
	RK_SQL_ERROR = 1,
	RK_SQL_BUSY = 5, /* locked by another writer, or the server is not reachable */
	RK_SQL_LOCKED = 6,
	RK_SQL_READONLY = 8,
	RK_SQL_IOERR = 10,
	RK_SQL_CORRUPT = 11,
	RK_SQL_FULL = 13,
	RK_SQL_CANTOPEN = 14,
	RK_SQL_CONSTRAINT = 19, /* a unique, primary key or check constraint refused the row */
	RK_SQL_NOTADB = 26,
	RK_SQL_ROW = 100,
	RK_SQL_DONE = 101,
};

/* Column types (rk_stmt_column_type). */
enum { RK_SQL_INTEGER = 1, RK_SQL_FLOAT = 2, RK_SQL_TEXT = 3, RK_SQL_BLOB = 4, RK_SQL_NULL = 5 };

/* rk_db_open_v2 flags */
enum { RK_SQL_OPEN_READONLY = 1, RK_SQL_OPEN_READWRITE = 2, RK_SQL_OPEN_CREATE = 4, RK_SQL_OPEN_NOMUTEX = 0x8000 };

/* Which SQL a statement must be written in, where the two differ. */
enum rk_sql_dialect { RK_DIALECT_SQLITE, RK_DIALECT_PG };

struct rk_db;
struct rk_stmt {
	const struct rk_sql_driver *drv;
	struct rk_db *db;
};

struct rk_sql_driver {
	const char *name; /* "sqlite", "postgresql" */
	enum rk_sql_dialect dialect;
	/* target: a file path (sqlite) or a URL (postgresql); RK_SQL_OK or an rc, with errmsg set */
	int (*open)(struct rk_db *db, const char *target, int flags);
	void (*close)(struct rk_db *db);
	int (*exec)(struct rk_db *db, const char *sql); /* one or more statements, no rows */
	int (*prepare)(struct rk_db *db, const char *sql, struct rk_stmt **out);
	int (*bind_int64)(struct rk_stmt *st, int i, int64_t v);
	int (*bind_double)(struct rk_stmt *st, int i, double v);
	int (*bind_text)(struct rk_stmt *st, int i, const char *s, int len);
	int (*bind_blob)(struct rk_stmt *st, int i, const void *p, size_t n);
	int (*bind_null)(struct rk_stmt *st, int i);
	int (*step)(struct rk_stmt *st);
	int (*column_type)(struct rk_stmt *st, int i);
	int64_t (*column_int64)(struct rk_stmt *st, int i);
	double (*column_double)(struct rk_stmt *st, int i);
	const unsigned char *(*column_text)(struct rk_stmt *st, int i);
	const void *(*column_blob)(struct rk_stmt *st, int i);
	int (*column_bytes)(struct rk_stmt *st, int i);
	void (*finalize)(struct rk_stmt *st);
	int64_t (*changes)(struct rk_db *db);
	int (*in_transaction)(struct rk_db *db);
	int (*errcode)(struct rk_db *db);
	const char *(*errmsg)(struct rk_db *db);
	void (*busy_timeout)(struct rk_db *db, int ms);
	const char *(*version)(void); /* the client library's */
};

extern const struct rk_sql_driver rk_sql_sqlite;
extern const struct rk_sql_driver rk_sql_pg;

/* A connection. path: the SQLite file, or the PostgreSQL URL with any
 * password left out (safe to show). */
struct rk_db {
	const struct rk_sql_driver *drv;
	void *conn;
	char *path;
};

#endif
