#ifndef RK_DB_SESSION_H
#define RK_DB_SESSION_H
/* session_calls: calls to a shell session's holder left in the state by a
 * caller that cannot reach its socket (another host or network namespace;
 * engine/machine/session.c), and the holder's replies. Their SQL lives
 * here; the sessions themselves (exec_sessions) and their history are in
 * db.h. Strings are malloc'd and owned by the caller. */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* Leaves request (JSON text) as call id to session sid. */
int rk_db_session_call_put(struct rk_db *db, const char *id, const char *sid, const char *request, int64_t now_ms,
			   struct rk_error *err);
/* 1 with *reply (malloc'd) once the holder answered call id, 0 while it has
 * not (or the read failed), < 0 when the query cannot be made. */
int rk_db_session_call_reply(struct rk_db *db, const char *id, char **reply, struct rk_error *err);
/* Withdraws call id while it has no reply: 1 when it was withdrawn, 0 when
 * it was answered meanwhile (or is gone), < 0 on failure. */
int rk_db_session_call_withdraw(struct rk_db *db, const char *id, struct rk_error *err);
/* Deletes call id, answered or not. */
int rk_db_session_call_forget(struct rk_db *db, const char *id, struct rk_error *err);

/* A call waiting for the holder. */
struct rk_session_call {
	char *id, *request;
};
void rk_session_calls_free(struct rk_session_call *calls, size_t n);
/* Up to max of session sid's unanswered calls, oldest first; *out malloc'd.
 * A failed read ends the list (0 with what was read). */
int rk_db_session_calls_open(struct rk_db *db, const char *sid, size_t max, struct rk_session_call **out, size_t *n,
			     struct rk_error *err);
/* Stores reply (JSON text) as call id's answer. */
int rk_db_session_call_answer(struct rk_db *db, const char *id, const char *reply, struct rk_error *err);

#endif
