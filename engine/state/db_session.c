/* session_calls: their SQL (see db_session.h), through db.h's statement
 * helpers. */

#include "engine/state/db_session.h"

#include <stdlib.h>

#include "engine/util/buf.h"

int rk_db_session_call_put(struct rk_db *db, const char *id, const char *sid, const char *request, int64_t now_ms,
			   struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "INSERT INTO session_calls (id, session_id, request, created_at) VALUES (?1, ?2, ?3, ?4)", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, sid);
	rk_db_bind_text(st, 3, request);
	rk_stmt_bind_int64(st, 4, now_ms);
	return rk_db_step_done(db, st, "leave a session call", err);
}

int rk_db_session_call_reply(struct rk_db *db, const char *id, char **reply, struct rk_error *err)
{
	*reply = NULL;
	struct rk_stmt *st = rk_db_prepare(db, "SELECT reply FROM session_calls WHERE id = ?1 AND reply IS NOT NULL",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	if (rk_stmt_step(st) == RK_SQL_ROW)
		*reply = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	return *reply != NULL;
}

int rk_db_session_call_withdraw(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM session_calls WHERE id = ?1 AND reply IS NULL", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	int r = rk_db_step_done(db, st, "withdraw a session call", err);
	return r ? r : rk_db_changes(db) > 0;
}

int rk_db_session_call_forget(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM session_calls WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	return rk_db_step_done(db, st, "forget a session call", err);
}

void rk_session_calls_free(struct rk_session_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(calls[i].id);
		free(calls[i].request);
	}
	free(calls);
}

int rk_db_session_calls_open(struct rk_db *db, const char *sid, size_t max, struct rk_session_call **out, size_t *n,
			     struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT id, request FROM session_calls WHERE session_id = ?1 AND reply IS NULL ORDER BY created_at",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, sid);
	*out = rk_xcalloc(max ? max : 1, sizeof(**out));
	while (*n < max && rk_stmt_step(st) == RK_SQL_ROW) {
		(*out)[*n].id = rk_xstrdup((const char *)rk_stmt_column_text(st, 0));
		(*out)[(*n)++].request = rk_xstrdup((const char *)rk_stmt_column_text(st, 1));
	}
	rk_stmt_finalize(st);
	return 0;
}

int rk_db_session_call_answer(struct rk_db *db, const char *id, const char *reply, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "UPDATE session_calls SET reply = ?2 WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, id);
	rk_db_bind_text(st, 2, reply);
	return rk_db_step_done(db, st, "answer a session call", err);
}
