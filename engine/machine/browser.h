#ifndef RK_BROWSER_H
#define RK_BROWSER_H
/* The page browser: a display's Chromium driven over the DevTools protocol,
 * without screenshots. The computer's Chromium speaks it on its own pipes,
 * which rakazo-agent's cdp-bridge puts on a unix socket in the computer's
 * run dir: no debugging port exists, on the host or in the computer.
 *
 *   navigate  {url, timeout_ms?}      load a page; wait for its load event
 *   snapshot  {screenshot?}           the page's interactive elements and text
 *                                     as a compact tree with stable refs
 *                                     ("e12"), title and URL
 *   act       {action: click|type|select|press|hover|scroll|fill_secret, ref?, ...}
 *
 * Refs live in the page, in rakazo's isolated world of it (the page cannot
 * see or change them): an element keeps its ref while it exists, across
 * snapshots; a ref whose element is gone is not_found. What the browser
 * tools do is real input to the visible tab, so a person watching the
 * screen sees it. A browser that went away (crashed, closed) is an
 * unavailable error; the next call starts it again with the same profile. */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine/machine/computer.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"

#define RK_BROWSER_NAVIGATE_TIMEOUT_MS 30000
#define RK_BROWSER_TIMEOUT_MAX_MS 120000
#define RK_BROWSER_SNAPSHOT_MAX 200000 /* bytes of tree text */

struct rk_browser;

/* Connects to display's Chromium on c (starting it, or starting it again,
 * with profile_dir: relative to the workspace; NULL: the display's default,
 * .browser-profiles/default on display 0). With extra_screen (a bot's
 * freshly claimed screen: engine/machine/team.h's rk_team_browser_begin is the way
 * in for bots), the display is always started through the provider, and
 * one it cannot start is MULTI_SCREEN_UNAVAILABLE. */
int rk_browser_connect(struct rk_engine *eng, struct rk_computer *c, int display, const char *profile_dir,
		       int extra_screen, struct rk_browser **out, struct rk_error *err);
/* 0 when c has a page browser (its provider's pageBrowser capability and a
 * desktop), else RK_EUNSUPPORTED saying so. */
int rk_browser_supported(const struct rk_computer *c, struct rk_error *err);
/* The same on a bridge socket itself (tests, benchmarks). */
int rk_browser_open(const char *cdp_socket, struct rk_browser **out, struct rk_error *err);
void rk_browser_close(struct rk_browser *b);

/* Each returns a JSON object (caller frees) in *out. */
int rk_browser_navigate(struct rk_browser *b, const char *url, int timeout_ms, cJSON **out, struct rk_error *err);
/* {url, title, elements, truncated, tree}; with screenshot, *png (malloc'd). */
int rk_browser_snapshot(struct rk_browser *b, int screenshot, cJSON **out, unsigned char **png, size_t *png_len,
			struct rk_error *err);
/* Whose secrets fill_secret may type (engine/access/secret.h). */
struct rk_actor;
struct rk_browser_secrets {
	struct rk_engine *eng;
	const struct rk_actor *actor;
};
/* action: {action, ref?, text?, value?, key?, dx?, dy?, submit?, name?,
 * part?}; checked before anything runs. fill_secret {ref, name, part?,
 * submit?} types the stored secret name into the text field ref, only when
 * the field's frame (and every frame above it) is of the secret's stored
 * origin as the browser knows it (else RK_EDENIED, and the value is not
 * even decrypted), with CDP input, never through a script; a page that
 * navigates, or moves the focus off the field, before it is typed is
 * RK_EDENIED with nothing typed. part username or password picks half
 * of a basic (user:password) login. The value is in no result (they are
 * redacted) and the field shows as [secret] in snapshots. sec NULL:
 * fill_secret is unsupported. */
int rk_browser_act(struct rk_browser *b, const cJSON *action, const struct rk_browser_secrets *sec, cJSON **out,
		   struct rk_error *err);

/* Checks an act request without a browser (also for tests). */
int rk_browser_action_check(const cJSON *action, struct rk_error *err);
#endif
