/* Kitty graphics and sixel for `rakazo screen watch` (see termimg.h). */

#include "termimg.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/util/ipc.h"
#include "engine/util/time.h"

static const char *const mode_names[] = {"auto", "halfblock", "kitty", "sixel"};

int termimg_mode_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s && !strcmp(s, mode_names[i]))
			return i;
	return -1;
}

const char *termimg_mode_name(int mode)
{
	return mode >= 0 && mode < 4 ? mode_names[mode] : "?";
}

static int env_is(const char *name, const char *value)
{
	const char *v = getenv(name);
	return v && (value ? !strcmp(v, value) : *v != '\0');
}

/* A kitty graphics query (a 1x1 RGB picture, id 31, nothing shown) then
 * DA1: a terminal answers DA1 always, so its answer ends the wait; a kitty
 * one answers the query first. */
#define QUERY "\033_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\033\\\033[c"

int termimg_detect(int in_fd, int out_fd, int timeout_ms)
{
	if (env_is("TERM", "xterm-kitty") || env_is("KITTY_WINDOW_ID", NULL) || env_is("TERM_PROGRAM", "WezTerm") ||
	    env_is("TERM_PROGRAM", "ghostty"))
		return TERMIMG_KITTY;
	if (write(out_fd, QUERY, sizeof(QUERY) - 1) != (ssize_t)(sizeof(QUERY) - 1))
		return TERMIMG_HALFBLOCK;
	char reply[512];
	size_t n = 0;
	int64_t until = rk_monotonic_ms() + timeout_ms;
	const char *da = NULL;
	while (n < sizeof(reply) - 1) {
		int64_t left = until - rk_monotonic_ms();
		struct pollfd p = {.fd = in_fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t k = read(in_fd, reply + n, sizeof(reply) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		reply[n] = '\0';
		/* DA1's answer: ESC [ ? attrs c */
		if ((da = strstr(reply, "\033[?")) && strchr(da, 'c'))
			break;
		da = NULL;
	}
	reply[n] = '\0';
	if (strstr(reply, "\033_Gi=31;OK"))
		return TERMIMG_KITTY;
	if (da) {
		/* attributes are ;-separated numbers; 4 is sixel */
		for (const char *p = da + 3; *p && *p != 'c';) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			if (v == 4)
				return TERMIMG_SIXEL;
			p = *end == ';' ? end + 1 : end;
		}
	}
	return TERMIMG_HALFBLOCK;
}

void termimg_fit(int w, int h, int max_cols, int max_rows, int cell_w, int cell_h, int *cols, int *rows)
{
	if (cell_w <= 0 || cell_h <= 0) {
		cell_w = 1;
		cell_h = 2;
	}
	if (w <= 0 || h <= 0 || max_cols <= 0 || max_rows <= 0) {
		*cols = max_cols > 0 ? max_cols : 1;
		*rows = max_rows > 0 ? max_rows : 1;
		return;
	}
	/* rows the full width takes: max_cols * cell_w pixels wide, so
	 * max_cols * cell_w * h / w pixels high */
	long r = ((long)max_cols * cell_w * h / w + cell_h - 1) / cell_h;
	if (r <= max_rows) {
		*cols = max_cols;
		*rows = r > 0 ? (int)r : 1;
	} else {
		long c = (long)max_rows * cell_h * w / h / cell_w;
		*cols = c > 0 ? (int)c : 1;
		*rows = max_rows;
	}
}

void termimg_kitty(struct rk_buf *b, const unsigned char *png, size_t len, int cols, int rows)
{
	char *enc = rk_base64_encode(png, len);
	size_t total = strlen(enc);
	rk_buf_adds(b, "\033_Ga=d,d=A,q=2\033\\");
	size_t off = 0;
	do {
		size_t n = total - off > 4096 ? 4096 : total - off;
		int more = off + n < total;
		if (off == 0)
			rk_buf_printf(b, "\033_Ga=T,f=100,t=d,q=2,C=1,c=%d,r=%d,m=%d;", cols, rows, more);
		else
			rk_buf_printf(b, "\033_Gm=%d;", more);
		rk_buf_add(b, enc + off, n);
		rk_buf_adds(b, "\033\\");
		off += n;
	} while (off < total);
	free(enc);
}

/* The cube's index of a pixel: each channel to 0..5. */
static int cube(const unsigned char *p)
{
	return (p[0] * 6 / 256) * 36 + (p[1] * 6 / 256) * 6 + p[2] * 6 / 256;
}

static void sixel_run(struct rk_buf *b, int ch, int count)
{
	if (count > 3)
		rk_buf_printf(b, "!%d%c", count, ch + 63);
	else
		while (count-- > 0)
			rk_buf_printf(b, "%c", ch + 63);
}

void termimg_sixel(struct rk_buf *b, const unsigned char *rgb, int w, int h)
{
	/* the pixels' cube indexes, and which colours are used at all */
	unsigned char *idx = malloc((size_t)w * h);
	unsigned char used[216] = {0};
	for (size_t i = 0; idx && i < (size_t)w * h; i++)
		used[idx[i] = (unsigned char)cube(rgb + i * 3)] = 1;
	rk_buf_printf(b, "\033Pq\"1;1;%d;%d", w, h);
	for (int c = 0; c < 216; c++)
		if (used[c])
			rk_buf_printf(b, "#%d;2;%d;%d;%d", c, (c / 36) * 20, (c / 6 % 6) * 20, (c % 6) * 20);
	/* per band: the six-pixel column bits of every colour, in one pass */
	unsigned char *bits = calloc(216, (size_t)w);
	for (int y0 = 0; idx && bits && y0 < h; y0 += 6) {
		unsigned char band[216] = {0};
		for (int y = y0; y < y0 + 6 && y < h; y++)
			for (int x = 0; x < w; x++) {
				int c = idx[(size_t)y * w + x];
				if (!band[c]) {
					band[c] = 1;
					memset(bits + (size_t)c * w, 0, (size_t)w);
				}
				bits[(size_t)c * w + x] |= (unsigned char)(1 << (y - y0));
			}
		int first = 1;
		for (int c = 0; c < 216; c++) {
			if (!band[c])
				continue;
			const unsigned char *row = bits + (size_t)c * w;
			rk_buf_printf(b, "%s#%d", first ? "" : "$", c);
			first = 0;
			int run = 1;
			for (int x = 1; x <= w; x++) {
				if (x < w && row[x] == row[x - 1]) {
					run++;
					continue;
				}
				sixel_run(b, row[x - 1], run);
				run = 1;
			}
		}
		rk_buf_adds(b, "-");
	}
	rk_buf_adds(b, "\033\\");
	free(bits);
	free(idx);
}
