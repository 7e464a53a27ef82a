/* Memory's tables: their SQL (see db_memory.h), through db.h's statement
 * helpers. */

#include "engine/state/db_memory.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

/* The reader's filter: space and user always; with a bot, the user's
 * documents and the bot's own. Binds ?1 space, ?2 user, ?3 bot. */
#define FILTER "d.space_id = ?1 AND d.user_id = ?2 AND (?3 IS NULL OR d.bot_id IN (?3, ''))"

static void bind_reader(struct rk_stmt *st, const struct rk_memory_reader *rd)
{
	rk_db_bind_text(st, 1, rd->space);
	rk_db_bind_text(st, 2, rd->user);
	rk_db_bind_text(st, 3, rd->bot);
}

int rk_db_memory_read(struct rk_db *db, const struct rk_memory_reader *rd, const char *path, cJSON **out,
		      struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		path ? "SELECT d.path, d.scope, nullif(d.bot_id, ''), d.revision, d.content, d.updated_at "
		       "FROM memory_documents d WHERE " FILTER " AND d.path = ?4 ORDER BY d.bot_id = '' LIMIT 1"
		     : "SELECT d.path, d.scope, nullif(d.bot_id, ''), d.revision, length(CAST(d.content AS BLOB)), "
		       "d.updated_at FROM memory_documents d WHERE " FILTER " ORDER BY d.updated_at DESC, d.path",
		err);
	if (!st)
		return -rk_err(err)->code;
	bind_reader(st, rd);
	if (path)
		rk_db_bind_text(st, 4, path);
	static const struct rk_db_json_col one[] =
		{{"path", 's'},	   {"scope", 's'},	{"bot", 's'}, {"revision", 'i'},
		 {"content", 's'}, {"updated_at", 't'}, {0}};
	static const struct rk_db_json_col list[] =
		{{"path", 's'},	 {"scope", 's'},      {"bot", 's'}, {"revision", 'i'},
		 {"bytes", 'i'}, {"updated_at", 't'}, {0}};
	return rk_db_json_rows(db, st, path ? one : list, "read memory", out, err);
}

/* Binds a document's key (space, user, scope, bot, path) as parameters 1 to 5. */
static void bind_key(struct rk_stmt *st, const struct rk_memory_key *k)
{
	rk_db_bind_text(st, 1, k->space);
	rk_db_bind_text(st, 2, k->user);
	rk_db_bind_text(st, 3, k->scope);
	rk_db_bind_text(st, 4, k->bot);
	rk_db_bind_text(st, 5, k->path);
}

int rk_db_memory_revision(struct rk_db *db, const struct rk_memory_key *k, int64_t *revision, struct rk_error *err)
{
	*revision = 0;
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT id, revision FROM memory_documents WHERE space_id = ? AND user_id = ? "
					   "AND scope = ? AND bot_id = ? AND path = ?",
					   err);
	if (!st)
		return -rk_err(err)->code;
	bind_key(st, k);
	int rc = rk_stmt_step(st), r = 0;
	if (rc == RK_SQL_ROW)
		*revision = rk_stmt_column_int64(st, 1);
	else if (rc != RK_SQL_DONE)
		r = rk_db_sql_error(db, err, "read memory");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_memory_save(struct rk_db *db, const struct rk_memory_key *k, const char *content, int64_t revision,
		      const char *run_id, int64_t now, struct rk_error *err)
{
	int r;
	/* one upsert for both cases; the key is the unique one of the table */
	struct rk_stmt *st = rk_db_prepare(
		db,
		"INSERT INTO memory_documents (space_id, user_id, scope, bot_id, path, content, revision, "
		"created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?7, ?7) "
		"ON CONFLICT (space_id, user_id, scope, bot_id, path) DO UPDATE SET content = excluded.content, "
		"revision = memory_documents.revision + 1, updated_at = excluded.updated_at RETURNING id",
		err);
	if (!st)
		return -rk_err(err)->code;
	bind_key(st, k);
	rk_db_bind_text(st, 6, content);
	rk_stmt_bind_int64(st, 7, now);
	if (rk_stmt_step(st) != RK_SQL_ROW) {
		r = rk_db_sql_error(db, err, "save memory");
		rk_stmt_finalize(st);
		return r;
	}
	int64_t id = rk_stmt_column_int64(st, 0);
	rk_stmt_finalize(st);
	st = rk_db_prepare(db,
			   "INSERT INTO memory_revisions (document_id, revision, content, run_id, created_at) "
			   "VALUES (?, ?, ?, ?, ?)",
			   err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	rk_stmt_bind_int64(st, 2, revision);
	rk_db_bind_text(st, 3, content);
	rk_db_bind_text(st, 4, run_id);
	rk_stmt_bind_int64(st, 5, now);
	if ((r = rk_db_step_done(db, st, "save the memory revision", err)))
		return r;
	/* the index: one row per document, rowid = the document's id */
	st = rk_db_prepare(db, "DELETE FROM memory_fts WHERE rowid = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	if ((r = rk_db_step_done(db, st, "index memory", err)))
		return r;
	st = rk_db_prepare(db, "INSERT INTO memory_fts (rowid, path, content) VALUES (?, ?, ?)", err);
	if (!st)
		return -rk_err(err)->code;
	rk_stmt_bind_int64(st, 1, id);
	rk_db_bind_text(st, 2, k->path);
	rk_db_bind_text(st, 3, content);
	return rk_db_step_done(db, st, "index memory", err);
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

static void hit_row(struct rk_stmt *st, void *p)
{
	struct rk_memory_hit *h = p;
	h->path = rk_db_col_text(st, 0);
	h->scope = rk_db_col_text(st, 1);
	h->bot = rk_db_col_text(st, 2);
	h->revision = rk_stmt_column_int64(st, 3);
	h->content = rk_db_col_text(st, 4);
	h->score = rk_stmt_column_double(st, 5);
}

static void hit_free(void *p)
{
	struct rk_memory_hit *h = p;
	free(h->path);
	free(h->scope);
	free(h->bot);
	free(h->content);
}

void rk_memory_hits_free(struct rk_memory_hit *hits, size_t n)
{
	for (size_t i = 0; hits && i < n; i++)
		hit_free(&hits[i]);
	free(hits);
}

int rk_db_memory_search(struct rk_db *db, const struct rk_memory_reader *rd, const char *query, int words, int limit,
			struct rk_memory_hit **out, size_t *n, struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	/* words: FTS5 on SQLite, its text search on PostgreSQL (every word
	 * must be there, ranked) */
	int pg = rk_db_dialect(db) == RK_DIALECT_PG;
	static const char *const by_words[2] = {
		"SELECT d.path, d.scope, d.bot_id, d.revision, d.content, -bm25(memory_fts) "
		"FROM memory_fts JOIN memory_documents d ON d.id = memory_fts.rowid "
		"WHERE memory_fts MATCH ?4 AND " FILTER " ORDER BY bm25(memory_fts), d.path LIMIT ?5",
		"SELECT d.path, d.scope, d.bot_id, d.revision, d.content, f.rank FROM ("
		"SELECT rowid, ts_rank(" RK_MEMORY_PG_TSV
		", q) AS rank FROM memory_fts, plainto_tsquery('simple', ?4) q "
		"WHERE " RK_MEMORY_PG_TSV " @@ q) f JOIN memory_documents d ON d.id = f.rowid "
		"WHERE " FILTER " ORDER BY f.rank DESC, d.path LIMIT ?5",
	};
	char *fq = NULL;
	if (words && !(fq = fts_query(query)))
		return 0;
	struct rk_stmt *st = rk_db_prepare(
		db,
		words ? by_words[pg]
		      : "SELECT d.path, d.scope, d.bot_id, d.revision, d.content, 1.0 FROM memory_documents d "
			"WHERE " FILTER " AND (instr(lower(d.content), lower(?4)) > 0 OR "
			"instr(lower(d.path), lower(?4)) > 0) ORDER BY d.updated_at DESC, d.path LIMIT ?5",
		err);
	if (!st) {
		free(fq);
		return -rk_err(err)->code;
	}
	bind_reader(st, rd);
	rk_db_bind_text(st, 4, words && !pg ? fq : query);
	rk_stmt_bind_int(st, 5, limit);
	free(fq);
	return rk_db_collect(db, st, sizeof(**out), hit_row, hit_free, (void **)out, n, "search memory", err);
}

int rk_db_memory_history(struct rk_db *db, const struct rk_memory_reader *rd, const char *path, cJSON **out,
			 struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		"SELECT d.path, d.scope, nullif(d.bot_id, ''), v.revision, length(CAST(v.content AS BLOB)), v.run_id, "
		"v.created_at "
		"FROM memory_revisions v JOIN memory_documents d ON d.id = v.document_id "
		"WHERE " FILTER " AND d.path = ?4 ORDER BY d.bot_id = '', v.revision DESC",
		err);
	if (!st)
		return -rk_err(err)->code;
	bind_reader(st, rd);
	rk_db_bind_text(st, 4, path);
	static const struct rk_db_json_col cols[] = {{"path", 's'},	  {"scope", 's'},
						     {"bot", 's'},	  {"revision", 'i'},
						     {"bytes", 'i'},	  {"run_id", 's'},
						     {"created_at", 't'}, {0}};
	return rk_db_json_rows(db, st, cols, "read memory history", out, err);
}
