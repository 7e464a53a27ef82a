#include "engine/machine/machine.h"

#include <stdlib.h>
#include <string.h>

#include "engine/machine/limits.h"
#include "engine/util/buf.h"

const struct rk_provider_ops *rk_engine_provider(const struct rk_computer *c, struct rk_error *err)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!ops)
		rk_error_set(err, RK_EUNAVAILABLE, "computer '%s' uses provider '%s', which this rakazo does not have",
			     c->name, c->kind);
	return ops;
}

void rk_machine_ctx_init(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c)
{
	memset(mc, 0, sizeof(*mc));
	mc->home_dir = rk_xasprintf("%s/homes/%s", eng->data_dir, c->home_key);
	mc->run_dir = rk_xasprintf("%s/run/%s", eng->data_dir, c->id);
	mc->m.computer_id = c->id;
	mc->m.home_key = c->home_key;
	mc->m.data_dir = eng->data_dir;
	mc->m.home_dir = mc->home_dir;
	mc->m.run_dir = mc->run_dir;
	mc->m.ref = c->provider_ref;
	mc->m.options_json = c->options;
	rk_computer_limits(c, &mc->m.limits);
}

void rk_machine_ctx_release(struct rk_machine_ctx *mc)
{
	free(mc->home_dir);
	free(mc->run_dir);
	memset(mc, 0, sizeof(*mc));
}

/* --- the facade ------------------------------------------------------------------ */

/* One provider call: c's provider and machine, and the error the provider fills. */
struct call {
	const struct rk_computer *c;
	const char *what; /* "list files": names the operation in messages */
	const struct rk_provider_ops *ops;
	struct rk_machine_ctx mc;
	struct rk_error e;
};

static int call_begin(struct call *k, struct rk_engine *eng, const struct rk_computer *c, const char *what,
		      struct rk_error *err)
{
	k->c = c;
	k->what = what;
	if (!(k->ops = rk_engine_provider(c, err)))
		return -rk_err(err)->code;
	rk_machine_ctx_init(&k->mc, eng, c);
	rk_error_clear(&k->e);
	return 0;
}

/* The provider has no such operation: the engine says so itself. */
static int unsupported(struct call *k)
{
	return rk_error_set(&k->e, RK_EUNSUPPORTED, "computer '%s': provider '%s' cannot %s", k->c->name, k->c->kind,
			    k->what);
}

/* Ends the call that returned r: the provider's error goes to err, with a
 * code and a message whatever the provider left. */
static int call_end(struct call *k, int r, struct rk_error *err)
{
	rk_machine_ctx_release(&k->mc);
	if (r >= 0)
		return r;
	enum rk_code code = k->e.code ? k->e.code : -r > 0 && -r < RK_ECODE_COUNT ? (enum rk_code)-r : RK_EFAILED;
	if (!k->e.message[0])
		return rk_error_set(err, code, "computer '%s': provider '%s' could not %s", k->c->name, k->c->kind,
				    k->what);
	return rk_error_set(err, code, "%s", k->e.message);
}

/* Calls op of c's provider with the machine and the arguments that follow. */
#define CALL(eng, c, what, err, op, ...)                                                                           \
	do {                                                                                                       \
		struct call k;                                                                                     \
		int r_ = call_begin(&k, eng, c, what, err);                                                        \
		if (r_)                                                                                            \
			return r_;                                                                                 \
		r_ = k.ops->op ? k.ops->op(&k.mc.m, __VA_ARGS__, &k.e) : unsupported(&k);                          \
		return call_end(&k, r_, err);                                                                      \
	} while (0)

int rk_machine_status(struct rk_engine *eng, const struct rk_computer *c, enum rk_machine_state *out,
		      struct rk_error *err)
{
	CALL(eng, c, "tell the state of its machine", err, status, out);
}

int rk_machine_exec_spawn(struct rk_engine *eng, const struct rk_computer *c, const struct rk_exec_request *req,
			  struct rk_proc **out, struct rk_error *err)
{
	CALL(eng, c, "run commands", err, exec_spawn, req, out);
}

int rk_machine_file_list(struct rk_engine *eng, const struct rk_computer *c, const char *path,
			 struct rk_file_entry **out, size_t *n, struct rk_error *err)
{
	CALL(eng, c, "list files", err, file_list, path, out, n);
}

int rk_machine_file_read(struct rk_engine *eng, const struct rk_computer *c, const char *path, size_t max_bytes,
			 struct rk_buf *out, struct rk_error *err)
{
	CALL(eng, c, "read files", err, file_read, path, max_bytes, out);
}

int rk_machine_file_write(struct rk_engine *eng, const struct rk_computer *c, const char *path, const void *data,
			  size_t len, int executable, struct rk_error *err)
{
	CALL(eng, c, "write files", err, file_write, path, data, len, executable);
}

int rk_machine_file_remove(struct rk_engine *eng, const struct rk_computer *c, const char *path,
			   struct rk_error *err)
{
	CALL(eng, c, "remove files", err, file_remove, path);
}

int rk_machine_workspace_export(struct rk_engine *eng, const struct rk_computer *c, int fd, struct rk_error *err)
{
	CALL(eng, c, "export its workspace", err, workspace_export, fd);
}

int rk_machine_workspace_import(struct rk_engine *eng, const struct rk_computer *c, int fd, struct rk_error *err)
{
	CALL(eng, c, "import a workspace", err, workspace_import, fd);
}

int rk_machine_display_start(struct rk_engine *eng, const struct rk_computer *c, int display,
			     const struct rk_display_options *opt, struct rk_screen_transport *tr,
			     struct rk_error *err)
{
	CALL(eng, c, "start a display", err, display_start, display, opt, tr);
}

int rk_machine_display_stop(struct rk_engine *eng, const struct rk_computer *c, int display, struct rk_error *err)
{
	CALL(eng, c, "stop a display", err, display_stop, display);
}

int rk_machine_display_novnc(struct rk_engine *eng, const struct rk_computer *c, int display, char **url,
			     struct rk_error *err)
{
	CALL(eng, c, "serve a noVNC page", err, display_novnc, display, url);
}
