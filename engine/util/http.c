#include "engine/util/http.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/util/fs.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
/* Each thread's kept handle, cleaned up when the thread ends (a thread
 * that exits would otherwise leave its handle and connection behind). */
static pthread_key_t curl_key;

static void curl_thread_end(void *handle)
{
	curl_easy_cleanup(handle);
}

static void curl_setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_key_create(&curl_key, curl_thread_end);
}

void rk_http_response_init(struct rk_http_response *r)
{
	memset(r, 0, sizeof(*r));
	rk_buf_init(&r->body);
	r->content_length = -1;
}

void rk_http_response_release(struct rk_http_response *r)
{
	if (!r)
		return;
	rk_buf_release(&r->body);
	free(r->content_type);
	r->content_type = NULL;
	free(r->etag);
	r->etag = NULL;
}

enum rk_code rk_http_status_code(long status)
{
	switch (status) {
	case 400:
	case 422:
		return RK_EINVALID;
	case 401:
	case 403:
		return RK_EDENIED;
	case 404:
	case 410:
		return RK_ENOTFOUND;
	case 408:
		return RK_ETIMEOUT;
	case 409:
		return RK_ECONFLICT;
	case 413:
		return RK_ETOOLARGE;
	case 429:
		return RK_EUNAVAILABLE;
	}
	if (status >= 500)
		return RK_EUNAVAILABLE;
	return RK_EFAILED;
}

static void clean_copy(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && s[i] && o + 1 < size && o < 300; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' || c == '\r')
			break;
		out[o++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

void rk_http_error_message(const char *body, size_t len, char *out, size_t size)
{
	if (size == 0)
		return;
	out[0] = '\0';
	if (!body || len == 0)
		return;
	cJSON *doc = cJSON_ParseWithLength(body, len);
	const char *msg = NULL;
	if (doc) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "message");
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "detail");
		if (cJSON_IsString(m))
			msg = m->valuestring;
		else if (cJSON_IsString(e))
			msg = e->valuestring;
		else if (cJSON_IsObject(e) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")))
			msg = cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring;
		else if (cJSON_IsString(d))
			msg = d->valuestring;
	}
	if (msg)
		clean_copy(out, size, msg, strlen(msg));
	else
		clean_copy(out, size, body, len);
	cJSON_Delete(doc);
}

long rk_http_retry_after(const char *value)
{
	if (!value)
		return -1;
	while (*value == ' ' || *value == '\t')
		value++;
	if (!*value)
		return -1;
	if (isdigit((unsigned char)*value)) {
		char *end = NULL;
		long v = strtol(value, &end, 10);
		while (end && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
			end++;
		if (!end || *end || v < 0)
			return -1;
		return v;
	}
	time_t t = curl_getdate(value, NULL);
	if (t == (time_t)-1)
		return -1;
	time_t now = time(NULL);
	return t > now ? (long)(t - now) : 0;
}

char *rk_http_escape(const char *s)
{
	return rk_http_escape_keeping(s, "");
}

char *rk_http_escape_keeping(const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	struct rk_buf b;
	rk_buf_init(&b);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || (*keep && strchr(keep, *p))) {
			rk_buf_addc(&b, (char)*p);
		} else {
			rk_buf_addc(&b, '%');
			rk_buf_addc(&b, hex[*p >> 4]);
			rk_buf_addc(&b, hex[*p & 15]);
		}
	}
	return rk_buf_detach(&b, NULL);
}

static char *config_path(void)
{
	const char *c = getenv("RAKAZO_CONFIG");
	if (c && *c)
		return rk_xstrdup(c);
	const char *d = getenv("RAKAZO_DATA_DIR");
	if (d && *d)
		return rk_xasprintf("%s/config.json", d);
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && *xdg == '/')
		return rk_xasprintf("%s/rakazo/config.json", xdg);
	const char *home = getenv("HOME");
	if (home && *home)
		return rk_xasprintf("%s/.local/share/rakazo/config.json", home);
	return NULL;
}

char *rk_http_secret(const char *env_name, const char *provider, const char *key)
{
	const char *v = env_name ? getenv(env_name) : NULL;
	if (v && *v)
		return rk_xstrdup(v);
	char *path = config_path();
	if (!path)
		return NULL;
	struct rk_buf b;
	rk_buf_init(&b);
	char *out = NULL;
	if (rk_fs_exists(path) && rk_fs_read_all(path, 1 << 20, &b, NULL) == 0) {
		cJSON *doc = cJSON_ParseWithLength(b.data, b.len);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "providers"),
								  provider);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, key);
		if (cJSON_IsString(s) && *s->valuestring)
			out = rk_xstrdup(s->valuestring);
		cJSON_Delete(doc);
	}
	rk_buf_release(&b);
	free(path);
	return out;
}

/* The parts rk_http_url_parse reads, and where each goes. */
static const struct {
	CURLUPart part;
	unsigned flags;
	size_t off;
} url_parts[] = {
	{CURLUPART_SCHEME, 0, offsetof(struct rk_http_url, scheme)},
	{CURLUPART_HOST, 0, offsetof(struct rk_http_url, host)},
	{CURLUPART_PORT, CURLU_DEFAULT_PORT, offsetof(struct rk_http_url, port)},
	{CURLUPART_USER, 0, offsetof(struct rk_http_url, user)},
	{CURLUPART_PASSWORD, 0, offsetof(struct rk_http_url, password)},
	{CURLUPART_PATH, 0, offsetof(struct rk_http_url, path)},
	{CURLUPART_QUERY, 0, offsetof(struct rk_http_url, query)},
};
#define URL_PARTS (sizeof(url_parts) / sizeof(url_parts[0]))

static char **url_part(struct rk_http_url *u, size_t i)
{
	return (char **)((char *)u + url_parts[i].off);
}

int rk_http_url_parse(const char *url, struct rk_http_url *u)
{
	memset(u, 0, sizeof(*u));
	CURLU *h = curl_url();
	if (!h)
		return -RK_EINVALID;
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK) {
		curl_url_cleanup(h);
		return -RK_EINVALID;
	}
	for (size_t i = 0; i < URL_PARTS; i++) {
		char *v = NULL;
		curl_url_get(h, url_parts[i].part, &v, url_parts[i].flags);
		*url_part(u, i) = v ? rk_xstrdup(v) : NULL;
		curl_free(v);
	}
	curl_url_cleanup(h);
	return 0;
}

void rk_http_url_release(struct rk_http_url *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < URL_PARTS; i++)
		free(*url_part(u, i));
	memset(u, 0, sizeof(*u));
}

const char *rk_http_version(void)
{
	return curl_version_info(CURLVERSION_NOW)->version;
}

/* --- one attempt ---------------------------------------------------------- */

struct attempt {
	const struct rk_http_request *req;
	struct rk_http_response *resp;
	CURL *curl;
	size_t limit;
	int too_large;
	int aborted;  /* on_data, body_read or cancel asked to stop */
	int streamed; /* on_data got bytes */
	char retry_after[64];
};

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct attempt *a = ud;
	size_t len = size * n;
	if (a->req->on_data) {
		long code = 0;
		curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300) {
			a->streamed = 1;
			if (a->req->on_data(a->req->on_data_ctx, data, len) != 0) {
				a->aborted = 1;
				return 0;
			}
			return len;
		}
	}
	/* the limit is for what the caller asked for; an error reply gets room
	 * for its message */
	long st = 0;
	curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &st);
	size_t limit = st >= 400 && a->limit < 65536 ? 65536 : a->limit;
	if (a->resp->body.len + len > limit) {
		if (a->req->truncate) {
			rk_buf_add(&a->resp->body, data, limit - a->resp->body.len);
			a->resp->truncated = 1;
			return 0; /* stops the transfer */
		}
		a->too_large = 1;
		return 0;
	}
	rk_buf_add(&a->resp->body, data, len);
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct attempt *a = ud;
	size_t len = size * n;
	if (a->req->on_header)
		a->req->on_header(a->req->on_header_ctx, data, len);
	if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue, say): forget the last one's */
		a->retry_after[0] = '\0';
		free(a->resp->content_type);
		a->resp->content_type = NULL;
		free(a->resp->etag);
		a->resp->etag = NULL;
		a->resp->content_length = -1;
		rk_buf_reset(&a->resp->body);
		return len;
	}
	const char *colon = memchr(data, ':', len);
	if (!colon)
		return len;
	size_t nlen = (size_t)(colon - data);
	const char *v = colon + 1;
	size_t vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
	if (nlen == 11 && strncasecmp(data, "retry-after", 11) == 0) {
		size_t c = vlen < sizeof(a->retry_after) - 1 ? vlen : sizeof(a->retry_after) - 1;
		memcpy(a->retry_after, v, c);
		a->retry_after[c] = '\0';
	} else if (nlen == 12 && strncasecmp(data, "content-type", 12) == 0) {
		free(a->resp->content_type);
		a->resp->content_type = rk_xstrndup(v, vlen);
	} else if (nlen == 4 && strncasecmp(data, "etag", 4) == 0) {
		free(a->resp->etag);
		a->resp->etag = rk_xstrndup(v, vlen);
	} else if (nlen == 14 && strncasecmp(data, "content-length", 14) == 0) {
		char *cl = rk_xstrndup(v, vlen);
		a->resp->content_length = strtoll(cl, NULL, 10);
		free(cl);
	}
	return len;
}

static size_t on_upload(char *dst, size_t size, size_t n, void *ud)
{
	struct attempt *a = ud;
	ssize_t r = a->req->body_read(a->req->body_read_ctx, dst, size * n);
	if (r < 0) {
		a->aborted = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)r;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct attempt *a = ud;
	if (a->req->cancel && *a->req->cancel) {
		a->aborted = 1;
		return 1;
	}
	return 0;
}

/* Our sockets are not inherited by the commands we start. */
static int on_socket(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return CURL_SOCKOPT_OK;
}

static enum rk_http_failure failure_of(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return RK_HTTP_FAIL_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return RK_HTTP_FAIL_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return RK_HTTP_FAIL_TIMEOUT;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return RK_HTTP_FAIL_NETWORK;
	case CURLE_BAD_CONTENT_ENCODING:
		return RK_HTTP_FAIL_ENCODING;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return RK_HTTP_FAIL_URL;
	default:
		return RK_HTTP_FAIL_OTHER;
	}
}

/* Is there a "name:" line in the caller's headers? */
static int has_header(const char *const *headers, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; headers && headers[i]; i++)
		if (strncasecmp(headers[i], name, n) == 0 && headers[i][n] == ':')
			return 1;
	return 0;
}

/* Frees a header list after wiping it: the copies may hold a key. */
static void free_headers(struct curl_slist *hdrs)
{
	for (struct curl_slist *h = hdrs; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	curl_slist_free_all(hdrs);
}

enum outcome {
	OUT_DONE,   /* a reply: look at the status */
	OUT_UNSENT, /* no connection: nothing reached the server */
	OUT_LOST,   /* the request went out and the reply was lost */
	OUT_FATAL,  /* err is filled; stop */
};

static enum outcome attempt_once(struct attempt *a, const char *what, int *timed_out, struct rk_error *err)
{
	const struct rk_http_request *req = a->req;
	struct curl_slist *hdrs = NULL;
	/* plain calls reuse this thread's handle, and with it the open
	 * connection (a keep-alive round trip instead of a new TCP and TLS
	 * setup); streams, which run on threads of their own, take a new one */
	static __thread CURL *cached;
	static __thread pid_t cached_pid;
	/* a handle inherited across fork (a helper process) is left alone: its
	 * socket's number may belong to another file by now (the helper closes
	 * inherited descriptors and opens its database), and using or cleaning
	 * it up would write to or close that file */
	if (cached && cached_pid != getpid()) {
		cached = NULL;
		pthread_setspecific(curl_key, NULL);
	}
	int reuse = !req->on_data && !req->no_reuse;
	CURL *curl = reuse && cached ? cached : curl_easy_init();
	/* libcurl silently resends a request whose reused connection died
	 * without a reply: a mutating call never rides a reused connection, so
	 * it is sent once and a lost reply stays outcome_unknown */
	if (curl && req->mutating)
		curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
	if (!curl) {
		a->resp->failure = RK_HTTP_FAIL_OTHER;
		a->resp->failure_text = "libcurl failed to initialise";
		rk_error_set(err, RK_EFAILED, "%s: cannot start an HTTP request (libcurl failed to initialise)", what);
		return OUT_FATAL;
	}
	a->curl = curl;
	for (size_t i = 0; req->headers && req->headers[i]; i++)
		hdrs = curl_slist_append(hdrs, req->headers[i]);
	if ((req->body || req->body_read) && !has_header(req->headers, "Content-Type")) {
		char *ct = rk_xasprintf("Content-Type: %s", req->content_type ? req->content_type : "application/json");
		hdrs = curl_slist_append(hdrs, ct);
		free(ct);
	}
	if (req->body_read)
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	if (!has_header(req->headers, "Expect"))
		hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(curl, CURLOPT_URL, req->url);
	if (req->unix_socket)
		curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_SOCKOPTFUNCTION, on_socket);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
			 (long)(req->timeout_ms > 0   ? req->timeout_ms
				: req->timeout_ms < 0 ? 0
						      : 30000));
	if (req->cancel) {
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, a);
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	}
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 5000));
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req->method ? req->method : "GET");
	if (req->method && strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	if (req->body_read) {
		curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(curl, CURLOPT_READDATA, a);
	} else if (req->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (req->user_agent)
		curl_easy_setopt(curl, CURLOPT_USERAGENT, req->user_agent);
	switch (req->encoding) {
	case RK_HTTP_ENCODING_ANY:
		curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
		break;
	case RK_HTTP_ENCODING_NONE:
		break;
	case RK_HTTP_ENCODING_IDENTITY:
		/* the body as it is meant: asked for unencoded, and decoded by
		 * libcurl when it comes compressed all the same (gzip, deflate,
		 * br, zstd); any other encoding fails the call */
		curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "identity");
		curl_easy_setopt(curl, CURLOPT_HTTP_CONTENT_DECODING, 1L);
		curl_easy_setopt(curl, CURLOPT_TRANSFER_ENCODING, 1L);
		curl_easy_setopt(curl, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
		break;
	}
	if (req->aws_sigv4) {
		curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, req->aws_sigv4);
		curl_easy_setopt(curl, CURLOPT_USERPWD, req->userpwd ? req->userpwd : "");
	}

	CURLcode rc = curl_easy_perform(curl);
	long status = 0, sent = 0;
	double connect_time = 0;
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent);
	curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME, &connect_time);
	free_headers(hdrs);
	if (reuse) {
		/* the handle keeps its options (the URL, a key in userpwd) until
		 * the next reset: drop them now */
		curl_easy_reset(curl);
		cached = curl;
		cached_pid = getpid();
		pthread_setspecific(curl_key, curl);
	} else
		curl_easy_cleanup(curl);
	a->curl = NULL;
	a->resp->status = status;
	a->resp->connected = connect_time > 0 || status;
	*timed_out = rc == CURLE_OPERATION_TIMEDOUT;

	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && a->resp->truncated))
		return OUT_DONE;
	a->resp->failure = failure_of(rc);
	a->resp->failure_text = curl_easy_strerror(rc);
	if (a->too_large) {
		a->resp->failure = RK_HTTP_FAIL_TOO_LARGE;
		rk_error_set(err, RK_ETOOLARGE, "%s: the reply is over %zu bytes", what, a->limit);
		return OUT_FATAL;
	}
	if (a->aborted) {
		a->resp->failure = RK_HTTP_FAIL_STOPPED;
		rk_error_set(err, RK_EINTERRUPTED, "%s: the transfer was stopped", what);
		return OUT_FATAL;
	}
	switch (rc) {
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		rk_error_set(err, RK_EINVALID, "%s: bad URL: %s", what, curl_easy_strerror(rc));
		return OUT_FATAL;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		rk_error_set(err, RK_EUNAVAILABLE, "%s: cannot reach the server: %s", what, curl_easy_strerror(rc));
		return OUT_UNSENT;
	default:
		break;
	}
	if (sent <= 0 && status == 0) {
		rk_error_set(err, *timed_out ? RK_ETIMEOUT : RK_EUNAVAILABLE, "%s: cannot reach the server: %s", what,
			     curl_easy_strerror(rc));
		return OUT_UNSENT;
	}
	rk_error_set(err, *timed_out ? RK_ETIMEOUT : RK_EUNAVAILABLE, "%s: the reply was lost: %s", what,
		     curl_easy_strerror(rc));
	return OUT_LOST;
}

static int64_t backoff_ms(int attempt)
{
	int64_t base = 250;
	const char *e = getenv("RAKAZO_HTTP_BACKOFF_MS");
	if (e && *e) {
		long v = strtol(e, NULL, 10);
		if (v >= 0 && v <= 60000)
			base = v;
	}
	int64_t d = base;
	for (int i = 1; i < attempt && d < 8000; i++)
		d *= 2;
	return d > 8000 ? 8000 : d;
}

/* "METHOD /path" without the query, for logs and default error names. */
static char *call_name(const struct rk_http_request *req)
{
	const char *u = req->url ? req->url : "";
	const char *p = strstr(u, "://");
	p = p ? strchr(p + 3, '/') : NULL;
	if (!p)
		p = "/";
	size_t n = strcspn(p, "?#");
	return rk_xasprintf("%s %.*s", req->method ? req->method : "GET", (int)n, p);
}

int rk_http_do(const struct rk_http_request *req, struct rk_http_response *resp, struct rk_error *err)
{
	pthread_once(&curl_once, curl_setup);
	char *name = call_name(req);
	const char *what = req->what ? req->what : name;
	/* a streamed request body cannot be sent again */
	int max = req->body_read ? 1 : req->max_attempts > 0 ? req->max_attempts : 4;
	int rc = 0;
	resp->attempts = 0;
	for (int n = 1;; n++) {
		struct attempt a = {.req = req,
				    .resp = resp,
				    .limit = req->max_response ? req->max_response : 64u << 20};
		int timed_out = 0;
		rk_buf_reset(&resp->body);
		resp->status = 0;
		resp->attempts = n;
		resp->failure = RK_HTTP_FAIL_NONE;
		resp->failure_text = NULL;
		resp->connected = 0;
		resp->truncated = 0;
		enum outcome o = attempt_once(&a, what, &timed_out, err);
		int64_t delay = -1; /* >= 0: retry after it */
		if (o == OUT_FATAL) {
			rc = -rk_err(err)->code;
			break;
		}
		if (o == OUT_UNSENT) {
			rk_log(RK_LOG_DEBUG, "http: %s: %s", name, rk_err(err)->message);
			if (n < max)
				delay = backoff_ms(n);
		} else if (o == OUT_LOST) {
			rk_log(RK_LOG_WARN, "http: %s: %s", name, rk_err(err)->message);
			if (a.streamed) {
				rc = -rk_err(err)->code;
				break;
			}
			if (req->mutating) {
				rc = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
						  "%s: the reply was lost after the request was sent; it may or may not "
						  "have taken effect (check before retrying)",
						  what);
				break;
			}
			if (n < max)
				delay = backoff_ms(n);
		} else {
			long st = resp->status;
			rk_log(RK_LOG_DEBUG, "http: %s: %ld", name, st);
			if (st < 400 || req->any_status) {
				rc = 0;
				break;
			}
			char vmsg[320];
			rk_http_error_message(resp->body.data, resp->body.len, vmsg, sizeof(vmsg));
			int retryable = st == 429 || st == 503 || (st >= 500 && !req->mutating);
			if (req->mutating && (st == 502 || st == 504)) {
				rc = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
						  "%s: HTTP %ld from a gateway: the call may or may not have taken "
						  "effect (check before retrying)%s%s",
						  what, st, *vmsg ? ": " : "", vmsg);
				break;
			}
			rk_error_set(err, rk_http_status_code(st), "%s: %s (HTTP %ld)", what,
				     *vmsg ? vmsg : "the server refused the request", st);
			if (retryable && n < max) {
				long ra = rk_http_retry_after(a.retry_after[0] ? a.retry_after : NULL);
				if (ra > 60) {
					rk_error_set(err, RK_EUNAVAILABLE,
						     "%s: rate limited (HTTP %ld); the server asks to retry after %ld s",
						     what, st, ra);
					rc = -RK_EUNAVAILABLE;
					break;
				}
				delay = ra >= 0 ? ra * 1000 : backoff_ms(n);
			}
		}
		if (delay < 0) {
			rc = -rk_err(err)->code;
			break;
		}
		rk_log(RK_LOG_WARN, "http: %s: attempt %d of %d failed (%s); retrying in %lld ms", name, n, max,
		       resp->status ? "status" : "transport", (long long)delay);
		rk_sleep_ms(delay);
	}
	free(name);
	return rc;
}

int rk_listen_parse(const char *listen, const char *what, int public_ok, struct sockaddr_in *sa, int *loopback,
		    struct rk_error *err)
{
	const char *colon = strrchr(listen, ':');
	char *end = NULL;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || colon == listen || colon - listen > 63 || colon[1] == '\0' || *end || port < 0 || port > 65535)
		return rk_error_set(err, RK_EUSAGE, "--listen takes ADDR:PORT (like 127.0.0.1:7380), not '%s'", listen);
	char host[64];
	snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return rk_error_set(err, RK_EUSAGE, "--listen: '%s' is not an IPv4 address or localhost", host);
	sa->sin_port = htons((uint16_t)port);
	*loopback = (ntohl(sa->sin_addr.s_addr) >> 24) == 127;
	if (!*loopback && !public_ok)
		return rk_error_set(err, RK_EUSAGE,
				    "--listen: %s is not a loopback address; %s speaks plain HTTP without TLS, so it "
				    "listens on 127.0.0.0/8 unless --public is given (then put a TLS proxy in front)",
				    host, what);
	return 0;
}
