/* Memory: the Markdown store (see memory.h). */

#include "engine/agent/memory.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

/* The actor's filter: space and user always; with a bot, the user's
 * documents and the bot's own. Binds ?1 space, ?2 user, ?3 bot. */
#define FILTER "d.space_id = ?1 AND d.user_id = ?2 AND (?3 IS NULL OR d.bot_id IN (?3, ''))"

static void bind_actor(struct rk_stmt *st, const struct rk_actor *a)
{
	rk_db_bind_text(st, 1, a->space);
	rk_db_bind_text(st, 2, a->user);
	rk_db_bind_text(st, 3, a->bot);
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

static void add_key(cJSON *o, struct rk_stmt *st, int col_path)
{
	const char *bot = (const char *)rk_stmt_column_text(st, col_path + 2);
	cJSON_AddStringToObject(o, "path", (const char *)rk_stmt_column_text(st, col_path));
	cJSON_AddStringToObject(o, "scope", (const char *)rk_stmt_column_text(st, col_path + 1));
	rk_json_add_str_or_null(o, "bot", bot && *bot ? bot : NULL);
	cJSON_AddNumberToObject(o, "revision", (double)rk_stmt_column_int64(st, col_path + 3));
}

int rk_memory_read(struct rk_engine *eng, const struct rk_actor *a, const char *path, cJSON **out,
		   struct rk_error *err)
{
	char *norm = NULL;
	int r;
	if (path && (r = check_path(path, &norm, err)))
		return r;
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		norm ? "SELECT d.path, d.scope, nullif(d.bot_id, ''), d.revision, d.content, d.updated_at "
		       "FROM memory_documents d WHERE " FILTER " AND d.path = ?4 ORDER BY d.bot_id = '' LIMIT 1"
		     : "SELECT d.path, d.scope, nullif(d.bot_id, ''), d.revision, length(CAST(d.content AS BLOB)), "
		       "d.updated_at FROM memory_documents d WHERE " FILTER " ORDER BY d.updated_at DESC, d.path",
		err);
	if (!st) {
		free(norm);
		return -rk_err(err)->code;
	}
	bind_actor(st, a);
	if (norm)
		rk_db_bind_text(st, 4, norm);
	static const struct rk_db_json_col one[] = {{"path", 's'},    {"scope", 's'},   {"bot", 's'}, {"revision", 'i'},
						  {"content", 's'}, {"updated_at", 't'}, {0}};
	static const struct rk_db_json_col list[] = {{"path", 's'},  {"scope", 's'},	{"bot", 's'}, {"revision", 'i'},
						   {"bytes", 'i'}, {"updated_at", 't'}, {0}};
	cJSON *arr = NULL;
	r = rk_db_json_rows(eng->db, st, norm ? one : list, "read memory", &arr, err);
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
/* Binds a document's key (space, user, scope, bot, path) as parameters 1 to 5. */
static void bind_document_key(struct rk_stmt *st, const struct rk_actor *a, const char *scope, const char *bot,
			      const char *path)
{
	rk_db_bind_text(st, 1, a->space);
	rk_db_bind_text(st, 2, a->user);
	rk_db_bind_text(st, 3, scope);
	rk_db_bind_text(st, 4, bot);
	rk_db_bind_text(st, 5, path);
}

static int save(struct rk_engine *eng, const struct rk_actor *a, const char *path, const char *content,
		int64_t expected, const char *run_id, int64_t *revision, struct rk_error *err)
{
	const char *bot = a->bot ? a->bot : "";
	const char *scope = a->bot ? "bot" : "user";
	struct rk_stmt *st = rk_db_prepare(eng->db,
					 "SELECT id, revision FROM memory_documents WHERE space_id = ? AND user_id = ? "
					 "AND scope = ? AND bot_id = ? AND path = ?",
					 err);
	if (!st)
		return -rk_err(err)->code;
	bind_document_key(st, a, scope, bot, path);
	int64_t id = -1, have = 0;
	int rc = rk_stmt_step(st);
	if (rc == RK_SQL_ROW) {
		have = rk_stmt_column_int64(st, 1);
	} else if (rc != RK_SQL_DONE) {
		int r = rk_db_sql_error(eng->db, err, "read memory");
		rk_stmt_finalize(st);
		return r;
	}
	rk_stmt_finalize(st);
	if (expected != RK_MEMORY_NO_REVISION && expected != have)
		return rk_error_set(err, RK_ECONFLICT,
				    "memory '%s' is at revision %lld, not %lld: someone wrote it meanwhile; read it "
				    "again and merge",
				    path, (long long)have, (long long)expected);
	int64_t now = rk_now_ms();
	int r;
	/* one upsert for both cases; the key is the unique one of the table */
	st = rk_db_prepare(eng->db,
			   "INSERT INTO memory_documents (space_id, user_id, scope, bot_id, path, content, revision, "
			   "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?7, ?7) "
			   "ON CONFLICT (space_id, user_id, scope, bot_id, path) DO UPDATE SET content = excluded.content, "
			   "revision = memory_documents.revision + 1, updated_at = excluded.updated_at RETURNING id",
			   err);
	if (!st)
		return -rk_err(err)->code;
	bind_document_key(st, a, scope, bot, path);
	rk_db_bind_text(st, 6, content);
	rk_stmt_bind_int64(st, 7, now);
	if (rk_stmt_step(st) != RK_SQL_ROW) {
		r = rk_db_sql_error(eng->db, err, "save memory");
		rk_stmt_finalize(st);
		return r;
	}
	id = rk_stmt_column_int64(st, 0);
	rk_stmt_finalize(st);
	*revision = have + 1;
	st = rk_db_prepare(eng->db,
			   "INSERT INTO memory_revisions (document_id, revision, content, run_id, created_at) "
			   "VALUES (?, ?, ?, ?, ?)",
			   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	rk_stmt_bind_int64(st, 2, *revision);
	rk_db_bind_text(st, 3, content);
	rk_db_bind_text(st, 4, run_id);
	rk_stmt_bind_int64(st, 5, now);
	if ((r = rk_db_step_done(eng->db, st, "save the memory revision", err)))
		return r;
	/* the index: one row per document, rowid = the document's id */
	st = rk_db_prepare(eng->db, "DELETE FROM memory_fts WHERE rowid = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	if ((r = rk_db_step_done(eng->db, st, "index memory", err)))
		return r;
	st = rk_db_prepare(eng->db, "INSERT INTO memory_fts (rowid, path, content) VALUES (?, ?, ?)", err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	rk_db_bind_text(st, 2, path);
	rk_db_bind_text(st, 3, content);
	return rk_db_step_done(eng->db, st, "index memory", err);
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

/* Each word of q quoted, so FTS5 syntax in a query is only text. NULL when
 * the query has no word. */
static char *fts_query(const char *q)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	const unsigned char *p = (const unsigned char *)q;
	while (*p) {
		while (*p && !(isalnum(*p) || *p >= 0x80))
			p++;
		if (!*p)
			break;
		if (b.len)
			rk_buf_addc(&b, ' ');
		rk_buf_addc(&b, '"');
		while (*p && (isalnum(*p) || *p >= 0x80))
			rk_buf_addc(&b, (char)*p++);
		rk_buf_addc(&b, '"');
	}
	if (!b.len) {
		rk_buf_release(&b);
		return NULL;
	}
	return rk_buf_detach(&b, NULL);
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
	/* words first (FTS5 on SQLite, its text search on PostgreSQL: every
	 * word must be there, ranked), then a substring when no word matched */
	int pg = rk_db_dialect(eng->db) == RK_DIALECT_PG;
	char *fq = fts_query(query);
	static const char *const by_words[2] = {
		"SELECT d.path, d.scope, d.bot_id, d.revision, d.content, -bm25(memory_fts) "
		"FROM memory_fts JOIN memory_documents d ON d.id = memory_fts.rowid "
		"WHERE memory_fts MATCH ?4 AND " FILTER " ORDER BY bm25(memory_fts), d.path LIMIT ?5",
		"SELECT d.path, d.scope, d.bot_id, d.revision, d.content, f.rank FROM ("
		"SELECT rowid, ts_rank(" RK_MEMORY_PG_TSV ", q) AS rank FROM memory_fts, plainto_tsquery('simple', ?4) q "
		"WHERE " RK_MEMORY_PG_TSV " @@ q) f JOIN memory_documents d ON d.id = f.rowid "
		"WHERE " FILTER " ORDER BY f.rank DESC, d.path LIMIT ?5",
	};
	for (int pass = fq ? 0 : 1; pass < 2 && cJSON_GetArraySize(results) == 0; pass++) {
		struct rk_stmt *st = rk_db_prepare(
			eng->db,
			pass == 0 ? by_words[pg]
				  : "SELECT d.path, d.scope, d.bot_id, d.revision, d.content, 1.0 FROM memory_documents d "
				    "WHERE " FILTER " AND (instr(lower(d.content), lower(?4)) > 0 OR "
				    "instr(lower(d.path), lower(?4)) > 0) ORDER BY d.updated_at DESC, d.path LIMIT ?5",
			err);
		if (!st) {
			free(fq);
			cJSON_Delete(doc);
			cJSON_Delete(results);
			return -rk_err(err)->code;
		}
		bind_actor(st, a);
		rk_db_bind_text(st, 4, pass == 0 && !pg ? fq : query);
		rk_stmt_bind_int(st, 5, limit);
		int rc;
		while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
			cJSON *o = cJSON_CreateObject();
			add_key(o, st, 0);
			cJSON_AddNumberToObject(o, "score", rk_stmt_column_double(st, 5));
			char *sn = snippet((const char *)rk_stmt_column_text(st, 4), query);
			cJSON_AddStringToObject(o, "snippet", sn);
			free(sn);
			cJSON_AddItemToArray(results, o);
		}
		int r = rc == RK_SQL_DONE ? 0 : rk_db_sql_error(eng->db, err, "search memory");
		rk_stmt_finalize(st);
		if (r) {
			free(fq);
			cJSON_Delete(doc);
			cJSON_Delete(results);
			return r;
		}
		mode = pass == 0 ? "fts" : "substring";
	}
	free(fq);
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
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"SELECT d.path, d.scope, nullif(d.bot_id, ''), v.revision, length(CAST(v.content AS BLOB)), v.run_id, "
		"v.created_at "
		"FROM memory_revisions v JOIN memory_documents d ON d.id = v.document_id "
		"WHERE " FILTER " AND d.path = ?4 ORDER BY d.bot_id = '', v.revision DESC",
		err);
	if (!st) {
		free(norm);
		return -rk_err(err)->code;
	}
	bind_actor(st, a);
	rk_db_bind_text(st, 4, norm);
	static const struct rk_db_json_col cols[] = {{"path", 's'},  {"scope", 's'},  {"bot", 's'},	{"revision", 'i'},
						   {"bytes", 'i'}, {"run_id", 's'}, {"created_at", 't'}, {0}};
	cJSON *arr = NULL;
	r = rk_db_json_rows(eng->db, st, cols, "read memory history", &arr, err);
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
