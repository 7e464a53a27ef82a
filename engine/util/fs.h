#ifndef RK_FS_H
#define RK_FS_H
/* File helpers: directory creation, durable writes, bounded reads and the
 * workspace path rule. */

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* mkdir -p with mode for the directories it creates. */
int rk_fs_mkdirs(const char *path, mode_t mode, struct rk_error *err);
/* Writes data to path.tmp, fsyncs it, renames it over path and fsyncs the
 * directory: a crash leaves either the old or the new file. */
int rk_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct rk_error *err);
/* An output a user names (-o FILE): a temp file beside it, fsynced and
 * renamed over it by commit, so a failure leaves the old file; but a path
 * that exists and is not a regular file (/dev/null, a FIFO, a terminal) is
 * written in place, never replaced. rk_fs_write_atomic writes through one.
 * abort closes and removes the temp file; commit releases o either way. */
struct rk_fs_output {
	int fd;
	char *path, *tmp; /* tmp NULL: written in place */
};
int rk_fs_output_open(struct rk_fs_output *o, const char *path, mode_t mode, struct rk_error *err);
int rk_fs_output_commit(struct rk_fs_output *o, struct rk_error *err);
void rk_fs_output_abort(struct rk_fs_output *o);
/* Reads a whole file, refusing more than max_bytes (RK_ETOOLARGE) before reading. */
int rk_fs_read_all(const char *path, size_t max_bytes, struct rk_buf *out, struct rk_error *err);
int rk_fs_fsync_dir(const char *dir);
/* rm -rf; a missing path is not an error. */
int rk_fs_remove_tree(const char *path, struct rk_error *err);
int rk_fs_exists(const char *path);
/* Full write/read on an fd, retried on EINTR and short counts. */
int rk_fs_write_fd(int fd, const void *data, size_t len);
ssize_t rk_fs_read_fd(int fd, void *data, size_t len);

/* The workspace path rule: "\" becomes "/", leading "/" and empty segments
 * go, and a "." or ".." segment is refused ("path escapes the computer
 * workspace"). Returns a malloc'd relative path ("" for the root). */
int rk_path_normalize(const char *path, char **out, struct rk_error *err);
/* dir + "/" + name, malloc'd. */
char *rk_path_join(const char *dir, const char *name);


/* Opens rel (already normalized, relative) beneath root without following any
 * symlink on the way (O_NOFOLLOW at each step), so a link cannot lead out of
 * the workspace. With create_dirs the parent directories are made (mode
 * 0755). Returns an fd or a negative rk_code. */
int rk_fs_open_beneath(const char *root, const char *rel, int flags, mode_t mode, int create_dirs,
		       struct rk_error *err);
/* A unix socket at path that lives in a directory the computer can write
 * to (docker bind-mounts it): neither the socket nor its directory may be
 * a link planted to send us to another server on the host. Returns an
 * O_PATH fd of the socket (connect through "/proc/self/fd/N", so what was
 * checked is what is connected to); what names it in errors. */
int rk_fs_open_socket(const char *path, const char *what, struct rk_error *err);
/* The same, connected: a SOCK_STREAM fd (close-on-exec). */
int rk_fs_connect_socket(const char *path, const char *what, struct rk_error *err);
/* The fd of rel's parent directory beneath root and rel's last segment
 * (*leaf points into rel). */
int rk_fs_parent_beneath(const char *root, const char *rel, int create_dirs, const char **leaf, struct rk_error *err);

/* What a node of this mode is, for messages: "a FIFO", "a socket", "a
 * character device", "a block device", "a symbolic link", "a directory",
 * "a regular file". */
const char *rk_fs_kind(mode_t mode);
/* Opens name (beneath dfd, which may be AT_FDCWD) for reading a regular
 * file's content, never following a final symlink and never blocking: a
 * FIFO, a socket, a device, a directory or a link is refused as "not a
 * regular file" naming what it is (RK_EINVALID; missing: RK_ENOTFOUND).
 * The node is held by an O_PATH|O_NOFOLLOW fd, checked with fstat and
 * reopened through that fd (O_NONBLOCK), so what was checked is what is
 * read and a device is never opened. shown names the file in messages.
 * Returns the fd (st filled when given) or a negative rk_code. */
int rk_fs_open_regular(int dfd, const char *name, const char *shown, struct stat *st, struct rk_error *err);
/* The same from an fd that already holds the node (an O_PATH fd from
 * openat2, say); pfd stays open. */
int rk_fs_reopen_regular(int pfd, const char *shown, struct stat *st, struct rk_error *err);
/* The same for rel (normalized, relative) beneath root, no link followed on
 * the way (rk_fs_parent_beneath). */
int rk_fs_open_regular_beneath(const char *root, const char *rel, struct stat *st, struct rk_error *err);
#endif
