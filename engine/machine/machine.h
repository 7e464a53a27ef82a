#ifndef RK_MACHINE_H
#define RK_MACHINE_H
/* A computer's machine: which provider serves it and the struct rk_machine
 * a provider call needs. The machine wing reaches providers through here. */

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"

/* The provider of a computer; RK_EUNAVAILABLE when the kind is unknown here. */
const struct rk_provider_ops *rk_engine_provider(const struct rk_computer *c, struct rk_error *err);

/* A struct rk_machine for a computer, with the strings it points to. */
struct rk_machine_ctx {
	struct rk_machine m;
	char *home_dir, *run_dir;
};
void rk_machine_ctx_init(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c);
void rk_machine_ctx_release(struct rk_machine_ctx *mc);

#endif
