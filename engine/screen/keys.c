#include "engine/screen/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Keysym values from X11/keysymdef.h; the engine does not link Xlib. */
#define XK_BackSpace 0xff08
#define XK_Tab 0xff09
#define XK_Return 0xff0d
#define XK_Escape 0xff1b
#define XK_Delete 0xffff
#define XK_F1 0xffbe
#define XK_KP_0 0xffb0
#define XK_Control_L 0xffe3
#define XK_Shift_L 0xffe1
#define XK_Alt_L 0xffe9
#define XK_Super_L 0xffeb

struct key_name {
	const char *name;
	uint32_t keysym;
};

/* Names people and models use, then X keysym names. Matched ignoring case. */
/* A table laid out by family, several names a line: not reformatted. */
// clang-format off
static const struct key_name key_names[] = {
	/* modifiers */
	{"ctrl", XK_Control_L}, {"control", XK_Control_L}, {"ctl", XK_Control_L},
	{"control_l", XK_Control_L}, {"control_r", 0xffe4}, {"ctrl_l", XK_Control_L}, {"ctrl_r", 0xffe4},
	{"shift", XK_Shift_L}, {"shift_l", XK_Shift_L}, {"shift_r", 0xffe2},
	{"alt", XK_Alt_L}, {"option", XK_Alt_L}, {"opt", XK_Alt_L}, {"alt_l", XK_Alt_L}, {"alt_r", 0xffea},
	{"altgr", 0xfe03}, {"iso_level3_shift", 0xfe03},
	{"super", XK_Super_L}, {"cmd", XK_Super_L}, {"command", XK_Super_L}, {"meta", XK_Super_L},
	{"win", XK_Super_L}, {"windows", XK_Super_L}, {"super_l", XK_Super_L}, {"super_r", 0xffec},
	{"meta_l", XK_Super_L}, {"meta_r", 0xffec}, {"hyper", 0xffed},
	/* editing and navigation */
	{"return", XK_Return}, {"enter", XK_Return}, {"kp_enter", 0xff8d},
	{"escape", XK_Escape}, {"esc", XK_Escape},
	{"tab", XK_Tab}, {"iso_left_tab", 0xfe20},
	{"backspace", XK_BackSpace}, {"back_space", XK_BackSpace},
	{"delete", XK_Delete}, {"del", XK_Delete},
	{"insert", 0xff63}, {"ins", 0xff63},
	{"home", 0xff50}, {"end", 0xff57},
	{"page_up", 0xff55}, {"pageup", 0xff55}, {"pgup", 0xff55}, {"prior", 0xff55},
	{"page_down", 0xff56}, {"pagedown", 0xff56}, {"pgdn", 0xff56}, {"next", 0xff56},
	{"left", 0xff51}, {"up", 0xff52}, {"right", 0xff53}, {"down", 0xff54},
	{"arrowleft", 0xff51}, {"arrowup", 0xff52}, {"arrowright", 0xff53}, {"arrowdown", 0xff54},
	{"space", 0x20}, {"spacebar", 0x20},
	{"print", 0xff61}, {"printscreen", 0xff61}, {"prtsc", 0xff61},
	{"pause", 0xff13}, {"break", 0xff6b},
	{"scroll_lock", 0xff14}, {"scrolllock", 0xff14},
	{"caps_lock", 0xffe5}, {"capslock", 0xffe5},
	{"num_lock", 0xff7f}, {"numlock", 0xff7f},
	{"menu", 0xff67}, {"apps", 0xff67},
	/* punctuation by name */
	{"plus", '+'}, {"minus", '-'}, {"equal", '='}, {"equals", '='}, {"comma", ','},
	{"period", '.'}, {"dot", '.'}, {"slash", '/'}, {"backslash", '\\'}, {"semicolon", ';'},
	{"colon", ':'}, {"apostrophe", '\''}, {"quote", '\''}, {"quotedbl", '"'}, {"grave", '`'},
	{"backtick", '`'}, {"bracketleft", '['}, {"bracketright", ']'}, {"braceleft", '{'},
	{"braceright", '}'}, {"parenleft", '('}, {"parenright", ')'}, {"asterisk", '*'},
	{"ampersand", '&'}, {"at", '@'}, {"numbersign", '#'}, {"hash", '#'}, {"dollar", '$'},
	{"percent", '%'}, {"asciicircum", '^'}, {"caret", '^'}, {"exclam", '!'}, {"question", '?'},
	{"less", '<'}, {"greater", '>'}, {"bar", '|'}, {"pipe", '|'}, {"underscore", '_'},
	{"asciitilde", '~'}, {"tilde", '~'},
	/* keypad */
	{"kp_add", 0xffab}, {"kp_subtract", 0xffad}, {"kp_multiply", 0xffaa}, {"kp_divide", 0xffaf},
	{"kp_decimal", 0xffae}, {"kp_equal", 0xffbd},
	/* media keys (XF86) */
	{"xf86audiomute", 0x1008ff12}, {"audiomute", 0x1008ff12}, {"volumemute", 0x1008ff12},
	{"xf86audioraisevolume", 0x1008ff13}, {"volumeup", 0x1008ff13}, {"volume_up", 0x1008ff13},
	{"xf86audiolowervolume", 0x1008ff11}, {"volumedown", 0x1008ff11}, {"volume_down", 0x1008ff11},
	{"xf86audioplay", 0x1008ff14}, {"xf86audionext", 0x1008ff17}, {"xf86audioprev", 0x1008ff16},
	{"xf86back", 0x1008ff26}, {"xf86forward", 0x1008ff27}, {"xf86refresh", 0x1008ff29},
};
// clang-format on

int rk_utf8_next(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	if (len == 0)
		return -1;
	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	int n;
	uint32_t c, min;
	if ((u[0] & 0xe0) == 0xc0) {
		n = 2, c = u[0] & 0x1f, min = 0x80;
	} else if ((u[0] & 0xf0) == 0xe0) {
		n = 3, c = u[0] & 0x0f, min = 0x800;
	} else if ((u[0] & 0xf8) == 0xf0) {
		n = 4, c = u[0] & 0x07, min = 0x10000;
	} else {
		return -1;
	}
	if ((size_t)n > len)
		return -1;
	for (int i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -1;
	*cp = c;
	return n;
}

int rk_utf8_put(uint32_t cp, char *out)
{
	unsigned char *u = (unsigned char *)out;
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | (cp >> 6));
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (cp >> 12));
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (unsigned char)(0xf0 | (cp >> 18));
	u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	u[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

uint32_t rk_keysym_from_codepoint(uint32_t cp)
{
	if (cp == '\n' || cp == '\r')
		return XK_Return;
	if (cp == '\t')
		return XK_Tab;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	if (cp <= 0xff)
		return cp;
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return 0x01000000u | cp;
}

/* One name (no "+") to a keysym; 0 when unknown. */
static uint32_t keysym_from_name(const char *name, size_t len)
{
	uint32_t cp;
	int n = rk_utf8_next(name, len, &cp);
	if (n > 0 && (size_t)n == len)
		return rk_keysym_from_codepoint(cp) ? rk_keysym_from_codepoint(cp) : 0;
	if (len >= 2 && (name[0] == 'f' || name[0] == 'F')) {
		char *end;
		char tmp[8];
		if (len < sizeof(tmp)) {
			memcpy(tmp, name + 1, len - 1);
			tmp[len - 1] = 0;
			long f = strtol(tmp, &end, 10);
			if (*end == 0 && tmp[0] >= '1' && tmp[0] <= '9' && f >= 1 && f <= 35)
				return XK_F1 + (uint32_t)(f - 1);
		}
	}
	if (len == 4 && strncasecmp(name, "kp_", 3) == 0 && name[3] >= '0' && name[3] <= '9')
		return XK_KP_0 + (uint32_t)(name[3] - '0');
	for (size_t i = 0; i < sizeof(key_names) / sizeof(key_names[0]); i++)
		if (strlen(key_names[i].name) == len && strncasecmp(key_names[i].name, name, len) == 0)
			return key_names[i].keysym;
	return 0;
}

int rk_codepoint_is_upper(uint32_t cp)
{
	if (cp >= 'A' && cp <= 'Z')
		return 1;
	if (cp >= 0xc0 && cp <= 0xde)
		return cp != 0xd7;
	if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14a && cp <= 0x177))
		return cp % 2 == 0;
	if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e))
		return cp % 2 == 1;
	if (cp == 0x178)
		return 1;
	if (cp >= 0x391 && cp <= 0x3a9)
		return cp != 0x3a2;
	return cp >= 0x400 && cp <= 0x42f;
}

/* What shift makes of a key on a US layout; the key itself otherwise. */
static uint32_t shifted(uint32_t ks)
{
	static const char plain[] = "`1234567890-=[]\\;',./";
	static const char shift[] = "~!@#$%^&*()_+{}|:\"<>?";
	if (ks >= 'a' && ks <= 'z')
		return ks - 'a' + 'A';
	if (ks >= 0xe0 && ks <= 0xfe && ks != 0xf7)
		return ks - 0x20;
	if (ks == XK_Tab)
		return 0xfe20; /* ISO_Left_Tab */
	const char *p = ks < 0x80 && ks ? strchr(plain, (int)ks) : NULL;
	return p ? (uint32_t)(unsigned char)shift[p - plain] : ks;
}

int rk_keys_parse(const char *spec, struct rk_key_combo *out, struct rk_error *err)
{
	out->n = 0;
	if (!spec || !*spec)
		return rk_error_set(err, RK_EINVALID, "key combo is empty (try \"Return\" or \"ctrl+c\")");
	size_t total = strlen(spec);
	const char *p = spec, *end = spec + total;
	while (p < end) {
		/* a part runs to the next "+"; a "+" that starts a part is the plus key */
		const char *q = p;
		if (*q == '+')
			q++;
		while (q < end && *q != '+')
			q++;
		const char *a = p, *b = q;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (a == b)
			return rk_error_set(err, RK_EINVALID, "key combo \"%s\" has an empty key name", spec);
		uint32_t ks = keysym_from_name(a, (size_t)(b - a));
		if (!ks)
			return rk_error_set(
				err, RK_EINVALID,
				"unknown key \"%.*s\" in \"%s\" (use names like Return, Escape, Tab, "
				"BackSpace, ctrl, shift, alt, super, F1-F35, Page_Up, Left, or one character)",
				(int)(b - a), a, spec);
		if (out->n == RK_KEYS_MAX)
			return rk_error_set(err, RK_EINVALID, "key combo \"%s\" has more than %d keys", spec,
					    RK_KEYS_MAX);
		out->keysyms[out->n++] = ks;
		if (q == end)
			break;
		p = q + 1; /* past the "+" separator */
		if (p == end)
			return rk_error_set(err, RK_EINVALID, "key combo \"%s\" ends with \"+\" (use \"plus\")", spec);
	}
	int shift = 0;
	for (size_t i = 0; i < out->n; i++)
		shift |= out->keysyms[i] == XK_Shift_L || out->keysyms[i] == 0xffe2;
	if (shift)
		for (size_t i = 0; i < out->n; i++)
			out->keysyms[i] = shifted(out->keysyms[i]);
	return 0;
}
