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

#include "engine/state/sql_driver.h"

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
