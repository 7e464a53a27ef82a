/* Spaces someone made on purpose (see space.h). */

#include "engine/access/space.h"

#include <stdlib.h>
#include <string.h>

#include "engine/state/db_access.h"
#include "engine/util/buf.h"
#include "engine/util/time.h"

int rk_space_create(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *description,
		    const char *run_id, struct rk_error *err)
{
	if (!rk_authz_name_ok(name))
		return rk_error_set(err, RK_EINVALID,
				    "space name '%s' is not valid: use 1 to 128 letters, digits and . _ @ + -",
				    name ? name : "");
	if (!strcmp(name, RK_SPACE_DEFAULT))
		return rk_error_set(err, RK_ECONFLICT, "space '%s' always exists", name);
	if (description && strlen(description) > 1000)
		return rk_error_set(err, RK_EINVALID, "a space's description is at most 1000 bytes");
	char *by = a->bot ? rk_xasprintf("user:%s/bot:%s", a->user, a->bot) : rk_xasprintf("user:%s", a->user);
	int r = rk_db_space_insert(eng->db, name, description, by, run_id, rk_now_ms(), err);
	free(by);
	if (r == 0)
		r = rk_error_set(err, RK_ECONFLICT, "space '%s' exists", name);
	return r < 0 ? r : 0;
}

int rk_space_list(struct rk_engine *eng, cJSON **out, struct rk_error *err)
{
	return rk_db_space_list(eng->db, out, err);
}
