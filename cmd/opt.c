#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

int opt_json, opt_help;

static const struct rk_opt common[] = {
	OPT_BOOL("json", 0, &opt_json, "print one JSON document (NDJSON for streams)"),
	OPT_BOOL("help", 'h', &opt_help, "show this help"),
	OPT_END,
};

static size_t count(const struct rk_opt *o)
{
	size_t n = 0;
	while (o && o[n].name)
		n++;
	return n;
}

static const struct rk_opt *nth(const struct rk_opt *opts, size_t i)
{
	size_t n = count(opts);
	return i < n ? &opts[i] : &common[i - n];
}

int rk_opt_parse(const struct rk_opt *opts, int argc, char **argv, char ***args, int *nargs, struct rk_error *err)
{
	size_t n = count(opts) + count(common);
	struct option *lo = rk_xcalloc(n + 1, sizeof(*lo));
	struct rk_buf shorts;
	rk_buf_init(&shorts);
	rk_buf_adds(&shorts, "-:"); /* "-": positionals come in order as option 1 */
	for (size_t i = 0; i < n; i++) {
		const struct rk_opt *o = nth(opts, i);
		lo[i].name = o->name;
		lo[i].has_arg = o->type == RK_OPT_BOOL ? no_argument : required_argument;
		lo[i].val = 256 + (int)i;
		if (o->short_name) {
			rk_buf_addc(&shorts, o->short_name);
			if (o->type != RK_OPT_BOOL)
				rk_buf_addc(&shorts, ':');
		}
	}
	char **pos = rk_xcalloc((size_t)argc + 1, sizeof(*pos));
	int npos = 0, r = 0;
	optind = 1;
	opterr = 0;
	for (;;) {
		int li = -1;
		int c = getopt_long(argc, argv, shorts.data, lo, &li);
		if (c == -1)
			break;
		if (c == 1) {
			pos[npos++] = optarg;
			continue;
		}
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];
			if (c == ':')
				r = rk_error_set(err, RK_EUSAGE, "option %s needs an argument", bad);
			else if (optopt && optopt < 256)
				r = rk_error_set(err, RK_EUSAGE, "unknown option -%c", optopt);
			else
				r = rk_error_set(err, RK_EUSAGE, "unknown option %s", bad);
			goto out;
		}
		const struct rk_opt *o = NULL;
		if (c >= 256) {
			o = nth(opts, (size_t)(c - 256));
		} else {
			for (size_t i = 0; i < n; i++)
				if (nth(opts, i)->short_name == c)
					o = nth(opts, i);
		}
		if (!o)
			continue;
		switch (o->type) {
		case RK_OPT_BOOL:
			*(int *)o->value = 1;
			break;
		case RK_OPT_STRING:
			*(const char **)o->value = optarg;
			break;
		case RK_OPT_LIST: {
			struct rk_opt_list *l = o->value;
			l->items = rk_xrealloc(l->items, sizeof(*l->items) * (size_t)(l->n + 1));
			l->items[l->n++] = optarg;
			break;
		}
		case RK_OPT_INT: {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end) {
				r = rk_error_set(err, RK_EUSAGE, "--%s takes a whole number, not '%s'", o->name,
						 optarg);
				goto out;
			}
			if ((o->min || o->max) && (v < o->min || v > o->max)) {
				r = rk_error_set(err, RK_EUSAGE, "--%s must be from %lld to %lld, not %lld", o->name,
						 (long long)o->min, (long long)o->max, v);
				goto out;
			}
			*(int64_t *)o->value = v;
			break;
		}
		default:
			break;
		}
	}
	while (optind < argc)
		pos[npos++] = argv[optind++];
	*args = pos;
	*nargs = npos;
	pos = NULL;
out:
	free(pos);
	free(lo);
	rk_buf_release(&shorts);
	return r;
}

static void print_table(const struct rk_opt *opts, FILE *f)
{
	for (size_t i = 0; opts && opts[i].name; i++) {
		const struct rk_opt *o = &opts[i];
		char shortp[8] = "    ", left[128];
		if (o->short_name)
			snprintf(shortp, sizeof(shortp), "-%c, ", o->short_name);
		snprintf(left, sizeof(left), "%s--%s%s%s", shortp, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-32s %s\n", left, o->help);
	}
}

void rk_opt_print_help(const struct rk_opt *opts, FILE *f)
{
	if (count(opts)) {
		fputs("\nOptions:\n", f);
		print_table(opts, f);
	}
	fputs("\nCommon options:\n", f);
	print_table(common, f);
}

void rk_opt_print_names(const struct rk_opt *opts, FILE *f)
{
	for (size_t i = 0; opts && opts[i].name; i++)
		fprintf(f, "--%s\n", opts[i].name);
	for (size_t i = 0; common[i].name; i++)
		fprintf(f, "--%s\n", common[i].name);
}
