/* A run's record for people (see run_log.h). */

#include "engine/agent/run_log.h"

#include <stdlib.h>
#include <string.h>

#include "engine/screen/picture.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"

/* --- lines ---------------------------------------------------------------------- */

char *rk_run_event_line(const cJSON *ev, int compact)
{
	const char *type = rk_json_string(ev, "type", "");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	const char *when = rk_json_string(ev, "time", "");
	struct rk_buf b;
	rk_buf_init(&b);
	if (compact)
		/* "2026-12-03T07:47:45.123Z": the time of day is enough beside its run */
		rk_buf_printf(&b, "%.8s %s", strlen(when) >= 19 ? when + 11 : when, type);
	else
		rk_buf_printf(&b, "%4lld %s %-20s", cJSON_IsNumber(seq) ? (long long)seq->valuedouble : 0LL, when,
			      type);
	if (!strcmp(type, "tool.call") || !strcmp(type, "model.tool_call")) {
		char *a = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(ev, "arguments"));
		rk_buf_printf(&b, " %s %.200s", rk_json_string(ev, "name", ""), a ? a : "");
		free(a);
	} else if (!strcmp(type, "tool.result")) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
		if (e)
			rk_buf_printf(&b, " %s error: %.200s", rk_json_string(ev, "name", ""),
				      cJSON_IsString(e) ? e->valuestring : rk_json_string(e, "message", ""));
		else
			rk_buf_printf(&b, " %s %.200s", rk_json_string(ev, "name", ""),
				      rk_json_string(ev, "output", ""));
	} else if (!strcmp(type, "model.turn")) {
		const char *text = rk_json_string(ev, "text", NULL);
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(ev, "step");
		rk_buf_printf(&b, " step %d", cJSON_IsNumber(st) ? st->valueint : 0);
		const char *stop = rk_json_string(ev, "stop", NULL);
		if (stop)
			rk_buf_printf(&b, " [%s%s%.200s]", stop, !strcmp(stop, "refusal") ? ": " : "",
				      !strcmp(stop, "refusal") ? rk_json_string(ev, "refusal", "") : "");
		const cJSON *cost = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "usage"),
								     "cost_usd");
		if (cJSON_IsNumber(cost))
			rk_buf_printf(&b, " ($%.4f)", cost->valuedouble);
		if (text)
			rk_buf_printf(&b, ": %.200s", text);
	} else if (!strcmp(type, "model.text")) {
		rk_buf_printf(&b, " %.200s", rk_json_string(ev, "text", ""));
	} else if (!strcmp(type, "run.finished")) {
		rk_buf_printf(&b, " %s", rk_json_string(ev, "state", ""));
		const cJSON *cost = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "usage"),
								     "cost_usd");
		if (cJSON_IsNumber(cost))
			rk_buf_printf(&b, " ($%.4f)", cost->valuedouble);
		const char *ans = rk_json_string(ev, "answer", NULL);
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
		if (ans)
			rk_buf_printf(&b, ": %.300s", ans);
		else if (e)
			rk_buf_printf(&b, ": %.300s", rk_json_string(e, "message", ""));
	} else if (!strcmp(type, "run.waiting_takeover")) {
		rk_buf_printf(&b, " %s", rk_json_string(ev, "reason", ""));
	} else if (!strcmp(type, "run.takeover_ended")) {
		rk_buf_printf(&b, " %s", rk_json_string(ev, "note", ""));
	} else if (!strcmp(type, "run.interrupted")) {
		rk_buf_printf(&b, " %s", rk_json_string(ev, "error", ""));
	} else if (!strcmp(type, "run.started")) {
		rk_buf_printf(&b, " on %s with %s", rk_json_string(ev, "computer", ""),
			      rk_json_string(ev, "model", ""));
	}
	return rk_buf_detach(&b, NULL);
}

/* --- frames --------------------------------------------------------------------- */

static int word_ok(const char *s, size_t max, int hex_only)
{
	size_t n = 0;
	for (; s && s[n]; n++) {
		char c = s[n];
		int ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			 (!hex_only && ((c >= 'A' && c <= 'Z') || (c >= 'g' && c <= 'z') || c == '_' || c == '-'));
		if (!ok)
			return 0;
	}
	return n > 0 && n <= max;
}

/* DATA_DIR/runs/<run-id>/frames[/<hash>.png], malloc'd; NULL for ids that
 * could not name a file of ours. */
static char *frame_path(const char *data_dir, const char *run_id, const char *frame_hash)
{
	if (!word_ok(run_id, 128, 0) || (frame_hash && !word_ok(frame_hash, 128, 1)))
		return NULL;
	if (!frame_hash)
		return rk_xasprintf("%s/runs/%s/frames", data_dir, run_id);
	return rk_xasprintf("%s/runs/%s/frames/%s.png", data_dir, run_id, frame_hash);
}

int rk_run_frame_keep(const char *data_dir, const char *run_id, const char *frame_hash, const void *png, size_t len,
		      struct rk_error *err)
{
	char *path = frame_path(data_dir, run_id, frame_hash), *dir = frame_path(data_dir, run_id, NULL);
	unsigned char *rgb = NULL, *small = NULL;
	struct rk_buf out;
	rk_buf_init(&out);
	int r = 0;
	if (!path || !dir) {
		r = rk_error_set(err, RK_EINVALID, "a run frame needs a run id and a hex frame hash");
		goto out;
	}
	if (rk_fs_exists(path))
		goto out;
	int w, h, tw, th;
	/* a native run's frames are JPEG (what the model was sent) */
	const unsigned char *b = png;
	int jpeg = len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff;
	if ((r = jpeg ? rk_picture_jpeg_decode(png, len, &rgb, &w, &h, err)
		      : rk_picture_png_decode(png, len, &rgb, &w, &h, err)))
		goto out;
	rk_picture_fit(w, h, RK_RUN_FRAME_MAX_W, RK_RUN_FRAME_MAX_H, &tw, &th);
	small = rk_xmalloc((size_t)tw * th * 3);
	rk_picture_scale(rgb, w, h, 3, (size_t)w * 3, small, tw, th);
	if ((r = rk_picture_png_encode(small, tw, th, &out, err)) == 0 && (r = rk_fs_mkdirs(dir, 0755, err)) == 0)
		r = rk_fs_write_atomic(path, out.data, out.len, 0644, err);
out:
	free(path);
	free(dir);
	free(rgb);
	free(small);
	rk_buf_release(&out);
	return r;
}

int rk_run_frame_load(const char *data_dir, const char *run_id, const char *frame_hash, int max_w, int max_h,
		      unsigned char **rgb, int *w, int *h, struct rk_error *err)
{
	*rgb = NULL;
	char *path = frame_path(data_dir, run_id, frame_hash);
	if (!path)
		return rk_error_set(err, RK_EINVALID, "a run frame needs a run id and a hex frame hash");
	struct rk_buf png;
	rk_buf_init(&png);
	int r = 0;
	if (!rk_fs_exists(path)) {
		r = rk_error_set(err, RK_ENOTFOUND, "run %s kept no picture of frame %.16s", run_id, frame_hash);
		goto out;
	}
	unsigned char *full = NULL;
	int fw, fh, tw, th;
	if ((r = rk_fs_read_all(path, 4u << 20, &png, err)) ||
	    (r = rk_picture_png_decode(png.data, png.len, &full, &fw, &fh, err)))
		goto out;
	rk_picture_fit(fw, fh, max_w, max_h, &tw, &th);
	if (tw == fw && th == fh) {
		*rgb = full;
	} else {
		*rgb = rk_xmalloc((size_t)tw * th * 3);
		rk_picture_scale(full, fw, fh, 3, (size_t)fw * 3, *rgb, tw, th);
		free(full);
	}
	*w = tw;
	*h = th;
out:
	free(path);
	rk_buf_release(&png);
	return r;
}
