#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/time.h"
#include "providers/provider.h"

int rk_provider_run(const struct rk_provider_ops *ops, const struct rk_machine *m, const char *command,
		    int64_t timeout_ms, size_t max_bytes, struct rk_buf *out, struct rk_exit_status *st,
		    struct rk_error *err)
{
	memset(st, 0, sizeof(*st));
	if (!ops->exec_spawn)
		return rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot run commands", ops->name);
	struct rk_exec_request req = {.command = command};
	struct rk_proc *p = NULL;
	int rc = ops->exec_spawn(m, &req, &p, err);
	if (rc != 0)
		return rc;
	int eof = 0;
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	while (!eof && rc == 0) {
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0) {
			rc = rk_error_set(err, RK_ETIMEOUT, "a command did not end within %lld ms",
					  (long long)timeout_ms);
			break;
		}
		struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
		poll(&pfd, 1, left < 200 ? (int)left : 200);
		size_t before = out->len;
		rc = p->ops->read(p, out, &eof, err);
		/* past the limit the tail is dropped, not the command */
		if (out->len > max_bytes && before <= max_bytes)
			out->len = max_bytes;
		else if (out->len > max_bytes)
			out->len = before;
	}
	if (rc == 0) {
		rc = p->ops->wait(p, st, err);
	} else {
		struct rk_error ignored;
		p->ops->signal(p, 9, &ignored);
	}
	p->ops->free(p);
	if (out->data)
		out->data[out->len] = '\0';
	return rc;
}

void rk_limits_defaults(unsigned caps, struct rk_limits *l)
{
	if ((caps & RK_CAP_LIMIT_MEMORY) && l->memory <= 0)
		l->memory = RK_LIMIT_DEFAULT_MEMORY;
	if ((caps & RK_CAP_LIMIT_CPUS) && l->cpus <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		l->cpus = n > 0 && n < RK_LIMIT_DEFAULT_CPUS ? (double)n : RK_LIMIT_DEFAULT_CPUS;
	}
	if ((caps & RK_CAP_LIMIT_PIDS) && l->pids <= 0)
		l->pids = RK_LIMIT_DEFAULT_PIDS;
}
