/* Who acts (see actor.h). */

#include "engine/access/actor.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/buf.h"

int rk_authz_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '@' || c == '+' || c == '-'))
			return 0;
	}
	return 1;
}

/* RAKAZO_OWNER as the process was started (eng->owner is the API token
 * once a request is authenticated: the server's own identity stays this). */
static const char *process_owner(void)
{
	const char *o = getenv("RAKAZO_OWNER");
	return o && *o ? o : NULL;
}

static char *login_name(void)
{
	const char *u = getenv("RAKAZO_USER"), *o = process_owner();
	if (u && *u)
		return rk_xstrdup(u);
	if (o && !strncmp(o, "user:", 5))
		return rk_xstrdup(o + 5);
	struct passwd *pw = getpwuid(getuid());
	return pw ? rk_xstrdup(pw->pw_name) : rk_xasprintf("uid%d", (int)getuid());
}

int rk_actor_resolve(struct rk_actor *a, struct rk_engine *eng, const char *space, const char *bot,
		     struct rk_error *err)
{
	memset(a, 0, sizeof(*a));
	const char *sp = space && *space ? space : getenv("RAKAZO_SPACE");
	const char *o = process_owner();
	(void)eng;
	a->user = login_name();
	a->space = rk_xstrdup(sp && *sp ? sp : RK_SPACE_DEFAULT);
	if (!(bot && *bot) && o && !strncmp(o, "bot:", 4))
		bot = o + 4; /* RAKAZO_OWNER=bot:NAME: a bot acts */
	a->bot = bot && *bot ? rk_xstrdup(bot) : NULL;
	const char *bad = !rk_authz_name_ok(a->user)		? "user"
			  : !rk_authz_name_ok(a->space)		? "space"
			  : a->bot && !rk_authz_name_ok(a->bot) ? "bot"
								: NULL;
	if (bad) {
		int r = rk_error_set(err, RK_EINVALID,
				     "%s name '%s' is not valid: use 1 to 128 letters, digits and . _ @ + -", bad,
				     !strcmp(bad, "user")    ? a->user
				     : !strcmp(bad, "space") ? a->space
							     : a->bot);
		rk_actor_release(a);
		return r;
	}
	return 0;
}

void rk_actor_release(struct rk_actor *a)
{
	if (!a)
		return;
	free(a->user);
	free(a->space);
	free(a->bot);
	memset(a, 0, sizeof(*a));
}
