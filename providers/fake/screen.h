#ifndef RK_FAKE_SCREEN_H
#define RK_FAKE_SCREEN_H
/* Private to the fake provider: the screen (screen.c) its ops table (fake.c)
 * hands out, a framebuffer it draws itself and the actions on it. */

#include "providers/provider.h"

int rk_fake_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			  struct rk_screen_transport *out, struct rk_error *err);
int rk_fake_display_stop(const struct rk_machine *m, int display, struct rk_error *err);
int rk_fake_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err);
int rk_fake_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err);

#endif
