#ifndef RK_LOG_H
#define RK_LOG_H
/* The engine's diagnostic log: lines appended to DATA_DIR/log/rakazo.log
 * (never the terminal). RAKAZO_LOG=debug adds debug lines.
 *
 * The log is capped: once rakazo.log is past RAKAZO_LOG_MAX bytes (default
 * RK_LOG_MAX_DEFAULT, 16 MiB; at least 4096), the process that notices moves
 * it to rakazo.log.1 (replacing the one before) and starts a new one; every
 * other process writing it follows within a second. At most about twice
 * the cap is kept. */
#define RK_LOG_MAX_DEFAULT (16u * 1024 * 1024)
enum rk_log_level { RK_LOG_DEBUG, RK_LOG_INFO, RK_LOG_WARN, RK_LOG_ERROR };
void rk_log_open(const char *data_dir);
/* The log's descriptor (-1: none), and a new one for it: a forked helper that
 * closes inherited descriptors moves the log first, or forgets it (-1), so a
 * later open (the database) cannot take the number and get log lines. */
int rk_log_fd(void);
void rk_log_set_fd(int fd);
/* A filter every line goes through before it is written (NULL: none);
 * engine/access/secret.h registers its redaction here. */
struct rk_buf;
void rk_log_set_filter(void (*filter)(struct rk_buf *line));
void rk_log(enum rk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The engine's warning path: something the person should know although
 * the call went on (a file mode repaired). The line goes to the log, and to
 * the hook the front end registered at start-up (cmd/ prints it on stderr);
 * without a hook, to the log only. The engine never prints. */
typedef void (*rk_warn_fn)(const char *message);
void rk_warn_set_hook(rk_warn_fn fn);
void rk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line about a refused request from source (a peer address; NULL: unknown)
 * that anyone on the network can cause. Only the first RK_LOG_REFUSALS_PER_S
 * such lines of a second are written; the rest are counted by source and
 * summed up, one line per source ("N more refused requests from ADDR"), once
 * their second is over: at the next refusal or rk_log_refusals_flush. */
#define RK_LOG_REFUSALS_PER_S 10
void rk_log_refusal(enum rk_log_level level, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes the summaries of a second that is over (a server calls it now and
 * then, so a flood that stops is still summed up). */
void rk_log_refusals_flush(void);
#endif
