/* The model's tools: schemas and dispatch (see tools.h). */

#include "engine/agent/tools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/machine/browser.h"
#include "engine/access/approval.h"
#include "engine/access/authz.h"
#include "engine/machine/computer.h"
#include "engine/machine/display.h"
#include "engine/agent/computer_tool.h"
#include "engine/agent/memory.h"
#include "engine/access/secret.h"
#include "engine/machine/session.h"
#include "engine/access/space.h"
#include "engine/machine/team.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

/* --- definitions ------------------------------------------------------------- */

struct tool_def {
	const char *name;
	const char *description;
	const char *schema;
};

/* Graphical tools first: rk_tools_definitions(0) skips them. */
#define BROWSER 3   /* the first BROWSER defs need a page browser */
#define GRAPHICAL 4 /* the next GRAPHICAL need a desktop */
static const struct tool_def defs[] = {
	{"browser_navigate",
	 "Load a URL in the computer's visible Chromium tab and wait until it has loaded (timeout_ms, default "
	 "30000). A person watching the screen sees it.",
	 "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},"
	 "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":120000}},"
	 "\"required\":[\"url\"],\"additionalProperties\":false}"},
	{"browser_snapshot",
	 "The visible tab's interactive elements and text as a compact tree: each element has a ref (e12) for "
	 "browser_act; refs stay with their element while it exists. Cheaper than a screenshot; screenshot:true "
	 "adds one.",
	 "{\"type\":\"object\",\"properties\":{\"screenshot\":{\"type\":\"boolean\"}},"
	 "\"additionalProperties\":false}"},
	{"browser_act",
	 "Act on an element of the last browser_snapshot by its ref: click, type (text; replaces the field's value "
	 "unless clear:false; submit:true presses Enter), select (value or label of an option), press (key like "
	 "Enter, Tab, ctrl+a; on ref when given), hover, scroll (dy pixels, default 400; at ref when given), "
	 "fill_secret (types stored secret name into the field, only on a page of the secret's origin; for a "
	 "user:password login, part username or password; you never see the value).",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"action\":{\"type\":\"string\",\"enum\":[\"click\",\"type\",\"select\",\"press\",\"hover\","
	 "\"scroll\",\"fill_secret\"]},\"ref\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"},"
	 "\"value\":{\"type\":\"string\"},\"key\":{\"type\":\"string\"},\"clear\":{\"type\":\"boolean\"},"
	 "\"submit\":{\"type\":\"boolean\"},\"dx\":{\"type\":\"integer\"},\"dy\":{\"type\":\"integer\"},"
	 "\"name\":{\"type\":\"string\"},\"part\":{\"type\":\"string\",\"enum\":[\"username\",\"password\"]}},"
	 "\"required\":[\"action\"],\"additionalProperties\":false}"},
	{"computer_observe",
	 "Take a screenshot of the computer's screen. The result names the frame and carries the "
	 "image; an unchanged screen is said to be unchanged, without a new image.",
	 "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"},
	{"computer_act",
	 "Run a batch of 1 to 24 mouse and keyboard actions in order, then take a screenshot. Coordinates are pixels "
	 "of the last screenshot. Actions: {action:move,x,y}, {action:click,x?,y?,button?,count?}, "
	 "{action:double_click,x?,y?}, {action:right_click,x?,y?}, {action:down|up,x?,y?,button?}, "
	 "{action:drag,path:[[x,y],...]}, {action:scroll,x?,y?,direction:up|down|left|right,amount?}, "
	 "{action:type,text}, {action:key|key_down|key_up,keys:\"ctrl+shift+t\"}, {action:wait,ms}.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"actions\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":24,\"items\":{\"type\":\"object\","
	 "\"properties\":{\"action\":{\"type\":\"string\",\"enum\":[\"move\",\"click\",\"double_click\","
	 "\"right_click\",\"down\",\"up\",\"drag\",\"scroll\",\"type\",\"key\",\"key_down\",\"key_up\",\"wait\"]},"
	 "\"x\":{\"type\":\"integer\"},\"y\":{\"type\":\"integer\"},"
	 "\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"middle\",\"right\"]},"
	 "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3},"
	 "\"path\":{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
	 "\"direction\":{\"type\":\"string\",\"enum\":[\"up\",\"down\",\"left\",\"right\"]},"
	 "\"amount\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20},"
	 "\"dx\":{\"type\":\"integer\"},\"dy\":{\"type\":\"integer\"},"
	 "\"text\":{\"type\":\"string\"},\"keys\":{\"type\":\"string\"},"
	 "\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5000}},"
	 "\"required\":[\"action\"]}},"
	 "\"settle_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":3000,"
	 "\"description\":\"wait this long for the screen to settle before the screenshot\"},"
	 "\"observe\":{\"type\":\"boolean\",\"description\":\"false: no screenshot after the actions\"}},"
	 "\"required\":[\"actions\"],\"additionalProperties\":false}"},
	{"open_path",
	 "Open a URL (kept as it is) or a workspace file on the computer's screen, as a person would, then take a "
	 "screenshot after it settles (600 ms).",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"a URL (https://...) or a path in the workspace\"}},"
	 "\"required\":[\"path\"],\"additionalProperties\":false}"},
	{"launch_app",
	 "Start an application on the computer's screen (a program name on its PATH; \"browser\" is the installed "
	 "web browser), optionally with a URI or file to open, then take a screenshot after it settles (600 ms).",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"application\":{\"type\":\"string\",\"description\":\"e.g. browser, xterm, xclock\"},"
	 "\"uri\":{\"type\":\"string\"}},"
	 "\"required\":[\"application\"],\"additionalProperties\":false}"},
	{"shell",
	 "Run a command with bash -lc in the computer's workspace. Waits up to yield_ms (default 10000) for it; a "
	 "command still running then gives back a session id for write_stdin. The result holds the new output, "
	 "whether it is still running and its exit code.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"command\":{\"type\":\"string\"},"
	 "\"cwd\":{\"type\":\"string\",\"description\":\"relative to the workspace, or absolute\"},"
	 "\"yield_ms\":{\"type\":\"integer\",\"minimum\":250,\"maximum\":30000},"
	 "\"tty\":{\"type\":\"boolean\",\"description\":\"run it on a terminal\"}},"
	 "\"required\":[\"command\"],\"additionalProperties\":false}"},
	{"write_stdin",
	 "Send characters to a running shell session's stdin (\"\" only reads new output), then wait up to yield_ms. "
	 "Without a terminal, \\u0003 interrupts the command and \\u0004 ends its input.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"session\":{\"type\":\"string\"},\"chars\":{\"type\":\"string\"},"
	 "\"yield_ms\":{\"type\":\"integer\",\"minimum\":250,\"maximum\":30000}},"
	 "\"required\":[\"session\",\"chars\"],\"additionalProperties\":false}"},
	{"read_file", "Read a UTF-8 text file of the workspace (at most 250000 bytes).",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\"},"
	 "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":250000}},"
	 "\"required\":[\"path\"],\"additionalProperties\":false}"},
	{"write_file", "Write a file of the workspace, creating its directories.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	 "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf8\",\"base64\"]},"
	 "\"executable\":{\"type\":\"boolean\"}},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}"},
	{"list_files", "List a directory of the workspace (default: its root).",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"additionalProperties\":false}"},
	{"attach_file",
	 "Attach a workspace file (at most 10 MiB: text, Markdown, CSV, JSON, HTML, PDF or an image) to your answer "
	 "for the person. The result names the attachment.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
	 "\"required\":[\"path\"],\"additionalProperties\":false}"},
	{"request_secret",
	 "Ask the person for a secret (an API key, a token, a login) you need for an HTTP service. You name it, "
	 "give the origin it is for (scheme://host[:port]) and how it is sent: bearer, basic, header:NAME or "
	 "query:NAME. The person sets the value; you never see it. Then call secret_request with its name.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"name\":{\"type\":\"string\",\"description\":\"letters, digits, _ - .\"},"
	 "\"origin\":{\"type\":\"string\",\"description\":\"e.g. https://api.example.com\"},"
	 "\"auth\":{\"type\":\"string\",\"description\":\"bearer, basic, header:NAME or query:NAME\"},"
	 "\"reason\":{\"type\":\"string\",\"description\":\"what you need it for, shown to the person\"}},"
	 "\"required\":[\"name\",\"origin\",\"auth\"],\"additionalProperties\":false}"},
	{"secret_request",
	 "Send one HTTP request with a stored secret added as its auth. The URL must be on the secret's origin "
	 "(same scheme, host and port), with no user@ part and no #fragment. Redirects are not followed. The "
	 "secret is removed from the response before you see it.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"name\":{\"type\":\"string\"},\"url\":{\"type\":\"string\"},"
	 "\"method\":{\"type\":\"string\",\"enum\":[\"GET\",\"POST\",\"PUT\",\"PATCH\",\"DELETE\",\"HEAD\"]},"
	 "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	 "\"body\":{\"type\":\"string\"}},"
	 "\"required\":[\"name\",\"url\"],\"additionalProperties\":false}"},
	{"memory_read", "Read a Markdown memory document by path, or list your memory documents without a path.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"additionalProperties\":false}"},
	{"memory_write",
	 "Save a Markdown memory document (the whole content). Give expected_revision (the revision you read; 0 "
	 "for a new document) to fail instead of overwriting a change made meanwhile.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	 "\"expected_revision\":{\"type\":\"integer\",\"minimum\":0}},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}"},
	{"create_space",
	 "Create a new space (a separate room for computers, memory, secrets and approval rules). A person must "
	 "approve every create_space call; the run waits for that.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"name\":{\"type\":\"string\",\"description\":\"1 to 128 letters, digits and . _ @ + -\"},"
	 "\"description\":{\"type\":\"string\",\"description\":\"what the space is for, shown to the person\"}},"
	 "\"required\":[\"name\"],\"additionalProperties\":false}"},
	{"memory_search", "Search your memory documents; the best matches first, each with a snippet.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"query\":{\"type\":\"string\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}},"
	 "\"required\":[\"query\"],\"additionalProperties\":false}"},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static struct rk_model_tool tools[NDEFS];
static pthread_once_t tools_once = PTHREAD_ONCE_INIT;

static void build_tools(void)
{
	for (size_t i = 0; i < NDEFS; i++) {
		cJSON *schema = cJSON_Parse(defs[i].schema);
		if (!schema)
			abort(); /* a typo in the table above; the unit test catches it */
		tools[i] = (struct rk_model_tool){.name = defs[i].name,
						  .description = defs[i].description,
						  .parameters = schema};
	}
}

const struct rk_model_tool *rk_tools_definitions(int desktop, size_t *n)
{
	pthread_once(&tools_once, build_tools);
	*n = desktop ? NDEFS - BROWSER : NDEFS - BROWSER - GRAPHICAL;
	return desktop ? tools + BROWSER : tools + BROWSER + GRAPHICAL;
}

const struct rk_model_tool *rk_tools_with_browser(size_t *n)
{
	pthread_once(&tools_once, build_tools);
	*n = NDEFS;
	return tools;
}

const struct rk_model_tool *rk_tools_for_computer(const struct rk_computer *c, size_t *n)
{
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	if (!c->desktop || !ops || !(ops->caps & RK_CAP_PAGE_BROWSER))
		return rk_tools_definitions(c->desktop, n);
	pthread_once(&tools_once, build_tools);
	*n = NDEFS;
	return tools;
}

int rk_tools_known(const char *name)
{
	for (size_t i = 0; name && i < NDEFS; i++)
		if (!strcmp(defs[i].name, name))
			return 1;
	return 0;
}

void rk_tool_result_release(struct rk_tool_result *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->png);
	free(r->label);
	memset(r, 0, sizeof(*r));
}

/* --- results --------------------------------------------------------------- */

/* Sets the text from doc (consumed); rk_tools_call redacts and clips it. */
static void set_text(struct rk_tool_result *out, cJSON *doc)
{
	char *s = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	free(out->text);
	out->text = s;
}

/* The text as the model gets it: every form of the user's secrets out of
 * each of its strings (engine/access/secret.h), then clipped for the model's
 * context. */
static void finish_text(struct rk_tool_result *out, const struct rk_secret_redactor *red)
{
	char *clean = rk_secret_redactor_text(red, out->text);
	free(out->text);
	out->text = clean;
	char *s = out->text;
	size_t len = strlen(s);
	if (len > RK_TOOL_RESULT_MAX) {
		size_t cut = RK_TOOL_RESULT_MAX;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--; /* not inside a UTF-8 sequence */
		s = rk_xrealloc(s, cut + sizeof("…"));
		memcpy(s + cut, "…", sizeof("…"));
		out->text = s;
	}
}

static int fail(struct rk_tool_result *out, const struct rk_error *e)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *o = cJSON_AddObjectToObject(doc, "error");
	cJSON_AddStringToObject(o, "code", rk_code_name(e->code));
	cJSON_AddStringToObject(o, "message", e->message);
	set_text(out, doc);
	out->is_error = 1;
	snprintf(out->error_code, sizeof(out->error_code), "%s", rk_code_name(e->code));
	return -(int)e->code;
}

/* Takes the screenshot into out, with its observation metadata under "observation" of doc. */
static void take_frame(struct rk_tool_result *out, const cJSON *obs, unsigned char **png, size_t *len)
{
	const char *hash = rk_json_string(obs, "frame_hash", "");
	snprintf(out->frame_hash, sizeof(out->frame_hash), "%s", hash);
	snprintf(out->mime, sizeof(out->mime), "%s", rk_json_string(obs, "mime_type", "image/png"));
	int64_t w = 0, h = 0;
	const cJSON *jw = cJSON_GetObjectItemCaseSensitive(obs, "width");
	const cJSON *jh = cJSON_GetObjectItemCaseSensitive(obs, "height");
	if (cJSON_IsNumber(jw))
		w = (int64_t)jw->valuedouble;
	if (cJSON_IsNumber(jh))
		h = (int64_t)jh->valuedouble;
	out->label = rk_xasprintf("%lldx%lld frame %.12s captured %s", (long long)w, (long long)h, hash,
				  rk_json_string(obs, "captured_at", "?"));
	out->png = *png;
	out->png_len = *len;
	*png = NULL;
	*len = 0;
}

/* --- the tools ----------------------------------------------------------------- */

static int need_desktop(struct rk_tools_ctx *ctx, struct rk_error *e)
{
	if (!ctx->computer->desktop)
		return rk_error_set(e, RK_EUNSUPPORTED,
				    "computer '%s' has no desktop: use shell and the file tools instead",
				    ctx->computer->name);
	return 0;
}

/* The size (and encoding) of the screenshots the model is shown: the native
 * tool's box when the run has one. */
static struct rk_display_observe_options observe_options(const struct rk_tools_ctx *ctx)
{
	struct rk_display_observe_options oo = {.max_width = ctx->max_width, .max_height = ctx->max_height};
	if (ctx->native) {
		/* the vendors take JPEG, and bill an image by its size, not its bytes */
		oo.max_width = ctx->native->box_w;
		oo.max_height = ctx->native->box_h;
		oo.format = RK_PICTURE_JPEG;
	}
	if (ctx->jpeg_quality > 0) {
		oo.format = RK_PICTURE_JPEG;
		oo.quality = ctx->jpeg_quality;
	}
	return oo;
}

/* A screenshot of the caller's screen into out, with note. */
static int observe_note(struct rk_tools_ctx *ctx, const char *note, struct rk_tool_result *out, struct rk_error *e)
{
	int r = need_desktop(ctx, e);
	if (r)
		return r;
	struct rk_display_observe_options oo = observe_options(ctx);
	struct rk_display_shot shot = {0};
	/* a bot sees its own screen (engine/machine/team.h); without one, the display */
	if ((r = ctx->bot_id ? rk_team_screen_observe(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, &oo, &shot, e)
			     : rk_display_observe(ctx->eng, ctx->computer, ctx->display, &oo, &shot, e)))
		return r;
	take_frame(out, shot.meta, &shot.png, &shot.png_len);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "note", note);
	cJSON_AddItemToObject(doc, "observation", shot.meta);
	shot.meta = NULL;
	set_text(out, doc);
	rk_display_shot_release(&shot);
	return 0;
}

int rk_tools_screen_size(struct rk_tools_ctx *ctx, int *w, int *h, struct rk_error *e)
{
	int r = need_desktop(ctx, e);
	if (r)
		return r;
	/* a thumbnail is enough: the observation names the screen's size */
	struct rk_display_observe_options oo = {.max_width = 64, .max_height = 64};
	struct rk_display_shot shot = {0};
	if ((r = ctx->bot_id ? rk_team_screen_observe(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, &oo, &shot, e)
			     : rk_display_observe(ctx->eng, ctx->computer, ctx->display, &oo, &shot, e)))
		return r;
	const cJSON *jw = cJSON_GetObjectItemCaseSensitive(shot.meta, "screen_width");
	const cJSON *jh = cJSON_GetObjectItemCaseSensitive(shot.meta, "screen_height");
	*w = cJSON_IsNumber(jw) ? jw->valueint : 0;
	*h = cJSON_IsNumber(jh) ? jh->valueint : 0;
	rk_display_shot_release(&shot);
	if (*w <= 0 || *h <= 0)
		return rk_error_set(e, RK_EFAILED, "the screen did not say its size");
	return 0;
}

static int t_observe(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	(void)args;
	return observe_note(ctx, "computer observed", out, e);
}

static int t_act(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	int r = need_desktop(ctx, e);
	if (r)
		return r;
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(args, "actions")))
		return rk_error_set(e, RK_EINVALID, "computer_act: actions must be a list of 1 to 24 actions");
	char *batch = cJSON_PrintUnformatted(args);
	struct rk_display_observe_options oo = observe_options(ctx);
	struct rk_display_act_result res = {0};
	r = ctx->bot_id
		    ? rk_team_screen_act(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, batch, -1, -1, &oo, &res, e)
		    : rk_display_act(ctx->eng, ctx->computer, ctx->display, batch, -1, -1, &oo, &res, e);
	free(batch);
	if (r)
		return r;
	const cJSON *obs = cJSON_GetObjectItemCaseSensitive(res.result, "observation");
	if (res.png && cJSON_IsObject(obs))
		take_frame(out, obs, &res.png, &res.png_len);
	const cJSON *done = cJSON_GetObjectItemCaseSensitive(res.result, "completed");
	char note[64];
	snprintf(note, sizeof(note), "completed %d computer action(s)", cJSON_IsNumber(done) ? done->valueint : 0);
	cJSON_AddStringToObject(res.result, "note", note);
	set_text(out, res.result);
	res.result = NULL;
	rk_display_act_result_release(&res);
	return 0;
}

static int shell_reply(struct rk_tool_result *out, struct rk_session_reply *rep)
{
	set_text(out, rk_session_reply_to_json(rep));
	rk_session_reply_release(rep);
	return 0;
}

static int t_shell(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *command, *cwd;
	int64_t yield;
	int tty;
	int r;
	if ((r = rk_json_get_string(args, "command", 1, &command, "shell", e)) ||
	    (r = rk_json_get_string(args, "cwd", 0, &cwd, "shell", e)) ||
	    (r = rk_json_get_int(args, "yield_ms", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS,
				 RK_SESSION_YIELD_DEFAULT_MS, &yield, "shell", e)) ||
	    (r = rk_json_get_bool(args, "tty", 0, &tty, "shell", e)))
		return r;
	if (!command[0])
		return rk_error_set(e, RK_EINVALID, "shell: command is empty");
	/* on a Team computer a bot's shell starts in its folder */
	char *bot_cwd = NULL;
	if (ctx->bot_id && (!cwd || cwd[0] != '/') &&
	    ((r = rk_team_layout(ctx->eng, ctx->computer, ctx->bot_id, e)) ||
	     (r = rk_team_path(ctx->computer, ctx->bot_id, cwd, &bot_cwd, e))))
		return r;
	struct rk_session_request req = {.command = command,
					 .cwd = bot_cwd ? bot_cwd : cwd,
					 .tty = tty,
					 .rows = 24,
					 .cols = 80,
					 .yield_ms = yield,
					 .max_output = RK_TOOL_SHELL_OUTPUT,
					 .bot_id = ctx->bot_id,
					 .keep_back = 1};
	struct rk_session_reply rep = {0};
	r = rk_session_start(ctx->eng, ctx->computer, &req, &rep, e);
	free(bot_cwd);
	if (r)
		return r;
	return shell_reply(out, &rep);
}

static int t_stdin(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *session, *chars;
	int64_t yield;
	int r;
	if ((r = rk_json_get_string(args, "session", 1, &session, "write_stdin", e)) ||
	    (r = rk_json_get_string(args, "chars", 1, &chars, "write_stdin", e)) ||
	    (r = rk_json_get_int(args, "yield_ms", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, 1000, &yield,
				 "write_stdin", e)))
		return r;
	struct rk_session_reply rep = {0};
	if ((r = rk_session_input(ctx->eng, ctx->computer->id, session, chars, strlen(chars), yield,
				  RK_TOOL_SHELL_OUTPUT, &rep, e)))
		return r;
	return shell_reply(out, &rep);
}

/* A file tool's path as the bot means it (engine/machine/team.h): on a Team
 * computer relative paths are in bots/<bot>/, shared/ is shared. */
static int bot_path(struct rk_tools_ctx *ctx, const char *path, char **out, struct rk_error *e)
{
	int r = ctx->bot_id ? rk_team_layout(ctx->eng, ctx->computer, ctx->bot_id, e) : 0;
	return r ? r : rk_team_path(ctx->computer, ctx->bot_id, path, out, e);
}

static int t_read(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *path;
	int64_t max;
	int r;
	if ((r = rk_json_get_string(args, "path", 1, &path, "read_file", e)) ||
	    (r = rk_json_get_int(args, "max_bytes", 1, RK_TOOL_READ_MAX, RK_TOOL_READ_MAX, &max, "read_file", e)))
		return r;
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	char *where = NULL;
	if ((r = bot_path(ctx, path, &where, e)) == 0)
		r = rk_computer_file_read(ctx->eng, ctx->computer, where, (size_t)max, &b, e);
	free(where);
	if (r == 0 && !rk_utf8_valid(b.data, b.len))
		r = rk_error_set(e, RK_EINVALID, "read_file: '%s' is not UTF-8 text", path);
	if (r == 0) {
		/* keep the JSON whole: the text is cut here, not by the final clip */
		size_t keep = b.len, room = RK_TOOL_RESULT_MAX - 512 - strlen(path);
		int truncated = 0;
		if (keep > room / 2) { /* escapes may double it */
			keep = room / 2;
			while (keep > 0 && ((unsigned char)b.data[keep] & 0xC0) == 0x80)
				keep--;
			truncated = 1;
		}
		char *content = rk_xstrndup(b.data, keep);
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "path", path);
		cJSON_AddNumberToObject(doc, "size", (double)b.len);
		cJSON_AddStringToObject(doc, "content", content);
		cJSON_AddBoolToObject(doc, "truncated", truncated);
		free(content);
		set_text(out, doc);
	}
	rk_buf_release(&b);
	return r;
}

static int t_write(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *path, *content, *enc;
	int exe, r;
	if ((r = rk_json_get_string(args, "path", 1, &path, "write_file", e)) ||
	    (r = rk_json_get_string(args, "content", 1, &content, "write_file", e)) ||
	    (r = rk_json_get_string(args, "encoding", 0, &enc, "write_file", e)) ||
	    (r = rk_json_get_bool(args, "executable", 0, &exe, "write_file", e)))
		return r;
	if (!enc)
		enc = "utf8";
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	if (!strcmp(enc, "base64")) {
		if (rk_base64_decode(content, &b) != 0) {
			rk_buf_release(&b);
			return rk_error_set(e, RK_EINVALID, "write_file: content is not valid base64");
		}
	} else if (!strcmp(enc, "utf8")) {
		rk_buf_adds(&b, content);
	} else {
		rk_buf_release(&b);
		return rk_error_set(e, RK_EINVALID, "write_file: encoding must be utf8 or base64");
	}
	char *where = NULL;
	if ((r = bot_path(ctx, path, &where, e)) == 0)
		r = rk_computer_file_write(ctx->eng, ctx->computer, where, b.data, b.len, exe, e);
	free(where);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddBoolToObject(doc, "ok", 1);
		cJSON_AddStringToObject(doc, "path", path);
		cJSON_AddNumberToObject(doc, "bytes", (double)b.len);
		set_text(out, doc);
	}
	rk_buf_release(&b);
	return r;
}

static int t_list(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *path;
	int r;
	if ((r = rk_json_get_string(args, "path", 0, &path, "list_files", e)))
		return r;
	if (!path || !strcmp(path, ".") || !strcmp(path, "./"))
		path = "";
	struct rk_file_entry *es;
	size_t n;
	char *where = NULL;
	if ((r = bot_path(ctx, path, &where, e)) == 0)
		r = rk_computer_file_list(ctx->eng, ctx->computer, where, &es, &n, e);
	free(where);
	if (r)
		return r;
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "path", path[0] ? path : ".");
	cJSON *arr = cJSON_AddArrayToObject(doc, "entries");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", es[i].name);
		cJSON_AddStringToObject(o, "type", rk_file_type_name(es[i].type));
		cJSON_AddNumberToObject(o, "size", (double)es[i].size);
		if (es[i].executable)
			cJSON_AddBoolToObject(o, "executable", 1);
		cJSON_AddItemToArray(arr, o);
	}
	rk_file_entries_free(es, n);
	set_text(out, doc);
	return 0;
}

/* --- opening things on the screen, and attachments ----------------------------- */

#define OPEN_SETTLE_MS 600
#define OPEN_COMMAND_MS 20000
#define ATTACH_MAX (10u << 20)

/* s in single quotes for sh, appended to b. */
static void sh_quote(struct rk_buf *b, const char *s)
{
	rk_buf_adds(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			rk_buf_adds(b, "'\\''");
		else
			rk_buf_add(b, s, 1);
	}
	rk_buf_adds(b, "'");
}

static int is_url(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
	return n > 0 && ((s[n] == ':' && s[n + 1] == '/' && s[n + 2] == '/') || !strncmp(s, "about:", 6) ||
			 !strncmp(s, "mailto:", 7));
}

/* The X display of the caller's screen: a bot's slot (its screen made
 * first when it has none), else ctx->display. */
static int screen_display(struct rk_tools_ctx *ctx, int *display, struct rk_error *e)
{
	*display = ctx->display;
	if (!ctx->bot_id)
		return 0;
	int64_t gen;
	struct rk_error ignored;
	if (rk_team_screen_slot(ctx->eng, ctx->computer->id, ctx->bot_id, display, &gen, &ignored) == 0)
		return 0;
	struct rk_tool_result first = {0};
	int r = observe_note(ctx, "", &first, e);
	rk_tool_result_release(&first);
	return r ? r : rk_team_screen_slot(ctx->eng, ctx->computer->id, ctx->bot_id, display, &gen, e);
}

/* Runs script (exports DISPLAY first) in the machine, detached programs and
 * all; exit 3 is RK_ENOTFOUND and 127 RK_EUNSUPPORTED, with the script's
 * own words; *out_text (may be NULL) gets its output. */
static int screen_sh(struct rk_tools_ctx *ctx, const char *what, const char *script, char **out_text,
		     struct rk_error *e)
{
	int display, code = 0, r;
	if ((r = screen_display(ctx, &display, e)))
		return r;
	char *cmd = rk_xasprintf("export DISPLAY=:%d\n%s", display, script);
	struct rk_buf o;
	rk_buf_init(&o);
	r = rk_computer_sh(ctx->eng, ctx->computer, cmd, OPEN_COMMAND_MS, &code, &o, e);
	free(cmd);
	while (o.len > 0 && (o.data[o.len - 1] == '\n' || o.data[o.len - 1] == '\r'))
		o.data[--o.len] = 0;
	const char *msg = o.len ? o.data : "failed";
	if (r == 0 && code == 3)
		r = rk_error_set(e, RK_ENOTFOUND, "%s: %s", what, msg);
	else if (r == 0 && code == 127)
		r = rk_error_set(e, RK_EUNSUPPORTED, "%s: %s", what, msg);
	else if (r == 0 && code != 0)
		r = rk_error_set(e, RK_EFAILED, "%s: %s (exit %d)", what, msg, code);
	if (r == 0 && out_text)
		*out_text = rk_xstrdup(o.len ? o.data : "");
	rk_buf_release(&o);
	return r;
}

/* Settles, then the screenshot with note "<verb> <what>". */
static int settled_shot(struct rk_tools_ctx *ctx, const char *verb, const char *what, struct rk_tool_result *out,
			struct rk_error *e)
{
	rk_sleep_ms(OPEN_SETTLE_MS);
	char *note = rk_xasprintf("%s %s", verb, what);
	int r = observe_note(ctx, note, out, e);
	free(note);
	return r;
}

/* "file://" + abs with everything but unreserved characters and "/" escaped. */
static char *file_url(const char *abs)
{
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, "file://");
	for (const unsigned char *p = (const unsigned char *)abs; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("/-._~", *p))
			rk_buf_add(&b, p, 1);
		else
			rk_buf_printf(&b, "%%%02X", *p);
	}
	return rk_buf_detach(&b, NULL);
}

/* open_path: a URL as it is, or a workspace file (the bot's, on a Team
 * computer). On a computer with a page browser (and no bot) the visible
 * Chromium tab loads it; elsewhere the machine's xdg-open opens it. */
static int t_open_path(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *path;
	int r = rk_json_get_string(args, "path", 1, &path, "open_path", e);
	if (r || (r = need_desktop(ctx, e)))
		return r;
	if (!path[0])
		return rk_error_set(e, RK_EINVALID, "open_path: path is empty");
	int url = is_url(path);
	char *where = NULL;
	if (!url && (r = bot_path(ctx, path, &where, e)))
		return r;
	struct rk_buf sc;
	rk_buf_init(&sc);
	rk_buf_adds(&sc, "t=");
	if (url) {
		sh_quote(&sc, path);
	} else if (where[0] == '/') {
		sh_quote(&sc, where);
	} else {
		rk_buf_adds(&sc, "\"$PWD\"/");
		sh_quote(&sc, where);
	}
	free(where);
	rk_buf_adds(&sc, "\ncase \"$t\" in *://*|about:*|mailto:*) ;; *) [ -e \"$t\" ] || "
			 "{ echo \"no such file in the workspace\"; exit 3; } ;; esac\n");
	const struct rk_provider_ops *ops = rk_provider_find(ctx->computer->kind);
	if (!ctx->bot_id && ops && (ops->caps & RK_CAP_PAGE_BROWSER)) {
		/* the visible tab loads it (a file: its absolute path, checked above) */
		char *abs = NULL;
		rk_buf_adds(&sc, "printf '%s' \"$t\"\n");
		r = url ? 0 : screen_sh(ctx, "open_path", sc.data, &abs, e);
		char *target = url ? rk_xstrdup(path) : r == 0 ? file_url(abs) : NULL;
		free(abs);
		struct rk_browser *b = NULL;
		cJSON *res = NULL;
		if (r == 0 && (r = rk_browser_connect(ctx->eng, ctx->computer, ctx->display, NULL, 0, &b, e)) == 0 &&
		    (r = rk_browser_navigate(b, target, RK_BROWSER_NAVIGATE_TIMEOUT_MS, &res, e)) == 0)
			cJSON_Delete(res);
		rk_browser_close(b);
		free(target);
	} else {
		rk_buf_adds(&sc, "command -v xdg-open >/dev/null 2>&1 || { echo \"the computer has no xdg-open to "
				 "open it with\"; exit 127; }\n"
				 "setsid -f xdg-open \"$t\" </dev/null >/dev/null 2>&1\n");
		r = screen_sh(ctx, "open_path", sc.data, NULL, e);
	}
	rk_buf_release(&sc);
	return r ? r : settled_shot(ctx, "opened", path, out, e);
}

/* launch_app: a program on the machine's PATH, detached, on the caller's screen. */
static int t_launch_app(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *app, *uri;
	int r;
	if ((r = rk_json_get_string(args, "application", 1, &app, "launch_app", e)) ||
	    (r = rk_json_get_string(args, "uri", 0, &uri, "launch_app", e)))
		return r;
	size_t n = strlen(app);
	if (n == 0 || n > 64 || app[0] == '-' || app[0] == '.' ||
	    strspn(app, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != n)
		return rk_error_set(
			e, RK_EINVALID,
			"launch_app: application must be a program name (letters, digits, . _ + -), not '%s'", app);
	if (uri && uri[0] == '-')
		return rk_error_set(e, RK_EINVALID, "launch_app: uri must not start with '-'");
	if ((r = need_desktop(ctx, e)))
		return r;
	struct rk_buf sc;
	rk_buf_init(&sc);
	rk_buf_adds(&sc, "app=");
	sh_quote(&sc, app);
	rk_buf_adds(&sc, "\nif [ \"$app\" = browser ]; then\n"
			 "  for b in google-chrome-stable google-chrome chromium firefox; do\n"
			 "    command -v $b >/dev/null 2>&1 && { app=$b; break; }\n"
			 "  done\nfi\n"
			 "command -v \"$app\" >/dev/null 2>&1 || { echo \"'$app' is not installed on the computer\"; "
			 "exit 3; }\n");
	if (uri && uri[0]) {
		rk_buf_adds(&sc, "setsid -f \"$app\" ");
		sh_quote(&sc, uri);
		rk_buf_adds(&sc, " </dev/null >/dev/null 2>&1\n");
	} else {
		rk_buf_adds(&sc, "setsid -f \"$app\" </dev/null >/dev/null 2>&1\n");
	}
	r = screen_sh(ctx, "launch_app", sc.data, NULL, e);
	rk_buf_release(&sc);
	if (r)
		return r;
	char *what = uri && uri[0] ? rk_xasprintf("%s %s", app, uri) : rk_xstrdup(app);
	r = settled_shot(ctx, "launched", what, out, e);
	free(what);
	return r;
}

/* The attachment types by file name extension. */
static const char *attach_mime(const char *path)
{
	static const char *const types[][2] = {
		{"txt", "text/plain"}, {"log", "text/plain"},	     {"md", "text/markdown"},
		{"csv", "text/csv"},   {"json", "application/json"}, {"html", "text/html"},
		{"htm", "text/html"},  {"xml", "application/xml"},   {"pdf", "application/pdf"},
		{"png", "image/png"},  {"jpg", "image/jpeg"},	     {"jpeg", "image/jpeg"},
		{"gif", "image/gif"},  {"webp", "image/webp"},	     {"svg", "image/svg+xml"},
	};
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(slash ? slash + 1 : path, '.');
	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(dot + 1, types[i][0]))
			return types[i][1];
	return NULL;
}

/* Types whose text an attachment keeps redacted. */
static int attach_is_text(const char *mime)
{
	return !strncmp(mime, "text/", 5) || !strcmp(mime, "application/json") || !strcmp(mime, "application/xml") ||
	       !strcmp(mime, "image/svg+xml");
}

/* attach_file: a copy of the file in DATA_DIR/attachments/<run>/<id>/<name>,
 * kept with the run after the computer is gone. Like everything else kept
 * for people, without a's secrets (engine/access/secret.h): in a text file's
 * content and in its name (a PDF or an image is kept as it is). */
static int t_attach_file(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			 struct rk_tool_result *out, struct rk_error *e)
{
	const char *path;
	int r = rk_json_get_string(args, "path", 1, &path, "attach_file", e);
	if (r)
		return r;
	const char *mime = attach_mime(path);
	if (!mime)
		return rk_error_set(e, RK_EINVALID,
				    "attach_file: unsupported attachment type of '%s' (text, Markdown, CSV, JSON, HTML, "
				    "XML, PDF, PNG, JPEG, GIF, WebP or SVG)",
				    path);
	if (!ctx->run_id)
		return rk_error_set(e, RK_EUNSUPPORTED, "attach_file: only a run keeps attachments");
	struct rk_buf b;
	rk_buf_init(&b);
	char *where = NULL;
	if ((r = bot_path(ctx, path, &where, e)) == 0 &&
	    (r = rk_computer_file_read(ctx->eng, ctx->computer, where, ATTACH_MAX, &b, e)) == -RK_ETOOLARGE)
		r = rk_error_set(e, RK_ETOOLARGE, "attach_file: '%s' is larger than %u bytes", path, ATTACH_MAX);
	free(where);
	char *id = NULL, *dir = NULL, *file = NULL;
	if (r == 0) {
		struct rk_secret_redactor *red = rk_secret_redactor_new(ctx->eng, a);
		if (attach_is_text(mime))
			rk_secret_redactor_buf(red, &b);
		const char *slash = strrchr(path, '/');
		struct rk_buf name;
		rk_buf_init(&name);
		rk_buf_adds(&name, slash ? slash + 1 : path);
		rk_secret_redactor_buf(red, &name);
		rk_secret_redactor_free(red);
		id = rk_id_new("att");
		dir = rk_xasprintf("%s/attachments/%s/%s", ctx->eng->data_dir, ctx->run_id, id);
		file = rk_path_join(dir, name.data);
		rk_buf_release(&name);
		if ((r = rk_fs_mkdirs(dir, 0700, e)) == 0)
			r = rk_fs_write_atomic(file, b.data ? b.data : "", b.len, 0600, e);
	}
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddBoolToObject(doc, "ok", 1);
		cJSON_AddStringToObject(doc, "attachment_id", id);
		cJSON_AddStringToObject(doc, "path", path);
		cJSON_AddStringToObject(doc, "mime_type", mime);
		cJSON_AddNumberToObject(doc, "bytes", (double)b.len);
		cJSON_AddStringToObject(doc, "stored", file);
		set_text(out, doc);
	}
	free(id);
	free(dir);
	free(file);
	rk_buf_release(&b);
	return r;
}

/* --- secrets and memory (engine/access/secret.h, engine/agent/memory.h) --------------------------- */

static int t_request_secret(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			    struct rk_tool_result *out, struct rk_error *e)
{
	const char *name, *origin, *auth, *reason;
	int r;
	if ((r = rk_json_get_string(args, "name", 1, &name, "request_secret", e)) ||
	    (r = rk_json_get_string(args, "origin", 1, &origin, "request_secret", e)) ||
	    (r = rk_json_get_string(args, "auth", 1, &auth, "request_secret", e)) ||
	    (r = rk_json_get_string(args, "reason", 0, &reason, "request_secret", e)))
		return r;
	cJSON *doc;
	if ((r = rk_secret_request(ctx->eng, a, ctx->run_id, name, origin, auth, reason, &doc, e)))
		return r;
	set_text(out, doc);
	return 0;
}

static int t_secret_request(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			    struct rk_tool_result *out, struct rk_error *e)
{
	struct rk_secret_http req = {0};
	int r;
	if ((r = rk_json_get_string(args, "name", 1, &req.name, "secret_request", e)) ||
	    (r = rk_json_get_string(args, "url", 1, &req.url, "secret_request", e)) ||
	    (r = rk_json_get_string(args, "method", 0, &req.method, "secret_request", e)) ||
	    (r = rk_json_get_string(args, "body", 0, &req.body, "secret_request", e)))
		return r;
	req.headers = cJSON_GetObjectItemCaseSensitive(args, "headers");
	cJSON *doc;
	if ((r = rk_secret_send(ctx->eng, a, &req, &doc, e)))
		return r;
	set_text(out, doc);
	return 0;
}

static int t_memory_read(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			 struct rk_tool_result *out, struct rk_error *e)
{
	const char *path;
	int r;
	if ((r = rk_json_get_string(args, "path", 0, &path, "memory_read", e)))
		return r;
	cJSON *doc;
	if ((r = rk_memory_read(ctx->eng, a, path && *path ? path : NULL, &doc, e)))
		return r;
	if (cJSON_IsArray(doc)) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "documents", doc);
		doc = o;
	}
	set_text(out, doc);
	return 0;
}

static int t_memory_write(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			  struct rk_tool_result *out, struct rk_error *e)
{
	const char *path, *content;
	int64_t expected;
	int r;
	if ((r = rk_json_get_string(args, "path", 1, &path, "memory_write", e)) ||
	    (r = rk_json_get_string(args, "content", 1, &content, "memory_write", e)) ||
	    (r = rk_json_get_int(args, "expected_revision", 0, INT64_C(1) << 40, RK_MEMORY_NO_REVISION, &expected,
				 "memory_write", e)))
		return r;
	cJSON *doc;
	if ((r = rk_memory_write(ctx->eng, a, path, content, expected, ctx->run_id, &doc, e)))
		return r;
	set_text(out, doc);
	return 0;
}

static int t_memory_search(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			   struct rk_tool_result *out, struct rk_error *e)
{
	const char *query;
	int64_t limit;
	int r;
	if ((r = rk_json_get_string(args, "query", 1, &query, "memory_search", e)) ||
	    (r = rk_json_get_int(args, "limit", 1, 100, 20, &limit, "memory_search", e)))
		return r;
	cJSON *doc;
	if ((r = rk_memory_search(ctx->eng, a, query, (int)limit, &doc, e)))
		return r;
	set_text(out, doc);
	return 0;
}

static int t_create_space(struct rk_tools_ctx *ctx, const struct rk_actor *a, const cJSON *args,
			  struct rk_tool_result *out, struct rk_error *e)
{
	const char *name, *description;
	int r;
	if ((r = rk_json_get_string(args, "name", 1, &name, "create_space", e)) ||
	    (r = rk_json_get_string(args, "description", 0, &description, "create_space", e)) ||
	    (r = rk_space_create(ctx->eng, a, name, description, ctx->run_id, e)))
		return r;
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "space", name);
	cJSON_AddBoolToObject(doc, "created", 1);
	set_text(out, doc);
	return 0;
}

typedef int (*tool_fn)(struct rk_tools_ctx *, const cJSON *, struct rk_tool_result *, struct rk_error *);
/* --- the page browser ------------------------------------------------------- */

/* A bot drives its own Chromium on its own screen (engine/machine/team.h); without
 * a bot, the display's. act: the call changes the page. */
static int browser_begin(struct rk_tools_ctx *ctx, int act, struct rk_team_browser *tb, struct rk_error *e)
{
	return rk_team_browser_begin(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, ctx->display, NULL, act, tb, e);
}

static int t_navigate(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	const char *url;
	int64_t timeout;
	int r = rk_json_get_string(args, "url", 1, &url, "browser_navigate", e);
	if (r || (r = rk_json_get_int(args, "timeout_ms", 1, RK_BROWSER_TIMEOUT_MAX_MS, RK_BROWSER_NAVIGATE_TIMEOUT_MS,
				      &timeout, "browser_navigate", e)))
		return r;
	struct rk_team_browser tb;
	cJSON *res = NULL;
	if ((r = browser_begin(ctx, 1, &tb, e)) == 0 &&
	    (r = rk_browser_navigate(tb.browser, url, (int)timeout, &res, e)) == 0) {
		rk_team_browser_stamp(&tb, res);
		set_text(out, res);
	}
	rk_team_browser_end(ctx->eng, &tb);
	return r;
}

static int t_snapshot(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	int shot = 0;
	int r = rk_json_get_bool(args, "screenshot", 0, &shot, "browser_snapshot", e);
	if (r)
		return r;
	struct rk_team_browser tb;
	cJSON *snap = NULL;
	unsigned char *png = NULL;
	size_t len = 0;
	if ((r = browser_begin(ctx, 0, &tb, e)) == 0 &&
	    (r = rk_browser_snapshot(tb.browser, shot, &snap, &png, &len, e)) == 0) {
		out->png = png;
		out->png_len = len;
		rk_team_browser_stamp(&tb, snap);
		set_text(out, snap);
	}
	rk_team_browser_end(ctx->eng, &tb);
	return r;
}

static int t_browser_act(struct rk_tools_ctx *ctx, const cJSON *args, struct rk_tool_result *out, struct rk_error *e)
{
	int r = rk_browser_action_check(args, e); /* before the computer is touched */
	if (r)
		return r;
	struct rk_team_browser tb;
	struct rk_actor who = {0};
	cJSON *res = NULL;
	/* fill_secret types the bot's (or its person's) secret (engine/access/secret.h) */
	if ((r = rk_actor_resolve(&who, ctx->eng, NULL, ctx->bot_id, e)) == 0 &&
	    (r = browser_begin(ctx, 1, &tb, e)) == 0) {
		struct rk_browser_secrets sec = {.eng = ctx->eng, .actor = &who};
		if ((r = rk_browser_act(tb.browser, args, &sec, &res, e)) == 0) {
			rk_team_browser_stamp(&tb, res);
			set_text(out, res);
		}
		rk_team_browser_end(ctx->eng, &tb);
	}
	rk_actor_release(&who);
	return r;
}

typedef int (*trust_fn)(struct rk_tools_ctx *, const struct rk_actor *, const cJSON *, struct rk_tool_result *,
			struct rk_error *);
/* Tools that take the actor; on_computer: it works on the run's computer,
 * so the computer's rights are checked before each call (gate). */
static const struct {
	const char *name;
	trust_fn fn;
	int on_computer;
} trust_dispatch[] = {
	{"request_secret", t_request_secret, 0}, {"secret_request", t_secret_request, 0},
	{"memory_read", t_memory_read, 0},	 {"memory_write", t_memory_write, 0},
	{"memory_search", t_memory_search, 0},	 {"create_space", t_create_space, 0},
	{"attach_file", t_attach_file, 1},
};

/* Tools whose arguments rakazo keeps (memory, a space's description, a
 * secret request's reason): kept without the user's secrets, like all else
 * a model writes that stays (engine/access/secret.h). */
static int keeps_arguments(const char *name)
{
	return !strcmp(name, "memory_write") || !strcmp(name, "create_space") || !strcmp(name, "request_secret");
}

/* Rights on the computer (again, before each call of a tool that works on
 * it: the screen, the shell, files and the browser alike), then the
 * approval rules. */
static int gate(struct rk_tools_ctx *ctx, const struct rk_actor *a, const char *name, const char *args_json,
		int on_computer, struct rk_error *e)
{
	if (!ctx->eng)
		return 0; /* no database: nothing can run either (the unit tests' argument checks) */
	int r;
	if (on_computer && (r = rk_authz_check(ctx->eng, a, "computers.use", ctx->computer, e)))
		return r;
	rk_model_judge_register(); /* the gate may ask the model judge (approval.h) */
	struct rk_approval_decision d;
	return rk_approval_check(ctx->eng, a, ctx->run_id, ctx->cancel, name, args_json,
				 ctx->webhook ? RK_APPROVAL_WEBHOOK : 0, &d, e);
}

/* The end of every call: its error as the result (e set), or {} when the
 * tool gave no text; then the text as the model may see it. Frees red. */
static int finish_call(struct rk_tool_result *out, const struct rk_error *e, struct rk_secret_redactor *red)
{
	if (e)
		fail(out, e);
	else if (!out->text)
		set_text(out, cJSON_CreateObject());
	finish_text(out, red);
	rk_secret_redactor_free(red);
	return 0;
}

/* --- the vendor's native computer tool ------------------------------------------- */

/* Keys a batch that failed part way may have left down: a key_up for each
 * key_down it holds, best effort (the screen engine releases keys only
 * when the key action itself fails). */
static void release_held_keys(struct rk_tools_ctx *ctx, const char *batch_json)
{
	cJSON *b = cJSON_Parse(batch_json);
	const cJSON *acts = cJSON_IsArray(b) ? b : cJSON_GetObjectItemCaseSensitive(b, "actions");
	cJSON *ups = cJSON_CreateArray();
	const cJSON *a;
	cJSON_ArrayForEach(a, acts)
	{
		if (strcmp(rk_json_string(a, "action", ""), "key_down") != 0)
			continue;
		cJSON *u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "action", "key_up");
		cJSON_AddStringToObject(u, "keys", rk_json_string(a, "keys", ""));
		cJSON_AddItemToArray(ups, u);
	}
	if (cJSON_GetArraySize(ups) > 0) {
		char *text = cJSON_PrintUnformatted(ups);
		struct rk_display_observe_options oo = observe_options(ctx);
		struct rk_display_act_result res = {0};
		struct rk_error e;
		int r = ctx->bot_id ? rk_team_screen_act(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, text, 0, 0,
							 &oo, &res, &e)
				    : rk_display_act(ctx->eng, ctx->computer, ctx->display, text, 0, 0, &oo, &res, &e);
		if (r)
			rk_log(RK_LOG_WARN, "computer: releasing held keys after a failed batch: %s", e.message);
		rk_display_act_result_release(&res);
		free(text);
	}
	cJSON_Delete(ups);
	cJSON_Delete(b);
}

/* Zoom: the region (in the model's image) at full resolution, scaled into
 * the model's image size. A bot's own screen has no zoom yet: its spec
 * declares none, so a call here is the model's mistake. */
static int zoom_note(struct rk_tools_ctx *ctx, const int region[4], struct rk_tool_result *out, struct rk_error *e)
{
	if (ctx->bot_id)
		return rk_error_set(e, RK_EUNSUPPORTED, "zoom is not offered on a bot's screen: take a screenshot");
	struct rk_display_observe_options oo = observe_options(ctx);
	struct rk_picture_rect rect = {region[0], region[1], region[2], region[3]};
	struct rk_display_shot shot = {0};
	int r = rk_display_zoom(ctx->eng, ctx->computer, ctx->display, &rect, &oo, &shot, e);
	if (r)
		return r;
	take_frame(out, shot.meta, &shot.png, &shot.png_len);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "note", "zoomed: the region at full resolution");
	cJSON_AddItemToObject(doc, "observation", shot.meta);
	shot.meta = NULL;
	set_text(out, doc);
	rk_display_shot_release(&shot);
	return 0;
}

/* One translated step: the screen engine does it, and the model always
 * gets a screenshot back (the vendors' tools expect one). */
static int native_step(struct rk_tools_ctx *ctx, const struct rk_computer_step *st, struct rk_tool_result *out,
		       struct rk_error *e)
{
	int r = need_desktop(ctx, e);
	if (r)
		return r;
	switch (st->kind) {
	case RK_COMPUTER_ACT: {
		struct rk_display_observe_options oo = observe_options(ctx);
		struct rk_display_act_result res = {0};
		r = ctx->bot_id ? rk_team_screen_act(ctx->eng, ctx->computer, ctx->bot_id, ctx->fence, st->batch_json,
						     -1, 1, &oo, &res, e)
				: rk_display_act(ctx->eng, ctx->computer, ctx->display, st->batch_json, -1, 1, &oo,
						 &res, e);
		if (r) {
			release_held_keys(ctx, st->batch_json);
			return r;
		}
		const cJSON *obs = cJSON_GetObjectItemCaseSensitive(res.result, "observation");
		if (res.png && cJSON_IsObject(obs))
			take_frame(out, obs, &res.png, &res.png_len);
		if (st->note)
			cJSON_AddStringToObject(res.result, "note", st->note);
		set_text(out, res.result);
		res.result = NULL;
		rk_display_act_result_release(&res);
		/* an unchanged screen after the act: the frame is still what the tool answers with */
		return out->png ? 0
				: observe_note(ctx, st->note ? st->note : "done; the screen did not change", out, e);
	}
	case RK_COMPUTER_WAIT:
		for (int64_t left = st->wait_ms; left > 0; left -= 100) {
			if (ctx->cancel && *ctx->cancel)
				return rk_error_set(e, RK_EINTERRUPTED,
						    "the wait was interrupted: the run is stopping");
			rk_sleep_ms(left < 100 ? left : 100);
		}
		return observe_note(ctx, "waited", out, e);
	case RK_COMPUTER_CURSOR_POSITION: {
		if ((r = observe_note(ctx, "the pointer's position is observation.cursor", out, e)))
			return r;
		return 0;
	}
	case RK_COMPUTER_ZOOM:
		return zoom_note(ctx, st->region, out, e);
	case RK_COMPUTER_SCREENSHOT:
	default:
		return observe_note(ctx, st->note ? st->note : "screenshot taken", out, e);
	}
}

int rk_tools_native_call(struct rk_tools_ctx *ctx, const struct rk_model_tool_call *call, struct rk_tool_result *out,
			 int *acknowledged)
{
	memset(out, 0, sizeof(*out));
	*acknowledged = 0;
	struct rk_error e = {0};
	struct rk_actor a = {0};
	struct rk_computer_step st = {0};
	int flagged = call->safety_checks && strcmp(call->safety_checks, "[]") != 0;
	int r = 0;
	if (!ctx->native)
		r = rk_error_set(&e, RK_EINVALID, "this run declared no native computer tool");
	if (r == 0)
		r = rk_computer_tool_translate(ctx->native, call, &st, &e);
	if (r == 0)
		r = rk_actor_resolve(&a, ctx->eng, NULL, ctx->bot_id, &e);
	if (r == 0 && ctx->eng) {
		/* what a person is shown: the vendor's input, and its safety checks */
		cJSON *shown = cJSON_Parse(call->arguments ? call->arguments : "{}");
		if (!cJSON_IsObject(shown)) {
			cJSON_Delete(shown);
			shown = cJSON_CreateObject();
		}
		if (flagged) {
			cJSON *checks = cJSON_Parse(call->safety_checks);
			cJSON_AddItemToObject(shown, "pending_safety_checks", checks ? checks : cJSON_CreateNull());
		}
		char *text = cJSON_PrintUnformatted(shown);
		cJSON_Delete(shown);
		if ((r = rk_authz_check(ctx->eng, &a, "computers.use", ctx->computer, &e)) == 0) {
			rk_model_judge_register();
			struct rk_approval_decision d;
			unsigned flags = (ctx->webhook ? RK_APPROVAL_WEBHOOK : 0) | (flagged ? RK_APPROVAL_FLAGGED : 0);
			r = rk_approval_check(ctx->eng, &a, ctx->run_id, ctx->cancel, "computer", text, flags, &d, &e);
		}
		free(text);
		if (r == 0 && flagged)
			*acknowledged = 1;
	}
	if (r == 0) {
		r = native_step(ctx, &st, out, &e);
		if (r && !e.message[0])
			rk_error_set(&e, RK_EFAILED, "computer failed");
	}
	rk_computer_step_release(&st);
	struct rk_secret_redactor *red = rk_secret_redactor_new(ctx->eng, &a);
	rk_actor_release(&a);
	if (r < 0) {
		rk_log(RK_LOG_INFO, "tool computer: %s: %s", rk_code_name(e.code), e.message);
		/* the vendor's tool result carries a screenshot even for an error
		 * (Responses requires one): the screen as it is now, best effort */
		struct rk_tool_result now = {0};
		struct rk_error e2;
		if (!out->png && ctx->eng && ctx->computer->desktop && e.code != RK_EINTERRUPTED &&
		    observe_note(ctx, "the screen now", &now, &e2) == 0) {
			out->png = now.png, out->png_len = now.png_len;
			now.png = NULL;
			memcpy(out->mime, now.mime, sizeof(out->mime));
			snprintf(out->frame_hash, sizeof(out->frame_hash), "%s", now.frame_hash);
			free(out->label);
			out->label = now.label;
			now.label = NULL;
		}
		rk_tool_result_release(&now);
	}
	return finish_call(out, r < 0 ? &e : NULL, red);
}

static const struct {
	const char *name;
	tool_fn fn;
} dispatch[] = {
	{"browser_navigate", t_navigate}, {"browser_snapshot", t_snapshot},
	{"browser_act", t_browser_act},	  {"computer_observe", t_observe},
	{"computer_act", t_act},	  {"shell", t_shell},
	{"write_stdin", t_stdin},	  {"read_file", t_read},
	{"write_file", t_write},	  {"list_files", t_list},
	{"open_path", t_open_path},	  {"launch_app", t_launch_app},
};

int rk_tools_call(struct rk_tools_ctx *ctx, const char *name, const char *args_json, struct rk_tool_result *out)
{
	memset(out, 0, sizeof(*out));
	struct rk_error e = {0};
	tool_fn fn = NULL;
	trust_fn tfn = NULL;
	int on_computer = 0;
	for (size_t i = 0; name && i < sizeof(dispatch) / sizeof(dispatch[0]); i++)
		if (!strcmp(dispatch[i].name, name))
			fn = dispatch[i].fn, on_computer = 1;
	for (size_t i = 0; name && i < sizeof(trust_dispatch) / sizeof(trust_dispatch[0]); i++)
		if (!strcmp(trust_dispatch[i].name, name))
			tfn = trust_dispatch[i].fn, on_computer = trust_dispatch[i].on_computer;
	if (!fn && !tfn) {
		rk_error_set(&e, RK_ENOTFOUND,
			     "unknown tool '%s'; the tools are computer_observe, computer_act, "
			     "open_path, launch_app, shell, write_stdin, read_file, write_file, "
			     "list_files, attach_file, request_secret, secret_request, memory_read, "
			     "memory_write, memory_search, create_space and (with a page "
			     "browser) browser_navigate, browser_snapshot and browser_act",
			     name ? name : "");
		fail(out, &e);
		finish_text(out, NULL);
		return 0;
	}
	struct rk_model_tool_call call = {.name = (char *)name, .arguments = (char *)(args_json ? args_json : "")};
	cJSON *args = NULL;
	struct rk_actor a = {0};
	int r = rk_model_tool_call_args(&call, &args, &e);
	if (r == 0)
		r = rk_actor_resolve(&a, ctx->eng, NULL, ctx->bot_id, &e);
	if (r == 0)
		r = gate(ctx, &a, name, args_json, on_computer, &e);
	if (r == 0 && keeps_arguments(name)) {
		struct rk_secret_redactor *kept = rk_secret_redactor_new(ctx->eng, &a);
		rk_secret_redactor_json(kept, args);
		rk_secret_redactor_free(kept);
	}
	if (r == 0) {
		r = fn ? fn(ctx, args, out, &e) : tfn(ctx, &a, args, out, &e);
		if (r && !e.message[0])
			rk_error_set(&e, RK_EFAILED, "%s failed", name);
	}
	cJSON_Delete(args);
	/* read now: a secret set while the call ran is taken out too */
	struct rk_secret_redactor *red = rk_secret_redactor_new(ctx->eng, &a);
	rk_actor_release(&a);
	if (r < 0) {
		free(out->png);
		out->png = NULL;
		out->png_len = 0;
		out->frame_hash[0] = 0;
		free(out->label);
		out->label = NULL;
		rk_log(RK_LOG_INFO, "tool %s: %s: %s", name, rk_code_name(e.code), e.message);
	}
	return finish_call(out, r < 0 ? &e : NULL, red);
}
