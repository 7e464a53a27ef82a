/* rakazo secret: values a bot may use without seeing them (engine/access/secret.h).
 *
 *   rakazo secret set NAME --origin URL --auth METHOD [--bot B]   value from the terminal (no echo) or stdin
 *   rakazo secret list [--bot B]                                   names, origins, methods; never values
 *   rakazo secret rm NAME [--bot B] */

#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/access/secret.h"
#include "engine/util/json.h"
#include "cmd.h"
#include "out.h"

static const char *o_origin, *o_auth, *o_bot, *o_space;

#define OPT_BOT OPT_STRING("bot", 'b', &o_bot, "BOT", "the bot the secret is for (default: all your bots)")
#define OPT_SPACE OPT_STRING("space", 0, &o_space, "SPACE", "the space (default: RAKAZO_SPACE, else default)")

static const struct rk_opt set_opts[] = {
	OPT_STRING("origin", 0, &o_origin, "URL", "where it may be sent: scheme://host[:port]"),
	OPT_STRING("auth", 0, &o_auth, "METHOD", "bearer, basic (user:password), header:NAME or query:NAME"),
	OPT_BOT,
	OPT_SPACE,
	OPT_END,
};
static const struct rk_opt list_opts[] = {OPT_SPACE, OPT_END};
static const struct rk_opt rm_opts[] = {OPT_BOT, OPT_SPACE, OPT_END};

static int actor(struct cmd_ctx *ctx, struct rk_actor *a)
{
	int r = cmd_engine(ctx);
	return r ? r : rk_actor_resolve(a, ctx->eng, o_space, o_bot, &ctx->err);
}

static volatile sig_atomic_t prompt_signal;

static void on_prompt_signal(int sig)
{
	prompt_signal = sig;
}

/* The value: a line typed without echo on a terminal, else all of stdin
 * (one trailing newline dropped). *buf is sodium_malloc'd. A signal at the
 * prompt (Ctrl-C) gives the terminal its echo back and stores nothing. */
static int read_value(struct cmd_ctx *ctx, const char *name, char **buf, size_t *len)
{
	size_t cap = RK_SECRET_VALUE_MAX + 2;
	char *v = sodium_init() < 0 ? NULL : sodium_malloc(cap);
	if (!v)
		return rk_error_set(&ctx->err, RK_EFAILED, "cannot allocate locked memory for the value");
	size_t n = 0;
	if (isatty(0)) {
		struct termios old, quiet;
		/* no SA_RESTART: the read returns, and the terminal is put back */
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
		struct sigaction sa = {.sa_handler = on_prompt_signal}, saved[4];
		sigemptyset(&sa.sa_mask);
		prompt_signal = 0;
		for (size_t i = 0; i < 4; i++)
			sigaction(sigs[i], &sa, &saved[i]);
		fprintf(stderr, "value for %s (not shown): ", name);
		fflush(stderr);
		int have = tcgetattr(0, &old) == 0;
		if (have) {
			quiet = old;
			quiet.c_lflag &= ~(tcflag_t)ECHO;
			tcsetattr(0, TCSAFLUSH, &quiet);
		}
		if (!prompt_signal && fgets(v, (int)cap, stdin))
			n = strlen(v);
		if (have)
			tcsetattr(0, TCSAFLUSH, &old);
		for (size_t i = 0; i < 4; i++)
			sigaction(sigs[i], &saved[i], NULL);
		clearerr(stdin);
		fputc('\n', stderr);
		if (prompt_signal) {
			sodium_free(v); /* zeroes what was typed */
			return rk_error_set(&ctx->err, RK_EINTERRUPTED,
					    "interrupted at the prompt: nothing was stored");
		}
	} else {
		ssize_t k;
		while (n < cap && (k = read(0, v + n, cap - n)) > 0)
			n += (size_t)k;
	}
	if (n && v[n - 1] == '\n')
		n--;
	if (n && v[n - 1] == '\r')
		n--;
	if (n > RK_SECRET_VALUE_MAX) {
		sodium_free(v);
		return rk_error_set(&ctx->err, RK_ETOOLARGE, "the value exceeds %d bytes", RK_SECRET_VALUE_MAX);
	}
	*buf = v;
	*len = n;
	return 0;
}

static int run_set(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "NAME");
	if (r)
		return r;
	if (!o_origin || !o_auth)
		return rk_error_set(&ctx->err, RK_EUSAGE, "secret set needs --origin URL and --auth METHOD");
	struct rk_actor a;
	if ((r = actor(ctx, &a)))
		return r;
	/* check what can be checked before asking for the value */
	char *origin = NULL, *kind = NULL, *param = NULL;
	if ((r = rk_secret_origin(o_origin, 1, &origin, &ctx->err)) ||
	    (r = rk_secret_auth_parse(o_auth, &kind, &param, &ctx->err))) {
		free(origin);
		rk_actor_release(&a);
		return r;
	}
	char *v = NULL;
	size_t n = 0;
	if ((r = read_value(ctx, ctx->args[0], &v, &n)) == 0)
		r = rk_secret_set(ctx->eng, &a, ctx->args[0], o_origin, o_auth, v, n, &ctx->err);
	if (v)
		sodium_free(v);
	if (r == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", ctx->args[0]);
		rk_json_add_str_or_null(o, "bot", a.bot);
		cJSON_AddStringToObject(o, "space", a.space);
		cJSON_AddStringToObject(o, "origin", origin);
		cJSON_AddStringToObject(o, "auth", o_auth);
		cJSON_AddStringToObject(o, "state", "set");
		out_doc(o);
	}
	free(origin);
	free(kind);
	free(param);
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
	if ((r = rk_secret_list(ctx->eng, &a, &arr, &ctx->err)) == 0) {
		static const struct out_col cols[] = {{"name", "NAME"},
						      {"bot", "BOT"},
						      {"origin", "ORIGIN"},
						      {"auth", "AUTH"},
						      {"state", "STATE"},
						      {"updated_at", "UPDATED"},
						      {0}};
		out_list(arr, cols);
	}
	rk_actor_release(&a);
	return r;
}

static int run_rm(struct cmd_ctx *ctx)
{
	int r = cmd_want_args(ctx, 1, 1, "NAME");
	struct rk_actor a;
	if (r || (r = actor(ctx, &a)))
		return r;
	if ((r = rk_secret_remove(ctx->eng, &a, ctx->args[0], &ctx->err)) == 0) {
		out_removed("name", ctx->args[0]);
	}
	rk_actor_release(&a);
	return r;
}

static const struct cmd_verb secret_verbs[] = {
	{"set", "NAME --origin URL --auth METHOD [--bot BOT]", "store a secret (the value from the terminal or stdin)",
	 set_opts, run_set, NULL},
	{"list", "", "list secrets and the ones bots asked for (never their values)", list_opts, run_list, NULL},
	{"rm", "NAME [--bot BOT]", "remove a secret", rm_opts, run_rm, NULL},
	{0},
};

const struct cmd_entry cmd_secret = {
	.name = "secret",
	.args = "set|list|rm ...",
	.summary = "secrets a bot may use without seeing them",
	.description = "A bot asks for a secret with its request_secret tool; a person stores the value here.\n"
		       "The bot then calls secret_request, which sends one HTTP request to the secret's origin\n"
		       "(same scheme, host and port; no userinfo, no fragment) with the auth added, and removes\n"
		       "the value (raw, base64, base64url, hex, percent-encoded) from the response. Values are\n"
		       "sealed with XChaCha20-Poly1305 under DATA_DIR/master.key (or RAKAZO_MASTER_KEY, 64 hex\n"
		       "digits), bound to the user, space, bot and name; they are never printed.",
	.verbs = secret_verbs,
};
