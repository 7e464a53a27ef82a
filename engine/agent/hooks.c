#include "engine/agent/hooks.h"

#include "engine/agent/run.h"
#include "engine/gateway/gateway.h"
#include "engine/machine/checkpoint.h"
#include "engine/machine/hook.h"
#include "engine/machine/team.h"
#include "engine/machine/worker.h"

void rk_engine_hooks_init(void)
{
	static const struct rk_hooks answers = {
		/* the lifecycle's provider calls: the workspace and its checkpoints */
		.before_provision = rk_checkpoint_before_provision,
		.after_provision = rk_checkpoint_after_provision,
		.after_resume = rk_checkpoint_after_resume,
		.before_lifecycle = rk_checkpoint_before_lifecycle,
		.deleted = rk_checkpoint_forget,
		/* a caller waits for a saved command: a worker runs it */
		.waiting = rk_worker_ensure,
		/* a machine went down: its bots' screens are free again */
		.computer_down = rk_team_screens_forget,
		/* the screen gateway lets go of a display, and of a person's control */
		.display_closing = rk_gateway_teardown_slot,
		.control_released = rk_gateway_revoke_control,
		/* the worker's passes end runs that went quiet */
		.reap_runs = rk_run_reap,
		/* and resume those that asked for it */
		.resume_runs = rk_run_auto_resume,
	};
	rk_hooks_register(&answers);
}
