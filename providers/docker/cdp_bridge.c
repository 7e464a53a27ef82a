/* rakazo-agent cdp-bridge: the DevTools protocol of a computer's Chromium,
 * on a unix socket in /run/rakazo, with no TCP port anywhere.
 *
 *   rakazo-agent cdp-bridge SOCKET -- COMMAND [ARG...]
 *
 * Runs COMMAND (Chromium started with --remote-debugging-pipe) with fd 3 as
 * the pipe it reads protocol messages from and fd 4 as the one it writes
 * them to; both carry JSON messages, each ended by a NUL byte. The bridge
 * listens on SOCKET (mode 0600; a peer must have uid 0 or ours) and relays
 * whole messages between the pipes and one client at a time: a message cut
 * by a client that went away never reaches Chromium, and what Chromium
 * says while no client is there is dropped. A second client waits in the
 * backlog until the first leaves. The bridge ends, removing SOCKET, when
 * COMMAND ends, with its exit status. Plain libc, like the agent. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MSG_MAX (64u << 20) /* a screenshot of a big page is tens of MB */

int rk_agent_cdp_bridge(int argc, char **argv);

struct msgbuf {
	char *p;
	size_t len, cap;
};

static int mb_add(struct msgbuf *b, const char *d, size_t n)
{
	if (b->len + n > MSG_MAX)
		return -1;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

static void mb_consume(struct msgbuf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The length of the first whole message (with its NUL) in b, or 0. */
static size_t whole(const struct msgbuf *b)
{
	char *z = b->len ? memchr(b->p, '\0', b->len) : NULL;
	return z ? (size_t)(z - b->p) + 1 : 0;
}

static int peer_ok(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0)
		return 0;
	return cr.uid == 0 || cr.uid == getuid();
}

int rk_agent_cdp_bridge(int argc, char **argv)
{
	/* argv: cdp-bridge SOCKET -- COMMAND ... */
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		static const char u[] = "usage: rakazo-agent cdp-bridge SOCKET -- COMMAND [ARG...]\n";
		write_all(2, u, sizeof(u) - 1);
		return 2;
	}
	const char *path = argv[2];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return 2;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	signal(SIGPIPE, SIG_IGN);

	int to_chrome[2], from_chrome[2];
	if (pipe2(to_chrome, O_CLOEXEC) != 0 || pipe2(from_chrome, O_CLOEXEC) != 0)
		return 1;
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		return 1;
	unlink(path);
	mode_t old = umask(0177);
	int rc = bind(ls, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || listen(ls, 16) != 0)
		return 1;

	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		/* Chromium's pipe convention: it reads fd 3 and writes fd 4 */
		int r = dup(to_chrome[0]), w = dup(from_chrome[1]);
		if (r < 0 || w < 0 || dup2(r, 3) < 0 || dup2(w, 4) < 0)
			_exit(127);
		close(ls);
		if (r != 3 && r != 4)
			close(r);
		if (w != 3 && w != 4)
			close(w);
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	close(to_chrome[0]);
	close(from_chrome[1]);
	int out = to_chrome[1], in = from_chrome[0];

	struct msgbuf from_client = {0}, from_browser = {0};
	int client = -1;
	int status = 0;
	char chunk[65536];
	for (;;) {
		struct pollfd p[3] = {{.fd = in, .events = POLLIN},
				      {.fd = client >= 0 ? client : ls, .events = POLLIN}};
		int np = 2;
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			ssize_t n = read(in, chunk, sizeof(chunk));
			if (n <= 0)
				break; /* Chromium closed its end: it is going */
			if (mb_add(&from_browser, chunk, (size_t)n) != 0)
				break;
			size_t m;
			while ((m = whole(&from_browser)) > 0) {
				if (client >= 0 && write_all(client, from_browser.p, m) != 0) {
					close(client);
					client = -1;
					from_client.len = 0;
				}
				mb_consume(&from_browser, m);
			}
		}
		if (client < 0 && (p[1].revents & POLLIN)) {
			int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0 && !peer_ok(c)) {
				close(c);
				c = -1;
			}
			client = c;
			from_client.len = 0;
		} else if (client >= 0 && p[1].revents) {
			ssize_t n = read(client, chunk, sizeof(chunk));
			int gone = n <= 0 || mb_add(&from_client, chunk, (size_t)n) != 0;
			size_t m;
			while (!gone && (m = whole(&from_client)) > 0) {
				if (write_all(out, from_client.p, m) != 0)
					goto done;
				mb_consume(&from_client, m);
			}
			if (gone) {
				/* a partial message dies with its sender */
				close(client);
				client = -1;
				from_client.len = 0;
			}
		}
	}
done:
	unlink(path);
	close(ls);
	if (client >= 0)
		close(client);
	close(out);
	close(in);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	free(from_client.p);
	free(from_browser.p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
