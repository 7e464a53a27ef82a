#ifndef RK_RUN_LOG_H
#define RK_RUN_LOG_H
/* A run's record for people, beside the events of engine/agent/run.h: one line of
 * text per stored event (`rakazo run logs` and the dashboard's timeline
 * print the same words), and a small picture of each distinct frame the
 * model was shown.
 *
 * Frames: the run keeps one PNG per frame hash, downscaled to fit
 * RK_RUN_FRAME_MAX_W x RK_RUN_FRAME_MAX_H (aspect kept), in
 * DATA_DIR/runs/<run-id>/frames/<frame-hash>.png, written once (a frame the
 * model sees again is not written twice). A tool.result event's frame_hash
 * names its picture. Nothing here prints. */

#include <cJSON.h>
#include <stddef.h>

#include "engine/util/err.h"

#define RK_RUN_FRAME_MAX_W 160
#define RK_RUN_FRAME_MAX_H 100

/* One event (a run_events document) as a line: "SEQ TIME TYPE detail" (the
 * CLI's), or with compact "HH:MM:SS TYPE detail" (a narrow pane's).
 * malloc'd. */
char *rk_run_event_line(const cJSON *ev, int compact);

/* Keeps the picture of png (a frame the run's tool result carried, PNG or
 * JPEG) under frame_hash (hex), as a small PNG. 0 also when it is already
 * kept. */
int rk_run_frame_keep(const char *data_dir, const char *run_id, const char *frame_hash, const void *png, size_t len,
		      struct rk_error *err);

/* The kept picture of frame_hash as packed RGB (malloc'd into *rgb), scaled
 * down to fit max_w x max_h (0: as kept). RK_ENOTFOUND when there is none. */
int rk_run_frame_load(const char *data_dir, const char *run_id, const char *frame_hash, int max_w, int max_h,
		      unsigned char **rgb, int *w, int *h, struct rk_error *err);

#endif
