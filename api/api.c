/* The Computers HTTP API: routes and their handlers on the engine (see api.h). */

#include "api/api.h"
#include "api/mcp.h"
#include "providers/provider.h"
#include "engine/machine/machine.h"
#include "engine/access/authz.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/machine/computer.h"
#include "engine/machine/display.h"
#include "engine/machine/execution.h"
#include "engine/gateway/gateway.h"
#include "engine/machine/session.h"
#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"

#define MAX_PARAMS 4

struct call {
	struct rk_engine *eng;
	const struct rk_api_request *req;
	struct rk_api_response *out;
	struct rk_api_token tok; /* the caller */
	char *p[MAX_PARAMS];	 /* path parameters, in pattern order */
	struct rk_error err;
};

typedef int (*handler_fn)(struct call *k);

struct route {
	struct rk_api_route_info info;
	handler_fn fn;
};

/* --- responses ------------------------------------------------------------------- */

void rk_api_response_release(struct rk_api_response *r)
{
	if (!r)
		return;
	cJSON_Delete(r->doc);
	free(r->sse_execution);
	free(r->upgrade_pair);
	free(r->sse_token);
	memset(r, 0, sizeof(*r));
}

static int reply(struct call *k, int status, cJSON *doc)
{
	cJSON_Delete(k->out->doc);
	k->out->status = status;
	k->out->doc = doc;
	return 0;
}

/* snake_case keys to camelCase, the API's spelling, all the way down */
static void camelize(cJSON *o)
{
	for (cJSON *c = o ? o->child : NULL; c; c = c->next) {
		if (c->string && strchr(c->string, '_') && !(c->type & cJSON_StringIsConst) && c->string[0] != '_') {
			char *s = c->string, *w = s;
			for (const char *r = s; *r; r++) {
				if (*r == '_' && r[1]) {
					r++;
					*w++ = (char)(*r >= 'a' && *r <= 'z' ? *r - 32 : *r);
				} else {
					*w++ = *r;
				}
			}
			*w = '\0';
		}
		if (cJSON_IsObject(c) || cJSON_IsArray(c))
			camelize(c);
	}
}

/* Appends message to m with every path under dir (the server's data
 * directory: workspaces, sockets, the database) shown as "(a server path)". */
static void add_without(struct rk_buf *m, const char *message, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	const char *p = message, *hit;
	while (n > 1 && (hit = strstr(p, dir))) {
		rk_buf_add(m, p, (size_t)(hit - p));
		rk_buf_adds(m, "(a server path)");
		p = hit + n;
		while (*p && !strchr(" \t\n:,;)'\"", *p))
			p++;
	}
	rk_buf_adds(m, p);
}

/* Whether the caller itself sent dir (in the path, ?path= or the body):
 * then quoting it back tells nothing, and hiding it would tell that it is
 * this server's data directory. */
static int caller_sent(const struct call *k, const char *dir)
{
	const char *q = k->req->query ? k->req->query(k->req->query_ctx, "path") : NULL;
	return dir && (strstr(k->req->path, dir) || (q && strstr(q, dir)) ||
		       (k->req->body && memmem(k->req->body, k->req->body_len, dir, strlen(dir))));
}

/* The message as a caller may see it: no host path of this server. */
static char *caller_message(const struct call *k, const char *message)
{
	struct rk_buf a = RK_BUF_INIT, b = RK_BUF_INIT;
	rk_buf_init(&a);
	rk_buf_init(&b);
	char *real = k->eng->data_dir ? realpath(k->eng->data_dir, NULL) : NULL;
	add_without(&a, message, caller_sent(k, k->eng->data_dir) ? NULL : k->eng->data_dir);
	add_without(&b, a.data, caller_sent(k, real) ? NULL : real);
	free(real);
	rk_buf_release(&a);
	return rk_buf_detach(&b, NULL);
}

/* An error document. safe: the message may go to the caller (without the
 * server's paths, caller_message); otherwise only the log has it, under the
 * error id. */
static int fail_with(struct call *k, int status, const char *category, enum rk_code code, const char *message, int safe,
		     const char *execution_id)
{
	char *eid = rk_id_new("err");
	if (!k->tok.id && status >= 400 && status < 500) /* anyone can cause it: a bounded number of lines */
		rk_log_refusal(RK_LOG_INFO, k->req->peer, "api %s %s: %d %s: %s (%s)", k->req->method, k->req->path,
			       status, rk_code_name(code), message, eid);
	else
		rk_log(status >= 500 ? RK_LOG_WARN : RK_LOG_INFO, "api %s %s: %d %s: %s (%s)", k->req->method,
		       k->req->path, status, rk_code_name(code), message, eid);
	cJSON *doc = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(e, "category", category);
	cJSON_AddStringToObject(e, "code", rk_code_name(code));
	if (safe) { /* a message may quote the caller's bytes: the document stays UTF-8 */
		struct rk_buf m = RK_BUF_INIT;
		rk_buf_init(&m);
		char *shown = caller_message(k, message);
		rk_utf8_escape(&m, shown, strlen(shown), 0);
		free(shown);
		cJSON_AddStringToObject(e, "message", m.data);
		rk_buf_release(&m);
	} else {
		char *m = rk_xasprintf("the computer could not do that (%s); the server log has the detail under %s",
				       rk_code_name(code), eid);
		cJSON_AddStringToObject(e, "message", m);
		free(m);
	}
	cJSON_AddStringToObject(e, "errorId", eid);
	if (execution_id)
		cJSON_AddStringToObject(e, "executionId", execution_id);
	if (code == RK_EOUTCOME_UNKNOWN)
		cJSON_AddStringToObject(e, "outcome", "unknown");
	free(eid);
	reply(k, status, doc);
	return 0;
}

/* An engine error as the API's status and category. */
static int fail_err(struct call *k, const struct rk_error *e)
{
	int status = 502, safe = 1;
	const char *cat = "ComputerExecutionFailed";
	switch (e->code) {
	case RK_EUSAGE:
	case RK_EINVALID:
		status = 400, cat = "invalid_request";
		break;
	case RK_ENOTFOUND:
		status = 404, cat = "not_found";
		break;
	case RK_ECONFLICT:
	case RK_ESTALE:
		status = 409, cat = "ComputerConflict";
		break;
	case RK_EDENIED:
		status = 403, cat = "forbidden";
		break;
	case RK_EUNSUPPORTED:
	case RK_EMULTISCREEN:
		status = 422, cat = "ComputerUnsupported";
		break;
	case RK_ETOOLARGE:
		status = 413, cat = "too_large";
		break;
	case RK_EOUTCOME_UNKNOWN:
		status = 502;
		break;
	case RK_EUNAVAILABLE:
		status = 503, safe = 0;
		break;
	case RK_ETIMEOUT:
		status = 504, safe = 0;
		break;
	default:
		status = 502, safe = 0;
		break;
	}
	return fail_with(k, status, cat, e->code, e->message, safe, NULL);
}

static int fail(struct call *k, enum rk_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct call *k, enum rk_code code, const char *fmt, ...)
{
	struct rk_error e = {.code = code};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	return fail_err(k, &e);
}

/* --- request helpers --------------------------------------------------------------- */

static const char *query(struct call *k, const char *key)
{
	return k->req->query ? k->req->query(k->req->query_ctx, key) : NULL;
}

/* The body as a JSON object; an empty body is {} unless required. */
static cJSON *body_object(struct call *k, int required, const char *const *allowed)
{
	const struct rk_api_request *q = k->req;
	size_t i = 0;
	while (i < q->body_len && (q->body[i] == ' ' || q->body[i] == '\n' || q->body[i] == '\r' || q->body[i] == '\t'))
		i++;
	if (i == q->body_len) {
		if (required) {
			fail(k, RK_EINVALID, "this route needs a JSON object body");
			return NULL;
		}
		return cJSON_CreateObject();
	}
	struct rk_error e;
	cJSON *doc = rk_json_parse(q->body, q->body_len, "the request body", &e);
	if (!doc) {
		fail(k, RK_EINVALID, "%s", e.message);
		return NULL;
	}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		fail(k, RK_EINVALID, "the request body must be a JSON object");
		return NULL;
	}
	for (const cJSON *c = doc->child; allowed && c; c = c->next) {
		size_t j;
		for (j = 0; allowed[j] && strcmp(allowed[j], c->string); j++)
			;
		if (!allowed[j]) {
			fail(k, RK_EINVALID, "unknown field '%s' in the request body", c->string);
			cJSON_Delete(doc);
			return NULL;
		}
	}
	return doc;
}

/* A member of the body with its type checked; absent and null give def. */
static int get_int(struct call *k, const cJSON *o, const char *key, int64_t min, int64_t max, int64_t def, int64_t *out)
{
	struct rk_error e;
	if (rk_json_get_int(o, key, min, max, def, out, "request", &e))
		return fail_err(k, &e), -1;
	return 0;
}

static int get_bool(struct call *k, const cJSON *o, const char *key, int def, int *out)
{
	struct rk_error e;
	if (rk_json_get_bool(o, key, def, out, "request", &e))
		return fail_err(k, &e), -1;
	return 0;
}

static int get_str(struct call *k, const cJSON *o, const char *key, int required, const char **out)
{
	struct rk_error e;
	*out = NULL;
	if (rk_json_get_string(o, key, required, out, "request", &e))
		return fail_err(k, &e), -1;
	return 0;
}

/* A query integer: digits only. */
static int query_int(struct call *k, const char *key, int64_t min, int64_t max, int64_t def, int64_t *out)
{
	const char *v = query(k, key);
	*out = def;
	if (!v)
		return 0;
	char *end;
	long long n = *v >= '0' && *v <= '9' ? strtoll(v, &end, 10) : -1;
	if (n < 0 || *end || n < min || n > max) {
		fail(k, RK_EINVALID, "query parameter %s must be an integer from %lld to %lld", key, (long long)min,
		     (long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

/* --- the providers this server offers (api.h, rk_api_request.providers) ---------------- */

enum reach { REACH_OK, REACH_NOT_OFFERED, REACH_HOST_FOR_BOT };

static enum reach provider_reach(const struct call *k, const char *kind)
{
	int offered = rk_provider_can(kind, RK_CAP_DIALS_IN); /* paired machines join through the API itself */
	for (const char *const *p = k->req->providers; !offered && p && *p; p++)
		offered = !strcmp(*p, kind);
	if (!offered)
		return REACH_NOT_OFFERED;
	const struct rk_provider_ops *ops = rk_provider_find(kind);
	if (k->tok.bot_id && ops && (ops->caps & RK_CAP_HOST_EXEC))
		return REACH_HOST_FOR_BOT;
	return REACH_OK;
}

/* 0 when the caller may reach provider kind; otherwise the call fails: 400
 * for a create's choice (creating), 403 for a computer that exists. */
static int provider_allowed(struct call *k, const char *kind, int creating)
{
	enum reach r = provider_reach(k, kind);
	if (r == REACH_HOST_FOR_BOT)
		return fail(k, RK_EDENIED,
			    "a bot's token never reaches provider '%s': its commands run on the server's host", kind),
		       -1;
	if (r == REACH_NOT_OFFERED) {
		struct rk_buf names;
		rk_buf_init(&names);
		for (const char *const *p = k->req->providers; p && *p; p++)
			rk_buf_printf(&names, "%s%s", names.len ? ", " : "", *p);
		fail(k, creating ? RK_EINVALID : RK_EDENIED,
		     "provider '%s' is not offered by this server (it offers: %s; the operator chooses with `rakazo serve "
		     "--providers`)",
		     kind, names.len ? names.data : "none");
		rk_buf_release(&names);
		return -1;
	}
	return 0;
}

/* Who calls (engine/access/authz.h): a member's token acts as the server's member
 * (RAKAZO_USER or RAKAZO_OWNER of `rakazo serve`), a bot's token as that
 * bot, both in the server's space (RAKAZO_SPACE). */
static int caller(struct call *k, struct rk_actor *a)
{
	struct rk_error e;
	if (rk_actor_resolve(a, k->eng, NULL, k->tok.bot_id, &e))
		return fail_err(k, &e), -1;
	return 0;
}

/* The one resolver (engine/access/authz.h) for a route: the computer of the path,
 * when the caller may do capability on it, checked on every call (a revoke
 * stops the next one). Another space's is 404, one without the right 403. */
static int resolve_computer(struct call *k, const char *id, const char *capability, struct rk_computer *c)
{
	struct rk_actor a;
	struct rk_error e;
	if (caller(k, &a))
		return -1;
	int r = rk_authz_resolve(k->eng, &a, id, capability, c, &e);
	rk_actor_release(&a);
	if (r)
		return fail_err(k, &e), -1;
	if (provider_allowed(k, c->kind, 0)) {
		rk_computer_release(c);
		return -1;
	}
	return 0;
}

static int load_computer(struct call *k, const char *id, struct rk_computer *c)
{
	return resolve_computer(k, id, "computers.use", c);
}

/* What a token makes belongs to the organization, in the server's space. */
static void record_org(struct call *k, const char *computer_id)
{
	struct rk_actor server;
	struct rk_error err;
	if (rk_actor_resolve(&server, k->eng, NULL, NULL, &err) == 0 &&
	    rk_authz_computer_record(k->eng, computer_id, server.space, "org", &err) == 0) {
		rk_actor_release(&server);
		return;
	}
	rk_actor_release(&server);
	rk_log(RK_LOG_WARN, "api: cannot record computer %s's owner: %s", computer_id, err.message);
}

/* A computer to work on: a paired machine must be connected. */
static int work_computer(struct call *k, const char *id, struct rk_computer *c)
{
	if (load_computer(k, id, c))
		return -1;
	if (rk_provider_can(c->kind, RK_CAP_DIALS_IN) && rk_computer_state_of(c->state) != RK_COMPUTER_RUNNING) {
		char *m = rk_xasprintf("paired machine %s is offline: it is not connected (rakazo pair)", c->name);
		fail_with(k, 503, "ComputerUnavailable", RK_EUNAVAILABLE, m, 1, NULL);
		free(m);
		rk_computer_release(c);
		return -1;
	}
	return 0;
}

static int member_only(struct call *k)
{
	if (k->tok.bot_id)
		return fail(k, RK_EDENIED, "a bot's token cannot change rights: use a member's token"), -1;
	return 0;
}

static char *b64(const void *data, size_t len)
{
	size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
	char *s = rk_xmalloc(n);
	sodium_bin2base64(s, n, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
	return s;
}

/* --- computers and lifecycle ------------------------------------------------------------ */

static cJSON *computer_doc(struct call *k, const struct rk_computer *c)
{
	cJSON *o = rk_computer_to_json(c);
	cJSON_DeleteItemFromObject(o, "home_key");
	cJSON_AddBoolToObject(o, "shared", rk_computer_mode_of(c->mode) == RK_COMPUTER_TEAM);
	struct rk_execution e = {0};
	struct rk_error e2;
	if (rk_db_execution_active(k->eng->db, c->id, &e, &e2) == 0) {
		cJSON_AddStringToObject(o, "execution_id", e.id);
		rk_execution_release(&e);
	} else {
		cJSON_AddNullToObject(o, "execution_id");
	}
	camelize(o);
	return o;
}

/* A conflicting command: the execution in the way, by key or by computer. */
static int fail_conflict(struct call *k, const struct rk_error *e, const char *key, const char *computer)
{
	struct rk_execution prev = {0};
	struct rk_error e2;
	char *id = NULL;
	if (key && rk_db_execution_by_key(k->eng->db, k->eng->owner, key, &prev, &e2) == 0) {
		id = rk_xstrdup(prev.id);
		rk_execution_release(&prev);
	} else if (computer) {
		struct rk_computer c = {0};
		if (rk_db_computer_get(k->eng->db, computer, &c, &e2) == 0 &&
		    rk_db_execution_active(k->eng->db, c.id, &prev, &e2) == 0) {
			id = rk_xstrdup(prev.id);
			rk_execution_release(&prev);
		}
		rk_computer_release(&c);
	}
	fail_with(k, 409, "ComputerConflict", e->code, e->message, 1, id);
	free(id);
	return 0;
}

static int submit(struct call *k, const char *op, const char *computer, cJSON *body, const char *key)
{
	struct rk_submit s = {.op = op, .computer = computer, .body = body, .command_key = key};
	struct rk_execution e = {0};
	struct rk_error err;
	int existed = 0;
	if (rk_execution_submit(k->eng, &s, &e, &existed, &err)) {
		if (err.code == RK_ECONFLICT)
			return fail_conflict(k, &err, key, computer);
		return fail_err(k, &err);
	}
	if (!rk_execution_state_is_final(e.state) && rk_execution_state_of(e.state) != RK_EXECUTION_OUTCOME_UNKNOWN &&
	    rk_worker_ensure(k->eng, &err))
		rk_log(RK_LOG_WARN, "api: cannot start the worker: %s", err.message);
	if (rk_lifecycle_op_of(op) == RK_LIFECYCLE_CREATE && !existed)
		record_org(k, e.computer_id);
	cJSON *doc = rk_execution_to_json(&e);
	cJSON_AddBoolToObject(doc, "reused", existed);
	camelize(doc);
	rk_execution_release(&e);
	return reply(k, 202, doc);
}

/* computers.create (engine/access/authz.h): a bot's token never creates (403). */
static int may_create(struct call *k)
{
	struct rk_actor a;
	struct rk_error e;
	if (caller(k, &a))
		return -1;
	int r = rk_authz_check(k->eng, &a, "computers.create", NULL, &e);
	rk_actor_release(&a);
	if (r)
		return fail_err(k, &e), -1;
	return 0;
}

static int h_create(struct call *k)
{
	static const char *const allowed[] = {"commandKey", "name",   "source",	   "desktop",
					      "pauseAfter", "shared", "resources", NULL};
	if (may_create(k))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	if (!b)
		return 0;
	const char *key, *name, *provider = "docker", *tag;
	int desktop, shared, r = -1;
	cJSON *eb = NULL;
	if (get_str(k, b, "commandKey", 1, &key) || get_str(k, b, "name", 1, &name) ||
	    get_bool(k, b, "desktop", 0, &desktop) || get_bool(k, b, "shared", 0, &shared))
		goto out;
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
	if (src && !cJSON_IsNull(src)) {
		static const char *const src_fields[] = {"_tag", "provider", "template", NULL};
		if (!cJSON_IsObject(src)) {
			fail(k, RK_EINVALID, "source must be an object {\"provider\": NAME, \"template\": null}");
			goto out;
		}
		for (const cJSON *c = src->child; c; c = c->next) {
			size_t j;
			for (j = 0; src_fields[j] && strcmp(src_fields[j], c->string); j++)
				;
			if (!src_fields[j]) {
				fail(k, RK_EINVALID, "unknown field '%s' in source", c->string);
				goto out;
			}
		}
		if (get_str(k, src, "_tag", 0, &tag) || get_str(k, src, "provider", 1, &provider))
			goto out;
		if (rk_provider_can(provider, RK_CAP_DIALS_IN)) {
			fail(k, RK_EINVALID, "a paired machine is made by running `rakazo pair SERVER-URL` on it");
			goto out;
		}
		if (tag && strcmp(tag, "Provider")) {
			fail(k, RK_EINVALID,
			     "source._tag must be \"Provider\" (a paired machine is made with rakazo pair)");
			goto out;
		}
		const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(src, "template");
		if (tpl && !cJSON_IsNull(tpl)) {
			if (!cJSON_IsString(tpl)) {
				fail(k, RK_EINVALID, "source.template must be a string or null");
				goto out;
			}
			fail(k, RK_EUNSUPPORTED, "provider '%s' has no templates here: send \"template\": null",
			     provider);
			goto out;
		}
	}
	if (provider_allowed(k, provider, 1))
		goto out;
	const cJSON *pa = cJSON_GetObjectItemCaseSensitive(b, "pauseAfter");
	if (pa && !cJSON_IsNull(pa) && !cJSON_IsNumber(pa)) {
		fail(k, RK_EINVALID, "pauseAfter must be seconds (30 or more) or null for never");
		goto out;
	}
	eb = cJSON_CreateObject();
	cJSON_AddStringToObject(eb, "name", name);
	cJSON_AddStringToObject(eb, "provider", provider);
	cJSON_AddBoolToObject(eb, "desktop", desktop);
	if (pa && cJSON_IsNull(pa))
		cJSON_AddNullToObject(eb, "pause_after");
	else
		cJSON_AddNumberToObject(eb, "pause_after", pa ? pa->valuedouble : 600);
	cJSON_AddStringToObject(eb, "mode", shared ? "team" : "private");
	/* {"memory", "cpus", "pids"}: the engine checks them against the provider */
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(b, "resources");
	if (res && !cJSON_IsNull(res))
		cJSON_AddItemToObject(eb, "resources", cJSON_Duplicate(res, 1));
	r = submit(k, "create", NULL, eb, key);
out:
	cJSON_Delete(eb);
	cJSON_Delete(b);
	return r < 0 ? 0 : r;
}

static int lifecycle(struct call *k, const char *op)
{
	static const char *const allowed[] = {"commandKey", NULL};
	struct rk_computer c = {0};
	if (resolve_computer(k, k->p[0],
			     rk_lifecycle_op_of(op) == RK_LIFECYCLE_DELETE ? "computers.delete" : "computers.use", &c))
		return 0;
	if (rk_provider_can(c.kind, RK_CAP_DIALS_IN) && rk_lifecycle_op_of(op) != RK_LIFECYCLE_DELETE) {
		fail(k, RK_EUNSUPPORTED, "paired machine %s never pauses: it is the person's own machine", c.name);
		rk_computer_release(&c);
		return 0;
	}
	cJSON *b = body_object(k, 1, allowed);
	const char *key;
	if (b && get_str(k, b, "commandKey", 1, &key) == 0) {
		cJSON *eb = cJSON_CreateObject();
		submit(k, op, c.id, eb, key);
		cJSON_Delete(eb);
	}
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_pause(struct call *k)
{
	return lifecycle(k, "pause");
}
static int h_resume(struct call *k)
{
	return lifecycle(k, "resume");
}
static int h_delete(struct call *k)
{
	return lifecycle(k, "delete");
}

static int h_list(struct call *k)
{
	struct rk_computer *cs;
	size_t n;
	struct rk_error e;
	struct rk_actor a;
	if (caller(k, &a))
		return 0;
	if (rk_db_computer_list(k->eng->db, &cs, &n, &e)) {
		rk_actor_release(&a);
		return fail_err(k, &e);
	}
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		if (rk_authz_may_use(k->eng, &a, &cs[i]) &&    /* what the caller may use, of the server's space, */
		    provider_reach(k, cs[i].kind) == REACH_OK) /* on a provider offered here */
			cJSON_AddItemToArray(arr, computer_doc(k, &cs[i]));
		rk_computer_release(&cs[i]);
	}
	free(cs);
	rk_actor_release(&a);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddItemToObject(doc, "computers", arr);
	return reply(k, 200, doc);
}

static int h_show(struct call *k)
{
	struct rk_computer c = {0};
	if (load_computer(k, k->p[0], &c))
		return 0;
	reply(k, 200, computer_doc(k, &c));
	rk_computer_release(&c);
	return 0;
}

/* --- executions ------------------------------------------------------------------------ */

static int load_execution(struct call *k, struct rk_execution *e)
{
	struct rk_error err;
	if (rk_execution_get(k->eng, k->p[0], e, &err))
		return fail_err(k, &err), -1;
	struct rk_actor a;
	int r = 0;
	if (e->computer_id) { /* the business of whoever may use its computer, deleted or not */
		if (caller(k, &a)) {
			rk_execution_release(e);
			return -1;
		}
		r = rk_authz_check_id(k->eng, &a, e->computer_id, "computers.use", &err);
		rk_actor_release(&a);
	}
	if (r) {
		rk_execution_release(e);
		return fail_err(k, &err), -1;
	}
	/* a computer that still exists is reached only on a provider offered here */
	struct rk_computer c = {0};
	if (e->computer_id && rk_db_computer_get(k->eng->db, e->computer_id, &c, &err) == 0 &&
	    provider_allowed(k, c.kind, 0)) {
		rk_computer_release(&c);
		rk_execution_release(e);
		return -1;
	}
	rk_computer_release(&c);
	return 0;
}

static int reply_execution(struct call *k, const struct rk_execution *e)
{
	cJSON *doc = rk_execution_to_json(e);
	camelize(doc);
	return reply(k, 200, doc);
}

static int h_exe_get(struct call *k)
{
	struct rk_execution e = {0};
	if (load_execution(k, &e))
		return 0;
	reply_execution(k, &e);
	rk_execution_release(&e);
	return 0;
}

static int h_exe_observe(struct call *k)
{
	int64_t after;
	if (query_int(k, "afterSequence", 0, INT64_MAX / 2, 0, &after))
		return 0;
	const char *last = k->req->last_event_id;
	if (last && *last) {
		char *end;
		long long v = strtoll(last, &end, 10);
		if (*end || v < 0)
			return fail(k, RK_EINVALID, "Last-Event-ID must be an event sequence number");
		after = v;
	}
	struct rk_execution e = {0};
	if (load_execution(k, &e))
		return 0;
	k->out->status = 200;
	k->out->sse_execution = rk_xstrdup(e.id);
	k->out->sse_after = after;
	if (k->tok.id)
		k->out->sse_token = rk_xstrdup(k->tok.id);
	rk_execution_release(&e);
	return 0;
}

static int h_exe_cancel(struct call *k)
{
	struct rk_execution e = {0}, done = {0};
	struct rk_error err;
	if (load_execution(k, &e))
		return 0;
	if (rk_execution_cancel(k->eng, e.id, &done, &err))
		fail_err(k, &err);
	else
		reply_execution(k, &done);
	rk_execution_release(&done);
	rk_execution_release(&e);
	return 0;
}

static int h_exe_decide(struct call *k)
{
	static const char *const allowed[] = {"outcome", NULL};
	struct rk_execution e = {0}, done = {0};
	struct rk_error err;
	if (load_execution(k, &e))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	const char *outcome;
	if (b && get_str(k, b, "outcome", 1, &outcome) == 0) {
		if (rk_execution_decide(k->eng, e.id, outcome, &done, &err))
			fail_err(k, &err);
		else
			reply_execution(k, &done);
	}
	cJSON_Delete(b);
	rk_execution_release(&done);
	rk_execution_release(&e);
	return 0;
}

int rk_api_sse_next(struct rk_engine *eng, const char *execution_id, int64_t *after, int64_t wait_ms, int *done,
		    struct rk_buf *out, struct rk_error *err)
{
	int64_t deadline = rk_monotonic_ms() + wait_ms;
	*done = 0;
	for (;;) {
		/* the state first: events written before it settled are then all seen */
		struct rk_execution e = {0};
		int r = rk_execution_get(eng, execution_id, &e, err);
		if (r)
			return r;
		int settled = rk_execution_state_is_final(e.state) ||
			      rk_execution_state_of(e.state) == RK_EXECUTION_OUTCOME_UNKNOWN;
		rk_execution_release(&e);
		struct rk_event *ev;
		size_t n;
		if ((r = rk_db_events_after(eng->db, execution_id, *after, &ev, &n, err)))
			return r;
		for (size_t i = 0; i < n; i++) {
			cJSON *doc = rk_event_to_json(&ev[i]);
			camelize(doc);
			char *text = cJSON_PrintUnformatted(doc);
			rk_buf_printf(out, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)ev[i].sequence, ev[i].type,
				      text);
			free(text);
			cJSON_Delete(doc);
			*after = ev[i].sequence;
		}
		rk_events_free(ev, n);
		if (n)
			return 0;
		if (settled) {
			*done = 1;
			return 0;
		}
		if (rk_monotonic_ms() >= deadline)
			return 0;
		rk_sleep_ms(50);
	}
}

/* --- sessions --------------------------------------------------------------------------- */

static int reply_session(struct call *k, int status, const struct rk_session_reply *s)
{
	/* the CLI's document, already in the API's spelling; lost is always there */
	cJSON *o = rk_session_reply_to_json(s);
	if (!cJSON_GetObjectItemCaseSensitive(o, "lost"))
		cJSON_AddBoolToObject(o, "lost", 0);
	return reply(k, status, o);
}

static int h_session_start(struct call *k)
{
	static const char *const allowed[] = {"command",	"cwd", "env", "tty", "rows", "cols", "yieldTimeMs",
					      "maxOutputBytes", NULL};
	struct rk_computer c = {0};
	if (work_computer(k, k->p[0], &c))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	const char **env = NULL;
	size_t nenv = 0;
	const char *command, *cwd;
	int tty;
	int64_t rows, cols, yield, maxout;
	if (!b || get_str(k, b, "command", 1, &command) || get_str(k, b, "cwd", 0, &cwd) ||
	    get_bool(k, b, "tty", 0, &tty) || get_int(k, b, "rows", 1, 1000, 24, &rows) ||
	    get_int(k, b, "cols", 1, 1000, 80, &cols) ||
	    get_int(k, b, "yieldTimeMs", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, RK_SESSION_YIELD_DEFAULT_MS,
		    &yield) ||
	    get_int(k, b, "maxOutputBytes", 1, 64 * 1024 * 1024, RK_SESSION_OUTPUT_DEFAULT, &maxout))
		goto out;
	const cJSON *ej = cJSON_GetObjectItemCaseSensitive(b, "env");
	if (ej && !cJSON_IsNull(ej) && !cJSON_IsObject(ej)) {
		fail(k, RK_EINVALID, "env must be an object of strings");
		goto out;
	}
	env = rk_xcalloc((size_t)cJSON_GetArraySize(ej) + 1, sizeof(*env));
	for (const cJSON *v = ej ? ej->child : NULL; v; v = v->next) {
		if (!cJSON_IsString(v) || !*v->string || strchr(v->string, '=')) {
			fail(k, RK_EINVALID, "env: '%s' must be a name (no '=') with a string value", v->string);
			goto out;
		}
		env[nenv++] = rk_xasprintf("%s=%s", v->string, v->valuestring);
	}
	struct rk_session_request sr = {.command = command,
					.cwd = cwd,
					.env = env,
					.tty = tty,
					.rows = (int)rows,
					.cols = (int)cols,
					.yield_ms = yield,
					.max_output = (size_t)maxout,
					.bot_id = k->tok.bot_id};
	struct rk_session_reply rep = {0};
	struct rk_error err;
	if (rk_session_start(k->eng, &c, &sr, &rep, &err))
		fail_err(k, &err);
	else
		reply_session(k, 200, &rep);
	rk_session_reply_release(&rep);
out:
	for (size_t i = 0; i < nenv; i++)
		free((char *)env[i]);
	free(env);
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_session_input(struct call *k)
{
	static const char *const allowed[] = {"chars", "yieldTimeMs", "maxOutputBytes", NULL};
	struct rk_computer c = {0};
	if (load_computer(k, k->p[0], &c))
		return 0;
	cJSON *b = body_object(k, 0, allowed);
	const char *chars;
	int64_t yield, maxout;
	struct rk_buf data = RK_BUF_INIT;
	rk_buf_init(&data);
	struct rk_error err;
	if (!b || get_str(k, b, "chars", 0, &chars) ||
	    get_int(k, b, "yieldTimeMs", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, 1000, &yield) ||
	    get_int(k, b, "maxOutputBytes", 1, 64 * 1024 * 1024, RK_SESSION_OUTPUT_DEFAULT, &maxout))
		goto out;
	if (chars && rk_unescape_c(chars, &data, &err)) {
		fail_err(k, &err);
		goto out;
	}
	struct rk_session_reply rep = {0};
	if (rk_session_input(k->eng, c.id, k->p[1], data.data, data.len, yield, (size_t)maxout, &rep, &err))
		fail_err(k, &err);
	else
		reply_session(k, 200, &rep);
	rk_session_reply_release(&rep);
out:
	rk_buf_release(&data);
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_session_resize(struct call *k)
{
	static const char *const allowed[] = {"rows", "cols", NULL};
	struct rk_computer c = {0};
	if (load_computer(k, k->p[0], &c))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	int64_t rows, cols;
	struct rk_error err;
	if (b && get_int(k, b, "rows", 1, 1000, 0, &rows) == 0 && get_int(k, b, "cols", 1, 1000, 0, &cols) == 0) {
		if (!rows || !cols)
			fail(k, RK_EINVALID, "resize needs rows and cols (1 to 1000)");
		else if (rk_session_resize(k->eng, c.id, k->p[1], (int)rows, (int)cols, &err))
			fail_err(k, &err);
		else {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "session", k->p[1]);
			cJSON_AddNumberToObject(o, "rows", (double)rows);
			cJSON_AddNumberToObject(o, "cols", (double)cols);
			reply(k, 200, o);
		}
	}
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_session_kill(struct call *k)
{
	struct rk_computer c = {0};
	if (load_computer(k, k->p[0], &c))
		return 0;
	struct rk_session_reply rep = {0};
	struct rk_error err;
	if (rk_session_kill(k->eng, c.id, k->p[1], &rep, &err))
		fail_err(k, &err);
	else
		reply_session(k, 200, &rep);
	rk_session_reply_release(&rep);
	rk_computer_release(&c);
	return 0;
}

/* --- files ------------------------------------------------------------------------------- */

static int h_file_get(struct call *k)
{
	struct rk_computer c = {0};
	const char *path = query(k, "path"), *enc = query(k, "encoding");
	int64_t maxb;
	if (!path || !*path)
		return fail(k, RK_EINVALID, "GET files needs ?path=");
	if (enc && strcmp(enc, "utf8") && strcmp(enc, "base64"))
		return fail(k, RK_EINVALID, "encoding must be utf8 or base64");
	if (query_int(k, "maxBytes", 1, RK_FILE_READ_LIMIT, RK_FILE_READ_DEFAULT_MAX, &maxb) ||
	    work_computer(k, k->p[0], &c))
		return 0;
	struct rk_buf data = RK_BUF_INIT;
	rk_buf_init(&data);
	struct rk_error err;
	if (rk_computer_file_read(k->eng, &c, path, (size_t)maxb, &data, &err)) {
		fail_err(k, &err);
	} else {
		int text = rk_utf8_valid(data.data, data.len);
		int as_utf8 = enc ? !strcmp(enc, "utf8") : text;
		if (as_utf8 && !text) {
			fail(k, RK_EINVALID, "%s is not valid UTF-8: ask for encoding=base64", path);
		} else {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", path);
			cJSON_AddNumberToObject(o, "size", (double)data.len);
			cJSON_AddStringToObject(o, "encoding", as_utf8 ? "utf8" : "base64");
			char *content = as_utf8 ? NULL : b64(data.data, data.len);
			cJSON_AddStringToObject(o, "content", as_utf8 ? data.data : content);
			free(content);
			reply(k, 200, o);
		}
	}
	rk_buf_release(&data);
	rk_computer_release(&c);
	return 0;
}

static int h_file_put(struct call *k)
{
	static const char *const allowed[] = {"path", "content", "encoding", "executable", NULL};
	struct rk_computer c = {0};
	if (work_computer(k, k->p[0], &c))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	const char *path, *content, *enc;
	int exe;
	struct rk_buf data = RK_BUF_INIT;
	rk_buf_init(&data);
	struct rk_error err;
	if (!b || get_str(k, b, "path", 0, &path) || get_str(k, b, "content", 1, &content) ||
	    get_str(k, b, "encoding", 0, &enc) || get_bool(k, b, "executable", 0, &exe))
		goto out;
	if (!path)
		path = query(k, "path");
	if (!path || !*path) {
		fail(k, RK_EINVALID, "PUT files needs a path (in the body or ?path=)");
		goto out;
	}
	if (!enc || !strcmp(enc, "utf8")) {
		rk_buf_adds(&data, content);
	} else if (!strcmp(enc, "base64")) {
		size_t len = strlen(content), n = 0;
		rk_buf_grow(&data, len + 1);
		if (sodium_base642bin((unsigned char *)data.data, len + 1, content, len, " \t\r\n", &n, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0) {
			fail(k, RK_EINVALID, "content is not valid base64");
			goto out;
		}
		data.len = n;
		data.data[n] = '\0';
	} else {
		fail(k, RK_EINVALID, "encoding must be utf8 or base64");
		goto out;
	}
	if (rk_computer_file_write(k->eng, &c, path, data.data, data.len, exe, &err)) {
		fail_err(k, &err);
		goto out;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", path);
	cJSON_AddNumberToObject(o, "size", (double)data.len);
	cJSON_AddBoolToObject(o, "executable", exe);
	reply(k, 200, o);
out:
	rk_buf_release(&data);
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_file_delete(struct call *k)
{
	struct rk_computer c = {0};
	const char *path = query(k, "path");
	if (!path || !*path)
		return fail(k, RK_EINVALID, "DELETE files needs ?path=");
	if (work_computer(k, k->p[0], &c))
		return 0;
	struct rk_error err;
	if (rk_computer_file_remove(k->eng, &c, path, &err)) {
		fail_err(k, &err);
	} else {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", path);
		cJSON_AddBoolToObject(o, "removed", 1);
		reply(k, 200, o);
	}
	rk_computer_release(&c);
	return 0;
}

static int h_directory(struct call *k)
{
	struct rk_computer c = {0};
	const char *path = query(k, "path");
	if (work_computer(k, k->p[0], &c))
		return 0;
	struct rk_file_entry *es;
	size_t n;
	struct rk_error err;
	if (rk_computer_file_list(k->eng, &c, path ? path : "", &es, &n, &err)) {
		fail_err(k, &err);
	} else {
		cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "entries");
		cJSON_AddStringToObject(o, "path", path ? path : "");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, rk_file_entry_to_json(&es[i]));
		rk_file_entries_free(es, n);
		camelize(o);
		reply(k, 200, o);
	}
	rk_computer_release(&c);
	return 0;
}

/* --- desktop ------------------------------------------------------------------------------ */

static int desktop_computer(struct call *k, struct rk_computer *c)
{
	if (load_computer(k, k->p[0], c))
		return -1;
	struct rk_error err;
	const struct rk_provider_ops *ops = rk_engine_provider(c, &err);
	if (!ops)
		return fail_err(k, &err), rk_computer_release(c), -1;
	if (ops->caps & RK_CAP_DIALS_IN) {
		fail(k, RK_EUNSUPPORTED, "paired machine %s has no desktop", c->name);
		rk_computer_release(c);
		return -1;
	}
	if (!(ops->caps & RK_CAP_DESKTOP) || !c->desktop) {
		fail(k, RK_EUNSUPPORTED,
		     !c->desktop ? "computer %s was made without a desktop (create it with \"desktop\": true)"
				 : "computer %s's provider has no desktop",
		     c->id);
		rk_computer_release(c);
		return -1;
	}
	return 0;
}

static void add_image(cJSON *meta, const unsigned char *png, size_t len)
{
	if (png) {
		char *s = b64(png, len);
		cJSON_AddStringToObject(meta, "image", s);
		free(s);
	} else {
		cJSON_AddNullToObject(meta, "image");
	}
}

static int h_screenshot(struct call *k)
{
	static const char *const allowed[] = {"display", "maxWidth", "maxHeight", NULL};
	struct rk_computer c = {0};
	if (desktop_computer(k, &c))
		return 0;
	cJSON *b = body_object(k, 0, allowed);
	int64_t display, mw, mh;
	struct rk_error err;
	if (b && get_int(k, b, "display", 0, 7, 0, &display) == 0 && get_int(k, b, "maxWidth", 0, 10000, 0, &mw) == 0 &&
	    get_int(k, b, "maxHeight", 0, 10000, 0, &mh) == 0) {
		struct rk_display_observe_options oo = {.max_width = (int)mw, .max_height = (int)mh};
		struct rk_display_shot shot = {0};
		if (rk_display_observe(k->eng, &c, (int)display, &oo, &shot, &err)) {
			fail_err(k, &err);
		} else {
			cJSON *meta = shot.meta;
			shot.meta = NULL;
			add_image(meta, shot.png, shot.png_len);
			camelize(meta);
			reply(k, 200, meta);
		}
		rk_display_shot_release(&shot);
	}
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

static int h_actions(struct call *k)
{
	static const char *const allowed[] = {"actions",  "settleMs",  "observe", "display",
					      "maxWidth", "maxHeight", NULL};
	struct rk_computer c = {0};
	if (desktop_computer(k, &c))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	int64_t display, mw, mh, settle;
	int observe;
	struct rk_error err;
	if (!b || get_int(k, b, "display", 0, 7, 0, &display) || get_int(k, b, "maxWidth", 0, 10000, 0, &mw) ||
	    get_int(k, b, "maxHeight", 0, 10000, 0, &mh) || get_int(k, b, "settleMs", 0, 3000, -1, &settle) ||
	    get_bool(k, b, "observe", 1, &observe))
		goto out;
	const cJSON *acts = cJSON_GetObjectItemCaseSensitive(b, "actions");
	if (!cJSON_IsArray(acts)) {
		fail(k, RK_EINVALID, "actions must be an array of 1 to 24 action objects");
		goto out;
	}
	char *batch = cJSON_PrintUnformatted(acts);
	struct rk_display_observe_options oo = {.max_width = (int)mw, .max_height = (int)mh};
	struct rk_display_act_result res = {0};
	if (rk_display_act(k->eng, &c, (int)display, batch, (int)settle, observe, &oo, &res, &err)) {
		fail_err(k, &err);
	} else {
		cJSON *doc = res.result;
		res.result = NULL;
		cJSON *obs = cJSON_GetObjectItemCaseSensitive(doc, "observation");
		if (cJSON_IsObject(obs))
			add_image(obs, res.png, res.png_len);
		camelize(doc);
		reply(k, 200, doc);
	}
	rk_display_act_result_release(&res);
	free(batch);
out:
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

/* A gateway URL with a view (default) or control capability on the
 * desktop: the same engine call as `rakazo screen share`. Body:
 * {control, ttlSeconds, display | botId}. The token is in the URL only. */
static int h_stream(struct call *k)
{
	static const char *const allowed[] = {"control", "ttlSeconds", "display", "botId", NULL};
	struct rk_computer c = {0};
	if (desktop_computer(k, &c))
		return 0;
	cJSON *b = body_object(k, 0, allowed);
	int64_t display, ttl;
	int control;
	const char *bot = NULL;
	struct rk_error err;
	if (!b || get_bool(k, b, "control", 0, &control) || get_int(k, b, "display", 0, 63, 0, &display) ||
	    get_int(k, b, "ttlSeconds", 1, RK_GATEWAY_MAX_TTL_S, RK_GATEWAY_DEFAULT_TTL_S, &ttl) ||
	    get_str(k, b, "botId", 0, &bot))
		goto out;
	if (bot && cJSON_GetObjectItemCaseSensitive(b, "display")) {
		fail(k, RK_EINVALID, "give botId (the bot's own screen) or display, not both");
		goto out;
	}
	/* the capability lives as long as the caller, and its token, may use c */
	struct rk_actor a;
	if (caller(k, &a))
		goto out;
	struct rk_gateway_share_options so = {
		.display = (int)display,
		.bot_id = bot,
		.policy = control ? RK_GATEWAY_CONTROL : RK_GATEWAY_VIEW,
		.ttl_s = ttl,
		.maker = &a,
		.api_token = k->tok.id,
	};
	char *token = NULL;
	struct rk_gateway_cap cap;
	int r = rk_gateway_share(k->eng, &c, &so, &token, &cap, &err);
	rk_actor_release(&a);
	if (r) {
		fail_err(k, &err);
		goto out;
	}
	char *url = rk_gateway_url(k->eng, token);
	cJSON *doc = rk_gateway_cap_to_json(&cap, rk_now_ms());
	cJSON_AddStringToObject(doc, "url", url);
	camelize(doc);
	reply(k, 200, doc);
	rk_free_secret(&url);
	rk_free_secret(&token);
	rk_gateway_cap_release(&cap);
out:
	cJSON_Delete(b);
	rk_computer_release(&c);
	return 0;
}

/* --- ports, usage, rights --------------------------------------------------------------------- */

static int h_port(struct call *k)
{
	struct rk_computer c = {0};
	char *end;
	long port = strtol(k->p[1], &end, 10);
	if (*end || port < 1 || port > 65535)
		return fail(k, RK_EINVALID, "a port is a number from 1 to 65535");
	if (work_computer(k, k->p[0], &c))
		return 0;
	struct rk_error err;
	const struct rk_provider_ops *ops = rk_engine_provider(&c, &err);
	int local = 0;
	char *secret = NULL;
	if (!ops)
		fail_err(k, &err);
	else if (!ops->exec_spawn)
		fail(k, RK_EUNSUPPORTED, "computer %s's provider runs no commands, so it forwards no ports", c.id);
	else if (rk_computer_ensure_running(k->eng, &c, &err) ||
		 rk_api_port_forward(k->eng, &c, (int)port, k->tok.id, k->tok.bot_id, &local, &secret, &err))
		fail_err(k, &err);
	else {
		cJSON *o = cJSON_CreateObject();
		char addr[64];
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", local);
		cJSON_AddStringToObject(o, "computerId", c.id);
		cJSON_AddNumberToObject(o, "port", (double)port);
		cJSON_AddStringToObject(o, "address", addr);
		char *url = rk_xasprintf("http://%s", addr);
		cJSON_AddStringToObject(o, "url", url);
		free(url);
		/* shown once: a connection sends it and a newline first */
		cJSON_AddStringToObject(o, "secret", secret);
		reply(k, 200, o);
	}
	free(secret);
	rk_computer_release(&c);
	return 0;
}

static int h_usage(struct call *k)
{
	struct rk_computer c = {0};
	if (load_computer(k, k->p[0], &c))
		return 0;
	int64_t *v;
	size_t n;
	struct rk_error err;
	if (rk_api_usage_list(k->eng->db, c.id, &v, &n, &err)) {
		fail_err(k, &err);
	} else {
		cJSON *o = cJSON_CreateObject(), *arr;
		cJSON_AddStringToObject(o, "computerId", c.id);
		arr = cJSON_AddArrayToObject(o, "records");
		double total = 0;
		int64_t now = rk_now_ms();
		for (size_t i = 0; i < n; i++) {
			cJSON *r = cJSON_CreateObject();
			char buf[40];
			cJSON_AddStringToObject(r, "startedAt", rk_iso8601(v[2 * i], buf, sizeof(buf)));
			if (v[2 * i + 1])
				cJSON_AddStringToObject(r, "endedAt", rk_iso8601(v[2 * i + 1], buf, sizeof(buf)));
			else
				cJSON_AddNullToObject(r, "endedAt");
			double secs = (double)((v[2 * i + 1] ? v[2 * i + 1] : now) - v[2 * i]) / 1000.0;
			cJSON_AddNumberToObject(r, "seconds", secs);
			total += secs;
			cJSON_AddItemToArray(arr, r);
		}
		cJSON_AddNumberToObject(o, "totalSeconds", total);
		free(v);
		reply(k, 200, o);
	}
	rk_computer_release(&c);
	return 0;
}

static cJSON *right_doc(const struct rk_api_right *r)
{
	cJSON *o = cJSON_CreateObject();
	char buf[40];
	cJSON_AddStringToObject(o, "computerId", r->computer_id);
	cJSON_AddStringToObject(o, "botId", r->bot_id);
	cJSON_AddStringToObject(o, "grantedBy", r->granted_by);
	cJSON_AddStringToObject(o, "grantedAt", rk_iso8601(r->created_at, buf, sizeof(buf)));
	return o;
}

static int h_bots_list(struct call *k)
{
	struct rk_computer c = {0};
	if (member_only(k) || load_computer(k, k->p[0], &c))
		return 0;
	struct rk_api_right *rs;
	size_t n;
	struct rk_error err;
	if (rk_api_right_list(k->eng->db, c.id, &rs, &n, &err)) {
		fail_err(k, &err);
	} else {
		cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "bots");
		for (size_t i = 0; i < n; i++) {
			cJSON_AddItemToArray(arr, right_doc(&rs[i]));
			rk_api_right_release(&rs[i]);
		}
		free(rs);
		reply(k, 200, o);
	}
	rk_computer_release(&c);
	return 0;
}

static int h_bot_put(struct call *k)
{
	struct rk_computer c = {0};
	if (member_only(k) || resolve_computer(k, k->p[0], "computers.expose", &c))
		return 0;
	struct rk_api_right r = {0};
	struct rk_error err;
	if (rk_api_right_put(k->eng->db, c.id, k->p[1], k->tok.id, &r, &err))
		fail_err(k, &err);
	else
		reply(k, 200, right_doc(&r));
	rk_api_right_release(&r);
	rk_computer_release(&c);
	return 0;
}

static int h_bot_get(struct call *k)
{
	struct rk_computer c = {0};
	if (k->tok.bot_id && strcmp(k->tok.bot_id, k->p[1]))
		return fail(k, RK_EDENIED, "a bot's token sees only its own right");
	if (load_computer(k, k->p[0], &c))
		return 0;
	struct rk_api_right r = {0};
	struct rk_error err;
	if (rk_api_right_get(k->eng->db, c.id, k->p[1], &r, &err))
		fail_err(k, &err);
	else
		reply(k, 200, right_doc(&r));
	rk_api_right_release(&r);
	rk_computer_release(&c);
	return 0;
}

static int h_bot_delete(struct call *k)
{
	struct rk_computer c = {0};
	if (member_only(k) || resolve_computer(k, k->p[0], "computers.expose", &c))
		return 0;
	struct rk_error err;
	if (rk_api_right_delete(k->eng->db, c.id, k->p[1], &err)) {
		fail_err(k, &err);
	} else {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "computerId", c.id);
		cJSON_AddStringToObject(o, "botId", k->p[1]);
		cJSON_AddBoolToObject(o, "removed", 1);
		reply(k, 200, o);
	}
	rk_computer_release(&c);
	return 0;
}

static int h_pair_create(struct call *k)
{
	static const char *const allowed[] = {"name", NULL};
	if (member_only(k))
		return 0;
	cJSON *b = body_object(k, 1, allowed);
	const char *name;
	if (b && get_str(k, b, "name", 1, &name) == 0) {
		char *id = NULL, *secret = NULL;
		struct rk_error err;
		if (rk_api_pair_create(k->eng->db, name, k->eng->owner, &id, &secret, &err)) {
			fail_err(k, &err);
		} else {
			record_org(k, id);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "computerId", id);
			cJSON_AddStringToObject(o, "machineSecret", secret);
			reply(k, 201, o);
		}
		free(id);
		free(secret);
	}
	cJSON_Delete(b);
	return 0;
}

/* The machine's connection: authenticated by its own secret, not a token. */
static int h_pair_connect(struct call *k)
{
	const char *h = k->req->authorization;
	if (!h || strncasecmp(h, "Machine ", 8) != 0)
		return fail_with(k, 401, "unauthorized", RK_EDENIED,
				 "the paired machine's connection needs Authorization: Machine SECRET (rakazo pair)", 1,
				 NULL);
	char *id = NULL;
	struct rk_error err;
	if (rk_api_pair_verify(k->eng->db, h + 8, &id, &err))
		return fail_with(k, 401, "unauthorized", RK_EDENIED, err.message, 1, NULL);
	const char *up = k->req->upgrade;
	if (!up || strcasecmp(up, "rakazo-pair") != 0) {
		free(id);
		return fail(k, RK_EINVALID, "the connection must ask for Upgrade: rakazo-pair");
	}
	k->out->status = 101;
	k->out->upgrade_pair = id;
	return 0;
}

static int h_health(struct call *k)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ok", 1);
	cJSON_AddStringToObject(o, "version", RK_VERSION);
	return reply(k, 200, o);
}

/* --- MCP over Streamable HTTP (api/mcp.h) ---------------------------------------------------------- */

/* The host part of an authority ("[::1]:7380" -> "[::1]", "a.b:80" -> "a.b"). */
static char *host_of(const char *authority)
{
	size_t n = authority[0] == '[' ? strcspn(authority, "]") + 1 : strcspn(authority, ":/");
	return rk_xstrndup(authority, n);
}

/* The transport's guard against DNS rebinding: a browser's Origin must be
 * a loopback host or the host the request was sent to. */
static int origin_ok(const struct rk_api_request *req)
{
	const char *o = req->origin;
	if (!o)
		return 1;
	const char *sep = strstr(o, "://");
	if (!sep || !sep[3])
		return 0;
	char *host = host_of(sep + 3);
	char *own = req->host ? host_of(req->host) : NULL;
	int ok = !strcmp(host, "127.0.0.1") || !strcmp(host, "localhost") || !strcmp(host, "[::1]") ||
		 (own && !strcasecmp(host, own));
	free(host);
	free(own);
	return ok;
}

/* POST /mcp: one JSON-RPC message; the answer as JSON (the spec lets the
 * server choose JSON over an event stream), 202 for a notification. The
 * token's bot acts (else the server's member), as on every other route;
 * nothing is kept between requests, so no session id is minted. */
static int h_mcp(struct call *k)
{
	if (!origin_ok(k->req))
		return fail_with(k, 403, "forbidden", RK_EDENIED,
				 "the Origin header names another site: MCP is served to this host and loopback only",
				 1, NULL);
	struct rk_mcp_options o = {.transport = "http",
				   .bot_id = k->tok.bot_id,
				   .providers = k->req->providers,
				   .header_version = k->req->mcp_version,
				   .header_method = k->req->mcp_method,
				   .header_name = k->req->mcp_name};
	struct rk_mcp *m = rk_mcp_new(k->eng, &o);
	struct rk_buf out;
	struct rk_mcp_reply rep;
	rk_buf_init(&out);
	rk_mcp_handle(m, k->req->body ? k->req->body : "", k->req->body_len, &out, &rep);
	rk_mcp_free(m);
	cJSON *doc = rep.replied ? cJSON_Parse(out.data) : NULL;
	rk_buf_release(&out);
	return reply(k, rep.http_status, doc);
}

/* --- the table ------------------------------------------------------------------------------------ */

#define R(m, p, fn)                                                                                                    \
	{                                                                                                              \
		{m, p, 1, 0}, fn                                                                                       \
	}
#define F(m, p, fn)                                                                                                    \
	{                                                                                                              \
		{m, p, 1, 1}, fn                                                                                       \
	}
static const struct route routes[] = {
	{{"GET", "/v1/health", 0, 0}, h_health},
	F("POST", "/v1/computers", h_create),
	R("GET", "/v1/computers", h_list),
	R("GET", "/v1/computers/{computerId}", h_show),
	F("DELETE", "/v1/computers/{computerId}", h_delete),
	F("POST", "/v1/computers/{computerId}/pause", h_pause),
	F("POST", "/v1/computers/{computerId}/resume", h_resume),
	R("GET", "/v1/executions/{executionId}", h_exe_get),
	R("GET", "/v1/executions/{executionId}/observe", h_exe_observe),
	R("POST", "/v1/executions/{executionId}/cancel", h_exe_cancel),
	R("POST", "/v1/executions/{executionId}/decision", h_exe_decide),
	F("POST", "/v1/computers/{computerId}/sessions", h_session_start),
	R("POST", "/v1/computers/{computerId}/sessions/{sessionId}/input", h_session_input),
	R("POST", "/v1/computers/{computerId}/sessions/{sessionId}/resize", h_session_resize),
	R("DELETE", "/v1/computers/{computerId}/sessions/{sessionId}", h_session_kill),
	F("GET", "/v1/computers/{computerId}/files", h_file_get),
	F("PUT", "/v1/computers/{computerId}/files", h_file_put),
	F("DELETE", "/v1/computers/{computerId}/files", h_file_delete),
	F("GET", "/v1/computers/{computerId}/directory", h_directory),
	F("POST", "/v1/computers/{computerId}/desktop/screenshot", h_screenshot),
	F("POST", "/v1/computers/{computerId}/desktop/actions", h_actions),
	F("POST", "/v1/computers/{computerId}/desktop/stream", h_stream),
	R("PUT", "/v1/computers/{computerId}/ports/{port}", h_port),
	R("GET", "/v1/computers/{computerId}/usage", h_usage),
	R("POST", "/v1/paired", h_pair_create),
	{{"GET", "/v1/paired/connect", 0, 0}, h_pair_connect},
	R("GET", "/v1/computers/{computerId}/bots", h_bots_list),
	R("PUT", "/v1/computers/{computerId}/bots/{botId}", h_bot_put),
	R("GET", "/v1/computers/{computerId}/bots/{botId}", h_bot_get),
	R("DELETE", "/v1/computers/{computerId}/bots/{botId}", h_bot_delete),
	F("POST", "/mcp", h_mcp),
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

size_t rk_api_route_count(void)
{
	return NROUTES;
}
const struct rk_api_route_info *rk_api_route(size_t i)
{
	return i < NROUTES ? &routes[i].info : NULL;
}

static int match(const char *pattern, const char *path, char **params);

int rk_api_route_forks(const char *method, const char *path)
{
	for (size_t i = 0; i < NROUTES; i++) {
		char *p[MAX_PARAMS] = {0};
		int hit = match(routes[i].info.path, path, p);
		for (int j = 0; j < MAX_PARAMS; j++)
			free(p[j]);
		if (hit && !strcmp(routes[i].info.method, method))
			return routes[i].info.forks;
	}
	return 0;
}

/* Matches path against pattern, filling params (malloc'd) on success. */
static int match(const char *pattern, const char *path, char **params)
{
	int np = 0;
	const char *p = pattern, *s = path;
	while (*p && *s) {
		if (*p == '{') {
			const char *pe = strchr(p, '}'), *se = strchr(s, '/');
			size_t len = se ? (size_t)(se - s) : strlen(s);
			if (!pe || !len || len > 200 || np == MAX_PARAMS)
				goto no;
			params[np++] = rk_xstrndup(s, len);
			p = pe + 1;
			s += len;
		} else if (*p++ != *s++) {
			goto no;
		}
	}
	if (!*p && !*s)
		return 1;
no:
	for (int i = 0; i < np; i++) {
		free(params[i]);
		params[i] = NULL;
	}
	return 0;
}

static int authenticate(struct call *k)
{
	const struct rk_api_token *a = k->req->admitted;
	if (a && a->id) {
		/* checked on this request's headers a moment ago */
		k->tok = *a;
		k->tok.id = rk_xstrdup(a->id);
		k->tok.name = rk_xstrdup(a->name);
		k->tok.bot_id = rk_xstrdup(a->bot_id);
		free(k->eng->owner);
		k->eng->owner = rk_xasprintf("api:%s", k->tok.id);
		return 0;
	}
	const char *h = k->req->authorization;
	if (!h || !*h)
		return fail_with(k, 401, "unauthorized", RK_EDENIED,
				 "this route needs an Authorization: Bearer TOKEN header (rakazo serve token create)",
				 1, NULL),
		       -1;
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return fail_with(k, 401, "unauthorized", RK_EDENIED, "the Authorization header must be Bearer TOKEN", 1,
				 NULL),
		       -1;
	const char *t = h + 7;
	while (*t == ' ')
		t++;
	struct rk_error e;
	if (rk_api_token_verify(k->eng->db, t, &k->tok, &e)) {
		if (e.code == RK_EDENIED)
			return fail_with(k, 401, "unauthorized", RK_EDENIED, e.message, 1, NULL), -1;
		return fail_err(k, &e), -1;
	}
	free(k->eng->owner);
	k->eng->owner = rk_xasprintf("api:%s", k->tok.id);
	return 0;
}

/* The request's route with its parameters in k->p, or NULL with 404 or
 * 405 answered. */
static const struct route *find_route(struct call *k)
{
	int path_known = 0;
	for (size_t i = 0; i < NROUTES; i++) {
		if (!match(routes[i].info.path, k->req->path, k->p))
			continue;
		if (!strcmp(routes[i].info.method, k->req->method))
			return &routes[i];
		path_known = 1;
		for (int j = 0; j < MAX_PARAMS; j++) {
			free(k->p[j]);
			k->p[j] = NULL;
		}
	}
	if (path_known)
		fail_with(k, 405, "method_not_allowed", RK_EUSAGE, "this route does not take that method", 1, NULL);
	else
		fail_with(k, 404, "route_not_found", RK_ENOTFOUND, "no such route (see api/openapi.json)", 1, NULL);
	return NULL;
}

int rk_api_admit(struct rk_engine *eng, const struct rk_api_request *req, struct rk_api_token *tok,
		 struct rk_api_response *out)
{
	struct call k = {.eng = eng, .req = req, .out = out};
	memset(out, 0, sizeof(*out));
	memset(tok, 0, sizeof(*tok));
	const struct route *hit = find_route(&k);
	int ok = hit && (!hit->info.auth || authenticate(&k) == 0);
	if (ok)
		*tok = k.tok;
	else
		rk_api_token_release(&k.tok);
	for (int j = 0; j < MAX_PARAMS; j++)
		free(k.p[j]);
	return ok;
}

void rk_api_handle(struct rk_engine *eng, const struct rk_api_request *req, struct rk_api_response *out)
{
	struct call k = {.eng = eng, .req = req, .out = out};
	memset(out, 0, sizeof(*out));
	const struct route *hit = find_route(&k);
	if (hit && req->body_too_large)
		fail(&k, RK_ETOOLARGE, "the request body exceeds %u bytes", RK_API_BODY_MAX);
	else if (hit && (!hit->info.auth || authenticate(&k) == 0))
		hit->fn(&k);
	if (!out->status)
		fail(&k, RK_EFAILED, "the route gave no answer");
	rk_api_token_release(&k.tok);
	for (int j = 0; j < MAX_PARAMS; j++)
		free(k.p[j]);
}
