/* rakazo memory: the Markdown memory of a user and their bots (engine/agent/memory.h).
 *
 *   rakazo memory read [PATH] [--bot B]          one document, or the list
 *   rakazo memory write PATH [--content TEXT | FILE | -] [--expected-revision N] [--bot B]
 *   rakazo memory search QUERY... [--limit N] [--bot B]
 *   rakazo memory history PATH [--bot B] */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/access/authz.h"
#include "engine/agent/memory.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "cmd.h"
#include "out.h"

static const char *o_bot, *o_space, *o_content;
static int64_t o_expected = RK_MEMORY_NO_REVISION, o_limit = 20;

#define OPT_BOT OPT_STRING("bot", 'b', &o_bot, "BOT", "as this bot (its own documents and yours)")
#define OPT_SPACE OPT_STRING("space", 0, &o_space, "SPACE", "the space (default: RAKAZO_SPACE, else default)")

static const struct rk_opt read_opts[] = {OPT_BOT, OPT_SPACE, OPT_END};
static const struct rk_opt write_opts[] = {
	OPT_STRING("content", 0, &o_content, "TEXT", "the content (else FILE, or stdin)"),
	OPT_INT("expected-revision", 0, &o_expected, "N",
		"fail with conflict unless the document is at revision N (0: it must not exist)", 0, INT64_C(1) << 40),
	OPT_BOT,
	OPT_SPACE,
	OPT_END,
};
static const struct rk_opt search_opts[] = {
	OPT_INT("limit", 'n', &o_limit, "N", "at most N results (default 20)", 1, 100),
	OPT_BOT,
	OPT_SPACE,
	OPT_END,
};

static int actor(struct cmd_ctx *ctx, struct rk_actor *a)
{
	int r = cmd_engine(ctx);
	return r ? r : rk_actor_resolve(a, ctx->eng, o_space, o_bot, &ctx->err);
}

static int run_read(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 0, 1, "at most a PATH");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	cJSON *doc;
	if ((r = rk_memory_read(ctx->eng, &a, ctx->nargs ? ctx->args[0] : NULL, &doc, &ctx->err)) == 0) {
		if (cJSON_IsArray(doc)) {
			static const struct out_col cols[] = {{"path", "PATH"},
							      {"scope", "SCOPE"},
							      {"bot", "BOT"},
							      {"revision", "REVISION"},
							      {"bytes", "BYTES"},
							      {"updated_at", "UPDATED"},
							      {0}};
			out_list(doc, cols);
		} else if (out_is_json()) {
			out_doc(doc);
		} else {
			const char *text = cJSON_GetObjectItem(doc, "content")->valuestring;
			out_text(stdout, text, strlen(text));
			cJSON_Delete(doc);
		}
	}
	rk_actor_release(&a);
	return r;
}

static int run_write(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 2, "PATH [FILE|-]");
	if (r)
		return r;
	if (o_content && ctx->nargs == 2)
		return rk_error_set(&ctx->err, RK_EUSAGE, "give the content with --content or as FILE, not both");
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	if (o_content) {
		rk_buf_adds(&b, o_content);
	} else {
		const char *src = ctx->nargs == 2 ? ctx->args[1] : "-";
		r = rk_fs_read_all(!strcmp(src, "-") ? "/dev/stdin" : src, RK_MEMORY_CONTENT_MAX + 1, &b, &ctx->err);
		if (r == -RK_ETOOLARGE)
			r = rk_error_set(&ctx->err, RK_ETOOLARGE, "memory document exceeds %u bytes",
					 RK_MEMORY_CONTENT_MAX);
	}
	if (r == 0 && memchr(b.data, 0, b.len))
		r = rk_error_set(&ctx->err, RK_EINVALID, "memory is Markdown text: the content holds a NUL byte");
	struct rk_actor a;
	if (r == 0 && (r = actor(ctx, &a)) == 0) {
		cJSON *doc;
		if ((r = rk_memory_write(ctx->eng, &a, ctx->args[0], b.data, o_expected, NULL, &doc, &ctx->err)) == 0)
			out_doc(doc);
		rk_actor_release(&a);
	}
	rk_buf_release(&b);
	return r;
}

static int run_search(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, -1, "QUERY");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	struct rk_buf q = RK_BUF_INIT;
	rk_buf_init(&q);
	for (int i = 0; i < ctx->nargs; i++) {
		if (i)
			rk_buf_addc(&q, ' ');
		rk_buf_adds(&q, ctx->args[i]);
	}
	cJSON *doc;
	if ((r = rk_memory_search(ctx->eng, &a, q.data, (int)o_limit, &doc, &ctx->err)) == 0) {
		if (out_is_json()) {
			out_doc(doc);
		} else {
			static const struct out_col cols[] = {{"path", "PATH"},
							      {"scope", "SCOPE"},
							      {"score", "SCORE"},
							      {"snippet", "SNIPPET"},
							      {0}};
			out_list(cJSON_DetachItemFromObject(doc, "results"), cols);
			cJSON_Delete(doc);
		}
	}
	rk_buf_release(&q);
	rk_actor_release(&a);
	return r;
}

static int run_history(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "PATH");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	cJSON *arr;
	if ((r = rk_memory_history(ctx->eng, &a, ctx->args[0], &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"revision", "REVISION"},
						      {"bytes", "BYTES"},
						      {"run_id", "RUN"},
						      {"created_at", "CREATED"},
						      {0}};
		out_list(arr, cols);
	}
	rk_actor_release(&a);
	return r;
}

static const struct cmd_verb memory_verbs[] = {
	{"read", "[PATH]", "print a document, or list them", read_opts, run_read, NULL},
	{"write", "PATH [--content TEXT | FILE | -]", "save a document (a new revision)", write_opts, run_write, NULL},
	{"search", "QUERY...", "search documents, best match first", search_opts, run_search, NULL},
	{"history", "PATH", "list a document's revisions", read_opts, run_history, NULL},
	{0},
};

const struct cmd_entry cmd_memory = {
	.name = "memory",
	.args = "read|write|search|history ...",
	.summary = "the Markdown memory of you and your bots",
	.description = "Documents are keyed by space, user, scope (user, or bot with --bot) and path. You only\n"
		       "ever see your own documents in the current space; a bot sees yours and its own. Each\n"
		       "write is a new revision; --expected-revision N makes a write fail (exit 4, conflict)\n"
		       "when someone saved in between. Search ranks with SQLite FTS5 and falls back to a\n"
		       "case-insensitive substring match (score 1).",
	.verbs = memory_verbs,
};
