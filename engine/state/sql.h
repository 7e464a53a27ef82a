#ifndef RK_SQL_H
#define RK_SQL_H
/* The one statement interface the engine's SQL goes through, whatever holds
 * the state: SQLite (engine/state/sql_sqlite.c, the embedded default) or
 * PostgreSQL (engine/state/sql_pg.c, when RAKAZO_DATABASE_URL names a server).
 * It follows SQLite's C API shape (prepare, bind by number from 1, step to
 * RK_SQL_ROW / RK_SQL_DONE, read columns from 0, finalize) so the engine's
 * statements read as they always did; a driver fills struct rk_sql_driver.
 * SQL text uses SQLite's parameters (?, ?N); a driver rewrites them for its
 * server. Strings bound are copied; column text stays valid until the next
 * step or finalize. */

#include <stddef.h>
#include <stdint.h>

/* What step, prepare and rk_db_errcode answer (SQLite's numbers). */
enum rk_sql_rc {
	RK_SQL_OK = 0,
	RK_SQL_ERROR = 1,
	RK_SQL_BUSY = 5,    /* locked by another writer, or the server is not reachable */
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

/* The backend RAKAZO_DATABASE_URL selects: NULL (unset or empty: SQLite
 * under the data directory), else its value. */
const char *rk_sql_url(void);
/* url without a password (malloc'd). */
char *rk_sql_url_redacted(const char *url);

/* Opens the state at path (the SQLite file of a data directory) with
 * SQLite's flags, or the server RAKAZO_DATABASE_URL names when it is set;
 * *out is set even on failure (rk_db_errmsg says why; rk_db_close it). */
int rk_db_open_v2(const char *path, struct rk_db **out, int flags, const char *unused);
void rk_db_busy_timeout(struct rk_db *db, int ms);
int rk_db_errcode(struct rk_db *db);
const char *rk_db_errmsg(struct rk_db *db);
/* Rows the last INSERT, UPDATE or DELETE touched. */
int64_t rk_db_changes(struct rk_db *db);
int rk_db_in_transaction(struct rk_db *db);
enum rk_sql_dialect rk_db_dialect(const struct rk_db *db);

int rk_stmt_prepare_v2(struct rk_db *db, const char *sql, int len, struct rk_stmt **out, const char **tail);
int rk_stmt_bind_int(struct rk_stmt *st, int i, int v);
int rk_stmt_bind_int64(struct rk_stmt *st, int i, int64_t v);
int rk_stmt_bind_double(struct rk_stmt *st, int i, double v);
/* len -1: up to the NUL */
int rk_stmt_bind_text(struct rk_stmt *st, int i, const char *s, int len);
int rk_stmt_bind_blob(struct rk_stmt *st, int i, const void *p, int n);
int rk_stmt_bind_blob64(struct rk_stmt *st, int i, const void *p, uint64_t n);
int rk_stmt_bind_null(struct rk_stmt *st, int i);
int rk_stmt_step(struct rk_stmt *st);
int rk_stmt_column_type(struct rk_stmt *st, int i);
int rk_stmt_column_int(struct rk_stmt *st, int i);
int64_t rk_stmt_column_int64(struct rk_stmt *st, int i);
double rk_stmt_column_double(struct rk_stmt *st, int i);
const unsigned char *rk_stmt_column_text(struct rk_stmt *st, int i);
const void *rk_stmt_column_blob(struct rk_stmt *st, int i);
int rk_stmt_column_bytes(struct rk_stmt *st, int i);
/* NULL is a no-op */
void rk_stmt_finalize(struct rk_stmt *st);

#endif
