#ifndef RK_CMD_OPT_H
#define RK_CMD_OPT_H
/* The one option parser: a table of struct rk_opt feeds getopt_long, the
 * --help text and the completion helper, so they cannot disagree. */

#include <stdint.h>
#include <stdio.h>

#include "engine/util/err.h"

enum rk_opt_type {
	RK_OPT_END = 0,
	RK_OPT_BOOL,   /* int *: set to 1 */
	RK_OPT_STRING, /* const char **: the last one given */
	RK_OPT_INT,    /* int64_t *: decimal, range-checked */
	RK_OPT_LIST,   /* struct rk_opt_list *: every one given, in order */
};

struct rk_opt_list {
	const char **items;
	int n;
};

struct rk_opt {
	const char *name; /* long name, without "--" */
	char short_name;  /* 0 for none */
	enum rk_opt_type type;
	void *value;
	const char *arg; /* the argument's name in help, e.g. "KEY" */
	const char *help;
	int64_t min, max; /* for RK_OPT_INT (both 0: any) */
};

#define OPT_BOOL(n, s, v, h)                                                                                           \
	{                                                                                                              \
		n, s, RK_OPT_BOOL, v, NULL, h, 0, 0                                                                    \
	}
#define OPT_STRING(n, s, v, a, h)                                                                                      \
	{                                                                                                              \
		n, s, RK_OPT_STRING, v, a, h, 0, 0                                                                     \
	}
#define OPT_INT(n, s, v, a, h, lo, hi)                                                                                 \
	{                                                                                                              \
		n, s, RK_OPT_INT, v, a, h, lo, hi                                                                      \
	}
#define OPT_LIST(n, s, v, a, h)                                                                                        \
	{                                                                                                              \
		n, s, RK_OPT_LIST, v, a, h, 0, 0                                                                       \
	}
#define OPT_END                                                                                                        \
	{                                                                                                              \
		0                                                                                                      \
	}

/* The options every command takes; set by rk_opt_parse. */
extern int opt_json, opt_help;

/* Parses argv[1..] (argv[0] is the command's name). Positional arguments are
 * gathered into *args (argv-owned strings; the array is malloc'd) and
 * everything after "--" too. RK_EUSAGE with a message on a bad option. */
int rk_opt_parse(const struct rk_opt *opts, int argc, char **argv, char ***args, int *nargs, struct rk_error *err);
/* "  -n, --name NAME   help" lines for the table, plus --json and --help. */
void rk_opt_print_help(const struct rk_opt *opts, FILE *f);
/* "--name\n" for each option (for the completion helper). */
void rk_opt_print_names(const struct rk_opt *opts, FILE *f);

#endif
