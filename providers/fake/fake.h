#ifndef RK_FAKE_H
#define RK_FAKE_H
/* Private to the fake provider: fake.c (lifecycle, exec, files) and
 * screen.c (a framebuffer it draws itself, and the actions on it). */

#include "providers/provider.h"

/* Directory that holds one fake machine's state: DATA_DIR/fake/<ref>. malloc'd. */
char *rk_fake_machine_dir(const struct rk_machine *m);
/* An injected fault for op (RAKAZO_FAKE_FAULTS=op=fail|unavailable,...), or 0. */
int rk_fake_fault(const char *op, struct rk_error *err);

int rk_fake_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			  struct rk_screen_transport *out, struct rk_error *err);
int rk_fake_display_stop(const struct rk_machine *m, int display, struct rk_error *err);
int rk_fake_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err);
int rk_fake_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err);

#endif
