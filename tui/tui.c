/* rakazo tui: the event loop, the layout, the key table, the footer and the
 * help screen (see tui.h). */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include "engine/util/buf.h"
#include "curses.h"
#include "halfblock.h"
#include "panel.h"
#include "tui.h"

/* Ctrl-]: gives the keyboard back from a takeover (as telnet does). */
#define KEY_TAKEOVER_END 0x1d

const struct key_binding tui_keys[] = {
	{{'j', KEY_DOWN}, "j/↓", "down", PANES_ALL, ACT_DOWN, "down"},
	{{'k', KEY_UP}, "k/↑", "up", PANES_ALL, ACT_UP, "up"},
	{{'h', KEY_LEFT, KEY_BACKSPACE, 127},
	 "h/←",
	 "left: the parent directory, the list, the left column",
	 PANES_ALL,
	 ACT_LEFT,
	 "left"},
	{{'l', KEY_RIGHT}, "l/→", "right: into a directory or a file, the right column", PANES_ALL, ACT_RIGHT, "right"},
	{{KEY_NPAGE, ' ', 4}, "PgDn", "a page down (also Space, Ctrl-D)", PANES_ALL, ACT_PAGE_DOWN, NULL},
	{{KEY_PPAGE, 21}, "PgUp", "a page up (also Ctrl-U)", PANES_ALL, ACT_PAGE_UP, NULL},
	{{'g', KEY_HOME}, "g", "the first line", PANES_ALL, ACT_TOP, NULL},
	{{'G', KEY_END}, "G", "the last line (the history follows its tail again)", PANES_ALL, ACT_BOTTOM, NULL},
	{{'\n', '\r', KEY_ENTER},
	 "Enter",
	 "open: a computer's history, a run's timeline, a directory or a file",
	 PANES_LISTS,
	 ACT_OPEN,
	 "open"},
	{{'f'}, "f", "follow the tail", PANE_BIT(PANE_HISTORY) | PANE_BIT(PANE_TIMELINE), ACT_FOLLOW, "follow"},
	{{'d'},
	 "d",
	 "download the file into the current directory (a running computer)",
	 PANE_BIT(PANE_FILES),
	 ACT_DOWNLOAD,
	 "download"},
	{{'u'},
	 "u",
	 "upload a local file into this directory (a running computer)",
	 PANE_BIT(PANE_FILES),
	 ACT_UPLOAD,
	 "upload"},
	{{'t'},
	 "t",
	 "takeover: keys and clicks go to the computer (Ctrl-] gives them back)",
	 PANE_BIT(PANE_SCREEN),
	 ACT_TAKEOVER,
	 "takeover"},
	{{'\t'}, "Tab", "the next pane", PANES_ALL, ACT_NEXT_PANE, "pane"},
	{{KEY_BTAB}, "S-Tab", "the previous pane", PANES_ALL, ACT_PREV_PANE, NULL},
	{{'1'}, "1", "computers", PANES_ALL, ACT_PANE_1, NULL},
	{{'2'}, "2", "runs", PANES_ALL, ACT_PANE_2, NULL},
	{{'3'}, "3", "a run's timeline", PANES_ALL, ACT_PANE_3, NULL},
	{{'4'}, "4", "terminal history", PANES_ALL, ACT_PANE_4, NULL},
	{{'5'}, "5", "files", PANES_ALL, ACT_PANE_5, NULL},
	{{'6'}, "6", "the screen", PANES_ALL, ACT_PANE_6, NULL},
	{{'/'}, "/", "search (Enter finds, Esc cancels)", PANES_ALL, ACT_SEARCH, "search"},
	{{'n'}, "n", "the next match", PANES_ALL, ACT_SEARCH_NEXT, NULL},
	{{12}, "^L", "redraw the terminal", PANES_ALL, ACT_REDRAW, NULL},
	{{'?'}, "?", "this help", PANES_ALL, ACT_HELP, "help"},
	{{'q', 'Q', 3}, "q", "quit", PANES_ALL, ACT_QUIT, "quit"},
	{{0}, NULL, NULL, 0, ACT_NONE, NULL},
};

static const char *const pane_names[PANE_COUNT] = {"Computers", "Runs", "Timeline", "History", "Files", "Screen"};

/* --- the terminal, restored on every way out ------------------------------------------ */

static struct termios saved_tio;
static int saved_tio_ok;
static volatile sig_atomic_t quit_signal;

static const char restore_seq[] = "\033[?1000l\033[?1002l\033[?1003l\033[?1006l\033[0m\033[?25h\033[?1049l";

static void on_fatal(int sig)
{
	/* only async-signal-safe calls: the raw sequences and the saved modes */
	ssize_t n = write(1, restore_seq, sizeof(restore_seq) - 1);
	(void)n;
	if (saved_tio_ok)
		tcsetattr(0, TCSANOW, &saved_tio);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_quit(int sig)
{
	quit_signal = sig;
}

static void signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof(fatal) / sizeof(*fatal); i++)
		sigaction(fatal[i], &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* --- header, footer, help -------------------------------------------------------------------- */

static void draw_header(struct tui *t)
{
	tui_attr_on(t, C_TITLE);
	tui_fill(0, 0, COLS);
	int x = tui_put(0, 0, COLS, " rakazo ");
	tui_attr_off(t, C_TITLE);
	for (int i = 0; i < PANE_COUNT && x < COLS; i++) {
		char tab[32];
		snprintf(tab, sizeof(tab), " %d %s ", i + 1, pane_names[i]);
		enum tui_color c = i == (int)t->focus ? C_TITLE_FOCUS : C_NONE;
		tui_attr_on(t, c);
		x += tui_put(0, x, COLS - x, tab);
		tui_attr_off(t, c);
	}
	char counts[96];
	snprintf(counts, sizeof(counts), " %zu computers  %zu runs ", t->feed.ncomputers, t->feed.nruns);
	int cw = (int)strlen(counts);
	if (x + cw < COLS)
		tui_put(0, COLS - cw, cw, counts);
}

static void draw_footer(struct tui *t)
{
	int y = LINES - 1;
	tui_attr_on(t, C_FOOTER);
	tui_fill(y, 0, COLS);
	char line[1100];
	if (t->prompt) {
		snprintf(line, sizeof(line), "%s%s",
			 t->prompt == PROMPT_SEARCH ? "/" : "upload local file: ", t->entry);
		tui_put(y, 0, COLS, line);
		tui_attr_off(t, C_FOOTER);
		curs_set(1);
		move(y, (int)strlen(line) < COLS ? (int)strlen(line) : COLS - 1);
		return;
	}
	curs_set(0);
	const char *err = t->feed.takeover_error ? t->feed.takeover_error : t->feed.error;
	if (t->takeover && t->focus == PANE_SCREEN) {
		snprintf(line, sizeof(line), " TAKEOVER%s: keys and clicks go to the computer  Ctrl-] gives them back",
			 t->feed.takeover_held ? "" : " (taking the control lease...)");
	} else if (t->message) {
		snprintf(line, sizeof(line), " %s", t->message);
	} else if (t->feed.transfer_msg) {
		snprintf(line, sizeof(line), " %s", t->feed.transfer_msg);
	} else if (err) {
		snprintf(line, sizeof(line), " %s", err);
	} else {
		size_t off = (size_t)snprintf(line, sizeof(line), " %s │", pane_names[t->focus]);
		for (const struct key_binding *k = tui_keys; k->label && off < sizeof(line) - 64; k++)
			if (k->hint && (k->panes & PANE_BIT(t->focus)))
				off += (size_t)snprintf(line + off, sizeof(line) - off, " %s %s ", k->label, k->hint);
	}
	tui_put(y, 0, COLS, line);
	tui_attr_off(t, C_FOOTER);
}

static void draw_help(struct tui *t)
{
	int n = 0;
	for (const struct key_binding *k = tui_keys; k->label; k++)
		n++;
	int h = n + 4 < LINES - 2 ? n + 4 : LINES - 2, w = COLS - 4 < 90 ? COLS - 4 : 90;
	int y0 = 1 + (LINES - 2 - h) / 2, x0 = (COLS - w) / 2;
	if (h < 3 || w < 20)
		return;
	for (int y = y0; y < y0 + h; y++)
		tui_fill(y, x0, w);
	tui_attr_on(t, C_TITLE_FOCUS);
	tui_fill(y0, x0, w);
	tui_put(y0, x0, w, " Keys (any key closes this; the mouse clicks, scrolls and selects too)");
	tui_attr_off(t, C_TITLE_FOCUS);
	int y = y0 + 2;
	for (const struct key_binding *k = tui_keys; k->label && y < y0 + h - 1; k++, y++) {
		char where[96] = "";
		if (k->panes != PANES_ALL) {
			size_t off = 0;
			for (int p = 0; p < PANE_COUNT; p++)
				if (k->panes & PANE_BIT(p))
					off += (size_t)snprintf(where + off, sizeof(where) - off, "%s%s",
								off ? ", " : " (", pane_names[p]);
			snprintf(where + off, sizeof(where) - off, ")");
		}
		char row[400];
		snprintf(row, sizeof(row), "  %-8s %s%s", k->label, k->help, where);
		tui_put(y, x0, w, row);
	}
}

static int same_rect(struct rect a, struct rect b)
{
	return a.y == b.y && a.x == b.x && a.h == b.h && a.w == b.w;
}

/* Before curses' update: blanks where a picture was and is no more. Curses
 * thinks those cells blank already, so it would leave the old pixels. */
static void pics_unpaint(struct tui *t, struct rk_buf *out)
{
	for (int i = 0; i < t->ndrawn; i++) {
		struct rect r = t->drawn[i];
		int kept = 0;
		for (int k = 0; k < t->npics && !kept; k++)
			kept = same_rect(r, t->pics[k].r);
		if (kept)
			continue;
		rk_buf_adds(out, "\0337\033[0m");
		for (int y = 0; y < r.h; y++)
			rk_buf_printf(out, "\033[%d;%dH%*s", r.y + y + 1, r.x + 1, r.w, "");
		rk_buf_adds(out, "\0338");
	}
	t->ndrawn = 0;
	for (int k = 0; k < t->npics; k++)
		t->drawn[t->ndrawn++] = t->pics[k].r;
}

/* After it: the pictures in truecolor (the feed locked: they are its). */
static void pics_paint(struct tui *t, struct rk_buf *out)
{
	for (int k = 0; k < t->npics; k++) {
		const struct tui_pic *p = &t->pics[k];
		rk_buf_adds(out, "\0337");
		tui_halfblock_render(out, p->rgb, p->w, p->h, p->r.y + 1, p->r.x + 1, p->r.h, p->r.w, 0);
		rk_buf_adds(out, "\0338");
	}
}

static int drawn_loaded;

static void draw(struct tui *t)
{
	struct rk_buf raw, unpaint;
	rk_buf_init(&raw);
	rk_buf_init(&unpaint);
	pthread_mutex_lock(&t->feed.mu);
	if (t->takeover && !t->feed.takeover_want)
		t->takeover = 0; /* refused: the footer says why */
	erase();
	tui_layout(t);
	tui_sync(t);
	draw_header(t);
	t->screen_img = (struct rect){0, 0, 0, 0};
	t->npics = 0;
	if (!t->feed.loaded) {
		tui_put(LINES / 2, 2, COLS - 4, "loading...");
	} else {
		for (int i = 0; i < PANE_COUNT; i++)
			if (t->panes[i].r.h)
				t->panes[i].ops->draw(t, &t->panes[i], i == (int)t->focus);
		if (!t->single) {
			int lw = t->panes[PANE_COMPUTERS].r.w;
			mvvline(1, lw, ACS_VLINE, LINES - 2);
		}
	}
	if (t->help) {
		draw_help(t);
		t->npics = 0;
	}
	drawn_loaded = t->feed.loaded;
	pics_unpaint(t, &unpaint);
	pics_paint(t, &raw);
	draw_footer(t);
	pthread_mutex_unlock(&t->feed.mu);
	if (unpaint.len) {
		ssize_t n = write(1, unpaint.data, unpaint.len);
		(void)n;
	}
	wnoutrefresh(stdscr);
	doupdate();
	if (raw.len) {
		ssize_t n = write(1, raw.data, raw.len);
		(void)n;
	}
	rk_buf_release(&raw);
	rk_buf_release(&unpaint);
}

/* --- input -------------------------------------------------------------------------------- */

static enum action lookup(struct tui *t, int key)
{
	for (const struct key_binding *k = tui_keys; k->label; k++)
		if (k->panes & PANE_BIT(t->focus))
			for (int i = 0; i < 4 && k->keys[i]; i++)
				if (k->keys[i] == key)
					return k->action;
	return ACT_NONE;
}

static int pane_at(struct tui *t, int y, int x)
{
	for (int i = 0; i < PANE_COUNT; i++) {
		struct rect r = t->panes[i].r;
		if (r.h && y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w)
			return i;
	}
	return -1;
}

/* A global action, or the focused pane's. Feed locked. */
static int dispatch(struct tui *t, enum action a)
{
	struct pane *p = &t->panes[t->focus];
	int r = 0;
	switch (a) {
	case ACT_QUIT:
		return KEY_QUIT;
	case ACT_HELP:
		t->help = 1;
		return KEY_REDRAW;
	case ACT_REDRAW:
		clearok(curscr, TRUE);
		return KEY_REDRAW;
	case ACT_NEXT_PANE:
		tui_focus(t, (t->focus + 1) % PANE_COUNT);
		return KEY_REDRAW;
	case ACT_PREV_PANE:
		tui_focus(t, (t->focus + PANE_COUNT - 1) % PANE_COUNT);
		return KEY_REDRAW;
	case ACT_PANE_1:
	case ACT_PANE_2:
	case ACT_PANE_3:
	case ACT_PANE_4:
	case ACT_PANE_5:
	case ACT_PANE_6:
		tui_focus(t, (enum pane_id)(a - ACT_PANE_1));
		return KEY_REDRAW;
	case ACT_SEARCH:
		t->prompt = PROMPT_SEARCH;
		t->entry[0] = 0;
		t->entry_len = 0;
		return KEY_REDRAW;
	default:
		break;
	}
	r = p->ops->key ? p->ops->key(t, p, a) : 0;
	if (r)
		return r;
	/* not the pane's: left and right move between the columns */
	if (a == ACT_LEFT && !t->single && t->focus >= PANE_TIMELINE) {
		tui_focus(t, PANE_COMPUTERS);
		return KEY_REDRAW;
	}
	if (a == ACT_RIGHT && !t->single && t->focus < PANE_TIMELINE) {
		tui_focus(t, t->detail);
		return KEY_REDRAW;
	}
	if (a == ACT_SEARCH_NEXT && !t->search[0]) {
		tui_set_message(t, "no search yet: / starts one");
		return KEY_REDRAW;
	}
	return 0;
}

static void takeover_key(struct tui *t, int is_key, wint_t ch)
{
	static const struct {
		int key;
		const char *name;
	} named[] = {{KEY_UP, "Up"},	     {KEY_DOWN, "Down"}, {KEY_LEFT, "Left"},	       {KEY_RIGHT, "Right"},
		     {KEY_HOME, "Home"},     {KEY_END, "End"},	 {KEY_PPAGE, "Page_Up"},       {KEY_NPAGE, "Page_Down"},
		     {KEY_DC, "Delete"},     {KEY_IC, "Insert"}, {KEY_BACKSPACE, "BackSpace"}, {KEY_ENTER, "Return"},
		     {KEY_BTAB, "shift+Tab"}};
	char json[128];
	json[0] = 0;
	if (is_key) {
		for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
			if (named[i].key == (int)ch)
				snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"%s\"}", named[i].name);
		if (ch >= KEY_F(1) && ch <= KEY_F(12))
			snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"F%d\"}", (int)(ch - KEY_F0));
	} else if (ch == '\r' || ch == '\n') {
		snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"Return\"}");
	} else if (ch == '\t') {
		snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"Tab\"}");
	} else if (ch == 27) {
		snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"Escape\"}");
	} else if (ch == 127 || ch == 8) {
		snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"BackSpace\"}");
	} else if (ch >= 1 && ch <= 26) {
		snprintf(json, sizeof(json), "{\"action\":\"key\",\"keys\":\"ctrl+%c\"}", 'a' + (int)ch - 1);
	} else if (ch >= 0x20) {
		char mb[MB_LEN_MAX + 1];
		mbstate_t st;
		memset(&st, 0, sizeof(st));
		size_t k = wcrtomb(mb, (wchar_t)ch, &st);
		if (k == (size_t)-1)
			return;
		mb[k] = 0;
		if (!strcmp(mb, "\"") || !strcmp(mb, "\\"))
			snprintf(json, sizeof(json), "{\"action\":\"type\",\"text\":\"\\%s\"}", mb);
		else
			snprintf(json, sizeof(json), "{\"action\":\"type\",\"text\":\"%s\"}", mb);
	}
	if (json[0])
		feed_input(&t->feed, json);
}

static int takeover_mouse(struct tui *t, const MEVENT *ev)
{
	struct rect r = t->screen_img;
	if (!r.h || ev->y < r.y || ev->y >= r.y + r.h || ev->x < r.x || ev->x >= r.x + r.w)
		return 0;
	int x = ev->x - r.x, y = (ev->y - r.y) * 2;
	if (x >= t->screen_img_w || y >= t->screen_img_h)
		return 0;
	if (!(ev->bstate & (BUTTON1_PRESSED | BUTTON2_PRESSED | BUTTON3_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED)))
		return 1; /* a release or a motion: the press made the click */
	char json[160];
	const char *button = (ev->bstate & BUTTON3_PRESSED)   ? "right"
			     : (ev->bstate & BUTTON2_PRESSED) ? "middle"
							      : "left";
	if (ev->bstate & BUTTON4_PRESSED)
		snprintf(json, sizeof(json), "{\"action\":\"scroll\",\"x\":%d,\"y\":%d,\"dy\":-3}", x, y);
	else if (ev->bstate & BUTTON5_PRESSED)
		snprintf(json, sizeof(json), "{\"action\":\"scroll\",\"x\":%d,\"y\":%d,\"dy\":3}", x, y);
	else
		snprintf(json, sizeof(json), "{\"action\":\"click\",\"x\":%d,\"y\":%d,\"button\":\"%s\"}", x, y,
			 button);
	feed_input(&t->feed, json);
	return 1;
}

static int on_mouse(struct tui *t)
{
	MEVENT ev;
	if (getmouse(&ev) != OK)
		return 0;
	if (t->help) {
		t->help = 0;
		return KEY_REDRAW;
	}
	if (t->takeover && t->focus == PANE_SCREEN && takeover_mouse(t, &ev))
		return 0;
	int p = pane_at(t, ev.y, ev.x);
	if (p < 0) {
		/* the header's tabs */
		if (ev.y == 0 && (ev.bstate & BUTTON1_PRESSED)) {
			int x = 8;
			for (int i = 0; i < PANE_COUNT; i++) {
				int w = (int)strlen(pane_names[i]) + 4;
				if (ev.x >= x && ev.x < x + w) {
					tui_focus(t, (enum pane_id)i);
					return KEY_REDRAW;
				}
				x += w;
			}
		}
		return 0;
	}
	t->mouse_y = ev.y;
	t->mouse_x = ev.x;
	struct pane *pp = &t->panes[p];
	if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
		enum pane_id keep = t->focus;
		t->focus = (enum pane_id)p; /* the wheel scrolls the pane under the pointer */
		int r = pp->ops->key(t, pp, (ev.bstate & BUTTON4_PRESSED) ? ACT_WHEEL_UP : ACT_WHEEL_DOWN);
		t->focus = keep;
		return r | KEY_REDRAW;
	}
	if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)) {
		tui_focus(t, (enum pane_id)p);
		pp->ops->key(t, pp, ACT_CLICK);
		return KEY_REDRAW;
	}
	return 0;
}

static int on_prompt_key(struct tui *t, int is_key, wint_t ch)
{
	if (is_key && ch == KEY_BACKSPACE) {
		ch = 127;
		is_key = 0;
	}
	if (is_key && ch == KEY_ENTER) {
		ch = '\r';
		is_key = 0;
	}
	if (is_key)
		return 0;
	if (ch == 27 || ch == 3 || ch == 7) {
		t->prompt = 0;
	} else if (ch == '\n' || ch == '\r') {
		int kind = t->prompt;
		t->prompt = 0;
		if (kind == PROMPT_SEARCH && t->entry[0]) {
			snprintf(t->search, sizeof(t->search), "%s", t->entry);
			return dispatch(t, ACT_SEARCH_NEXT) | KEY_REDRAW;
		}
		if (kind == PROMPT_UPLOAD && t->entry[0])
			tui_files_upload(t, t->entry);
	} else if (ch == 127 || ch == 8) {
		/* back one UTF-8 character */
		while (t->entry_len > 0 && ((unsigned char)t->entry[--t->entry_len] & 0xc0) == 0x80)
			;
		t->entry[t->entry_len] = 0;
	} else if (ch >= 0x20) {
		char mb[MB_LEN_MAX];
		mbstate_t st;
		memset(&st, 0, sizeof(st));
		size_t k = wcrtomb(mb, (wchar_t)ch, &st);
		if (k != (size_t)-1 && t->entry_len + k < sizeof(t->entry)) {
			memcpy(t->entry + t->entry_len, mb, k);
			t->entry_len += k;
			t->entry[t->entry_len] = 0;
		}
	}
	return KEY_REDRAW;
}

static int on_key(struct tui *t, int is_key, wint_t ch)
{
	if (t->takeover && !t->feed.takeover_want)
		t->takeover = 0; /* refused by the feed: the keys are the dashboard's */
	if (is_key && ch == KEY_RESIZE)
		return KEY_REDRAW;
	if (is_key && ch == KEY_MOUSE)
		return on_mouse(t);
	if (t->prompt)
		return on_prompt_key(t, is_key, ch);
	if (t->help) {
		t->help = 0;
		return KEY_REDRAW;
	}
	if (t->takeover && t->focus == PANE_SCREEN) {
		if (!is_key && ch == KEY_TAKEOVER_END) {
			t->takeover = 0;
			t->feed.takeover_want = 0;
			feed_poke(&t->feed);
			tui_set_message(t, "takeover ended: the keyboard is the dashboard's again");
			return KEY_REDRAW;
		}
		takeover_key(t, is_key, ch);
		return 0;
	}
	if (t->message) {
		free(t->message);
		t->message = NULL;
	}
	if (t->feed.transfer_msg && !t->feed.transfer_busy) {
		free(t->feed.transfer_msg);
		t->feed.transfer_msg = NULL;
	}
	enum action a = lookup(t, (int)ch);
	if (a == ACT_NONE)
		return KEY_REDRAW; /* the message went */
	return dispatch(t, a) | KEY_REDRAW;
}

/* --- the loop ---------------------------------------------------------------------------- */

static void colors_init(struct tui *t)
{
	const char *nc = getenv("NO_COLOR");
	t->color = has_colors() && !(nc && *nc);
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	init_pair(C_TITLE, COLOR_CYAN, -1);
	init_pair(C_TITLE_FOCUS, COLOR_CYAN, -1);
	init_pair(C_SEL, COLOR_WHITE, -1);
	init_pair(C_GOOD, COLOR_GREEN, -1);
	init_pair(C_WARN, COLOR_YELLOW, -1);
	init_pair(C_BAD, COLOR_RED, -1);
	init_pair(C_DIM, COLOR_BLUE, -1);
	init_pair(C_FOOTER, COLOR_WHITE, -1);
}

int rk_tui_run(const struct rk_tui_options *opt, struct rk_error *err)
{
	if (!isatty(0) || !isatty(1))
		return rk_error_set(err, RK_EUSAGE, "rakazo tui needs a terminal on stdin and stdout");
	struct tui *t = rk_xcalloc(1, sizeof(*t));
	static const struct panel_ops *const ops[PANE_COUNT] = {&tui_computers_ops, &tui_runs_ops,  &tui_timeline_ops,
								&tui_history_ops,   &tui_files_ops, &tui_screen_ops};
	for (int i = 0; i < PANE_COUNT; i++) {
		t->panes[i].id = (enum pane_id)i;
		t->panes[i].title = pane_names[i];
		t->panes[i].ops = ops[i];
	}
	t->panes[PANE_HISTORY].follow = 1;
	t->focus = PANE_COMPUTERS;
	t->detail = PANE_HISTORY;
	char *data_dir = rk_data_dir_resolve();
	int r = feed_start(&t->feed, data_dir, err);
	if (r) {
		free(data_dir);
		free(t);
		return r;
	}
	if (opt && opt->computer) {
		pthread_mutex_lock(&t->feed.mu);
		t->feed.want_computer = rk_xstrdup(opt->computer); /* an id or a name: resolved on the first list */
		pthread_mutex_unlock(&t->feed.mu);
	}
	if (tcgetattr(0, &saved_tio) == 0)
		saved_tio_ok = 1;
	signals_install();
	set_escdelay(25);
	if (!initscr()) {
		feed_stop(&t->feed);
		free(data_dir);
		free(t);
		return rk_error_set(err, RK_EUNAVAILABLE, "cannot start curses on this terminal (TERM=%s)",
				    getenv("TERM") ? getenv("TERM") : "");
	}
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	colors_init(t);
	mousemask(BUTTON1_PRESSED | BUTTON2_PRESSED | BUTTON3_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	mouseinterval(0);
	int redraw = 1, quit = 0;
	while (!quit && !quit_signal) {
		if (redraw) {
			draw(t);
			redraw = 0;
			if (opt && opt->exit_after_draw && drawn_loaded)
				break;
		}
		struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = t->feed.wake_fd[0], .events = POLLIN}};
		int n = poll(pfd, 2, 1000);
		if (n == 0)
			redraw = 1; /* durations and "ago" move on */
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			feed_drain(&t->feed);
			redraw = 1;
		}
		if (n > 0 && (pfd[0].revents & (POLLHUP | POLLERR)) && !(pfd[0].revents & POLLIN))
			break; /* the terminal went away */
		/* keys (and KEY_RESIZE after SIGWINCH broke the poll) */
		wint_t ch;
		int k;
		while ((k = get_wch(&ch)) != ERR) {
			pthread_mutex_lock(&t->feed.mu);
			int res = on_key(t, k == KEY_CODE_YES, ch);
			pthread_mutex_unlock(&t->feed.mu);
			if (res & KEY_QUIT) {
				quit = 1;
				break;
			}
			if (res & KEY_REDRAW)
				redraw = 1;
		}
	}
	mousemask(0, NULL);
	endwin();
	/* curses leaves the mouse modes it set; the shell should not get them */
	fputs("\033[?1000l\033[?1002l\033[?1006l", stdout);
	fflush(stdout);
	if (saved_tio_ok)
		tcsetattr(0, TCSANOW, &saved_tio);
	if (feed_stop(&t->feed))
		return 0; /* a thread still uses t: the process's exit takes it */
	free(t->message);
	free(data_dir);
	free(t);
	return 0;
}
