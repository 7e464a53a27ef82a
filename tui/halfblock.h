#ifndef RK_TUI_HALFBLOCK_H
#define RK_TUI_HALFBLOCK_H
/* A picture in the terminal: a PNG decoded to packed RGB, drawn as
 * truecolor upper half blocks (U+2580: foreground the top pixel, background
 * the bottom one), two pixel rows a terminal row. Shared by `rakazo screen
 * watch` and the dashboard's screen pane. No curses here: the output is
 * escape sequences appended to a buffer. */

#include <stddef.h>

#include "engine/util/buf.h"

/* Decodes png into *rgb (malloc'd, w*h*3 bytes, rows top down). -1 when it
 * is not a PNG libpng reads. */
int tui_png_decode(const unsigned char *png, size_t len, unsigned char **rgb, int *w, int *h);

/* Appends the rendering of rgb (w x h) with its top left corner at terminal
 * row top, column left (both 1-based), clipped to rows x cols cells. With
 * clear_eol each row ends by clearing to the end of the line. The cursor
 * position and the colours are left changed: callers save and restore them. */
void tui_halfblock_render(struct rk_buf *b, const unsigned char *rgb, int w, int h, int top, int left, int rows,
			  int cols, int clear_eol);

/* The luminance (0..255) of the two pixels a cell covers, for a rendering
 * without colour. */
int tui_halfblock_luma(const unsigned char *rgb, int w, int h, int cell_x, int cell_y);

#endif
