#ifndef RK_WORKSPACE_H
#define RK_WORKSPACE_H
/* The home store: where a computer's workspace ("home") is kept so that it
 * survives any machine. The interface below knows nothing of providers or
 * computers, only of home keys and directories on this host, so an object
 * store can replace the local implementation later.
 *
 * The local store (rk_workspace_store_local_new):
 *   DATA_DIR/homes/<key>/             the latest workspace (mounted providers
 *                                     use it live)
 *   DATA_DIR/home-revisions/<key>/    latest (the revision marker), lock,
 *                                     revs/<revision> (a JSON header line,
 *                                     then the manifest)
 *   DATA_DIR/objects/<2 hex>/<sha256> file contents, shared by every
 *                                     revision and every home
 *
 * Revisions come in two kinds:
 *   marker    names the live home at a moment; nothing is copied, so it
 *             costs the same for 1 KB or 100 GB. It protects against losing
 *             the machine, not against losing or changing the host dir.
 *   snapshot  a manifest (path, type, mode, owner, mtime, size, sha256) over
 *             content-addressed objects: unchanged files cost nothing (their
 *             hash is reused when size+mtime+inode+ctime match the previous
 *             manifest, and their object is already there).
 *
 * Every write takes the key's lock (flock, so it holds across processes),
 * stages and fsyncs before it renames over the current state, and a kill -9
 * at any point leaves the last good revision readable: objects are written
 * before the manifest that names them, the manifest before the marker that
 * makes it latest, and a staged copy replaces a home dir by rename. */

#include <stdint.h>
#include <stddef.h>

#include "engine/store/checkpoint.h"
#include "engine/util/err.h"
#include "engine/util/tar.h"

/* Store capabilities (describe). */
enum rk_workspace_cap {
	RK_WORKSPACE_REVISIONS = 1u << 0, /* keeps more than the latest revision */
	RK_WORKSPACE_MARKERS = 1u << 1,	  /* can checkpoint a live home by marker alone */
};

struct rk_workspace_checkpoint_req {
	const char *src_dir; /* the workspace to record */
	const char *reason;
	enum rk_workspace_kind kind;
	int keep; /* revisions to keep after this one (>= 1) */
};

struct rk_workspace_verify {
	int ok;
	int64_t files, bytes, missing, corrupt;
	char problem[1100]; /* the first problem, "" when ok */
};

struct rk_workspace_gc_stats {
	int64_t objects_kept, objects_removed, bytes_removed, staging_removed;
};

struct rk_workspace_desc {
	const char *name; /* "local" */
	unsigned caps;	  /* enum rk_workspace_cap */
	char *location;	  /* malloc'd: DATA_DIR for the local store */
};

struct rk_workspace_store;

struct rk_workspace_store_ops {
	const char *name;
	int (*describe)(struct rk_workspace_store *s, struct rk_workspace_desc *out, struct rk_error *err);
	/* The latest revision of key; RK_ENOTFOUND when it has none. */
	int (*latest)(struct rk_workspace_store *s, const char *key, struct rk_workspace_checkpoint *out,
		      struct rk_error *err);
	/* Records req->src_dir as a new latest revision and prunes to req->keep. */
	int (*checkpoint)(struct rk_workspace_store *s, const char *key, const struct rk_workspace_checkpoint_req *req,
			  struct rk_workspace_checkpoint *out, struct rk_error *err);
	/* Newest first; *out is malloc'd (rk_workspace_checkpoints_free). */
	int (*list)(struct rk_workspace_store *s, const char *key, struct rk_workspace_checkpoint **out, size_t *n,
		    struct rk_error *err);
	int (*show)(struct rk_workspace_store *s, const char *key, const char *rev, struct rk_workspace_checkpoint *out,
		    struct rk_error *err);
	/* Writes snapshot rev (NULL: the latest) into dest: built in a staging
	 * dir beside dest, then swapped in by rename. A marker cannot be
	 * materialized (RK_EUNSUPPORTED), except into its own live home where
	 * it already is. */
	int (*restore)(struct rk_workspace_store *s, const char *key, const char *rev, const char *dest,
		       struct rk_workspace_checkpoint *out, struct rk_error *err);
	/* Streams rev (NULL: latest) as a pax tar to fd (zstd-compressed when zstd). */
	int (*export_tar)(struct rk_workspace_store *s, const char *key, const char *rev, int fd, int zstd,
			  struct rk_error *err);
	/* Checks rev (NULL: latest): metadata and manifest checksum, every
	 * object present with its size; deep re-hashes every object. A marker
	 * verifies when its metadata reads and the live home exists. */
	int (*verify)(struct rk_workspace_store *s, const char *key, const char *rev, int deep,
		      struct rk_workspace_verify *out, struct rk_error *err);
	/* Removes objects no manifest names, and stale staging left by crashes. */
	int (*gc)(struct rk_workspace_store *s, struct rk_workspace_gc_stats *out, struct rk_error *err);
	/* Drops every revision of key (the computer is deleted). */
	int (*forget)(struct rk_workspace_store *s, const char *key, struct rk_error *err);
	void (*free)(struct rk_workspace_store *s);
};

struct rk_workspace_store {
	const struct rk_workspace_store_ops *ops;
};

/* The local store over data_dir. Caller frees with s->ops->free. */
struct rk_workspace_store *rk_workspace_store_local_new(const char *data_dir);

/* The S3-compatible store (engine/store/s3.c) at url "s3://BUCKET[/PREFIX]":
 * objects/<sha256>, homes/<key>/revs/<rev> and homes/<key>/latest under the
 * prefix, written in that order. The endpoint comes from RAKAZO_S3_ENDPOINT
 * (default https://s3.REGION.amazonaws.com; path-style addressing), the
 * credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 * AWS_SESSION_TOKEN, the region from AWS_REGION (default us-east-1).
 * data_dir holds the host's locks and temp files. Snapshots only (no
 * RK_WORKSPACE_MARKERS). NULL with err filled when the url or the environment
 * is wrong; nothing is contacted until the first operation. */
struct rk_workspace_store *rk_workspace_store_s3_new(const char *url, const char *data_dir, struct rk_error *err);

/* Counters of the requests an S3 store sent (tests and benchmarks);
 * -RK_EINVALID when s is not an S3 store. */
struct rk_workspace_s3_stats {
	int64_t object_puts;	   /* single-request object uploads */
	int64_t multipart_uploads; /* objects uploaded in parts */
	int64_t parts;		   /* their part uploads */
	int64_t bytes_uploaded;	   /* object bytes sent */
	int64_t other_puts;	   /* manifests and `latest` */
	int64_t heads, gets, lists, deletes, posts;
};
int rk_workspace_s3_stats(struct rk_workspace_store *s, struct rk_workspace_s3_stats *out);

/* A store whose every operation fails with why (a store that could not be
 * made, so the error reaches whoever uses it). Caller frees with s->ops->free. */
struct rk_workspace_store *rk_workspace_store_failed_new(const struct rk_error *why);

/* DATA_DIR/homes/<key>, malloc'd. Keys are one path segment: "", ".", ".."
 * and separators are refused. */
int rk_workspace_dir(const char *data_dir, const char *key, char **out, struct rk_error *err);

/* Under key's lock: puts back a home an interrupted swap left as
 * .<key>.previous and removes stale staging dirs. Called before a provider
 * touches the home. */
int rk_workspace_recover(const char *data_dir, const char *key, struct rk_error *err);

/* A staging dir beside the home (DATA_DIR/homes/.<key>.staging-XXXXXX),
 * malloc'd; and the swap that makes it the home (old home removed). */
int rk_workspace_staging_new(const char *data_dir, const char *key, char **out, struct rk_error *err);
int rk_workspace_swap_in(const char *data_dir, const char *key, const char *staging, struct rk_error *err);

/* Strict archive import: the tar on fd (any compression libarchive reads)
 * unpacked into dir by the one archive reader (util/tar.h: every refusal
 * rule and limit is there), excluded browser files skipped (unless opt
 * names its own skip). opt may be NULL. On error dir holds a partial tree
 * the caller removes. */
struct rk_workspace_import_stats {
	int64_t files, bytes, skipped;
	int64_t special; /* FIFOs, sockets, devices left out (opt->skip_special) */
};
int rk_workspace_import_tar(int fd, const char *dir, const struct rk_tar_opts *opt,
			    struct rk_workspace_import_stats *stats, struct rk_error *err);
/* A directory as a pax tar on fd (excluded browser files left out);
 * zstd compresses it. */
int rk_workspace_export_dir(const char *dir, int fd, int zstd, struct rk_error *err);

#endif
