#include "engine/machine/browser.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "providers/provider.h"
#include "engine/machine/browser_js.h"
#include "engine/screen/screen.h"
#include "engine/access/secret.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

#define CALL_TIMEOUT_MS 15000
#define ACT_SETTLE_MS 3000 /* a click that navigates: wait this long at most for the new page */
#define MSG_MAX (64u << 20)

struct rk_browser {
	int fd;
	char *socket_path;
	struct rk_buf in; /* bytes read past the last whole message */
	int64_t next_id;
	char *session; /* the page's flat session */
	char *target;
	int loads;    /* Page.loadEventFired seen on our session */
	int detached; /* our page went away (closed, crashed) */
	int gone;     /* the bridge closed: Chromium went away */
	/* rakazo's isolated world in the page's top document: the uniqueId of
	 * its execution context (a context id can name another context after
	 * a cross-process navigation; a uniqueId never does), or NULL */
	char *world;
	int world_id; /* its context id, while it is being looked for */
	int holding;  /* document requests are held (Fetch.requestPaused) */
	cJSON *held;  /* the requestIds held, to continue */
	/* while a secret is typed (holding): its name, the frame of its field
	 * (NULL: not known yet) and where a navigation of that frame or of the
	 * top one wanted to go; then every call ends at once, refused */
	const char *filling, *fill_frame;
	char *nav_url;
};

#define WORLD_NAME "rakazo"

/* --- the wire ---------------------------------------------------------------- */

static int gone_error(struct rk_browser *b, struct rk_error *err)
{
	b->gone = 1;
	return rk_error_set(err, RK_EUNAVAILABLE,
			    "the browser went away (it crashed or its last window closed); the next browser call "
			    "starts it again with the same profile");
}

/* Sends n bytes of one message (its NUL included) to the browser. */
static int send_text(struct rk_browser *b, const char *p, size_t n, struct rk_error *err)
{
	while (n > 0) {
		ssize_t w = send(b->fd, p, n, MSG_NOSIGNAL); /* a gone bridge is an error, not SIGPIPE */
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return gone_error(b, err);
		p += w, n -= (size_t)w;
	}
	return 0;
}

static int send_msg(struct rk_browser *b, cJSON *msg, struct rk_error *err)
{
	char *text = cJSON_PrintUnformatted(msg);
	int rc = send_text(b, text, strlen(text) + 1, err); /* with its NUL: the pipe's framing */
	free(text);
	return rc;
}

static void on_event(struct rk_browser *b, const cJSON *m, const char *method)
{
	const char *sid = rk_json_string(m, "sessionId", NULL);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (!strcmp(method, "Page.loadEventFired") && sid && b->session && !strcmp(sid, b->session))
		b->loads++;
	else if (!strcmp(method, "Target.detachedFromTarget") && b->session &&
		 !strcmp(rk_json_string(p, "sessionId", ""), b->session))
		b->detached = 1;
	else if ((!strcmp(method, "Inspector.targetCrashed") && sid && b->session && !strcmp(sid, b->session)) ||
		 (!strcmp(method, "Target.targetCrashed") && b->target &&
		  !strcmp(rk_json_string(p, "targetId", ""), b->target)))
		b->detached = 1;
	else if (!strcmp(method, "Runtime.executionContextCreated") && sid && b->session && !strcmp(sid, b->session)) {
		/* our world in the top frame (whose id is the page target's) */
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "context");
		const cJSON *aux = cJSON_GetObjectItemCaseSensitive(c, "auxData");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
		if (!b->world && !strcmp(rk_json_string(c, "name", ""), WORLD_NAME) && b->target &&
		    !strcmp(rk_json_string(aux, "frameId", ""), b->target) && cJSON_IsNumber(id) &&
		    (!b->world_id || b->world_id == id->valueint) && rk_json_string(c, "uniqueId", NULL))
			b->world = rk_xstrdup(rk_json_string(c, "uniqueId", NULL));
	} else if (!strcmp(method, "Fetch.requestPaused") && sid && b->session && !strcmp(sid, b->session)) {
		/* continued when the hold ends (never from here: a call now would
		 * read the replies the caller waits for) */
		if (!b->held)
			b->held = cJSON_CreateArray();
		cJSON_AddItemToArray(b->held, cJSON_CreateString(rk_json_string(p, "requestId", "")));
		/* the browser sends the page no message while its top frame has a
		 * navigation pending: none of ours would be answered */
		const char *frame = rk_json_string(p, "frameId", "");
		if (b->holding && !b->nav_url &&
		    ((b->target && !strcmp(frame, b->target)) || (b->fill_frame && !strcmp(frame, b->fill_frame))))
			b->nav_url = rk_xstrdup(
				rk_json_string(cJSON_GetObjectItemCaseSensitive(p, "request"), "url", "?"));
	}
}

/* Reads one message (waiting until deadline); 0 with *out, or an error. */
static int read_msg(struct rk_browser *b, int64_t deadline, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	for (;;) {
		char *z = b->in.len ? memchr(b->in.data, '\0', b->in.len) : NULL;
		if (z) {
			size_t n = (size_t)(z - b->in.data);
			*out = cJSON_ParseWithLength(b->in.data, n);
			rk_buf_consume(&b->in, n + 1);
			if (!*out)
				return rk_error_set(err, RK_EFAILED, "the browser sent a message that is not JSON");
			return 0;
		}
		if (b->in.len > MSG_MAX)
			return rk_error_set(err, RK_EFAILED, "the browser sent a message over %u MiB", MSG_MAX >> 20);
		int64_t left = deadline - rk_monotonic_ms();
		if (left <= 0)
			return -RK_ETIMEOUT;
		struct pollfd p = {.fd = b->fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
		if (r < 0 && errno != EINTR)
			return gone_error(b, err);
		if (r <= 0)
			continue;
		char chunk[65536];
		ssize_t n = read(b->fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return gone_error(b, err);
		rk_buf_add(&b->in, chunk, (size_t)n);
	}
}

/* Waits for the reply to message id (sent for method): 0 with *result
 * (caller frees; may be NULL when not wanted). Events met meanwhile go to
 * on_event. */
static int await_reply(struct rk_browser *b, int64_t id, const char *method, int timeout_ms, cJSON **result,
		       struct rk_error *err)
{
	int64_t deadline = rk_monotonic_ms() + timeout_ms;
	for (;;) {
		cJSON *m = NULL;
		int rc = read_msg(b, deadline, &m, err);
		if (rc == -RK_ETIMEOUT)
			return rk_error_set(err, RK_ETIMEOUT, "the browser did not answer %s within %d ms", method,
					    timeout_ms);
		if (rc)
			return rc;
		const cJSON *mid = cJSON_GetObjectItemCaseSensitive(m, "id");
		const char *ev = rk_json_string(m, "method", NULL);
		if (!cJSON_IsNumber(mid)) {
			if (ev)
				on_event(b, m, ev);
			cJSON_Delete(m);
			if (b->holding && b->nav_url)
				return rk_error_set(err, RK_EDENIED,
						    "browser_act: the page started to go to %s before secret '%s' was "
						    "typed: refused",
						    b->nav_url, b->filling ? b->filling : "?");
			continue;
		}
		if ((int64_t)mid->valuedouble != id) { /* a reply meant for an earlier client */
			cJSON_Delete(m);
			continue;
		}
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "error");
		if (e) {
			rc = rk_error_set(err, RK_EFAILED, "browser: %s: %s", method,
					  rk_json_string(e, "message", "failed"));
		} else if (result) {
			*result = cJSON_DetachItemFromObjectCaseSensitive(m, "result");
			if (!*result)
				*result = cJSON_CreateObject();
		}
		cJSON_Delete(m);
		return rc;
	}
}

/* Calls method (params consumed; NULL: {}) on the page session (or the
 * browser when session is 0) and waits for its reply: 0 with *result
 * (caller frees; may be NULL when not wanted). */
static int call_ex(struct rk_browser *b, const char *method, cJSON *params, int on_page, int timeout_ms, cJSON **result,
		   struct rk_error *err)
{
	if (result)
		*result = NULL;
	if (b->gone) {
		cJSON_Delete(params);
		return gone_error(b, err);
	}
	int64_t id = b->next_id++;
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddNumberToObject(msg, "id", (double)id);
	cJSON_AddStringToObject(msg, "method", method);
	cJSON_AddItemToObject(msg, "params", params ? params : cJSON_CreateObject());
	if (on_page && b->session)
		cJSON_AddStringToObject(msg, "sessionId", b->session);
	int rc = send_msg(b, msg, err);
	cJSON_Delete(msg);
	return rc ? rc : await_reply(b, id, method, timeout_ms, result, err);
}

static int call(struct rk_browser *b, const char *method, cJSON *params, cJSON **result, struct rk_error *err)
{
	return call_ex(b, method, params, 1, CALL_TIMEOUT_MS, result, err);
}

/* Finds rakazo's isolated world in the top document, or makes it: the
 * world a document keeps for its life, so refs made by an earlier
 * connection are still there. Runtime is on only while it looks (its
 * events name each context with its uniqueId). */
static int ensure_world(struct rk_browser *b, struct rk_error *err)
{
	if (b->world)
		return 0;
	b->world_id = 0;
	int rc = call(b, "Runtime.enable", NULL, NULL, err); /* reports every context there is */
	if (rc == 0 && !b->world) {
		cJSON *p = cJSON_CreateObject(), *res = NULL;
		cJSON_AddStringToObject(p, "frameId", b->target);
		cJSON_AddStringToObject(p, "worldName", WORLD_NAME);
		if ((rc = call(b, "Page.createIsolatedWorld", p, &res, err)) == 0) {
			b->world_id = (int)cJSON_GetNumberValue(
				cJSON_GetObjectItemCaseSensitive(res, "executionContextId"));
			/* its executionContextCreated, if it did not come before the reply */
			int64_t until = rk_monotonic_ms() + CALL_TIMEOUT_MS;
			while (rc == 0 && !b->world) {
				cJSON *m = NULL;
				if ((rc = read_msg(b, until, &m, err)) == -RK_ETIMEOUT)
					rc = rk_error_set(err, RK_ETIMEOUT,
							  "the browser did not make its isolated world");
				const char *ev = rk_json_string(m, "method", NULL);
				if (ev)
					on_event(b, m, ev);
				cJSON_Delete(m);
			}
		}
		cJSON_Delete(res);
	}
	struct rk_error e2;
	call(b, "Runtime.disable", NULL, NULL, &e2);
	return rc;
}

/* Runs fn (a function source) applied to the JSON args in the world whose
 * context is uniqueId world; by value into *value, or with object the
 * remote object's id into *object (NULL for null or undefined: then *value
 * is a JSON null for null, NULL for undefined). */
static int run_in(struct rk_browser *b, const char *world, const char *fn, const char *args_json, int timeout_ms,
		  cJSON **value, char **object, struct rk_error *err)
{
	if (value)
		*value = NULL;
	if (object)
		*object = NULL;
	char *expr = rk_xasprintf("(%s)(%s)", fn, args_json ? args_json : "");
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "expression", expr);
	cJSON_AddStringToObject(p, "uniqueContextId", world);
	cJSON_AddBoolToObject(p, "returnByValue", !object);
	cJSON_AddBoolToObject(p, "awaitPromise", 1);
	free(expr);
	cJSON *res = NULL;
	int rc = call_ex(b, "Runtime.evaluate", p, 1, timeout_ms, &res, err);
	if (rc == 0) {
		const cJSON *ex = cJSON_GetObjectItemCaseSensitive(res, "exceptionDetails");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(res, "result");
		if (ex) {
			const cJSON *exc = cJSON_GetObjectItemCaseSensitive(ex, "exception");
			rc = rk_error_set(err, RK_EFAILED, "browser: the page script failed: %s",
					  rk_json_string(exc, "description", rk_json_string(ex, "text", "error")));
		} else if (object && rk_json_string(r, "objectId", NULL)) {
			*object = rk_xstrdup(rk_json_string(r, "objectId", NULL));
		} else if (object) { /* null stays null, undefined is no value */
			if (value && !strcmp(rk_json_string(r, "subtype", ""), "null"))
				*value = cJSON_CreateNull();
		} else {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "value");
			*value = v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull();
		}
	}
	cJSON_Delete(res);
	return rc;
}

/* Whether e says the world a script was meant for is not there any more
 * (its document went: in the same renderer, or with it). */
static int world_gone(const struct rk_error *e)
{
	return strstr(e->message, "uniqueContextId not found") ||
	       strstr(e->message, "Cannot find context with specified id");
}

/* Runs fn applied to the JSON args in rakazo's world of the page and
 * returns its value. A world gone with its document (the page navigated)
 * is looked for, or made, again once. */
static int evaluate(struct rk_browser *b, const char *fn, const char *args_json, int timeout_ms, cJSON **value,
		    struct rk_error *err)
{
	*value = NULL;
	for (int attempt = 0;; attempt++) {
		int rc = ensure_world(b, err);
		if (rc)
			return rc;
		struct rk_error e2;
		rk_error_clear(&e2);
		rc = run_in(b, b->world, fn, args_json, timeout_ms, value, NULL, &e2);
		if (rc && attempt == 0 && !b->gone && world_gone(&e2)) {
			free(b->world);
			b->world = NULL;
			continue;
		}
		if (rc && err)
			*err = e2;
		return rc;
	}
}

/* --- connecting ---------------------------------------------------------------- */

static int attach_page(struct rk_browser *b, struct rk_error *err)
{
	cJSON *res = NULL;
	int rc = call_ex(b, "Target.getTargets", NULL, 0, CALL_TIMEOUT_MS, &res, err);
	if (rc)
		return rc;
	const cJSON *infos = cJSON_GetObjectItemCaseSensitive(res, "targetInfos"), *t;
	char *target = NULL;
	cJSON_ArrayForEach(t, infos)
	{
		if (!strcmp(rk_json_string(t, "type", ""), "page")) {
			target = rk_xstrdup(rk_json_string(t, "targetId", ""));
			break;
		}
	}
	cJSON_Delete(res);
	if (!target) { /* every tab was closed but the browser lives: open one */
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "url", "about:blank");
		if ((rc = call_ex(b, "Target.createTarget", p, 0, CALL_TIMEOUT_MS, &res, err)))
			return rc;
		target = rk_xstrdup(rk_json_string(res, "targetId", ""));
		cJSON_Delete(res);
	}
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "targetId", target);
	cJSON_AddBoolToObject(p, "flatten", 1);
	rc = call_ex(b, "Target.attachToTarget", p, 0, CALL_TIMEOUT_MS, &res, err);
	if (rc == 0) {
		const char *sid = rk_json_string(res, "sessionId", NULL);
		if (!sid)
			rc = rk_error_set(err, RK_EFAILED, "the browser gave no session for its page");
		else
			b->session = rk_xstrdup(sid);
		cJSON_Delete(res);
	}
	b->target = target;
	if (rc == 0)
		rc = call(b, "Page.enable", NULL, NULL, err);
	if (rc == 0) /* the page the tools drive is the one a person sees */
		rc = call(b, "Page.bringToFront", NULL, NULL, err);
	return rc;
}

int rk_browser_open(const char *cdp_socket, struct rk_browser **out, struct rk_error *err)
{
	*out = NULL;
	int fd = rk_fs_connect_socket(cdp_socket, "browser socket", err);
	if (fd < 0)
		return fd;
	struct rk_browser *b = rk_xcalloc(1, sizeof(*b));
	b->fd = fd;
	b->socket_path = rk_xstrdup(cdp_socket);
	rk_buf_init(&b->in);
	/* ids from a random base: a late reply to an earlier client never matches */
	b->next_id = 1 + (int64_t)(randombytes_random() & 0x3fffffff);
	int rc = attach_page(b, err);
	if (rc) {
		rk_browser_close(b);
		return rc;
	}
	*out = b;
	return 0;
}

void rk_browser_close(struct rk_browser *b)
{
	if (!b)
		return;
	if (b->fd >= 0)
		close(b->fd);
	rk_buf_release(&b->in);
	free(b->socket_path);
	free(b->session);
	free(b->target);
	free(b->world);
	cJSON_Delete(b->held);
	free(b->nav_url);
	free(b);
}

/* The bridge sockets this process reached, by (computer, machine, display,
 * profile): the next call on the same display connects at once instead of
 * asking the provider again (a command in the machine each time). A socket
 * that does not answer (Chromium went away with its bridge) sends the call
 * back to the provider, which starts it again. */
#define KNOWN_MAX 16
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *key, *socket;
} known[KNOWN_MAX];
static unsigned known_next;

static char *known_get(const char *key)
{
	char *s = NULL;
	pthread_mutex_lock(&known_mu);
	for (int i = 0; i < KNOWN_MAX && !s; i++)
		if (known[i].key && !strcmp(known[i].key, key))
			s = rk_xstrdup(known[i].socket);
	pthread_mutex_unlock(&known_mu);
	return s;
}

static void known_set(const char *key, const char *socket)
{
	pthread_mutex_lock(&known_mu);
	int slot = -1;
	for (int i = 0; i < KNOWN_MAX && slot < 0; i++)
		if (known[i].key && !strcmp(known[i].key, key))
			slot = i;
	if (slot < 0)
		slot = (int)(known_next++ % KNOWN_MAX);
	free(known[slot].key);
	free(known[slot].socket);
	known[slot].key = socket ? rk_xstrdup(key) : NULL;
	known[slot].socket = socket ? rk_xstrdup(socket) : NULL;
	pthread_mutex_unlock(&known_mu);
}

int rk_browser_supported(const struct rk_computer *c, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops || !(ops->caps & RK_CAP_PAGE_BROWSER) || !ops->display_start)
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "computer '%s' (provider %s) has no page browser; use computer_observe and "
				    "computer_act",
				    c->name, c->kind);
	if (!c->desktop)
		return rk_error_set(err, RK_EUNSUPPORTED, "computer '%s' was created without a desktop", c->name);
	return 0;
}

int rk_browser_connect(struct rk_engine *eng, struct rk_computer *c, int display, const char *profile_dir,
		       int extra_screen, struct rk_browser **out, struct rk_error *err)
{
	*out = NULL;
	int rc = rk_browser_supported(c, err);
	if (rc)
		return rc;
	rc = rk_computer_ensure_running(eng, c, err);
	if (rc)
		return rc;
	char def[64];
	snprintf(def, sizeof(def), display == 0 ? ".browser-profiles/default" : ".browser-profiles/display-%d",
		 display);
	char *key = rk_xasprintf("%s\n%s\n%d\n%s", c->id, c->provider_ref ? c->provider_ref : "", display,
				 profile_dir ? profile_dir : def);
	/* a display being started for a new tenant is never taken from the cache */
	char *sock = extra_screen ? NULL : known_get(key);
	if (sock) {
		rc = rk_browser_open(sock, out, err);
		free(sock);
		if (rc != -RK_EUNAVAILABLE) { /* connected, or a browser that is there but failed */
			free(key);
			return rc;
		}
		known_set(key, NULL);
	}
	/* idempotent: a running desktop is left as it is, a browser that went
	 * away starts again on its profile */
	struct rk_display_options dopt = {.profile_dir = profile_dir ? profile_dir : def};
	struct rk_screen_transport tr = {0};
	struct rk_machine_ctx mc;
	/* the size the computer asks for, as the screen's holder starts it */
	cJSON *copt = c->options ? cJSON_Parse(c->options) : NULL;
	rc = rk_screen_size_option(copt, &dopt.width, &dopt.height, err);
	cJSON_Delete(copt);
	if (rc == 0 && (rc = rk_machine_open(&mc, eng, c, err)) == 0) {
		rc = rk_machine_display_start(&mc, display, &dopt, &tr, err);
		rk_machine_ctx_release(&mc);
	}
	if (rc && extra_screen && rk_err(err)->code != RK_EUSAGE && rk_err(err)->code != RK_EINVALID) {
		/* as engine/machine/display.c says it: shell and files still work */
		rk_error_prefix(err, "cannot start another screen on computer '%s'", c->name);
		rk_err(err)->code = RK_EMULTISCREEN;
		rc = -RK_EMULTISCREEN;
	}
	if (rc == 0 && !tr.cdp_socket)
		rc = rk_error_set(err, RK_EUNAVAILABLE,
				  "display :%d of '%s' has no browser bridge (a computer made before rakazo had "
				  "browser tools: recreate it)",
				  display, c->name);
	/* Chromium takes a moment to answer on a fresh start */
	int64_t until = rk_monotonic_ms() + 20000;
	while (rc == 0) {
		rc = rk_browser_open(tr.cdp_socket, out, err);
		if (rc != -RK_EUNAVAILABLE || rk_monotonic_ms() > until)
			break;
		rk_sleep_ms(100);
		rc = 0;
	}
	if (rc == 0)
		known_set(key, tr.cdp_socket);
	free(key);
	free(tr.vnc_socket);
	free(tr.cdp_socket);
	return rc;
}

/* --- navigate --------------------------------------------------------------- */

static int url_allowed(const char *url)
{
	static const char *const schemes[] = {"http://", "https://", "file://", "about:", NULL};
	for (size_t i = 0; schemes[i]; i++)
		if (!strncasecmp(url, schemes[i], strlen(schemes[i])))
			return 1;
	return 0;
}

static cJSON *page_state(struct rk_browser *b, struct rk_error *err)
{
	cJSON *v = NULL;
	if (evaluate(b, "() => " RK_BROWSER_JS_STATE, NULL, CALL_TIMEOUT_MS, &v, err) != 0)
		return NULL;
	return v;
}

int rk_browser_navigate(struct rk_browser *b, const char *url, int timeout_ms, cJSON **out, struct rk_error *err)
{
	*out = NULL;
	if (!url || !*url)
		return rk_error_set(err, RK_EINVALID, "browser_navigate: url is required");
	if (!url_allowed(url))
		return rk_error_set(err, RK_EINVALID,
				    "browser_navigate: url must start with http://, https://, file:// or about:");
	if (timeout_ms <= 0)
		timeout_ms = RK_BROWSER_NAVIGATE_TIMEOUT_MS;
	if (timeout_ms > RK_BROWSER_TIMEOUT_MAX_MS)
		return rk_error_set(err, RK_EINVALID, "browser_navigate: timeout_ms must be at most %d",
				    RK_BROWSER_TIMEOUT_MAX_MS);
	int64_t start = rk_monotonic_ms(), deadline = start + timeout_ms;
	int loads = b->loads;
	cJSON *p = cJSON_CreateObject(), *res = NULL;
	cJSON_AddStringToObject(p, "url", url);
	int rc = call_ex(b, "Page.navigate", p, 1, timeout_ms, &res, err);
	if (rc)
		return rc;
	const char *fail = rk_json_string(res, "errorText", NULL);
	if (fail) {
		rc = rk_error_set(err, RK_EUNAVAILABLE, "browser_navigate: %s could not be loaded: %s", url, fail);
		cJSON_Delete(res);
		return rc;
	}
	/* a same-document navigation (a #fragment) has no load event */
	int same_doc = !cJSON_GetObjectItemCaseSensitive(res, "loaderId");
	cJSON_Delete(res);
	while (!same_doc && b->loads == loads && !b->detached) {
		cJSON *m = NULL;
		rc = read_msg(b, deadline, &m, err);
		if (rc == -RK_ETIMEOUT)
			return rk_error_set(err, RK_ETIMEOUT,
					    "browser_navigate: %s did not finish loading within %d ms (it is still "
					    "loading; browser_snapshot shows what is there)",
					    url, timeout_ms);
		if (rc)
			return rc;
		const char *ev = rk_json_string(m, "method", NULL);
		if (ev)
			on_event(b, m, ev);
		cJSON_Delete(m);
	}
	if (b->detached)
		return rk_error_set(err, RK_EUNAVAILABLE,
				    "browser_navigate: the tab closed or crashed while loading %s", url);
	cJSON *st = page_state(b, err);
	if (!st)
		return -(int)rk_err(err)->code;
	cJSON_AddNumberToObject(st, "load_ms", (double)(rk_monotonic_ms() - start));
	*out = st;
	return 0;
}

/* --- snapshot ----------------------------------------------------------------- */

int rk_browser_snapshot(struct rk_browser *b, int screenshot, cJSON **out, unsigned char **png, size_t *png_len,
			struct rk_error *err)
{
	*out = NULL;
	if (png)
		*png = NULL, *png_len = 0;
	char args[32];
	snprintf(args, sizeof(args), "%d", RK_BROWSER_SNAPSHOT_MAX);
	cJSON *v = NULL;
	int rc = evaluate(b, RK_BROWSER_JS_SNAPSHOT, args, CALL_TIMEOUT_MS, &v, err);
	if (rc)
		return rc;
	if (!cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return rk_error_set(err, RK_EFAILED, "browser_snapshot: the page gave no snapshot");
	}
	if (screenshot && png) {
		cJSON *p = cJSON_CreateObject(), *res = NULL;
		cJSON_AddStringToObject(p, "format", "png");
		rc = call(b, "Page.captureScreenshot", p, &res, err);
		if (rc == 0) {
			struct rk_buf raw;
			rk_buf_init(&raw);
			if (rk_base64_decode(rk_json_string(res, "data", ""), &raw) != 0 || raw.len == 0) {
				rc = rk_error_set(err, RK_EFAILED,
						  "browser_snapshot: the screenshot is not base64 PNG");
				rk_buf_release(&raw);
			} else {
				*png = (unsigned char *)rk_buf_detach(&raw, png_len);
			}
		}
		cJSON_Delete(res);
		if (rc) {
			cJSON_Delete(v);
			return rc;
		}
	}
	*out = v;
	return 0;
}

/* --- act ---------------------------------------------------------------------- */

enum act_kind { ACT_CLICK, ACT_TYPE, ACT_SELECT, ACT_PRESS, ACT_HOVER, ACT_SCROLL, ACT_FILL_SECRET };
static const char *const act_names[] = {"click", "type", "select", "press", "hover", "scroll", "fill_secret", NULL};

static int act_kind(const cJSON *a, struct rk_error *err)
{
	if (!cJSON_IsObject(a))
		return rk_error_set(err, RK_EINVALID, "browser_act: the action must be a JSON object");
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(a, "action");
	if (!cJSON_IsString(k))
		return rk_error_set(err, RK_EINVALID,
				    "browser_act: action is required (click, type, select, press, hover, scroll, "
				    "fill_secret)");
	for (int i = 0; act_names[i]; i++)
		if (!strcmp(k->valuestring, act_names[i]))
			return i;
	return rk_error_set(err, RK_EINVALID,
			    "browser_act: unknown action '%s' (click, type, select, press, hover, scroll, fill_secret)",
			    k->valuestring);
}

/* A key the page understands: name, code, virtual key code, the text it types. */
struct key_def {
	const char *name, *code;
	int vk;
	const char *text;
};
static const struct key_def keys[] = {
	{"Enter", "Enter", 13, "\r"},
	{"Tab", "Tab", 9, NULL},
	{"Escape", "Escape", 27, NULL},
	{"Backspace", "Backspace", 8, NULL},
	{"Delete", "Delete", 46, NULL},
	{"ArrowUp", "ArrowUp", 38, NULL},
	{"ArrowDown", "ArrowDown", 40, NULL},
	{"ArrowLeft", "ArrowLeft", 37, NULL},
	{"ArrowRight", "ArrowRight", 39, NULL},
	{"Home", "Home", 36, NULL},
	{"End", "End", 35, NULL},
	{"PageUp", "PageUp", 33, NULL},
	{"PageDown", "PageDown", 34, NULL},
	{"Space", "Space", 32, " "},
	{NULL, NULL, 0, NULL},
};

/* "ctrl+shift+a" -> modifier bits (Alt 1, Ctrl 2, Meta 4, Shift 8) and the key. */
static int parse_key(const char *combo, int *mods, struct key_def *out, char *one, struct rk_error *err)
{
	*mods = 0;
	char buf[64];
	if (!combo || !*combo || strlen(combo) >= sizeof(buf))
		return rk_error_set(err, RK_EINVALID, "browser_act: press needs key (e.g. \"Enter\", \"ctrl+a\")");
	snprintf(buf, sizeof(buf), "%s", combo);
	char *last = buf, *plus;
	while ((plus = strchr(last, '+')) && plus[1]) {
		*plus = '\0';
		if (!strcasecmp(last, "ctrl") || !strcasecmp(last, "control"))
			*mods |= 2;
		else if (!strcasecmp(last, "shift"))
			*mods |= 8;
		else if (!strcasecmp(last, "alt"))
			*mods |= 1;
		else if (!strcasecmp(last, "meta") || !strcasecmp(last, "super"))
			*mods |= 4;
		else
			return rk_error_set(err, RK_EINVALID, "browser_act: unknown modifier '%s' in '%s'", last,
					    combo);
		last = plus + 1;
	}
	for (size_t i = 0; keys[i].name; i++) {
		if (!strcasecmp(last, keys[i].name) || (!strcasecmp(last, "Return") && keys[i].vk == 13) ||
		    (!strcasecmp(last, "Esc") && keys[i].vk == 27)) {
			*out = keys[i];
			return 0;
		}
	}
	if (strlen(last) == 1 && last[0] > ' ' && last[0] < 127) {
		char c = last[0];
		one[0] = c, one[1] = '\0';
		char up = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
		out->name = one;
		out->code = NULL;
		out->vk = (up >= 'A' && up <= 'Z') || (up >= '0' && up <= '9') ? up : 0;
		out->text = *mods & ~8 ? NULL : one; /* ctrl+a selects, it does not type */
		return 0;
	}
	return rk_error_set(err, RK_EINVALID,
			    "browser_act: unknown key '%s' (Enter, Tab, Escape, Backspace, Delete, arrows, Home, End, "
			    "PageUp, PageDown, Space, or one character)",
			    last);
}

int rk_browser_action_check(const cJSON *a, struct rk_error *err)
{
	int k = act_kind(a, err);
	if (k < 0)
		return k;
	const char *ref = NULL, *s = NULL;
	int need_ref = k == ACT_CLICK || k == ACT_TYPE || k == ACT_SELECT || k == ACT_HOVER || k == ACT_FILL_SECRET;
	int rc = rk_json_get_string(a, "ref", need_ref, &ref, "browser_act", err);
	if (rc)
		return rc;
	if (ref && (strlen(ref) < 2 || ref[0] != 'e' || strspn(ref + 1, "0123456789") != strlen(ref + 1)))
		return rk_error_set(err, RK_EINVALID, "browser_act: ref '%s' is not a snapshot ref (like \"e12\")",
				    ref);
	if (k == ACT_TYPE && (rc = rk_json_get_string(a, "text", 1, &s, "browser_act", err)))
		return rc;
	if (k == ACT_SELECT && (rc = rk_json_get_string(a, "value", 1, &s, "browser_act", err)))
		return rc;
	if (k == ACT_FILL_SECRET) {
		if ((rc = rk_json_get_string(a, "name", 1, &s, "browser_act", err)))
			return rc;
		if ((rc = rk_json_get_string(a, "part", 0, &s, "browser_act", err)))
			return rc;
		if (s && strcmp(s, "username") != 0 && strcmp(s, "password") != 0)
			return rk_error_set(err, RK_EINVALID, "browser_act: part must be username or password");
	}
	if (k == ACT_PRESS) {
		if ((rc = rk_json_get_string(a, "key", 1, &s, "browser_act", err)))
			return rc;
		int mods;
		struct key_def kd;
		char one[2];
		if ((rc = parse_key(s, &mods, &kd, one, err)))
			return rc;
	}
	int64_t v;
	if ((rc = rk_json_get_int(a, "dx", -10000, 10000, 0, &v, "browser_act", err)) ||
	    (rc = rk_json_get_int(a, "dy", -10000, 10000, 400, &v, "browser_act", err)))
		return rc;
	int b;
	if ((rc = rk_json_get_bool(a, "submit", 0, &b, "browser_act", err)) ||
	    (rc = rk_json_get_bool(a, "clear", 1, &b, "browser_act", err)))
		return rc;
	return 0;
}

static int ref_error(const char *ref, struct rk_error *err)
{
	return rk_error_set(err, RK_ENOTFOUND,
			    "browser_act: ref %s is not on the page any more (take a new browser_snapshot)", ref);
}

static int point_of(struct rk_browser *b, const char *ref, double *x, double *y, struct rk_error *err)
{
	char *arg = rk_xasprintf("\"%s\"", ref);
	cJSON *v = NULL;
	int rc = evaluate(b, RK_BROWSER_JS_POINT, arg, CALL_TIMEOUT_MS, &v, err);
	free(arg);
	if (rc)
		return rc;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone")))
		rc = ref_error(ref, err);
	else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "disabled")))
		rc = rk_error_set(err, RK_ECONFLICT, "browser_act: %s is disabled", ref);
	else {
		const cJSON *jx = cJSON_GetObjectItemCaseSensitive(v, "x"),
			    *jy = cJSON_GetObjectItemCaseSensitive(v, "y");
		if (!cJSON_IsNumber(jx) || !cJSON_IsNumber(jy))
			rc = rk_error_set(err, RK_EFAILED, "browser_act: no position for %s", ref);
		else
			*x = jx->valuedouble, *y = jy->valuedouble;
	}
	cJSON_Delete(v);
	return rc;
}

static int mouse(struct rk_browser *b, const char *type, double x, double y, int clicks, double dx, double dy,
		 struct rk_error *err)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", type);
	cJSON_AddNumberToObject(p, "x", x);
	cJSON_AddNumberToObject(p, "y", y);
	if (clicks) {
		cJSON_AddStringToObject(p, "button", "left");
		cJSON_AddNumberToObject(p, "clickCount", clicks);
	}
	if (!strcmp(type, "mouseWheel")) {
		cJSON_AddNumberToObject(p, "deltaX", dx);
		cJSON_AddNumberToObject(p, "deltaY", dy);
	}
	return call(b, "Input.dispatchMouseEvent", p, NULL, err);
}

static int key_event(struct rk_browser *b, const char *type, const struct key_def *k, int mods, struct rk_error *err)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", type);
	cJSON_AddStringToObject(p, "key", k->name);
	if (k->code)
		cJSON_AddStringToObject(p, "code", k->code);
	if (k->vk) {
		cJSON_AddNumberToObject(p, "windowsVirtualKeyCode", k->vk);
		cJSON_AddNumberToObject(p, "nativeVirtualKeyCode", k->vk);
	}
	if (mods)
		cJSON_AddNumberToObject(p, "modifiers", mods);
	if (k->text && !strcmp(type, "keyDown")) {
		cJSON_AddStringToObject(p, "text", k->text);
		cJSON_AddStringToObject(p, "unmodifiedText", k->text);
	}
	return call(b, "Input.dispatchKeyEvent", p, NULL, err);
}

static int press(struct rk_browser *b, const char *combo, struct rk_error *err)
{
	int mods;
	struct key_def k;
	char one[2];
	int rc = parse_key(combo, &mods, &k, one, err);
	if (rc == 0)
		rc = key_event(b, k.text ? "keyDown" : "rawKeyDown", &k, mods, err);
	if (rc == 0)
		rc = key_event(b, "keyUp", &k, mods, err);
	return rc;
}

/* After an input that may navigate: the new document, once it is there. */
static cJSON *settled_state(struct rk_browser *b, struct rk_error *err)
{
	int64_t until = rk_monotonic_ms() + ACT_SETTLE_MS;
	rk_sleep_ms(50); /* a click's navigation starts after its event */
	cJSON *st = NULL;
	for (;;) {
		struct rk_error e2;
		st = page_state(b, &e2);
		if (st && !strcmp(rk_json_string(st, "ready", ""), "complete"))
			break;
		if (b->gone) {
			cJSON_Delete(st);
			gone_error(b, err);
			return NULL;
		}
		if (rk_monotonic_ms() > until)
			break; /* still loading: say so rather than wait on */
		cJSON_Delete(st);
		st = NULL;
		rk_sleep_ms(50);
	}
	if (!st)
		rk_error_set(err, RK_EFAILED, "browser_act: the page did not answer after the action");
	return st;
}

/* --- fill_secret --------------------------------------------------------------
 * The page is not trusted with anything: where the field is and what origin
 * its frame has come from the browser (the frame tree), the scripts run in
 * rakazo's isolated world, and the value goes from here to the field as CDP
 * input (Input.insertText), in no JavaScript context. Document requests are
 * held meanwhile (Fetch), so the page cannot navigate away under the typing;
 * right before typing, the frame, its document and the focus are checked
 * again. */

/* Holds every document request (a navigation) of the page until
 * release_navigations. */
static int hold_navigations(struct rk_browser *b, struct rk_error *err)
{
	cJSON *p = cJSON_CreateObject(), *pat = cJSON_CreateObject();
	cJSON_AddStringToObject(pat, "urlPattern", "*");
	cJSON_AddStringToObject(pat, "resourceType", "Document");
	cJSON_AddStringToObject(pat, "requestStage", "Request");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(p, "patterns"), pat);
	int rc = call(b, "Fetch.enable", p, NULL, err);
	if (rc == 0)
		b->holding = 1;
	return rc;
}

static void release_navigations(struct rk_browser *b)
{
	if (!b->holding || b->gone)
		return;
	b->holding = 0; /* the calls below are answered even with a navigation pending */
	struct rk_error e2;
	cJSON *held;
	while ((held = b->held) != NULL) { /* more may come while these go on */
		b->held = NULL;
		const cJSON *id;
		cJSON_ArrayForEach(id, held)
		{
			cJSON *p = cJSON_CreateObject();
			cJSON_AddStringToObject(p, "requestId", id->valuestring);
			call(b, "Fetch.continueRequest", p, NULL, &e2);
		}
		cJSON_Delete(held);
	}
	call(b, "Fetch.disable", NULL, NULL, &e2); /* lets go of any paused after the last continue */
	cJSON_Delete(b->held);
	b->held = NULL;
	free(b->nav_url);
	b->nav_url = NULL;
	b->filling = b->fill_frame = NULL;
}

/* Finds frame id under node; on the way back, *mismatch is the origin of
 * the first frame above it whose origin is not its own. */
static int find_frame(const cJSON *node, const char *id, const cJSON **found, const char **mismatch)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(node, "frame"), *k;
	if (!strcmp(rk_json_string(f, "id", ""), id)) {
		*found = f;
		return 1;
	}
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(node, "childFrames"))
	{
		if (find_frame(k, id, found, mismatch)) {
			const char *o = rk_json_string(f, "securityOrigin", "");
			if (!*mismatch && strcmp(o, rk_json_string(*found, "securityOrigin", "")) != 0)
				*mismatch = o;
			return 1;
		}
	}
	return 0;
}

/* The origin of frame id as the browser knows it and the loader of its
 * document (both malloc'd). A frame inside a page of another origin is
 * RK_EDENIED; a frame that is not there any more, *origin NULL. */
static int frame_facts(struct rk_browser *b, const char *id, const char *name, char **origin, char **loader,
		       struct rk_error *err)
{
	*origin = *loader = NULL;
	cJSON *res = NULL;
	int rc = call(b, "Page.getFrameTree", NULL, &res, err);
	const cJSON *f = NULL;
	const char *mismatch = NULL;
	if (rc == 0 && find_frame(cJSON_GetObjectItemCaseSensitive(res, "frameTree"), id, &f, &mismatch)) {
		if (mismatch)
			rc = rk_error_set(err, RK_EDENIED,
					  "browser_act: the field is in a frame of %s inside a page of %s: secret '%s' "
					  "refused",
					  rk_json_string(f, "securityOrigin", "?"), mismatch, name);
		else {
			*origin = rk_xstrdup(rk_json_string(f, "securityOrigin", "null"));
			*loader = rk_xstrdup(rk_json_string(f, "loaderId", ""));
		}
	}
	cJSON_Delete(res);
	return rc;
}

/* The id of the frame holding ref's document (malloc'd), asked of the
 * browser for the frame element our world finds; the top frame's is the
 * page target's. */
static int field_frame(struct rk_browser *b, const char *world, const char *arg, const char *ref, char **frame,
		       struct rk_error *err)
{
	*frame = NULL;
	cJSON *v = NULL, *res = NULL;
	char *obj = NULL;
	int rc = run_in(b, world, RK_BROWSER_JS_FRAME_OF, arg, CALL_TIMEOUT_MS, &v, &obj, err);
	if (rc == 0 && !obj && cJSON_IsNull(v)) {
		*frame = rk_xstrdup(b->target);
	} else if (rc == 0 && !obj) {
		rc = ref_error(ref, err);
	} else if (rc == 0) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "objectId", obj);
		if ((rc = call(b, "DOM.describeNode", p, &res, err)) == 0) {
			const char *id = rk_json_string(cJSON_GetObjectItemCaseSensitive(res, "node"), "frameId", NULL);
			if (id)
				*frame = rk_xstrdup(id);
			else
				rc = rk_error_set(err, RK_EFAILED, "browser_act: the browser names no frame for %s",
						  ref);
		}
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "objectId", obj);
		struct rk_error e2;
		call(b, "Runtime.releaseObject", p, NULL, &e2);
	}
	cJSON_Delete(v);
	cJSON_Delete(res);
	free(obj);
	return rc;
}

/* Right before typing: frame still holds the document (loader) of origin it
 * had, our world is still that page's, and the focus is on ref. */
static int still_there(struct rk_browser *b, const char *world, const char *arg, const char *ref, const char *frame,
		       const char *origin, const char *loader, const char *name, struct rk_error *err)
{
	char *o = NULL, *l = NULL;
	cJSON *v = NULL;
	struct rk_error e2;
	rk_error_clear(&e2);
	int rc = frame_facts(b, frame, name, &o, &l, err);
	if (rc == 0 && (!o || strcmp(o, origin) != 0 || strcmp(l, loader) != 0))
		rc = rk_error_set(err, RK_EDENIED,
				  "browser_act: the page navigated (to %s) before secret '%s' was typed: refused",
				  o ? o : "another page", name);
	if (rc == 0 && (rc = run_in(b, world, RK_BROWSER_JS_FOCUSED, arg, CALL_TIMEOUT_MS, &v, NULL, &e2)) != 0) {
		if (world_gone(&e2)) /* our world went with its document */
			rc = rk_error_set(err, RK_EDENIED,
					  "browser_act: the page navigated before secret '%s' was typed: refused",
					  name);
		else if (err)
			*err = e2;
	}
	if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone")))
		rc = rk_error_set(err, RK_EDENIED,
				  "browser_act: %s left the page before secret '%s' was typed: refused", ref, name);
	else if (rc == 0 && cJSON_GetObjectItemCaseSensitive(v, "frame"))
		rc = rk_error_set(err, RK_EDENIED,
				  "browser_act: the focus moved to a frame of another origin (%s) before secret '%s' was "
				  "typed: refused",
				  rk_json_string(v, "frame", "?"), name);
	else if (rc == 0 && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok")))
		rc = rk_error_set(err, RK_EDENIED,
				  "browser_act: the focus moved off %s (to %s) before secret '%s' was typed: refused",
				  ref, rk_json_string(v, "elsewhere", "?"), name);
	cJSON_Delete(v);
	free(o);
	free(l);
	return rc;
}

/* Types text into the focused element with Input.insertText. The message is
 * built here in one allocation and wiped: no copy of the value is left. */
static int insert_text(struct rk_browser *b, const char *text, size_t len, struct rk_error *err)
{
	if (b->gone)
		return gone_error(b, err);
	int64_t id = b->next_id++;
	struct rk_buf m;
	rk_buf_init(&m);
	rk_buf_grow(&m, 6 * len + 128 + strlen(b->session)); /* the longest escape is \u00xx */
	rk_buf_printf(&m, "{\"id\":%lld,\"sessionId\":\"%s\",\"method\":\"Input.insertText\",\"params\":{\"text\":\"",
		      (long long)id, b->session);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '"' || c == '\\')
			rk_buf_printf(&m, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			rk_buf_printf(&m, "\\u%04x", c);
		else
			rk_buf_add(&m, (const char *)&c, 1);
	}
	rk_buf_adds(&m, "\"}}");
	int rc = send_text(b, m.data, m.len + 1, err); /* with its NUL */
	sodium_memzero(m.data, m.cap);
	rk_buf_release(&m);
	return rc ? rc : await_reply(b, id, "Input.insertText", CALL_TIMEOUT_MS, NULL, err);
}

/* Types secret name into ref; the value stays in *value (for the result's
 * redaction) until the caller frees it with rk_secret_value_free. */
static int fill_secret(struct rk_browser *b, const cJSON *a, const struct rk_browser_secrets *sec, char **value,
		       size_t *vlen, struct rk_error *err)
{
	const char *ref = rk_json_string(a, "ref", ""), *name = rk_json_string(a, "name", "");
	const char *part = rk_json_string(a, "part", NULL);
	if (!sec || !sec->eng || !sec->actor)
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "browser_act: fill_secret needs a person's or a bot's secrets here");
	char *arg = rk_xasprintf("\"%s\"", ref), *world = NULL, *frame = NULL, *origin = NULL, *loader = NULL;
	char *kind = NULL;
	cJSON *v = NULL;
	int rc = hold_navigations(b, err);
	b->filling = name;
	/* the field, focused by our world */
	if (rc == 0 && (rc = evaluate(b, RK_BROWSER_JS_FILL_FOCUS, arg, CALL_TIMEOUT_MS, &v, err)) == 0) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone")))
			rc = ref_error(ref, err);
		else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok")))
			rc = rk_error_set(err, RK_ECONFLICT,
					  "browser_act: %s is not a text field that can take the focus", ref);
	}
	if (rc)
		goto out;
	world = rk_xstrdup(b->world); /* from here on, this document's world only */
	/* its frame and that frame's origin, as the browser knows them */
	if ((rc = field_frame(b, world, arg, ref, &frame, err)) != 0)
		goto out;
	b->fill_frame = frame;
	if ((rc = frame_facts(b, frame, name, &origin, &loader, err)) != 0)
		goto out;
	if (!origin) {
		rc = rk_error_set(err, RK_EDENIED, "browser_act: the field's frame went away: secret '%s' refused",
				  name);
		goto out;
	}
	/* the value is decrypted only for that origin */
	if ((rc = rk_secret_reveal_for_origin(sec->eng, sec->actor, name, origin, value, vlen, &kind, err)) != 0)
		goto out;
	const char *text = *value;
	size_t tlen = *vlen;
	if (rk_secret_auth_of(kind) == RK_SECRET_BASIC) {
		const char *colon = memchr(text, ':', tlen);
		if (!part || !colon)
			rc = rk_error_set(err, RK_EINVALID,
					  "browser_act: secret '%s' is a login (user:password): give part username or "
					  "password",
					  name);
		else if (!strcmp(part, "username"))
			tlen = (size_t)(colon - text);
		else
			tlen -= (size_t)(colon + 1 - text), text = colon + 1;
	} else if (part) {
		rc = rk_error_set(err, RK_EINVALID,
				  "browser_act: secret '%s' is not a login (user:password): leave out part", name);
	}
	if (rc == 0 && memchr(text, '\0', tlen))
		rc = rk_error_set(err, RK_EINVALID, "browser_act: secret '%s' holds a NUL byte and cannot be typed",
				  name);
	if (rc == 0 && (rc = still_there(b, world, arg, ref, frame, origin, loader, name, err)) == 0)
		rc = insert_text(b, text, tlen, err);
out:
	release_navigations(b);
	if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "submit")))
		rc = press(b, "Enter", err);
	cJSON_Delete(v);
	free(arg);
	free(world);
	free(frame);
	free(origin);
	free(loader);
	free(kind);
	return rc;
}

int rk_browser_act(struct rk_browser *b, const cJSON *a, const struct rk_browser_secrets *sec, cJSON **out,
		   struct rk_error *err)
{
	*out = NULL;
	int rc = rk_browser_action_check(a, err);
	if (rc)
		return rc;
	int k = act_kind(a, err);
	const char *ref = rk_json_string(a, "ref", NULL);
	double x = 0, y = 0;
	cJSON *v = NULL;
	char *secret = NULL;
	size_t secret_len = 0;
	switch (k) {
	case ACT_FILL_SECRET:
		rc = fill_secret(b, a, sec, &secret, &secret_len, err);
		break;
	case ACT_CLICK:
		if ((rc = point_of(b, ref, &x, &y, err)) == 0 &&
		    (rc = mouse(b, "mouseMoved", x, y, 0, 0, 0, err)) == 0 &&
		    (rc = mouse(b, "mousePressed", x, y, 1, 0, 0, err)) == 0)
			rc = mouse(b, "mouseReleased", x, y, 1, 0, 0, err);
		break;
	case ACT_HOVER:
		if ((rc = point_of(b, ref, &x, &y, err)) == 0)
			rc = mouse(b, "mouseMoved", x, y, 0, 0, 0, err);
		break;
	case ACT_TYPE: {
		int clear = 1, submit = 0;
		rk_json_get_bool(a, "clear", 1, &clear, "browser_act", err);
		rk_json_get_bool(a, "submit", 0, &submit, "browser_act", err);
		char *args = rk_xasprintf("\"%s\", %s", ref, clear ? "true" : "false");
		rc = evaluate(b, RK_BROWSER_JS_FOCUS, args, CALL_TIMEOUT_MS, &v, err);
		free(args);
		if (rc)
			break;
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone"))) {
			rc = ref_error(ref, err);
			break;
		}
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"))) {
			rc = rk_error_set(err, RK_ECONFLICT,
					  "browser_act: %s cannot take the focus, so it cannot be typed into", ref);
			break;
		}
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "text", rk_json_string(a, "text", ""));
		if ((rc = call(b, "Input.insertText", p, NULL, err)) == 0 && submit)
			rc = press(b, "Enter", err);
		break;
	}
	case ACT_SELECT: {
		cJSON *args = cJSON_CreateArray();
		cJSON_AddItemToArray(args, cJSON_CreateString(ref));
		cJSON_AddItemToArray(args, cJSON_CreateString(rk_json_string(a, "value", "")));
		char *text = cJSON_PrintUnformatted(args);
		cJSON_Delete(args);
		text[strlen(text) - 1] = '\0'; /* the arguments without the array's brackets */
		rc = evaluate(b, RK_BROWSER_JS_SELECT, text + 1, CALL_TIMEOUT_MS, &v, err);
		free(text);
		if (rc)
			break;
		const cJSON *opts = cJSON_GetObjectItemCaseSensitive(v, "options");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone"))) {
			rc = ref_error(ref, err);
		} else if (cJSON_GetObjectItemCaseSensitive(v, "notSelect")) {
			rc = rk_error_set(err, RK_EINVALID, "browser_act: %s is a %s, not a select", ref,
					  rk_json_string(v, "notSelect", "?"));
		} else if (opts) {
			char *list = cJSON_PrintUnformatted(opts);
			rc = rk_error_set(err, RK_ENOTFOUND, "browser_act: %s has no option '%s' (options: %s)", ref,
					  rk_json_string(a, "value", ""), list);
			free(list);
		}
		break;
	}
	case ACT_PRESS:
		if (ref) {
			char *args = rk_xasprintf("\"%s\", false", ref);
			rc = evaluate(b, RK_BROWSER_JS_FOCUS, args, CALL_TIMEOUT_MS, &v, err);
			free(args);
			if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "gone")))
				rc = ref_error(ref, err);
		}
		if (rc == 0)
			rc = press(b, rk_json_string(a, "key", ""), err);
		break;
	case ACT_SCROLL: {
		int64_t dx, dy;
		rk_json_get_int(a, "dx", -10000, 10000, 0, &dx, "browser_act", err);
		rk_json_get_int(a, "dy", -10000, 10000, 400, &dy, "browser_act", err);
		if (ref) {
			rc = point_of(b, ref, &x, &y, err);
		} else if ((rc = evaluate(b, "() => " RK_BROWSER_JS_VIEWPORT, NULL, CALL_TIMEOUT_MS, &v, err)) == 0) {
			x = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "x"));
			y = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "y"));
		}
		if (rc == 0)
			rc = mouse(b, "mouseWheel", x, y, 0, (double)dx, (double)dy, err);
		break;
	}
	}
	cJSON_Delete(v);
	cJSON *st = rc ? NULL : settled_state(b, err);
	if (st && secret) { /* the value is in no result, in any of its forms */
		char *text = cJSON_PrintUnformatted(st);
		struct rk_buf t;
		rk_buf_init(&t);
		rk_buf_adds(&t, text);
		rk_free_secret(&text);
		rk_secret_redact(&t, secret, secret_len);
		cJSON_Delete(st);
		st = cJSON_ParseWithLength(t.data, t.len);
		sodium_memzero(t.data, t.len);
		rk_buf_release(&t);
	}
	if (secret)
		rk_secret_value_free(secret, secret_len);
	if (rc)
		return rc;
	if (!st)
		return rk_err(err)->code ? -(int)rk_err(err)->code
					 : rk_error_set(err, RK_EFAILED, "browser_act: no page state");
	cJSON_AddStringToObject(st, "action", act_names[k]);
	if (ref)
		cJSON_AddStringToObject(st, "ref", ref);
	*out = st;
	return 0;
}
