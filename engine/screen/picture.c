#include "engine/screen/picture.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* after stdio.h: jpeglib.h needs FILE and size_t */
#include <jpeglib.h>

void rk_picture_fit(int w, int h, int max_w, int max_h, int *out_w, int *out_h)
{
	if (w < 1)
		w = 1;
	if (h < 1)
		h = 1;
	int64_t ow = w, oh = h;
	/* compare w/h against the limits with integer cross-multiplication */
	if (max_w > 0 && ow > max_w) {
		oh = ((int64_t)h * max_w + w / 2) / w;
		ow = max_w;
	}
	if (max_h > 0 && oh > max_h) {
		ow = ((int64_t)w * max_h + h / 2) / h;
		oh = max_h;
		if (max_w > 0 && ow > max_w)
			ow = max_w;
	}
	*out_w = ow < 1 ? 1 : (int)ow;
	*out_h = oh < 1 ? 1 : (int)oh;
}

void rk_picture_fit_pixels(int w, int h, int max_long, int64_t max_pixels, int *out_w, int *out_h)
{
	if (w < 1)
		w = 1;
	if (h < 1)
		h = 1;
	int lng = w > h ? w : h;
	double f = 1.0;
	if (max_long > 0 && lng > max_long)
		f = (double)max_long / lng;
	if (max_pixels > 0 && (int64_t)w * h > max_pixels) {
		double fp = sqrt((double)max_pixels / ((double)w * h));
		if (fp < f)
			f = fp;
	}
	/* from above the exact width down to the first that meets both limits,
	 * the height rounded as rk_picture_fit rounds it (so the size is its
	 * fixed point). Rounding the height down can let the width pass w*f
	 * by up to w/(4h) + 1 (a wide screen under a pixel limit). */
	int64_t ow = (int64_t)(w * f) + 2 + w / (4 * (int64_t)h), oh;
	if (ow > w)
		ow = w;
	for (;; ow--) {
		oh = ow == w ? h : ((int64_t)h * ow + w / 2) / w;
		if (oh < 1)
			oh = 1;
		int ok = (max_long <= 0 || (ow <= max_long && oh <= max_long)) &&
			 (max_pixels <= 0 || ow * oh <= max_pixels);
		if (ok || ow == 1)
			break;
	}
	*out_w = (int)ow;
	*out_h = (int)oh;
}

void rk_picture_fill(int w, int h, int box_w, int box_h, int *out_w, int *out_h)
{
	if (w < 1)
		w = 1;
	if (h < 1)
		h = 1;
	if (box_w < 1)
		box_w = 1;
	if (box_h < 1)
		box_h = 1;
	int64_t ow = box_w, oh = ((int64_t)h * box_w + w / 2) / w;
	if (oh > box_h) {
		oh = box_h;
		ow = ((int64_t)w * box_h + h / 2) / h;
		if (ow > box_w)
			ow = box_w;
	}
	*out_w = ow < 1 ? 1 : (int)ow;
	*out_h = oh < 1 ? 1 : (int)oh;
}

int rk_picture_rect_check(const struct rk_picture_rect *r, int w, int h, const char *what, struct rk_error *err)
{
	const int v[4] = {r->x0, r->y0, r->x1, r->y1};
	static const char *const names[4] = {"x0", "y0", "x1", "y1"};
	for (int i = 0; i < 4; i++)
		if (v[i] < 0)
			return rk_error_set(err, RK_EINVALID, "%s: %s (%d) must not be negative", what, names[i], v[i]);
	if (r->x1 <= r->x0)
		return rk_error_set(err, RK_EINVALID, "%s: x1 (%d) must be greater than x0 (%d)", what, r->x1, r->x0);
	if (r->y1 <= r->y0)
		return rk_error_set(err, RK_EINVALID, "%s: y1 (%d) must be greater than y0 (%d)", what, r->y1, r->y0);
	if (w > 0 && r->x1 > w)
		return rk_error_set(err, RK_EINVALID, "%s: x1 (%d) is outside the %dx%d image (at most %d)", what,
				    r->x1, w, h, w);
	if (h > 0 && r->y1 > h)
		return rk_error_set(err, RK_EINVALID, "%s: y1 (%d) is outside the %dx%d image (at most %d)", what,
				    r->y1, w, h, h);
	return 0;
}

/* Weights of the source pixels each destination pixel covers on one axis,
 * in 1/1024ths that sum to exactly 1024, so a flat area stays exact. Every
 * destination pixel gets the same number of taps (zero weights pad, the
 * start is moved back at the far edge), so the loops have no ragged ends. */
#define WSHIFT 10
#define WONE (1 << WSHIFT)

struct axis {
	int *start;  /* first source index of each destination index */
	uint16_t *w; /* taps weights per destination index */
	int taps;
};

static void axis_init(struct axis *a, int sn, int dn)
{
	/* [d*sn/dn, (d+1)*sn/dn) touches at most ceil(sn/dn) + 1 source
	 * pixels, exactly sn/dn when dn divides sn (2 when enlarging) */
	int taps = sn % dn == 0 ? sn / dn : sn / dn + 2;
	if (taps > sn)
		taps = sn;
	a->taps = taps;
	a->start = rk_xcalloc((size_t)dn, sizeof(int));
	a->w = rk_xcalloc((size_t)dn * (size_t)taps, sizeof(uint16_t));
	for (int d = 0; d < dn; d++) {
		/* in units of 1/dn source pixel: [d*sn, (d+1)*sn) */
		int64_t lo = (int64_t)d * sn, hi = (int64_t)(d + 1) * sn;
		int i0 = (int)(lo / dn), i1 = (int)((hi - 1) / dn);
		int c = i1 - i0 + 1;
		if (c > taps)
			c = taps; /* cannot happen; keeps the table in bounds */
		int s0 = i0 + taps > sn ? sn - taps : i0;
		uint16_t *w = a->w + (size_t)d * taps + (i0 - s0);
		a->start[d] = s0;
		int sum = 0, best = 0;
		for (int k = 0; k < c; k++) {
			int64_t plo = (int64_t)(i0 + k) * dn, phi = plo + dn;
			int64_t ov = (hi < phi ? hi : phi) - (lo > plo ? lo : plo);
			w[k] = (uint16_t)((ov * WONE + sn / 2) / sn);
			sum += w[k];
			if (w[k] > w[best])
				best = k;
		}
		/* put the rounding remainder on the largest weight */
		w[best] = (uint16_t)(w[best] + (WONE - sum));
	}
}

static void axis_release(struct axis *a)
{
	free(a->start);
	free(a->w);
}

/* acc[i] += w * row[i] for i < n. In blocks of 16 with no aliasing, so
 * that -O2's cheap vectorizer takes it (about twice as fast). */
static void col_add(uint32_t *restrict acc, const unsigned char *restrict row, uint32_t w, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		for (int j = 0; j < 16; j++)
			acc[i + j] += w * row[i + j];
	for (; i < n; i++)
		acc[i] += w * row[i];
}

/* One output row from the column sums of its source rows (acc: the R G B
 * (x) bytes of each source pixel times their row weights, bpp a pixel):
 * each output channel is sum(wx * acc) / 1024^2, rounded. With taps a
 * constant where it is inlined, the compiler unrolls the inner loop. */
static inline void hrow(const uint32_t *acc, int bpp, const struct axis *ax, int taps, int dw, unsigned char *o)
{
	for (int d = 0; d < dw; d++, o += 3) {
		const uint32_t *p = acc + (size_t)ax->start[d] * bpp;
		const uint16_t *w = ax->w + (size_t)d * taps;
		uint32_t r = 1u << (2 * WSHIFT - 1), g = r, b = r;
		for (int k = 0; k < taps; k++, p += bpp) {
			r += w[k] * p[0];
			g += w[k] * p[1];
			b += w[k] * p[2];
		}
		o[0] = (unsigned char)(r >> (2 * WSHIFT));
		o[1] = (unsigned char)(g >> (2 * WSHIFT));
		o[2] = (unsigned char)(b >> (2 * WSHIFT));
	}
}

void rk_picture_scale(const unsigned char *src, int sw, int sh, int bpp, size_t stride, unsigned char *dst, int dw,
		      int dh)
{
	if (dw == sw && dh == sh) {
		for (int y = 0; y < sh; y++) {
			const unsigned char *s = src + (size_t)y * stride;
			unsigned char *o = dst + (size_t)y * sw * 3;
			if (bpp == 3) {
				memcpy(o, s, (size_t)sw * 3);
				continue;
			}
			for (int x = 0; x < sw; x++, s += bpp, o += 3) {
				o[0] = s[0];
				o[1] = s[1];
				o[2] = s[2];
			}
		}
		return;
	}
	/* vertical first, over whole source rows (contiguous bytes, which
	 * vectorizes), then horizontal, once per output row: a column sum is
	 * at most 255 * 1024 and the weighted row sum 255 * 1024^2, in 32 bits */
	struct axis ax, ay;
	axis_init(&ax, sw, dw);
	axis_init(&ay, sh, dh);
	size_t n = (size_t)sw * bpp;
	uint32_t *acc = rk_xcalloc(n, sizeof(uint32_t));
	for (int d = 0; d < dh; d++) {
		memset(acc, 0, n * sizeof(uint32_t));
		const uint16_t *wy = ay.w + (size_t)d * ay.taps;
		for (int k = 0; k < ay.taps; k++) {
			uint32_t wk = wy[k];
			if (!wk)
				continue;
			col_add(acc, src + (size_t)(ay.start[d] + k) * stride, wk, n);
		}
		unsigned char *o = dst + (size_t)d * dw * 3;
		switch (ax.taps) {
		case 1:
			hrow(acc, bpp, &ax, 1, dw, o);
			break;
		case 2:
			hrow(acc, bpp, &ax, 2, dw, o);
			break;
		case 3:
			hrow(acc, bpp, &ax, 3, dw, o);
			break;
		case 4:
			hrow(acc, bpp, &ax, 4, dw, o);
			break;
		default:
			hrow(acc, bpp, &ax, ax.taps, dw, o);
			break;
		}
	}
	free(acc);
	axis_release(&ax);
	axis_release(&ay);
}

struct png_sink {
	struct rk_buf *out;
	struct rk_error *err;
};

static void png_write_cb(png_structp png, png_bytep data, png_size_t len)
{
	struct png_sink *s = png_get_io_ptr(png);
	rk_buf_add(s->out, data, len);
}

static void png_flush_cb(png_structp png)
{
	(void)png;
}

static void png_error_cb(png_structp png, png_const_charp msg)
{
	struct png_sink *s = png_get_error_ptr(png);
	rk_error_set(s->err, RK_EFAILED, "png encode failed: %s", msg);
	png_longjmp(png, 1);
}

static void png_warn_cb(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

int rk_picture_png_encode(const unsigned char *rgb, int w, int h, struct rk_buf *out, struct rk_error *err)
{
	struct png_sink sink = {out, err};
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, png_error_cb, png_warn_cb);
	if (!png)
		return rk_error_set(err, RK_EFAILED, "png encode failed: cannot create the encoder");
	png_infop info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return rk_error_set(err, RK_EFAILED, "png encode failed: cannot create the encoder");
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return -RK_EFAILED;
	}
	png_set_write_fn(png, &sink, png_write_cb, png_flush_cb);
	/* level 1 and no row filter: on screen content (text, flat UI, a busy
	 * page) the SUB filter made frames both slower and larger (a 1280x800
	 * page: 12.3 -> 10.7 ms, 216 -> 195 KB; the bare desktop 7.2 -> 5.4 ms) */
	png_set_compression_level(png, 1);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
	png_write_info(png, info);
	for (int y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep)(rgb + (size_t)y * w * 3));
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	return 0;
}

int rk_picture_png_decode(const void *png, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	*rgb = NULL;
	if (!png_image_begin_read_from_memory(&img, png, len))
		return rk_error_set(err, RK_EINVALID, "png decode failed: %s", img.message);
	img.format = PNG_FORMAT_RGB;
	size_t size = PNG_IMAGE_SIZE(img);
	unsigned char *buf = rk_xmalloc(size ? size : 1);
	if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
		free(buf);
		png_image_free(&img);
		return rk_error_set(err, RK_EINVALID, "png decode failed: %s", img.message);
	}
	*rgb = buf;
	*w = (int)img.width;
	*h = (int)img.height;
	return 0;
}

const char *rk_picture_mime(enum rk_picture_format f)
{
	return f == RK_PICTURE_JPEG ? "image/jpeg" : "image/png";
}

const char *rk_picture_format_name(enum rk_picture_format f)
{
	return f == RK_PICTURE_JPEG ? "jpeg" : "png";
}

int rk_picture_format_parse(const char *name, enum rk_picture_format *out, struct rk_error *err)
{
	if (name && !strcmp(name, "png")) {
		*out = RK_PICTURE_PNG;
		return 0;
	}
	if (name && (!strcmp(name, "jpeg") || !strcmp(name, "jpg"))) {
		*out = RK_PICTURE_JPEG;
		return 0;
	}
	return rk_error_set(err, RK_EINVALID, "image format must be png or jpeg, not '%s'", name ? name : "");
}

/* libjpeg reports errors through error_exit, which must not return: back
 * to the setjmp with the message kept. Warnings go nowhere (the default
 * prints them on stderr). */
struct jpeg_err {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void jpeg_error_exit_cb(j_common_ptr c)
{
	struct jpeg_err *e = (struct jpeg_err *)c->err;
	c->err->format_message(c, e->msg);
	longjmp(e->jb, 1);
}

static void jpeg_output_message_cb(j_common_ptr c)
{
	(void)c;
}

static void jpeg_err_init(struct jpeg_err *e)
{
	jpeg_std_error(&e->pub);
	e->pub.error_exit = jpeg_error_exit_cb;
	e->pub.output_message = jpeg_output_message_cb;
	e->msg[0] = 0;
}

int rk_picture_jpeg_encode(const unsigned char *rgb, int w, int h, int quality, struct rk_buf *out,
			   struct rk_error *err)
{
	if (quality == 0)
		quality = RK_JPEG_QUALITY_DEFAULT;
	if (quality < 1 || quality > 100)
		return rk_error_set(err, RK_EINVALID, "jpeg quality must be from 1 to 100, not %d", quality);
	if (w < 1 || h < 1 || w > JPEG_MAX_DIMENSION || h > JPEG_MAX_DIMENSION)
		return rk_error_set(err, RK_EINVALID, "jpeg encode failed: a %dx%d image cannot be a JPEG", w, h);
	struct jpeg_compress_struct ci;
	struct jpeg_err je;
	/* libjpeg-turbo's memory destination allocates (and grows) the output;
	 * where it keeps it is on the heap, so a longjmp cannot lose it */
	struct jpeg_out {
		unsigned char *data;
		unsigned long len;
	} *jo = rk_xcalloc(1, sizeof(*jo));
	memset(&ci, 0, sizeof(ci));
	jpeg_err_init(&je);
	ci.err = &je.pub;
	if (setjmp(je.jb)) {
		jpeg_destroy_compress(&ci);
		free(jo->data);
		free(jo);
		return rk_error_set(err, RK_EFAILED, "jpeg encode failed: %s", je.msg);
	}
	jpeg_create_compress(&ci);
	jpeg_mem_dest(&ci, &jo->data, &jo->len);
	ci.image_width = (JDIMENSION)w;
	ci.image_height = (JDIMENSION)h;
	ci.input_components = 3;
	ci.in_color_space = JCS_RGB;
	jpeg_set_defaults(&ci);
	jpeg_set_quality(&ci, quality, TRUE);
	/* optimal Huffman tables: about a tenth fewer bytes on screens of text,
	 * for a second pass over the coefficients (fractions of a millisecond) */
	ci.optimize_coding = TRUE;
	jpeg_start_compress(&ci, TRUE);
	while (ci.next_scanline < ci.image_height) {
		JSAMPROW row = (JSAMPROW)(rgb + (size_t)ci.next_scanline * (size_t)w * 3);
		jpeg_write_scanlines(&ci, &row, 1);
	}
	jpeg_finish_compress(&ci);
	rk_buf_add(out, jo->data, jo->len);
	jpeg_destroy_compress(&ci);
	free(jo->data);
	free(jo);
	return 0;
}

int rk_picture_jpeg_decode(const void *jpeg, size_t len, unsigned char **rgb, int *w, int *h, struct rk_error *err)
{
	struct jpeg_decompress_struct ci;
	struct jpeg_err je;
	unsigned char *volatile buf = NULL;
	*rgb = NULL;
	memset(&ci, 0, sizeof(ci));
	jpeg_err_init(&je);
	ci.err = &je.pub;
	if (setjmp(je.jb)) {
		jpeg_destroy_decompress(&ci);
		free(buf);
		return rk_error_set(err, RK_EINVALID, "jpeg decode failed: %s", je.msg);
	}
	jpeg_create_decompress(&ci);
	jpeg_mem_src(&ci, (const unsigned char *)jpeg, (unsigned long)len);
	jpeg_read_header(&ci, TRUE);
	ci.out_color_space = JCS_RGB;
	jpeg_start_decompress(&ci);
	size_t stride = (size_t)ci.output_width * 3;
	buf = rk_xmalloc(stride * ci.output_height + 1);
	while (ci.output_scanline < ci.output_height) {
		JSAMPROW row = (JSAMPROW)(buf + (size_t)ci.output_scanline * stride);
		jpeg_read_scanlines(&ci, &row, 1);
	}
	jpeg_finish_decompress(&ci);
	*w = (int)ci.output_width;
	*h = (int)ci.output_height;
	jpeg_destroy_decompress(&ci);
	*rgb = buf;
	return 0;
}

int rk_picture_encode(enum rk_picture_format f, int quality, const unsigned char *rgb, int w, int h, struct rk_buf *out,
		      struct rk_error *err)
{
	if (f == RK_PICTURE_JPEG)
		return rk_picture_jpeg_encode(rgb, w, h, quality, out, err);
	return rk_picture_png_encode(rgb, w, h, out, err);
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

uint64_t rk_picture_fast_hash(const void *data, size_t len)
{
	/* xxh64's round and avalanche, four lanes */
	const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull;
	const unsigned char *p = data;
	uint64_t v[4] = {P1 + P2, P2, 0, (uint64_t)0 - P1};
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		for (int l = 0; l < 4; l++) {
			uint64_t k;
			memcpy(&k, p + i + l * 8, 8);
			v[l] = rotl64(v[l] + k * P2, 31) * P1;
		}
	}
	uint64_t hsh = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18) + len;
	for (; i < len; i++)
		hsh = rotl64(hsh ^ (p[i] * P3), 11) * P1;
	hsh ^= hsh >> 33;
	hsh *= P2;
	hsh ^= hsh >> 29;
	hsh *= P3;
	hsh ^= hsh >> 32;
	return hsh;
}
