/* rakazo: one multi-call binary. `rakazo SUB ...` or a link named
 * `rakazo-SUB` (argv[0], busybox style) runs the same command. */

#include <libgen.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/agent/hooks.h"
#include "engine/util/log.h"
#include "cmd.h"
#include "out.h"

extern const struct cmd_entry cmd_computer, cmd_screen, cmd_doctor, cmd_worker, cmd_help, cmd_version;
extern const struct cmd_entry cmd_checkpoint;
extern const struct cmd_entry cmd_run;
extern const struct cmd_entry cmd_tui;
extern const struct cmd_entry cmd_serve;
extern const struct cmd_entry cmd_mcp;
extern const struct cmd_entry cmd_pair;
extern const struct cmd_entry cmd_browser;
extern const struct cmd_entry cmd_secret, cmd_memory, cmd_approval, cmd_space;

#define CMD(name, entry) &entry
/* The command table. Makefile's install and the completion test read the
 * names from these lines: keep one CMD per line. */
/* (clang-format would pack the table into columns) */
/* clang-format off */
const struct cmd_entry *const cmd_table[] = {
	CMD("computer", cmd_computer),
	CMD("screen", cmd_screen),
	CMD("browser", cmd_browser),
	CMD("checkpoint", cmd_checkpoint),
	CMD("run", cmd_run),
	CMD("tui", cmd_tui),
	CMD("serve", cmd_serve),
	CMD("mcp", cmd_mcp),
	CMD("pair", cmd_pair),
	CMD("secret", cmd_secret),
	CMD("memory", cmd_memory),
	CMD("approval", cmd_approval),
	CMD("space", cmd_space),
	CMD("doctor", cmd_doctor),
	CMD("worker", cmd_worker),
	CMD("help", cmd_help),
	CMD("version", cmd_version),
	NULL,
};
/* clang-format on */

const struct cmd_entry *cmd_find(const char *name)
{
	for (size_t i = 0; name && cmd_table[i]; i++)
		if (!strcmp(cmd_table[i]->name, name))
			return cmd_table[i];
	return NULL;
}

/* --- help --------------------------------------------------------------- */

static void print_verbs(const char *prefix, const struct cmd_verb *verbs, FILE *f)
{
	for (size_t i = 0; verbs[i].name; i++) {
		char left[128];
		snprintf(left, sizeof(left), "%s %s %s", prefix, verbs[i].name, verbs[i].args ? verbs[i].args : "");
		fprintf(f, "  %-48s %s\n", left, verbs[i].summary);
	}
}

static void help_command(const struct cmd_entry *c, FILE *f)
{
	fprintf(f, "usage: rakazo %s %s\n\n%s\n", c->name, c->args ? c->args : "", c->summary);
	if (c->description)
		fprintf(f, "\n%s\n", c->description);
	if (c->verbs) {
		fputs("\nCommands:\n", f);
		print_verbs(c->name, c->verbs, f);
		for (size_t i = 0; c->verbs[i].name; i++)
			if (c->verbs[i].verbs) {
				char p[96];
				snprintf(p, sizeof(p), "%s %s", c->name, c->verbs[i].name);
				print_verbs(p, c->verbs[i].verbs, f);
			}
		fprintf(f, "\nSee `rakazo %s VERB --help` and man rakazo-%s(1).\n", c->name, c->name);
	} else {
		rk_opt_print_help(c->opts, f);
	}
}

static void help_verb(const char *prefix, const struct cmd_verb *v, FILE *f)
{
	fprintf(f, "usage: rakazo %s %s %s\n\n%s\n", prefix, v->name, v->args ? v->args : "", v->summary);
	if (v->verbs) {
		fputs("\nCommands:\n", f);
		char p[96];
		snprintf(p, sizeof(p), "%s %s", prefix, v->name);
		print_verbs(p, v->verbs, f);
	} else {
		rk_opt_print_help(v->opts, f);
	}
}

static void help_overview(FILE *f)
{
	fputs("usage: rakazo COMMAND [ARGS...]\n"
	      "       rakazo-COMMAND [ARGS...]\n\n"
	      "rakazo runs AI agents against sandboxed Linux desktops and keeps their work safe.\n\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; cmd_table[i]; i++)
		fprintf(f, "  %-12s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
	fputs("\nEvery command takes --json (one JSON document on stdout) and --help.\n"
	      "Exit status: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict, 5 unavailable,\n"
	      "6 timeout, 7 outcome unknown, 8 denied, 130 interrupted.  See rakazo(1).\n",
	      f);
}

static int run_help(struct cmd_ctx *ctx)
{
	if (ctx->nargs == 0) {
		help_overview(stdout);
		return 0;
	}
	const struct cmd_entry *c = cmd_find(ctx->args[0]);
	if (!c)
		return rk_error_set(&ctx->err, RK_EUSAGE, "no command '%s' (see `rakazo help`)", ctx->args[0]);
	if (ctx->nargs >= 2 && c->verbs) {
		for (size_t i = 0; c->verbs[i].name; i++)
			if (!strcmp(c->verbs[i].name, ctx->args[1])) {
				help_verb(c->name, &c->verbs[i], stdout);
				return 0;
			}
		return rk_error_set(&ctx->err, RK_EUSAGE, "rakazo %s has no command '%s'", c->name, ctx->args[1]);
	}
	help_command(c, stdout);
	return 0;
}

static int run_version(struct cmd_ctx *ctx)
{
	(void)ctx;
	if (opt_json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "version", RK_VERSION);
		cJSON_AddStringToObject(o, "image", RK_IMAGE_TAG);
		out_doc(o);
	} else {
		printf("rakazo %s\n", RK_VERSION);
	}
	return 0;
}

const struct cmd_entry cmd_help = {
	.name = "help",
	.args = "[COMMAND [VERB]]",
	.summary = "show help for rakazo or one of its commands",
	.run = run_help,
};

const struct cmd_entry cmd_version = {
	.name = "version",
	.summary = "print the version",
	.run = run_version,
};

/* --- completion helper (hidden) ---------------------------------------------- */

/* `rakazo --complete-helper [CMD [VERB...]]`: the words that may come next. */
static int complete_helper(int argc, char **argv)
{
	if (argc == 0) {
		for (size_t i = 0; cmd_table[i]; i++)
			puts(cmd_table[i]->name);
		return 0;
	}
	const struct cmd_entry *c = cmd_find(argv[0]);
	if (!c)
		return 0;
	const struct cmd_verb *verbs = c->verbs;
	const struct rk_opt *opts = c->opts;
	for (int i = 1; i < argc && verbs; i++) {
		const struct cmd_verb *found = NULL;
		for (size_t k = 0; verbs[k].name; k++)
			if (!strcmp(verbs[k].name, argv[i]))
				found = &verbs[k];
		if (!found)
			break;
		opts = found->opts;
		verbs = found->verbs;
	}
	if (verbs && (argc == 1 || opts == c->opts)) {
		for (size_t k = 0; verbs[k].name; k++)
			puts(verbs[k].name);
		return 0;
	}
	rk_opt_print_names(opts, stdout);
	return 0;
}

/* --- dispatch ------------------------------------------------------------------- */

static int finish(struct cmd_ctx *ctx, int r)
{
	int status = 0;
	if (r < 0)
		status = out_error(&ctx->err);
	if (r < 0 && ctx->err.code == RK_EUSAGE && !opt_json)
		fputs("rakazo: see `rakazo help` or the command's --help\n", stderr);
	rk_engine_free(ctx->eng);
	free(ctx->args);
	return status;
}

static int run_verb(const char *prefix, const struct cmd_verb *verbs, int argc, char **argv, struct cmd_ctx *ctx)
{
	/* argv[0] is the parent's name; argv[1] the verb */
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			const struct cmd_entry *c = cmd_find(prefix);
			if (c && c->verbs == verbs)
				help_command(c, stdout);
			else {
				fprintf(stdout, "usage: rakazo %s VERB ...\n\nCommands:\n", prefix);
				print_verbs(prefix, verbs, stdout);
			}
			return finish(ctx, 0);
		}
		return finish(ctx, rk_error_set(&ctx->err, RK_EUSAGE,
						"rakazo %s needs a command (see `rakazo %s --help`)", prefix, prefix));
	}
	for (size_t i = 0; verbs[i].name; i++) {
		const struct cmd_verb *v = &verbs[i];
		if (strcmp(v->name, argv[1]) != 0)
			continue;
		if (v->verbs) {
			char p[96];
			snprintf(p, sizeof(p), "%s %s", prefix, v->name);
			return run_verb(p, v->verbs, argc - 1, argv + 1, ctx);
		}
		int r = rk_opt_parse(v->opts, argc - 1, argv + 1, &ctx->args, &ctx->nargs, &ctx->err);
		if (r == 0 && opt_help) {
			help_verb(prefix, v, stdout);
			return finish(ctx, 0);
		}
		if (r == 0)
			r = v->run(ctx);
		return finish(ctx, r);
	}
	return finish(ctx, rk_error_set(&ctx->err, RK_EUSAGE, "rakazo %s has no command '%s' (see `rakazo %s --help`)",
					prefix, argv[1], prefix));
}

static int run_command(const struct cmd_entry *c, int argc, char **argv)
{
	struct cmd_ctx ctx = {0};
	if (c->verbs)
		return run_verb(c->name, c->verbs, argc, argv, &ctx);
	int r = rk_opt_parse(c->opts, argc, argv, &ctx.args, &ctx.nargs, &ctx.err);
	if (r == 0 && opt_help) {
		help_command(c, stdout);
		return finish(&ctx, 0);
	}
	if (r == 0)
		r = c->run(&ctx);
	return finish(&ctx, r);
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	signal(SIGPIPE, SIG_IGN);
	/* --json anywhere before "--" shapes even the errors of parsing itself */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			opt_json = 1;
	rk_warn_set_hook(out_warning); /* the engine's warnings, on stderr */
	rk_engine_hooks_init();	       /* which module answers each engine hook */
	char *self = strdup(argv[0]);
	const char *base = basename(self);
	int status;
	if (!strncmp(base, "rakazo-", 7)) {
		const struct cmd_entry *c = cmd_find(base + 7);
		if (!c) {
			fprintf(stderr, "rakazo: usage: no command '%s' behind %s\n", base + 7, base);
			status = 2;
		} else {
			status = run_command(c, argc, argv);
		}
	} else if (argc < 2 && isatty(0) && isatty(1)) {
		status = run_command(&cmd_tui, argc, argv); /* on a terminal: the dashboard */
	} else if (argc < 2) {
		help_overview(stdout);
		status = 0;
	} else if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("rakazo %s\n", RK_VERSION);
		status = 0;
	} else if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help_overview(stdout);
		status = 0;
	} else if (!strcmp(argv[1], "--complete-helper")) {
		status = complete_helper(argc - 2, argv + 2);
	} else {
		const struct cmd_entry *c = cmd_find(argv[1]);
		if (!c) {
			if (argv[1][0] == '-' && !strcmp(argv[1], "--json"))
				opt_json = 1;
			struct rk_error e;
			rk_error_set(&e, RK_EUSAGE, "no command '%s' (see `rakazo help`)", argv[1]);
			status = out_error(&e);
		} else {
			status = run_command(c, argc - 1, argv + 1);
		}
	}
	free(self);
	return status;
}
