#ifndef RK_TEAM_H
#define RK_TEAM_H
/* Team computers (issue 8). A Team computer is shared by bots: each bot
 * works in bots/<bot-id>/ and deliberate shared work goes in shared/ (both
 * made on the bot's first call). These folders organize work; they are not
 * a security boundary: every bot on the computer can reach all of it. On a
 * Private computer the whole workspace is the bot's home.
 *
 * Each bot gets its own screen, lazily: its first graphical call claims a
 * display slot (a row of display_slots: computer, slot, bot, state,
 * generation) and starts that display with Chromium on the bot's persistent
 * profile .browser-profiles/<bot-id>. Profiles are keyed by the bot: never
 * copied, merged or deleted, so a bot that comes back on another slot has
 * its own profile again. There is no default cap on screens;
 * SANDBOX_TEAM_SCREEN_LIMIT sets a hard one. Past it, or when the provider
 * cannot start another display, graphical calls fail with
 * MULTI_SCREEN_UNAVAILABLE; shell and file calls keep working.
 *
 * A bot's calls carry its fenced execution lease (engine/machine/lease.h): with a
 * fence the call checks it is live; without one the call takes the bot's
 * lease for its own length, so one bot runs one task at a time and distinct
 * bots run in parallel. A person can take control of a bot's screen
 * (takeover): refused with conflict ("Stop the bot first") while the bot
 * holds a live lease or has an active run, unless the run is
 * waiting_takeover; while a person has control, the bot's screen actions
 * are refused with conflict. */

#include <cJSON.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/machine/display.h"
#include "engine/state/engine.h"
#include "engine/util/names.h"

#define RK_TEAM_CONTROL_TTL_DEFAULT_MS (15 * 60 * 1000)
#define RK_TEAM_BOT_MAX 64

/* Bot ids: 1 to 64 of [A-Za-z0-9_.-], not starting with '.'. */
int rk_team_bot_check(const char *bot, struct rk_error *err);

/* A workspace path as the bot means it (malloc'd in *out). On a Team
 * computer a relative path is inside bots/<bot>/; one whose first segment
 * is shared or bots, or that starts with "~/" (the workspace root, "~"
 * alone is the root), is taken from the root; an absolute path is the
 * machine's own. Without a bot, or on a Private computer, path is as given.
 * path NULL is "" (the bot's folder). */
int rk_team_path(const struct rk_computer *c, const char *bot, const char *path, char **out, struct rk_error *err);

/* Makes shared/ and bots/<bot>/ on a Team computer, once per machine. */
int rk_team_layout(struct rk_engine *eng, struct rk_computer *c, const char *bot, struct rk_error *err);

/* A bot's call: the lease it carries, taken or checked by begin. */
enum rk_team_use {
	RK_TEAM_USE_WORK, /* shell and files */
	RK_TEAM_USE_VIEW, /* screenshots */
	RK_TEAM_USE_ACT,  /* screen actions: refused while a person has control */
};
struct rk_team_call {
	char *computer_id, *bot, *holder;
	int64_t fence;
	int own; /* begin took the lease; end gives it back */
};
/* fence > 0: the caller's token, checked (RK_ESTALE when superseded); 0:
 * the call takes the bot's lease (RK_ECONFLICT while another holder has it).
 * Also RK_ECONFLICT while the computer is reserved (engine/machine/reservation.h). */
int rk_team_call_begin(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
		       enum rk_team_use use, struct rk_team_call *call, struct rk_error *err);
/* Checks again that the call's fence is live (before each provider action). */
int rk_team_call_check(struct rk_engine *eng, const struct rk_team_call *call, struct rk_error *err);
void rk_team_call_end(struct rk_engine *eng, struct rk_team_call *call);

/* --- screens ------------------------------------------------------------------ */

/* For the screen gateway: the live display slot of (computer, bot) and the
 * slot's generation (it grows each time the slot gets a new tenant, so a
 * capability bound to (slot, generation) cannot reach the next one).
 * RK_ENOTFOUND when the bot has no live screen. */
int rk_team_screen_slot(struct rk_engine *eng, const char *computer_id, const char *bot_id, int *slot,
			int64_t *generation, struct rk_error *err);

/* The bot on display slot of computer_id (1, *bot_id malloc'd, with the
 * slot's generation), or 0 when no bot has it: a --display share of a bot's
 * slot is a share of that bot's screen. */
int rk_team_slot_tenant(struct rk_engine *eng, const char *computer_id, int slot, char **bot_id, int64_t *generation,
			struct rk_error *err);

int rk_team_screen_observe(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
			   const struct rk_display_observe_options *opt, struct rk_display_shot *out,
			   struct rk_error *err);
int rk_team_screen_act(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
		       const char *batch_json, int settle_ms, int observe, const struct rk_display_observe_options *opt,
		       struct rk_display_act_result *out, struct rk_error *err);
/* A page-browser call (engine/machine/browser.h). With a bot: the bot's own
 * Chromium on its own screen and profile (.browser-profiles/<bot>), under
 * the same lease, slot claim and takeover checks as its screen calls (act:
 * a call that changes the page, refused while a person has control; a
 * display that cannot start is MULTI_SCREEN_UNAVAILABLE). Without one:
 * display's Chromium on profile_dir (NULL: the display's default), as
 * rk_browser_connect. End every begun call, failed or not, with _end. */
struct rk_browser;
struct rk_team_browser {
	struct rk_browser *browser; /* connected */
	int display;		    /* the display it is on (a bot's slot) */
	int64_t generation;	    /* the bot's slot generation; 0 without a bot */
	struct rk_team_call call;   /* the bot's call; zero without a bot */
};
int rk_team_browser_begin(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence, int display,
			  const char *profile_dir, int act, struct rk_team_browser *tb, struct rk_error *err);
/* Adds bot_id, slot and generation to doc when the call is a bot's. */
void rk_team_browser_stamp(const struct rk_team_browser *tb, cJSON *doc);
void rk_team_browser_end(struct rk_engine *eng, struct rk_team_browser *tb);

/* Closes the bot's Chromium cleanly (its profile stays), stops the display
 * and frees the slot. If teardown fails the slot stays reserved
 * ("releasing") and a second release retries it. */
int rk_team_screen_release(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
			   struct rk_error *err);
/* The machine's displays are gone (it stopped; the computer_down hook):
 * every slot of the computer is free again; the bots' profiles stay. */
int rk_team_screens_forget(struct rk_engine *eng, const char *computer_id, struct rk_error *err);
/* [{slot, bot_id, state, generation, profile, control}] of c; owned by the caller. */
int rk_team_screen_list(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err);
/* The screens c has live now: its main display while it runs with a
 * desktop, and the bots' screens (one display on a provider without
 * multiScreen); 0 when stopped. Reads the database only. */
int rk_team_screen_count(struct rk_db *db, const struct rk_computer *c);
/* describe()'s capabilities for c: {graphical, multiScreen, screen_limit, takeover, pty, persistentHome, snapshots,
 * pageBrowser}. */
cJSON *rk_team_capabilities(const struct rk_computer *c);

/* --- control (takeover) -------------------------------------------------------------- */

/* Grants eng->owner an exclusive control lease on bot's screen for ttl_ms
 * (0: RAKAZO_TAKEOVER_TTL_MS, else 15 min). The same person again extends
 * it. *out: {computer_id, bot_id, holder, lease_id, expires_at}. */
int rk_team_takeover(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t ttl_ms, cJSON **out,
		     struct rk_error *err);
/* Ends eng->owner's control of bot's screen; RK_ENOTFOUND when nobody has
 * it, RK_EDENIED when another person does. A run of the bot that waits for
 * a takeover (request_takeover) goes on, as `rakazo run continue` without a
 * note would make it. The bot of a run without one is "default" (its
 * execution lease's; engine/agent/run.h), the bot of the main display. */
int rk_team_release_control(struct rk_engine *eng, struct rk_computer *c, const char *bot, struct rk_error *err);
/* 1 when a person controls (computer, bot) now (bot NULL: any bot); *holder malloc'd when asked. */
int rk_team_control_live(struct rk_db *db, const char *computer_id, const char *bot_id, char **holder);

/* Whether a person may take control of bot's screen now: RK_ECONFLICT
 * ("Stop the bot first") while the bot holds a live execution lease or has
 * an active run, unless its run is waiting_takeover (then 0, and
 * *waiting_run, when asked, is that run's id, malloc'd). The one check of
 * takeover and of the screen gateway's control capabilities. */
int rk_team_bot_busy(struct rk_db *db, const char *computer_id, const char *computer_name, const char *bot_id,
		     char **waiting_run, struct rk_error *err);

/* The bot's most pressing run on the computer: "running" or "queued"
 * (active), else "waiting_takeover", else NULL (*state malloc'd); *run_id
 * too when asked. Reads the runs table itself until engine/agent/run.h has its
 * own function for this (then this one is swapped for it). */
int rk_team_bot_run_state(struct rk_db *db, const char *computer_id, const char *bot_id, char **state, char **run_id,
			  struct rk_error *err);

/* A bot slot's state on a team computer (display_slots.state). */
#define RK_SLOT_STATES(X)                                                                                              \
	X(RK_SLOT_FREE, "free")                                                                                        \
	X(RK_SLOT_STARTING, "starting")                                                                                \
	X(RK_SLOT_LIVE, "live")                                                                                        \
	X(RK_SLOT_RELEASING, "releasing")
RK_NAMES_ENUM(rk_slot_state, RK_SLOT_STATE, RK_SLOT_STATES);

#endif
