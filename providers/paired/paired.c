/* Paired machines: a person's own laptop or server that runs `rakazo pair`
 * and keeps one connection to `rakazo serve`. Every op is one call to the
 * server's end of that connection (the abstract socket "rakazo-pair-<id>",
 * api/pair.c), which relays it in order. Commands run there with
 * bash -lc; their output waits there in a bounded buffer until read. No
 * desktop, no terminal, no pause: the machine is the person's and is
 * offline while disconnected. A call whose reply was lost is
 * outcome_unknown and is never repeated. */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/ipc.h"
#include "providers/provider.h"

#define CALL_MS 70000

static int check(struct rk_error *err)
{
	return rk_error_set(err, RK_EUNAVAILABLE,
			    "paired machines are made by `rakazo pair SERVER-URL` on the machine, not provisioned");
}

/* One call; the reply (caller frees) or NULL with err. */
static cJSON *call(const struct rk_machine *m, cJSON *req, struct rk_error *err)
{
	char name[160];
	snprintf(name, sizeof(name), "pair-%s", m->computer_id);
	cJSON *rep = NULL;
	int r = rk_ipc_call(name, req, CALL_MS, &rep, err);
	cJSON_Delete(req);
	if (r == -RK_ENOTFOUND) {
		rk_error_set(err, RK_EUNAVAILABLE, "paired machine %s is offline (not connected)", m->computer_id);
		return NULL;
	}
	if (r)
		return NULL;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(rep, "error");
	if (e) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code"),
			    *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
		rk_error_set(err, rk_code_from_name(cJSON_IsString(c) ? c->valuestring : "failed"), "%s",
			     cJSON_IsString(msg) ? msg->valuestring : "the paired machine refused the call");
		cJSON_Delete(rep);
		return NULL;
	}
	return rep;
}

static cJSON *op(const char *name, const char *path)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", name);
	if (path)
		cJSON_AddStringToObject(o, "path", path);
	return o;
}

static int simple(const struct rk_machine *m, cJSON *req, struct rk_error *err)
{
	cJSON *rep = call(m, req, err);
	cJSON_Delete(rep);
	return rep ? 0 : -rk_err(err)->code;
}

/* --- commands ------------------------------------------------------------------- */

struct paired_proc {
	struct rk_proc base;
	struct rk_machine m; /* computer_id is all a call needs */
	char *computer_id;
	int proc_id;
	int tick; /* a timerfd: the output is asked for when it fires */
	int eof, ended;
	struct rk_exit_status st;
};

static cJSON *proc_op(struct paired_proc *pp, const char *name)
{
	cJSON *o = op(name, NULL);
	cJSON_AddNumberToObject(o, "proc", pp->proc_id);
	return o;
}

static int proc_poll_fd(struct rk_proc *p)
{
	return ((struct paired_proc *)p)->tick;
}

static int proc_read(struct rk_proc *p, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	uint64_t ticks;
	if (read(pp->tick, &ticks, sizeof(ticks)) < 0) {
		/* not yet due: nothing to ask for */
	}
	*eof = pp->eof;
	if (pp->eof)
		return 0;
	cJSON *rep = call(&pp->m, proc_op(pp, "read"), err);
	if (!rep) {
		/* a broken stream ends the output; how the command ended is unknown */
		pp->eof = pp->ended = 1;
		pp->st = (struct rk_exit_status){.exited = 1, .lost = 1};
		*eof = 1;
		return 0;
	}
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(rep, "data_b64");
	if (cJSON_IsString(d) && rk_base64_decode(d->valuestring, out) != 0) {
		cJSON_Delete(rep);
		return rk_error_set(err, RK_ECORRUPT, "the paired machine sent bad output");
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "eof")))
		pp->eof = 1;
	*eof = pp->eof;
	cJSON_Delete(rep);
	return 0;
}

static int proc_write(struct rk_proc *p, const void *data, size_t len, struct rk_error *err)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	cJSON *o = proc_op(pp, "write");
	char *b = rk_base64_encode(data, len);
	cJSON_AddStringToObject(o, "data_b64", b);
	free(b);
	return simple(&pp->m, o, err);
}

static int proc_close_stdin(struct rk_proc *p, struct rk_error *err)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	return simple(&pp->m, proc_op(pp, "close_stdin"), err);
}

static int proc_signal(struct rk_proc *p, int signo, struct rk_error *err)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	cJSON *o = proc_op(pp, "signal");
	cJSON_AddNumberToObject(o, "signo", signo);
	return simple(&pp->m, o, err);
}

static int proc_resize(struct rk_proc *p, int rows, int cols, struct rk_error *err)
{
	return rk_error_set(err, RK_EUNSUPPORTED, "a paired machine's commands have no terminal");
}

static int proc_wait(struct rk_proc *p, struct rk_exit_status *st, struct rk_error *err)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	if (!pp->ended) {
		cJSON *rep = call(&pp->m, proc_op(pp, "wait"), err);
		if (!rep) {
			pp->st = (struct rk_exit_status){.exited = 1, .lost = 1};
		} else {
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(rep, "code"),
				    *s = cJSON_GetObjectItemCaseSensitive(rep, "signo");
			pp->st.exited = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "exited"));
			pp->st.code = cJSON_IsNumber(c) ? c->valueint : 0;
			pp->st.signo = cJSON_IsNumber(s) ? s->valueint : 0;
			cJSON_Delete(rep);
			if (!pp->st.exited && pp->st.signo <= 0)
				return 0; /* not yet: the caller asks again */
		}
		pp->ended = 1;
	}
	*st = pp->st;
	return 0;
}

static void proc_free(struct rk_proc *p)
{
	struct paired_proc *pp = (struct paired_proc *)p;
	if (!pp)
		return;
	struct rk_error err;
	cJSON_Delete(call(&pp->m, proc_op(pp, "release"), &err));
	close(pp->tick);
	free(pp->computer_id);
	free(pp);
}

static const struct rk_proc_ops proc_ops = {
	.poll_fd = proc_poll_fd,
	.read = proc_read,
	.write = proc_write,
	.close_stdin = proc_close_stdin,
	.signal = proc_signal,
	.resize = proc_resize,
	.wait = proc_wait,
	.free = proc_free,
};

static int exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
		      struct rk_error *err)
{
	if (req->tty)
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "a paired machine's commands have no terminal: run without tty");
	cJSON *o = op("spawn", NULL);
	cJSON_AddStringToObject(o, "command", req->command);
	if (req->cwd)
		cJSON_AddStringToObject(o, "cwd", req->cwd);
	cJSON *env = cJSON_AddArrayToObject(o, "env");
	for (size_t i = 0; req->env && req->env[i]; i++)
		cJSON_AddItemToArray(env, cJSON_CreateString(req->env[i]));
	cJSON *rep = call(m, o, err);
	if (!rep)
		return -rk_err(err)->code;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rep, "proc");
	if (!cJSON_IsNumber(id)) {
		cJSON_Delete(rep);
		return rk_error_set(err, RK_EFAILED, "the paired machine gave no command id");
	}
	struct paired_proc *pp = calloc(1, sizeof(*pp));
	if (!pp)
		abort();
	pp->base.ops = &proc_ops;
	pp->computer_id = strdup(m->computer_id);
	pp->m.computer_id = pp->computer_id;
	pp->proc_id = id->valueint;
	cJSON_Delete(rep);
	pp->tick = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	struct itimerspec its = {.it_interval = {0, 50 * 1000000L}, .it_value = {0, 1000000L}};
	timerfd_settime(pp->tick, 0, &its, NULL);
	*out = &pp->base;
	return 0;
}

/* --- files --------------------------------------------------------------------------- */

static int file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
		     struct rk_error *err)
{
	cJSON *rep = call(m, op("list", path), err);
	if (!rep)
		return -rk_err(err)->code;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(rep, "entries");
	size_t cnt = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct rk_file_entry *es = calloc(cnt ? cnt : 1, sizeof(*es));
	if (!es)
		abort();
	for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next, i++) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name"),
			    *t = cJSON_GetObjectItemCaseSensitive(e, "type");
		const char *type = cJSON_IsString(t) ? t->valuestring : "other";
		es[i].name = strdup(cJSON_IsString(nm) ? nm->valuestring : "?");
		es[i].type = !strcmp(type, "file")   ? RK_FILE_REGULAR
			     : !strcmp(type, "dir")  ? RK_FILE_DIR
			     : !strcmp(type, "link") ? RK_FILE_LINK
						     : RK_FILE_OTHER;
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(e, "size"),
			    *mt = cJSON_GetObjectItemCaseSensitive(e, "mtime_ms");
		es[i].size = cJSON_IsNumber(sz) ? (uint64_t)sz->valuedouble : 0;
		es[i].mtime_ms = cJSON_IsNumber(mt) ? (int64_t)mt->valuedouble : 0;
		es[i].executable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "executable"));
	}
	cJSON_Delete(rep);
	*out = es;
	*n = i;
	return 0;
}

static int file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
		     struct rk_error *err)
{
	cJSON *o = op("read_file", path);
	cJSON_AddNumberToObject(o, "max_bytes", (double)max_bytes);
	cJSON *rep = call(m, o, err);
	if (!rep)
		return -rk_err(err)->code;
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(rep, "data_b64");
	int r = cJSON_IsString(d) && rk_base64_decode(d->valuestring, out) == 0
			? 0
			: rk_error_set(err, RK_ECORRUPT, "the paired machine sent a bad file");
	cJSON_Delete(rep);
	return r;
}

static int file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
		      struct rk_error *err)
{
	cJSON *o = op("write_file", path);
	char *b = rk_base64_encode(data, len);
	cJSON_AddStringToObject(o, "data_b64", b);
	free(b);
	cJSON_AddBoolToObject(o, "executable", executable);
	return simple(m, o, err);
}

static int file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	return simple(m, op("remove", path), err);
}

/* Forgetting a paired machine leaves the machine itself alone. */
static int destroy(const struct rk_machine *m, struct rk_error *err)
{
	return 0;
}

const struct rk_provider_ops rk_provider_paired = {
	.name = "paired",
	.caps = RK_CAP_PERSISTENT_HOME | RK_CAP_DIALS_IN,
	.summary = "a person's own machine, paired with `rakazo pair` (no desktop, never pauses)",
	.check = check,
	.destroy = destroy,
	.exec_spawn = exec_spawn,
	.file_list = file_list,
	.file_read = file_read,
	.file_write = file_write,
	.file_remove = file_remove,
};
