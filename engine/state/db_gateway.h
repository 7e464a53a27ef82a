#ifndef RK_DB_GATEWAY_H
#define RK_DB_GATEWAY_H
/* The screen gateway's table (engine/gateway/gateway.h): screen_capabilities,
 * one row per shared screen with only a hash of its token, the identity of
 * the slot's VNC socket it was made for, its forwarder's socket and who made
 * it. Its SQL lives here; tokens, policies and forwarders stay in
 * engine/gateway/gateway.c. Strings in a record are malloc'd and owned by it
 * (release it). */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

struct rk_screen_cap_row {
	char *id, *token_hash; /* token_hash: hex */
	char *computer_id;
	int display;
	char *bot_id; /* NULL for a share of a display */
	int64_t generation;
	char *policy; /* view or control */
	char *socket_path, *vnc_socket;
	int64_t vnc_dev, vnc_ino, vnc_ctime_ns;
	int64_t created_at, expires_at, revoked_at; /* revoked_at 0: not revoked */
	char *revoke_reason, *created_by;
	char *maker_user, *maker_space, *maker_bot, *maker_token; /* NULL in rows made before makers were kept */
};
void rk_screen_cap_row_release(struct rk_screen_cap_row *r);
void rk_screen_cap_rows_free(struct rk_screen_cap_row *rows, size_t n);

/* Records r (revoked_at and revoke_reason are left unset). */
int rk_db_screen_cap_insert(struct rk_db *db, const struct rk_screen_cap_row *r, struct rk_error *err);
/* By the hex of a token's hash: 1 with *out, 0 when none. */
int rk_db_screen_cap_by_hash(struct rk_db *db, const char *token_hash, struct rk_screen_cap_row *out,
			     struct rk_error *err);

/* Which capabilities to list; every condition set must hold. */
struct rk_screen_cap_filter {
	const char *id, *computer_id; /* NULL: any */
	int display;		      /* < 0: any */
	int control;		      /* 1: control ones only */
	int unrevoked;		      /* 1: not revoked */
	int64_t live_at;	      /* >= 0: not revoked and not expired at live_at (ms) */
};
/* The capabilities f selects, oldest first; *out malloc'd. */
int rk_db_screen_cap_list(struct rk_db *db, const struct rk_screen_cap_filter *f, struct rk_screen_cap_row **out,
			  size_t *n, struct rk_error *err);
/* Revokes capability id at now_ms for reason: 1 when revoked now, 0 when it
 * was already (or is unknown), < 0 on failure. */
int rk_db_screen_cap_revoke(struct rk_db *db, const char *id, const char *reason, int64_t now_ms, struct rk_error *err);

#endif
