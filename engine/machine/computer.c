#include "engine/machine/computer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/machine/machine.h"
#include "engine/machine/execution.h"
#include "engine/store/manifest.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"

static void add_time(cJSON *o, const char *key, int64_t ms)
{
	char buf[40];
	if (ms)
		cJSON_AddStringToObject(o, key, rk_iso8601(ms, buf, sizeof(buf)));
	else
		cJSON_AddNullToObject(o, key);
}

cJSON *rk_computer_to_json(const struct rk_computer *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", c->id);
	cJSON_AddStringToObject(o, "name", c->name);
	cJSON_AddStringToObject(o, "provider", c->kind);
	cJSON_AddStringToObject(o, "state", c->state);
	cJSON_AddStringToObject(o, "mode", c->mode);
	cJSON_AddBoolToObject(o, "desktop", c->desktop);
	if (c->pause_after < 0)
		cJSON_AddNullToObject(o, "pause_after");
	else
		cJSON_AddNumberToObject(o, "pause_after", (double)c->pause_after);
	rk_json_add_str_or_null(o, "provider_ref", c->provider_ref);
	cJSON_AddStringToObject(o, "home_key", c->home_key);
	cJSON_AddStringToObject(o, "home_revision", c->home_revision);
	cJSON_AddNumberToObject(o, "revisions_kept", c->revisions_kept);
	cJSON_AddStringToObject(o, "owner", c->owner);
	cJSON *opt = c->options ? cJSON_Parse(c->options) : NULL;
	if (opt)
		cJSON_AddItemToObject(o, "options", opt);
	else
		cJSON_AddNullToObject(o, "options");
	struct rk_limits lim;
	rk_computer_limits(c, &lim);
	cJSON_AddItemToObject(o, "resources", rk_limits_to_json(&lim));
	add_time(o, "created_at", c->created_at);
	add_time(o, "updated_at", c->updated_at);
	return o;
}

/* --- resource limits ------------------------------------------------------------ */

int rk_limits_parse_memory(const char *s, const char *what, int64_t *out, struct rk_error *err)
{
	const char *p = s;
	uint64_t v = 0;
	int digits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX / 10 : v * 10 + (uint64_t)(*p - '0'); /* too big either way */
	int shift = 0;
	char u = (char)tolower((unsigned char)*p);
	if (u && strchr("kmgt", u)) {
		shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : 40;
		p++;
		if (tolower((unsigned char)*p) == 'i' && tolower((unsigned char)p[1]) == 'b')
			p += 2;
		else if (tolower((unsigned char)*p) == 'b')
			p++;
	} else if (u == 'b') {
		p++;
	}
	if (!digits || *p)
		return rk_error_set(err, RK_EINVALID,
				    "%s '%s' is not a memory size: give bytes or a whole number with k, m, g or t "
				    "(512m, 2g)",
				    what, s);
	if (v > (uint64_t)RK_LIMIT_MAX_MEMORY >> shift || (int64_t)(v << shift) < RK_LIMIT_MIN_MEMORY)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is out of range: from 64m to 1t", what, s);
	*out = (int64_t)(v << shift);
	return 0;
}

static int cpus_in_range(double v, const char *what, const char *shown, struct rk_error *err)
{
	if (!isfinite(v) || v < RK_LIMIT_MIN_CPUS || v > RK_LIMIT_MAX_CPUS)
		return rk_error_set(err, RK_EINVALID, "%s %s is out of range: from 0.01 to 1024 CPUs", what, shown);
	return 0;
}

int rk_limits_parse_cpus(const char *s, const char *what, double *out, struct rk_error *err)
{
	char *end = NULL;
	errno = 0;
	double v = isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1])) ? strtod(s, &end) : 0;
	if (!end || *end || errno)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is not a number of CPUs: give a decimal number (1, 0.5)",
				    what, s);
	char shown[128];
	snprintf(shown, sizeof(shown), "'%s'", s);
	int r = cpus_in_range(v, what, shown, err);
	if (r)
		return r;
	*out = v;
	return 0;
}

static int pids_in_range(double v, const char *what, const char *shown, struct rk_error *err)
{
	if (v < RK_LIMIT_MIN_PIDS || v > RK_LIMIT_MAX_PIDS)
		return rk_error_set(err, RK_EINVALID,
				    "%s %s is out of range: from 64 to 4194304 (a desktop with a browser needs ~200)",
				    what, shown);
	return 0;
}

int rk_limits_parse_pids(const char *s, const char *what, int64_t *out, struct rk_error *err)
{
	char *end = NULL;
	errno = 0;
	long long v = isdigit((unsigned char)*s) ? strtoll(s, &end, 10) : 0;
	if (!end || *end || errno)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is not a whole number of processes", what, s);
	char shown[128];
	snprintf(shown, sizeof(shown), "'%s'", s);
	int r = pids_in_range((double)v, what, shown, err);
	if (r)
		return r;
	*out = v;
	return 0;
}

/* One field of "resources": absent or null is 0, a string is parsed as the
 * CLI parses it, a number is range-checked. */
static int limit_field(const cJSON *res, const char *key, const struct rk_provider_ops *ops, unsigned cap,
		       struct rk_limits *out, struct rk_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, key);
	if (!v || cJSON_IsNull(v))
		return 0;
	char what[64];
	snprintf(what, sizeof(what), "create: resources.%s", key);
	if (!(ops->caps & cap))
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "provider '%s' cannot enforce a %s limit: leave it out (`rakazo computer providers` "
				    "lists the limits each enforces)",
				    ops->name, key);
	if (cJSON_IsString(v)) {
		if (cap == RK_CAP_LIMIT_MEMORY)
			return rk_limits_parse_memory(v->valuestring, what, &out->memory, err);
		if (cap == RK_CAP_LIMIT_CPUS)
			return rk_limits_parse_cpus(v->valuestring, what, &out->cpus, err);
		return rk_limits_parse_pids(v->valuestring, what, &out->pids, err);
	}
	if (!cJSON_IsNumber(v))
		return rk_error_set(err, RK_EINVALID, "%s must be a number or a string", what);
	double d = v->valuedouble;
	char shown[64];
	snprintf(shown, sizeof(shown), "%.17g", d);
	int r;
	if (cap == RK_CAP_LIMIT_CPUS) {
		if ((r = cpus_in_range(d, what, shown, err)))
			return r;
		out->cpus = d;
	} else if (d != floor(d)) {
		return rk_error_set(err, RK_EINVALID, "%s must be a whole number", what);
	} else if (cap == RK_CAP_LIMIT_PIDS) {
		if ((r = pids_in_range(d, what, shown, err)))
			return r;
		out->pids = (int64_t)d;
	} else {
		if (d < (double)RK_LIMIT_MIN_MEMORY || d > (double)RK_LIMIT_MAX_MEMORY)
			return rk_error_set(err, RK_EINVALID, "%s %s is out of range: from 64m to 1t", what, shown);
		out->memory = (int64_t)d;
	}
	return 0;
}

int rk_limits_from_json(const cJSON *resources, const struct rk_provider_ops *ops, struct rk_limits *out,
			struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (resources && !cJSON_IsNull(resources)) {
		if (!cJSON_IsObject(resources))
			return rk_error_set(err, RK_EINVALID,
					    "create: resources must be an object {\"memory\", \"cpus\", \"pids\"}");
		for (const cJSON *c = resources->child; c; c = c->next)
			if (strcmp(c->string, "memory") && strcmp(c->string, "cpus") && strcmp(c->string, "pids"))
				return rk_error_set(err, RK_EINVALID,
						    "create: unknown field '%s' in resources (memory, cpus, pids)", c->string);
		int r;
		if ((r = limit_field(resources, "memory", ops, RK_CAP_LIMIT_MEMORY, out, err)) ||
		    (r = limit_field(resources, "cpus", ops, RK_CAP_LIMIT_CPUS, out, err)) ||
		    (r = limit_field(resources, "pids", ops, RK_CAP_LIMIT_PIDS, out, err)))
			return r;
	}
	rk_limits_defaults(ops->caps, out);
	return 0;
}

cJSON *rk_limits_to_json(const struct rk_limits *l)
{
	cJSON *o = cJSON_CreateObject();
	if (l->memory > 0)
		cJSON_AddNumberToObject(o, "memory", (double)l->memory);
	else
		cJSON_AddNullToObject(o, "memory");
	if (l->cpus > 0)
		cJSON_AddNumberToObject(o, "cpus", l->cpus);
	else
		cJSON_AddNullToObject(o, "cpus");
	if (l->pids > 0)
		cJSON_AddNumberToObject(o, "pids", (double)l->pids);
	else
		cJSON_AddNullToObject(o, "pids");
	return o;
}

void rk_computer_limits(const struct rk_computer *c, struct rk_limits *out)
{
	memset(out, 0, sizeof(*out));
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	unsigned caps = ops ? ops->caps : 0;
	cJSON *doc = c->resources ? cJSON_Parse(c->resources) : NULL;
	const cJSON *v;
	/* what was stored at create, never more than the provider enforces */
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "memory")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_MEMORY))
		out->memory = (int64_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "cpus")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_CPUS))
		out->cpus = v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "pids")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_PIDS))
		out->pids = (int64_t)v->valuedouble;
	cJSON_Delete(doc);
	rk_limits_defaults(caps, out);
}

const char *rk_file_type_name(enum rk_file_type t)
{
	switch (t) {
	case RK_FILE_REGULAR: return "file";
	case RK_FILE_DIR: return "dir";
	case RK_FILE_LINK: return "link";
	default: return "other";
	}
}

cJSON *rk_file_entry_to_json(const struct rk_file_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", e->name);
	cJSON_AddStringToObject(o, "type", rk_file_type_name(e->type));
	cJSON_AddNumberToObject(o, "size", (double)e->size);
	add_time(o, "mtime", e->mtime_ms);
	if (e->executable)
		cJSON_AddBoolToObject(o, "executable", 1);
	return o;
}

int rk_computer_path(const char *path, char **out, struct rk_error *err)
{
	if (!path)
		path = "";
	int absolute = path[0] == '/';
	char *rel = NULL;
	int r = rk_path_normalize(path, &rel, err);
	if (r)
		return r;
	if (absolute) {
		*out = rk_xasprintf("/%s", rel);
		free(rel);
	} else {
		*out = rel;
	}
	return 0;
}

/* Resolves the provider and the path, resuming the computer when needed. */
static int prepare(struct rk_engine *eng, struct rk_computer *c, const char *path, int need_op,
		   const struct rk_provider_ops **ops, char **norm, struct rk_error *err)
{
	int r = 0;
	*norm = NULL;
	if (path && (r = rk_computer_path(path, norm, err)))
		return r;
	if (!need_op) {
		r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot do that", c->kind);
		goto fail;
	}
	if ((r = rk_computer_ensure_running(eng, c, err)))
		goto fail;
	if (!(*ops = rk_engine_provider(c, err))) {
		r = -rk_err(err)->code;
		goto fail;
	}
	return 0;
fail:
	free(*norm);
	*norm = NULL;
	return r;
}

#define PROVIDER_OP(c, op) (rk_provider_find((c)->kind) && rk_provider_find((c)->kind)->op)

int rk_computer_file_list(struct rk_engine *eng, struct rk_computer *c, const char *path,
			  struct rk_file_entry **out, size_t *n, struct rk_error *err)
{
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, path ? path : "", PROVIDER_OP(c, file_list), &ops, &norm, err);
	if (r)
		return r;
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	r = ops->file_list(&mc.m, norm, out, n, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_read(struct rk_engine *eng, struct rk_computer *c, const char *path, size_t max_bytes,
			  struct rk_buf *out, struct rk_error *err)
{
	if (max_bytes > RK_FILE_READ_LIMIT)
		return rk_error_set(err, RK_EINVALID, "max bytes must be at most %u", RK_FILE_READ_LIMIT);
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_read), &ops, &norm, err);
	if (r)
		return r;
	if (!norm[0]) {
		free(norm);
		return rk_error_set(err, RK_EINVALID, "the workspace root is a directory, not a file");
	}
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	r = ops->file_read(&mc.m, norm, max_bytes ? max_bytes : RK_FILE_READ_DEFAULT_MAX, out, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_write(struct rk_engine *eng, struct rk_computer *c, const char *path, const void *data,
			   size_t len, int executable, struct rk_error *err)
{
	if (len > RK_FILE_WRITE_LIMIT)
		return rk_error_set(err, RK_ETOOLARGE, "file of %zu bytes exceeds the write limit of %u bytes", len,
				    RK_FILE_WRITE_LIMIT);
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_write), &ops, &norm, err);
	if (r)
		return r;
	if (!norm[0] || !strcmp(norm, "/")) {
		free(norm);
		return rk_error_set(err, RK_EINVALID, "a file path is needed, not the root");
	}
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	r = ops->file_write(&mc.m, norm, data, len, executable, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_remove(struct rk_engine *eng, struct rk_computer *c, const char *path, struct rk_error *err)
{
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_remove), &ops, &norm, err);
	if (r)
		return r;
	if (!norm[0] || !strcmp(norm, "/")) {
		free(norm);
		return rk_error_set(err, RK_EINVALID, "refusing to remove the root");
	}
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	r = ops->file_remove(&mc.m, norm, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_export(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err)
{
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, NULL, PROVIDER_OP(c, workspace_export), &ops, &norm, err);
	if (r)
		return r;
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	r = ops->workspace_export(&mc.m, fd, err);
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_computer_import(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err)
{
	const struct rk_provider_ops *ops;
	char *norm;
	int r = prepare(eng, c, NULL, PROVIDER_OP(c, workspace_import), &ops, &norm, err);
	if (r)
		return r;
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	/* the import stages beside the home (util/tar.h): holding the home's
	 * lock (shared) keeps gc and recovery from taking that staging dir for
	 * a stale one, and a checkpoint from copying a half-merged tree */
	int lk = rk_workspace_lock_key(eng->data_dir, c->home_key, LOCK_SH, err);
	if (lk >= 0) {
		r = ops->workspace_import(&mc.m, fd, err);
		close(lk);
	} else {
		r = lk;
	}
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_computer_sh(struct rk_engine *eng, const struct rk_computer *c, const char *command, int64_t timeout_ms,
		   int *code, struct rk_buf *out, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_engine_provider(c, err);
	if (!ops)
		return -rk_err(err)->code;
	if (!ops->exec_spawn)
		return rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot run commands", c->kind);
	struct rk_machine_ctx mc;
	rk_machine_ctx_init(&mc, eng, c);
	struct rk_exec_request req = {.command = command};
	struct rk_proc *p = NULL;
	int r = ops->exec_spawn(&mc.m, &req, &p, err);
	if (r == 0) {
		struct rk_buf o;
		rk_buf_init(&o);
		int eof = 0;
		int64_t deadline = rk_monotonic_ms() + timeout_ms;
		while (!eof && r == 0) {
			if (rk_monotonic_ms() > deadline) {
				p->ops->signal(p, 9, NULL);
				r = rk_error_set(err, RK_ETIMEOUT, "a command in computer '%s' took over %lld ms", c->name,
						 (long long)timeout_ms);
				break;
			}
			struct pollfd pfd = {.fd = p->ops->poll_fd(p), .events = POLLIN};
			poll(&pfd, 1, 100);
			r = p->ops->read(p, &o, &eof, err);
			if (out && out->len < 65536)
				rk_buf_add(out, o.data, o.len < 65536 - out->len ? o.len : 65536 - out->len);
			rk_buf_reset(&o);
		}
		struct rk_exit_status st = {0};
		if (r == 0 && (r = p->ops->wait(p, &st, err)) == 0)
			/* docker gives a signal's end as signo with exited unset; a lost one is 128 */
			*code = st.signo > 0 ? 128 + st.signo : st.exited && !st.lost ? st.code : 128;
		p->ops->free(p);
		rk_buf_release(&o);
	}
	rk_machine_ctx_release(&mc);
	return r;
}

/* --- what a client reads ------------------------------------------------------ */

int rk_computer_get(struct rk_engine *eng, const char *id_or_name, struct rk_computer *out, struct rk_error *err)
{
	return rk_db_computer_get(eng->db, id_or_name, out, err);
}

int rk_computer_list(struct rk_engine *eng, struct rk_computer **out, size_t *n, struct rk_error *err)
{
	return rk_db_computer_list(eng->db, out, n, err);
}

int rk_computer_executions(struct rk_engine *eng, const char *computer_id, struct rk_execution **out, size_t *n,
			   struct rk_error *err)
{
	return rk_db_execution_list(eng->db, computer_id, out, n, err);
}

int rk_computer_execution_active(struct rk_engine *eng, const char *computer_id, struct rk_execution *out,
				 struct rk_error *err)
{
	return rk_db_execution_active(eng->db, computer_id, out, err);
}

int rk_computer_execution_events(struct rk_engine *eng, const char *execution_id, int64_t after,
				 struct rk_event **out, size_t *n, struct rk_error *err)
{
	return rk_db_events_after(eng->db, execution_id, after, out, n, err);
}

int rk_computer_execution_marks(struct rk_engine *eng, struct rk_execution_mark **out, size_t *n,
				struct rk_error *err)
{
	return rk_db_execution_marks(eng->db, out, n, err);
}

int rk_computer_sessions(struct rk_engine *eng, const char *computer_id, struct rk_session_row **out, size_t *n,
			 struct rk_error *err)
{
	return rk_db_session_list(eng->db, computer_id, out, n, err);
}

int rk_computer_history(struct rk_engine *eng, const char *computer_id, const char *session_id, int64_t after,
			size_t limit, struct rk_history_entry **out, size_t *n, struct rk_error *err)
{
	return rk_db_history_list(eng->db, computer_id, session_id, after, limit, out, n, err);
}

int rk_computer_lease(struct rk_engine *eng, const char *computer_id, const char *bot_id, struct rk_lease *out,
		      struct rk_error *err)
{
	return rk_db_lease_get(eng->db, computer_id, bot_id, out, err);
}
