#include "engine/agent/computer_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/screen/actions.h"
#include "engine/screen/keys.h"
#include "engine/screen/picture.h"
#include "engine/util/buf.h"
#include "engine/util/json.h"

/* ---- which tool ---- */

#define CLAUDE_LONG_EDGE 1568
#define CLAUDE_PIXELS 1150000

static const struct rk_computer_tool_spec spec_types[] = {
	{.api = RK_MODEL_API_MESSAGES,
	 .type = "computer_20250124",
	 .beta = "computer-use-2025-01-24",
	 .max_long_edge = CLAUDE_LONG_EDGE,
	 .max_pixels = CLAUDE_PIXELS},
	{.api = RK_MODEL_API_MESSAGES,
	 .type = "computer_20251124",
	 .beta = "computer-use-2025-11-24",
	 .zoom = 1,
	 .max_long_edge = CLAUDE_LONG_EDGE,
	 .max_pixels = CLAUDE_PIXELS},
	/* GA on the Messages API: no beta header; every member, zoom included, on by default */
	{.api = RK_MODEL_API_MESSAGES,
	 .type = "computer_toolset_20260801",
	 .zoom = 1,
	 .toolset = 1,
	 .max_long_edge = CLAUDE_LONG_EDGE,
	 .max_pixels = CLAUDE_PIXELS},
	/* OpenAI's vision fits an image in 2048x2048, then its short side in 768:
	 * within both, the model sees our pixels and answers in them */
	{.api = RK_MODEL_API_RESPONSES, .type = "computer", .max_long_edge = 2048, .max_short_edge = 768},
	{.api = RK_MODEL_API_RESPONSES, .type = "computer_use_preview", .max_long_edge = 1024, .max_short_edge = 768},
};
#define NTYPES (sizeof(spec_types) / sizeof(spec_types[0]))

static const char *api_name(enum rk_model_api api)
{
	switch (api) {
	case RK_MODEL_API_MESSAGES:
		return "messages";
	case RK_MODEL_API_RESPONSES:
		return "responses";
	default:
		return "chat";
	}
}

int rk_computer_tool_spec_of_type(enum rk_model_api api, const char *type, struct rk_computer_tool_spec *out,
				  struct rk_error *err)
{
	struct rk_buf known;
	for (size_t i = 0; i < NTYPES; i++)
		if (spec_types[i].api == api && type && strcmp(spec_types[i].type, type) == 0) {
			*out = spec_types[i];
			return 0;
		}
	rk_buf_init(&known);
	for (size_t i = 0; i < NTYPES; i++)
		if (spec_types[i].api == api)
			rk_buf_printf(&known, "%s%s", known.len ? ", " : "", spec_types[i].type);
	int rc = known.len ? rk_error_set(err, RK_EINVALID,
					  "computer tool \"%s\" is not one the %s API has (use %s, or none)",
					  type ? type : "", api_name(api), known.data)
			   : rk_error_set(err, RK_EINVALID, "the %s API has no native computer tool (use none)",
					  api_name(api));
	rk_buf_release(&known);
	return rc;
}

/* 1 when a Claude model takes computer_20251124, 0 when computer_20250124,
 * -1 when model is not a Claude name. The family and version are read from
 * the tokens after "claude-" ("opus-4-5", "3-7-sonnet", "sonnet-4.5"); a
 * token of more than two digits is a date and ends the version. */
static int claude_takes_zoom_tool(const char *model)
{
	const char *p = model ? strstr(model, "claude-") : NULL;
	if (!p)
		return -1;
	p += strlen("claude-");
	int ver[2] = {-1, -1}, nver = 0, last_was_major = 0;
	char family[16] = "";
	while (*p && !strchr("@:/", *p)) {
		size_t len = strcspn(p, "-._@:/");
		size_t digits = strspn(p, "0123456789");
		if (len > 0 && digits == len) {
			if (len > 2)
				break;
			int v = atoi(p);
			if (nver == 0)
				ver[nver++] = v, last_was_major = 1;
			else if (nver == 1 && last_was_major)
				ver[nver++] = v, last_was_major = 0;
			else
				break;
		} else if (len > 0) {
			last_was_major = 0;
			if (!family[0] && len < sizeof(family)) {
				memcpy(family, p, len);
				family[len] = 0;
			}
		}
		p += len;
		if (*p == '-' || *p == '.' || *p == '_')
			p++;
	}
	if (nver == 0 || ver[0] >= 5)
		return 1; /* claude-mythos-preview and names to come */
	int minor = nver > 1 ? ver[1] : 0;
	if (ver[0] == 4 && minor >= 6)
		return 1;
	if (ver[0] == 4 && minor == 5)
		return strcmp(family, "opus") == 0;
	return 0;
}

int rk_computer_tool_spec_for(enum rk_model_api api, const char *model, struct rk_computer_tool_spec *out,
			      struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	const char *env = getenv("RAKAZO_COMPUTER_TOOL");
	if (env && *env) {
		if (strcmp(env, "none") == 0)
			return 0;
		if (rk_computer_tool_spec_of_type(api, env, out, err) < 0)
			return rk_error_prefix(err, "RAKAZO_COMPUTER_TOOL");
		return 1;
	}
	const char *type;
	switch (api) {
	case RK_MODEL_API_MESSAGES:
		type = claude_takes_zoom_tool(model) == 1 ? "computer_20251124" : "computer_20250124";
		break;
	case RK_MODEL_API_RESPONSES:
		type = model && strstr(model, "computer-use-preview") ? "computer_use_preview" : "computer";
		break;
	default:
		return 0;
	}
	if (rk_computer_tool_spec_of_type(api, type, out, err) < 0)
		return rk_error_pass(err);
	return 1;
}

void rk_computer_tool_fit(struct rk_computer_tool_spec *spec, int screen_w, int screen_h)
{
	int landscape = screen_w >= screen_h;
	int bw = landscape ? spec->max_long_edge : spec->max_short_edge;
	int bh = landscape ? spec->max_short_edge : spec->max_long_edge;
	int w, h;
	if (spec->max_pixels > 0) {
		/* a long edge and a pixel budget (Claude): the screen's own rule,
		 * whose size observe gives back exactly when asked for as the box */
		rk_picture_fit_pixels(screen_w, screen_h, spec->max_long_edge, spec->max_pixels, &w, &h);
		bw = w, bh = h;
	} else {
		rk_picture_fit(screen_w, screen_h, bw, bh, &w, &h);
	}
	spec->box_w = bw;
	spec->box_h = bh;
	spec->display_w = w;
	spec->display_h = h;
}

void rk_computer_tool_declare(const struct rk_computer_tool_spec *spec, struct rk_model_tool *out)
{
	memset(out, 0, sizeof(*out));
	out->name = "computer";
	out->native_type = spec->type;
	out->native_beta = spec->beta;
	out->display_w = spec->display_w;
	out->display_h = spec->display_h;
	out->enable_zoom = spec->zoom;
}

void rk_computer_step_release(struct rk_computer_step *s)
{
	if (!s)
		return;
	free(s->batch_json);
	free(s->note);
	memset(s, 0, sizeof(*s));
}

/* ---- translation ---- */

struct tx {
	const struct rk_computer_tool_spec *spec;
	cJSON *actions; /* the batch being built */
	char what[64];	/* the vendor action errors name: "left_click", "actions[2] click" */
	struct rk_error *err;
};

/* A member, or NULL when it is absent or null (the SDKs' "?: T | null"). */
static const cJSON *field(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Refuses a non-null member not named in allowed (" a b c "). */
static int check_fields(struct tx *t, const cJSON *obj, const char *allowed)
{
	for (const cJSON *c = obj->child; c; c = c->next) {
		char pat[48];
		if (cJSON_IsNull(c))
			continue;
		if (strlen(c->string) <= 40 && !strchr(c->string, ' ')) {
			snprintf(pat, sizeof(pat), " %s ", c->string);
			if (strstr(allowed, pat))
				continue;
		}
		return rk_error_set(t->err, RK_EINVALID, "%s: unknown field \"%.40s\"", t->what, c->string);
	}
	return 0;
}

static int integer_value(const cJSON *v, int *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e9)
		return -1;
	*out = (int)v->valuedouble;
	return 0;
}

static int check_point(struct tx *t, const char *name, int x, int y)
{
	int w = t->spec->display_w, h = t->spec->display_h;
	if (x < 0 || y < 0 || x >= w || y >= h)
		return rk_error_set(t->err, RK_EINVALID,
				    "%s: %s [%d, %d] is outside the %dx%d screen (x 0..%d, y 0..%d)", t->what, name, x,
				    y, w, h, w - 1, h - 1);
	return 0;
}

/* Anthropic's [x, y]; *has says whether it was given. */
static int get_coordinate(struct tx *t, const cJSON *obj, const char *name, int required, int *has, int *x, int *y)
{
	const cJSON *v = field(obj, name);
	*has = 0;
	*x = *y = 0; /* defined even when absent: callers pass them on with has = 0 */
	if (!v) {
		if (required)
			return rk_error_set(t->err, RK_EINVALID, "%s: %s is required ([x, y])", t->what, name);
		return 0;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || integer_value(cJSON_GetArrayItem(v, 0), x) < 0 ||
	    integer_value(cJSON_GetArrayItem(v, 1), y) < 0)
		return rk_error_set(t->err, RK_EINVALID, "%s: %s must be [x, y] with two integers", t->what, name);
	if (check_point(t, name, *x, *y) < 0)
		return -RK_EINVALID;
	*has = 1;
	return 0;
}

/* OpenAI's x and y members, both required. */
static int get_xy(struct tx *t, const cJSON *obj, int *x, int *y)
{
	const cJSON *vx = field(obj, "x"), *vy = field(obj, "y");
	if (!vx || !vy)
		return rk_error_set(t->err, RK_EINVALID, "%s: x and y are required", t->what);
	if (integer_value(vx, x) < 0)
		return rk_error_set(t->err, RK_EINVALID, "%s: x must be an integer", t->what);
	if (integer_value(vy, y) < 0)
		return rk_error_set(t->err, RK_EINVALID, "%s: y must be an integer", t->what);
	return check_point(t, "point", *x, *y);
}

static int get_string(struct tx *t, const cJSON *obj, const char *name, int required, const char **out)
{
	const cJSON *v = field(obj, name);
	*out = NULL;
	if (!v) {
		if (required)
			return rk_error_set(t->err, RK_EINVALID, "%s: %s is required", t->what, name);
		return 0;
	}
	if (!cJSON_IsString(v))
		return rk_error_set(t->err, RK_EINVALID, "%s: %s must be a string", t->what, name);
	*out = v->valuestring;
	return 0;
}

/* Seconds (a number from 0 to RK_COMPUTER_DURATION_MAX_S) to milliseconds. */
static int get_duration_ms(struct tx *t, const cJSON *obj, int *ms)
{
	const cJSON *v = field(obj, "duration");
	if (!v)
		return rk_error_set(t->err, RK_EINVALID, "%s: duration is required (seconds)", t->what);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= RK_COMPUTER_DURATION_MAX_S))
		return rk_error_set(t->err, RK_EINVALID, "%s: duration must be a number of seconds from 0 to %d",
				    t->what, RK_COMPUTER_DURATION_MAX_S);
	*ms = (int)llround(v->valuedouble * 1000);
	return 0;
}

/* -- key names -- */

struct key_alias {
	const char *from, *to;
};

/* Names the vendors use (xdotool's, OpenAI's upper-case ones, the DOM's)
 * to the spelling rakazo's batches use; engine/screen/keys.c knows more,
 * which pass through as given. */
// clang-format off
static const struct key_alias key_aliases[] = {
	{"ctrl", "ctrl"}, {"control", "ctrl"}, {"ctl", "ctrl"}, {"control_l", "ctrl"},
	{"shift", "shift"}, {"shift_l", "shift"},
	{"alt", "alt"}, {"option", "alt"}, {"opt", "alt"}, {"alt_l", "alt"},
	{"super", "super"}, {"cmd", "super"}, {"command", "super"}, {"meta", "super"}, {"win", "super"},
	{"windows", "super"}, {"super_l", "super"}, {"os", "super"},
	{"enter", "Return"}, {"return", "Return"},
	{"esc", "Escape"}, {"escape", "Escape"},
	{"tab", "Tab"},
	{"space", "space"}, {"spacebar", "space"},
	{"backspace", "BackSpace"}, {"back_space", "BackSpace"},
	{"delete", "Delete"}, {"del", "Delete"},
	{"insert", "Insert"}, {"ins", "Insert"},
	{"home", "Home"}, {"end", "End"},
	{"pageup", "Page_Up"}, {"page_up", "Page_Up"}, {"pgup", "Page_Up"}, {"prior", "Page_Up"},
	{"pagedown", "Page_Down"}, {"page_down", "Page_Down"}, {"pgdn", "Page_Down"}, {"next", "Page_Down"},
	{"left", "Left"}, {"arrowleft", "Left"}, {"up", "Up"}, {"arrowup", "Up"},
	{"right", "Right"}, {"arrowright", "Right"}, {"down", "Down"}, {"arrowdown", "Down"},
	{"capslock", "Caps_Lock"}, {"caps_lock", "Caps_Lock"},
};
// clang-format on

/* Appends one key name (len bytes of name) in rakazo's spelling. */
static int add_key_name(struct tx *t, const char *field_name, const char *name, size_t len, struct rk_buf *out)
{
	const char *a = name, *b = name + len;
	while (a < b && (*a == ' ' || *a == '\t'))
		a++;
	while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
		b--;
	size_t start = out->len;
	if (a == b) {
		if (len == 0 || name[0] != ' ')
			return rk_error_set(t->err, RK_EINVALID, "%s: %s has an empty key name", t->what, field_name);
		rk_buf_adds(out, "space"); /* " " is the space bar */
		return 0;
	}
	size_t n = (size_t)(b - a);
	if (n == 1 && *a == '+') {
		rk_buf_adds(out, "plus");
	} else if (n == 1 && *a >= 'A' && *a <= 'Z') {
		/* "CTRL"+"C" means the C key: its capital would add shift */
		rk_buf_addc(out, (char)(*a - 'A' + 'a'));
	} else {
		size_t i;
		for (i = 0; i < sizeof(key_aliases) / sizeof(key_aliases[0]); i++)
			if (strlen(key_aliases[i].from) == n && strncasecmp(key_aliases[i].from, a, n) == 0)
				break;
		if (i < sizeof(key_aliases) / sizeof(key_aliases[0]))
			rk_buf_adds(out, key_aliases[i].to);
		else
			rk_buf_add(out, a, n);
	}
	struct rk_key_combo combo;
	if (rk_keys_parse(out->data + start, &combo, NULL) < 0 || combo.n != 1)
		return rk_error_set(t->err, RK_EINVALID,
				    "%s: %s has unknown key \"%.*s\" (use names like Return, Escape, Tab, BackSpace, "
				    "Delete, ctrl, shift, alt, super, F1-F12, Page_Up, Left, or one character)",
				    t->what, field_name, (int)(n > 64 ? 64 : n), a);
	return 0;
}

/* Appends one combo ("ctrl+s", "ctrl++") in rakazo's spelling; a "+" that
 * starts a part is the plus key, as in engine/screen/keys.h. */
static int add_combo(struct tx *t, const char *field_name, const char *s, size_t len, struct rk_buf *out)
{
	const char *p = s, *end = s + len;
	if (len == 0)
		return rk_error_set(t->err, RK_EINVALID, "%s: %s is empty", t->what, field_name);
	for (int first = 1;; first = 0) {
		const char *q = p;
		if (q < end && *q == '+')
			q++;
		while (q < end && *q != '+')
			q++;
		if (!first)
			rk_buf_addc(out, '+');
		if (add_key_name(t, field_name, p, (size_t)(q - p), out) < 0)
			return -RK_EINVALID;
		if (q == end)
			return 0;
		p = q + 1;
		if (p == end)
			return rk_error_set(t->err, RK_EINVALID, "%s: %s ends with \"+\" (use \"plus\" for the key)",
					    t->what, field_name);
	}
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* xdotool's key argument: combos separated by white space, pressed in
 * turn; white space next to a "+" belongs to its combo ("ctrl + s"). The
 * caller frees each of *combos and the array. */
static int split_combos(struct tx *t, const char *field_name, const char *s, char ***combos, size_t *n)
{
	size_t len = strlen(s), i = 0;
	*combos = NULL;
	*n = 0;
	while (i < len) {
		while (i < len && is_space(s[i]))
			i++;
		if (i == len)
			break;
		size_t start = i;
		while (i < len) {
			if (!is_space(s[i])) {
				i++;
				continue;
			}
			size_t k = i;
			while (k < len && is_space(s[k]))
				k++;
			if (s[i - 1] == '+' || (k < len && s[k] == '+')) {
				i = k;
				continue;
			}
			break;
		}
		struct rk_buf combo;
		rk_buf_init(&combo);
		if (add_combo(t, field_name, s + start, i - start, &combo) < 0) {
			rk_buf_release(&combo);
			goto fail;
		}
		*combos = rk_xrealloc(*combos, (*n + 1) * sizeof(**combos));
		(*combos)[(*n)++] = rk_buf_detach(&combo, NULL);
	}
	if (*n == 0) {
		/* a lone " " is the space bar */
		if (len > 0 && s[0] == ' ') {
			*combos = rk_xcalloc(1, sizeof(**combos));
			(*combos)[(*n)++] = rk_xstrdup("space");
			return 0;
		}
		rk_error_set(t->err, RK_EINVALID, "%s: %s is empty", t->what, field_name);
		goto fail;
	}
	return 0;
fail:
	for (size_t j = 0; j < *n; j++)
		free((*combos)[j]);
	free(*combos);
	*combos = NULL;
	*n = 0;
	return -RK_EINVALID;
}

static void free_combos(char **combos, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(combos[i]);
	free(combos);
}

/* One combo from Anthropic's text (a click's modifiers, hold_key); *out is
 * malloc'd. */
static int one_combo(struct tx *t, const char *field_name, const char *s, char **out)
{
	char **combos;
	size_t n;
	*out = NULL;
	if (split_combos(t, field_name, s, &combos, &n) < 0)
		return -RK_EINVALID;
	if (n != 1) {
		free_combos(combos, n);
		return rk_error_set(t->err, RK_EINVALID, "%s: %s must be one key combination like \"ctrl+shift\"",
				    t->what, field_name);
	}
	*out = combos[0];
	free(combos);
	return 0;
}

/* OpenAI's keys array as one combo (an element may itself be "CTRL+C");
 * *out is malloc'd, NULL when keys is absent, null or empty and optional. */
static int keys_combo(struct tx *t, const cJSON *obj, int required, char **out)
{
	const cJSON *keys = field(obj, "keys");
	*out = NULL;
	if (keys && !cJSON_IsArray(keys))
		return rk_error_set(t->err, RK_EINVALID, "%s: keys must be an array of key names", t->what);
	if (!keys || cJSON_GetArraySize(keys) == 0) {
		if (required)
			return rk_error_set(t->err, RK_EINVALID, "%s: keys is required (like [\"CTRL\", \"C\"])",
					    t->what);
		return 0;
	}
	struct rk_buf b;
	rk_buf_init(&b);
	for (const cJSON *k = keys->child; k; k = k->next) {
		if (!cJSON_IsString(k)) {
			rk_buf_release(&b);
			return rk_error_set(t->err, RK_EINVALID, "%s: keys must be an array of key names", t->what);
		}
		if (b.len)
			rk_buf_addc(&b, '+');
		size_t len = strlen(k->valuestring);
		int rc = len > 1 && strchr(k->valuestring, '+') ? add_combo(t, "keys", k->valuestring, len, &b)
								: add_key_name(t, "keys", k->valuestring, len, &b);
		if (rc < 0) {
			rk_buf_release(&b);
			return -RK_EINVALID;
		}
	}
	struct rk_key_combo combo;
	if (rk_keys_parse(b.data, &combo, NULL) < 0) {
		rk_error_set(t->err, RK_EINVALID, "%s: keys has more than %d keys", t->what, RK_KEYS_MAX);
		rk_buf_release(&b);
		return -RK_EINVALID;
	}
	*out = rk_buf_detach(&b, NULL);
	return 0;
}

/* -- the batch -- */

static cJSON *act(struct tx *t, const char *kind)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "action", kind);
	cJSON_AddItemToArray(t->actions, a);
	return a;
}

static void act_at(cJSON *a, int has, int x, int y)
{
	if (!has)
		return;
	cJSON_AddNumberToObject(a, "x", x);
	cJSON_AddNumberToObject(a, "y", y);
}

static void act_keys(struct tx *t, const char *kind, const char *combo)
{
	if (combo)
		cJSON_AddStringToObject(act(t, kind), "keys", combo);
}

static void act_wait(struct tx *t, int ms)
{
	/* a wait action takes at most RK_WAIT_MS_MAX: a longer one is several */
	while (ms > 0) {
		int now = ms > RK_WAIT_MS_MAX ? RK_WAIT_MS_MAX : ms;
		cJSON_AddNumberToObject(act(t, "wait"), "ms", now);
		ms -= now;
	}
}

static void act_click(struct tx *t, int has, int x, int y, const char *button, int count)
{
	cJSON *a = act(t, "click");
	act_at(a, has, x, y);
	cJSON_AddStringToObject(a, "button", button);
	cJSON_AddNumberToObject(a, "count", count);
}

static void act_drag(struct tx *t, const int *xy, int npoints)
{
	cJSON *a = act(t, "drag");
	cJSON *path = cJSON_AddArrayToObject(a, "path");
	for (int i = 0; i < npoints; i++) {
		cJSON *p = cJSON_CreateArray();
		cJSON_AddItemToArray(p, cJSON_CreateNumber(xy[2 * i]));
		cJSON_AddItemToArray(p, cJSON_CreateNumber(xy[2 * i + 1]));
		cJSON_AddItemToArray(path, p);
	}
	cJSON_AddStringToObject(a, "button", "left");
}

/* Type actions of at most RK_TYPE_TEXT_MAX characters each. */
static int act_type(struct tx *t, const char *text)
{
	size_t len = strlen(text), i = 0, start = 0, chars = 0, total = 0;
	if (len == 0)
		return rk_error_set(t->err, RK_EINVALID, "%s: text is empty", t->what);
	while (i < len) {
		uint32_t cp;
		int n = rk_utf8_next(text + i, len - i, &cp);
		if (n < 0)
			return rk_error_set(t->err, RK_EINVALID, "%s: text is not valid UTF-8 (byte %zu)", t->what, i);
		if (!rk_keysym_from_codepoint(cp))
			return rk_error_set(t->err, RK_EINVALID,
					    "%s: text has U+%04X at character %zu, which cannot be typed", t->what,
					    (unsigned)cp, total);
		i += (size_t)n;
		total++;
		if (++chars == RK_TYPE_TEXT_MAX || i == len) {
			char *chunk = rk_xstrndup(text + start, i - start);
			cJSON_AddStringToObject(act(t, "type"), "text", chunk);
			free(chunk);
			start = i;
			chars = 0;
		}
	}
	return 0;
}

/* Scroll actions for dx/dy notches of any size (each action takes 20). */
static void act_scroll(struct tx *t, int has, int x, int y, int dx, int dy)
{
	while (dx || dy) {
		int sx = dx > 20 ? 20 : dx < -20 ? -20 : dx;
		int sy = dy > 20 ? 20 : dy < -20 ? -20 : dy;
		cJSON *a = act(t, "scroll");
		act_at(a, has, x, y);
		has = 0; /* the pointer is there now */
		cJSON_AddNumberToObject(a, "dx", sx);
		cJSON_AddNumberToObject(a, "dy", sy);
		dx -= sx;
		dy -= sy;
	}
}

/* Parses and checks the actions added since index from with the screen
 * engine's own parser, so a batch this returns always runs. */
static int check_added(struct tx *t, int from)
{
	int n = cJSON_GetArraySize(t->actions);
	for (int i = from; i < n; i++) {
		struct rk_action a;
		struct rk_error e;
		if (rk_action_from_json(cJSON_GetArrayItem(t->actions, i), (size_t)i, &a, &e) < 0 ||
		    rk_action_check(&a, (size_t)i, t->spec->display_w, t->spec->display_h, &e) < 0) {
			rk_action_release(&a);
			return rk_error_set(t->err, RK_EINVALID, "%s: %s", t->what, e.message);
		}
		rk_action_release(&a);
	}
	return 0;
}

/* -- Anthropic -- */

enum anthropic_action {
	A_KEY,
	A_HOLD_KEY,
	A_TYPE,
	A_CURSOR_POSITION,
	A_MOUSE_MOVE,
	A_LEFT_MOUSE_DOWN,
	A_LEFT_MOUSE_UP,
	A_LEFT_CLICK,
	A_LEFT_CLICK_DRAG,
	A_RIGHT_CLICK,
	A_MIDDLE_CLICK,
	A_DOUBLE_CLICK,
	A_TRIPLE_CLICK,
	A_SCROLL,
	A_WAIT,
	A_SCREENSHOT,
	A_ZOOM,
	A_COUNT
};

/* The actions and the fields each takes (besides "action"), as the SDK's
 * computer toolset members name them; "key" is an older spelling of a
 * click's modifier "text". */
static const struct {
	const char *name, *fields;
} anthropic_actions[A_COUNT] = {
	[A_KEY] = {"key", " action text repeat "},
	[A_HOLD_KEY] = {"hold_key", " action text duration "},
	[A_TYPE] = {"type", " action text "},
	[A_CURSOR_POSITION] = {"cursor_position", " action "},
	[A_MOUSE_MOVE] = {"mouse_move", " action coordinate "},
	[A_LEFT_MOUSE_DOWN] = {"left_mouse_down", " action "},
	[A_LEFT_MOUSE_UP] = {"left_mouse_up", " action "},
	[A_LEFT_CLICK] = {"left_click", " action coordinate text key "},
	[A_LEFT_CLICK_DRAG] = {"left_click_drag", " action start_coordinate coordinate text key "},
	[A_RIGHT_CLICK] = {"right_click", " action coordinate text key "},
	[A_MIDDLE_CLICK] = {"middle_click", " action coordinate text key "},
	[A_DOUBLE_CLICK] = {"double_click", " action coordinate text key "},
	[A_TRIPLE_CLICK] = {"triple_click", " action coordinate text key "},
	[A_SCROLL] = {"scroll", " action coordinate scroll_direction scroll_amount text key "},
	[A_WAIT] = {"wait", " action duration "},
	[A_SCREENSHOT] = {"screenshot", " action "},
	[A_ZOOM] = {"zoom", " action region "},
};

#define SCROLL_AMOUNT_MAX 200

/* The modifiers a click or scroll holds: "text", or its older name "key". */
static int anthropic_modifiers(struct tx *t, const cJSON *in, char **mods)
{
	const char *s, *name = field(in, "text") ? "text" : "key";
	*mods = NULL;
	if (get_string(t, in, name, 0, &s) < 0)
		return -RK_EINVALID;
	if (!s)
		return 0;
	return one_combo(t, name, s, mods);
}

static int anthropic_key(struct tx *t, const cJSON *in)
{
	const char *text;
	int64_t repeat;
	char **combos;
	size_t n;
	if (get_string(t, in, "text", 1, &text) < 0 ||
	    rk_json_get_int(in, "repeat", 1, RK_ACTIONS_MAX, 1, &repeat, t->what, t->err) < 0 ||
	    split_combos(t, "text", text, &combos, &n) < 0)
		return -RK_EINVALID;
	for (int64_t r = 0; r < repeat; r++)
		for (size_t i = 0; i < n; i++)
			act_keys(t, "key", combos[i]);
	free_combos(combos, n);
	return 0;
}

static int anthropic_hold_key(struct tx *t, const cJSON *in)
{
	const char *text;
	char *combo;
	int ms;
	if (get_string(t, in, "text", 1, &text) < 0 || get_duration_ms(t, in, &ms) < 0 ||
	    one_combo(t, "text", text, &combo) < 0)
		return -RK_EINVALID;
	act_keys(t, "key_down", combo);
	act_wait(t, ms);
	act_keys(t, "key_up", combo);
	free(combo);
	return 0;
}

static int anthropic_click(struct tx *t, const cJSON *in, const char *button, int count)
{
	int has, x, y;
	char *mods;
	if (get_coordinate(t, in, "coordinate", 0, &has, &x, &y) < 0 || anthropic_modifiers(t, in, &mods) < 0)
		return -RK_EINVALID;
	act_keys(t, "key_down", mods);
	act_click(t, has, x, y, button, count);
	act_keys(t, "key_up", mods);
	free(mods);
	return 0;
}

static int anthropic_drag(struct tx *t, const cJSON *in)
{
	int has, xy[4];
	char *mods;
	if (get_coordinate(t, in, "start_coordinate", 1, &has, &xy[0], &xy[1]) < 0 ||
	    get_coordinate(t, in, "coordinate", 1, &has, &xy[2], &xy[3]) < 0 || anthropic_modifiers(t, in, &mods) < 0)
		return -RK_EINVALID;
	act_keys(t, "key_down", mods);
	act_drag(t, xy, 2);
	act_keys(t, "key_up", mods);
	free(mods);
	return 0;
}

static int anthropic_scroll(struct tx *t, const cJSON *in)
{
	int has, x, y;
	const char *dir;
	int64_t amount;
	char *mods;
	if (get_coordinate(t, in, "coordinate", 0, &has, &x, &y) < 0 ||
	    get_string(t, in, "scroll_direction", 1, &dir) < 0)
		return -RK_EINVALID;
	int dx = 0, dy = 0;
	if (strcmp(dir, "up") == 0)
		dy = -1;
	else if (strcmp(dir, "down") == 0)
		dy = 1;
	else if (strcmp(dir, "left") == 0)
		dx = -1;
	else if (strcmp(dir, "right") == 0)
		dx = 1;
	else
		return rk_error_set(t->err, RK_EINVALID, "%s: scroll_direction must be up, down, left or right",
				    t->what);
	if (!field(in, "scroll_amount"))
		return rk_error_set(t->err, RK_EINVALID, "%s: scroll_amount is required (wheel clicks)", t->what);
	if (rk_json_get_int(in, "scroll_amount", 1, SCROLL_AMOUNT_MAX, 0, &amount, t->what, t->err) < 0 ||
	    anthropic_modifiers(t, in, &mods) < 0)
		return -RK_EINVALID;
	act_keys(t, "key_down", mods);
	act_scroll(t, has, x, y, dx * (int)amount, dy * (int)amount);
	act_keys(t, "key_up", mods);
	free(mods);
	return 0;
}

static int anthropic_zoom(struct tx *t, const cJSON *in, struct rk_computer_step *out)
{
	const cJSON *r = field(in, "region");
	int v[4];
	if (!t->spec->zoom)
		return rk_error_set(t->err, RK_EINVALID, "%s: zoom is not enabled for the %s tool", t->what,
				    t->spec->type);
	if (!r)
		return rk_error_set(t->err, RK_EINVALID, "%s: region is required ([x0, y0, x1, y1])", t->what);
	if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 4)
		return rk_error_set(t->err, RK_EINVALID, "%s: region must be [x0, y0, x1, y1] with four integers",
				    t->what);
	for (int i = 0; i < 4; i++)
		if (integer_value(cJSON_GetArrayItem(r, i), &v[i]) < 0)
			return rk_error_set(t->err, RK_EINVALID,
					    "%s: region must be [x0, y0, x1, y1] with four integers", t->what);
	int w = t->spec->display_w, h = t->spec->display_h;
	if (v[0] < 0 || v[1] < 0 || v[0] >= v[2] || v[1] >= v[3] || v[2] > w || v[3] > h)
		return rk_error_set(t->err, RK_EINVALID,
				    "%s: region [%d, %d, %d, %d] must have 0 <= x0 < x1 <= %d and 0 <= y0 < y1 <= %d",
				    t->what, v[0], v[1], v[2], v[3], w, h);
	out->kind = RK_COMPUTER_ZOOM;
	memcpy(out->region, v, sizeof(v));
	return 0;
}

static int anthropic_translate(struct tx *t, const struct rk_model_tool_call *call, const cJSON *in,
			       struct rk_computer_step *out)
{
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(in, "action");
	const char *name;
	snprintf(t->what, sizeof(t->what), "computer");
	if (kind) {
		if (!cJSON_IsString(kind))
			return rk_error_set(t->err, RK_EINVALID, "computer: action must be a string");
		name = kind->valuestring;
	} else if (call->name && strcmp(call->name, "computer") != 0) {
		name = call->name; /* a toolset member's tool_use: its name is the action */
	} else {
		return rk_error_set(t->err, RK_EINVALID, "computer: action is required (left_click, type, key ...)");
	}
	int k;
	for (k = 0; k < A_COUNT; k++)
		if (strcmp(name, anthropic_actions[k].name) == 0)
			break;
	if (k == A_COUNT)
		return rk_error_set(t->err, RK_EINVALID,
				    "computer: unknown action \"%.40s\" (expected key, hold_key, type, "
				    "cursor_position, mouse_move, left_mouse_down, left_mouse_up, left_click, "
				    "left_click_drag, right_click, middle_click, double_click, triple_click, scroll, "
				    "wait, screenshot%s)",
				    name, t->spec->zoom ? ", zoom" : "");
	snprintf(t->what, sizeof(t->what), "%s", anthropic_actions[k].name);
	if (check_fields(t, in, anthropic_actions[k].fields) < 0)
		return -RK_EINVALID;
	int has, x, y, rc = 0;
	out->kind = RK_COMPUTER_ACT;
	switch ((enum anthropic_action)k) {
	case A_KEY:
		return anthropic_key(t, in);
	case A_HOLD_KEY:
		return anthropic_hold_key(t, in);
	case A_TYPE: {
		const char *text;
		if (get_string(t, in, "text", 1, &text) < 0)
			return -RK_EINVALID;
		return act_type(t, text);
	}
	case A_CURSOR_POSITION:
		out->kind = RK_COMPUTER_CURSOR_POSITION;
		return 0;
	case A_MOUSE_MOVE:
		if ((rc = get_coordinate(t, in, "coordinate", 1, &has, &x, &y)) == 0)
			act_at(act(t, "move"), 1, x, y);
		return rc;
	case A_LEFT_MOUSE_DOWN:
	case A_LEFT_MOUSE_UP:
		cJSON_AddStringToObject(act(t, k == A_LEFT_MOUSE_DOWN ? "down" : "up"), "button", "left");
		return 0;
	case A_LEFT_CLICK:
		return anthropic_click(t, in, "left", 1);
	case A_RIGHT_CLICK:
		return anthropic_click(t, in, "right", 1);
	case A_MIDDLE_CLICK:
		return anthropic_click(t, in, "middle", 1);
	case A_DOUBLE_CLICK:
		return anthropic_click(t, in, "left", 2);
	case A_TRIPLE_CLICK:
		return anthropic_click(t, in, "left", 3);
	case A_LEFT_CLICK_DRAG:
		return anthropic_drag(t, in);
	case A_SCROLL:
		return anthropic_scroll(t, in);
	case A_WAIT:
		out->kind = RK_COMPUTER_WAIT;
		return get_duration_ms(t, in, &out->wait_ms);
	case A_SCREENSHOT:
		out->kind = RK_COMPUTER_SCREENSHOT;
		return 0;
	case A_ZOOM:
		return anthropic_zoom(t, in, out);
	default:
		return rk_error_set(t->err, RK_EINVALID, "computer: unknown action");
	}
}

/* -- OpenAI -- */

enum openai_action {
	O_CLICK,
	O_DOUBLE_CLICK,
	O_DRAG,
	O_KEYPRESS,
	O_MOVE,
	O_SCREENSHOT,
	O_SCROLL,
	O_TYPE,
	O_WAIT,
	O_COUNT
};

static const struct {
	const char *name, *fields;
} openai_actions[O_COUNT] = {
	[O_CLICK] = {"click", " type button x y keys "},
	[O_DOUBLE_CLICK] = {"double_click", " type x y keys "},
	[O_DRAG] = {"drag", " type path keys "},
	[O_KEYPRESS] = {"keypress", " type keys "},
	[O_MOVE] = {"move", " type x y keys "},
	[O_SCREENSHOT] = {"screenshot", " type "},
	[O_SCROLL] = {"scroll", " type x y scroll_x scroll_y keys "},
	[O_TYPE] = {"type", " type text "},
	[O_WAIT] = {"wait", " type "},
};

/* Scroll pixels to wheel notches: rounded, at least one, sign kept. */
static int notches(double px)
{
	if (px == 0)
		return 0;
	double n = fabs(px) / RK_COMPUTER_SCROLL_PX_PER_NOTCH;
	int v = n < 1 ? 1 : n > 20 ? 20 : (int)llround(n);
	return px < 0 ? -v : v;
}

static int openai_drag(struct tx *t, const cJSON *a)
{
	const cJSON *path = field(a, "path");
	int n = path && cJSON_IsArray(path) ? cJSON_GetArraySize(path) : -1;
	if (!path)
		return rk_error_set(t->err, RK_EINVALID, "%s: path is required ([{\"x\":..,\"y\":..}, ...])", t->what);
	if (n < 2 || n > RK_DRAG_POINTS_MAX)
		return rk_error_set(t->err, RK_EINVALID, "%s: path must be an array of 2 to %d points", t->what,
				    RK_DRAG_POINTS_MAX);
	int *xy = rk_xcalloc((size_t)n * 2, sizeof(*xy));
	int i = 0, rc = 0;
	for (const cJSON *p = path->child; p && rc == 0; p = p->next, i++) {
		char label[32];
		snprintf(label, sizeof(label), "path[%d]", i);
		if (!cJSON_IsObject(p) || integer_value(field(p, "x"), &xy[2 * i]) < 0 ||
		    integer_value(field(p, "y"), &xy[2 * i + 1]) < 0)
			rc = rk_error_set(t->err, RK_EINVALID, "%s: %s must be {\"x\":..,\"y\":..} with integers",
					  t->what, label);
		else
			rc = check_point(t, label, xy[2 * i], xy[2 * i + 1]);
	}
	if (rc == 0)
		act_drag(t, xy, n);
	free(xy);
	return rc;
}

/* One action object into t's batch. *shot is set for a screenshot, which
 * adds nothing. */
static int openai_action(struct tx *t, const cJSON *a, const char *label, int *shot)
{
	const char *type;
	snprintf(t->what, sizeof(t->what), "%s", label);
	*shot = 0;
	if (!cJSON_IsObject(a))
		return rk_error_set(t->err, RK_EINVALID, "%s: must be an object like {\"type\":\"click\",...}", label);
	if (get_string(t, a, "type", 1, &type) < 0)
		return -RK_EINVALID;
	int k;
	for (k = 0; k < O_COUNT; k++)
		if (strcmp(type, openai_actions[k].name) == 0)
			break;
	if (k == O_COUNT)
		return rk_error_set(t->err, RK_EINVALID,
				    "%s: unknown action type \"%.40s\" (expected click, double_click, drag, keypress, "
				    "move, screenshot, scroll, type or wait)",
				    label, type);
	snprintf(t->what, sizeof(t->what), "%s %s", label, openai_actions[k].name);
	if (check_fields(t, a, openai_actions[k].fields) < 0)
		return -RK_EINVALID;
	int x = 0, y = 0, from = cJSON_GetArraySize(t->actions);
	char *mods = NULL;
	const char *s;
	if ((k == O_CLICK || k == O_DOUBLE_CLICK || k == O_MOVE || k == O_SCROLL) && get_xy(t, a, &x, &y) < 0)
		return -RK_EINVALID;
	if (k != O_KEYPRESS && keys_combo(t, a, 0, &mods) < 0)
		return -RK_EINVALID;
	act_keys(t, "key_down", mods);
	int rc = 0;
	switch ((enum openai_action)k) {
	case O_CLICK: {
		const char *button;
		if ((rc = get_string(t, a, "button", 0, &button)) < 0)
			break;
		if (!button || strcmp(button, "left") == 0 || strcmp(button, "right") == 0)
			act_click(t, 1, x, y, button ? button : "left", 1);
		else if (strcmp(button, "wheel") == 0)
			act_click(t, 1, x, y, "middle", 1);
		else if (strcmp(button, "back") == 0 || strcmp(button, "forward") == 0) {
			/* no buttons 8 and 9 in the act schema: the keys a browser
			 * and most file managers take for them */
			act_at(act(t, "move"), 1, x, y);
			act_keys(t, "key", strcmp(button, "back") == 0 ? "alt+Left" : "alt+Right");
		} else
			rc = rk_error_set(t->err, RK_EINVALID, "%s: button must be left, right, wheel, back or forward",
					  t->what);
		break;
	}
	case O_DOUBLE_CLICK:
		act_click(t, 1, x, y, "left", 2);
		break;
	case O_DRAG:
		rc = openai_drag(t, a);
		break;
	case O_KEYPRESS:
		if ((rc = keys_combo(t, a, 1, &mods)) == 0)
			act_keys(t, "key", mods);
		free(mods);
		mods = NULL;
		break;
	case O_MOVE:
		act_at(act(t, "move"), 1, x, y);
		break;
	case O_SCREENSHOT:
		*shot = 1;
		break;
	case O_SCROLL: {
		const cJSON *sx = field(a, "scroll_x"), *sy = field(a, "scroll_y");
		if ((sx && !cJSON_IsNumber(sx)) || (sy && !cJSON_IsNumber(sy))) {
			rc = rk_error_set(t->err, RK_EINVALID, "%s: scroll_x and scroll_y must be numbers (pixels)",
					  t->what);
			break;
		}
		int dx = notches(sx ? sx->valuedouble : 0), dy = notches(sy ? sy->valuedouble : 0);
		if (dx || dy)
			act_scroll(t, 1, x, y, dx, dy);
		else
			act_at(act(t, "move"), 1, x, y); /* nothing to scroll: still point there */
		break;
	}
	case O_TYPE:
		if ((rc = get_string(t, a, "text", 1, &s)) == 0)
			rc = act_type(t, s);
		break;
	case O_WAIT:
		act_wait(t, RK_COMPUTER_WAIT_MS_OPENAI);
		break;
	default:
		rc = rk_error_set(t->err, RK_EINVALID, "%s: unknown action", t->what);
	}
	act_keys(t, "key_up", mods);
	free(mods);
	if (rc < 0)
		return rc;
	return check_added(t, from);
}

static int openai_translate(struct tx *t, const cJSON *in, struct rk_computer_step *out)
{
	const cJSON *list = field(in, "actions"), *one = field(in, "action");
	snprintf(t->what, sizeof(t->what), "computer");
	if (check_fields(t, in, " actions action ") < 0)
		return -RK_EINVALID;
	if (list && one)
		return rk_error_set(t->err, RK_EINVALID, "computer: give actions or action, not both");
	if (!list && !one)
		return rk_error_set(t->err, RK_EINVALID, "computer: actions is required");
	int n = 1;
	if (list) {
		if (!cJSON_IsArray(list))
			return rk_error_set(t->err, RK_EINVALID, "computer: actions must be an array");
		if ((n = cJSON_GetArraySize(list)) == 0)
			return rk_error_set(t->err, RK_EINVALID, "computer: actions is empty");
	}
	/* a lone wait or screenshot is a step of its own */
	const cJSON *first = list ? list->child : one;
	const char *type = cJSON_IsObject(first) ? rk_json_string(first, "type", NULL) : NULL;
	if (n == 1 && type && strcmp(type, "wait") == 0) {
		int shot;
		if (openai_action(t, first, list ? "actions[0]" : "action", &shot) < 0)
			return -RK_EINVALID;
		cJSON_Delete(t->actions); /* the loop waits itself */
		t->actions = cJSON_CreateArray();
		out->kind = RK_COMPUTER_WAIT;
		out->wait_ms = RK_COMPUTER_WAIT_MS_OPENAI;
		return 0;
	}
	int i = 0;
	for (const cJSON *a = first; a; a = list ? a->next : NULL, i++) {
		char label[32];
		int shot;
		if (list)
			snprintf(label, sizeof(label), "actions[%d]", i);
		else
			snprintf(label, sizeof(label), "action");
		if (openai_action(t, a, label, &shot) < 0)
			return -RK_EINVALID;
		if (shot) {
			if (i + 1 < n)
				out->note = rk_xasprintf(
					"actions[%d] is a screenshot: the screenshot shows the screen after the actions "
					"before it, and actions[%d] to actions[%d] were not run; send them again if "
					"they are still wanted",
					i, i + 1, n - 1);
			break;
		}
	}
	out->kind = cJSON_GetArraySize(t->actions) ? RK_COMPUTER_ACT : RK_COMPUTER_SCREENSHOT;
	return 0;
}

int rk_computer_tool_translate(const struct rk_computer_tool_spec *spec, const struct rk_model_tool_call *call,
			       struct rk_computer_step *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (spec->display_w < 1 || spec->display_h < 1)
		return rk_error_set(err, RK_EINVALID, "computer: the tool's display size is not set");
	const char *args = call->arguments && *call->arguments ? call->arguments : "{}";
	cJSON *in = rk_json_parse(args, strlen(args), "computer", err);
	if (!in)
		return -RK_EINVALID;
	struct tx t = {.spec = spec, .actions = cJSON_CreateArray(), .err = err};
	int rc;
	if (!cJSON_IsObject(in))
		rc = rk_error_set(err, RK_EINVALID, "computer: the input must be an object");
	else if (spec->api == RK_MODEL_API_MESSAGES)
		rc = anthropic_translate(&t, call, in, out);
	else if (spec->api == RK_MODEL_API_RESPONSES)
		rc = openai_translate(&t, in, out);
	else
		rc = rk_error_set(err, RK_EINVALID, "computer: the %s API has no native computer tool",
				  api_name(spec->api));
	if (rc == 0 && spec->api == RK_MODEL_API_MESSAGES && out->kind == RK_COMPUTER_ACT)
		rc = check_added(&t, 0);
	int n = cJSON_GetArraySize(t.actions);
	if (rc == 0 && out->kind == RK_COMPUTER_ACT && n > RK_ACTIONS_MAX)
		rc = rk_error_set(err, RK_EINVALID,
				  "computer: the call needs %d screen actions, more than the %d one batch takes "
				  "(send fewer at a time)",
				  n, RK_ACTIONS_MAX);
	if (rc == 0 && out->kind == RK_COMPUTER_ACT) {
		cJSON *batch = cJSON_CreateObject();
		cJSON_AddItemToObject(batch, "actions", t.actions);
		t.actions = NULL;
		out->batch_json = cJSON_PrintUnformatted(batch);
		cJSON_Delete(batch);
		if (!out->batch_json)
			abort();
	}
	cJSON_Delete(t.actions);
	cJSON_Delete(in);
	if (rc < 0) {
		rk_computer_step_release(out);
		return rc;
	}
	return 0;
}
