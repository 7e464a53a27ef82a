/* engine/screen/picture.c and the coordinate mapping of actions.c: sizes
 * for a model and the exact round trip between a model's image and the
 * screen. Pure computation: no display. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "check.h"

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

int main(void)
{
	RUN(coord_round_trip);
	RUN(fit_pixels);
	return check_summary("picture");
}
