#include "engine/util/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"

/* --- writing ------------------------------------------------------------------------------ */

struct writer {
	struct archive *a;
	int (*skip)(const char *rel);
	int uid, gid;
	struct rk_tar_stats *stats;
	char buf[65536];
	struct rk_error *err;
};

static int write_err(struct writer *w)
{
	return rk_error_set(w->err, RK_EIO, "tar: %s", archive_error_string(w->a));
}

/* Exactly size bytes of fd, padded with zeros if the file shrank meanwhile:
 * the header already promised the size. */
static int copy_data(struct writer *w, int fd, int64_t size)
{
	int64_t left = size;
	ssize_t n;
	while (left > 0 &&
	       (n = rk_fs_read_fd(fd, w->buf, left < (int64_t)sizeof(w->buf) ? (size_t)left : sizeof(w->buf))) > 0) {
		if (archive_write_data(w->a, w->buf, (size_t)n) < 0)
			return write_err(w);
		left -= n;
	}
	memset(w->buf, 0, sizeof(w->buf));
	while (left > 0) {
		size_t k = left < (int64_t)sizeof(w->buf) ? (size_t)left : sizeof(w->buf);
		if (archive_write_data(w->a, w->buf, k) < 0)
			return write_err(w);
		left -= (int64_t)k;
	}
	return 0;
}

/* The tree open on dfd (closed here), rel its name in the archive. */
static int add_tree(struct writer *w, int dfd, const char *rel)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return rk_error_errno(w->err, RK_EIO, errno, "cannot read directory %s", rel[0] ? rel : ".");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		char *child = rel[0] ? rk_xasprintf("%s/%s", rel, name) : rk_xstrdup(name);
		struct stat st;
		if (w->skip && w->skip(child)) {
			if (w->stats)
				w->stats->skipped++;
			free(child);
			continue;
		}
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			free(child); /* vanished while we walked: a live workspace changes under us */
			continue;
		}
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
			/* FIFOs, sockets, devices: runtime state, never opened */
			if (w->stats)
				w->stats->special++;
			free(child);
			continue;
		}
		int fd = -1;
		char target[4096];
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(dirfd(d), name, target, sizeof(target) - 1);
			if (n < 0) {
				free(child);
				continue;
			}
			target[n] = '\0';
		} else if (S_ISREG(st.st_mode) && (fd = rk_fs_open_regular(dirfd(d), name, child, &st, NULL)) < 0) {
			/* swapped for a FIFO or gone since the stat: left out */
			if (w->stats)
				w->stats->special++;
			free(child);
			continue;
		}
		struct archive_entry *e = archive_entry_new();
		archive_entry_copy_stat(e, &st);
		archive_entry_set_pathname(e, child);
		archive_entry_set_uid(e, w->uid);
		archive_entry_set_gid(e, w->gid);
		archive_entry_set_uname(e, "");
		archive_entry_set_gname(e, "");
		archive_entry_set_nlink(e, S_ISDIR(st.st_mode) ? 2 : 1);
		if (S_ISLNK(st.st_mode)) {
			archive_entry_set_symlink(e, target);
			archive_entry_set_size(e, 0);
		} else if (S_ISDIR(st.st_mode)) {
			archive_entry_set_size(e, 0);
		}
		if (archive_write_header(w->a, e) != ARCHIVE_OK)
			r = write_err(w);
		else if (fd >= 0)
			r = copy_data(w, fd, st.st_size);
		if (r == 0 && fd >= 0 && w->stats) {
			w->stats->files++;
			w->stats->bytes += (uint64_t)st.st_size;
		}
		if (fd >= 0)
			close(fd);
		archive_entry_free(e);
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				r = add_tree(w, sub, child);
		}
		free(child);
	}
	closedir(d);
	return r;
}

int rk_tar_write_dir(const char *dir, int fd, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		     struct rk_error *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno, "cannot read directory %s",
				      dir);
	struct writer *w = rk_xcalloc(1, sizeof(*w));
	w->a = archive_write_new();
	w->skip = opt ? opt->skip : NULL;
	w->uid = opt && opt->uid >= 0 ? opt->uid : 0;
	w->gid = opt && opt->gid >= 0 ? opt->gid : w->uid;
	w->stats = stats;
	w->err = err;
	archive_write_set_format_pax_restricted(w->a);
	archive_write_set_bytes_in_last_block(w->a, 1);
	int r;
	if (archive_write_open_fd(w->a, fd) != ARCHIVE_OK) {
		r = write_err(w);
		close(dfd);
	} else {
		r = add_tree(w, dfd, "");
		if (archive_write_close(w->a) != ARCHIVE_OK && r == 0)
			r = write_err(w);
	}
	archive_write_free(w->a);
	free(w);
	return r;
}

int rk_tar_skip_singleton(const char *rel)
{
	const char *base = strrchr(rel, '/');
	return strncmp(base ? base + 1 : rel, "Singleton", 9) == 0;
}

/* --- limits -------------------------------------------------------------------------------- */

static int64_t env_number(const char *name, int64_t dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	long long n = strtoll(v, &end, 10);
	if (n <= 0)
		return dflt;
	switch (*end) {
	case 'k':
	case 'K':
		n <<= 10;
		break;
	case 'm':
	case 'M':
		n <<= 20;
		break;
	case 'g':
	case 'G':
		n <<= 30;
		break;
	default:
		break;
	}
	return n;
}

int64_t rk_tar_max_bytes(void)
{
	return env_number("RAKAZO_IMPORT_LIMIT", RK_TAR_MAX_BYTES_DEFAULT);
}

int64_t rk_tar_max_entries(void)
{
	return env_number("RAKAZO_IMPORT_MAX_ENTRIES", RK_TAR_MAX_ENTRIES_DEFAULT);
}

/* --- the reader: every refusal rule ---------------------------------------------------------- */

/* A member name as a normalized relative path ("" for the root): a leading
 * "./" (as `tar -C dir -c .` writes) and a trailing "/" are fine, an
 * absolute name or a "." or ".." segment is not. */
static int member_name(const char *name, char **out, struct rk_error *err)
{
	if (!name || name[0] == '/')
		return rk_error_set(err, RK_EINVALID, "the archive holds an absolute path: %s", name ? name : "");
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!strcmp(name, ".") || !*name) {
		*out = rk_xstrdup("");
		return 0;
	}
	char *copy = rk_xstrdup(name);
	size_t len = strlen(copy);
	if (copy[len - 1] == '/')
		copy[len - 1] = '\0';
	int r = rk_path_normalize(copy, out, NULL);
	free(copy);
	if (r)
		return rk_error_set(err, RK_EINVALID, "the archive holds a path that leaves the workspace: %s", name);
	return 0;
}

/* Does a link at rel with target stay inside the workspace (lexically)? */
static int link_inside(const char *rel, const char *target)
{
	if (!target || !*target || target[0] == '/')
		return 0;
	int depth = 0;
	for (const char *p = rel; *p; p++)
		if (*p == '/')
			depth++; /* the directories the link sits in */
	const char *p = target;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return 0;
		} else if (!(len == 0 || (len == 1 && p[0] == '.'))) {
			depth++;
		}
		if (!slash)
			break;
		p = slash + 1;
	}
	return 1;
}

/* A hard link's target: a regular file this archive already put under
 * root, reached through no symlink (so never a file outside). */
static int hardlink_ok(const char *root, const char *target)
{
	const char *leaf;
	int dfd = rk_fs_parent_beneath(root, target, 0, &leaf, NULL);
	if (dfd < 0)
		return 0;
	struct stat st;
	int ok = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	close(dfd);
	return ok;
}

/* Every symlink of the tree, resolved by the kernel beneath root: a chain
 * of links that each stay inside but together leave (a/b/l -> ../.., then
 * a/b/x -> l/../../..) fails with EXDEV. A dangling link is fine. */
static int links_stay_inside(const char *root, const struct rk_buf *links, struct rk_error *err)
{
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot open %s", root);
	int r = 0;
	for (size_t off = 0; off < links->len && r == 0;) {
		const char *rel = links->data + off;
		off += strlen(rel) + 1;
		struct open_how how = {
			.flags = O_PATH | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, rfd, rel, &how, sizeof(how));
		if (fd >= 0)
			close(fd);
		else if (errno == ENOSYS)
			break; /* an old kernel: the lexical check alone */
		else if (errno == EXDEV)
			r = rk_error_set(err, RK_EINVALID,
					 "the archive holds a chain of symlinks that leaves the workspace: %s", rel);
	}
	close(rfd);
	return r;
}

static int too_many_bytes(struct rk_error *err, int64_t max)
{
	return rk_error_set(
		err, RK_ETOOLARGE,
		"the archive holds more than the import limit of %lld bytes (set RAKAZO_IMPORT_LIMIT to raise it)",
		(long long)max);
}

int rk_tar_unpack(int fd, const char *dir, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		  struct rk_error *err)
{
	struct rk_tar_opts o = RK_TAR_OPTS_INIT;
	if (opt)
		o = *opt;
	int64_t max_bytes = o.max_bytes > 0 ? o.max_bytes : rk_tar_max_bytes();
	int64_t max_entries = o.max_entries > 0 ? o.max_entries : rk_tar_max_entries();
	struct rk_tar_stats local = {0};
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	int r = rk_fs_mkdirs(dir, 0700, err);
	if (r)
		return r;
	/* the secure-symlink check covers every component of the names we give
	 * it, so the prefix must hold no links of its own */
	char *root = realpath(dir, NULL);
	if (!root)
		return rk_error_errno(err, RK_EIO, errno, "cannot resolve %s", dir);
	char *rel = NULL; /* the entry at hand, for messages; before any goto done */
	struct rk_buf links;
	rk_buf_init(&links);
	struct archive *in = archive_read_new();
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_read_support_filter_all(in);
	struct archive *out = archive_write_disk_new();
	/* names are checked and made absolute under root by us (member_name), so
	 * libarchive's no-absolute-paths check would refuse every entry; no
	 * EXTRACT_UNLINK: with it a link on the way is replaced, not refused */
	int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
		    ARCHIVE_EXTRACT_SECURE_SYMLINKS;
	if (o.uid >= 0)
		flags |= ARCHIVE_EXTRACT_OWNER;
	archive_write_disk_set_options(out, flags);
	if (archive_read_open_fd(in, fd, 65536) != ARCHIVE_OK) {
		r = rk_error_set(err, RK_EINVALID, "not a tar stream: %s", archive_error_string(in));
		goto done;
	}
	int64_t total = 0, entries = 0;
	struct archive_entry *e;
	int rc;
	while ((rc = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		free(rel);
		rel = NULL;
		if (++entries > max_entries) {
			r = rk_error_set(err, RK_ETOOLARGE,
					 "the archive holds more than the import limit of %lld entries (set "
					 "RAKAZO_IMPORT_MAX_ENTRIES to raise it)",
					 (long long)max_entries);
			goto done;
		}
		if ((r = member_name(archive_entry_pathname(e), &rel, err)))
			goto done;
		if (!rel[0])
			continue; /* "./" itself: the root is ours */
		if (o.skip && o.skip(rel)) {
			stats->skipped++;
			continue;
		}
		mode_t type = archive_entry_filetype(e);
		const char *hl = archive_entry_hardlink(e);
		if (hl) {
			char *target = NULL;
			if (member_name(hl, &target, NULL) != 0 || !target[0] || !hardlink_ok(root, target)) {
				r = rk_error_set(
					err, RK_EINVALID,
					"the archive holds a hard link that leaves the workspace: %s -> %s (a hard "
					"link must name a file the archive holds before it)",
					rel, hl);
				free(target);
				goto done;
			}
			char *full = rk_path_join(root, target);
			archive_entry_set_hardlink(e, full);
			archive_entry_set_size(e, 0); /* never data written through the link */
			free(full);
			free(target);
		} else if (type == AE_IFLNK) {
			const char *t = archive_entry_symlink(e);
			if (!link_inside(rel, t)) {
				r = rk_error_set(err, RK_EINVALID,
						 "the archive holds a symlink that leaves the workspace: %s -> %s", rel,
						 t ? t : "");
				goto done;
			}
			rk_buf_add(&links, rel, strlen(rel) + 1);
		} else if (type != AE_IFREG && type != AE_IFDIR) {
			if (o.skip_special) {
				stats->special++;
				continue;
			}
			r = rk_error_set(err, RK_EINVALID,
					 "the archive holds %s, %s: only files, directories and links are imported",
					 rk_fs_kind(type), rel);
			goto done;
		}
		/* no setuid, setgid or sticky bit; a directory stays the owner's to fill */
		mode_t perm = archive_entry_perm(e) & 0777;
		archive_entry_set_perm(e, type == AE_IFDIR ? perm | 0700 : perm);
		if (o.uid >= 0) {
			archive_entry_set_uid(e, o.uid);
			archive_entry_set_gid(e, o.gid >= 0 ? o.gid : o.uid);
		}
		archive_entry_set_uname(e, NULL);
		archive_entry_set_gname(e, NULL);
		int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
		if (size < 0 || size > max_bytes - total) {
			r = too_many_bytes(err, max_bytes);
			goto done;
		}
		char *full = rk_path_join(root, rel);
		archive_entry_set_pathname(e, full);
		free(full);
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			r = rk_error_set(err, RK_EINVALID, "cannot extract %s: %s", rel, archive_error_string(out));
			goto done;
		}
		const void *buf;
		size_t len;
		la_int64_t off;
		int64_t got = 0;
		while (size > 0 && (rc = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK) {
			got += (int64_t)len;
			if (got > max_bytes - total) {
				r = too_many_bytes(err, max_bytes);
				goto done;
			}
			if (archive_write_data_block(out, buf, len, off) != ARCHIVE_OK) {
				r = rk_error_set(err, RK_EIO, "cannot write %s: %s", rel, archive_error_string(out));
				goto done;
			}
		}
		if (size > 0 && rc != ARCHIVE_EOF) {
			r = rk_error_set(err, RK_EINVALID, "truncated archive at %s: %s", rel,
					 archive_error_string(in));
			goto done;
		}
		if (archive_write_finish_entry(out) != ARCHIVE_OK) {
			r = rk_error_set(err, RK_EIO, "cannot finish %s: %s", rel, archive_error_string(out));
			goto done;
		}
		total += size > got ? size : got;
		if (type == AE_IFREG && !hl) {
			stats->files++;
			stats->bytes += (uint64_t)size;
		}
	}
	if (rc != ARCHIVE_EOF)
		r = rk_error_set(err, RK_EINVALID, "bad archive: %s", archive_error_string(in));
	/* directories get their modes and times now */
	if (r == 0 && archive_write_close(out) != ARCHIVE_OK)
		r = rk_error_set(err, RK_EIO, "cannot finish the extraction: %s", archive_error_string(out));
	if (r == 0)
		r = links_stay_inside(root, &links, err);
done:
	free(rel);
	archive_read_free(in);
	archive_write_free(out);
	rk_buf_release(&links);
	free(root);
	return r;
}

/* --- staging and the merge into a live tree ------------------------------------------------------ */

/* dir's parent + "/." + dir's name + ".staging-XXXXXX", made 0700. */
static int staging_beside(const char *dir, char **out, struct rk_error *err)
{
	char *copy = rk_xstrdup(dir);
	size_t n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	char *slash = strrchr(copy, '/');
	char *tmpl = slash ? rk_xasprintf("%.*s/.%s.staging-XXXXXX", (int)(slash - copy), copy, slash + 1)
			   : rk_xasprintf(".%s.staging-XXXXXX", copy);
	free(copy);
	if (!mkdtemp(tmpl)) {
		int r = rk_error_errno(err, RK_EIO, errno, "cannot make a staging dir beside %s", dir);
		free(tmpl);
		return r;
	}
	*out = tmpl;
	return 0;
}

typedef int (*merge_fn)(int sfd, int dfd, const char *name, const struct stat *s, const struct stat *d, int has_d,
			const char *rel, struct rk_error *err);

/* Calls fn for every entry of the staging dir sfd against the live dir dfd
 * (both closed here); fn recurses for directories. */
static int merge_each(int sfd, int dfd, const char *rel, merge_fn fn, struct rk_error *err)
{
	DIR *d = fdopendir(sfd);
	if (!d) {
		close(sfd);
		close(dfd);
		return rk_error_errno(err, RK_EIO, errno, "cannot read the staged %s", rel[0] ? rel : "tree");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *child = rel[0] ? rk_xasprintf("%s/%s", rel, de->d_name) : rk_xstrdup(de->d_name);
		struct stat s, t;
		if (fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot stat the staged %s", child);
		else
			r = fn(dirfd(d), dfd, de->d_name, &s, &t,
			       fstatat(dfd, de->d_name, &t, AT_SYMLINK_NOFOLLOW) == 0, child, err);
		free(child);
	}
	closedir(d);
	close(dfd);
	return r;
}

static int open_pair(int sfd, int dfd, const char *name, int *s, int *d, const char *rel, struct rk_error *err)
{
	*s = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*s >= 0 && *d >= 0)
		return 0;
	int r = rk_error_errno(err, RK_EIO, errno, "cannot open the directory %s", rel);
	if (*s >= 0)
		close(*s);
	if (*d >= 0)
		close(*d);
	return r;
}

/* Before anything moves: a file where the workspace has a directory is
 * refused (replacing it would drop the directory's content). */
static int merge_check(int sfd, int dfd, const char *name, const struct stat *s, const struct stat *d, int has_d,
		       const char *rel, struct rk_error *err)
{
	if (!has_d || !S_ISDIR(d->st_mode))
		return 0;
	if (!S_ISDIR(s->st_mode))
		return rk_error_set(err, RK_EINVALID,
				    "the archive holds %s where the workspace has a directory: %s (remove it first)",
				    rk_fs_kind(s->st_mode), rel);
	int a, b;
	int r = open_pair(sfd, dfd, name, &a, &b, rel, err);
	return r ? r : merge_each(a, b, rel, merge_check, err);
}

static int merge_move(int sfd, int dfd, const char *name, const struct stat *s, const struct stat *d, int has_d,
		      const char *rel, struct rk_error *err)
{
	if (S_ISDIR(s->st_mode) && has_d && S_ISDIR(d->st_mode)) {
		int a, b;
		int r = open_pair(sfd, dfd, name, &a, &b, rel, err);
		if (r)
			return r;
		fchmod(b, s->st_mode & 0777);
		return merge_each(a, b, rel, merge_move, err);
	}
	/* a directory replaces a file or a link; anything else is replaced by
	 * the rename itself (a link in the way is replaced, never followed) */
	if (S_ISDIR(s->st_mode) && has_d && unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
		return rk_error_errno(err, RK_EIO, errno, "cannot replace %s", rel);
	if (renameat(sfd, name, dfd, name) != 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot move %s into place", rel);
	return 0;
}

int rk_tar_extract(int fd, const char *dir, const struct rk_tar_opts *opt, struct rk_tar_stats *stats,
		   struct rk_error *err)
{
	int r = rk_fs_mkdirs(dir, 0755, err);
	char *staging = NULL;
	if (r || (r = staging_beside(dir, &staging, err)))
		return r;
	if ((r = rk_tar_unpack(fd, staging, opt, stats, err)) == 0) {
		for (int pass = 0; pass < 2 && r == 0; pass++) {
			int s = open(staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (s < 0 || d < 0) {
				r = rk_error_errno(err, RK_EIO, errno, "cannot open %s", s < 0 ? staging : dir);
				if (s >= 0)
					close(s);
				if (d >= 0)
					close(d);
				break;
			}
			r = merge_each(s, d, "", pass == 0 ? merge_check : merge_move, err);
		}
	}
	rk_fs_remove_tree(staging, NULL);
	free(staging);
	return r;
}

int rk_tar_repack(int in, int out, const char *tmpdir, const struct rk_tar_opts *opt, struct rk_error *err)
{
	char *tmpl = rk_xasprintf("%s/rakazo-import-XXXXXX", tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(tmpl)) {
		int r = rk_error_errno(err, RK_EIO, errno, "cannot make a scratch directory in %s",
				       tmpdir ? tmpdir : "/tmp");
		free(tmpl);
		return r;
	}
	struct rk_tar_opts o = RK_TAR_OPTS_INIT;
	if (opt)
		o = *opt;
	struct rk_tar_opts owner = {.uid = o.uid, .gid = o.gid};
	o.uid = o.gid = -1; /* the owner goes into the new archive, not the scratch dir */
	int r = rk_tar_unpack(in, tmpl, &o, NULL, err);
	if (r == 0)
		r = rk_tar_write_dir(tmpl, out, &owner, NULL, err);
	rk_fs_remove_tree(tmpl, NULL);
	free(tmpl);
	return r;
}

int rk_tar_repack_buf(int in, struct rk_buf *out, const char *tmpdir, const struct rk_tar_opts *opt,
		      struct rk_error *err)
{
	const char *where = tmpdir ? tmpdir : "/tmp";
	int tfd = open(where, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tfd < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot make a scratch file in %s", where);
	int r = rk_tar_repack(in, tfd, tmpdir, opt, err);
	if (r == 0 && lseek(tfd, 0, SEEK_SET) != 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot rewind the scratch archive");
	char buf[65536];
	ssize_t n;
	while (r == 0 && (n = rk_fs_read_fd(tfd, buf, sizeof(buf))) != 0) {
		if (n < 0)
			r = rk_error_errno(err, RK_EIO, errno, "cannot read the scratch archive");
		else
			rk_buf_add(out, buf, (size_t)n);
	}
	close(tfd);
	return r;
}
