/* rakazo approval: which tool calls wait for a person (engine/access/approval.h).
 *
 *   rakazo approval set --effect allow|require_approval --match tool|connector|category --value V [--shared]
 *   rakazo approval list
 *   rakazo approval rm ID
 *   rakazo approval pending [RUN]        calls waiting for `rakazo run approve|deny RUN` */

#include <stdlib.h>

#include "engine/access/approval.h"
#include "engine/access/authz.h"
#include "cmd.h"
#include "out.h"

static const char *o_effect, *o_match, *o_value, *o_space;
static int o_shared;

#define OPT_SPACE OPT_STRING("space", 0, &o_space, "SPACE", "the space (default: RAKAZO_SPACE, else default)")

static const struct rk_opt set_opts[] = {
	OPT_STRING("effect", 0, &o_effect, "EFFECT", "allow or require_approval"),
	OPT_STRING("match", 0, &o_match, "KIND", "tool, connector or category"),
	OPT_STRING("value", 0, &o_value, "V", "the tool, connector or category name"),
	OPT_BOOL("shared", 0, &o_shared, "for everyone in the space (default: your own calls only)"),
	OPT_SPACE,
	OPT_END,
};
static const struct rk_opt space_opts[] = {OPT_SPACE, OPT_END};

static int actor(struct cmd_ctx *ctx, struct rk_actor *a)
{
	int r = cmd_engine(ctx);
	return r ? r : rk_actor_resolve(a, ctx->eng, o_space, NULL, &ctx->err);
}

static int run_set(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r)
		return r;
	if (!o_effect || !o_match || !o_value)
		return rk_error_set(&ctx->err, RK_EUSAGE, "approval set needs --effect, --match and --value");
	struct rk_actor a;
	if ((r = actor(ctx, &a)))
		return r;
	char *id;
	if ((r = rk_approval_rule_add(ctx->eng, &a, o_effect, o_match, o_value, o_shared, &id, &ctx->err)) == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddStringToObject(o, "effect", o_effect);
		cJSON_AddStringToObject(o, "match", o_match);
		cJSON_AddStringToObject(o, "value", o_value);
		cJSON_AddBoolToObject(o, "shared", o_shared);
		cJSON_AddStringToObject(o, "space", a.space);
		out_doc(o);
		free(id);
	}
	rk_actor_release(&a);
	return r;
}

static int run_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	cJSON *arr;
	if ((r = rk_approval_rule_list(ctx->eng, &a, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"id", "ID"},	    {"match", "MATCH"},	  {"value", "VALUE"},
						      {"effect", "EFFECT"}, {"shared", "SHARED"}, {0}};
		out_list(arr, cols);
	}
	rk_actor_release(&a);
	return r;
}

static int run_rm(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "ID");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	if ((r = rk_approval_rule_remove(ctx->eng, &a, ctx->args[0], &ctx->err)) == 0) {
		out_removed("id", ctx->args[0]);
	}
	rk_actor_release(&a);
	return r;
}

static int run_pending(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 1, "at most a RUN");
	if (r || (r = cmd_engine(ctx)))
		return r;
	cJSON *arr;
	if ((r = rk_approval_pending(ctx->eng, ctx->nargs ? ctx->args[0] : NULL, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"run_id", "RUN"},
						      {"tool", "TOOL"},
						      {"reason", "REASON"},
						      {"created_at", "SINCE"},
						      {0}};
		out_list(arr, cols);
	}
	return r;
}

static const struct cmd_verb approval_verbs[] = {
	{"set", "--effect E --match KIND --value V [--shared]", "add a rule", set_opts, run_set, NULL},
	{"list", "", "list the rules your calls are under", space_opts, run_list, NULL},
	{"rm", "ID", "remove a rule", space_opts, run_rm, NULL},
	{"pending", "[RUN]", "list calls waiting for approval", space_opts, run_pending, NULL},
	{0},
};

const struct cmd_entry cmd_approval = {
	.name = "approval",
	.args = "set|list|rm|pending ...",
	.summary = "rules for which tool calls wait for a person",
	.description = "A rule matches a tool (shell, write_file, secret_request, computers.delete ...), a\n"
		       "connector (computer, memory, http, secrets, computers) or a category (read, write,\n"
		       "shell, act, network). Tool rules beat connector rules, which beat category rules; in a\n"
		       "level require_approval beats allow; no rule means allow. shell, write_stdin and\n"
		       "computer_act are exempt from category rules: what a command or a click does cannot be\n"
		       "told from the call (a click on a purchase button is not caught), so give them tool\n"
		       "rules. Rules are yours alone unless --shared. A run whose call needs approval waits in\n"
		       "waiting_approval for `rakazo run approve|deny RUN [--note TEXT]`. With\n"
		       "RAKAZO_JUDGE_MODEL set, a judge model decides ALLOW or ASK for unruled calls that change\n"
		       "data; a judge error asks.",
	.verbs = approval_verbs,
};
