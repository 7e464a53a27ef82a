/* Memory: the Markdown store (see memory.h). */

#include "engine/agent/memory.h"

#include <stdlib.h>
#include <string.h>

#include "engine/state/db_memory.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

/* The actor as memory's tables filter by it. */
static struct rk_memory_reader reader(const struct rk_actor *a)
{
	return (struct rk_memory_reader){.space = a->space, .user = a->user, .bot = a->bot};
}

static int check_path(const char *path, char **norm, struct rk_error *err)
{
	*norm = NULL;
	if (!path || !*path)
		return rk_error_set(err, RK_EINVALID, "a memory document needs a path (e.g. notes.md)");
	if (strlen(path) > RK_MEMORY_PATH_MAX)
		return rk_error_set(err, RK_EINVALID, "memory path exceeds %d bytes", RK_MEMORY_PATH_MAX);
	int r = rk_path_normalize(path, norm, err);
	if (r)
		return rk_error_prefix(err, "memory path '%s'", path);
	if (!**norm) {
		free(*norm);
		*norm = NULL;
		return rk_error_set(err, RK_EINVALID, "memory path '%s' names no document", path);
	}
	return 0;
}

int rk_memory_read(struct rk_engine *eng, const struct rk_actor *a, const char *path, cJSON **out, struct rk_error *err)
{
	char *norm = NULL;
	int r;
	if (path && (r = check_path(path, &norm, err)))
		return r;
	struct rk_memory_reader rd = reader(a);
	cJSON *arr = NULL;
	r = rk_db_memory_read(eng->db, &rd, norm, &arr, err);
	if (r == 0 && norm && cJSON_GetArraySize(arr) == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "no memory document '%s' for %s in space '%s'", norm, a->user,
				 a->space);
	if (r) {
		cJSON_Delete(arr);
	} else if (norm) {
		*out = cJSON_DetachItemFromArray(arr, 0);
		cJSON_Delete(arr);
	} else {
		*out = arr;
	}
	free(norm);
	return r;
}

/* Inside the transaction: the write itself. */
static int save(struct rk_engine *eng, const struct rk_actor *a, const char *path, const char *content,
		int64_t expected, const char *run_id, int64_t *revision, struct rk_error *err)
{
	struct rk_memory_key k = {.space = a->space,
				  .user = a->user,
				  .scope = a->bot ? "bot" : "user",
				  .bot = a->bot ? a->bot : "",
				  .path = path};
	int64_t have = 0;
	int r = rk_db_memory_revision(eng->db, &k, &have, err);
	if (r)
		return r;
	if (expected != RK_MEMORY_NO_REVISION && expected != have)
		return rk_error_set(err, RK_ECONFLICT,
				    "memory '%s' is at revision %lld, not %lld: someone wrote it meanwhile; read it "
				    "again and merge",
				    path, (long long)have, (long long)expected);
	*revision = have + 1;
	return rk_db_memory_save(eng->db, &k, content, *revision, run_id, rk_now_ms(), err);
}

int rk_memory_write(struct rk_engine *eng, const struct rk_actor *a, const char *path, const char *content,
		    int64_t expected_revision, const char *run_id, cJSON **out, struct rk_error *err)
{
	char *norm;
	int r = check_path(path, &norm, err);
	if (r)
		return r;
	if (!content)
		content = "";
	if (strlen(content) > RK_MEMORY_CONTENT_MAX)
		r = rk_error_set(err, RK_ETOOLARGE, "memory document exceeds %u bytes", RK_MEMORY_CONTENT_MAX);
	else if (!rk_utf8_valid(content, strlen(content)))
		r = rk_error_set(err, RK_EINVALID, "memory is Markdown text: the content is not UTF-8");
	else if (expected_revision < RK_MEMORY_NO_REVISION)
		r = rk_error_set(err, RK_EINVALID, "expected revision must be 0 or more");
	if (r || (r = rk_db_begin(eng->db, err))) {
		free(norm);
		return r;
	}
	int64_t rev = 0;
	if ((r = save(eng, a, norm, content, expected_revision, run_id, &rev, err)) ||
	    (r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		free(norm);
		return r;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", norm);
	cJSON_AddStringToObject(o, "scope", a->bot ? "bot" : "user");
	rk_json_add_str_or_null(o, "bot", a->bot);
	cJSON_AddNumberToObject(o, "revision", (double)rev);
	*out = o;
	free(norm);
	return 0;
}

/* 40 bytes before the first match to 80 after it (else the first 140),
 * without cutting a UTF-8 character. */
static char *snippet(const char *content, const char *q)
{
	size_t n = strlen(content), qn = strlen(q), at = n;
	for (size_t i = 0; qn && i + qn <= n; i++)
		if (!strncasecmp(content + i, q, qn)) {
			at = i;
			break;
		}
	size_t from = 0, to = n < 140 ? n : 140;
	if (at < n) {
		from = at > 40 ? at - 40 : 0;
		to = at + qn + 80 < n ? at + qn + 80 : n;
	}
	while (from > 0 && ((unsigned char)content[from] & 0xC0) == 0x80)
		from--;
	while (to < n && ((unsigned char)content[to] & 0xC0) == 0x80)
		to++;
	return rk_xstrndup(content + from, to - from);
}

int rk_memory_search(struct rk_engine *eng, const struct rk_actor *a, const char *query, int limit, cJSON **out,
		     struct rk_error *err)
{
	if (!query || !*query)
		return rk_error_set(err, RK_EINVALID, "memory search needs a query");
	if (strlen(query) > 1000)
		return rk_error_set(err, RK_EINVALID, "memory search query exceeds 1000 bytes");
	if (limit <= 0 || limit > 100)
		limit = 20;
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "query", query);
	cJSON *results = cJSON_CreateArray();
	const char *mode = "fts";
	/* words first (every word must be there, ranked), then a substring
	 * when no word matched */
	struct rk_memory_reader rd = reader(a);
	for (int pass = 0; pass < 2 && cJSON_GetArraySize(results) == 0; pass++) {
		struct rk_memory_hit *hits = NULL;
		size_t n = 0;
		int r = rk_db_memory_search(eng->db, &rd, query, pass == 0, limit, &hits, &n, err);
		if (r) {
			cJSON_Delete(doc);
			cJSON_Delete(results);
			return r;
		}
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", hits[i].path);
			cJSON_AddStringToObject(o, "scope", hits[i].scope);
			rk_json_add_str_or_null(o, "bot", hits[i].bot && *hits[i].bot ? hits[i].bot : NULL);
			cJSON_AddNumberToObject(o, "revision", (double)hits[i].revision);
			cJSON_AddNumberToObject(o, "score", hits[i].score);
			char *sn = snippet(hits[i].content ? hits[i].content : "", query);
			cJSON_AddStringToObject(o, "snippet", sn);
			free(sn);
			cJSON_AddItemToArray(results, o);
		}
		rk_memory_hits_free(hits, n);
		mode = pass == 0 ? "fts" : "substring";
	}
	cJSON_AddStringToObject(doc, "mode", mode);
	cJSON_AddItemToObject(doc, "results", results);
	*out = doc;
	return 0;
}

int rk_memory_history(struct rk_engine *eng, const struct rk_actor *a, const char *path, cJSON **out,
		      struct rk_error *err)
{
	char *norm;
	int r = check_path(path, &norm, err);
	if (r)
		return r;
	struct rk_memory_reader rd = reader(a);
	cJSON *arr = NULL;
	r = rk_db_memory_history(eng->db, &rd, norm, &arr, err);
	if (r == 0 && cJSON_GetArraySize(arr) == 0)
		r = rk_error_set(err, RK_ENOTFOUND, "no memory document '%s' for %s in space '%s'", norm, a->user,
				 a->space);
	free(norm);
	if (r) {
		cJSON_Delete(arr);
		return r;
	}
	*out = arr;
	return 0;
}
