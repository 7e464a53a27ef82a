#ifndef RK_FAKE_MACHINE_H
#define RK_FAKE_MACHINE_H
/* Private to the fake provider: where one fake machine keeps its state and
 * the faults tests inject, used by its lifecycle (fake.c) and its screen
 * (screen.c). */

#include "providers/provider.h"

/* The ref of m's machine: m->ref, or when the engine has none (a provision
 * whose reply was lost) the one recorded for the computer. malloc'd or NULL. */
char *rk_fake_machine_ref(const struct rk_machine *m);
/* Records ref as the machine of m's computer (DATA_DIR/fake/by-computer/<id>). */
int rk_fake_record_machine(const struct rk_machine *m, const char *ref, struct rk_error *err);
/* Directory that holds one fake machine's state: DATA_DIR/fake/<ref>. malloc'd. */
char *rk_fake_machine_dir(const struct rk_machine *m);
/* An injected fault for op (RAKAZO_FAKE_FAULTS=op=fail|unavailable,...), or
 * 0; waits RAKAZO_FAKE_DELAY_MS first. Strikes before the action. */
int rk_fake_fault(const char *op, struct rk_error *err);
/* The fault that strikes after the action (op=lost_reply), or 0. */
int rk_fake_fault_after(const char *op, struct rk_error *err);

#endif
