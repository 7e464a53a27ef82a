/* engine/screen/picture.c and the coordinate mapping of actions.c: sizes
 * for a model, the exact round trip between a model's image and the
 * screen, rescaling, and the JPEG codec. Pure computation: no display. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "engine/util/buf.h"
#include "check.h"

static struct rk_error err;

/* The screens of the issue and the sizes models are sent: Claude's
 * (long edge 1568, 1.15 MP) and the XGA/WXGA boxes. */
static const int screens[][2] = {{1366, 768}, {1920, 1080}, {2560, 1440}, {1280, 800}};

static int n_targets(void)
{
	return 4;
}

static void target_size(int t, int sw, int sh, int *w, int *h)
{
	switch (t) {
	case 0:
		rk_picture_fit_pixels(sw, sh, 1568, 1150000, w, h);
		break;
	case 1:
		rk_picture_fit(sw, sh, 1280, 800, w, h);
		break;
	case 2:
		rk_picture_fit(sw, sh, 1024, 768, w, h);
		break;
	default:
		rk_picture_fit(sw, sh, 1366, 768, w, h);
		break;
	}
}

TEST(coord_round_trip)
{
	for (size_t i = 0; i < sizeof(screens) / sizeof(screens[0]); i++) {
		int sw = screens[i][0], sh = screens[i][1];
		for (int t = 0; t < n_targets(); t++) {
			int iw, ih;
			target_size(t, sw, sh, &iw, &ih);
			/* every image pixel's centre lands in the screen pixel whose
			 * centre maps back to it */
			int bad = 0;
			for (int v = 0; v < iw; v++)
				bad += rk_coord_to_image(rk_coord_to_screen(v, iw, sw), iw, sw) != v;
			for (int v = 0; v < ih; v++)
				bad += rk_coord_to_image(rk_coord_to_screen(v, ih, sh), ih, sh) != v;
			/* a 6x6 target anywhere on the screen: its centre, to the
			 * image and back, lands inside it */
			int missed = 0;
			for (int ty = 0; ty + 6 <= sh; ty++) {
				int y = rk_coord_to_screen(rk_coord_to_image(ty + 3, ih, sh), ih, sh);
				for (int tx = 0; tx + 6 <= sw; tx++) {
					int x = rk_coord_to_screen(rk_coord_to_image(tx + 3, iw, sw), iw, sw);
					missed += x < tx || x >= tx + 6 || y < ty || y >= ty + 6;
				}
			}
			if (bad || missed)
				printf("  %dx%d -> %dx%d: %d pixels do not round-trip, %d targets missed\n", sw, sh, iw,
				       ih, bad, missed);
			CHECK_EQ_INT(bad, 0);
			CHECK_EQ_INT(missed, 0);
			/* the edges stay on the screen */
			CHECK(rk_coord_to_screen(iw - 1, iw, sw) < sw && rk_coord_to_screen(ih - 1, ih, sh) < sh);
			CHECK_EQ_INT(rk_coord_to_image(sw - 1, iw, sw), iw - 1);
			CHECK_EQ_INT(rk_coord_to_image(0, iw, sw), 0);
		}
	}
	/* image pixel 3 of 1430 clicks screen pixel 4 of 1920; the cursor there
	 * is image pixel 3 again (4 * 1430 / 1920 = 2.98 rounded down said 2) */
	CHECK_EQ_INT(rk_coord_to_screen(3, 1430, 1920), 4);
	CHECK_EQ_INT(rk_coord_to_image(4, 1430, 1920), 3);
	/* same size: identity */
	CHECK_EQ_INT(rk_coord_to_image(37, 1280, 1280), 37);
}

TEST(fit_pixels)
{
	int w, h;
	rk_picture_fit_pixels(1920, 1080, 1568, 1150000, &w, &h); /* 1149720 pixels */
	CHECK_EQ_INT(w, 1430);
	CHECK_EQ_INT(h, 804);
	rk_picture_fit_pixels(2560, 1440, 1568, 1150000, &w, &h);
	CHECK_EQ_INT(w, 1430);
	CHECK_EQ_INT(h, 804);
	rk_picture_fit_pixels(1366, 768, 1568, 1150000, &w, &h); /* 1.049 MP: unchanged */
	CHECK_EQ_INT(w, 1366);
	CHECK_EQ_INT(h, 768);
	rk_picture_fit_pixels(1280, 800, 1568, 1150000, &w, &h);
	CHECK_EQ_INT(w, 1280);
	CHECK_EQ_INT(h, 800);
	rk_picture_fit_pixels(3840, 1080, 1568, 1150000, &w, &h); /* the long edge binds */
	CHECK_EQ_INT(w, 1568);
	CHECK_EQ_INT(h, 441);
	rk_picture_fit_pixels(1080, 1920, 1568, 1150000, &w, &h); /* portrait */
	CHECK(w * h <= 1150000 && h <= 1568);
	CHECK(w >= 803 && w <= 805 && h >= 1427 && h <= 1430);
	rk_picture_fit_pixels(1920, 1080, 0, 0, &w, &h); /* no limits */
	CHECK_EQ_INT(w, 1920);
	CHECK_EQ_INT(h, 1080);
	rk_picture_fit_pixels(1920, 1080, 1280, 0, &w, &h);
	CHECK_EQ_INT(w, 1280);
	CHECK_EQ_INT(h, 720);
	rk_picture_fit_pixels(100, 100, 1568, 1, &w, &h); /* at least 1x1 */
	CHECK_EQ_INT(w, 1);
	CHECK_EQ_INT(h, 1);

	/* over many screens and limits: within the limits, never enlarged,
	 * the aspect within a pixel, as large as the limits allow (a pixel
	 * wider would break one), and a fixed point of rk_picture_fit, so
	 * observe with it as max_width x max_height gives exactly it */
	static const int limits[][2] = {{1568, 1150000}, {1568, 1200000}, {1280, 0}, {0, 786432}, {1024, 500000}};
	int fails = 0;
	for (int sw = 640; sw <= 3840; sw += 37)
		for (int sh = 480; sh <= 2400; sh += 53)
			for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
				int ml = limits[l][0];
				int64_t mp = limits[l][1];
				rk_picture_fit_pixels(sw, sh, ml, mp, &w, &h);
				int fw, fh;
				rk_picture_fit(sw, sh, w, h, &fw, &fh);
				int ok = w <= sw && h <= sh && (!ml || (w <= ml && h <= ml)) &&
					 (!mp || (int64_t)w * h <= mp) && fw == w && fh == h;
				/* the aspect: h is w's share of sh, rounded */
				int64_t want_h = ((int64_t)sh * w + sw / 2) / sw;
				ok = ok && (w == sw ? h == sh : h == want_h);
				/* maximal: one pixel wider breaks a limit (or is the screen) */
				if (ok && w < sw) {
					int64_t h2 = ((int64_t)sh * (w + 1) + sw / 2) / sw;
					ok = (ml && (w + 1 > ml || h2 > ml)) || (mp && (int64_t)(w + 1) * h2 > mp);
				}
				if (!ok && fails++ < 5)
					printf("  %dx%d in (%d, %lld): %dx%d (fit gives %dx%d)\n", sw, sh, ml,
					       (long long)mp, w, h, fw, fh);
			}
	CHECK_EQ_INT(fails, 0);
}

TEST(fill_and_rect)
{
	int w, h;
	rk_picture_fill(100, 50, 1430, 804, &w, &h); /* enlarged: the width binds */
	CHECK_EQ_INT(w, 1430);
	CHECK_EQ_INT(h, 715);
	rk_picture_fill(50, 100, 1430, 804, &w, &h); /* the height binds */
	CHECK_EQ_INT(w, 402);
	CHECK_EQ_INT(h, 804);
	rk_picture_fill(2560, 1440, 1430, 804, &w, &h); /* shrunk like fit */
	CHECK_EQ_INT(w, 1430);
	CHECK_EQ_INT(h, 804);
	rk_picture_fill(1, 1000, 10, 10, &w, &h);
	CHECK_EQ_INT(w, 1);
	CHECK_EQ_INT(h, 10);

	struct rk_picture_rect r = {10, 20, 110, 70};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 1429, 804, "zoom: region", &err), 0);
	CHECK_EQ_INT(rk_picture_rect_check(&r, 0, 0, "zoom: region", &err), 0);
	r = (struct rk_picture_rect){10, 20, 10, 70};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 1429, 804, "zoom: region", &err), -RK_EINVALID);
	CHECK_EQ_STR(err.message, "zoom: region: x1 (10) must be greater than x0 (10)");
	r = (struct rk_picture_rect){10, 80, 20, 70};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 0, 0, "zoom: region", &err), -RK_EINVALID);
	CHECK(strstr(err.message, "y1 (70) must be greater than y0 (80)") != NULL);
	r = (struct rk_picture_rect){-1, 0, 20, 70};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 0, 0, "zoom: region", &err), -RK_EINVALID);
	CHECK(strstr(err.message, "x0 (-1) must not be negative") != NULL);
	r = (struct rk_picture_rect){0, 0, 1430, 70};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 1429, 804, "zoom: region", &err), -RK_EINVALID);
	CHECK(strstr(err.message, "x1 (1430) is outside the 1429x804 image") != NULL);
	r = (struct rk_picture_rect){0, 0, 1429, 805};
	CHECK_EQ_INT(rk_picture_rect_check(&r, 1429, 804, "zoom: region", &err), -RK_EINVALID);
	CHECK(strstr(err.message, "y1 (805)") != NULL);
	r = (struct rk_picture_rect){0, 0, 1429, 804}; /* the whole image */
	CHECK_EQ_INT(rk_picture_rect_check(&r, 1429, 804, "zoom: region", &err), 0);
}

TEST(scale_enlarges)
{
	/* 2x2 -> 4x4: each source pixel becomes a 2x2 block, exactly */
	const unsigned char src[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
	unsigned char dst[4 * 4 * 3];
	rk_picture_scale(src, 2, 2, 3, 6, dst, 4, 4);
	for (int y = 0; y < 4; y++)
		for (int x = 0; x < 4; x++) {
			const unsigned char *s = src + ((y / 2) * 2 + x / 2) * 3, *d = dst + (y * 4 + x) * 3;
			CHECK(memcmp(s, d, 3) == 0);
		}
	/* 3 -> 7 (not a whole factor): flat stays flat, and every output
	 * lies between its two neighbours' values */
	unsigned char flat[3 * 3 * 4], out[7 * 7 * 3];
	for (int i = 0; i < 3 * 3; i++) {
		flat[i * 4] = 77;
		flat[i * 4 + 1] = 150;
		flat[i * 4 + 2] = 3;
		flat[i * 4 + 3] = 0;
	}
	rk_picture_scale(flat, 3, 3, 4, 12, out, 7, 7);
	int bad = 0;
	for (int i = 0; i < 7 * 7; i++)
		bad += out[i * 3] != 77 || out[i * 3 + 1] != 150 || out[i * 3 + 2] != 3;
	CHECK_EQ_INT(bad, 0);
	/* a crop through the stride: the right column of a 4x1 row, enlarged */
	const unsigned char row[12] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 200, 100, 50};
	unsigned char one[2 * 2 * 3];
	rk_picture_scale(row + 9, 1, 1, 3, 12, one, 2, 2);
	for (int i = 0; i < 4; i++)
		CHECK(one[i * 3] == 200 && one[i * 3 + 1] == 100 && one[i * 3 + 2] == 50);
}

/* The exact area average of channel c over output pixel (dx, dy). */
static double area_mean(const unsigned char *src, int sw, int sh, int bpp, int dw, int dh, int dx, int dy, int c)
{
	double x0 = (double)dx * sw / dw, x1 = (double)(dx + 1) * sw / dw;
	double y0 = (double)dy * sh / dh, y1 = (double)(dy + 1) * sh / dh, sum = 0, area = 0;
	for (int y = (int)y0; y < sh && y < y1; y++)
		for (int x = (int)x0; x < sw && x < x1; x++) {
			double ox = fmin(x + 1, x1) - fmax(x, x0), oy = fmin(y + 1, y1) - fmax(y, y0);
			if (ox > 0 && oy > 0) {
				sum += ox * oy * src[((size_t)y * sw + x) * bpp + c];
				area += ox * oy;
			}
		}
	return sum / area;
}

/* Every output pixel is the area average of what it covers, to within
 * the rounding of the 1/1024 weights, shrinking and enlarging, from RGBX
 * (the VNC mirror) and RGB rows with padding. */
TEST(scale_is_the_area_average)
{
	static const int cases[][5] = {{1920, 1080, 1430, 804, 4}, {1366, 768, 1024, 576, 4}, {81, 41, 1430, 724, 3},
				       {251, 126, 1024, 514, 4},   {7, 5, 3, 2, 3},	      {100, 100, 100, 37, 4},
				       {64, 48, 64, 48, 4}};
	uint32_t seed = 99;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int sw = cases[k][0], sh = cases[k][1], dw = cases[k][2], dh = cases[k][3], bpp = cases[k][4];
		size_t stride = (size_t)sw * bpp + 5;
		unsigned char *src = malloc(stride * sh), *dst = malloc((size_t)dw * dh * 3);
		for (size_t i = 0; i < stride * sh; i++) {
			seed = seed * 1103515245u + 12345u;
			src[i] = (unsigned char)(seed >> 16);
		}
		unsigned char *packed = malloc((size_t)sw * sh * bpp); /* for area_mean */
		for (int y = 0; y < sh; y++)
			memcpy(packed + (size_t)y * sw * bpp, src + (size_t)y * stride, (size_t)sw * bpp);
		rk_picture_scale(src, sw, sh, bpp, stride, dst, dw, dh);
		double worst = 0;
		for (int y = 0; y < dh; y += 3)
			for (int x = 0; x < dw; x += 2)
				for (int c = 0; c < 3; c++) {
					double e = fabs(dst[((size_t)y * dw + x) * 3 + c] -
							area_mean(packed, sw, sh, bpp, dw, dh, x, y, c));
					if (e > worst)
						worst = e;
				}
		if (worst >= 0.75)
			printf("  %dx%d -> %dx%d: off by %.3f\n", sw, sh, dw, dh, worst);
		CHECK(worst < 0.75);
		free(src);
		free(dst);
		free(packed);
	}
}

/* A desktop-like frame: a title bar, flat panels, rows of "text" (dark
 * runs on white), a colour gradient (a photo's share). */
static unsigned char *desktop(int w, int h)
{
	unsigned char *rgb = malloc((size_t)w * h * 3);
	uint32_t seed = 12345;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			unsigned char *p = rgb + ((size_t)y * w + x) * 3;
			if (y < 32) {
				p[0] = 40, p[1] = 44, p[2] = 52;
			} else if (x < w / 5) {
				p[0] = 236, p[1] = 238, p[2] = 240;
			} else if (y > h * 2 / 3 && x > w / 2) {
				p[0] = (unsigned char)(x * 255 / w), p[1] = (unsigned char)(y * 255 / h),
				p[2] = (unsigned char)((x + y) & 255);
			} else {
				p[0] = p[1] = p[2] = 255;
			}
		}
	/* text lines: 14 px glyph rows, random strokes */
	for (int ty = 48; ty + 14 < h * 2 / 3; ty += 22)
		for (int tx = w / 5 + 16; tx + 8 < w - 16; tx += 9) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 7 == 0)
				continue; /* a space */
			for (int k = 0; k < 12; k++) {
				seed = seed * 1103515245u + 12345u;
				int gx = tx + (int)((seed >> 16) % 7), gy = ty + (int)((seed >> 8) % 14);
				unsigned char *p = rgb + ((size_t)gy * w + gx) * 3;
				p[0] = p[1] = p[2] = 20;
			}
		}
	return rgb;
}

TEST(jpeg_codec)
{
	CHECK_EQ_STR(rk_picture_mime(RK_PICTURE_PNG), "image/png");
	CHECK_EQ_STR(rk_picture_mime(RK_PICTURE_JPEG), "image/jpeg");
	CHECK_EQ_STR(rk_picture_format_name(RK_PICTURE_JPEG), "jpeg");
	enum rk_picture_format f = RK_PICTURE_PNG;
	CHECK_EQ_INT(rk_picture_format_parse("jpeg", &f, &err), 0);
	CHECK_EQ_INT(f, RK_PICTURE_JPEG);
	CHECK_EQ_INT(rk_picture_format_parse("jpg", &f, &err), 0);
	CHECK_EQ_INT(rk_picture_format_parse("png", &f, &err), 0);
	CHECK_EQ_INT(f, RK_PICTURE_PNG);
	CHECK_EQ_INT(rk_picture_format_parse("webp", &f, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "png or jpeg") != NULL);

	int sw = 1920, sh = 1080, w, h;
	rk_picture_fit_pixels(sw, sh, 1568, 1150000, &w, &h);
	unsigned char *full = desktop(sw, sh), *rgb = malloc((size_t)w * h * 3);
	rk_picture_scale(full, sw, sh, 3, (size_t)sw * 3, rgb, w, h);
	struct rk_buf png, jpg;
	rk_buf_init(&png);
	rk_buf_init(&jpg);
	REQUIRE(rk_picture_encode(RK_PICTURE_PNG, 0, rgb, w, h, &png, &err) == 0);
	REQUIRE(rk_picture_encode(RK_PICTURE_JPEG, 0, rgb, w, h, &jpg, &err) == 0);
	CHECK(jpg.len > 2 && (unsigned char)jpg.data[0] == 0xff && (unsigned char)jpg.data[1] == 0xd8);
	printf("  %dx%d -> %dx%d desktop-like: png %zu bytes, jpeg q75 %zu bytes\n", sw, sh, w, h, png.len, jpg.len);
	/* decodes to the size, close to the pixels (lossy: mean error small) */
	unsigned char *back = NULL;
	int bw = 0, bh = 0;
	REQUIRE(rk_picture_jpeg_decode(jpg.data, jpg.len, &back, &bw, &bh, &err) == 0);
	CHECK_EQ_INT(bw, w);
	CHECK_EQ_INT(bh, h);
	uint64_t diff = 0;
	for (size_t i = 0; i < (size_t)w * h * 3; i++)
		diff += (uint64_t)abs((int)back[i] - (int)rgb[i]);
	double mean = (double)diff / ((double)w * h * 3);
	CHECK(mean < 6.0);
	free(back);
	/* quality moves the size */
	struct rk_buf lo;
	rk_buf_init(&lo);
	REQUIRE(rk_picture_jpeg_encode(rgb, w, h, 30, &lo, &err) == 0);
	CHECK(lo.len < jpg.len);
	rk_buf_release(&lo);
	rk_buf_init(&lo);
	CHECK_EQ_INT(rk_picture_jpeg_encode(rgb, w, h, 101, &lo, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "from 1 to 100") != NULL);
	CHECK_EQ_INT(rk_picture_jpeg_encode(rgb, w, h, -5, &lo, &err), -RK_EINVALID);
	CHECK_EQ_INT(lo.len, 0);
	/* garbage is an error, not a crash or a message on stderr */
	CHECK_EQ_INT(rk_picture_jpeg_decode("\xff\xd8\xff\xe0nonsense", 12, &back, &bw, &bh, &err), -RK_EINVALID);
	CHECK(back == NULL);
	CHECK(strstr(err.message, "jpeg decode failed") != NULL);
	rk_buf_release(&lo);
	rk_buf_release(&png);
	rk_buf_release(&jpg);
	free(full);
	free(rgb);
}

int main(void)
{
	RUN(coord_round_trip);
	RUN(fit_pixels);
	RUN(fill_and_rect);
	RUN(scale_enlarges);
	RUN(scale_is_the_area_average);
	RUN(jpeg_codec);
	return check_summary("picture");
}
