#include "engine/machine/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/machine/execution.h"
#include "engine/util/host.h"
#include "engine/machine/idle.h"
#include "engine/machine/hook.h"
#include "engine/state/db_runs.h"
#include "engine/state/db_worker.h"
#include "engine/util/buf.h"
#include "engine/util/id.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

#define HEARTBEAT_MS 1000
#define WORKER_DEAD_MS_DEFAULT 15000

/* --- the workers table: who runs commands, from where, last heard when ------- */

/* How long a worker may go unheard before its commands are taken back:
 * $RAKAZO_WORKER_DEAD_MS (tests shorten it), else 15 s. */
static int64_t worker_dead_ms(void)
{
	const char *v = getenv("RAKAZO_WORKER_DEAD_MS");
	long long ms = v && *v ? atoll(v) : 0;
	return ms > 0 ? ms : WORKER_DEAD_MS_DEFAULT;
}

static int worker_register(struct rk_db *db, const char *id, struct rk_error *err)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	return rk_db_worker_insert(db, id, host, rk_host_key(), getpid(), rk_now_ms(), err);
}

/* 1 when the row was there to touch, 0 when it is gone, < 0 on error. */
static int worker_heartbeat(struct rk_db *db, const char *id, struct rk_error *err)
{
	return rk_db_worker_heartbeat(db, id, rk_now_ms(), err);
}

static void worker_forget(struct rk_db *db, const char *id)
{
	rk_db_worker_delete(db, id, NULL);
}

/* Whether the worker w is alive: its pid answers on its host, and it was
 * heard within worker_dead_ms; elsewhere the heartbeat alone decides. */
static int worker_row_alive(const struct rk_worker_row *w)
{
	int pid = rk_host_pid_alive(w->host_key, w->pid);
	return pid != 0 && rk_now_ms() - w->heartbeat_at <= worker_dead_ms();
}

/* rk_execution_recover's judge: whether the worker that claimed e still
 * runs. Its own pid answers on its host; elsewhere only its heartbeat. */
static int execution_worker_alive(struct rk_engine *eng, const struct rk_execution *e, void *self_id)
{
	if (e->worker_id && !strcmp(e->worker_id, (const char *)self_id))
		return 1;
	if (!e->worker_id) /* claimed before workers registered: by a worker on this host */
		return rk_host_pid_alive(NULL, e->worker_pid) == 1;
	struct rk_worker_row w;
	int found = rk_db_worker_get(eng->db, e->worker_id, &w, NULL);
	if (found < 0)
		return 1; /* cannot tell: leave it */
	int alive = found && worker_row_alive(&w);
	rk_worker_row_release(&w);
	if (!alive)
		worker_forget(eng->db, e->worker_id);
	return alive;
}

/* Workers that stopped without a word (killed, their host gone) and hold
 * nothing: their rows go, so `workers` lists the living. */
static void forget_dead_workers(struct rk_engine *eng)
{
	struct rk_worker_row *ws;
	size_t n;
	if (rk_db_worker_list(eng->db, &ws, &n, NULL) != 0)
		return;
	/* at most 32 at a start: the next start forgets the rest */
	for (size_t i = 0, dead = 0; i < n && dead < 32; i++)
		if (!worker_row_alive(&ws[i])) {
			worker_forget(eng->db, ws[i].id);
			dead++;
		}
	rk_worker_rows_free(ws, n);
}

/* The heartbeat runs on a thread of its own, with a connection of its own,
 * so a worker deep in a slow provider call is still heard. A worker whose
 * row another one removed was taken for dead and its command handed on:
 * going on would run that command twice, so it stops at once. */
struct heartbeat {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	char *data_dir, *id;
};

static void *heartbeat_main(void *arg)
{
	struct heartbeat *hb = arg;
	struct rk_db *db = NULL;
	struct rk_error e;
	pthread_mutex_lock(&hb->lock);
	while (!hb->stop) {
		pthread_mutex_unlock(&hb->lock);
		if (!db && rk_db_open(hb->data_dir, &db, &e) != 0) {
			rk_log(RK_LOG_WARN, "worker heartbeat: %s", e.message);
			db = NULL;
		}
		if (db) {
			int r = worker_heartbeat(db, hb->id, &e);
			if (r == 0) {
				rk_log(RK_LOG_ERROR, "worker %s was taken for dead by another worker; stopping",
				       hb->id);
				_exit(75);
			}
			if (r < 0) {
				rk_log(RK_LOG_WARN, "worker heartbeat: %s", e.message);
				rk_db_close(db);
				db = NULL;
			}
		}
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HEARTBEAT_MS / 1000;
		pthread_mutex_lock(&hb->lock);
		if (!hb->stop)
			pthread_cond_timedwait(&hb->cond, &hb->lock, &until);
	}
	pthread_mutex_unlock(&hb->lock);
	if (db)
		rk_db_close(db);
	return NULL;
}

static int heartbeat_start(struct heartbeat *hb, struct rk_engine *eng, const char *id)
{
	memset(hb, 0, sizeof(*hb));
	pthread_mutex_init(&hb->lock, NULL);
	pthread_cond_init(&hb->cond, NULL);
	hb->data_dir = rk_xstrdup(eng->data_dir);
	hb->id = rk_xstrdup(id);
	return pthread_create(&hb->thread, NULL, heartbeat_main, hb) == 0 ? 0 : -1;
}

static void heartbeat_stop(struct heartbeat *hb)
{
	pthread_mutex_lock(&hb->lock);
	hb->stop = 1;
	pthread_cond_signal(&hb->cond);
	pthread_mutex_unlock(&hb->lock);
	pthread_join(hb->thread, NULL);
	pthread_mutex_destroy(&hb->lock);
	pthread_cond_destroy(&hb->cond);
	free(hb->data_dir);
	free(hb->id);
}

static char *lock_path(struct rk_engine *eng)
{
	return rk_xasprintf("%s/worker.lock", eng->data_dir);
}

/* Takes the worker lock; the fd holds it until closed (or the process dies,
 * which is how a crashed worker's commands become recoverable). */
static int take_lock(struct rk_engine *eng, int join, struct rk_error *err)
{
	char *path = lock_path(eng);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int r = rk_error_errno(err, RK_EIO, errno, "cannot open %s", path);
		free(path);
		return r;
	}
	free(path);
	/* a worker alone takes the lock whole; workers that --join share it */
	if (flock(fd, (join ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
		close(fd);
		return rk_error_set(err, RK_ECONFLICT,
				    join ? "a worker that runs alone holds this data directory (stop it, or start every "
					   "worker with --join)"
					 : "another worker is running for this data directory (start every worker with "
					   "--join to run several)");
	}
	if (join)
		return fd; /* the pid in the file is the lone worker's */
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

/* One pass of the run loop's reaping and auto-resume (the reap_runs and
 * resume_runs hooks); the number of runs still live (queued, running,
 * waiting), or 0 on a database error. */
static int reap_runs(struct rk_engine *eng)
{
	struct rk_error e;
	int marked = 0;
	if (RK_HOOK(reap_runs, &e, eng, &marked, &e) != 0) {
		rk_log(RK_LOG_WARN, "worker: run reap: %s", e.message);
		return 0;
	}
	if (marked)
		rk_log(RK_LOG_INFO, "worker: %d run(s) marked interrupted", marked);
	/* those marked now or by another reaper (`run list`) that asked for it */
	int resumed = 0;
	if (RK_HOOK(resume_runs, &e, eng, &resumed, &e) != 0)
		rk_log(RK_LOG_WARN, "worker: run auto-resume: %s", e.message);
	else if (resumed)
		rk_log(RK_LOG_INFO, "worker: %d run(s) auto-resumed", resumed);
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
	/* a worker without the lifecycle's hooks would stop a computer without
	 * its checkpoint: refuse to start rather than run commands half */
	int lock = rk_hooks_check(err);
	if (lock)
		return lock;
	lock = take_lock(eng, opt->join, err);
	if (lock < 0)
		return lock;
	char *self = rk_id_new("wkr");
	struct heartbeat hb;
	int r = worker_register(eng->db, self, err);
	if (r == 0 && heartbeat_start(&hb, eng, self) != 0)
		r = rk_error_set(err, RK_EFAILED, "cannot start the worker's heartbeat");
	if (r) {
		worker_forget(eng->db, self);
		free(self);
		close(lock);
		return r;
	}
	rk_log(RK_LOG_INFO, "worker %s started", self);
	forget_dead_workers(eng);
	r = rk_execution_recover(eng, execution_worker_alive, self, err);
	int64_t idle_since = rk_monotonic_ms(), next_scan = 0, next_exe_check = 0;
	int schedules = 0, live_runs = 0;
	while (r == 0 && !(opt->stop && *opt->stop)) {
		/* idle suspension and silent reservations (engine/machine/idle.h); runs
		 * whose process died or stopped heart-beating (engine/agent/run.h) */
		if (rk_monotonic_ms() >= next_scan) {
			struct rk_error se;
			if (rk_idle_scan(eng, &schedules, &se) != 0)
				rk_log(RK_LOG_WARN, "worker: idle scan: %s", se.message);
			live_runs = reap_runs(eng);
			/* commands of workers that died (other hosts' too) */
			if (rk_execution_recover(eng, execution_worker_alive, self, &se) != 0)
				rk_log(RK_LOG_WARN, "worker: recovery: %s", se.message);
			next_scan = rk_monotonic_ms() + rk_idle_scan_interval_ms();
		}
		struct rk_execution e = {0};
		struct rk_error e2;
		int got = 0;
		if ((r = rk_db_begin(eng->db, err)))
			break;
		int c = rk_db_execution_claim(eng->db, getpid(), self, &e, &e2);
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
			heartbeat_stop(&hb);
			worker_forget(eng->db, self);
			close(lock);
			execl(eng->self_exe, "rakazo", "worker", "--idle-exit", secs,
			      opt->join ? "--join" : (char *)NULL, (char *)NULL);
			rk_log(RK_LOG_ERROR, "worker: cannot start %s: %s", eng->self_exe, strerror(errno));
			return rk_error_set(err, RK_EFAILED, "cannot restart on the replaced binary %s", eng->self_exe);
		}
		if (rk_monotonic_ms() >= next_exe_check)
			next_exe_check = rk_monotonic_ms() + EXE_CHECK_MS;
		/* a saved idle schedule keeps the worker: it is the one that pauses the
		 * computer; so does a live run: it is the one that notices its end */
		if (opt->idle_exit_ms && !schedules && !live_runs &&
		    rk_monotonic_ms() - idle_since > opt->idle_exit_ms) {
			/* a command submitted while we decided to leave would wait for
			 * nobody: drop the lock, then look once more */
			close(lock);
			lock = -1;
			if (rk_db_execution_count_pending(eng->db, NULL) <= 0)
				break;
			if ((lock = take_lock(eng, opt->join, NULL)) < 0)
				break; /* another worker has it */
			idle_since = rk_monotonic_ms();
			continue;
		}
		rk_sleep_ms(20);
	}
	rk_log(RK_LOG_INFO, "worker %s stopped", self);
	heartbeat_stop(&hb);
	worker_forget(eng->db, self);
	free(self);
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
