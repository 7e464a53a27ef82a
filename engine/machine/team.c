#include "engine/machine/team.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/machine/browser.h"
#include "engine/machine/computer.h"
#include "engine/state/db_runs.h"
#include "engine/state/db_team.h"
#include "engine/machine/execution.h"
#include "engine/machine/hook.h"
#include "engine/machine/idle.h"
#include "engine/machine/lease.h"
#include "engine/machine/reservation.h"
#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "providers/script.h"

RK_NAMES_DEFINE(rk_slot_state, RK_SLOT_STATE, RK_SLOT_STATES)

#define SLOT_MAX 63 /* the display module's highest display */
#define BROWSER_CLOSE_MS 10000

static int is_team(const struct rk_computer *c)
{
	return rk_computer_mode_of(c->mode) == RK_COMPUTER_TEAM;
}

int rk_team_bot_check(const char *bot, struct rk_error *err)
{
	if (!bot || !*bot)
		return rk_error_set(err, RK_EUSAGE, "a bot id is required (--bot BOT)");
	size_t n = strlen(bot);
	if (n > RK_TEAM_BOT_MAX || bot[0] == '.')
		return rk_error_set(err, RK_EINVALID, "bot id '%s' must be 1 to %d characters and not start with '.'",
				    n > 80 ? "(too long)" : bot, RK_TEAM_BOT_MAX);
	for (const char *p = bot; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return rk_error_set(err, RK_EINVALID,
					    "bot id '%s' may only hold letters, digits, '-', '_' and '.'", bot);
	return 0;
}

/* --- paths ------------------------------------------------------------------------- */

static int first_segment_is(const char *p, const char *seg)
{
	while (*p == '/' || *p == '\\')
		p++;
	size_t n = strlen(seg);
	return strncmp(p, seg, n) == 0 && (p[n] == '\0' || p[n] == '/' || p[n] == '\\');
}

int rk_team_path(const struct rk_computer *c, const char *bot, const char *path, char **out, struct rk_error *err)
{
	if (!path)
		path = "";
	if (!bot || !is_team(c)) {
		*out = rk_xstrdup(path);
		return 0;
	}
	int r = rk_team_bot_check(bot, err);
	if (r)
		return r;
	if (path[0] == '/') /* the machine's own path */
		*out = rk_xstrdup(path);
	else if (!strcmp(path, "~"))
		*out = rk_xstrdup("");
	else if (path[0] == '~' && (path[1] == '/' || path[1] == '\\'))
		*out = rk_xstrdup(path + 2);
	else if (first_segment_is(path, "shared") || first_segment_is(path, "bots"))
		*out = rk_xstrdup(path);
	else if (!*path || !strcmp(path, "."))
		*out = rk_xasprintf("bots/%s", bot);
	else
		*out = rk_xasprintf("bots/%s/%s", bot, path);
	return 0;
}

/* Runs a short shell command in the machine (no stdin), up to timeout_ms. */
static int machine_sh(struct rk_engine *eng, const struct rk_computer *c, const char *command, int64_t timeout_ms,
		      int *code, struct rk_error *err)
{
	return rk_computer_sh(eng, c, command, timeout_ms, code, NULL, err);
}

int rk_team_layout(struct rk_engine *eng, struct rk_computer *c, const char *bot, struct rk_error *err)
{
	if (!bot || !is_team(c))
		return 0;
	int r = rk_team_bot_check(bot, err);
	if (r || (r = rk_computer_ensure_running(eng, c, err)))
		return r;
	int done = rk_db_team_bot_laid_out(eng->db, c->id, bot, c->provider_ref, err);
	if (done)
		return done < 0 ? done : 0;
	/* bot ids hold no shell metacharacters (rk_team_bot_check) */
	char *cmd = rk_xasprintf("mkdir -p shared 'bots/%s'", bot);
	int code = 0;
	r = machine_sh(eng, c, cmd, 30000, &code, err);
	free(cmd);
	if (r == 0 && code != 0)
		r = rk_error_set(err, RK_EFAILED, "cannot make shared/ and bots/%s/ on computer '%s' (exit %d)", bot,
				 c->name, code);
	if (r)
		return r;
	return rk_db_team_bot_put(eng->db, c->id, bot, c->provider_ref, rk_now_ms(), err);
}

/* --- runs and control --------------------------------------------------------------------- */

int rk_team_bot_run_state(struct rk_db *db, const char *computer_id, const char *bot_id, char **state, char **run_id,
			  struct rk_error *err)
{
	return rk_db_run_live_of_bot(db, computer_id, bot_id, state, run_id, err);
}

int rk_team_control_live(struct rk_db *db, const char *computer_id, const char *bot_id, char **holder)
{
	return rk_db_control_live(db, computer_id, bot_id, rk_now_ms(), holder);
}

int rk_team_bot_busy(struct rk_db *db, const char *computer_id, const char *computer_name, const char *bot_id,
		     char **waiting_run, struct rk_error *err)
{
	char *state = NULL, *run = NULL;
	if (waiting_run)
		*waiting_run = NULL;
	int r = rk_team_bot_run_state(db, computer_id, bot_id, &state, &run, err);
	if (r)
		return r;
	if (rk_run_state_of(state) == RK_RUN_WAITING_TAKEOVER) {
		if (waiting_run)
			*waiting_run = run;
		else
			free(run);
		free(state);
		return 0;
	}
	if (state) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "Stop the bot first: bot '%s' has an active run %s (%s) on computer '%s'", bot_id, run,
				 state, computer_name);
	} else {
		struct rk_lease l = {0};
		struct rk_error e2;
		if (rk_db_lease_get(db, computer_id, bot_id, &l, &e2) == 0 && l.holder && l.expires_at > rk_now_ms())
			r = rk_error_set(
				err, RK_ECONFLICT,
				"Stop the bot first: bot '%s' holds a live execution lease on computer '%s' (%s, "
				"fence %lld)",
				bot_id, computer_name, l.holder, (long long)l.fence);
		rk_lease_release_record(&l);
	}
	free(state);
	free(run);
	return r;
}

/* --- a bot's call ----------------------------------------------------------------------- */

int rk_team_call_begin(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
		       enum rk_team_use use, struct rk_team_call *call, struct rk_error *err)
{
	memset(call, 0, sizeof(*call));
	int r = rk_team_bot_check(bot, err);
	if (r || (r = rk_reservation_check(eng->db, c->id, err)))
		return r;
	if (use == RK_TEAM_USE_ACT) {
		char *holder = NULL;
		if (rk_team_control_live(eng->db, c->id, bot, &holder)) {
			r = rk_error_set(
				err, RK_ECONFLICT,
				"%s has control of the screen of bot '%s' on computer '%s': the bot's screen actions "
				"wait until `rakazo screen release-control %s --bot %s`",
				holder ? holder : "a person", bot, c->name, c->name, bot);
			free(holder);
			return r;
		}
	}
	call->computer_id = rk_xstrdup(c->id);
	call->bot = rk_xstrdup(bot);
	if (fence > 0) {
		call->fence = fence;
		r = rk_lease_check(eng, c->id, bot, fence, err);
	} else {
		unsigned char rnd[6];
		rk_random_bytes(rnd, sizeof(rnd));
		call->holder = rk_xasprintf("call:%d:%02x%02x%02x%02x%02x%02x", (int)getpid(), rnd[0], rnd[1], rnd[2],
					    rnd[3], rnd[4], rnd[5]);
		struct rk_lease l = {0};
		r = rk_lease_acquire(eng, c->id, bot, call->holder, RK_LEASE_DEFAULT_TTL_MS, &l, err);
		if (r == 0) {
			call->fence = l.fence;
			call->own = 1;
		} else if (rk_err(err)->code == RK_ECONFLICT) {
			rk_error_prefix(err,
					"bot '%s' is busy with another task (pass its --fence to act under its lease)",
					bot);
		}
		rk_lease_release_record(&l);
	}
	if (r == 0)
		r = rk_team_layout(eng, c, bot, err);
	if (r) {
		rk_team_call_end(eng, call);
		return r;
	}
	rk_idle_touch(eng, c->id);
	return 0;
}

int rk_team_call_check(struct rk_engine *eng, const struct rk_team_call *call, struct rk_error *err)
{
	int r = rk_reservation_check(eng->db, call->computer_id, err);
	if (r)
		return r;
	return rk_lease_check(eng, call->computer_id, call->bot, call->fence, err);
}

void rk_team_call_end(struct rk_engine *eng, struct rk_team_call *call)
{
	if (call->own && call->computer_id)
		rk_lease_release(eng, call->computer_id, call->bot, call->fence, NULL);
	if (call->computer_id) {
		rk_idle_touch(eng, call->computer_id);
		struct rk_computer c = {0};
		struct rk_error e;
		if (rk_db_computer_get(eng->db, call->computer_id, &c, &e) == 0) {
			if (rk_idle_flush_deferred(eng, &c, &e) < 0)
				rk_log(RK_LOG_WARN, "deferred checkpoint of %s: %s", c.id, e.message);
			rk_computer_release(&c);
		}
	}
	free(call->computer_id);
	free(call->bot);
	free(call->holder);
	memset(call, 0, sizeof(*call));
}

/* --- screens -------------------------------------------------------------------------- */

struct slot {
	int slot;
	int64_t generation;
	int fresh; /* claimed by this call: starting */
};

static int64_t screen_limit(void)
{
	const char *v = getenv("SANDBOX_TEAM_SCREEN_LIMIT");
	long long n = v && *v ? atoll(v) : 0;
	return n > 0 ? n : 0;
}

static int multi_screen(const struct rk_computer *c)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	return ops && (ops->caps & RK_CAP_DESKTOP) && (ops->caps & RK_CAP_MULTI_SCREEN) && c->desktop;
}

/* Finds or claims bot's slot, in one write transaction. */
static int slot_claim(struct rk_engine *eng, const struct rk_computer *c, const char *bot, struct slot *out,
		      struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	struct rk_slot_row held;
	int found = rk_db_slot_of_bot(eng->db, c->id, bot, &held, err);
	if (found < 0)
		goto fail;
	if (found) {
		out->slot = held.slot;
		int releasing = rk_slot_state_of(held.state) == RK_SLOT_RELEASING;
		out->generation = held.generation;
		rk_slot_row_release(&held);
		rk_db_rollback(eng->db);
		if (releasing)
			return rk_error_set(
				err, RK_ECONFLICT,
				"the screen of bot '%s' on computer '%s' is still being released: run `rakazo screen "
				"release %s --bot %s` again",
				bot, c->name, c->name, bot);
		return 0;
	}
	/* the slots in use, lowest first */
	struct rk_slot_row *taken;
	size_t used;
	if ((r = rk_db_slot_list(eng->db, c->id, &taken, &used, err)))
		goto fail_r;
	int next = multi_screen(c) ? 1 : 0;
	for (size_t i = 0; i < used; i++)
		if (taken[i].slot == next)
			next++;
	rk_slot_rows_free(taken, used);
	int64_t limit = screen_limit();
	if (!multi_screen(c) && used >= 1) {
		rk_db_rollback(eng->db);
		return rk_error_set(
			err, RK_EMULTISCREEN,
			"computer '%s' (provider %s) has one screen and another bot holds it: graphical tools "
			"wait; shell and file tools keep working",
			c->name, c->kind);
	}
	if ((limit && (int64_t)used >= limit) || next > SLOT_MAX) {
		rk_db_rollback(eng->db);
		return rk_error_set(err, RK_EMULTISCREEN,
				    "computer '%s' cannot give bot '%s' a screen: all %lld are in use "
				    "(SANDBOX_TEAM_SCREEN_LIMIT); shell and file tools keep working",
				    c->name, bot, (long long)(limit ? limit : SLOT_MAX));
	}
	char *profile = rk_xasprintf(".browser-profiles/%s", bot);
	r = rk_db_slot_claim(eng->db, c->id, next, bot, profile, rk_now_ms(), &out->generation, err);
	free(profile);
	if (r)
		goto fail_r;
	out->slot = next;
	out->fresh = 1;
	if ((r = rk_db_commit(eng->db, err)))
		goto fail_r;
	rk_log(RK_LOG_INFO, "team %s: bot %s claims screen slot %d (generation %lld)", c->id, bot, next,
	       (long long)out->generation);
	return 0;
fail:
	r = -rk_err(err)->code;
fail_r:
	rk_db_rollback(eng->db);
	return r;
}

static void slot_set_state(struct rk_engine *eng, const char *computer_id, const struct slot *s, const char *state,
			   int free_it)
{
	rk_db_slot_set_state(eng->db, computer_id, s->slot, s->generation, state, free_it, rk_now_ms(), NULL);
}

int rk_team_screen_slot(struct rk_engine *eng, const char *computer_id, const char *bot_id, int *slot,
			int64_t *generation, struct rk_error *err)
{
	int found = rk_db_slot_live_of_bot(eng->db, computer_id, bot_id, slot, generation, err);
	if (found < 0)
		return found;
	if (!found)
		return rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no live screen on computer '%s'", bot_id,
				    computer_id);
	return 0;
}

int rk_team_slot_tenant(struct rk_engine *eng, const char *computer_id, int slot, char **bot_id, int64_t *generation,
			struct rk_error *err)
{
	return rk_db_slot_tenant(eng->db, computer_id, slot, bot_id, generation, err);
}

/* Claims the slot; a fresh claim whose display did not come up is given back. */
static int screen_prepare(struct rk_engine *eng, struct rk_computer *c, const char *bot, struct slot *s,
			  struct rk_display_observe_options *o, char **profile, struct rk_error *err)
{
	if (!c->desktop)
		return rk_error_set(err, RK_EUNSUPPORTED, "computer '%s' was created without a desktop", c->name);
	const struct rk_provider_ops *ops = rk_engine_provider(c, err);
	if (!ops)
		return -rk_err(err)->code;
	if (!(ops->caps & RK_CAP_DESKTOP))
		return rk_error_set(err, RK_EMULTISCREEN, "provider '%s' has no screens for bots", c->kind);
	int r = slot_claim(eng, c, bot, s, err);
	if (r)
		return r;
	*profile = rk_xasprintf(".browser-profiles/%s", bot);
	o->profile_dir = *profile;
	o->start_is_extra_screen = 1;
	return 0;
}

static void screen_after(struct rk_engine *eng, struct rk_computer *c, const struct slot *s, int r,
			 const struct rk_error *err)
{
	if (!s->fresh)
		return;
	if (r == 0) {
		slot_set_state(eng, c->id, s, "live", 0);
		return;
	}
	if ((err ? err->code : RK_EFAILED) != RK_EMULTISCREEN)
		return; /* the display came up; the failure was the call's own */
	/* the display never came up: tear down what may have started, then give the slot back */
	struct rk_error e;
	if (rk_display_close(eng, c, s->slot, &e) == 0)
		slot_set_state(eng, c->id, s, "free", 1);
	else
		slot_set_state(eng, c->id, s, "releasing", 0);
}

/* The display may have taken seconds to come up: the fence and control
 * are checked again right before a bot's actions go. */
static int act_recheck(struct rk_engine *eng, const struct rk_computer *c, const struct rk_team_call *call,
		       struct rk_error *err)
{
	char *holder = NULL;
	int r = rk_team_call_check(eng, call, err);
	if (r == 0 && rk_team_control_live(eng->db, c->id, call->bot, &holder))
		r = rk_error_set(err, RK_ECONFLICT, "%s took control of the screen of bot '%s'",
				 holder ? holder : "a person", call->bot);
	free(holder);
	return r;
}

/* A bot's screenshot (batch NULL) or batch of actions: the call's lease,
 * the slot (claimed and started as needed), and the result stamped with
 * bot_id, slot and generation. */
static int screen_call(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
		       const char *batch_json, int settle_ms, int observe, const struct rk_display_observe_options *opt,
		       struct rk_display_shot *shot, struct rk_display_act_result *res, struct rk_error *err)
{
	struct rk_team_call call;
	int r = rk_team_call_begin(eng, c, bot, fence, batch_json ? RK_TEAM_USE_ACT : RK_TEAM_USE_VIEW, &call, err);
	if (r)
		return r;
	struct slot s = {0};
	struct rk_display_observe_options o = {0};
	if (opt)
		o = *opt;
	char *profile = NULL;
	if ((r = screen_prepare(eng, c, bot, &s, &o, &profile, err)) == 0) {
		if (batch_json) {
			if ((r = act_recheck(eng, c, &call, err)) == 0)
				r = rk_display_act(eng, c, s.slot, batch_json, settle_ms, observe, &o, res, err);
		} else {
			r = rk_display_observe(eng, c, s.slot, &o, shot, err);
		}
		screen_after(eng, c, &s, r, err);
		if (r == 0) {
			cJSON *doc = batch_json ? res->result : shot->meta;
			cJSON_AddStringToObject(doc, "bot_id", bot);
			cJSON_AddNumberToObject(doc, "slot", s.slot);
			cJSON_AddNumberToObject(doc, "generation", (double)s.generation);
		}
	}
	free(profile);
	rk_team_call_end(eng, &call);
	return r;
}

int rk_team_screen_observe(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
			   const struct rk_display_observe_options *opt, struct rk_display_shot *out,
			   struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	return screen_call(eng, c, bot, fence, NULL, 0, 0, opt, out, NULL, err);
}

int rk_team_screen_act(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
		       const char *batch_json, int settle_ms, int observe, const struct rk_display_observe_options *opt,
		       struct rk_display_act_result *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!batch_json)
		return rk_error_set(err, RK_EINVALID, "no batch given");
	return screen_call(eng, c, bot, fence, batch_json, settle_ms, observe, opt, NULL, out, err);
}

int rk_team_browser_begin(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence, int display,
			  const char *profile_dir, int act, struct rk_team_browser *tb, struct rk_error *err)
{
	memset(tb, 0, sizeof(*tb));
	if (!bot) {
		tb->display = display;
		return rk_browser_connect(eng, c, display, profile_dir, 0, &tb->browser, err);
	}
	/* before a slot is claimed for a browser that cannot be there */
	int r = rk_browser_supported(c, err);
	if (r || (r = rk_team_call_begin(eng, c, bot, fence, act ? RK_TEAM_USE_ACT : RK_TEAM_USE_VIEW, &tb->call, err)))
		return r;
	struct slot s = {0};
	struct rk_display_observe_options o = {0};
	char *profile = NULL;
	if ((r = screen_prepare(eng, c, bot, &s, &o, &profile, err)) == 0) {
		/* a fresh slot whose display cannot start is MULTI_SCREEN_UNAVAILABLE (and given back) */
		r = rk_browser_connect(eng, c, s.slot, profile, s.fresh, &tb->browser, err);
		screen_after(eng, c, &s, r, err);
		if (r == 0 && act)
			r = act_recheck(eng, c, &tb->call, err);
	}
	free(profile);
	if (r) {
		rk_team_browser_end(eng, tb);
		return r;
	}
	tb->display = s.slot;
	tb->generation = s.generation;
	return 0;
}

void rk_team_browser_stamp(const struct rk_team_browser *tb, cJSON *doc)
{
	if (!tb->call.bot || !cJSON_IsObject(doc))
		return;
	cJSON_AddStringToObject(doc, "bot_id", tb->call.bot);
	cJSON_AddNumberToObject(doc, "slot", tb->display);
	cJSON_AddNumberToObject(doc, "generation", (double)tb->generation);
}

void rk_team_browser_end(struct rk_engine *eng, struct rk_team_browser *tb)
{
	rk_browser_close(tb->browser);
	if (tb->call.computer_id)
		rk_team_call_end(eng, &tb->call);
	memset(tb, 0, sizeof(*tb));
}

/* Ends the Chromium on bot's profile cleanly, so its cookies and session
 * are on disk: its windows on display :slot are closed (Ctrl+Shift+W,
 * through the window manager's focus), and Chromium then quits the normal
 * way. A TERM is not enough: Chromium exits at once without writing the
 * cookies of the last half minute, and TERM to the whole group ends the
 * network service first. After BROWSER_CLOSE_MS: TERM, then KILL. A
 * machine without such a browser (the fake's) has nothing to close. */
static int close_browser(struct rk_engine *eng, const struct rk_computer *c, const char *bot, int slot,
			 struct rk_error *err)
{
	/* bot ids hold no shell metacharacters (rk_team_bot_check) */
	char *args = rk_xasprintf("profile %s %d %d", bot, slot, BROWSER_CLOSE_MS / 100);
	char *cmd = rk_script_command("rakazo-browser-close", args);
	free(args);
	int code = 0;
	int r = machine_sh(eng, c, cmd, BROWSER_CLOSE_MS + 15000, &code, err);
	free(cmd);
	if (r == 0 && code == 3)
		rk_log(RK_LOG_WARN, "team %s: bot %s's Chromium did not close in %d ms and was killed", c->id, bot,
		       BROWSER_CLOSE_MS);
	return r;
}

int rk_team_screen_release(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t fence,
			   struct rk_error *err)
{
	struct rk_team_call call;
	int r = rk_team_call_begin(eng, c, bot, fence, RK_TEAM_USE_ACT, &call, err);
	if (r)
		return r;
	struct slot s = {0};
	if ((r = rk_db_begin(eng->db, err)))
		goto out;
	struct rk_slot_row held;
	int found = rk_db_slot_of_bot(eng->db, c->id, bot, &held, err);
	if (found < 0) {
		r = found;
		rk_db_rollback(eng->db);
		goto out;
	}
	if (!found) {
		rk_db_rollback(eng->db);
		r = rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no screen on computer '%s'", bot, c->name);
		goto out;
	}
	s.slot = held.slot;
	s.generation = held.generation;
	rk_slot_row_release(&held);
	slot_set_state(eng, c->id, &s, "releasing", 0);
	if ((r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		goto out;
	}
	/* the browser first, cleanly, so its profile is whole; then the stack */
	if ((r = rk_computer_ensure_running(eng, c, err)) == 0 && (r = close_browser(eng, c, bot, s.slot, err)) == 0)
		r = rk_display_close(eng, c, s.slot, err);
	if (r) {
		rk_error_prefix(err,
				"screen teardown of bot '%s' failed; slot %d stays reserved: run `rakazo screen "
				"release %s --bot %s` again",
				bot, s.slot, c->name, bot);
		goto out;
	}
	slot_set_state(eng, c->id, &s, "free", 1);
	rk_log(RK_LOG_INFO, "team %s: bot %s released screen slot %d", c->id, bot, s.slot);
out:
	rk_team_call_end(eng, &call);
	return r;
}

int rk_team_screens_forget(struct rk_engine *eng, const char *computer_id, struct rk_error *err)
{
	int freed = rk_db_slots_vacate(eng->db, computer_id, rk_now_ms(), err);
	if (freed > 0)
		rk_log(RK_LOG_INFO, "team %s: the machine stopped: its bots' screens are free", computer_id);
	return freed < 0 ? freed : 0;
}

int rk_team_screen_list(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err)
{
	struct rk_slot_row *slots;
	size_t n;
	int r = rk_db_slot_list(eng->db, c->id, &slots, &n, err);
	if (r)
		return r;
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		const char *bot = slots[i].bot_id;
		cJSON_AddNumberToObject(o, "slot", slots[i].slot);
		cJSON_AddStringToObject(o, "bot_id", bot);
		cJSON_AddStringToObject(o, "state", slots[i].state);
		cJSON_AddNumberToObject(o, "generation", (double)slots[i].generation);
		rk_json_add_str_or_null(o, "profile", slots[i].profile);
		char *holder = NULL;
		if (rk_team_control_live(eng->db, c->id, bot, &holder))
			cJSON_AddStringToObject(o, "control", holder ? holder : "person");
		else
			cJSON_AddNullToObject(o, "control");
		free(holder);
		cJSON_AddItemToArray(arr, o);
	}
	rk_slot_rows_free(slots, n);
	*out = arr;
	return 0;
}

int rk_team_screen_count(struct rk_db *db, const struct rk_computer *c)
{
	int bots = rk_db_slot_count(db, c->id);
	if (!c->desktop || rk_computer_state_of(c->state) != RK_COMPUTER_RUNNING)
		return bots;
	return multi_screen(c) ? 1 + bots : 1;
}

cJSON *rk_team_capabilities(const struct rk_computer *c)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	unsigned caps = ops ? ops->caps : 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "graphical", c->desktop && (caps & RK_CAP_DESKTOP));
	cJSON_AddBoolToObject(o, "multiScreen", multi_screen(c));
	int64_t limit = screen_limit();
	if (limit)
		cJSON_AddNumberToObject(o, "screen_limit", (double)limit);
	else
		cJSON_AddNullToObject(o, "screen_limit");
	cJSON_AddBoolToObject(o, "takeover", !!(caps & RK_CAP_TAKEOVER));
	cJSON_AddBoolToObject(o, "pty", !!(caps & RK_CAP_TTY));
	cJSON_AddBoolToObject(o, "persistentHome", !!(caps & RK_CAP_PERSISTENT_HOME));
	cJSON_AddBoolToObject(o, "snapshots", !!(caps & RK_CAP_SNAPSHOTS));
	/* the browser tools (engine/machine/browser.h) are offered exactly when this holds */
	cJSON_AddBoolToObject(o, "pageBrowser", rk_browser_supported(c, NULL) == 0);
	return o;
}

/* --- takeover ---------------------------------------------------------------------------- */

static int64_t control_ttl(int64_t ttl_ms)
{
	if (ttl_ms > 0)
		return ttl_ms;
	const char *v = getenv("RAKAZO_TAKEOVER_TTL_MS");
	long long n = v && *v ? atoll(v) : 0;
	return n >= 1000 ? n : RK_TEAM_CONTROL_TTL_DEFAULT_MS;
}

int rk_team_takeover(struct rk_engine *eng, struct rk_computer *c, const char *bot, int64_t ttl_ms, cJSON **out,
		     struct rk_error *err)
{
	int r = rk_team_bot_check(bot, err);
	if (r)
		return r;
	if (ttl_ms && (ttl_ms < 1000 || ttl_ms > 24LL * 3600 * 1000))
		return rk_error_set(err, RK_EINVALID, "control ttl must be from 1 s to 24 h");
	int64_t ttl = control_ttl(ttl_ms), now = rk_now_ms();
	char *holder = NULL, *run = NULL, *lease_id = NULL;
	if ((r = rk_db_begin(eng->db, err)))
		return r;
	if ((r = rk_reservation_check(eng->db, c->id, err)))
		goto fail;
	int extend = 0;
	if (rk_team_control_live(eng->db, c->id, bot, &holder)) {
		if (strcmp(holder, eng->owner) != 0) {
			r = rk_error_set(err, RK_ECONFLICT, "%s already has control of the screen of bot '%s'", holder,
					 bot);
			goto fail;
		}
		extend = 1;
	}
	if ((r = rk_team_bot_busy(eng->db, c->id, c->name, bot, &run, err)))
		goto fail;
	int waiting = run != NULL;
	/* one upsert: a new lease, or the same person's extended (its id kept) */
	char *new_id = rk_id_new("ctl");
	r = rk_db_control_grant(eng->db, c->id, bot, eng->owner, new_id, now + ttl, now, extend, &lease_id, err);
	free(new_id);
	if (r)
		goto fail;
	if ((r = rk_db_commit(eng->db, err)))
		goto fail;
	rk_idle_touch(eng, c->id);
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "computer_id", c->id);
	cJSON_AddStringToObject(o, "bot_id", bot);
	cJSON_AddStringToObject(o, "holder", eng->owner);
	rk_json_add_str_or_null(o, "lease_id", lease_id);
	cJSON_AddStringToObject(o, "expires_at", rk_iso8601(now + ttl, buf, sizeof(buf)));
	cJSON_AddBoolToObject(o, "extended", extend);
	rk_json_add_str_or_null(o, "waiting_run", waiting ? run : NULL);
	int slot;
	int64_t gen;
	if (rk_team_screen_slot(eng, c->id, bot, &slot, &gen, NULL) == 0)
		cJSON_AddNumberToObject(o, "slot", slot);
	else
		cJSON_AddNullToObject(o, "slot");
	*out = o;
	free(holder);
	free(run);
	free(lease_id);
	return 0;
fail:
	rk_db_rollback(eng->db);
	free(holder);
	free(run);
	free(lease_id);
	return r;
}

/* The person handed control back: the bot's run waiting for it goes on. */
static void end_waiting_run(struct rk_engine *eng, const struct rk_computer *c, const char *bot)
{
	char *state = NULL, *run = NULL;
	struct rk_error e;
	if (rk_team_bot_run_state(eng->db, c->id, bot, &state, &run, &e) == 0 &&
	    rk_run_state_of(state) == RK_RUN_WAITING_TAKEOVER) {
		if (rk_db_run_end_takeover(eng->db, run, NULL, &e) < 0)
			rk_log(RK_LOG_WARN, "run %s: the takeover did not end: %s", run, e.message);
		else
			rk_log(RK_LOG_INFO, "run %s goes on: control of bot %s's screen was released", run, bot);
	}
	free(state);
	free(run);
}

int rk_team_release_control(struct rk_engine *eng, struct rk_computer *c, const char *bot, struct rk_error *err)
{
	int r = rk_team_bot_check(bot, err);
	if (r)
		return r;
	char *holder = NULL;
	if (!rk_team_control_live(eng->db, c->id, bot, &holder))
		return rk_error_set(err, RK_ENOTFOUND, "nobody has control of the screen of bot '%s' on computer '%s'",
				    bot, c->name);
	if (strcmp(holder, eng->owner) != 0) {
		r = rk_error_set(err, RK_EDENIED, "%s has control of the screen of bot '%s', not %s", holder, bot,
				 eng->owner);
		free(holder);
		return r;
	}
	free(holder);
	if ((r = rk_db_control_drop(eng->db, c->id, bot, err)))
		return r;
	/* control capabilities made under this takeover end with it (their
	 * forwarders would notice on their own; the gateway, answering the
	 * hook, makes it immediate and shows them revoked) */
	struct rk_error ge;
	if (RK_HOOK(control_released, &ge, eng, c->id, bot, &ge))
		rk_log(RK_LOG_WARN, "team %s: revoking bot %s's control capabilities: %s", c->id, bot, ge.message);
	end_waiting_run(eng, c, bot);
	rk_idle_touch(eng, c->id);
	struct rk_error e;
	if (rk_idle_flush_deferred(eng, c, &e) < 0)
		rk_log(RK_LOG_WARN, "deferred checkpoint of %s: %s", c->id, e.message);
	return 0;
}
