#ifndef RK_AUTHZ_H
#define RK_AUTHZ_H
/* Authorization: who acts (a user in a space, maybe through a bot), who a
 * computer belongs to, which bots may use it, and the capability check
 * every computer action goes through.
 *
 * Identity: who acts, a user in a space maybe through a bot
 * (engine/access/actor.h).
 *
 * Ownership. A computer belongs to its creator (a member, "user:NAME") or to
 * the organization ("org"), never to a bot, and lives in one space (the one
 * it was created in; computers made before spaces existed are in
 * "default"). Computers of other spaces are invisible: not listed, and
 * named they are not found.
 *
 * Rights. A bot uses a computer only with a grant (`rakazo computer grant
 * COMPUTER --bot B`) from the owner (any member for an org computer). A
 * person uses their own computers and the org's in their space. The rights
 * are read again before every action (rk_authz_check), so a revoke stops
 * the next one: the next tool call, the next input to a live shell.
 *
 * Capabilities (computers.use, computers.acquire, computers.create,
 * computers.delete, computers.expose) go through a chain of deciders: the
 * rules above, then the approval rules (engine/access/approval.h, matched as a tool
 * named after the capability). An action no decider allows does not run;
 * the error (RK_EDENIED) says why. */

#include <stdint.h>

#include "engine/access/actor.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"


/* --- computers ------------------------------------------------------------ */

/* Records a new computer's space and owner ("user:NAME" or "org"). */
int rk_authz_computer_record(struct rk_engine *eng, const char *computer_id, const char *space, const char *owner,
			     struct rk_error *err);
/* The space and owner of a computer (malloc'd). */
int rk_authz_computer_place(struct rk_engine *eng, const struct rk_computer *c, char **space, char **owner,
			    struct rk_error *err);
/* 1 when the computer is in a's space. */
int rk_authz_visible(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c);
int rk_authz_grant(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		   struct rk_error *err);
/* RK_ENOTFOUND when the bot had no grant. */
int rk_authz_revoke(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		    struct rk_error *err);
/* The bots granted the computer, oldest first: a cJSON array of
 * {bot, granted_by, created_at}; caller deletes it. */
int rk_authz_rights(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err);

/* The capability check: 0 when a may do capability on c (c NULL for
 * computers.create); RK_EDENIED with the reason otherwise. The approval
 * decider only allows or denies here (nobody waits on a command line):
 * require_approval on a capability denies it outside a run. */
int rk_authz_check(struct rk_engine *eng, const struct rk_actor *a, const char *capability, const struct rk_computer *c,
		   struct rk_error *err);

/* --- targets: the one resolver ------------------------------------------------ */

/* A target names a computer and, on it, maybe one screen (tmux's
 * session:window.pane, on computers):
 *
 *   COMPUTER        a computer: its name, its id, or a unique prefix of its
 *                   id of at least RK_TARGET_PREFIX_MIN characters
 *   COMPUTER:BOT    the bot's own screen on the computer
 *   COMPUTER:.N     display N (0..63) of the computer
 *
 * Computer names are letters, digits, - _ . and never hold a ':', so the
 * first ':' splits. A prefix that fits several computers the caller can see
 * is RK_EINVALID (exit 2), the message listing them: the caller types more
 * of it. Every id and name `rakazo computer list` and the TUI show is one. */
#define RK_TARGET_PREFIX_MIN 6
#define RK_TARGET_DISPLAY_MAX 63

struct rk_target {
	struct rk_computer computer;
	char *bot;   /* COMPUTER:BOT, or NULL */
	int display; /* COMPUTER:.N, or -1 when none was named */
};

/* Splits ref into its parts without looking anything up: computer (malloc'd),
 * bot (malloc'd or NULL), display (-1 when not named). RK_EUSAGE for an empty
 * ref, RK_EINVALID for a malformed one. The only parser of a target. */
int rk_target_parse(const char *ref, char **computer, char **bot, int *display, struct rk_error *err);

/* The one resolver: every command, route, tool and panel that acts on a
 * computer or a screen turns (identity, reference) into a target here.
 * Another space's computer is not found (RK_ENOTFOUND: it is invisible); one
 * a may not do capability on is RK_EDENIED (rk_authz_check), so nothing is
 * done. capability NULL: found only, for a caller that checks a right of
 * its own (grant, revoke). Fills out (release with rk_target_release), left
 * empty on failure. */
int rk_target_resolve(struct rk_engine *eng, const struct rk_actor *a, const char *ref, const char *capability,
		      struct rk_target *out, struct rk_error *err);
void rk_target_release(struct rk_target *t);

/* rk_target_resolve for what acts on a whole computer: a screen form
 * (COMPUTER:BOT, COMPUTER:.N) is RK_EINVALID here. Fills out (release with
 * rk_computer_release), left empty on failure. */
int rk_authz_resolve(struct rk_engine *eng, const struct rk_actor *a, const char *ref, const char *capability,
		     struct rk_computer *out, struct rk_error *err);
/* The same check for what outlives its computer (a lifecycle command and
 * its events): computer_id may be deleted, and then the space and owner it
 * was recorded with decide. */
int rk_authz_check_id(struct rk_engine *eng, const struct rk_actor *a, const char *computer_id, const char *capability,
		      struct rk_error *err);
/* 1 when a may use c by the ownership and grant rules (no approval asked):
 * what a list of computers shows a. */
int rk_authz_may_use(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c);
/* The same for what outlives its computer (a screen capability): a
 * deleted computer_id is decided by the space and owner it was recorded with. */
int rk_authz_may_use_id(struct rk_engine *eng, const struct rk_actor *a, const char *computer_id);

#endif
