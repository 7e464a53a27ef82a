/* rakazo checkpoint: a computer's workspace in the home store: checkpoints,
 * their list, restore, tar+zstd export/import and verification. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/machine/checkpoint.h"
#include "engine/machine/computer.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "cmd.h"
#include "out.h"

static const char *o_reason, *o_revision, *o_output;
static int o_no_quiesce, o_deep, o_all, o_plain;

static int load(struct cmd_ctx *ctx, const char *ref, struct rk_computer *c)
{
	return cmd_target(ctx, ref, "computers.use", c);
}

/* The revision named by --revision or the second argument; NULL: the latest. */
static const char *revision_arg(struct cmd_ctx *ctx)
{
	if (o_revision)
		return o_revision;
	return ctx->nargs >= 2 ? ctx->args[1] : NULL;
}

/* --- create, list, show ---------------------------------------------------- */

static const struct rk_opt create_opts[] = {
	OPT_STRING("reason", 0, &o_reason, "TEXT", "why (default: manual)"),
	OPT_BOOL("no-quiesce", 0, &o_no_quiesce, "do not stop the computer's browsers before copying"),
	OPT_END,
};

static int run_create(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r || (r = load(ctx, ctx->args[0], &c)))
		return r;
	struct rk_workspace_checkpoint rev = {0};
	r = rk_checkpoint_create(ctx->eng, &c, o_reason ? o_reason : "manual", !o_no_quiesce, &rev, &ctx->err);
	if (r == 0)
		out_doc(rk_checkpoint_to_json(&c, &rev, rev.id));
	rk_workspace_checkpoint_release(&rev);
	rk_computer_release(&c);
	return r;
}

static int run_list(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 1, "COMPUTER");
	if (r || (r = load(ctx, ctx->args[0], &c)))
		return r;
	cJSON *rows;
	if ((r = rk_checkpoint_list(ctx->eng, &c, &rows, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"id", "CHECKPOINT"}, {"created_at", "CREATED"},
						      {"reason", "REASON"}, {"kind", "KIND"},
						      {"files", "FILES"},   {"bytes", "BYTES"},
						      {"latest", "LATEST"}, {0}};
		out_list(rows, cols);
	}
	rk_computer_release(&c);
	return r;
}

static const struct rk_opt show_opts[] = {
	OPT_STRING("revision", 'r', &o_revision, "ID", "which checkpoint (default: the latest)"),
	OPT_END,
};

static int run_show(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 2, "COMPUTER [CHECKPOINT]");
	if (r || (r = load(ctx, ctx->args[0], &c)))
		return r;
	cJSON *doc;
	if ((r = rk_checkpoint_show(ctx->eng, &c, revision_arg(ctx), &doc, &ctx->err)) == 0)
		out_doc(doc);
	rk_computer_release(&c);
	return r;
}

/* --- restore --------------------------------------------------------------------- */

static int run_restore(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 2, "COMPUTER [CHECKPOINT]");
	if (r || (r = load(ctx, ctx->args[0], &c)))
		return r;
	struct rk_workspace_checkpoint rev = {0};
	const char *want = revision_arg(ctx);
	r = rk_checkpoint_restore(ctx->eng, &c, want, &rev, &ctx->err);
	if (r == 0) {
		cJSON *o = rk_checkpoint_to_json(&c, &rev, rev.id);
		if (want)
			cJSON_AddStringToObject(o, "restored_from", want);
		out_doc(o);
	}
	rk_workspace_checkpoint_release(&rev);
	rk_computer_release(&c);
	return r;
}

/* --- export, import -------------------------------------------------------------------- */

static const struct rk_opt export_opts[] = {
	OPT_STRING("output", 'o', &o_output, "FILE", "write to FILE (default or '-': stdout)"),
	OPT_STRING("revision", 'r', &o_revision, "ID", "which checkpoint (default: the latest)"),
	OPT_BOOL("no-compress", 0, &o_plain, "a plain tar instead of tar+zstd"),
	OPT_END,
};

static int run_export(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 1, 2, "COMPUTER [FILE|-]");
	if (r)
		return r;
	/* `export c1 -` (a pipeline) and `export c1 FILE` name the output as -o does */
	if (ctx->nargs == 2) {
		if (o_output)
			return rk_error_set(&ctx->err, RK_EUSAGE,
					    "give the output once: as -o FILE or as FILE, not both");
		o_output = ctx->args[1];
	}
	struct cmd_sink sink;
	if ((r = cmd_sink_open(ctx, &sink, o_output, "an archive")))
		return r;
	if ((r = load(ctx, ctx->args[0], &c)) == 0)
		r = rk_checkpoint_export(ctx->eng, &c, o_revision, sink.fd, !o_plain, &ctx->err);
	r = cmd_sink_close(ctx, &sink, r);
	if (r == 0 && sink.to_file && opt_json) {
		/* stdout is free when the archive went to a file */
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "computer_id", c.id);
		cJSON_AddStringToObject(o, "output", o_output);
		out_doc(o);
	}
	rk_computer_release(&c);
	return r;
}

static int run_import(struct cmd_ctx *ctx)
{
	struct rk_computer c = {0};
	int r = cmd_want_args(ctx, 2, 2, "COMPUTER FILE|-");
	if (r)
		return r;
	int fd = 0;
	if (strcmp(ctx->args[1], "-")) {
		fd = open(ctx->args[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return rk_error_errno(&ctx->err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno,
					      "cannot open %s", ctx->args[1]);
	} else if (isatty(0)) {
		return rk_error_set(&ctx->err, RK_EUSAGE,
				    "refusing to read an archive from a terminal: give FILE or a pipe");
	}
	struct rk_workspace_checkpoint rev = {0};
	struct rk_workspace_import_stats st = {0};
	if ((r = load(ctx, ctx->args[0], &c)) == 0)
		r = rk_checkpoint_import(ctx->eng, &c, fd, &rev, &st, &ctx->err);
	if (r == 0) {
		cJSON *o = rk_checkpoint_to_json(&c, &rev, rev.id);
		cJSON *i = cJSON_AddObjectToObject(o, "imported");
		cJSON_AddNumberToObject(i, "files", (double)st.files);
		cJSON_AddNumberToObject(i, "bytes", (double)st.bytes);
		cJSON_AddNumberToObject(i, "skipped", (double)st.skipped);
		out_doc(o);
	}
	if (fd > 0)
		close(fd);
	rk_workspace_checkpoint_release(&rev);
	rk_computer_release(&c);
	return r;
}

/* --- verify, gc ------------------------------------------------------------------------------ */

static const struct rk_opt verify_opts[] = {
	OPT_STRING("revision", 'r', &o_revision, "ID", "which checkpoint (default: the latest)"),
	OPT_BOOL("deep", 0, &o_deep, "re-hash every stored file, not only check it is there"),
	OPT_BOOL("all", 'a', &o_all, "every computer's latest checkpoint"),
	OPT_END,
};

static cJSON *verify_one(struct cmd_ctx *ctx, const struct rk_computer *c, const char *rev, int *bad)
{
	struct rk_workspace_verify v;
	struct rk_error e;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "computer_id", c->id);
	cJSON_AddStringToObject(o, "name", c->name);
	int r = rk_checkpoint_verify(ctx->eng, c, rev, o_deep, &v, &e);
	if (r == -RK_ENOTFOUND && !rev) {
		cJSON_AddNullToObject(o, "revision");
		cJSON_AddBoolToObject(o, "ok", 1);
		cJSON_AddStringToObject(o, "problem", "no checkpoint yet");
		return o;
	}
	char *latest = rev ? NULL : rk_checkpoint_latest_id(ctx->eng, c->home_key);
	rk_json_add_str_or_null(o, "revision", rev ? rev : latest);
	free(latest);
	if (r) {
		*bad = 1;
		cJSON_AddBoolToObject(o, "ok", 0);
		cJSON_AddStringToObject(o, "problem", e.message);
		return o;
	}
	cJSON_AddBoolToObject(o, "ok", v.ok);
	cJSON_AddNumberToObject(o, "files", (double)v.files);
	cJSON_AddNumberToObject(o, "bytes", (double)v.bytes);
	cJSON_AddNumberToObject(o, "missing", (double)v.missing);
	cJSON_AddNumberToObject(o, "corrupt", (double)v.corrupt);
	if (v.problem[0])
		cJSON_AddStringToObject(o, "problem", v.problem);
	if (!v.ok)
		*bad = 1;
	return o;
}

static int run_verify(struct cmd_ctx *ctx)
{
	int r = o_all ? cmd_want_args(ctx, 0, 0, "no COMPUTER with --all")
		      : cmd_want_args(ctx, 1, 2, "COMPUTER [CHECKPOINT]");
	if (r || (r = cmd_engine(ctx)))
		return r;
	int bad = 0;
	if (o_all) {
		struct rk_computer *cs;
		size_t n;
		if ((r = rk_computer_list(ctx->eng, &cs, &n, &ctx->err)))
			return r;
		cJSON *rows = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			if (cmd_may_use(ctx, &cs[i])) /* the caller's computers */
				cJSON_AddItemToArray(rows, verify_one(ctx, &cs[i], NULL, &bad));
			rk_computer_release(&cs[i]);
		}
		free(cs);
		static const struct out_col cols[] = {{"name", "COMPUTER"}, {"revision", "CHECKPOINT"}, {"ok", "OK"},
						      {"files", "FILES"},   {"problem", "PROBLEM"},	{0}};
		out_list(rows, cols);
	} else {
		struct rk_computer c = {0};
		if ((r = load(ctx, ctx->args[0], &c)))
			return r;
		out_doc(verify_one(ctx, &c, revision_arg(ctx), &bad));
		rk_computer_release(&c);
	}
	if (bad)
		return rk_error_set(&ctx->err, RK_ECORRUPT, "a checkpoint failed verification (see above)");
	return 0;
}

/* gc is the store's maintenance, across every space's computers: the
 * operator's (a person at the terminal, as the data directory's owner),
 * never a bot's. It removes only what no revision names, under the store's
 * locks, so it deletes no one's checkpoints; but on a shared S3 prefix it
 * must not run while another host checkpoints, and deciding that is the
 * operator's call. */
static int operator_only(struct cmd_ctx *ctx)
{
	struct rk_actor a;
	int r = rk_actor_resolve(&a, ctx->eng, NULL, NULL, &ctx->err);
	if (r == 0 && a.bot)
		r = rk_error_set(&ctx->err, RK_EDENIED,
				 "checkpoint gc is the operator's maintenance of the whole store: bot '%s' may not "
				 "run it; ask a person to",
				 a.bot);
	rk_actor_release(&a);
	return r;
}

static int run_gc(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 0, "no arguments");
	if (r || (r = cmd_engine(ctx)) || (r = operator_only(ctx)))
		return r;
	cJSON *doc;
	if ((r = rk_checkpoint_gc(ctx->eng, &doc, &ctx->err)) == 0)
		out_doc(doc);
	return r;
}

static const struct rk_opt no_opts[] = {OPT_END};

static const struct cmd_verb checkpoint_verbs[] = {
	{"create", "COMPUTER [--reason TEXT]", "checkpoint the workspace now", create_opts, run_create, NULL},
	{"list", "COMPUTER", "the checkpoints kept, newest first", no_opts, run_list, NULL},
	{"show", "COMPUTER [CHECKPOINT]", "one checkpoint (default: the latest)", show_opts, run_show, NULL},
	{"restore", "COMPUTER [--revision ID]", "put a checkpoint back as the workspace", show_opts, run_restore, NULL},
	{"export", "COMPUTER [FILE.tar.zst|-] [-o FILE.tar.zst|-]", "a checkpoint as tar+zstd", export_opts, run_export,
	 NULL},
	{"import", "COMPUTER FILE|-", "replace the workspace with an archive", no_opts, run_import, NULL},
	{"verify", "COMPUTER [--revision ID] | --all", "check a checkpoint is whole", verify_opts, run_verify, NULL},
	{"gc", "", "remove stored files no checkpoint names", no_opts, run_gc, NULL},
	{0},
};

const struct cmd_entry cmd_checkpoint = {
	.name = "checkpoint",
	.args = "VERB [ARGS...]",
	.summary = "workspace checkpoints: create, list, show, restore, export, import, verify",
	.description = "A computer's workspace is checkpointed before it stops or pauses and on demand.\n"
		       "With --revisions 1 (the default) on docker and fake computers the workspace lives\n"
		       "on this host and a checkpoint only advances its marker; with more kept\n"
		       "each checkpoint is an incremental content-addressed snapshot. --revision ID\n"
		       "names a checkpoint; the workspace store keeps them (see rakazo-checkpoint(1)).",
	.verbs = checkpoint_verbs,
};
