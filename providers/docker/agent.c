/* rakazo-agent: the exec agent inside a docker computer.
 *
 * `docker exec` costs ~90 ms in runc on every command. This small program is
 * started once per container (a detached exec as uid 1000), listens on a unix
 * socket in /run/rakazo (bind-mounted from the computer's run dir, so only the
 * host and the computer itself can reach it) and runs one command per
 * connection as `bash -lc COMMAND` in its own session, with a pty or with
 * output and errors merged into one pipe, reporting the real wait status.
 *
 * Plain libc, linked statically: it must run in whatever image the computer
 * has. No NSS (getpwnam and friends): the exec that started it already set
 * the user, groups, HOME and the rest, and every command inherits that, as a
 * `docker exec --user 1000` would.
 *
 *   rakazo-agent SOCKET CONTAINER-ID
 *   rakazo-agent cdp-bridge SOCKET -- COMMAND...   (see cdp_bridge.c)
 *
 * The protocol, one connection per command. Every frame is a 1-byte type, a
 * 4-byte big-endian payload length and the payload (at most 16 MiB):
 *   agent -> host  'A' hello: u32 version, then the container id it was
 *                      started for (the host checks both)
 *   host -> agent  'H' header: u8 tty, u16 rows, u16 cols, then NUL-terminated
 *                      command, working directory and NAME=VALUE entries
 *                  'Q' instead of 'H': stop this agent (a newer one follows)
 *                  'I' input bytes     'C' end of input
 *                  'S' u32 signal for the command's process group
 *                  'R' u16 rows, u16 cols: resize the pty
 *   agent -> host  'O' output bytes, as they come
 *                  'X' u32 wait status; the last frame, then the agent closes
 * The host sends nothing before the hello, so a paused container (whose
 * kernel backlog still takes connections) never runs a command the host has
 * given up on. A host that goes away mid-command leaves the command running
 * with its input closed, as docker does with a detached attach.
 *
 * The socket is mode 0600 and the agent only serves peers with uid 0 or its
 * own uid; a lock file next to it keeps one agent per run dir. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef PROTO_VERSION
#define PROTO_VERSION 1 /* -DPROTO_VERSION=N builds another version, for testing the upgrade */
#endif
#define MAX_FRAME (16u << 20)
#define HIGH_WATER (256u << 10) /* queued bytes after which a side stops reading */
#define CHUNK 65536
#define FIRST_FRAME_MS 30000
#define SOCKET_CHECK_MS 5000

/* --- small helpers ------------------------------------------------------------ */

static void say(int fd, const char *a, const char *b, const char *c)
{
	const char *parts[] = {a, b, c};
	for (int i = 0; i < 3; i++) {
		size_t n = parts[i] ? strlen(parts[i]) : 0;
		while (n > 0) {
			ssize_t w = write(fd, parts[i], n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return;
			parts[i] += w;
			n -= (size_t)w;
		}
	}
}

__attribute__((noreturn)) static void die(const char *what)
{
	say(2, "rakazo-agent: ", what, "\n");
	_exit(1);
}

struct buf {
	char *data;
	size_t off, len, cap; /* live bytes are data[off..len) */
};

static size_t buf_used(const struct buf *b)
{
	return b->len - b->off;
}

static char *buf_head(const struct buf *b)
{
	return b->data + b->off;
}

static void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap && b->off) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d)
			die("out of memory");
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void frame(struct buf *q, char type, const void *p, size_t n)
{
	unsigned char h[5];
	h[0] = (unsigned char)type;
	put_u32(h + 1, (uint32_t)n);
	buf_add(q, h, 5);
	buf_add(q, p, n);
}

/* A complete frame at the head of b: 1 and its type and length, 0 when more
 * bytes are needed, -1 for a frame over the limit. */
static int frame_ready(const struct buf *b, char *type, size_t *len)
{
	if (buf_used(b) < 5)
		return 0;
	const unsigned char *h = (const unsigned char *)buf_head(b);
	uint32_t n = get_u32(h + 1);
	if (n > MAX_FRAME)
		return -1;
	if (buf_used(b) < 5 + (size_t)n)
		return 0;
	*type = (char)h[0];
	*len = n;
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* --- one command ----------------------------------------------------------------- */

static int chld_pipe[2] = {-1, -1};
static pid_t listener_pid;

static void on_chld(int sig)
{
	(void)sig;
	int e = errno;
	if (write(chld_pipe[1], "", 1) < 0) {
		/* full: a wakeup is pending anyway */
	}
	errno = e;
}

struct request {
	char *payload; /* owns the strings below */
	int tty;
	unsigned short rows, cols;
	const char *command, *cwd;
	char **env; /* NULL-terminated, into payload */
};

static int parse_header(const char *p, size_t len, struct request *r)
{
	if (len < 5 + 2 || p[len - 1] != '\0')
		return -1;
	r->payload = malloc(len);
	if (!r->payload)
		die("out of memory");
	memcpy(r->payload, p, len);
	const unsigned char *u = (const unsigned char *)r->payload;
	r->tty = u[0] != 0;
	r->rows = (unsigned short)(u[1] << 8 | u[2]);
	r->cols = (unsigned short)(u[3] << 8 | u[4]);
	size_t nstr = 0;
	for (size_t i = 5; i < len; i++)
		nstr += r->payload[i] == '\0';
	if (nstr < 2)
		return -1;
	r->env = calloc(nstr, sizeof(char *));
	if (!r->env)
		die("out of memory");
	char *s = r->payload + 5;
	r->command = s;
	s += strlen(s) + 1;
	r->cwd = s;
	s += strlen(s) + 1;
	size_t k = 0;
	while (s < r->payload + len) {
		if (strchr(s, '=') && s[0] != '=')
			r->env[k++] = s;
		s += strlen(s) + 1;
	}
	r->env[k] = NULL;
	return 0;
}

/* In the forked child: becomes the command. */
static void child(const struct request *r, int in, int out, int sync_fd)
{
	setsid();
	if (r->tty && ioctl(in, TIOCSCTTY, 0) != 0)
		say(out, "rakazo: cannot take the terminal: ", strerror(errno), "\r\n");
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	/* the parent may signal the group from here on */
	if (write(sync_fd, "", 1) < 0) {
		/* the parent then waits for the exec's close instead */
	}
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; r->env[i]; i++)
		putenv(r->env[i]);
	if (r->tty && !getenv("TERM"))
		setenv("TERM", "xterm", 1);
	if (*r->cwd && chdir(r->cwd) != 0) {
		say(2, "rakazo: cannot change to directory ", r->cwd, "");
		say(2, ": ", strerror(errno), "\n");
		_exit(126);
	}
	char *argv[] = {"bash", "-lc", (char *)r->command, NULL};
	execvp("bash", argv);
	int e = errno;
	say(2, "rakazo: cannot run bash: ", strerror(e), "\n");
	_exit(e == ENOENT ? 127 : 126);
}

/* One connection, in the process forked for it: it ends with the connection
 * (_exit), which frees what it holds. */
__attribute__((noreturn)) static void serve(int conn, const char *container_id)
{
	struct buf in = {0}, outq = {0}, inq = {0};

	/* hello */
	size_t idlen = strlen(container_id);
	unsigned char v[4];
	put_u32(v, PROTO_VERSION);
	struct buf hello = {0};
	unsigned char h[5] = {'A'};
	put_u32(h + 1, (uint32_t)(4 + idlen));
	buf_add(&hello, h, 5);
	buf_add(&hello, v, 4);
	buf_add(&hello, container_id, idlen);
	if (send_all(conn, buf_head(&hello), buf_used(&hello)) != 0)
		_exit(0);

	/* the first frame: a command header or a stop */
	char type = 0;
	size_t len = 0;
	int64_t deadline = now_ms() + FIRST_FRAME_MS;
	for (;;) {
		int fr = frame_ready(&in, &type, &len);
		if (fr < 0)
			_exit(0);
		if (fr > 0)
			break;
		int64_t left = deadline - now_ms();
		struct pollfd pfd = {.fd = conn, .events = POLLIN};
		if (left <= 0)
			_exit(0);
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			_exit(0);
		char chunk[CHUNK];
		ssize_t n = recv(conn, chunk, sizeof(chunk), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		buf_add(&in, chunk, (size_t)n);
	}
	if (type == 'Q') {
		/* only the listener that forked us: an orphan must not signal init */
		if (getppid() == listener_pid)
			kill(listener_pid, SIGTERM);
		_exit(0);
	}
	struct request req = {0};
	if (type != 'H' || parse_header(buf_head(&in) + 5, len, &req) != 0) {
		say(2, "rakazo-agent: ", "malformed request", "\n");
		_exit(0);
	}
	buf_consume(&in, 5 + len);

	/* the command's terminal or pipes */
	int master = -1, inw = -1, outr = -1, cin = -1, cout = -1;
	if (req.tty) {
		struct winsize ws = {.ws_row = req.rows ? req.rows : 24, .ws_col = req.cols ? req.cols : 80};
		int slave = -1;
		if (openpty(&master, &slave, NULL, NULL, &ws) != 0)
			die("cannot open a pty");
		fcntl(master, F_SETFD, FD_CLOEXEC);
		fcntl(slave, F_SETFD, FD_CLOEXEC);
		cin = cout = slave;
	} else {
		int ip[2], op[2];
		if (pipe2(ip, O_CLOEXEC) != 0 || pipe2(op, O_CLOEXEC) != 0)
			die("cannot make pipes");
		cin = ip[0];
		inw = ip[1];
		outr = op[0];
		cout = op[1];
	}
	int sync[2];
	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(sync, O_CLOEXEC) != 0)
		die("cannot make pipes");
	struct sigaction sa = {.sa_handler = on_chld, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		unsigned char st[4];
		const char *msg = "rakazo: cannot fork the command\n";
		frame(&outq, 'O', msg, strlen(msg));
		put_u32(st, 126u << 8);
		frame(&outq, 'X', st, 4);
		send_all(conn, buf_head(&outq), buf_used(&outq));
		_exit(0);
	}
	if (pid == 0) {
		close(sync[0]);
		child(&req, cin, cout, sync[1]);
	}
	close(sync[1]);
	close(cin);
	if (cout != cin)
		close(cout);
	for (;;) {
		char c;
		ssize_t n = read(sync[0], &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	close(sync[0]);

	int outfd = req.tty ? master : outr;
	int infd = req.tty ? master : inw;
	set_nonblock(conn);
	set_nonblock(outfd);
	if (infd != outfd)
		set_nonblock(infd);

	int host_gone = 0, input_ended = 0, reaped = 0, out_done = 0, exit_queued = 0;
	int status = 0;
	for (;;) {
		/* frames from the host, including any that came with the header */
		int fr;
		while (!host_gone && (fr = frame_ready(&in, &type, &len)) != 0) {
			if (fr < 0) {
				host_gone = 1;
				break;
			}
			const unsigned char *pl = (const unsigned char *)buf_head(&in) + 5;
			if (type == 'I' && !input_ended && infd >= 0) {
				buf_add(&inq, pl, len);
			} else if (type == 'C') {
				input_ended = 1;
			} else if (type == 'S' && len == 4 && !reaped) {
				kill(-pid, (int)get_u32(pl));
			} else if (type == 'R' && len == 4 && req.tty && master >= 0) {
				struct winsize ws = {.ws_row = (unsigned short)(pl[0] << 8 | pl[1]),
						     .ws_col = (unsigned short)(pl[2] << 8 | pl[3])};
				ioctl(master, TIOCSWINSZ, &ws);
			}
			buf_consume(&in, 5 + len);
		}
		if (host_gone) {
			buf_consume(&outq, buf_used(&outq));
			buf_consume(&inq, buf_used(&inq));
			input_ended = 1;
		}
		if (!req.tty && input_ended && inw >= 0 && !buf_used(&inq)) {
			close(inw);
			inw = infd = -1;
		}
		if (reaped && out_done) {
			if (host_gone)
				break;
			if (!exit_queued) {
				unsigned char st[4];
				put_u32(st, (uint32_t)status);
				frame(&outq, 'X', st, 4);
				exit_queued = 1;
			}
			if (!buf_used(&outq))
				break;
		}
		struct pollfd p[4];
		int np = 0, ic = -1, io = -1, ii = -1, is = -1;
		short ce = 0;
		if (!host_gone && buf_used(&inq) < HIGH_WATER)
			ce |= POLLIN;
		if (!host_gone && buf_used(&outq))
			ce |= POLLOUT;
		if (ce) {
			ic = np;
			p[np++] = (struct pollfd){.fd = conn, .events = ce};
		}
		if (!out_done && (host_gone || buf_used(&outq) < HIGH_WATER)) {
			io = np;
			p[np++] = (struct pollfd){.fd = outfd, .events = POLLIN};
		}
		if (infd >= 0 && buf_used(&inq)) {
			ii = np;
			p[np++] = (struct pollfd){.fd = infd, .events = POLLOUT};
		}
		if (!reaped) {
			is = np;
			p[np++] = (struct pollfd){.fd = chld_pipe[0], .events = POLLIN};
		}
		if (np == 0)
			break; /* nothing left to wait for */
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll failed");
		}

		if (ic >= 0 && (p[ic].revents & (POLLIN | POLLHUP | POLLERR))) {
			char chunk[CHUNK];
			ssize_t n = recv(conn, chunk, sizeof(chunk), 0);
			if (n > 0) {
				buf_add(&in, chunk, (size_t)n);
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				host_gone = 1;
			}
		}
		if (ic >= 0 && !host_gone && (p[ic].revents & POLLOUT)) {
			ssize_t n = send(conn, buf_head(&outq), buf_used(&outq), MSG_NOSIGNAL);
			if (n > 0)
				buf_consume(&outq, (size_t)n);
			else if (n < 0 && errno != EINTR && errno != EAGAIN)
				host_gone = 1;
		}
		if (io >= 0 && p[io].revents) {
			char chunk[CHUNK];
			ssize_t n = read(outfd, chunk, sizeof(chunk));
			if (n > 0) {
				if (!host_gone)
					frame(&outq, 'O', chunk, (size_t)n);
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				/* EOF, or EIO from a pty whose other side is all closed */
				out_done = 1;
				if (!req.tty) {
					close(outr);
					outr = -1;
				}
			}
		}
		if (ii >= 0 && (p[ii].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(infd, buf_head(&inq), buf_used(&inq));
			if (n > 0) {
				buf_consume(&inq, (size_t)n);
			} else if (n < 0 && errno != EINTR && errno != EAGAIN) {
				/* nobody reads the input any more */
				buf_consume(&inq, buf_used(&inq));
				input_ended = 1;
			}
		}
		if (is >= 0 && (p[is].revents & POLLIN)) {
			char drain[64];
			while (read(chld_pipe[0], drain, sizeof(drain)) > 0) {
			}
			int ws;
			if (waitpid(pid, &ws, WNOHANG) == pid) {
				status = ws;
				reaped = 1;
			}
		}
		if (out_done && req.tty)
			infd = -1; /* the terminal is gone */
	}
	shutdown(conn, SHUT_WR);
	_exit(0);
}

/* --- the listener ------------------------------------------------------------------ */

int rk_agent_cdp_bridge(int argc, char **argv); /* cdp_bridge.c */

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "cdp-bridge") == 0)
		return rk_agent_cdp_bridge(argc, argv);
	if (argc != 3) {
		say(2, "usage: rakazo-agent SOCKET CONTAINER-ID", "", "\n");
		return 2;
	}
	const char *path = argv[1];
	const char *container_id = argv[2];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path too long");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	signal(SIGPIPE, SIG_IGN);

	/* one agent per socket: a live one keeps the lock */
	size_t plen = strlen(path);
	char *lock = malloc(plen + 6);
	if (!lock)
		die("out of memory");
	memcpy(lock, path, plen);
	memcpy(lock + plen, ".lock", 6);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		die("cannot open the lock file");
	/* a replaced agent may take a moment to go */
	for (int i = 0;; i++) {
		if (flock(lfd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR)
			die("cannot lock");
		if (i >= 100)
			return 0; /* another agent is serving */
		usleep(10000);
	}

	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		die("cannot make a socket");
	unlink(path);
	mode_t old = umask(0177);
	int rc = bind(ls, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || listen(ls, 128) != 0)
		die("cannot listen");
	struct stat mine;
	if (stat(path, &mine) != 0)
		die("the socket vanished");

	/* let the detached exec end; the container's init adopts us */
	pid_t d = fork();
	if (d < 0)
		die("cannot fork");
	if (d > 0)
		_exit(0);
	setsid();
	listener_pid = getpid();
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	signal(SIGCHLD, SIG_IGN); /* handlers are reaped by the kernel */

	int unreachable = 0;
	for (;;) {
		struct pollfd pfd = {.fd = ls, .events = POLLIN};
		int pr = poll(&pfd, 1, SOCKET_CHECK_MS);
		if (pr == 0) {
			/* the socket removed or replaced under us (twice running, not a
			 * rename in passing): nobody can reach us, let a new agent start */
			struct stat now;
			if (stat(path, &now) != 0 || now.st_ino != mine.st_ino || now.st_dev != mine.st_dev)
				unreachable++;
			else
				unreachable = 0;
			if (unreachable >= 2)
				_exit(0);
			continue;
		}
		if (pr < 0)
			continue;
		int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
				usleep(100000);
			continue;
		}
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || (cr.uid != 0 && cr.uid != getuid())) {
			close(c);
			continue;
		}
		pid_t h = fork();
		if (h == 0) {
			close(ls);
			close(lfd);
			signal(SIGCHLD, SIG_DFL);
			serve(c, container_id);
			_exit(0);
		}
		close(c);
	}
}
