/* Forwarded ports for PUT /v1/computers/:id/ports/:port: a listener on
 * 127.0.0.1 in the serving process, and for each connection to it one
 * command in the computer (bash's /dev/tcp) that carries the bytes to and
 * from the port there. It works through the provider's exec, so it needs
 * no network into the machine (docker computers run with --network none).
 *
 * A forward belongs to the token that made it. Anything on this host can
 * connect to a loopback port, so a connection is carried only once it has
 * sent the forward's secret (shown once, in the PUT's reply) and a newline;
 * until then nothing runs in the computer. rk_api_port_sweep, called by the
 * server a few times a second, ends a forward (its listener closed, its
 * connections cut) once its token is revoked, its bot loses the right to
 * the computer, or the computer is gone or no longer running. */

#include "engine/gateway/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/machine/computer.h"
#include "engine/machine/machine.h"
#include "engine/state/db_api.h"
#include "engine/util/buf.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define SECRET_BYTES 32
#define SECRET_WAIT_MS 10000 /* for a connection to show the secret */
#define PENDING_MAX 16	     /* connections of one forward still to show it */
#define TICK_MS 250	     /* how often relays and listeners look for the end */
#define SWEEP_MS 250

struct forward {
	struct forward *next;
	int refs;			   /* the list, the listener's thread, each relay; under forwards_lock */
	int ended;			   /* under forwards_lock */
	int pending;			   /* connections yet to show the secret; under forwards_lock */
	char secret[2 * SECRET_BYTES + 1]; /* the latest PUT's; under forwards_lock */
	char *data_dir, *token_id, *bot_id;
	struct rk_computer c; /* the strings a machine needs */
	int port, listen_fd, local_port;
};

struct relay {
	struct forward *f;
	int fd;
};

static pthread_mutex_t forwards_lock = PTHREAD_MUTEX_INITIALIZER;
static struct forward *forwards;

static char *dup_or_null(const char *s)
{
	return s ? rk_xstrdup(s) : NULL;
}

static void forward_free(struct forward *f)
{
	rk_computer_release(&f->c);
	free(f->data_dir);
	free(f->token_id);
	free(f->bot_id);
	sodium_memzero(f->secret, sizeof(f->secret));
	free(f);
}

static void forward_unref(struct forward *f)
{
	pthread_mutex_lock(&forwards_lock);
	int last = --f->refs == 0;
	pthread_mutex_unlock(&forwards_lock);
	if (last)
		forward_free(f);
}

static int forward_ended(struct forward *f)
{
	pthread_mutex_lock(&forwards_lock);
	int e = f->ended;
	pthread_mutex_unlock(&forwards_lock);
	return e;
}

/* Reads the first line of a connection, a byte at a time (what follows is
 * the service's), and compares it with the forward's secret in constant
 * time. 1 when it matches; 0 when it does not, or not within SECRET_WAIT_MS,
 * or the forward ends meanwhile. */
static int shows_secret(struct forward *f, int fd)
{
	char line[2 * SECRET_BYTES + 2];
	size_t n = 0;
	int64_t deadline = rk_monotonic_ms() + SECRET_WAIT_MS;
	for (;;) {
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0 || forward_ended(f))
			return 0;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, left < TICK_MS ? (int)left : TICK_MS);
		if (r < 0 && errno != EINTR)
			return 0;
		if (r <= 0)
			continue;
		char ch;
		ssize_t got = read(fd, &ch, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return 0;
		if (ch == '\n')
			break;
		if (n == sizeof(line))
			return 0;
		line[n++] = ch;
	}
	if (n && line[n - 1] == '\r')
		n--;
	char want[sizeof(f->secret)];
	pthread_mutex_lock(&forwards_lock);
	memcpy(want, f->secret, sizeof(want));
	pthread_mutex_unlock(&forwards_lock);
	int ok = n == 2 * SECRET_BYTES && sodium_memcmp(line, want, n) == 0;
	sodium_memzero(want, sizeof(want));
	sodium_memzero(line, sizeof(line));
	return ok;
}

/* Carries bytes both ways until either side ends, or the forward does. */
static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct forward *f = r->f;
	int ok = shows_secret(f, r->fd);
	pthread_mutex_lock(&forwards_lock);
	f->pending--;
	pthread_mutex_unlock(&forwards_lock);
	if (!ok) {
		rk_log(RK_LOG_INFO, "port %d of %s: a connection without the forward's secret was closed", f->port,
		       f->c.id);
		close(r->fd);
		forward_unref(f);
		free(r);
		return NULL;
	}
	struct rk_error err;
	struct rk_engine eng = {.data_dir = f->data_dir};
	struct rk_machine_ctx mc;
	int opened = rk_machine_open(&mc, &eng, &f->c, &err);
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 /* fd 4: stdin, which a background job would otherwise see as /dev/null */
		 "exec 2>/dev/null 4<&0; exec 3<>/dev/tcp/127.0.0.1/%d || exit 111; cat <&3 & a=$!; "
		 "cat <&4 >&3 & b=$!; wait -n; kill $a $b",
		 f->port);
	struct rk_exec_request req = {.command = cmd, .cwd = NULL};
	struct rk_proc *p = NULL;
	if (opened != 0 || rk_machine_exec_spawn(&mc, &req, &p, &err) != 0) {
		rk_log(RK_LOG_WARN, "port %d of %s: %s", f->port, f->c.id, err.message);
		goto out;
	}
	struct rk_buf buf = RK_BUF_INIT;
	rk_buf_init(&buf);
	int eof = 0, in_open = 1;
	while (!eof && !forward_ended(f)) {
		struct pollfd pfd[2] = {{.fd = in_open ? r->fd : -1, .events = POLLIN},
					{.fd = p->ops->poll_fd(p), .events = POLLIN}};
		if (poll(pfd, 2, TICK_MS) < 0 && errno != EINTR)
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
	forward_unref(f);
	free(r);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct forward *f = arg;
	while (!forward_ended(f)) {
		struct pollfd pl = {.fd = f->listen_fd, .events = POLLIN};
		if (poll(&pl, 1, TICK_MS) <= 0)
			continue;
		int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == EAGAIN)
				continue;
			break;
		}
		pthread_mutex_lock(&forwards_lock);
		int room = !f->ended && f->pending < PENDING_MAX;
		if (room) {
			f->pending++;
			f->refs++;
		}
		pthread_mutex_unlock(&forwards_lock);
		if (!room) {
			close(fd);
			continue;
		}
		struct relay *r = rk_xcalloc(1, sizeof(*r));
		r->f = f;
		r->fd = fd;
		pthread_t t;
		if (pthread_create(&t, NULL, relay_main, r) != 0) {
			pthread_mutex_lock(&forwards_lock);
			f->pending--;
			f->refs--; /* the list still holds it */
			pthread_mutex_unlock(&forwards_lock);
			close(fd);
			free(r);
			continue;
		}
		pthread_detach(t);
	}
	close(f->listen_fd);
	forward_unref(f);
	return NULL;
}

static void new_secret(char *out)
{
	unsigned char raw[SECRET_BYTES];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(out, 2 * SECRET_BYTES + 1, raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
}

int rk_api_port_forward(struct rk_engine *eng, const struct rk_computer *c, int port, const char *token_id,
			const char *bot_id, int *local_port, char **secret, struct rk_error *err)
{
	*secret = NULL;
	pthread_mutex_lock(&forwards_lock);
	for (struct forward *f = forwards; f; f = f->next)
		if (f->port == port && !strcmp(f->c.id, c->id) && !strcmp(f->data_dir, eng->data_dir) &&
		    !strcmp(f->token_id, token_id)) {
			new_secret(f->secret);
			*secret = rk_xstrdup(f->secret);
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
	f->token_id = rk_xstrdup(token_id);
	f->bot_id = dup_or_null(bot_id);
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
	f->refs = 2; /* the list and the listener's thread */
	new_secret(f->secret);
	pthread_t t;
	if (pthread_create(&t, NULL, accept_main, f) != 0) {
		r = rk_error_set(err, RK_EFAILED, "cannot start the forward of port %d", port);
		close(fd);
		forward_free(f);
		goto out;
	}
	pthread_detach(t);
	f->next = forwards;
	forwards = f;
	*local_port = f->local_port;
	*secret = rk_xstrdup(f->secret);
	rk_log(RK_LOG_INFO, "port %d of %s forwarded to 127.0.0.1:%d for token %s", port, c->id, f->local_port,
	       token_id);
out:
	pthread_mutex_unlock(&forwards_lock);
	return r;
}

/* Why f must end now (a static string), or NULL while it may go on. A
 * failed look at the database ends nothing: the next sweep looks again. */
static const char *forward_gone(struct rk_engine *eng, const struct forward *f)
{
	struct rk_error err;
	if (rk_api_token_live(eng->db, f->token_id, &err) == 0)
		return "its token was revoked";
	/* the token's identity (api.c's caller) through the one rights check */
	struct rk_actor a;
	if (rk_actor_resolve(&a, eng, NULL, f->bot_id, &err) == 0) {
		int r = rk_authz_check_id(eng, &a, f->c.id, "computers.use", &err);
		rk_actor_release(&a);
		if (r == -RK_EDENIED || r == -RK_ENOTFOUND)
			return f->bot_id ? "its token's bot lost its right to the computer"
					 : "its token lost its right to the computer";
	}
	struct rk_computer c = {0};
	int r = rk_db_computer_get(eng->db, f->c.id, &c, &err);
	const char *why = r && err.code == RK_ENOTFOUND ? "the computer was deleted"
			  : !r && c.state && rk_computer_state_of(c.state) != RK_COMPUTER_RUNNING
				  ? "the computer is no longer running"
				  : NULL;
	rk_computer_release(&c);
	return why;
}

void rk_api_port_sweep(struct rk_engine *eng)
{
	static int64_t last;
	int64_t now = rk_monotonic_ms();
	pthread_mutex_lock(&forwards_lock);
	if (!forwards || now - last < SWEEP_MS) {
		pthread_mutex_unlock(&forwards_lock);
		return;
	}
	last = now;
	size_t n = 0;
	for (struct forward *f = forwards; f; f = f->next)
		n++;
	struct forward **all = rk_xcalloc(n, sizeof(*all));
	n = 0;
	for (struct forward *f = forwards; f; f = f->next)
		if (!strcmp(f->data_dir, eng->data_dir)) {
			f->refs++;
			all[n++] = f;
		}
	pthread_mutex_unlock(&forwards_lock);
	for (size_t i = 0; i < n; i++) {
		struct forward *f = all[i];
		const char *why = forward_gone(eng, f);
		if (why) {
			pthread_mutex_lock(&forwards_lock);
			int first = !f->ended;
			f->ended = 1;
			for (struct forward **pp = &forwards; first && *pp; pp = &(*pp)->next)
				if (*pp == f) {
					*pp = f->next;
					f->refs--; /* the list's */
					break;
				}
			pthread_mutex_unlock(&forwards_lock);
			if (first)
				rk_log(RK_LOG_INFO, "port %d of %s: the forward at 127.0.0.1:%d ended: %s", f->port,
				       f->c.id, f->local_port, why);
		}
		forward_unref(f);
	}
	free(all);
}
