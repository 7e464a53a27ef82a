/* The screen gateway's table: its SQL (see db_gateway.h). */

#include "engine/state/db_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

/* The gateway's errors keep the codes they have always had: a busy or
 * locked database is unavailable, anything else failed. */
static int cap_sql_error(struct rk_db *db, struct rk_error *err, const char *what)
{
	int rc = rk_db_errcode(db);
	enum rk_code code = rc == RK_SQL_BUSY || rc == RK_SQL_LOCKED ? RK_EUNAVAILABLE : RK_EFAILED;
	return rk_error_set(err, code, "database: %s: %s", what, rk_db_errmsg(db));
}

static struct rk_stmt *prep(struct rk_db *db, const char *sql, struct rk_error *err)
{
	struct rk_stmt *st = NULL;
	if (rk_stmt_prepare_v2(db, sql, -1, &st, NULL) != RK_SQL_OK) {
		cap_sql_error(db, err, "prepare failed");
		return NULL;
	}
	return st;
}

void rk_screen_cap_row_release(struct rk_screen_cap_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->token_hash);
	free(r->computer_id);
	free(r->bot_id);
	free(r->policy);
	free(r->socket_path);
	free(r->vnc_socket);
	free(r->revoke_reason);
	free(r->created_by);
	free(r->maker_user);
	free(r->maker_space);
	free(r->maker_bot);
	free(r->maker_token);
	memset(r, 0, sizeof(*r));
}

void rk_screen_cap_rows_free(struct rk_screen_cap_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rk_screen_cap_row_release(&rows[i]);
	free(rows);
}

int rk_db_screen_cap_insert(struct rk_db *db, const struct rk_screen_cap_row *r, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO screen_capabilities (id, token_hash, computer_id, display, bot_id, "
				  "generation, policy, socket_path, vnc_socket, vnc_dev, vnc_ino, vnc_ctime_ns, "
				  "created_at, expires_at, created_by, maker_user, maker_space, maker_bot, maker_token) "
				  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, r->id);
	rk_db_bind_text(st, 2, r->token_hash);
	rk_db_bind_text(st, 3, r->computer_id);
	rk_stmt_bind_int(st, 4, r->display);
	rk_db_bind_text(st, 5, r->bot_id);
	rk_stmt_bind_int64(st, 6, r->generation);
	rk_db_bind_text(st, 7, r->policy);
	rk_db_bind_text(st, 8, r->socket_path);
	rk_db_bind_text(st, 9, r->vnc_socket);
	rk_stmt_bind_int64(st, 10, r->vnc_dev);
	rk_stmt_bind_int64(st, 11, r->vnc_ino);
	rk_stmt_bind_int64(st, 12, r->vnc_ctime_ns);
	rk_stmt_bind_int64(st, 13, r->created_at);
	rk_stmt_bind_int64(st, 14, r->expires_at);
	rk_db_bind_text(st, 15, r->created_by);
	rk_db_bind_text(st, 16, r->maker_user);
	rk_db_bind_text(st, 17, r->maker_space);
	rk_db_bind_text(st, 18, r->maker_bot);
	rk_db_bind_text(st, 19, r->maker_token);
	int rc = rk_stmt_step(st);
	rk_stmt_finalize(st);
	return rc == RK_SQL_DONE ? 0 : cap_sql_error(db, err, "record the capability");
}

#define CAP_COLS                                                                                                       \
	"id, token_hash, computer_id, display, bot_id, generation, policy, socket_path, vnc_socket, vnc_dev, "         \
	"vnc_ino, vnc_ctime_ns, created_at, expires_at, coalesce(revoked_at, 0), revoke_reason, created_by, "          \
	"maker_user, maker_space, maker_bot, maker_token"

static void cap_row(struct rk_stmt *st, struct rk_screen_cap_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = rk_db_col_text(st, 0);
	r->token_hash = rk_db_col_text(st, 1);
	r->computer_id = rk_db_col_text(st, 2);
	r->display = rk_stmt_column_int(st, 3);
	r->bot_id = rk_db_col_text(st, 4);
	r->generation = rk_stmt_column_int64(st, 5);
	r->policy = rk_db_col_text(st, 6);
	r->socket_path = rk_db_col_text(st, 7);
	r->vnc_socket = rk_db_col_text(st, 8);
	r->vnc_dev = rk_stmt_column_int64(st, 9);
	r->vnc_ino = rk_stmt_column_int64(st, 10);
	r->vnc_ctime_ns = rk_stmt_column_int64(st, 11);
	r->created_at = rk_stmt_column_int64(st, 12);
	r->expires_at = rk_stmt_column_int64(st, 13);
	r->revoked_at = rk_stmt_column_int64(st, 14);
	r->revoke_reason = rk_db_col_text(st, 15);
	r->created_by = rk_db_col_text(st, 16);
	r->maker_user = rk_db_col_text(st, 17);
	r->maker_space = rk_db_col_text(st, 18);
	r->maker_bot = rk_db_col_text(st, 19);
	r->maker_token = rk_db_col_text(st, 20);
}

int rk_db_screen_cap_by_hash(struct rk_db *db, const char *token_hash, struct rk_screen_cap_row *out,
			     struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = prep(db, "SELECT " CAP_COLS " FROM screen_capabilities WHERE token_hash = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, token_hash);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW) {
		cap_row(st, out);
		r = 1;
	} else if (rc != RK_SQL_DONE) {
		r = cap_sql_error(db, err, "look up the capability");
	}
	rk_stmt_finalize(st);
	return r;
}

/* Appends condition c to the WHERE clause sql is building. */
static void where_and(struct rk_buf *sql, const char *c)
{
	rk_buf_adds(sql, strstr(sql->data, " WHERE ") ? " AND " : " WHERE ");
	rk_buf_adds(sql, c);
}

int rk_db_screen_cap_list(struct rk_db *db, const struct rk_screen_cap_filter *f, struct rk_screen_cap_row **out,
			  size_t *n, struct rk_error *err)
{
	struct rk_buf sql;
	rk_buf_init(&sql);
	rk_buf_adds(&sql, "SELECT " CAP_COLS " FROM screen_capabilities");
	if (f->id)
		where_and(&sql, "id = ?");
	if (f->computer_id)
		where_and(&sql, "computer_id = ?");
	if (f->display >= 0)
		where_and(&sql, "display = ?");
	if (f->control)
		where_and(&sql, "policy = 'control'");
	if (f->unrevoked || f->live_at >= 0)
		where_and(&sql, "revoked_at IS NULL");
	if (f->live_at >= 0)
		where_and(&sql, "expires_at > ?");
	rk_buf_adds(&sql, " ORDER BY created_at");
	struct rk_stmt *st = prep(db, sql.data, err);
	rk_buf_release(&sql);
	if (!st)
		return -rk_err(err)->code;
	int i = 1;
	if (f->id)
		rk_db_bind_text(st, i++, f->id);
	if (f->computer_id)
		rk_db_bind_text(st, i++, f->computer_id);
	if (f->display >= 0)
		rk_stmt_bind_int(st, i++, f->display);
	if (f->live_at >= 0)
		rk_stmt_bind_int64(st, i++, f->live_at);
	size_t cap = 8, count = 0;
	struct rk_screen_cap_row *arr = rk_xcalloc(cap, sizeof(*arr));
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (count == cap) {
			cap *= 2;
			arr = rk_xrealloc(arr, cap * sizeof(*arr));
		}
		cap_row(st, &arr[count++]);
	}
	rk_stmt_finalize(st);
	if (rc != RK_SQL_DONE) {
		rk_screen_cap_rows_free(arr, count);
		return cap_sql_error(db, err, "list capabilities");
	}
	*out = arr;
	*n = count;
	return 0;
}

int rk_db_screen_cap_revoke(struct rk_db *db, const char *id, const char *reason, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "UPDATE screen_capabilities SET revoked_at = ?, revoke_reason = ? "
				  "WHERE id = ? AND revoked_at IS NULL",
				  err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, now_ms);
	rk_db_bind_text(st, 2, reason);
	rk_db_bind_text(st, 3, id);
	int rc = rk_stmt_step(st);
	rk_stmt_finalize(st);
	if (rc != RK_SQL_DONE)
		return cap_sql_error(db, err, "revoke the capability");
	return (int)rk_db_changes(db);
}
