/* The e2b provider: computers as E2B sandboxes, through the vendor's HTTP
 * APIs (engine/util/http.c).
 *
 *   control plane  E2B_API_URL (default https://api.$E2B_DOMAIN), X-API-Key:
 *                  POST /v2/sandboxes, GET /v2/sandboxes, GET/DELETE
 *                  /sandboxes/{id}, POST /sandboxes/{id}/{pause,timeout},
 *                  POST /v2/sandboxes/{id}/connect
 *   envd           the daemon inside the sandbox: E2B_SANDBOX_URL when set
 *                  (then E2b-Sandbox-Id names the sandbox, as the SDK sends
 *                  it), else https://49983-<id>.<domain>; X-Access-Token from
 *                  create/connect. Connect RPC with the JSON codec for
 *                  processes (process.Process: Start streams, SendInput,
 *                  CloseStdin, SendSignal, Update) and the filesystem
 *                  (filesystem.Filesystem: ListDir, Remove), REST /files for
 *                  reading and writing.
 *
 * The ref is the sandbox id. DATA_DIR/run/<computer>/e2b.json (0600) keeps
 * the sandbox's envd token and domain, and whether we stopped it (a stop is
 * a pause without memory: E2B has no stopped state of its own). The API key
 * is never logged, never written there and never passed into the sandbox.
 *
 * Desktop: screen 0 is the vendor's primary display :0, started, observed
 * and acted on with the commands the @e2b/desktop SDK runs (Xvfb, the
 * session, scrot, xdotool); its password-protected noVNC live-view URL is
 * rewritten to DATA_DIR/run/<computer>/e2b-live-view-url whenever the screen
 * starts. Team screens i >= 1 are Xvfb :(i+1) with their own x11vnc (view
 * port 5900+2i, control 5901+2i) and noVNC (view 6080+2i, control 6081+2i). */

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/tar.h"
#include "engine/util/time.h"
#include "providers/provider.h"
#include "providers/remote.h"

#define WORKSPACE "/home/user/rakazo-home"
#define ENVD_PORT 49983
#define SCREENS_MAX 8 /* Team screens per sandbox, as the reference allows */
#define TOUCH_EVERY_MS 60000

/* --- configuration ------------------------------------------------------------ */

struct conf {
	char *key;
	char *api_url; /* no trailing slash */
	char *domain;
	char *sandbox_url; /* envd for every sandbox, or NULL */
	char *template_id;
	int timeout_s;
};

static void conf_release(struct conf *c)
{
	free(c->key);
	free(c->api_url);
	free(c->domain);
	free(c->sandbox_url);
	free(c->template_id);
	memset(c, 0, sizeof(*c));
}

static char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return rk_xstrdup(v && *v ? v : def);
}

static char *strip_slash(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

static int conf_load(const struct rk_machine *m, struct conf *c, struct rk_error *err)
{
	memset(c, 0, sizeof(*c));
	c->key = rk_http_secret("E2B_API_KEY", "e2b", "api_key");
	if (!c->key)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "e2b: no API key: set E2B_API_KEY or providers.e2b.api_key in the config file");
	c->domain = env_or("E2B_DOMAIN", "e2b.app");
	const char *api = getenv("E2B_API_URL");
	c->api_url = strip_slash(api && *api ? rk_xstrdup(api) : rk_xasprintf("https://api.%s", c->domain));
	const char *sb = getenv("E2B_SANDBOX_URL");
	c->sandbox_url = sb && *sb ? strip_slash(rk_xstrdup(sb)) : NULL;
	c->template_id = env_or("E2B_TEMPLATE", "desktop");
	const char *t = getenv("RAKAZO_E2B_TIMEOUT_S");
	c->timeout_s = t && atoi(t) >= 30 && atoi(t) <= 86400 ? atoi(t) : 600;
	/* per-computer options win: {"template": "...", "timeout_s": N} */
	if (m && m->options_json) {
		cJSON *o = cJSON_Parse(m->options_json);
		const cJSON *tp = cJSON_GetObjectItemCaseSensitive(o, "template");
		const cJSON *to = cJSON_GetObjectItemCaseSensitive(o, "timeout_s");
		if (cJSON_IsString(tp) && *tp->valuestring) {
			free(c->template_id);
			c->template_id = rk_xstrdup(tp->valuestring);
		}
		if (cJSON_IsNumber(to) && to->valuedouble >= 30 && to->valuedouble <= 86400)
			c->timeout_s = (int)to->valuedouble;
		cJSON_Delete(o);
	}
	return 0;
}

/* --- the control plane ---------------------------------------------------------- */

/* One control-plane call. *out (may be NULL) gets the parsed reply when it
 * has a JSON body; *status the final HTTP status. */
static int api(const struct conf *c, const char *method, const char *path, const cJSON *body, int mutating,
	       const char *what, cJSON **out, long *status, struct rk_error *err)
{
	char *url = rk_xasprintf("%s%s", c->api_url, path);
	char *auth = rk_xasprintf("X-API-Key: %s", c->key);
	const char *hdrs[] = {auth, "Accept: application/json", "User-Agent: rakazo/" RK_VERSION, NULL};
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct rk_http_request q = {
		.method = method,
		.url = url,
		.headers = hdrs,
		.body = text,
		.body_len = text ? strlen(text) : 0,
		.mutating = mutating,
		.what = what,
		.timeout_ms = 60000,
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&q, &r, err);
	if (status)
		*status = r.status;
	if (out)
		*out = NULL;
	if (rc == 0 && out && r.body.len > 0) {
		*out = rk_json_parse(r.body.data, r.body.len, what, err);
		if (!*out)
			rc = rk_error_prefix(err, "e2b: unexpected reply");
	}
	rk_http_response_release(&r);
	free(text);
	rk_free_secret(&auth);
	free(url);
	return rc;
}

/* --- the sandbox handle ---------------------------------------------------------- */

struct sandbox {
	char *id;
	char *token;  /* envd access token, or NULL when the sandbox has none */
	char *domain; /* the sandbox's domain, or NULL for the configured one */
	int stopped;  /* we stopped (not paused) it */
	int64_t touched_ms;
};

static void sandbox_release(struct sandbox *s)
{
	free(s->id);
	rk_free_secret(&s->token);
	free(s->domain);
	memset(s, 0, sizeof(*s));
}

static char *state_path(const struct rk_machine *m, const char *name)
{
	return rk_path_join(m->run_dir, name);
}

static int sandbox_save(const struct rk_machine *m, const struct sandbox *s, struct rk_error *err)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->id);
	rk_json_add_str_or_null(o, "envd_access_token", s->token);
	rk_json_add_str_or_null(o, "domain", s->domain);
	cJSON_AddBoolToObject(o, "stopped", s->stopped);
	cJSON_AddNumberToObject(o, "touched_ms", (double)s->touched_ms);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	int rc = rk_fs_mkdirs(m->run_dir, 0700, err);
	char *p = state_path(m, "e2b.json");
	if (rc == 0)
		rc = rk_fs_write_atomic(p, text, strlen(text), 0600, err);
	free(p);
	rk_free_secret(&text);
	return rc;
}

/* What e2b.json says about sandbox id (any, when id is NULL); 0 when it is
 * about another or missing. */
static int sandbox_load(const struct rk_machine *m, const char *id, struct sandbox *s)
{
	memset(s, 0, sizeof(*s));
	char *p = state_path(m, "e2b.json");
	struct rk_buf b;
	rk_buf_init(&b);
	int ok = 0;
	if (rk_fs_exists(p) && rk_fs_read_all(p, 65536, &b, NULL) == 0) {
		cJSON *o = cJSON_ParseWithLength(b.data, b.len);
		const char *sid = rk_json_string(o, "id", NULL);
		if (sid && (!id || strcmp(sid, id) == 0)) {
			s->id = rk_xstrdup(sid);
			s->token = rk_xstrdup(rk_json_string(o, "envd_access_token", NULL));
			s->domain = rk_xstrdup(rk_json_string(o, "domain", NULL));
			s->stopped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stopped"));
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "touched_ms");
			s->touched_ms = cJSON_IsNumber(t) ? (int64_t)t->valuedouble : 0;
			ok = 1;
		}
		cJSON_Delete(o);
	}
	rk_buf_release(&b);
	free(p);
	return ok;
}

static void sandbox_forget(const struct rk_machine *m)
{
	char *p = state_path(m, "e2b.json");
	unlink(p);
	free(p);
}

/* Takes id, token and domain from a create or connect reply. */
static int sandbox_from_reply(const cJSON *r, struct sandbox *s, struct rk_error *err)
{
	const char *id = rk_json_string(r, "sandboxID", NULL);
	if (!id || !*id)
		return rk_error_set(err, RK_EFAILED, "e2b: the reply names no sandboxID");
	free(s->id);
	free(s->token);
	free(s->domain);
	s->id = rk_xstrdup(id);
	s->token = rk_xstrdup(rk_json_string(r, "envdAccessToken", NULL));
	const char *d = rk_json_string(r, "domain", NULL);
	s->domain = d && *d ? rk_xstrdup(d) : NULL;
	s->touched_ms = rk_now_ms();
	return 0;
}

/* The sandbox's state: "running", "paused", or NULL when it is gone. */
static int remote_state(const struct conf *c, const char *id, char **state, struct rk_error *err)
{
	*state = NULL;
	char *enc = rk_http_escape(id);
	char *path = rk_xasprintf("/sandboxes/%s", enc);
	cJSON *r = NULL;
	long st = 0;
	int rc = api(c, "GET", path, NULL, 0, "e2b get sandbox", &r, &st, err);
	if (rc == -RK_ENOTFOUND) {
		rc = 0;
	} else if (rc == 0) {
		const char *s = rk_json_string(r, "state", "running");
		*state = rk_xstrdup(s);
	}
	cJSON_Delete(r);
	free(path);
	free(enc);
	return rc;
}

/* POST /v2/sandboxes/{id}/connect: resumes a paused sandbox, refreshes its
 * timeout and hands back the envd token. */
static int sandbox_connect(const struct conf *c, const struct rk_machine *m, struct sandbox *s, struct rk_error *err)
{
	char *enc = rk_http_escape(s->id);
	char *path = rk_xasprintf("/v2/sandboxes/%s/connect", enc);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "timeout", c->timeout_s);
	cJSON *r = NULL;
	/* connect is idempotent: a lost reply is safe to repeat */
	int rc = api(c, "POST", path, body, 0, "e2b connect sandbox", &r, NULL, err);
	if (rc == 0)
		rc = sandbox_from_reply(r, s, err);
	if (rc == 0) {
		s->stopped = 0;
		rc = sandbox_save(m, s, err);
	}
	cJSON_Delete(r);
	cJSON_Delete(body);
	free(path);
	free(enc);
	return rc;
}

/* POST /sandboxes/{id}/timeout: keeps a running sandbox's timeout ahead of
 * use. Fails for a paused one. */
static int set_timeout(const struct conf *c, const struct rk_machine *m, struct sandbox *s)
{
	char *enc = rk_http_escape(s->id);
	char *path = rk_xasprintf("/sandboxes/%s/timeout", enc);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "timeout", c->timeout_s);
	struct rk_error e;
	int rc = api(c, "POST", path, body, 0, "e2b set timeout", NULL, NULL, &e);
	if (rc == 0) {
		s->touched_ms = rk_now_ms();
		sandbox_save(m, s, &e);
	} else {
		rk_log(RK_LOG_INFO, "e2b: cannot push the timeout of %s ahead (%s); connecting", s->id, e.message);
	}
	cJSON_Delete(body);
	free(path);
	free(enc);
	return rc;
}

static int find_by_metadata(const struct conf *c, const struct rk_machine *m, char **id, struct rk_error *err);

/* The sandbox id of m: its ref, else the one e2b.json holds, else one made
 * for this computer found by metadata (a create whose reply was lost and
 * was decided succeeded). NULL when there is none. */
static int resolve_id(const struct conf *c, const struct rk_machine *m, char **id, struct rk_error *err)
{
	*id = NULL;
	if (m->ref && *m->ref) {
		*id = rk_xstrdup(m->ref);
		return 0;
	}
	struct sandbox s;
	if (sandbox_load(m, NULL, &s)) {
		*id = s.id;
		s.id = NULL;
		sandbox_release(&s);
		return 0;
	}
	return find_by_metadata(c, m, id, err);
}

/* The sandbox of m, running, with its token (connecting when we hold none). */
static int sandbox_of(const struct conf *c, const struct rk_machine *m, struct sandbox *s, struct rk_error *err)
{
	char *id = NULL;
	int rc = resolve_id(c, m, &id, err);
	if (rc)
		return rc;
	if (!id)
		return rk_error_set(err, RK_ENOTFOUND, "the computer has no e2b sandbox yet: provision it first");
	if (sandbox_load(m, id, s) && !s->stopped) {
		free(id);
		/* in use: the timeout is pushed ahead at most once a minute; a
		 * sandbox its timeout paused meanwhile is resumed by connect */
		if (rk_now_ms() - s->touched_ms < TOUCH_EVERY_MS || set_timeout(c, m, s) == 0)
			return 0;
		return sandbox_connect(c, m, s, err);
	}
	sandbox_release(s);
	s->id = id;
	return sandbox_connect(c, m, s, err);
}

/* --- envd --------------------------------------------------------------------------- */

struct envd {
	char *base; /* envd base URL */
	char *id, *token;
	char *hdr_token, *hdr_id;
	const char *headers[7];
};

static void envd_init_at(struct envd *e, const char *base, const char *id, const char *token)
{
	memset(e, 0, sizeof(*e));
	e->base = rk_xstrdup(base);
	e->id = rk_xstrdup(id);
	e->token = rk_xstrdup(token);
	e->hdr_token = token ? rk_xasprintf("X-Access-Token: %s", token) : NULL;
	e->hdr_id = rk_xasprintf("E2b-Sandbox-Id: %s", id);
	size_t i = 0;
	e->headers[i++] = e->hdr_id;
	e->headers[i++] = "E2b-Sandbox-Port: 49983";
	e->headers[i++] = "Connect-Protocol-Version: 1";
	e->headers[i++] = "User-Agent: rakazo/" RK_VERSION;
	if (e->hdr_token)
		e->headers[i++] = e->hdr_token;
	e->headers[i] = NULL;
}

static void envd_init(struct envd *e, const struct conf *c, const struct sandbox *s)
{
	char *base = c->sandbox_url
			     ? rk_xstrdup(c->sandbox_url)
			     : rk_xasprintf("https://%d-%s.%s", ENVD_PORT, s->id, s->domain ? s->domain : c->domain);
	envd_init_at(e, base, s->id, s->token);
	free(base);
}

static void envd_release(struct envd *e)
{
	free(e->base);
	rk_free_secret(&e->hdr_token);
	free(e->hdr_id);
	free(e->id);
	rk_free_secret(&e->token);
	memset(e, 0, sizeof(*e));
}

/* A unary Connect call with the JSON codec: /<service>/<method>. */
static int rpc(const struct envd *e, const char *method, const cJSON *req, int mutating, cJSON **out,
	       struct rk_error *err)
{
	char *url = rk_xasprintf("%s/%s", e->base, method);
	char *text = cJSON_PrintUnformatted(req);
	char *what = rk_xasprintf("e2b envd %s", method);
	struct rk_http_request q = {
		.method = "POST",
		.url = url,
		.headers = e->headers,
		.content_type = "application/json",
		.body = text,
		.body_len = strlen(text),
		.mutating = mutating,
		.what = what,
		.timeout_ms = 60000,
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&q, &r, err);
	if (out)
		*out = NULL;
	if (rc == 0 && out)
		*out = rk_json_parse(r.body.len ? r.body.data : "{}", r.body.len ? r.body.len : 2, what, err);
	if (rc == 0 && out && !*out)
		rc = -RK_EFAILED;
	rk_http_response_release(&r);
	free(what);
	free(text);
	free(url);
	return rc;
}

static cJSON *selector(uint32_t pid)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *p = cJSON_AddObjectToObject(o, "process");
	cJSON_AddNumberToObject(p, "pid", pid);
	return o;
}

static char *b64(const void *data, size_t len)
{
	size_t n = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *out = rk_xmalloc(n);
	sodium_bin2base64(out, n, data, len, sodium_base64_VARIANT_ORIGINAL);
	return out;
}

static int unb64(const char *s, struct rk_buf *out)
{
	size_t n = strlen(s);
	size_t cap = n / 4 * 3 + 3, len = 0;
	rk_buf_grow(out, cap);
	if (sodium_base642bin((unsigned char *)out->data + out->len, cap, s, n, "\r\n", &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	out->len += len;
	out->data[out->len] = '\0';
	return 0;
}

/* --- processes ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	int signo;
} signal_names[] = {
	{"hangup", SIGHUP},
	{"interrupt", SIGINT},
	{"quit", SIGQUIT},
	{"aborted", SIGABRT},
	{"killed", SIGKILL},
	{"broken pipe", SIGPIPE},
	{"alarm clock", SIGALRM},
	{"terminated", SIGTERM},
	{"user defined signal 1", SIGUSR1},
	{"user defined signal 2", SIGUSR2},
};

struct eproc {
	struct rk_proc base;
	struct envd e;
	int tty;
	int split;     /* stderr kept apart (for our own commands) */
	char *request; /* the enveloped StartRequest */
	size_t request_len;
	pthread_t thread;
	int thread_started;
	int wake[2]; /* the thread writes a byte when there is news */
	volatile int cancel;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct rk_buf out, errout;
	uint32_t pid;
	int have_pid, ended, done, lost;
	struct rk_exit_status st;
	struct rk_error terr;
	int trc;
	/* the thread's own */
	struct rk_buf env;
};

static void wake(struct eproc *p)
{
	char c = 1;
	(void)!write(p->wake[1], &c, 1);
}

/* One message of the Start stream, under p->lock. */
static void on_message(struct eproc *p, int flags, const char *text, size_t len)
{
	struct rk_error why;
	cJSON *m = rk_json_parse(text, len, "e2b envd: a process event", &why);
	if (!m) {
		p->trc = rk_error_set(&p->terr, RK_EFAILED, "%s", why.message);
		return;
	}
	if (flags & 2) { /* end of stream: {} or {"error": {...}} */
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "error");
		if (cJSON_IsObject(e) && !p->ended) {
			const char *code = rk_json_string(e, "code", "unknown");
			const char *msg = rk_json_string(e, "message", "");
			enum rk_code rc = !strcmp(code, "not_found")	      ? RK_ENOTFOUND
					  : !strcmp(code, "invalid_argument") ? RK_EINVALID
					  : !strcmp(code, "permission_denied") || !strcmp(code, "unauthenticated")
						  ? RK_EDENIED
						  : RK_EUNAVAILABLE;
			p->trc = rk_error_set(&p->terr, rc, "e2b envd: the command failed: %s: %s", code, msg);
		}
		cJSON_Delete(m);
		return;
	}
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(m, "event");
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(ev, "start");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data");
	const cJSON *end = cJSON_GetObjectItemCaseSensitive(ev, "end");
	if (start) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(start, "pid");
		p->pid = cJSON_IsNumber(pid) ? (uint32_t)pid->valuedouble : 0;
		p->have_pid = 1;
		pthread_cond_broadcast(&p->cond);
	} else if (data) {
		/* one of the output fields: stderr, or the command's output or pty bytes */
		const cJSON *f;
		cJSON_ArrayForEach(f, data)
		{
			if (!cJSON_IsString(f) || !f->string)
				continue;
			int is_err = strcmp(f->string, "stderr") == 0;
			unb64(f->valuestring, is_err && p->split ? &p->errout : &p->out);
		}
	} else if (end) {
		int exited = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(end, "exited"));
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(end, "exitCode");
		const char *status = rk_json_string(end, "status", "");
		memset(&p->st, 0, sizeof(p->st));
		p->st.exited = 1;
		if (!strncmp(status, "signal: ", 8)) {
			for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
				if (!strcmp(status + 8, signal_names[i].name))
					p->st.signo = signal_names[i].signo;
			if (!p->st.signo)
				p->st.signo = SIGKILL;
		} else {
			p->st.code = cJSON_IsNumber(code) ? (int)code->valuedouble : (exited ? 0 : 1);
		}
		p->ended = 1;
	}
	cJSON_Delete(m);
}

static int on_stream(void *ctx, const void *data, size_t len)
{
	struct eproc *p = ctx;
	rk_buf_add(&p->env, data, len);
	pthread_mutex_lock(&p->lock);
	while (p->env.len >= 5) {
		const unsigned char *h = (const unsigned char *)p->env.data;
		size_t n = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
		if (n > (64u << 20)) {
			p->trc = rk_error_set(&p->terr, RK_EFAILED, "e2b envd: a process event of %zu bytes", n);
			pthread_mutex_unlock(&p->lock);
			return 1;
		}
		if (p->env.len < 5 + n)
			break;
		on_message(p, h[0], p->env.data + 5, n);
		rk_buf_consume(&p->env, 5 + n);
	}
	pthread_mutex_unlock(&p->lock);
	wake(p);
	return p->cancel;
}

static void *stream_main(void *arg)
{
	struct eproc *p = arg;
	char *url = rk_xasprintf("%s/process.Process/Start", p->e.base);
	struct rk_http_request q = {
		.method = "POST",
		.url = url,
		.headers = p->e.headers,
		.content_type = "application/connect+json",
		.body = p->request,
		.body_len = p->request_len,
		.mutating = 1,
		.timeout_ms = -1,
		.what = "e2b envd process.Process/Start",
		.on_data = on_stream,
		.on_data_ctx = p,
		.cancel = &p->cancel,
	};
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	int rc = rk_http_do(&q, &r, &e);
	pthread_mutex_lock(&p->lock);
	if (rc != 0 && !p->trc && !p->ended) {
		p->trc = rc;
		p->terr = e;
	}
	if (!p->ended)
		p->lost = 1;
	p->done = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	wake(p);
	rk_http_response_release(&r);
	free(url);
	return NULL;
}

static const struct rk_proc_ops eproc_ops;

static void eproc_destroy(struct eproc *p)
{
	if (p->thread_started) {
		p->cancel = 1;
		pthread_join(p->thread, NULL);
	}
	envd_release(&p->e);
	free(p->request);
	rk_buf_release(&p->out);
	rk_buf_release(&p->errout);
	rk_buf_release(&p->env);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

/* Starts `cmd args...` in the sandbox behind envd e and waits for its pid. */
static int eproc_start_at(const struct envd *e, const char *const *argv, const struct rk_exec_request *req, int split,
			  struct eproc **out, struct rk_error *err)
{
	struct eproc *p = rk_xcalloc(1, sizeof(*p));
	p->base.ops = &eproc_ops;
	p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	rk_buf_init(&p->out);
	rk_buf_init(&p->errout);
	rk_buf_init(&p->env);
	p->split = split;
	p->tty = req && req->tty;
	envd_init_at(&p->e, e->base, e->id, e->token);
	if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		int rc = rk_error_errno(err, RK_EIO, errno, "cannot make a pipe");
		eproc_destroy(p);
		return rc;
	}
	cJSON *body = cJSON_CreateObject();
	cJSON *proc = cJSON_AddObjectToObject(body, "process");
	cJSON_AddStringToObject(proc, "cmd", argv[0]);
	cJSON *args = cJSON_AddArrayToObject(proc, "args");
	for (size_t i = 1; argv[i]; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(argv[i]));
	cJSON *envs = cJSON_AddObjectToObject(proc, "envs");
	for (size_t i = 0; req && req->env && req->env[i]; i++) {
		const char *eq = strchr(req->env[i], '=');
		char *k = rk_xstrndup(req->env[i], (size_t)(eq - req->env[i]));
		cJSON_AddStringToObject(envs, k, eq + 1);
		free(k);
	}
	const char *cwd = req && req->cwd ? req->cwd : "";
	char *cwd_full = cwd[0] == '/' ? rk_xstrdup(cwd)
			 : *cwd	       ? rk_xasprintf("%s/%s", WORKSPACE, cwd)
				       : rk_xstrdup(WORKSPACE);
	cJSON_AddStringToObject(proc, "cwd", cwd_full);
	free(cwd_full);
	if (p->tty) {
		cJSON *size = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "pty"), "size");
		cJSON_AddNumberToObject(size, "cols", req->cols > 0 ? req->cols : 80);
		cJSON_AddNumberToObject(size, "rows", req->rows > 0 ? req->rows : 24);
	}
	cJSON_AddBoolToObject(body, "stdin", 1);
	char *text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	size_t n = strlen(text);
	p->request = rk_xmalloc(n + 5);
	p->request[0] = 0;
	p->request[1] = (char)(n >> 24);
	p->request[2] = (char)(n >> 16);
	p->request[3] = (char)(n >> 8);
	p->request[4] = (char)n;
	memcpy(p->request + 5, text, n);
	p->request_len = n + 5;
	free(text);
	if (pthread_create(&p->thread, NULL, stream_main, p) != 0) {
		int rc = rk_error_set(err, RK_EFAILED, "cannot start a thread for the command's stream");
		eproc_destroy(p);
		return rc;
	}
	p->thread_started = 1;
	pthread_mutex_lock(&p->lock);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 120;
	while (!p->have_pid && !p->done)
		if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT)
			break;
	int have = p->have_pid, rc = 0;
	if (!have) {
		if (p->trc)
			rc = -p->terr.code, *err = p->terr;
		else if (p->done)
			rc = rk_error_set(err, RK_EFAILED, "e2b envd: the command's stream ended before it started");
		else
			rc = rk_error_set(err, RK_ETIMEOUT, "e2b envd: the command did not start within 120 s");
	}
	pthread_mutex_unlock(&p->lock);
	if (rc) {
		eproc_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

static int eproc_start(const struct conf *c, const struct sandbox *s, const char *const *argv,
		       const struct rk_exec_request *req, int split, struct eproc **out, struct rk_error *err)
{
	struct envd e;
	envd_init(&e, c, s);
	int rc = eproc_start_at(&e, argv, req, split, out, err);
	envd_release(&e);
	return rc;
}

static int eproc_poll_fd(struct rk_proc *base)
{
	return ((struct eproc *)base)->wake[0];
}

static int eproc_read(struct rk_proc *base, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	char drain[256];
	while (read(p->wake[0], drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&p->lock);
	rk_buf_add(out, p->out.data, p->out.len);
	rk_buf_reset(&p->out);
	*eof = p->done;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int eproc_call(struct eproc *p, const char *method, cJSON *req, struct rk_error *err)
{
	int rc = rpc(&p->e, method, req, 0, NULL, err);
	cJSON_Delete(req);
	return rc;
}

static int eproc_write(struct rk_proc *base, const void *data, size_t len, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	const char *d = data;
	while (len > 0) {
		size_t n = len > 65536 ? 65536 : len;
		cJSON *req = selector(p->pid);
		char *enc = b64(d, n);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "input"), p->tty ? "pty" : "stdin", enc);
		free(enc);
		/* not repeated blindly: input twice is not input once */
		int rc = rpc(&p->e, "process.Process/SendInput", req, 1, NULL, err);
		cJSON_Delete(req);
		if (rc)
			return rc;
		d += n;
		len -= n;
	}
	return 0;
}

static int eproc_close_stdin(struct rk_proc *base, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	if (p->tty)
		return eproc_write(base, "\x04", 1, err);
	return eproc_call(p, "process.Process/CloseStdin", selector(p->pid), err);
}

static int eproc_signal(struct rk_proc *base, int signo, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	if (signo == SIGTERM || signo == SIGKILL) {
		cJSON *req = selector(p->pid);
		cJSON_AddStringToObject(req, "signal", signo == SIGTERM ? "SIGNAL_SIGTERM" : "SIGNAL_SIGKILL");
		return eproc_call(p, "process.Process/SendSignal", req, err);
	}
	/* envd sends only TERM and KILL: the rest through kill(1), to the
	 * group when the command leads one */
	if (signo <= 0 || signo >= 65)
		return rk_error_set(err, RK_EINVALID, "signal %d is out of range", signo);
	char *script = rk_xasprintf("kill -s %d -- -%u 2>/dev/null || kill -s %d %u", signo, p->pid, signo, p->pid);
	/* the helper runs over the same envd as the command */
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct rk_exec_request req = {.command = script, .cwd = "/"};
	struct eproc *k = NULL;
	int rc = eproc_start_at(&p->e, argv, &req, 1, &k, err);
	if (rc == 0) {
		pthread_join(k->thread, NULL);
		k->thread_started = 0;
		if (k->trc && !k->ended)
			rc = -k->terr.code, *err = k->terr;
		else if (!k->ended)
			rc = rk_error_set(err, RK_EUNAVAILABLE, "e2b: the signal helper's stream was lost");
		else if (k->st.code != 0 || k->st.signo)
			rc = rk_error_set(err, RK_EFAILED, "cannot signal process %u: %.300s", p->pid, k->errout.data);
		eproc_destroy(k);
	}
	free(script);
	return rc;
}

static int eproc_resize(struct rk_proc *base, int rows, int cols, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	if (!p->tty)
		return 0;
	cJSON *req = selector(p->pid);
	cJSON *size = cJSON_AddObjectToObject(cJSON_AddObjectToObject(req, "pty"), "size");
	cJSON_AddNumberToObject(size, "cols", cols);
	cJSON_AddNumberToObject(size, "rows", rows);
	return eproc_call(p, "process.Process/Update", req, err);
}

static int eproc_wait(struct rk_proc *base, struct rk_exit_status *st, struct rk_error *err)
{
	struct eproc *p = (struct eproc *)base;
	if (p->thread_started) {
		pthread_join(p->thread, NULL);
		p->thread_started = 0;
	}
	memset(st, 0, sizeof(*st));
	if (p->ended) {
		*st = p->st;
		return 0;
	}
	if (p->trc && p->terr.code != RK_EUNAVAILABLE && p->terr.code != RK_ETIMEOUT) {
		*err = p->terr;
		return -p->terr.code;
	}
	st->lost = 1;
	return 0;
}

static void eproc_free(struct rk_proc *base)
{
	if (base)
		eproc_destroy((struct eproc *)base);
}

static const struct rk_proc_ops eproc_ops = {
	.poll_fd = eproc_poll_fd,
	.read = eproc_read,
	.write = eproc_write,
	.close_stdin = eproc_close_stdin,
	.signal = eproc_signal,
	.resize = eproc_resize,
	.wait = eproc_wait,
	.free = eproc_free,
};

/* Runs `sh -c script` to its end: stdout (bounded) and stderr apart. */
static int run_capture(const struct conf *c, const struct sandbox *s, const char *script, const char *const *env,
		       size_t max_out, struct rk_buf *out, struct rk_buf *errout, struct rk_exit_status *st,
		       struct rk_error *err)
{
	const char *argv[] = {"/bin/bash", "-c", script, NULL};
	struct rk_exec_request req = {.command = script, .env = env, .cwd = "/"};
	struct eproc *p = NULL;
	int rc = eproc_start(c, s, argv, &req, 1, &p, err);
	if (rc)
		return rc;
	pthread_join(p->thread, NULL);
	p->thread_started = 0;
	if (p->ended) {
		*st = p->st;
		if (out && p->out.len > max_out)
			rc = rk_error_set(err, RK_ETOOLARGE, "e2b: the command's output is over %zu bytes", max_out);
		else if (out)
			rk_buf_add(out, p->out.data, p->out.len);
		if (errout)
			rk_buf_add(errout, p->errout.data, p->errout.len);
	} else if (p->trc) {
		rc = -p->terr.code;
		*err = p->terr;
	} else {
		rc = rk_error_set(err, RK_EUNAVAILABLE, "e2b: the command's stream ended before the command did");
	}
	eproc_destroy(p);
	return rc;
}

/* run_capture that wants exit status 0. */
static int run_ok(const struct conf *c, const struct sandbox *s, const char *script, const char *what,
		  struct rk_buf *out, struct rk_error *err)
{
	struct rk_buf eo;
	struct rk_exit_status st = {0};
	rk_buf_init(&eo);
	int rc = run_capture(c, s, script, NULL, 1 << 20, out, &eo, &st, err);
	if (rc == 0 && (st.signo || st.code != 0)) {
		while (eo.len && (eo.data[eo.len - 1] == '\n' || eo.data[eo.len - 1] == '\r'))
			eo.data[--eo.len] = '\0';
		rc = rk_error_set(err, RK_EFAILED, "e2b: %s failed (%s %d)%s%.300s", what, st.signo ? "signal" : "exit",
				  st.signo ? st.signo : st.code, eo.len ? ": " : "", eo.data);
	}
	rk_buf_release(&eo);
	return rc;
}

/* Appends s single-quoted for sh. */
static void sq(struct rk_buf *b, const char *s)
{
	rk_buf_addc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			rk_buf_adds(b, "'\\''");
		else
			rk_buf_addc(b, *s);
	}
	rk_buf_addc(b, '\'');
}

/* --- lifecycle ------------------------------------------------------------------------------ */

static int e2b_check(struct rk_error *err)
{
	struct conf c;
	int rc = conf_load(NULL, &c, err);
	if (rc)
		return rc;
	char *url = rk_xasprintf("%s/v2/sandboxes?limit=1", c.api_url);
	char *auth = rk_xasprintf("X-API-Key: %s", c.key);
	const char *hdrs[] = {auth, "User-Agent: rakazo/" RK_VERSION, NULL};
	struct rk_http_request q = {.method = "GET",
				    .url = url,
				    .headers = hdrs,
				    .timeout_ms = 3000,
				    .connect_timeout_ms = 2000,
				    .max_attempts = 1,
				    .what = "e2b"};
	struct rk_http_response r;
	rk_http_response_init(&r);
	rc = rk_http_do(&q, &r, err);
	rk_http_response_release(&r);
	rk_free_secret(&auth);
	free(url);
	conf_release(&c);
	return rc;
}

/* A sandbox made for this computer whose id we do not hold (a create whose
 * reply was lost), found by its metadata. */
static int find_by_metadata(const struct conf *c, const struct rk_machine *m, char **id, struct rk_error *err)
{
	*id = NULL;
	char *pair = rk_xasprintf("rakazo_computer=%s", m->computer_id);
	char *enc = rk_http_escape(pair);
	char *path = rk_xasprintf("/v2/sandboxes?state=running,paused&metadata=%s", enc);
	cJSON *r = NULL;
	int rc = api(c, "GET", path, NULL, 0, "e2b list sandboxes", &r, NULL, err);
	if (rc == 0 && cJSON_IsArray(r)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, r)
		{
			const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
			const char *cid = rk_json_string(md, "rakazo_computer", NULL);
			const char *sid = rk_json_string(it, "sandboxID", NULL);
			if (cid && sid && strcmp(cid, m->computer_id) == 0) {
				*id = rk_xstrdup(sid);
				break;
			}
		}
	}
	cJSON_Delete(r);
	free(path);
	free(enc);
	free(pair);
	return rc;
}

static int create_sandbox(const struct conf *c, const struct rk_machine *m, struct sandbox *s, struct rk_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "templateID", c->template_id);
	cJSON_AddNumberToObject(body, "timeout", c->timeout_s);
	cJSON_AddBoolToObject(body, "autoPause", 1); /* onTimeout: pause, as the reference creates them */
	cJSON *md = cJSON_AddObjectToObject(body, "metadata");
	cJSON_AddStringToObject(md, "rakazo", "computer");
	cJSON_AddStringToObject(md, "rakazo_computer", m->computer_id);
	const char *label = getenv("RAKAZO_TEST_LABEL");
	if (label && *label)
		cJSON_AddStringToObject(md, "rakazo_test", label);
	cJSON *r = NULL;
	int rc = api(c, "POST", "/v2/sandboxes", body, 1, "e2b create sandbox", &r, NULL, err);
	cJSON_Delete(body);
	if (rc == 0)
		rc = sandbox_from_reply(r, s, err);
	cJSON_Delete(r);
	if (rc == 0)
		rc = sandbox_save(m, s, err);
	if (rc == 0)
		rk_log(RK_LOG_INFO, "e2b: created sandbox %s (template %s) for computer %s", s->id, c->template_id,
		       m->computer_id);
	return rc;
}

static int e2b_provision(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct conf c;
	int rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	char *state = NULL;
	char *found = NULL;
	if (m->ref && *m->ref) {
		rc = remote_state(&c, m->ref, &state, err);
		if (rc)
			goto out;
		if (state) {
			s.id = rk_xstrdup(m->ref);
			goto reconnect;
		}
		out->replaced = 1;
		sandbox_forget(m);
		rk_log(RK_LOG_INFO, "e2b: sandbox %s of computer %s is gone", m->ref, m->computer_id);
	}
	rc = find_by_metadata(&c, m, &found, err);
	if (rc)
		goto out;
	if (found) {
		s.id = found;
		found = NULL;
		goto reconnect;
	}
	rc = create_sandbox(&c, m, &s, err);
	if (rc)
		goto out;
	rc = run_ok(&c, &s, "mkdir -p " WORKSPACE, "preparing the workspace", NULL, err);
	if (rc)
		goto out;
	out->ref = rk_xstrdup(s.id);
	out->fresh = 1;
	goto out;
reconnect:
	rc = sandbox_connect(&c, m, &s, err);
	if (rc == 0)
		rc = run_ok(&c, &s, "mkdir -p " WORKSPACE, "preparing the workspace", NULL, err);
	if (rc == 0)
		out->ref = rk_xstrdup(s.id);
out:
	free(found);
	free(state);
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

/* The configuration and m's sandbox id (NULL when it has none); on
 * failure nothing is left to release. */
static int conf_and_id(const struct rk_machine *m, struct conf *c, char **id, struct rk_error *err)
{
	*id = NULL;
	int rc = conf_load(m, c, err);
	if (rc == 0 && (rc = resolve_id(c, m, id, err)) != 0)
		conf_release(c);
	return rc;
}

static int e2b_status(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err)
{
	*out = RK_MACHINE_GONE;
	struct conf c;
	char *id = NULL, *state = NULL;
	int rc = conf_and_id(m, &c, &id, err);
	if (rc)
		return rc;
	if (id)
		rc = remote_state(&c, id, &state, err);
	if (rc == 0 && state) {
		struct sandbox s;
		int stopped = sandbox_load(m, id, &s) && s.stopped;
		sandbox_release(&s);
		if (strcmp(state, "paused") == 0)
			*out = stopped ? RK_MACHINE_STOPPED : RK_MACHINE_PAUSED;
		else
			*out = RK_MACHINE_RUNNING;
	}
	free(state);
	free(id);
	conf_release(&c);
	return rc;
}

/* POST /sandboxes/{id}/pause; memory 0 is our stop. A 409 (already
 * paused) is success. */
static int pause_remote(const struct conf *c, const char *id, int memory, struct rk_error *err)
{
	char *enc = rk_http_escape(id);
	char *path = rk_xasprintf("/sandboxes/%s/pause", enc);
	cJSON *body = cJSON_CreateObject();
	if (!memory)
		cJSON_AddBoolToObject(body, "memory", 0);
	long st = 0;
	/* pausing twice ends the same way: safe to repeat */
	int rc = api(c, "POST", path, body, 0, memory ? "e2b pause sandbox" : "e2b stop sandbox", NULL, &st, err);
	if (rc == -RK_ECONFLICT)
		rc = 0;
	cJSON_Delete(body);
	free(path);
	free(enc);
	return rc;
}

static int e2b_pause(const struct rk_machine *m, struct rk_error *err)
{
	struct conf c;
	char *id = NULL;
	int rc = conf_and_id(m, &c, &id, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	if (!id)
		rc = rk_error_set(err, RK_ENOTFOUND, "the computer has no e2b sandbox");
	else if (rc == 0 && sandbox_load(m, id, &s) && s.stopped)
		rc = rk_error_set(err, RK_ECONFLICT, "the computer is stopped: start it before pausing");
	else if (rc == 0)
		rc = pause_remote(&c, id, 1, err);
	sandbox_release(&s);
	free(id);
	conf_release(&c);
	return rc;
}

static int e2b_resume(const struct rk_machine *m, struct rk_error *err)
{
	struct conf c;
	int rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	rc = resolve_id(&c, m, &s.id, err);
	if (rc == 0 && !s.id)
		rc = rk_error_set(err, RK_ENOTFOUND, "the computer has no e2b sandbox");
	else if (rc == 0)
		rc = sandbox_connect(&c, m, &s, err);
	if (rc == -RK_ENOTFOUND)
		rc = rk_error_set(err, RK_ENOTFOUND, "the computer's e2b sandbox %s is gone: provision it again",
				  s.id ? s.id : "(none)");
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

static int e2b_stop(const struct rk_machine *m, struct rk_error *err)
{
	struct conf c;
	char *id = NULL, *state = NULL;
	int rc = conf_and_id(m, &c, &id, err);
	if (rc)
		return rc;
	if (id)
		rc = remote_state(&c, id, &state, err);
	if (rc == 0 && state) {
		struct sandbox s;
		if (!sandbox_load(m, id, &s)) {
			sandbox_release(&s);
			s.id = rk_xstrdup(id);
		}
		if (strcmp(state, "running") == 0)
			rc = pause_remote(&c, id, 0, err);
		if (rc == -RK_ENOTFOUND) {
			rc = 0;
		} else if (rc == 0) {
			s.stopped = 1;
			rc = sandbox_save(m, &s, err);
		}
		sandbox_release(&s);
	}
	free(state);
	free(id);
	conf_release(&c);
	return rc;
}

static int e2b_destroy(const struct rk_machine *m, struct rk_error *err)
{
	struct conf c;
	char *id = NULL;
	int rc = conf_and_id(m, &c, &id, err);
	if (rc)
		return rc;
	if (id) {
		char *enc = rk_http_escape(id);
		char *path = rk_xasprintf("/sandboxes/%s", enc);
		/* a repeated kill ends the same way (404 is success) */
		rc = api(&c, "DELETE", path, NULL, 0, "e2b kill sandbox", NULL, NULL, err);
		if (rc == -RK_ENOTFOUND)
			rc = 0;
		free(path);
		free(enc);
	}
	if (rc == 0) {
		sandbox_forget(m);
		static const char *const files[] = {"e2b-live-view-url", NULL};
		for (size_t i = 0; files[i]; i++) {
			char *u = state_path(m, files[i]);
			unlink(u);
			free(u);
		}
		for (int i = 1; i < SCREENS_MAX; i++) {
			char name[40];
			snprintf(name, sizeof(name), "e2b-live-view-url-%d", i);
			char *u = state_path(m, name);
			unlink(u);
			free(u);
		}
	}
	free(id);
	conf_release(&c);
	return rc;
}

/* --- exec ------------------------------------------------------------------------------------ */

static int e2b_exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			  struct rk_error *err)
{
	if (!req->command)
		return rk_error_set(err, RK_EINVALID, "no command to run");
	for (size_t i = 0; req->env && req->env[i]; i++)
		if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
			return rk_error_set(err, RK_EINVALID, "environment entry %s is not NAME=VALUE", req->env[i]);
	struct conf c;
	int rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	rc = sandbox_of(&c, m, &s, err);
	if (rc == 0) {
		const char *argv[] = {"/bin/bash", "-l", "-c", req->command, NULL};
		struct eproc *p = NULL;
		rc = eproc_start(&c, &s, argv, req, 0, &p, err);
		if (rc == 0)
			*out = &p->base;
	}
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

/* --- files ------------------------------------------------------------------------------------ */

/* The sandbox path of an engine path (relative ones are in the workspace). */
static char *sandbox_path(const char *path)
{
	if (path[0] == '/')
		return rk_xstrdup(path);
	if (!*path)
		return rk_xstrdup(WORKSPACE);
	return rk_xasprintf("%s/%s", WORKSPACE, path);
}

/* RFC 3339 (any fraction) to ms since the epoch; 0 when malformed. */
static int64_t rfc3339_ms(const char *s)
{
	struct tm tm = {0};
	int ms = 0;
	if (!s)
		return 0;
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return 0;
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		for (; digits < 3; digits++)
			ms *= 10;
	}
	int64_t off = 0;
	if (*p == '+' || *p == '-') {
		int h = 0, mi = 0;
		if (sscanf(p + 1, "%2d:%2d", &h, &mi) == 2)
			off = (h * 60 + mi) * 60 * (*p == '+' ? 1 : -1);
	}
	return ((int64_t)timegm(&tm) - off) * 1000 + ms;
}

static int cmp_entries(const void *a, const void *b)
{
	return strcmp(((const struct rk_file_entry *)a)->name, ((const struct rk_file_entry *)b)->name);
}

static int with_envd(const struct rk_machine *m, struct conf *c, struct sandbox *s, struct envd *e,
		     struct rk_error *err)
{
	int rc = conf_load(m, c, err);
	if (rc)
		return rc;
	rc = sandbox_of(c, m, s, err);
	if (rc) {
		conf_release(c);
		return rc;
	}
	envd_init(e, c, s);
	return 0;
}

static void without_envd(struct conf *c, struct sandbox *s, struct envd *e)
{
	envd_release(e);
	sandbox_release(s);
	conf_release(c);
}

static int e2b_file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			 struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	int rc = with_envd(m, &c, &s, &e, err);
	if (rc)
		return rc;
	char *p = sandbox_path(path);
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", p);
	cJSON_AddNumberToObject(req, "depth", 1);
	cJSON *r = NULL;
	rc = rpc(&e, "filesystem.Filesystem/ListDir", req, 0, &r, err);
	if (rc == 0) {
		const cJSON *entries = cJSON_GetObjectItemCaseSensitive(r, "entries");
		size_t cap = (size_t)cJSON_GetArraySize(entries), i = 0;
		struct rk_file_entry *es = rk_xcalloc(cap ? cap : 1, sizeof(*es));
		const cJSON *it;
		cJSON_ArrayForEach(it, entries)
		{
			const char *name = rk_json_string(it, "name", NULL);
			if (!name || i >= cap)
				continue;
			const char *type = rk_json_string(it, "type", "");
			const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
			const cJSON *mode = cJSON_GetObjectItemCaseSensitive(it, "mode");
			const char *link = rk_json_string(it, "symlinkTarget", NULL);
			es[i].name = rk_xstrdup(name);
			es[i].type = link				    ? RK_FILE_LINK
				     : !strcmp(type, "FILE_TYPE_DIRECTORY") ? RK_FILE_DIR
				     : !strcmp(type, "FILE_TYPE_FILE")	    ? RK_FILE_REGULAR
									    : RK_FILE_OTHER;
			es[i].size = cJSON_IsString(size)   ? strtoull(size->valuestring, NULL, 10)
				     : cJSON_IsNumber(size) ? (uint64_t)size->valuedouble
							    : 0;
			unsigned mo = cJSON_IsNumber(mode) ? (unsigned)mode->valuedouble : 0;
			es[i].executable = es[i].type == RK_FILE_REGULAR && (mo & 0111) != 0;
			es[i].mtime_ms = rfc3339_ms(rk_json_string(it, "modifiedTime", NULL));
			i++;
		}
		qsort(es, i, sizeof(*es), cmp_entries);
		*out = es;
		*n = i;
	}
	cJSON_Delete(r);
	cJSON_Delete(req);
	free(p);
	without_envd(&c, &s, &e);
	return rc;
}

static char *files_url(const struct envd *e, const char *p)
{
	char *enc = rk_http_escape(p);
	char *url = rk_xasprintf("%s/files?path=%s&username=user", e->base, enc);
	free(enc);
	return url;
}

static int e2b_file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			 struct rk_error *err)
{
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	int rc = with_envd(m, &c, &s, &e, err);
	if (rc)
		return rc;
	char *p = sandbox_path(path);
	char *url = files_url(&e, p);
	struct rk_http_request q = {.method = "GET",
				    .url = url,
				    .headers = e.headers,
				    .timeout_ms = 300000,
				    .max_response = max_bytes ? max_bytes : 1,
				    .what = "e2b read file"};
	struct rk_http_response r;
	rk_http_response_init(&r);
	rc = rk_http_do(&q, &r, err);
	if (rc == -RK_ETOOLARGE || (rc == 0 && max_bytes == 0 && r.body.len > 0))
		rc = rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
	else if (rc == 0)
		rk_buf_add(out, r.body.data, r.body.len);
	rk_http_response_release(&r);
	free(url);
	free(p);
	without_envd(&c, &s, &e);
	return rc;
}

/* POST /files: a multipart upload of one file (envd makes the parents). */
static int upload(const struct envd *e, const char *p, const void *data, size_t len, struct rk_error *err)
{
	unsigned char rnd[12];
	randombytes_buf(rnd, sizeof(rnd));
	char boundary[40] = "rakazo-";
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(boundary + 7 + 2 * i, 3, "%02x", rnd[i]);
	const char *slash = strrchr(p, '/');
	struct rk_buf body;
	rk_buf_init(&body);
	rk_buf_printf(&body,
		      "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
		      "Content-Type: application/octet-stream\r\n\r\n",
		      boundary, slash ? slash + 1 : p);
	rk_buf_add(&body, data, len);
	rk_buf_printf(&body, "\r\n--%s--\r\n", boundary);
	char *ct = rk_xasprintf("multipart/form-data; boundary=%s", boundary);
	char *url = files_url(e, p);
	/* a repeated upload leaves the same file: safe to retry */
	struct rk_http_request q = {.method = "POST",
				    .url = url,
				    .headers = e->headers,
				    .content_type = ct,
				    .body = body.data,
				    .body_len = body.len,
				    .timeout_ms = 300000,
				    .what = "e2b write file"};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&q, &r, err);
	rk_http_response_release(&r);
	free(url);
	free(ct);
	rk_buf_release(&body);
	return rc;
}

static int e2b_file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			  struct rk_error *err)
{
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	int rc = with_envd(m, &c, &s, &e, err);
	if (rc)
		return rc;
	char *p = sandbox_path(path);
	rc = upload(&e, p, data, len, err);
	/* envd makes new files 0644; an executable one takes a chmod */
	if (rc == 0 && executable) {
		struct rk_buf cmd;
		rk_buf_init(&cmd);
		rk_buf_adds(&cmd, "chmod 755 -- ");
		sq(&cmd, p);
		rc = run_ok(&c, &s, cmd.data, "setting the file's mode", NULL, err);
		rk_buf_release(&cmd);
	}
	free(p);
	without_envd(&c, &s, &e);
	return rc;
}

static int e2b_file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	int rc = with_envd(m, &c, &s, &e, err);
	if (rc)
		return rc;
	char *p = sandbox_path(path);
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", p);
	rc = rpc(&e, "filesystem.Filesystem/Remove", req, 1, NULL, err);
	if (rc == -RK_ENOTFOUND)
		rc = rk_error_set(err, RK_ENOTFOUND, "no such file in the computer: %s", path);
	cJSON_Delete(req);
	free(p);
	without_envd(&c, &s, &e);
	return rc;
}

/* --- workspace archive ------------------------------------------------------------------------- */

static int e2b_workspace_export(const struct rk_machine *m, int fd, struct rk_error *err)
{
	struct conf c;
	int rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	rc = sandbox_of(&c, m, &s, err);
	if (rc) {
		conf_release(&c);
		return rc;
	}
	struct rk_buf script;
	rk_buf_init(&script);
	rk_buf_adds(&script, "set -o pipefail; mkdir -p " WORKSPACE " && tar -C " WORKSPACE " --format=pax");
	for (size_t i = 0; rk_profile_skips[i]; i++) {
		struct rk_buf pat;
		rk_buf_init(&pat);
		rk_buf_printf(&pat, "--exclude=./.browser-profiles/*/%s", rk_profile_skips[i]);
		rk_buf_addc(&script, ' ');
		sq(&script, pat.data);
		rk_buf_release(&pat);
	}
	rk_buf_adds(&script, " -cf - .");
	const char *argv[] = {"/bin/bash", "-c", script.data, NULL};
	struct rk_exec_request req = {.command = script.data, .cwd = "/"};
	struct eproc *p = NULL;
	rc = eproc_start(&c, &s, argv, &req, 1, &p, err);
	while (rc == 0) {
		struct pollfd pfd = {.fd = p->wake[0], .events = POLLIN};
		poll(&pfd, 1, 1000);
		struct rk_buf chunk;
		int eof = 0;
		rk_buf_init(&chunk);
		eproc_read(&p->base, &chunk, &eof, err);
		if (chunk.len && rk_fs_write_fd(fd, chunk.data, chunk.len) != 0)
			rc = rk_error_errno(err, RK_EIO, errno, "cannot write the workspace archive");
		rk_buf_release(&chunk);
		if (eof)
			break;
	}
	if (rc == 0) {
		struct rk_exit_status st;
		rc = eproc_wait(&p->base, &st, err);
		if (rc == 0 && st.lost)
			rc = rk_error_set(err, RK_EUNAVAILABLE, "e2b: the workspace export's stream was lost");
		else if (rc == 0 && (st.code || st.signo))
			rc = rk_error_set(err, RK_EFAILED, "e2b: tar in the sandbox failed (exit %d): %.300s", st.code,
					  p->errout.data);
	}
	if (p)
		eproc_destroy(p);
	rk_buf_release(&script);
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

static int e2b_workspace_import(const struct rk_machine *m, int fd, struct rk_error *err)
{
	struct rk_buf clean;
	rk_buf_init(&clean);
	/* the one archive reader refuses the whole stream for any entry it
	 * refuses (tar would unpack it in the sandbox otherwise); Chromium's
	 * Singleton* locks are left out (restored, they keep the browser from
	 * starting) */
	struct rk_tar_opts o = {.uid = 1000, .gid = 1000, .skip = rk_tar_skip_singleton};
	int rc = rk_tar_repack_buf(fd, &clean, m->data_dir, &o, err);
	if (rc) {
		rk_buf_release(&clean);
		return rc;
	}
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	rc = with_envd(m, &c, &s, &e, err);
	if (rc) {
		rk_buf_release(&clean);
		return rc;
	}
	char *name = rk_id_new("import");
	char *tmp = rk_xasprintf("/tmp/rakazo-%s.tar", name);
	rc = upload(&e, tmp, clean.data, clean.len, err);
	if (rc == 0) {
		char *script = rk_xasprintf("mkdir -p %s && tar -C %s --no-same-owner -xf %s; r=$?; rm -f %s; exit $r",
					    WORKSPACE, WORKSPACE, tmp, tmp);
		rc = run_ok(&c, &s, script, "unpacking the workspace", NULL, err);
		free(script);
	}
	free(tmp);
	free(name);
	rk_buf_release(&clean);
	without_envd(&c, &s, &e);
	return rc;
}

/* --- desktop ------------------------------------------------------------------------------------ */

/* Screen i's X display: 0 is the vendor's primary ":0"; Team screens are
 * ":(i+1)" (the reference's layout). */
static int x_display(int screen)
{
	return screen == 0 ? 0 : screen + 1;
}

static int screen_ok(int display, struct rk_error *err)
{
	if (display < 0 || display >= SCREENS_MAX)
		return rk_error_set(err, RK_EMULTISCREEN, "e2b computers have screens 0 to %d; %d is not one",
				    SCREENS_MAX - 1, display);
	return 0;
}

static int e2b_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			     struct rk_screen_transport *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int rc = screen_ok(display, err);
	if (rc)
		return rc;
	int w = opt && opt->width > 0 ? opt->width : 1280, h = opt && opt->height > 0 ? opt->height : 800;
	int xd = x_display(display);
	struct conf c;
	rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	rc = sandbox_of(&c, m, &s, err);
	if (rc) {
		conf_release(&c);
		return rc;
	}
	/* view and control ports as the reference lays them out */
	int vnc_view = 5900 + 2 * display, vnc_ctl = 5901 + 2 * display;
	int web_view = 6080 + 2 * display, web_ctl = 6081 + 2 * display;
	unsigned char rnd[9];
	randombytes_buf(rnd, sizeof(rnd));
	char pw[32];
	sodium_bin2base64(pw, sizeof(pw), rnd, sizeof(rnd), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	struct rk_buf sc;
	rk_buf_init(&sc);
	rk_buf_printf(
		&sc,
		"R=/tmp/rakazo/screen-%d; mkdir -p $R; export DISPLAY=:%d\n"
		"up() { xdpyinfo -display :%d >/dev/null 2>&1; }\n"
		"if ! up; then\n"
		"  setsid -f Xvfb :%d -ac -screen 0 %dx%dx24 -retro -dpi 96 -nolisten tcp -nolisten unix >$R/xvfb.log 2>&1 </dev/null\n"
		"  i=0; until up; do i=$((i+1)); [ $i -gt 200 ] && { cat $R/xvfb.log >&2; echo 'Xvfb did not start' >&2; exit 1; }; sleep 0.05; done\n"
		"fi\n",
		display, xd, xd, xd, w, h);
	if (display == 0)
		rk_buf_adds(
			&sc,
			"if ! pgrep -x xfce4-session >/dev/null && ! pgrep -x openbox >/dev/null; then\n"
			"  if command -v startxfce4 >/dev/null; then setsid -f startxfce4 >$R/session.log 2>&1 </dev/null\n"
			"  elif command -v openbox >/dev/null; then HOME=/tmp setsid -f openbox >$R/session.log 2>&1 </dev/null; fi\n"
			"fi\n");
	else
		rk_buf_adds(
			&sc,
			"pgrep -f \"openbox --config-file $R/\" >/dev/null || { command -v openbox >/dev/null && "
			"touch $R/openbox.xml && HOME=/tmp setsid -f openbox --config-file $R/openbox.xml >$R/session.log 2>&1 </dev/null; }\n");
	/* the live view: a password-protected viewer and a control stream.
	 * Ports go through variables so that no pgrep pattern can match this
	 * script's own command line. */
	rk_buf_printf(
		&sc,
		"VV=%d VC=%d WV=%d WC=%d\n"
		"if command -v x11vnc >/dev/null; then\n"
		"  if ! [ -s $R/view-password ]; then printf '%%s' '%s' >$R/view-password; chmod 600 $R/view-password; fi\n"
		"  x11vnc -storepasswd \"$(cat $R/view-password)\" $R/passwd >/dev/null 2>&1\n"
		"  pgrep -f \"rfbport $VV \" >/dev/null || x11vnc -bg -display $DISPLAY -forever -wait 50 -shared -viewonly -rfbport $VV -rfbauth $R/passwd -o $R/x11vnc-view.log >/dev/null 2>&1\n"
		"  pgrep -f \"rfbport $VC \" >/dev/null || x11vnc -bg -display $DISPLAY -forever -wait 50 -shared -rfbport $VC -rfbauth $R/passwd -o $R/x11vnc-control.log >/dev/null 2>&1\n"
		"fi\n"
		"if [ -x /opt/noVNC/utils/novnc_proxy ]; then\n"
		"  pgrep -f \"listen $WV\\b\" >/dev/null || (cd /opt/noVNC/utils && setsid -f ./novnc_proxy --vnc localhost:$VV --listen $WV --web /opt/noVNC >$R/novnc-view.log 2>&1 </dev/null)\n"
		"  pgrep -f \"listen $WC\\b\" >/dev/null || (cd /opt/noVNC/utils && setsid -f ./novnc_proxy --vnc localhost:$VC --listen $WC --web /opt/noVNC >$R/novnc-control.log 2>&1 </dev/null)\n"
		"fi\n"
		"cat $R/view-password\n",
		vnc_view, vnc_ctl, web_view, web_ctl, pw);
	if (display == 0 && opt && opt->profile_dir) {
		rk_buf_adds(
			&sc,
			"B=user-data-dir; if ! pgrep -f \"$B=" WORKSPACE "/\" >/dev/null; then\n"
			"  for b in google-chrome chromium chromium-browser; do command -v $b >/dev/null || continue\n"
			"    setsid -f $b --no-sandbox --user-data-dir=");
		struct rk_buf prof;
		rk_buf_init(&prof);
		rk_buf_printf(&prof, "%s/%s", WORKSPACE, opt->profile_dir);
		sq(&sc, prof.data);
		rk_buf_release(&prof);
		rk_buf_printf(
			&sc,
			" --no-first-run --no-default-browser-check --window-size=%d,%d >$R/browser.log 2>&1 </dev/null; break\n"
			"  done\nfi\n",
			w, h);
	}
	struct rk_buf o;
	rk_buf_init(&o);
	rc = run_ok(&c, &s, sc.data, "starting the screen", &o, err);
	if (rc == 0) {
		while (o.len && (o.data[o.len - 1] == '\n' || o.data[o.len - 1] == '\r'))
			o.data[--o.len] = '\0';
		char *url = rk_xasprintf(
			"https://%d-%s.%s/vnc.html?autoconnect=true&resize=scale&view_only=true&password=%s", web_view,
			s.id, s.domain ? s.domain : c.domain, o.data);
		char *name = display == 0 ? rk_xstrdup("e2b-live-view-url")
					  : rk_xasprintf("e2b-live-view-url-%d", display);
		char *p = state_path(m, name);
		struct rk_error e2;
		if (rk_fs_write_atomic(p, url, strlen(url), 0600, &e2) != 0)
			rk_log(RK_LOG_WARN, "e2b: cannot keep the live-view URL: %s", e2.message);
		free(p);
		free(name);
		rk_free_secret(&url);
		out->width = w;
		out->height = h;
	}
	sodium_memzero(sc.data, sc.len);
	rk_buf_release(&o);
	rk_buf_release(&sc);
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

static int e2b_display_stop(const struct rk_machine *m, int display, struct rk_error *err)
{
	int rc = screen_ok(display, err);
	if (rc)
		return rc;
	if (!m->ref || !*m->ref)
		return 0;
	struct conf c;
	rc = conf_load(m, &c, err);
	if (rc)
		return rc;
	struct sandbox s = {0};
	rc = sandbox_of(&c, m, &s, err);
	if (rc == -RK_ENOTFOUND)
		rc = 0;
	else if (rc == 0) {
		int xd = x_display(display);
		int ports[4] = {5900 + 2 * display, 5901 + 2 * display, 6080 + 2 * display, 6081 + 2 * display};
		/* "[5]900": the patterns cannot match this script itself */
		char *sc = rk_xasprintf(
			"pkill -f 'rfbport [%d]%03d ' ; pkill -f 'rfbport [%d]%03d ' ; pkill -f 'listen [%d]%03d' ; "
			"pkill -f 'listen [%d]%03d' ; pkill -f '[o]penbox --config-file /tmp/rakazo/screen-%d/' ; pkill -f '^[X]vfb :%d ' ; "
			"rm -f /tmp/.X%d-lock; exit 0",
			ports[0] / 1000, ports[0] % 1000, ports[1] / 1000, ports[1] % 1000, ports[2] / 1000,
			ports[2] % 1000, ports[3] / 1000, ports[3] % 1000, display, xd, xd);
		rc = run_ok(&c, &s, sc, "stopping the screen", NULL, err);
		free(sc);
	}
	sandbox_release(&s);
	conf_release(&c);
	return rc;
}

struct png_src {
	const unsigned char *data;
	size_t len, pos;
};

static void png_read_mem(png_structp png, png_bytep out, png_size_t n)
{
	struct png_src *s = png_get_io_ptr(png);
	if (s->pos + n > s->len)
		png_error(png, "truncated");
	memcpy(out, s->data + s->pos, n);
	s->pos += n;
}

static int decode_png(const struct rk_buf *b, struct rk_frame *f, struct rk_error *err)
{
	if (b->len < 8 || png_sig_cmp((png_const_bytep)b->data, 0, 8))
		return rk_error_set(err, RK_EFAILED, "e2b: the screenshot is not a PNG");
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	unsigned char *rgb = NULL;
	png_bytep *rows = NULL;
	if (!png || !info) {
		png_destroy_read_struct(&png, &info, NULL);
		return rk_error_set(err, RK_EFAILED, "e2b: cannot decode the screenshot");
	}
	struct png_src src = {(const unsigned char *)b->data, b->len, 0};
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		free(rgb);
		free(rows);
		return rk_error_set(err, RK_EFAILED, "e2b: the screenshot PNG is damaged");
	}
	png_set_read_fn(png, &src, png_read_mem);
	png_read_info(png, info);
	png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
	if (w == 0 || h == 0 || w > 16384 || h > 16384)
		png_error(png, "size");
	png_set_strip_16(png);
	png_set_strip_alpha(png);
	png_set_palette_to_rgb(png);
	png_set_gray_to_rgb(png);
	png_set_expand_gray_1_2_4_to_8(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)w * 3)
		png_error(png, "format");
	rgb = rk_xmalloc((size_t)w * h * 3);
	rows = rk_xmalloc(sizeof(*rows) * h);
	for (png_uint_32 y = 0; y < h; y++)
		rows[y] = rgb + (size_t)y * w * 3;
	png_read_image(png, rows);
	png_destroy_read_struct(&png, &info, NULL);
	free(rows);
	f->width = (int)w;
	f->height = (int)h;
	f->rgb = rgb;
	return 0;
}

static int e2b_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int rc = screen_ok(display, err);
	if (rc)
		return rc;
	struct conf c;
	struct sandbox s = {0};
	struct envd e;
	rc = with_envd(m, &c, &s, &e, err);
	if (rc)
		return rc;
	/* the desktop SDK's screenshot: scrot --pointer to a file, then read it */
	char shot[64];
	unsigned char rnd[8];
	randombytes_buf(rnd, sizeof(rnd));
	snprintf(shot, sizeof(shot), "/tmp/screenshot-%02x%02x%02x%02x%02x%02x%02x%02x.png", rnd[0], rnd[1], rnd[2],
		 rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	char *sc = rk_xasprintf("export DISPLAY=:%d; scrot --pointer %s || exit 1; xdotool getmouselocation --shell; "
				"echo TITLE=$(xdotool getactivewindow getwindowname 2>/dev/null)",
				x_display(display), shot);
	struct rk_buf o;
	rk_buf_init(&o);
	rc = run_ok(&c, &s, sc, "taking a screenshot", &o, err);
	free(sc);
	struct rk_buf png;
	rk_buf_init(&png);
	if (rc == 0) {
		char *url = files_url(&e, shot);
		struct rk_http_request q = {.method = "GET",
					    .url = url,
					    .headers = e.headers,
					    .timeout_ms = 60000,
					    .max_response = 64u << 20,
					    .what = "e2b read screenshot"};
		struct rk_http_response r;
		rk_http_response_init(&r);
		rc = rk_http_do(&q, &r, err);
		if (rc == 0)
			rk_buf_add(&png, r.body.data, r.body.len);
		rk_http_response_release(&r);
		free(url);
		cJSON *req = cJSON_CreateObject();
		cJSON_AddStringToObject(req, "path", shot);
		struct rk_error ignored;
		rpc(&e, "filesystem.Filesystem/Remove", req, 0, NULL, &ignored);
		cJSON_Delete(req);
	}
	if (rc == 0)
		rc = decode_png(&png, out, err);
	if (rc == 0) {
		const char *x = strstr(o.data, "X="), *y = strstr(o.data, "Y="), *t = strstr(o.data, "TITLE=");
		out->cursor_x = x ? atoi(x + 2) : 0;
		out->cursor_y = y ? atoi(y + 2) : 0;
		if (t && t[6] && t[6] != '\n') {
			size_t n = strcspn(t + 6, "\n");
			out->window_title = rk_xstrndup(t + 6, n);
		}
	}
	rk_buf_release(&png);
	rk_buf_release(&o);
	without_envd(&c, &s, &e);
	return rc;
}

/* The desktop SDK's key names for xdotool (enter -> Return ...). */
static const char *xkey(const char *k)
{
	static const char *const map[][2] = {
		{"alt", "Alt_L"},
		{"backspace", "BackSpace"},
		{"cmd", "Super_L"},
		{"command", "Super_L"},
		{"control", "Control_L"},
		{"ctrl", "Control_L"},
		{"del", "Delete"},
		{"delete", "Delete"},
		{"down", "Down"},
		{"end", "End"},
		{"enter", "Return"},
		{"return", "Return"},
		{"esc", "Escape"},
		{"escape", "Escape"},
		{"home", "Home"},
		{"insert", "Insert"},
		{"left", "Left"},
		{"meta", "Meta_L"},
		{"pagedown", "Page_Down"},
		{"page_down", "Page_Down"},
		{"pageup", "Page_Up"},
		{"page_up", "Page_Up"},
		{"right", "Right"},
		{"shift", "Shift_L"},
		{"space", "space"},
		{"super", "Super_L"},
		{"tab", "Tab"},
		{"up", "Up"},
		{"win", "Super_L"},
		{"windows", "Super_L"},
		{"option", "Alt_L"},
		{"plus", "plus"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcasecmp(k, map[i][0]) == 0)
			return map[i][1];
	return k;
}

static int keys_arg(struct rk_buf *b, const char *spec, struct rk_error *err)
{
	if (!spec || !*spec)
		return rk_error_set(err, RK_EINVALID, "e2b act: no keys");
	struct rk_buf combo;
	rk_buf_init(&combo);
	const char *p = spec;
	while (*p) {
		size_t n = strcspn(p, "+");
		if (n == 0 && p[0] == '+') { /* "ctrl++": the plus key */
			n = 1;
		}
		char *k = rk_xstrndup(p, n);
		if (combo.len)
			rk_buf_addc(&combo, '+');
		rk_buf_adds(&combo, strcmp(k, "+") == 0 ? "plus" : xkey(k));
		free(k);
		p += n;
		if (*p == '+')
			p++;
	}
	sq(b, combo.data);
	rk_buf_release(&combo);
	return 0;
}

static const char *xbutton(const cJSON *a)
{
	const char *b = rk_json_string(a, "button", "left");
	return !strcmp(b, "right") ? "3" : !strcmp(b, "middle") ? "2" : "1";
}

static void add_move(struct rk_buf *sc, int x, int y)
{
	rk_buf_printf(sc, "xdotool mousemove --sync %d %d\n", x, y);
}

static int e2b_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err)
{
	int rc = screen_ok(display, err);
	if (rc)
		return rc;
	cJSON *a = rk_json_parse(action_json, strlen(action_json), "action", err);
	if (!a)
		return -RK_EINVALID;
	const char *kind = rk_json_string(a, "action", "");
	const cJSON *jx = cJSON_GetObjectItemCaseSensitive(a, "x"), *jy = cJSON_GetObjectItemCaseSensitive(a, "y");
	int has_pt = cJSON_IsNumber(jx) && cJSON_IsNumber(jy);
	int x = has_pt ? (int)jx->valuedouble : 0, y = has_pt ? (int)jy->valuedouble : 0;
	struct rk_buf sc;
	rk_buf_init(&sc);
	rk_buf_printf(&sc, "set -e; export DISPLAY=:%d\n", x_display(display));
	if (has_pt && strcmp(kind, "drag") != 0)
		add_move(&sc, x, y);
	if (!strcmp(kind, "move")) {
		/* the move above is all */
	} else if (!strcmp(kind, "click")) {
		const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(a, "count");
		int n = cJSON_IsNumber(cnt) ? (int)cnt->valuedouble : 1;
		rk_buf_printf(&sc, "xdotool click --repeat %d %s\n", n < 1 ? 1 : n, xbutton(a));
	} else if (!strcmp(kind, "double_click")) {
		rk_buf_printf(&sc, "xdotool click --repeat 2 %s\n", xbutton(a));
	} else if (!strcmp(kind, "right_click")) {
		rk_buf_adds(&sc, "xdotool click 3\n");
	} else if (!strcmp(kind, "down") || !strcmp(kind, "up")) {
		rk_buf_printf(&sc, "xdotool mouse%s %s\n", kind, xbutton(a));
	} else if (!strcmp(kind, "drag")) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(a, "path");
		int i = 0;
		const cJSON *pt;
		cJSON_ArrayForEach(pt, path)
		{
			const cJSON *px = cJSON_GetArrayItem(pt, 0), *py = cJSON_GetArrayItem(pt, 1);
			if (!cJSON_IsNumber(px) || !cJSON_IsNumber(py))
				continue;
			add_move(&sc, (int)px->valuedouble, (int)py->valuedouble);
			if (i++ == 0)
				rk_buf_printf(&sc, "xdotool mousedown %s\n", xbutton(a));
		}
		if (i == 0)
			rc = rk_error_set(err, RK_EINVALID, "e2b act: drag needs a path");
		rk_buf_printf(&sc, "xdotool mouseup %s\n", xbutton(a));
	} else if (!strcmp(kind, "scroll")) {
		const cJSON *dx = cJSON_GetObjectItemCaseSensitive(a, "dx"),
			    *dy = cJSON_GetObjectItemCaseSensitive(a, "dy");
		int vx = cJSON_IsNumber(dx) ? (int)dx->valuedouble : 0,
		    vy = cJSON_IsNumber(dy) ? (int)dy->valuedouble : 0;
		if (vy)
			rk_buf_printf(&sc, "xdotool click --repeat %d %d\n", vy > 0 ? vy : -vy, vy > 0 ? 5 : 4);
		if (vx)
			rk_buf_printf(&sc, "xdotool click --repeat %d %d\n", vx > 0 ? vx : -vx, vx > 0 ? 7 : 6);
	} else if (!strcmp(kind, "type")) {
		const char *text = rk_json_string(a, "text", "");
		/* the SDK's chunks of 25 characters (bytes here, cut on UTF-8 boundaries) */
		size_t len = strlen(text), i = 0;
		while (i < len) {
			size_t n = len - i > 25 ? 25 : len - i;
			while (i + n < len && ((unsigned char)text[i + n] & 0xc0) == 0x80)
				n++;
			char *chunk = rk_xstrndup(text + i, n);
			rk_buf_adds(&sc, "xdotool type --delay 12 -- ");
			sq(&sc, chunk);
			rk_buf_addc(&sc, '\n');
			free(chunk);
			i += n;
		}
	} else if (!strcmp(kind, "key") || !strcmp(kind, "key_down") || !strcmp(kind, "key_up")) {
		rk_buf_adds(&sc, !strcmp(kind, "key")	     ? "xdotool key -- "
				 : !strcmp(kind, "key_down") ? "xdotool keydown -- "
							     : "xdotool keyup -- ");
		rc = keys_arg(&sc, rk_json_string(a, "keys", ""), err);
		rk_buf_addc(&sc, '\n');
	} else if (!strcmp(kind, "wait")) {
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(a, "ms");
		rk_sleep_ms(cJSON_IsNumber(ms) ? (int64_t)ms->valuedouble : 350);
		goto out;
	} else {
		rc = rk_error_set(err, RK_EINVALID, "e2b act: unknown action '%s'", kind);
	}
	if (rc == 0) {
		struct conf c;
		rc = conf_load(m, &c, err);
		if (rc == 0) {
			struct sandbox s = {0};
			rc = sandbox_of(&c, m, &s, err);
			if (rc == 0)
				rc = run_ok(&c, &s, sc.data, "the screen action", NULL, err);
			sandbox_release(&s);
			conf_release(&c);
		}
	}
out:
	rk_buf_release(&sc);
	cJSON_Delete(a);
	return rc;
}

const struct rk_provider_ops rk_provider_e2b = {
	.name = "e2b",
	.caps = RK_CAP_DESKTOP | RK_CAP_MULTI_SCREEN | RK_CAP_TTY | RK_CAP_PAUSE | RK_CAP_PERSISTENT_HOME |
		RK_CAP_TAKEOVER,
	.summary = "E2B sandboxes (E2B_API_KEY; E2B_API_URL, E2B_DOMAIN, E2B_SANDBOX_URL, E2B_TEMPLATE)",
	.check = e2b_check,
	.provision = e2b_provision,
	.status = e2b_status,
	.pause = e2b_pause,
	.resume = e2b_resume,
	.stop = e2b_stop,
	.destroy = e2b_destroy,
	.exec_spawn = e2b_exec_spawn,
	.file_list = e2b_file_list,
	.file_read = e2b_file_read,
	.file_write = e2b_file_write,
	.file_remove = e2b_file_remove,
	.workspace_export = e2b_workspace_export,
	.workspace_import = e2b_workspace_import,
	.display_start = e2b_display_start,
	.display_stop = e2b_display_stop,
	.capture = e2b_capture,
	.act = e2b_act,
};
