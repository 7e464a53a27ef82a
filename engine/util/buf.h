#ifndef RK_BUF_H
#define RK_BUF_H
/* A growable byte buffer, always NUL-terminated (like git's strbuf).
 * rk_buf_init/rk_buf_release for caller-held buffers. Allocation failure
 * aborts: there is nothing useful to do on an out-of-memory path. */

#include <stdarg.h>
#include <stddef.h>

struct rk_buf {
	char *data; /* never NULL after init; NUL at data[len] */
	size_t len;
	size_t cap;
};

#define RK_BUF_INIT                                                                                                    \
	{                                                                                                              \
		0                                                                                                      \
	}

void rk_buf_init(struct rk_buf *b);
void rk_buf_release(struct rk_buf *b);
void rk_buf_reset(struct rk_buf *b);
void rk_buf_grow(struct rk_buf *b, size_t extra);
void rk_buf_add(struct rk_buf *b, const void *data, size_t len);
void rk_buf_adds(struct rk_buf *b, const char *s);
void rk_buf_addc(struct rk_buf *b, char c);
void rk_buf_printf(struct rk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rk_buf_vprintf(struct rk_buf *b, const char *fmt, va_list ap);
/* Drops the first n bytes. */
void rk_buf_consume(struct rk_buf *b, size_t n);
/* Hands the data to the caller (free() it); the buffer is reset. */
char *rk_buf_detach(struct rk_buf *b, size_t *len);

/* Allocating helpers that abort on out-of-memory. */
void *rk_xmalloc(size_t n);
void *rk_xcalloc(size_t n, size_t size);
void *rk_xrealloc(void *p, size_t n);
char *rk_xstrdup(const char *s); /* NULL stays NULL */
char *rk_xstrndup(const char *s, size_t n);
char *rk_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *rk_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* Zeroes the secret string *s (tokens, keys, URLs that carry one), frees
 * it and sets *s to NULL; NULL is fine. */
void rk_free_secret(char **s);

/* 1 when s[0..n) is well-formed UTF-8 without a NUL byte (overlong forms,
 * surrogates and code points past U+10FFFF are not). */
int rk_utf8_valid(const char *s, size_t n);
/* The length (1 to 4) of the well-formed UTF-8 sequence at s (n bytes
 * available; a NUL is one), or 0 when the bytes there are not one. */
size_t rk_utf8_len(const char *s, size_t n);

/* Appends s[0..n) to out with every byte that is not part of well-formed
 * UTF-8 written as the text \xNN, so the result is always UTF-8 (for error
 * JSON). With RK_ESCAPE_CONTROLS also the C0 controls and DEL (as \x1b) and
 * the C1 controls (as \u009b), which drive a terminal; RK_ESCAPE_KEEP_LINES
 * keeps \n and \t. RK_ESCAPE_IN_JSON: s is printed JSON (such bytes occur
 * only inside its strings), and the escapes are JSON's: \\xNN, \u001b.
 * Returns how many were escaped. */
#define RK_ESCAPE_CONTROLS 1
#define RK_ESCAPE_KEEP_LINES 2
#define RK_ESCAPE_IN_JSON 4
size_t rk_utf8_escape(struct rk_buf *out, const char *s, size_t n, int flags);

#endif
