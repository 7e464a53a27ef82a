#ifndef RK_STORE_CHECKPOINT_H
#define RK_STORE_CHECKPOINT_H
/* What a checkpoint (a saved revision of a workspace) records, and which
 * files no checkpoint keeps. The bottom of the workspace store: the stores
 * (engine/store/workspace.c, engine/store/s3.c) and the revision format
 * they share (engine/store/manifest.c) all use it, and it uses none of them.
 * workspace.h includes it, so callers of the store need not. */

#include <stddef.h>
#include <stdint.h>

enum rk_workspace_kind { RK_WORKSPACE_MARKER, RK_WORKSPACE_SNAPSHOT };

struct rk_workspace_checkpoint {
	char *id;	    /* "rev-<ms>-<hex>", sortable by time */
	int64_t created_at; /* ms */
	char *reason;	    /* stop, pause, manual, run, import, restore ... */
	enum rk_workspace_kind kind;
	int64_t bytes, files;	/* -1 for a marker (not counted: that would cost time) */
	char *checksum;		/* sha256 of the manifest; NULL for a marker */
	int64_t ms;		/* how long the checkpoint took */
	int64_t reused, hashed; /* files whose hash was reused / computed */
	int64_t skipped;	/* FIFOs, sockets, devices left out (never kept) */
	char *skipped_names;	/* the first of them, "a (a FIFO), ..."; only from a checkpoint just made; malloc'd */
};
void rk_workspace_checkpoint_release(struct rk_workspace_checkpoint *r);
void rk_workspace_checkpoints_free(struct rk_workspace_checkpoint *r, size_t n);
const char *rk_workspace_kind_name(enum rk_workspace_kind k);

/* Transient browser state that is never checkpointed, exported or imported:
 * caches, locks and Singleton* files inside .browser-profiles/ (anywhere
 * below it). The same names elsewhere in the workspace are kept. path is
 * workspace-relative ("a/b/c"). */
int rk_workspace_excluded(const char *path);

#endif
