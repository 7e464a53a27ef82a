#include "engine/util/json.h"
#include "engine/util/time.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- the strict check ------------------------------------------------------------------
 * cJSON alone takes a duplicate key (two readers of one document then see two
 * values), decodes \u0000 into a string C code cuts there, copies bytes that
 * are not UTF-8, and says only "not valid JSON" past its nesting limit. One
 * pass over the text (RFC 8259's grammar) refuses all of that, with the
 * offset, before cJSON builds the tree. */

struct scan {
	const unsigned char *s;
	size_t n, i;
	int flags;
	const char *what;
	struct rk_error *err;
};

struct key {
	char *name; /* decoded */
	size_t len, off;
};

static int syntax(struct scan *x)
{
	return rk_error_set(x->err, RK_EINVALID, "%s is not valid JSON (near byte %zu)", x->what, x->i);
}

static void skip_ws(struct scan *x)
{
	while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\t' || x->s[x->i] == '\n' || x->s[x->i] == '\r'))
		x->i++;
}

static int hex4(struct scan *x, size_t at, unsigned *cp)
{
	*cp = 0;
	if (x->n - at < 4)
		return -1;
	for (size_t j = 0; j < 4; j++) {
		unsigned char c = x->s[at + j];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						    : 16u;
		if (d > 15)
			return -1;
		*cp = *cp * 16 + d;
	}
	return 0;
}

static void put_utf8(struct rk_buf *b, unsigned cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80)
		u[0] = (char)cp, n = 1;
	else if (cp < 0x800)
		u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
	else if (cp < 0x10000)
		u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
		u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
	else
		u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
		u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
	rk_buf_add(b, u, n);
}

/* A string at x->i (its opening quote); decoded into out when out is not NULL. */
static int scan_string(struct scan *x, struct rk_buf *out)
{
	x->i++;
	for (;;) {
		if (x->i >= x->n)
			return syntax(x);
		unsigned char c = x->s[x->i];
		if (c == '"') {
			x->i++;
			return 0;
		}
		if (c == 0)
			return rk_error_set(x->err, RK_EINVALID, "%s: string contains a NUL character at offset %zu",
					    x->what, x->i);
		if (c < 0x20)
			return rk_error_set(x->err, RK_EINVALID,
					    "%s: string contains the control character 0x%02x at offset %zu (escape it)",
					    x->what, c, x->i);
		if (c == '\\') {
			size_t at = x->i;
			if (x->i + 1 >= x->n)
				return syntax(x);
			c = x->s[++x->i];
			const char *simple = strchr("\"\\/bfnrt", c);
			if (c && simple) {
				if (out)
					rk_buf_addc(out, "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
				x->i++;
				continue;
			}
			unsigned cp, lo;
			if (c != 'u' || hex4(x, x->i + 1, &cp))
				return syntax(x);
			x->i += 5;
			if (cp == 0)
				return rk_error_set(x->err, RK_EINVALID,
						    "%s: string contains a NUL character (\\u0000) at offset %zu",
						    x->what, at);
			if (cp >= 0xD800 && cp < 0xDC00) {
				if (x->n - x->i < 6 || x->s[x->i] != '\\' || x->s[x->i + 1] != 'u' ||
				    hex4(x, x->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
					return rk_error_set(x->err, RK_EINVALID,
							    "%s: string has a lone UTF-16 surrogate at offset %zu",
							    x->what, at);
				x->i += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp < 0xE000) {
				return rk_error_set(x->err, RK_EINVALID,
						    "%s: string has a lone UTF-16 surrogate at offset %zu", x->what,
						    at);
			}
			if (out)
				put_utf8(out, cp);
			continue;
		}
		size_t k = rk_utf8_len((const char *)x->s + x->i, x->n - x->i);
		if (!k && !(x->flags & RK_JSON_ANY_BYTES))
			return rk_error_set(x->err, RK_EINVALID, "%s: string is not valid UTF-8 at offset %zu", x->what,
					    x->i);
		if (!k)
			k = 1;
		if (out)
			rk_buf_add(out, x->s + x->i, k);
		x->i += k;
	}
}

static int digits(struct scan *x)
{
	size_t from = x->i;
	while (x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9')
		x->i++;
	return x->i > from ? 0 : syntax(x);
}

static int scan_number(struct scan *x)
{
	if (x->s[x->i] == '-')
		x->i++;
	if (x->i < x->n && x->s[x->i] == '0')
		x->i++;
	else if (digits(x))
		return -RK_EINVALID;
	if (x->i < x->n && x->s[x->i] == '.') {
		x->i++;
		if (digits(x))
			return -RK_EINVALID;
	}
	if (x->i < x->n && (x->s[x->i] == 'e' || x->s[x->i] == 'E')) {
		x->i++;
		if (x->i < x->n && (x->s[x->i] == '+' || x->s[x->i] == '-'))
			x->i++;
		if (digits(x))
			return -RK_EINVALID;
	}
	return 0;
}

static int cmp_keys(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);
	if (c || x->len != y->len)
		return c ? c : x->len < y->len ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The first key (by offset) that repeats an earlier one; NULL when none. */
static const struct key *first_duplicate(struct key *keys, size_t n)
{
	const struct key *dup = NULL;
	qsort(keys, n, sizeof(*keys), cmp_keys);
	for (size_t j = 1; j < n; j++)
		if (keys[j].len == keys[j - 1].len && !memcmp(keys[j].name, keys[j - 1].name, keys[j].len) &&
		    (!dup || keys[j].off < dup->off))
			dup = &keys[j];
	return dup;
}

static int scan_value(struct scan *x, int depth);

/* After a member: 1 at a comma (another follows), 0 at close, an error otherwise. */
static int next_member(struct scan *x, char close)
{
	skip_ws(x);
	if (x->i < x->n && (x->s[x->i] == ',' || x->s[x->i] == (unsigned char)close))
		return x->s[x->i++] == ',';
	return syntax(x);
}

static int scan_object(struct scan *x, int depth)
{
	struct key *keys = NULL;
	size_t n = 0, cap = 0;
	struct rk_buf name = RK_BUF_INIT;
	int rc = 0;
	rk_buf_init(&name);
	x->i++;
	skip_ws(x);
	if (x->i < x->n && x->s[x->i] == '}') {
		x->i++;
		goto out;
	}
	for (;;) {
		skip_ws(x);
		if (x->i >= x->n || x->s[x->i] != '"') {
			rc = syntax(x);
			goto out;
		}
		size_t off = x->i;
		rk_buf_reset(&name);
		if ((rc = scan_string(x, &name)))
			goto out;
		if (n == cap)
			keys = rk_xrealloc(keys, (cap = cap ? cap * 2 : 8) * sizeof(*keys));
		keys[n].len = name.len;
		keys[n].off = off;
		keys[n++].name = rk_buf_detach(&name, NULL);
		skip_ws(x);
		if (x->i >= x->n || x->s[x->i] != ':') {
			rc = syntax(x);
			goto out;
		}
		x->i++;
		if ((rc = scan_value(x, depth)) || (rc = next_member(x, '}')) < 0)
			goto out;
		if (!rc)
			break;
	}
	rc = 0;
	const struct key *dup = first_duplicate(keys, n);
	if (dup) {
		struct rk_buf shown = RK_BUF_INIT;
		rk_buf_init(&shown);
		rk_utf8_escape(&shown, dup->name, dup->len > 64 ? 64 : dup->len, RK_ESCAPE_CONTROLS);
		rc = rk_error_set(x->err, RK_EINVALID, "%s: duplicate key \"%s%s\" in object at offset %zu", x->what,
				  shown.data, dup->len > 64 ? "..." : "", dup->off);
		rk_buf_release(&shown);
	}
out:
	for (size_t j = 0; j < n; j++)
		free(keys[j].name);
	free(keys);
	rk_buf_release(&name);
	return rc;
}

static int scan_value(struct scan *x, int depth)
{
	skip_ws(x);
	if (x->i >= x->n)
		return syntax(x);
	unsigned char c = x->s[x->i];
	if (c == '{' || c == '[') {
		if (depth >= RK_JSON_MAX_DEPTH)
			return rk_error_set(x->err, RK_EINVALID, "%s: nesting deeper than %d levels at offset %zu",
					    x->what, RK_JSON_MAX_DEPTH, x->i);
		if (c == '{')
			return scan_object(x, depth + 1);
		x->i++;
		skip_ws(x);
		if (x->i < x->n && x->s[x->i] == ']') {
			x->i++;
			return 0;
		}
		for (;;) {
			int rc = scan_value(x, depth + 1);
			if (rc || (rc = next_member(x, ']')) <= 0)
				return rc;
		}
	}
	if (c == '"')
		return scan_string(x, NULL);
	if (c == '-' || (c >= '0' && c <= '9'))
		return scan_number(x);
	static const char *const words[] = {"true", "false", "null"};
	for (size_t j = 0; j < 3; j++) {
		size_t l = strlen(words[j]);
		if (x->n - x->i >= l && !memcmp(x->s + x->i, words[j], l)) {
			x->i += l;
			return 0;
		}
	}
	return syntax(x);
}

cJSON *rk_json_parse_opts(const char *text, size_t len, int flags, const char *what, struct rk_error *err)
{
	struct scan x = {.s = (const unsigned char *)text,
			 .n = text ? len : 0,
			 .flags = flags,
			 .what = what,
			 .err = err};
	if (scan_value(&x, 0))
		return NULL;
	skip_ws(&x);
	if (x.i < x.n) {
		rk_error_set(err, RK_EINVALID, "%s has trailing data after the JSON document (byte %zu)", what, x.i);
		return NULL;
	}
	cJSON *doc = cJSON_ParseWithLength(text, len);
	if (!doc) /* what the check took and cJSON does not (a number too long for it) */
		rk_error_set(err, RK_EINVALID, "%s is not valid JSON (cJSON refused it)", what);
	return doc;
}

cJSON *rk_json_parse(const char *text, size_t len, const char *what, struct rk_error *err)
{
	return rk_json_parse_opts(text, len, 0, what, err);
}

const char *rk_json_string(const cJSON *obj, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : def;
}

int rk_json_get_int(const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t def, int64_t *out,
		    const char *what, struct rk_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return rk_error_set(err, RK_EINVALID, "%s: %s must be an integer", what, key);
	if (v->valuedouble < (double)min || v->valuedouble > (double)max)
		return rk_error_set(err, RK_EINVALID, "%s: %s must be from %lld to %lld", what, key, (long long)min,
				    (long long)max);
	*out = (int64_t)v->valuedouble;
	return 0;
}

int rk_json_get_bool(const cJSON *obj, const char *key, int def, int *out, const char *what, struct rk_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsBool(v))
		return rk_error_set(err, RK_EINVALID, "%s: %s must be true or false", what, key);
	*out = cJSON_IsTrue(v);
	return 0;
}

int rk_json_get_string(const cJSON *obj, const char *key, int required, const char **out, const char *what,
		       struct rk_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v)) {
		*out = NULL;
		return required ? rk_error_set(err, RK_EINVALID, "%s: %s is required", what, key) : 0;
	}
	if (!cJSON_IsString(v))
		return rk_error_set(err, RK_EINVALID, "%s: %s must be a string", what, key);
	*out = v->valuestring;
	return 0;
}

void rk_json_print(struct rk_buf *b, const cJSON *doc)
{
	char *s = cJSON_PrintUnformatted(doc);
	if (!s)
		abort();
	rk_buf_adds(b, s);
	free(s);
}

cJSON *rk_json_add_str_or_null(cJSON *obj, const char *key, const char *s)
{
	return s ? cJSON_AddStringToObject(obj, key, s) : cJSON_AddNullToObject(obj, key);
}

cJSON *rk_json_add_time(cJSON *obj, const char *key, int64_t ms)
{
	char buf[40];
	return ms ? cJSON_AddStringToObject(obj, key, rk_iso8601(ms, buf, sizeof(buf)))
		  : cJSON_AddNullToObject(obj, key);
}

static int cmp_items(const void *a, const void *b)
{
	const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
	return strcmp(x->string, y->string);
}

static void sort_keys(cJSON *node)
{
	if (cJSON_IsObject(node)) {
		size_t n = 0;
		for (cJSON *c = node->child; c; c = c->next)
			n++;
		if (n > 1) {
			cJSON **items = rk_xcalloc(n, sizeof(*items));
			size_t i = 0;
			for (cJSON *c = node->child; c; c = c->next)
				items[i++] = c;
			qsort(items, n, sizeof(*items), cmp_items);
			for (i = 0; i < n; i++) {
				items[i]->prev = i ? items[i - 1] : items[n - 1];
				items[i]->next = i + 1 < n ? items[i + 1] : NULL;
			}
			node->child = items[0];
			free(items);
		}
	}
	for (cJSON *c = node->child; c; c = c->next)
		sort_keys(c);
}

char *rk_json_canonical(const cJSON *doc)
{
	cJSON *copy = cJSON_Duplicate(doc, 1);
	if (!copy)
		abort();
	sort_keys(copy);
	char *s = cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	if (!s)
		abort();
	return s;
}
