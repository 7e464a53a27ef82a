/* The vendors' native computer tools (engine/agent/computer_tool.c): the
 * spec table, screenshot sizes, and every action of Anthropic's and
 * OpenAI's tools translated into a batch the screen engine's own parser
 * (engine/screen/actions.h) accepts. No X server, no model. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/agent/computer_tool.h"
#include "engine/screen/actions.h"
#include "engine/screen/picture.h"

static struct rk_error err;

/* Test JSON is written with ' for " (no test text needs an apostrophe). */
static const char *q(const char *s)
{
	static char bufs[4][16384];
	static int next;
	char *b = bufs[next++ % 4];
	size_t n = strlen(s);
	if (n >= sizeof(bufs[0]))
		abort();
	for (size_t i = 0; i <= n; i++)
		b[i] = s[i] == '\'' ? '"' : s[i];
	return b;
}

static struct rk_computer_tool_spec spec(enum rk_model_api api, const char *type, int sw, int sh)
{
	struct rk_computer_tool_spec s;
	if (rk_computer_tool_spec_of_type(api, type, &s, &err) < 0) {
		printf("  no spec %s: %s\n", type, err.message);
		abort();
	}
	rk_computer_tool_fit(&s, sw, sh);
	return s;
}

/* Claude at 1366x768 (not scaled: 1366x768 is under both limits). */
static struct rk_computer_tool_spec claude(void)
{
	return spec(RK_MODEL_API_MESSAGES, "computer_20251124", 1366, 768);
}
static struct rk_computer_tool_spec claude_old(void)
{
	return spec(RK_MODEL_API_MESSAGES, "computer_20250124", 1366, 768);
}
static struct rk_computer_tool_spec gpt(void)
{
	return spec(RK_MODEL_API_RESPONSES, "computer", 1366, 768);
}

static int translate(const struct rk_computer_tool_spec *s, const char *name, const char *args,
		     struct rk_computer_step *st)
{
	struct rk_model_tool_call call = {.id = "call_1", .name = (char *)name, .arguments = (char *)args, .native = 1};
	rk_error_clear(&err);
	return rk_computer_tool_translate(s, &call, st, &err);
}

/* Translates args (' for ") and expects an ACT step whose batch is
 * {"actions":WANT} (WANT with ' for ") and which the screen engine parses and
 * checks against the spec's display size. */
static int acts(const struct rk_computer_tool_spec *s, const char *name, const char *args, const char *want)
{
	struct rk_computer_step st;
	int ok = 1;
	if (translate(s, name, q(args), &st) != 0) {
		printf("  %s: rejected: %s\n", args, err.message);
		return 0;
	}
	char expect[16384];
	snprintf(expect, sizeof(expect), "{\"actions\":%s}", q(want));
	if (st.kind != RK_COMPUTER_ACT || !st.batch_json || strcmp(st.batch_json, expect) != 0) {
		printf("  %s:\n    got  kind %d %s\n    want %s\n", args, st.kind, st.batch_json ? st.batch_json : "-",
		       expect);
		ok = 0;
	} else {
		struct rk_action_batch b;
		struct rk_error e;
		if (rk_action_batch_parse(st.batch_json, strlen(st.batch_json), &b, &e) < 0 ||
		    rk_action_batch_check(&b, s->display_w, s->display_h, &e) < 0) {
			printf("  %s: the screen engine refuses %s: %s\n", args, st.batch_json, e.message);
			ok = 0;
		}
		rk_action_batch_release(&b);
	}
	rk_computer_step_release(&st);
	return ok;
}

/* Expects RK_EINVALID with a message containing want. */
static int rejects(const struct rk_computer_tool_spec *s, const char *name, const char *args, const char *want)
{
	struct rk_computer_step st;
	int rc = translate(s, name, q(args), &st);
	if (rc != -RK_EINVALID || err.code != RK_EINVALID) {
		printf("  expected %s to be rejected, rc=%d batch %s\n", args, rc,
		       rc == 0 && st.batch_json ? st.batch_json : "-");
		if (rc == 0)
			rk_computer_step_release(&st);
		return 0;
	}
	if (st.batch_json || st.note) {
		printf("  %s: a rejected step kept its batch or note\n", args);
		return 0;
	}
	if (!strstr(err.message, q(want))) {
		printf("  message for %s: \"%s\", expected it to contain \"%s\"\n", args, err.message, q(want));
		return 0;
	}
	return 1;
}

/* Expects a step of kind (not ACT); returns it in st (release it). */
static int step_is(const struct rk_computer_tool_spec *s, const char *name, const char *args,
		   enum rk_computer_step_kind kind, struct rk_computer_step *st)
{
	if (translate(s, name, q(args), st) != 0) {
		printf("  %s: rejected: %s\n", args, err.message);
		return 0;
	}
	if (st->kind != kind || st->batch_json) {
		printf("  %s: kind %d, expected %d\n", args, st->kind, kind);
		rk_computer_step_release(st);
		return 0;
	}
	return 1;
}

/* ---- the spec table ---- */

static const char *type_for(enum rk_model_api api, const char *model)
{
	struct rk_computer_tool_spec s;
	rk_error_clear(&err);
	int rc = rk_computer_tool_spec_for(api, model, &s, &err);
	return rc == 1 ? s.type : rc == 0 ? "none" : "error";
}

TEST(spec_claude_models)
{
	unsetenv("RAKAZO_COMPUTER_TOOL");
	static const char *zoom[] = {"claude-opus-4-5",
				     "claude-opus-4-5-20251101",
				     "claude-opus-4-6",
				     "claude-sonnet-4-6",
				     "claude-opus-4-7",
				     "claude-opus-4-8",
				     "claude-opus-5",
				     "claude-sonnet-5",
				     "claude-sonnet-5-5",
				     "claude-haiku-5-5",
				     "claude-opus-5-5",
				     "claude-mythos-preview",
				     "claude-mythos-5-1",
				     "claude-fable-5-2",
				     "anthropic.claude-opus-4-5-20251101-v1:0",
				     "claude-opus-4-5@20251101",
				     "anthropic/claude-opus-4.5",
				     "anthropic/claude-sonnet-4.6"};
	static const char *old[] = {"claude-sonnet-4-5",
				    "claude-sonnet-4-5-20250929",
				    "claude-haiku-4-5",
				    "claude-haiku-4-5-20251001",
				    "claude-opus-4-1",
				    "claude-opus-4-1-20250805",
				    "claude-opus-4-20250514",
				    "claude-opus-4-0",
				    "claude-sonnet-4-0",
				    "claude-sonnet-4-20250514",
				    "claude-3-7-sonnet-20250219",
				    "claude-3-7-sonnet-latest",
				    "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
				    "anthropic/claude-sonnet-4.5",
				    "glm-4.6",
				    NULL};
	for (size_t i = 0; i < sizeof(zoom) / sizeof(zoom[0]); i++) {
		const char *t = type_for(RK_MODEL_API_MESSAGES, zoom[i]);
		if (strcmp(t, "computer_20251124") != 0)
			printf("  %s: %s\n", zoom[i], t);
		CHECK_EQ_STR(t, "computer_20251124");
	}
	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		const char *t = type_for(RK_MODEL_API_MESSAGES, old[i]);
		if (strcmp(t, "computer_20250124") != 0)
			printf("  %s: %s\n", old[i] ? old[i] : "(null)", t);
		CHECK_EQ_STR(t, "computer_20250124");
	}
	struct rk_computer_tool_spec s;
	REQUIRE(rk_computer_tool_spec_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5", &s, &err) == 1);
	CHECK_EQ_STR(s.beta, "computer-use-2025-11-24");
	CHECK_EQ_INT(s.zoom, 1);
	CHECK_EQ_INT(s.toolset, 0);
	CHECK_EQ_INT(s.max_long_edge, 1568);
	CHECK_EQ_INT(s.max_pixels, 1150000);
	CHECK_EQ_INT(s.display_w, 0);
	REQUIRE(rk_computer_tool_spec_for(RK_MODEL_API_MESSAGES, "claude-sonnet-4-5", &s, &err) == 1);
	CHECK_EQ_STR(s.beta, "computer-use-2025-01-24");
	CHECK_EQ_INT(s.zoom, 0);
	CHECK_EQ_INT(s.max_long_edge, 1568);
}

TEST(spec_responses_and_chat)
{
	unsetenv("RAKAZO_COMPUTER_TOOL");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "gpt-5.4"), "computer");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "gpt-6-sol"), "computer");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, NULL), "computer");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "computer-use-preview"), "computer_use_preview");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "computer-use-preview-2025-03-11"), "computer_use_preview");
	CHECK_EQ_STR(type_for(RK_MODEL_API_CHAT, "gpt-5.4"), "none");
	CHECK_EQ_STR(type_for(RK_MODEL_API_CHAT, "claude-opus-4-5"), "none");
	struct rk_computer_tool_spec s;
	REQUIRE(rk_computer_tool_spec_for(RK_MODEL_API_RESPONSES, "gpt-5.4", &s, &err) == 1);
	CHECK(s.beta == NULL);
	CHECK_EQ_INT(s.zoom, 0);
	CHECK_EQ_INT(s.max_short_edge, 768);
	CHECK_EQ_INT(s.max_long_edge, 2048);
	REQUIRE(rk_computer_tool_spec_for(RK_MODEL_API_RESPONSES, "computer-use-preview", &s, &err) == 1);
	CHECK_EQ_INT(s.max_long_edge, 1024);
	CHECK_EQ_INT(s.max_short_edge, 768);
}

TEST(spec_env_override)
{
	setenv("RAKAZO_COMPUTER_TOOL", "none", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5"), "none");
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "gpt-5.4"), "none");
	setenv("RAKAZO_COMPUTER_TOOL", "computer_20250124", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5"), "computer_20250124");
	setenv("RAKAZO_COMPUTER_TOOL", "computer_use_preview", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_RESPONSES, "gpt-5.4"), "computer_use_preview");
	setenv("RAKAZO_COMPUTER_TOOL", "computer_toolset_20260801", 1);
	struct rk_computer_tool_spec s;
	REQUIRE(rk_computer_tool_spec_for(RK_MODEL_API_MESSAGES, "claude-opus-5", &s, &err) == 1);
	CHECK_EQ_INT(s.toolset, 1);
	CHECK_EQ_INT(s.zoom, 1);
	CHECK(s.beta == NULL);
	/* a type of the other API, or any on chat, is an error, not ignored */
	setenv("RAKAZO_COMPUTER_TOOL", "computer", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5"), "error");
	CHECK_EQ_INT(err.code, RK_EINVALID);
	CHECK(strstr(err.message, "RAKAZO_COMPUTER_TOOL") != NULL);
	CHECK(strstr(err.message, "computer_20251124") != NULL);
	CHECK_EQ_STR(type_for(RK_MODEL_API_CHAT, "x"), "error");
	CHECK(strstr(err.message, "chat API has no native computer tool") != NULL);
	setenv("RAKAZO_COMPUTER_TOOL", "computer_20991231", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5"), "error");
	CHECK(strstr(err.message, "computer_20991231") != NULL);
	setenv("RAKAZO_COMPUTER_TOOL", "", 1);
	CHECK_EQ_STR(type_for(RK_MODEL_API_MESSAGES, "claude-opus-4-5"), "computer_20251124");
	unsetenv("RAKAZO_COMPUTER_TOOL");
}

/* ---- screenshot sizes ---- */

static void fit_is(const char *type, enum rk_model_api api, int sw, int sh, int w, int h)
{
	struct rk_computer_tool_spec s = spec(api, type, sw, sh);
	if (s.display_w != w || s.display_h != h)
		printf("  %s %dx%d: %dx%d, expected %dx%d\n", type, sw, sh, s.display_w, s.display_h, w, h);
	CHECK_EQ_INT(s.display_w, w);
	CHECK_EQ_INT(s.display_h, h);
}

TEST(fit_sizes)
{
	fit_is("computer_20251124", RK_MODEL_API_MESSAGES, 1366, 768, 1366, 768);
	fit_is("computer_20251124", RK_MODEL_API_MESSAGES, 1920, 1080, 1430, 804);
	fit_is("computer_20250124", RK_MODEL_API_MESSAGES, 2560, 1440, 1430, 804);
	fit_is("computer_20250124", RK_MODEL_API_MESSAGES, 1024, 768, 1024, 768);
	fit_is("computer_20250124", RK_MODEL_API_MESSAGES, 1080, 1920, 804, 1429);
	fit_is("computer_20250124", RK_MODEL_API_MESSAGES, 3000, 600, 1568, 314);
	fit_is("computer", RK_MODEL_API_RESPONSES, 1366, 768, 1366, 768);
	fit_is("computer", RK_MODEL_API_RESPONSES, 1920, 1080, 1365, 768);
	fit_is("computer", RK_MODEL_API_RESPONSES, 2560, 1440, 1365, 768);
	fit_is("computer", RK_MODEL_API_RESPONSES, 1280, 1024, 960, 768);
	fit_is("computer", RK_MODEL_API_RESPONSES, 800, 600, 800, 600);
	fit_is("computer_use_preview", RK_MODEL_API_RESPONSES, 1920, 1080, 1024, 576);
	fit_is("computer_use_preview", RK_MODEL_API_RESPONSES, 1024, 768, 1024, 768);
	fit_is("computer_use_preview", RK_MODEL_API_RESPONSES, 1280, 1024, 960, 768);
}

/* For every screen size: the limits hold, nothing is enlarged, and the
 * observe box gives exactly the declared size through rk_picture_fit. */
TEST(fit_agrees_with_the_screen_engine)
{
	static const char *types[] = {"computer_20250124", "computer_20251124", "computer_toolset_20260801", "computer",
				      "computer_use_preview"};
	static const enum rk_model_api apis[] = {RK_MODEL_API_MESSAGES, RK_MODEL_API_MESSAGES, RK_MODEL_API_MESSAGES,
						 RK_MODEL_API_RESPONSES, RK_MODEL_API_RESPONSES};
	int bad = 0;
	for (size_t t = 0; t < 5; t++)
		for (int sw = 320; sw <= 4000 && bad < 5; sw += 37)
			for (int sh = 240; sh <= 4000 && bad < 5; sh += 41) {
				struct rk_computer_tool_spec s = spec(apis[t], types[t], sw, sh);
				int w, h, lng = s.display_w > s.display_h ? s.display_w : s.display_h;
				int shrt = s.display_w > s.display_h ? s.display_h : s.display_w;
				rk_picture_fit(sw, sh, s.box_w, s.box_h, &w, &h);
				if (w != s.display_w || h != s.display_h || s.display_w > sw || s.display_h > sh ||
				    (s.max_long_edge && lng > s.max_long_edge) ||
				    (s.max_short_edge && shrt > s.max_short_edge) ||
				    (s.max_pixels && (int64_t)s.display_w * s.display_h > s.max_pixels)) {
					printf("  %s %dx%d: %dx%d box %dx%d fit %dx%d\n", types[t], sw, sh, s.display_w,
					       s.display_h, s.box_w, s.box_h, w, h);
					bad++;
				}
			}
	CHECK_EQ_INT(bad, 0);
}

TEST(declare)
{
	struct rk_computer_tool_spec s = spec(RK_MODEL_API_MESSAGES, "computer_20251124", 1920, 1080);
	struct rk_model_tool t;
	rk_computer_tool_declare(&s, &t);
	CHECK_EQ_STR(t.name, "computer");
	CHECK_EQ_STR(t.native_type, "computer_20251124");
	CHECK_EQ_STR(t.native_beta, "computer-use-2025-11-24");
	CHECK_EQ_INT(t.display_w, 1430);
	CHECK_EQ_INT(t.display_h, 804);
	CHECK_EQ_INT(t.enable_zoom, 1);
	CHECK(t.parameters == NULL);
	s = spec(RK_MODEL_API_RESPONSES, "computer", 1920, 1080);
	rk_computer_tool_declare(&s, &t);
	CHECK_EQ_STR(t.native_type, "computer");
	CHECK(t.native_beta == NULL);
	CHECK_EQ_INT(t.display_w, 1365);
	CHECK_EQ_INT(t.enable_zoom, 0);
}

/* ---- Anthropic ---- */

TEST(anthropic_key)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'key','text':'ctrl+s'}", "[{'action':'key','keys':'ctrl+s'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'Return'}", "[{'action':'key','keys':'Return'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'super'}", "[{'action':'key','keys':'super'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'ctrl+shift+T'}",
		   "[{'action':'key','keys':'ctrl+shift+t'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'alt+Tab'}", "[{'action':'key','keys':'alt+Tab'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'ctrl + s'}", "[{'action':'key','keys':'ctrl+s'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'ctrl++'}", "[{'action':'key','keys':'ctrl+plus'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'Page_Down'}", "[{'action':'key','keys':'Page_Down'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'KP_Enter'}", "[{'action':'key','keys':'KP_Enter'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'F5'}", "[{'action':'key','keys':'F5'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'BackSpace'}", "[{'action':'key','keys':'BackSpace'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':' '}", "[{'action':'key','keys':'space'}]"));
	/* xdotool presses space-separated combos in turn */
	CHECK(acts(&s, "computer", "{'action':'key','text':'ctrl+a Delete'}",
		   "[{'action':'key','keys':'ctrl+a'},{'action':'key','keys':'Delete'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'Down','repeat':3}",
		   "[{'action':'key','keys':'Down'},{'action':'key','keys':'Down'},{'action':'key','keys':'Down'}]"));
	CHECK(acts(&s, "computer", "{'action':'key','text':'Tab','repeat':null}", "[{'action':'key','keys':'Tab'}]"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':'ctrl+flurb'}", "key: text has unknown key 'flurb'"));
	CHECK(rejects(&s, "computer", "{'action':'key'}", "key: text is required"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':5}", "key: text must be a string"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':''}", "key: text is empty"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':'ctrl+'}", "ends with '+'"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':'a','repeat':0}", "repeat must be from 1 to 24"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':'a b c d e f g','repeat':4}", "more than the 24"));
	CHECK(rejects(&s, "computer", "{'action':'key','text':'a','coordinate':[1,1]}",
		      "key: unknown field 'coordinate'"));
}

TEST(anthropic_hold_key)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'hold_key','text':'shift','duration':1.5}",
		   "[{'action':'key_down','keys':'shift'},{'action':'wait','ms':1500},"
		   "{'action':'key_up','keys':'shift'}]"));
	CHECK(acts(&s, "computer", "{'action':'hold_key','text':'ctrl+alt','duration':12}",
		   "[{'action':'key_down','keys':'ctrl+alt'},{'action':'wait','ms':5000},{'action':'wait','ms':5000},"
		   "{'action':'wait','ms':2000},{'action':'key_up','keys':'ctrl+alt'}]"));
	CHECK(acts(&s, "computer", "{'action':'hold_key','text':'a','duration':0}",
		   "[{'action':'key_down','keys':'a'},{'action':'key_up','keys':'a'}]"));
	/* the longest hold still fits one batch */
	struct rk_computer_step st;
	REQUIRE(translate(&s, "computer", q("{'action':'hold_key','text':'shift','duration':100}"), &st) == 0);
	struct rk_action_batch b;
	REQUIRE(rk_action_batch_parse(st.batch_json, strlen(st.batch_json), &b, &err) == 0);
	CHECK_EQ_INT(b.n, 22);
	rk_action_batch_release(&b);
	rk_computer_step_release(&st);
	CHECK(rejects(&s, "computer", "{'action':'hold_key','text':'shift'}", "hold_key: duration is required"));
	CHECK(rejects(&s, "computer", "{'action':'hold_key','text':'shift','duration':-1}",
		      "duration must be a number of seconds from 0 to 100"));
	CHECK(rejects(&s, "computer", "{'action':'hold_key','text':'shift','duration':101}", "from 0 to 100"));
	CHECK(rejects(&s, "computer", "{'action':'hold_key','text':'shift','duration':'2'}", "from 0 to 100"));
	CHECK(rejects(&s, "computer", "{'action':'hold_key','text':'a b','duration':1}",
		      "hold_key: text must be one key combination"));
	CHECK(rejects(&s, "computer", "{'action':'hold_key','duration':1}", "hold_key: text is required"));
}

TEST(anthropic_type)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'type','text':'h\\u00e9llo \\u4e16\\u754c\\n'}",
		   "[{'action':'type','text':'h\u00e9llo \u4e16\u754c\\n'}]"));
	/* longer than one type action takes: split, nothing lost */
	char text[5000 + 64];
	memset(text, 'a', 5000);
	text[5000] = 0;
	char args[5200];
	snprintf(args, sizeof(args), "{\"action\":\"type\",\"text\":\"%s\"}", text);
	struct rk_computer_step st;
	REQUIRE(translate(&s, "computer", args, &st) == 0);
	struct rk_action_batch b;
	REQUIRE(rk_action_batch_parse(st.batch_json, strlen(st.batch_json), &b, &err) == 0);
	CHECK_EQ_INT(b.n, 2);
	CHECK_EQ_INT(strlen(b.actions[0].text), 4096);
	CHECK_EQ_INT(strlen(b.actions[1].text), 904);
	rk_action_batch_release(&b);
	rk_computer_step_release(&st);
	CHECK(rejects(&s, "computer", "{'action':'type','text':''}", "type: text is empty"));
	CHECK(rejects(&s, "computer", "{'action':'type'}", "type: text is required"));
	CHECK(rejects(&s, "computer", "{'action':'type','text':['a']}", "type: text must be a string"));
	CHECK(rejects(&s, "computer", "{'action':'type','text':'a\\u0007'}", "U+0007 at character 1"));
}

TEST(anthropic_pointer)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'mouse_move','coordinate':[5,6]}", "[{'action':'move','x':5,'y':6}]"));
	CHECK(acts(&s, "computer", "{'action':'mouse_move','coordinate':[1365,767]}",
		   "[{'action':'move','x':1365,'y':767}]"));
	CHECK(acts(&s, "computer", "{'action':'left_mouse_down'}", "[{'action':'down','button':'left'}]"));
	CHECK(acts(&s, "computer", "{'action':'left_mouse_up'}", "[{'action':'up','button':'left'}]"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move'}", "mouse_move: coordinate is required"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':[1366,0]}",
		      "mouse_move: coordinate [1366, 0] is outside the 1366x768 screen (x 0..1365, y 0..767)"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':[0,768]}", "is outside"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':[-1,0]}", "is outside"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':[1,2,3]}",
		      "coordinate must be [x, y] with two integers"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':['1',2]}", "two integers"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':[1.5,2]}", "two integers"));
	CHECK(rejects(&s, "computer", "{'action':'mouse_move','coordinate':{'x':1,'y':2}}", "two integers"));
	CHECK(rejects(&s, "computer", "{'action':'left_mouse_down','coordinate':[1,2]}",
		      "left_mouse_down: unknown field 'coordinate'"));
	CHECK(rejects(&s, "computer", "{'action':'left_mouse_up','text':'x'}", "left_mouse_up: unknown field 'text'"));
}

TEST(anthropic_clicks)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'left_click','coordinate':[10,20]}",
		   "[{'action':'click','x':10,'y':20,'button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':'left_click'}", "[{'action':'click','button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':'left_click','coordinate':null,'text':null}",
		   "[{'action':'click','button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':'right_click','coordinate':[1,2]}",
		   "[{'action':'click','x':1,'y':2,'button':'right','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':'middle_click','coordinate':[1,2]}",
		   "[{'action':'click','x':1,'y':2,'button':'middle','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':'double_click','coordinate':[1,2]}",
		   "[{'action':'click','x':1,'y':2,'button':'left','count':2}]"));
	CHECK(acts(&s, "computer", "{'action':'triple_click','coordinate':[1,2]}",
		   "[{'action':'click','x':1,'y':2,'button':'left','count':3}]"));
	/* modifiers held through the click */
	CHECK(acts(&s, "computer", "{'action':'left_click','coordinate':[10,20],'text':'shift'}",
		   "[{'action':'key_down','keys':'shift'},{'action':'click','x':10,'y':20,'button':'left','count':1},"
		   "{'action':'key_up','keys':'shift'}]"));
	CHECK(acts(&s, "computer", "{'action':'right_click','text':'ctrl+shift'}",
		   "[{'action':'key_down','keys':'ctrl+shift'},{'action':'click','button':'right','count':1},"
		   "{'action':'key_up','keys':'ctrl+shift'}]"));
	CHECK(acts(&s, "computer", "{'action':'triple_click','coordinate':[3,4],'key':'ctrl'}",
		   "[{'action':'key_down','keys':'ctrl'},{'action':'click','x':3,'y':4,'button':'left','count':3},"
		   "{'action':'key_up','keys':'ctrl'}]"));
	CHECK(rejects(&s, "computer", "{'action':'left_click','coordinate':[2000,20]}",
		      "left_click: coordinate [2000, 20] is outside"));
	CHECK(rejects(&s, "computer", "{'action':'double_click','coordinate':'10,20'}",
		      "double_click: coordinate must be [x, y]"));
	CHECK(rejects(&s, "computer", "{'action':'left_click','text':'hyperdrive'}",
		      "left_click: text has unknown key 'hyperdrive'"));
	CHECK(rejects(&s, "computer", "{'action':'middle_click','text':'ctrl alt'}",
		      "middle_click: text must be one key combination"));
	CHECK(rejects(&s, "computer", "{'action':'left_click','button':'left'}", "left_click: unknown field 'button'"));
}

TEST(anthropic_drag)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer", "{'action':'left_click_drag','start_coordinate':[1,2],'coordinate':[30,40]}",
		   "[{'action':'drag','path':[[1,2],[30,40]],'button':'left'}]"));
	CHECK(acts(&s, "computer",
		   "{'action':'left_click_drag','start_coordinate':[1,2],'coordinate':[30,40],'text':'alt'}",
		   "[{'action':'key_down','keys':'alt'},{'action':'drag','path':[[1,2],[30,40]],'button':'left'},"
		   "{'action':'key_up','keys':'alt'}]"));
	CHECK(rejects(&s, "computer", "{'action':'left_click_drag','coordinate':[30,40]}",
		      "left_click_drag: start_coordinate is required"));
	CHECK(rejects(&s, "computer", "{'action':'left_click_drag','start_coordinate':[1,2]}",
		      "left_click_drag: coordinate is required"));
	CHECK(rejects(&s, "computer", "{'action':'left_click_drag','start_coordinate':[1,2],'coordinate':[30,900]}",
		      "left_click_drag: coordinate [30, 900] is outside"));
}

TEST(anthropic_scroll)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(acts(&s, "computer",
		   "{'action':'scroll','coordinate':[100,200],'scroll_direction':'down','scroll_amount':5}",
		   "[{'action':'scroll','x':100,'y':200,'dx':0,'dy':5}]"));
	CHECK(acts(&s, "computer", "{'action':'scroll','scroll_direction':'up','scroll_amount':3}",
		   "[{'action':'scroll','dx':0,'dy':-3}]"));
	CHECK(acts(&s, "computer", "{'action':'scroll','scroll_direction':'left','scroll_amount':2}",
		   "[{'action':'scroll','dx':-2,'dy':0}]"));
	CHECK(acts(&s, "computer", "{'action':'scroll','scroll_direction':'right','scroll_amount':2}",
		   "[{'action':'scroll','dx':2,'dy':0}]"));
	/* more notches than one action takes: in turn, from the same place */
	CHECK(acts(&s, "computer",
		   "{'action':'scroll','coordinate':[5,5],'scroll_direction':'down','scroll_amount':45}",
		   "[{'action':'scroll','x':5,'y':5,'dx':0,'dy':20},{'action':'scroll','dx':0,'dy':20},"
		   "{'action':'scroll','dx':0,'dy':5}]"));
	CHECK(acts(&s, "computer", "{'action':'scroll','scroll_direction':'down','scroll_amount':1,'text':'ctrl'}",
		   "[{'action':'key_down','keys':'ctrl'},{'action':'scroll','dx':0,'dy':1},"
		   "{'action':'key_up','keys':'ctrl'}]"));
	CHECK(rejects(&s, "computer", "{'action':'scroll','scroll_direction':'sideways','scroll_amount':1}",
		      "scroll: scroll_direction must be up, down, left or right"));
	CHECK(rejects(&s, "computer", "{'action':'scroll','scroll_amount':1}", "scroll: scroll_direction is required"));
	CHECK(rejects(&s, "computer", "{'action':'scroll','scroll_direction':'up'}",
		      "scroll: scroll_amount is required"));
	CHECK(rejects(&s, "computer", "{'action':'scroll','scroll_direction':'up','scroll_amount':0}",
		      "scroll_amount must be from 1 to 200"));
	CHECK(rejects(&s, "computer", "{'action':'scroll','scroll_direction':'up','scroll_amount':2.5}",
		      "scroll_amount must be an integer"));
	CHECK(rejects(&s, "computer",
		      "{'action':'scroll','coordinate':[100,2000],'scroll_direction':'up','scroll_amount':1}",
		      "scroll: coordinate [100, 2000] is outside"));
}

TEST(anthropic_observing_steps)
{
	struct rk_computer_tool_spec s = claude();
	struct rk_computer_step st;
	if (step_is(&s, "computer", "{'action':'screenshot'}", RK_COMPUTER_SCREENSHOT, &st))
		rk_computer_step_release(&st);
	else
		CHECK(0);
	if (step_is(&s, "computer", "{'action':'cursor_position'}", RK_COMPUTER_CURSOR_POSITION, &st))
		rk_computer_step_release(&st);
	else
		CHECK(0);
	if (step_is(&s, "computer", "{'action':'wait','duration':2.5}", RK_COMPUTER_WAIT, &st)) {
		CHECK_EQ_INT(st.wait_ms, 2500);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	if (step_is(&s, "computer", "{'action':'wait','duration':100}", RK_COMPUTER_WAIT, &st)) {
		CHECK_EQ_INT(st.wait_ms, 100000);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	CHECK(rejects(&s, "computer", "{'action':'wait'}", "wait: duration is required (seconds)"));
	CHECK(rejects(&s, "computer", "{'action':'wait','duration':100.5}", "wait: duration must be"));
	CHECK(rejects(&s, "computer", "{'action':'screenshot','coordinate':[1,1]}",
		      "screenshot: unknown field 'coordinate'"));
	CHECK(rejects(&s, "computer", "{'action':'cursor_position','text':'a'}", "cursor_position: unknown field"));
}

TEST(anthropic_zoom)
{
	struct rk_computer_tool_spec s = claude();
	struct rk_computer_step st;
	if (step_is(&s, "computer", "{'action':'zoom','region':[0,10,100,50]}", RK_COMPUTER_ZOOM, &st)) {
		CHECK_EQ_INT(st.region[0], 0);
		CHECK_EQ_INT(st.region[1], 10);
		CHECK_EQ_INT(st.region[2], 100);
		CHECK_EQ_INT(st.region[3], 50);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	if (step_is(&s, "computer", "{'action':'zoom','region':[1000,700,1366,768]}", RK_COMPUTER_ZOOM, &st))
		rk_computer_step_release(&st);
	else
		CHECK(0);
	CHECK(rejects(&s, "computer", "{'action':'zoom'}", "zoom: region is required"));
	CHECK(rejects(&s, "computer", "{'action':'zoom','region':[0,0,10]}", "region must be [x0, y0, x1, y1]"));
	CHECK(rejects(&s, "computer", "{'action':'zoom','region':[0,0,10,'a']}", "four integers"));
	CHECK(rejects(&s, "computer", "{'action':'zoom','region':[10,0,10,10]}",
		      "zoom: region [10, 0, 10, 10] must have 0 <= x0 < x1 <= 1366 and 0 <= y0 < y1 <= 768"));
	CHECK(rejects(&s, "computer", "{'action':'zoom','region':[0,0,1367,10]}", "x1 <= 1366"));
	CHECK(rejects(&s, "computer", "{'action':'zoom','region':[0,0,10,769]}", "y1 <= 768"));
	struct rk_computer_tool_spec old = claude_old();
	CHECK(rejects(&old, "computer", "{'action':'zoom','region':[0,0,10,10]}",
		      "zoom: zoom is not enabled for the computer_20250124 tool"));
}

TEST(anthropic_malformed)
{
	struct rk_computer_tool_spec s = claude();
	CHECK(rejects(&s, "computer", "{'action':'fly'}", "computer: unknown action 'fly' (expected key, hold_key"));
	CHECK(rejects(&s, "computer", "{'coordinate':[1,2]}", "computer: action is required"));
	CHECK(rejects(&s, "computer", "{}", "computer: action is required"));
	CHECK(rejects(&s, "computer", "", "computer: action is required"));
	CHECK(rejects(&s, "computer", "{'action':7}", "computer: action must be a string"));
	CHECK(rejects(&s, "computer", "[]", "computer: the input must be an object"));
	CHECK(rejects(&s, "computer", "{'action':", "computer"));
	CHECK(rejects(&s, "computer", "{'action':'left_click','flavour':'mint'}",
		      "left_click: unknown field 'flavour'"));
	/* the old tool has no zoom in its list */
	struct rk_computer_tool_spec old = claude_old();
	CHECK(rejects(&old, "computer", "{'action':'fly'}", "wait, screenshot)"));
}

/* The 2026 toolset: each action is a tool_use named after it. */
TEST(anthropic_toolset)
{
	struct rk_computer_tool_spec s = spec(RK_MODEL_API_MESSAGES, "computer_toolset_20260801", 1920, 1080);
	CHECK(acts(&s, "left_click", "{'coordinate':[10,20]}",
		   "[{'action':'click','x':10,'y':20,'button':'left','count':1}]"));
	CHECK(acts(&s, "key", "{'text':'ctrl+l','repeat':2}",
		   "[{'action':'key','keys':'ctrl+l'},{'action':'key','keys':'ctrl+l'}]"));
	CHECK(acts(&s, "type", "{'text':'hi'}", "[{'action':'type','text':'hi'}]"));
	struct rk_computer_step st;
	if (step_is(&s, "zoom", "{'region':[0,0,1430,804]}", RK_COMPUTER_ZOOM, &st))
		rk_computer_step_release(&st);
	else
		CHECK(0);
	CHECK(rejects(&s, "left_click", "{'coordinate':[1430,0]}",
		      "left_click: coordinate [1430, 0] is outside the 1430x804"));
	CHECK(rejects(&s, "teleport", "{}", "computer: unknown action 'teleport'"));
}

/* ---- OpenAI ---- */

TEST(openai_click)
{
	struct rk_computer_tool_spec s = gpt();
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'left','x':10,'y':20}]}",
		   "[{'action':'click','x':10,'y':20,'button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'right','x':10,'y':20}]}",
		   "[{'action':'click','x':10,'y':20,'button':'right','count':1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'wheel','x':10,'y':20}]}",
		   "[{'action':'click','x':10,'y':20,'button':'middle','count':1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'back','x':10,'y':20}]}",
		   "[{'action':'move','x':10,'y':20},{'action':'key','keys':'alt+Left'}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'forward','x':10,'y':20}]}",
		   "[{'action':'move','x':10,'y':20},{'action':'key','keys':'alt+Right'}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','x':10,'y':20}]}",
		   "[{'action':'click','x':10,'y':20,'button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'left','x':10,'y':20,'keys':['SHIFT']}]}",
		   "[{'action':'key_down','keys':'shift'},{'action':'click','x':10,'y':20,'button':'left','count':1},"
		   "{'action':'key_up','keys':'shift'}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'left','x':10,'y':20,'keys':null}]}",
		   "[{'action':'click','x':10,'y':20,'button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'double_click','x':1365,'y':767,'keys':null}]}",
		   "[{'action':'click','x':1365,'y':767,'button':'left','count':2}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'double_click','x':5,'y':6,'keys':['CTRL']}]}",
		   "[{'action':'key_down','keys':'ctrl'},{'action':'click','x':5,'y':6,'button':'left','count':2},"
		   "{'action':'key_up','keys':'ctrl'}]"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'click','button':'side','x':1,'y':1}]}",
		      "actions[0] click: button must be left, right, wheel, back or forward"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'click','button':'left','x':1366,'y':1}]}",
		      "actions[0] click: point [1366, 1] is outside the 1366x768 screen"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'click','button':'left','y':1}]}",
		      "actions[0] click: x and y are required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'click','button':'left','x':'1','y':1}]}",
		      "actions[0] click: x must be an integer"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'double_click','x':1,'y':1.5}]}",
		      "actions[0] double_click: y must be an integer"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'click','button':'left','x':1,'y':1,'keys':'SHIFT'}]}",
		      "keys must be an array of key names"));
}

TEST(openai_drag_move_scroll)
{
	struct rk_computer_tool_spec s = gpt();
	CHECK(acts(&s, "computer",
		   "{'actions':[{'type':'drag','path':[{'x':1,'y':2},{'x':50,'y':60},{'x':70,'y':80}]}]}",
		   "[{'action':'drag','path':[[1,2],[50,60],[70,80]],'button':'left'}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'drag','path':[{'x':1,'y':2},{'x':3,'y':4}],'keys':['ALT']}]}",
		   "[{'action':'key_down','keys':'alt'},{'action':'drag','path':[[1,2],[3,4]],'button':'left'},"
		   "{'action':'key_up','keys':'alt'}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'move','x':7,'y':8}]}", "[{'action':'move','x':7,'y':8}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'move','x':7,'y':8,'keys':['SHIFT']}]}",
		   "[{'action':'key_down','keys':'shift'},{'action':'move','x':7,'y':8},"
		   "{'action':'key_up','keys':'shift'}]"));
	/* pixels to notches: 100 px a notch, rounded, at least 1, at most 20, sign kept */
	CHECK(acts(&s, "computer", "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':0,'scroll_y':300}]}",
		   "[{'action':'scroll','x':10,'y':20,'dx':0,'dy':3}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':0,'scroll_y':-50}]}",
		   "[{'action':'scroll','x':10,'y':20,'dx':0,'dy':-1}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':250,'scroll_y':0}]}",
		   "[{'action':'scroll','x':10,'y':20,'dx':3,'dy':0}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':-149,'scroll_y':5000}]}",
		   "[{'action':'scroll','x':10,'y':20,'dx':-1,'dy':20}]"));
	CHECK(acts(&s, "computer", "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':0,'scroll_y':0}]}",
		   "[{'action':'move','x':10,'y':20}]"));
	CHECK(acts(&s, "computer",
		   "{'actions':[{'type':'scroll','x':10,'y':20,'scroll_x':0,'scroll_y':100,'keys':['CTRL']}]}",
		   "[{'action':'key_down','keys':'ctrl'},{'action':'scroll','x':10,'y':20,'dx':0,'dy':1},"
		   "{'action':'key_up','keys':'ctrl'}]"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'drag','path':[{'x':1,'y':2}]}]}",
		      "actions[0] drag: path must be an array of 2 to 100 points"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'drag'}]}", "actions[0] drag: path is required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'drag','path':[{'x':1,'y':2},{'x':3}]}]}",
		      "actions[0] drag: path[1] must be {'x':..,'y':..} with integers"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'drag','path':[{'x':1,'y':2},{'x':3,'y':768}]}]}",
		      "actions[0] drag: path[1] [3, 768] is outside"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'move','x':7}]}", "actions[0] move: x and y are required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'scroll','x':1,'y':1,'scroll_x':'a','scroll_y':0}]}",
		      "actions[0] scroll: scroll_x and scroll_y must be numbers"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'scroll','scroll_x':0,'scroll_y':10}]}",
		      "actions[0] scroll: x and y are required"));
}

TEST(openai_keypress)
{
	struct rk_computer_tool_spec s = gpt();
	static const char *cases[][2] = {
		{"['CTRL','SHIFT','T']", "ctrl+shift+t"},
		{"['CTRL','C']", "ctrl+c"},
		{"['ENTER']", "Return"},
		{"['RETURN']", "Return"},
		{"['ARROWLEFT']", "Left"},
		{"['ArrowDown']", "Down"},
		{"['ESC']", "Escape"},
		{"['SPACE']", "space"},
		{"[' ']", "space"},
		{"['TAB']", "Tab"},
		{"['BACKSPACE']", "BackSpace"},
		{"['DELETE']", "Delete"},
		{"['PAGEDOWN']", "Page_Down"},
		{"['PAGEUP']", "Page_Up"},
		{"['HOME']", "Home"},
		{"['END']", "End"},
		{"['CMD','A']", "super+a"},
		{"['META']", "super"},
		{"['Control','v']", "ctrl+v"},
		{"['ALT','F4']", "alt+F4"},
		{"['OPTION','TAB']", "alt+Tab"},
		{"['CAPSLOCK']", "Caps_Lock"},
		{"['CTRL+C']", "ctrl+c"},
		{"['CTRL','+']", "ctrl+plus"},
		{"['/']", "/"},
		{"['\\u00e9']", "\u00e9"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char args[256], want[256];
		snprintf(args, sizeof(args), "{'actions':[{'type':'keypress','keys':%s}]}", cases[i][0]);
		snprintf(want, sizeof(want), "[{'action':'key','keys':'%s'}]", cases[i][1]);
		CHECK(acts(&s, "computer", args, want));
	}
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress','keys':[]}]}",
		      "actions[0] keypress: keys is required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress'}]}", "actions[0] keypress: keys is required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress','keys':['NOSUCHKEY']}]}",
		      "actions[0] keypress: keys has unknown key 'NOSUCHKEY'"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress','keys':[1]}]}",
		      "keys must be an array of key names"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress','keys':['']}]}", "keys has an empty key name"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'keypress','keys':['a','b','c','d','e','f','g','h','i']}]}",
		      "keys has more than 8 keys"));
}

TEST(openai_type_wait_screenshot)
{
	struct rk_computer_tool_spec s = gpt();
	CHECK(acts(&s, "computer", "{'actions':[{'type':'type','text':'hello \\u4e16\\u754c'}]}",
		   "[{'action':'type','text':'hello \u4e16\u754c'}]"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'type'}]}", "actions[0] type: text is required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'type','text':''}]}", "actions[0] type: text is empty"));
	struct rk_computer_step st;
	if (step_is(&s, "computer", "{'actions':[{'type':'wait'}]}", RK_COMPUTER_WAIT, &st)) {
		CHECK_EQ_INT(st.wait_ms, 2000);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	if (step_is(&s, "computer", "{'actions':[{'type':'screenshot'}]}", RK_COMPUTER_SCREENSHOT, &st)) {
		CHECK(st.note == NULL);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	/* a wait among other actions is a wait action */
	CHECK(acts(&s, "computer", "{'actions':[{'type':'click','button':'left','x':1,'y':1},{'type':'wait'}]}",
		   "[{'action':'click','x':1,'y':1,'button':'left','count':1},{'action':'wait','ms':2000}]"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'wait','ms':10}]}", "actions[0] wait: unknown field 'ms'"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'screenshot','x':1}]}",
		      "actions[0] screenshot: unknown field 'x'"));
}

TEST(openai_batch)
{
	struct rk_computer_tool_spec s = gpt();
	CHECK(acts(&s, "computer",
		   "{'actions':[{'type':'move','x':1,'y':2},{'type':'click','button':'left','x':3,'y':4},"
		   "{'type':'type','text':'abc'},{'type':'keypress','keys':['ENTER']},{'type':'screenshot'}]}",
		   "[{'action':'move','x':1,'y':2},{'action':'click','x':3,'y':4,'button':'left','count':1},"
		   "{'action':'type','text':'abc'},{'action':'key','keys':'Return'}]"));
	/* a screenshot ends the batch: what follows is not run, and the note says so */
	struct rk_computer_step st;
	REQUIRE(translate(&s, "computer",
			  q("{'actions':[{'type':'click','button':'left','x':3,'y':4},{'type':'screenshot'},"
			    "{'type':'type','text':'abc'},{'type':'keypress','keys':['ENTER']}]}"),
			  &st) == 0);
	CHECK_EQ_INT(st.kind, RK_COMPUTER_ACT);
	CHECK_EQ_STR(st.batch_json,
		     "{\"actions\":[{\"action\":\"click\",\"x\":3,\"y\":4,\"button\":\"left\",\"count\":1}]}");
	CHECK(st.note && strstr(st.note, "actions[2] to actions[3] were not run"));
	rk_computer_step_release(&st);
	REQUIRE(translate(&s, "computer", q("{'actions':[{'type':'screenshot'},{'type':'type','text':'abc'}]}"), &st) ==
		0);
	CHECK_EQ_INT(st.kind, RK_COMPUTER_SCREENSHOT);
	CHECK(st.note && strstr(st.note, "actions[1] to actions[1] were not run"));
	rk_computer_step_release(&st);
	/* an error names the action's index in the model's list */
	CHECK(rejects(&s, "computer",
		      "{'actions':[{'type':'move','x':1,'y':2},{'type':'click','button':'left','x':3,'y':4000}]}",
		      "actions[1] click: point [3, 4000] is outside"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'move','x':1,'y':2},{'type':'fly'}]}",
		      "actions[1]: unknown action type 'fly'"));
	CHECK(rejects(&s, "computer", "{'actions':[{'x':1}]}", "actions[0]: type is required"));
	CHECK(rejects(&s, "computer", "{'actions':[7]}", "actions[0]: must be an object"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'move','x':1,'y':2,'z':3}]}",
		      "actions[0] move: unknown field 'z'"));
	CHECK(rejects(&s, "computer", "{'actions':[]}", "computer: actions is empty"));
	CHECK(rejects(&s, "computer", "{'actions':{}}", "computer: actions must be an array"));
	CHECK(rejects(&s, "computer", "{}", "computer: actions is required"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'wait'}],'action':{'type':'wait'}}",
		      "give actions or action, not both"));
	CHECK(rejects(&s, "computer", "{'actions':[{'type':'wait'}],'call_id':'x'}",
		      "computer: unknown field 'call_id'"));
	char big[4096] = "{'actions':[";
	for (int i = 0; i < 25; i++)
		strcat(big, i ? ",{'type':'move','x':1,'y':1}" : "{'type':'move','x':1,'y':1}");
	strcat(big, "]}");
	CHECK(rejects(&s, "computer", big, "the call needs 25 screen actions, more than the 24 one batch takes"));
}

/* The preview tool: one action, in the declared (XGA-class) size. */
TEST(openai_preview)
{
	struct rk_computer_tool_spec s = spec(RK_MODEL_API_RESPONSES, "computer_use_preview", 1920, 1080);
	CHECK_EQ_INT(s.display_w, 1024);
	CHECK_EQ_INT(s.display_h, 576);
	CHECK(acts(&s, "computer", "{'action':{'type':'click','button':'left','x':1023,'y':575}}",
		   "[{'action':'click','x':1023,'y':575,'button':'left','count':1}]"));
	CHECK(acts(&s, "computer", "{'action':{'type':'keypress','keys':['CTRL','L']}}",
		   "[{'action':'key','keys':'ctrl+l'}]"));
	struct rk_computer_step st;
	if (step_is(&s, "computer", "{'action':{'type':'screenshot'}}", RK_COMPUTER_SCREENSHOT, &st))
		rk_computer_step_release(&st);
	else
		CHECK(0);
	if (step_is(&s, "computer", "{'action':{'type':'wait'}}", RK_COMPUTER_WAIT, &st)) {
		CHECK_EQ_INT(st.wait_ms, 2000);
		rk_computer_step_release(&st);
	} else {
		CHECK(0);
	}
	CHECK(rejects(&s, "computer", "{'action':{'type':'click','button':'left','x':1024,'y':0}}",
		      "action click: point [1024, 0] is outside the 1024x576 screen"));
	CHECK(rejects(&s, "computer", "{'action':'click'}", "action: must be an object"));
}

TEST(unfitted_spec_and_chat)
{
	struct rk_computer_tool_spec s;
	REQUIRE(rk_computer_tool_spec_of_type(RK_MODEL_API_MESSAGES, "computer_20251124", &s, &err) == 0);
	CHECK(rejects(&s, "computer", "{'action':'screenshot'}", "display size is not set"));
	CHECK_EQ_INT(rk_computer_tool_spec_of_type(RK_MODEL_API_CHAT, "computer", &s, &err), -RK_EINVALID);
	CHECK(strstr(err.message, "chat API has no native computer tool") != NULL);
	s.api = RK_MODEL_API_CHAT;
	s.display_w = 100, s.display_h = 100;
	CHECK(rejects(&s, "computer", "{'action':'screenshot'}", "chat API has no native computer tool"));
}

int main(void)
{
	RUN(spec_claude_models);
	RUN(spec_responses_and_chat);
	RUN(spec_env_override);
	RUN(fit_sizes);
	RUN(fit_agrees_with_the_screen_engine);
	RUN(declare);
	RUN(anthropic_key);
	RUN(anthropic_hold_key);
	RUN(anthropic_type);
	RUN(anthropic_pointer);
	RUN(anthropic_clicks);
	RUN(anthropic_drag);
	RUN(anthropic_scroll);
	RUN(anthropic_observing_steps);
	RUN(anthropic_zoom);
	RUN(anthropic_malformed);
	RUN(anthropic_toolset);
	RUN(openai_click);
	RUN(openai_drag_move_scroll);
	RUN(openai_keypress);
	RUN(openai_type_wait_screenshot);
	RUN(openai_batch);
	RUN(openai_preview);
	RUN(unfitted_spec_and_chat);
	return check_summary("computer_tool");
}
