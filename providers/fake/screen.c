/* The fake provider's display: a framebuffer it draws itself from a small
 * state file (DATA_DIR/fake/<ref>/screen-N.json), so it survives across
 * processes and tests can assert exact pixels.
 *
 * What it draws (RGB):
 *   - a grey (128,128,128) background;
 *   - a white text field at (20,20)-(w-20,60) showing the last line of the
 *     typed text in black, 5x7 glyphs scaled 2x on a 12 px advance from
 *     (28,33); characters outside ASCII show as a hollow box;
 *   - a status line at (20,72): "scroll DX,DY key KEYS" in dark grey (32);
 *   - a 10x10 marker centred on each click: red (left), green (middle),
 *     blue (right); the most recent 64 are kept;
 *   - a 4x4 black dot on each point of a drag path.
 * The pointer is not drawn; capture reports its position. Actions arrive
 * as the screen engine's JSON in screen coordinates. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "providers/fake/machine.h"
#include "providers/fake/screen.h"

#define MARKS_MAX 64
#define DOTS_MAX 256
#define TEXT_MAX 8192
#define STATE_MAX (1 << 20)

/* 5x7 glyphs for ASCII 32..126, one byte a column, bit 0 at the top. */
static const unsigned char font5x7[95][5] = {
	{0x00, 0x00, 0x00, 0x00, 0x00}, {0x00, 0x00, 0x5F, 0x00, 0x00}, {0x00, 0x07, 0x00, 0x07, 0x00},
	{0x14, 0x7F, 0x14, 0x7F, 0x14}, {0x24, 0x2A, 0x7F, 0x2A, 0x12}, {0x23, 0x13, 0x08, 0x64, 0x62},
	{0x36, 0x49, 0x55, 0x22, 0x50}, {0x00, 0x05, 0x03, 0x00, 0x00}, {0x00, 0x1C, 0x22, 0x41, 0x00},
	{0x00, 0x41, 0x22, 0x1C, 0x00}, {0x08, 0x2A, 0x1C, 0x2A, 0x08}, {0x08, 0x08, 0x3E, 0x08, 0x08},
	{0x00, 0x50, 0x30, 0x00, 0x00}, {0x08, 0x08, 0x08, 0x08, 0x08}, {0x00, 0x60, 0x60, 0x00, 0x00},
	{0x20, 0x10, 0x08, 0x04, 0x02}, {0x3E, 0x51, 0x49, 0x45, 0x3E}, {0x00, 0x42, 0x7F, 0x40, 0x00},
	{0x42, 0x61, 0x51, 0x49, 0x46}, {0x21, 0x41, 0x45, 0x4B, 0x31}, {0x18, 0x14, 0x12, 0x7F, 0x10},
	{0x27, 0x45, 0x45, 0x45, 0x39}, {0x3C, 0x4A, 0x49, 0x49, 0x30}, {0x01, 0x71, 0x09, 0x05, 0x03},
	{0x36, 0x49, 0x49, 0x49, 0x36}, {0x06, 0x49, 0x49, 0x29, 0x1E}, {0x00, 0x36, 0x36, 0x00, 0x00},
	{0x00, 0x56, 0x36, 0x00, 0x00}, {0x00, 0x08, 0x14, 0x22, 0x41}, {0x14, 0x14, 0x14, 0x14, 0x14},
	{0x41, 0x22, 0x14, 0x08, 0x00}, {0x02, 0x01, 0x51, 0x09, 0x06}, {0x32, 0x49, 0x79, 0x41, 0x3E},
	{0x7E, 0x11, 0x11, 0x11, 0x7E}, {0x7F, 0x49, 0x49, 0x49, 0x36}, {0x3E, 0x41, 0x41, 0x41, 0x22},
	{0x7F, 0x41, 0x41, 0x22, 0x1C}, {0x7F, 0x49, 0x49, 0x49, 0x41}, {0x7F, 0x09, 0x09, 0x01, 0x01},
	{0x3E, 0x41, 0x41, 0x51, 0x32}, {0x7F, 0x08, 0x08, 0x08, 0x7F}, {0x00, 0x41, 0x7F, 0x41, 0x00},
	{0x20, 0x40, 0x41, 0x3F, 0x01}, {0x7F, 0x08, 0x14, 0x22, 0x41}, {0x7F, 0x40, 0x40, 0x40, 0x40},
	{0x7F, 0x02, 0x04, 0x02, 0x7F}, {0x7F, 0x04, 0x08, 0x10, 0x7F}, {0x3E, 0x41, 0x41, 0x41, 0x3E},
	{0x7F, 0x09, 0x09, 0x09, 0x06}, {0x3E, 0x41, 0x51, 0x21, 0x5E}, {0x7F, 0x09, 0x19, 0x29, 0x46},
	{0x46, 0x49, 0x49, 0x49, 0x31}, {0x01, 0x01, 0x7F, 0x01, 0x01}, {0x3F, 0x40, 0x40, 0x40, 0x3F},
	{0x1F, 0x20, 0x40, 0x20, 0x1F}, {0x7F, 0x20, 0x18, 0x20, 0x7F}, {0x63, 0x14, 0x08, 0x14, 0x63},
	{0x03, 0x04, 0x78, 0x04, 0x03}, {0x61, 0x51, 0x49, 0x45, 0x43}, {0x00, 0x00, 0x7F, 0x41, 0x41},
	{0x02, 0x04, 0x08, 0x10, 0x20}, {0x41, 0x41, 0x7F, 0x00, 0x00}, {0x04, 0x02, 0x01, 0x02, 0x04},
	{0x40, 0x40, 0x40, 0x40, 0x40}, {0x00, 0x01, 0x02, 0x04, 0x00}, {0x20, 0x54, 0x54, 0x54, 0x78},
	{0x7F, 0x48, 0x44, 0x44, 0x38}, {0x38, 0x44, 0x44, 0x44, 0x20}, {0x38, 0x44, 0x44, 0x48, 0x7F},
	{0x38, 0x54, 0x54, 0x54, 0x18}, {0x08, 0x7E, 0x09, 0x01, 0x02}, {0x08, 0x14, 0x54, 0x54, 0x3C},
	{0x7F, 0x08, 0x04, 0x04, 0x78}, {0x00, 0x44, 0x7D, 0x40, 0x00}, {0x20, 0x40, 0x44, 0x3D, 0x00},
	{0x00, 0x7F, 0x10, 0x28, 0x44}, {0x00, 0x41, 0x7F, 0x40, 0x00}, {0x7C, 0x04, 0x18, 0x04, 0x78},
	{0x7C, 0x08, 0x04, 0x04, 0x78}, {0x38, 0x44, 0x44, 0x44, 0x38}, {0x7C, 0x14, 0x14, 0x14, 0x08},
	{0x08, 0x14, 0x14, 0x18, 0x7C}, {0x7C, 0x08, 0x04, 0x04, 0x08}, {0x48, 0x54, 0x54, 0x54, 0x20},
	{0x04, 0x3F, 0x44, 0x40, 0x20}, {0x3C, 0x40, 0x40, 0x20, 0x7C}, {0x1C, 0x20, 0x40, 0x20, 0x1C},
	{0x3C, 0x40, 0x30, 0x40, 0x3C}, {0x44, 0x28, 0x10, 0x28, 0x44}, {0x0C, 0x50, 0x50, 0x50, 0x3C},
	{0x44, 0x64, 0x54, 0x4C, 0x44}, {0x00, 0x08, 0x36, 0x41, 0x00}, {0x00, 0x00, 0x7F, 0x00, 0x00},
	{0x00, 0x41, 0x36, 0x08, 0x00}, {0x08, 0x08, 0x2A, 0x1C, 0x08},
};
static const unsigned char box_glyph[5] = {0x7F, 0x41, 0x41, 0x41, 0x7F};

struct mark {
	int x, y, kind; /* kind: 1-3 a button, 0 a drag dot */
};

struct fake_screen {
	int width, height;
	int cursor_x, cursor_y;
	int scroll_x, scroll_y;
	struct rk_buf text;
	char *last_key;
	struct mark *marks; /* clicks (at most MARKS_MAX) then dots (at most DOTS_MAX), in order */
	size_t n_marks;
};

static char *state_path(const struct rk_machine *m, int display, const char *ext)
{
	char *dir = rk_fake_machine_dir(m);
	char *p = rk_xasprintf("%s/screen-%d.%s", dir, display, ext);
	free(dir);
	return p;
}

static void screen_release(struct fake_screen *s)
{
	rk_buf_release(&s->text);
	free(s->last_key);
	free(s->marks);
	memset(s, 0, sizeof(*s));
}

static int load(const struct rk_machine *m, int display, struct fake_screen *s, struct rk_error *err)
{
	memset(s, 0, sizeof(*s));
	rk_buf_init(&s->text);
	char *path = state_path(m, display, "json");
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	int rc = rk_fs_read_all(path, STATE_MAX, &b, err);
	if (rc < 0) {
		int missing = !rk_fs_exists(path);
		free(path);
		rk_buf_release(&b);
		if (missing)
			return rk_error_set(err, RK_EUNAVAILABLE,
					    "fake display %d is not started (start the display first)", display);
		return rc;
	}
	cJSON *doc = rk_json_parse(b.data, b.len, "fake screen state", err);
	rk_buf_release(&b);
	if (!doc) {
		rk_error_prefix(err, "%s", path);
		free(path);
		if (err)
			rk_err(err)->code = RK_ECORRUPT;
		return -RK_ECORRUPT;
	}
	free(path);
	s->width = cJSON_GetObjectItem(doc, "width") ? cJSON_GetObjectItem(doc, "width")->valueint : 1280;
	s->height = cJSON_GetObjectItem(doc, "height") ? cJSON_GetObjectItem(doc, "height")->valueint : 800;
	if (s->width < 64 || s->height < 64 || s->width > 8192 || s->height > 8192) {
		cJSON_Delete(doc);
		return rk_error_set(err, RK_ECORRUPT, "fake display %d has a bad size", display);
	}
	const cJSON *v;
	if ((v = cJSON_GetObjectItem(doc, "cursor")) && cJSON_GetArraySize(v) == 2) {
		s->cursor_x = cJSON_GetArrayItem(v, 0)->valueint;
		s->cursor_y = cJSON_GetArrayItem(v, 1)->valueint;
	}
	if ((v = cJSON_GetObjectItem(doc, "scroll")) && cJSON_GetArraySize(v) == 2) {
		s->scroll_x = cJSON_GetArrayItem(v, 0)->valueint;
		s->scroll_y = cJSON_GetArrayItem(v, 1)->valueint;
	}
	rk_buf_adds(&s->text, rk_json_string(doc, "text", ""));
	s->last_key = rk_xstrdup(rk_json_string(doc, "last_key", NULL));
	if ((v = cJSON_GetObjectItem(doc, "marks")) && cJSON_IsArray(v)) {
		int n = cJSON_GetArraySize(v);
		s->marks = rk_xcalloc((size_t)n + 1, sizeof(*s->marks));
		for (const cJSON *e = v->child; e; e = e->next) {
			if (cJSON_GetArraySize(e) != 3)
				continue;
			struct mark *mk = &s->marks[s->n_marks++];
			mk->x = cJSON_GetArrayItem(e, 0)->valueint;
			mk->y = cJSON_GetArrayItem(e, 1)->valueint;
			mk->kind = cJSON_GetArrayItem(e, 2)->valueint;
		}
	}
	cJSON_Delete(doc);
	return 0;
}

static int save(const struct rk_machine *m, int display, const struct fake_screen *s, struct rk_error *err)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "width", s->width);
	cJSON_AddNumberToObject(doc, "height", s->height);
	cJSON *c = cJSON_AddArrayToObject(doc, "cursor");
	cJSON_AddItemToArray(c, cJSON_CreateNumber(s->cursor_x));
	cJSON_AddItemToArray(c, cJSON_CreateNumber(s->cursor_y));
	c = cJSON_AddArrayToObject(doc, "scroll");
	cJSON_AddItemToArray(c, cJSON_CreateNumber(s->scroll_x));
	cJSON_AddItemToArray(c, cJSON_CreateNumber(s->scroll_y));
	cJSON_AddStringToObject(doc, "text", s->text.data);
	rk_json_add_str_or_null(doc, "last_key", s->last_key);
	cJSON *marks = cJSON_AddArrayToObject(doc, "marks");
	for (size_t i = 0; i < s->n_marks; i++) {
		cJSON *e = cJSON_CreateArray();
		cJSON_AddItemToArray(e, cJSON_CreateNumber(s->marks[i].x));
		cJSON_AddItemToArray(e, cJSON_CreateNumber(s->marks[i].y));
		cJSON_AddItemToArray(e, cJSON_CreateNumber(s->marks[i].kind));
		cJSON_AddItemToArray(marks, e);
	}
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	rk_json_print(&b, doc);
	cJSON_Delete(doc);
	char *path = state_path(m, display, "json");
	int rc = rk_fs_write_atomic(path, b.data, b.len, 0600, err);
	free(path);
	rk_buf_release(&b);
	return rc;
}

/* Serializes read-modify-write across processes. Returns the fd or -1. */
static int lock_display(const struct rk_machine *m, int display, struct rk_error *err)
{
	char *path = state_path(m, display, "lock");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rk_error_errno(err, RK_EIO, errno, "cannot open %s", path);
		free(path);
		return -1;
	}
	free(path);
	while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
		;
	return fd;
}

static void unlock_display(int fd)
{
	if (fd >= 0)
		close(fd); /* drops the flock */
}

/* --- drawing ------------------------------------------------------------- */

static void fill(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, int r, int g, int b)
{
	if (x0 < 0)
		x0 = 0;
	if (y0 < 0)
		y0 = 0;
	if (x1 > w)
		x1 = w;
	if (y1 > h)
		y1 = h;
	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++) {
			unsigned char *p = rgb + ((size_t)y * w + x) * 3;
			p[0] = (unsigned char)r;
			p[1] = (unsigned char)g;
			p[2] = (unsigned char)b;
		}
}

static void glyph(unsigned char *rgb, int w, int h, int x, int y, const unsigned char *cols, int v)
{
	for (int c = 0; c < 5; c++)
		for (int r = 0; r < 7; r++)
			if (cols[c] & (1 << r))
				fill(rgb, w, h, x + c * 2, y + r * 2, x + c * 2 + 2, y + r * 2 + 2, v, v, v);
}

/* Draws text (UTF-8) from (x, y), at most max_chars glyphs. */
static void draw_text(unsigned char *rgb, int w, int h, int x, int y, const char *text, size_t max_chars, int v)
{
	const unsigned char *u = (const unsigned char *)text;
	for (size_t n = 0; *u && n < max_chars; n++, x += 12) {
		if (*u >= 32 && *u < 127) {
			glyph(rgb, w, h, x, y, font5x7[*u - 32], v);
			u++;
			continue;
		}
		glyph(rgb, w, h, x, y, box_glyph, v);
		u++;
		while ((*u & 0xc0) == 0x80) /* the rest of one UTF-8 sequence */
			u++;
	}
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (const unsigned char *u = (const unsigned char *)s; *u; u++)
		n += (*u & 0xc0) != 0x80;
	return n;
}

static void render(const struct fake_screen *s, unsigned char *rgb)
{
	int w = s->width, h = s->height;
	memset(rgb, 128, (size_t)w * h * 3);
	fill(rgb, w, h, 20, 20, w - 20, 60, 255, 255, 255);
	/* the last line of the text, as much of its end as fits */
	const char *line = strrchr(s->text.data, '\n');
	line = line ? line + 1 : s->text.data;
	size_t fit = (size_t)((w - 56) / 12), n = utf8_chars(line);
	while (n > fit) {
		line++;
		while ((*(const unsigned char *)line & 0xc0) == 0x80)
			line++;
		n--;
	}
	draw_text(rgb, w, h, 28, 33, line, fit, 0);
	char status[160];
	snprintf(status, sizeof(status), "scroll %d,%d key %s", s->scroll_x, s->scroll_y,
		 s->last_key ? s->last_key : "-");
	draw_text(rgb, w, h, 20, 72, status, (size_t)((w - 40) / 12), 32);
	for (size_t i = 0; i < s->n_marks; i++) {
		const struct mark *mk = &s->marks[i];
		if (mk->kind == 0) {
			fill(rgb, w, h, mk->x - 2, mk->y - 2, mk->x + 2, mk->y + 2, 0, 0, 0);
			continue;
		}
		int r = mk->kind == 1 ? 255 : 0, g = mk->kind == 2 ? 255 : 0, b = mk->kind == 3 ? 255 : 0;
		fill(rgb, w, h, mk->x - 5, mk->y - 5, mk->x + 5, mk->y + 5, r, g, b);
	}
}

/* --- actions ------------------------------------------------------------- */

static void add_mark(struct fake_screen *s, int x, int y, int kind)
{
	size_t clicks = 0, dots = 0;
	for (size_t i = 0; i < s->n_marks; i++)
		*(s->marks[i].kind ? &clicks : &dots) += 1;
	/* drop the oldest of the same sort past its limit */
	if ((kind && clicks >= MARKS_MAX) || (!kind && dots >= DOTS_MAX)) {
		for (size_t i = 0; i < s->n_marks; i++)
			if ((s->marks[i].kind != 0) == (kind != 0)) {
				memmove(&s->marks[i], &s->marks[i + 1], (s->n_marks - i - 1) * sizeof(*s->marks));
				s->n_marks--;
				break;
			}
	}
	s->marks = rk_xrealloc(s->marks, (s->n_marks + 1) * sizeof(*s->marks));
	s->marks[s->n_marks++] = (struct mark){x, y, kind};
}

static int button_of(const cJSON *a)
{
	const char *b = rk_json_string(a, "button", "left");
	return strcmp(b, "middle") == 0 ? 2 : strcmp(b, "right") == 0 ? 3 : 1;
}

static int point_of(const cJSON *a, const struct fake_screen *s, int *x, int *y, struct rk_error *err)
{
	const cJSON *vx = cJSON_GetObjectItem(a, "x"), *vy = cJSON_GetObjectItem(a, "y");
	if (!vx && !vy)
		return 0;
	if (!vx || !vy || !cJSON_IsNumber(vx) || !cJSON_IsNumber(vy))
		return rk_error_set(err, RK_EINVALID, "fake screen: x and y must be numbers");
	if (vx->valueint < 0 || vy->valueint < 0 || vx->valueint >= s->width || vy->valueint >= s->height)
		return rk_error_set(err, RK_EINVALID, "fake screen: (%d, %d) is off the %dx%d screen", vx->valueint,
				    vy->valueint, s->width, s->height);
	*x = vx->valueint;
	*y = vy->valueint;
	return 1;
}

static void backspace(struct rk_buf *t)
{
	while (t->len > 0) {
		unsigned char c = (unsigned char)t->data[--t->len];
		if ((c & 0xc0) != 0x80)
			break;
	}
	t->data[t->len] = 0;
}

static int apply(struct fake_screen *s, const cJSON *a, struct rk_error *err)
{
	const char *kind = rk_json_string(a, "action", NULL);
	if (!kind)
		return rk_error_set(err, RK_EINVALID, "fake screen: the action has no \"action\"");
	int x = s->cursor_x, y = s->cursor_y;
	int rc = point_of(a, s, &x, &y, err);
	if (rc < 0)
		return rc;
	s->cursor_x = x;
	s->cursor_y = y;
	if (strcmp(kind, "move") == 0 || strcmp(kind, "up") == 0 || strcmp(kind, "wait") == 0)
		return 0;
	if (strcmp(kind, "click") == 0 || strcmp(kind, "double_click") == 0 || strcmp(kind, "right_click") == 0 ||
	    strcmp(kind, "down") == 0) {
		int b = strcmp(kind, "right_click") == 0 ? 3 : button_of(a);
		add_mark(s, x, y, b);
		return 0;
	}
	if (strcmp(kind, "drag") == 0) {
		const cJSON *path = cJSON_GetObjectItem(a, "path");
		for (const cJSON *p = path ? path->child : NULL; p; p = p->next) {
			const cJSON *px = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 0) : cJSON_GetObjectItem(p, "x");
			const cJSON *py = cJSON_IsArray(p) ? cJSON_GetArrayItem(p, 1) : cJSON_GetObjectItem(p, "y");
			if (!cJSON_IsNumber(px) || !cJSON_IsNumber(py))
				return rk_error_set(err, RK_EINVALID, "fake screen: bad drag point");
			add_mark(s, px->valueint, py->valueint, 0);
			s->cursor_x = px->valueint;
			s->cursor_y = py->valueint;
		}
		return 0;
	}
	if (strcmp(kind, "scroll") == 0) {
		const cJSON *dx = cJSON_GetObjectItem(a, "dx"), *dy = cJSON_GetObjectItem(a, "dy");
		s->scroll_x += cJSON_IsNumber(dx) ? dx->valueint : 0;
		s->scroll_y += cJSON_IsNumber(dy) ? dy->valueint : 0;
		return 0;
	}
	if (strcmp(kind, "type") == 0) {
		const char *t = rk_json_string(a, "text", "");
		for (const char *p = t; *p; p++)
			rk_buf_addc(&s->text, *p == '\r' ? '\n' : *p);
		if (s->text.len > TEXT_MAX)
			rk_buf_consume(&s->text, s->text.len - TEXT_MAX);
		return 0;
	}
	if (strcmp(kind, "key") == 0 || strcmp(kind, "key_down") == 0 || strcmp(kind, "key_up") == 0) {
		const char *k = rk_json_string(a, "keys", "");
		if (strcmp(kind, "key") == 0 && (strcasecmp(k, "BackSpace") == 0))
			backspace(&s->text);
		else if (strcmp(kind, "key") == 0 && (strcasecmp(k, "Return") == 0 || strcasecmp(k, "Enter") == 0))
			rk_buf_addc(&s->text, '\n');
		free(s->last_key);
		s->last_key = rk_xstrdup(k);
		return 0;
	}
	return rk_error_set(err, RK_EINVALID, "fake screen: unknown action \"%s\"", kind);
}

/* --- the provider ops ---------------------------------------------------- */

int rk_fake_display_start(const struct rk_machine *m, int display, const struct rk_display_options *opt,
			  struct rk_screen_transport *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (display < 0 || display > 63)
		return rk_error_set(err, RK_EINVALID, "display number must be from 0 to 63");
	/* display_start=fail: a machine that cannot spawn another display */
	int rc = display > 0 ? rk_fake_fault("display_start", err) : 0;
	if (rc < 0)
		return rc;
	char *dir = rk_fake_machine_dir(m);
	rc = rk_fs_mkdirs(dir, 0700, err);
	free(dir);
	if (rc < 0)
		return rc;
	/* the browser's profile dir, as the real desktop's browser makes it */
	if (opt && opt->profile_dir && *opt->profile_dir) {
		char *rel = NULL;
		if ((rc = rk_path_normalize(opt->profile_dir, &rel, err)) < 0)
			return rc;
		char *profile = rk_path_join(m->home_dir, rel);
		free(rel);
		rc = rk_fs_mkdirs(profile, 0700, err);
		free(profile);
		if (rc < 0)
			return rc;
	}
	int fd = lock_display(m, display, err);
	if (fd < 0)
		return -RK_EIO;
	struct fake_screen s;
	struct rk_error e2;
	rc = load(m, display, &s, &e2);
	if (rc < 0 && e2.code != RK_EUNAVAILABLE) {
		*err = e2;
		unlock_display(fd);
		return rc;
	}
	if (rc < 0) { /* not started: a fresh screen */
		memset(&s, 0, sizeof(s));
		rk_buf_init(&s.text);
		s.width = opt && opt->width > 0 ? opt->width : 1280;
		s.height = opt && opt->height > 0 ? opt->height : 800;
		if (s.width < 64 || s.height < 64 || s.width > 8192 || s.height > 8192) {
			screen_release(&s);
			unlock_display(fd);
			return rk_error_set(err, RK_EINVALID, "display size must be from 64x64 to 8192x8192");
		}
		s.cursor_x = s.width / 2;
		s.cursor_y = s.height / 2;
		rc = save(m, display, &s, err);
	}
	out->vnc_socket = NULL; /* no VNC: the engine captures and acts through the ops */
	out->width = s.width;
	out->height = s.height;
	screen_release(&s);
	unlock_display(fd);
	return rc < 0 ? rc : 0;
}

int rk_fake_display_stop(const struct rk_machine *m, int display, struct rk_error *err)
{
	char *path = state_path(m, display, "json");
	int rc = 0;
	if (unlink(path) != 0 && errno != ENOENT)
		rc = rk_error_errno(err, RK_EIO, errno, "cannot remove %s", path);
	free(path);
	return rc;
}

int rk_fake_capture(const struct rk_machine *m, int display, struct rk_frame *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct fake_screen s;
	int rc = load(m, display, &s, err);
	if (rc < 0)
		return rc;
	out->width = s.width;
	out->height = s.height;
	out->rgb = rk_xmalloc((size_t)s.width * s.height * 3);
	render(&s, out->rgb);
	out->cursor_x = s.cursor_x;
	out->cursor_y = s.cursor_y;
	out->window_title = rk_xasprintf("fake desktop %d", display);
	screen_release(&s);
	return 0;
}

int rk_fake_act(const struct rk_machine *m, int display, const char *action_json, struct rk_error *err)
{
	if (!action_json)
		return rk_error_set(err, RK_EINVALID, "fake screen: no action");
	cJSON *a = rk_json_parse(action_json, strlen(action_json), "action", err);
	if (!a)
		return -RK_EINVALID;
	int fd = lock_display(m, display, err);
	if (fd < 0) {
		cJSON_Delete(a);
		return -RK_EIO;
	}
	struct fake_screen s;
	int rc = load(m, display, &s, err);
	if (rc == 0) {
		rc = apply(&s, a, err);
		if (rc == 0)
			rc = save(m, display, &s, err);
		screen_release(&s);
	}
	unlock_display(fd);
	cJSON_Delete(a);
	return rc;
}
