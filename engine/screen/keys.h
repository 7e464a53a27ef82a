#ifndef RK_KEYS_H
#define RK_KEYS_H
/* Keys: key-combo names to X keysyms, Unicode codepoints to keysyms, and
 * the UTF-8 decoding both need. Pure functions; no X connection. */

#include <stddef.h>
#include <stdint.h>

#include "engine/util/err.h"

#define RK_KEYS_MAX 8

/* A combo as pressed: keysyms[0..n) go down in order and up in reverse. */
struct rk_key_combo {
	uint32_t keysyms[RK_KEYS_MAX];
	size_t n;
};

/* Parses "ctrl+shift+t", "Return", "F5", "Enter" (Return), "esc" (Escape),
 * "cmd"/"super"/"meta"/"win" (Super_L), "ctrl++" (ctrl and plus), or one
 * character ("a", "é"). Names are case-insensitive; X keysym names such as
 * "Page_Up" or "KP_Enter" work too. An unknown name is RK_EINVALID naming
 * it.
 * With shift in a combo the key is sent as its shifted keysym on a US
 * layout ("ctrl+shift+t" sends Control_L, Shift_L, T; "shift+1" sends "!";
 * "shift+Tab" ISO_Left_Tab): x11vnc's modifier tweaking (-xkb) would
 * otherwise release shift for a keysym that does not need it. */
int rk_keys_parse(const char *spec, struct rk_key_combo *out, struct rk_error *err);

/* The keysym that types codepoint cp: Latin-1 maps to itself, "\n" and "\r"
 * to Return, "\t" to Tab, everything else to the Unicode keysym
 * 0x01000000 + cp. 0 for what cannot be typed (other control characters,
 * surrogates, beyond U+10FFFF). */
uint32_t rk_keysym_from_codepoint(uint32_t cp);

/* An uppercase letter (Latin, Greek, Cyrillic) that has a lowercase form:
 * such characters are typed with shift held, since a keysym x11vnc adds to
 * the keymap lands on a key whose unshifted level is the lowercase one. */
int rk_codepoint_is_upper(uint32_t cp);

/* Decodes one UTF-8 sequence at s (len bytes available): returns the bytes
 * it takes (1-4) and sets *cp, or -1 for an invalid, overlong or truncated
 * sequence. */
int rk_utf8_next(const char *s, size_t len, uint32_t *cp);

/* Appends the UTF-8 encoding of cp to out (>= 4 bytes); returns its length. */
int rk_utf8_put(uint32_t cp, char *out);

#endif
