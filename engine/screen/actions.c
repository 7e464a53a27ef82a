#include "engine/screen/actions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"
#include "engine/util/json.h"

static const char *const kind_names[RK_ACT_KIND_COUNT] = {
	[RK_ACT_MOVE] = "move",
	[RK_ACT_CLICK] = "click",
	[RK_ACT_DOUBLE_CLICK] = "double_click",
	[RK_ACT_RIGHT_CLICK] = "right_click",
	[RK_ACT_DOWN] = "down",
	[RK_ACT_UP] = "up",
	[RK_ACT_DRAG] = "drag",
	[RK_ACT_SCROLL] = "scroll",
	[RK_ACT_TYPE] = "type",
	[RK_ACT_KEY] = "key",
	[RK_ACT_KEY_DOWN] = "key_down",
	[RK_ACT_KEY_UP] = "key_up",
	[RK_ACT_WAIT] = "wait",
};

/* The fields each kind takes besides "action", space-separated. */
static const char *const kind_fields[RK_ACT_KIND_COUNT] = {
	[RK_ACT_MOVE] = " x y ",
	[RK_ACT_CLICK] = " x y button count ",
	[RK_ACT_DOUBLE_CLICK] = " x y button ",
	[RK_ACT_RIGHT_CLICK] = " x y ",
	[RK_ACT_DOWN] = " x y button ",
	[RK_ACT_UP] = " x y button ",
	[RK_ACT_DRAG] = " path button ",
	[RK_ACT_SCROLL] = " x y dx dy direction amount ",
	[RK_ACT_TYPE] = " text ",
	[RK_ACT_KEY] = " keys ",
	[RK_ACT_KEY_DOWN] = " keys ",
	[RK_ACT_KEY_UP] = " keys ",
	[RK_ACT_WAIT] = " ms ",
};

#define COORD_MAX 65535

const char *rk_action_kind_name(enum rk_action_kind kind)
{
	return (unsigned)kind < RK_ACT_KIND_COUNT ? kind_names[kind] : "unknown";
}

const char *rk_button_name(enum rk_button b)
{
	switch (b) {
	case RK_BUTTON_MIDDLE:
		return "middle";
	case RK_BUTTON_RIGHT:
		return "right";
	default:
		return "left";
	}
}

void rk_action_release(struct rk_action *a)
{
	if (!a)
		return;
	free(a->path);
	free(a->text);
	free(a->keys_spec);
	memset(a, 0, sizeof(*a));
}

void rk_action_batch_release(struct rk_action_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		rk_action_release(&b->actions[i]);
	free(b->actions);
	b->actions = NULL;
	b->n = 0;
	b->settle_ms = -1;
	b->observe = -1;
}

static int field_allowed(enum rk_action_kind kind, const char *name)
{
	char pat[64];
	if (strlen(name) > 40 || strchr(name, ' '))
		return 0;
	snprintf(pat, sizeof(pat), " %s ", name);
	return strstr(kind_fields[kind], pat) != NULL;
}

static int get_point(const cJSON *obj, const char *what, int required, int *has, struct rk_point *p,
		     struct rk_error *err)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, "x");
	const cJSON *y = cJSON_GetObjectItemCaseSensitive(obj, "y");
	*has = 0;
	if (!x && !y) {
		if (required)
			return rk_error_set(err, RK_EINVALID, "%s: x and y are required", what);
		return 0;
	}
	if (!x || !y)
		return rk_error_set(err, RK_EINVALID, "%s: x and y go together (give both or neither)", what);
	int64_t vx, vy;
	int rc = rk_json_get_int(obj, "x", 0, COORD_MAX, 0, &vx, what, err);
	if (rc < 0)
		return rc;
	if ((rc = rk_json_get_int(obj, "y", 0, COORD_MAX, 0, &vy, what, err)) < 0)
		return rc;
	if (cJSON_IsNull(x) || cJSON_IsNull(y))
		return rk_error_set(err, RK_EINVALID, "%s: x and y must be integers", what);
	p->x = (int)vx;
	p->y = (int)vy;
	*has = 1;
	return 0;
}

static int get_button(const cJSON *obj, const char *what, enum rk_button *out, struct rk_error *err)
{
	const char *s;
	int rc = rk_json_get_string(obj, "button", 0, &s, what, err);
	if (rc < 0)
		return rc;
	if (!s || strcmp(s, "left") == 0)
		*out = RK_BUTTON_LEFT;
	else if (strcmp(s, "middle") == 0)
		*out = RK_BUTTON_MIDDLE;
	else if (strcmp(s, "right") == 0)
		*out = RK_BUTTON_RIGHT;
	else
		return rk_error_set(err, RK_EINVALID, "%s: button must be left, middle or right", what);
	return 0;
}

static int path_point(const cJSON *item, size_t k, const char *what, struct rk_point *p, struct rk_error *err)
{
	const cJSON *vx = NULL, *vy = NULL;
	if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 2) {
		vx = cJSON_GetArrayItem(item, 0);
		vy = cJSON_GetArrayItem(item, 1);
	} else if (cJSON_IsObject(item)) {
		for (const cJSON *c = item->child; c; c = c->next)
			if (strcmp(c->string, "x") != 0 && strcmp(c->string, "y") != 0)
				return rk_error_set(err, RK_EINVALID, "%s: path[%zu] has unknown field \"%s\"", what, k,
						    c->string);
		vx = cJSON_GetObjectItemCaseSensitive(item, "x");
		vy = cJSON_GetObjectItemCaseSensitive(item, "y");
	}
	if (!vx || !vy || !cJSON_IsNumber(vx) || !cJSON_IsNumber(vy) || vx->valuedouble != floor(vx->valuedouble) ||
	    vy->valuedouble != floor(vy->valuedouble))
		return rk_error_set(err, RK_EINVALID,
				    "%s: path[%zu] must be [x, y] or {\"x\":..,\"y\":..} with integers", what, k);
	if (vx->valuedouble < 0 || vx->valuedouble > COORD_MAX || vy->valuedouble < 0 || vy->valuedouble > COORD_MAX)
		return rk_error_set(err, RK_EINVALID, "%s: path[%zu] coordinates must be from 0 to %d", what, k,
				    COORD_MAX);
	p->x = (int)vx->valuedouble;
	p->y = (int)vy->valuedouble;
	return 0;
}

static int parse_scroll(const cJSON *obj, const char *what, struct rk_action *a, struct rk_error *err)
{
	int has_delta = cJSON_GetObjectItemCaseSensitive(obj, "dx") || cJSON_GetObjectItemCaseSensitive(obj, "dy");
	const cJSON *dir = cJSON_GetObjectItemCaseSensitive(obj, "direction");
	const cJSON *amount = cJSON_GetObjectItemCaseSensitive(obj, "amount");
	int64_t v;
	int rc;
	if (has_delta && (dir || amount))
		return rk_error_set(err, RK_EINVALID, "%s: give dx/dy or direction/amount, not both", what);
	if (has_delta) {
		if ((rc = rk_json_get_int(obj, "dx", -20, 20, 0, &v, what, err)) < 0)
			return rc;
		a->dx = (int)v;
		if ((rc = rk_json_get_int(obj, "dy", -20, 20, 0, &v, what, err)) < 0)
			return rc;
		a->dy = (int)v;
		if (a->dx == 0 && a->dy == 0)
			return rk_error_set(err, RK_EINVALID, "%s: dx and dy are both 0", what);
		return 0;
	}
	if (!dir)
		return rk_error_set(err, RK_EINVALID, "%s: dy (or dx, or direction) is required", what);
	const char *d;
	if ((rc = rk_json_get_string(obj, "direction", 1, &d, what, err)) < 0)
		return rc;
	if ((rc = rk_json_get_int(obj, "amount", 1, 20, 3, &v, what, err)) < 0)
		return rc;
	int n = (int)v;
	if (strcmp(d, "up") == 0)
		a->dy = -n;
	else if (strcmp(d, "down") == 0)
		a->dy = n;
	else if (strcmp(d, "left") == 0)
		a->dx = -n;
	else if (strcmp(d, "right") == 0)
		a->dx = n;
	else
		return rk_error_set(err, RK_EINVALID, "%s: direction must be up, down, left or right", what);
	return 0;
}

static int parse_text(const cJSON *obj, const char *what, struct rk_action *a, struct rk_error *err)
{
	const char *s;
	int rc = rk_json_get_string(obj, "text", 1, &s, what, err);
	if (rc < 0)
		return rc;
	size_t len = strlen(s), i = 0, chars = 0;
	if (len == 0)
		return rk_error_set(err, RK_EINVALID, "%s: text is empty", what);
	while (i < len) {
		uint32_t cp;
		int n = rk_utf8_next(s + i, len - i, &cp);
		if (n < 0)
			return rk_error_set(err, RK_EINVALID, "%s: text is not valid UTF-8 (byte %zu)", what, i);
		if (!rk_keysym_from_codepoint(cp))
			return rk_error_set(err, RK_EINVALID,
					    "%s: text has U+%04X at character %zu, which cannot be typed", what,
					    (unsigned)cp, chars);
		i += (size_t)n;
		if (++chars > RK_TYPE_TEXT_MAX)
			return rk_error_set(err, RK_EINVALID,
					    "%s: text is longer than %d characters (split it over several actions)",
					    what, RK_TYPE_TEXT_MAX);
	}
	a->text = rk_xstrdup(s);
	return 0;
}

int rk_action_from_json(const cJSON *obj, size_t index, struct rk_action *a, struct rk_error *err)
{
	char what[96];
	int rc;
	int64_t v;
	memset(a, 0, sizeof(*a));
	a->button = RK_BUTTON_LEFT;
	a->count = 1;
	if (!cJSON_IsObject(obj))
		return rk_error_set(err, RK_EINVALID, "action %zu: must be an object like {\"action\":\"click\",...}",
				    index);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "action");
	if (!kind)
		return rk_error_set(err, RK_EINVALID, "action %zu: \"action\" is required (move, click, type, key ...)",
				    index);
	if (!cJSON_IsString(kind))
		return rk_error_set(err, RK_EINVALID, "action %zu: \"action\" must be a string", index);
	int k = -1;
	for (int i = 0; i < RK_ACT_KIND_COUNT; i++)
		if (strcmp(kind->valuestring, kind_names[i]) == 0)
			k = i;
	if (k < 0)
		return rk_error_set(err, RK_EINVALID,
				    "action %zu: unknown action \"%s\" (expected move, click, double_click, "
				    "right_click, down, up, drag, scroll, type, key, key_down, key_up or wait)",
				    index, kind->valuestring);
	a->kind = (enum rk_action_kind)k;
	snprintf(what, sizeof(what), "action %zu: %s", index, kind_names[k]);
	for (const cJSON *c = obj->child; c; c = c->next) {
		if (strcmp(c->string, "action") == 0)
			continue;
		if (!field_allowed(a->kind, c->string)) {
			rk_error_set(err, RK_EINVALID, "%s: unknown field \"%s\"", what, c->string);
			goto fail;
		}
	}
	switch (a->kind) {
	case RK_ACT_MOVE:
		rc = get_point(obj, what, 1, &a->has_point, &a->at, err);
		break;
	case RK_ACT_CLICK:
		if ((rc = get_point(obj, what, 0, &a->has_point, &a->at, err)) < 0 ||
		    (rc = get_button(obj, what, &a->button, err)) < 0 ||
		    (rc = rk_json_get_int(obj, "count", 1, 3, 1, &v, what, err)) < 0)
			break;
		a->count = (int)v;
		break;
	case RK_ACT_DOUBLE_CLICK:
		a->count = 2;
		if ((rc = get_point(obj, what, 0, &a->has_point, &a->at, err)) < 0)
			break;
		rc = get_button(obj, what, &a->button, err);
		break;
	case RK_ACT_RIGHT_CLICK:
		a->button = RK_BUTTON_RIGHT;
		rc = get_point(obj, what, 0, &a->has_point, &a->at, err);
		break;
	case RK_ACT_DOWN:
	case RK_ACT_UP:
		if ((rc = get_point(obj, what, 0, &a->has_point, &a->at, err)) < 0)
			break;
		rc = get_button(obj, what, &a->button, err);
		break;
	case RK_ACT_DRAG: {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(obj, "path");
		if (!path) {
			rc = rk_error_set(err, RK_EINVALID, "%s: path is required ([[x,y], [x,y], ...])", what);
			break;
		}
		int n = cJSON_IsArray(path) ? cJSON_GetArraySize(path) : -1;
		if (n < 2 || n > RK_DRAG_POINTS_MAX) {
			rc = rk_error_set(err, RK_EINVALID, "%s: path must be an array of 2 to %d points", what,
					  RK_DRAG_POINTS_MAX);
			break;
		}
		a->path = rk_xcalloc((size_t)n, sizeof(*a->path));
		a->path_len = (size_t)n;
		rc = 0;
		size_t i = 0;
		for (const cJSON *p = path->child; p && rc == 0; p = p->next, i++)
			rc = path_point(p, i, what, &a->path[i], err);
		if (rc == 0)
			rc = get_button(obj, what, &a->button, err);
		break;
	}
	case RK_ACT_SCROLL:
		if ((rc = get_point(obj, what, 0, &a->has_point, &a->at, err)) < 0)
			break;
		rc = parse_scroll(obj, what, a, err);
		break;
	case RK_ACT_TYPE:
		rc = parse_text(obj, what, a, err);
		break;
	case RK_ACT_KEY:
	case RK_ACT_KEY_DOWN:
	case RK_ACT_KEY_UP: {
		const char *s;
		if ((rc = rk_json_get_string(obj, "keys", 1, &s, what, err)) < 0)
			break;
		if ((rc = rk_keys_parse(s, &a->keys, err)) < 0) {
			rk_error_prefix(err, "%s", what);
			break;
		}
		a->keys_spec = rk_xstrdup(s);
		break;
	}
	case RK_ACT_WAIT:
		if ((rc = rk_json_get_int(obj, "ms", 0, RK_WAIT_MS_MAX, RK_WAIT_MS_DEFAULT, &v, what, err)) < 0)
			break;
		a->ms = (int)v;
		break;
	default:
		rc = rk_error_set(err, RK_EINVALID, "%s: not supported", what);
	}
	if (rc < 0)
		goto fail;
	return 0;
fail:
	rk_action_release(a);
	return -RK_EINVALID;
}

int rk_action_parse(const char *json, size_t len, struct rk_action *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *doc = rk_json_parse(json, len, "action", err);
	if (!doc)
		return -RK_EINVALID;
	int rc = rk_action_from_json(doc, 0, out, err);
	cJSON_Delete(doc);
	return rc;
}

int rk_action_batch_from_json(const cJSON *doc, struct rk_action_batch *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	out->settle_ms = -1;
	out->observe = -1;
	const cJSON *list = doc;
	if (cJSON_IsObject(doc)) {
		for (const cJSON *c = doc->child; c; c = c->next)
			if (strcmp(c->string, "actions") != 0 && strcmp(c->string, "settle_ms") != 0 &&
			    strcmp(c->string, "observe") != 0)
				return rk_error_set(
					err, RK_EINVALID,
					"actions: unknown field \"%s\" (expected actions, settle_ms, observe)",
					c->string);
		list = cJSON_GetObjectItemCaseSensitive(doc, "actions");
		if (!list)
			return rk_error_set(err, RK_EINVALID, "actions: \"actions\" is required");
		int64_t v;
		int b;
		if (rk_json_get_int(doc, "settle_ms", 0, RK_SETTLE_MS_MAX, -1, &v, "actions", err) < 0)
			return -RK_EINVALID;
		out->settle_ms = (int)v;
		if (rk_json_get_bool(doc, "observe", -1, &b, "actions", err) < 0)
			return -RK_EINVALID;
		out->observe = b;
	}
	if (!cJSON_IsArray(list))
		return rk_error_set(err, RK_EINVALID, "actions: must be an array of action objects");
	int n = cJSON_GetArraySize(list);
	if (n < 1 || n > RK_ACTIONS_MAX)
		return rk_error_set(err, RK_EINVALID, "actions: a batch takes 1 to %d actions, got %d", RK_ACTIONS_MAX,
				    n);
	out->actions = rk_xcalloc((size_t)n, sizeof(*out->actions));
	size_t i = 0;
	for (const cJSON *c = list->child; c; c = c->next, i++) {
		if (rk_action_from_json(c, i, &out->actions[i], err) < 0) {
			out->n = i;
			rk_action_batch_release(out);
			return -RK_EINVALID;
		}
	}
	out->n = i;
	return 0;
}

int rk_action_batch_parse(const char *json, size_t len, struct rk_action_batch *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	out->settle_ms = -1;
	out->observe = -1;
	cJSON *doc = rk_json_parse(json, len, "actions", err);
	if (!doc)
		return -RK_EINVALID;
	int rc = rk_action_batch_from_json(doc, out, err);
	cJSON_Delete(doc);
	return rc;
}

static int check_point(const struct rk_point *p, const char *what, const char *label, int w, int h,
		       struct rk_error *err)
{
	if (p->x < 0 || p->y < 0 || p->x >= w || p->y >= h)
		return rk_error_set(err, RK_EINVALID,
				    "%s: %s (%d, %d) is off the screen (the screenshot is %dx%d: x 0..%d, y 0..%d)",
				    what, label, p->x, p->y, w, h, w - 1, h - 1);
	return 0;
}

int rk_action_check(const struct rk_action *a, size_t index, int w, int h, struct rk_error *err)
{
	char what[96];
	snprintf(what, sizeof(what), "action %zu: %s", index, rk_action_kind_name(a->kind));
	if ((unsigned)a->kind >= RK_ACT_KIND_COUNT)
		return rk_error_set(err, RK_EINVALID, "action %zu: unknown kind", index);
	if (a->has_point && check_point(&a->at, what, "point", w, h, err) < 0)
		return -RK_EINVALID;
	if (a->kind == RK_ACT_MOVE && !a->has_point)
		return rk_error_set(err, RK_EINVALID, "%s: x and y are required", what);
	if (a->kind == RK_ACT_DRAG) {
		if (a->path_len < 2 || !a->path)
			return rk_error_set(err, RK_EINVALID, "%s: path must have at least 2 points", what);
		for (size_t i = 0; i < a->path_len; i++) {
			char label[32];
			snprintf(label, sizeof(label), "path[%zu]", i);
			if (check_point(&a->path[i], what, label, w, h, err) < 0)
				return -RK_EINVALID;
		}
	}
	if (a->kind == RK_ACT_TYPE && (!a->text || !*a->text))
		return rk_error_set(err, RK_EINVALID, "%s: text is empty", what);
	if ((a->kind == RK_ACT_KEY || a->kind == RK_ACT_KEY_DOWN || a->kind == RK_ACT_KEY_UP) && a->keys.n == 0)
		return rk_error_set(err, RK_EINVALID, "%s: keys is empty", what);
	if (a->kind == RK_ACT_WAIT && (a->ms < 0 || a->ms > RK_WAIT_MS_MAX))
		return rk_error_set(err, RK_EINVALID, "%s: ms must be from 0 to %d", what, RK_WAIT_MS_MAX);
	return 0;
}

int rk_action_batch_check(const struct rk_action_batch *b, int w, int h, struct rk_error *err)
{
	if (b->n < 1 || b->n > RK_ACTIONS_MAX)
		return rk_error_set(err, RK_EINVALID, "actions: a batch takes 1 to %d actions, got %zu", RK_ACTIONS_MAX,
				    b->n);
	for (size_t i = 0; i < b->n; i++)
		if (rk_action_check(&b->actions[i], i, w, h, err) < 0)
			return -RK_EINVALID;
	return 0;
}

int rk_coord_to_screen(int v, int image_size, int screen_size)
{
	if (image_size <= 0 || image_size == screen_size)
		return v;
	int64_t s = ((int64_t)v * 2 + 1) * screen_size / ((int64_t)image_size * 2);
	if (s < 0)
		s = 0;
	if (s >= screen_size)
		s = screen_size - 1;
	return (int)s;
}

int rk_coord_to_image(int x, int image_size, int screen_size)
{
	if (image_size <= 0 || screen_size <= 0 || image_size == screen_size)
		return x;
	int64_t v = ((int64_t)x * 2 + 1) * image_size / ((int64_t)screen_size * 2);
	if (v < 0)
		v = 0;
	if (v >= image_size)
		v = image_size - 1;
	return (int)v;
}

static void add_point(cJSON *o, const struct rk_point *p, int iw, int ih, int sw, int sh)
{
	cJSON_AddNumberToObject(o, "x", rk_coord_to_screen(p->x, iw, sw));
	cJSON_AddNumberToObject(o, "y", rk_coord_to_screen(p->y, ih, sh));
}

cJSON *rk_action_to_json(const struct rk_action *a, int iw, int ih, int sw, int sh)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "action", rk_action_kind_name(a->kind));
	if (a->has_point)
		add_point(o, &a->at, iw, ih, sw, sh);
	switch (a->kind) {
	case RK_ACT_CLICK:
		cJSON_AddStringToObject(o, "button", rk_button_name(a->button));
		cJSON_AddNumberToObject(o, "count", a->count);
		break;
	case RK_ACT_DOUBLE_CLICK:
	case RK_ACT_DOWN:
	case RK_ACT_UP:
		cJSON_AddStringToObject(o, "button", rk_button_name(a->button));
		break;
	case RK_ACT_DRAG: {
		cJSON *path = cJSON_AddArrayToObject(o, "path");
		for (size_t i = 0; i < a->path_len; i++) {
			cJSON *pt = cJSON_CreateArray();
			cJSON_AddItemToArray(pt, cJSON_CreateNumber(rk_coord_to_screen(a->path[i].x, iw, sw)));
			cJSON_AddItemToArray(pt, cJSON_CreateNumber(rk_coord_to_screen(a->path[i].y, ih, sh)));
			cJSON_AddItemToArray(path, pt);
		}
		cJSON_AddStringToObject(o, "button", rk_button_name(a->button));
		break;
	}
	case RK_ACT_SCROLL:
		cJSON_AddNumberToObject(o, "dx", a->dx);
		cJSON_AddNumberToObject(o, "dy", a->dy);
		break;
	case RK_ACT_TYPE:
		cJSON_AddStringToObject(o, "text", a->text ? a->text : "");
		break;
	case RK_ACT_KEY:
	case RK_ACT_KEY_DOWN:
	case RK_ACT_KEY_UP:
		cJSON_AddStringToObject(o, "keys", a->keys_spec ? a->keys_spec : "");
		break;
	case RK_ACT_WAIT:
		cJSON_AddNumberToObject(o, "ms", a->ms);
		break;
	default:
		break;
	}
	return o;
}
