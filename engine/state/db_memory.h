#ifndef RK_DB_MEMORY_H
#define RK_DB_MEMORY_H
/* Memory's tables (engine/agent/memory.h): memory_documents, their
 * memory_revisions and the memory_fts index. Their SQL lives here, beside
 * db.c, in SQLite's and PostgreSQL's dialects where they differ; the rules
 * (paths, sizes, the expected revision) stay in engine/agent/memory.c.
 *
 * Every read filters by the reader: space and user always; with a bot, the
 * user's documents (bot "") and the bot's own. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* Who reads: bot NULL for a person. */
struct rk_memory_reader {
	const char *space, *user, *bot;
};

/* path NULL: every document the reader sees, newest first
 * [{path, scope, bot, revision, bytes, updated_at}]; else that document, the
 * bot's own before the user's: [{path, scope, bot, revision, content,
 * updated_at}], empty when there is none. */
int rk_db_memory_read(struct rk_db *db, const struct rk_memory_reader *rd, const char *path, cJSON **out,
		      struct rk_error *err);

/* A document's key: scope "user" with bot "", or "bot" with the bot's name. */
struct rk_memory_key {
	const char *space, *user, *scope, *bot, *path;
};
/* The document's revision, 0 when it does not exist. */
int rk_db_memory_revision(struct rk_db *db, const struct rk_memory_key *k, int64_t *revision, struct rk_error *err);
/* Saves content as the document's next revision (1 for a new one), keeps a
 * revision row (run_id may be NULL) and indexes it. Run it in a transaction. */
int rk_db_memory_save(struct rk_db *db, const struct rk_memory_key *k, const char *content, int64_t revision,
		      const char *run_id, int64_t now, struct rk_error *err);

/* A search result; strings malloc'd. */
struct rk_memory_hit {
	char *path, *scope, *bot, *content; /* bot "" for a person's document */
	int64_t revision;
	double score;
};
void rk_memory_hits_free(struct rk_memory_hit *hits, size_t n);
/* At most limit documents the reader sees, best first. words: those holding
 * every word of query, ranked (SQLite's FTS5 bm25, or PostgreSQL's ts_rank
 * over RK_MEMORY_PG_TSV); none when the query has no word. Else those whose
 * content or path holds query (any case), score 1, newest first. */
int rk_db_memory_search(struct rk_db *db, const struct rk_memory_reader *rd, const char *query, int words, int limit,
			struct rk_memory_hit **out, size_t *n, struct rk_error *err);

/* The revisions of the document at path, the bot's own first, newest first:
 * [{path, scope, bot, revision, bytes, run_id, created_at}]. */
int rk_db_memory_history(struct rk_db *db, const struct rk_memory_reader *rd, const char *path, cJSON **out,
			 struct rk_error *err);

#endif
