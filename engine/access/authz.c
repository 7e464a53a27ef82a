/* Authorization: identity, computer ownership, bot grants, capabilities (see authz.h). */

#include "engine/access/authz.h"

#include <stdlib.h>
#include <string.h>

#include "engine/state/db_api.h"
#include "engine/access/approval.h"
#include "engine/state/db_access.h"
#include "engine/util/buf.h"
#include "engine/util/time.h"

/* --- computers --------------------------------------------------------------------- */

int rk_authz_computer_record(struct rk_engine *eng, const char *computer_id, const char *space, const char *owner,
			     struct rk_error *err)
{
	return rk_db_computer_access_insert(eng->db, computer_id, space, owner, err);
}

int rk_authz_computer_place(struct rk_engine *eng, const struct rk_computer *c, char **space, char **owner,
			    struct rk_error *err)
{
	int r = rk_db_computer_access_get(eng->db, c->id, space, owner, err);
	if (r)
		return r;
	if (!*space)
		*space = rk_xstrdup(RK_SPACE_DEFAULT);
	/* without a record: a person's own computer stays theirs; one made
	 * through an API token, or by no one in particular, is the organization's
	 * (a token is an org credential; a bot never owns a computer) */
	if (!*owner)
		*owner = rk_xstrdup(c->owner && !strncmp(c->owner, "user:", 5) ? c->owner : "org");
	return 0;
}

int rk_authz_visible(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c)
{
	char *space, *owner;
	struct rk_error e;
	if (rk_authz_computer_place(eng, c, &space, &owner, &e))
		return 0;
	int ok = !strcmp(space, a->space);
	free(space);
	free(owner);
	return ok;
}

/* Is the person a the owner of c, or a member of its organization? */
static int person_may_manage(const struct rk_actor *a, const char *owner)
{
	if (!strcmp(owner, "org"))
		return 1;
	return !strncmp(owner, "user:", 5) && !strcmp(owner + 5, a->user);
}

static int has_grant(struct rk_engine *eng, const char *computer_id, const char *bot, int *yes, struct rk_error *err)
{
	struct rk_api_right right = {0};
	int r = rk_api_right_get(eng->db, computer_id, bot, &right, err);
	*yes = r == 0;
	rk_api_right_release(&right);
	return r == -RK_ENOTFOUND ? 0 : r;
}

/* The rule decider: 0 when the ownership and grant rules allow it. */
static int rules_decide(struct rk_engine *eng, const struct rk_actor *a, const char *cap, const struct rk_computer *c,
			struct rk_error *err)
{
	if (!strcmp(cap, "computers.create")) {
		if (a->bot)
			return rk_error_set(err, RK_EDENIED,
					    "a bot cannot create a computer: a computer belongs to a member or the "
					    "organization; ask a person to create one and grant it to bot '%s'",
					    a->bot);
		return 0;
	}
	if (!c)
		return rk_error_set(err, RK_EINVALID, "%s needs a computer", cap);
	char *space, *owner;
	int r = rk_authz_computer_place(eng, c, &space, &owner, err);
	if (r)
		return r;
	if (strcmp(space, a->space) != 0) {
		r = rk_error_set(err, RK_ENOTFOUND, "no computer '%s' in space '%s'", c->name, a->space);
	} else if (a->bot) {
		int yes;
		if (!strcmp(cap, "computers.delete") || !strcmp(cap, "computers.expose"))
			r = rk_error_set(err, RK_EDENIED, "bot '%s' may not %s computer '%s': only its owner may",
					 a->bot, cap + strlen("computers."), c->name);
		else if ((r = has_grant(eng, c->id, a->bot, &yes, err)) == 0 && !yes)
			r = rk_error_set(
				err, RK_EDENIED,
				"bot '%s' has no right to use computer '%s': `rakazo computer grant %s --bot %s`",
				a->bot, c->name, c->name, a->bot);
	} else if (!person_may_manage(a, owner)) {
		r = rk_error_set(err, RK_EDENIED, "computer '%s' belongs to %s, not to %s", c->name, owner, a->user);
	}
	free(space);
	free(owner);
	return r;
}

int rk_authz_check(struct rk_engine *eng, const struct rk_actor *a, const char *capability, const struct rk_computer *c,
		   struct rk_error *err)
{
	int r = rules_decide(eng, a, capability, c, err);
	if (r)
		return r;
	/* then the approval rules, a capability being matched as a tool name */
	struct rk_approval_decision d;
	if ((r = rk_approval_evaluate(eng, a, capability, NULL, 0, &d, err)))
		return r;
	if (d.ask)
		return rk_error_set(err, RK_EDENIED, "%s needs approval (%s), which a command line cannot give",
				    capability, d.reason);
	return 0;
}

/* --- targets ----------------------------------------------------------------------- */

int rk_target_parse(const char *ref, char **computer, char **bot, int *display, struct rk_error *err)
{
	*computer = *bot = NULL;
	*display = -1;
	if (!ref || !*ref)
		return rk_error_set(err, RK_EUSAGE, "name a computer");
	const char *colon = strchr(ref, ':');
	if (colon == ref)
		return rk_error_set(err, RK_EINVALID, "target '%s' names no computer before ':'", ref);
	if (!colon) {
		*computer = rk_xstrdup(ref);
		return 0;
	}
	const char *screen = colon + 1;
	if (screen[0] == '.') {
		char *end;
		long n = screen[1] >= '0' && screen[1] <= '9' ? strtol(screen + 1, &end, 10) : -1;
		if (n < 0 || *end || n > RK_TARGET_DISPLAY_MAX)
			return rk_error_set(err, RK_EINVALID,
					    "target '%s': a display is COMPUTER:.N with N from 0 to %d", ref,
					    RK_TARGET_DISPLAY_MAX);
		*display = (int)n;
	} else if (!rk_authz_name_ok(screen)) {
		return rk_error_set(err, RK_EINVALID,
				    "target '%s': a bot's screen is COMPUTER:BOT, a display COMPUTER:.N", ref);
	} else {
		*bot = rk_xstrdup(screen);
	}
	*computer = rk_xstrndup(ref, (size_t)(colon - ref));
	return 0;
}

/* The one computer of a's space whose id begins with prefix: 1 (err left
 * alone) when none does, RK_EINVALID (listing them) when several do. */
static int by_prefix(struct rk_engine *eng, const struct rk_actor *a, const char *prefix, struct rk_computer *out,
		     struct rk_error *err)
{
	struct rk_computer *cs = NULL;
	size_t n = 0, hits = 0, len = strlen(prefix);
	int r = rk_db_computer_list(eng->db, &cs, &n, err);
	if (r)
		return r;
	struct rk_buf names;
	rk_buf_init(&names);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(cs[i].id, prefix, len) && rk_authz_visible(eng, a, &cs[i])) {
			rk_buf_printf(&names, "%s%s (%s)", hits ? ", " : "", cs[i].id, cs[i].name);
			if (hits++ == 0) {
				*out = cs[i];
				continue;
			}
		}
		rk_computer_release(&cs[i]);
	}
	free(cs);
	if (hits > 1) {
		rk_computer_release(out);
		r = rk_error_set(err, RK_EINVALID, "'%s' is the start of %zu computers' ids: %s; give more of one",
				 prefix, hits, names.data);
	} else if (hits == 0) {
		r = 1;
	}
	rk_buf_release(&names);
	return r;
}

/* A computer by name or id, else by a unique id prefix, in a's space. */
static int find_computer(struct rk_engine *eng, const struct rk_actor *a, const char *ref, struct rk_computer *out,
			 struct rk_error *err)
{
	int r = rk_db_computer_get(eng->db, ref, out, err);
	if (r == 0 && !rk_authz_visible(eng, a, out)) {
		rk_computer_release(out);
		r = rk_error_set(err, RK_ENOTFOUND, "no computer '%s' in space '%s'", ref, a->space);
	}
	if (r == -RK_ENOTFOUND && strlen(ref) >= RK_TARGET_PREFIX_MIN) {
		struct rk_error pe;
		int p = by_prefix(eng, a, ref, out, &pe);
		if (p <= 0) /* found, ambiguous or failed; 1: none, and the lookup's error stands */
			r = p ? rk_error_set(err, pe.code, "%s", pe.message) : 0;
	}
	return r;
}

int rk_target_resolve(struct rk_engine *eng, const struct rk_actor *a, const char *ref, const char *capability,
		      struct rk_target *out, struct rk_error *err)
{
	char *name;
	memset(out, 0, sizeof(*out));
	out->display = -1;
	int r = rk_target_parse(ref, &name, &out->bot, &out->display, err);
	if (r == 0)
		r = find_computer(eng, a, name, &out->computer, err);
	if (r == 0 && capability && (r = rk_authz_check(eng, a, capability, &out->computer, err)))
		rk_computer_release(&out->computer);
	free(name);
	if (r) {
		free(out->bot);
		memset(out, 0, sizeof(*out));
		out->display = -1;
	}
	return r;
}

void rk_target_release(struct rk_target *t)
{
	if (!t)
		return;
	rk_computer_release(&t->computer);
	free(t->bot);
	t->bot = NULL;
	t->display = -1;
}

int rk_authz_resolve(struct rk_engine *eng, const struct rk_actor *a, const char *ref, const char *capability,
		     struct rk_computer *out, struct rk_error *err)
{
	struct rk_target t;
	memset(out, 0, sizeof(*out));
	int r = rk_target_resolve(eng, a, ref, capability, &t, err);
	if (r)
		return r;
	if (t.bot || t.display >= 0) {
		rk_target_release(&t);
		return rk_error_set(err, RK_EINVALID, "'%s' names a screen; this takes a computer (COMPUTER)", ref);
	}
	*out = t.computer;
	return 0;
}

/* Decides capability on computer_id with decide (rk_authz_check or the
 * rules alone); a deleted computer is decided by the place it was recorded in. */
static int decide_id(struct rk_engine *eng, const struct rk_actor *a, const char *computer_id, const char *capability,
		     int (*decide)(struct rk_engine *, const struct rk_actor *, const char *,
				   const struct rk_computer *, struct rk_error *),
		     struct rk_error *err)
{
	struct rk_computer c = {0};
	int r = rk_db_computer_get(eng->db, computer_id, &c, err);
	if (r == -RK_ENOTFOUND) {
		struct rk_computer gone = {.id = (char *)computer_id, .name = (char *)computer_id};
		return decide(eng, a, capability, &gone, err);
	}
	if (r == 0)
		r = decide(eng, a, capability, &c, err);
	rk_computer_release(&c);
	return r;
}

int rk_authz_check_id(struct rk_engine *eng, const struct rk_actor *a, const char *computer_id, const char *capability,
		      struct rk_error *err)
{
	return decide_id(eng, a, computer_id, capability, rk_authz_check, err);
}

int rk_authz_may_use(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c)
{
	struct rk_error e;
	return rules_decide(eng, a, "computers.use", c, &e) == 0;
}

int rk_authz_may_use_id(struct rk_engine *eng, const struct rk_actor *a, const char *computer_id)
{
	struct rk_error e;
	return decide_id(eng, a, computer_id, "computers.use", rules_decide, &e) == 0;
}

int rk_authz_grant(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		   struct rk_error *err)
{
	if (!rk_authz_name_ok(bot))
		return rk_error_set(err, RK_EINVALID, "bot name '%s' is not valid", bot);
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot grant rights");
	int r = rules_decide(eng, a, "computers.expose", c, err);
	if (r)
		return rk_error_prefix(err, "grant");
	char *by = rk_xasprintf("user:%s", a->user);
	struct rk_api_right right = {0};
	r = rk_api_right_put(eng->db, c->id, bot, by, &right, err);
	rk_api_right_release(&right);
	free(by);
	return r;
}

int rk_authz_revoke(struct rk_engine *eng, const struct rk_actor *a, const struct rk_computer *c, const char *bot,
		    struct rk_error *err)
{
	if (a->bot)
		return rk_error_set(err, RK_EDENIED, "a bot cannot revoke rights");
	int r = rules_decide(eng, a, "computers.expose", c, err);
	if (r)
		return rk_error_prefix(err, "revoke");
	if ((r = rk_api_right_delete(eng->db, c->id, bot, err)) == -RK_ENOTFOUND)
		return rk_error_set(err, RK_ENOTFOUND, "bot '%s' has no right to computer '%s'", bot, c->name);
	return r;
}

int rk_authz_rights(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err)
{
	struct rk_api_right *rs = NULL;
	size_t n = 0;
	int r = rk_api_right_list(eng->db, c->id, &rs, &n, err);
	if (r)
		return r;
	cJSON *arr = cJSON_CreateArray();
	char t[32];
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "bot", rs[i].bot_id);
		cJSON_AddStringToObject(o, "granted_by", rs[i].granted_by);
		cJSON_AddStringToObject(o, "created_at", rk_iso8601(rs[i].created_at, t, sizeof(t)));
		cJSON_AddItemToArray(arr, o);
		rk_api_right_release(&rs[i]);
	}
	free(rs);
	*out = arr;
	return 0;
}
