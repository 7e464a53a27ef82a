#include "engine/machine/hook.h"

#include <stddef.h>

static struct rk_hooks table;

/* Every field, for the registration and the check: one line an event. */
#define EACH_HOOK(X)                                                                                                   \
	X(before_provision)                                                                                            \
	X(after_provision)                                                                                             \
	X(after_resume)                                                                                                \
	X(before_lifecycle)                                                                                            \
	X(deleted)                                                                                                     \
	X(waiting)                                                                                                     \
	X(computer_down)                                                                                               \
	X(display_closing)                                                                                             \
	X(control_released)                                                                                            \
	X(reap_runs)                                                                                                   \
	X(resume_runs)

void rk_hooks_register(const struct rk_hooks *h)
{
#define TAKE(f)                                                                                                        \
	if (h->f)                                                                                                      \
		table.f = h->f;
	EACH_HOOK(TAKE)
#undef TAKE
}

const struct rk_hooks *rk_hooks(void)
{
	return &table;
}

int rk_hooks_check(struct rk_error *err)
{
#define CHECK_SET(f)                                                                                                   \
	if (!table.f)                                                                                                  \
		return rk_hook_unset(#f, err);
	EACH_HOOK(CHECK_SET)
#undef CHECK_SET
	return 0;
}

void rk_hooks_reset(void)
{
	table = (struct rk_hooks){0};
}

int rk_hook_unset(const char *event, struct rk_error *err)
{
	return rk_error_set(err, RK_EFAILED,
			    "engine hook %s is not registered: the engine was opened without rk_engine_hooks_init",
			    event);
}
