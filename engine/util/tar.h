#ifndef RK_TAR_H
#define RK_TAR_H
/* Workspace streams: a directory tree as a pax tar on an fd, and back.
 *
 * The one archive reader (every import goes through rk_tar_unpack: a
 * checkpoint import, a workspace import into a computer, a workspace
 * downloaded from a provider), so every refusal rule lives here:
 *   - names: no absolute path, no "." or ".." segment (a leading "./" is
 *     fine), nothing written through a symbolic link;
 *   - links: a symlink's target is relative and stays inside (checked
 *     lexically, and by the kernel after the whole tree is out, so a chain
 *     of links that leaves is refused too); a hard link names a regular
 *     file this archive already holds, reached through no link;
 *   - types: only regular files, directories and links; a device, a FIFO
 *     or a socket is refused (skip_special: left out and counted);
 *   - modes: setuid, setgid and sticky bits are dropped; owners are the
 *     computer's user (opt->uid/gid) or the process's own, never the
 *     archive's;
 *   - bombs: at most max_bytes of content and max_entries entries.
 * A refused archive leaves no trace: rk_tar_extract unpacks into staging
 * beside the target and moves the tree in only when all of it is out. */

#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

struct rk_tar_stats {
	uint64_t files, bytes;
	uint64_t skipped; /* entries opt->skip (or the writer's exclude) left out */
	uint64_t special; /* FIFOs, sockets, devices left out (skip_special; the writer always) */
};

/* The limits of one import when opt leaves them 0: RAKAZO_IMPORT_LIMIT
 * (bytes, suffixes K M G; default 10G) and RAKAZO_IMPORT_MAX_ENTRIES
 * (default 1000000). */
#define RK_TAR_MAX_BYTES_DEFAULT (10LL * 1024 * 1024 * 1024)
#define RK_TAR_MAX_ENTRIES_DEFAULT 1000000LL
int64_t rk_tar_max_bytes(void);
int64_t rk_tar_max_entries(void);

struct rk_tar_opts {
	int uid, gid;			/* owner of what is made; -1: the process's own */
	int64_t max_bytes, max_entries; /* 0: rk_tar_max_bytes() / rk_tar_max_entries() */
	int (*skip)(const char *rel);	/* 1: leave this name out (browser caches, locks), or NULL */
	int skip_special;		/* FIFOs, sockets, devices: left out instead of refused */
};
#define RK_TAR_OPTS_INIT                                                                                               \
	{                                                                                                              \
		.uid = -1, .gid = -1                                                                                   \
	}

/* Chromium's profile locks (a basename "Singleton*"): symlinks naming the
 * old host and pid that, restored, keep the browser from starting. */
int rk_tar_skip_singleton(const char *rel);

/* dir as a pax tar on fd. Of opt (may be NULL) only skip (names left out,
 * counted in stats->skipped) and uid/gid (the entries' owner; -1: 0) count.
 * FIFOs, sockets and devices are left out (counted in stats->special) and
 * never opened. */
int rk_tar_write_dir(const char *dir, int fd, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		     struct rk_error *err);
/* Unpacks the tar on fd (any compression libarchive reads) into dir, which
 * is created when missing and must hold nothing another process writes;
 * on error dir holds a partial tree the caller removes. opt may be NULL. */
int rk_tar_unpack(int fd, const char *dir, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		  struct rk_error *err);
/* Imports the tar on fd into dir, a live tree (the workspace), merging:
 * unpacked into a staging dir beside dir first (dir's parent, hidden
 * ".NAME.staging-XXXXXX"), then moved in entry by entry through fds that
 * follow no link; a refused archive, or one that would put a file where
 * dir has a directory, changes nothing in dir. */
int rk_tar_extract(int fd, const char *dir, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		   struct rk_error *err);
/* Checks the tar on in with rk_tar_unpack (in a scratch dir under tmpdir,
 * NULL: /tmp) and writes what came out as a clean pax tar on out, owned by
 * opt->uid/gid (-1: 0): for a machine that unpacks it itself. */
int rk_tar_repack(int in, int out, const char *tmpdir, const struct rk_tar_opts *opt, struct rk_error *err);
/* The same into out, a buffer the caller owns (the archive is also in a
 * scratch file under tmpdir on the way). */
int rk_tar_repack_buf(int in, struct rk_buf *out, const char *tmpdir, const struct rk_tar_opts *opt,
		      struct rk_error *err);

#endif
