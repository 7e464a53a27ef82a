#include "engine/util/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

static int log_fd = -1;
static enum rk_log_level min_level = RK_LOG_INFO;
static char *log_path; /* DATA_DIR/log/rakazo.log, for its rotation */
static size_t log_max = RK_LOG_MAX_DEFAULT;
static pthread_mutex_t rotate_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t followed_ms; /* when this process last looked for a rotation */
static void (*volatile log_filter)(struct rk_buf *line);

void rk_log_set_filter(void (*filter)(struct rk_buf *line))
{
	log_filter = filter;
}

void rk_log_open(const char *data_dir)
{
	if (log_fd >= 0)
		return;
	const char *lvl = getenv("RAKAZO_LOG");
	if (lvl && strcmp(lvl, "debug") == 0)
		min_level = RK_LOG_DEBUG;
	const char *max = getenv("RAKAZO_LOG_MAX");
	char *end;
	unsigned long long m = max && *max ? strtoull(max, &end, 10) : 0;
	if (max && *max && !*end && m >= 4096)
		log_max = (size_t)m;
	char *dir = rk_path_join(data_dir, "log");
	if (rk_fs_mkdirs(dir, 0700, NULL) == 0) {
		char *path = rk_path_join(dir, "rakazo.log");
		log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (log_fd >= 0) {
			free(log_path);
			log_path = path;
			path = NULL;
		}
		free(path);
	}
	free(dir);
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev;
}

/* Before a write: past the cap, rotate (one process does, under a lock on
 * the file); at most once a second otherwise, follow a rotation another
 * process did. The descriptor keeps its number (dup3), so a helper's fd 4
 * and the other threads' writes stay valid. */
static void log_keep(void)
{
	int fd = log_fd;
	struct stat st, cur;
	if (!log_path || fd < 0 || fstat(fd, &st) != 0)
		return;
	int64_t now = rk_monotonic_ms();
	int past = (size_t)st.st_size > log_max;
	if (!past && now - __atomic_load_n(&followed_ms, __ATOMIC_RELAXED) < 1000)
		return;
	pthread_mutex_lock(&rotate_mu);
	__atomic_store_n(&followed_ms, now, __ATOMIC_RELAXED);
	int same = stat(log_path, &cur) == 0 && same_file(&st, &cur);
	if (same && past && flock(fd, LOCK_EX) == 0) {
		/* again under the lock: another process may just have moved it */
		if (stat(log_path, &cur) == 0 && same_file(&st, &cur)) {
			char *old = rk_xasprintf("%s.1", log_path);
			(void)rename(log_path, old);
			free(old);
		}
		same = 0;
		flock(fd, LOCK_UN);
	}
	if (!same) {
		int flags = fcntl(fd, F_GETFD);
		int nfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (nfd >= 0 && nfd != fd) {
			(void)dup3(nfd, fd, flags >= 0 && (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
			close(nfd);
		}
	}
	pthread_mutex_unlock(&rotate_mu);
}

int rk_log_fd(void)
{
	return log_fd;
}

void rk_log_set_fd(int fd)
{
	log_fd = fd;
}

void rk_log(enum rk_log_level level, const char *fmt, ...)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	if (log_fd < 0 || level < min_level)
		return;
	char when[40];
	struct rk_buf b;
	va_list ap;
	rk_buf_init(&b);
	rk_buf_printf(&b, "%s %d %s ", rk_iso8601(rk_now_ms(), when, sizeof(when)), (int)getpid(), names[level]);
	va_start(ap, fmt);
	rk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	rk_buf_addc(&b, '\n');
	void (*filter)(struct rk_buf *) = log_filter;
	if (filter)
		filter(&b);
	/* one write per line so concurrent processes do not interleave */
	log_keep(); /* before the line: it lands in the file another process rotated to */
	(void)!write(log_fd, b.data, b.len);
	rk_buf_release(&b);
}

static rk_warn_fn warn_hook;

void rk_warn_set_hook(rk_warn_fn fn)
{
	warn_hook = fn;
}

void rk_warn(const char *fmt, ...)
{
	struct rk_buf b;
	va_list ap;
	rk_buf_init(&b);
	va_start(ap, fmt);
	rk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	rk_log(RK_LOG_WARN, "%s", b.data);
	if (warn_hook)
		warn_hook(b.data);
	rk_buf_release(&b);
}

/* --- refusals: a bounded number of lines a second -------------------------------- */

#define REFUSAL_SOURCES 16

static pthread_mutex_t refusal_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t refusal_second = -1; /* the monotonic second counted */
static unsigned refusal_written;
static struct {
	char source[64];
	unsigned long count;
} refusal_more[REFUSAL_SOURCES];
static size_t refusal_sources;
static unsigned long refusal_others; /* past REFUSAL_SOURCES sources */

/* Sums up the second counted once it is over; under refusal_mu. */
static void refusals_roll(int64_t second)
{
	if (second == refusal_second)
		return;
	for (size_t i = 0; i < refusal_sources; i++)
		rk_log(RK_LOG_INFO, "%lu more refused request%s from %s", refusal_more[i].count,
		       refusal_more[i].count == 1 ? "" : "s", refusal_more[i].source);
	if (refusal_others)
		rk_log(RK_LOG_INFO, "%lu more refused request%s from other addresses", refusal_others,
		       refusal_others == 1 ? "" : "s");
	refusal_second = second;
	refusal_written = 0;
	refusal_sources = 0;
	refusal_others = 0;
}

void rk_log_refusal(enum rk_log_level level, const char *source, const char *fmt, ...)
{
	if (log_fd < 0 || level < min_level)
		return;
	if (!source || !*source)
		source = "an unknown address";
	pthread_mutex_lock(&refusal_mu);
	refusals_roll(rk_monotonic_ms() / 1000);
	if (refusal_written < RK_LOG_REFUSALS_PER_S) {
		refusal_written++;
		va_list ap;
		va_start(ap, fmt);
		char *s = rk_xvasprintf(fmt, ap);
		va_end(ap);
		rk_log(level, "%s (from %s)", s, source);
		free(s);
	} else {
		size_t i = 0;
		while (i < refusal_sources && strcmp(refusal_more[i].source, source))
			i++;
		if (i < refusal_sources) {
			refusal_more[i].count++;
		} else if (refusal_sources < REFUSAL_SOURCES) {
			snprintf(refusal_more[i].source, sizeof(refusal_more[i].source), "%s", source);
			refusal_more[i].count = 1;
			refusal_sources++;
		} else {
			refusal_others++;
		}
	}
	pthread_mutex_unlock(&refusal_mu);
}

void rk_log_refusals_flush(void)
{
	pthread_mutex_lock(&refusal_mu);
	refusals_roll(rk_monotonic_ms() / 1000);
	pthread_mutex_unlock(&refusal_mu);
}
