#ifndef RK_HTTP_H
#define RK_HTTP_H
/* The one HTTP client (libcurl); this file's .c is the only one that
 * includes curl (scripts/layer-check.sh). It serves the remote providers
 * (JSON requests with header auth), the docker provider (HTTP over the
 * daemon's unix socket), the model protocols, secret_request and pairing:
 * timeouts, retries with exponential backoff on 429 and 5xx (Retry-After
 * honoured), vendor errors mapped to our codes, and the rule that a lost
 * reply after a mutating call is outcome_unknown, never success. A caller
 * with its own retry loop or its own wording sets max_attempts = 1 and
 * any_status, and reads resp->failure.
 *
 * Secrets travel only in req->headers; they are never logged and never put
 * into error messages (only the method, the URL's path and the vendor's own
 * message are).
 *
 * Retry policy, per attempt:
 *   - no connection made (refused, DNS): retried, then RK_EUNAVAILABLE;
 *   - 429, 503: retried after Retry-After or the backoff, for every call;
 *   - other 5xx: retried unless req->mutating, where 502 and 504 (a gateway
 *     lost the upstream reply) are RK_EOUTCOME_UNKNOWN and 500 is a failure;
 *   - reply lost after the request went out (timeout, reset, empty reply):
 *     retried for reads; RK_EOUTCOME_UNKNOWN for a mutating call;
 *   - other statuses end the call; >= 400 maps through rk_http_status_code.
 * RAKAZO_HTTP_BACKOFF_MS sets the first backoff (default 250, doubling to at
 * most 8 s), so tests can run the fault paths quickly.
 *
 * Connections: a call keeps its connection open in a handle of its thread,
 * and the thread's next call to the same server (a TCP host, or a unix
 * socket) rides it, unless no_reuse or on_data is set (a connection of its
 * own, closed after). A mutating call always opens a new connection, since
 * libcurl silently resends a request whose reused connection died. Redirects
 * are never followed. Every header copy made for libcurl is wiped before it
 * is freed (an auth header is a secret). */

#include <stddef.h>
#include <sys/types.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* How the reply body is asked for and decoded. */
enum rk_http_encoding {
	RK_HTTP_ENCODING_ANY,  /* offer every encoding libcurl decodes and decode it (the default) */
	RK_HTTP_ENCODING_NONE, /* no Accept-Encoding and no decoding: the body as sent */
	/* ask for identity, decode gzip, deflate, br or zstd when it comes so all
	 * the same, and fail any other encoding (RK_HTTP_FAIL_ENCODING): for a
	 * body that must be read as meant (redaction) */
	RK_HTTP_ENCODING_IDENTITY,
};

/* Why the final attempt got no whole reply (resp->failure), for callers that
 * word their own errors. */
enum rk_http_failure {
	RK_HTTP_FAIL_NONE,	/* a reply arrived */
	RK_HTTP_FAIL_CONNECT,	/* no connection: refused, or a name did not resolve */
	RK_HTTP_FAIL_TIMEOUT,	/* the attempt's time ran out (resp->connected says if it got that far) */
	RK_HTTP_FAIL_NETWORK,	/* the connection broke: an empty or cut reply, a send, receive or TLS error */
	RK_HTTP_FAIL_ENCODING,	/* the body came in an encoding that cannot be decoded */
	RK_HTTP_FAIL_TOO_LARGE, /* the body passed max_response */
	RK_HTTP_FAIL_STOPPED,	/* on_data, body_read or cancel stopped the transfer */
	RK_HTTP_FAIL_URL,	/* a malformed URL or a scheme other than http and https */
	RK_HTTP_FAIL_OTHER,
};

struct rk_http_request {
	const char *method; /* "GET", "POST", "PUT", "DELETE" ... */
	const char *url;
	const char *const *headers; /* "Name: value", NULL-terminated, or NULL */
	const char *content_type;   /* for the body; NULL: application/json when a body is given; a
				      * Content-Type (or Expect) in headers replaces ours */
	const void *body;	    /* NULL: none */
	size_t body_len;
	int timeout_ms;		/* the whole attempt; 0: 30000; < 0: none (streams) */
	int connect_timeout_ms; /* 0: 5000 */
	int mutating;		/* changes state and is not safe to repeat blindly */
	int max_attempts;	/* 0: 4 */
	size_t max_response;	/* 0: 64 MiB; more is RK_ETOOLARGE */
	const char *what;	/* names the call in errors ("e2b create sandbox"); NULL: the method and path */
	/* Streaming: when set, body bytes go here as they arrive instead of into
	 * resp->body, once the status is known to be 2xx. A non-zero return
	 * aborts the transfer (RK_EINTERRUPTED). Streamed calls are never
	 * retried after the first byte arrived. */
	int (*on_data)(void *ctx, const void *data, size_t len);
	void *on_data_ctx;
	/* When set and it becomes non-zero (another thread), the transfer stops
	 * within about a second (RK_EINTERRUPTED). */
	const volatile int *cancel;
	/* AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4, e.g.
	 * "aws:amz:us-east-1:s3") with userpwd "KEY_ID:SECRET"; the secret is
	 * never logged. Signed headers come from headers. */
	const char *aws_sigv4;
	const char *userpwd;
	/* HTTP over this AF_UNIX socket (the docker daemon's); the URL's host
	 * is then only a name. NULL: TCP. */
	const char *unix_socket;
	const char *user_agent; /* NULL: no User-Agent header (one in headers wins) */
	enum rk_http_encoding encoding;
	/* Every reply is the caller's to judge: 0 whatever the status (no
	 * status is retried), a negative code only when no reply came. */
	int any_status;
	/* A connection of its own, closed after the call: neither rides nor
	 * leaves the thread's kept one. */
	int no_reuse;
	/* A body over max_response is cut there (resp->truncated) and the call
	 * succeeds, instead of RK_ETOOLARGE. */
	int truncate;
	/* Every header line of the reply as it arrives (status lines too, after
	 * a 100 Continue say), CRLF included. */
	void (*on_header)(void *ctx, const char *line, size_t len);
	void *on_header_ctx;
	/* Streams the request body instead of body (chunked): returns the
	 * bytes put into dst (at most cap), 0 at the end, < 0 to abort
	 * (RK_HTTP_FAIL_STOPPED). Such a call is sent once. */
	ssize_t (*body_read)(void *ctx, void *dst, size_t cap);
	void *body_read_ctx;
};

/* One exchange that is the caller's to judge, for a caller with its own
 * retry policy and wording: sent once, on a connection of its own, every
 * status returned. In a designated initialiser:
 * struct rk_http_request q = {RK_HTTP_ONCE, .url = ...}. */
#define RK_HTTP_ONCE .max_attempts = 1, .any_status = 1, .no_reuse = 1

struct rk_http_response {
	long status;		      /* the final attempt's HTTP status (0: none) */
	struct rk_buf body;	      /* the final reply's body (also for errors) */
	char *content_type;	      /* malloc'd or NULL */
	char *etag;		      /* the ETag header, malloc'd or NULL */
	long long content_length;     /* the Content-Length header; -1: none */
	int attempts;		      /* how many requests were sent */
	enum rk_http_failure failure; /* the final attempt's; RK_HTTP_FAIL_NONE after a reply */
	const char *failure_text;     /* libcurl's words for it (static), NULL after a reply */
	int connected;		      /* the final attempt made its connection (or got a status) */
	int truncated;		      /* req->truncate cut the body */
};

void rk_http_response_init(struct rk_http_response *r);
void rk_http_response_release(struct rk_http_response *r);

/* Performs the request under the retry policy above. Returns 0 when the
 * final status is 2xx or 3xx; else a negative rk_code with err filled and
 * resp holding the last reply seen (its status and body), so callers can
 * look closer at a vendor's error (404 on delete, say). */
int rk_http_do(const struct rk_http_request *req, struct rk_http_response *resp, struct rk_error *err);

/* Our code for an HTTP error status: 400/422 invalid_argument, 401/403
 * denied, 404/410 not_found, 409 conflict, 408 timeout, 413 too_large,
 * 429/5xx unavailable, others failed. */
enum rk_code rk_http_status_code(long status);

/* The vendor's message in an error body: a JSON "message", "error" (string or
 * {"message"}) or "detail" member, else the body's first line; at most 300
 * bytes, control characters dropped. Writes into out (size >= 1). */
void rk_http_error_message(const char *body, size_t len, char *out, size_t size);

/* Seconds from a Retry-After value (delta-seconds or an HTTP date); -1 when
 * malformed. */
long rk_http_retry_after(const char *value);

/* A secret for a provider: the environment variable env_name when set and
 * not empty, else the member "<provider>": {"<key>": "..."} under
 * "providers" in the config file (RAKAZO_CONFIG, else config.json in the
 * data directory: RAKAZO_DATA_DIR, $XDG_DATA_HOME/rakazo or
 * ~/.local/share/rakazo).
 * Returns a malloc'd string or NULL. */
char *rk_http_secret(const char *env_name, const char *provider, const char *key);

/* Percent-encodes s for a query value (RFC 3986 unreserved kept); malloc'd. */
char *rk_http_escape(const char *s);
/* The same, leaving the bytes of keep as they are (docker keeps "/"). */
char *rk_http_escape_keeping(const char *s, const char *keep);

/* An absolute URL's parts as libcurl reads it (the URL a request will go
 * to), each malloc'd or NULL when absent; port is the scheme's default when
 * the URL gives none. */
struct rk_http_url {
	char *scheme, *host, *port, *user, *password, *path, *query;
};
/* 0, or -RK_EINVALID (err not filled: the caller words it) when url is not
 * a URL. u is zeroed first and released by rk_http_url_release either way. */
int rk_http_url_parse(const char *url, struct rk_http_url *u);
void rk_http_url_release(struct rk_http_url *u);

/* libcurl's version, for `rakazo doctor`. */
const char *rk_http_version(void);

/* --- the servers' side -------------------------------------------------------- */
struct sockaddr_in;
/* A listen address "ADDR:PORT" (an IPv4 address or localhost; port 0 picks
 * one) into *sa. Both servers speak plain HTTP, so an address outside
 * 127.0.0.0/8 is refused (RK_EUSAGE, naming `what` and --public) unless
 * public_ok; *loopback says which it was. */
int rk_listen_parse(const char *listen, const char *what, int public_ok, struct sockaddr_in *sa, int *loopback,
		    struct rk_error *err);

#endif
