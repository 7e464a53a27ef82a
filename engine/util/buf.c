#include "engine/util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static char empty_data[1];

void *rk_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void *rk_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

void *rk_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

void rk_free_secret(char **s)
{
	if (*s)
		sodium_memzero(*s, strlen(*s));
	free(*s);
	*s = NULL;
}

char *rk_xstrdup(const char *s)
{
	return s ? rk_xstrndup(s, strlen(s)) : NULL;
}

char *rk_xstrndup(const char *s, size_t n)
{
	char *p = rk_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *rk_xvasprintf(const char *fmt, va_list ap)
{
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_vprintf(&b, fmt, ap);
	return rk_buf_detach(&b, NULL);
}

char *rk_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = rk_xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void rk_buf_init(struct rk_buf *b)
{
	b->data = empty_data;
	b->len = 0;
	b->cap = 0;
}

void rk_buf_release(struct rk_buf *b)
{
	if (b->cap)
		free(b->data);
	rk_buf_init(b);
}

void rk_buf_reset(struct rk_buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

void rk_buf_grow(struct rk_buf *b, size_t extra)
{
	if (!b->data)
		rk_buf_init(b);
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	if (b->cap) {
		b->data = rk_xrealloc(b->data, cap);
	} else {
		b->data = rk_xmalloc(cap);
		b->data[0] = '\0';
	}
	b->cap = cap;
}

void rk_buf_add(struct rk_buf *b, const void *data, size_t len)
{
	rk_buf_grow(b, len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void rk_buf_adds(struct rk_buf *b, const char *s)
{
	rk_buf_add(b, s, strlen(s));
}

void rk_buf_addc(struct rk_buf *b, char c)
{
	rk_buf_add(b, &c, 1);
}

void rk_buf_vprintf(struct rk_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	rk_buf_grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void rk_buf_printf(struct rk_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rk_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void rk_buf_consume(struct rk_buf *b, size_t n)
{
	if (n >= b->len) {
		rk_buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *rk_buf_detach(struct rk_buf *b, size_t *len)
{
	char *p;
	if (len)
		*len = b->len;
	if (b->cap) {
		p = b->data;
	} else {
		p = rk_xmalloc(1);
		p[0] = '\0';
	}
	rk_buf_init(b);
	return p;
}

size_t rk_utf8_len(const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	size_t more;
	unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
	if (c < 0x80)
		return 1;
	else if (c >= 0xC2 && c < 0xE0)
		more = 1;
	else if (c >= 0xE0 && c < 0xF0)
		more = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF; /* overlong; surrogates */
	else if (c >= 0xF0 && c < 0xF5)
		more = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF; /* overlong; past U+10FFFF */
	else
		return 0;
	if (more > n - 1 || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t j = 2; j <= more; j++)
		if ((s[j] & 0xC0) != 0x80)
			return 0;
	return more + 1;
}

int rk_utf8_valid(const char *text, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t k = text[i] ? rk_utf8_len(text + i, n - i) : 0;
		if (!k)
			return 0; /* a NUL cannot travel in a C or JSON string: such data goes as base64 */
		i += k;
	}
	return 1;
}

size_t rk_utf8_escape(struct rk_buf *out, const char *text, size_t n, int flags)
{
	const unsigned char *s = (const unsigned char *)text;
	int json = flags & RK_ESCAPE_IN_JSON;
	size_t i = 0, escaped = 0;
	while (i < n) {
		size_t k = rk_utf8_len(text + i, n - i);
		unsigned char c = s[i];
		int control = (k == 1 && (c < 0x20 || c == 0x7F) &&
			       !((flags & RK_ESCAPE_KEEP_LINES) && (c == '\n' || c == '\t'))) ||
			      (k == 2 && c == 0xC2 && s[i + 1] < 0xA0); /* C1: U+0080..U+009F */
		if (!k) {
			rk_buf_printf(out, json ? "\\\\x%02x" : "\\x%02x", c);
			k = 1;
			escaped++;
		} else if ((flags & RK_ESCAPE_CONTROLS) && control) {
			rk_buf_printf(out, json || k == 2 ? "\\u%04x" : "\\x%02x", k == 1 ? c : s[i + 1]);
			escaped++;
		} else {
			rk_buf_add(out, text + i, k);
		}
		i += k;
	}
	return escaped;
}
