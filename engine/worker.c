#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "execution.h"
#include "idle.h"
#include "run.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/time.h"

static char *lock_path(struct rk_engine *eng)
{
	return rk_xasprintf("%s/worker.lock", eng->data_dir);
}

/* Takes the worker lock; the fd holds it until closed (or the process dies,
 * which is how a crashed worker's commands become recoverable). */
static int take_lock(struct rk_engine *eng, struct rk_error *err)
{
	char *path = lock_path(eng);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int r = rk_error_errno(err, RK_EIO, errno, "cannot open %s", path);
		free(path);
		return r;
	}
	free(path);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return rk_error_set(err, RK_ECONFLICT, "another worker is running for this data directory");
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, pid, (size_t)n, 0);
	return fd;
}

int rk_worker_running(struct rk_engine *eng)
{
	char *path = lock_path(eng);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return 0;
	int busy = flock(fd, LOCK_EX | LOCK_NB) != 0;
	close(fd);
	return busy;
}

/* One pass of rk_run_reap; the number of runs still live (queued, running,
 * waiting), or 0 on a database error. */
static int reap_runs(struct rk_engine *eng)
{
	struct rk_error e;
	int marked = 0;
	if (rk_run_reap(eng, &marked, &e) != 0) {
		rk_log(RK_LOG_WARN, "worker: run reap: %s", e.message);
		return 0;
	}
	if (marked)
		rk_log(RK_LOG_INFO, "worker: %d run(s) marked interrupted", marked);
	struct rk_run_row *rows;
	size_t n;
	if (rk_db_run_list_live(eng->db, &rows, &n, &e) != 0)
		return 0;
	rk_run_rows_free(rows, n);
	return (int)n;
}

#define EXE_CHECK_MS 1000

/* Whether the binary at eng->self_exe is no longer the one running: a
 * rebuild or an upgrade replaced it, and a worker left on the old code
 * would keep running commands with it (an old image tag, say). */
static int exe_replaced(const struct rk_engine *eng)
{
	struct stat now, running;
	if (!eng->self_exe || stat(eng->self_exe, &now) != 0 || stat("/proc/self/exe", &running) != 0)
		return 0;
	return now.st_ino != running.st_ino || now.st_dev != running.st_dev;
}

int rk_worker_run(struct rk_engine *eng, const struct rk_worker_options *opt, struct rk_error *err)
{
	int lock = take_lock(eng, err);
	if (lock < 0)
		return lock;
	rk_log(RK_LOG_INFO, "worker started");
	int r = rk_execution_recover(eng, err);
	int64_t idle_since = rk_monotonic_ms(), next_scan = 0, next_exe_check = 0;
	int schedules = 0, live_runs = 0;
	while (r == 0 && !(opt->stop && *opt->stop)) {
		/* idle suspension and silent reservations (engine/idle.h); runs
		 * whose process died or stopped heart-beating (engine/run.h) */
		if (rk_monotonic_ms() >= next_scan) {
			struct rk_error se;
			if (rk_idle_scan(eng, &schedules, &se) != 0)
				rk_log(RK_LOG_WARN, "worker: idle scan: %s", se.message);
			live_runs = reap_runs(eng);
			next_scan = rk_monotonic_ms() + rk_idle_scan_interval_ms();
		}
		struct rk_execution e = {0};
		struct rk_error e2;
		int got = 0;
		if ((r = rk_db_begin(eng->db, err)))
			break;
		int c = rk_db_execution_claim(eng->db, getpid(), &e, &e2);
		if (c == 0) {
			got = 1;
			rk_db_event_append(eng->db, e.id, "started", NULL, NULL);
			r = rk_db_commit(eng->db, err);
		} else {
			rk_db_rollback(eng->db);
			if (e2.code != RK_ENOTFOUND)
				r = rk_error_set(err, e2.code, "%s", e2.message);
		}
		if (r) {
			rk_execution_release(&e);
			break;
		}
		if (got) {
			rk_log(RK_LOG_INFO, "worker: %s %s on %s", e.id, e.op, e.computer_id);
			if (rk_execution_run(eng, &e, &e2) != 0)
				rk_log(RK_LOG_ERROR, "worker: %s: %s", e.id, e2.message);
			rk_execution_release(&e);
			idle_since = rk_monotonic_ms();
			continue;
		}
		if (opt->once)
			break;
		if (rk_monotonic_ms() >= next_exe_check && exe_replaced(eng)) {
			/* between commands: the new binary takes over, same options */
			rk_log(RK_LOG_INFO, "worker: %s was replaced; restarting on it", eng->self_exe);
			char secs[24];
			snprintf(secs, sizeof(secs), "%lld", (long long)(opt->idle_exit_ms / 1000));
			close(lock);
			execl(eng->self_exe, "rakazo", "worker", "--idle-exit", secs, (char *)NULL);
			rk_log(RK_LOG_ERROR, "worker: cannot start %s: %s", eng->self_exe, strerror(errno));
			return rk_error_set(err, RK_EFAILED, "cannot restart on the replaced binary %s", eng->self_exe);
		}
		if (rk_monotonic_ms() >= next_exe_check)
			next_exe_check = rk_monotonic_ms() + EXE_CHECK_MS;
		/* a saved idle schedule keeps the worker: it is the one that pauses the
		 * computer; so does a live run: it is the one that notices its end */
		if (opt->idle_exit_ms && !schedules && !live_runs && rk_monotonic_ms() - idle_since > opt->idle_exit_ms) {
			/* a command submitted while we decided to leave would wait for
			 * nobody: drop the lock, then look once more */
			close(lock);
			lock = -1;
			if (rk_db_execution_count_pending(eng->db, NULL) <= 0)
				break;
			if ((lock = take_lock(eng, NULL)) < 0)
				break; /* another worker has it */
			idle_since = rk_monotonic_ms();
			continue;
		}
		rk_sleep_ms(20);
	}
	rk_log(RK_LOG_INFO, "worker stopped");
	if (lock >= 0)
		close(lock);
	return r;
}

int rk_worker_ensure(struct rk_engine *eng, struct rk_error *err)
{
	if (rk_worker_running(eng))
		return 0;
	const char *no = getenv("RAKAZO_NO_WORKER");
	if (no && *no && strcmp(no, "0"))
		return 0; /* tests that want commands to stay pending */
	pid_t pid = fork();
	if (pid < 0)
		return rk_error_errno(err, RK_EFAILED, errno, "cannot start the worker");
	if (pid == 0) {
		/* double fork: the worker is nobody's child and outlives the CLI */
		setsid();
		pid_t p2 = fork();
		if (p2 != 0)
			_exit(p2 < 0 ? 1 : 0);
		int dn = open("/dev/null", O_RDWR);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 1);
			dup2(dn, 2);
			if (dn > 2)
				close(dn);
		}
		close_range(3, ~0U, 0); /* an inherited pipe would keep the caller waiting */
		signal(SIGHUP, SIG_IGN);
		setenv("RAKAZO_DATA_DIR", eng->data_dir, 1);
		execl(eng->self_exe, "rakazo", "worker", "--idle-exit", "30", (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* wait until the new worker holds the lock, so callers see it */
	for (int i = 0; i < 200 && !rk_worker_running(eng); i++)
		rk_sleep_ms(5);
	return 0;
}
