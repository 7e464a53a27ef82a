/* The daytona provider: a libcurl client of Daytona's REST API for sandbox
 * lifecycle (create, get, start, stop, delete) and of the toolbox each
 * sandbox serves (process execution and sessions, files, computer use).
 *
 * Configuration: DAYTONA_API_KEY (or "daytona": {"api_key": ...} in the
 * config file), DAYTONA_API_URL (default https://app.daytona.io/api). The key
 * travels only in the Authorization header; it is never logged, never put in
 * an error and never passed into the sandbox.
 *
 * Stop stops the sandbox; with the provider option {"archive": true} it is
 * then archived as well, and a later provision starts it from the archive.
 *
 * The ref is the sandbox id. The toolbox address and the workspace path
 * (<the sandbox user's home>/rakazo-home) are cached in RUN_DIR/daytona.json.
 *
 * Commands run in a session of their own (POST .../session/ID/exec with
 * runAsync) under the shared wrapper (remote.c): output is polled from the
 * command's logs, stdin goes through the session input call as base64 lines,
 * signals through a second command. Daytona gives no terminal here: a tty
 * request is refused. Display 0 is Daytona's computer use (screenshot,
 * mouse, keyboard calls); displays 1..7 are extra Team screens started with
 * shell commands in the same sandbox (Xvfb :(i+1), x11vnc view port 6080+2i,
 * control port 6081+2i), captured with ImageMagick and driven by xdotool. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/provider.h"
#include "providers/remote.h"

#define DEFAULT_URL "https://app.daytona.io/api"
#define WAIT_MS 120000
#define EXTRA_SCREENS_MAX 8

struct dt {
	char *base;    /* the API, no trailing slash */
	char *auth;    /* "Authorization: Bearer ..." */
	char *id;      /* the sandbox */
	char *toolbox; /* TOOLBOX_PROXY/ID */
	char *ws;      /* the workspace in the sandbox */
	char *run_dir;
};

static void dt_free(void *p)
{
	struct dt *d = p;
	if (!d)
		return;
	free(d->base);
	if (d->auth) {
		memset(d->auth, 0, strlen(d->auth));
		free(d->auth);
	}
	free(d->id);
	free(d->toolbox);
	free(d->ws);
	free(d->run_dir);
	free(d);
}

static struct dt *dt_new(struct rk_error *err)
{
	char *key = rk_http_secret("DAYTONA_API_KEY", "daytona", "api_key");
	if (!key) {
		rk_error_set(err, RK_EUNAVAILABLE, "daytona needs an API key: set DAYTONA_API_KEY");
		return NULL;
	}
	struct dt *d = rk_xcalloc(1, sizeof(*d));
	const char *url = getenv("DAYTONA_API_URL");
	d->base = rk_xstrdup(url && *url ? url : DEFAULT_URL);
	size_t n = strlen(d->base);
	while (n > 0 && d->base[n - 1] == '/')
		d->base[--n] = 0;
	d->auth = rk_xasprintf("Authorization: Bearer %s", key);
	memset(key, 0, strlen(key));
	free(key);
	return d;
}

/* One call; body is JSON text (or raw with ct). */
static int call(struct dt *d, const char *method, const char *url, const char *body, size_t len, const char *ct,
		int mutating, const char *what, struct rk_http_response *r, struct rk_error *err)
{
	const char *headers[] = {d->auth, "Accept: application/json", NULL};
	struct rk_http_request req = {
		.method = method,
		.url = url,
		.headers = headers,
		.content_type = ct,
		.body = body,
		.body_len = body ? (len ? len : strlen(body)) : 0,
		.mutating = mutating,
		.what = what,
		.timeout_ms = 120000,
	};
	return rk_http_do(&req, r, err);
}

static cJSON *call_json(struct dt *d, const char *method, const char *url, const cJSON *body, int mutating,
			const char *what, long *status, struct rk_error *err)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = call(d, method, url, text, 0, NULL, mutating, what, &r, err);
	if (status)
		*status = r.status;
	cJSON *doc = NULL;
	if (rc == 0) {
		doc = r.body.len ? rk_json_parse(r.body.data, r.body.len, what, err) : cJSON_CreateObject();
	}
	rk_http_response_release(&r);
	free(text);
	return doc;
}

/* --- the sandbox's addresses ------------------------------------------------ */

static char *cache_path(const char *run_dir)
{
	return rk_path_join(run_dir, "daytona.json");
}

static int fetch_toolbox(struct dt *d, struct rk_error *err)
{
	char *url = rk_xasprintf("%s/sandbox/%s", d->base, d->id);
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona get sandbox", NULL, err);
	free(url);
	if (!doc)
		return -rk_err(err)->code;
	const char *tb = rk_json_string(doc, "toolboxProxyUrl", NULL);
	int rc = 0;
	if (!tb || !*tb)
		rc = rk_error_set(err, RK_EFAILED, "daytona gave no toolbox address for sandbox %s", d->id);
	else {
		size_t n = strlen(tb);
		free(d->toolbox);
		d->toolbox = rk_xasprintf("%.*s/%s", (int)(n && tb[n - 1] == '/' ? n - 1 : n), tb, d->id);
	}
	cJSON_Delete(doc);
	return rc;
}

static int fetch_ws(struct dt *d, struct rk_error *err)
{
	char *url = rk_xasprintf("%s/user-home-dir", d->toolbox);
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona user home", NULL, err);
	free(url);
	if (!doc)
		return -rk_err(err)->code;
	const char *dir = rk_json_string(doc, "dir", NULL);
	int rc = 0;
	if (!dir || dir[0] != '/')
		rc = rk_error_set(err, RK_EFAILED, "daytona gave no home directory for sandbox %s", d->id);
	else {
		free(d->ws);
		d->ws = rk_xasprintf("%s/rakazo-home", strcmp(dir, "/") == 0 ? "" : dir);
	}
	cJSON_Delete(doc);
	return rc;
}

static void save_cache(struct dt *d)
{
	if (!d->run_dir)
		return;
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "id", d->id);
	cJSON_AddStringToObject(c, "toolbox", d->toolbox);
	cJSON_AddStringToObject(c, "ws", d->ws);
	char *text = cJSON_PrintUnformatted(c);
	char *path = cache_path(d->run_dir);
	if (rk_fs_mkdirs(d->run_dir, 0700, NULL) == 0)
		rk_fs_write_atomic(path, text, strlen(text), 0600, NULL);
	free(path);
	free(text);
	cJSON_Delete(c);
}

/* The sandbox of m with its addresses (from the cache, else asked). */
static struct dt *dt_open(const struct rk_machine *m, int need_addresses, struct rk_error *err)
{
	if (!m->ref || !*m->ref) {
		rk_error_set(err, RK_ENOTFOUND, "the computer has no daytona sandbox yet");
		return NULL;
	}
	struct dt *d = dt_new(err);
	if (!d)
		return NULL;
	d->id = rk_xstrdup(m->ref);
	d->run_dir = rk_xstrdup(m->run_dir);
	if (!need_addresses)
		return d;
	char *path = cache_path(m->run_dir);
	struct rk_buf b;
	rk_buf_init(&b);
	struct rk_error e2;
	if (rk_fs_read_all(path, 65536, &b, &e2) == 0) {
		cJSON *c = cJSON_ParseWithLength(b.data, b.len);
		const char *id = rk_json_string(c, "id", ""), *tb = rk_json_string(c, "toolbox", NULL),
			   *ws = rk_json_string(c, "ws", NULL);
		if (strcmp(id, d->id) == 0 && tb && ws) {
			d->toolbox = rk_xstrdup(tb);
			d->ws = rk_xstrdup(ws);
		}
		cJSON_Delete(c);
	}
	rk_buf_release(&b);
	free(path);
	if (d->toolbox && d->ws)
		return d;
	if (fetch_toolbox(d, err) < 0 || fetch_ws(d, err) < 0) {
		dt_free(d);
		return NULL;
	}
	save_cache(d);
	return d;
}

/* --- the remote ops over the toolbox ---------------------------------------- */

static int dt_run(void *ctx, const char *script, struct rk_buf *out, int *code, struct rk_error *err)
{
	struct dt *d = ctx;
	char *q = rk_remote_shq(script);
	char *cmd = rk_xasprintf("bash -c %s", q);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	cJSON_AddNumberToObject(body, "timeout", 600);
	char *url = rk_xasprintf("%s/process/execute", d->toolbox);
	cJSON *doc = call_json(d, "POST", url, body, 1, "daytona execute", NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	if (doc) {
		const cJSON *ec = cJSON_GetObjectItem(doc, "exitCode");
		*code = cJSON_IsNumber(ec) ? ec->valueint : 0;
		rk_buf_adds(out, rk_json_string(doc, "result", ""));
	}
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(url);
	free(cmd);
	free(q);
	return rc;
}

static int dt_upload(void *ctx, const char *path, const void *data, size_t len, struct rk_error *err)
{
	struct dt *d = ctx;
	char boundary[48];
	char *rnd = rk_id_new("b");
	snprintf(boundary, sizeof(boundary), "rakazo%s", rnd);
	free(rnd);
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_printf(&b,
		      "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload\"\r\n"
		      "Content-Type: application/octet-stream\r\n\r\n",
		      boundary);
	rk_buf_add(&b, data, len);
	rk_buf_printf(&b, "\r\n--%s--\r\n", boundary);
	char *ct = rk_xasprintf("multipart/form-data; boundary=%s", boundary);
	char *esc = rk_http_escape(path);
	char *url = rk_xasprintf("%s/files/upload-v2?path=%s", d->toolbox, esc);
	struct rk_http_response r;
	rk_http_response_init(&r);
	/* an upload writes the same bytes again: safe to repeat */
	int rc = call(d, "POST", url, b.data, b.len ? b.len : 1, ct, 0, "daytona upload", &r, err);
	rk_http_response_release(&r);
	free(url);
	free(esc);
	free(ct);
	rk_buf_release(&b);
	return rc;
}

static int dt_download(void *ctx, const char *path, size_t max_bytes, struct rk_buf *out, struct rk_error *err)
{
	struct dt *d = ctx;
	char *esc = rk_http_escape(path);
	char *url = rk_xasprintf("%s/files/info?path=%s", d->toolbox, esc);
	long status = 0;
	cJSON *info = call_json(d, "GET", url, NULL, 0, "daytona file info", &status, err);
	free(url);
	int rc = 0;
	if (!info) {
		rc = status == 404 ? rk_error_set(err, RK_ENOTFOUND, "no such file: %s", path)
				   : -(int)rk_err(err)->code;
	} else if (cJSON_IsTrue(cJSON_GetObjectItem(info, "isDir"))) {
		rc = rk_error_set(err, RK_EINVALID, "%s is a directory", path);
	} else if (cJSON_GetNumberValue(cJSON_GetObjectItem(info, "size")) > (double)max_bytes) {
		rc = rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
	}
	cJSON_Delete(info);
	if (rc == 0) {
		url = rk_xasprintf("%s/files/download?path=%s", d->toolbox, esc);
		struct rk_http_response r;
		rk_http_response_init(&r);
		rc = call(d, "GET", url, NULL, 0, NULL, 0, "daytona download", &r, err);
		if (rc < 0 && r.status == 404)
			rc = rk_error_set(err, RK_ENOTFOUND, "no such file: %s", path);
		else if (rc == 0 && r.body.len > max_bytes)
			rc = rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
		else if (rc == 0)
			rk_buf_add(out, r.body.data, r.body.len);
		rk_http_response_release(&r);
		free(url);
	}
	free(esc);
	return rc;
}

static const struct rk_remote_ops dt_remote = {
	.run = dt_run,
	.upload = dt_upload,
	.download = dt_download,
};

/* --- lifecycle ---------------------------------------------------------------- */

static enum rk_machine_state state_of(const char *s)
{
	if (!s)
		return RK_MACHINE_GONE;
	if (!strcmp(s, "started") || !strcmp(s, "starting") || !strcmp(s, "creating") || !strcmp(s, "restoring") ||
	    !strcmp(s, "pulling_snapshot") || !strcmp(s, "resizing"))
		return RK_MACHINE_RUNNING;
	if (!strcmp(s, "destroyed") || !strcmp(s, "destroying"))
		return RK_MACHINE_GONE;
	return RK_MACHINE_STOPPED; /* stopped, stopping, archived, archiving, error ... */
}

/* The sandbox's state name (malloc'd), or NULL with *gone when it is not found. */
static int get_state(struct dt *d, char **state, int *gone, struct rk_error *err)
{
	*state = NULL;
	*gone = 0;
	char *url = rk_xasprintf("%s/sandbox/%s", d->base, d->id);
	long status = 0;
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona get sandbox", &status, err);
	free(url);
	if (!doc) {
		if (status == 404) {
			*gone = 1;
			return 0;
		}
		return rk_error_pass(err);
	}
	*state = rk_xstrdup(rk_json_string(doc, "state", "unknown"));
	const char *tb = rk_json_string(doc, "toolboxProxyUrl", NULL);
	if (tb && *tb && !d->toolbox) {
		size_t n = strlen(tb);
		d->toolbox = rk_xasprintf("%.*s/%s", (int)(n && tb[n - 1] == '/' ? n - 1 : n), tb, d->id);
	}
	cJSON_Delete(doc);
	return 0;
}

/* Polls until the state is want (or an error state ends it). */
static int wait_state(struct dt *d, const char *want, struct rk_error *err)
{
	int64_t deadline = rk_monotonic_ms() + WAIT_MS;
	for (;;) {
		char *st = NULL;
		int gone = 0;
		int rc = get_state(d, &st, &gone, err);
		if (rc < 0)
			return rc;
		if (gone) {
			if (!strcmp(want, "destroyed"))
				return 0;
			return rk_error_set(err, RK_ENOTFOUND, "daytona sandbox %s is gone", d->id);
		}
		int done = !strcmp(st, want) || (!strcmp(want, "stopped") && !strcmp(st, "archived"));
		int bad = !strcmp(st, "error") || !strcmp(st, "build_failed");
		if (bad)
			rc = rk_error_set(err, RK_EFAILED, "daytona sandbox %s is in state %s", d->id, st);
		free(st);
		if (done || bad)
			return rc;
		if (rk_monotonic_ms() > deadline)
			return rk_error_set(err, RK_ETIMEOUT, "daytona sandbox %s did not reach %s in %d s", d->id,
					    want, WAIT_MS / 1000);
		rk_sleep_ms(250);
	}
}

static int post_verb(struct dt *d, const char *verb, struct rk_error *err)
{
	char *url = rk_xasprintf("%s/sandbox/%s/%s", d->base, d->id, verb);
	char what[64];
	snprintf(what, sizeof(what), "daytona %s sandbox", verb);
	cJSON *doc = call_json(d, "POST", url, NULL, 1, what, NULL, err);
	free(url);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	return rc;
}

static int dt_check(struct rk_error *err)
{
	struct dt *d = dt_new(err);
	if (!d)
		return -RK_EUNAVAILABLE;
	char *url = rk_xasprintf("%s/sandbox?labels=%%7B%%22rakazo.probe%%22%%3A%%221%%22%%7D", d->base);
	const char *headers[] = {d->auth, NULL};
	struct rk_http_request req = {.method = "GET",
				      .url = url,
				      .headers = headers,
				      .max_attempts = 1,
				      .timeout_ms = 5000,
				      .what = "daytona"};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&req, &r, err);
	if (rc < 0)
		rc = rk_error_prefix(err, "daytona at %s is not usable", d->base);
	if (rc < 0 && rk_err(err)->code != RK_EDENIED)
		rk_err(err)->code = RK_EUNAVAILABLE, rc = -RK_EUNAVAILABLE;
	rk_http_response_release(&r);
	free(url);
	dt_free(d);
	return rc;
}

/* A sandbox this computer's earlier create made, its reply lost. */
static char *find_by_label(struct dt *d, const struct rk_machine *m, struct rk_error *err)
{
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "rakazo.computer", m->computer_id);
	char *ft = cJSON_PrintUnformatted(f);
	char *esc = rk_http_escape(ft);
	char *url = rk_xasprintf("%s/sandbox?labels=%s", d->base, esc);
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona list sandboxes", NULL, err);
	char *id = NULL;
	if (cJSON_IsArray(doc) && doc->child)
		id = rk_xstrdup(rk_json_string(doc->child, "id", NULL));
	cJSON_Delete(doc);
	free(url);
	free(esc);
	free(ft);
	cJSON_Delete(f);
	return id;
}

static int create_sandbox(struct dt *d, const struct rk_machine *m, struct rk_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *labels = cJSON_AddObjectToObject(body, "labels");
	cJSON_AddStringToObject(labels, "rakazo", "computer");
	cJSON_AddStringToObject(labels, "rakazo.computer", m->computer_id);
	if (m->home_key)
		cJSON_AddStringToObject(labels, "rakazo.home", m->home_key);
	const char *tl = getenv("RAKAZO_TEST_LABEL");
	if (tl && *tl)
		cJSON_AddStringToObject(labels, "rakazo.test", tl);
	cJSON *env = cJSON_AddObjectToObject(body, "env");
	cJSON_AddStringToObject(env, "VNC_RESOLUTION", "1280x800");
	cJSON_AddNumberToObject(body, "autoStopInterval", 0);
	cJSON_AddNumberToObject(body, "autoDeleteInterval", -1);
	cJSON_AddBoolToObject(body, "public", 0);
	char *url = rk_xasprintf("%s/sandbox", d->base);
	cJSON *doc = call_json(d, "POST", url, body, 1, "daytona create sandbox", NULL, err);
	free(url);
	cJSON_Delete(body);
	if (!doc)
		return -rk_err(err)->code;
	const char *id = rk_json_string(doc, "id", NULL);
	int rc = 0;
	if (!id || !*id)
		rc = rk_error_set(err, RK_EFAILED, "daytona created a sandbox but gave no id");
	else
		d->id = rk_xstrdup(id);
	cJSON_Delete(doc);
	return rc;
}

static int dt_provision(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct dt *d = dt_new(err);
	if (!d)
		return -RK_EUNAVAILABLE;
	d->run_dir = rk_xstrdup(m->run_dir);
	int rc = 0, fresh = 1;
	if (m->ref && *m->ref) {
		d->id = rk_xstrdup(m->ref);
		char *st = NULL;
		int gone = 0;
		rc = get_state(d, &st, &gone, err);
		if (rc == 0 && gone) {
			out->replaced = 1;
			free(d->id);
			d->id = NULL;
		} else if (rc == 0) {
			fresh = 0;
			if (state_of(st) != RK_MACHINE_RUNNING)
				rc = post_verb(d, "start", err);
		}
		free(st);
	} else {
		d->id = find_by_label(d, m, err);
	}
	if (rc == 0 && !d->id)
		rc = create_sandbox(d, m, err);
	if (rc == 0)
		rc = wait_state(d, "started", err);
	free(d->toolbox);
	d->toolbox = NULL;
	if (rc == 0)
		rc = fetch_toolbox(d, err);
	if (rc == 0)
		rc = fetch_ws(d, err);
	if (rc == 0) {
		char *q = rk_remote_shq(d->ws);
		char *script = rk_xasprintf("mkdir -p %s", q);
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = dt_run(d, script, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot make the workspace %s: %.200s", d->ws, o.data);
		rk_buf_release(&o);
		free(script);
		free(q);
	}
	if (rc == 0) {
		save_cache(d);
		out->ref = rk_xstrdup(d->id);
		out->fresh = fresh;
	}
	/* a sandbox whose preparation failed keeps its label: the next
	 * provision finds it rather than making another */
	dt_free(d);
	return rc;
}

static int dt_status(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref) {
		*out = RK_MACHINE_GONE;
		return 0;
	}
	struct dt *d = dt_open(m, 0, err);
	if (!d)
		return -rk_err(err)->code;
	char *st = NULL;
	int gone = 0;
	int rc = get_state(d, &st, &gone, err);
	if (rc == 0)
		*out = gone ? RK_MACHINE_GONE : state_of(st);
	free(st);
	dt_free(d);
	return rc;
}

static int dt_stop(const struct rk_machine *m, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref)
		return 0;
	struct dt *d = dt_open(m, 0, err);
	if (!d)
		return -rk_err(err)->code;
	char *st = NULL;
	int gone = 0;
	int rc = get_state(d, &st, &gone, err);
	if (rc == 0 && !gone && state_of(st) == RK_MACHINE_RUNNING) {
		rc = post_verb(d, "stop", err);
		if (rc == 0)
			rc = wait_state(d, "stopped", err);
	}
	/* {"archive": true}: a stopped sandbox moves to Daytona's archive
	 * (cheaper at rest, slower to start); provision starts it again */
	int archive = 0;
	if (rc == 0 && !gone && m->options_json && *m->options_json) {
		cJSON *o = rk_json_parse(m->options_json, strlen(m->options_json), "daytona provider options", err);
		rc = o ? rk_json_get_bool(o, "archive", 0, &archive, "daytona provider options", err) : -RK_EINVALID;
		cJSON_Delete(o);
	}
	if (rc == 0 && archive && strcmp(st ? st : "", "archived") != 0) {
		rc = post_verb(d, "archive", err);
		if (rc == 0)
			rc = wait_state(d, "archived", err);
	}
	free(st);
	dt_free(d);
	return rc;
}

static int dt_destroy(const struct rk_machine *m, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref)
		return 0;
	struct dt *d = dt_open(m, 0, err);
	if (!d)
		return -rk_err(err)->code;
	char *url = rk_xasprintf("%s/sandbox/%s", d->base, d->id);
	long status = 0;
	cJSON *doc = call_json(d, "DELETE", url, NULL, 1, "daytona delete sandbox", &status, err);
	int rc = doc || status == 404 ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	free(url);
	if (rc == 0)
		rc = wait_state(d, "destroyed", err);
	if (rc == 0) {
		char *path = cache_path(m->run_dir);
		unlink(path);
		free(path);
	}
	dt_free(d);
	return rc;
}

/* --- execution -------------------------------------------------------------- */

struct dt_cmd {
	struct dt *d; /* borrowed from the proc */
	char *session, *cmd_id;
};

static int cmd_poll(void *p, struct rk_buf *all, int *done, int *code, struct rk_error *err)
{
	struct dt_cmd *c = p;
	char *url = rk_xasprintf("%s/process/session/%s/command/%s", c->d->toolbox, c->session, c->cmd_id);
	long status = 0;
	cJSON *doc = call_json(c->d, "GET", url, NULL, 0, "daytona session command", &status, err);
	free(url);
	if (!doc)
		return status == 404 ? rk_error_set(err, RK_ENOTFOUND, "the daytona command is gone")
				     : -(int)rk_err(err)->code;
	const cJSON *ec = cJSON_GetObjectItem(doc, "exitCode");
	*done = cJSON_IsNumber(ec);
	*code = *done ? ec->valueint : -1;
	cJSON_Delete(doc);
	url = rk_xasprintf("%s/process/session/%s/command/%s/logs", c->d->toolbox, c->session, c->cmd_id);
	doc = call_json(c->d, "GET", url, NULL, 0, "daytona command logs", &status, err);
	free(url);
	if (!doc)
		return status == 404 ? rk_error_set(err, RK_ENOTFOUND, "the daytona command is gone")
				     : -(int)rk_err(err)->code;
	const char *o = rk_json_string(doc, "output", ""); /* merged, as the API defines it */
	rk_buf_reset(all);
	rk_buf_adds(all, o);
	cJSON_Delete(doc);
	return 0;
}

static int cmd_send(void *p, const void *data, size_t len, int eof, struct rk_error *err)
{
	struct dt_cmd *c = p;
	char *line = eof ? rk_xstrdup(".\n") : NULL;
	if (!eof) {
		char *b = rk_remote_b64(data, len);
		line = rk_xasprintf("%s\n", b);
		free(b);
	}
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "data", line);
	char *url = rk_xasprintf("%s/process/session/%s/command/%s/input", c->d->toolbox, c->session, c->cmd_id);
	cJSON *doc = call_json(c->d, "POST", url, body, 1, "daytona command input", NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(url);
	free(line);
	return rc;
}

static void cmd_free(void *p)
{
	struct dt_cmd *c = p;
	if (!c)
		return;
	char *url = rk_xasprintf("%s/process/session/%s", c->d->toolbox, c->session);
	struct rk_http_response r;
	struct rk_error e;
	rk_http_response_init(&r);
	call(c->d, "DELETE", url, NULL, 0, NULL, 0, "daytona delete session", &r, &e);
	rk_http_response_release(&r);
	free(url);
	free(c->session);
	free(c->cmd_id);
	free(c);
}

static const struct rk_remote_cmd_ops dt_cmd_ops = {.poll = cmd_poll, .send = cmd_send, .free = cmd_free};

static int dt_exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			 struct rk_error *err)
{
	*out = NULL;
	if (req->tty)
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "daytona gives no terminal: run the command without --tty (stdin still works)");
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	char *sid = rk_id_new("rk");
	char *dir = rk_xasprintf("/tmp/rakazo/exec/%s", sid);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "sessionId", sid);
	char *url = rk_xasprintf("%s/process/session", d->toolbox);
	cJSON *doc = call_json(d, "POST", url, body, 1, "daytona create session", NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(url);
	char *cmd_id = NULL;
	if (rc == 0) {
		char *wrapped = rk_remote_wrap(req, d->ws, dir, RK_REMOTE_STDIN_LINES);
		body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "command", wrapped);
		cJSON_AddBoolToObject(body, "runAsync", 1);
		url = rk_xasprintf("%s/process/session/%s/exec", d->toolbox, sid);
		doc = call_json(d, "POST", url, body, 1, "daytona session exec", NULL, err);
		const char *cid = rk_json_string(doc, "cmdId", NULL);
		if (!doc)
			rc = -rk_err(err)->code;
		else if (!cid)
			rc = rk_error_set(err, RK_EFAILED, "daytona started the command but gave no command id");
		else
			cmd_id = rk_xstrdup(cid);
		cJSON_Delete(doc);
		cJSON_Delete(body);
		free(url);
		free(wrapped);
	}
	if (rc < 0) {
		free(sid);
		free(dir);
		dt_free(d);
		return rc;
	}
	struct dt_cmd *c = rk_xcalloc(1, sizeof(*c));
	c->d = d;
	c->session = sid;
	c->cmd_id = cmd_id;
	*out = rk_remote_proc_new(&dt_remote, d, dt_free, &dt_cmd_ops, c, dir);
	free(dir);
	return 0;
}

/* --- files ------------------------------------------------------------------ */

static int dt_file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			struct rk_error *err)
{
	*out = NULL;
	*n = 0;
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	char *abs = rk_remote_path(d->ws, path);
	char *esc = rk_http_escape(abs);
	char *url = rk_xasprintf("%s/files?path=%s", d->toolbox, esc);
	long status = 0;
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona list files", &status, err);
	int rc = 0;
	if (!doc)
		rc = status == 404
			     ? rk_error_set(err, RK_ENOTFOUND, "no such directory: %s", path && *path ? path : ".")
			     : rk_error_pass(err);
	else if (!cJSON_IsArray(doc))
		rc = rk_error_set(err, RK_EFAILED, "daytona's file list is not an array");
	if (rc == 0) {
		size_t cnt = (size_t)cJSON_GetArraySize(doc), i = 0;
		struct rk_file_entry *es = rk_xcalloc(cnt ? cnt : 1, sizeof(*es));
		for (const cJSON *e = doc->child; e; e = e->next) {
			const char *name = rk_json_string(e, "name", NULL), *mode = rk_json_string(e, "mode", "");
			if (!name)
				continue;
			es[i].name = rk_xstrdup(name);
			int dir = cJSON_IsTrue(cJSON_GetObjectItem(e, "isDir"));
			es[i].type = dir			  ? RK_FILE_DIR
				     : mode[0] == 'L'		  ? RK_FILE_LINK
				     : mode[0] == '-' || !mode[0] ? RK_FILE_REGULAR
								  : RK_FILE_OTHER;
			es[i].size = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "size"));
			es[i].executable = es[i].type == RK_FILE_REGULAR && strlen(mode) >= 10 &&
					   (mode[3] == 'x' || mode[6] == 'x' || mode[9] == 'x');
			i++;
		}
		/* sorted by name, as every provider lists */
		for (size_t a = 1; a < i; a++)
			for (size_t b = a; b > 0 && strcmp(es[b - 1].name, es[b].name) > 0; b--) {
				struct rk_file_entry t = es[b];
				es[b] = es[b - 1];
				es[b - 1] = t;
			}
		*out = es;
		*n = i;
	}
	cJSON_Delete(doc);
	free(url);
	free(esc);
	free(abs);
	dt_free(d);
	return rc;
}

static int dt_file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			struct rk_error *err)
{
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	struct rk_buf b;
	rk_buf_init(&b);
	int rc = rk_remote_file_read(&dt_remote, d, d->ws, path, max_bytes, &b, err);
	if (rc == 0)
		rk_buf_add(out, b.data, b.len);
	else if (rk_err(err)->code == RK_ENOTFOUND)
		rk_error_set(err, RK_ENOTFOUND, "no such file: %s", path);
	rk_buf_release(&b);
	dt_free(d);
	return rc;
}

/* The file and workspace ops: open the machine, let remote.c do the work. */
#define WITH_MACHINE(call)                                                                                             \
	do {                                                                                                           \
		struct dt *d = dt_open(m, 1, err);                                                                     \
		if (!d)                                                                                                \
			return -(int)rk_err(err)->code;                                                                \
		int rc_ = (call);                                                                                      \
		dt_free(d);                                                                                            \
		return rc_;                                                                                            \
	} while (0)

static int dt_file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			 struct rk_error *err)
{
	WITH_MACHINE(rk_remote_file_write(&dt_remote, d, d->ws, path, data, len, executable, err));
}

static int dt_file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_file_remove(&dt_remote, d, d->ws, path, err));
}

static int dt_export(const struct rk_machine *m, int fd, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_export(&dt_remote, d, d->ws, fd, err));
}

static int dt_import(const struct rk_machine *m, int fd, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_import(&dt_remote, d, d->ws, fd, err));
}

/* --- the desktop ---------------------------------------------------------------- */

static int check_display(int display, struct rk_error *err)
{
	if (display < 0)
		return rk_error_set(err, RK_EINVALID, "display number must not be negative");
	if (display >= EXTRA_SCREENS_MAX)
		return rk_error_set(err, RK_EMULTISCREEN,
				    "this Team computer cannot allocate another screen (limit %d)", EXTRA_SCREENS_MAX);
	return 0;
}

static char *xdisplay(int display)
{
	return rk_xasprintf(":%d", display + 1);
}

static int run_script(struct dt *d, const char *script, struct rk_buf *o, const char *what, struct rk_error *err)
{
	int code = 0;
	int rc = dt_run(d, script, o, &code, err);
	if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "%s failed (exit %d): %.300s", what, code, o->data);
	return rc;
}

static int dt_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			    struct rk_screen_transport *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int rc = check_display(display, err);
	if (rc < 0)
		return rc;
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	if (display == 0) {
		char *url = rk_xasprintf("%s/computeruse/start", d->toolbox);
		cJSON *doc = call_json(d, "POST", url, NULL, 0, "daytona computer use start", NULL, err);
		rc = doc ? 0 : -(int)rk_err(err)->code;
		cJSON_Delete(doc);
		free(url);
		if (rc == 0) {
			url = rk_xasprintf("%s/computeruse/display/info", d->toolbox);
			doc = call_json(d, "GET", url, NULL, 0, "daytona display info", NULL, err);
			const cJSON *ds = cJSON_GetObjectItem(doc, "displays");
			const cJSON *d0 = cJSON_IsArray(ds) ? ds->child : NULL;
			out->width = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(d0, "width"));
			out->height = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(d0, "height"));
			if (!doc)
				rc = -rk_err(err)->code;
			cJSON_Delete(doc);
			free(url);
		}
	} else {
		int w = opt && opt->width > 0 ? opt->width : 1280, h = opt && opt->height > 0 ? opt->height : 800;
		char *script = rk_remote_screen_start_script(display, w, h);
		struct rk_buf o;
		rk_buf_init(&o);
		rc = run_script(d, script, &o, "starting the extra screen", err);
		rk_buf_release(&o);
		free(script);
		out->width = w;
		out->height = h;
	}
	dt_free(d);
	return rc;
}

static int dt_display_stop(const struct rk_machine *m, int display, struct rk_error *err)
{
	int rc = check_display(display, err);
	if (rc < 0)
		return rc;
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	if (display == 0) {
		char *url = rk_xasprintf("%s/computeruse/stop", d->toolbox);
		cJSON *doc = call_json(d, "POST", url, NULL, 0, "daytona computer use stop", NULL, err);
		rc = doc ? 0 : -(int)rk_err(err)->code;
		cJSON_Delete(doc);
		free(url);
	} else {
		char *script = rk_remote_screen_stop_script(display);
		struct rk_buf o;
		rk_buf_init(&o);
		rc = run_script(d, script, &o, "stopping the extra screen", err);
		rk_buf_release(&o);
		free(script);
	}
	dt_free(d);
	return rc;
}

static int dt_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	int rc = check_display(display, err);
	if (rc < 0)
		return rc;
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	if (display == 0) {
		char *url = rk_xasprintf("%s/computeruse/screenshot?showCursor=false", d->toolbox);
		cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona screenshot", NULL, err);
		free(url);
		const char *b64 = rk_json_string(doc, "screenshot", NULL);
		if (!doc)
			rc = -rk_err(err)->code;
		else if (!b64 || !*b64)
			rc = rk_error_set(err, RK_EFAILED, "daytona's screenshot returned no image");
		struct rk_buf png;
		rk_buf_init(&png);
		if (rc == 0 && rk_remote_unb64(b64, strlen(b64), &png) != 0)
			rc = rk_error_set(err, RK_EFAILED, "daytona's screenshot is not base64");
		if (rc == 0)
			rc = rk_remote_png_rgb(png.data, png.len, &out->rgb, &out->width, &out->height, err);
		const cJSON *cur = cJSON_GetObjectItem(doc, "cursorPosition");
		out->cursor_x = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cur, "x"));
		out->cursor_y = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cur, "y"));
		rk_buf_release(&png);
		cJSON_Delete(doc);
	} else {
		char *disp = xdisplay(display);
		char *script = rk_remote_capture_script(disp);
		struct rk_buf o;
		rk_buf_init(&o);
		rc = run_script(d, script, &o, "the screen capture", err);
		if (rc == 0)
			rc = rk_remote_capture_parse(&o, out, err);
		rk_buf_release(&o);
		free(script);
		free(disp);
	}
	dt_free(d);
	return rc;
}

/* A button held down by an earlier "down" action, kept in RUN_DIR: Daytona
 * has click and drag calls but no press and release, so a down and an up at
 * the same point are a click and at different points a drag. */
static char *held_path(const struct rk_machine *m)
{
	return rk_path_join(m->run_dir, "daytona-held.json");
}

static int cu_post(struct dt *d, const char *verb, cJSON *body, struct rk_error *err)
{
	char *url = rk_xasprintf("%s/computeruse/%s", d->toolbox, verb);
	char what[64];
	snprintf(what, sizeof(what), "daytona %s", verb);
	cJSON *doc = call_json(d, "POST", url, body, 1, what, NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(url);
	return rc;
}

static cJSON *xy(const cJSON *a)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *x = cJSON_GetObjectItem(a, "x"), *y = cJSON_GetObjectItem(a, "y");
	if (cJSON_IsNumber(x) && cJSON_IsNumber(y)) {
		cJSON_AddNumberToObject(o, "x", x->valueint);
		cJSON_AddNumberToObject(o, "y", y->valueint);
	}
	return o;
}

/* The pointer's position when the action gives none. */
static int pointer(struct dt *d, int *x, int *y, struct rk_error *err)
{
	char *url = rk_xasprintf("%s/computeruse/mouse/position", d->toolbox);
	cJSON *doc = call_json(d, "GET", url, NULL, 0, "daytona mouse position", NULL, err);
	free(url);
	if (!doc)
		return -rk_err(err)->code;
	*x = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "x"));
	*y = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "y"));
	cJSON_Delete(doc);
	return 0;
}

static cJSON *at(struct dt *d, const cJSON *a, struct rk_error *err)
{
	cJSON *o = xy(a);
	if (!cJSON_GetObjectItem(o, "x")) {
		int x = 0, y = 0;
		if (pointer(d, &x, &y, err) < 0) {
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_AddNumberToObject(o, "x", x);
		cJSON_AddNumberToObject(o, "y", y);
	}
	return o;
}

static int act_primary(const struct rk_machine *m, struct dt *d, const cJSON *a, struct rk_error *err)
{
	const char *kind = rk_json_string(a, "action", "");
	const char *button = rk_json_string(a, "button", "left");
	if (!strcmp(kind, "move")) {
		cJSON *o = xy(a);
		return cu_post(d, "mouse/move", o, err);
	}
	if (!strcmp(kind, "click") || !strcmp(kind, "double_click") || !strcmp(kind, "right_click")) {
		int count = !strcmp(kind, "double_click") ? 2
							  : (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "count"));
		if (count < 1)
			count = 1;
		int rc = 0;
		for (int left = count; rc == 0 && left > 0; left -= left >= 2 ? 2 : 1) {
			cJSON *o = at(d, a, err);
			if (!o)
				return -rk_err(err)->code;
			cJSON_AddStringToObject(o, "button", !strcmp(kind, "right_click") ? "right" : button);
			cJSON_AddBoolToObject(o, "double", left >= 2);
			rc = cu_post(d, "mouse/click", o, err);
		}
		return rc;
	}
	if (!strcmp(kind, "down")) {
		cJSON *o = at(d, a, err);
		if (!o)
			return -rk_err(err)->code;
		cJSON_AddStringToObject(o, "button", button);
		char *text = cJSON_PrintUnformatted(o);
		char *path = held_path(m);
		int rc = rk_fs_write_atomic(path, text, strlen(text), 0600, err);
		free(path);
		free(text);
		cJSON_Delete(o);
		return rc;
	}
	if (!strcmp(kind, "up")) {
		char *path = held_path(m);
		struct rk_buf b;
		rk_buf_init(&b);
		struct rk_error e2;
		cJSON *down = rk_fs_read_all(path, 4096, &b, &e2) == 0 ? cJSON_ParseWithLength(b.data, b.len) : NULL;
		unlink(path);
		free(path);
		rk_buf_release(&b);
		cJSON *to = at(d, a, err);
		if (!to) {
			cJSON_Delete(down);
			return -rk_err(err)->code;
		}
		int rc;
		int x0 = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(down, "x"));
		int y0 = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(down, "y"));
		int x1 = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(to, "x"));
		int y1 = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(to, "y"));
		if (!down || (x0 == x1 && y0 == y1)) {
			/* a release with no press seen, or at the same point: a click */
			cJSON_AddStringToObject(to, "button", down ? rk_json_string(down, "button", button) : button);
			rc = cu_post(d, "mouse/click", to, err);
		} else {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "startX", x0);
			cJSON_AddNumberToObject(o, "startY", y0);
			cJSON_AddNumberToObject(o, "endX", x1);
			cJSON_AddNumberToObject(o, "endY", y1);
			cJSON_AddStringToObject(o, "button", rk_json_string(down, "button", button));
			rc = cu_post(d, "mouse/drag", o, err);
			cJSON_Delete(to);
		}
		cJSON_Delete(down);
		return rc;
	}
	if (!strcmp(kind, "drag")) {
		const cJSON *path = cJSON_GetObjectItem(a, "path");
		int n = cJSON_GetArraySize(path);
		if (n < 2)
			return rk_error_set(err, RK_EINVALID, "a drag needs at least two points");
		const cJSON *p0 = cJSON_GetArrayItem(path, 0), *p1 = cJSON_GetArrayItem(path, n - 1);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "startX",
					cJSON_GetNumberValue(cJSON_IsArray(p0) ? cJSON_GetArrayItem(p0, 0)
									       : cJSON_GetObjectItem(p0, "x")));
		cJSON_AddNumberToObject(o, "startY",
					cJSON_GetNumberValue(cJSON_IsArray(p0) ? cJSON_GetArrayItem(p0, 1)
									       : cJSON_GetObjectItem(p0, "y")));
		cJSON_AddNumberToObject(o, "endX",
					cJSON_GetNumberValue(cJSON_IsArray(p1) ? cJSON_GetArrayItem(p1, 0)
									       : cJSON_GetObjectItem(p1, "x")));
		cJSON_AddNumberToObject(o, "endY",
					cJSON_GetNumberValue(cJSON_IsArray(p1) ? cJSON_GetArrayItem(p1, 1)
									       : cJSON_GetObjectItem(p1, "y")));
		cJSON_AddStringToObject(o, "button", button);
		return cu_post(d, "mouse/drag", o, err);
	}
	if (!strcmp(kind, "scroll")) {
		int dx = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "dx"));
		int dy = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "dy"));
		int rc = 0;
		if (dy) {
			cJSON *o = at(d, a, err);
			if (!o)
				return -rk_err(err)->code;
			cJSON_AddStringToObject(o, "direction", dy > 0 ? "down" : "up");
			cJSON_AddNumberToObject(o, "amount", abs(dy));
			rc = cu_post(d, "mouse/scroll", o, err);
		}
		if (rc == 0 && dx)
			rc = rk_error_set(err, RK_EUNSUPPORTED, "daytona scrolls only up and down");
		return rc;
	}
	if (!strcmp(kind, "type")) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "text", rk_json_string(a, "text", ""));
		return cu_post(d, "keyboard/type", o, err);
	}
	if (!strcmp(kind, "key")) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "keys", rk_json_string(a, "keys", ""));
		return cu_post(d, "keyboard/hotkey", o, err);
	}
	if (!strcmp(kind, "key_down") || !strcmp(kind, "key_up"))
		return rk_error_set(err, RK_EUNSUPPORTED, "daytona cannot hold a key down: use a key combination");
	if (!strcmp(kind, "wait")) {
		rk_sleep_ms((int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "ms")));
		return 0;
	}
	return rk_error_set(err, RK_EINVALID, "unknown action \"%s\"", kind);
}

static int dt_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err)
{
	int rc = check_display(display, err);
	if (rc < 0)
		return rc;
	struct dt *d = dt_open(m, 1, err);
	if (!d)
		return -rk_err(err)->code;
	if (display == 0) {
		cJSON *a = rk_json_parse(action_json, strlen(action_json), "action", err);
		rc = a ? act_primary(m, d, a, err) : -RK_EINVALID;
		cJSON_Delete(a);
	} else {
		char *disp = xdisplay(display);
		char *script = rk_remote_act_script(disp, action_json, err);
		if (!script)
			rc = -rk_err(err)->code;
		struct rk_buf o;
		rk_buf_init(&o);
		if (rc == 0)
			rc = run_script(d, script, &o, "the screen action", err);
		rk_buf_release(&o);
		free(script);
		free(disp);
	}
	dt_free(d);
	return rc;
}

const struct rk_provider_ops rk_provider_daytona = {
	.name = "daytona",
	.caps = RK_CAP_DESKTOP | RK_CAP_MULTI_SCREEN | RK_CAP_SNAPSHOTS | RK_CAP_PERSISTENT_HOME,
	.summary = "Daytona sandboxes over its REST and toolbox APIs (DAYTONA_API_KEY, DAYTONA_API_URL)",
	.check = dt_check,
	.provision = dt_provision,
	.status = dt_status,
	.stop = dt_stop,
	.destroy = dt_destroy,
	.exec_spawn = dt_exec_spawn,
	.file_list = dt_file_list,
	.file_read = dt_file_read,
	.file_write = dt_file_write,
	.file_remove = dt_file_remove,
	.workspace_export = dt_export,
	.workspace_import = dt_import,
	.display_start = dt_display_start,
	.display_stop = dt_display_stop,
	.capture = dt_capture,
	.act = dt_act,
};
