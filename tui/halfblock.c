/* Truecolor half blocks (see halfblock.h). */

#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "halfblock.h"

int tui_png_decode(const unsigned char *png, size_t len, unsigned char **rgb, int *w, int *h)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	*rgb = NULL;
	if (!png_image_begin_read_from_memory(&img, png, len))
		return -1;
	img.format = PNG_FORMAT_RGB;
	*rgb = malloc(PNG_IMAGE_SIZE(img));
	if (!*rgb || !png_image_finish_read(&img, NULL, *rgb, 0, NULL)) {
		free(*rgb);
		*rgb = NULL;
		png_image_free(&img);
		return -1;
	}
	*w = (int)img.width;
	*h = (int)img.height;
	return 0;
}

void tui_halfblock_render(struct rk_buf *b, const unsigned char *rgb, int w, int h, int top, int left, int rows,
			  int cols, int clear_eol)
{
	int width = w < cols ? w : cols;
	for (int row = 0; row < rows && row * 2 < h; row++) {
		int y = row * 2;
		rk_buf_printf(b, "\033[%d;%dH", top + row, left);
		int last_fg = -1, last_bg = -1;
		for (int x = 0; x < width; x++) {
			const unsigned char *t = rgb + ((size_t)y * w + x) * 3;
			const unsigned char *u = y + 1 < h ? rgb + ((size_t)(y + 1) * w + x) * 3 : t;
			int fg = t[0] << 16 | t[1] << 8 | t[2], bg = u[0] << 16 | u[1] << 8 | u[2];
			/* a run of one colour needs its escape once */
			if (fg != last_fg)
				rk_buf_printf(b, "\033[38;2;%d;%d;%dm", t[0], t[1], t[2]);
			if (bg != last_bg)
				rk_buf_printf(b, "\033[48;2;%d;%d;%dm", u[0], u[1], u[2]);
			last_fg = fg;
			last_bg = bg;
			rk_buf_adds(b, "\xe2\x96\x80");
		}
		rk_buf_adds(b, "\033[0m");
		if (clear_eol)
			rk_buf_adds(b, "\033[K");
	}
}

int tui_halfblock_luma(const unsigned char *rgb, int w, int h, int cell_x, int cell_y)
{
	int y = cell_y * 2;
	if (cell_x < 0 || cell_x >= w || y < 0 || y >= h)
		return 0;
	const unsigned char *t = rgb + ((size_t)y * w + cell_x) * 3;
	const unsigned char *u = y + 1 < h ? rgb + ((size_t)(y + 1) * w + cell_x) * 3 : t;
	int a = (t[0] * 299 + t[1] * 587 + t[2] * 114) / 1000;
	int c = (u[0] * 299 + u[1] * 587 + u[2] * 114) / 1000;
	return (a + c) / 2;
}
