/* Forwarded ports for PUT /v1/computers/:id/ports/:port: a listener on
 * 127.0.0.1 in the serving process, and for each connection to it one
 * command in the computer (bash's /dev/tcp) that carries the bytes to and
 * from the port there. It works through the provider's exec, so it needs
 * no network into the machine (docker computers run with --network none).
 * A forward lasts as long as the server. */

#include "api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/log.h"

struct forward {
	struct forward *next;
	char *data_dir;
	struct rk_computer c; /* the strings a machine needs */
	int port, listen_fd, local_port;
};

struct relay {
	struct forward *f;
	int fd;
};

static pthread_mutex_t forwards_lock = PTHREAD_MUTEX_INITIALIZER;
static struct forward *forwards;

static char *dup_or_null(const char *s) { return s ? rk_xstrdup(s) : NULL; }

/* Carries bytes both ways until either side ends. */
static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct forward *f = r->f;
	struct rk_error err;
	struct rk_engine eng = {.data_dir = f->data_dir};
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, &eng, &f->c);
	const struct rk_provider_ops *ops = rk_engine_provider(&f->c, &err);
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 /* fd 4: stdin, which a background job would otherwise see as /dev/null */
		 "exec 2>/dev/null 4<&0; exec 3<>/dev/tcp/127.0.0.1/%d || exit 111; cat <&3 & a=$!; "
		 "cat <&4 >&3 & b=$!; wait -n; kill $a $b",
		 f->port);
	struct rk_exec_request req = {.command = cmd, .cwd = NULL};
	struct rk_proc *p = NULL;
	if (!ops || !ops->exec_spawn || ops->exec_spawn(&mc.m, &req, &p, &err) != 0) {
		rk_log(RK_LOG_WARN, "port %d of %s: %s", f->port, f->c.id, err.message);
		goto out;
	}
	struct rk_buf buf = RK_BUF_INIT;
	rk_buf_init(&buf);
	int eof = 0, in_open = 1;
	while (!eof) {
		struct pollfd pfd[2] = {{.fd = in_open ? r->fd : -1, .events = POLLIN},
					{.fd = p->ops->poll_fd(p), .events = POLLIN}};
		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			char tmp[65536];
			ssize_t n = read(r->fd, tmp, sizeof(tmp));
			if (n > 0) {
				if (p->ops->write(p, tmp, (size_t)n, &err) != 0)
					break;
			} else if (n == 0 || errno != EINTR) {
				in_open = 0;
				p->ops->close_stdin(p, &err);
			}
		}
		rk_buf_reset(&buf);
		if (p->ops->read(p, &buf, &eof, &err) != 0)
			break;
		size_t off = 0;
		while (off < buf.len) {
			ssize_t w = send(r->fd, buf.data + off, buf.len - off, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				eof = 1;
				break;
			}
			off += (size_t)w;
		}
	}
	rk_buf_release(&buf);
	p->ops->signal(p, SIGKILL, &err);
	p->ops->free(p);
out:
	rk_machine_ctx_release(&mc);
	close(r->fd);
	free(r);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct forward *f = arg;
	for (;;) {
		int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			return NULL;
		}
		struct relay *r = rk_xcalloc(1, sizeof(*r));
		r->f = f;
		r->fd = fd;
		pthread_t t;
		if (pthread_create(&t, NULL, relay_main, r) != 0) {
			close(fd);
			free(r);
			continue;
		}
		pthread_detach(t);
	}
}

int rk_api_port_forward(struct rk_engine *eng, const struct rk_computer *c, int port, int *local_port,
			struct rk_error *err)
{
	pthread_mutex_lock(&forwards_lock);
	for (struct forward *f = forwards; f; f = f->next)
		if (f->port == port && !strcmp(f->c.id, c->id) && !strcmp(f->data_dir, eng->data_dir)) {
			*local_port = f->local_port;
			pthread_mutex_unlock(&forwards_lock);
			return 0;
		}
	int r = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		r = rk_error_errno(err, RK_EUNAVAILABLE, errno, "cannot listen on the loopback for port %d", port);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	struct forward *f = rk_xcalloc(1, sizeof(*f));
	f->data_dir = rk_xstrdup(eng->data_dir);
	f->c.id = rk_xstrdup(c->id);
	f->c.name = rk_xstrdup(c->name);
	f->c.kind = rk_xstrdup(c->kind);
	f->c.home_key = rk_xstrdup(c->home_key);
	f->c.provider_ref = dup_or_null(c->provider_ref);
	f->c.options = dup_or_null(c->options);
	f->c.resources = dup_or_null(c->resources);
	f->port = port;
	f->listen_fd = fd;
	f->local_port = ntohs(sa.sin_port);
	pthread_t t;
	if (pthread_create(&t, NULL, accept_main, f) != 0) {
		r = rk_error_set(err, RK_EFAILED, "cannot start the forward of port %d", port);
		close(fd);
		rk_computer_release(&f->c);
		free(f->data_dir);
		free(f);
		goto out;
	}
	pthread_detach(t);
	f->next = forwards;
	forwards = f;
	*local_port = f->local_port;
	rk_log(RK_LOG_INFO, "port %d of %s forwarded to 127.0.0.1:%d", port, c->id, f->local_port);
out:
	pthread_mutex_unlock(&forwards_lock);
	return r;
}
