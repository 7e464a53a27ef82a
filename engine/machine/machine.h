#ifndef RK_MACHINE_H
#define RK_MACHINE_H
/* A computer's machine: which provider serves it and the struct rk_machine
 * a provider call needs. The machine wing reaches providers through here.
 *
 * The facade: rk_machine_open finds c's provider (RK_EUNAVAILABLE when this
 * rakazo does not have it) and builds the struct rk_machine; then one
 * function a provider operation (rk_machine_status, _file_read, ...)
 * answers RK_EUNSUPPORTED itself when the provider lacks it (a NULL op)
 * and maps the provider's failure once: the provider always gets an error
 * to fill, and a failure it left without a code or a message gets one
 * naming the computer and what failed. The caller's err may be NULL.
 * Outside this file, ops-> is read for capabilities only, never called. */

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"

/* The provider of a computer; RK_EUNAVAILABLE when the kind is unknown here. */
const struct rk_provider_ops *rk_engine_provider(const struct rk_computer *c, struct rk_error *err);

/* A struct rk_machine for a computer, with the strings it points to; ops
 * and c are set by rk_machine_open. */
struct rk_machine_ctx {
	struct rk_machine m;
	char *home_dir, *run_dir;
	const struct rk_provider_ops *ops;
	const struct rk_computer *c;
};
void rk_machine_ctx_init(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c);
void rk_machine_ctx_release(struct rk_machine_ctx *mc);

/* --- the facade ------------------------------------------------------------------ */
/* Opens c's machine on its provider: one or several calls on it, then
 * rk_machine_ctx_release. The lifecycle keeps one open across its calls
 * (m.ref moves to a machine it just provisioned). c must outlive mc.
 * RK_EUNAVAILABLE when this rakazo lacks the provider. */
int rk_machine_open(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c,
		    struct rk_error *err);

/* One function a provider operation, named after it. */
int rk_machine_check(const struct rk_machine_ctx *mc, struct rk_error *err); /* none: 0 */
int rk_machine_provision(const struct rk_machine_ctx *mc, struct rk_provision_result *out, struct rk_error *err);
int rk_machine_status(const struct rk_machine_ctx *mc, enum rk_machine_state *out, struct rk_error *err);
int rk_machine_pause(const struct rk_machine_ctx *mc, struct rk_error *err);
int rk_machine_resume(const struct rk_machine_ctx *mc, struct rk_error *err);
int rk_machine_stop(const struct rk_machine_ctx *mc, struct rk_error *err);    /* idempotent */
int rk_machine_destroy(const struct rk_machine_ctx *mc, struct rk_error *err); /* idempotent */
/* *out is the provider's process; its own ops (read, write, wait, free) drive it. */
int rk_machine_exec_spawn(const struct rk_machine_ctx *mc, const struct rk_exec_request *req, struct rk_proc **out,
			  struct rk_error *err);
int rk_machine_file_list(const struct rk_machine_ctx *mc, const char *path, struct rk_file_entry **out, size_t *n,
			 struct rk_error *err);
int rk_machine_file_read(const struct rk_machine_ctx *mc, const char *path, size_t max_bytes, struct rk_buf *out,
			 struct rk_error *err);
int rk_machine_file_write(const struct rk_machine_ctx *mc, const char *path, const void *data, size_t len,
			  int executable, struct rk_error *err);
int rk_machine_file_remove(const struct rk_machine_ctx *mc, const char *path, struct rk_error *err);
int rk_machine_workspace_export(const struct rk_machine_ctx *mc, int fd, struct rk_error *err);
int rk_machine_workspace_import(const struct rk_machine_ctx *mc, int fd, struct rk_error *err);
int rk_machine_display_start(const struct rk_machine_ctx *mc, int display, const struct rk_display_options *opt,
			     struct rk_screen_transport *tr, struct rk_error *err);
int rk_machine_display_stop(const struct rk_machine_ctx *mc, int display, struct rk_error *err);
int rk_machine_display_novnc(const struct rk_machine_ctx *mc, int display, char **url, struct rk_error *err);

#endif
