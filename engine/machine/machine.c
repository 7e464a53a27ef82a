#include "engine/machine/machine.h"

#include <stdlib.h>
#include <string.h>

#include "engine/machine/limits.h"
#include "engine/util/buf.h"

const struct rk_provider_ops *rk_engine_provider(const struct rk_computer *c, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops)
		rk_error_set(err, RK_EUNAVAILABLE, "computer '%s' uses provider '%s', which this rakazo does not have",
			     c->name, c->kind);
	return ops;
}

void rk_machine_ctx_init(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c)
{
	memset(mc, 0, sizeof(*mc));
	mc->home_dir = rk_xasprintf("%s/homes/%s", eng->data_dir, c->home_key);
	mc->run_dir = rk_xasprintf("%s/run/%s", eng->data_dir, c->id);
	mc->m.computer_id = c->id;
	mc->m.home_key = c->home_key;
	mc->m.data_dir = eng->data_dir;
	mc->m.home_dir = mc->home_dir;
	mc->m.run_dir = mc->run_dir;
	mc->m.ref = c->provider_ref;
	mc->m.options_json = c->options;
	rk_computer_limits(c, &mc->m.limits);
}

void rk_machine_ctx_release(struct rk_machine_ctx *mc)
{
	free(mc->home_dir);
	free(mc->run_dir);
	memset(mc, 0, sizeof(*mc));
}
