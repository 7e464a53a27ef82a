/* Action batches, key combos, Unicode keysyms and coordinate scaling
 * (engine/screen/actions.c, engine/screen/keys.c, engine/screen/picture.c). No X server needed. */
#include <string.h>

#include "check.h"
#include "engine/screen/actions.h"
#include "engine/screen/picture.h"
#include "engine/screen/keys.h"

static struct rk_error err;

/* Parses text; returns the rc and leaves the batch in b (release it). */
static int parse(const char *text, struct rk_action_batch *b)
{
	rk_error_clear(&err);
	return rk_action_batch_parse(text, strlen(text), b, &err);
}

/* Expects text to be rejected with RK_EINVALID and a message containing want. */
static int rejects(const char *text, const char *want)
{
	struct rk_action_batch b;
	int rc = parse(text, &b);
	rk_action_batch_release(&b);
	if (rc != -RK_EINVALID || err.code != RK_EINVALID) {
		printf("  expected %s to be rejected, rc=%d\n", text, rc);
		return 0;
	}
	if (!strstr(err.message, want)) {
		printf("  message for %s: \"%s\", expected it to contain \"%s\"\n", text, err.message, want);
		return 0;
	}
	return 1;
}

TEST(parse_array_form)
{
	struct rk_action_batch b;
	REQUIRE(parse("[{\"action\":\"click\",\"x\":10,\"y\":20},{\"action\":\"type\",\"text\":\"hi\"},"
		      "{\"action\":\"key\",\"keys\":\"ctrl+s\"},{\"action\":\"wait\"}]",
		      &b) == 0);
	CHECK_EQ_INT(b.n, 4);
	CHECK_EQ_INT(b.settle_ms, -1);
	CHECK_EQ_INT(b.observe, -1);
	CHECK_EQ_INT(b.actions[0].kind, RK_ACT_CLICK);
	CHECK_EQ_INT(b.actions[0].has_point, 1);
	CHECK_EQ_INT(b.actions[0].at.x, 10);
	CHECK_EQ_INT(b.actions[0].at.y, 20);
	CHECK_EQ_INT(b.actions[0].button, RK_BUTTON_LEFT);
	CHECK_EQ_INT(b.actions[0].count, 1);
	CHECK_EQ_STR(b.actions[1].text, "hi");
	CHECK_EQ_INT(b.actions[2].keys.n, 2);
	CHECK_EQ_INT(b.actions[2].keys.keysyms[0], 0xffe3);
	CHECK_EQ_INT(b.actions[2].keys.keysyms[1], 's');
	CHECK_EQ_INT(b.actions[3].ms, 350);
	rk_action_batch_release(&b);
}

TEST(parse_object_form)
{
	struct rk_action_batch b;
	REQUIRE(parse("{\"actions\":[{\"action\":\"move\",\"x\":1,\"y\":2}],\"settle_ms\":0,\"observe\":false}", &b) ==
		0);
	CHECK_EQ_INT(b.n, 1);
	CHECK_EQ_INT(b.settle_ms, 0);
	CHECK_EQ_INT(b.observe, 0);
	rk_action_batch_release(&b);
	REQUIRE(parse("{\"actions\":[{\"action\":\"wait\",\"ms\":0}],\"settle_ms\":3000}", &b) == 0);
	CHECK_EQ_INT(b.settle_ms, 3000);
	CHECK_EQ_INT(b.observe, -1);
	rk_action_batch_release(&b);
}

TEST(parse_every_kind)
{
	struct rk_action_batch b;
	REQUIRE(parse("[{\"action\":\"move\",\"x\":5,\"y\":6},"
		      "{\"action\":\"click\",\"button\":\"middle\",\"count\":3},"
		      "{\"action\":\"double_click\",\"x\":1,\"y\":1},"
		      "{\"action\":\"right_click\"},"
		      "{\"action\":\"down\",\"button\":\"right\"},{\"action\":\"up\",\"x\":0,\"y\":0},"
		      "{\"action\":\"drag\",\"path\":[[1,2],{\"x\":3,\"y\":4},[5,6]]},"
		      "{\"action\":\"scroll\",\"dy\":-2,\"dx\":1,\"x\":9,\"y\":9},"
		      "{\"action\":\"scroll\",\"direction\":\"down\"},"
		      "{\"action\":\"scroll\",\"direction\":\"left\",\"amount\":20},"
		      "{\"action\":\"type\",\"text\":\"x\"},"
		      "{\"action\":\"key\",\"keys\":\"Return\"},{\"action\":\"key_down\",\"keys\":\"shift\"},"
		      "{\"action\":\"key_up\",\"keys\":\"shift\"},{\"action\":\"wait\",\"ms\":5000}]",
		      &b) == 0);
	CHECK_EQ_INT(b.n, 15);
	CHECK_EQ_INT(b.actions[1].button, RK_BUTTON_MIDDLE);
	CHECK_EQ_INT(b.actions[1].count, 3);
	CHECK_EQ_INT(b.actions[1].has_point, 0);
	CHECK_EQ_INT(b.actions[2].count, 2);
	CHECK_EQ_INT(b.actions[3].button, RK_BUTTON_RIGHT);
	CHECK_EQ_INT(b.actions[4].button, RK_BUTTON_RIGHT);
	CHECK_EQ_INT(b.actions[6].path_len, 3);
	CHECK_EQ_INT(b.actions[6].path[1].x, 3);
	CHECK_EQ_INT(b.actions[6].path[2].y, 6);
	CHECK_EQ_INT(b.actions[7].dy, -2);
	CHECK_EQ_INT(b.actions[7].dx, 1);
	CHECK_EQ_INT(b.actions[8].dy, 3); /* the reference's default amount */
	CHECK_EQ_INT(b.actions[9].dx, -20);
	CHECK_EQ_INT(b.actions[14].ms, 5000);
	rk_action_batch_release(&b);
}

TEST(rejects_bad_json)
{
	CHECK(rejects("", "not valid JSON"));
	CHECK(rejects("[{\"action\":\"click\"", "not valid JSON"));
	CHECK(rejects("[{\"action\":\"click\"}] x", "trailing"));
	CHECK(rejects("42", "array"));
	CHECK(rejects("\"click\"", "array"));
	CHECK(rejects("{\"actions\":{}}", "array"));
	CHECK(rejects("{\"acts\":[]}", "unknown field \"acts\""));
	CHECK(rejects("{\"settle_ms\":1}", "\"actions\" is required"));
	CHECK(rejects("{\"actions\":[{\"action\":\"wait\"}],\"settle_ms\":3001}", "settle_ms must be from 0 to 3000"));
	CHECK(rejects("{\"actions\":[{\"action\":\"wait\"}],\"settle_ms\":\"1\"}", "settle_ms must be an integer"));
	CHECK(rejects("{\"actions\":[{\"action\":\"wait\"}],\"observe\":1}", "observe must be true or false"));
	CHECK(rejects("[1]", "action 0: must be an object"));
}

TEST(rejects_batch_size)
{
	CHECK(rejects("[]", "1 to 24 actions, got 0"));
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	rk_buf_addc(&b, '[');
	for (int i = 0; i < 25; i++)
		rk_buf_printf(&b, "%s{\"action\":\"wait\",\"ms\":0}", i ? "," : "");
	rk_buf_addc(&b, ']');
	CHECK(rejects(b.data, "1 to 24 actions, got 25"));
	/* 24 is fine */
	rk_buf_reset(&b);
	rk_buf_addc(&b, '[');
	for (int i = 0; i < 24; i++)
		rk_buf_printf(&b, "%s{\"action\":\"wait\",\"ms\":0}", i ? "," : "");
	rk_buf_addc(&b, ']');
	struct rk_action_batch batch;
	CHECK_EQ_INT(parse(b.data, &batch), 0);
	CHECK_EQ_INT(batch.n, 24);
	rk_action_batch_release(&batch);
	rk_buf_release(&b);
}

TEST(rejects_unknown_kind_and_fields)
{
	CHECK(rejects("[{\"action\":\"left_click\"}]", "action 0: unknown action \"left_click\""));
	CHECK(rejects("[{\"x\":1}]", "action 0: \"action\" is required"));
	CHECK(rejects("[{\"action\":7}]", "action 0: \"action\" must be a string"));
	CHECK(rejects("[{\"action\":\"wait\"},{\"action\":\"click\",\"x\":1,\"y\":1,\"force\":true}]",
		      "action 1: click: unknown field \"force\""));
	CHECK(rejects("[{\"action\":\"type\",\"text\":\"a\",\"x\":1,\"y\":1}]", "action 0: type: unknown field \"x\""));
	CHECK(rejects("[{\"action\":\"right_click\",\"button\":\"left\"}]", "unknown field \"button\""));
	CHECK(rejects("[{\"action\":\"drag\",\"path\":[[1,2,3],[1,2]]}]", "path[0] must be"));
	CHECK(rejects("[{\"action\":\"drag\",\"path\":[{\"x\":1,\"y\":2,\"z\":3},[1,2]]}]", "path[0] has unknown field"));
}

TEST(rejects_missing_and_wrong_types)
{
	CHECK(rejects("[{\"action\":\"wait\"},{\"action\":\"wait\"},{\"action\":\"type\",\"text\":5}]",
		      "action 2: type: text must be a string"));
	CHECK(rejects("[{\"action\":\"type\"}]", "action 0: type: text is required"));
	CHECK(rejects("[{\"action\":\"type\",\"text\":\"\"}]", "text is empty"));
	CHECK(rejects("[{\"action\":\"move\"}]", "action 0: move: x and y are required"));
	CHECK(rejects("[{\"action\":\"move\",\"x\":1}]", "x and y go together"));
	CHECK(rejects("[{\"action\":\"click\",\"y\":1}]", "x and y go together"));
	CHECK(rejects("[{\"action\":\"move\",\"x\":1.5,\"y\":1}]", "x must be an integer"));
	CHECK(rejects("[{\"action\":\"move\",\"x\":\"1\",\"y\":1}]", "x must be an integer"));
	CHECK(rejects("[{\"action\":\"move\",\"x\":-1,\"y\":1}]", "x must be from 0"));
	CHECK(rejects("[{\"action\":\"click\",\"button\":\"back\"}]", "button must be left, middle or right"));
	CHECK(rejects("[{\"action\":\"click\",\"button\":1}]", "button must be a string"));
	CHECK(rejects("[{\"action\":\"click\",\"count\":4}]", "count must be from 1 to 3"));
	CHECK(rejects("[{\"action\":\"drag\"}]", "path is required"));
	CHECK(rejects("[{\"action\":\"drag\",\"path\":[[1,2]]}]", "2 to 100 points"));
	CHECK(rejects("[{\"action\":\"drag\",\"path\":\"1,2\"}]", "2 to 100 points"));
	CHECK(rejects("[{\"action\":\"scroll\"}]", "dy (or dx, or direction) is required"));
	CHECK(rejects("[{\"action\":\"scroll\",\"dy\":0}]", "dx and dy are both 0"));
	CHECK(rejects("[{\"action\":\"scroll\",\"dy\":21}]", "dy must be from -20 to 20"));
	CHECK(rejects("[{\"action\":\"scroll\",\"dy\":1,\"direction\":\"up\"}]", "not both"));
	CHECK(rejects("[{\"action\":\"scroll\",\"direction\":\"sideways\"}]", "direction must be up, down"));
	CHECK(rejects("[{\"action\":\"scroll\",\"direction\":\"up\",\"amount\":0}]", "amount must be from 1 to 20"));
	CHECK(rejects("[{\"action\":\"scroll\",\"direction\":\"up\",\"amount\":21}]", "amount must be from 1 to 20"));
	CHECK(rejects("[{\"action\":\"key\"}]", "action 0: key: keys is required"));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":[\"ctrl\"]}]", "keys must be a string"));
	CHECK(rejects("[{\"action\":\"wait\",\"ms\":5001}]", "ms must be from 0 to 5000"));
	CHECK(rejects("[{\"action\":\"wait\",\"ms\":-1}]", "ms must be from 0 to 5000"));
	CHECK(rejects("[{\"action\":\"type\",\"text\":\"a\\u0007b\"}]", "U+0007 at character 1, which cannot be typed"));
}

TEST(unknown_key_names)
{
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"ctrl+flurb\"}]", "action 0: key: unknown key \"flurb\" in \"ctrl+flurb\""));
	CHECK(rejects("[{\"action\":\"key_down\",\"keys\":\"hyperspace\"}]", "unknown key \"hyperspace\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"\"}]", "key combo is empty"));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"ctrl+\"}]", "ends with \"+\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"ctrl+shift+\"}]", "ends with \"+\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"ctrl++shift\"}]", "unknown key \"+shift\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"ctrl+ +a\"}]", "empty key name"));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"F36\"}]", "unknown key \"F36\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"F0\"}]", "unknown key \"F0\""));
	CHECK(rejects("[{\"action\":\"key\",\"keys\":\"a+b+c+d+e+f+g+h+i\"}]", "more than 8 keys"));
}

static uint32_t key1(const char *spec)
{
	struct rk_key_combo k;
	if (rk_keys_parse(spec, &k, &err) < 0 || k.n != 1)
		return 0;
	return k.keysyms[0];
}

TEST(key_combos)
{
	struct rk_key_combo k;
	REQUIRE(rk_keys_parse("ctrl+shift+t", &k, &err) == 0);
	CHECK_EQ_INT(k.n, 3);
	CHECK_EQ_INT(k.keysyms[0], 0xffe3); /* Control_L */
	CHECK_EQ_INT(k.keysyms[1], 0xffe1); /* Shift_L */
	CHECK_EQ_INT(k.keysyms[2], 'T'); /* sent shifted: see keys.h */
	REQUIRE(rk_keys_parse("Ctrl + Alt + Delete", &k, &err) == 0);
	CHECK_EQ_INT(k.n, 3);
	CHECK_EQ_INT(k.keysyms[1], 0xffe9);
	CHECK_EQ_INT(k.keysyms[2], 0xffff);
	REQUIRE(rk_keys_parse("ctrl++", &k, &err) == 0);
	CHECK_EQ_INT(k.n, 2);
	CHECK_EQ_INT(k.keysyms[1], '+');
	REQUIRE(rk_keys_parse("+", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[0], '+');
	CHECK_EQ_INT(key1("Return"), 0xff0d);
	CHECK_EQ_INT(key1("Enter"), 0xff0d);
	CHECK_EQ_INT(key1("enter"), 0xff0d);
	CHECK_EQ_INT(key1("esc"), 0xff1b);
	CHECK_EQ_INT(key1("Escape"), 0xff1b);
	CHECK_EQ_INT(key1("F5"), 0xffc2);
	CHECK_EQ_INT(key1("f1"), 0xffbe);
	CHECK_EQ_INT(key1("F12"), 0xffc9);
	CHECK_EQ_INT(key1("cmd"), 0xffeb);
	CHECK_EQ_INT(key1("super"), 0xffeb);
	CHECK_EQ_INT(key1("meta"), 0xffeb);
	CHECK_EQ_INT(key1("win"), 0xffeb);
	CHECK_EQ_INT(key1("Page_Up"), 0xff55);
	CHECK_EQ_INT(key1("pgdn"), 0xff56);
	CHECK_EQ_INT(key1("BackSpace"), 0xff08);
	CHECK_EQ_INT(key1("Tab"), 0xff09);
	CHECK_EQ_INT(key1("space"), ' ');
	CHECK_EQ_INT(key1("Left"), 0xff51);
	CHECK_EQ_INT(key1("KP_Enter"), 0xff8d);
	CHECK_EQ_INT(key1("kp_5"), 0xffb5);
	CHECK_EQ_INT(key1("minus"), '-');
	CHECK_EQ_INT(key1("a"), 'a');
	CHECK_EQ_INT(key1("T"), 'T'); /* one character keeps its case */
	CHECK_EQ_INT(key1("f"), 'f');
	CHECK_EQ_INT(key1("é"), 0xe9);
	CHECK_EQ_INT(key1("漢"), 0x1006f22);

	/* with shift, the key goes out shifted (US layout) */
	REQUIRE(rk_keys_parse("shift+1", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[1], '!');
	REQUIRE(rk_keys_parse("shift+Tab", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[1], 0xfe20);
	REQUIRE(rk_keys_parse("ctrl+shift+slash", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[2], '?');
	REQUIRE(rk_keys_parse("shift+é", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[1], 0xc9);
	REQUIRE(rk_keys_parse("shift+Left", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[1], 0xff51);
	REQUIRE(rk_keys_parse("ctrl+t", &k, &err) == 0);
	CHECK_EQ_INT(k.keysyms[1], 't');
	CHECK(rk_codepoint_is_upper('A'));
	CHECK(!rk_codepoint_is_upper('a'));
	CHECK(rk_codepoint_is_upper(0xc4));  /* Ä */
	CHECK(!rk_codepoint_is_upper(0xe4)); /* ä */
	CHECK(!rk_codepoint_is_upper(0xd7)); /* × */
	CHECK(rk_codepoint_is_upper(0x416)); /* Ж */
	CHECK(!rk_codepoint_is_upper(0x6f22));
}

TEST(unicode_keysyms)
{
	CHECK_EQ_INT(rk_keysym_from_codepoint('a'), 'a');
	CHECK_EQ_INT(rk_keysym_from_codepoint(' '), ' ');
	CHECK_EQ_INT(rk_keysym_from_codepoint(0xe4), 0xe4);   /* ä */
	CHECK_EQ_INT(rk_keysym_from_codepoint(0xe9), 0xe9);   /* é */
	CHECK_EQ_INT(rk_keysym_from_codepoint(0xf1), 0xf1);   /* ñ */
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x6f22), 0x1006f22); /* 漢 */
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x1f600), 0x101f600); /* 😀 */
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x20ac), 0x10020ac); /* € */
	CHECK_EQ_INT(rk_keysym_from_codepoint('\n'), 0xff0d);
	CHECK_EQ_INT(rk_keysym_from_codepoint('\t'), 0xff09);
	CHECK_EQ_INT(rk_keysym_from_codepoint(7), 0);
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x7f), 0);
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x85), 0);
	CHECK_EQ_INT(rk_keysym_from_codepoint(0xd800), 0);
	CHECK_EQ_INT(rk_keysym_from_codepoint(0x110000), 0);

	/* UTF-8 decoding of the same characters */
	const char *s = "äé\xc3\xb1漢😀";
	uint32_t want[] = {0xe4, 0xe9, 0xf1, 0x6f22, 0x1f600};
	size_t len = strlen(s), i = 0, n = 0;
	while (i < len && n < 5) {
		uint32_t cp;
		int k = rk_utf8_next(s + i, len - i, &cp);
		REQUIRE(k > 0);
		CHECK_EQ_INT(cp, want[n]);
		char enc[4];
		CHECK_EQ_INT(rk_utf8_put(cp, enc), k);
		CHECK(memcmp(enc, s + i, (size_t)k) == 0);
		i += (size_t)k;
		n++;
	}
	CHECK_EQ_INT(n, 5);
	uint32_t cp;
	CHECK_EQ_INT(rk_utf8_next("\xc3", 1, &cp), -1);         /* truncated */
	CHECK_EQ_INT(rk_utf8_next("\xc0\xaf", 2, &cp), -1);     /* overlong */
	CHECK_EQ_INT(rk_utf8_next("\xed\xa0\x80", 3, &cp), -1); /* surrogate */
	CHECK_EQ_INT(rk_utf8_next("\xff", 1, &cp), -1);
	CHECK(rejects("[{\"action\":\"type\",\"text\":\"\xc3\"}]", "not valid UTF-8"));

	/* Unicode text goes through validation untouched */
	struct rk_action_batch b;
	REQUIRE(parse("[{\"action\":\"type\",\"text\":\"äéñ漢😀\\n\"}]", &b) == 0);
	CHECK_EQ_STR(b.actions[0].text, "äéñ漢😀\n");
	rk_action_batch_release(&b);
}

TEST(fit_and_scaling_math)
{
	int w, h;
	rk_picture_fit(1280, 800, 1024, 1024, &w, &h);
	CHECK_EQ_INT(w, 1024);
	CHECK_EQ_INT(h, 640);
	rk_picture_fit(1280, 800, 1024, 0, &w, &h);
	CHECK_EQ_INT(w, 1024);
	CHECK_EQ_INT(h, 640);
	rk_picture_fit(1280, 800, 0, 400, &w, &h);
	CHECK_EQ_INT(w, 640);
	CHECK_EQ_INT(h, 400);
	rk_picture_fit(1280, 800, 0, 0, &w, &h);
	CHECK_EQ_INT(w, 1280);
	CHECK_EQ_INT(h, 800);
	rk_picture_fit(1280, 800, 2000, 2000, &w, &h); /* never enlarged */
	CHECK_EQ_INT(w, 1280);
	CHECK_EQ_INT(h, 800);
	rk_picture_fit(1920, 1080, 1280, 800, &w, &h); /* width binds */
	CHECK_EQ_INT(w, 1280);
	CHECK_EQ_INT(h, 720);
	rk_picture_fit(800, 1280, 1024, 768, &w, &h); /* height binds */
	CHECK_EQ_INT(w, 480);
	CHECK_EQ_INT(h, 768);

	/* image -> screen: the centre of the image pixel */
	CHECK_EQ_INT(rk_coord_to_screen(0, 1024, 1280), 0);
	CHECK_EQ_INT(rk_coord_to_screen(512, 1024, 1280), 640);
	CHECK_EQ_INT(rk_coord_to_screen(800, 1024, 1280), 1000);
	CHECK_EQ_INT(rk_coord_to_screen(1023, 1024, 1280), 1279);
	CHECK_EQ_INT(rk_coord_to_screen(639, 640, 800), 799);
	CHECK_EQ_INT(rk_coord_to_screen(37, 1280, 1280), 37);

	/* the JSON handed to a provider is in screen coordinates */
	struct rk_action_batch b;
	REQUIRE(parse("[{\"action\":\"drag\",\"path\":[[0,0],[1023,639]]},{\"action\":\"click\",\"x\":512,\"y\":320}]",
		      &b) == 0);
	cJSON *j = rk_action_to_json(&b.actions[1], 1024, 640, 1280, 800);
	char *s = cJSON_PrintUnformatted(j);
	CHECK_EQ_STR(s, "{\"action\":\"click\",\"x\":640,\"y\":400,\"button\":\"left\",\"count\":1}");
	free(s);
	cJSON_Delete(j);
	j = rk_action_to_json(&b.actions[0], 1024, 640, 1280, 800);
	s = cJSON_PrintUnformatted(j);
	CHECK_EQ_STR(s, "{\"action\":\"drag\",\"path\":[[0,0],[1279,799]],\"button\":\"left\"}");
	free(s);
	cJSON_Delete(j);
	rk_action_batch_release(&b);
}

TEST(offscreen_coordinates)
{
	struct rk_action_batch b;
	REQUIRE(parse("[{\"action\":\"click\",\"x\":1023,\"y\":639},{\"action\":\"move\",\"x\":1024,\"y\":10}]", &b) == 0);
	CHECK(rk_action_batch_check(&b, 1024, 640, &err) == -RK_EINVALID);
	CHECK(strstr(err.message, "action 1: move: point (1024, 10) is off the screen") != NULL);
	CHECK(strstr(err.message, "1024x640") != NULL);
	CHECK_EQ_INT(rk_action_batch_check(&b, 1280, 800, &err), 0);
	rk_action_batch_release(&b);
	REQUIRE(parse("[{\"action\":\"drag\",\"path\":[[0,0],[10,700]]}]", &b) == 0);
	CHECK(rk_action_batch_check(&b, 1024, 640, &err) == -RK_EINVALID);
	CHECK(strstr(err.message, "action 0: drag: path[1] (10, 700) is off the screen") != NULL);
	rk_action_batch_release(&b);
	/* a batch built in C is held to the same size rule */
	struct rk_action_batch empty = {NULL, 0, -1, -1};
	CHECK(rk_action_batch_check(&empty, 100, 100, &err) == -RK_EINVALID);
	CHECK(strstr(err.message, "1 to 24 actions") != NULL);
}

TEST(single_action_parse)
{
	struct rk_action a;
	const char *t = "{\"action\":\"scroll\",\"x\":3,\"y\":4,\"direction\":\"up\",\"amount\":2}";
	REQUIRE(rk_action_parse(t, strlen(t), &a, &err) == 0);
	CHECK_EQ_INT(a.kind, RK_ACT_SCROLL);
	CHECK_EQ_INT(a.dy, -2);
	CHECK_EQ_INT(a.at.x, 3);
	rk_action_release(&a);
	t = "{\"action\":\"nope\"}";
	CHECK(rk_action_parse(t, strlen(t), &a, &err) == -RK_EINVALID);
}

TEST(scale_and_png_roundtrip)
{
	/* a flat area stays exact; a 2x2 checker averages */
	int sw = 4, sh = 4;
	unsigned char src[4 * 4 * 4];
	for (int y = 0; y < sh; y++)
		for (int x = 0; x < sw; x++) {
			unsigned char *p = src + (y * sw + x) * 4;
			int on = (x + y) % 2;
			p[0] = on ? 200 : 100;
			p[1] = 50;
			p[2] = on ? 0 : 255;
			p[3] = 0;
		}
	unsigned char dst[2 * 2 * 3];
	rk_picture_scale(src, sw, sh, 4, (size_t)sw * 4, dst, 2, 2);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ_INT(dst[i * 3], 150);
		CHECK_EQ_INT(dst[i * 3 + 1], 50);
		CHECK_EQ_INT(dst[i * 3 + 2], 128);
	}
	unsigned char same[4 * 4 * 3];
	rk_picture_scale(src, sw, sh, 4, (size_t)sw * 4, same, 4, 4);
	CHECK_EQ_INT(same[0], 100);
	CHECK_EQ_INT(same[3], 200);
	/* 1280 -> 1024 of a flat grey stays 128 everywhere */
	unsigned char *big = rk_xmalloc(1280 * 8 * 3), *small = rk_xmalloc(1024 * 6 * 3);
	memset(big, 128, 1280 * 8 * 3);
	rk_picture_scale(big, 1280, 8, 3, 1280 * 3, small, 1024, 6);
	int flat = 1;
	for (int i = 0; i < 1024 * 6 * 3; i++)
		flat &= small[i] == 128;
	CHECK(flat);

	struct rk_buf png = RK_BUF_INIT;
	rk_buf_init(&png);
	REQUIRE(rk_picture_png_encode(same, 4, 4, &png, &err) == 0);
	CHECK(png.len > 8 && memcmp(png.data, "\x89PNG", 4) == 0);
	unsigned char *back;
	int w, h;
	REQUIRE(rk_picture_png_decode(png.data, png.len, &back, &w, &h, &err) == 0);
	CHECK_EQ_INT(w, 4);
	CHECK_EQ_INT(h, 4);
	CHECK(memcmp(back, same, sizeof(same)) == 0);
	free(back);
	CHECK(rk_picture_png_decode("nope", 4, &back, &w, &h, &err) == -RK_EINVALID);
	rk_buf_release(&png);
	free(big);
	free(small);
	CHECK(rk_picture_fast_hash("abc", 3) != rk_picture_fast_hash("abd", 3));
}

int main(void)
{
	RUN(parse_array_form);
	RUN(parse_object_form);
	RUN(parse_every_kind);
	RUN(rejects_bad_json);
	RUN(rejects_batch_size);
	RUN(rejects_unknown_kind_and_fields);
	RUN(rejects_missing_and_wrong_types);
	RUN(unknown_key_names);
	RUN(key_combos);
	RUN(unicode_keysyms);
	RUN(fit_and_scaling_math);
	RUN(offscreen_coordinates);
	RUN(single_action_parse);
	RUN(scale_and_png_roundtrip);
	return check_summary("actions");
}
