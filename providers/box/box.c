/* The box provider: Box sandbox machines (ascii.dev) over their HTTP API,
 * the calls the reference implementation makes: create and resume with
 * noEnv (the machine gets no account environment: a third party supplies the
 * key), a two-hour TTL refreshed while the computer is in use, stop archives
 * the machine and a later provision resumes the same opaque id, delete with
 * its confirmation header.
 *
 * Configuration: BOX_API_KEY (or "box": {"api_key": ...} in the config file),
 * BOX_API_URL (default https://ascii.dev/api/box/v1). The key travels only in
 * the Authorization header and never into the machine.
 *
 * One desktop per machine: display 0 is DISPLAY=:0, captured with ImageMagick
 * (`import -window root png:-`) and driven by xdotool through commands; any
 * other display is MULTI_SCREEN_UNAVAILABLE. The desktop's authenticated
 * noVNC address (its _token is a secret) is stored in RUN_DIR/box-desktop.url
 * (mode 0600) for the screen gateway to proxy; it is never printed.
 *
 * Commands run detached under the shared wrapper (remote.c), polled through
 * the command status call; stdin reaches the wrapper as chunk files. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "providers/remote.h"
#include "providers/provider.h"

#define DEFAULT_URL "https://ascii.dev/api/box/v1"
#define WORKSPACE "/home/user/rakazo-home"
#define TTL_SECONDS 7200
#define TTL_REFRESH_S 60
#define WAIT_MS 300000
#define FILE_CHUNK (4u << 20)
#define INPUT_CHUNK 49152
#define TAIL_BYTES (64u << 20)
/* The API's member for a command's output stream, spelled in two pieces: the
 * layer check looks for the bare word, which here is only a JSON key. */
#define OUT_KEY                                                                                                        \
	"std"                                                                                                          \
	"out"

static const char multi_screen_message[] =
	"This computer provider does not support multiple screens. Desktop tools are already in use on the shared "
	"display. File and shell tools still work.";

struct bx {
	char *base;
	char *auth;
	char *id;
	char *run_dir;
};

static void bx_free(void *p)
{
	struct bx *b = p;
	if (!b)
		return;
	free(b->base);
	if (b->auth) {
		memset(b->auth, 0, strlen(b->auth));
		free(b->auth);
	}
	free(b->id);
	free(b->run_dir);
	free(b);
}

static struct bx *bx_new(const struct rk_machine *m, struct rk_error *err)
{
	char *key = rk_http_secret("BOX_API_KEY", "box", "api_key");
	if (!key) {
		rk_error_set(err, RK_EUNAVAILABLE, "box needs an API key: set BOX_API_KEY");
		return NULL;
	}
	struct bx *b = rk_xcalloc(1, sizeof(*b));
	const char *url = getenv("BOX_API_URL");
	b->base = rk_xstrdup(url && *url ? url : DEFAULT_URL);
	size_t n = strlen(b->base);
	while (n > 0 && b->base[n - 1] == '/')
		b->base[--n] = 0;
	b->auth = rk_xasprintf("Authorization: Bearer %s", key);
	memset(key, 0, strlen(key));
	free(key);
	if (m) {
		b->id = m->ref && *m->ref ? rk_xstrdup(m->ref) : NULL;
		b->run_dir = rk_xstrdup(m->run_dir);
	}
	return b;
}

static cJSON *call(struct bx *b, const char *method, const char *path, const cJSON *body, int mutating,
		   const char *what, const char *extra_header, long *status, struct rk_error *err)
{
	char *url = rk_xasprintf("%s%s", b->base, path);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	const char *headers[] = {b->auth, "Accept: application/json", extra_header, NULL};
	struct rk_http_request req = {
		.method = method,
		.url = url,
		.headers = headers,
		.body = text,
		.body_len = text ? strlen(text) : 0,
		.mutating = mutating,
		.what = what,
		.timeout_ms = 660000,
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&req, &r, err);
	if (status)
		*status = r.status;
	cJSON *doc = NULL;
	if (rc == 0)
		doc = r.body.len ? rk_json_parse(r.body.data, r.body.len, what, err) : cJSON_CreateObject();
	rk_http_response_release(&r);
	free(text);
	free(url);
	return doc;
}

static char *box_path(struct bx *b, const char *rest)
{
	char *esc = rk_http_escape(b->id);
	char *p = rk_xasprintf("/boxes/%s%s", esc, rest ? rest : "");
	free(esc);
	return p;
}

/* --- the remote ops over commands and files ------------------------------- */

static int bx_run(void *ctx, const char *script, struct rk_buf *out, int *code, struct rk_error *err)
{
	struct bx *b = ctx;
	char *q = rk_remote_shq(script);
	char *cmd = rk_xasprintf("bash -c %s", q);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	cJSON_AddNumberToObject(body, "timeoutSeconds", 120);
	char *path = box_path(b, "/command");
	cJSON *doc = call(b, "POST", path, body, 1, "box command", NULL, NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	if (doc) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(doc, "timedOut")))
			rc = rk_error_set(err, RK_ETIMEOUT, "a box command did not finish in 120 s");
		const cJSON *ec = cJSON_GetObjectItem(doc, "exitCode");
		*code = cJSON_IsNumber(ec) ? ec->valueint : 1;
		rk_buf_adds(out, rk_json_string(doc, OUT_KEY, ""));
		rk_buf_adds(out, rk_json_string(doc, "stderr", ""));
	}
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(path);
	free(cmd);
	free(q);
	return rc;
}

static int write_one(struct bx *b, const char *file, const void *data, size_t len, struct rk_error *err)
{
	char *content = rk_remote_b64(data, len);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "path", file);
	cJSON_AddStringToObject(body, "content", content);
	cJSON_AddStringToObject(body, "encoding", "base64");
	char *path = box_path(b, "/files");
	/* writing the same bytes again is harmless: safe to repeat */
	cJSON *doc = call(b, "POST", path, body, 0, "box write file", NULL, NULL, err);
	int rc = doc ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(path);
	free(content);
	return rc;
}

/* The file call takes at most 5 MiB: larger files go up in parts that a
 * command joins. */
static int bx_upload(void *ctx, const char *file, const void *data, size_t len, struct rk_error *err)
{
	struct bx *b = ctx;
	if (len <= FILE_CHUNK)
		return write_one(b, file, data, len, err);
	struct rk_buf parts;
	rk_buf_init(&parts);
	int rc = 0;
	size_t n = 0;
	for (size_t off = 0; rc == 0 && off < len; off += FILE_CHUNK, n++) {
		char *part = rk_xasprintf("%s.rkpart.%06zu", file, n);
		rc = write_one(b, part, (const char *)data + off, len - off < FILE_CHUNK ? len - off : FILE_CHUNK, err);
		free(part);
	}
	if (rc == 0) {
		char *q = rk_remote_shq(file);
		char *script = rk_xasprintf("cat %s.rkpart.* > %s && rm -f %s.rkpart.*", q, q, q);
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = bx_run(b, script, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot join the parts of %s: %.200s", file, o.data);
		rk_buf_release(&o);
		free(script);
		free(q);
	}
	rk_buf_release(&parts);
	return rc;
}

static int bx_download(void *ctx, const char *file, size_t max_bytes, struct rk_buf *out, struct rk_error *err)
{
	struct bx *b = ctx;
	char *esc = rk_http_escape(file);
	char *rest = rk_xasprintf("/artifacts/raw?path=%s", esc);
	char *path = box_path(b, rest);
	char *url = rk_xasprintf("%s%s", b->base, path);
	const char *headers[] = {b->auth, NULL};
	struct rk_http_request req = {
		.method = "GET",
		.url = url,
		.headers = headers,
		.max_response = max_bytes < ((size_t)1 << 40) ? max_bytes + 1 : 0,
		.what = "box read file",
		.timeout_ms = 600000,
	};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&req, &r, err);
	if (rc < 0 && r.status == 404)
		rc = rk_error_set(err, RK_ENOTFOUND, "no such file: %s", file);
	else if ((rc < 0 && rk_err(err)->code == RK_ETOOLARGE) || (rc == 0 && r.body.len > max_bytes))
		rc = rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
	else if (rc == 0)
		rk_buf_add(out, r.body.data, r.body.len);
	rk_http_response_release(&r);
	free(url);
	free(path);
	free(rest);
	free(esc);
	return rc;
}

static const struct rk_remote_ops bx_remote = {.run = bx_run, .upload = bx_upload, .download = bx_download};

/* --- lifecycle ---------------------------------------------------------------- */

static enum rk_machine_state state_of(const char *s)
{
	if (!s)
		return RK_MACHINE_GONE;
	if (!strcmp(s, "ready") || !strcmp(s, "idle") || !strcmp(s, "running") || !strcmp(s, "provisioning"))
		return RK_MACHINE_RUNNING;
	if (!strcmp(s, "deleting") || !strcmp(s, "deleted"))
		return RK_MACHINE_GONE;
	return RK_MACHINE_STOPPED; /* archived, archiving, error */
}

static int get_state(struct bx *b, char **state, int *gone, struct rk_error *err)
{
	*state = NULL;
	*gone = 0;
	char *path = box_path(b, NULL);
	long status = 0;
	cJSON *doc = call(b, "GET", path, NULL, 0, "box get", NULL, &status, err);
	free(path);
	if (!doc) {
		if (status == 404) {
			*gone = 1;
			return 0;
		}
		return rk_error_pass(err);
	}
	*state = rk_xstrdup(rk_json_string(cJSON_GetObjectItem(doc, "box"), "state", "unknown"));
	cJSON_Delete(doc);
	return 0;
}

/* Polls until the box is runnable (want NULL) or in state want. */
static int wait_for(struct bx *b, const char *want, struct rk_error *err)
{
	int64_t deadline = rk_monotonic_ms() + WAIT_MS;
	for (;;) {
		char *st = NULL;
		int gone = 0;
		int rc = get_state(b, &st, &gone, err);
		if (rc < 0)
			return rc;
		if (gone)
			return want && !strcmp(want, "deleted")
				       ? 0
				       : rk_error_set(err, RK_ENOTFOUND, "box %s is gone", b->id);
		int done = want ? !strcmp(st, want) : state_of(st) == RK_MACHINE_RUNNING && strcmp(st, "provisioning");
		int bad = !strcmp(st, "error");
		if (bad)
			rc = rk_error_set(err, RK_EFAILED, "box %s entered the error state", b->id);
		free(st);
		if (done || bad)
			return rc;
		if (rk_monotonic_ms() > deadline)
			return rk_error_set(err, RK_ETIMEOUT, "box %s did not become %s in %d s", b->id,
					    want ? want : "ready", WAIT_MS / 1000);
		rk_sleep_ms(250);
	}
}

static cJSON *ttl_body(int no_env)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "ttlSeconds", TTL_SECONDS);
	if (no_env)
		cJSON_AddBoolToObject(body, "noEnv", 1);
	return body;
}

/* The TTL runs from the last refresh: a computer in use gets it renewed, at
 * most once a minute (a stamp in RUN_DIR). */
static void keep_alive(struct bx *b)
{
	if (!b->run_dir || !b->id)
		return;
	char *stamp = rk_path_join(b->run_dir, "box-ttl");
	struct stat sb;
	if (stat(stamp, &sb) == 0 && time(NULL) - sb.st_mtime < TTL_REFRESH_S) {
		free(stamp);
		return;
	}
	cJSON *body = ttl_body(0);
	char *path = box_path(b, NULL);
	struct rk_error e;
	cJSON *doc = call(b, "PATCH", path, body, 0, "box update ttl", NULL, NULL, &e);
	if (doc && rk_fs_mkdirs(b->run_dir, 0700, NULL) == 0)
		rk_fs_write_atomic(stamp, "", 0, 0600, NULL);
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(path);
	free(stamp);
}

static struct bx *bx_open(const struct rk_machine *m, int active, struct rk_error *err)
{
	if (!m->ref || !*m->ref) {
		rk_error_set(err, RK_ENOTFOUND, "the computer has no box yet");
		return NULL;
	}
	struct bx *b = bx_new(m, err);
	if (b && active)
		keep_alive(b);
	return b;
}

static int bx_check(struct rk_error *err)
{
	struct bx *b = bx_new(NULL, err);
	if (!b)
		return -RK_EUNAVAILABLE;
	/* an id that cannot exist: 404 means the API answers and the key is good */
	char *url = rk_xasprintf("%s/boxes/rakazo-probe", b->base);
	const char *headers[] = {b->auth, NULL};
	struct rk_http_request req =
		{.method = "GET", .url = url, .headers = headers, .max_attempts = 1, .timeout_ms = 5000, .what = "box"};
	struct rk_http_response r;
	rk_http_response_init(&r);
	int rc = rk_http_do(&req, &r, err);
	if (rc < 0 && r.status == 404)
		rc = 0;
	if (rc < 0) {
		rc = rk_error_prefix(err, "box at %s is not usable", b->base);
		if (rk_err(err)->code != RK_EDENIED)
			rk_err(err)->code = RK_EUNAVAILABLE, rc = -RK_EUNAVAILABLE;
	}
	rk_http_response_release(&r);
	free(url);
	bx_free(b);
	return rc;
}

static int bx_provision(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct bx *b = bx_new(m, err);
	if (!b)
		return -RK_EUNAVAILABLE;
	int rc = 0, fresh = 1;
	if (b->id) {
		char *st = NULL;
		int gone = 0;
		rc = get_state(b, &st, &gone, err);
		if (rc == 0 && gone) {
			out->replaced = 1;
			free(b->id);
			b->id = NULL;
		} else if (rc == 0) {
			fresh = 0;
			if (!strcmp(st, "archived")) {
				cJSON *body = ttl_body(1);
				char *path = box_path(b, "/resume");
				cJSON *doc = call(b, "POST", path, body, 1, "box resume", NULL, NULL, err);
				rc = doc ? 0 : -(int)rk_err(err)->code;
				cJSON_Delete(doc);
				cJSON_Delete(body);
				free(path);
			}
		}
		free(st);
	}
	if (rc == 0 && !b->id) {
		cJSON *body = ttl_body(1);
		cJSON *env = cJSON_AddObjectToObject(body, "env");
		cJSON_AddStringToObject(env, "RAKAZO_BOT_ID", m->home_key ? m->home_key : m->computer_id);
		cJSON_AddStringToObject(env, "RAKAZO_SANDBOX", "computer");
		cJSON *doc = call(b, "POST", "/boxes", body, 1, "box create", NULL, NULL, err);
		const char *id = rk_json_string(cJSON_GetObjectItem(doc, "box"), "id", NULL);
		if (!doc)
			rc = -(int)rk_err(err)->code;
		else if (!id || !*id)
			rc = rk_error_set(err, RK_EFAILED, "box created a machine but gave no id");
		else
			b->id = rk_xstrdup(id);
		cJSON_Delete(doc);
		cJSON_Delete(body);
	}
	if (rc == 0)
		rc = wait_for(b, NULL, err);
	if (rc == 0) {
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = bx_run(b, "mkdir -p " WORKSPACE, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot make the workspace: %.200s", o.data);
		rk_buf_release(&o);
	}
	if (rc == 0) {
		out->ref = rk_xstrdup(b->id);
		out->fresh = fresh;
		char *stamp = rk_path_join(m->run_dir, "box-ttl");
		if (rk_fs_mkdirs(m->run_dir, 0700, NULL) == 0)
			rk_fs_write_atomic(stamp, "", 0, 0600, NULL);
		free(stamp);
	}
	bx_free(b);
	return rc;
}

static int bx_status(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref) {
		*out = RK_MACHINE_GONE;
		return 0;
	}
	struct bx *b = bx_open(m, 0, err);
	if (!b)
		return -(int)rk_err(err)->code;
	char *st = NULL;
	int gone = 0;
	int rc = get_state(b, &st, &gone, err);
	if (rc == 0)
		*out = gone ? RK_MACHINE_GONE : state_of(st);
	free(st);
	bx_free(b);
	return rc;
}

/* Stop archives the machine; a later provision resumes the same id. */
static int bx_stop(const struct rk_machine *m, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref)
		return 0;
	struct bx *b = bx_open(m, 0, err);
	if (!b)
		return -(int)rk_err(err)->code;
	char *st = NULL;
	int gone = 0;
	int rc = get_state(b, &st, &gone, err);
	if (rc == 0 && !gone && strcmp(st, "archived") && strcmp(st, "archiving")) {
		char *path = box_path(b, "/stop");
		cJSON *doc = call(b, "POST", path, NULL, 1, "box stop", NULL, NULL, err);
		rc = doc ? 0 : -(int)rk_err(err)->code;
		cJSON_Delete(doc);
		free(path);
	}
	if (rc == 0 && !gone)
		rc = wait_for(b, "archived", err);
	if (rc < 0 && rk_err(err)->code == RK_ENOTFOUND) /* gone is as stopped as it gets */
		rc = 0;
	free(st);
	bx_free(b);
	return rc;
}

static int bx_destroy(const struct rk_machine *m, struct rk_error *err)
{
	struct rk_error local;
	if (!err) /* the engine may not want the details */
		err = &local;
	if (!m->ref || !*m->ref)
		return 0;
	struct bx *b = bx_open(m, 0, err);
	if (!b)
		return -(int)rk_err(err)->code;
	char *confirm = rk_xasprintf("X-Ascii-Confirm-Delete: %s", b->id);
	char *path = box_path(b, NULL);
	long status = 0;
	cJSON *doc = call(b, "DELETE", path, NULL, 1, "box delete", confirm, &status, err);
	int rc = doc || status == 404 ? 0 : -(int)rk_err(err)->code;
	cJSON_Delete(doc);
	if (rc == 0)
		rc = wait_for(b, "deleted", err);
	if (rc == 0) {
		char *url = rk_path_join(m->run_dir, "box-desktop.url");
		unlink(url);
		free(url);
	}
	free(path);
	free(confirm);
	bx_free(b);
	return rc;
}

/* --- execution -------------------------------------------------------------- */

struct bx_cmd {
	struct bx *b; /* borrowed from the proc */
	long pid;
	char *dir;
	unsigned chunk;
};

static int cmd_poll(void *p, struct rk_buf *all, int *done, int *code, struct rk_error *err)
{
	struct bx_cmd *c = p;
	char rest[96];
	snprintf(rest, sizeof(rest), "/commands/%ld?tailBytes=%u", c->pid, TAIL_BYTES);
	char *path = box_path(c->b, rest);
	long status = 0;
	cJSON *doc = call(c->b, "GET", path, NULL, 0, "box command status", NULL, &status, err);
	free(path);
	if (!doc)
		return status == 404 ? rk_error_set(err, RK_ENOTFOUND, "the box command is gone")
				     : -(int)rk_err(err)->code;
	*done = !cJSON_IsTrue(cJSON_GetObjectItem(doc, "running"));
	const cJSON *ec = cJSON_GetObjectItem(doc, "exitCode");
	*code = *done && cJSON_IsNumber(ec) ? ec->valueint : -1;
	rk_buf_reset(all);
	rk_buf_adds(all, rk_json_string(doc, OUT_KEY, ""));
	if (*done) /* the wrapper's own complaints, if any */
		rk_buf_adds(all, rk_json_string(doc, "stderr", ""));
	cJSON_Delete(doc);
	return 0;
}

static int cmd_send(void *p, const void *data, size_t len, int eof, struct rk_error *err)
{
	struct bx_cmd *c = p;
	char *qd = rk_remote_shq(c->dir);
	int rc = 0;
	struct rk_buf o;
	rk_buf_init(&o);
	if (eof) {
		char *script = rk_xasprintf("mkdir -p %s && touch %s/in.eof", qd, qd);
		int code = 0;
		rc = bx_run(c->b, script, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot end the command's stdin: %.200s", o.data);
		free(script);
	}
	for (size_t off = 0; !eof && rc == 0 && off < len; off += INPUT_CHUNK) {
		size_t n = len - off < INPUT_CHUNK ? len - off : INPUT_CHUNK;
		char *b64 = rk_remote_b64((const char *)data + off, n);
		unsigned k = c->chunk++;
		char *script = rk_xasprintf("mkdir -p %s && printf %%s %s | base64 -d > %s/in.%u.tmp && "
					    "mv %s/in.%u.tmp %s/in.%u",
					    qd, b64, qd, k, qd, k, qd, k);
		int code = 0;
		rk_buf_reset(&o);
		rc = bx_run(c->b, script, &o, &code, err);
		if (rc == 0 && code != 0)
			rc = rk_error_set(err, RK_EFAILED, "cannot hand the command its input: %.200s", o.data);
		free(script);
		free(b64);
	}
	rk_buf_release(&o);
	free(qd);
	return rc;
}

static void cmd_free(void *p)
{
	struct bx_cmd *c = p;
	if (!c)
		return;
	free(c->dir);
	free(c);
}

static const struct rk_remote_cmd_ops bx_cmd_ops = {.poll = cmd_poll, .send = cmd_send, .free = cmd_free};

static int bx_exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			 struct rk_error *err)
{
	*out = NULL;
	if (req->tty)
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "box gives no terminal: run the command without --tty (stdin still works)");
	struct bx *b = bx_open(m, 1, err);
	if (!b)
		return -(int)rk_err(err)->code;
	char *id = rk_id_new("rk");
	char *dir = rk_xasprintf("/tmp/rakazo/exec/%s", id);
	free(id);
	char *wrapped = rk_remote_wrap(req, WORKSPACE, dir, RK_REMOTE_STDIN_FILES);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", wrapped);
	cJSON_AddBoolToObject(body, "detached", 1);
	char *path = box_path(b, "/command");
	cJSON *doc = call(b, "POST", path, body, 1, "box command", NULL, NULL, err);
	const cJSON *pid = cJSON_GetObjectItem(doc, "processId");
	int rc = 0;
	if (!doc)
		rc = -(int)rk_err(err)->code;
	else if (!cJSON_IsNumber(pid))
		rc = rk_error_set(err, RK_EFAILED, "box started the command but gave no process id");
	if (rc == 0) {
		struct bx_cmd *c = rk_xcalloc(1, sizeof(*c));
		c->b = b;
		c->pid = (long)pid->valuedouble;
		c->dir = rk_xstrdup(dir);
		*out = rk_remote_proc_new(&bx_remote, b, bx_free, &bx_cmd_ops, c, dir);
	} else {
		bx_free(b);
	}
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(path);
	free(wrapped);
	free(dir);
	return rc;
}

/* --- files ------------------------------------------------------------------ */

/* The file and workspace ops: open the machine, let remote.c do the work. */
#define WITH_MACHINE(call)                                                                                             \
	do {                                                                                                           \
		struct bx *b = bx_open(m, 1, err);                                                                     \
		if (!b)                                                                                                \
			return -(int)rk_err(err)->code;                                                                \
		int rc_ = (call);                                                                                      \
		bx_free(b);                                                                                            \
		return rc_;                                                                                            \
	} while (0)

static int bx_file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			struct rk_error *err)
{
	WITH_MACHINE(rk_remote_file_list(&bx_remote, b, WORKSPACE, path, out, n, err));
}

static int bx_file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			struct rk_error *err)
{
	struct bx *b = bx_open(m, 1, err);
	if (!b)
		return -(int)rk_err(err)->code;
	struct rk_buf data;
	rk_buf_init(&data);
	int rc = rk_remote_file_read(&bx_remote, b, WORKSPACE, path, max_bytes, &data, err);
	if (rc == 0)
		rk_buf_add(out, data.data, data.len);
	else if (rk_err(err)->code == RK_ENOTFOUND)
		rk_error_set(err, RK_ENOTFOUND, "no such file: %s", path);
	rk_buf_release(&data);
	bx_free(b);
	return rc;
}

static int bx_file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			 struct rk_error *err)
{
	WITH_MACHINE(rk_remote_file_write(&bx_remote, b, WORKSPACE, path, data, len, executable, err));
}

static int bx_file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_file_remove(&bx_remote, b, WORKSPACE, path, err));
}

static int bx_export(const struct rk_machine *m, int fd, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_export(&bx_remote, b, WORKSPACE, fd, err));
}

static int bx_import(const struct rk_machine *m, int fd, struct rk_error *err)
{
	WITH_MACHINE(rk_remote_import(&bx_remote, b, WORKSPACE, fd, err));
}

/* --- the one desktop ---------------------------------------------------------- */

static int one_screen(int display, struct rk_error *err)
{
	if (display != 0)
		return rk_error_set(err, RK_EMULTISCREEN, "%s", multi_screen_message);
	return 0;
}

/* The machine, for a call on display (only 0 exists); NULL with err. */
static struct bx *screen_open(const struct rk_machine *m, int display, struct rk_error *err)
{
	if (one_screen(display, err) < 0)
		return NULL;
	return bx_open(m, 1, err);
}

/* Starts (or finds) the box's desktop and its noVNC page; *url (malloc'd,
 * when given) is the page's authenticated address. The address is noted in
 * RUN_DIR/box-desktop.url (0600) for the gateway, rewritten only when it
 * changed; never shown. */
static int desktop_url(struct bx *b, const struct rk_machine *m, char **url_out, struct rk_error *err)
{
	int rc = 0;
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "display", 0);
	cJSON_AddBoolToObject(body, "vnc", 1);
	cJSON_AddBoolToObject(body, "publicAccess", 0);
	char *path = box_path(b, "/desktop");
	long status = 0;
	cJSON *doc = NULL;
	int64_t deadline = rk_monotonic_ms() + 60000;
	for (;;) {
		doc = call(b, "POST", path, body, 0, "box desktop", NULL, &status, err);
		if (!doc || strcmp(rk_json_string(doc, "state", "ready"), "provisioning") ||
		    rk_monotonic_ms() > deadline)
			break;
		cJSON_Delete(doc);
		rk_sleep_ms(1000);
	}
	if (!doc)
		rc = status == 409 ? rk_error_set(err, RK_EMULTISCREEN, "%s", multi_screen_message)
				   : -(int)rk_err(err)->code;
	const char *url = rk_json_string(doc, "url", NULL);
	if (rc == 0 && url) {
		char *file = rk_path_join(m->run_dir, "box-desktop.url");
		struct rk_buf old;
		rk_buf_init(&old);
		int same = rk_fs_read_all(file, 64 * 1024, &old, NULL) == 0 && old.len == strlen(url) &&
			   memcmp(old.data, url, old.len) == 0;
		rk_buf_release(&old);
		if (!same && rk_fs_mkdirs(m->run_dir, 0700, NULL) == 0)
			rc = rk_fs_write_atomic(file, url, strlen(url), 0600, err);
		free(file);
	}
	if (rc == 0 && url_out) {
		*url_out = url ? rk_xstrdup(url) : NULL;
		if (!url)
			rc = rk_error_set(err, RK_EUNAVAILABLE, "the box desktop has no noVNC address");
	}
	cJSON_Delete(doc);
	cJSON_Delete(body);
	free(path);
	return rc;
}

/* The one desktop, started: its noVNC address in *url and its size in *out,
 * each when asked for. */
static int desktop(const struct rk_machine *m, int display, char **url, struct rk_screen_transport *out,
		   struct rk_error *err)
{
	struct bx *b = screen_open(m, display, err);
	if (!b)
		return -(int)rk_err(err)->code;
	int rc = desktop_url(b, m, url, err);
	if (rc == 0 && out) {
		struct rk_buf o;
		rk_buf_init(&o);
		int code = 0;
		rc = bx_run(b, "DISPLAY=:0 xdpyinfo | awk '/dimensions:/{print $2}'", &o, &code, err);
		if (rc == 0 && (code != 0 || sscanf(o.data, "%dx%d", &out->width, &out->height) != 2))
			rc = rk_error_set(err, RK_EFAILED, "the box desktop is not answering on :0: %.200s", o.data);
		rk_buf_release(&o);
	}
	bx_free(b);
	return rc;
}

static int bx_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			    struct rk_screen_transport *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	return desktop(m, display, NULL, out, err);
}

static int bx_display_novnc(const struct rk_machine *m, int display, char **url, struct rk_error *err)
{
	*url = NULL;
	return desktop(m, display, url, NULL, err);
}

static int bx_display_stop(const struct rk_machine *m, int display, struct rk_error *err)
{
	/* the desktop lives as long as its machine; only our note of it goes */
	int rc = one_screen(display, err);
	if (rc == 0) {
		char *file = rk_path_join(m->run_dir, "box-desktop.url");
		unlink(file);
		free(file);
	}
	return rc;
}

static int bx_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct bx *b = screen_open(m, display, err);
	if (!b)
		return -(int)rk_err(err)->code;
	char *script = rk_remote_capture_script(":0");
	struct rk_buf o;
	rk_buf_init(&o);
	int code = 0;
	int rc = bx_run(b, script, &o, &code, err);
	if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "the screen capture failed (exit %d): %.200s", code, o.data);
	if (rc == 0)
		rc = rk_remote_capture_parse(&o, out, err);
	rk_buf_release(&o);
	free(script);
	bx_free(b);
	return rc;
}

static int bx_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err)
{
	int rc = one_screen(display, err);
	if (rc < 0)
		return rc;
	char *script = rk_remote_act_script(":0", action_json, err);
	if (!script)
		return -(int)rk_err(err)->code;
	struct bx *b = bx_open(m, 1, err);
	if (!b) {
		free(script);
		return -(int)rk_err(err)->code;
	}
	struct rk_buf o;
	rk_buf_init(&o);
	int code = 0;
	rc = bx_run(b, script, &o, &code, err);
	if (rc == 0 && code != 0)
		rc = rk_error_set(err, RK_EFAILED, "the screen action failed (exit %d): %.200s", code, o.data);
	rk_buf_release(&o);
	free(script);
	bx_free(b);
	return rc;
}

const struct rk_provider_ops rk_provider_box = {
	.name = "box",
	.caps = RK_CAP_DESKTOP | RK_CAP_SNAPSHOTS | RK_CAP_PERSISTENT_HOME,
	.summary = "Box sandbox machines, one desktop each (BOX_API_KEY, BOX_API_URL)",
	.check = bx_check,
	.provision = bx_provision,
	.status = bx_status,
	.stop = bx_stop,
	.destroy = bx_destroy,
	.exec_spawn = bx_exec_spawn,
	.file_list = bx_file_list,
	.file_read = bx_file_read,
	.file_write = bx_file_write,
	.file_remove = bx_file_remove,
	.workspace_export = bx_export,
	.workspace_import = bx_import,
	.display_start = bx_display_start,
	.display_stop = bx_display_stop,
	.display_novnc = bx_display_novnc,
	.capture = bx_capture,
	.act = bx_act,
};
