#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

cJSON *rk_json_parse(const char *text, size_t len, const char *what, struct rk_error *err)
{
	const char *end = NULL;
	cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!doc) {
		size_t off = end && end >= text ? (size_t)(end - text) : 0;
		rk_error_set(err, RK_EINVALID, "%s is not valid JSON (near byte %zu)", what, off);
		return NULL;
	}
	/* trailing garbage after the document is an error too */
	while (end && (size_t)(end - text) < len && (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r'))
		end++;
	if (end && (size_t)(end - text) < len && *end) {
		cJSON_Delete(doc);
		rk_error_set(err, RK_EINVALID, "%s has trailing data after the JSON document (byte %zu)", what,
			     (size_t)(end - text));
		return NULL;
	}
	return doc;
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
