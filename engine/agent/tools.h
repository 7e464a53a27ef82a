#ifndef RK_TOOLS_H
#define RK_TOOLS_H
/* The model's tools: their JSON schemas (built once, shared) and one
 * dispatcher from a tool call to the computer, its display and its shell.
 *
 *   computer_observe {}                              a screenshot of display 0
 *   computer_act     {actions:[...], settle_ms?, observe?}
 *                    a batch in engine/screen/actions.h's schema, then a screenshot
 *   open_path        {path}               a URL or workspace file on the screen, then a screenshot
 *   launch_app       {application, uri?}  a program on the screen ("browser"), then a screenshot
 *   shell            {command, cwd?, yield_ms?, tty?}  bash -lc in a session
 *   write_stdin      {session, chars, yield_ms?}       more input to a session
 *   read_file        {path, max_bytes?}   UTF-8 text, at most 250000 bytes
 *   write_file       {path, content, encoding?: utf8|base64, executable?}
 *   list_files       {path?}              a workspace directory
 *   attach_file      {path}               a copy kept with the run (10 MiB, by type)
 *   browser_navigate {url, timeout_ms?}   (page-browser providers: engine/machine/browser.h)
 *   browser_snapshot {screenshot?}
 *   browser_act      {action, ref?, text?, value?, key?, clear?, submit?, dx?, dy?}
 *   request_secret   {name, origin, auth, reason?}  ask a person for a secret (engine/access/secret.h)
 *   secret_request   {name, url, method?, headers?, body?}  HTTP with a secret the bot never sees
 *   memory_read      {path?}              a memory document, or the list (engine/agent/memory.h)
 *   memory_write     {path, content, expected_revision?}
 *   memory_search    {query, limit?}
 *
 * Before a call runs, the caller's rights on the computer are checked again
 * (engine/access/authz.h: a revoked bot stops here, even mid-session) and the
 * approval rules decide (engine/access/approval.h: a call that needs approval
 * waits for a person in a run, and is denied outside one).
 *
 * A call never fails the caller: an unknown tool, malformed arguments or a
 * failed operation becomes an error result {"error":{"code","message"}}
 * (is_error set), which the loop hands back to the model like any other.
 *
 * Every result, error or not, has every form of every secret of the
 * caller's user taken out of each of its strings (engine/access/secret.h, read
 * afresh for each call) before it is clipped and handed back. What rakazo
 * keeps of a call is redacted the same way: the arguments of memory_write,
 * create_space and request_secret, a text attachment and its name, and an
 * approval's record of the call (engine/access/approval.h). */

#include <signal.h>
#include <stddef.h>

#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"
#include "engine/agent/model.h"

struct rk_computer_tool_spec;

#define RK_TOOL_RESULT_MAX 12000  /* chars of a result's text given to the model */
#define RK_TOOL_READ_MAX 250000	  /* read_file's ceiling */
#define RK_TOOL_SHELL_OUTPUT 8000 /* bytes of new output per shell/write_stdin reply */

struct rk_tools_ctx {
	struct rk_engine *eng;
	struct rk_computer *computer;  /* borrowed; refreshed by the tools as they resume it */
	const char *bot_id;	       /* may be NULL */
	int display;		       /* 0 */
	int max_width, max_height;     /* screenshot size for the model; 0: full size */
	int64_t fence;		       /* the caller's (computer, bot) lease fence; 0: calls take the lease */
	const char *run_id;	       /* the run making the calls, or NULL (then an approval cannot be waited for) */
	volatile sig_atomic_t *cancel; /* may be NULL; stops a wait for approval */
	int webhook;		       /* the run was started by a webhook: the stricter approval gate */
	/* The vendor's native computer tool of this run (engine/agent/computer_tool.h),
	 * or NULL; its box sizes the screenshots of every screen tool. */
	const struct rk_computer_tool_spec *native;
	/* > 0: screenshots are JPEG of this quality (1-100), for a caller with a
	 * byte limit per image (the MCP server, api/mcp.h) */
	int jpeg_quality;
};

struct rk_tool_result {
	char *text;	     /* JSON text for the model, at most RK_TOOL_RESULT_MAX chars (+ "…"); malloc'd */
	int is_error;	     /* text is {"error":{"code","message"}} */
	char error_code[32]; /* the stable code when is_error */
	unsigned char *png;  /* observe/act: the screenshot (of type mime), malloc'd; NULL otherwise */
	size_t png_len;
	char mime[16];	     /* "image/png" or "image/jpeg" when png is set */
	char frame_hash[65]; /* "" when there is no frame */
	char *label;	     /* names the frame for the model ("1280x800 frame abc..."); malloc'd or NULL */
};
void rk_tool_result_release(struct rk_tool_result *r);

/* The tool definitions for the model (static; valid for the process). With
 * desktop == 0 the graphical tools are left out. */
const struct rk_model_tool *rk_tools_definitions(int desktop, size_t *n);
/* The tools for c: the definitions above, with browser_navigate,
 * browser_snapshot and browser_act first when c's provider has a page
 * browser (RK_CAP_PAGE_BROWSER) and c a desktop. */
/* All of them: the page browser's first, then the desktop's, then the rest. */
const struct rk_model_tool *rk_tools_with_browser(size_t *n);
const struct rk_model_tool *rk_tools_for_computer(const struct rk_computer *c, size_t *n);
/* Is name one of the tools above? */
int rk_tools_known(const char *name);

/* Runs one call. args_json is the raw argument text the model sent ("" or
 * NULL: {}). Always fills *out (release it) and returns 0. */
int rk_tools_call(struct rk_tools_ctx *ctx, const char *name, const char *args_json, struct rk_tool_result *out);

/* The size of the caller's screen in pixels (a bot's own screen, or the
 * display), from one small look at it. */
int rk_tools_screen_size(struct rk_tools_ctx *ctx, int *w, int *h, struct rk_error *e);

/* Runs one call of the native computer tool (ctx->native set; call->native):
 * the vendor's action(s) translated to the screen engine, run, and always
 * a screenshot in *out (zoom: the region; cursor_position: the pointer in
 * the text too). A call with safety checks waits for a person's approval
 * (engine/access/approval.h, RK_APPROVAL_FLAGGED); *acknowledged is then
 * set (the checks may be acknowledged to the vendor). Always fills *out
 * (release it) and returns 0. */
int rk_tools_native_call(struct rk_tools_ctx *ctx, const struct rk_model_tool_call *call, struct rk_tool_result *out,
			 int *acknowledged);

#endif
