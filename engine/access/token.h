#ifndef RK_TOKEN_H
#define RK_TOKEN_H
/* API tokens as a service: what `rakazo serve` and `rakazo serve token`
 * make, list, revoke and check. A token is a member's (bot_id NULL) or a
 * bot's; only a SHA-256 of its secret is stored (engine/state/db_api.h
 * keeps the table), so a secret is shown once, when it is made. */

#include <cJSON.h>

#include "engine/state/db_api.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"

/* Makes token name (for bot_id, or a member's when NULL); *secret
 * (malloc'd) is the bearer text, *out the record (rk_api_token_release). */
int rk_token_create(struct rk_engine *eng, const char *name, const char *bot_id, char **secret,
		    struct rk_api_token *out, struct rk_error *err);
/* Every token, revoked ones too, as a cJSON array of records; caller deletes it. */
int rk_token_list(struct rk_engine *eng, cJSON **out, struct rk_error *err);
/* Revokes the live token with this id or name; *out is its record (caller
 * deletes it). RK_ENOTFOUND when none is live. */
int rk_token_revoke(struct rk_engine *eng, const char *id_or_name, cJSON **out, struct rk_error *err);
/* The live token whose secret this is; RK_EDENIED otherwise. */
int rk_token_verify(struct rk_engine *eng, const char *secret, struct rk_api_token *out, struct rk_error *err);
/* 1 while token id is live, 0 once revoked or gone, <0 on a failure. */
int rk_token_live(struct rk_engine *eng, const char *id, struct rk_error *err);

#endif
