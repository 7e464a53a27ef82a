#ifndef RK_CHECKPOINT_H
#define RK_CHECKPOINT_H
/* Checkpoints of computers: when and how a computer's workspace goes into
 * the home store (engine/store/workspace.h), and how a replacement machine gets it
 * back. This is the policy over the store; the store itself knows nothing
 * of providers.
 *
 * A provider whose workspace IS the host dir DATA_DIR/homes/<key> (docker
 * and fake bind-mount or use it) is "mounted": its checkpoint is a marker
 * (revisions_kept = 1: no copy, constant time; the host dir is the durable
 * copy and survives the machine) or an incremental content-addressed
 * snapshot of the live dir (revisions_kept > 1). Any other provider exports
 * a tar stream into a staging dir, which is snapshotted and swapped in as
 * the home.
 *
 * Checkpoints run before an explicit stop and before a pause (the worker,
 * engine/machine/execution.c), on `rakazo checkpoint create`, and at the end of a
 * run (rk_idle_run_end, engine/machine/idle.h). Before a checkpoint (a copy or a marker),
 * the desktop browsers of a Private computer are closed cleanly so their
 * cookies and profile databases are on disk; a Team computer's are not
 * closed under its bots (its checkpoints are deferred instead). A restore
 * or an import reaches a machine without a mount through the provider's
 * import, at once or on its next resume or provision. */

#include <cJSON.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/machine/machine.h"
#include "providers/provider.h"
#include "engine/store/workspace.h"

/* The home store of this engine: the local one, or the S3 one when
 * RAKAZO_HOME_STORE=s3://BUCKET[/PREFIX] (a wrong value gives a store whose
 * operations all fail with the reason). Caller frees it with s->ops->free. */
struct rk_workspace_store *rk_checkpoint_store(struct rk_engine *eng);
/* The live workspace of home key on this host, DATA_DIR/homes/<key>
 * (malloc'd): the directory a mounted provider uses, whichever store keeps
 * its checkpoints. It may not exist yet. */
int rk_checkpoint_home_dir(struct rk_engine *eng, const char *home_key, char **out, struct rk_error *err);

/* Is the provider's workspace the host dir m->home_dir itself? (docker and
 * fake today; see the report for the capability this should become.) */
int rk_checkpoint_home_mounted(const struct rk_provider_ops *ops);

/* quiesce: close the desktop browsers cleanly before the checkpoint (their
 * cookies and profile databases reach the disk); with RK_QUIESCE the machine
 * keeps running and display 0's browser is started again after. */
enum { RK_QUIESCE_NONE = 0, RK_QUIESCE = 1, RK_QUIESCE_STOPPING = 2 };

/* Records c's workspace now as a new latest revision (reason: manual, stop,
 * pause, run, ...), quiescing browsers first as asked. Updates
 * computers.home_revision. out may be NULL. */
int rk_checkpoint_create(struct rk_engine *eng, const struct rk_computer *c, const char *reason, int quiesce,
			 struct rk_workspace_checkpoint *out, struct rk_error *err);

/* The lifecycle's hooks (engine/machine/hook.h), answering the worker's
 * provider calls in engine/machine/execution.c.
 * before_lifecycle: before the provider's stop or pause; a failure keeps the
 * machine as it is and fails the command. */
int rk_checkpoint_before_lifecycle(struct rk_engine *eng, const struct rk_computer *c, const char *op,
				   struct rk_error *err);
/* before_provision: puts back a home an interrupted swap left aside, and
 * rebuilds a missing live home from the latest snapshot (a mounted provider
 * binds the dir when it provisions, so this must come first). */
int rk_checkpoint_before_provision(struct rk_engine *eng, const struct rk_computer *c, cJSON *result,
				   struct rk_error *err);
/* after_provision: when the machine is a replacement (fresh, no stored ref,
 * another ref, or a ref made by another provider kind), the computer goes
 * to `restoring` and the latest workspace is brought in before any tool
 * runs. Adds {"replacement":..., "restore":{...}} to result. */
int rk_checkpoint_after_provision(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
				  const struct rk_provision_result *pr, cJSON *result, struct rk_error *err);

/* after_resume: a machine without a mount that was down when a restore or
 * an import made a new latest revision gets it now, before any tool runs
 * (the computer is `restoring` meanwhile). */
int rk_checkpoint_after_resume(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
			       cJSON *result, struct rk_error *err);

/* `rakazo checkpoint restore|export|import|verify`. restore and import make
 * the revision (or archive) the computer's latest. A mounted computer's
 * machine must be stopped (a running container keeps the directory it
 * bound); any other machine gets it at once through its import when it
 * runs, else on its next resume or provision. A failure leaves the host
 * home and the latest revision as they were. */
int rk_checkpoint_restore(struct rk_engine *eng, const struct rk_computer *c, const char *rev,
			  struct rk_workspace_checkpoint *out, struct rk_error *err);
int rk_checkpoint_export(struct rk_engine *eng, const struct rk_computer *c, const char *rev, int fd, int zstd,
			 struct rk_error *err);
int rk_checkpoint_import(struct rk_engine *eng, const struct rk_computer *c, int fd,
			 struct rk_workspace_checkpoint *out, struct rk_workspace_import_stats *stats,
			 struct rk_error *err);
int rk_checkpoint_verify(struct rk_engine *eng, const struct rk_computer *c, const char *rev, int deep,
			 struct rk_workspace_verify *out, struct rk_error *err);

/* `rakazo checkpoint list|show|gc`, as JSON the caller deletes. Each
 * checkpoint is rk_workspace_checkpoint_to_json's document with the
 * computer's id and home_key, and "latest" set on the latest one. list:
 * newest first; show: rev, or the latest when rev is NULL. gc: the whole
 * store's counts (objects_kept, objects_removed, bytes_removed,
 * staging_removed). */
/* One checkpoint of c as JSON (the caller deletes it); latest is the id of
 * the latest one (NULL or "": none). */
cJSON *rk_checkpoint_to_json(const struct rk_computer *c, const struct rk_workspace_checkpoint *rev,
			     const char *latest);
/* The latest checkpoint's id of home_key (malloc'd), or NULL when there is
 * none or the store cannot say (a listing then shows no latest mark). */
char *rk_checkpoint_latest_id(struct rk_engine *eng, const char *home_key);
int rk_checkpoint_list(struct rk_engine *eng, const struct rk_computer *c, cJSON **out, struct rk_error *err);
int rk_checkpoint_show(struct rk_engine *eng, const struct rk_computer *c, const char *rev, cJSON **out,
		       struct rk_error *err);
int rk_checkpoint_gc(struct rk_engine *eng, cJSON **out, struct rk_error *err);

/* The computer is deleted (the lifecycle's "deleted" hook): its revisions
 * and the objects only they named go. */
int rk_checkpoint_forget(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err);

cJSON *rk_workspace_checkpoint_to_json(const struct rk_workspace_checkpoint *r, const char *latest_id);

#endif
