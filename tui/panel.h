#ifndef RK_TUI_PANEL_H
#define RK_TUI_PANEL_H
/* Inside tui/: the dashboard's state, its panes and the key table, and what
 * every pane draws and moves with (panel.c). The loop (tui.c) and the panes
 * (panes.c) include this; each pane fills a struct panel_ops that the loop
 * calls, so the panes never call the loop. */

#include <stddef.h>

#include "engine/util/err.h"
#include "feed.h"

enum pane_id { PANE_COMPUTERS, PANE_RUNS, PANE_TIMELINE, PANE_HISTORY, PANE_FILES, PANE_SCREEN, PANE_COUNT };
#define PANE_BIT(p) (1u << (p))
#define PANES_ALL ((1u << PANE_COUNT) - 1)
#define PANES_LISTS (PANE_BIT(PANE_COMPUTERS) | PANE_BIT(PANE_RUNS) | PANE_BIT(PANE_FILES))
#define PANES_TEXT (PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_HISTORY))

/* What a key does; the key table maps keys to these. */
enum action {
	ACT_NONE,
	ACT_UP,
	ACT_DOWN,
	ACT_PAGE_UP,
	ACT_PAGE_DOWN,
	ACT_TOP,
	ACT_BOTTOM,
	ACT_LEFT,
	ACT_RIGHT,
	ACT_OPEN,
	ACT_NEXT_PANE,
	ACT_PREV_PANE,
	ACT_PANE_1,
	ACT_PANE_2,
	ACT_PANE_3,
	ACT_PANE_4,
	ACT_PANE_5,
	ACT_PANE_6,
	ACT_SEARCH,
	ACT_SEARCH_NEXT,
	ACT_HELP,
	ACT_QUIT,
	ACT_REDRAW,
	ACT_TAKEOVER,
	ACT_FOLLOW,
	ACT_DOWNLOAD,
	ACT_UPLOAD,
	ACT_CLICK,
	ACT_WHEEL_UP,
	ACT_WHEEL_DOWN, /* the mouse, at tui.mouse_y/x */
};

/* A key op's answer. */
enum { KEY_HANDLED = 1, KEY_REDRAW = 2, KEY_QUIT = 4 };

struct rect {
	int y, x, h, w;
};

struct tui;
struct pane;

struct panel_ops {
	void (*draw)(struct tui *t, struct pane *p, int focused); /* into stdscr, inside p->r; feed locked */
	int (*key)(struct tui *t, struct pane *p, enum action a); /* feed locked */
	void (*resize)(struct tui *t, struct pane *p);		  /* p->r changed */
	void (*focus)(struct tui *t, struct pane *p, int on);
};

struct pane {
	enum pane_id id;
	const char *title;
	const struct panel_ops *ops;
	struct rect r; /* including its title row; h == 0: hidden */
	int sel, top;  /* selection and first row shown (lists); first line shown (text) */
	int follow;    /* text: stay at the end as lines arrive */
	int sub;       /* files: 1 while the preview has the keys */
	int ptop;      /* files: the preview's first line */
};

struct key_binding {
	int keys[4];	   /* curses key codes or characters; 0 ends */
	const char *label; /* as the footer and help show it */
	const char *help;
	unsigned panes; /* PANE_BIT mask; PANES_ALL for global keys */
	enum action action;
	const char *hint; /* the footer's word for it, NULL: only in the help */
};
extern const struct key_binding tui_keys[];

/* A picture on the screen: truecolor half blocks written after curses'
 * update over cells curses keeps blank (tui.c). */
#define TUI_PICS_MAX 64
struct tui_pic {
	struct rect r;		  /* the cells it covers */
	const unsigned char *rgb; /* packed RGB, w x h; the feed's (valid while it is locked) */
	int w, h;
};

struct tui {
	struct feed feed;
	struct pane panes[PANE_COUNT];
	enum pane_id focus;
	enum pane_id detail; /* the right-hand pane in the two-column layout */
	int single;	     /* one pane at a time (a small terminal) */
	int color;	     /* colours (a terminal that has them, NO_COLOR unset) */
	int help;	     /* the help screen is up */
	int takeover;	     /* the screen pane sends keys and the mouse to the computer */
	int prompt;	     /* the footer is a prompt: PROMPT_SEARCH, PROMPT_UPLOAD, or 0 */
	char entry[1024];    /* what is typed at the prompt */
	size_t entry_len;
	char search[1024]; /* the last search */
	int mouse_y, mouse_x, mouse_button;
	char *message;			   /* a one-off footer message, or NULL */
	struct tui_pic pics[TUI_PICS_MAX]; /* this frame's pictures */
	int npics;
	struct rect drawn[TUI_PICS_MAX]; /* where the last frame's were */
	int ndrawn;
	struct rect screen_img;		/* where the screen pane's picture is (cells) */
	int screen_img_w, screen_img_h; /* its size in pixels */
};

enum { PROMPT_SEARCH = 1, PROMPT_UPLOAD };

/* Files: uploads local_path into the directory shown (feed locked). */
void tui_files_upload(struct tui *t, const char *local_path);

extern const struct panel_ops tui_computers_ops, tui_runs_ops, tui_timeline_ops, tui_history_ops, tui_files_ops,
	tui_screen_ops;

/* Drawing helpers (panel.c). */
enum tui_color { C_NONE, C_TITLE, C_TITLE_FOCUS, C_SEL, C_GOOD, C_WARN, C_BAD, C_DIM, C_FOOTER };
void tui_attr_on(struct tui *t, enum tui_color c);
void tui_attr_off(struct tui *t, enum tui_color c);
/* Puts UTF-8 text at (y, x), at most w cells, control characters shown as '?'. Returns the cells used. */
int tui_put(int y, int x, int w, const char *s);
/* Fills the rest of a row from x with blanks up to w cells. */
void tui_fill(int y, int x, int w);
void tui_title(struct tui *t, struct pane *p, int focused, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Draws rgb (w x h) with its top left corner at cell (y, x), clipped to
 * rows x cols cells: half blocks in colour, a luminance ramp of characters
 * without. */
void tui_picture(struct tui *t, int y, int x, int rows, int cols, const unsigned char *rgb, int w, int h);
/* Case-insensitive search of needle in s. */
int tui_match(const char *s, const char *needle);
void tui_set_message(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The selected computer (feed locked), or NULL. */
const struct feed_computer *tui_computer(struct tui *t);
/* Tells the feed what is visible and selected (feed locked). */
void tui_sync(struct tui *t);
void tui_focus(struct tui *t, enum pane_id p);
/* Places the panes for the terminal's size and the focus (resize ops run). */
void tui_layout(struct tui *t);
/* Text pane helpers, shared by timeline, history and the preview. */
int tui_text_key(struct tui *t, struct pane *p, enum action a, const struct feed_lines *l, int *top, int rows);
void tui_text_draw(struct tui *t, const struct feed_lines *l, int *top, int follow, int y, int x, int h, int w);
/* Keeps a list selection in range and visible. */
void tui_list_clamp(struct pane *p, int n, int rows);
int tui_list_key(struct tui *t, struct pane *p, enum action a, int n, int rows);

#endif
