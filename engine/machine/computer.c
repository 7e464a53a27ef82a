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
#include "engine/util/log.h"
#include "engine/util/time.h"


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
	rk_json_add_time(o, "created_at", c->created_at);
	rk_json_add_time(o, "updated_at", c->updated_at);
	return o;
}

const char *rk_file_type_name(enum rk_file_type t)
{
	switch (t) {
	case RK_FILE_REGULAR:
		return "file";
	case RK_FILE_DIR:
		return "dir";
	case RK_FILE_LINK:
		return "link";
	default:
		return "other";
	}
}

cJSON *rk_file_entry_to_json(const struct rk_file_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", e->name);
	cJSON_AddStringToObject(o, "type", rk_file_type_name(e->type));
	cJSON_AddNumberToObject(o, "size", (double)e->size);
	rk_json_add_time(o, "mtime", e->mtime_ms);
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

/* Resolves the path and opens c's machine (*mc, for the caller to
 * release), resuming the computer when needed. */
static int prepare(struct rk_engine *eng, struct rk_computer *c, const char *path, int need_op,
		   struct rk_machine_ctx *mc, char **norm, struct rk_error *err)
{
	int r = 0;
	*norm = NULL;
	if (path && (r = rk_computer_path(path, norm, err)))
		return r;
	if (!need_op)
		r = rk_error_set(err, RK_EUNSUPPORTED, "provider '%s' cannot do that", c->kind);
	else if ((r = rk_computer_ensure_running(eng, c, err)) == 0)
		r = rk_machine_open(mc, eng, c, err);
	if (r) {
		free(*norm);
		*norm = NULL;
	}
	return r;
}

#define PROVIDER_OP(c, op) (rk_provider_find((c)->kind) && rk_provider_find((c)->kind)->op)

int rk_computer_file_list(struct rk_engine *eng, struct rk_computer *c, const char *path, struct rk_file_entry **out,
			  size_t *n, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, path ? path : "", PROVIDER_OP(c, file_list), &mc, &norm, err);
	if (r)
		return r;
	r = rk_machine_file_list(&mc, norm, out, n, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_read(struct rk_engine *eng, struct rk_computer *c, const char *path, size_t max_bytes,
			  struct rk_buf *out, struct rk_error *err)
{
	if (max_bytes > RK_FILE_READ_LIMIT)
		return rk_error_set(err, RK_EINVALID, "max bytes must be at most %u", RK_FILE_READ_LIMIT);
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_read), &mc, &norm, err);
	if (r)
		return r;
	if (!norm || !norm[0])
		r = rk_error_set(err, RK_EINVALID, "the workspace root is a directory, not a file");
	else
		r = rk_machine_file_read(&mc, norm, max_bytes ? max_bytes : RK_FILE_READ_DEFAULT_MAX, out, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_write(struct rk_engine *eng, struct rk_computer *c, const char *path, const void *data, size_t len,
			   int executable, struct rk_error *err)
{
	if (len > RK_FILE_WRITE_LIMIT)
		return rk_error_set(err, RK_ETOOLARGE, "file of %zu bytes exceeds the write limit of %u bytes", len,
				    RK_FILE_WRITE_LIMIT);
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_write), &mc, &norm, err);
	if (r)
		return r;
	if (!norm || !norm[0] || !strcmp(norm, "/"))
		r = rk_error_set(err, RK_EINVALID, "a file path is needed, not the root");
	else
		r = rk_machine_file_write(&mc, norm, data, len, executable, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_file_remove(struct rk_engine *eng, struct rk_computer *c, const char *path, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, path, PROVIDER_OP(c, file_remove), &mc, &norm, err);
	if (r)
		return r;
	if (!norm || !norm[0] || !strcmp(norm, "/"))
		r = rk_error_set(err, RK_EINVALID, "refusing to remove the root");
	else
		r = rk_machine_file_remove(&mc, norm, err);
	rk_machine_ctx_release(&mc);
	free(norm);
	return r;
}

int rk_computer_export(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, NULL, PROVIDER_OP(c, workspace_export), &mc, &norm, err);
	if (r)
		return r;
	r = rk_machine_workspace_export(&mc, fd, err);
	rk_machine_ctx_release(&mc);
	return r;
}

int rk_computer_import(struct rk_engine *eng, struct rk_computer *c, int fd, struct rk_error *err)
{
	struct rk_machine_ctx mc;
	char *norm;
	int r = prepare(eng, c, NULL, PROVIDER_OP(c, workspace_import), &mc, &norm, err);
	if (r)
		return r;
	/* the import stages beside the home (util/tar.h): holding the home's
	 * lock (shared) keeps gc and recovery from taking that staging dir for
	 * a stale one, and a checkpoint from copying a half-merged tree */
	int lk = rk_workspace_lock_key(eng->data_dir, c->home_key, LOCK_SH, err);
	if (lk >= 0) {
		r = rk_machine_workspace_import(&mc, fd, err);
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
	struct rk_machine_ctx mc;
	int r = rk_machine_open(&mc, eng, c, err);
	if (r)
		return r;
	struct rk_exec_request req = {.command = command};
	struct rk_proc *p = NULL;
	r = rk_machine_exec_spawn(&mc, &req, &p, err);
	rk_machine_ctx_release(&mc);
	if (r == 0) {
		struct rk_buf o;
		rk_buf_init(&o);
		int eof = 0;
		int64_t deadline = rk_monotonic_ms() + timeout_ms;
		while (!eof && r == 0) {
			if (rk_monotonic_ms() > deadline) {
				p->ops->signal(p, 9, NULL);
				r = rk_error_set(err, RK_ETIMEOUT, "a command in computer '%s' took over %lld ms",
						 c->name, (long long)timeout_ms);
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
	return r;
}

/* --- computers that must be up ------------------------------------------------------------- */

int rk_computer_ensure_running(struct rk_engine *eng, struct rk_computer *c, struct rk_error *err)
{
	int r;
	for (int round = 0; round < 3; round++) {
		if (!strcmp(c->state, "running")) {
			/* the machine may have gone behind our back (a killed container,
			 * a host reboot): then the record follows it, and a saved resume
			 * brings it back (a replacement when it is gone) */
			enum rk_machine_state ms = RK_MACHINE_RUNNING;
			struct rk_machine_ctx mc;
			struct rk_error e2;
			if (c->provider_ref && rk_machine_open(&mc, eng, c, &e2) == 0) {
				if (rk_machine_status(&mc, &ms, &e2) != 0)
					ms = RK_MACHINE_RUNNING; /* cannot tell: let the call itself say */
				rk_machine_ctx_release(&mc);
			}
			if (ms == RK_MACHINE_RUNNING)
				return 0;
			const char *now = ms == RK_MACHINE_PAUSED ? "paused" : "stopped";
			rk_log(RK_LOG_WARN, "computer %s: recorded running but its machine is %s", c->id,
			       ms == RK_MACHINE_GONE ? "gone" : now);
			if ((r = rk_db_computer_set_state(eng->db, c->id, now, err)) ||
			    (r = rk_db_usage_close(eng->db, c->id, rk_now_ms(), err)))
				return r;
			free(c->state);
			c->state = rk_xstrdup(now);
		}
		struct rk_execution e = {0};
		struct rk_error e2;
		if (rk_db_execution_active(eng->db, c->id, &e, &e2) == 0) {
			/* a lifecycle command is under way: wait for it, then look again */
			if (!strcmp(e.state, "outcome_unknown")) {
				r = rk_error_set(err, RK_EOUTCOME_UNKNOWN,
						 "computer '%s' waits for a decision on execution %s (%s): check the "
						 "provider, then `rakazo computer execution decide %s --outcome ...`",
						 c->name, e.id, e.op, e.id);
				rk_execution_release(&e);
				return r;
			}
			struct rk_execution done = {0};
			r = rk_execution_wait(eng, e.id, 300000, &done, err);
			rk_execution_release(&e);
			rk_execution_release(&done);
			if (r)
				return r;
		} else if (!strcmp(c->state, "paused") || !strcmp(c->state, "stopped")) {
			/* a command on a paused computer first submits a saved resume */
			struct rk_submit s = {.op = "resume", .computer = c->id};
			int existed;
			if ((r = rk_execution_submit(eng, &s, &e, &existed, err)))
				return r;
			struct rk_execution done = {0};
			r = rk_execution_wait(eng, e.id, 300000, &done, err);
			if (r == 0 && strcmp(done.state, "succeeded") != 0)
				r = rk_error_set(err, RK_EUNAVAILABLE,
						 "resuming computer '%s' failed (execution %s): %s", c->name, e.id,
						 done.error_message ? done.error_message : done.state);
			rk_execution_release(&e);
			rk_execution_release(&done);
			if (r)
				return r;
		} else {
			return rk_error_set(err, RK_EUNAVAILABLE, "computer '%s' is %s%s", c->name, c->state,
					    !strcmp(c->state, "failed")
						    ? ": resume it with `rakazo computer resume` or delete it"
						    : "");
		}
		char *id = rk_xstrdup(c->id);
		rk_computer_release(c);
		r = rk_db_computer_get(eng->db, id, c, err);
		free(id);
		if (r)
			return r;
	}
	if (!strcmp(c->state, "running"))
		return 0;
	return rk_error_set(err, RK_EUNAVAILABLE, "computer '%s' is %s", c->name, c->state);
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

int rk_computer_execution_events(struct rk_engine *eng, const char *execution_id, int64_t after, struct rk_event **out,
				 size_t *n, struct rk_error *err)
{
	return rk_db_events_after(eng->db, execution_id, after, out, n, err);
}

int rk_computer_execution_marks(struct rk_engine *eng, struct rk_execution_mark **out, size_t *n, struct rk_error *err)
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
