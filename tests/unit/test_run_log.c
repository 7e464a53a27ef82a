/* engine/agent/run_log.c: event lines and the frames a run keeps (issue 9's timeline). */

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/screen/picture.h"
#include "engine/agent/run_log.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "check.h"

#define HASH "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff"

static char *tmp_dir(void)
{
	char *d = strdup("/tmp/rk-runlog-XXXXXX");
	return mkdtemp(d) ? d : NULL;
}

/* A w x h PNG: left half red, right half blue. */
static void png_of(int w, int h, struct rk_buf *out)
{
	unsigned char *rgb = calloc((size_t)w * h, 3);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			rgb[((size_t)y * w + x) * 3 + (x < w / 2 ? 0 : 2)] = 255;
	struct rk_error e;
	rk_picture_png_encode(rgb, w, h, out, &e);
	free(rgb);
}

TEST(event_lines)
{
	cJSON *ev = cJSON_Parse("{\"seq\":3,\"type\":\"tool.call\",\"time\":\"2026-12-03T07:53:05.533Z\","
				"\"name\":\"shell\",\"arguments\":{\"command\":\"ls\"}}");
	char *full = rk_run_event_line(ev, 0), *compact = rk_run_event_line(ev, 1);
	CHECK_EQ_STR(full, "   3 2026-12-03T07:53:05.533Z tool.call            shell {\"command\":\"ls\"}");
	CHECK_EQ_STR(compact, "07:53:05 tool.call shell {\"command\":\"ls\"}");
	free(full);
	free(compact);
	cJSON_Delete(ev);
	ev = cJSON_Parse("{\"seq\":4,\"type\":\"tool.result\",\"time\":\"2026-12-03T07:53:05.600Z\",\"name\":\"shell\","
			 "\"error\":{\"code\":\"timeout\",\"message\":\"it hung\"}}");
	compact = rk_run_event_line(ev, 1);
	CHECK_EQ_STR(compact, "07:53:05 tool.result shell error: it hung");
	free(compact);
	cJSON_Delete(ev);
}

/* a native run's screenshots are JPEG: they are kept too */
TEST(frame_kept_from_jpeg)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	unsigned char *rgb = rk_xmalloc((size_t)640 * 400 * 3);
	memset(rgb, 0x80, (size_t)640 * 400 * 3);
	struct rk_buf jpg;
	rk_buf_init(&jpg);
	struct rk_error e;
	CHECK_EQ_INT(rk_picture_jpeg_encode(rgb, 640, 400, 75, &jpg, &e), 0);
	free(rgb);
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_jpg", HASH, jpg.data, jpg.len, &e), 0);
	int w = 0, h = 0;
	rgb = NULL;
	CHECK_EQ_INT(rk_run_frame_load(dir, "run_jpg", HASH, 0, 0, &rgb, &w, &h, &e), 0);
	CHECK_EQ_INT(w, RK_RUN_FRAME_MAX_W);
	CHECK_EQ_INT(h, RK_RUN_FRAME_MAX_H);
	CHECK(rgb[0] > 0x70 && rgb[0] < 0x90);
	free(rgb);
	rk_buf_release(&jpg);
	rk_fs_remove_tree(dir, &e);
	free(dir);
}

TEST(frame_kept_small_once_and_loaded_scaled)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	struct rk_buf png;
	rk_buf_init(&png);
	png_of(1280, 800, &png);
	struct rk_error e;
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_abc", HASH, png.data, png.len, &e), 0);
	char *path = rk_xasprintf("%s/runs/run_abc/frames/%s.png", dir, HASH);
	struct stat st;
	CHECK_EQ_INT(stat(path, &st), 0);
	/* kept at 160x100 */
	struct rk_buf kept;
	rk_buf_init(&kept);
	unsigned char *rgb = NULL;
	int w = 0, h = 0;
	CHECK_EQ_INT(rk_fs_read_all(path, 1 << 20, &kept, &e), 0);
	CHECK_EQ_INT(rk_picture_png_decode(kept.data, kept.len, &rgb, &w, &h, &e), 0);
	CHECK_EQ_INT(w, RK_RUN_FRAME_MAX_W);
	CHECK_EQ_INT(h, RK_RUN_FRAME_MAX_H);
	free(rgb);
	/* a second keep of the same frame writes nothing */
	time_t mtime = st.st_mtime;
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_abc", HASH, "not a png", 9, &e), 0);
	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_INT(st.st_mtime, mtime);
	/* loaded to fit 32x20, the colours where they were */
	CHECK_EQ_INT(rk_run_frame_load(dir, "run_abc", HASH, 32, 20, &rgb, &w, &h, &e), 0);
	CHECK_EQ_INT(w, 32);
	CHECK_EQ_INT(h, 20);
	CHECK_EQ_INT(rgb[0], 255);
	CHECK_EQ_INT(rgb[2], 0);
	CHECK_EQ_INT(rgb[(31) * 3 + 2], 255);
	free(rgb);
	/* as kept with no limit */
	CHECK_EQ_INT(rk_run_frame_load(dir, "run_abc", HASH, 0, 0, &rgb, &w, &h, &e), 0);
	CHECK_EQ_INT(w, RK_RUN_FRAME_MAX_W);
	free(rgb);
	rk_buf_release(&kept);
	rk_buf_release(&png);
	free(path);
	rk_fs_remove_tree(dir, &e);
	free(dir);
}

TEST(frame_errors)
{
	char *dir = tmp_dir();
	struct rk_error e;
	unsigned char *rgb = NULL;
	int w, h;
	CHECK_EQ_INT(rk_run_frame_load(dir, "run_abc", HASH, 32, 20, &rgb, &w, &h, &e), -RK_ENOTFOUND);
	CHECK(rgb == NULL);
	/* names that could leave the directory are refused, and nothing is written */
	CHECK_EQ_INT(rk_run_frame_keep(dir, "../x", HASH, "x", 1, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_abc", "../../x", "x", 1, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_abc", "", "x", 1, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_run_frame_load(dir, "run/abc", HASH, 0, 0, &rgb, &w, &h, &e), -RK_EINVALID);
	/* bytes that are no PNG */
	CHECK_EQ_INT(rk_run_frame_keep(dir, "run_abc", HASH, "not a png", 9, &e), -RK_EINVALID);
	char *runs = rk_xasprintf("%s/runs/run_abc/frames/" HASH ".png", dir);
	CHECK(!rk_fs_exists(runs));
	free(runs);
	rk_fs_remove_tree(dir, &e);
	free(dir);
}

int main(void)
{
	RUN(event_lines);
	RUN(frame_kept_from_jpeg);
	RUN(frame_kept_small_once_and_loaded_scaled);
	RUN(frame_errors);
	return check_summary("run_log");
}
