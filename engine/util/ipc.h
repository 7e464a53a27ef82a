#ifndef RK_IPC_H
#define RK_IPC_H
/* Talking to rakazo's own long-lived helper processes (session holders,
 * display holders): abstract unix sockets named "rakazo-<name>" (no path
 * length limits, nothing left on disk), peers checked to be this uid, and
 * one JSON line each way per call. */

#include <cJSON.h>
#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* A listening socket for name; -1 with err when taken or failing. */
int rk_ipc_listen(const char *name, struct rk_error *err);
/* Accepts one caller of this uid (others are closed); -1 when none waits. */
int rk_ipc_accept(int lsock);
/* One call: sends req, waits up to timeout_ms for the reply. RK_EDENIED
 * when another uid holds the name (it could read what is sent). RK_ENOTFOUND
 * when nothing listens on name, or when the listener went before the
 * request's last byte reached it (a listener acts only on whole lines);
 * RK_EOUTCOME_UNKNOWN when the request went out but no whole reply came
 * back. */
int rk_ipc_call(const char *name, const cJSON *req, int64_t timeout_ms, cJSON **reply, struct rk_error *err);
/* On the serving side: reads one request line (bounded), and writes a reply. */
cJSON *rk_ipc_read_request(int fd, int64_t timeout_ms, struct rk_error *err);
int rk_ipc_write_reply(int fd, const cJSON *reply);

/* Forks a detached process (its own session, stdio on /dev/null) that runs
 * fn(arg, ready_fd) and must never return. The caller waits for ready_fd:
 * "ok\n" means ready, "code\tmessage\n" is an error it reports. */
typedef void (*rk_ipc_main_fn)(void *arg, int ready_fd);
int rk_ipc_spawn(rk_ipc_main_fn fn, void *arg, struct rk_error *err);
/* For fn: reports readiness or an error on ready_fd and closes it. */
void rk_ipc_ready(int ready_fd, const struct rk_error *err_or_null);

char *rk_base64_encode(const void *data, size_t len); /* malloc'd */
int rk_base64_decode(const char *s, struct rk_buf *out);

#endif
