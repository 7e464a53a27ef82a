#ifndef RK_DB_ACCESS_H
#define RK_DB_ACCESS_H
/* The access wing's tables (engine/access/): spaces, computer_access,
 * approval_rules, approvals, secrets and secret_requests. Their SQL lives
 * here, beside db.c; the rules (who may, what a row means) stay in
 * engine/access/. Strings in a record are malloc'd and owned by it (release
 * it); lists that go out as JSON come as a cJSON array of one object per row. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* --- spaces ------------------------------------------------------------- */

/* Records space id: 1 when made, 0 when it exists already. */
int rk_db_space_insert(struct rk_db *db, const char *id, const char *description, const char *created_by,
		       const char *run_id, int64_t created_at, struct rk_error *err);
/* Every space, recorded or used by a computer ("default" first):
 * [{id, description, created_by, run_id, created_at, computers}]. */
int rk_db_space_list(struct rk_db *db, cJSON **out, struct rk_error *err);

/* --- computer_access ------------------------------------------------------ */

/* Records the computer's space and owner once (a second record is ignored). */
int rk_db_computer_access_insert(struct rk_db *db, const char *computer_id, const char *space, const char *owner,
				 struct rk_error *err);
/* *space and *owner (malloc'd), each NULL when the computer has no record. */
int rk_db_computer_access_get(struct rk_db *db, const char *computer_id, char **space, char **owner,
			      struct rk_error *err);

/* --- approval rules and approvals ------------------------------------------ */

/* user_id of a rule for everyone in the space */
#define RK_APPROVAL_SHARED_USER "*"

struct rk_approval_rule_row {
	const char *id, *space_id, *user_id, *effect, *match, *value;
	int64_t created_at;
};
/* RK_ECONFLICT when the same rule exists. */
int rk_db_approval_rule_insert(struct rk_db *db, const struct rk_approval_rule_row *r, struct rk_error *err);
/* The rules of user and the shared ones in space, tool rules first:
 * [{id, effect, match, value, shared, space, created_at}]. */
int rk_db_approval_rule_list(struct rk_db *db, const char *space, const char *user, cJSON **out, struct rk_error *err);
/* Deletes rule id of user (or a shared one) in space: the rows deleted (0 or 1). */
int rk_db_approval_rule_delete(struct rk_db *db, const char *id, const char *space, const char *user,
			       struct rk_error *err);
/* The rule of user (or a shared one) in space for match = value, a
 * require_approval rule before an allow one, the oldest first: 1 with *id
 * and *effect (malloc'd), 0 when none matches. */
int rk_db_approval_rule_find(struct rk_db *db, const char *space, const char *user, const char *match,
			     const char *value, char **id, char **effect, struct rk_error *err);

struct rk_approval_row {
	const char *id, *run_id, *tool, *arguments, *reason, *user_id;
	int64_t created_at;
};
/* Inserts a pending approval. */
int rk_db_approval_insert(struct rk_db *db, const struct rk_approval_row *r, struct rk_error *err);
/* Where an approval stands: state (pending, approved, denied), and who
 * decided with what note; the strings are the caller's to free. */
struct rk_approval_decided {
	char *state, *note, *decided_by;
};
/* RK_ENOTFOUND when the approval is gone. */
int rk_db_approval_get(struct rk_db *db, const char *id, struct rk_approval_decided *out, struct rk_error *err);
/* *user_id (malloc'd): whose run's pending call it is, NULL when none waits. */
int rk_db_approval_pending_user(struct rk_db *db, const char *run_id, char **user_id, struct rk_error *err);
/* Decides every pending approval of run_id: state approved or denied. The rows decided. */
int rk_db_approval_decide(struct rk_db *db, const char *run_id, const char *state, const char *note,
			  const char *decided_by, int64_t decided_at, struct rk_error *err);
/* Pending approvals, of run_id or (NULL) of every run, oldest first:
 * [{id, run_id, tool, arguments, reason, created_at}]. */
int rk_db_approval_pending(struct rk_db *db, const char *run_id, cJSON **out, struct rk_error *err);
/* The run's state from to (runs table), only while it is from. */
int rk_db_run_swap_state(struct rk_db *db, const char *run_id, const char *from, const char *to, struct rk_error *err);

/* --- secrets -------------------------------------------------------------- */

struct rk_secret_row {
	char *id, *user_id, *space_id, *bot_id, *name, *origin, *auth, *auth_param;
	unsigned char *nonce, *ciphertext; /* as stored: their sizes are not checked here */
	size_t nonce_len, ciphertext_len;
};
void rk_secret_row_release(struct rk_secret_row *r);
/* A sealed value to store. */
struct rk_secret_seal {
	const char *id, *user_id, *space_id, *bot_id, *name, *origin, *auth, *auth_param;
	const unsigned char *nonce, *ciphertext;
	size_t nonce_len, ciphertext_len;
	int64_t at; /* created_at of a new row, updated_at */
};
/* Inserts, or replaces the sealed value of, (user_id, space_id, bot_id, name). */
int rk_db_secret_put(struct rk_db *db, const struct rk_secret_seal *r, struct rk_error *err);
/* The secrets of user in space and the requests still open:
 * [{name, bot, origin, auth, state, created_at, updated_at, reason}]. */
int rk_db_secret_list(struct rk_db *db, const char *user, const char *space, cJSON **out, struct rk_error *err);
/* The rows deleted (0 or 1). */
int rk_db_secret_delete(struct rk_db *db, const char *user, const char *space, const char *bot, const char *name,
			struct rk_error *err);
/* The bot's own row, else the user's one for every bot (bot_id ""): bot_id,
 * origin, auth, auth_param, nonce, ciphertext. RK_ENOTFOUND when none. */
int rk_db_secret_find(struct rk_db *db, const char *user, const char *space, const char *name, const char *bot,
		      struct rk_secret_row *out, struct rk_error *err);
/* Every secret of user in any space: space_id, bot_id, name, nonce, ciphertext. */
int rk_db_secret_list_user(struct rk_db *db, const char *user, struct rk_secret_row **out, size_t *n,
			   struct rk_error *err);
void rk_secret_rows_free(struct rk_secret_row *rows, size_t n);

struct rk_secret_request_row {
	const char *id, *run_id, *user_id, *space_id, *bot_id, *name, *origin, *auth, *auth_param, *reason;
	int64_t created_at;
};
int rk_db_secret_request_insert(struct rk_db *db, const struct rk_secret_request_row *r, struct rk_error *err);

#endif
