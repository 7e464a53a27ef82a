#include "engine/util/ipc.h"
#include "engine/util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

#define LINE_MAX_BYTES (64u * 1024 * 1024)

static socklen_t ipc_addr(const char *name, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "rakazo-%s", name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		n = (int)sizeof(sa->sun_path) - 2;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int rk_ipc_listen(const char *name, struct rk_error *err)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;
	socklen_t sl = ipc_addr(name, &sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) != 0 || listen(fd, 16) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return rk_error_errno(err, e == EADDRINUSE ? RK_ECONFLICT : RK_EFAILED, e, "cannot listen as %s", name);
	}
	return fd;
}

int rk_ipc_accept(int lsock)
{
	for (;;) {
		int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return -1;
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.uid == getuid())
			return c;
		close(c); /* abstract sockets have no file mode: the uid check stands in */
	}
}

static int send_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_line(int fd, struct rk_buf *line, int64_t timeout_ms)
{
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	size_t scanned = 0;
	for (;;) {
		char *nl = memchr(line->data + scanned, '\n', line->len - scanned);
		if (nl) {
			line->len = (size_t)(nl - line->data);
			line->data[line->len] = '\0';
			return 0;
		}
		scanned = line->len;
		if (line->len > LINE_MAX_BYTES)
			return -1;
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return -2;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
		if (pr <= 0)
			continue;
		char buf[65536];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		rk_buf_add(line, buf, (size_t)n);
	}
}

static int write_json_line(int fd, const cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);
	if (!text)
		return -1;
	size_t n = strlen(text);
	text[n] = '\n'; /* replaces the NUL: we send n + 1 bytes */
	int r = send_all(fd, text, n + 1);
	free(text);
	return r;
}

int rk_ipc_call(const char *name, const cJSON *req, int64_t timeout_ms, cJSON **reply, struct rk_error *err)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;
	socklen_t sl = ipc_addr(name, &sa);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl) != 0) {
		if (fd >= 0)
			close(fd);
		return rk_error_set(err, RK_ENOTFOUND, "%s is not running", name);
	}
	/* anyone may bind an abstract name first: talk only to our own uid's */
	struct ucred cred = {.uid = (uid_t)-1};
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != getuid()) {
		close(fd);
		return rk_error_set(err, RK_EDENIED,
				    "%s is held by uid %d, not by this user's rakazo: refusing to send it anything",
				    name, (int)cred.uid);
	}
	int r = 0;
	struct rk_buf b;
	rk_buf_init(&b);
	if (write_json_line(fd, req) != 0) {
		/* no newline reached it, so nothing was acted on: it is as good
		 * as not running (it was closing) */
		r = rk_error_set(err, RK_ENOTFOUND, "%s went away before the request reached it", name);
		goto out;
	}
	if (recv_line(fd, &b, timeout_ms) != 0) {
		r = rk_error_set(err, RK_EOUTCOME_UNKNOWN, "%s: no reply came back", name);
		goto out;
	}
	/* the helper's writer is cJSON: a file name's bytes pass as they are */
	*reply = rk_json_parse_opts(b.data, b.len, RK_JSON_ANY_BYTES, "reply", err);
	if (!*reply)
		r = -rk_err(err)->code;
out:
	rk_buf_release(&b);
	close(fd);
	return r;
}

cJSON *rk_ipc_read_request(int fd, int64_t timeout_ms, struct rk_error *err)
{
	struct rk_buf b;
	rk_buf_init(&b);
	cJSON *doc = NULL;
	if (recv_line(fd, &b, timeout_ms) != 0)
		rk_error_set(err, RK_EINVALID, "no whole request arrived");
	else
		doc = rk_json_parse_opts(b.data, b.len, RK_JSON_ANY_BYTES, "request", err);
	rk_buf_release(&b);
	return doc;
}

int rk_ipc_write_reply(int fd, const cJSON *reply)
{
	return write_json_line(fd, reply);
}

void rk_ipc_ready(int ready_fd, const struct rk_error *err)
{
	if (!err) {
		(void)!write(ready_fd, "ok\n", 3);
	} else {
		char *line = rk_xasprintf("%s\t%s\n", rk_code_name(err->code), err->message);
		(void)!write(ready_fd, line, strlen(line));
		free(line);
	}
	close(ready_fd);
}

int rk_ipc_spawn(rk_ipc_main_fn fn, void *arg, struct rk_error *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot make a pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return rk_error_errno(err, RK_EFAILED, e, "cannot fork");
	}
	if (pid == 0) {
		close(pfd[0]);
		setsid();
		pid_t p2 = fork();
		if (p2 != 0)
			_exit(p2 < 0 ? 1 : 0);
		int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 1);
			dup2(dn, 2);
		}
		/* keep nothing of the caller's but the ready pipe: an inherited pipe
		 * (a shell's $(...), bats' fd 3) would keep the caller waiting */
		/* the log survives as fd 4; left at its old number (closed below)
		 * it would write into whatever the helper opens there next: its
		 * database */
		int lfd = rk_log_fd() >= 0 ? fcntl(rk_log_fd(), F_DUPFD_CLOEXEC, 16) : -1;
		int ready = dup2(pfd[1], 3);
		if (lfd >= 0 && dup2(lfd, 4) == 4) {
			fcntl(4, F_SETFD, FD_CLOEXEC);
			rk_log_set_fd(4);
			close_range(5, ~0U, 0);
		} else {
			rk_log_set_fd(-1);
			close_range(4, ~0U, 0);
		}
		fcntl(ready, F_SETFD, FD_CLOEXEC); /* commands the helper starts must not hold it */
		signal(SIGPIPE, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		fn(arg, ready);
		_exit(0);
	}
	close(pfd[1]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	struct rk_buf ready;
	rk_buf_init(&ready);
	char buf[4096];
	ssize_t n;
	while ((n = rk_fs_read_fd(pfd[0], buf, sizeof(buf))) > 0 && ready.len < 65536)
		rk_buf_add(&ready, buf, (size_t)n);
	close(pfd[0]);
	int r = 0;
	if (strncmp(ready.data, "ok\n", 3) != 0) {
		char *tab = strchr(ready.data, '\t');
		if (tab) {
			*tab = '\0';
			size_t l = strlen(tab + 1);
			if (l && tab[l] == '\n')
				tab[l] = '\0';
			r = rk_error_set(err, rk_code_from_name(ready.data), "%s", tab + 1);
		} else {
			r = rk_error_set(err, RK_EFAILED, "the helper process died while starting");
		}
	}
	rk_buf_release(&ready);
	return r;
}

char *rk_base64_encode(const void *data, size_t len)
{
	size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
	char *s = rk_xmalloc(n);
	sodium_bin2base64(s, n, data, len, sodium_base64_VARIANT_ORIGINAL);
	return s;
}

int rk_base64_decode(const char *s, struct rk_buf *out)
{
	size_t sl = strlen(s), cap = sl / 4 * 3 + 3, len = 0;
	rk_buf_grow(out, cap);
	if (sodium_base642bin((unsigned char *)out->data + out->len, cap, s, sl, NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	out->len += len;
	out->data[out->len] = '\0';
	return 0;
}
