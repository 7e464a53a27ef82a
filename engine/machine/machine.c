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

int rk_machine_open(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	memset(mc, 0, sizeof(*mc));
	const struct rk_provider_ops *ops = rk_engine_provider(c, err);
	if (!ops)
		return -rk_err(err)->code;
	rk_machine_ctx_init(mc, eng, c);
	mc->ops = ops;
	mc->c = c;
	return 0;
}

/* The provider has no such operation: the engine says so itself. */
static int unsupported(const struct rk_machine_ctx *mc, const char *what, struct rk_error *err)
{
	return rk_error_set(err, RK_EUNSUPPORTED, "computer '%s': provider '%s' cannot %s", mc->c->name, mc->c->kind,
			    what);
}

/* The provider's answer r, with what it left in e, to err: a failure has
 * a code and a message whatever the provider left. */
static int mapped(const struct rk_machine_ctx *mc, const char *what, int r, const struct rk_error *e,
		  struct rk_error *err)
{
	if (r >= 0)
		return r;
	enum rk_code code = e->code ? e->code : -r > 0 && -r < RK_ECODE_COUNT ? (enum rk_code) - r : RK_EFAILED;
	if (!e->message[0])
		return rk_error_set(err, code, "computer '%s': provider '%s' could not %s", mc->c->name, mc->c->kind,
				    what);
	return rk_error_set(err, code, "%s", e->message);
}

/* The body of a facade function: op of mc's provider on its machine with
 * the arguments that follow (OP0: none); what names it in messages. */
#define OP(mc, what, err, op, ...)                                                                                     \
	do {                                                                                                           \
		struct rk_error e_;                                                                                    \
		rk_error_clear(&e_);                                                                                   \
		if (!(mc)->ops->op)                                                                                    \
			return unsupported(mc, what, err);                                                             \
		return mapped(mc, what, (mc)->ops->op(&(mc)->m, __VA_ARGS__, &e_), &e_, err);                          \
	} while (0)
#define OP0(mc, what, err, op)                                                                                         \
	do {                                                                                                           \
		struct rk_error e_;                                                                                    \
		rk_error_clear(&e_);                                                                                   \
		if (!(mc)->ops->op)                                                                                    \
			return unsupported(mc, what, err);                                                             \
		return mapped(mc, what, (mc)->ops->op(&(mc)->m, &e_), &e_, err);                                       \
	} while (0)

int rk_machine_check(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	if (!mc->ops->check)
		return 0; /* nothing to check before a call */
	struct rk_error e;
	rk_error_clear(&e);
	return mapped(mc, "be reached", mc->ops->check(&e), &e, err);
}

int rk_machine_provision(const struct rk_machine_ctx *mc, struct rk_provision_result *out, struct rk_error *err)
{
	OP(mc, "provision a machine", err, provision, out);
}

int rk_machine_status(const struct rk_machine_ctx *mc, enum rk_machine_state *out, struct rk_error *err)
{
	OP(mc, "tell the state of its machine", err, status, out);
}

int rk_machine_pause(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	OP0(mc, "pause its machine", err, pause);
}

int rk_machine_resume(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	OP0(mc, "resume its machine", err, resume);
}

int rk_machine_stop(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	OP0(mc, "stop its machine", err, stop);
}

int rk_machine_destroy(const struct rk_machine_ctx *mc, struct rk_error *err)
{
	OP0(mc, "destroy its machine", err, destroy);
}

int rk_machine_exec_spawn(const struct rk_machine_ctx *mc, const struct rk_exec_request *req, struct rk_proc **out,
			  struct rk_error *err)
{
	OP(mc, "run commands", err, exec_spawn, req, out);
}

int rk_machine_file_list(const struct rk_machine_ctx *mc, const char *path, struct rk_file_entry **out, size_t *n,
			 struct rk_error *err)
{
	OP(mc, "list files", err, file_list, path, out, n);
}

int rk_machine_file_read(const struct rk_machine_ctx *mc, const char *path, size_t max_bytes, struct rk_buf *out,
			 struct rk_error *err)
{
	OP(mc, "read files", err, file_read, path, max_bytes, out);
}

int rk_machine_file_write(const struct rk_machine_ctx *mc, const char *path, const void *data, size_t len,
			  int executable, struct rk_error *err)
{
	OP(mc, "write files", err, file_write, path, data, len, executable);
}

int rk_machine_file_remove(const struct rk_machine_ctx *mc, const char *path, struct rk_error *err)
{
	OP(mc, "remove files", err, file_remove, path);
}

int rk_machine_workspace_export(const struct rk_machine_ctx *mc, int fd, struct rk_error *err)
{
	OP(mc, "export its workspace", err, workspace_export, fd);
}

int rk_machine_workspace_import(const struct rk_machine_ctx *mc, int fd, struct rk_error *err)
{
	OP(mc, "import a workspace", err, workspace_import, fd);
}

int rk_machine_display_start(const struct rk_machine_ctx *mc, int display, const struct rk_display_options *opt,
			     struct rk_screen_transport *tr, struct rk_error *err)
{
	OP(mc, "start a display", err, display_start, display, opt, tr);
}

int rk_machine_display_stop(const struct rk_machine_ctx *mc, int display, struct rk_error *err)
{
	OP(mc, "stop a display", err, display_stop, display);
}

int rk_machine_display_novnc(const struct rk_machine_ctx *mc, int display, char **url, struct rk_error *err)
{
	OP(mc, "serve a noVNC page", err, display_novnc, display, url);
}
