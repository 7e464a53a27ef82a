#include "tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"

static int excluded(const char *name, const char *const *exclude)
{
	for (size_t i = 0; exclude && exclude[i]; i++)
		if (fnmatch(exclude[i], name, 0) == 0)
			return 1;
	return 0;
}

static int add_tree(struct archive *a, const char *root, const char *rel, const char *const *exclude,
		    struct rk_tar_stats *stats, struct rk_error *err)
{
	char *path = rel[0] ? rk_path_join(root, rel) : rk_xstrdup(root);
	DIR *d = opendir(path);
	int r = 0;
	if (!d) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot read directory %s", path);
		free(path);
		return r;
	}
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || excluded(de->d_name, exclude))
			continue;
		char *child_rel = rel[0] ? rk_xasprintf("%s/%s", rel, de->d_name) : rk_xstrdup(de->d_name);
		char *child = rk_path_join(root, child_rel);
		struct stat st;
		if (lstat(child, &st) != 0) {
			/* vanished while we walked: a live workspace changes under us */
			free(child);
			free(child_rel);
			continue;
		}
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, child_rel);
		archive_entry_copy_stat(e, &st);
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_uname(e, "");
		archive_entry_set_gname(e, "");
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlink(child, target, sizeof(target) - 1);
			if (n >= 0) {
				target[n] = '\0';
				archive_entry_set_symlink(e, target);
				if (archive_write_header(a, e) != ARCHIVE_OK)
					r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
			}
		} else if (S_ISDIR(st.st_mode)) {
			if (archive_write_header(a, e) != ARCHIVE_OK)
				r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
			else
				r = add_tree(a, root, child_rel, exclude, stats, err);
		} else if (S_ISREG(st.st_mode)) {
			int fd = open(child, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0) {
				r = rk_error_errno(err, RK_EIO, errno, "cannot read %s", child);
			} else if (archive_write_header(a, e) != ARCHIVE_OK) {
				r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
			} else {
				char buf[65536];
				ssize_t n;
				int64_t left = st.st_size;
				/* write exactly the size in the header, even if the file grows */
				while (left > 0 && (n = rk_fs_read_fd(fd, buf, left < (int64_t)sizeof(buf) ? (size_t)left : sizeof(buf))) > 0) {
					if (archive_write_data(a, buf, (size_t)n) < 0) {
						r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
						break;
					}
					left -= n;
				}
				if (r == 0 && left > 0) {
					/* shrank while we read: pad, the header already promised the size */
					memset(buf, 0, sizeof(buf));
					while (left > 0 && r == 0) {
						size_t k = left < (int64_t)sizeof(buf) ? (size_t)left : sizeof(buf);
						if (archive_write_data(a, buf, k) < 0)
							r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
						left -= (int64_t)k;
					}
				}
				if (stats) {
					stats->files++;
					stats->bytes += (uint64_t)st.st_size;
				}
			}
			if (fd >= 0)
				close(fd);
		}
		archive_entry_free(e);
		free(child);
		free(child_rel);
	}
	closedir(d);
	free(path);
	return r;
}

int rk_tar_write_dir(const char *dir, int fd, const char *const *exclude, struct rk_tar_stats *stats,
		     struct rk_error *err)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		int r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
		archive_write_free(a);
		return r;
	}
	int r = add_tree(a, dir, "", exclude, stats, err);
	if (archive_write_close(a) != ARCHIVE_OK && r == 0)
		r = rk_error_set(err, RK_EIO, "tar: %s", archive_error_string(a));
	archive_write_free(a);
	return r;
}

/* A tar member name as a workspace-relative path: a leading "./" (as
 * `tar -C dir -c .` writes) is fine, ".." and absolute names are not. */
static int safe_name(const char *name, char **out, struct rk_error *err)
{
	if (name[0] == '/')
		return rk_error_set(err, RK_EINVALID, "absolute tar member %s", name);
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!strcmp(name, "."))
		name = "";
	return rk_path_normalize(name, out, err);
}

int rk_tar_extract(int fd, const char *dir, int uid, int gid, struct rk_tar_stats *stats, struct rk_error *err)
{
	int r = rk_fs_mkdirs(dir, 0755, err);
	if (r)
		return r;
	/* the secure-symlink check covers every component of the names we give
	 * it, so the prefix must hold no links of its own */
	char *real = realpath(dir, NULL);
	if (!real)
		return rk_error_errno(err, RK_EIO, errno, "cannot resolve %s", dir);
	dir = real;
	struct archive *in = archive_read_new();
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_read_support_filter_all(in);
	struct archive *out = archive_write_disk_new();
	/* names are checked and made absolute under dir by us (safe_name), so
	 * libarchive's no-absolute-paths check would refuse every entry */
	int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
		    ARCHIVE_EXTRACT_SECURE_SYMLINKS;
	if (uid >= 0)
		flags |= ARCHIVE_EXTRACT_OWNER;
	archive_write_disk_set_options(out, flags);
	if (archive_read_open_fd(in, fd, 65536) != ARCHIVE_OK) {
		r = rk_error_set(err, RK_EINVALID, "not a tar stream: %s", archive_error_string(in));
		goto done;
	}
	struct archive_entry *e;
	int rc;
	while ((rc = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		char *name = rk_xstrdup(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
		char *norm = NULL;
		if (safe_name(name, &norm, err) != 0) {
			r = rk_error_set(err, RK_EINVALID, "tar entry escapes the workspace: %s", name);
			free(name);
			goto done;
		}
		if (!norm[0]) { /* "./" itself */
			free(norm);
			free(name);
			continue;
		}
		char *full = rk_path_join(dir, norm);
		archive_entry_set_pathname(e, full);
		free(full);
		free(norm);
		if (archive_entry_hardlink(e)) {
			char *target = NULL;
			if (safe_name(archive_entry_hardlink(e), &target, err) != 0 || !target[0]) {
				r = rk_error_set(err, RK_EINVALID, "tar hard link escapes the workspace: %s", name);
				free(target);
				free(name);
				goto done;
			}
			char *tfull = rk_path_join(dir, target);
			archive_entry_set_hardlink(e, tfull);
			free(tfull);
			free(target);
		}
		if (uid >= 0) {
			archive_entry_set_uid(e, uid);
			archive_entry_set_gid(e, gid);
		}
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			r = rk_error_set(err, RK_EIO, "cannot extract %s: %s", name, archive_error_string(out));
			free(name);
			goto done;
		}
		const void *buf;
		size_t size;
		la_int64_t off;
		while ((rc = archive_read_data_block(in, &buf, &size, &off)) == ARCHIVE_OK) {
			if (archive_write_data_block(out, buf, size, off) != ARCHIVE_OK) {
				r = rk_error_set(err, RK_EIO, "cannot write %s: %s", name, archive_error_string(out));
				free(name);
				goto done;
			}
		}
		if (rc != ARCHIVE_EOF) {
			r = rk_error_set(err, RK_EINVALID, "truncated tar stream at %s: %s", name,
					 archive_error_string(in));
			free(name);
			goto done;
		}
		if (archive_write_finish_entry(out) != ARCHIVE_OK) {
			r = rk_error_set(err, RK_EIO, "cannot finish %s: %s", name, archive_error_string(out));
			free(name);
			goto done;
		}
		free(name);
		if (stats && archive_entry_filetype(e) == AE_IFREG) {
			stats->files++;
			stats->bytes += (uint64_t)archive_entry_size(e);
		}
	}
	if (rc != ARCHIVE_EOF)
		r = rk_error_set(err, RK_EINVALID, "bad tar stream: %s", archive_error_string(in));
done:
	archive_read_free(in);
	archive_write_close(out);
	archive_write_free(out);
	free(real);
	return r;
}
