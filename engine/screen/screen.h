#ifndef RK_SCREEN_H
#define RK_SCREEN_H
/* The screen engine: one display of one computer, observed and acted on.
 *
 * A VNC screen (rk_screen_open_vnc) holds one persistent libvncclient
 * connection to x11vnc over a unix socket. A background thread keeps a
 * local framebuffer current with incremental updates (tight, lossless, one
 * update request always outstanding), so an observation is a conversion and
 * a PNG encode, and "settled" means "no update for settle_ms". Input goes
 * out as VNC pointer and key events (text as keysyms, never the clipboard).
 * x11vnc draws the pointer into the pixels; the position observe reports is
 * the last one this screen sent.
 *
 * A provider screen (rk_screen_open_provider) is for machines with no VNC:
 * it calls the provider's capture and act ops (the fake provider).
 *
 * One rk_screen may be used from several threads: observe and act are
 * serialized with each other; rk_screen_input (a person's takeover input)
 * does not wait for a running batch. Nothing here prints or exits. */

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "providers/provider.h"
#include "engine/util/err.h"

struct rk_screen;

struct rk_observe_options {
	int max_width, max_height;     /* 0: no limit; the image is downscaled to fit, aspect kept */
	const char *consumer;	       /* dedupe key (a run, a tool call chain); NULL: always send the image */
	enum rk_picture_format format; /* RK_PICTURE_PNG (0, the default) or RK_PICTURE_JPEG */
	int quality;		       /* JPEG quality 1-100; 0: RK_JPEG_QUALITY_DEFAULT */
};

struct rk_observation {
	uint64_t frame_id;	/* monotonic per screen, one for each observation */
	int64_t captured_at_ms; /* wall clock */
	const char *mime_type;	/* "image/png" or "image/jpeg" (static): what png holds */
	int width, height;	/* the image */
	int screen_width, screen_height;
	double scale; /* width / screen_width (1.0: not scaled) */
	int has_cursor;
	int cursor_x, cursor_y; /* in image coordinates */
	char *window_id;	/* malloc'd or NULL: not known (see rk_screen_set_window_probe) */
	char *window_title;	/* malloc'd or NULL */
	char frame_hash[65];	/* BLAKE2b-256 (libsodium crypto_generichash, no key), in hex, of the image's
				 * packed RGB pixels (width*height*3 bytes, rows top down) before encoding:
				 * the pixels a PNG carries, so hashlib.blake2b(rgb, digest_size=32) of the
				 * decoded PNG gives it back (a JPEG's decode differs: it is lossy) */
	int unchanged;		/* the consumer already has this frame (in any format): png is NULL */
	unsigned char *png;	/* malloc'd encoded image of mime_type (PNG or JPEG; the name is
				 * historical), or NULL when unchanged */
	size_t png_len;
	/* rk_screen_zoom: the region shown, in the observe options' image and
	 * on the screen; width and height are the zoomed image's */
	int zoomed;
	struct rk_picture_rect region, screen_region;
};

struct rk_act_options {
	int settle_ms; /* -1: the batch's, else 300; capped at 3000 */
	int observe;   /* -1: the batch's, else 1 */
	/* The coordinate space of the actions and the observation afterwards:
	 * coordinates are in the image these options give (scaled back to the
	 * screen), so pass the options of the screenshot the caller looked at. */
	struct rk_observe_options observe_opt;
};
#define RK_ACT_OPTIONS_INIT                                                                                            \
	{                                                                                                              \
		.settle_ms = -1, .observe = -1                                                                         \
	}
#define RK_SETTLE_MS_DEFAULT 300

struct rk_act_result {
	size_t completed; /* actions that ran to the end (also set on failure) */
	int settled;	  /* 1: the screen was quiet for settle_ms; 0: it kept changing (bounded) */
	int observed;	  /* obs is filled */
	struct rk_observation obs;
};

/* Connects to the x11vnc unix socket and waits (bounded) for the first full
 * frame. RK_EUNAVAILABLE when nothing answers there. */
int rk_screen_open_vnc(const char *unix_socket_path, struct rk_screen **out, struct rk_error *err);
/* For providers without VNC: capture and act through ops. m is copied. */
int rk_screen_open_provider(const struct rk_provider_ops *ops, const struct rk_machine *m, int display,
			    struct rk_screen **out, struct rk_error *err);
void rk_screen_free(struct rk_screen *s);

/* Optional: how to learn the active window (id and title, each malloc'd or
 * NULL) for observations, e.g. a cheap query through the provider. Without
 * one a VNC screen reports no active window (VNC does not carry it); a
 * provider screen reports the title its capture gives. */
typedef int (*rk_screen_window_fn)(void *ctx, char **id, char **title);
void rk_screen_set_window_probe(struct rk_screen *s, rk_screen_window_fn fn, void *ctx);

/* A counter that grows whenever part of the screen is redrawn (0 for
 * provider screens, which cannot tell). */
uint64_t rk_screen_damage(struct rk_screen *s);

/* 0 once the screen's connection died (its machine or VNC server went):
 * every later call fails, so a holder ends rather than keep it. */
int rk_screen_alive(struct rk_screen *s);

/* The screen size now (0 when unknown). */
void rk_screen_size(struct rk_screen *s, int *width, int *height);

/* Observes the screen. opt may be NULL (full size, no dedupe). The caller
 * releases *out with rk_observation_release. When the frame hash equals the
 * last frame this consumer was sent, unchanged=1 and png is NULL. */
int rk_screen_observe(struct rk_screen *s, const struct rk_observe_options *opt, struct rk_observation *out,
		      struct rk_error *err);
void rk_observation_release(struct rk_observation *o);
/* The metadata as JSON (snake_case, no image bytes): frame_id (string),
 * captured_at (ISO-8601 UTC), mime_type, width, height, screen_width,
 * screen_height, scale, cursor {x,y} | null, active_window {id,title} | null,
 * frame_hash, unchanged; a zoom adds zoom {region [x0,y0,x1,y1],
 * screen_region [...]}. The caller owns the result. */
cJSON *rk_observation_to_json(const struct rk_observation *o);

/* A region of the screen at full resolution (Anthropic's computer tool
 * "zoom"): region is in the image opt gives (x0 < x1 <= width, y0 < y1 <=
 * height; RK_EINVALID naming the field otherwise), the screen pixels under
 * it are cropped from the full-resolution frame and scaled to fill opt's
 * image size, aspect kept (enlarged when the region is smaller, as the
 * tool's definition asks: fine detail becomes legible). out->scale is
 * zoomed pixels per screen pixel; no cursor; no dedupe (a consumer's last
 * frame stays what it was). Encoded as opt says. */
int rk_screen_zoom(struct rk_screen *s, const struct rk_picture_rect *region, const struct rk_observe_options *opt,
		   struct rk_observation *out, struct rk_error *err);

/* Runs the batch in order after checking all of it (coordinates inside the
 * image of opt->observe_opt), settles, then observes unless told not to.
 * opt may be NULL. On failure result->completed says how far it got; a
 * display that went away is RK_EUNAVAILABLE. The caller releases *result. */
int rk_screen_act(struct rk_screen *s, const struct rk_action_batch *batch, const struct rk_act_options *opt,
		  struct rk_act_result *result, struct rk_error *err);
void rk_act_result_release(struct rk_act_result *r);

/* One input event from a person (takeover), in screen coordinates; no
 * settle and no observation. */
int rk_screen_input(struct rk_screen *s, const struct rk_action *a, struct rk_error *err);

#define RK_SCREEN_WIDTH_DEFAULT 1280
#define RK_SCREEN_HEIGHT_DEFAULT 800
/* The screen size a computer's options ask for: {"screen": "WIDTHxHEIGHT"},
 * from 640x480 to 3840x2160 (`computer create --screen`); absent (or
 * options NULL): 1280x800. RK_EINVALID for anything else. */
int rk_screen_size_option(const cJSON *options, int *w, int *h, struct rk_error *err);

#endif
