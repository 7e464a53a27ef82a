/* The fake provider: a machine that is a directory. Its workspace is the
 * computer's home directory itself, its commands are real processes on this
 * host run with `bash -lc` inside that directory (no isolation: it is for
 * tests and the demo), and its screen is a framebuffer it draws itself
 * (screen.c). Lifecycle state lives in DATA_DIR/fake/<ref>/state so every
 * rakazo process sees the same machine.
 *
 * Faults for tests: RAKAZO_FAKE_FAULTS="provision=lost_reply,stop=fail,..."
 * (fail, unavailable, lost_reply: the action happens but the reply is lost)
 * and RAKAZO_FAKE_DELAY_MS delays every lifecycle call. */

#include "providers/fake/machine.h"
#include "providers/fake/screen.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/tar.h"
#include "engine/util/time.h"

#define WORKSPACE_ABS "/home/user/rakazo-home"


/* --- machine state ---------------------------------------------------------- */

static int read_state(const struct rk_machine *m, char *out, size_t size)
{
	char *dir = rk_fake_machine_dir(m);
	char *path = rk_path_join(dir, "state");
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_fs_read_all(path, 64, &b, NULL);
	if (r == 0)
		snprintf(out, size, "%.*s", (int)strcspn(b.data, "\n"), b.data);
	rk_buf_release(&b);
	free(path);
	free(dir);
	return r;
}

static int write_state(const struct rk_machine *m, const char *ref, const char *state, struct rk_error *err)
{
	char *dir = rk_xasprintf("%s/fake/%s", m->data_dir, ref);
	int r = rk_fs_mkdirs(dir, 0700, err);
	if (r == 0) {
		char *path = rk_path_join(dir, "state");
		char *text = rk_xasprintf("%s\n", state);
		r = rk_fs_write_atomic(path, text, strlen(text), 0600, err);
		free(text);
		free(path);
	}
	free(dir);
	return r;
}

static int require_running(const struct rk_machine *m, struct rk_error *err)
{
	char st[32];
	if (read_state(m, st, sizeof(st)) != 0)
		return rk_error_set(err, RK_EUNAVAILABLE, "fake computer %s has no machine (provision it first)",
				    m->computer_id);
	if (strcmp(st, "running") != 0)
		return rk_error_set(err, RK_EUNAVAILABLE, "fake computer %s is %s, not running", m->computer_id, st);
	return 0;
}

static int fake_check(struct rk_error *err)
{
	return rk_fake_fault("check", err);
}

static int fake_provision(const struct rk_machine *m, struct rk_provision_result *out, struct rk_error *err)
{
	int r = rk_fake_fault("provision", err);
	if (r)
		return r;
	memset(out, 0, sizeof(*out));
	char st[32];
	char *known = rk_fake_machine_ref(m);
	if (known && read_state(m, st, sizeof(st)) == 0 && strcmp(st, "gone") != 0) {
		if ((r = write_state(m, known, "running", err))) {
			free(known);
			return r;
		}
		out->ref = known;
	} else {
		free(known);
		out->ref = rk_id_new("fake");
		out->fresh = 1;
		out->replaced = m->ref != NULL;
		if ((r = write_state(m, out->ref, "running", err)) || (r = rk_fake_record_machine(m, out->ref, err))) {
			free(out->ref);
			out->ref = NULL;
			return r;
		}
	}
	if ((r = rk_fs_mkdirs(m->home_dir, 0755, err)))
		return r;
	return rk_fake_fault_after("provision", err);
}

static int fake_status(const struct rk_machine *m, enum rk_machine_state *out, struct rk_error *err)
{
	char st[32];
	if (read_state(m, st, sizeof(st)) != 0 || strcmp(st, "gone") == 0)
		*out = RK_MACHINE_GONE;
	else if (strcmp(st, "running") == 0)
		*out = RK_MACHINE_RUNNING;
	else if (strcmp(st, "paused") == 0)
		*out = RK_MACHINE_PAUSED;
	else
		*out = RK_MACHINE_STOPPED;
	return 0;
}

static int set_existing_state(const struct rk_machine *m, const char *op, const char *state, int tolerate_gone,
			      struct rk_error *err)
{
	int r = rk_fake_fault(op, err);
	if (r)
		return r;
	char st[32];
	char *ref = rk_fake_machine_ref(m);
	if (!ref || read_state(m, st, sizeof(st)) != 0 || strcmp(st, "gone") == 0) {
		free(ref);
		if (tolerate_gone)
			return rk_fake_fault_after(op, err);
		return rk_error_set(err, RK_ENOTFOUND, "fake machine %s is gone", m->ref ? m->ref : "(none)");
	}
	r = write_state(m, ref, state, err);
	free(ref);
	if (r)
		return r;
	return rk_fake_fault_after(op, err);
}

static int fake_pause(const struct rk_machine *m, struct rk_error *err)
{
	return set_existing_state(m, "pause", "paused", 0, err);
}

static int fake_resume(const struct rk_machine *m, struct rk_error *err)
{
	return set_existing_state(m, "resume", "running", 0, err);
}

static int fake_stop(const struct rk_machine *m, struct rk_error *err)
{
	return set_existing_state(m, "stop", "stopped", 1, err);
}

static int fake_destroy(const struct rk_machine *m, struct rk_error *err)
{
	return set_existing_state(m, "destroy", "gone", 1, err);
}

/* --- processes ------------------------------------------------------------------- */

struct fake_proc {
	struct rk_proc base;
	pid_t pid;
	int out_fd; /* output (merged), or the pty master */
	int in_fd;  /* stdin, or -1 when closed (== out_fd with a pty) */
	int tty;
	int reaped;
	int status;
};

static int proc_poll_fd(struct rk_proc *p)
{
	return ((struct fake_proc *)p)->out_fd;
}

static int proc_read(struct rk_proc *p, struct rk_buf *out, int *eof, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	char buf[65536];
	*eof = 0;
	for (;;) {
		ssize_t n = read(fp->out_fd, buf, sizeof(buf));
		if (n > 0) {
			rk_buf_add(out, buf, (size_t)n);
			continue;
		}
		if (n == 0 || (n < 0 && errno == EIO)) { /* EIO: the pty's last writer closed */
			*eof = 1;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return rk_error_errno(err, RK_EIO, errno, "reading command output");
	}
}

static int proc_write(struct rk_proc *p, const void *data, size_t len, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	if (fp->in_fd < 0)
		return rk_error_set(err, RK_EINVALID, "stdin is closed");
	const char *s = data;
	int64_t deadline = rk_monotonic_ms() + 5000;
	while (len > 0) {
		ssize_t n = write(fp->in_fd, s, len);
		if (n > 0) {
			s += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && rk_monotonic_ms() < deadline) {
			struct pollfd pfd = {.fd = fp->in_fd, .events = POLLOUT};
			poll(&pfd, 1, 50);
			continue;
		}
		if (n < 0 && errno == EPIPE)
			return rk_error_set(err, RK_EINVALID, "the command no longer reads its input");
		return rk_error_errno(err, RK_EIO, errno, "writing to the command's input");
	}
	return 0;
}

static int proc_close_stdin(struct rk_proc *p, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	if (fp->tty) /* end of input on a terminal is the EOF character */
		return proc_write(p, "\x04", 1, err);
	if (fp->in_fd >= 0) {
		close(fp->in_fd);
		fp->in_fd = -1;
	}
	return 0;
}

static int proc_signal(struct rk_proc *p, int signo, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	if (fp->reaped)
		return 0;
	if (kill(-fp->pid, signo) != 0 && kill(fp->pid, signo) != 0 && errno != ESRCH)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot signal the command");
	return 0;
}

static int proc_resize(struct rk_proc *p, int rows, int cols, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	if (!fp->tty)
		return rk_error_set(err, RK_EINVALID, "the session has no terminal to resize");
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	if (ioctl(fp->out_fd, TIOCSWINSZ, &ws) != 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot resize the terminal");
	return 0;
}

static int proc_wait(struct rk_proc *p, struct rk_exit_status *st, struct rk_error *err)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	memset(st, 0, sizeof(*st));
	if (!fp->reaped) {
		/* output ended; the process exits at once or soon after */
		int64_t deadline = rk_monotonic_ms() + 10000;
		for (;;) {
			pid_t w = waitpid(fp->pid, &fp->status, WNOHANG);
			if (w == fp->pid)
				break;
			if (w < 0 && errno != EINTR)
				return rk_error_errno(err, RK_EFAILED, errno, "waiting for the command");
			if (rk_monotonic_ms() > deadline) {
				/* output closed but still running (a daemonized child): not ended yet */
				return 0;
			}
			rk_sleep_ms(5);
		}
		fp->reaped = 1;
	}
	st->exited = 1;
	if (WIFSIGNALED(fp->status))
		st->signo = WTERMSIG(fp->status);
	else
		st->code = WEXITSTATUS(fp->status);
	return 0;
}

static void proc_free(struct rk_proc *p)
{
	struct fake_proc *fp = (struct fake_proc *)p;
	if (!fp)
		return;
	if (!fp->reaped) {
		kill(-fp->pid, SIGKILL);
		waitpid(fp->pid, NULL, 0);
	}
	if (fp->in_fd >= 0 && fp->in_fd != fp->out_fd)
		close(fp->in_fd);
	close(fp->out_fd);
	free(fp);
}

static const struct rk_proc_ops fake_proc_ops = {
	.poll_fd = proc_poll_fd,
	.read = proc_read,
	.write = proc_write,
	.close_stdin = proc_close_stdin,
	.signal = proc_signal,
	.resize = proc_resize,
	.wait = proc_wait,
	.free = proc_free,
};

static char *resolve_cwd(const struct rk_machine *m, const char *cwd)
{
	if (!cwd || !cwd[0])
		return rk_xstrdup(m->home_dir);
	if (cwd[0] == '/') {
		size_t n = strlen(WORKSPACE_ABS);
		if (strncmp(cwd, WORKSPACE_ABS, n) == 0 && (cwd[n] == '\0' || cwd[n] == '/'))
			return rk_xasprintf("%s%s", m->home_dir, cwd + n);
		return NULL;
	}
	return rk_path_join(m->home_dir, cwd);
}

/* In the forked child: say why on the command's own output, then end. */
static void child_fail(const char *what, int e)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "rakazo: %s: %s\n", what, strerror(e));
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	_exit(127);
}

static void child_exec(const struct rk_machine *m, const struct rk_exec_request *req, const char *cwd)
{
	if (chdir(cwd) != 0) {
		child_fail("cannot enter the working directory", errno);
	}
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setenv("HOME", m->home_dir, 1);
	setenv("RAKAZO_COMPUTER", m->computer_id, 1);
	unsetenv("RAKAZO_MASTER_KEY"); /* the key to every secret (engine/access/secret.h) stays out of the machine */
	if (!req->tty)
		setenv("TERM", "dumb", 1);
	else
		setenv("TERM", "xterm-256color", 1);
	for (size_t i = 0; req->env && req->env[i]; i++)
		putenv((char *)req->env[i]);
	execl("/bin/bash", "bash", "-lc", req->command, (char *)NULL);
	child_fail("cannot run bash", errno);
}

static int fake_exec_spawn(const struct rk_machine *m, const struct rk_exec_request *req, struct rk_proc **out,
			   struct rk_error *err)
{
	int r = require_running(m, err);
	if (r)
		return r;
	char *cwd = resolve_cwd(m, req->cwd);
	if (!cwd)
		return rk_error_set(err, RK_EINVALID, "cwd %s is outside the fake computer's workspace", req->cwd);
	struct stat st;
	if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		r = rk_error_set(err, RK_ENOTFOUND, "cwd %s does not exist in the workspace", req->cwd);
		free(cwd);
		return r;
	}
	struct fake_proc *fp = rk_xcalloc(1, sizeof(*fp));
	fp->base.ops = &fake_proc_ops;
	fp->tty = req->tty;
	if (req->tty) {
		struct winsize ws = {.ws_row = (unsigned short)(req->rows > 0 ? req->rows : 24),
				     .ws_col = (unsigned short)(req->cols > 0 ? req->cols : 80)};
		int master;
		pid_t pid = forkpty(&master, NULL, NULL, &ws);
		if (pid < 0) {
			r = rk_error_errno(err, RK_EFAILED, errno, "cannot start a terminal");
			free(fp);
			free(cwd);
			return r;
		}
		if (pid == 0)
			child_exec(m, req, cwd);
		fp->pid = pid;
		fp->out_fd = master;
		fp->in_fd = master;
	} else {
		int inp[2], outp[2];
		if (pipe2(inp, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0) {
			r = rk_error_errno(err, RK_EFAILED, errno, "cannot make pipes");
			free(fp);
			free(cwd);
			return r;
		}
		pid_t pid = fork();
		if (pid < 0) {
			r = rk_error_errno(err, RK_EFAILED, errno, "cannot fork");
			close(inp[0]), close(inp[1]), close(outp[0]), close(outp[1]);
			free(fp);
			free(cwd);
			return r;
		}
		if (pid == 0) {
			setsid();
			dup2(inp[0], 0);
			dup2(outp[1], 1);
			dup2(outp[1], 2);
			child_exec(m, req, cwd);
		}
		close(inp[0]);
		close(outp[1]);
		fp->pid = pid;
		fp->out_fd = outp[0];
		fp->in_fd = inp[1];
	}
	fcntl(fp->out_fd, F_SETFL, fcntl(fp->out_fd, F_GETFL) | O_NONBLOCK);
	if (fp->in_fd != fp->out_fd)
		fcntl(fp->in_fd, F_SETFL, fcntl(fp->in_fd, F_GETFL) | O_NONBLOCK);
	free(cwd);
	*out = &fp->base;
	return 0;
}

/* --- files ------------------------------------------------------------------------ */

/* The fake machine has only its workspace: absolute paths must lie in it. */
static int workspace_rel(const char *path, const char **rel, struct rk_error *err)
{
	if (path[0] != '/') {
		*rel = path;
		return 0;
	}
	size_t n = strlen(WORKSPACE_ABS);
	if (strncmp(path, WORKSPACE_ABS, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
		*rel = path[n] ? path + n + 1 : "";
		return 0;
	}
	return rk_error_set(err, RK_EINVALID, "%s is outside the fake computer's workspace (%s)", path, WORKSPACE_ABS);
}

static int cmp_entries(const void *a, const void *b)
{
	return strcmp(((const struct rk_file_entry *)a)->name, ((const struct rk_file_entry *)b)->name);
}

static int fake_file_list(const struct rk_machine *m, const char *path, struct rk_file_entry **out, size_t *n,
			  struct rk_error *err)
{
	const char *rel;
	int r = workspace_rel(path, &rel, err);
	if (r || (r = require_running(m, err)))
		return r;
	int fd = rk_fs_open_beneath(m->home_dir, rel, O_RDONLY | O_DIRECTORY, 0, 0, err);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return rk_error_errno(err, RK_EINVALID, errno, "%s is not a directory", path[0] ? path : ".");
	}
	size_t cap = 16, count = 0;
	struct rk_file_entry *arr = rk_xcalloc(cap, sizeof(*arr));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (count == cap) {
			cap *= 2;
			arr = rk_xrealloc(arr, cap * sizeof(*arr));
		}
		struct rk_file_entry *e = &arr[count++];
		memset(e, 0, sizeof(*e));
		e->name = rk_xstrdup(de->d_name);
		e->type = S_ISREG(st.st_mode)	? RK_FILE_REGULAR
			  : S_ISDIR(st.st_mode) ? RK_FILE_DIR
			  : S_ISLNK(st.st_mode) ? RK_FILE_LINK
						: RK_FILE_OTHER;
		e->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
		e->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
		e->executable = S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR);
	}
	closedir(d);
	qsort(arr, count, sizeof(*arr), cmp_entries);
	*out = arr;
	*n = count;
	return 0;
}

static int fake_file_read(const struct rk_machine *m, const char *path, size_t max_bytes, struct rk_buf *out,
			  struct rk_error *err)
{
	const char *rel;
	int r = workspace_rel(path, &rel, err);
	if (r || (r = require_running(m, err)))
		return r;
	/* a FIFO or a device is refused, never opened to block on */
	struct stat st;
	int fd = rk_fs_open_regular_beneath(m->home_dir, rel, &st, err);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max_bytes) {
		close(fd);
		return rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
	}
	char buf[65536];
	ssize_t n;
	size_t start = out->len;
	while ((n = rk_fs_read_fd(fd, buf, sizeof(buf))) > 0) {
		if (out->len - start + (size_t)n > max_bytes) {
			out->len = start;
			close(fd);
			return rk_error_set(err, RK_ETOOLARGE, "computer file exceeds %zu bytes", max_bytes);
		}
		rk_buf_add(out, buf, (size_t)n);
	}
	close(fd);
	if (n < 0)
		return rk_error_errno(err, RK_EIO, errno, "cannot read %s", path);
	return 0;
}

static int fake_file_write(const struct rk_machine *m, const char *path, const void *data, size_t len, int executable,
			   struct rk_error *err)
{
	const char *rel;
	int r = workspace_rel(path, &rel, err);
	if (r || (r = require_running(m, err)))
		return r;
	if (!rel[0])
		return rk_error_set(err, RK_EINVALID, "cannot write the workspace root");
	const char *leaf;
	int dfd = rk_fs_parent_beneath(m->home_dir, rel, 1, &leaf, err);
	if (dfd < 0)
		return dfd;
	char *tmp = rk_xasprintf(".%s.rakazo-tmp.%d", leaf, (int)getpid());
	mode_t mode = executable ? 0700 : 0600;
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot write %s", path);
		goto out;
	}
	if (rk_fs_write_fd(fd, data, len) != 0 || fchmod(fd, mode) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot write %s", path);
		close(fd);
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	close(fd);
	/* rename replaces a final symlink itself instead of writing through it */
	struct stat st;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		unlinkat(dfd, tmp, 0);
		r = rk_error_set(err, RK_EINVALID, "%s is a directory", path);
		goto out;
	}
	if (renameat(dfd, tmp, dfd, leaf) != 0) {
		r = rk_error_errno(err, RK_EIO, errno, "cannot write %s", path);
		unlinkat(dfd, tmp, 0);
	}
out:
	free(tmp);
	close(dfd);
	return r;
}

static int fake_file_remove(const struct rk_machine *m, const char *path, struct rk_error *err)
{
	const char *rel;
	int r = workspace_rel(path, &rel, err);
	if (r || (r = require_running(m, err)))
		return r;
	if (!rel[0])
		return rk_error_set(err, RK_EINVALID, "cannot remove the workspace root");
	const char *leaf;
	int dfd = rk_fs_parent_beneath(m->home_dir, rel, 0, &leaf, err);
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, leaf, 0) != 0) {
		if (errno == EISDIR && unlinkat(dfd, leaf, AT_REMOVEDIR) == 0) {
			close(dfd);
			return 0;
		}
		int e = errno;
		close(dfd);
		if (e == ENOENT)
			return rk_error_set(err, RK_ENOTFOUND, "no such file or directory: %s", path);
		if (e == ENOTEMPTY)
			return rk_error_set(err, RK_EINVALID, "directory %s is not empty", path);
		return rk_error_errno(err, RK_EIO, e, "cannot remove %s", path);
	}
	close(dfd);
	return 0;
}

static int fake_export(const struct rk_machine *m, int fd, struct rk_error *err)
{
	int r = require_running(m, err);
	if (r)
		return r;
	struct rk_tar_opts o = {.uid = -1, .gid = -1, .skip = rk_tar_skip_singleton};
	return rk_tar_write_dir(m->home_dir, fd, &o, NULL, err);
}

static int fake_import(const struct rk_machine *m, int fd, struct rk_error *err)
{
	int r = require_running(m, err);
	if (r)
		return r;
	/* staged and checked whole before anything lands in the workspace */
	return rk_tar_extract(fd, m->home_dir, NULL, NULL, err);
}

const struct rk_provider_ops rk_provider_fake = {
	.name = "fake",
	.caps = RK_CAP_DESKTOP | RK_CAP_MULTI_SCREEN | RK_CAP_TTY | RK_CAP_SNAPSHOTS | RK_CAP_PERSISTENT_HOME |
		RK_CAP_TAKEOVER | RK_CAP_PAUSE | RK_CAP_HOST_HOME | RK_CAP_HOST_EXEC,
	.summary = "a test double: a directory on this host, its commands run here as this user",
	.check = fake_check,
	.provision = fake_provision,
	.status = fake_status,
	.pause = fake_pause,
	.resume = fake_resume,
	.stop = fake_stop,
	.destroy = fake_destroy,
	.exec_spawn = fake_exec_spawn,
	.file_list = fake_file_list,
	.file_read = fake_file_read,
	.file_write = fake_file_write,
	.file_remove = fake_file_remove,
	.workspace_export = fake_export,
	.workspace_import = fake_import,
	.display_start = rk_fake_display_start,
	.display_stop = rk_fake_display_stop,
	.capture = rk_fake_capture,
	.act = rk_fake_act,
};
