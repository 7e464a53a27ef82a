#include "engine/machine/execution.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/machine/hook.h"
#include "engine/machine/limits.h"
#include "engine/machine/machine.h"
#include "engine/machine/reservation.h"
#include "engine/screen/screen.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_execution_state, RK_EXECUTION_STATE, RK_EXECUTION_STATES)

RK_NAMES_DEFINE(rk_lifecycle_op, RK_LIFECYCLE_OP, RK_LIFECYCLE_OPS)

int rk_execution_state_is_final(const char *state)
{
	enum rk_execution_state s = rk_execution_state_of(state);
	return s == RK_EXECUTION_SUCCEEDED || s == RK_EXECUTION_FAILED || s == RK_EXECUTION_CANCELLED;
}

static int state_is_settled(const char *state)
{
	return rk_execution_state_is_final(state) || rk_execution_state_of(state) == RK_EXECUTION_OUTCOME_UNKNOWN;
}

static int valid_op(const char *op)
{
	return rk_lifecycle_op_of(op) != RK_LIFECYCLE_OP_UNKNOWN;
}

/* --- JSON ---------------------------------------------------------------- */


cJSON *rk_execution_to_json(const struct rk_execution *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", e->id);
	cJSON_AddStringToObject(o, "computer_id", e->computer_id);
	cJSON_AddStringToObject(o, "op", e->op);
	cJSON_AddStringToObject(o, "state", e->state);
	cJSON_AddStringToObject(o, "phase", e->phase);
	cJSON_AddStringToObject(o, "command_key", e->command_key);
	if (e->error_code) {
		cJSON *er = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(er, "code", e->error_code);
		rk_json_add_str_or_null(er, "message", e->error_message);
	} else {
		cJSON_AddNullToObject(o, "error");
	}
	cJSON *res = e->result ? cJSON_Parse(e->result) : NULL;
	if (res)
		cJSON_AddItemToObject(o, "result", res);
	else
		cJSON_AddNullToObject(o, "result");
	cJSON_AddBoolToObject(o, "cancel_requested", e->cancel_requested != 0);
	rk_json_add_time(o, "created_at", e->created_at);
	rk_json_add_time(o, "started_at", e->started_at);
	rk_json_add_time(o, "finished_at", e->finished_at);
	return o;
}

cJSON *rk_event_to_json(const struct rk_event *ev)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "sequence", (double)ev->sequence);
	cJSON_AddStringToObject(o, "type", ev->type);
	cJSON *data = ev->data ? cJSON_Parse(ev->data) : NULL;
	if (data)
		cJSON_AddItemToObject(o, "data", data);
	else
		cJSON_AddNullToObject(o, "data");
	rk_json_add_time(o, "created_at", ev->created_at);
	return o;
}

static int append_event(struct rk_engine *eng, const char *id, const char *type, cJSON *data, struct rk_error *err)
{
	char *text = data ? cJSON_PrintUnformatted(data) : NULL;
	int r = rk_db_event_append(eng->db, id, type, text, err);
	free(text);
	cJSON_Delete(data);
	return r;
}

static cJSON *msg_data(const char *key, const char *value)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, key, value);
	return d;
}

/* --- submit ------------------------------------------------------------------- */

static int validate_create_body(const cJSON *body, struct rk_error *err)
{
	if (!cJSON_IsObject(body))
		return rk_error_set(err, RK_EINVALID, "create: the body must be a JSON object");
	static const char *const known[] = {"name",    "provider",  "desktop",	 "pause_after", "mode",
					    "options", "revisions", "resources", NULL};
	for (const cJSON *c = body->child; c; c = c->next) {
		size_t i;
		for (i = 0; known[i] && strcmp(known[i], c->string); i++)
			;
		if (!known[i])
			return rk_error_set(err, RK_EINVALID, "create: unknown field '%s'", c->string);
	}
	const char *name, *provider, *mode;
	int r;
	if ((r = rk_json_get_string(body, "name", 1, &name, "create", err)) ||
	    (r = rk_json_get_string(body, "provider", 1, &provider, "create", err)) ||
	    (r = rk_json_get_string(body, "mode", 0, &mode, "create", err)))
		return r;
	if (!*name || strlen(name) > 64)
		return rk_error_set(err, RK_EINVALID, "create: name must be 1 to 64 characters");
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return rk_error_set(err, RK_EINVALID,
					    "create: name '%s' may only hold letters, digits, '-', '_' and '.'", name);
	if (!rk_provider_find(provider)) {
		struct rk_buf b;
		rk_buf_init(&b);
		for (size_t i = 0; rk_providers[i]; i++)
			rk_buf_printf(&b, "%s%s", i ? ", " : "", rk_providers[i]->name);
		r = rk_error_set(err, RK_EINVALID, "create: unknown provider '%s' (known: %s)", provider, b.data);
		rk_buf_release(&b);
		return r;
	}
	if (mode && rk_computer_mode_of(mode) == RK_COMPUTER_MODE_UNKNOWN)
		return rk_error_set(err, RK_EINVALID, "create: mode must be team or private");
	int desktop;
	int64_t v;
	if ((r = rk_json_get_bool(body, "desktop", 1, &desktop, "create", err)) ||
	    (r = rk_json_get_int(body, "pause_after", 30, 30LL * 24 * 3600, 600, &v, "create", err)) ||
	    (r = rk_json_get_int(body, "revisions", 1, 1000, 1, &v, "create", err)))
		return r;
	const cJSON *opt = cJSON_GetObjectItemCaseSensitive(body, "options");
	if (opt && !cJSON_IsObject(opt) && !cJSON_IsNull(opt))
		return rk_error_set(err, RK_EINVALID, "create: options must be an object");
	int w, h;
	if (rk_screen_size_option(opt, &w, &h, err))
		return rk_error_prefix(err, "create");
	struct rk_limits lim;
	return rk_limits_from_json(cJSON_GetObjectItemCaseSensitive(body, "resources"), rk_provider_find(provider),
				   &lim, err);
}

static char *hash_command(const char *op, const char *computer_id, const cJSON *body)
{
	cJSON *whole = cJSON_CreateObject();
	cJSON_AddStringToObject(whole, "op", op);
	rk_json_add_str_or_null(whole, "computer", computer_id);
	cJSON_AddItemToObject(whole, "body", body ? cJSON_Duplicate(body, 1) : cJSON_CreateObject());
	char *canon = rk_json_canonical(whole);
	cJSON_Delete(whole);
	char hex[65];
	rk_sha256_hex(canon, strlen(canon), hex);
	free(canon);
	return rk_xstrdup(hex);
}

static int insert_computer(struct rk_engine *eng, const char *id, const cJSON *body, struct rk_error *err)
{
	struct rk_computer c = {0};
	int64_t now = rk_now_ms();
	c.id = (char *)id;
	c.name = (char *)rk_json_string(body, "name", "");
	c.kind = (char *)rk_json_string(body, "provider", "");
	c.home_key = (char *)id;
	c.state = "starting";
	c.mode = (char *)rk_json_string(body, "mode", "private");
	c.owner = eng->owner;
	const cJSON *opt = cJSON_GetObjectItemCaseSensitive(body, "options");
	char *opt_text = cJSON_IsObject(opt) ? cJSON_PrintUnformatted(opt) : NULL;
	c.options = opt_text;
	/* validated already: the limits asked, with the provider's defaults */
	struct rk_limits lim = {0};
	const struct rk_provider_ops *ops = rk_provider_find(c.kind);
	if (ops)
		rk_limits_from_json(cJSON_GetObjectItemCaseSensitive(body, "resources"), ops, &lim, NULL);
	cJSON *res = rk_limits_to_json(&lim);
	c.resources = cJSON_PrintUnformatted(res);
	cJSON_Delete(res);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(body, "desktop");
	c.desktop = d ? cJSON_IsTrue(d) : 1;
	const cJSON *pa = cJSON_GetObjectItemCaseSensitive(body, "pause_after");
	c.pause_after = !pa ? 600 : cJSON_IsNull(pa) ? -1 : (int64_t)pa->valuedouble;
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(body, "revisions");
	c.revisions_kept = cJSON_IsNumber(rv) ? (int)rv->valuedouble : 1;
	c.created_at = c.updated_at = now;
	int r = rk_db_computer_insert(eng->db, &c, err);
	free(opt_text);
	free(c.resources);
	return r;
}

int rk_execution_submit(struct rk_engine *eng, const struct rk_submit *req, struct rk_execution *out, int *existed,
			struct rk_error *err)
{
	if (!valid_op(req->op))
		return rk_error_set(err, RK_EINVALID, "unknown lifecycle command '%s'", req->op ? req->op : "");
	int is_create = rk_lifecycle_op_of(req->op) == RK_LIFECYCLE_CREATE;
	int r;
	if (is_create && (r = validate_create_body(req->body, err)))
		return r;
	if (!is_create && !req->computer)
		return rk_error_set(err, RK_EUSAGE, "%s needs a computer", req->op);
	if (req->command_key && (!*req->command_key || strlen(req->command_key) > 200))
		return rk_error_set(err, RK_EINVALID, "command key must be 1 to 200 characters");

	char *gen_key = req->command_key ? NULL : rk_id_new("key");
	const char *key = req->command_key ? req->command_key : gen_key;
	const char *scope = req->key_scope ? req->key_scope : eng->owner ? eng->owner : "";
	struct rk_computer comp = {0};
	char *hash = NULL, *new_id = NULL, *body_text = NULL;
	*existed = 0;
	if ((r = rk_db_begin(eng->db, err)))
		goto out_nolock;

	/* resolve the computer inside the lock so the hash names a stable id */
	if (!is_create && (r = rk_db_computer_get(eng->db, req->computer, &comp, err)))
		goto fail;
	hash = hash_command(req->op, is_create ? NULL : comp.id, req->body);

	struct rk_error e2;
	struct rk_execution prev = {0};
	r = rk_db_execution_by_key(eng->db, scope, key, &prev, &e2);
	if (r == 0) {
		if (strcmp(prev.body_hash, hash) != 0) {
			r = rk_error_set(err, RK_ECONFLICT,
					 "command key '%s' was already used for a different command (execution %s, %s)",
					 key, prev.id, prev.op);
			rk_execution_release(&prev);
			goto fail;
		}
		rk_db_rollback(eng->db);
		*out = prev;
		*existed = 1;
		r = 0;
		goto out_nolock;
	}
	if (e2.code != RK_ENOTFOUND) {
		r = rk_error_set(err, e2.code, "%s", e2.message);
		goto fail;
	}

	const char *computer_id;
	if (is_create) {
		new_id = rk_id_new("cmp");
		if ((r = insert_computer(eng, new_id, req->body, err)))
			goto fail;
		computer_id = new_id;
	} else {
		struct rk_execution active = {0};
		r = rk_db_execution_active(eng->db, comp.id, &active, &e2);
		if (r == 0) {
			r = rk_error_set(err, RK_ECONFLICT,
					 "computer '%s' already has a lifecycle command in progress: execution %s "
					 "(%s, %s)%s",
					 comp.name, active.id, active.op, active.state,
					 rk_execution_state_of(active.state) == RK_EXECUTION_OUTCOME_UNKNOWN
						 ? "; settle it with `rakazo computer execution decide`"
						 : "");
			rk_execution_release(&active);
			goto fail;
		}
		if (e2.code != RK_ENOTFOUND) {
			r = rk_error_set(err, e2.code, "%s", e2.message);
			goto fail;
		}
		/* an update or recovery job's reservation excludes stop and idle suspension (issue 8) */
		enum rk_lifecycle_op op = rk_lifecycle_op_of(req->op);
		if ((op == RK_LIFECYCLE_STOP || op == RK_LIFECYCLE_PAUSE) &&
		    (r = rk_reservation_check(eng->db, comp.id, err)))
			goto fail;
		computer_id = comp.id;
	}

	struct rk_execution e = {0};
	e.id = rk_id_new("exe");
	e.computer_id = (char *)computer_id;
	e.op = (char *)req->op;
	e.command_key = (char *)key;
	e.key_scope = (char *)scope;
	body_text = req->body ? cJSON_PrintUnformatted(req->body) : rk_xstrdup("{}");
	e.body = body_text;
	e.body_hash = hash;
	e.state = "pending";
	e.phase = "submitted";
	e.created_at = rk_now_ms();
	if ((r = rk_db_execution_insert(eng->db, &e, err))) {
		free(e.id);
		goto fail;
	}
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "op", req->op);
	cJSON_AddStringToObject(data, "computer_id", computer_id);
	if ((r = append_event(eng, e.id, "submitted", data, err)) || (r = rk_db_commit(eng->db, err))) {
		free(e.id);
		goto fail;
	}
	r = rk_db_execution_get(eng->db, e.id, out, err);
	free(e.id);
	goto out_nolock;
fail:
	rk_db_rollback(eng->db);
out_nolock:
	rk_computer_release(&comp);
	free(hash);
	free(new_id);
	free(body_text);
	free(gen_key);
	return r;
}

int rk_execution_get(struct rk_engine *eng, const char *id, struct rk_execution *out, struct rk_error *err)
{
	return rk_db_execution_get(eng->db, id, out, err);
}

/* Ends an execution in the caller's transaction. */
/* Inside the caller's transaction: whether e is still the running command
 * of the worker that claimed it. Another worker takes it back when it
 * thinks that one dead; the one taken for dead must then write nothing. */
static int still_ours(struct rk_engine *eng, const struct rk_execution *e, struct rk_error *err)
{
	if (!e->worker_id || rk_execution_state_of(e->state) != RK_EXECUTION_RUNNING)
		return 0; /* not a worker's running command (a decision on outcome_unknown, say) */
	struct rk_execution now = {0};
	struct rk_error e2;
	int r = 0;
	if (rk_db_execution_get(eng->db, e->id, &now, &e2) == 0 &&
	    (!now.worker_id || strcmp(now.worker_id, e->worker_id) ||
	     rk_execution_state_of(now.state) != RK_EXECUTION_RUNNING))
		r = rk_error_set(err, RK_ESTALE, "execution %s was taken over: its worker %s was taken for dead", e->id,
				 e->worker_id);
	rk_execution_release(&now);
	return r;
}

static int finish(struct rk_engine *eng, struct rk_execution *e, const char *state, const char *code,
		  const char *message, cJSON *result, struct rk_error *err)
{
	int owned = still_ours(eng, e, err);
	if (owned) {
		cJSON_Delete(result);
		return owned;
	}
	free(e->state);
	e->state = rk_xstrdup(state);
	free(e->phase);
	e->phase = rk_xstrdup(state);
	free(e->error_code);
	e->error_code = rk_xstrdup(code);
	free(e->error_message);
	e->error_message = rk_xstrdup(message);
	free(e->result);
	e->result = result ? cJSON_PrintUnformatted(result) : NULL;
	cJSON_Delete(result);
	e->provider_call_at = 0;
	if (rk_execution_state_is_final(state))
		e->finished_at = rk_now_ms();
	return rk_db_execution_update(eng->db, e, err);
}

static void cancel_create_computer(struct rk_engine *eng, const struct rk_execution *e)
{
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE)
		rk_db_computer_mark_deleted(eng->db, e->computer_id, NULL);
}

int rk_execution_cancel(struct rk_engine *eng, const char *id, struct rk_execution *out, struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	struct rk_execution e = {0};
	if ((r = rk_db_execution_get(eng->db, id, &e, err)))
		goto fail;
	if (rk_execution_state_of(e.state) == RK_EXECUTION_PENDING) {
		if ((r = finish(eng, &e, "cancelled", "cancelled", "cancelled before it started", NULL, err)))
			goto fail;
		cancel_create_computer(eng, &e);
		if ((r = append_event(eng, e.id, "cancelled", msg_data("by", eng->owner), err)))
			goto fail;
	} else if (rk_execution_state_of(e.state) == RK_EXECUTION_RUNNING) {
		if ((r = rk_db_execution_request_cancel(eng->db, e.id, err)) ||
		    (r = append_event(eng, e.id, "cancel_requested", msg_data("by", eng->owner), err)))
			goto fail;
	} else {
		r = rk_error_set(err, RK_ECONFLICT, "execution %s is %s and cannot be cancelled", e.id, e.state);
		goto fail;
	}
	if ((r = rk_db_commit(eng->db, err)))
		goto fail;
	rk_execution_release(&e);
	return rk_db_execution_get(eng->db, id, out, err);
fail:
	rk_db_rollback(eng->db);
	rk_execution_release(&e);
	return r;
}

/* What a successful provider call means for the computer, in the caller's transaction. */
static int apply_success(struct rk_engine *eng, const struct rk_execution *e, const char *ref, struct rk_error *err)
{
	const char *id = e->computer_id;
	int64_t now = rk_now_ms();
	int r = 0;
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE || rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_RESUME) {
		if (ref && ((r = rk_db_computer_set_ref(eng->db, id, ref, err)) ||
			    (r = rk_db_computer_mark_ref_kind(eng->db, id, err))))
			return r;
		if ((r = rk_db_computer_set_state(eng->db, id, "running", err)))
			return r;
		return rk_db_usage_open(eng->db, id, now, err);
	}
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_PAUSE || rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_STOP) {
		const char *to = rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_PAUSE ? "paused" : "stopped";
		if ((r = rk_db_computer_set_state(eng->db, id, to, err)))
			return r;
		return rk_db_usage_close(eng->db, id, now, err);
	}
	/* delete */
	if ((r = rk_db_usage_close(eng->db, id, now, err)))
		return r;
	return rk_db_computer_mark_deleted(eng->db, id, err);
}

int rk_execution_decide(struct rk_engine *eng, const char *id, const char *outcome, struct rk_execution *out,
			struct rk_error *err)
{
	enum rk_execution_state decided = rk_execution_state_of(outcome);
	if (decided != RK_EXECUTION_SUCCEEDED && decided != RK_EXECUTION_FAILED)
		return rk_error_set(err, RK_EUSAGE, "--outcome must be succeeded or failed");
	int r = rk_db_begin(eng->db, err);
	if (r)
		return r;
	struct rk_execution e = {0};
	if ((r = rk_db_execution_get(eng->db, id, &e, err)))
		goto fail;
	if (rk_execution_state_of(e.state) != RK_EXECUTION_OUTCOME_UNKNOWN) {
		r = rk_error_set(err, RK_ECONFLICT,
				 "execution %s is %s; only outcome_unknown executions take a decision", e.id, e.state);
		goto fail;
	}
	if (decided == RK_EXECUTION_SUCCEEDED) {
		if ((r = apply_success(eng, &e, NULL, err)) ||
		    (r = finish(eng, &e, "succeeded", NULL, NULL, NULL, err)))
			goto fail;
	} else {
		if (rk_lifecycle_op_of(e.op) == RK_LIFECYCLE_CREATE)
			rk_db_computer_set_state(eng->db, e.computer_id, "failed", NULL);
		if ((r = finish(eng, &e, "failed", "outcome_unknown", "decided failed by the operator", NULL, err)))
			goto fail;
	}
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", outcome);
	cJSON_AddStringToObject(d, "by", eng->owner);
	if ((r = append_event(eng, e.id, "decided", d, err)) || (r = rk_db_commit(eng->db, err)))
		goto fail;
	rk_execution_release(&e);
	return rk_db_execution_get(eng->db, id, out, err);
fail:
	rk_db_rollback(eng->db);
	rk_execution_release(&e);
	return r;
}

int rk_execution_wait(struct rk_engine *eng, const char *id, int64_t timeout_ms, struct rk_execution *out,
		      struct rk_error *err)
{
	int64_t deadline = timeout_ms > 0 ? rk_monotonic_ms() + timeout_ms : 0;
	int64_t nap = 5;
	for (;;) {
		struct rk_execution e = {0};
		int r = rk_db_execution_get(eng->db, id, &e, err);
		if (r)
			return r;
		if (state_is_settled(e.state)) {
			*out = e;
			return 0;
		}
		rk_execution_release(&e);
		if (deadline && rk_monotonic_ms() > deadline)
			return rk_error_set(err, RK_ETIMEOUT, "execution %s did not finish in %lld ms", id,
					    (long long)timeout_ms);
		/* a worker that died would leave us waiting forever: the
		 * worker's wing answers by starting one */
		if ((r = RK_HOOK(waiting, err, eng, err)))
			return r;
		rk_sleep_ms(nap);
		if (nap < 100)
			nap *= 2;
	}
}

/* --- the worker's side -------------------------------------------------------------- */

static int set_phase(struct rk_engine *eng, struct rk_execution *e, const char *phase, int provider_call,
		     cJSON *event_data, struct rk_error *err)
{
	int r = rk_db_begin(eng->db, err);
	if (r) {
		cJSON_Delete(event_data);
		return r;
	}
	free(e->phase);
	e->phase = rk_xstrdup(phase);
	e->provider_call_at = provider_call ? rk_now_ms() : 0;
	if ((r = still_ours(eng, e, err)) || (r = rk_db_execution_update(eng->db, e, err)) ||
	    (r = append_event(eng, e->id, phase, event_data, err)) || (r = rk_db_commit(eng->db, err))) {
		rk_db_rollback(eng->db);
		return r;
	}
	return 0;
}

static int call_provider(struct rk_engine *eng, const struct rk_execution *e, const struct rk_computer *c,
			 char **ref_out, cJSON *result, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	const struct rk_provider_ops *ops = mc.ops;
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE || rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_RESUME) {
		enum rk_machine_state st = RK_MACHINE_GONE;
		int use_resume = rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_RESUME && c->provider_ref && ops->status &&
				 ops->resume && rk_machine_status(&mc, &st, err) == 0 && st != RK_MACHINE_GONE;
		if (use_resume) {
			r = rk_machine_resume(&mc, err);
			/* a restore or import made while it was down comes before any tool */
			if (r == 0)
				r = RK_HOOK(after_resume, err, eng, c, &mc, result, err);
			if (r == 0)
				*ref_out = rk_xstrdup(c->provider_ref);
		} else {
			struct rk_provision_result pr = {0};
			if ((r = RK_HOOK(before_provision, err, eng, c, result, err)) == 0 &&
			    (r = rk_fs_mkdirs(mc.home_dir, 0755, err)) == 0 &&
			    (r = rk_fs_mkdirs(mc.run_dir, 0755, err)) == 0)
				r = rk_machine_provision(&mc, &pr, err);
			/* the restore goes to the machine just provisioned, not the old ref
			 * (a remote provider finds its machine by the ref alone) */
			if (r == 0 && pr.ref)
				mc.m.ref = pr.ref;
			/* a replacement machine gets the latest workspace before any tool runs */
			if (r == 0 && (r = RK_HOOK(after_provision, err, eng, c, &mc, &pr, result, err)) != 0 &&
			    pr.fresh && pr.ref) {
				mc.m.ref = pr.ref;
				rk_machine_destroy(&mc, NULL);
			}
			if (r == 0) {
				*ref_out = pr.ref;
				cJSON_AddStringToObject(result, "provider_ref", pr.ref);
				cJSON_AddBoolToObject(result, "fresh", pr.fresh);
				cJSON_AddBoolToObject(result, "replaced", pr.replaced);
			} else {
				free(pr.ref);
			}
		}
	} else if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_PAUSE) {
		r = (ops->caps & RK_CAP_PAUSE) && ops->pause ? rk_machine_pause(&mc, err) : rk_machine_stop(&mc, err);
	} else if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_STOP) {
		r = rk_machine_stop(&mc, err);
	} else if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_DELETE) {
		r = c->provider_ref ? rk_machine_destroy(&mc, err) : 0;
		if (r == 0) {
			struct rk_error e2;
			if (rk_fs_remove_tree(mc.home_dir, &e2) != 0)
				rk_log(RK_LOG_WARN, "delete %s: %s", c->id, e2.message);
			if (RK_HOOK(deleted, &e2, eng, c, &e2) != 0)
				rk_log(RK_LOG_WARN, "delete %s: checkpoints: %s", c->id, e2.message);
			rk_fs_remove_tree(mc.run_dir, NULL);
		}
	}
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_execution_run(struct rk_engine *eng, struct rk_execution *e, struct rk_error *err)
{
	struct rk_computer c = {0};
	struct rk_error perr;
	rk_error_clear(&perr);
	int r = rk_db_computer_get(eng->db, e->computer_id, &c, err);
	if (r && rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE) {
		/* the computer row went (a cancelled create): nothing to do */
		rk_db_begin(eng->db, NULL);
		finish(eng, e, "cancelled", "cancelled", "the computer no longer exists", NULL, NULL);
		rk_db_commit(eng->db, NULL);
		return 0;
	}
	if (r)
		goto fail_before_call;

	struct rk_execution fresh = {0};
	if (rk_db_execution_get(eng->db, e->id, &fresh, NULL) == 0) {
		e->cancel_requested = fresh.cancel_requested;
		rk_execution_release(&fresh);
	}
	if (e->cancel_requested) {
		rk_db_begin(eng->db, NULL);
		finish(eng, e, "cancelled", "cancelled", "cancelled before the provider was called", NULL, NULL);
		cancel_create_computer(eng, e);
		append_event(eng, e->id, "cancelled", msg_data("by", "request"), NULL);
		r = rk_db_commit(eng->db, err);
		rk_computer_release(&c);
		return r;
	}

	struct rk_machine_ctx mc;
	if (rk_machine_open(&mc, eng, &c, &perr) != 0)
		goto provider_failed_before_call;
	int reached = rk_machine_check(&mc, &perr);
	rk_machine_ctx_release(&mc);
	if (reached != 0)
		goto provider_failed_before_call;

	/* A stop or pause checkpoints the workspace first; when that fails the
	 * machine is left as it is (issue 6). A crash here is before the call. */
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_STOP || rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_PAUSE) {
		if ((r = set_phase(eng, e, "checkpoint", 0, NULL, err)))
			goto fail_before_call;
		if (RK_HOOK(before_lifecycle, &perr, eng, &c, e->op, &perr) != 0)
			goto provider_failed_before_call;
	}

	/* From here a crash means the provider may have acted: recovery marks it outcome_unknown. */
	if ((r = set_phase(eng, e, "provider_call", 1, msg_data("provider", c.kind), err)))
		goto fail_before_call;
	char *ref = NULL;
	cJSON *result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "computer_id", c.id);
	int pr = call_provider(eng, e, &c, &ref, result, &perr);

	if ((r = rk_db_begin(eng->db, err))) {
		free(ref);
		cJSON_Delete(result);
		rk_computer_release(&c);
		return r;
	}
	if (pr == 0) {
		if ((r = apply_success(eng, e, ref, err)) == 0) {
			cJSON *ev = cJSON_Duplicate(result, 1);
			r = finish(eng, e, "succeeded", NULL, NULL, result, err);
			result = NULL;
			if (r == 0)
				r = append_event(eng, e->id, "succeeded", ev, err);
			else
				cJSON_Delete(ev);
		}
	} else if (perr.code == RK_EOUTCOME_UNKNOWN) {
		if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_STOP || rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_DELETE)
			rk_db_computer_set_state(eng->db, c.id, "failed", NULL);
		r = finish(eng, e, "outcome_unknown", rk_code_name(perr.code), perr.message, NULL, err);
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "message", perr.message);
		cJSON_AddStringToObject(d, "hint",
					"check the provider, then run `rakazo computer execution decide ID "
					"--outcome succeeded|failed`");
		if (r == 0)
			r = append_event(eng, e->id, "decision_needed", d, err);
		else
			cJSON_Delete(d);
	} else {
		if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE)
			rk_db_computer_set_state(eng->db, c.id, "failed", NULL);
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "code", rk_code_name(perr.code));
		cJSON_AddStringToObject(d, "message", perr.message);
		r = finish(eng, e, "failed", rk_code_name(perr.code), perr.message, NULL, err);
		if (r == 0)
			r = append_event(eng, e->id, "failed", d, err);
		else
			cJSON_Delete(d);
	}
	cJSON_Delete(result);
	free(ref);
	if (r == 0)
		r = rk_db_commit(eng->db, err);
	else
		rk_db_rollback(eng->db);
	rk_computer_release(&c);
	return r;

provider_failed_before_call:
	rk_db_begin(eng->db, NULL);
	if (rk_lifecycle_op_of(e->op) == RK_LIFECYCLE_CREATE)
		rk_db_computer_set_state(eng->db, e->computer_id, "failed", NULL);
	{
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "code", rk_code_name(perr.code));
		cJSON_AddStringToObject(d, "message", perr.message);
		finish(eng, e, "failed", rk_code_name(perr.code), perr.message, NULL, NULL);
		append_event(eng, e->id, "failed", d, NULL);
	}
	r = rk_db_commit(eng->db, err);
	rk_computer_release(&c);
	return r;
fail_before_call:
	rk_computer_release(&c);
	return r;
}

int rk_execution_recover(struct rk_engine *eng, int (*alive)(struct rk_engine *, const struct rk_execution *, void *),
			 void *arg, struct rk_error *err)
{
	char **ids = NULL;
	size_t n = 0;
	int r = rk_db_execution_running_ids(eng->db, &ids, &n, err);
	if (r)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		if ((r = rk_db_begin(eng->db, err)))
			break;
		struct rk_execution e = {0};
		if (rk_db_execution_get(eng->db, ids[i], &e, NULL) == 0 &&
		    rk_execution_state_of(e.state) == RK_EXECUTION_RUNNING && !(alive && alive(eng, &e, arg))) {
			rk_log(RK_LOG_WARN, "execution %s: its worker %s (pid %lld) is gone", e.id,
			       e.worker_id ? e.worker_id : "-", (long long)e.worker_pid);
			if (e.provider_call_at) {
				finish(eng, &e, "outcome_unknown", "outcome_unknown",
				       "the worker stopped while the provider call was in flight", NULL, NULL);
				if (rk_lifecycle_op_of(e.op) == RK_LIFECYCLE_STOP ||
				    rk_lifecycle_op_of(e.op) == RK_LIFECYCLE_DELETE)
					rk_db_computer_set_state(eng->db, e.computer_id, "failed", NULL);
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(
					d, "message",
					"the worker stopped during the provider call; its result is unknown");
				cJSON_AddStringToObject(d, "hint",
							"check the provider, then run `rakazo computer execution decide "
							"ID --outcome succeeded|failed`");
				append_event(eng, e.id, "decision_needed", d, NULL);
			} else {
				free(e.state);
				e.state = rk_xstrdup("pending");
				free(e.phase);
				e.phase = rk_xstrdup("requeued");
				e.worker_pid = 0;
				free(e.worker_id);
				e.worker_id = NULL;
				rk_db_execution_update(eng->db, &e, NULL);
				append_event(eng, e.id, "requeued",
					     msg_data("reason", "the worker stopped before the provider call"), NULL);
			}
		}
		rk_execution_release(&e);
		r = rk_db_commit(eng->db, err);
		if (r)
			rk_db_rollback(eng->db);
	}
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return r;
}
