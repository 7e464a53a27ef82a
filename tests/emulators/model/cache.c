/* The vendors' prompt caches, so an answer's usage says what the vendor's
 * would. A request's prompt is read into pieces in the order the vendor
 * renders it, each with its token estimate (json_tokens) and the hash of
 * everything up to it: the piece's JSON as sent (keys in the order they
 * came, as the vendors' caches see them; cache_control left out), its
 * place (the section, the message's role and index) and what came before,
 * down to the protocol and the model.
 *
 * Anthropic (platform.claude.com/docs/en/build-with-claude/prompt-caching):
 * cache_control marks a breakpoint on a tool, a system block or a message
 * content block, a top-level cache_control one on the last cacheable
 * block; 4 at most. A request writes one entry per breakpoint whose prefix
 * reaches the model's minimum, and reads the longest entry an earlier one
 * wrote at most 20 positions back from one of its breakpoints (the
 * breakpoint is the first; a run of tool_use or of tool_result blocks is
 * one position). An entry lives 5 minutes (ttl "1h": an hour) from its
 * last write or read.
 *
 * OpenAI (developers.openai.com/api/docs/guides/prompt-caching, models
 * before GPT-5.6): automatic. A prompt of 1024 tokens or more is cached,
 * and a later one reads the longest prefix of pieces an earlier one had,
 * in steps of 128 tokens past the first 1024. prompt_cache_key only routes
 * at the vendor; here it partitions the cache, a simplification. Entries
 * live as long as the server. */

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "tests/emulators/model/model.h"

enum { NO_TTL, TTL_5M, TTL_1H };

#define LOOKBACK 20 /* positions a breakpoint checks, its own the first */
#define MAX_BREAKPOINTS 4
#define OPENAI_MIN 1024
#define OPENAI_STEP 128
#define FOREVER INT64_MAX

struct piece {
	char hash[65]; /* of the prompt up to and including this piece */
	long tokens, upto;
	int position;  /* for the lookback */
	int ttl;       /* its breakpoint's, NO_TTL: none */
	int cacheable; /* may take the automatic breakpoint */
	char run;      /* 'u' tool_use, 'r' tool_result, 0 other */
};

struct prompt {
	enum protocol proto;
	struct piece *p;
	int n, cap;
	char chain[65];	 /* the hash so far */
	long min_tokens; /* the shortest prefix the model caches */
	int breakpoints;
};

/* The shortest prefix Claude models cache, by model id prefix (the first
 * match wins); any other model 1024. */
static const struct {
	const char *prefix;
	long min;
} minimums[] = {
	{"claude-opus-5", 512},		 {"claude-fable-5", 512},    {"claude-mythos-5", 512},
	{"claude-mythos-preview", 2048}, {"claude-opus-4-7", 2048},  {"claude-opus-4-6", 4096},
	{"claude-opus-4-5", 4096},	 {"claude-haiku-4-5", 4096}, {"claude-3-5-haiku", 2048},
	{"claude-3-haiku", 2048},
};

/* ---- the entries: an open-addressing table of hashes ---- */

struct entry {
	char hash[65];
	int64_t expires; /* 0: a free slot */
	int64_t ttl_ms;	 /* what a read extends it by */
};

static struct entry *table;
static size_t tcap, tlen;

static size_t slot(const char *hash)
{
	uint64_t k = 0;
	for (int i = 0; i < 16; i++)
		k = k * 16 + (uint64_t)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
	return (size_t)k & (tcap - 1);
}

static struct entry *find(const char *hash)
{
	if (!tcap)
		return NULL;
	for (size_t i = slot(hash);; i = (i + 1) & (tcap - 1)) {
		if (!table[i].expires)
			return NULL;
		if (strcmp(table[i].hash, hash) == 0)
			return &table[i];
	}
}

static void put(const char *hash, int64_t expires, int64_t ttl_ms)
{
	size_t i = slot(hash);
	while (table[i].expires && strcmp(table[i].hash, hash) != 0)
		i = (i + 1) & (tcap - 1);
	if (!table[i].expires)
		tlen++;
	memcpy(table[i].hash, hash, 65);
	table[i].expires = expires;
	table[i].ttl_ms = ttl_ms;
}

static void grow(void)
{
	struct entry *old = table;
	size_t n = tcap;
	tcap = tcap ? 2 * tcap : 1024;
	table = rk_xcalloc(tcap, sizeof(*table));
	tlen = 0;
	for (size_t i = 0; i < n; i++) {
		if (old[i].expires)
			put(old[i].hash, old[i].expires, old[i].ttl_ms);
	}
	free(old);
}

/* Whether an earlier request wrote hash and it is still alive; a read
 * keeps it alive for its ttl again. */
static int read_entry(const char *hash, int64_t now)
{
	struct entry *e = find(hash);
	if (!e || e->expires <= now)
		return 0;
	if (e->expires != FOREVER)
		e->expires = now + e->ttl_ms;
	return 1;
}

static void write_entry(const char *hash, int64_t now, int64_t ttl_ms)
{
	if ((tlen + 1) * 10 > tcap * 7)
		grow();
	struct entry *e = find(hash);
	int64_t expires = ttl_ms == FOREVER ? FOREVER : now + ttl_ms;
	if (!e || e->expires < expires)
		put(hash, expires, ttl_ms);
}

void cache_release(void)
{
	free(table);
	table = NULL;
	tcap = tlen = 0;
}

/* ---- reading a prompt ---- */

static struct prompt *prompt_new(enum protocol proto, const char *seed)
{
	struct prompt *pr = rk_xcalloc(1, sizeof(*pr));
	pr->proto = proto;
	char *s = rk_xasprintf("%s\n%s", protocol_name(proto), seed);
	rk_sha256_hex(s, strlen(s), pr->chain);
	free(s);
	return pr;
}

void prompt_free(struct prompt *pr)
{
	if (!pr)
		return;
	free(pr->p);
	free(pr);
}

int prompt_breakpoints(const struct prompt *pr)
{
	return pr ? pr->breakpoints : 0;
}

/* Folds text, at place, into the hash so far. */
static void mix(struct prompt *pr, const char *place, const char *text)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	rk_buf_printf(&b, "%s\n%s\n", pr->chain, place);
	rk_buf_adds(&b, text);
	rk_sha256_hex(b.data, b.len, pr->chain);
	rk_buf_release(&b);
}

static void strip_cache_control(cJSON *block)
{
	cJSON *c;
	cJSON_DeleteItemFromObjectCaseSensitive(block, "cache_control");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(block, "content"))
	{
		if (cJSON_IsObject(c))
			cJSON_DeleteItemFromObjectCaseSensitive(c, "cache_control");
	}
}

/* Appends v, at place, as the prompt's next piece. */
static struct piece *add(struct prompt *pr, const char *place, const cJSON *v, char run)
{
	cJSON *copy = cJSON_Duplicate(v, 1);
	if (cJSON_IsObject(copy))
		strip_cache_control(copy);
	char *text = cJSON_PrintUnformatted(copy);
	if (pr->n == pr->cap) {
		pr->cap = pr->cap ? 2 * pr->cap : 32;
		pr->p = rk_xrealloc(pr->p, (size_t)pr->cap * sizeof(*pr->p));
	}
	const struct piece *prev = pr->n ? &pr->p[pr->n - 1] : NULL;
	struct piece *p = &pr->p[pr->n];
	memset(p, 0, sizeof(*p));
	p->tokens = json_tokens(copy, text);
	p->upto = (prev ? prev->upto : 0) + p->tokens;
	p->run = run;
	p->position = !prev ? 1 : run && prev->run == run ? prev->position : prev->position + 1;
	mix(pr, place, text);
	memcpy(p->hash, pr->chain, sizeof(p->hash));
	pr->n++;
	free(text);
	cJSON_Delete(copy);
	return p;
}

/* Appends a string as a text block (a system or message string), so it
 * reads as the one block it is to the vendor. */
static struct piece *add_text(struct prompt *pr, const char *place, const char *text)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	struct piece *p = add(pr, place, b, 0);
	p->cacheable = text[0] != '\0';
	cJSON_Delete(b);
	return p;
}

/* Folds request settings into the hash: a change there misses everything
 * after this point. */
static void mix_settings(struct prompt *pr, const char *place, const cJSON *req, const char *const *keys)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (int i = 0; keys[i]; i++) {
		char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(req, keys[i]));
		rk_buf_printf(&b, "%s=%s\n", keys[i], v ? v : "");
		free(v);
	}
	mix(pr, place, b.data ? b.data : "");
	rk_buf_release(&b);
}

/* ---- Messages: breakpoints ---- */

struct marks {
	int count;
	int seen_5m;
	char problem[300]; /* the first the API refuses */
	char order[300];   /* a 1h breakpoint after a 5m one */
};

static void fail(struct marks *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct marks *m, const char *fmt, ...)
{
	if (m->problem[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->problem, sizeof(m->problem), fmt, ap);
	va_end(ap);
}

/* The ttl a cache_control asks for (NO_TTL: none), the block at path. */
static int ttl_of(const cJSON *cc, const char *path, struct marks *m)
{
	if (!cc || cJSON_IsNull(cc))
		return NO_TTL;
	const char *type = rk_json_string(cc, "type", NULL);
	if (!cJSON_IsObject(cc) || !type || strcmp(type, "ephemeral") != 0) {
		fail(m, "%s.cache_control.type: Input should be 'ephemeral'", path);
		return NO_TTL;
	}
	const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(cc, "ttl");
	if (!ttl || cJSON_IsNull(ttl) || (cJSON_IsString(ttl) && strcmp(ttl->valuestring, "5m") == 0))
		return TTL_5M;
	if (cJSON_IsString(ttl) && strcmp(ttl->valuestring, "1h") == 0)
		return TTL_1H;
	fail(m, "%s.cache_control.ttl: Input should be '5m' or '1h'", path);
	return NO_TTL;
}

/* Counts one breakpoint, in the order the API reads them. */
static void count(struct marks *m, int ttl, const char *path)
{
	if (!ttl)
		return;
	m->count++;
	if (ttl == TTL_5M)
		m->seen_5m = 1;
	else if (m->seen_5m && !m->order[0])
		snprintf(m->order, sizeof(m->order),
			 "%s.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
			 "cache_control block.",
			 path);
}

/* One block's breakpoint, with those inside a tool_result's content, which
 * end at the tool_result too; its ttl (the longer wins). */
static int mark(const cJSON *block, const char *path, struct marks *m)
{
	int ttl = ttl_of(cJSON_GetObjectItemCaseSensitive(block, "cache_control"), path, m);
	const char *type = rk_json_string(block, "type", "");
	if (ttl && (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")))
		fail(m, "%s.%s.cache_control: Extra inputs are not permitted", path, type);
	else if (ttl && !strcmp(type, "text") && !rk_json_string(block, "text", "")[0])
		fail(m, "%s.text: cache_control cannot be set for empty text blocks", path);
	count(m, ttl, path);
	if (strcmp(type, "tool_result") != 0)
		return ttl;
	const cJSON *c;
	int k = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(block, "content"))
	{
		char sub[80];
		snprintf(sub, sizeof(sub), "%.60s.content.%d", path, k++);
		int t = ttl_of(cJSON_GetObjectItemCaseSensitive(c, "cache_control"), sub, m);
		count(m, t, sub);
		ttl = t > ttl ? t : ttl;
	}
	return ttl;
}

static void add_block(struct prompt *pr, struct marks *m, const char *path, const char *place, const cJSON *b)
{
	const char *type = rk_json_string(b, "type", "");
	char run = !strcmp(type, "tool_use") ? 'u' : !strcmp(type, "tool_result") ? 'r' : 0;
	int ttl = mark(b, path, m);
	struct piece *p = add(pr, place, b, run);
	p->ttl = ttl;
	p->cacheable = strcmp(type, "thinking") && strcmp(type, "redacted_thinking") &&
		       (strcmp(type, "text") || rk_json_string(b, "text", "")[0]);
}

/* The top-level cache_control: a breakpoint on the last cacheable block,
 * one of the 4. */
static void mark_automatic(struct prompt *pr, const cJSON *req, struct marks *m)
{
	int ttl = ttl_of(cJSON_GetObjectItemCaseSensitive(req, "cache_control"), "cache_control", m);
	int i = pr->n - 1;
	while (i >= 0 && !pr->p[i].cacheable)
		i--;
	if (!ttl || i < 0 || pr->p[i].ttl == ttl)
		return; /* nothing to mark, or the block has that breakpoint already */
	if (pr->p[i].ttl) {
		fail(m, "cache_control: the last cacheable block already has a cache_control with a different ttl");
		return;
	}
	pr->p[i].ttl = ttl;
	count(m, ttl, "cache_control");
}

static long minimum_of(const char *model)
{
	for (size_t i = 0; i < sizeof(minimums) / sizeof(minimums[0]); i++) {
		if (strncmp(model, minimums[i].prefix, strlen(minimums[i].prefix)) == 0)
			return minimums[i].min;
	}
	return 1024;
}

static void add_messages(struct prompt *pr, struct marks *m, const cJSON *msgs)
{
	const cJSON *msg, *b;
	int i = 0;
	cJSON_ArrayForEach(msg, msgs)
	{
		const char *role = rk_json_string(msg, "role", "");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
		char place[64], path[64];
		snprintf(place, sizeof(place), "%.20s %d", role, i);
		if (cJSON_IsString(content))
			add_text(pr, place, content->valuestring);
		int k = 0;
		cJSON_ArrayForEach(b, content) /* a string has no items */
		{
			snprintf(path, sizeof(path), "messages.%d.content.%d", i, k++);
			add_block(pr, m, path, place, b);
		}
		i++;
	}
}

int messages_prompt(const cJSON *req, const struct summary *s, struct prompt **out, char *problem, size_t sz)
{
	static const char *const settings[] = {"tool_choice", "thinking", NULL};
	struct prompt *pr = prompt_new(PROTO_MESSAGES, s->model);
	struct marks m = {0};
	char path[64];
	const cJSON *b;
	int i = 0;
	pr->min_tokens = minimum_of(s->model);
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(req, "tools"))
	{
		snprintf(path, sizeof(path), "tools.%d", i++);
		add_block(pr, &m, path, "tools", b);
	}
	const cJSON *system = cJSON_GetObjectItemCaseSensitive(req, "system");
	if (cJSON_IsString(system))
		add_text(pr, "system", system->valuestring);
	i = 0;
	cJSON_ArrayForEach(b, system)
	{
		snprintf(path, sizeof(path), "system.%d", i++);
		add_block(pr, &m, path, "system", b);
	}
	/* the docs: tool_choice, thinking and images anywhere change the messages' cache */
	mix_settings(pr, "settings", req, settings);
	mix(pr, "images", s->images ? "yes" : "no");
	add_messages(pr, &m, cJSON_GetObjectItemCaseSensitive(req, "messages"));
	mark_automatic(pr, req, &m);
	if (!m.problem[0] && m.count > MAX_BREAKPOINTS)
		snprintf(m.problem, sizeof(m.problem),
			 "A maximum of %d blocks with cache_control may be provided. Found %d.", MAX_BREAKPOINTS,
			 m.count);
	if (!m.problem[0] && m.order[0])
		snprintf(m.problem, sizeof(m.problem), "%s", m.order);
	pr->breakpoints = m.count;
	*out = pr;
	snprintf(problem, sz, "%s", m.problem);
	return m.problem[0] ? -1 : 0;
}

/* ---- OpenAI ---- */

static struct prompt *openai_prompt(const cJSON *req, enum protocol p)
{
	static const char *const responses_settings[] = {"text", "reasoning", NULL};
	static const char *const chat_settings[] = {"response_format", "reasoning_effort", NULL};
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(req, "prompt_cache_key");
	char *seed = rk_xasprintf("%s\nkey %s", rk_json_string(req, "model", ""),
				  cJSON_IsString(key) ? key->valuestring : "(none)");
	struct prompt *pr = prompt_new(p, seed);
	free(seed);
	mix_settings(pr, "settings", req, p == PROTO_RESPONSES ? responses_settings : chat_settings);
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "tools"))
	{
		add(pr, "tools", it, 0);
	}
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(req, p == PROTO_RESPONSES ? "input" : "messages");
	const cJSON *instructions = cJSON_GetObjectItemCaseSensitive(req, "instructions");
	if (p == PROTO_RESPONSES && cJSON_IsString(instructions))
		add(pr, "instructions", instructions, 0);
	if (cJSON_IsString(items))
		add(pr, "input", items, 0);
	cJSON_ArrayForEach(it, items)
	{
		add(pr, "input", it, 0);
	}
	return pr;
}

/* ---- answering from the cache ---- */

/* The longest piece, at most LOOKBACK positions back from breakpoint i,
 * whose prefix an earlier request wrote; -1: none. */
static int lookback(const struct prompt *pr, int i, int64_t now)
{
	int oldest = pr->p[i].position - (LOOKBACK - 1);
	for (int j = i; j >= 0 && pr->p[j].position >= oldest; j--) {
		if (read_entry(pr->p[j].hash, now))
			return j;
	}
	return -1;
}

static int64_t ttl_ms(int ttl)
{
	return ttl == TTL_1H ? 60 * 60 * 1000 : 5 * 60 * 1000;
}

/* The docs' three places: A the longest read, B the last 1h breakpoint
 * after it, C the last breakpoint; 1h writes B - A, 5m writes C - B. */
static void anthropic(struct prompt *pr, struct cache_usage *u)
{
	int64_t now = rk_monotonic_ms();
	int last = -1, hit = -1;
	for (int i = 0; i < pr->n; i++) {
		if (!pr->p[i].ttl)
			continue;
		last = i;
		int j = lookback(pr, i, now);
		hit = j > hit ? j : hit;
	}
	if (last < 0 || pr->p[last].upto < pr->min_tokens)
		return; /* too short to cache: no error, nothing cached */
	long a = hit >= 0 ? pr->p[hit].upto : 0, b = a, c = pr->p[last].upto;
	for (int i = hit + 1; i <= last; i++) {
		if (pr->p[i].ttl == TTL_1H && pr->p[i].upto >= pr->min_tokens)
			b = pr->p[i].upto;
	}
	u->read = a;
	u->created_1h = b - a;
	u->created_5m = c - b;
	u->created = c - a;
	for (int i = 0; i <= last; i++) {
		if (pr->p[i].ttl && pr->p[i].upto >= pr->min_tokens)
			write_entry(pr->p[i].hash, now, ttl_ms(pr->p[i].ttl));
	}
}

static void openai(struct prompt *pr, struct cache_usage *u)
{
	int64_t now = rk_monotonic_ms();
	long matched = 0;
	for (int j = pr->n - 1; j >= 0 && !matched; j--) {
		if (read_entry(pr->p[j].hash, now))
			matched = pr->p[j].upto;
	}
	if (matched >= OPENAI_MIN)
		u->read = OPENAI_MIN + (matched - OPENAI_MIN) / OPENAI_STEP * OPENAI_STEP;
	for (int j = 0; j < pr->n; j++) {
		if (pr->p[j].upto >= OPENAI_MIN)
			write_entry(pr->p[j].hash, now, FOREVER);
	}
}

long prompt_tokens(const struct prompt *pr)
{
	return pr && pr->n ? pr->p[pr->n - 1].upto : 0;
}

void prompt_cache(struct prompt *pr, struct cache_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!pr || !pr->n)
		return;
	u->total = pr->p[pr->n - 1].upto;
	if (pr->proto == PROTO_MESSAGES)
		anthropic(pr, u);
	else
		openai(pr, u);
	u->uncached = u->total - u->read - u->created;
}

/* ---- prompt_cache_key ---- */

static const char *json_type(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return v->valuedouble == floor(v->valuedouble) ? "an integer" : "a decimal";
	return cJSON_IsBool(v) ? "a boolean" : cJSON_IsArray(v) ? "an array" : "an object";
}

void openai_cache_check(const cJSON *req, struct summary *s, struct verdict *v)
{
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(req, "prompt_cache_key");
	if (key && !cJSON_IsString(key) && !cJSON_IsNull(key)) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "Invalid type for 'prompt_cache_key': expected a string, but got %s instead.", json_type(key));
		refuse(v, "prompt_cache_key", "prompt_cache_key", "invalid_type", msg);
		return;
	}
	s->cache_key = cJSON_IsString(key) ? key->valuestring : NULL;
	s->prompt = openai_prompt(req, s->proto);
}
