#include "providers/docker/api.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define DEFAULT_SOCKET "/var/run/docker.sock"

void rk_docker_resp_init(struct rk_docker_resp *r)
{
	r->status = 0;
	rk_buf_init(&r->body);
}

void rk_docker_resp_release(struct rk_docker_resp *r)
{
	rk_buf_release(&r->body);
	r->status = 0;
}

int rk_docker_socket_path(const char **out, struct rk_error *err)
{
	const char *host = getenv("DOCKER_HOST");
	if (!host || !*host) {
		*out = DEFAULT_SOCKET;
		return 0;
	}
	if (strncmp(host, "unix://", 7) != 0 || !host[7])
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "DOCKER_HOST=%s is not a unix socket: rakazo talks to a local docker daemon "
				    "only; unset it or set DOCKER_HOST=unix:///var/run/docker.sock",
				    host);
	*out = host + 7;
	return 0;
}

static int unavailable(struct rk_error *err, const char *sock, const char *why)
{
	rk_log(RK_LOG_WARN, "docker: cannot reach %s: %s", sock, why);
	return rk_error_set(err, RK_EUNAVAILABLE,
			    "docker is not running at %s: start it with `sh scripts/dockerd.sh` or "
			    "`sudo systemctl start docker`",
			    sock);
}

struct sink {
	int fd;
	int write_failed;
	int write_errno;
};

static int on_reply(void *ctx, const void *data, size_t len)
{
	struct sink *s = ctx;
	if (rk_fs_write_fd(s->fd, data, len) != 0) {
		s->write_failed = 1;
		s->write_errno = errno;
		return -1;
	}
	return 0;
}

static ssize_t on_upload(void *ctx, void *dst, size_t cap)
{
	int fd = *(int *)ctx;
	for (;;) {
		ssize_t r = read(fd, dst, cap);
		if (r < 0 && errno == EINTR)
			continue;
		return r;
	}
}

int rk_docker_call(const struct rk_docker_call *c, struct rk_docker_resp *resp, struct rk_error *err)
{
	const char *sock;
	int rc = rk_docker_socket_path(&sock, err);
	if (rc < 0)
		return rc;
	char *url = rk_xasprintf("http://docker%s%s", RK_DOCKER_API, c->path);
	int upload_fd = c->body_fd;
	struct sink sink = {.fd = c->reply_fd};
	long timeout = c->timeout_ms > 0 ? c->timeout_ms : RK_DOCKER_TIMEOUT_MS;
	/* POST and PUT always carry a body, empty when there is none, and with
	 * it a Content-Type */
	int with_body = c->body || strcmp(c->method, "POST") == 0 || strcmp(c->method, "PUT") == 0;
	/* the daemon's replies are the caller's to judge, and none is retried:
	 * one attempt, whatever the status; a read rides this thread's kept
	 * connection to the daemon */
	struct rk_http_request q = {
		.method = c->method,
		.url = url,
		.unix_socket = sock,
		.content_type = c->content_type,
		.body = upload_fd >= 0 ? NULL
			: with_body    ? (c->body ? c->body : "")
				       : NULL,
		.body_len = upload_fd < 0 && c->body ? c->body_len : 0,
		.body_read = upload_fd >= 0 ? on_upload : NULL,
		.body_read_ctx = &upload_fd,
		.timeout_ms = (int)timeout,
		.connect_timeout_ms = 5000,
		.mutating = c->mutating,
		.max_attempts = 1,
		.any_status = 1,
		.max_response = c->max_reply ? c->max_reply : SIZE_MAX,
		.encoding = RK_HTTP_ENCODING_NONE,
		.on_data = c->reply_fd >= 0 ? on_reply : NULL,
		.on_data_ctx = &sink,
	};
	struct rk_http_response hr;
	rk_http_response_init(&hr);
	rk_buf_reset(&resp->body);
	resp->status = 0;
	rc = rk_http_do(&q, &hr, NULL);
	if (rc == 0) {
		resp->status = hr.status;
		rk_buf_release(&resp->body);
		resp->body = hr.body;
		rk_buf_init(&hr.body);
	} else if (hr.failure == RK_HTTP_FAIL_TOO_LARGE) {
		rc = rk_error_set(err, RK_ETOOLARGE, "docker reply to %s %s exceeds %zu bytes", c->method, c->path,
				  c->max_reply);
	} else if (sink.write_failed) {
		rc = rk_error_errno(err, RK_EIO, sink.write_errno, "cannot write the docker reply to %s %s", c->method,
				    c->path);
	} else if (hr.failure == RK_HTTP_FAIL_CONNECT) {
		rc = unavailable(err, sock, hr.failure_text);
	} else if (c->mutating) {
		/* the request may have reached the daemon: never call that success */
		rc = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
				  "docker took %s %s but its reply was lost (%s): check the computer's state "
				  "before retrying",
				  c->method, c->path, hr.failure_text);
	} else if (hr.failure == RK_HTTP_FAIL_TIMEOUT) {
		rc = rk_error_set(err, RK_ETIMEOUT, "docker did not answer %s %s within %ld ms", c->method, c->path,
				  timeout);
	} else {
		rc = rk_error_set(err, RK_EUNAVAILABLE, "docker request %s %s failed: %s", c->method, c->path,
				  hr.failure_text);
	}
	if (rc < 0)
		rk_log(RK_LOG_WARN, "docker: %s %s: %s", c->method, c->path, err ? rk_err(err)->message : "failed");
	rk_http_response_release(&hr);
	free(url);
	return rc;
}

int rk_docker_json(const char *method, const char *path, const cJSON *body, int mutating, struct rk_docker_resp *resp,
		   struct rk_error *err)
{
	struct rk_buf b;
	rk_buf_init(&b);
	if (body)
		rk_json_print(&b, body);
	struct rk_docker_call c = {
		.method = method,
		.path = path,
		.body = body ? b.data : NULL,
		.body_len = b.len,
		.body_fd = -1,
		.reply_fd = -1,
		.mutating = mutating,
	};
	int rc = rk_docker_call(&c, resp, err);
	rk_buf_release(&b);
	return rc;
}

const char *rk_docker_message(const struct rk_docker_resp *resp)
{
	static const char *generic = "the docker daemon refused the request";
	const char *p = resp->body.data;
	/* {"message":"..."}: copied into a per-thread buffer so the caller needs
	 * no free; an odd body falls back to the generic text */
	static _Thread_local char msg[512];
	cJSON *doc = resp->body.len ? cJSON_ParseWithLength(p, resp->body.len) : NULL;
	const char *m = rk_json_string(doc, "message", NULL);
	if (!m) {
		cJSON_Delete(doc);
		return generic;
	}
	size_t n = strlen(m);
	if (n >= sizeof(msg))
		n = sizeof(msg) - 1;
	memcpy(msg, m, n);
	msg[n] = '\0';
	cJSON_Delete(doc);
	return msg;
}

int rk_docker_ping(struct rk_error *err)
{
	struct rk_docker_resp r;
	rk_docker_resp_init(&r);
	struct rk_docker_call c = {
		.method = "GET",
		.path = "/_ping",
		.body_fd = -1,
		.reply_fd = -1,
		.timeout_ms = 3000,
		.max_reply = 4096,
	};
	int rc = rk_docker_call(&c, &r, err);
	if (rc == 0 && r.status != 200) {
		const char *sock = DEFAULT_SOCKET;
		rk_docker_socket_path(&sock, NULL);
		rc = rk_error_set(err, RK_EUNAVAILABLE, "docker at %s answered /_ping with HTTP %ld", sock, r.status);
	} else if (rc == -RK_ETIMEOUT) {
		const char *sock = DEFAULT_SOCKET;
		rk_docker_socket_path(&sock, NULL);
		rc = unavailable(err, sock, "no answer within 3 s");
	}
	rk_docker_resp_release(&r);
	return rc;
}

/* --- the hijacked stream --------------------------------------------------- */

static int send_all(int fd, const char *p, size_t len, int64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - rk_monotonic_ms();
			if (left <= 0) {
				errno = ETIMEDOUT;
				return -1;
			}
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			poll(&pfd, 1, (int)left);
			continue;
		}
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads until the end of the header block; extra bytes stay in buf. */
static int read_header(int fd, struct rk_buf *buf, size_t *header_len, int64_t deadline)
{
	for (;;) {
		char *end = buf->len ? memmem(buf->data, buf->len, "\r\n\r\n", 4) : NULL;
		if (end) {
			*header_len = (size_t)(end - buf->data) + 4;
			return 0;
		}
		if (buf->len > 65536) {
			errno = EPROTO;
			return -1;
		}
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char chunk[4096];
		ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ECONNRESET;
			return -1;
		}
		rk_buf_add(buf, chunk, (size_t)n);
	}
}

int rk_docker_hijack(const char *path, const char *body, long timeout_ms, int *fd_out, struct rk_buf *early,
		     struct rk_error *err)
{
	const char *sock;
	int rc = rk_docker_socket_path(&sock, err);
	if (rc < 0)
		return rc;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof(sa.sun_path))
		return rk_error_set(err, RK_EINVALID, "docker socket path is too long: %s", sock);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		close(fd);
		return unavailable(err, sock, strerror(e));
	}
	int64_t deadline = rk_monotonic_ms() + (timeout_ms > 0 ? timeout_ms : RK_DOCKER_TIMEOUT_MS);
	struct rk_buf req, in;
	rk_buf_init(&req);
	rk_buf_init(&in);
	size_t blen = strlen(body);
	rk_buf_printf(&req,
		      "POST %s%s HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n"
		      "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: %zu\r\n\r\n",
		      RK_DOCKER_API, path, blen);
	rk_buf_add(&req, body, blen);
	size_t hlen = 0;
	if (send_all(fd, req.data, req.len, deadline) != 0) {
		rc = rk_error_errno(err, RK_EUNAVAILABLE, errno, "cannot send POST %s to docker", path);
		goto fail;
	}
	if (read_header(fd, &in, &hlen, deadline) != 0) {
		rc = rk_error_errno(err, errno == ETIMEDOUT ? RK_ETIMEOUT : RK_EUNAVAILABLE, errno,
				    "no reply from docker to POST %s", path);
		goto fail;
	}
	int status = 0;
	if (sscanf(in.data, "HTTP/1.%*d %d", &status) != 1) {
		rc = rk_error_set(err, RK_EFAILED, "docker sent a malformed reply to POST %s", path);
		goto fail;
	}
	if (status != 101 && status != 200) {
		/* an error reply: the JSON body follows, usually in the same read */
		struct rk_docker_resp r;
		rk_docker_resp_init(&r);
		rk_buf_add(&r.body, in.data + hlen, in.len - hlen);
		char *json = memchr(r.body.data, '{', r.body.len);
		if (json)
			rk_buf_consume(&r.body, (size_t)(json - r.body.data));
		char *close_brace = r.body.len ? memrchr(r.body.data, '}', r.body.len) : NULL;
		if (close_brace)
			r.body.len = (size_t)(close_brace - r.body.data) + 1;
		r.status = status;
		enum rk_code code = status == 404 ? RK_ENOTFOUND : status == 409 ? RK_ECONFLICT : RK_EFAILED;
		rc = rk_error_set(err, code, "docker refused POST %s (HTTP %d): %s", path, status,
				  rk_docker_message(&r));
		rk_docker_resp_release(&r);
		goto fail;
	}
	rk_buf_add(early, in.data + hlen, in.len - hlen);
	rk_buf_release(&req);
	rk_buf_release(&in);
	*fd_out = fd;
	return 0;
fail:
	rk_buf_release(&req);
	rk_buf_release(&in);
	close(fd);
	return rc;
}

char *rk_docker_urlencode(const char *s)
{
	return rk_http_escape_keeping(s, "/");
}
