/* The dashboard's data threads (see feed.h). */

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/access/authz.h"
#include "engine/access/approval.h"
#include "engine/machine/computer.h"
#include "engine/access/approval.h"
#include "engine/machine/session.h"
#include "engine/machine/display.h"
#include "engine/machine/checkpoint.h"
#include "engine/agent/run.h"
#include "engine/agent/run_log.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "feed.h"
#include "halfblock.h"

#define LIST_EVERY_MS 1000
#define FILES_EVERY_MS 1000
#define TIMELINE_EVERY_MS 1000
#define TICK_MS 250
#define SCREEN_EVERY_MS 250
#define PREVIEW_MAX (64 * 1024)
#define RUNS_MAX 1000
#define REAP_FIRST_MS 1000
#define REAP_EVERY_MS 5000
#define TAKEOVER_TTL_MS 60000

/* --- lines ---------------------------------------------------------------------- */

void feed_lines_add(struct feed_lines *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = rk_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = rk_xstrndup(s, len);
}

void feed_lines_clear(struct feed_lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Drops the oldest lines beyond max. */
static void lines_trim(struct feed_lines *l, size_t max)
{
	if (l->n <= max)
		return;
	size_t drop = l->n - max;
	for (size_t i = 0; i < drop; i++)
		free(l->v[i]);
	memmove(l->v, l->v + drop, max * sizeof(*l->v));
	l->n = max;
}

/* Terminal output as lines: escape sequences and control characters go,
 * tabs become spaces, \r is dropped. *partial says the last line of l is
 * still open and continues it. */
static void lines_add_stream(struct feed_lines *l, int *partial, const char *data, size_t len)
{
	struct rk_buf cur;
	rk_buf_init(&cur);
	if (*partial && l->n) {
		rk_buf_adds(&cur, l->v[l->n - 1]);
		free(l->v[--l->n]);
	}
	int open = *partial;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (ch == '\033') {
			/* CSI: ESC [ params final; OSC: ESC ] ... BEL or ESC \; else one more byte */
			if (i + 1 < len && data[i + 1] == '[') {
				i += 2;
				while (i < len && !((unsigned char)data[i] >= 0x40 && (unsigned char)data[i] <= 0x7e))
					i++;
			} else if (i + 1 < len && data[i + 1] == ']') {
				i += 2;
				while (i < len && data[i] != '\a' &&
				       !(data[i] == '\033' && i + 1 < len && data[i + 1] == '\\'))
					i++;
				if (i < len && data[i] == '\033')
					i++;
			} else {
				i++;
			}
			continue;
		}
		if (ch == '\n') {
			feed_lines_add(l, cur.data, cur.len);
			rk_buf_reset(&cur);
			open = 0;
			continue;
		}
		open = 1;
		if (ch == '\t') {
			do
				rk_buf_addc(&cur, ' ');
			while (cur.len % 8);
		} else if (ch >= 0x20 && ch != 0x7f) {
			rk_buf_addc(&cur, (char)ch);
		}
	}
	if (open)
		feed_lines_add(l, cur.data, cur.len);
	*partial = open;
	rk_buf_release(&cur);
}

static void lines_addf(struct feed_lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lines_addf(struct feed_lines *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = rk_xvasprintf(fmt, ap);
	va_end(ap);
	size_t n = strlen(s);
	int partial = 0;
	lines_add_stream(l, &partial, s, n);
	if (n == 0)
		feed_lines_add(l, "", 0);
	free(s);
}

/* --- publishing ------------------------------------------------------------------- */

static void wake(struct feed *f)
{
	char c = 1;
	ssize_t n = write(f->wake_fd[1], &c, 1);
	(void)n; /* a full pipe already says "wake up" */
}

void feed_drain(struct feed *f)
{
	char buf[64];
	while (read(f->wake_fd[0], buf, sizeof(buf)) > 0)
		;
}

void feed_poke(struct feed *f)
{
	f->poke++;
	pthread_cond_broadcast(&f->cv);
}

static void set_str(char **dst, const char *s)
{
	if (*dst == s || (*dst && s && !strcmp(*dst, s)))
		return;
	free(*dst);
	*dst = rk_xstrdup(s);
}

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void set_error(struct feed *f, const struct rk_error *e)
{
	pthread_mutex_lock(&f->mu);
	free(f->error);
	f->error = e ? rk_xasprintf("%s: %s", rk_code_name(e->code), e->message) : NULL;
	pthread_mutex_unlock(&f->mu);
}

static void computers_free(struct feed_computer *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].name);
		free(v[i].kind);
		free(v[i].state);
		free(v[i].home_key);
		free(v[i].checkpoint);
	}
	free(v);
}

static void runs_free(struct feed_run *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].computer_id);
		free(v[i].task);
		free(v[i].model);
		free(v[i].state);
		free(v[i].error);
	}
	free(v);
}

static void files_free(struct feed_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* --- the data thread ---------------------------------------------------------- */

struct data_req {
	char *computer, *run, *dir, *file;
	unsigned views;
	uint64_t poke;
};

static void data_req_release(struct data_req *q)
{
	free(q->computer);
	free(q->run);
	free(q->dir);
	free(q->file);
}

/* The one resolver (engine/access/authz.h) as the person at the terminal:
 * RAKAZO_USER in RAKAZO_SPACE, or a bot with RAKAZO_OWNER=bot:NAME. */
static int feed_computer(struct rk_engine *eng, const char *ref, struct rk_computer *c, struct rk_error *e)
{
	struct rk_actor a;
	int r = rk_actor_resolve(&a, eng, NULL, NULL, e);
	if (r == 0) {
		r = rk_authz_resolve(eng, &a, ref, "computers.use", c, e);
		rk_actor_release(&a);
	}
	return r;
}

/* Keeps in cs only the computers the person may use (what the panes show). */
static int keep_usable(struct rk_engine *eng, struct rk_computer *cs, size_t *n, struct rk_error *err)
{
	struct rk_actor a;
	int r = rk_actor_resolve(&a, eng, NULL, NULL, err);
	size_t m = 0;
	for (size_t i = 0; i < *n; i++) {
		if (r == 0 && rk_authz_may_use(eng, &a, &cs[i]))
			cs[m++] = cs[i];
		else
			rk_computer_release(&cs[i]);
	}
	*n = m;
	rk_actor_release(&a);
	return r;
}

static int load_lists(struct feed *f, struct rk_engine *eng, struct rk_workspace_store *store, struct rk_error *err)
{
	struct rk_computer *cs = NULL;
	size_t nc = 0;
	int r = rk_computer_list(eng, &cs, &nc, err);
	if (r == 0)
		r = keep_usable(eng, cs, &nc, err);
	if (r) {
		free(cs);
		return r;
	}
	struct feed_computer *fc = rk_xcalloc(nc ? nc : 1, sizeof(*fc));
	for (size_t i = 0; i < nc; i++) {
		fc[i].id = cs[i].id;
		fc[i].name = cs[i].name;
		fc[i].kind = cs[i].kind;
		fc[i].state = cs[i].state;
		fc[i].home_key = cs[i].home_key;
		fc[i].desktop = cs[i].desktop;
		fc[i].screens = rk_team_screen_count(eng->db, &cs[i]);
		cs[i].id = cs[i].name = cs[i].kind = cs[i].state = cs[i].home_key = NULL;
		struct rk_workspace_checkpoint rev = {0};
		struct rk_error e2 = {0};
		if (fc[i].home_key && store->ops->latest(store, fc[i].home_key, &rev, &e2) == 0) {
			fc[i].checkpoint = rk_xasprintf("%s",
							rev.reason ? rev.reason : rk_workspace_kind_name(rev.kind));
			fc[i].checkpoint_at = rev.created_at;
			rk_workspace_checkpoint_release(&rev);
		}
		rk_computer_release(&cs[i]);
	}
	free(cs);

	struct rk_run_row *rows = NULL;
	size_t nr = 0;
	if ((r = rk_run_list(eng, NULL, RUNS_MAX, &rows, &nr, err))) {
		computers_free(fc, nc);
		return r;
	}
	struct feed_run *fr = rk_xcalloc(nr ? nr : 1, sizeof(*fr));
	size_t kept = 0;
	for (size_t i = 0; i < nr; i++) {
		struct rk_run_row *w = &rows[i];
		size_t j = 0;
		while (j < nc && !(w->computer_id && !strcmp(fc[j].id, w->computer_id)))
			j++;
		if (j == nc)
			continue; /* a run on a computer the person may not use */
		fr[kept++] = (struct feed_run){w->id,	      w->computer_id,  w->task,
					       w->model,      w->state,	       w->error,
					       w->steps,      w->input_tokens, w->output_tokens,
					       w->created_at, w->started_at,   w->finished_at};
		w->id = w->computer_id = w->task = w->model = w->state = w->error = NULL;
	}
	rk_run_rows_free(rows, nr);
	nr = kept;

	pthread_mutex_lock(&f->mu);
	computers_free(f->computers, f->ncomputers);
	runs_free(f->runs, f->nruns);
	f->computers = fc;
	f->ncomputers = nc;
	f->runs = fr;
	f->nruns = nr;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

/* The computer a request names, or the first one. malloc'd copies. */
static int pick_computer(struct feed *f, const char *want, char **id, char **home_key)
{
	*id = *home_key = NULL;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->ncomputers; i++)
		if (!want || !strcmp(f->computers[i].id, want) || !strcmp(f->computers[i].name, want)) {
			*id = rk_xstrdup(f->computers[i].id);
			*home_key = rk_xstrdup(f->computers[i].home_key);
			break;
		}
	pthread_mutex_unlock(&f->mu);
	return *id ? 0 : -1;
}

/* New history entries of the computer (all of them after a switch), in
 * pages, turned into lines the way `rakazo computer history` prints them. */
static int load_history(struct feed *f, struct rk_engine *eng, const char *computer, struct rk_error *err)
{
	pthread_mutex_lock(&f->mu);
	if (!same(f->history_computer, computer)) {
		set_str(&f->history_computer, computer);
		feed_lines_clear(&f->history);
		f->history_partial = 0;
		f->history_last_id = 0;
		f->history_ver++;
	}
	int64_t after = f->history_last_id;
	pthread_mutex_unlock(&f->mu);
	if (!computer)
		return 0;
	for (;;) {
		struct rk_history_entry *h = NULL;
		size_t n = 0;
		int r = rk_computer_history(eng, computer, NULL, after, 1000, &h, &n, err);
		if (r)
			return r;
		if (n == 0) {
			rk_history_free(h, n);
			return 0;
		}
		pthread_mutex_lock(&f->mu);
		if (!same(f->history_computer, computer)) { /* the UI moved on */
			pthread_mutex_unlock(&f->mu);
			rk_history_free(h, n);
			return 0;
		}
		for (size_t i = 0; i < n; i++) {
			struct feed_lines *l = &f->history;
			enum rk_history_kind kind = rk_history_kind_of(h[i].kind);
			if (kind == RK_HISTORY_COMMAND) {
				if (f->history_partial)
					f->history_partial = 0;
				lines_addf(l, "$ %s", h[i].data ? h[i].data : "");
			} else if (kind == RK_HISTORY_OUTPUT || kind == RK_HISTORY_INPUT) {
				lines_add_stream(l, &f->history_partial, h[i].data, h[i].data_len);
			} else if (kind == RK_HISTORY_EXIT) {
				f->history_partial = 0;
				if (h[i].signal >= 0)
					lines_addf(l, "[signal %lld]", (long long)h[i].signal);
				else if (h[i].exit_code >= 0)
					lines_addf(l, "[exit %lld]", (long long)h[i].exit_code);
				else
					lines_addf(l, "[ended]");
			}
			after = h[i].id;
		}
		lines_trim(&f->history, FEED_HISTORY_MAX_LINES);
		f->history_last_id = after;
		f->history_ver++;
		pthread_mutex_unlock(&f->mu);
		rk_history_free(h, n);
		if (n < 1000)
			return 0;
	}
}

static int file_cmp(const void *a, const void *b)
{
	const struct feed_file *x = a, *y = b;
	if ((x->type == 'd') != (y->type == 'd'))
		return x->type == 'd' ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Lists dir (workspace-relative) of the stored home and previews file: the
 * same directory a mounted provider uses live, so this works whether the
 * computer runs or not. Nothing follows a symlink. */
static void load_files(struct feed *f, struct rk_engine *eng, const char *computer, const char *home_key,
		       const char *dir, const char *file)
{
	struct rk_error e = {0};
	char *home = NULL, *problem = NULL, *note = NULL;
	struct feed_file *v = NULL;
	size_t n = 0, cap = 0;
	struct feed_lines preview = {0};
	if (!home_key || rk_checkpoint_home_dir(eng, home_key, &home, &e)) {
		problem = rk_xasprintf("no workspace: %s", home_key ? e.message : "the computer has no home");
		goto publish;
	}
	if (!rk_fs_exists(home)) {
		problem = rk_xstrdup("the workspace is empty (nothing stored yet)");
		goto publish;
	}
	int fd = *dir ? rk_fs_open_beneath(home, dir, O_RDONLY | O_DIRECTORY, 0, 0, &e)
		      : open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		problem = rk_xasprintf("cannot read /%s: %s", dir, *dir ? e.message : strerror(errno));
		goto publish;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		problem = rk_xasprintf("cannot read /%s: %s", dir, strerror(errno));
		goto publish;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			v = rk_xrealloc(v, cap * sizeof(*v));
		}
		v[n].name = rk_xstrdup(de->d_name);
		v[n].type = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : '?';
		v[n].size = st.st_size;
		v[n].mtime = (int64_t)st.st_mtime * 1000;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), file_cmp);
	if (file) {
		int pfd = rk_fs_open_beneath(home, file, O_RDONLY, 0, 0, &e);
		struct stat st;
		if (pfd < 0) {
			note = rk_xasprintf("cannot open: %s", e.message);
		} else if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
			note = rk_xstrdup("not a regular file");
			close(pfd);
		} else {
			char *buf = rk_xmalloc(PREVIEW_MAX);
			ssize_t got = 0, k;
			while (got < PREVIEW_MAX &&
			       (k = rk_fs_read_fd(pfd, buf + got, (size_t)(PREVIEW_MAX - got))) > 0)
				got += k;
			close(pfd);
			if (got > 0 && memchr(buf, '\0', (size_t)got)) {
				note = rk_xasprintf("binary file, %lld bytes", (long long)st.st_size);
			} else {
				int partial = 0;
				lines_add_stream(&preview, &partial, buf, (size_t)(got < 0 ? 0 : got));
				if (st.st_size > got)
					note = rk_xasprintf("the first %lld of %lld bytes", (long long)got,
							    (long long)st.st_size);
				else if (got == 0)
					note = rk_xstrdup("empty file");
			}
			free(buf);
		}
	}
publish:
	free(home);
	pthread_mutex_lock(&f->mu);
	files_free(f->files, f->nfiles);
	f->files = v;
	f->nfiles = n;
	set_str(&f->files_computer, computer);
	set_str(&f->files_dir, dir);
	free(f->files_error);
	f->files_error = problem;
	feed_lines_clear(&f->preview);
	f->preview = preview;
	set_str(&f->preview_path, file);
	free(f->preview_note);
	f->preview_note = note;
	f->files_ver++;
	pthread_mutex_unlock(&f->mu);
}

static const char *iso(int64_t ms, char *buf, size_t size)
{
	if (ms <= 0)
		return "-";
	return rk_iso8601(ms, buf, size);
}

/* The call a run waits on a person for, and how to decide it. */
static void approval_lines(struct rk_engine *eng, const char *run_id, struct feed_lines *out)
{
	cJSON *arr = NULL;
	struct rk_error e;
	if (rk_approval_pending(eng, run_id, &arr, &e)) {
		lines_addf(out, "waiting for approval (cannot read it: %s)", e.message);
		return;
	}
	const cJSON *a;
	cJSON_ArrayForEach(a, arr)
	{
		lines_addf(out, "waiting for approval: %s  (%s)", rk_json_string(a, "tool", "?"),
			   rk_json_string(a, "reason", ""));
		const char *args = rk_json_string(a, "arguments", NULL);
		if (args)
			lines_addf(out, "  arguments %.300s%s", args, strlen(args) > 300 ? "..." : "");
		lines_addf(out, "  decide:   rakazo run approve %s | rakazo run deny %s --note TEXT", run_id, run_id);
	}
	cJSON_Delete(arr);
}

/* The head of a run's timeline: its row (state, steps, tokens, times,
 * answer or error, the call it waits to have approved). *live: it has not
 * ended. */
static int timeline_head(struct rk_engine *eng, const char *run_id, struct feed_lines *out, int *live,
			 struct rk_error *err)
{
	struct rk_run_row r = {0};
	int rc = rk_run_get(eng, run_id, &r, err);
	if (rc)
		return rc;
	char a[40];
	*live = !rk_run_state_is_final(r.state);
	lines_addf(out, "run %s  %s", r.id, r.state);
	if (rk_run_state_of(r.state) == RK_RUN_WAITING_APPROVAL)
		approval_lines(eng, r.id, out);
	lines_addf(out, "task      %s", r.task ? r.task : "");
	lines_addf(out, "model     %s", r.model ? r.model : "-");
	if (r.computer_id)
		lines_addf(out, "computer  %s", r.computer_id);
	if (r.bot_id)
		lines_addf(out, "bot       %s", r.bot_id);
	lines_addf(out, "%s  created", iso(r.created_at, a, sizeof(a)));
	if (r.started_at > 0)
		lines_addf(out, "%s  started (worker %lld)", iso(r.started_at, a, sizeof(a)), (long long)r.worker_pid);
	lines_addf(out, "%s  %lld steps, %lld input (%lld cached) + %lld output tokens%s",
		   r.heartbeat_at > 0 ? iso(r.heartbeat_at, a, sizeof(a)) : "-", (long long)r.steps,
		   (long long)r.input_tokens, (long long)r.cached_tokens, (long long)r.output_tokens,
		   *live ? " (so far)" : "");
	char cost[48] = "no price for the model";
	if (r.cost_micro >= 0)
		snprintf(cost, sizeof(cost), "$%.4f", (double)r.cost_micro / 1e6);
	lines_addf(out, "usage     %lld images sent, cost %s", (long long)(r.images > 0 ? r.images : 0), cost);
	if (r.reason)
		lines_addf(out, "reason    %s", r.reason);
	if (r.finished_at > 0)
		lines_addf(out, "%s  %s", iso(r.finished_at, a, sizeof(a)), r.state);
	if (r.final_answer) {
		lines_addf(out, "%s", "");
		lines_addf(out, "answer:");
		int partial = 0;
		lines_add_stream(out, &partial, r.final_answer, strlen(r.final_answer));
	}
	if (r.error) {
		lines_addf(out, "%s", "");
		lines_addf(out, "error: %s", r.error);
	}
	lines_addf(out, "%s", "");
	rk_run_row_release(&r);
	return 0;
}

static void thumbs_free(struct feed_thumb *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].rgb);
	free(v);
}

/* The run's events after *seq, the way `rakazo run logs` reads them: a
 * line each (lines_before lines come before them), and under a tool result
 * that showed the model a new frame, that frame's kept picture. */
static int timeline_events(struct rk_engine *eng, const char *run_id, int64_t *seq, size_t lines_before,
			   struct feed_lines *out, struct feed_thumb **thumbs, size_t *nthumbs, struct rk_error *err)
{
	for (;;) {
		struct rk_run_event *ev = NULL;
		size_t n = 0;
		int r = rk_run_events(eng, run_id, *seq, 1000, &ev, &n, err);
		if (r)
			return r;
		for (size_t i = 0; i < n; i++) {
			*seq = ev[i].seq;
			/* a streamed turn's pieces: model.turn and tool.call carry
			 * them whole a moment later, so the timeline shows each once */
			if (!strcmp(ev[i].type, "model.text") || !strcmp(ev[i].type, "model.tool_call"))
				continue;
			cJSON *doc = cJSON_Parse(ev[i].data);
			if (!doc)
				continue;
			char *line = rk_run_event_line(doc, 1);
			lines_addf(out, "%s", line);
			free(line);
			const char *hash = rk_json_string(doc, "frame_hash", NULL);
			const char *image = rk_json_string(doc, "image", NULL);
			struct feed_thumb th = {0};
			struct rk_error e;
			if (!strcmp(ev[i].type, "tool.result") && hash && image && !strcmp(image, "sent") &&
			    rk_run_frame_load(eng->data_dir, run_id, hash, FEED_THUMB_W, FEED_THUMB_H, &th.rgb, &th.w,
					      &th.h, &e) == 0) {
				th.line = lines_before + out->n;
				*thumbs = rk_xrealloc(*thumbs, (*nthumbs + 1) * sizeof(**thumbs));
				(*thumbs)[(*nthumbs)++] = th;
				for (int k = 0; k < (th.h + 1) / 2; k++)
					feed_lines_add(out, "", 0);
			}
			cJSON_Delete(doc);
		}
		rk_run_events_free(ev, n);
		if (n < 1000)
			return 0;
	}
}

/* The timeline of run: all of it after a switch, then the row again and
 * the events that came since (a running run's live tail). */
static void load_timeline(struct feed *f, struct rk_engine *eng, const char *run)
{
	struct feed_lines head = {0}, add = {0};
	struct feed_thumb *th = NULL;
	size_t nth = 0;
	struct rk_error e = {0};
	pthread_mutex_lock(&f->mu);
	int fresh = !same(f->timeline_run, run);
	int64_t seq = fresh ? 0 : f->timeline_seq;
	size_t had = fresh ? 0 : f->timeline.n - f->timeline_head; /* only this thread changes them */
	pthread_mutex_unlock(&f->mu);
	int live = 0;
	if (timeline_head(eng, run, &head, &live, &e) || timeline_events(eng, run, &seq, had, &add, &th, &nth, &e))
		lines_addf(&head, "%s: %s", rk_code_name(e.code), e.message);
	pthread_mutex_lock(&f->mu);
	if (fresh) {
		feed_lines_clear(&f->timeline);
		thumbs_free(f->thumbs, f->nthumbs);
		f->thumbs = NULL;
		f->nthumbs = 0;
		f->timeline_head = 0;
		set_str(&f->timeline_run, run);
	}
	/* the new head, the events it had, the new events */
	struct feed_lines all = {0};
	all.cap = head.n + had + add.n + 1;
	all.v = rk_xmalloc(all.cap * sizeof(*all.v));
	if (head.n)
		memcpy(all.v, head.v, head.n * sizeof(*all.v));
	if (had)
		memcpy(all.v + head.n, f->timeline.v + f->timeline_head, had * sizeof(*all.v));
	if (add.n)
		memcpy(all.v + head.n + had, add.v, add.n * sizeof(*all.v));
	all.n = head.n + had + add.n;
	for (size_t i = 0; i < f->timeline_head; i++)
		free(f->timeline.v[i]);
	free(f->timeline.v);
	f->timeline = all;
	f->timeline_head = head.n;
	f->timeline_seq = seq;
	if (nth) {
		f->thumbs = rk_xrealloc(f->thumbs, (f->nthumbs + nth) * sizeof(*f->thumbs));
		memcpy(f->thumbs + f->nthumbs, th, nth * sizeof(*th));
		f->nthumbs += nth;
	}
	pthread_mutex_unlock(&f->mu);
	free(head.v);
	free(add.v);
	free(th);
}

static void *data_main(void *arg)
{
	struct feed *f = arg;
	struct rk_engine *eng = NULL;
	struct rk_error e = {0};
	struct rk_workspace_store *store = NULL;
	if (rk_engine_open(&eng, &e)) {
		set_error(f, &e);
		pthread_mutex_lock(&f->mu);
		f->loaded = 1;
		while (!f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		pthread_mutex_unlock(&f->mu);
		wake(f);
		return NULL;
	}
	store = rk_checkpoint_store(eng); /* local or S3, as `rakazo checkpoint` picks */
	int64_t next_lists = 0, next_files = 0, next_timeline = 0, next_reap = 0;
	uint64_t seen = (uint64_t)-1;
	char *last_dir = NULL, *last_file = NULL, *last_run = NULL, *last_files_computer = NULL;
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		struct data_req q = {rk_xstrdup(f->want_computer),
				     rk_xstrdup(f->want_run),
				     rk_xstrdup(f->want_dir),
				     rk_xstrdup(f->want_file),
				     f->views,
				     f->poke};
		pthread_mutex_unlock(&f->mu);
		int64_t now = rk_monotonic_ms();
		seen = q.poke;
		int err_set = 0;
		if (now >= next_lists) {
			if (load_lists(f, eng, store, &e)) {
				set_error(f, &e);
				err_set = 1;
			}
			next_lists = now + LIST_EVERY_MS;
		}
		if (!next_reap) {
			/* not while the first frame is drawn: reaping writes */
			next_reap = now + REAP_FIRST_MS;
		} else if (now >= next_reap) {
			/* a run whose process died shows as interrupted, with nobody
			 * typing `rakazo run list` */
			struct rk_error e2;
			int marked = 0;
			if (rk_run_reap(eng, &marked, &e2) == 0 && marked)
				next_lists = 0;
			next_reap = now + REAP_EVERY_MS;
		}
		char *cid = NULL, *home_key = NULL;
		pick_computer(f, q.computer, &cid, &home_key);
		if (load_history(f, eng, cid, &e)) {
			set_error(f, &e);
			err_set = 1;
		}
		const char *dir = q.dir ? q.dir : "";
		if ((q.views & FEED_VIEW_FILES) && cid &&
		    (now >= next_files || !same(dir, last_dir) || !same(q.file, last_file) ||
		     !same(cid, last_files_computer))) {
			load_files(f, eng, cid, home_key, dir, q.file);
			set_str(&last_dir, dir);
			set_str(&last_file, q.file);
			set_str(&last_files_computer, cid);
			next_files = now + FILES_EVERY_MS;
		}
		if ((q.views & FEED_VIEW_TIMELINE) && q.run && (now >= next_timeline || !same(q.run, last_run))) {
			load_timeline(f, eng, q.run);
			set_str(&last_run, q.run);
			next_timeline = now + TIMELINE_EVERY_MS;
		}
		if (!err_set)
			set_error(f, NULL);
		free(cid);
		free(home_key);
		data_req_release(&q);
		pthread_mutex_lock(&f->mu);
		f->loaded = 1;
		pthread_mutex_unlock(&f->mu);
		wake(f);
		pthread_mutex_lock(&f->mu);
		if (!f->stop && f->poke == seen) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += TICK_MS * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
		}
	}
	pthread_mutex_unlock(&f->mu);
	free(last_dir);
	free(last_file);
	free(last_run);
	free(last_files_computer);
	if (store)
		store->ops->free(store);
	rk_engine_free(eng);
	return NULL;
}

/* --- the screen thread -------------------------------------------------------------- */

void feed_input(struct feed *f, const char *action_json)
{
	f->input = rk_xrealloc(f->input, (f->ninput + 1) * sizeof(*f->input));
	f->input[f->ninput++] = rk_xstrdup(action_json);
	feed_poke(f);
}

static void screen_status(struct feed *f, const char *computer, char *msg)
{
	pthread_mutex_lock(&f->mu);
	set_str(&f->screen_computer, computer);
	free(f->screen_status);
	f->screen_status = msg;
	f->screen_ver++;
	pthread_mutex_unlock(&f->mu);
	wake(f);
}

/* The screen pane shows the main display, the screen of the default bot
 * (a run without --bot): the person takes that bot's control lease. */
#define TAKEOVER_BOT RK_RUN_LEASE_BOT_DEFAULT

struct takeover {
	char *computer; /* the computer whose main display this person controls */
	int64_t renew_at;
};

/* Gives control back; a run that waited for it goes on (rk_team_release_control). */
static void takeover_drop(struct rk_engine *eng, struct takeover *t)
{
	struct rk_error e = {0};
	struct rk_computer c = {0};
	if (t->computer && rk_computer_get(eng, t->computer, &c, &e) == 0) {
		if (rk_team_release_control(eng, &c, TAKEOVER_BOT, &e) && e.code != RK_ENOTFOUND)
			rk_log(RK_LOG_WARN, "takeover of %s: %s", c.name, e.message);
		rk_computer_release(&c);
	}
	free(t->computer);
	memset(t, 0, sizeof(*t));
}

/* Takes, keeps or gives back the control lease as the UI wants it: refused
 * (the UI told why) while the bot runs. 1 when held. */
static int takeover_sync(struct feed *f, struct rk_engine *eng, struct takeover *t, struct rk_computer *c, int want)
{
	struct rk_error e = {0};
	if (t->computer && (!want || !c || !same(t->computer, c->id)))
		takeover_drop(eng, t);
	if (!want || !c) {
		pthread_mutex_lock(&f->mu);
		f->takeover_held = 0;
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	int64_t now = rk_monotonic_ms();
	if (t->computer && now < t->renew_at)
		return 1;
	/* the first time takes control, later ones extend it */
	cJSON *grant = NULL;
	int r = rk_team_takeover(eng, c, TAKEOVER_BOT, TAKEOVER_TTL_MS, &grant, &e);
	cJSON_Delete(grant);
	if (r && t->computer)
		takeover_drop(eng, t); /* not extended: what is left of it goes too */
	pthread_mutex_lock(&f->mu);
	if (r) {
		free(f->takeover_error);
		f->takeover_error = rk_xasprintf("takeover: %s: %s", rk_code_name(e.code), e.message);
		f->takeover_want = 0;
		f->takeover_held = 0;
	} else {
		set_str(&t->computer, c->id);
		t->renew_at = now + TAKEOVER_TTL_MS / 3;
		f->takeover_held = 1;
		free(f->takeover_error);
		f->takeover_error = NULL;
	}
	pthread_mutex_unlock(&f->mu);
	wake(f);
	return r == 0;
}

static void *screen_main(void *arg)
{
	struct feed *f = arg;
	struct rk_engine *eng = NULL;
	struct rk_error e = {0};
	if (rk_engine_open(&eng, &e)) {
		screen_status(f, NULL, rk_xasprintf("%s: %s", rk_code_name(e.code), e.message));
		pthread_mutex_lock(&f->mu);
		f->screen_done = 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		return NULL;
	}
	struct takeover t = {0};
	char *shown = NULL; /* the computer whose picture the feed holds */
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		int visible = (f->views & FEED_VIEW_SCREEN) != 0;
		char *want = rk_xstrdup(f->want_computer);
		if (!want && f->ncomputers)
			want = rk_xstrdup(f->computers[0].id);
		int cols = f->screen_cols, rows = f->screen_rows, takeover = f->takeover_want;
		char **input = f->input;
		size_t ninput = f->ninput;
		f->input = NULL;
		f->ninput = 0;
		uint64_t seen = f->poke;
		pthread_mutex_unlock(&f->mu);

		int64_t wait_ms = SCREEN_EVERY_MS;
		struct rk_computer c = {0};
		if (!visible || !want || cols < 2 || rows < 1) {
			takeover_sync(f, eng, &t, NULL, 0);
			wait_ms = 1000;
		} else if (feed_computer(eng, want, &c, &e)) {
			screen_status(f, want, rk_xasprintf("%s: %s", rk_code_name(e.code), e.message));
			wait_ms = 1000;
		} else if (rk_computer_state_of(c.state) != RK_COMPUTER_RUNNING) {
			/* observing would resume it: the screen waits for the computer instead */
			takeover_sync(f, eng, &t, NULL, 0);
			screen_status(f, want,
				      rk_xasprintf("%s is %s: its screen shows while it runs", c.name, c.state));
			wait_ms = 1000;
		} else if (!c.desktop) {
			screen_status(f, want, rk_xasprintf("%s has no desktop", c.name));
			wait_ms = 1000;
		} else {
			struct rk_display_observe_options oo = {.max_width = cols,
								.max_height = rows * 2,
								.consumer = f->consumer};
			int held = takeover_sync(f, eng, &t, &c, takeover);
			for (size_t i = 0; i < ninput && held; i++) {
				struct rk_display_act_result res = {0};
				char *batch = rk_xasprintf("[%s]", input[i]);
				if (rk_display_act(eng, &c, 0, batch, 0, 0, &oo, &res, &e)) {
					pthread_mutex_lock(&f->mu);
					free(f->takeover_error);
					f->takeover_error = rk_xasprintf("input: %s: %s", rk_code_name(e.code),
									 e.message);
					pthread_mutex_unlock(&f->mu);
				}
				free(batch);
				rk_display_act_result_release(&res);
			}
			if (!same(shown, c.id))
				oo.consumer = NULL; /* a fresh picture for a new computer */
			struct rk_display_shot shot = {0};
			if (rk_display_observe(eng, &c, 0, &oo, &shot, &e)) {
				screen_status(f, c.id, rk_xasprintf("%s: %s", rk_code_name(e.code), e.message));
				wait_ms = 1000;
			} else if (shot.png) {
				unsigned char *rgb = NULL;
				int w = 0, h = 0;
				if (tui_png_decode(shot.png, shot.png_len, &rgb, &w, &h) == 0) {
					const char *hash = cJSON_GetStringValue(
						cJSON_GetObjectItem(shot.meta, "frame_hash"));
					pthread_mutex_lock(&f->mu);
					free(f->screen_rgb);
					f->screen_rgb = rgb;
					f->screen_w = w;
					f->screen_h = h;
					f->screen_full_w = (int)cJSON_GetNumberValue(
						cJSON_GetObjectItem(shot.meta, "screen_width"));
					f->screen_full_h = (int)cJSON_GetNumberValue(
						cJSON_GetObjectItem(shot.meta, "screen_height"));
					snprintf(f->screen_hash, sizeof(f->screen_hash), "%.16s", hash ? hash : "");
					f->screen_frames++;
					set_str(&f->screen_computer, c.id);
					free(f->screen_status);
					f->screen_status = NULL;
					f->screen_ver++;
					pthread_mutex_unlock(&f->mu);
					set_str(&shown, c.id);
					wake(f);
				}
			} else if (!same(shown, c.id)) {
				set_str(&shown, c.id);
			}
			rk_display_shot_release(&shot);
		}
		rk_computer_release(&c);
		for (size_t i = 0; i < ninput; i++)
			free(input[i]);
		free(input);
		free(want);
		pthread_mutex_lock(&f->mu);
		if (!f->stop && f->poke == seen) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += wait_ms * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
		}
	}
	pthread_mutex_unlock(&f->mu);
	takeover_drop(eng, &t);
	free(shown);
	rk_engine_free(eng);
	pthread_mutex_lock(&f->mu);
	f->screen_done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* --- transfers ------------------------------------------------------------------------- */

struct transfer {
	struct feed *f;
	int upload;
	char *computer, *remote, *local;
};

static int transfer_run(struct rk_engine *eng, const struct transfer *x, char **msg, struct rk_error *e)
{
	struct rk_computer c = {0};
	int r = feed_computer(eng, x->computer, &c, e);
	if (r)
		return r;
	struct rk_buf data;
	rk_buf_init(&data);
	if (rk_computer_state_of(c.state) != RK_COMPUTER_RUNNING) {
		r = rk_error_set(e, RK_EUNAVAILABLE,
				 "%s is %s: uploads and downloads need it running (the preview does not)", c.name,
				 c.state);
	} else if (x->upload) {
		if ((r = rk_fs_read_all(x->local, RK_FILE_WRITE_LIMIT, &data, e)) == 0 &&
		    (r = rk_computer_file_write(eng, &c, x->remote, data.data, data.len, 0, e)) == 0)
			*msg = rk_xasprintf("uploaded %s to %s:/%s (%zu bytes)", x->local, c.name, x->remote, data.len);
	} else if (rk_fs_exists(x->local)) {
		r = rk_error_set(e, RK_ECONFLICT, "%s exists here: not overwritten", x->local);
	} else if ((r = rk_computer_file_read(eng, &c, x->remote, RK_FILE_READ_LIMIT, &data, e)) == 0 &&
		   (r = rk_fs_write_atomic(x->local, data.data, data.len, 0644, e)) == 0) {
		*msg = rk_xasprintf("downloaded %s:/%s to %s (%zu bytes)", c.name, x->remote, x->local, data.len);
	}
	rk_buf_release(&data);
	rk_computer_release(&c);
	return r;
}

static void *transfer_main(void *arg)
{
	struct transfer *x = arg;
	struct feed *f = x->f;
	struct rk_engine *eng = NULL;
	struct rk_error e = {0};
	char *msg = NULL;
	int r = rk_engine_open(&eng, &e);
	if (r == 0)
		r = transfer_run(eng, x, &msg, &e);
	if (r)
		msg = rk_xasprintf("%s failed: %s: %s", x->upload ? "upload" : "download", rk_code_name(e.code),
				   e.message);
	rk_engine_free(eng);
	free(x->computer);
	free(x->remote);
	free(x->local);
	free(x);
	/* the UI may join this thread while it holds the lock once busy is 0:
	 * after this section nothing here takes the lock again */
	pthread_mutex_lock(&f->mu);
	free(f->transfer_msg);
	f->transfer_msg = msg;
	f->transfer_busy = 0;
	if (r == 0)
		f->poke++; /* list the directory again: an upload shows at once */
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	wake(f);
	return NULL;
}

int feed_transfer(struct feed *f, int upload, const char *computer, const char *remote, const char *local)
{
	if (f->transfer_busy)
		return -1;
	if (f->transfer_started) {
		pthread_join(f->transfer_thread, NULL); /* the last one has ended: busy is 0 */
		f->transfer_started = 0;
	}
	struct transfer *x = rk_xcalloc(1, sizeof(*x));
	*x = (struct transfer){f, upload, rk_xstrdup(computer), rk_xstrdup(remote), rk_xstrdup(local)};
	free(f->transfer_msg);
	f->transfer_msg = rk_xasprintf("%s %s...", upload ? "uploading" : "downloading", upload ? local : remote);
	f->transfer_busy = 1;
	if (pthread_create(&f->transfer_thread, NULL, transfer_main, x)) {
		f->transfer_busy = 0;
		free(x->computer);
		free(x->remote);
		free(x->local);
		free(x);
		return -1;
	}
	f->transfer_started = 1;
	return 0;
}

/* --- start and stop ------------------------------------------------------------------- */

int feed_start(struct feed *f, const char *data_dir, struct rk_error *err)
{
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (pipe2(f->wake_fd, O_CLOEXEC | O_NONBLOCK))
		return rk_error_set(err, RK_EIO, "pipe: %s", strerror(errno));
	f->data_dir = data_dir;
	f->want_dir = rk_xstrdup("");
	f->consumer = rk_xasprintf("tui-%d", (int)getpid());
	if (pthread_create(&f->data_thread, NULL, data_main, f))
		return rk_error_set(err, RK_EIO, "cannot start the data thread");
	f->threads = 1;
	if (pthread_create(&f->screen_thread, NULL, screen_main, f)) {
		f->threads = 1;
		feed_stop(f);
		return rk_error_set(err, RK_EIO, "cannot start the screen thread");
	}
	f->threads = 2;
	return 0;
}

int feed_stop(struct feed *f)
{
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (f->threads >= 1)
		pthread_join(f->data_thread, NULL);
	if (f->transfer_started) {
		/* a transfer gets a moment to end; one that hangs is left to the exit */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&f->mu);
		while (f->transfer_busy && pthread_cond_timedwait(&f->cv, &f->mu, &ts) == 0)
			;
		int busy = f->transfer_busy;
		pthread_mutex_unlock(&f->mu);
		if (busy) {
			pthread_detach(f->transfer_thread);
			return 1;
		}
		pthread_join(f->transfer_thread, NULL);
		f->transfer_started = 0;
	}
	if (f->threads >= 2) {
		/* a display call may hang for its whole timeout (30 s): quitting does
		 * not wait for it. The thread is left to the process's exit, with
		 * the feed it uses (its lease then expires on its own). */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&f->mu);
		while (!f->screen_done && pthread_cond_timedwait(&f->cv, &f->mu, &ts) == 0)
			;
		int done = f->screen_done;
		pthread_mutex_unlock(&f->mu);
		if (!done) {
			pthread_detach(f->screen_thread);
			f->threads = 0;
			return 1;
		}
		pthread_join(f->screen_thread, NULL);
	}
	f->threads = 0;
	close(f->wake_fd[0]);
	close(f->wake_fd[1]);
	free(f->want_computer);
	free(f->want_run);
	free(f->want_dir);
	free(f->want_file);
	free(f->error);
	computers_free(f->computers, f->ncomputers);
	runs_free(f->runs, f->nruns);
	free(f->timeline_run);
	feed_lines_clear(&f->timeline);
	thumbs_free(f->thumbs, f->nthumbs);
	free(f->history_computer);
	feed_lines_clear(&f->history);
	free(f->files_computer);
	free(f->files_dir);
	files_free(f->files, f->nfiles);
	free(f->files_error);
	free(f->preview_path);
	feed_lines_clear(&f->preview);
	free(f->preview_note);
	free(f->screen_computer);
	free(f->screen_rgb);
	free(f->screen_status);
	free(f->takeover_error);
	free(f->transfer_msg);
	for (size_t i = 0; i < f->ninput; i++)
		free(f->input[i]);
	free(f->input);
	free(f->consumer);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	return 0;
}
