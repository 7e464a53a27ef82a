#include "log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"
#include "time.h"

static int log_fd = -1;
static enum rk_log_level min_level = RK_LOG_INFO;
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
	char *dir = rk_path_join(data_dir, "log");
	if (rk_fs_mkdirs(dir, 0700, NULL) == 0) {
		char *path = rk_path_join(dir, "rakazo.log");
		log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		free(path);
	}
	free(dir);
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
