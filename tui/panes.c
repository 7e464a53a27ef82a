/* The dashboard's six panes. Each draws from the feed (locked by the
 * caller) inside its rectangle and answers actions; none calls the engine. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/agent/run.h"
#include "engine/machine/computer.h"
#include "engine/util/buf.h"
#include "engine/util/time.h"
#include "curses.h"
#include "panel.h"

static void ago(int64_t ms, char *out, size_t size)
{
	if (ms <= 0) {
		snprintf(out, size, "-");
		return;
	}
	int64_t s = (rk_now_ms() - ms) / 1000;
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, size, "%llds ago", (long long)s);
	else if (s < 3600)
		snprintf(out, size, "%lldm ago", (long long)(s / 60));
	else if (s < 86400)
		snprintf(out, size, "%lldh ago", (long long)(s / 3600));
	else
		snprintf(out, size, "%lldd ago", (long long)(s / 86400));
}

static void duration(int64_t ms, char *out, size_t size)
{
	int64_t s = ms / 1000;
	if (ms < 0)
		snprintf(out, size, "-");
	else if (s < 60)
		snprintf(out, size, "%lld.%llds", (long long)s, (long long)(ms % 1000 / 100));
	else if (s < 3600)
		snprintf(out, size, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(out, size, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
}

/* The colour of a computer's state or a run's (list_row shows both). */
static enum tui_color state_color(const char *state)
{
	enum rk_computer_state c = rk_computer_state_of(state);
	enum rk_run_state r = rk_run_state_of(state);
	if (c == RK_COMPUTER_RUNNING || r == RK_RUN_RUNNING || r == RK_RUN_COMPLETED)
		return C_GOOD;
	if (c == RK_COMPUTER_FAILED || r == RK_RUN_FAILED || r == RK_RUN_INTERRUPTED)
		return C_BAD;
	if (c == RK_COMPUTER_STOPPED || c == RK_COMPUTER_PAUSED || r == RK_RUN_QUEUED || r == RK_RUN_WAITING_TAKEOVER ||
	    r == RK_RUN_CANCELLED)
		return C_WARN;
	return C_NONE;
}

/* Rows of a list pane: below its title and its column heading. */
static int list_rows(const struct pane *p)
{
	return p->r.h > 2 ? p->r.h - 2 : 0;
}

static void heading(struct tui *t, struct pane *p, const char *text)
{
	tui_attr_on(t, C_DIM);
	tui_put(p->r.y + 1, p->r.x, p->r.w, text);
	tui_attr_off(t, C_DIM);
}

static void row_begin(struct tui *t, struct pane *p, int y, int selected, int focused)
{
	if (selected) {
		tui_attr_on(t, focused ? C_SEL : C_NONE);
		if (!focused)
			attron(A_BOLD);
		tui_fill(y, p->r.x, p->r.w);
	}
}

static void row_end(struct tui *t, int selected, int focused)
{
	if (selected) {
		tui_attr_off(t, focused ? C_SEL : C_NONE);
		attroff(A_BOLD);
	}
}

/* One row of a list: head, then the state in its colour, then the rest. */
static void list_row(struct tui *t, struct pane *p, int y, int sel, int focused, const char *head, int head_w,
		     const char *state, const char *rest)
{
	row_begin(t, p, y, sel, focused);
	char cell[64];
	tui_put(y, p->r.x, p->r.w, head);
	enum tui_color sc = sel && focused ? C_NONE : state_color(state);
	tui_attr_on(t, sc);
	snprintf(cell, sizeof(cell), " %-10.10s", state);
	tui_put(y, p->r.x + head_w, p->r.w - head_w, cell);
	tui_attr_off(t, sc);
	if (sel)
		tui_attr_on(t, focused ? C_SEL : C_NONE);
	tui_put(y, p->r.x + head_w + 11, p->r.w - head_w - 11, rest);
	row_end(t, sel, focused);
}

/* The keys of the computers and runs lists: Enter opens open_pane, n finds
 * the next row match() accepts, the rest moves the selection. */
static int list_pane_key(struct tui *t, struct pane *p, enum action a, int n, enum pane_id open_pane,
			 int (*match)(struct tui *t, int i), void (*select)(struct tui *t, int i), const char *noun)
{
	if (a == ACT_OPEN || (a == ACT_RIGHT && t->single)) {
		tui_focus(t, open_pane);
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (a == ACT_SEARCH_NEXT) {
		for (int i = 1; i <= n; i++) {
			int k = (p->sel + i) % n;
			if (match(t, k)) {
				p->sel = k;
				select(t, k);
				return KEY_HANDLED | KEY_REDRAW;
			}
		}
		tui_set_message(t, "no %s matches \"%s\"", noun, t->search);
		return KEY_HANDLED | KEY_REDRAW;
	}
	int r = tui_list_key(t, p, a, n, list_rows(p));
	if (r)
		select(t, p->sel);
	return r;
}

/* --- computers ------------------------------------------------------------------------- */

static int computer_index(struct tui *t)
{
	struct feed *f = &t->feed;
	for (size_t i = 0; i < f->ncomputers; i++)
		if (f->want_computer &&
		    (!strcmp(f->computers[i].id, f->want_computer) || !strcmp(f->computers[i].name, f->want_computer)))
			return (int)i;
	return -1;
}

static void select_computer(struct tui *t, int i)
{
	struct feed *f = &t->feed;
	if (i < 0 || (size_t)i >= f->ncomputers)
		return;
	if (f->want_computer && !strcmp(f->want_computer, f->computers[i].id))
		return;
	free(f->want_computer);
	f->want_computer = rk_xstrdup(f->computers[i].id);
	free(f->want_dir);
	f->want_dir = rk_xstrdup("");
	free(f->want_file);
	f->want_file = NULL;
	t->panes[PANE_FILES].sel = t->panes[PANE_FILES].top = t->panes[PANE_FILES].sub = 0;
	t->panes[PANE_FILES].ptop = 0;
	t->panes[PANE_HISTORY].follow = 1;
	if (t->takeover) {
		t->takeover = 0;
		f->takeover_want = 0;
	}
	feed_poke(f);
}

static void computers_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	int n = (int)f->ncomputers, idx = computer_index(t);
	if (idx < 0 && n > 0) {
		/* nothing chosen yet, or it went away: the first one */
		select_computer(t, p->sel < n ? p->sel : 0);
		idx = computer_index(t);
	} else if (idx >= 0 && strcmp(f->want_computer, f->computers[idx].id)) {
		free(f->want_computer); /* a name from --computer: keep the id */
		f->want_computer = rk_xstrdup(f->computers[idx].id);
	}
	if (idx >= 0)
		p->sel = idx;
	tui_list_clamp(p, n, list_rows(p));
	tui_title(t, p, focused, "%d", n);
	heading(t, p, " NAME             STATE     PROVIDER  SCREENS  CHECKPOINT");
	if (n == 0) {
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no computers: rakazo computer create --name NAME --wait");
		return;
	}
	for (int row = 0; row < list_rows(p) && p->top + row < n; row++) {
		const struct feed_computer *c = &f->computers[p->top + row];
		int y = p->r.y + 2 + row, sel = p->top + row == p->sel;
		char head[64], rest[256], when[32];
		snprintf(head, sizeof(head), " %-16.16s", c->name);
		ago(c->checkpoint_at, when, sizeof(when));
		snprintf(rest, sizeof(rest), "%-9.9s %-8d %s%s%s", c->kind, c->screens, when, c->checkpoint ? " " : "",
			 c->checkpoint ? c->checkpoint : "");
		list_row(t, p, y, sel, focused, head, 17, c->state, rest);
	}
}

static int computer_match(struct tui *t, int i)
{
	const struct feed_computer *c = &t->feed.computers[i];
	return tui_match(c->name, t->search) || tui_match(c->state, t->search) || tui_match(c->kind, t->search) ||
	       tui_match(c->id, t->search);
}

static int computers_key(struct tui *t, struct pane *p, enum action a)
{
	return list_pane_key(t, p, a, (int)t->feed.ncomputers, PANE_HISTORY, computer_match, select_computer,
			     "computer");
}

const struct panel_ops tui_computers_ops = {computers_draw, computers_key, NULL, NULL};

/* --- runs ------------------------------------------------------------------------------------ */

static const char *computer_name(struct tui *t, const char *id)
{
	for (size_t i = 0; id && i < t->feed.ncomputers; i++)
		if (!strcmp(t->feed.computers[i].id, id))
			return t->feed.computers[i].name;
	return id ? id : "-";
}

static int run_index(struct tui *t)
{
	for (size_t i = 0; t->feed.want_run && i < t->feed.nruns; i++)
		if (!strcmp(t->feed.runs[i].id, t->feed.want_run))
			return (int)i;
	return -1;
}

static void select_run(struct tui *t, int i)
{
	struct feed *f = &t->feed;
	if (i < 0 || (size_t)i >= f->nruns || (f->want_run && !strcmp(f->want_run, f->runs[i].id)))
		return;
	free(f->want_run);
	f->want_run = rk_xstrdup(f->runs[i].id);
	t->panes[PANE_TIMELINE].top = 0;
	/* a live run's timeline follows its tail; an ended one opens at its top */
	t->panes[PANE_TIMELINE].follow = !rk_run_state_is_final(f->runs[i].state);
	feed_poke(f);
}

static void runs_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	int n = (int)f->nruns, idx = run_index(t);
	if (idx >= 0)
		p->sel = idx;
	else if (n > 0)
		select_run(t, p->sel < n ? p->sel : 0);
	tui_list_clamp(p, n, list_rows(p));
	int running = 0, asking = 0;
	for (int i = 0; i < n; i++) {
		running += !rk_run_state_is_final(f->runs[i].state);
		asking += rk_run_state_of(f->runs[i].state) == RK_RUN_WAITING_APPROVAL;
	}
	if (asking)
		tui_title(t, p, focused, "%d, %d active, %d waiting for approval", n, running, asking);
	else
		tui_title(t, p, focused, "%d, %d active", n, running);
	heading(t, p, " RUN           STATE     STEPS MODEL        TIME    TOKENS  COMPUTER  TASK");
	if (n == 0) {
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no runs: rakazo run --computer NAME 'TASK'");
		return;
	}
	int64_t now = rk_now_ms();
	for (int row = 0; row < list_rows(p) && p->top + row < n; row++) {
		const struct feed_run *r = &f->runs[p->top + row];
		int y = p->r.y + 2 + row, sel = p->top + row == p->sel;
		char head[64], rest[512], dur[32], tok[32];
		int64_t start = r->started_at > 0 ? r->started_at : -1;
		int64_t end = r->finished_at > 0 ? r->finished_at : now;
		duration(start > 0 ? end - start : -1, dur, sizeof(dur));
		int64_t total = r->input_tokens + r->output_tokens;
		if (total >= 10000)
			snprintf(tok, sizeof(tok), "%lldk", (long long)(total / 1000));
		else
			snprintf(tok, sizeof(tok), "%lld", (long long)total);
		snprintf(head, sizeof(head), " %-13.13s", r->id);
		snprintf(rest, sizeof(rest), "%5lld %-12.12s %-7s %6s  %-9.9s %s", (long long)r->steps,
			 r->model ? r->model : "-", dur, tok, computer_name(t, r->computer_id), r->task ? r->task : "");
		list_row(t, p, y, sel, focused, head, 14, r->state, rest);
	}
}

static int run_match(struct tui *t, int i)
{
	const struct feed_run *r = &t->feed.runs[i];
	return tui_match(r->id, t->search) || tui_match(r->task, t->search) || tui_match(r->state, t->search) ||
	       tui_match(r->model, t->search);
}

static int runs_key(struct tui *t, struct pane *p, enum action a)
{
	return list_pane_key(t, p, a, (int)t->feed.nruns, PANE_TIMELINE, run_match, select_run, "run");
}

const struct panel_ops tui_runs_ops = {runs_draw, runs_key, NULL, NULL};

/* --- timeline ---------------------------------------------------------------------------- */

static void timeline_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	if (!f->want_run) {
		tui_title(t, p, focused, "-");
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no run selected: choose one in Runs (2) and press Enter");
		return;
	}
	if (!f->timeline_run || strcmp(f->timeline_run, f->want_run)) {
		tui_title(t, p, focused, "%s", f->want_run);
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "loading...");
		return;
	}
	tui_title(t, p, focused, "%s  %lld events  %s", f->want_run, (long long)f->timeline_seq,
		  p->follow ? "live tail" : "scrollback (G follows)");
	int y = p->r.y + 1, x = p->r.x + 1, h = p->r.h - 1, w = p->r.w - 1;
	tui_text_draw(t, &f->timeline, &p->top, p->follow, y, x, h, w);
	/* the frames the model saw, over the blank lines kept for them */
	for (size_t i = 0; i < f->nthumbs; i++) {
		const struct feed_thumb *th = &f->thumbs[i];
		int first = (int)(f->timeline_head + th->line), rows = (th->h + 1) / 2;
		int from = first > p->top ? first : p->top, to = first + rows < p->top + h ? first + rows : p->top + h;
		if (from >= to)
			continue;
		int skip = from - first; /* rows above the pane's top */
		tui_picture(t, y + from - p->top, x + FEED_THUMB_X, to - from, w - FEED_THUMB_X,
			    th->rgb + (size_t)skip * 2 * th->w * 3, th->w, th->h - skip * 2);
	}
}

static int timeline_key(struct tui *t, struct pane *p, enum action a)
{
	return tui_text_key(t, p, a, &t->feed.timeline, &p->top, p->r.h - 1);
}

const struct panel_ops tui_timeline_ops = {timeline_draw, timeline_key, NULL, NULL};

/* --- terminal history ---------------------------------------------------------------------- */

static int history_current(struct tui *t)
{
	const struct feed_computer *c = tui_computer(t);
	return c && t->feed.history_computer && !strcmp(c->id, t->feed.history_computer);
}

static void history_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	const struct feed_computer *c = tui_computer(t);
	if (!c) {
		tui_title(t, p, focused, "-");
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no computer");
		return;
	}
	if (!history_current(t)) {
		tui_title(t, p, focused, "%s", c->name);
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "loading...");
		return;
	}
	tui_title(t, p, focused, "%s  %zu lines  %s", c->name, f->history.n,
		  p->follow ? "live tail" : "scrollback (G follows)");
	if (f->history.n == 0) {
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1,
			"no terminal history yet: rakazo computer exec NAME -- COMMAND");
		return;
	}
	tui_text_draw(t, &f->history, &p->top, p->follow, p->r.y + 1, p->r.x + 1, p->r.h - 1, p->r.w - 1);
}

static int history_key(struct tui *t, struct pane *p, enum action a)
{
	if (!history_current(t))
		return 0;
	return tui_text_key(t, p, a, &t->feed.history, &p->top, p->r.h - 1);
}

const struct panel_ops tui_history_ops = {history_draw, history_key, NULL, NULL};

/* --- files ---------------------------------------------------------------------------------- */

static int files_current(struct tui *t)
{
	struct feed *f = &t->feed;
	const struct feed_computer *c = tui_computer(t);
	return c && f->files_computer && !strcmp(c->id, f->files_computer) && f->files_dir && f->want_dir &&
	       !strcmp(f->files_dir, f->want_dir);
}

static int files_split(const struct pane *p)
{
	return p->r.w >= 50;
}

static struct rect files_list_rect(const struct pane *p)
{
	struct rect r = {p->r.y + 1, p->r.x, p->r.h - 1, p->r.w};
	if (files_split(p))
		r.w = p->r.w * 2 / 5;
	return r;
}

static struct rect files_preview_rect(const struct pane *p)
{
	struct rect r = {p->r.y + 1, p->r.x + 1, p->r.h - 1, p->r.w - 1};
	if (files_split(p)) {
		int lw = p->r.w * 2 / 5;
		r.x = p->r.x + lw + 1;
		r.w = p->r.w - lw - 1;
	}
	return r;
}

/* The preview follows the selection: a file is shown, a directory is not. */
static void files_select(struct tui *t, struct pane *p)
{
	struct feed *f = &t->feed;
	char *want = NULL;
	if (files_current(t) && p->sel >= 0 && (size_t)p->sel < f->nfiles && f->files[p->sel].type == 'f')
		want = *f->want_dir ? rk_xasprintf("%s/%s", f->want_dir, f->files[p->sel].name)
				    : rk_xstrdup(f->files[p->sel].name);
	if ((want && f->want_file && !strcmp(want, f->want_file)) || (!want && !f->want_file)) {
		free(want);
		return;
	}
	free(f->want_file);
	f->want_file = want;
	p->ptop = 0;
	feed_poke(f);
}

static void files_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	const struct feed_computer *c = tui_computer(t);
	if (!c) {
		tui_title(t, p, focused, "-");
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no computer");
		return;
	}
	tui_title(t, p, focused, "%s:/%s  (%s%s)", c->name, f->want_dir ? f->want_dir : "", c->state,
		  rk_computer_state_of(c->state) != RK_COMPUTER_RUNNING ? ", from the stored workspace" : "");
	if (!files_current(t)) {
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "loading...");
		return;
	}
	if (f->files_error) {
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, f->files_error);
		return;
	}
	int n = (int)f->nfiles;
	struct rect lr = files_list_rect(p), pr = files_preview_rect(p);
	tui_list_clamp(p, n, lr.h);
	files_select(t, p); /* a new listing: the preview follows its selection */
	int show_list = files_split(p) || !p->sub, show_preview = files_split(p) || p->sub;
	tui_list_clamp(p, n, lr.h);
	if (show_list) {
		if (n == 0)
			tui_put(lr.y, lr.x + 1, lr.w - 1, "(empty directory)");
		for (int row = 0; row < lr.h && p->top + row < n; row++) {
			const struct feed_file *e = &f->files[p->top + row];
			int y = lr.y + row, sel = p->top + row == p->sel;
			if (sel) {
				tui_attr_on(t, focused && !p->sub ? C_SEL : C_NONE);
				attron(A_BOLD);
				tui_fill(y, lr.x, lr.w);
			}
			char size[32], line[600];
			if (e->type == 'd')
				snprintf(size, sizeof(size), "dir");
			else if (e->size < 10240)
				snprintf(size, sizeof(size), "%lld", (long long)e->size);
			else if (e->size < 10 * 1024 * 1024)
				snprintf(size, sizeof(size), "%lldK", (long long)(e->size / 1024));
			else
				snprintf(size, sizeof(size), "%lldM", (long long)(e->size >> 20));
			snprintf(line, sizeof(line), " %s%s", e->name,
				 e->type == 'd'	  ? "/"
				 : e->type == 'l' ? "@"
						  : "");
			int nw = lr.w - 8;
			tui_put(y, lr.x, nw, line);
			tui_put(y, lr.x + lr.w - 7, 7, size);
			if (sel) {
				tui_attr_off(t, focused && !p->sub ? C_SEL : C_NONE);
				attroff(A_BOLD);
			}
		}
	}
	if (files_split(p))
		mvvline(lr.y, lr.x + lr.w, ACS_VLINE, lr.h);
	if (show_preview) {
		if (!f->want_file) {
			tui_put(pr.y, pr.x, pr.w, n ? "(a directory: l or Enter opens it)" : "");
			return;
		}
		if (!f->preview_path || strcmp(f->preview_path, f->want_file)) {
			tui_put(pr.y, pr.x, pr.w, "loading...");
			return;
		}
		int body = pr.h;
		if (f->preview_note) {
			tui_attr_on(t, C_DIM);
			tui_put(pr.y + pr.h - 1, pr.x, pr.w, f->preview_note);
			tui_attr_off(t, C_DIM);
			body--;
		}
		tui_text_draw(t, &f->preview, &p->ptop, 0, pr.y, pr.x, body, pr.w);
	}
}

/* Uploads and downloads go through the provider, so only while it runs. */
static int files_running(struct tui *t, const char *what)
{
	const struct feed_computer *c = tui_computer(t);
	if (c && rk_computer_state_of(c->state) == RK_COMPUTER_RUNNING)
		return 1;
	tui_set_message(t, "%s needs the computer running (it is %s); the preview works either way", what,
			c ? c->state : "gone");
	return 0;
}

static int files_download(struct tui *t, struct pane *p)
{
	struct feed *f = &t->feed;
	if (p->sel < 0 || (size_t)p->sel >= f->nfiles || f->files[p->sel].type != 'f') {
		tui_set_message(t, "download: choose a file");
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (!files_running(t, "download"))
		return KEY_HANDLED | KEY_REDRAW;
	const char *name = f->files[p->sel].name;
	char *remote = *f->want_dir ? rk_xasprintf("%s/%s", f->want_dir, name) : rk_xstrdup(name);
	if (feed_transfer(f, 0, tui_computer(t)->id, remote, name))
		tui_set_message(t, "a transfer is still running");
	free(remote);
	return KEY_HANDLED | KEY_REDRAW;
}

void tui_files_upload(struct tui *t, const char *local_path)
{
	struct feed *f = &t->feed;
	if (!files_running(t, "upload"))
		return;
	const char *base = strrchr(local_path, '/');
	base = base ? base + 1 : local_path;
	if (!*base) {
		tui_set_message(t, "upload: %s names no file", local_path);
		return;
	}
	char *remote = *f->want_dir ? rk_xasprintf("%s/%s", f->want_dir, base) : rk_xstrdup(base);
	if (feed_transfer(f, 1, tui_computer(t)->id, remote, local_path))
		tui_set_message(t, "a transfer is still running");
	free(remote);
}

static int files_key(struct tui *t, struct pane *p, enum action a)
{
	struct feed *f = &t->feed;
	if (!files_current(t))
		return 0;
	if (f->files_error && a != ACT_LEFT)
		return 0; /* a directory that went away: only up */
	int n = (int)f->nfiles;
	struct rect lr = files_list_rect(p), pr = files_preview_rect(p);
	if (a == ACT_DOWNLOAD)
		return files_download(t, p);
	if (a == ACT_UPLOAD) {
		if (files_running(t, "upload")) {
			t->prompt = PROMPT_UPLOAD;
			t->entry[0] = 0;
			t->entry_len = 0;
		}
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (a == ACT_CLICK && files_split(p) && t->mouse_x >= pr.x) {
		p->sub = f->want_file != NULL;
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (p->sub) {
		if (a == ACT_LEFT) {
			p->sub = 0;
			return KEY_HANDLED | KEY_REDRAW;
		}
		return tui_text_key(t, p, a, &f->preview, &p->ptop, pr.h - 1);
	}
	if (a == ACT_CLICK) {
		if (t->mouse_y >= lr.y)
			p->sel = p->top + (t->mouse_y - lr.y);
		tui_list_clamp(p, n, lr.h);
		files_select(t, p);
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (a == ACT_RIGHT || a == ACT_OPEN) {
		if (p->sel < 0 || p->sel >= n)
			return a == ACT_OPEN ? KEY_HANDLED : 0;
		const struct feed_file *e = &f->files[p->sel];
		if (e->type == 'd') {
			char *d = *f->want_dir ? rk_xasprintf("%s/%s", f->want_dir, e->name) : rk_xstrdup(e->name);
			free(f->want_dir);
			f->want_dir = d;
			free(f->want_file);
			f->want_file = NULL;
			p->sel = p->top = 0;
			feed_poke(f);
		} else if (e->type == 'f') {
			files_select(t, p);
			p->sub = 1;
		}
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (a == ACT_LEFT) {
		if (!*f->want_dir)
			return 0;
		char *slash = strrchr(f->want_dir, '/');
		if (slash)
			*slash = 0;
		else
			f->want_dir[0] = 0;
		free(f->want_file);
		f->want_file = NULL;
		free(f->files_dir); /* until the new listing comes, this one is not current */
		f->files_dir = NULL;
		p->sel = p->top = 0;
		free(t->message);
		t->message = NULL;
		feed_poke(f);
		return KEY_HANDLED | KEY_REDRAW;
	}
	if (a == ACT_SEARCH_NEXT) {
		for (int i = 1; i <= n; i++) {
			int k = (p->sel + i) % n;
			if (tui_match(f->files[k].name, t->search)) {
				p->sel = k;
				tui_list_clamp(p, n, lr.h);
				files_select(t, p);
				return KEY_HANDLED | KEY_REDRAW;
			}
		}
		tui_set_message(t, "no file here matches \"%s\"", t->search);
		return KEY_HANDLED | KEY_REDRAW;
	}
	int r = tui_list_key(t, p, a == ACT_CLICK ? ACT_NONE : a, n, lr.h);
	if (r)
		files_select(t, p);
	return r;
}

static void files_focus(struct tui *t, struct pane *p, int on)
{
	if (on)
		files_select(t, p);
}

const struct panel_ops tui_files_ops = {files_draw, files_key, NULL, files_focus};

/* --- the screen ------------------------------------------------------------------------------ */

static void screen_draw(struct tui *t, struct pane *p, int focused)
{
	struct feed *f = &t->feed;
	const struct feed_computer *c = tui_computer(t);
	if (!c) {
		tui_title(t, p, focused, "-");
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "no computer");
		return;
	}
	int current = f->screen_computer && !strcmp(f->screen_computer, c->id);
	if (!current || (!f->screen_rgb && !f->screen_status)) {
		tui_title(t, p, focused, "%s", c->name);
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, "connecting to the display...");
		return;
	}
	if (f->screen_status) {
		tui_title(t, p, focused, "%s", c->name);
		tui_put(p->r.y + 2, p->r.x + 1, p->r.w - 1, f->screen_status);
		return;
	}
	tui_title(t, p, focused, "%s :0  %dx%d  frame %llu  %s%s", c->name, f->screen_full_w, f->screen_full_h,
		  (unsigned long long)f->screen_frames, f->screen_hash,
		  t->takeover ? (f->takeover_held ? "  TAKEOVER" : "  taking over...") : "");
	int rows = p->r.h - 1, cols = p->r.w;
	int ih = (f->screen_h + 1) / 2 < rows ? (f->screen_h + 1) / 2 : rows;
	int iw = f->screen_w < cols ? f->screen_w : cols;
	t->screen_img = (struct rect){p->r.y + 1, p->r.x, ih, iw};
	t->screen_img_w = f->screen_w;
	t->screen_img_h = f->screen_h;
	tui_picture(t, p->r.y + 1, p->r.x, rows, cols, f->screen_rgb, f->screen_w, f->screen_h);
}

static int screen_key(struct tui *t, struct pane *p, enum action a)
{
	struct feed *f = &t->feed;
	if (a != ACT_TAKEOVER)
		return 0;
	const struct feed_computer *c = tui_computer(t);
	if (!c || rk_computer_state_of(c->state) != RK_COMPUTER_RUNNING || !f->screen_rgb) {
		tui_set_message(t, "takeover needs a running computer whose screen shows");
		return KEY_HANDLED | KEY_REDRAW;
	}
	t->takeover = !t->takeover;
	f->takeover_want = t->takeover;
	free(f->takeover_error);
	f->takeover_error = NULL;
	feed_poke(f);
	return KEY_HANDLED | KEY_REDRAW;
}

const struct panel_ops tui_screen_ops = {screen_draw, screen_key, NULL, NULL};
