#ifndef RK_HTTP_H
#define RK_HTTP_H
/* The remote providers' HTTP client (libcurl): JSON requests with header
 * auth, timeouts, retries with exponential backoff on 429 and 5xx (Retry-After
 * honoured), vendor errors mapped to our codes, and the rule that a lost
 * reply after a mutating call is outcome_unknown, never success.
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
 * most 8 s), so tests can run the fault paths quickly. */

#include <stddef.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

struct rk_http_request {
	const char *method;          /* "GET", "POST", "PUT", "DELETE" ... */
	const char *url;
	const char *const *headers;  /* "Name: value", NULL-terminated, or NULL */
	const char *content_type;    /* for the body; NULL: application/json when a body is given */
	const void *body;            /* NULL: none */
	size_t body_len;
	int timeout_ms;              /* the whole attempt; 0: 30000; < 0: none (streams) */
	int connect_timeout_ms;      /* 0: 5000 */
	int mutating;                /* changes state and is not safe to repeat blindly */
	int max_attempts;            /* 0: 4 */
	size_t max_response;         /* 0: 64 MiB; more is RK_ETOOLARGE */
	const char *what;            /* names the call in errors ("e2b create sandbox"); NULL: the method and path */
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
};

struct rk_http_response {
	long status;         /* the final attempt's HTTP status (0: none) */
	struct rk_buf body;  /* the final reply's body (also for errors) */
	char *content_type;  /* malloc'd or NULL */
	char *etag;          /* the ETag header, malloc'd or NULL */
	long long content_length; /* the Content-Length header; -1: none */
	int attempts;        /* how many requests were sent */
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

/* --- the servers' side -------------------------------------------------------- */
struct sockaddr_in;
/* A listen address "ADDR:PORT" (an IPv4 address or localhost; port 0 picks
 * one) into *sa. Both servers speak plain HTTP, so an address outside
 * 127.0.0.0/8 is refused (RK_EUSAGE, naming `what` and --public) unless
 * public_ok; *loopback says which it was. */
int rk_listen_parse(const char *listen, const char *what, int public_ok, struct sockaddr_in *sa, int *loopback,
		    struct rk_error *err);

#endif
