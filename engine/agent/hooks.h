#ifndef RK_AGENT_HOOKS_H
#define RK_AGENT_HOOKS_H
/* Engine start: which module answers each hook of the machine wing
 * (engine/machine/hook.h), in one table. It sits in the top engine wing
 * because its answers come from every wing: checkpoint, worker and team
 * (machine), the gateway, and the run loop (agent).
 *
 * Every program that opens an engine for use calls it once at start:
 * rakazo's main (cmd/main.c: every command, `serve` and the dashboard), the
 * unit tests and the benches. Helpers started with rk_engine_spawn (display
 * and session holders, forwarders, a detached run) are forks and inherit
 * it; a worker exec'd as `rakazo worker` goes through main again, and
 * refuses to start without it (rk_worker_run). Calling it again is
 * harmless. */

void rk_engine_hooks_init(void);

#endif
