/* rakazo space: the spaces someone made on purpose (engine/access/space.h).
 *
 *   rakazo space list
 *   rakazo space create NAME [--description TEXT] */

#include "engine/access/authz.h"
#include "engine/access/space.h"
#include "engine/util/json.h"
#include "cmd.h"
#include "out.h"

static const char *o_description;

static const struct rk_opt create_opts[] = {
	OPT_STRING("description", 0, &o_description, "TEXT", "what the space is for"),
	OPT_END,
};
static const struct rk_opt no_opts[] = {OPT_END};

static int run_list(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)))
		return r;
	cJSON *arr;
	if ((r = rk_space_list(ctx->eng, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"id", "SPACE"},
						      {"computers", "COMPUTERS"},
						      {"created_by", "CREATED BY"},
						      {"description", "DESCRIPTION"},
						      {0}};
		out_list(arr, cols);
	}
	return r;
}

static int run_create(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "NAME");
	struct rk_actor a;
	if (r || (r = cmd_engine(ctx)) || (r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err)))
		return r;
	if (a.bot)
		r = rk_error_set(&ctx->err, RK_EDENIED,
				 "a bot creates a space only through the create_space tool, with a person's approval");
	else if ((r = rk_space_create(ctx->eng, &a, ctx->args[0], o_description, NULL, &ctx->err)) == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", ctx->args[0]);
		rk_json_add_str_or_null(o, "description", o_description);
		cJSON_AddBoolToObject(o, "created", 1);
		out_doc(o);
	}
	rk_actor_release(&a);
	return r;
}

static const struct cmd_verb space_verbs[] = {
	{"list", "", "list the spaces", no_opts, run_list, NULL},
	{"create", "NAME [--description TEXT]", "create a space", create_opts, run_create, NULL},
	{0},
};

const struct cmd_entry cmd_space = {
	.name = "space",
	.args = "list|create ...",
	.summary = "the spaces computers, memory, secrets and rules live in",
	.description = "A space is a separate room: computers, memory, secrets and approval rules of one space\n"
		       "are invisible from another. Work in a space by naming it (RAKAZO_SPACE, or --space where\n"
		       "a command has it); `space create` records one on purpose, and `space list` shows those\n"
		       "and every space a computer lives in. A model creates a space only through the\n"
		       "create_space tool, which always waits for a person's approval.",
	.verbs = space_verbs,
};
