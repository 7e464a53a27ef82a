#include "engine/machine/window.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

/* Idle screens are asked again now and then: a title can change without
 * a redraw we see (a window behind another, say). */
#define REFRESH_MS 5000

struct rk_window_watch {
	const struct rk_provider_ops *ops;
	const struct rk_machine *m;
	struct rk_screen *s;
	char *command;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	int known; /* id/title hold an answer */
	char *id, *title;
};

int rk_window_parse(const char *out, char **id, char **title)
{
	*id = *title = NULL;
	const char *nl = strchr(out, '\n');
	if (!nl || nl == out)
		return -1;
	for (const char *p = out; p < nl; p++)
		if (*p < '0' || *p > '9')
			return -1;
	*id = rk_xasprintf("0x%llx", strtoull(out, NULL, 10));
	const char *t = nl + 1;
	size_t n = strcspn(t, "\n");
	*title = rk_xstrndup(t, n);
	return 0;
}

static void probe(struct rk_window_watch *w)
{
	struct rk_buf out;
	rk_buf_init(&out);
	struct rk_exit_status st;
	struct rk_error e;
	char *id = NULL, *title = NULL;
	if (rk_provider_run(w->ops, w->m, w->command, 5000, 4096, &out, &st, &e) != 0) {
		rk_log(RK_LOG_DEBUG, "window probe on %s: %s", w->m->computer_id, e.message);
		rk_buf_release(&out);
		return; /* keep the last answer */
	}
	if (st.exited && st.code == 0 && st.signo <= 0)
		rk_window_parse(out.data, &id, &title);
	rk_buf_release(&out);
	pthread_mutex_lock(&w->lock);
	free(w->id);
	free(w->title);
	w->id = id;
	w->title = title;
	w->known = 1;
	pthread_mutex_unlock(&w->lock);
}

static void *watch_main(void *arg)
{
	struct rk_window_watch *w = arg;
	uint64_t seen = 0;
	int64_t asked = 0;
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		uint64_t d = rk_screen_damage(w->s);
		int64_t now = rk_monotonic_ms();
		if (!w->known || d != seen || now - asked >= REFRESH_MS) {
			seen = d;
			asked = now;
			pthread_mutex_unlock(&w->lock);
			probe(w);
			pthread_mutex_lock(&w->lock);
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += RK_WINDOW_PROBE_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!w->stop)
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int read_window(void *ctx, char **id, char **title)
{
	struct rk_window_watch *w = ctx;
	pthread_mutex_lock(&w->lock);
	*id = w->id ? rk_xstrdup(w->id) : NULL;
	*title = w->title ? rk_xstrdup(w->title) : NULL;
	int known = w->known;
	pthread_mutex_unlock(&w->lock);
	return known ? 0 : -1;
}

struct rk_window_watch *rk_window_watch_start(const struct rk_provider_ops *ops, const struct rk_machine *m,
					      int display, struct rk_screen *s)
{
	if (!ops->exec_spawn)
		return NULL;
	struct rk_window_watch *w = rk_xcalloc(1, sizeof(*w));
	w->ops = ops;
	w->m = m;
	w->s = s;
	w->command = rk_xasprintf("export DISPLAY=:%d; w=$(xdotool getactivewindow 2>/dev/null) && "
				  "printf '%%s\\n' \"$w\" && xdotool getwindowname \"$w\" 2>/dev/null",
				  display);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	probe(w); /* so the first observation has it */
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		free(w->command);
		free(w->id);
		free(w->title);
		free(w);
		return NULL;
	}
	rk_screen_set_window_probe(s, read_window, w);
	return w;
}

void rk_window_watch_stop(struct rk_window_watch *w)
{
	if (!w)
		return;
	rk_screen_set_window_probe(w->s, NULL, NULL);
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->command);
	free(w->id);
	free(w->title);
	free(w);
}
