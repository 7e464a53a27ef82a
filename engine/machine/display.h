#ifndef RK_DISPLAY_H
#define RK_DISPLAY_H
/* A computer's display, held open across calls. The first call starts the
 * provider's desktop stack for display N and a detached holder process that
 * keeps one screen (a persistent VNC connection, or the provider's own
 * capture) and answers observe/act calls in order on an abstract socket;
 * it goes after RAKAZO_DISPLAY_IDLE_MS (10 min) without a call. So every
 * CLI call and run shares one mirrored framebuffer per display. */

#include <cJSON.h>
#include <stddef.h>

#include "engine/screen/picture.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"

struct rk_display_shot {
	cJSON *meta;	    /* rk_observation_to_json's document; owned */
	unsigned char *png; /* malloc'd image of type mime (PNG or JPEG), NULL when unchanged */
	size_t png_len;
	const char *mime; /* "image/png" or "image/jpeg" (static; meta's mime_type) */
};
void rk_display_shot_release(struct rk_display_shot *s);

struct rk_display_observe_options {
	int max_width, max_height;     /* 0: full size */
	const char *consumer;	       /* dedupe key, or NULL */
	enum rk_picture_format format; /* RK_PICTURE_PNG (0, the default) or RK_PICTURE_JPEG */
	int quality;		       /* JPEG quality 1-100; 0: RK_JPEG_QUALITY_DEFAULT (75) */
	/* When this call starts the display: Chromium's profile, relative to the
	 * workspace (NULL: .browser-profiles/default on display 0, none on
	 * others), and whether a display that cannot be started is
	 * MULTI_SCREEN_UNAVAILABLE (a bot's extra screen) rather than the
	 * provider's own error. */
	const char *profile_dir;
	int start_is_extra_screen;
};

/* Observes display N of c (resuming c and starting the display as needed). */
int rk_display_observe(struct rk_engine *eng, struct rk_computer *c, int display,
		       const struct rk_display_observe_options *opt, struct rk_display_shot *out, struct rk_error *err);

struct rk_display_act_result {
	cJSON *result;	    /* {completed, settled, observation|null}; owned */
	unsigned char *png; /* malloc'd image of type mime, NULL when none or unchanged */
	size_t png_len;
	const char *mime; /* "image/png" or "image/jpeg" (static) */
};
void rk_display_act_result_release(struct rk_display_act_result *r);

/* Runs a batch (strict JSON, the screen engine's schema). settle_ms and
 * observe < 0 leave them to the batch. Coordinates are in the image that
 * opt's sizes give. A bad batch is RK_EINVALID and nothing runs. */
int rk_display_act(struct rk_engine *eng, struct rk_computer *c, int display, const char *batch_json, int settle_ms,
		   int observe, const struct rk_display_observe_options *opt, struct rk_display_act_result *out,
		   struct rk_error *err);
/* A region of display N at full resolution (Anthropic's computer tool
 * "zoom"): region is in the image that opt's sizes give (0 <= x0 < x1 <=
 * width, 0 <= y0 < y1 <= height; RK_EINVALID naming the field otherwise);
 * the screen pixels under it are scaled to fill that image size, aspect
 * kept, and encoded as opt says. out->meta is the observation JSON with
 * zoom {region, screen_region}; its width/height are the zoomed image's.
 * opt's consumer is not used (a zoom never dedupes). */
int rk_display_zoom(struct rk_engine *eng, struct rk_computer *c, int display, const struct rk_picture_rect *region,
		    const struct rk_display_observe_options *opt, struct rk_display_shot *out, struct rk_error *err);
/* {display, width, height, transport, holder_pid}; owned by the caller. */
int rk_display_info(struct rk_engine *eng, struct rk_computer *c, int display, cJSON **out, struct rk_error *err);
/* Ends the holder and stops the desktop stack of display N. */
int rk_display_close(struct rk_engine *eng, struct rk_computer *c, int display, struct rk_error *err);

#endif
