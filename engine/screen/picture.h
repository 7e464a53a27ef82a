#ifndef RK_PICTURE_H
#define RK_PICTURE_H
/* Images for the screen engine: fitting a screen into a size limit, an
 * area-average rescale, and PNG (zlib level 1, no filter: ~6 ms for
 * 1280x800 where the defaults take ~18 ms) or JPEG (libjpeg-turbo)
 * encoding. */

#include <stddef.h>
#include <stdint.h>

#include "engine/util/buf.h"
#include "engine/util/err.h"

/* The size w x h takes inside max_w x max_h (0: no limit on that side),
 * aspect kept, never enlarged, at least 1x1: 1280x800 in 1024x1024 is
 * 1024x640. */
void rk_picture_fit(int w, int h, int max_w, int max_h, int *out_w, int *out_h);

/* The size w x h takes with its long edge at most max_long and at most
 * max_pixels pixels (0: no such limit), aspect kept, never enlarged, at
 * least 1x1: the model-side limits (Claude: 1568 and 1150000, so 1920x1080
 * is 1430x804 and 1366x768 stays). The result is a fixed point of
 * rk_picture_fit: passed as max_width x max_height to observe, it gives
 * exactly that size back. */
void rk_picture_fit_pixels(int w, int h, int max_long, int64_t max_pixels, int *out_w, int *out_h);

/* The largest size with w x h's aspect inside box_w x box_h, enlarged when
 * smaller (a zoomed region filling the image budget). */
void rk_picture_fill(int w, int h, int box_w, int box_h, int *out_w, int *out_h);

/* A rectangle x0 <= x < x1, y0 <= y < y1 in pixels. */
struct rk_picture_rect {
	int x0, y0, x1, y1;
};

/* Checks r lies inside a w x h image with x0 < x1 and y0 < y1 (w or h 0:
 * that bound unknown yet, only the order and signs are checked);
 * RK_EINVALID naming the field (what: the message's prefix). */
int rk_picture_rect_check(const struct rk_picture_rect *r, int w, int h, const char *what, struct rk_error *err);

/* Converts and rescales src (sw x sh pixels, bpp bytes a pixel with R, G,
 * B as its first three bytes, stride bytes a row) into dst, tightly packed
 * RGB of dw x dh. Each output pixel is the average of the source area it
 * covers (output pixel d covers source [d*sw/dw, (d+1)*sw/dw)), which
 * enlarges as sharp blocks; a same-size call is a plain conversion. */
void rk_picture_scale(const unsigned char *src, int sw, int sh, int bpp, size_t stride, unsigned char *dst, int dw,
		      int dh);

/* Appends the PNG of rgb (w x h, packed RGB) to out. */
int rk_picture_png_encode(const unsigned char *rgb, int w, int h, struct rk_buf *out, struct rk_error *err);

/* How an image goes out: PNG (lossless, the default) or JPEG (lossy, a
 * fraction of the bytes on photos and busy pages). */
enum rk_picture_format { RK_PICTURE_PNG = 0, RK_PICTURE_JPEG = 1 };
#define RK_JPEG_QUALITY_DEFAULT 75

/* "image/png" or "image/jpeg" (static). */
const char *rk_picture_mime(enum rk_picture_format f);
/* "png" or "jpeg" (static). */
const char *rk_picture_format_name(enum rk_picture_format f);
/* "png", "jpeg" (or "jpg") into *out; RK_EINVALID otherwise. */
int rk_picture_format_parse(const char *name, enum rk_picture_format *out, struct rk_error *err);

/* Appends the baseline JPEG (4:2:0, quality 1-100, 0: the default 75) of
 * rgb to out. */
int rk_picture_jpeg_encode(const unsigned char *rgb, int w, int h, int quality, struct rk_buf *out,
			   struct rk_error *err);
/* Decodes a JPEG into packed RGB (malloc'd into *rgb); for tests and tools. */
int rk_picture_jpeg_decode(const void *jpeg, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err);

/* rk_picture_png_encode or rk_picture_jpeg_encode, as f says. */
int rk_picture_encode(enum rk_picture_format f, int quality, const unsigned char *rgb, int w, int h, struct rk_buf *out,
		      struct rk_error *err);

/* Decodes a PNG into packed RGB (malloc'd into *rgb); for tests and tools. */
int rk_picture_png_decode(const void *png, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err);

/* A fast 64-bit hash of len bytes (not cryptographic): lets the engine see
 * that a frame is the one it already gave a frame hash (BLAKE2b). */
uint64_t rk_picture_fast_hash(const void *data, size_t len);

#endif
