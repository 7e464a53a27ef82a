/* What a model's tokens cost (model.h "prices"): a small built-in table of
 * list prices, and the arithmetic. The config file's "price" overrides the
 * table (model_config.c). */

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "engine/agent/model.h"

struct entry {
	const char *prefix; /* normalised: lowercase, dashes for dots */
	double input, cached, cache_write, output;
};

/* USD per million tokens, standard tier, 5-minute cache writes. Anthropic:
 * its pricing page (platform.claude.com, "Model pricing"); the 5.5
 * generation's cache reads at 0.05x input since 2026-10-07. OpenAI: its
 * pricing page as quoted in 2026-11 (it bills no cache writes; the preview
 * computer-use model has no cached rate). Haiku 5.5's price depends on the
 * prompt's length, which one rate cannot say: set "price" for it. */
static const struct entry table[] = {
	{"claude-fable-5-1", 10, 0.25, 12.50, 50}, {"claude-mythos-5-1", 10, 0.25, 12.50, 50},
	{"claude-fable-5", 10, 1, 12.50, 50},	   {"claude-mythos-5", 10, 1, 12.50, 50},
	{"claude-opus-5-5", 4, 0.20, 5, 20},	   {"claude-opus-5", 5, 0.50, 6.25, 25},
	{"claude-opus-4-8", 5, 0.50, 6.25, 25},	   {"claude-opus-4-7", 5, 0.50, 6.25, 25},
	{"claude-opus-4-6", 5, 0.50, 6.25, 25},	   {"claude-opus-4-5", 5, 0.50, 6.25, 25},
	{"claude-opus-4-1", 15, 1.50, 18.75, 75},  {"claude-opus-4", 15, 1.50, 18.75, 75},
	{"claude-sonnet-5-5", 2, 0.10, 2.50, 10},  {"claude-sonnet-5", 2, 0.20, 2.50, 10},
	{"claude-sonnet-4-6", 3, 0.30, 3.75, 15},  {"claude-sonnet-4-5", 3, 0.30, 3.75, 15},
	{"claude-sonnet-4", 3, 0.30, 3.75, 15},	   {"claude-haiku-4-5", 1, 0.10, 1.25, 5},
	{"computer-use-preview", 3, 3, 3, 12},	   {"gpt-5-5", 5, 0.50, 5, 30},
	{"gpt-5-4-mini", 0.75, 0.075, 0.75, 4.50}, {"gpt-5-4", 2.50, 0.25, 2.50, 15},
	{"gpt-5", 1.25, 0.125, 1.25, 10},
};

/* After a table prefix, what may follow in a model name: nothing, a date
 * ("-20251101", "-2025-03-11"), or a non-version tail ("[1m]", ":0",
 * "-latest"); not a further version number ("-5" of "claude-opus-5-5"). */
static int tail_ok(const char *t)
{
	if (!*t)
		return 1;
	if (*t != '-' && *t != '.')
		return !isdigit((unsigned char)*t);
	t++;
	if (!isdigit((unsigned char)*t))
		return strcmp(t, "mini") != 0 && strcmp(t, "nano") != 0 && strncmp(t, "mini-", 5) != 0 &&
		       strncmp(t, "nano-", 5) != 0; /* "gpt-5-mini" is another model */
	size_t digits = strspn(t, "0123456789");
	return digits >= 4; /* a date, not a minor version */
}

int rk_model_price_lookup(const char *model, struct rk_model_price *out)
{
	if (!model || !*model)
		return 0;
	const char *slash = strrchr(model, '/');
	const char *m = slash ? slash + 1 : model;
	if (!strncmp(m, "anthropic.", 10))
		m += 10; /* a cloud's "anthropic.claude-..." */
	char name[128];
	size_t n = 0;
	for (; n < sizeof(name) - 1 && m[n]; n++)
		name[n] = m[n] == '.' ? '-' : (char)tolower((unsigned char)m[n]);
	name[n] = '\0';
	const struct entry *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		size_t pl = strlen(table[i].prefix);
		if (pl > best_len && !strncmp(name, table[i].prefix, pl) && tail_ok(name + pl)) {
			best = &table[i];
			best_len = pl;
		}
	}
	if (!best)
		return 0;
	*out = (struct rk_model_price){.known = 1,
				       .input = best->input,
				       .output = best->output,
				       .cached = best->cached,
				       .cache_write = best->cache_write,
				       .source = "built-in"};
	return 1;
}

int64_t rk_model_cost_micro(const struct rk_model_price *p, int64_t input, int64_t cached, int64_t cache_write,
			    int64_t output)
{
	if (!p || !p->known)
		return -1;
	int64_t plain = input - cached - cache_write;
	if (plain < 0)
		plain = 0;
	/* USD per million tokens is micro-USD per token */
	double micro = (double)plain * p->input + (double)cached * p->cached + (double)cache_write * p->cache_write +
		       (double)output * p->output;
	return (int64_t)(micro + 0.5);
}
