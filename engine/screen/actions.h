#ifndef RK_ACTIONS_H
#define RK_ACTIONS_H
/* Actions: the strict JSON schema for what the screen engine does to a
 * display, parsed and validated before anything runs.
 *
 * A batch is an array of 1..24 action objects, or
 *   {"actions": [...], "settle_ms": 0..3000, "observe": true|false}
 * Each action is an object with "action" naming its kind; unknown kinds and
 * unknown fields are errors. Coordinates are integers in the screenshot's
 * (possibly scaled) pixel space.
 *   {"action":"move", "x":X, "y":Y}
 *   {"action":"click", ["x","y"], "button":"left|middle|right", "count":1..3}
 *   {"action":"double_click", ["x","y"], "button"}
 *   {"action":"right_click", ["x","y"]}
 *   {"action":"down"|"up", ["x","y"], "button"}
 *   {"action":"drag", "path":[[x,y] or {"x":..,"y":..}, ...] (2..100 points), "button"}
 *   {"action":"scroll", ["x","y"], "dx":-20..20, "dy":-20..20}   dy > 0 scrolls down
 *       or {"action":"scroll", ["x","y"], "direction":"up|down|left|right", "amount":1..20 (3)}
 *   {"action":"type", "text":"any Unicode text"}   (up to 4096 characters)
 *   {"action":"key"|"key_down"|"key_up", "keys":"ctrl+shift+t"}
 *   {"action":"wait", "ms":0..5000 (350)}
 * Errors are RK_EINVALID and name the action's index (from 0) and field:
 * "action 2: type: text must be a string". */

#include <cJSON.h>
#include <stddef.h>

#include "engine/screen/keys.h"
#include "engine/util/err.h"

#define RK_ACTIONS_MAX 24
#define RK_DRAG_POINTS_MAX 100
#define RK_TYPE_TEXT_MAX 4096 /* codepoints */
#define RK_SETTLE_MS_MAX 3000
#define RK_WAIT_MS_MAX 5000
#define RK_WAIT_MS_DEFAULT 350

enum rk_action_kind {
	RK_ACT_MOVE,
	RK_ACT_CLICK,
	RK_ACT_DOUBLE_CLICK,
	RK_ACT_RIGHT_CLICK,
	RK_ACT_DOWN,
	RK_ACT_UP,
	RK_ACT_DRAG,
	RK_ACT_SCROLL,
	RK_ACT_TYPE,
	RK_ACT_KEY,
	RK_ACT_KEY_DOWN,
	RK_ACT_KEY_UP,
	RK_ACT_WAIT,
	RK_ACT_KIND_COUNT
};

enum rk_button { RK_BUTTON_LEFT = 1, RK_BUTTON_MIDDLE = 2, RK_BUTTON_RIGHT = 3 };

struct rk_point {
	int x, y;
};

struct rk_action {
	enum rk_action_kind kind;
	int has_point; /* at is given (move: always) */
	struct rk_point at;
	enum rk_button button; /* click, double_click, down, up, drag */
	int count;	       /* click: 1..3 (double_click: 2) */
	struct rk_point *path; /* drag: malloc'd */
	size_t path_len;
	int dx, dy;	 /* scroll, in wheel notches; dy > 0 is down */
	char *text;	 /* type: malloc'd UTF-8 */
	char *keys_spec; /* key, key_down, key_up: malloc'd, as given */
	struct rk_key_combo keys;
	int ms; /* wait */
};

struct rk_action_batch {
	struct rk_action *actions; /* malloc'd */
	size_t n;
	int settle_ms; /* -1 when the batch does not say */
	int observe;   /* -1 when the batch does not say, else 0 or 1 */
};

/* Parses a batch (array or object form). On success the caller owns *out
 * (rk_action_batch_release); on failure *out is empty. */
int rk_action_batch_parse(const char *json, size_t len, struct rk_action_batch *out, struct rk_error *err);
int rk_action_batch_from_json(const cJSON *doc, struct rk_action_batch *out, struct rk_error *err);
/* One action object; index names it in errors. */
int rk_action_from_json(const cJSON *obj, size_t index, struct rk_action *out, struct rk_error *err);
/* Parses one action from text (for a person's single input). */
int rk_action_parse(const char *json, size_t len, struct rk_action *out, struct rk_error *err);
void rk_action_release(struct rk_action *a);
void rk_action_batch_release(struct rk_action_batch *b);

const char *rk_action_kind_name(enum rk_action_kind kind);
const char *rk_button_name(enum rk_button b);

/* Checks the batch as a whole before it runs: 1..24 actions and every
 * coordinate inside the w x h image the coordinates refer to. */
int rk_action_batch_check(const struct rk_action_batch *b, int w, int h, struct rk_error *err);
int rk_action_check(const struct rk_action *a, size_t index, int w, int h, struct rk_error *err);

/* Maps one coordinate from an image of image_size pixels to a screen of
 * screen_size pixels: the screen pixel under the image pixel's centre
 * (image pixel v covers screen [v*S/I, (v+1)*S/I), as rk_picture_scale
 * averages it). */
int rk_coord_to_screen(int v, int image_size, int screen_size);
/* The other way: the image pixel under the screen pixel's centre. For a
 * downscaled image it inverts rk_coord_to_screen exactly
 * (rk_coord_to_image(rk_coord_to_screen(v)) == v for every v), and
 * rk_coord_to_screen(rk_coord_to_image(x)) is within half an image pixel
 * of x: a 6 px target at 2560 -> 1024 is still hit. */
int rk_coord_to_image(int x, int image_size, int screen_size);

/* The action as JSON in this schema, with its coordinates mapped from an
 * img_w x img_h image to a scr_w x scr_h screen (pass equal sizes for none).
 * The caller owns the result (cJSON_Delete). */
cJSON *rk_action_to_json(const struct rk_action *a, int img_w, int img_h, int scr_w, int scr_h);

#endif
