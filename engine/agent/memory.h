#ifndef RK_MEMORY_H
#define RK_MEMORY_H
/* Memory: Markdown documents keyed by space, user, scope, bot and path.
 *
 * A person's documents are scope user (bot ""); a bot writes scope bot
 * documents of its own. Every read filters by the actor's space and user,
 * so one user never sees another's memory; with a bot it sees the user's
 * documents and its own, never another bot's. Paths are relative
 * ("notes/today.md"), 1 to 256 bytes, no "." or ".." segments.
 *
 * Writes run in one transaction: the revision goes up by one and a
 * revision row keeps the content. expected_revision (>= 0; 0 means "must
 * not exist yet") makes a write whose document moved on in the meantime
 * fail with RK_ECONFLICT, nothing written.
 *
 * Search ranks the documents that hold every word of the query: SQLite's
 * FTS5 (bm25), or PostgreSQL's text search (ts_rank, db.h's
 * RK_MEMORY_PG_TSV); when that finds nothing it falls back to a case-insensitive substring
 * match on content or path, score 1. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/access/authz.h"
#include "engine/state/engine.h"
#include "engine/util/err.h"

#define RK_MEMORY_CONTENT_MAX (256u * 1024)
#define RK_MEMORY_PATH_MAX 256
#define RK_MEMORY_NO_REVISION (-1)

/* path NULL: the list of documents {path, scope, bot, revision, bytes,
 * updated_at}; else that document with its content (the bot's own before
 * the user's). RK_ENOTFOUND when there is none. */
int rk_memory_read(struct rk_engine *eng, const struct rk_actor *a, const char *path, cJSON **out,
		   struct rk_error *err);
/* Saves; *out {path, scope, bot, revision}. */
int rk_memory_write(struct rk_engine *eng, const struct rk_actor *a, const char *path, const char *content,
		    int64_t expected_revision, const char *run_id, cJSON **out, struct rk_error *err);
/* {query, mode: fts|substring, results [{path, scope, bot, revision, score, snippet}]}, best first. */
int rk_memory_search(struct rk_engine *eng, const struct rk_actor *a, const char *query, int limit, cJSON **out,
		     struct rk_error *err);
/* The revisions of a document, newest first: [{revision, bytes, run_id, created_at}]. */
int rk_memory_history(struct rk_engine *eng, const struct rk_actor *a, const char *path, cJSON **out,
		      struct rk_error *err);

#endif
