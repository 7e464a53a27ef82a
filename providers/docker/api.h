#ifndef RK_DOCKER_API_H
#define RK_DOCKER_API_H
/* A small Docker Engine API client: HTTP/1.1 over the daemon's unix socket
 * (engine/util/http.h with unix_socket; a read rides the thread's kept
 * connection to the daemon), API version v1.41, plus the
 * hijacked bidirectional stream that /exec/{id}/start hands back (a raw
 * AF_UNIX socket speaking HTTP/1.1 itself, so the caller owns the fd, can
 * poll it and half-close it).
 *
 * The socket is $DOCKER_HOST when it is unix://PATH, else /var/run/docker.sock.
 * Every call has a bounded timeout; only the hijacked stream has none. */

#include <stddef.h>

#include <cJSON.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

#define RK_DOCKER_API "/v1.41"
#define RK_DOCKER_TIMEOUT_MS 30000L

struct rk_docker_call {
	const char *method;	  /* "GET", "POST", "PUT", "DELETE", "HEAD" */
	const char *path;	  /* below /v1.41, with the query: "/containers/json?all=1" */
	const char *content_type; /* default "application/json" when there is a body */
	const void *body;	  /* or NULL */
	size_t body_len;
	int body_fd;	 /* >= 0: stream the body from this fd (chunked); else body */
	long timeout_ms; /* 0: RK_DOCKER_TIMEOUT_MS */
	/* The call changes state: a reply lost after the request may have gone
	 * out is RK_EOUTCOME_UNKNOWN instead of RK_ETIMEOUT / RK_EUNAVAILABLE. */
	int mutating;
	size_t max_reply; /* 0: no limit; else a longer reply is RK_ETOOLARGE */
	int reply_fd;	  /* >= 0: write a 2xx reply body to this fd instead of resp->body */
};

struct rk_docker_resp {
	long status;	    /* HTTP status; 0 when there was no reply */
	struct rk_buf body; /* the reply body (an error reply's too) */
};

void rk_docker_resp_init(struct rk_docker_resp *r);
void rk_docker_resp_release(struct rk_docker_resp *r);

/* The daemon's socket path (points into the environment or a literal). A
 * DOCKER_HOST that is not unix:// is RK_EUNAVAILABLE. */
int rk_docker_socket_path(const char **out, struct rk_error *err);

/* One request. Returns 0 once a reply arrived, whatever its status, and a
 * negative code when there was none: RK_EUNAVAILABLE (no daemon), RK_ETIMEOUT,
 * RK_EOUTCOME_UNKNOWN (c->mutating and the request may have been taken). */
int rk_docker_call(const struct rk_docker_call *c, struct rk_docker_resp *resp, struct rk_error *err);

/* JSON convenience: body may be NULL; the reply stays in resp->body. */
int rk_docker_json(const char *method, const char *path, const cJSON *body, int mutating, struct rk_docker_resp *resp,
		   struct rk_error *err);

/* The daemon's error text from an error reply ({"message": ...}), or a
 * generic one; points into resp or a literal. */
const char *rk_docker_message(const struct rk_docker_resp *resp);

/* POSTs body (JSON) to path asking for a connection upgrade, and on 101/200
 * hands back the connected socket in *fd (the caller closes it) with the
 * stream bytes that came with the reply header appended to early. An error
 * reply is RK_ENOTFOUND (404), RK_ECONFLICT (409) or RK_EFAILED with the
 * daemon's message. The header exchange is bounded by timeout_ms. */
int rk_docker_hijack(const char *path, const char *body, long timeout_ms, int *fd, struct rk_buf *early,
		     struct rk_error *err);

/* Is the daemon there? GET /_ping with a short timeout. */
int rk_docker_ping(struct rk_error *err);

/* Percent-encodes s for a query string; malloc'd. */
char *rk_docker_urlencode(const char *s);

#endif
