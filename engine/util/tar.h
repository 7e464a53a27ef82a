#ifndef RK_TAR_H
#define RK_TAR_H
/* Workspace streams: a directory tree as a pax tar on an fd, and back.
 * Extraction refuses absolute paths, ".." and writes through symlinks. */

#include <stdint.h>

#include "err.h"

struct rk_tar_stats {
	uint64_t files, bytes;
};

/* Names matching one of the NULL-terminated fnmatch patterns (basename) are
 * left out, e.g. "Singleton*". */
int rk_tar_write_dir(const char *dir, int fd, const char *const *exclude, struct rk_tar_stats *stats,
		     struct rk_error *err);
/* uid/gid >= 0 chown what it creates (when allowed); -1 keeps the caller's. */
int rk_tar_extract(int fd, const char *dir, int uid, int gid, struct rk_tar_stats *stats, struct rk_error *err);

#endif
