#ifndef RK_WINDOW_H
#define RK_WINDOW_H
/* The active window of a display (id and title), for observations.
 *
 * Asking the computer costs a command round trip, far more than an
 * observe, so a watcher thread asks only after the screen changed (and at
 * most every RK_WINDOW_PROBE_MS) and observe reads the last answer. */
#include "providers/provider.h"
#include "engine/screen/screen.h"

#define RK_WINDOW_PROBE_MS 250

struct rk_window_watch;

/* Starts watching display of m (ops and m must outlive the watch) and
 * installs the probe on s. NULL when the provider cannot run commands. */
struct rk_window_watch *rk_window_watch_start(const struct rk_provider_ops *ops, const struct rk_machine *m,
					      int display, struct rk_screen *s);
/* Stops the thread; call before freeing s. NULL is fine. */
void rk_window_watch_stop(struct rk_window_watch *w);

/* Parses the probe command's output ("ID\nTITLE"): 0, or -1 when there is
 * no active window. id and title are malloc'd. Exposed for tests. */
int rk_window_parse(const char *out, char **id, char **title);
#endif
