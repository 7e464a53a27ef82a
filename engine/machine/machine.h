#ifndef RK_MACHINE_H
#define RK_MACHINE_H
/* A computer's machine: which provider serves it and the struct rk_machine
 * a provider call needs. The machine wing reaches providers through here.
 *
 * The facade (rk_machine_*): one function a provider operation. Each finds
 * c's provider (RK_EUNAVAILABLE when this rakazo does not have it),
 * answers RK_EUNSUPPORTED itself when the provider lacks the operation (a
 * NULL op), builds the struct rk_machine, and maps the provider's failure
 * once: the provider always gets an error to fill, and a failure it left
 * without a code or a message gets one naming the computer and what failed.
 * The caller's err may be NULL. */

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
/* c's machine on its provider, for several calls on one machine: the
 * lifecycle's, whose m.ref moves to a machine it just provisioned. c must
 * outlive mc. RK_EUNAVAILABLE when this rakazo lacks the provider; release
 * it with rk_machine_ctx_release. */
int rk_machine_open(struct rk_machine_ctx *mc, struct rk_engine *eng, const struct rk_computer *c,
		    struct rk_error *err);
/* The provider's own reachability check (none: 0). */
int rk_machine_check(struct rk_machine_ctx *mc, struct rk_error *err);
int rk_machine_provision(struct rk_machine_ctx *mc, struct rk_provision_result *out, struct rk_error *err);
int rk_machine_state(struct rk_machine_ctx *mc, enum rk_machine_state *out, struct rk_error *err);
int rk_machine_pause(struct rk_machine_ctx *mc, struct rk_error *err);
int rk_machine_resume(struct rk_machine_ctx *mc, struct rk_error *err);
int rk_machine_stop(struct rk_machine_ctx *mc, struct rk_error *err);    /* idempotent */
int rk_machine_destroy(struct rk_machine_ctx *mc, struct rk_error *err); /* idempotent */

/* One call on c's machine, opened and released around it. */
int rk_machine_status(struct rk_engine *eng, const struct rk_computer *c, enum rk_machine_state *out,
		      struct rk_error *err);
/* *out is the provider's process; its own ops (read, write, wait, free) drive it. */
int rk_machine_exec_spawn(struct rk_engine *eng, const struct rk_computer *c, const struct rk_exec_request *req,
			  struct rk_proc **out, struct rk_error *err);
int rk_machine_file_list(struct rk_engine *eng, const struct rk_computer *c, const char *path,
			 struct rk_file_entry **out, size_t *n, struct rk_error *err);
int rk_machine_file_read(struct rk_engine *eng, const struct rk_computer *c, const char *path, size_t max_bytes,
			 struct rk_buf *out, struct rk_error *err);
int rk_machine_file_write(struct rk_engine *eng, const struct rk_computer *c, const char *path, const void *data,
			  size_t len, int executable, struct rk_error *err);
int rk_machine_file_remove(struct rk_engine *eng, const struct rk_computer *c, const char *path,
			   struct rk_error *err);
int rk_machine_workspace_export(struct rk_engine *eng, const struct rk_computer *c, int fd, struct rk_error *err);
int rk_machine_workspace_import(struct rk_engine *eng, const struct rk_computer *c, int fd, struct rk_error *err);
int rk_machine_display_start(struct rk_engine *eng, const struct rk_computer *c, int display,
			     const struct rk_display_options *opt, struct rk_screen_transport *tr,
			     struct rk_error *err);
int rk_machine_display_stop(struct rk_engine *eng, const struct rk_computer *c, int display, struct rk_error *err);
int rk_machine_display_novnc(struct rk_engine *eng, const struct rk_computer *c, int display, char **url,
			     struct rk_error *err);

#endif
