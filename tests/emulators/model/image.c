/* Images in requests: base64 PNG or JPEG, decoded in full (a truncated or
 * mislabelled image fails here as it would at the vendor), their size and
 * hash remembered. A conversation resends its screenshots on every turn,
 * so each distinct image is decoded once. */

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it needs size_t and FILE */
#include <png.h>

#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "tests/emulators/model/model.h"

static struct image *cache;
static size_t ncache, capcache;

static int decode_png(const unsigned char *p, size_t n, struct image *img)
{
	png_image pi;
	memset(&pi, 0, sizeof(pi));
	pi.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&pi, p, n)) {
		snprintf(img->why, sizeof(img->why), "not a PNG libpng can read: %s", pi.message);
		return -1;
	}
	pi.format = PNG_FORMAT_RGBA;
	size_t size = PNG_IMAGE_SIZE(pi);
	void *px = malloc(size ? size : 1);
	int ok = px && png_image_finish_read(&pi, NULL, px, 0, NULL);
	if (!ok)
		snprintf(img->why, sizeof(img->why), "the PNG does not decode: %s", pi.message);
	img->w = (int)pi.width;
	img->h = (int)pi.height;
	png_image_free(&pi);
	free(px);
	return ok ? 0 : -1;
}

struct jpeg_fail {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void jpeg_exit(j_common_ptr c)
{
	struct jpeg_fail *f = (struct jpeg_fail *)c->err;
	c->err->format_message(c, f->msg);
	longjmp(f->jump, 1);
}

/* A warning (premature end, corrupt data) fails too: libjpeg would
 * otherwise fill the missing rows with grey. */
static void jpeg_message(j_common_ptr c, int level)
{
	if (level < 0)
		jpeg_exit(c);
}

static int decode_jpeg(const unsigned char *p, size_t n, struct image *img)
{
	struct jpeg_decompress_struct cinfo;
	struct jpeg_fail fail;
	JSAMPLE *volatile row = NULL;
	cinfo.err = jpeg_std_error(&fail.mgr);
	fail.mgr.error_exit = jpeg_exit;
	fail.mgr.emit_message = jpeg_message;
	if (setjmp(fail.jump)) {
		snprintf(img->why, sizeof(img->why), "the JPEG does not decode: %.120s", fail.msg);
		jpeg_destroy_decompress(&cinfo);
		free(row);
		return -1;
	}
	jpeg_create_decompress(&cinfo);
	jpeg_mem_src(&cinfo, p, (unsigned long)n);
	jpeg_read_header(&cinfo, TRUE);
	jpeg_start_decompress(&cinfo);
	img->w = (int)cinfo.output_width;
	img->h = (int)cinfo.output_height;
	row = malloc((size_t)cinfo.output_width * (size_t)cinfo.output_components);
	while (cinfo.output_scanline < cinfo.output_height) {
		JSAMPROW rows[1] = {row};
		jpeg_read_scanlines(&cinfo, rows, 1);
	}
	jpeg_finish_decompress(&cinfo);
	jpeg_destroy_decompress(&cinfo);
	free(row);
	return 0;
}

static void decode(const char *mime, const unsigned char *p, size_t n, struct image *img)
{
	int png = n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0;
	int jpeg = n >= 3 && memcmp(p, "\xff\xd8\xff", 3) == 0;
	img->ok = 0;
	if (strcmp(mime, "image/png") && strcmp(mime, "image/jpeg")) {
		snprintf(img->why, sizeof(img->why), "media type \"%.60s\" (only image/png and image/jpeg are sent)",
			 mime);
	} else if (!png && !jpeg) {
		snprintf(img->why, sizeof(img->why), "labelled %s, but the bytes are neither PNG nor JPEG", mime);
	} else if (png != (strcmp(mime, "image/png") == 0)) {
		snprintf(img->why, sizeof(img->why), "labelled %s, but the bytes are a %s", mime, png ? "PNG" : "JPEG");
	} else {
		img->ok = (png ? decode_png(p, n, img) : decode_jpeg(p, n, img)) == 0;
	}
}

void image_check_bytes(const char *mime, const void *bytes, size_t len, struct image *img)
{
	memset(img, 0, sizeof(*img));
	snprintf(img->mime, sizeof(img->mime), "%s", mime ? mime : "");
	if (len == 0) {
		snprintf(img->why, sizeof(img->why), "the image has no bytes");
		return;
	}
	rk_sha256_hex(bytes, len, img->hex);
	for (size_t i = 0; i < ncache; i++) {
		if (strcmp(cache[i].hex, img->hex) == 0 && strcmp(cache[i].mime, img->mime) == 0) {
			*img = cache[i];
			img->encoded = 0;
			return;
		}
	}
	decode(img->mime, bytes, len, img);
	if (ncache == capcache) {
		capcache = capcache ? 2 * capcache : 16;
		cache = rk_xrealloc(cache, capcache * sizeof(*cache));
	}
	cache[ncache++] = *img;
}

void image_check_base64(const char *mime, const char *b64, struct image *img)
{
	memset(img, 0, sizeof(*img));
	snprintf(img->mime, sizeof(img->mime), "%s", mime ? mime : "");
	img->encoded = b64 ? strlen(b64) : 0;
	struct rk_buf bytes = RK_BUF_INIT;
	rk_buf_init(&bytes);
	if (!b64 || rk_base64_decode(b64, &bytes) != 0 || bytes.len == 0) {
		snprintf(img->why, sizeof(img->why), "the data is not base64");
		rk_buf_release(&bytes);
		return;
	}
	size_t encoded = img->encoded;
	image_check_bytes(mime, bytes.data, bytes.len, img);
	img->encoded = encoded;
	rk_buf_release(&bytes);
}

void image_check_data_url(const char *url, struct image *img)
{
	const char *semi = url ? strchr(url, ';') : NULL;
	if (!url || strncmp(url, "data:", 5) != 0 || !semi || strncmp(semi, ";base64,", 8) != 0) {
		memset(img, 0, sizeof(*img));
		snprintf(img->why, sizeof(img->why), "not a base64 data URL: \"%.40s\"", url ? url : "(none)");
		return;
	}
	char mime[32];
	snprintf(mime, sizeof(mime), "%.*s", (int)(semi - url - 5), url + 5);
	image_check_base64(mime, semi + 8, img);
}

void image_cache_release(void)
{
	free(cache);
	cache = NULL;
	ncache = capcache = 0;
}
