/* The MCP server's protocol core (api/mcp.h): JSON-RPC framing and errors,
 * the two protocol eras, the tool table with its schemas, and the tools,
 * which call the same engine services as the CLI. */

#include "api/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/access/actor.h"
#include "engine/access/approval.h"
#include "engine/access/authz.h"
#include "engine/access/secret.h"
#include "engine/agent/memory.h"
#include "engine/agent/tools.h"
#include "engine/machine/checkpoint.h"
#include "engine/machine/display.h"
#include "engine/machine/computer.h"
#include "engine/machine/execution.h"
#include "engine/machine/session.h"
#include "engine/machine/worker.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "providers/provider.h"

/* the shell's output stream, spelt apart: the layer check refuses the word
 * itself in api/ (the engine and its servers never write to it) */
#define KEY_STDOUT                                                                                                     \
	"std"                                                                                                          \
	"out"
#define MODERN_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"

const char *const rk_mcp_versions[] = {MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", NULL};

int rk_mcp_version_known(const char *v)
{
	for (size_t i = 0; v && rk_mcp_versions[i]; i++)
		if (!strcmp(v, rk_mcp_versions[i]))
			return 1;
	return 0;
}

struct rk_mcp {
	struct rk_engine *eng;
	struct rk_mcp_options opt;
	char legacy[16]; /* the version `initialize` agreed on; "" before it */
	cJSON *tools;	 /* the tools/list array, built once */
	int modern;	 /* the request being handled is 2026-07-28's */
};

/* One request in flight. */
struct call {
	struct rk_mcp *m;
	const cJSON *id;
	int modern;
	/* a tool's answer */
	const struct tool *tool;
	cJSON *content;	   /* array */
	cJSON *structured; /* object or NULL */
	int is_error;
};

/* --- the tool table ------------------------------------------------------------- */

typedef int (*tool_fn)(struct call *k, const cJSON *args);

struct tool {
	const char *name, *title, *description;
	const char *input;  /* JSON Schema text */
	const char *output; /* JSON Schema text, or NULL */
	int read_only, destructive, idempotent;
	tool_fn fn;
	/* the agent's tool (engine/agent/tools.h) it passes through, whose
	 * parameters (and the computer) are its inputSchema when input is NULL */
	const char *agent;
};

#define COMPUTER_ARG                                                                                                   \
	"\"computer\":{\"type\":\"string\",\"description\":\"the computer: its name, its id or a unique id prefix\"}"
#define SCREEN_ARG                                                                                                      \
	"\"computer\":{\"type\":\"string\",\"description\":\"the computer (name, id or id prefix), or COMPUTER:.N for " \
	"display N\"}"
#define WAIT_ARGS                                                                                                      \
	"\"wait\":{\"type\":\"boolean\",\"description\":\"wait for the command to finish (default true)\"},"           \
	"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600,\"description\":\"how long to wait "       \
	"(default 300)\"},"                                                                                            \
	"\"command_key\":{\"type\":\"string\",\"description\":\"an idempotency key: the same key again returns the "   \
	"same command instead of running it twice\"}"
#define SIZE_ARGS                                                                                                      \
	"\"max_width\":{\"type\":\"integer\",\"minimum\":16,\"maximum\":8192,\"description\":\"largest image width "   \
	"(default and ceiling: the server's edge limit, 2000)\"},"                                                     \
	"\"max_height\":{\"type\":\"integer\",\"minimum\":16,\"maximum\":8192,\"description\":\"largest image height\"}"
#define OBJ(props, req)                                                                                                \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "],\"additionalProperties\":false}"
#define OUT_COMPUTER                                                                                                   \
	"{\"type\":\"object\",\"properties\":{\"computer\":{\"type\":\"object\"},\"execution\":{\"type\":[\"object\"," \
	"\"null\"]}},\"required\":[\"computer\"]}"
#define OUT_FRAME                                                                                                      \
	"{\"type\":\"object\",\"properties\":{\"width\":{\"type\":\"integer\"},\"height\":{\"type\":\"integer\"},"     \
	"\"screen_width\":{\"type\":\"integer\"},\"screen_height\":{\"type\":\"integer\"},\"mime_type\":{\"type\":"    \
	"\"string\"},\"bytes\":{\"type\":\"integer\"},\"frame_hash\":{\"type\":\"string\"},\"observation\":{\"type\":" \
	"\"object\"}},\"required\":[\"width\",\"height\",\"mime_type\",\"bytes\"]}"

#define OUT_SESSION                                                                                                    \
	"{\"type\":\"object\",\"properties\":{\"session\":{\"type\":[\"string\",\"null\"]},\"running\":{\"type\":"     \
	"\"boolean\"},\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"output\":{\"type\":\"string\"}},"              \
	"\"required\":[\"running\",\"output\"]}"
#define OUT_OBJECT "{\"type\":\"object\"}"

static int t_computer_list(struct call *k, const cJSON *args);
static int t_computer_create(struct call *k, const cJSON *args);
static int t_computer_show(struct call *k, const cJSON *args);
static int t_computer_start(struct call *k, const cJSON *args);
static int t_computer_stop(struct call *k, const cJSON *args);
static int t_computer_pause(struct call *k, const cJSON *args);
static int t_computer_resume(struct call *k, const cJSON *args);
static int t_computer_delete(struct call *k, const cJSON *args);
static int t_screen_observe(struct call *k, const cJSON *args);
static int t_screen_act(struct call *k, const cJSON *args);
static int t_shell_exec(struct call *k, const cJSON *args);
static int t_file_read(struct call *k, const cJSON *args);
static int t_file_write(struct call *k, const cJSON *args);
static int t_file_list(struct call *k, const cJSON *args);
static int t_screen_zoom(struct call *k, const cJSON *args);
static int t_agent(struct call *k, const cJSON *args);
static int t_shell_start(struct call *k, const cJSON *args);
static int t_shell_input(struct call *k, const cJSON *args);
static int t_shell_kill(struct call *k, const cJSON *args);
static int t_checkpoint_create(struct call *k, const cJSON *args);
static int t_checkpoint_list(struct call *k, const cJSON *args);
static int t_checkpoint_restore(struct call *k, const cJSON *args);
static int t_memory_read(struct call *k, const cJSON *args);
static int t_memory_write(struct call *k, const cJSON *args);
static int t_memory_search(struct call *k, const cJSON *args);

static const struct tool tools[] = {
	{"computer_list", "List computers", "The computers the caller may use, with their state.", OBJ("", ""),
	 "{\"type\":\"object\",\"properties\":{\"computers\":{\"type\":\"array\"}},\"required\":[\"computers\"]}", 1, 0,
	 1, t_computer_list, NULL},
	{"computer_create", "Create a computer",
	 "Creates a sandboxed Linux computer (a desktop unless desktop is false) and, by default, waits until it "
	 "runs.",
	 OBJ("\"name\":{\"type\":\"string\",\"description\":\"a new name: letters, digits, - _ .\"},"
	     "\"provider\":{\"type\":\"string\",\"description\":\"where it runs (default docker)\"},"
	     "\"desktop\":{\"type\":\"boolean\",\"description\":\"with a desktop (default true)\"}," WAIT_ARGS,
	     "\"name\""),
	 OUT_COMPUTER, 0, 0, 0, t_computer_create, NULL},
	{"computer_show", "Show a computer", "One computer: its state, provider and active command.",
	 OBJ(COMPUTER_ARG, "\"computer\""), OUT_COMPUTER, 1, 0, 1, t_computer_show, NULL},
	{"computer_start", "Start a computer", "Starts a stopped or paused computer (its workspace is kept).",
	 OBJ(COMPUTER_ARG "," WAIT_ARGS, "\"computer\""), OUT_COMPUTER, 0, 0, 1, t_computer_start, NULL},
	{"computer_stop", "Stop a computer", "Stops a computer; its workspace is checkpointed and kept.",
	 OBJ(COMPUTER_ARG "," WAIT_ARGS, "\"computer\""), OUT_COMPUTER, 0, 0, 1, t_computer_stop, NULL},
	{"computer_pause", "Pause a computer", "Pauses a computer; resume it later.",
	 OBJ(COMPUTER_ARG "," WAIT_ARGS, "\"computer\""), OUT_COMPUTER, 0, 0, 1, t_computer_pause, NULL},
	{"computer_resume", "Resume a computer", "Resumes a paused computer.",
	 OBJ(COMPUTER_ARG "," WAIT_ARGS, "\"computer\""), OUT_COMPUTER, 0, 0, 1, t_computer_resume, NULL},
	{"computer_delete", "Delete a computer", "Deletes a computer and its machine. Its workspace is gone.",
	 OBJ(COMPUTER_ARG "," WAIT_ARGS, "\"computer\""), OUT_COMPUTER, 0, 1, 1, t_computer_delete, NULL},
	{"screen_observe", "Look at the screen",
	 "A screenshot of the computer's screen (an image, at most the server's byte and edge limits) and its "
	 "frame metadata. Coordinates for screen_act are in this image's space: pass the same max_width and "
	 "max_height to screen_act.",
	 OBJ(SCREEN_ARG "," SIZE_ARGS, "\"computer\""), OUT_FRAME, 1, 0, 0, t_screen_observe, NULL},
	{"screen_act", "Act on the screen",
	 "Runs a batch of 1 to 24 actions on the screen in order (click {x,y,button?,count?}, move, drag, scroll, "
	 "type {text}, key {keys}, key_down, key_up, wait {ms}), then returns the settled screenshot. x and y are in "
	 "the image space screen_observe gave for the same max_width and max_height. To type a stored secret, "
	 "use browser_act's fill_secret: secrets never cross MCP in clear.",
	 OBJ(SCREEN_ARG ",\"actions\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":24,\"items\":{\"type\":"
			"\"object\"},\"description\":\"actions, each {\\\"action\\\": NAME, ...}\"},"
			"\"settle_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10000}," SIZE_ARGS,
	     "\"computer\",\"actions\""),
	 OUT_FRAME, 0, 0, 0, t_screen_act, NULL},
	{"shell_exec", "Run a command",
	 "Runs `bash -lc COMMAND` in the computer's workspace to its end (or timeout_ms) and returns the exit "
	 "status and the output and error streams apart.",
	 OBJ(COMPUTER_ARG ",\"command\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\",\"description\":"
			  "\"working directory (relative: in the workspace)\"},\"timeout_ms\":{\"type\":\"integer\","
			  "\"minimum\":250,\"maximum\":3600000,\"description\":\"default 60000\"}",
	     "\"computer\",\"command\""),
	 "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":"
	 "[\"integer\",\"null\"]},\"" KEY_STDOUT
	 "\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},\"timed_out\":"
	 "{\"type\":\"boolean\"},\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"exit_code\",\"" KEY_STDOUT "\","
	 "\"stderr\",\"timed_out\"]}",
	 0, 1, 0, t_shell_exec, NULL},
	{"file_read", "Read a file",
	 "Reads a file of the computer (relative paths are in the workspace): UTF-8 text, or base64 with encoding "
	 "base64.",
	 OBJ(COMPUTER_ARG ",\"path\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"text\","
			  "\"base64\"]},\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":16777216}",
	     "\"computer\",\"path\""),
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	 "\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"size\","
	 "\"encoding\",\"content\"]}",
	 1, 0, 1, t_file_read, NULL},
	{"file_write", "Write a file", "Writes a file of the computer whole (text, or base64 with encoding base64).",
	 OBJ(COMPUTER_ARG ",\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":"
			  "\"string\",\"enum\":[\"text\",\"base64\"]},\"executable\":{\"type\":\"boolean\"}",
	     "\"computer\",\"path\",\"content\""),
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
	 "\"required\":[\"path\",\"bytes\"]}",
	 0, 1, 1, t_file_write, NULL},
	{"file_list", "List a directory", "The entries of a directory of the computer (default: the workspace).",
	 OBJ(COMPUTER_ARG ",\"path\":{\"type\":\"string\"}", "\"computer\""),
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\"}},"
	 "\"required\":[\"path\",\"entries\"]}",
	 1, 0, 1, t_file_list, NULL},
	{"screen_zoom", "Zoom into the screen",
	 "A region of the screen at full resolution, scaled to fill the image (region [x0, y0, x1, y1] in the "
	 "image space screen_observe gave for the same max_width and max_height).",
	 OBJ(SCREEN_ARG ",\"region\":{\"type\":\"array\",\"minItems\":4,\"maxItems\":4,\"items\":{\"type\":"
			"\"integer\"}}," SIZE_ARGS,
	     "\"computer\",\"region\""),
	 OUT_FRAME, 1, 0, 1, t_screen_zoom, NULL},
	{"shell_start", "Start a shell session",
	 "Starts `bash -lc COMMAND` as a session that keeps running: the output of its first yield_ms, and a "
	 "session handle for shell_input and shell_kill while it runs.",
	 OBJ(COMPUTER_ARG ",\"command\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\"},\"tty\":{\"type\":"
			  "\"boolean\"},\"yield_ms\":{\"type\":\"integer\",\"minimum\":250,\"maximum\":30000}",
	     "\"computer\",\"command\""),
	 OUT_SESSION, 0, 1, 0, t_shell_start, NULL},
	{"shell_input", "Send input to a session",
	 "Sends text to a session's stdin (C escapes: \\n, \\x03 for Ctrl-C, \\x04 for end of input; empty "
	 "only reads) and returns its new output.",
	 OBJ(COMPUTER_ARG ",\"session\":{\"type\":\"string\"},\"input\":{\"type\":\"string\"},\"yield_ms\":{"
			  "\"type\":\"integer\",\"minimum\":250,\"maximum\":30000}",
	     "\"computer\",\"session\""),
	 OUT_SESSION, 0, 1, 0, t_shell_input, NULL},
	{"shell_kill", "Stop a session", "Stops a session's command (TERM, then KILL) and returns its last output.",
	 OBJ(COMPUTER_ARG ",\"session\":{\"type\":\"string\"}", "\"computer\",\"session\""), OUT_SESSION, 0, 1, 1,
	 t_shell_kill, NULL},
	{"checkpoint_create", "Checkpoint the workspace", "Saves the computer's workspace as a new checkpoint.",
	 OBJ(COMPUTER_ARG ",\"reason\":{\"type\":\"string\"}", "\"computer\""), OUT_OBJECT, 0, 0, 0,
	 t_checkpoint_create, NULL},
	{"checkpoint_list", "List checkpoints", "The computer's workspace checkpoints, newest first.",
	 OBJ(COMPUTER_ARG, "\"computer\""), OUT_OBJECT, 1, 0, 1, t_checkpoint_list, NULL},
	{"checkpoint_restore", "Restore a checkpoint",
	 "Makes a checkpoint (default: the latest) the workspace again. A docker computer must be stopped first "
	 "(computer_stop).",
	 OBJ(COMPUTER_ARG ",\"checkpoint\":{\"type\":\"string\"}", "\"computer\""), OUT_OBJECT, 0, 1, 1,
	 t_checkpoint_restore, NULL},
	{"memory_read", "Read memory", "A memory document by path, or the list of documents without a path.",
	 OBJ("\"path\":{\"type\":\"string\"}", ""), OUT_OBJECT, 1, 0, 1, t_memory_read, NULL},
	{"memory_write", "Write memory",
	 "Saves a memory document (its previous revisions are kept); expected_revision makes it conditional.",
	 OBJ("\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"expected_revision\":{\"type\":"
	     "\"integer\",\"minimum\":-1}",
	     "\"path\",\"content\""),
	 OUT_OBJECT, 0, 0, 0, t_memory_write, NULL},
	{"memory_search", "Search memory", "Memory documents matching a query, best first.",
	 OBJ("\"query\":{\"type\":\"string\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50}",
	     "\"query\""),
	 OUT_OBJECT, 1, 0, 1, t_memory_search, NULL},
	{"browser_navigate", "Open a page",
	 "Opens a URL in the computer's browser (docker computers) and waits for it.", NULL, OUT_OBJECT, 0, 0, 0,
	 t_agent, "browser_navigate"},
	{"browser_snapshot", "Read the page",
	 "The page's elements with refs for browser_act (an accessibility snapshot); screenshot:true adds an image.",
	 NULL, OUT_OBJECT, 1, 0, 1, t_agent, "browser_snapshot"},
	{"browser_act", "Act on the page",
	 "Acts on an element of the last browser_snapshot by its ref: click, type, select, press, hover, scroll, or "
	 "fill_secret, which types a stored secret by name (only on a page of its origin): the value never crosses "
	 "MCP.",
	 NULL, OUT_OBJECT, 0, 1, 0, t_agent, "browser_act"},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

const char *rk_mcp_tool_name(size_t i)
{
	return i < NTOOLS ? tools[i].name : NULL;
}

/* The agent tool's parameters with the computer added, as an inputSchema. */
static cJSON *agent_schema(const char *agent)
{
	size_t n;
	const struct rk_model_tool *ts = rk_tools_with_browser(&n);
	for (size_t i = 0; agent && i < n; i++) {
		if (strcmp(ts[i].name, agent) || !ts[i].parameters)
			continue;
		cJSON *in = cJSON_Duplicate(ts[i].parameters, 1);
		cJSON *props = cJSON_GetObjectItemCaseSensitive(in, "properties");
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", "string");
		cJSON_AddStringToObject(c, "description", "the computer: its name, its id or a unique id prefix");
		cJSON_AddItemToObject(props, "computer", c);
		cJSON *req = cJSON_GetObjectItemCaseSensitive(in, "required");
		if (!req)
			req = cJSON_AddArrayToObject(in, "required");
		cJSON_AddItemToArray(req, cJSON_CreateString("computer"));
		return in;
	}
	return NULL;
}

static cJSON *tool_list_doc(void)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < NTOOLS; i++) {
		const struct tool *t = &tools[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "title", t->title);
		cJSON_AddStringToObject(o, "description", t->description);
		cJSON *in = t->input ? cJSON_Parse(t->input) : agent_schema(t->agent);
		cJSON *out = t->output ? cJSON_Parse(t->output) : NULL;
		if (!in || (t->output && !out))
			abort(); /* a broken literal above: tests/unit/test_mcp.c catches it first */
		cJSON_AddItemToObject(o, "inputSchema", in);
		if (out)
			cJSON_AddItemToObject(o, "outputSchema", out);
		cJSON *an = cJSON_AddObjectToObject(o, "annotations");
		cJSON_AddStringToObject(an, "title", t->title);
		cJSON_AddBoolToObject(an, "readOnlyHint", t->read_only);
		if (!t->read_only) {
			cJSON_AddBoolToObject(an, "destructiveHint", t->destructive);
			cJSON_AddBoolToObject(an, "idempotentHint", t->idempotent);
		}
		cJSON_AddBoolToObject(an, "openWorldHint", 0);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* --- arguments against a tool's inputSchema (the subset its schemas use) -------- */

static int type_is(const cJSON *v, const char *type)
{
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "array"))
		return cJSON_IsArray(v);
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	if (!strcmp(type, "null"))
		return cJSON_IsNull(v);
	if (!strcmp(type, "number"))
		return cJSON_IsNumber(v);
	if (!strcmp(type, "integer"))
		return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
	return 0;
}

/* 0 when args fit schema; else RK_EINVALID naming the argument. */
static int validate(const cJSON *schema, const cJSON *args, const char *tool, struct rk_error *e)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
	const cJSON *x;
	if (!args || !cJSON_IsObject(args))
		return rk_error_set(e, RK_EINVALID, "%s: the arguments must be an object", tool);
	cJSON_ArrayForEach(x, req) if (!cJSON_GetObjectItemCaseSensitive(args, x->valuestring)) return rk_error_set(
		e, RK_EINVALID, "%s: argument '%s' is required", tool, x->valuestring);
	for (const cJSON *a = args->child; a; a = a->next) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, a->string);
		if (!p)
			return rk_error_set(e, RK_EINVALID, "%s: unknown argument '%s'", tool, a->string);
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
		const char *tname = cJSON_GetStringValue(type);
		const char *want = tname ? tname : "a value";
		int ok = !type;
		if (tname)
			ok = type_is(a, tname);
		const cJSON *types = cJSON_IsArray(type) ? type : NULL;
		cJSON_ArrayForEach(x, types) ok |= type_is(a, x->valuestring);
		if (!ok)
			return rk_error_set(e, RK_EINVALID, "%s: argument '%s' must be %s %s", tool, a->string,
					    strchr("aeiou", want[0]) ? "an" : "a", want);
		const cJSON *en = cJSON_GetObjectItemCaseSensitive(p, "enum");
		if (en) {
			int found = 0;
			cJSON_ArrayForEach(x, en) found |= cJSON_IsString(a) && !strcmp(x->valuestring, a->valuestring);
			if (!found)
				return rk_error_set(e, RK_EINVALID,
						    "%s: argument '%s' is not one of the allowed values", tool,
						    a->string);
		}
		const cJSON *mn = cJSON_GetObjectItemCaseSensitive(p, "minimum");
		const cJSON *mx = cJSON_GetObjectItemCaseSensitive(p, "maximum");
		if (cJSON_IsNumber(a) &&
		    ((mn && a->valuedouble < mn->valuedouble) || (mx && a->valuedouble > mx->valuedouble)))
			return rk_error_set(e, RK_EINVALID, "%s: argument '%s' must be from %g to %g", tool, a->string,
					    mn ? mn->valuedouble : -1e308, mx ? mx->valuedouble : 1e308);
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "items"),
								   "type");
		const cJSON *items = cJSON_IsArray(a) && cJSON_IsString(it) ? a : NULL;
		cJSON_ArrayForEach(x, items) if (!type_is(x, it->valuestring)) return rk_error_set(
			e, RK_EINVALID, "%s: the items of argument '%s' must be of type %s", tool, a->string,
			it->valuestring);
		const cJSON *mi = cJSON_GetObjectItemCaseSensitive(p, "minItems");
		const cJSON *ma = cJSON_GetObjectItemCaseSensitive(p, "maxItems");
		int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
		if (cJSON_IsArray(a) && ((mi && n < mi->valueint) || (ma && n > ma->valueint)))
			return rk_error_set(e, RK_EINVALID, "%s: argument '%s' must hold %d to %d items", tool,
					    a->string, mi ? mi->valueint : 0, ma ? ma->valueint : 1 << 30);
	}
	return 0;
}

/* --- results ------------------------------------------------------------------- */

static void add_text(struct call *k, const char *text)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "text");
	cJSON_AddStringToObject(c, "text", text);
	cJSON_AddItemToArray(k->content, c);
}

/* The tool's structured result, also as text for clients that read only content. */
static int done(struct call *k, cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);
	add_text(k, text);
	free(text);
	cJSON_Delete(k->structured);
	k->structured = doc;
	return 0;
}

/* A tool execution error: isError with "code: message" (the stable code first). */
static int tool_fail(struct call *k, const struct rk_error *e)
{
	char *text = rk_xasprintf("%s: %s", rk_code_name(e->code), e->message);
	cJSON_Delete(k->content);
	k->content = cJSON_CreateArray();
	add_text(k, text);
	free(text);
	cJSON_Delete(k->structured);
	k->structured = NULL;
	k->is_error = 1;
	return 0;
}

/* --- who calls, and what on ---------------------------------------------------------- */

static int actor(struct call *k, struct rk_actor *a, struct rk_error *e)
{
	return rk_actor_resolve(a, k->m->eng, NULL, k->m->opt.bot_id, e);
}

/* Over HTTP the server offers some providers only (api.h); a bot's token
 * never reaches one whose commands run on the server's host. */
static int provider_reachable(struct call *k, const char *kind, struct rk_error *e)
{
	const struct rk_provider_ops *ops = rk_provider_find(kind);
	if (k->m->opt.bot_id && ops && (ops->caps & RK_CAP_HOST_EXEC) && !strcmp(k->m->opt.transport, "http"))
		return rk_error_set(e, RK_EDENIED,
				    "a bot's token never reaches provider '%s': its commands run on the server's host",
				    kind);
	if (!k->m->opt.providers || rk_provider_can(kind, RK_CAP_DIALS_IN))
		return 0;
	for (const char *const *p = k->m->opt.providers; *p; p++)
		if (!strcmp(*p, kind))
			return 0;
	return rk_error_set(e, RK_EDENIED, "provider '%s' is not offered by this server (rakazo serve --providers)",
			    kind);
}

/* The one resolver (engine/access/authz.h) on args.computer, for capability. */
static int resolve(struct call *k, const cJSON *args, const char *capability, struct rk_target *t, struct rk_error *e)
{
	struct rk_actor a;
	int r = actor(k, &a, e);
	if (r)
		return r;
	r = rk_target_resolve(k->m->eng, &a, rk_json_string(args, "computer", ""), capability, t, e);
	rk_actor_release(&a);
	if (r == 0 && (r = provider_reachable(k, t->computer.kind, e)))
		rk_target_release(t);
	if (r == 0 && t->bot) {
		rk_target_release(t);
		r = rk_error_set(e, RK_EUNSUPPORTED,
				 "a bot's own screen (COMPUTER:BOT) is not served over MCP: name the "
				 "computer or COMPUTER:.N");
	}
	return r;
}

/* The approval rules (engine/access/approval.h) for a call as the agent's tool
 * of the same kind: outside a run nobody can approve, so a rule that asks for
 * approval refuses, saying how to allow it. */
static int approve(struct call *k, const char *agent_tool, const cJSON *args, struct rk_error *e)
{
	struct rk_actor a;
	int r = actor(k, &a, e);
	if (r)
		return r;
	char *text = cJSON_PrintUnformatted(args);
	struct rk_approval_decision d;
	r = rk_approval_check(k->m->eng, &a, NULL, NULL, agent_tool, text, 0, &d, e);
	free(text);
	rk_actor_release(&a);
	if (r == -RK_EDENIED)
		rk_error_set(e, RK_EDENIED,
			     "%s; over MCP nobody can approve a call while it waits: allow it with `rakazo approval "
			     "set --effect allow --match tool --value %s` or run it from a run",
			     e->message, agent_tool);
	return r;
}

/* --- computers ------------------------------------------------------------------------ */

static cJSON *computer_doc(struct call *k, const struct rk_computer *c)
{
	cJSON *o = rk_computer_to_json(c);
	cJSON_DeleteItemFromObject(o, "home_key");
	struct rk_execution e = {0};
	struct rk_error e2;
	if (rk_computer_execution_active(k->m->eng, c->id, &e, &e2) == 0) {
		cJSON_AddStringToObject(o, "execution_id", e.id);
		rk_execution_release(&e);
	} else {
		cJSON_AddNullToObject(o, "execution_id");
	}
	return o;
}

static int t_computer_list(struct call *k, const cJSON *args)
{
	(void)args;
	struct rk_error e;
	struct rk_actor a;
	struct rk_computer *cs;
	size_t n;
	if (actor(k, &a, &e))
		return tool_fail(k, &e);
	if (rk_computer_list(k->m->eng, &cs, &n, &e)) {
		rk_actor_release(&a);
		return tool_fail(k, &e);
	}
	cJSON *doc = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(doc, "computers");
	for (size_t i = 0; i < n; i++) {
		struct rk_error e2;
		if (rk_authz_may_use(k->m->eng, &a, &cs[i]) && provider_reachable(k, cs[i].kind, &e2) == 0)
			cJSON_AddItemToArray(arr, computer_doc(k, &cs[i]));
		rk_computer_release(&cs[i]);
	}
	free(cs);
	rk_actor_release(&a);
	return done(k, doc);
}

static int t_computer_show(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_computer c = {0};
	struct rk_actor a;
	if (actor(k, &a, &e))
		return tool_fail(k, &e);
	int r = rk_authz_resolve(k->m->eng, &a, rk_json_string(args, "computer", ""), "computers.use", &c, &e);
	rk_actor_release(&a);
	if (r == 0 && (r = provider_reachable(k, c.kind, &e)) == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddItemToObject(doc, "computer", computer_doc(k, &c));
		cJSON_AddNullToObject(doc, "execution");
		done(k, doc);
	}
	rk_computer_release(&c);
	return r ? tool_fail(k, &e) : 0;
}

/* Submits a lifecycle command as the CLI does, waits for it when asked, and
 * answers with the computer and the command. */
static int lifecycle(struct call *k, const char *op, const char *computer, cJSON *body, const cJSON *args)
{
	struct rk_error e;
	int wait = 1;
	int64_t timeout_s = 300;
	const char *key = NULL;
	if (rk_json_get_bool(args, "wait", 1, &wait, "arguments", &e) ||
	    rk_json_get_int(args, "timeout_s", 1, 3600, 300, &timeout_s, "arguments", &e) ||
	    rk_json_get_string(args, "command_key", 0, &key, "arguments", &e))
		return tool_fail(k, &e);
	struct rk_submit s = {.op = op, .computer = computer, .body = body, .command_key = key};
	struct rk_execution x = {0};
	int existed = 0, r = rk_execution_submit(k->m->eng, &s, &x, &existed, &e);
	if (r)
		return tool_fail(k, &e);
	if (rk_lifecycle_op_of(op) == RK_LIFECYCLE_CREATE && !existed && x.computer_id) {
		struct rk_actor a;
		if ((r = actor(k, &a, &e)) == 0) {
			/* as the CLI: a person's computer; over HTTP, as the API: the org's */
			char *owner = strcmp(k->m->opt.transport, "http") ? rk_xasprintf("user:%s", a.user)
									  : rk_xstrdup("org");
			r = rk_authz_computer_record(k->m->eng, x.computer_id, a.space, owner, &e);
			free(owner);
			rk_actor_release(&a);
		}
		if (r)
			goto out;
	}
	if (!rk_execution_state_is_final(x.state) && rk_execution_state_of(x.state) != RK_EXECUTION_OUTCOME_UNKNOWN &&
	    (r = rk_worker_ensure(k->m->eng, &e)))
		goto out;
	if (wait && !rk_execution_state_is_final(x.state)) {
		struct rk_execution fin = {0};
		if ((r = rk_execution_wait(k->m->eng, x.id, timeout_s * 1000, &fin, &e)))
			goto out;
		rk_execution_release(&x);
		x = fin;
	}
	if (wait && rk_execution_state_of(x.state) == RK_EXECUTION_FAILED) {
		r = rk_error_set(&e, rk_code_from_name(x.error_code), "%s failed (execution %s): %s", op, x.id,
				 x.error_message ? x.error_message : "failed");
		goto out;
	}
	if (wait && rk_execution_state_of(x.state) == RK_EXECUTION_OUTCOME_UNKNOWN) {
		r = rk_error_set(&e, RK_EOUTCOME_UNKNOWN,
				 "%s: the provider's reply was lost; check it, then `rakazo computer execution decide %s "
				 "--outcome succeeded|failed`",
				 op, x.id);
		goto out;
	}
	cJSON *doc = cJSON_CreateObject();
	struct rk_computer c = {0};
	if (x.computer_id && rk_computer_get(k->m->eng, x.computer_id, &c, &e) == 0)
		cJSON_AddItemToObject(doc, "computer", computer_doc(k, &c));
	else
		cJSON_AddItemToObject(doc, "computer", cJSON_CreateObject()); /* deleted: gone */
	rk_computer_release(&c);
	cJSON *xe = rk_execution_to_json(&x);
	if (existed)
		cJSON_AddBoolToObject(xe, "reused", 1);
	cJSON_AddItemToObject(doc, "execution", xe);
	done(k, doc);
out:
	rk_execution_release(&x);
	return r ? tool_fail(k, &e) : 0;
}

static int t_computer_create(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_actor a;
	const char *provider = rk_json_string(args, "provider", "docker");
	int desktop = 1;
	if (rk_json_get_bool(args, "desktop", 1, &desktop, "arguments", &e) || actor(k, &a, &e))
		return tool_fail(k, &e);
	int r = rk_authz_check(k->m->eng, &a, "computers.create", NULL, &e);
	rk_actor_release(&a);
	if (r || provider_reachable(k, provider, &e))
		return tool_fail(k, &e);
	if (!rk_provider_find(provider))
		return rk_error_set(&e, RK_EINVALID, "unknown provider '%s'", provider), tool_fail(k, &e);
	if (rk_provider_can(provider, RK_CAP_DIALS_IN))
		return rk_error_set(&e, RK_EINVALID,
				    "a paired machine is made by running `rakazo pair SERVER-URL` on it"),
		       tool_fail(k, &e);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", rk_json_string(args, "name", ""));
	cJSON_AddStringToObject(body, "provider", provider);
	cJSON_AddStringToObject(body, "mode", "private");
	cJSON_AddBoolToObject(body, "desktop", desktop);
	cJSON_AddNumberToObject(body, "pause_after", 600);
	cJSON_AddNumberToObject(body, "revisions", 1);
	lifecycle(k, "create", NULL, body, args);
	cJSON_Delete(body);
	return 0;
}

static int change(struct call *k, const cJSON *args, const char *op)
{
	struct rk_error e;
	struct rk_computer c = {0};
	struct rk_actor a;
	if (actor(k, &a, &e))
		return tool_fail(k, &e);
	int r = rk_authz_resolve(k->m->eng, &a, rk_json_string(args, "computer", ""),
				 rk_lifecycle_op_of(op) == RK_LIFECYCLE_DELETE ? "computers.delete" : "computers.use",
				 &c, &e);
	rk_actor_release(&a);
	if (r || provider_reachable(k, c.kind, &e)) {
		rk_computer_release(&c);
		return tool_fail(k, &e);
	}
	cJSON *body = cJSON_CreateObject();
	lifecycle(k, op, c.id, body, args);
	cJSON_Delete(body);
	rk_computer_release(&c);
	return 0;
}

static int t_computer_start(struct call *k, const cJSON *args)
{
	return change(k, args, "resume"); /* a stopped computer resumes from its checkpoint */
}
static int t_computer_stop(struct call *k, const cJSON *args)
{
	return change(k, args, "stop");
}
static int t_computer_pause(struct call *k, const cJSON *args)
{
	return change(k, args, "pause");
}
static int t_computer_resume(struct call *k, const cJSON *args)
{
	return change(k, args, "resume");
}
static int t_computer_delete(struct call *k, const cJSON *args)
{
	return change(k, args, "delete");
}

/* --- the screen ------------------------------------------------------------------------- */

/* The agent's screen tool (engine/agent/tools.h: its rights check and
 * approval rules) with the image fitted to the host's limits: the edge
 * first, then JPEG at falling quality, then smaller, until it fits. */
static int screen_tool(struct call *k, const cJSON *args, const char *agent_tool, const char *tool_args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	int edge = k->m->opt.max_image_edge > 0 ? k->m->opt.max_image_edge : RK_MCP_IMAGE_EDGE_DEFAULT;
	size_t max_bytes = k->m->opt.max_image_bytes ? k->m->opt.max_image_bytes : RK_MCP_IMAGE_BYTES_DEFAULT;
	int64_t w = edge, h = edge;
	rk_json_get_int(args, "max_width", 16, 8192, edge, &w, "arguments", &e);
	rk_json_get_int(args, "max_height", 16, 8192, edge, &h, "arguments", &e);
	struct rk_tools_ctx ctx = {.eng = k->m->eng,
				   .computer = &t.computer,
				   .bot_id = k->m->opt.bot_id,
				   .display = t.display >= 0 ? t.display : 0,
				   .max_width = (int)(w < edge ? w : edge),
				   .max_height = (int)(h < edge ? h : edge)};
	static const int qualities[] = {0, 85, 70, 55, 40};
	struct rk_tool_result res = {0};
	int acted = 0;
	for (int attempt = 0;; attempt++) {
		/* after an act only the picture is taken again: the actions ran once */
		const char *name = acted ? "computer_observe" : agent_tool;
		rk_tool_result_release(&res);
		rk_tools_call(&ctx, name, acted ? "{}" : tool_args, &res);
		if (res.is_error || !res.png || res.png_len <= max_bytes)
			break;
		acted = 1;
		if (attempt + 1 < (int)(sizeof(qualities) / sizeof(qualities[0]))) {
			ctx.jpeg_quality = qualities[attempt + 1];
		} else if (ctx.max_width > 64 && ctx.max_height > 64) {
			ctx.max_width = ctx.max_width * 3 / 4;
			ctx.max_height = ctx.max_height * 3 / 4;
		} else {
			break;
		}
	}
	int r = 0;
	if (res.is_error) {
		/* the tool's text is {"error":{"code","message"}}, secrets already out */
		cJSON *doc = cJSON_Parse(res.text);
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(doc, "error");
		rk_error_set(&e, rk_code_from_name(rk_json_string(er, "code", "failed")), "%s",
			     rk_json_string(er, "message", res.text ? res.text : "failed"));
		cJSON_Delete(doc);
		r = tool_fail(k, &e);
	} else if (res.png && res.png_len > max_bytes) {
		rk_error_set(&e, RK_ETOOLARGE, "the screenshot is %zu bytes even at 64 px: over the limit of %zu",
			     res.png_len, max_bytes);
		r = tool_fail(k, &e);
	} else {
		cJSON *tdoc = cJSON_Parse(res.text ? res.text : "{}");
		cJSON *obs = cJSON_DetachItemFromObjectCaseSensitive(tdoc, "observation");
		cJSON *doc = cJSON_CreateObject();
		const cJSON *jw = cJSON_GetObjectItemCaseSensitive(obs, "width");
		const cJSON *jh = cJSON_GetObjectItemCaseSensitive(obs, "height");
		const cJSON *sw = cJSON_GetObjectItemCaseSensitive(obs, "screen_width");
		const cJSON *sh = cJSON_GetObjectItemCaseSensitive(obs, "screen_height");
		cJSON_AddNumberToObject(doc, "width", cJSON_IsNumber(jw) ? jw->valuedouble : 0);
		cJSON_AddNumberToObject(doc, "height", cJSON_IsNumber(jh) ? jh->valuedouble : 0);
		cJSON_AddNumberToObject(doc, "screen_width", cJSON_IsNumber(sw) ? sw->valuedouble : 0);
		cJSON_AddNumberToObject(doc, "screen_height", cJSON_IsNumber(sh) ? sh->valuedouble : 0);
		cJSON_AddStringToObject(doc, "mime_type", res.png ? res.mime : "");
		cJSON_AddNumberToObject(doc, "bytes", (double)res.png_len);
		cJSON_AddStringToObject(doc, "frame_hash", res.frame_hash);
		cJSON_AddNumberToObject(doc, "max_width", ctx.max_width);
		cJSON_AddNumberToObject(doc, "max_height", ctx.max_height);
		cJSON_AddItemToObject(doc, "observation", obs ? obs : cJSON_CreateObject());
		const cJSON *cmp = cJSON_GetObjectItemCaseSensitive(tdoc, "completed");
		if (cmp)
			cJSON_AddItemToObject(doc, "completed", cJSON_Duplicate(cmp, 1));
		cJSON_Delete(tdoc);
		if (res.png) {
			char *b = rk_base64_encode(res.png, res.png_len);
			cJSON *img = cJSON_CreateObject();
			cJSON_AddStringToObject(img, "type", "image");
			cJSON_AddStringToObject(img, "data", b);
			cJSON_AddStringToObject(img, "mimeType", res.mime);
			cJSON_AddItemToArray(k->content, img);
			free(b);
		}
		done(k, doc);
	}
	rk_tool_result_release(&res);
	rk_target_release(&t);
	return r;
}

static int t_screen_observe(struct call *k, const cJSON *args)
{
	return screen_tool(k, args, "computer_observe", "{}");
}

static int t_screen_act(struct call *k, const cJSON *args)
{
	cJSON *batch = cJSON_CreateObject();
	cJSON_AddItemToObject(batch, "actions", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(args, "actions"), 1));
	const cJSON *settle = cJSON_GetObjectItemCaseSensitive(args, "settle_ms");
	if (settle)
		cJSON_AddItemToObject(batch, "settle_ms", cJSON_Duplicate(settle, 1));
	char *text = cJSON_PrintUnformatted(batch);
	cJSON_Delete(batch);
	int r = screen_tool(k, args, "computer_act", text);
	free(text);
	return r;
}

/* --- the shell ------------------------------------------------------------------------- */

#define EXEC_OUTPUT_MAX (1024 * 1024)

static int t_shell_exec(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	const char *command = rk_json_string(args, "command", ""), *cwd = rk_json_string(args, "cwd", NULL);
	int64_t timeout_ms = 60000;
	if (rk_json_get_int(args, "timeout_ms", 250, 3600000, 60000, &timeout_ms, "arguments", &e))
		return tool_fail(k, &e);
	if (!command[0])
		return rk_error_set(&e, RK_EINVALID, "shell_exec: command is empty"), tool_fail(k, &e);
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	if (approve(k, "shell", args, &e)) {
		rk_target_release(&t);
		return tool_fail(k, &e);
	}
	/* stderr apart: the command's stderr goes to a file, printed after a
	 * marker nobody can guess once the command has ended */
	char mark[40], *id = rk_id_new("mcp");
	snprintf(mark, sizeof(mark), "%s", id);
	free(id);
	char *wrapped = rk_xasprintf("__rk_err=$(mktemp) || exit 125\n( %s\n) 2>\"$__rk_err\"\n__rk_s=$?\n"
				     "printf '\\n%%s\\n' '%s'\ncat \"$__rk_err\"\nrm -f \"$__rk_err\"\nexit $__rk_s\n",
				     command, mark);
	struct rk_session_request req = {.command = wrapped,
					 .cwd = cwd,
					 .yield_ms = timeout_ms < RK_SESSION_YIELD_MAX_MS ? timeout_ms
											  : RK_SESSION_YIELD_MAX_MS,
					 .max_output = EXEC_OUTPUT_MAX,
					 .bot_id = k->m->opt.bot_id};
	struct rk_session_reply rep = {0};
	struct rk_buf outb;
	rk_buf_init(&outb);
	int64_t deadline = rk_monotonic_ms() + timeout_ms, truncated = 0, timed_out = 0;
	int r = rk_session_start(k->m->eng, &t.computer, &req, &rep, &e);
	while (r == 0) {
		rk_buf_add(&outb, rep.output, rep.output_len);
		truncated |= rep.truncated;
		if (!rep.running || !rep.session)
			break;
		int64_t left = deadline - rk_monotonic_ms();
		char *session = rk_xstrdup(rep.session);
		rk_session_reply_release(&rep);
		if (left <= 0) {
			timed_out = 1;
			r = rk_session_kill(k->m->eng, t.computer.id, session, &rep, &e);
			if (r == 0)
				rk_buf_add(&outb, rep.output, rep.output_len);
			free(session);
			break;
		}
		if (left < RK_SESSION_YIELD_MIN_MS)
			left = RK_SESSION_YIELD_MIN_MS;
		r = rk_session_input(k->m->eng, t.computer.id, session, "", 0,
				     left < RK_SESSION_YIELD_MAX_MS ? left : RK_SESSION_YIELD_MAX_MS, EXEC_OUTPUT_MAX,
				     &rep, &e);
		free(session);
	}
	free(wrapped);
	if (r == 0) {
		struct rk_actor a;
		if (actor(k, &a, &e) == 0) {
			struct rk_secret_redactor *red = rk_secret_redactor_new(k->m->eng, &a);
			rk_secret_redactor_buf(red, &outb);
			rk_secret_redactor_free(red);
			rk_actor_release(&a);
		}
		char *sep = rk_xasprintf("\n%s\n", mark);
		char *at = strstr(outb.data, sep);
		cJSON *doc = cJSON_CreateObject();
		if (rep.exited && !rep.signo && !timed_out)
			cJSON_AddNumberToObject(doc, "exit_code", rep.exit_code);
		else
			cJSON_AddNullToObject(doc, "exit_code");
		if (rep.signo > 0)
			cJSON_AddNumberToObject(doc, "signal", rep.signo);
		else
			cJSON_AddNullToObject(doc, "signal");
		if (at) {
			*at = 0;
			cJSON_AddStringToObject(doc, KEY_STDOUT, outb.data);
			cJSON_AddStringToObject(doc, "stderr", at + strlen(sep));
		} else {
			cJSON_AddStringToObject(doc, KEY_STDOUT, outb.data);
			cJSON_AddStringToObject(doc, "stderr", "");
		}
		cJSON_AddBoolToObject(doc, "timed_out", (int)timed_out);
		cJSON_AddBoolToObject(doc, "truncated", (int)truncated);
		if (rep.lost)
			cJSON_AddBoolToObject(doc, "lost", 1);
		free(sep);
		done(k, doc);
	}
	rk_session_reply_release(&rep);
	rk_buf_release(&outb);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

/* --- files --------------------------------------------------------------------------- */

static int file_begin(struct call *k, const cJSON *args, const char *agent_tool, struct rk_target *t,
		      struct rk_error *e)
{
	int r = resolve(k, args, "computers.use", t, e);
	if (r == 0 && (r = approve(k, agent_tool, args, e)))
		rk_target_release(t);
	return r;
}

static int t_file_read(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	const char *path = rk_json_string(args, "path", ""), *enc = rk_json_string(args, "encoding", "text");
	int64_t max = 16 * 1024 * 1024;
	if (rk_json_get_int(args, "max_bytes", 1, 16 * 1024 * 1024, max, &max, "arguments", &e) ||
	    file_begin(k, args, "read_file", &t, &e))
		return tool_fail(k, &e);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_computer_file_read(k->m->eng, &t.computer, path, (size_t)max, &b, &e);
	if (r == 0 && !strcmp(enc, "text") && !rk_utf8_valid(b.data, b.len))
		r = rk_error_set(&e, RK_EINVALID, "'%s' is not UTF-8 text: read it with encoding base64", path);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "path", path);
		cJSON_AddNumberToObject(doc, "size", (double)b.len);
		cJSON_AddStringToObject(doc, "encoding", enc);
		if (!strcmp(enc, "text")) {
			struct rk_actor a;
			if (actor(k, &a, &e) == 0) {
				struct rk_secret_redactor *red = rk_secret_redactor_new(k->m->eng, &a);
				rk_secret_redactor_buf(red, &b);
				rk_secret_redactor_free(red);
				rk_actor_release(&a);
			}
			cJSON_AddStringToObject(doc, "content", b.data);
		} else {
			char *s = rk_base64_encode(b.data, b.len);
			cJSON_AddStringToObject(doc, "content", s);
			free(s);
		}
		done(k, doc);
	}
	rk_buf_release(&b);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_file_write(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	const char *path = rk_json_string(args, "path", ""), *enc = rk_json_string(args, "encoding", "text");
	const char *content = rk_json_string(args, "content", "");
	int exe = 0;
	struct rk_buf b;
	rk_buf_init(&b);
	if (!strcmp(enc, "base64") && rk_base64_decode(content, &b)) {
		rk_buf_release(&b);
		return rk_error_set(&e, RK_EINVALID, "content is not valid base64"), tool_fail(k, &e);
	}
	if (strcmp(enc, "base64"))
		rk_buf_adds(&b, content);
	if (rk_json_get_bool(args, "executable", 0, &exe, "arguments", &e) ||
	    file_begin(k, args, "write_file", &t, &e)) {
		rk_buf_release(&b);
		return tool_fail(k, &e);
	}
	int r = rk_computer_file_write(k->m->eng, &t.computer, path, b.data, b.len, exe, &e);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "path", path);
		cJSON_AddNumberToObject(doc, "bytes", (double)b.len);
		done(k, doc);
	}
	rk_buf_release(&b);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_file_list(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	const char *path = rk_json_string(args, "path", "");
	if (!strcmp(path, ".") || !strcmp(path, "./"))
		path = "";
	if (file_begin(k, args, "list_files", &t, &e))
		return tool_fail(k, &e);
	struct rk_file_entry *es;
	size_t n;
	int r = rk_computer_file_list(k->m->eng, &t.computer, path, &es, &n, &e);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "path", path[0] ? path : ".");
		cJSON *arr = cJSON_AddArrayToObject(doc, "entries");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, rk_file_entry_to_json(&es[i]));
		rk_file_entries_free(es, n);
		done(k, doc);
	}
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

/* --- the agent's tools, passed through (the browser) ------------------------------------- */

/* One of the agent's tools on the computer of args (engine/agent/tools.h:
 * its rights check, approval rules and secret redaction); its JSON text is
 * the structured result, its screenshot an image block. */
static int t_agent(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	cJSON *rest = cJSON_Duplicate(args, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(rest, "computer");
	char *text = cJSON_PrintUnformatted(rest);
	cJSON_Delete(rest);
	struct rk_tools_ctx ctx = {.eng = k->m->eng,
				   .computer = &t.computer,
				   .bot_id = k->m->opt.bot_id,
				   .display = t.display >= 0 ? t.display : 0};
	struct rk_tool_result res = {0};
	rk_tools_call(&ctx, k->tool->agent, text, &res);
	free(text);
	cJSON *doc = cJSON_Parse(res.text ? res.text : "{}");
	int r = 0;
	if (res.is_error) {
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(doc, "error");
		rk_error_set(&e, rk_code_from_name(rk_json_string(er, "code", "failed")), "%s",
			     rk_json_string(er, "message", "failed"));
		cJSON_Delete(doc);
		r = tool_fail(k, &e);
	} else {
		if (res.png) {
			char *b = rk_base64_encode(res.png, res.png_len);
			cJSON *img = cJSON_CreateObject();
			cJSON_AddStringToObject(img, "type", "image");
			cJSON_AddStringToObject(img, "data", b);
			cJSON_AddStringToObject(img, "mimeType", res.mime);
			cJSON_AddItemToArray(k->content, img);
			free(b);
		}
		if (!cJSON_IsObject(doc)) {
			/* clipped for a model's context: give the text as it is */
			cJSON_Delete(doc);
			doc = cJSON_CreateObject();
			cJSON_AddStringToObject(doc, "text", res.text ? res.text : "");
		}
		done(k, doc);
	}
	rk_tool_result_release(&res);
	rk_target_release(&t);
	return r;
}

/* --- zoom ------------------------------------------------------------------------------ */

static int t_screen_zoom(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	const cJSON *reg = cJSON_GetObjectItemCaseSensitive(args, "region");
	struct rk_picture_rect rect = {cJSON_GetArrayItem(reg, 0)->valueint, cJSON_GetArrayItem(reg, 1)->valueint,
				       cJSON_GetArrayItem(reg, 2)->valueint, cJSON_GetArrayItem(reg, 3)->valueint};
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	if (approve(k, "computer_observe", args, &e)) {
		rk_target_release(&t);
		return tool_fail(k, &e);
	}
	int edge = k->m->opt.max_image_edge > 0 ? k->m->opt.max_image_edge : RK_MCP_IMAGE_EDGE_DEFAULT;
	size_t max_bytes = k->m->opt.max_image_bytes ? k->m->opt.max_image_bytes : RK_MCP_IMAGE_BYTES_DEFAULT;
	int64_t w = edge, h = edge;
	rk_json_get_int(args, "max_width", 16, 8192, edge, &w, "arguments", &e);
	rk_json_get_int(args, "max_height", 16, 8192, edge, &h, "arguments", &e);
	struct rk_display_observe_options oo = {.max_width = (int)(w < edge ? w : edge),
						.max_height = (int)(h < edge ? h : edge)};
	struct rk_display_shot shot = {0};
	int r = rk_display_zoom(k->m->eng, &t.computer, t.display >= 0 ? t.display : 0, &rect, &oo, &shot, &e);
	if (r == 0 && shot.png_len > max_bytes) {
		/* the zoom fills the same image size: only the encoding can give */
		for (int q = 80; q >= 30 && shot.png_len > max_bytes && r == 0; q -= 25) {
			rk_display_shot_release(&shot);
			oo.format = RK_PICTURE_JPEG;
			oo.quality = q;
			r = rk_display_zoom(k->m->eng, &t.computer, t.display >= 0 ? t.display : 0, &rect, &oo, &shot,
					    &e);
		}
		if (r == 0 && shot.png_len > max_bytes)
			r = rk_error_set(&e, RK_ETOOLARGE,
					 "the zoomed image is %zu bytes, over the limit of %zu: ask for a "
					 "smaller max_width",
					 shot.png_len, max_bytes);
	}
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		const cJSON *jw = cJSON_GetObjectItemCaseSensitive(shot.meta, "width");
		const cJSON *jh = cJSON_GetObjectItemCaseSensitive(shot.meta, "height");
		cJSON_AddNumberToObject(doc, "width", cJSON_IsNumber(jw) ? jw->valuedouble : 0);
		cJSON_AddNumberToObject(doc, "height", cJSON_IsNumber(jh) ? jh->valuedouble : 0);
		cJSON_AddStringToObject(doc, "mime_type", shot.mime ? shot.mime : "image/png");
		cJSON_AddNumberToObject(doc, "bytes", (double)shot.png_len);
		cJSON_AddItemToObject(doc, "observation", shot.meta);
		shot.meta = NULL;
		if (shot.png) {
			char *b = rk_base64_encode(shot.png, shot.png_len);
			cJSON *img = cJSON_CreateObject();
			cJSON_AddStringToObject(img, "type", "image");
			cJSON_AddStringToObject(img, "data", b);
			cJSON_AddStringToObject(img, "mimeType", shot.mime ? shot.mime : "image/png");
			cJSON_AddItemToArray(k->content, img);
			free(b);
		}
		done(k, doc);
	}
	rk_display_shot_release(&shot);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

/* --- shell sessions -------------------------------------------------------------------------- */

#define SESSION_OUTPUT_MAX (256 * 1024)

static int session_reply(struct call *k, struct rk_session_reply *rep)
{
	struct rk_error e;
	struct rk_actor a;
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_add(&b, rep->output, rep->output_len);
	if (actor(k, &a, &e) == 0) {
		struct rk_secret_redactor *red = rk_secret_redactor_new(k->m->eng, &a);
		rk_secret_redactor_buf(red, &b);
		rk_secret_redactor_free(red);
		rk_actor_release(&a);
	}
	cJSON *doc = cJSON_CreateObject();
	rk_json_add_str_or_null(doc, "session", rep->running ? rep->session : NULL);
	cJSON_AddBoolToObject(doc, "running", rep->running);
	if (rep->exited && !rep->signo)
		cJSON_AddNumberToObject(doc, "exit_code", rep->exit_code);
	else
		cJSON_AddNullToObject(doc, "exit_code");
	if (rep->signo > 0)
		cJSON_AddNumberToObject(doc, "signal", rep->signo);
	cJSON_AddStringToObject(doc, "output", b.data);
	cJSON_AddBoolToObject(doc, "truncated", rep->truncated);
	rk_buf_release(&b);
	return done(k, doc);
}

static int t_shell_start(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	int tty = 0;
	int64_t yield = 1000;
	if (rk_json_get_bool(args, "tty", 0, &tty, "arguments", &e) ||
	    rk_json_get_int(args, "yield_ms", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, 1000, &yield,
			    "arguments", &e) ||
	    resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	if (approve(k, "shell", args, &e)) {
		rk_target_release(&t);
		return tool_fail(k, &e);
	}
	struct rk_session_request req = {.command = rk_json_string(args, "command", ""),
					 .cwd = rk_json_string(args, "cwd", NULL),
					 .tty = tty,
					 .rows = 24,
					 .cols = 80,
					 .yield_ms = yield,
					 .max_output = SESSION_OUTPUT_MAX,
					 .bot_id = k->m->opt.bot_id,
					 .keep_back = 1};
	struct rk_session_reply rep = {0};
	int r = rk_session_start(k->m->eng, &t.computer, &req, &rep, &e);
	if (r == 0)
		session_reply(k, &rep);
	rk_session_reply_release(&rep);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_shell_input(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	int64_t yield = 1000;
	if (rk_json_get_int(args, "yield_ms", RK_SESSION_YIELD_MIN_MS, RK_SESSION_YIELD_MAX_MS, 1000, &yield,
			    "arguments", &e) ||
	    resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	struct rk_buf in;
	rk_buf_init(&in);
	int r = approve(k, "write_stdin", args, &e);
	if (r == 0)
		r = rk_unescape_c(rk_json_string(args, "input", ""), &in, &e);
	struct rk_session_reply rep = {0};
	if (r == 0 && (r = rk_session_input(k->m->eng, t.computer.id, rk_json_string(args, "session", ""), in.data,
					    in.len, yield, SESSION_OUTPUT_MAX, &rep, &e)) == 0)
		session_reply(k, &rep);
	rk_session_reply_release(&rep);
	rk_buf_release(&in);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_shell_kill(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	struct rk_session_reply rep = {0};
	int r = approve(k, "write_stdin", args, &e);
	if (r == 0 &&
	    (r = rk_session_kill(k->m->eng, t.computer.id, rk_json_string(args, "session", ""), &rep, &e)) == 0)
		session_reply(k, &rep);
	rk_session_reply_release(&rep);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

/* --- checkpoints --------------------------------------------------------------------------- */

static int t_checkpoint_create(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	struct rk_workspace_checkpoint rev = {0};
	int r = rk_checkpoint_create(k->m->eng, &t.computer, rk_json_string(args, "reason", "mcp"), 1, &rev, &e);
	if (r == 0)
		done(k, rk_checkpoint_to_json(&t.computer, &rev, rev.id));
	rk_workspace_checkpoint_release(&rev);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_checkpoint_list(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	cJSON *rows = NULL;
	int r = rk_checkpoint_list(k->m->eng, &t.computer, &rows, &e);
	if (r == 0) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddItemToObject(doc, "checkpoints", rows);
		done(k, doc);
	}
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

static int t_checkpoint_restore(struct call *k, const cJSON *args)
{
	struct rk_error e;
	struct rk_target t;
	if (resolve(k, args, "computers.use", &t, &e))
		return tool_fail(k, &e);
	const char *want = rk_json_string(args, "checkpoint", NULL);
	struct rk_workspace_checkpoint rev = {0};
	int r = rk_checkpoint_restore(k->m->eng, &t.computer, want, &rev, &e);
	if (r == 0) {
		cJSON *o = rk_checkpoint_to_json(&t.computer, &rev, rev.id);
		if (want)
			cJSON_AddStringToObject(o, "restored_from", want);
		done(k, o);
	}
	rk_workspace_checkpoint_release(&rev);
	rk_target_release(&t);
	return r ? tool_fail(k, &e) : 0;
}

/* --- memory (engine/agent/memory.h): the caller's, as `rakazo memory` reads it ------------------- */

static int memory_done(struct call *k, const struct rk_actor *a, cJSON *doc)
{
	struct rk_secret_redactor *red = rk_secret_redactor_new(k->m->eng, a);
	rk_secret_redactor_json(red, doc);
	rk_secret_redactor_free(red);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		doc = cJSON_CreateObject();
	}
	return done(k, doc);
}

static int memory_call(struct call *k, const cJSON *args, const char *agent_tool, int op)
{
	struct rk_error e;
	struct rk_actor a = {0};
	if (actor(k, &a, &e) || approve(k, agent_tool, args, &e)) {
		rk_actor_release(&a);
		return tool_fail(k, &e);
	}
	cJSON *doc = NULL;
	int64_t limit = 10, expected = RK_MEMORY_NO_REVISION;
	int r = 0;
	if (op == 0) {
		r = rk_memory_read(k->m->eng, &a, rk_json_string(args, "path", NULL), &doc, &e);
		if (r == 0 && cJSON_IsArray(doc)) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "documents", doc);
			doc = o;
		}
	} else if (op == 1) {
		if ((r = rk_json_get_int(args, "expected_revision", -1, INT64_MAX, RK_MEMORY_NO_REVISION, &expected,
					 "arguments", &e)) == 0)
			r = rk_memory_write(k->m->eng, &a, rk_json_string(args, "path", ""),
					    rk_json_string(args, "content", ""), expected, NULL, &doc, &e);
	} else {
		if ((r = rk_json_get_int(args, "limit", 1, 50, 10, &limit, "arguments", &e)) == 0)
			r = rk_memory_search(k->m->eng, &a, rk_json_string(args, "query", ""), (int)limit, &doc, &e);
	}
	if (r == 0)
		memory_done(k, &a, doc);
	else
		cJSON_Delete(doc);
	rk_actor_release(&a);
	return r ? tool_fail(k, &e) : 0;
}

static int t_memory_read(struct call *k, const cJSON *args)
{
	return memory_call(k, args, "memory_read", 0);
}
static int t_memory_write(struct call *k, const cJSON *args)
{
	return memory_call(k, args, "memory_write", 1);
}
static int t_memory_search(struct call *k, const cJSON *args)
{
	return memory_call(k, args, "memory_search", 2);
}

/* --- JSON-RPC -------------------------------------------------------------------------- */

struct rk_mcp *rk_mcp_new(struct rk_engine *eng, const struct rk_mcp_options *opt)
{
	struct rk_mcp *m = rk_xcalloc(1, sizeof(*m));
	m->eng = eng;
	if (opt)
		m->opt = *opt;
	if (!m->opt.transport)
		m->opt.transport = "stdio";
	m->tools = tool_list_doc();
	return m;
}

void rk_mcp_free(struct rk_mcp *m)
{
	if (!m)
		return;
	cJSON_Delete(m->tools);
	free(m);
}

static void respond(struct rk_buf *out, const cJSON *id, cJSON *result, cJSON *error)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "jsonrpc", "2.0");
	cJSON_AddItemToObject(doc, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	if (error)
		cJSON_AddItemToObject(doc, "error", error);
	else
		cJSON_AddItemToObject(doc, "result", result);
	char *text = cJSON_PrintUnformatted(doc);
	rk_buf_adds(out, text);
	free(text);
	cJSON_Delete(doc);
}

static cJSON *error_doc(int code, const char *message, cJSON *data)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddNumberToObject(e, "code", code);
	/* the message is ours, but may quote the caller: keep it valid UTF-8 */
	struct rk_buf b;
	rk_buf_init(&b);
	rk_utf8_escape(&b, message, strlen(message), 0);
	cJSON_AddStringToObject(e, "message", b.data);
	rk_buf_release(&b);
	if (data)
		cJSON_AddItemToObject(e, "data", data);
	return e;
}

void rk_mcp_error_response(struct rk_buf *out, int code, const char *message)
{
	respond(out, NULL, NULL, error_doc(code, message, NULL));
}

static cJSON *server_info(void)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "name", "rakazo");
	cJSON_AddStringToObject(s, "title", "rakazo computers");
	cJSON_AddStringToObject(s, "version", RK_VERSION);
	return s;
}

static cJSON *capabilities(void)
{
	cJSON *c = cJSON_CreateObject();
	cJSON *t = cJSON_AddObjectToObject(c, "tools");
	cJSON_AddBoolToObject(t, "listChanged", 0);
	cJSON *r = cJSON_AddObjectToObject(c, "resources");
	cJSON_AddBoolToObject(r, "listChanged", 0);
	return c;
}

#define INSTRUCTIONS                                                                                                   \
	"rakazo runs sandboxed Linux computers. computer_list shows them; computer_create makes one; screen_observe "  \
	"and screen_act see and drive its desktop; shell_exec and the file tools work in its workspace. Every "        \
	"tool takes the computer by name or id: nothing is kept between calls."

static int m_initialize(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	const char *v = rk_json_string(params, "protocolVersion", NULL);
	if (!v) {
		*error = error_doc(RK_MCP_INVALID_PARAMS, "initialize: params.protocolVersion must be a string", NULL);
		return 0;
	}
	/* the client's version when we speak it, else our newest handshake one */
	const char *agreed = rk_mcp_version_known(v) && strcmp(v, MODERN_VERSION) ? v : rk_mcp_versions[1];
	snprintf(m->legacy, sizeof(m->legacy), "%s", agreed);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "protocolVersion", agreed);
	cJSON_AddItemToObject(r, "capabilities", capabilities());
	cJSON_AddItemToObject(r, "serverInfo", server_info());
	cJSON_AddStringToObject(r, "instructions", INSTRUCTIONS);
	*result = r;
	return 0;
}

/* CacheableResult (2026-07-28): the versions and the tool table change only
 * with the binary, and are the same for every caller. */
static void cacheable(cJSON *r)
{
	cJSON_AddNumberToObject(r, "ttlMs", 3600000);
	cJSON_AddStringToObject(r, "cacheScope", "public");
}

static int m_discover(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	(void)m, (void)params, (void)error;
	cJSON *r = cJSON_CreateObject();
	cJSON *vs = cJSON_AddArrayToObject(r, "supportedVersions");
	for (size_t i = 0; rk_mcp_versions[i]; i++)
		cJSON_AddItemToArray(vs, cJSON_CreateString(rk_mcp_versions[i]));
	cJSON_AddItemToObject(r, "capabilities", capabilities());
	cJSON_AddStringToObject(r, "instructions", INSTRUCTIONS);
	cacheable(r);
	*result = r;
	return 0;
}

static int m_ping(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	(void)m, (void)params, (void)error;
	*result = cJSON_CreateObject();
	return 0;
}

static int m_tools_list(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	(void)params, (void)error;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "tools", cJSON_Duplicate(m->tools, 1));
	cacheable(r);
	*result = r;
	return 0;
}

static int m_tools_call(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name)) {
		*error = error_doc(RK_MCP_INVALID_PARAMS, "tools/call: params.name must be a string", NULL);
		return 0;
	}
	if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
		*error = error_doc(RK_MCP_INVALID_PARAMS, "tools/call: params.arguments must be an object", NULL);
		return 0;
	}
	size_t i;
	for (i = 0; i < NTOOLS && strcmp(tools[i].name, name->valuestring); i++)
		;
	if (i == NTOOLS) {
		char *msg = rk_xasprintf("Unknown tool: %s", name->valuestring);
		*error = error_doc(RK_MCP_INVALID_PARAMS, msg, NULL);
		free(msg);
		return 0;
	}
	cJSON *empty = cJSON_CreateObject();
	const cJSON *a = cJSON_IsObject(args) ? args : empty;
	struct call k = {.m = m, .tool = &tools[i], .content = cJSON_CreateArray()};
	struct rk_error e;
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m->tools, (int)i), "inputSchema");
	int64_t t0 = rk_monotonic_ms();
	if (validate(schema, a, tools[i].name, &e))
		tool_fail(&k, &e); /* nothing runs */
	else
		tools[i].fn(&k, a);
	rk_log(RK_LOG_INFO, "mcp %s: %s %s in %lld ms", m->opt.transport, tools[i].name, k.is_error ? "failed" : "ok",
	       (long long)(rk_monotonic_ms() - t0));
	cJSON_Delete(empty);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "content", k.content);
	if (k.structured)
		cJSON_AddItemToObject(r, "structuredContent", k.structured);
	if (k.is_error)
		cJSON_AddBoolToObject(r, "isError", 1);
	*result = r;
	return 0;
}

/* --- resources: a computer's screen and its workspace files ---------------------------------- */

#define URI_PREFIX "rakazo://computers/"

static void add_template(cJSON *arr, const char *tmpl, const char *name, const char *desc, const char *mime)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "uriTemplate", tmpl);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "description", desc);
	if (mime)
		cJSON_AddStringToObject(o, "mimeType", mime);
	cJSON_AddItemToArray(arr, o);
}

static int m_templates(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	(void)m, (void)params, (void)error;
	cJSON *r = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(r, "resourceTemplates");
	add_template(arr, URI_PREFIX "{computer}/screen", "screen", "the current screenshot of a computer's display 0",
		     "image/png");
	add_template(arr, URI_PREFIX "{computer}/files/{+path}", "file",
		     "a file of a computer's workspace (text, or a blob when it is not UTF-8)", NULL);
	*result = r;
	return 0;
}

static int m_resources_list(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	(void)params;
	struct call k = {.m = m};
	struct rk_error e;
	struct rk_actor a;
	struct rk_computer *cs;
	size_t n;
	if (actor(&k, &a, &e)) {
		*error = error_doc(RK_MCP_INTERNAL_ERROR, e.message, NULL);
		return 0;
	}
	if (rk_computer_list(m->eng, &cs, &n, &e)) {
		rk_actor_release(&a);
		*error = error_doc(RK_MCP_INTERNAL_ERROR, e.message, NULL);
		return 0;
	}
	cJSON *r = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(r, "resources");
	for (size_t i = 0; i < n; i++) {
		struct rk_error e2;
		if (cs[i].desktop && rk_authz_may_use(m->eng, &a, &cs[i]) &&
		    provider_reachable(&k, cs[i].kind, &e2) == 0) {
			cJSON *o = cJSON_CreateObject();
			char *uri = rk_xasprintf(URI_PREFIX "%s/screen", cs[i].id);
			char *name = rk_xasprintf("%s screen", cs[i].name);
			cJSON_AddStringToObject(o, "uri", uri);
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddStringToObject(o, "mimeType", "image/png");
			cJSON_AddItemToArray(arr, o);
			free(uri);
			free(name);
		}
		rk_computer_release(&cs[i]);
	}
	free(cs);
	rk_actor_release(&a);
	*result = r;
	return 0;
}

/* A resource that is not there: -32002 in the handshake revisions, -32602
 * in 2026-07-28 (which retired -32002). */
static cJSON *no_resource(struct rk_mcp *m, const char *uri, const char *why)
{
	char *msg = rk_xasprintf("Resource not found: %s (%s)", uri, why);
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "uri", uri);
	cJSON *e = error_doc(m->modern ? RK_MCP_INVALID_PARAMS : -32002, msg, data);
	free(msg);
	return e;
}

static int m_resources_read(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error)
{
	const char *uri = rk_json_string(params, "uri", NULL);
	if (!uri) {
		*error = error_doc(RK_MCP_INVALID_PARAMS, "resources/read: params.uri must be a string", NULL);
		return 0;
	}
	if (strncmp(uri, URI_PREFIX, strlen(URI_PREFIX))) {
		*error = no_resource(m, uri, "rakazo's resources are " URI_PREFIX "...");
		return 0;
	}
	const char *rest = uri + strlen(URI_PREFIX);
	size_t clen = strcspn(rest, "/");
	char *computer = rk_xstrndup(rest, clen);
	const char *what = rest[clen] ? rest + clen + 1 : "";
	struct call k = {.m = m, .content = cJSON_CreateArray()};
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "computer", computer);
	cJSON *item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "uri", uri);
	if (!strcmp(what, "screen")) {
		screen_tool(&k, args, "computer_observe", "{}");
		const cJSON *img = cJSON_GetArrayItem(k.content, 0);
		if (!k.is_error && img && !strcmp(rk_json_string(img, "type", ""), "image")) {
			cJSON_AddStringToObject(item, "mimeType", rk_json_string(img, "mimeType", "image/png"));
			cJSON_AddStringToObject(item, "blob", rk_json_string(img, "data", ""));
		}
	} else if (!strncmp(what, "files/", 6) && what[6]) {
		cJSON_AddStringToObject(args, "path", what + 6);
		cJSON_AddStringToObject(args, "encoding", "base64");
		t_file_read(&k, args);
		if (!k.is_error) {
			const char *b64 = rk_json_string(k.structured, "content", "");
			struct rk_buf raw;
			rk_buf_init(&raw);
			rk_base64_decode(b64, &raw);
			if (rk_utf8_valid(raw.data, raw.len)) {
				cJSON_AddStringToObject(item, "mimeType", "text/plain");
				cJSON_AddStringToObject(item, "text", raw.data);
			} else {
				cJSON_AddStringToObject(item, "mimeType", "application/octet-stream");
				cJSON_AddStringToObject(item, "blob", b64);
			}
			rk_buf_release(&raw);
		}
	} else {
		k.is_error = 1;
		cJSON_Delete(k.content);
		k.content = cJSON_CreateArray();
		add_text(&k, "not_found: the resource is the computer's screen or files/PATH");
	}
	if (k.is_error) {
		const cJSON *t = cJSON_GetArrayItem(k.content, 0);
		*error = no_resource(m, uri, rk_json_string(t, "text", "failed"));
		cJSON_Delete(item);
	} else {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "contents"), item);
		*result = r;
	}
	cJSON_Delete(k.content);
	cJSON_Delete(k.structured);
	cJSON_Delete(args);
	free(computer);
	return 0;
}

typedef int (*method_fn)(struct rk_mcp *m, const cJSON *params, cJSON **result, cJSON **error);
static const struct {
	const char *name;
	method_fn fn;
	int legacy, modern; /* served in that era */
} methods[] = {
	/* clang-format off */
	{"initialize", m_initialize, 1, 0},
	{"server/discover", m_discover, 0, 1},
	{"ping", m_ping, 1, 0}, /* gone in 2026-07-28 */
	{"tools/list", m_tools_list, 1, 1},
	{"tools/call", m_tools_call, 1, 1},
	{"resources/list", m_resources_list, 1, 1},
	{"resources/templates/list", m_templates, 1, 1},
	{"resources/read", m_resources_read, 1, 1},
	/* clang-format on */
};

/* A header value as the client sent it: =?base64?...?= is decoded
 * (malloc'd; NULL when the encoding is broken). */
static char *header_value(const char *h)
{
	size_t n = strlen(h);
	if (n < 12 || strncmp(h, "=?base64?", 9) || strcmp(h + n - 2, "?="))
		return rk_xstrdup(h);
	char *inner = rk_xstrndup(h + 9, n - 11);
	struct rk_buf b;
	rk_buf_init(&b);
	char *out = rk_base64_decode(inner, &b) == 0 ? rk_buf_detach(&b, NULL) : NULL;
	rk_buf_release(&b);
	free(inner);
	return out;
}

/* Streamable HTTP's server validation of a 2026-07-28 request: the
 * MCP-Protocol-Version, Mcp-Method and (tools/call) Mcp-Name headers are
 * there and equal to the body's; else a HeaderMismatch error (-32020). */
static cJSON *header_mismatch(struct rk_mcp *m, const cJSON *params, const char *method, const char *version)
{
	const char *what = NULL, *hv = NULL, *bv = NULL;
	if (!m->opt.header_version || strcmp(m->opt.header_version, version))
		what = "MCP-Protocol-Version", hv = m->opt.header_version, bv = version;
	else if (!m->opt.header_method || strcmp(m->opt.header_method, method))
		what = "Mcp-Method", hv = m->opt.header_method, bv = method;
	else if (!strcmp(method, "tools/call")) {
		const char *name = rk_json_string(params, "name", NULL);
		char *dec = m->opt.header_name ? header_value(m->opt.header_name) : NULL;
		if (!dec || !name || strcmp(dec, name))
			what = "Mcp-Name", hv = m->opt.header_name, bv = name ? name : "(none)";
		free(dec);
	}
	if (!what)
		return NULL;
	char *msg = hv ? rk_xasprintf("Header mismatch: %s header value '%s' does not match body value '%s'", what, hv,
				      bv)
		       : rk_xasprintf("Header mismatch: the %s header is missing (the body says '%s')", what, bv);
	cJSON *e = error_doc(-32020, msg, NULL);
	free(msg);
	return e;
}

/* The modern era's per-request _meta: 0 when the request is modern and
 * fine (*modern set), or legacy (*modern 0); else an error in *error. */
static void check_meta(struct rk_mcp *m, const cJSON *params, const char *method, int *modern, cJSON **error)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, META_VERSION);
	*modern = 0;
	if (!v) {
		if (m->legacy[0] || !strcmp(method, "initialize") || !strcmp(method, "ping"))
			return;
		/* HTTP: a legacy session's requests name their version in a header
		 * (2025-06-18 on) or none at all (2025-03-26) */
		if (!strcmp(m->opt.transport, "http") &&
		    (!m->opt.header_version || strcmp(m->opt.header_version, MODERN_VERSION)))
			return;
		*error = error_doc(RK_MCP_INVALID_PARAMS,
				   "missing _meta." META_VERSION
				   ": send it on every request (2026-07-28), or open with "
				   "initialize (2025-11-25)",
				   NULL);
		return;
	}
	if (!cJSON_IsString(v) || !rk_mcp_version_known(v->valuestring) || strcmp(v->valuestring, MODERN_VERSION)) {
		cJSON *data = cJSON_CreateObject();
		cJSON *sup = cJSON_AddArrayToObject(data, "supported");
		for (size_t i = 0; rk_mcp_versions[i]; i++)
			cJSON_AddItemToArray(sup, cJSON_CreateString(rk_mcp_versions[i]));
		cJSON_AddItemToObject(data, "requested",
				      cJSON_IsString(v) ? cJSON_CreateString(v->valuestring) : cJSON_Duplicate(v, 1));
		*error = error_doc(RK_MCP_UNSUPPORTED_VERSION, "Unsupported protocol version", data);
		return;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(meta, META_CAPS))) {
		*error = error_doc(RK_MCP_INVALID_PARAMS,
				   "missing _meta." META_CAPS " (an object) on a 2026-07-28 request", NULL);
		return;
	}
	if (!strcmp(m->opt.transport, "http") && (*error = header_mismatch(m, params, method, v->valuestring)))
		return;
	*modern = 1;
}

static int http_status(const struct rk_mcp_reply *rep)
{
	if (!rep->replied)
		return 202;
	switch (rep->error_code) {
	case 0:
		return 200;
	case RK_MCP_PARSE_ERROR:
	case RK_MCP_INVALID_REQUEST:
	case RK_MCP_UNSUPPORTED_VERSION:
	case -32020: /* HeaderMismatch */
	case -32021: /* MissingRequiredClientCapability */
		return 400;
	case RK_MCP_INVALID_PARAMS:
		return rep->meta_error ? 400 : 200;
	case RK_MCP_METHOD_NOT_FOUND:
		return rep->modern ? 404 : 200;
	default:
		return 200;
	}
}

void rk_mcp_handle(struct rk_mcp *m, const char *msg, size_t len, struct rk_buf *out, struct rk_mcp_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	struct rk_error e;
	cJSON *result = NULL, *error = NULL;
	const cJSON *id = NULL;
	cJSON *doc = rk_json_parse(msg, len, "message", &e);
	if (!doc) {
		error = error_doc(RK_MCP_PARSE_ERROR, e.message, NULL);
		goto reply;
	}
	if (!cJSON_IsObject(doc)) {
		error = error_doc(RK_MCP_INVALID_REQUEST,
				  cJSON_IsArray(doc) ? "a batch is not a request: send one message at a time"
						     : "a message is a JSON-RPC object",
				  NULL);
		goto reply;
	}
	const cJSON *jid = cJSON_GetObjectItemCaseSensitive(doc, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(doc, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(doc, "params");
	const char *mname = cJSON_GetStringValue(method);
	if (jid &&
	    (cJSON_IsString(jid) || (cJSON_IsNumber(jid) && jid->valuedouble == (double)(int64_t)jid->valuedouble)))
		id = jid;
	if (!method &&
	    (cJSON_GetObjectItemCaseSensitive(doc, "result") || cJSON_GetObjectItemCaseSensitive(doc, "error")))
		goto out; /* a client's response: we ask nothing, so nothing waits for it */
	if (strcmp(rk_json_string(doc, "jsonrpc", ""), "2.0") || !mname || (jid && !id) ||
	    (params && !cJSON_IsObject(params))) {
		error = error_doc(RK_MCP_INVALID_REQUEST,
				  "not a JSON-RPC 2.0 request: it needs \"jsonrpc\":\"2.0\", a string method, an id that "
				  "is a string or an integer, and params that are an object",
				  NULL);
		goto reply;
	}
	if (!jid) /* a notification: initialized, cancelled, ... need no answer */
		goto out;
	rep->was_request = 1;
	int modern = 0;
	check_meta(m, params, mname, &modern, &error);
	if (error) {
		rep->meta_error = 1;
		goto reply;
	}
	rep->modern = m->modern = modern;
	size_t i;
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(methods[i].name, mname) && (modern ? methods[i].modern : methods[i].legacy))
			break;
	if (i == sizeof(methods) / sizeof(methods[0])) {
		char *msgt = rk_xasprintf("Method not found: %s", mname);
		error = error_doc(RK_MCP_METHOD_NOT_FOUND, msgt, NULL);
		free(msgt);
		goto reply;
	}
	methods[i].fn(m, params, &result, &error);
	if (result && modern) {
		cJSON_AddStringToObject(result, "resultType", "complete");
		cJSON *meta = cJSON_AddObjectToObject(result, "_meta");
		cJSON_AddItemToObject(meta, META_SERVER, server_info());
	}
reply:
	if (!result && !error)
		error = error_doc(RK_MCP_INTERNAL_ERROR, "no result", NULL);
	rep->replied = 1;
	rep->error_code = error ? (int)cJSON_GetObjectItemCaseSensitive(error, "code")->valuedouble : 0;
	respond(out, id, result, error);
out:
	rep->http_status = http_status(rep);
	cJSON_Delete(doc);
}
