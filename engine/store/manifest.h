#ifndef RK_MANIFEST_H
#define RK_MANIFEST_H
/* What the home stores share (engine/store/workspace.c, the local store, and
 * engine/store/s3.c, the object store): the revision file format, the walk
 * that turns a workspace into a manifest, the materialization of a manifest
 * into a dir, keys, locks and the staging-and-swap of a dir. Internal to
 * the stores: nothing above engine/home*.c includes it.
 *
 * A revision file is one JSON header line (rk_workspace_meta_to_json), then the
 * manifest: one line per entry, fields split by tabs, path and link target
 * escaped (\\ \t \n):
 *   TYPE MODE UID GID MTIME_NS SIZE INO CTIME_NS HASH|TARGET|- PATH
 * The header's checksum is the sha256 of the manifest text. Objects are
 * named by the sha256 of their content. */

#include <cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "engine/store/checkpoint.h"
#include "engine/util/err.h"
#include "engine/util/buf.h"

#define RK_WORKSPACE_IOBUF (1u << 20)
#define RK_WORKSPACE_MANIFEST_MAX (1024u * 1024 * 1024)

struct rk_mentry {
	char type; /* f d l */
	unsigned mode, uid, gid;
	int64_t mtime_ns, size, ctime_ns;
	uint64_t ino;
	char *ref; /* hash (f), target (l), "-" (d); points into the manifest text */
	char *path;
};

struct rk_manifest {
	struct rk_workspace_checkpoint meta;
	struct rk_buf text;
	struct rk_mentry *e;
	size_t n, cap;
};

void rk_manifest_release(struct rk_manifest *m);
/* Moves m's header into out (the caller's now) and releases m. */
void rk_manifest_take_meta(struct rk_manifest *m, struct rk_workspace_checkpoint *out);
/* Parses m->text (a whole revision file, or with want_entries -1 only its
 * header line) as revision rev: the header always; the manifest checksum
 * is checked (want_entries >= 0) and with want_entries 1 the entries are
 * parsed (pointing into m->text). On error m is released. */
int rk_manifest_parse(struct rk_manifest *m, const char *rev, int want_entries, struct rk_error *err);
/* A revision file: meta's header line, then body (NULL for a marker). */
void rk_manifest_compose(const struct rk_workspace_checkpoint *meta, const struct rk_buf *body, struct rk_buf *out);
void rk_manifest_add_entry(struct rk_buf *b, char type, const struct stat *st, int64_t size, const char *ref,
			   const char *path);
cJSON *rk_workspace_meta_to_json(const struct rk_workspace_checkpoint *r);
int rk_workspace_meta_from_json(const char *text, size_t len, struct rk_workspace_checkpoint *r, struct rk_error *err);
int rk_workspace_valid_rev(const char *rev);
/* "rev-<ms>-<hex>", malloc'd. */
char *rk_workspace_new_rev_id(void);
/* qsort order of revisions: newest first. */
int rk_workspace_cmp_rev_desc(const void *a, const void *b);
int64_t rk_workspace_ns_of(const struct timespec *t);

/* Keys are one path segment (see rk_workspace_dir). */
int rk_workspace_check_key(const char *key, struct rk_error *err);
/* This host's lock of a home (DATA_DIR/home-revisions/<key>/lock), the one
 * every store and rk_workspace_recover take: the fd holding it. */
int rk_workspace_lock_key(const char *data_dir, const char *key, int how, struct rk_error *err);
/* Puts right the staging and .previous dirs under DATA_DIR/homes whose home
 * lock is free; returns how many. */
int64_t rk_workspace_gc_staging(const char *data_dir);
/* flock on path (created); returns the fd holding it (close drops it). */
int rk_workspace_take_lock(const char *path, int how, struct rk_error *err);

/* A manifest's entries by path. */
struct rk_path_table {
	size_t *slot; /* index + 1; 0 empty */
	size_t mask;
	const struct rk_manifest *m;
};
void rk_path_table_build(struct rk_path_table *t, const struct rk_manifest *m);
const struct rk_mentry *rk_path_table_get(const struct rk_path_table *t, const char *path);

/* A set of sha256 hex names. Free k. */
struct rk_hset {
	char (*k)[65];
	size_t n, mask;
};
void rk_hset_add(struct rk_hset *h, const char *hex);
int rk_hset_has(const struct rk_hset *h, const char *hex);

/* A dir's names without . and .., sorted; each and the array malloc'd. */
char **rk_workspace_list_names(DIR *d, size_t *n);

/* The walk that records a workspace as a manifest: entries go to body;
 * a regular file whose size, mtime, inode and ctime match prev's entry
 * reuses its hash, any other goes through store, which reads the file open
 * on fd, keeps its content as object hex and sets its size. */
struct rk_workspace_walk {
	struct rk_buf body;
	struct rk_path_table prev;
	int64_t files, bytes, reused, hashed;
	int64_t skipped;	     /* FIFOs, sockets, devices left out */
	struct rk_buf skipped_names; /* the first of them, "a (a FIFO), b (a socket)" */
	unsigned char *io;	     /* RK_WORKSPACE_IOBUF bytes for store */
	int (*store)(struct rk_workspace_walk *w, int fd, char hex[65], int64_t *size);
	struct rk_error *err;
};
/* Walks the dir open on dfd (closed here); rel is the workspace-relative
 * path of it ("" at the top). */
int rk_workspace_walk_dir(struct rk_workspace_walk *w, int dfd, struct rk_buf *rel);

/* Opens the content of e (a file entry) for reading: an fd at offset 0,
 * or a negative rk_code with err filled. */
typedef int (*rk_workspace_open_object_fn)(void *ctx, const struct rk_mentry *e, struct rk_error *err);
/* Builds the tree of m under dir (an empty dir) and flushes it. */
int rk_workspace_materialize(const struct rk_manifest *m, const char *dir, rk_workspace_open_object_fn open_object,
			     void *ctx, struct rk_error *err);
/* Streams m as a pax tar to fd (zstd-compressed when zstd). */
int rk_workspace_export_manifest(const struct rk_manifest *m, int fd, int zstd, rk_workspace_open_object_fn open_object,
				 void *ctx, struct rk_error *err);

/* Staging beside dest (dest's dir/.NAME.staging-XXXXXX, malloc'd); the swap
 * that makes it dest (two renames, old dest removed); and the recovery that
 * puts back dest's .previous when a swap was cut between its renames and
 * removes stale staging (caller holds the key's lock). */
int rk_workspace_staging_for(const char *dest, char **out, struct rk_error *err);
int rk_workspace_swap_dir(const char *dest, const char *staging, struct rk_error *err);
int rk_workspace_swap_recover(const char *dest, struct rk_error *err);

#endif
