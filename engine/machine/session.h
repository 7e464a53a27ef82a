#ifndef RK_SESSION_H
#define RK_SESSION_H
/* Shell sessions: `bash -lc COMMAND` on a computer, with stdin, a PTY on
 * request, and output handed back in bounded pieces. Each session lives in
 * a small holder process of its own (forked from the caller, detached), which
 * keeps the provider's running command, buffers its output and answers one
 * call at a time on an abstract unix socket that only the same uid may use.
 * So a session outlives the CLI process that started it, calls for one
 * session run in order, and it ends after RAKAZO_SESSION_IDLE_MS (30 min)
 * without a call. */

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/names.h"

#define RK_SESSION_YIELD_DEFAULT_MS 10000
#define RK_SESSION_YIELD_MIN_MS 250
#define RK_SESSION_YIELD_MAX_MS 30000
#define RK_SESSION_OUTPUT_DEFAULT (64 * 1024)

struct rk_session_request {
	const char *command;
	const char *cwd;
	const char *const *env; /* "K=V", NULL-terminated */
	int tty, rows, cols;
	int64_t yield_ms;  /* 0: the default */
	size_t max_output; /* 0: 64 KiB */
	const char *bot_id;
	/* a model reads the output (the shell tool): a reply keeps back the
	 * tail that could begin one of the user's secrets until the next read
	 * or the end (engine/access/secret.h), so a value printed in two writes, read
	 * in two calls, reaches it whole and redacted */
	int keep_back;
};

struct rk_session_reply {
	char *session; /* NULL once the command has ended */
	int running;
	int exited; /* exit_code is valid */
	int exit_code;
	int signo;     /* > 0 when a signal ended it */
	int lost;      /* the computer went away mid-command */
	int truncated; /* only the tail of the new output is here */
	char *output;  /* UTF-8 (invalid bytes replaced), malloc'd */
	size_t output_len;
};
void rk_session_reply_release(struct rk_session_reply *r);
cJSON *rk_session_reply_to_json(const struct rk_session_reply *r);

/* Starts a command and waits up to yield_ms for it. */
int rk_session_start(struct rk_engine *eng, struct rk_computer *c, const struct rk_session_request *req,
		     struct rk_session_reply *out, struct rk_error *err);
/* Sends bytes (already unescaped) to stdin, then waits up to yield_ms. Without
 * a terminal, Ctrl-C (0x03) interrupts the command and Ctrl-D (0x04) ends its
 * input; with one, the terminal does that itself. Empty data only reads. */
int rk_session_input(struct rk_engine *eng, const char *computer_id, const char *session_id, const void *data,
		     size_t len, int64_t yield_ms, size_t max_output, struct rk_session_reply *out,
		     struct rk_error *err);
int rk_session_resize(struct rk_engine *eng, const char *computer_id, const char *session_id, int rows, int cols,
		      struct rk_error *err);
/* Stops the command (TERM, then KILL) and gives its last output. */
int rk_session_kill(struct rk_engine *eng, const char *computer_id, const char *session_id,
		    struct rk_session_reply *out, struct rk_error *err);

/* C escapes (\n \t \r \\ \" \' \0 \a \b \e \f \v \xHH \NNN octal \uHHHH) to bytes. */
int rk_unescape_c(const char *in, struct rk_buf *out, struct rk_error *err);
/* Checks a yield in ms against the allowed range. */
int rk_session_check_yield(int64_t yield_ms, struct rk_error *err);


/* What a terminal history entry holds (terminal_history.kind,
 * rk_history_entry.kind): the command, input, output, or how it ended. */
#define RK_HISTORY_KINDS(X)                                                                                            \
	X(RK_HISTORY_COMMAND, "command")                                                                               \
	X(RK_HISTORY_INPUT, "input")                                                                                   \
	X(RK_HISTORY_OUTPUT, "output")                                                                                 \
	X(RK_HISTORY_EXIT, "exit")
RK_NAMES_ENUM(rk_history_kind, RK_HISTORY_KIND, RK_HISTORY_KINDS);

#endif
