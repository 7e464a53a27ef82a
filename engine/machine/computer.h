#ifndef RK_COMPUTER_H
#define RK_COMPUTER_H
/* Computers: records, and the file and workspace calls that go through
 * their provider (the computer is resumed first when it is paused). */

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/machine/limits.h"
#include "engine/state/engine.h"
#include "providers/provider.h"
#include "engine/util/names.h"

#define RK_FILE_READ_DEFAULT_MAX (16u * 1024 * 1024)
#define RK_FILE_READ_LIMIT (256u * 1024 * 1024)
#define RK_FILE_WRITE_LIMIT (256u * 1024 * 1024)

cJSON *rk_computer_to_json(const struct rk_computer *c);

cJSON *rk_file_entry_to_json(const struct rk_file_entry *e);
const char *rk_file_type_name(enum rk_file_type t);

/* Workspace paths: "\\" becomes "/", "." and ".." are refused; relative paths
 * are inside the workspace, absolute ones are the machine's own. malloc'd. */
int rk_computer_path(const char *path, char **out, struct rk_error *err);

int rk_computer_file_list(struct rk_engine *eng, struct rk_computer *c, const char *path, struct rk_file_entry **out,
			  size_t *n, struct rk_error *err);
int rk_computer_file_read(struct rk_engine *eng, struct rk_computer *c, const char *path, size_t max_bytes,
			  struct rk_buf *out, struct rk_error *err);
int rk_computer_file_write(struct rk_engine *eng, struct rk_computer *c, const char *path, const void *data, size_t len,
			   int executable, struct rk_error *err);
int rk_computer_file_remove(struct rk_engine *eng, struct rk_computer *c, const char *path, struct rk_error *err);
int rk_computer_export(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err);
int rk_computer_import(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err);

/* Runs a short command (bash -lc, in the workspace) in c's running machine
 * and waits for it, at most timeout_ms (then it is killed: RK_ETIMEOUT).
 * *code is its exit status (128+N for signal N); out (may be NULL) gets its
 * output, the first 64 KiB. Not a session: nothing goes to the terminal
 * history, and c is not resumed. */
int rk_computer_sh(struct rk_engine *eng, const struct rk_computer *c, const char *command, int64_t timeout_ms,
		   int *code, struct rk_buf *out, struct rk_error *err);

/* Makes sure a computer can take work: a paused or stopped computer first gets
 * a saved resume (submitted and waited for); a starting one is waited for. On
 * return *c is fresh from the database. */
int rk_computer_ensure_running(struct rk_engine *eng, struct rk_computer *c, struct rk_error *err);
/* --- what a client reads (cmd/, tui/, api/ never call engine/state) --------- */

/* A computer by id or name, with no rights checked: for what already holds
 * the id (a target is resolved with rk_target_resolve). */
int rk_computer_get(struct rk_engine *eng, const char *id_or_name, struct rk_computer *out, struct rk_error *err);
/* Every computer, oldest first; *out malloc'd, each rk_computer_release'd. */
int rk_computer_list(struct rk_engine *eng, struct rk_computer **out, size_t *n, struct rk_error *err);
/* The saved commands of a computer (computer_id NULL: of all), newest
 * first, and the one unfinished, if any (RK_ENOTFOUND: none). */
int rk_computer_executions(struct rk_engine *eng, const char *computer_id, struct rk_execution **out, size_t *n,
			   struct rk_error *err);
int rk_computer_execution_active(struct rk_engine *eng, const char *computer_id, struct rk_execution *out,
				 struct rk_error *err);
/* A saved command's events after sequence after; free with rk_events_free. */
int rk_computer_execution_events(struct rk_engine *eng, const char *execution_id, int64_t after, struct rk_event **out,
				 size_t *n, struct rk_error *err);
/* Every unsettled saved command and its last event (rk_execution_marks_free). */
int rk_computer_execution_marks(struct rk_engine *eng, struct rk_execution_mark **out, size_t *n, struct rk_error *err);
/* A computer's shell sessions, and its terminal history after entry after
 * (session_id NULL: every session's), at most limit (0: 1000). */
int rk_computer_sessions(struct rk_engine *eng, const char *computer_id, struct rk_session_row **out, size_t *n,
			 struct rk_error *err);
int rk_computer_history(struct rk_engine *eng, const char *computer_id, const char *session_id, int64_t after,
			size_t limit, struct rk_history_entry **out, size_t *n, struct rk_error *err);
/* The (computer, bot) lease as it stands; release with rk_lease_release_record. */
int rk_computer_lease(struct rk_engine *eng, const char *computer_id, const char *bot_id, struct rk_lease *out,
		      struct rk_error *err);

#endif
