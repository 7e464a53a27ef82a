#ifndef RK_CMD_TERMIMG_H
#define RK_CMD_TERMIMG_H
/* Pictures in a terminal for `rakazo screen watch`: the kitty graphics
 * protocol (the PNG itself, base64 in APC chunks) and sixel (a DCS stream
 * over a 6x6x6 colour cube), and how to tell which one a terminal speaks.
 * Half blocks (tui/halfblock.h) are the fallback every terminal draws. No
 * curses: escape sequences appended to a buffer. */

#include <stddef.h>

#include "engine/util/buf.h"

enum termimg_mode { TERMIMG_AUTO, TERMIMG_HALFBLOCK, TERMIMG_KITTY, TERMIMG_SIXEL };

/* "auto", "halfblock", "kitty", "sixel" -> the mode; -1 for any other. */
int termimg_mode_parse(const char *s);
const char *termimg_mode_name(int mode);

/* What the terminal on in_fd/out_fd (raw mode, no echo) speaks: kitty when
 * the environment names a kitty-protocol terminal (TERM=xterm-kitty,
 * KITTY_WINDOW_ID, WezTerm, ghostty) or it answers a kitty graphics query;
 * sixel when its primary device attributes (DA1) list 4; else half blocks.
 * The query waits at most timeout_ms for the answers. */
int termimg_detect(int in_fd, int out_fd, int timeout_ms);

/* The cells (cols x rows) a w x h picture fills at most, aspect kept, for
 * cells cell_w x cell_h pixels (0: the usual 1:2 cell). */
void termimg_fit(int w, int h, int max_cols, int max_rows, int cell_w, int cell_h, int *cols, int *rows);

/* Appends the kitty sequences that delete the pictures shown before and
 * show png at the cursor, scaled by the terminal to cols x rows cells:
 * ESC _ G a=T,f=100,... ; base64 ESC \, in chunks of 4096 (m=1 but the last). */
void termimg_kitty(struct rk_buf *b, const unsigned char *png, size_t len, int cols, int rows);

/* Appends rgb (w x h, packed RGB) as sixel at the cursor: ESC P q, raster
 * attributes, the colours used (of a 6x6x6 cube), a band of six pixel rows
 * per line, ESC \. */
void termimg_sixel(struct rk_buf *b, const unsigned char *rgb, int w, int h);

#endif
