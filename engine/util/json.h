#ifndef RK_JSON_H
#define RK_JSON_H
/* Small helpers over cJSON for reading untrusted documents with clear errors. */

#include <cJSON.h>
#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* Parses text (len bytes, not necessarily NUL-terminated) as strict JSON
 * (RFC 8259): one document and nothing after it, and RK_EINVALID, naming
 * the offset, for a duplicate key in an object, a NUL in a string (raw or
 * \u0000), a raw control character or bytes that are not UTF-8 in a string,
 * a lone surrogate, or nesting deeper than RK_JSON_MAX_DEPTH. Every
 * document from outside (API bodies, CLI options, model and provider
 * replies) goes through it. Caller owns the result (cJSON_Delete). what
 * names the document in the error. */
#define RK_JSON_MAX_DEPTH 64
cJSON *rk_json_parse(const char *text, size_t len, const char *what, struct rk_error *err);
/* RK_JSON_ANY_BYTES: bytes that are not UTF-8 pass in strings (rakazo's own
 * channels, whose writer is cJSON: it copies a file name's bytes as they are). */
#define RK_JSON_ANY_BYTES 1
cJSON *rk_json_parse_opts(const char *text, size_t len, int flags, const char *what, struct rk_error *err);
/* Members that must have a type, or may be absent (then *out is def). */
const char *rk_json_string(const cJSON *obj, const char *key, const char *def);
int rk_json_get_int(const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t def, int64_t *out,
		    const char *what, struct rk_error *err);
int rk_json_get_bool(const cJSON *obj, const char *key, int def, int *out, const char *what, struct rk_error *err);
int rk_json_get_string(const cJSON *obj, const char *key, int required, const char **out, const char *what,
		       struct rk_error *err);
/* Appends the unformatted document to b. */
void rk_json_print(struct rk_buf *b, const cJSON *doc);
/* Adds s, or null when s is NULL. */
cJSON *rk_json_add_str_or_null(cJSON *obj, const char *key, const char *s);
/* Adds the time ms (epoch milliseconds) as ISO 8601 UTC, or null when ms is 0. */
cJSON *rk_json_add_time(cJSON *obj, const char *key, int64_t ms);
/* Canonical text (sorted keys, no whitespace) for comparing bodies; malloc'd. */
char *rk_json_canonical(const cJSON *doc);

#endif
