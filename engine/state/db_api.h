#ifndef RK_DB_API_H
#define RK_DB_API_H
/* The API's tables (engine/state/db_api.c): tokens, rights of bots on
 * computers, paired machines and usage records. The state wing owns them;
 * the API server (api/api.h includes this header), authz and the gateway
 * read them. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* --- tokens (engine/state/db_api.c) ----------------------------------------------------- */
struct rk_api_token {
	char *id, *name, *bot_id;		      /* bot_id NULL: a member's token */
	int64_t created_at, last_used_at, revoked_at; /* 0: never */
};
void rk_api_token_release(struct rk_api_token *t);
/* Makes a token; *secret (malloc'd) is the bearer text, shown once. */
int rk_api_token_create(struct rk_db *db, const char *name, const char *bot_id, char **secret, struct rk_api_token *out,
			struct rk_error *err);
int rk_api_token_list(struct rk_db *db, struct rk_api_token **out, size_t *n, struct rk_error *err);
/* By id or name; RK_ENOTFOUND when none is live. */
int rk_api_token_revoke(struct rk_db *db, const char *id_or_name, struct rk_api_token *out, struct rk_error *err);
/* The live token whose secret this is; RK_EDENIED otherwise. */
int rk_api_token_verify(struct rk_db *db, const char *secret, struct rk_api_token *out, struct rk_error *err);
/* 1 while token id is live, 0 once revoked or gone. */
int rk_api_token_live(struct rk_db *db, const char *id, struct rk_error *err);
cJSON *rk_api_token_to_json(const struct rk_api_token *t);

/* --- rights (engine/state/db_api.c) ------------------------------------------------------ */
struct rk_api_right {
	char *computer_id, *bot_id, *granted_by;
	int64_t created_at;
};
void rk_api_right_release(struct rk_api_right *r);
int rk_api_right_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *granted_by,
		     struct rk_api_right *out, struct rk_error *err);
int rk_api_right_get(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_api_right *out,
		     struct rk_error *err);
int rk_api_right_delete(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_error *err);
int rk_api_right_list(struct rk_db *db, const char *computer_id, struct rk_api_right **out, size_t *n,
		      struct rk_error *err);

/* Paired machines: a computer of kind "paired" (offline until its machine
 * connects) and its secret, shown once as "cmp_....SECRET". */
int rk_api_pair_create(struct rk_db *db, const char *name, const char *owner, char **computer_id, char **secret,
		       struct rk_error *err);
/* The computer whose machine secret this is; RK_EDENIED otherwise. */
int rk_api_pair_verify(struct rk_db *db, const char *secret, char **computer_id, struct rk_error *err);

/* At a server's start: no paired machine is connected to it yet. */
int rk_api_pair_reset(struct rk_db *db, struct rk_error *err);

/* Usage records of a computer, oldest first: *out holds 2*n values (started,
 * ended; ended 0 while open). malloc'd. */
int rk_api_usage_list(struct rk_db *db, const char *computer_id, int64_t **out, size_t *n, struct rk_error *err);

#endif
