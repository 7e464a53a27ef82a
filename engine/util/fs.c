#include "engine/util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int rk_fs_mkdirs(const char *path, mode_t mode, struct rk_error *err)
{
	char *p = rk_xstrdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) != 0 && errno != EEXIST) {
				rc = rk_error_errno(err, RK_EIO, errno, "cannot create directory %s", p);
				break;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	if (rc == 0) {
		struct stat st;
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			rc = rk_error_set(err, RK_EIO, "%s is not a directory", path);
	}
	free(p);
	return rc;
}

int rk_fs_write_fd(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t rk_fs_read_fd(int fd, void *data, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		return n;
	}
}

int rk_fs_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = fsync(fd);
	close(fd);
	return r;
}

int rk_fs_output_open(struct rk_fs_output *o, const char *path, mode_t mode, struct rk_error *err)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = rk_xstrdup(path);
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* /dev/null, a FIFO, a terminal: a rename would replace the node itself */
		o->fd = open(path, O_WRONLY | O_CLOEXEC);
	} else {
		o->tmp = rk_xasprintf("%s.tmp.%ld", path, (long)getpid());
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	}
	if (o->fd < 0) {
		int r = rk_error_errno(err, RK_EIO, errno, "cannot write %s", path);
		rk_fs_output_abort(o);
		return r;
	}
	return 0;
}

int rk_fs_output_commit(struct rk_fs_output *o, struct rk_error *err)
{
	int rc = 0;
	if (o->tmp && fsync(o->fd) != 0)
		rc = rk_error_errno(err, RK_EIO, errno, "cannot write %s", o->path);
	if (close(o->fd) != 0 && rc == 0)
		rc = rk_error_errno(err, RK_EIO, errno, "cannot write %s", o->path);
	o->fd = -1;
	if (rc == 0 && o->tmp) {
		if (rename(o->tmp, o->path) != 0) {
			rc = rk_error_errno(err, RK_EIO, errno, "cannot rename %s", o->tmp);
		} else {
			free(o->tmp);
			o->tmp = NULL;
			char *dir = rk_xstrdup(o->path);
			char *slash = strrchr(dir, '/');
			if (slash) {
				*slash = '\0';
				rk_fs_fsync_dir(*dir ? dir : "/");
			}
			free(dir);
		}
	}
	rk_fs_output_abort(o);
	return rc;
}

void rk_fs_output_abort(struct rk_fs_output *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int rk_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode, struct rk_error *err)
{
	struct rk_fs_output o;
	int r = rk_fs_output_open(&o, path, mode, err);
	if (r)
		return r;
	if (rk_fs_write_fd(o.fd, data, len) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot write %s", path);
		rk_fs_output_abort(&o);
		return r;
	}
	return rk_fs_output_commit(&o, err);
}

int rk_fs_read_all(const char *path, size_t max_bytes, struct rk_buf *out, struct rk_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno, "cannot open %s", path);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return rk_error_errno(err, RK_EIO, errno, "cannot stat %s", path);
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return rk_error_set(err, RK_EINVALID, "%s is a directory", path);
	}
	if ((size_t)st.st_size > max_bytes) {
		close(fd);
		return rk_error_set(err, RK_ETOOLARGE, "file exceeds %zu bytes", max_bytes);
	}
	char chunk[65536];
	for (;;) {
		ssize_t n = rk_fs_read_fd(fd, chunk, sizeof(chunk));
		if (n < 0) {
			close(fd);
			return rk_error_errno(err, RK_EIO, errno, "cannot read %s", path);
		}
		if (n == 0)
			break;
		if (out->len + (size_t)n > max_bytes) {
			close(fd);
			return rk_error_set(err, RK_ETOOLARGE, "file exceeds %zu bytes", max_bytes);
		}
		rk_buf_add(out, chunk, (size_t)n);
	}
	close(fd);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int rk_fs_remove_tree(const char *path, struct rk_error *err)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : rk_error_errno(err, RK_EIO, errno, "cannot remove %s", path);
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) != 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot remove %s", path);
	return 0;
}

int rk_fs_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int rk_path_normalize(const char *path, char **out, struct rk_error *err)
{
	struct rk_buf b;
	rk_buf_init(&b);
	const char *p = path ? path : "";
	while (*p) {
		while (*p == '/' || *p == '\\')
			p++;
		if (!*p)
			break;
		const char *s = p;
		while (*p && *p != '/' && *p != '\\')
			p++;
		size_t n = (size_t)(p - s);
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
			rk_buf_release(&b);
			return rk_error_set(err, RK_EINVALID, "path escapes the computer workspace: %s", path);
		}
		if (b.len)
			rk_buf_addc(&b, '/');
		rk_buf_add(&b, s, n);
	}
	if (memchr(b.data, '\0', b.len)) {
		rk_buf_release(&b);
		return rk_error_set(err, RK_EINVALID, "path contains a NUL byte");
	}
	*out = rk_buf_detach(&b, NULL);
	return 0;
}

char *rk_path_join(const char *dir, const char *name)
{
	if (!name || !*name)
		return rk_xstrdup(dir);
	size_t n = strlen(dir);
	return rk_xasprintf("%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

int rk_fs_parent_beneath(const char *root, const char *rel, int create_dirs, const char **leaf, struct rk_error *err)
{
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno,
				      "cannot open the computer's workspace");
	const char *p = rel;
	for (;;) {
		const char *slash = strchr(p, '/');
		if (!slash)
			break;
		char *seg = rk_xstrndup(p, (size_t)(slash - p));
		if (create_dirs && mkdirat(dfd, seg, 0755) != 0 && errno != EEXIST) {
			int r = rk_error_errno(err, RK_EIO, errno, "cannot create directory %.*s", (int)(slash - rel),
					       rel);
			free(seg);
			close(dfd);
			return r;
		}
		int next = openat(dfd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		free(seg);
		close(dfd);
		if (next < 0) {
			if (e == ELOOP || e == ENOTDIR)
				return rk_error_set(err, RK_EINVALID,
						    "path escapes the computer workspace through a link or file: %s",
						    rel);
			return rk_error_errno(err, e == ENOENT ? RK_ENOTFOUND : RK_EIO, e,
					      "no such file or directory: %s", rel);
		}
		dfd = next;
		p = slash + 1;
	}
	*leaf = p;
	return dfd;
}

int rk_fs_open_beneath(const char *root, const char *rel, int flags, mode_t mode, int create_dirs, struct rk_error *err)
{
	if (!rel[0])
		return open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *leaf;
	int dfd = rk_fs_parent_beneath(root, rel, create_dirs, &leaf, err);
	if (dfd < 0)
		return dfd;
	int fd = openat(dfd, leaf, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	int e = errno;
	close(dfd);
	if (fd < 0) {
		if (e == ELOOP)
			return rk_error_set(err, RK_EINVALID, "path is a symlink; refusing to follow it: %s", rel);
		if (e == ENOENT)
			return rk_error_set(err, RK_ENOTFOUND, "no such file or directory: %s", rel);
		return rk_error_errno(err, e == EISDIR ? RK_EINVALID : RK_EIO, e, "cannot open %s", rel);
	}
	return fd;
}

int rk_fs_open_socket(const char *path, const char *what, struct rk_error *err)
{
	char *d = rk_xstrdup(path), *b = rk_xstrdup(path);
	int rc = 0;
	int dfd = open(dirname(d), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = rk_error_set(err, RK_EUNAVAILABLE, "no %s at %s (%s; is the display started?)", what, path,
				  errno == ENOTDIR || errno == ELOOP ? "its directory is not a plain directory"
								     : strerror(errno));
		goto out;
	}
	int fd = openat(dfd, basename(b), O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		int link = fd >= 0 && S_ISLNK(st.st_mode);
		rc = rk_error_set(err, RK_EUNAVAILABLE, "no %s at %s (%s)", what, path,
				  link	   ? "it is a symbolic link, which is never followed"
				  : fd < 0 ? "is the display started?"
					   : "it is not a socket");
		if (fd >= 0)
			close(fd);
	} else {
		rc = fd;
	}
	close(dfd);
out:
	free(d);
	free(b);
	return rc;
}

int rk_fs_connect_socket(const char *path, const char *what, struct rk_error *err)
{
	int pfd = rk_fs_open_socket(path, what, err);
	if (pfd < 0)
		return pfd;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = s;
	if (s < 0) {
		rc = rk_error_set(err, RK_EFAILED, "cannot make a socket: %s", strerror(errno));
	} else if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = rk_error_set(err, RK_EUNAVAILABLE, "cannot connect to the %s at %s: %s", what, path,
				  strerror(errno));
		close(s);
	}
	close(pfd);
	return rc;
}

const char *rk_fs_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "a special file";
	}
}

static int not_regular(struct rk_error *err, const char *shown, mode_t mode)
{
	if (S_ISLNK(mode))
		return rk_error_set(err, RK_EINVALID,
				    "%s is not a regular file: it is a symbolic link, which is never followed", shown);
	return rk_error_set(err, RK_EINVALID, "%s is not a regular file: it is %s", shown, rk_fs_kind(mode));
}

int rk_fs_reopen_regular(int pfd, const char *shown, struct stat *st, struct rk_error *err)
{
	struct stat sb;
	if (fstat(pfd, &sb) != 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot stat %s", shown);
	/* a device is never opened at all (an open can have effects), a FIFO
	 * never waited on */
	if (!S_ISREG(sb.st_mode))
		return not_regular(err, shown, sb.st_mode);
	/* the node checked, through the fd that holds it: nothing swapped in
	 * since can be what is opened; O_NONBLOCK all the same */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	int fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot open %s", shown);
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return not_regular(err, shown, sb.st_mode);
	}
	if (st)
		*st = sb;
	return fd;
}

int rk_fs_open_regular(int dfd, const char *name, const char *shown, struct stat *st, struct rk_error *err)
{
	int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return rk_error_errno(err, errno == ENOENT ? RK_ENOTFOUND : RK_EIO, errno, "cannot open %s", shown);
	int fd = rk_fs_reopen_regular(pfd, shown, st, err);
	close(pfd);
	return fd;
}

int rk_fs_open_regular_beneath(const char *root, const char *rel, struct stat *st, struct rk_error *err)
{
	if (!rel[0])
		return rk_error_set(err, RK_EINVALID, "the workspace root is a directory, not a file");
	const char *leaf;
	int dfd = rk_fs_parent_beneath(root, rel, 0, &leaf, err);
	if (dfd < 0)
		return dfd;
	int fd = rk_fs_open_regular(dfd, leaf, rel, st, err);
	close(dfd);
	return fd;
}
