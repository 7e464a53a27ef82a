#ifndef RK_COMPUTER_TOOL_H
#define RK_COMPUTER_TOOL_H
/* The vendors' native computer tools, translated into the screen engine's
 * batched act (engine/screen/actions.h). Which tool a model gets, the size
 * its screenshots are scaled to, the tool's declaration, and one call of
 * it turned into a step the run loop performs. Pure: no I/O but getenv.
 *
 * Which tool (rk_computer_tool_spec_for), first match wins:
 *   RAKAZO_COMPUTER_TOOL=TYPE   that type (it must belong to the api)
 *   RAKAZO_COMPUTER_TOOL=none   no native tool (the loop keeps its function tools)
 *   chat                        none: Chat Completions has no native computer tool
 *   messages, a Claude model    computer_20251124 (zoom on) for Opus 4.5 and every
 *                               model from 4.6 on (claude-opus-4-6, claude-sonnet-4-6,
 *                               claude-opus-4-7/4-8, the 5 family, claude-mythos-*,
 *                               claude-fable-*, and a claude name with no version);
 *                               computer_20250124 for older ones (claude-sonnet-4-5,
 *                               claude-haiku-4-5, claude-opus-4-1, claude-*-4-0 and
 *                               dated 4s, claude-3-7-sonnet). The version is read from
 *                               the name after "claude-", so Bedrock ("anthropic.claude-
 *                               opus-4-5-20251101-v1:0") and Vertex ("claude-opus-4-5@...")
 *                               ids work.
 *   messages, any other model   computer_20250124
 *   responses                   computer_use_preview for a computer-use-preview model,
 *                               else the GA computer tool
 * computer_toolset_20260801 (the GA Messages API's toolset, calls named per
 * action) is known here and chosen only by RAKAZO_COMPUTER_TOOL: the request
 * builder must declare it as {"type":"computer_toolset_20260801"} (no name, no
 * display size) and answer its tool_use blocks with toolset_name "computer".
 *
 * Screenshot size (rk_computer_tool_fit): never enlarged, aspect kept.
 *   Claude types            long edge <= 1568 px and <= 1 150 000 pixels
 *   computer (Responses)    short edge <= 768 and long edge <= 2048: the size
 *                           OpenAI's vision keeps as sent, so the model's coordinates
 *                           are in our image (1920x1080 -> 1365x768)
 *   computer_use_preview    inside 1024x768 (XGA, the size its guide asks for)
 *
 * Translation (rk_computer_tool_translate): coordinates stay in the model's
 * image space (display_w x display_h); the screen maps them to the screen
 * when the batch runs with observe options max_width = box_w, max_height =
 * box_h. Every coordinate must lie in [0, display_w) x [0, display_h).
 *   Anthropic ({"action":..} input; or, for the toolset, the call's name is
 *   the action and the input holds its fields):
 *     key {text, repeat?}        xdotool syntax: "Return", "ctrl+s", "super"; names are
 *                                case-insensitive; space-separated combos press in turn
 *     hold_key {text, duration}  key_down, waits (duration s, 0..100), key_up
 *     type {text}                type (split every 4096 characters)
 *     cursor_position            CURSOR_POSITION
 *     mouse_move {coordinate}    move
 *     left_mouse_down|up         down|up, left button, where the pointer is
 *     left_click, right_click, middle_click, double_click, triple_click
 *       {coordinate?, text?}     click with count 1/2/3; text (or key) names modifiers
 *                                held through it: key_down, click, key_up
 *     left_click_drag {start_coordinate, coordinate, text?}   drag
 *     scroll {coordinate?, scroll_direction, scroll_amount, text?}
 *                                scroll by direction and amount (over 20: split)
 *     wait {duration}            WAIT, duration seconds (0..100)
 *     screenshot                 SCREENSHOT
 *     zoom {region}              ZOOM [x0,y0,x1,y1], 0 <= x0 < x1 <= display_w (same
 *                                for y); only when the spec has zoom
 *   OpenAI ({"actions":[..]} for the GA tool, {"action":{..}} for the preview;
 *   each action has "type"): one batch, in order.
 *     click {button, x, y, keys?} left, right, wheel (middle); back and forward have
 *                                no button in the act schema: a move to x,y, then the
 *                                key alt+Left or alt+Right (a browser's back/forward)
 *     double_click {x, y, keys?} click with count 2
 *     drag {path:[{x,y},..]}     drag (2..100 points)
 *     keypress {keys:[..]}       one combo: "CTRL","ENTER","ARROWLEFT","A" become
 *                                ctrl, Return, Left, a (a letter is the key, not its capital)
 *     move {x, y}                move
 *     scroll {x, y, scroll_x, scroll_y}  pixels to wheel notches:
 *                                RK_COMPUTER_SCROLL_PX_PER_NOTCH a notch, rounded, at least
 *                                1 when not 0, sign kept, at most 20; both 0: a move
 *     type {text}                type
 *     wait                       RK_COMPUTER_WAIT_MS_OPENAI (alone: WAIT, else a wait action)
 *     screenshot                 alone: SCREENSHOT; inside the list it ends the batch
 *                                (the batch observes anyway): actions after it are not
 *                                run and step->note says so, for the model
 *   keys on click, double_click, drag, move and scroll are held through the action.
 * Fields that are null count as absent; any other field an action does not
 * take is an error. Errors are RK_EINVALID naming the action and field
 * ("left_click: coordinate [1400, 10] is outside the 1366x768 screen ..."),
 * meant to go back to the model as the tool's error. The batch is parsed
 * and checked with the screen engine's own parser before it is returned. */

#include <stdint.h>

#include "engine/agent/model.h"
#include "engine/util/err.h"

#define RK_COMPUTER_SCROLL_PX_PER_NOTCH 100
#define RK_COMPUTER_WAIT_MS_OPENAI 2000
#define RK_COMPUTER_DURATION_MAX_S 100 /* wait and hold_key, as Anthropic's reference tool */

struct rk_computer_tool_spec {
	enum rk_model_api api;
	const char *type; /* static: "computer_20250124", "computer_20251124", "computer_toolset_20260801",
			   * "computer", "computer_use_preview" */
	const char *beta; /* static anthropic-beta value the type needs, or NULL */
	int zoom;	  /* the zoom action is on (enable_zoom) */
	int toolset;	  /* computer_toolset_20260801: calls are named per action */
	/* the screenshot target; 0: no limit */
	int max_long_edge, max_short_edge;
	int64_t max_pixels;
	/* Set by rk_computer_tool_fit (0 before): the size of the screenshots
	 * the model sees, and the observe options' max_width/max_height that
	 * give exactly that size (0: no limit on that side). */
	int display_w, display_h;
	int box_w, box_h;
};

/* The native tool for a model spoken to with api (model may be NULL).
 * Returns 1 and fills out, 0 when the model gets no native tool, or
 * RK_EINVALID for a RAKAZO_COMPUTER_TOOL the api does not know. */
int rk_computer_tool_spec_for(enum rk_model_api api, const char *model, struct rk_computer_tool_spec *out,
			      struct rk_error *err);
/* The spec of one type by name; RK_EINVALID naming the types api knows. */
int rk_computer_tool_spec_of_type(enum rk_model_api api, const char *type, struct rk_computer_tool_spec *out,
				  struct rk_error *err);

/* Sets spec's display and box sizes for a screen_w x screen_h screen (the
 * sizes rk_picture_fit gives, so the screen engine's observe agrees). */
void rk_computer_tool_fit(struct rk_computer_tool_spec *spec, int screen_w, int screen_h);

/* The declaration of the native tool (name "computer", the spec's type,
 * beta, fitted display size and zoom) into *out; the strings are static. */
void rk_computer_tool_declare(const struct rk_computer_tool_spec *spec, struct rk_model_tool *out);

enum rk_computer_step_kind {
	RK_COMPUTER_ACT,	     /* run batch_json, then observe */
	RK_COMPUTER_SCREENSHOT,	     /* just observe */
	RK_COMPUTER_ZOOM,	     /* a full-resolution crop of region */
	RK_COMPUTER_CURSOR_POSITION, /* answer with the last pointer position */
	RK_COMPUTER_WAIT,	     /* sleep wait_ms, then observe */
};

struct rk_computer_step {
	enum rk_computer_step_kind kind;
	char *batch_json; /* ACT: {"actions":[...]} in engine/screen/actions.h's schema; malloc'd */
	int region[4];	  /* ZOOM: x0, y0, x1, y1 in image space (x1, y1 exclusive) */
	int wait_ms;	  /* WAIT */
	char *note;	  /* NULL, or malloc'd text the loop adds to the tool result */
};

/* Translates one native call (call->arguments is the vendor's input, see
 * model.h) for spec, whose display size must be fitted. On success the
 * caller owns *out (rk_computer_step_release); on failure *out is empty. */
int rk_computer_tool_translate(const struct rk_computer_tool_spec *spec, const struct rk_model_tool_call *call,
			       struct rk_computer_step *out, struct rk_error *err);
void rk_computer_step_release(struct rk_computer_step *s);

#endif
