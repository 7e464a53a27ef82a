#ifndef RK_SPACE_H
#define RK_SPACE_H
/* Spaces: the named rooms computers, memory, secrets and approval rules
 * live in (engine/access/authz.h). A space is used by naming it (RAKAZO_SPACE,
 * --space); this module keeps the spaces someone made on purpose: a person
 * with `rakazo space create`, or a model with the create_space tool, which
 * always needs a person's approval (engine/access/approval.h). "default" always
 * exists. */

#include <cJSON.h>

#include "engine/access/authz.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"

/* Records space name (a valid name, rk_authz_name_ok) made by a (a bot's
 * call records the bot too), from run_id when a run made it (may be NULL).
 * RK_ECONFLICT when it exists. */
int rk_space_create(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *description,
		    const char *run_id, struct rk_error *err);
/* The spaces, "default" first, then by name: a cJSON array of {id,
 * description, created_by, run_id, created_at, computers}; caller deletes it. */
int rk_space_list(struct rk_engine *eng, cJSON **out, struct rk_error *err);

#endif
