/* rakazo tui: what every pane draws and moves with (tui.h): colors, text
 * cells, titles, lists and scrolled text, pictures, the layout, focus and the
 * feed's view. The panes (panes.c) and the event loop (tui.c) both call
 * these; kept apart from tui.c so that the panes do not call back into the
 * loop that calls them. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "engine/util/buf.h"
#include "curses.h"
#include "halfblock.h"
#include "panel.h"

/* --- drawing helpers ------------------------------------------------------------------ */

void tui_attr_on(struct tui *t, enum tui_color c)
{
	if (c == C_NONE)
		return;
	if (t->color)
		attron(COLOR_PAIR(c));
	if (c == C_SEL || c == C_TITLE_FOCUS || c == C_FOOTER)
		attron(A_REVERSE);
	if (c == C_TITLE || c == C_TITLE_FOCUS)
		attron(A_BOLD);
	if (c == C_DIM && !t->color)
		attron(A_DIM);
}

void tui_attr_off(struct tui *t, enum tui_color c)
{
	if (c == C_NONE)
		return;
	if (t->color)
		attroff(COLOR_PAIR(c));
	attroff(A_REVERSE | A_BOLD | A_DIM);
}

int tui_put(int y, int x, int w, const char *s)
{
	if (w <= 0 || !s)
		return 0;
	mbstate_t st;
	memset(&st, 0, sizeof(st));
	wchar_t buf[512];
	int used = 0, nb = 0;
	size_t len = strlen(s);
	move(y, x);
	while (len > 0 && used < w) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, s, len, &st);
		if (k == (size_t)-1 || k == (size_t)-2) {
			memset(&st, 0, sizeof(st));
			wc = L'?';
			k = 1;
		} else if (k == 0) {
			break;
		}
		s += k;
		len -= k;
		if (wc < 0x20 || wc == 0x7f || (wc >= 0x80 && wc < 0xa0))
			wc = L'?';
		int cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (used + cw > w)
			break;
		buf[nb++] = wc;
		used += cw;
		if (nb == (int)(sizeof(buf) / sizeof(*buf))) {
			addnwstr(buf, nb);
			nb = 0;
		}
	}
	if (nb)
		addnwstr(buf, nb);
	return used;
}

void tui_fill(int y, int x, int w)
{
	if (w > 0)
		mvhline(y, x, ' ', w);
}

void tui_title(struct tui *t, struct pane *p, int focused, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	enum tui_color c = focused ? C_TITLE_FOCUS : C_TITLE;
	tui_attr_on(t, c);
	tui_fill(p->r.y, p->r.x, p->r.w);
	char head[600];
	snprintf(head, sizeof(head), " %d %s  %s", (int)p->id + 1, p->title, text);
	tui_put(p->r.y, p->r.x, p->r.w, head);
	tui_attr_off(t, c);
}

int tui_match(const char *s, const char *needle)
{
	return s && needle && *needle && strcasestr(s, needle) != NULL;
}

void tui_set_message(struct tui *t, const char *fmt, ...)
{
	free(t->message);
	va_list ap;
	va_start(ap, fmt);
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	t->message = rk_buf_detach(&b, NULL);
}

const struct feed_computer *tui_computer(struct tui *t)
{
	struct feed *f = &t->feed;
	for (size_t i = 0; i < f->ncomputers; i++)
		if (f->want_computer && !strcmp(f->computers[i].id, f->want_computer))
			return &f->computers[i];
	return f->ncomputers ? &f->computers[0] : NULL;
}

void tui_list_clamp(struct pane *p, int n, int rows)
{
	if (p->sel >= n)
		p->sel = n - 1;
	if (p->sel < 0)
		p->sel = 0;
	if (rows < 1)
		rows = 1;
	if (p->top > p->sel)
		p->top = p->sel;
	if (p->sel >= p->top + rows)
		p->top = p->sel - rows + 1;
	if (p->top < 0)
		p->top = 0;
}

int tui_list_key(struct tui *t, struct pane *p, enum action a, int n, int rows)
{
	int page = rows > 1 ? rows - 1 : 1;
	switch (a) {
	case ACT_UP:
		p->sel--;
		break;
	case ACT_DOWN:
		p->sel++;
		break;
	case ACT_PAGE_UP:
		p->sel -= page;
		break;
	case ACT_PAGE_DOWN:
		p->sel += page;
		break;
	case ACT_TOP:
		p->sel = 0;
		break;
	case ACT_BOTTOM:
		p->sel = n - 1;
		break;
	case ACT_WHEEL_UP:
		p->sel -= 3;
		break;
	case ACT_WHEEL_DOWN:
		p->sel += 3;
		break;
	case ACT_CLICK:
		/* rows start below the pane's title and its column heading */
		if (t->mouse_y >= p->r.y + 2)
			p->sel = p->top + (t->mouse_y - p->r.y - 2);
		break;
	case ACT_SEARCH_NEXT:
		return 0; /* the pane's own */
	default:
		return 0;
	}
	tui_list_clamp(p, n, rows);
	return KEY_HANDLED | KEY_REDRAW;
}

int tui_text_key(struct tui *t, struct pane *p, enum action a, const struct feed_lines *l, int *top, int rows)
{
	int n = (int)l->n, page = rows > 1 ? rows - 1 : 1, max = n - rows > 0 ? n - rows : 0;
	switch (a) {
	case ACT_UP:
		(*top)--;
		p->follow = 0;
		break;
	case ACT_DOWN:
		(*top)++;
		break;
	case ACT_PAGE_UP:
		*top -= page;
		p->follow = 0;
		break;
	case ACT_PAGE_DOWN:
		*top += page;
		break;
	case ACT_WHEEL_UP:
		*top -= 3;
		p->follow = 0;
		break;
	case ACT_WHEEL_DOWN:
		*top += 3;
		break;
	case ACT_TOP:
		*top = 0;
		p->follow = 0;
		break;
	case ACT_BOTTOM:
		*top = max;
		p->follow = 1;
		break;
	case ACT_FOLLOW:
		*top = max;
		p->follow = 1;
		break;
	case ACT_SEARCH_NEXT:
		for (int i = 1; i <= n; i++) {
			int k = (*top + i) % (n ? n : 1);
			if (tui_match(l->v[k], t->search)) {
				*top = k;
				p->follow = 0;
				tui_set_message(t, "line %d of %d matches \"%s\"", k + 1, n, t->search);
				return KEY_HANDLED | KEY_REDRAW;
			}
		}
		tui_set_message(t, "no match for \"%s\"", t->search);
		return KEY_HANDLED | KEY_REDRAW;
	default:
		return 0;
	}
	if (*top > max)
		*top = max;
	if (*top < 0)
		*top = 0;
	if (*top == max && (a == ACT_DOWN || a == ACT_PAGE_DOWN || a == ACT_WHEEL_DOWN) &&
	    (p->id == PANE_HISTORY || p->id == PANE_TIMELINE))
		p->follow = 1; /* scrolled back to the end: follow again */
	return KEY_HANDLED | KEY_REDRAW;
}

void tui_text_draw(struct tui *t, const struct feed_lines *l, int *top, int follow, int y, int x, int h, int w)
{
	int n = (int)l->n, max = n - h > 0 ? n - h : 0;
	if (follow || *top > max)
		*top = max;
	for (int i = 0; i < h && *top + i < n; i++) {
		const char *s = l->v[*top + i];
		int hit = tui_match(s, t->search) && t->search[0];
		if (hit)
			attron(A_BOLD | A_UNDERLINE);
		tui_put(y + i, x, w, s);
		if (hit)
			attroff(A_BOLD | A_UNDERLINE);
	}
}

/* --- layout, selection and the feed's view -------------------------------------------- */

void tui_layout(struct tui *t)
{
	int body_h = LINES - 2, w = COLS;
	for (int i = 0; i < PANE_COUNT; i++)
		t->panes[i].r = (struct rect){0, 0, 0, 0};
	t->single = COLS < 90 || LINES < 16;
	if (body_h < 1)
		return;
	if (t->single) {
		t->panes[t->focus].r = (struct rect){1, 0, body_h, w};
	} else {
		int lw = w / 2 < 34 ? 34 : w / 2, ch = body_h / 2;
		t->panes[PANE_COMPUTERS].r = (struct rect){1, 0, ch, lw};
		t->panes[PANE_RUNS].r = (struct rect){1 + ch, 0, body_h - ch, lw};
		t->panes[t->detail].r = (struct rect){1, lw + 1, body_h, w - lw - 1};
	}
	for (int i = 0; i < PANE_COUNT; i++)
		if (t->panes[i].r.h && t->panes[i].ops->resize)
			t->panes[i].ops->resize(t, &t->panes[i]);
}

void tui_focus(struct tui *t, enum pane_id p)
{
	if (p == t->focus)
		return;
	struct pane *old = &t->panes[t->focus];
	if (old->ops->focus)
		old->ops->focus(t, old, 0);
	if (t->takeover) {
		t->takeover = 0;
		t->feed.takeover_want = 0;
		feed_poke(&t->feed);
	}
	t->focus = p;
	if (p >= PANE_TIMELINE)
		t->detail = p;
	tui_layout(t);
	if (t->panes[p].ops->focus)
		t->panes[p].ops->focus(t, &t->panes[p], 1);
}

void tui_sync(struct tui *t)
{
	struct feed *f = &t->feed;
	unsigned views = 0;
	static const unsigned bits[PANE_COUNT] =
		{0, 0, FEED_VIEW_TIMELINE, FEED_VIEW_HISTORY, FEED_VIEW_FILES, FEED_VIEW_SCREEN};
	for (int i = 0; i < PANE_COUNT; i++)
		if (t->panes[i].r.h)
			views |= bits[i];
	struct rect r = t->panes[PANE_SCREEN].r;
	int cols = r.h ? r.w : 0, rows = r.h > 2 ? r.h - 1 : 0;
	if (views != f->views || cols != f->screen_cols || rows != f->screen_rows) {
		f->views = views;
		f->screen_cols = cols;
		f->screen_rows = rows;
		feed_poke(f);
	}
}

void tui_picture(struct tui *t, int y, int x, int rows, int cols, const unsigned char *rgb, int w, int h)
{
	int ih = (h + 1) / 2 < rows ? (h + 1) / 2 : rows, iw = w < cols ? w : cols;
	if (ih <= 0 || iw <= 0 || !rgb)
		return;
	if (t->color) {
		/* tui.c writes it over these blank cells after the update */
		if (t->npics < TUI_PICS_MAX)
			t->pics[t->npics++] = (struct tui_pic){{y, x, ih, iw}, rgb, w, h};
		return;
	}
	static const char ramp[] = " .:-=+*#%@";
	char line[1024];
	for (int row = 0; row < ih; row++) {
		int k;
		for (k = 0; k < iw && k < (int)sizeof(line) - 1; k++)
			line[k] = ramp[tui_halfblock_luma(rgb, w, h, k, row) * 9 / 255];
		line[k] = 0;
		tui_put(y + row, x, iw, line);
	}
}
