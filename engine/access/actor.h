#ifndef RK_ACTOR_H
#define RK_ACTOR_H
/* Who acts: a user in a space, maybe through a bot. The bottom of the
 * access wing: secrets, approvals and authorization (engine/access/authz.h,
 * which consults the approval rules) all take an actor.
 *
 * The user is RAKAZO_USER, else the name in RAKAZO_OWNER ("user:NAME"),
 * else the login name; the space is the --space flag, else RAKAZO_SPACE,
 * else "default". A bot acts when one is named (a run's --bot) or
 * RAKAZO_OWNER is "bot:NAME". Names are 1 to 128 of [A-Za-z0-9._@+-]. */

#include "engine/state/engine.h"
#include "engine/util/err.h"

#define RK_SPACE_DEFAULT "default"

struct rk_actor {
	char *user;  /* "alice" */
	char *space; /* "default" */
	char *bot;   /* NULL: the person acts */
};

/* Fills a from the environment (see above); space may be NULL (then
 * RAKAZO_SPACE or the default), bot may be NULL. RK_EINVALID for a malformed
 * name. Release with rk_actor_release. */
int rk_actor_resolve(struct rk_actor *a, struct rk_engine *eng, const char *space, const char *bot,
		     struct rk_error *err);
void rk_actor_release(struct rk_actor *a);
/* 1 when s is a valid user, space or bot name. */
int rk_authz_name_ok(const char *s);

#endif
