/* Secrets: sealed storage, origin checks, sending, redaction (see secret.h). */

#include "engine/access/secret.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/state/db_access.h"
#include "engine/util/fs.h"
#include "engine/util/http.h"
#include "engine/util/json.h"
#include "engine/util/id.h"
#include "engine/util/ipc.h"
#include "engine/util/log.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_secret_auth, RK_SECRET_AUTH, RK_SECRET_AUTHS)

#define KEY_BYTES crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES

/* --- the master key ---------------------------------------------------------------- */

static int hex_value(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* The byte two hex digits spell, or -1. */
static int hex_byte(const char *t)
{
	int h = hex_value(t[0]), l = hex_value(t[1]);
	return h < 0 || l < 0 ? -1 : h << 4 | l;
}

static int parse_hex_key(const char *s, size_t n, unsigned char key[KEY_BYTES])
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (n != 2 * KEY_BYTES)
		return -1;
	for (size_t i = 0; i < KEY_BYTES; i++) {
		int h = hex_value(s[2 * i]), l = hex_value(s[2 * i + 1]);
		if (h < 0 || l < 0)
			return -1;
		key[i] = (unsigned char)(h << 4 | l);
	}
	return 0;
}

static int master_key(struct rk_engine *eng, unsigned char key[KEY_BYTES], struct rk_error *err)
{
	if (sodium_init() < 0)
		return rk_error_set(err, RK_EFAILED, "libsodium could not start");
	const char *env = getenv("RAKAZO_MASTER_KEY");
	if (env && *env) {
		if (parse_hex_key(env, strlen(env), key))
			return rk_error_set(err, RK_EINVALID, "RAKAZO_MASTER_KEY must be 64 hex digits (32 bytes)");
		return 0;
	}
	char *path = rk_path_join(eng->data_dir, "master.key");
	int r = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		unsigned char fresh[KEY_BYTES];
		char hex[2 * KEY_BYTES + 2];
		randombytes_buf(fresh, sizeof(fresh));
		sodium_bin2hex(hex, sizeof(hex), fresh, sizeof(fresh));
		strcat(hex, "\n");
		int wfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (wfd >= 0) {
			if (rk_fs_write_fd(wfd, hex, strlen(hex)) != 0 || fsync(wfd) != 0)
				r = rk_error_errno(err, RK_EIO, errno, "cannot write the master key %s", path);
			close(wfd);
			rk_fs_fsync_dir(eng->data_dir);
		} else if (errno != EEXIST) {
			r = rk_error_errno(err, RK_EIO, errno, "cannot create the master key %s", path);
		}
		sodium_memzero(fresh, sizeof(fresh));
		sodium_memzero(hex, sizeof(hex));
		if (r == 0)
			fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (r == 0 && fd < 0)
		r = rk_error_errno(err, RK_EIO, errno, "cannot open the master key %s", path);
	if (r == 0) {
		struct stat sb;
		char buf[2 * KEY_BYTES + 8];
		ssize_t n;
		if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
			r = rk_error_set(err, RK_ECORRUPT, "master key %s is not a regular file", path);
		else if (sb.st_mode & 077)
			r = rk_error_set(err, RK_EDENIED,
					 "master key %s has mode %03o: others may read it; `chmod 600 %s` if that is "
					 "safe, else rotate every secret",
					 path, (unsigned)(sb.st_mode & 0777), path);
		else if ((n = rk_fs_read_fd(fd, buf, sizeof(buf))) < 0 || parse_hex_key(buf, (size_t)n, key))
			r = rk_error_set(err, RK_ECORRUPT, "master key %s is not 64 hex digits", path);
		sodium_memzero(buf, sizeof(buf));
	}
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

/* user, space, bot and name, each length-prefixed, after a version tag. */
static void associated_data(struct rk_buf *ad, const char *user, const char *space, const char *bot, const char *name)
{
	rk_buf_adds(ad, "rakazo-secret-v1");
	const char *parts[] = {user, space, bot, name};
	for (size_t i = 0; i < 4; i++) {
		uint32_t n = (uint32_t)strlen(parts[i]);
		unsigned char len[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
					(unsigned char)n};
		rk_buf_add(ad, len, 4);
		rk_buf_add(ad, parts[i], n);
	}
}

/* --- origins and auth specs ------------------------------------------------------------ */

/* An "@" between "://" and the path: userinfo, however the parser took it. */
static int at_in_authority(const char *url)
{
	const char *p = strstr(url, "://");
	if (!p)
		return 0;
	size_t n = strcspn(p + 3, "/?#");
	return memchr(p + 3, '@', n) != NULL;
}

int rk_secret_origin(const char *url, int origin_only, char **origin, struct rk_error *err)
{
	*origin = NULL;
	if (!url || !*url)
		return rk_error_set(err, RK_EINVALID, "a URL is needed");
	if (strchr(url, '#'))
		return rk_error_set(err, RK_EDENIED, "the URL has a fragment (#...): refused");
	struct rk_http_url u;
	int r = 0;
	if (rk_http_url_parse(url, &u) != 0) {
		r = rk_error_set(err, RK_EINVALID, "'%s' is not a URL", url);
		goto out;
	}
	if (!u.scheme || (strcmp(u.scheme, "http") != 0 && strcmp(u.scheme, "https") != 0)) {
		r = rk_error_set(err, RK_EINVALID, "'%s': only http and https URLs are allowed", url);
	} else if (u.user || u.password || at_in_authority(url)) {
		r = rk_error_set(err, RK_EDENIED, "the URL has userinfo (user@...): refused");
	} else if (!u.host || !*u.host || !u.port) {
		r = rk_error_set(err, RK_EINVALID, "'%s' has no host", url);
	} else if (origin_only && ((u.path && strcmp(u.path, "/") != 0) || u.query)) {
		r = rk_error_set(err, RK_EINVALID, "'%s' is not an origin: give scheme://host[:port] only", url);
	} else {
		for (char *p = u.host; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		*origin = rk_xasprintf("%s://%s:%s", u.scheme, u.host, u.port);
	}
out:
	rk_http_url_release(&u);
	return r;
}

static int token_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return 0;
	return 1;
}

int rk_secret_auth_parse(const char *spec, char **kind, char **param, struct rk_error *err)
{
	*kind = *param = NULL;
	if (rk_secret_auth_of(spec) == RK_SECRET_BEARER || rk_secret_auth_of(spec) == RK_SECRET_BASIC) {
		*kind = rk_xstrdup(spec);
		return 0;
	}
	const char *colon = spec ? strchr(spec, ':') : NULL;
	if (colon && (!strncmp(spec, "header:", 7) || !strncmp(spec, "query:", 6)) && token_ok(colon + 1)) {
		const char *p = colon + 1;
		if (!strncmp(spec, "header:", 7) &&
		    (!strcasecmp(p, "host") || !strcasecmp(p, "content-length") || !strcasecmp(p, "cookie")))
			return rk_error_set(err, RK_EINVALID, "--auth header:%s: that header cannot carry a secret", p);
		*kind = rk_xstrndup(spec, (size_t)(colon - spec));
		*param = rk_xstrdup(p);
		return 0;
	}
	return rk_error_set(err, RK_EINVALID,
			    "auth '%s' is not one of bearer, basic, header:NAME or query:NAME (NAME a header or "
			    "parameter name)",
			    spec ? spec : "");
}

static int name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.'))
			return 0;
	return 1;
}

static int check_name(const char *name, struct rk_error *err)
{
	if (!name_ok(name))
		return rk_error_set(err, RK_EINVALID,
				    "secret name '%s' is not valid: use 1 to 128 letters, digits, '_', '-' and '.'",
				    name ? name : "");
	return 0;
}

/* --- redaction ---------------------------------------------------------------------- */

/* Redaction writes a new text with some spans of b replaced by [redacted];
 * out stays unallocated until the first span, and the old text is wiped. */
static void out_span(struct rk_buf *out, const struct rk_buf *b, size_t *copied, size_t at, size_t end)
{
	if (!out->data)
		rk_buf_init(out);
	rk_buf_add(out, b->data + *copied, at - *copied);
	rk_buf_adds(out, RK_SECRET_REDACTED);
	*copied = end;
}

static void out_finish(struct rk_buf *b, struct rk_buf *out, size_t copied)
{
	if (!out->data)
		return;
	rk_buf_add(out, b->data + copied, b->len - copied);
	sodium_memzero(b->data, b->len);
	rk_buf_release(b);
	*b = *out;
}

static const char *find_ci(const char *h, size_t n, const char *needle, size_t m)
{
	unsigned char first = (unsigned char)tolower((unsigned char)needle[0]);
	for (size_t i = 0; i + m <= n; i++)
		if ((unsigned char)tolower((unsigned char)h[i]) == first && !strncasecmp(h + i, needle, m))
			return h + i;
	return NULL;
}

/* Every needle[0..m) in b (ci: in either case). The needle holds no NUL. */
static void redact_exact(struct rk_buf *b, const char *needle, size_t m, int ci)
{
	if (m == 0 || b->len < m)
		return;
	struct rk_buf out = RK_BUF_INIT;
	size_t at = 0;
	const char *hit;
	while (at + m <= b->len && (hit = ci ? find_ci(b->data + at, b->len - at, needle, m)
					     : memmem(b->data + at, b->len - at, needle, m))) {
		size_t i = (size_t)(hit - b->data);
		out_span(&out, b, &at, i, i + m);
	}
	out_finish(b, &out, at);
}

static int hex4(const char *t)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hex_value(t[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* The JSON escape at t (t[0] is a backslash): its length, with the UTF-8
 * bytes it stands for in u[0..*ulen); 0 when it is none. */
static size_t json_escape(const char *t, size_t n, unsigned char u[4], size_t *ulen)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	if (n < 2)
		return 0;
	const char *e = memchr(from, t[1], sizeof(from) - 1);
	if (e) {
		u[0] = (unsigned char)to[e - from];
		*ulen = 1;
		return 2;
	}
	int cp;
	if (t[1] != 'u' || n < 6 || (cp = hex4(t + 2)) < 0)
		return 0;
	size_t used = 6;
	if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
		int lo;
		if (n < 12 || t[6] != '\\' || t[7] != 'u' || (lo = hex4(t + 8)) < 0xDC00 || lo > 0xDFFF)
			return 0;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		used = 12;
	} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
		return 0;
	}
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		*ulen = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xC0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3F));
		*ulen = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xE0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp & 0x3F));
		*ulen = 3;
	} else {
		u[0] = (unsigned char)(0xF0 | cp >> 18);
		u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[3] = (unsigned char)(0x80 | (cp & 0x3F));
		*ulen = 4;
	}
	return used;
}

/* Where s[0..len) ends when it is written at t[i..n) with any of its bytes
 * as itself, a JSON escape (\" \\ \/ \n ... \uXXXX, surrogate pairs), a
 * percent escape (%XX, either case) or, for a space, '+'; 0 when it is not
 * there. An escape is taken when it stands for the next bytes of s, else
 * its first byte is compared as itself (the plain form is searched for on
 * its own as well). */
static size_t decoded_at(const char *t, size_t n, size_t i, const char *s, size_t len)
{
	size_t p = i, k = 0;
	while (k < len) {
		if (p >= n)
			return 0;
		unsigned char c = (unsigned char)t[p], u[4];
		size_t ul = 0, el;
		if (c == '\\' && (el = json_escape(t + p, n - p, u, &ul)) && ul <= len - k && !memcmp(u, s + k, ul)) {
			p += el;
			k += ul;
		} else if (c == '%' && p + 2 < n && hex_byte(t + p + 1) == (unsigned char)s[k]) {
			p += 3;
			k++;
		} else if ((c == '+' && s[k] == ' ') || c == (unsigned char)s[k]) {
			p++;
			k++;
		} else {
			return 0;
		}
	}
	return p;
}

/* s plain, JSON-escaped, percent-encoded or form-encoded, or a mix. */
static void redact_decoded(struct rk_buf *b, const char *s, size_t len)
{
	redact_exact(b, s, len, 0);
	if (!memchr(b->data, '\\', b->len) && !memchr(b->data, '%', b->len) && !memchr(b->data, '+', b->len))
		return;
	struct rk_buf out = RK_BUF_INIT;
	size_t copied = 0, i = 0;
	while (i < b->len) {
		unsigned char c = (unsigned char)b->data[i];
		size_t end = 0;
		if (c == (unsigned char)s[0] || c == '\\' || c == '%' || (c == '+' && s[0] == ' '))
			end = decoded_at(b->data, b->len, i, s, len);
		if (end) {
			out_span(&out, b, &copied, i, end);
			i = end;
		} else {
			i++;
		}
	}
	out_finish(b, &out, copied);
}

static char *base64_variant(const char *s, size_t len, int variant)
{
	size_t cap = sodium_base64_encoded_len(len, variant);
	char *o = rk_xmalloc(cap);
	sodium_bin2base64(o, cap, (const unsigned char *)s, len, variant);
	return o;
}

static void free_form(char *f)
{
	sodium_memzero(f, strlen(f));
	free(f);
}

/* Base64 of s inside a longer base64 text: s may start at any of the 3
 * byte offsets of a group, so for each the characters that come from s
 * alone (the ones at its edges mix in the bytes around it and stay). Only
 * when that run is long enough not to match by chance. */
#define BASE64_CORE_MIN 8
static void redact_base64_cores(struct rk_buf *b, const char *s, size_t len, int variant)
{
	for (size_t k = 0; k < 3; k++) {
		size_t start = (8 * k + 5) / 6, end = 8 * (k + len) / 6;
		if (end < start + BASE64_CORE_MIN)
			continue;
		char *in = rk_xmalloc(k + len);
		memset(in, 0, k);
		memcpy(in + k, s, len);
		char *enc = base64_variant(in, k + len, variant);
		redact_exact(b, enc + start, end - start, 0);
		sodium_memzero(in, k + len);
		free(in);
		free_form(enc);
	}
}

static char *hex_of(const char *s, size_t len)
{
	char *o = rk_xmalloc(2 * len + 1);
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		o[2 * i] = d[(unsigned char)s[i] >> 4];
		o[2 * i + 1] = d[(unsigned char)s[i] & 15];
	}
	o[2 * len] = 0;
	return o;
}

static void redact_one(struct rk_buf *b, const char *s, size_t len)
{
	if (len == 0 || b->len == 0)
		return;
	/* whole base64 forms, longest first, so a longer one is not cut up by a
	 * shorter one inside it */
	static const int whole[] = {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_URLSAFE,
				    sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
				    sodium_base64_VARIANT_URLSAFE_NO_PADDING};
	for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
		char *f = base64_variant(s, len, whole[i]);
		redact_exact(b, f, strlen(f), 0);
		free_form(f);
	}
	char *hex = hex_of(s, len);
	redact_exact(b, hex, 2 * len, 1);
	free_form(hex);
	redact_decoded(b, s, len);
	redact_base64_cores(b, s, len, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	redact_base64_cores(b, s, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

void rk_secret_redact(struct rk_buf *b, const char *secret, size_t len)
{
	redact_one(b, secret, len);
	/* basic: "user:password"; the password alone is secret too */
	const char *colon = memchr(secret, ':', len);
	if (colon && (size_t)(secret + len - colon - 1) >= 4)
		redact_one(b, colon + 1, (size_t)(secret + len - colon - 1));
}

/* --- credential-looking text ------------------------------------------------------------ */

static int ident_char(unsigned char c)
{
	return isalnum(c) || c == '_';
}

/* The end of the value starting at i: up to the closing quote of a quoted
 * value (the quotes themselves stay), else up to a space or shell
 * punctuation. *start is where the redaction begins. */
static size_t value_span(const char *s, size_t n, size_t i, size_t *start)
{
	if (i < n && (s[i] == '"' || s[i] == '\'')) {
		char q = s[i];
		const char *close = memchr(s + i + 1, q, n - i - 1);
		*start = i + 1;
		return close ? (size_t)(close - s) : n;
	}
	*start = i;
	while (i < n && !isspace((unsigned char)s[i]) && !strchr("\"'`;&|<>(),", s[i]))
		i++;
	return i;
}

static int has_word_ci(const char *s, size_t n, const char *const *words)
{
	for (size_t w = 0; words[w]; w++) {
		size_t k = strlen(words[w]);
		for (size_t i = 0; i + k <= n; i++)
			if (!strncasecmp(s + i, words[w], k))
				return 1;
	}
	return 0;
}

static int prefix_ci(const char *s, size_t n, size_t i, const char *p)
{
	size_t k = strlen(p);
	return i + k <= n && !strncasecmp(s + i, p, k);
}

/* The length of a well-known key shape at i (0: none). */
static size_t key_shape(const char *s, size_t n, size_t i)
{
	static const struct {
		const char *prefix;
		size_t min;
	} shapes[] = {{"sk-", 16},   {"ghp_", 20},  {"gho_", 20},  {"ghs_", 20},   {"ghu_", 20}, {"github_pat_", 20},
		      {"xoxb-", 10}, {"xoxp-", 10}, {"xoxa-", 10}, {"glpat-", 16}, {"AKIA", 16}};
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		size_t pl = strlen(shapes[k].prefix);
		if (i + pl > n || strncmp(s + i, shapes[k].prefix, pl))
			continue;
		size_t j = i + pl;
		while (j < n && (ident_char((unsigned char)s[j]) || s[j] == '-'))
			j++;
		if (j - i - pl >= shapes[k].min)
			return j - i;
	}
	return 0;
}

void rk_secret_redact_patterns(struct rk_buf *b)
{
	static const char *const secretish[] = {"key", "token", "secret", "passw", "credential", NULL};
	static const char *const options[] = {"--password", "--passwd",	    "--token",	       "--api-key", "--apikey",
					      "--secret",   "--access-key", "--client-secret", NULL};
	const char *s = b->data;
	size_t n = b->len;
	struct rk_buf out = RK_BUF_INIT;
	size_t copied = 0; /* s[..copied) is in out (only once something is redacted) */
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		int boundary = i == 0 || !ident_char((unsigned char)s[i - 1]);
		size_t vstart = 0, vend = 0; /* a value to redact at [vstart, vend) */
		size_t kl;
		if (boundary && strchr("sgxA", c) && (kl = key_shape(s, n, i))) {
			vstart = i, vend = i + kl;
		} else if (boundary && (c == 'a' || c == 'A' || c == 'b' || c == 'B') &&
			   (prefix_ci(s, n, i, "authorization:") || prefix_ci(s, n, i, "bearer "))) {
			int auth = c == 'a' || c == 'A';
			size_t j = i + (auth ? strlen("authorization:") : strlen("bearer "));
			while (j < n && s[j] == ' ')
				j++;
			if (auth) { /* a scheme word first: Bearer, Basic, token */
				size_t w = j;
				while (w < n && isalpha((unsigned char)s[w]))
					w++;
				if (w > j && w < n && s[w] == ' ') {
					j = w;
					while (j < n && s[j] == ' ')
						j++;
				}
			}
			vend = value_span(s, n, j, &vstart);
		} else if (c == '-' && i + 2 < n && s[i + 1] == '-') {
			for (size_t k = 0; options[k]; k++) {
				size_t ol = strlen(options[k]);
				if (!prefix_ci(s, n, i, options[k]) ||
				    (i + ol < n && ident_char((unsigned char)s[i + ol])))
					continue;
				size_t j = i + ol;
				if (j < n && s[j] == '=')
					j++;
				else
					while (j < n && s[j] == ' ')
						j++;
				vend = value_span(s, n, j, &vstart);
				break;
			}
		} else if (boundary && (isalpha(c) || c == '_')) {
			/* NAME=VALUE or NAME: VALUE (a header) */
			size_t j = i;
			while (j < n && (ident_char((unsigned char)s[j]) || s[j] == '-'))
				j++;
			int assign = j < n && s[j] == '=' && (j + 1 >= n || s[j + 1] != '=');
			int header = j + 1 < n && s[j] == ':' && s[j + 1] == ' ';
			if ((assign || header) && has_word_ci(s + i, j - i, secretish)) {
				size_t v = j + 1;
				while (header && v < n && s[v] == ' ')
					v++;
				vend = value_span(s, n, v, &vstart);
			} else {
				i = j; /* the word whole: no match inside it */
				continue;
			}
		} else if (c == ':' && i + 2 < n && s[i + 1] == '/' && s[i + 2] == '/') {
			/* scheme://user:password@host */
			size_t j = i + 3, colon = 0;
			while (j < n && !isspace((unsigned char)s[j]) && !strchr("/@?#\"'", s[j])) {
				if (s[j] == ':' && !colon)
					colon = j;
				j++;
			}
			if (colon && j < n && s[j] == '@' && j > colon + 1)
				vstart = colon + 1, vend = j;
		}
		if (vend > vstart) {
			if (!out.data)
				rk_buf_init(&out);
			rk_buf_add(&out, s + copied, vstart - copied);
			rk_buf_adds(&out, RK_SECRET_REDACTED);
			i = copied = vend;
			continue;
		}
		i++;
	}
	if (!out.data)
		return;
	rk_buf_add(&out, s + copied, n - copied);
	rk_buf_release(b);
	*b = out;
}


/* --- the store ------------------------------------------------------------------------ */

int rk_secret_set(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *origin_url,
		  const char *auth, const void *value, size_t len, struct rk_error *err)
{
	int r = check_name(name, err);
	if (r)
		return r;
	if (len == 0)
		return rk_error_set(err, RK_EINVALID, "the secret's value is empty");
	if (len > RK_SECRET_VALUE_MAX)
		return rk_error_set(err, RK_ETOOLARGE, "the secret's value exceeds %d bytes", RK_SECRET_VALUE_MAX);
	char *origin = NULL, *kind = NULL, *param = NULL;
	if ((r = rk_secret_origin(origin_url, 1, &origin, err)) || (r = rk_secret_auth_parse(auth, &kind, &param, err)))
		goto out;
	if (rk_secret_auth_of(kind) == RK_SECRET_BASIC && !memchr(value, ':', len)) {
		r = rk_error_set(err, RK_EINVALID, "a basic secret is 'user:password'");
		goto out;
	}
	unsigned char key[KEY_BYTES], nonce[NONCE_BYTES];
	if ((r = master_key(eng, key, err)))
		goto out;
	randombytes_buf(nonce, sizeof(nonce));
	struct rk_buf ad = RK_BUF_INIT;
	rk_buf_init(&ad);
	const char *bot = a->bot ? a->bot : "";
	associated_data(&ad, a->user, a->space, bot, name);
	unsigned char *ct = rk_xmalloc(len + TAG_BYTES);
	unsigned long long ctlen = 0;
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, &ctlen, value, len, (const unsigned char *)ad.data, ad.len, NULL,
						   nonce, key);
	sodium_memzero(key, sizeof(key));
	rk_buf_release(&ad);
	char *id = rk_id_new("sec");
	struct rk_secret_seal row = {.id = id,
				     .user_id = a->user,
				     .space_id = a->space,
				     .bot_id = bot,
				     .name = name,
				     .origin = origin,
				     .auth = kind,
				     .auth_param = param,
				     .nonce = nonce,
				     .nonce_len = sizeof(nonce),
				     .ciphertext = ct,
				     .ciphertext_len = (size_t)ctlen,
				     .at = rk_now_ms()};
	r = rk_db_secret_put(eng->db, &row, err);
	free(id);
	free(ct);
	if (r == 0)
		rk_log(RK_LOG_INFO, "secret %s set for %s in %s (bot %s, origin %s)", name, a->user, a->space,
		       bot[0] ? bot : "*", origin);
out:
	free(origin);
	free(kind);
	free(param);
	return r;
}

int rk_secret_list(struct rk_engine *eng, const struct rk_actor *a, cJSON **out, struct rk_error *err)
{
	return rk_db_secret_list(eng->db, a->user, a->space, out, err);
}

int rk_secret_remove(struct rk_engine *eng, const struct rk_actor *a, const char *name, struct rk_error *err)
{
	int r = check_name(name, err);
	if (r)
		return r;
	if ((r = rk_db_secret_delete(eng->db, a->user, a->space, a->bot ? a->bot : "", name, err)) < 0)
		return r;
	if (r == 0)
		return rk_error_set(err, RK_ENOTFOUND, "no secret '%s'%s%s in space '%s'", name,
				    a->bot ? " for bot " : "", a->bot ? a->bot : "", a->space);
	return 0;
}

struct sealed {
	char *bot, *origin, *kind, *param;
	unsigned char nonce[NONCE_BYTES];
	unsigned char *ct;
	size_t ctlen;
};

static void sealed_release(struct sealed *s)
{
	free(s->bot);
	free(s->origin);
	free(s->kind);
	free(s->param);
	free(s->ct);
	memset(s, 0, sizeof(*s));
}

/* The bot's own row, else the user's one for every bot. */
static int load_sealed(struct rk_engine *eng, const struct rk_actor *a, const char *name, struct sealed *s,
		       struct rk_error *err)
{
	memset(s, 0, sizeof(*s));
	int r = check_name(name, err);
	if (r)
		return r;
	struct rk_secret_row row;
	r = rk_db_secret_find(eng->db, a->user, a->space, name, a->bot ? a->bot : "", &row, err);
	if (r == 0) {
		s->bot = row.bot_id;
		s->origin = row.origin;
		s->kind = row.auth;
		s->param = row.auth_param;
		row.bot_id = row.origin = row.auth = row.auth_param = NULL;
		if (row.nonce_len != NONCE_BYTES || row.ciphertext_len < TAG_BYTES) {
			r = rk_error_set(err, RK_ECORRUPT, "secret '%s' is damaged in the database: set it again",
					 name);
		} else {
			memcpy(s->nonce, row.nonce, NONCE_BYTES);
			s->ctlen = row.ciphertext_len;
			s->ct = row.ciphertext;
			row.ciphertext = NULL;
		}
	} else if (r == -RK_ENOTFOUND) {
		r = rk_error_set(err, RK_ENOTFOUND,
				 "no secret '%s' for %s%s%s in space '%s': the bot can ask with request_secret, a "
				 "person sets it with `rakazo secret set %s --origin URL --auth METHOD`",
				 name, a->user, a->bot ? "'s bot " : "", a->bot ? a->bot : "", a->space, name);
	}
	rk_secret_row_release(&row);
	if (r)
		sealed_release(s);
	return r;
}

/* Decrypts s (the row of name) under key. */
static int unseal(const unsigned char key[KEY_BYTES], const struct rk_actor *a, const char *name,
		  const struct sealed *s, char **value, size_t *len, struct rk_error *err)
{
	size_t cap = s->ctlen - TAG_BYTES;
	char *v = sodium_malloc(cap + 1);
	if (!v)
		return rk_error_set(err, RK_EFAILED, "cannot allocate locked memory for a secret");
	struct rk_buf ad = RK_BUF_INIT;
	rk_buf_init(&ad);
	associated_data(&ad, a->user, a->space, s->bot, name);
	unsigned long long n = 0;
	int bad = crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)v, &n, NULL, s->ct, s->ctlen,
							     (const unsigned char *)ad.data, ad.len, s->nonce, key);
	rk_buf_release(&ad);
	if (bad) {
		sodium_free(v);
		return rk_error_set(err, RK_ECORRUPT,
				    "secret '%s' does not decrypt for %s in space '%s'%s%s: it was sealed for another "
				    "user, space, bot or name, or under another master key; set it again",
				    name, a->user, a->space, s->bot[0] ? " for bot " : "", s->bot);
	}
	v[n] = 0;
	*value = v;
	*len = (size_t)n;
	return 0;
}

static int open_sealed(struct rk_engine *eng, const struct rk_actor *a, const char *name, struct sealed *s,
		       char **value, size_t *len, struct rk_error *err)
{
	unsigned char key[KEY_BYTES];
	int r = master_key(eng, key, err);
	if (r == 0)
		r = unseal(key, a, name, s, value, len, err);
	sodium_memzero(key, sizeof(key));
	return r;
}

int rk_secret_reveal(struct rk_engine *eng, const struct rk_actor *a, const char *name, char **value, size_t *len,
		     struct rk_error *err)
{
	struct sealed s;
	int r = load_sealed(eng, a, name, &s, err);
	if (r)
		return r;
	r = open_sealed(eng, a, name, &s, value, len, err);
	sealed_release(&s);
	return r;
}

int rk_secret_reveal_for_origin(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *origin,
				char **value, size_t *len, char **kind, struct rk_error *err)
{
	*value = NULL;
	*len = 0;
	if (kind)
		*kind = NULL;
	struct sealed s;
	int r = load_sealed(eng, a, name, &s, err);
	if (r)
		return r;
	char *want = NULL;
	struct rk_error e2;
	/* the value is opened only once the origin is the stored one */
	if (rk_secret_origin(origin, 1, &want, &e2) != 0 || strcmp(want, s.origin) != 0)
		r = rk_error_set(err, RK_EDENIED, "secret '%s' is for %s, and the page is %s: refused", name, s.origin,
				 want					       ? want
				 : origin && *origin && strcmp(origin, "null") ? origin
									       : "of no web origin");
	else
		r = open_sealed(eng, a, name, &s, value, len, err);
	if (r == 0 && kind)
		*kind = rk_xstrdup(s.kind);
	free(want);
	sealed_release(&s);
	return r;
}

void rk_secret_value_free(char *value, size_t len)
{
	(void)len;
	if (value)
		sodium_free(value); /* zeroes it */
}

/* --- the values to redact -------------------------------------------------------------- */

struct value {
	char *v; /* sodium_malloc'd */
	size_t len;
};

struct rk_secret_redactor {
	struct value *v;
	size_t n;
};

/* Adds a copy of v to the list unless it is there (0: not added). */
static int values_add(struct value **list, size_t *n, const char *v, size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].len == len && !memcmp((*list)[i].v, v, len))
			return 0;
	char *copy = sodium_malloc(len + 1);
	if (!copy)
		return 0;
	memcpy(copy, v, len);
	copy[len] = 0;
	*list = rk_xrealloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = (struct value){copy, len};
	return 1;
}

static void values_redact(const struct value *list, size_t n, struct rk_buf *b)
{
	for (size_t i = 0; i < n && b->len; i++)
		rk_secret_redact(b, list[i].v, list[i].len);
}

/* Every value this process has read through a redactor: the log's filter
 * (util/log.h) takes them out of every line. A fork (a session holder)
 * inherits them with the lock free. */
#define KNOWN_MAX 1024
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;
static struct value *known_values;
static size_t nknown;
static pthread_once_t known_once = PTHREAD_ONCE_INIT;

static void known_lock(void)
{
	pthread_mutex_lock(&known_mu);
}

static void known_unlock(void)
{
	pthread_mutex_unlock(&known_mu);
}

static void log_filter(struct rk_buf *line)
{
	known_lock();
	values_redact(known_values, nknown, line);
	known_unlock();
}

static void known_setup(void)
{
	pthread_atfork(known_lock, known_unlock, known_unlock);
	rk_log_set_filter(log_filter);
}

static void known_add(const struct rk_secret_redactor *r)
{
	pthread_once(&known_once, known_setup);
	known_lock();
	for (size_t i = 0; i < r->n && nknown < KNOWN_MAX; i++)
		values_add(&known_values, &nknown, r->v[i].v, r->v[i].len);
	known_unlock();
}

struct rk_secret_redactor *rk_secret_redactor_new(struct rk_engine *eng, const struct rk_actor *a)
{
	struct rk_secret_redactor *r = rk_xcalloc(1, sizeof(*r));
	struct rk_secret_row *rows = NULL;
	size_t nrows = 0;
	struct rk_error e;
	if (!(eng && eng->db && a && a->user) || rk_db_secret_list_user(eng->db, a->user, &rows, &nrows, &e))
		return r;
	unsigned char key[KEY_BYTES];
	int have_key = 0;
	for (size_t i = 0; i < nrows; i++) {
		/* one master key read for all of them (only when a secret exists) */
		if (!have_key && master_key(eng, key, &e)) {
			rk_log(RK_LOG_WARN, "secrets cannot be read to redact them: %s", e.message);
			break;
		}
		have_key = 1;
		const struct rk_secret_row *row = &rows[i];
		struct sealed s = {.bot = row->bot_id};
		struct rk_actor owner = {.user = a->user, .space = row->space_id};
		char *v = NULL;
		size_t len = 0;
		if (row->nonce_len == NONCE_BYTES && row->ciphertext_len >= TAG_BYTES) {
			memcpy(s.nonce, row->nonce, NONCE_BYTES);
			s.ctlen = row->ciphertext_len;
			s.ct = row->ciphertext;
		}
		if (s.ct && unseal(key, &owner, row->name, &s, &v, &len, &e) == 0)
			values_add(&r->v, &r->n, v, len);
		else
			rk_log(RK_LOG_WARN, "secret '%s' in space '%s' cannot be read to redact it", row->name,
			       row->space_id);
		rk_secret_value_free(v, len);
	}
	rk_secret_rows_free(rows, nrows);
	sodium_memzero(key, sizeof(key));
	known_add(r);
	return r;
}

void rk_secret_redactor_free(struct rk_secret_redactor *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		sodium_free(r->v[i].v);
	free(r->v);
	free(r);
}

void rk_secret_redactor_buf(const struct rk_secret_redactor *r, struct rk_buf *b)
{
	if (r && b->data)
		values_redact(r->v, r->n, b);
}

static void redact_cjson(const struct rk_secret_redactor *r, cJSON *item);

/* A string of a cJSON document, redacted in place (cJSON's allocator). A
 * string that is a JSON document itself (a tool call's arguments) is
 * redacted inside too, where its own escapes are undone. */
static void redact_cjson_string(const struct rk_secret_redactor *r, char **s)
{
	if (!*s || !**s)
		return;
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, *s);
	values_redact(r->v, r->n, &b);
	cJSON *inner = (b.data[0] == '{' || b.data[0] == '[') ? cJSON_ParseWithLength(b.data, b.len) : NULL;
	if (inner) {
		char *before = cJSON_PrintUnformatted(inner);
		redact_cjson(r, inner);
		char *after = cJSON_PrintUnformatted(inner);
		if (before && after && strcmp(before, after)) {
			sodium_memzero(b.data, b.len);
			rk_buf_reset(&b);
			rk_buf_adds(&b, after);
		}
		if (before)
			sodium_memzero(before, strlen(before));
		free(before);
		free(after);
		cJSON_Delete(inner);
	}
	size_t n = strlen(*s);
	if (b.len != n || memcmp(b.data, *s, n)) {
		char *fresh = cJSON_malloc(b.len + 1);
		memcpy(fresh, b.data, b.len + 1);
		sodium_memzero(*s, n);
		cJSON_free(*s);
		*s = fresh;
	}
	sodium_memzero(b.data, b.len);
	rk_buf_release(&b);
}

static void redact_cjson(const struct rk_secret_redactor *r, cJSON *item)
{
	if (item->string && !(item->type & cJSON_StringIsConst))
		redact_cjson_string(r, &item->string);
	if (cJSON_IsString(item) || cJSON_IsRaw(item))
		redact_cjson_string(r, &item->valuestring);
	for (cJSON *c = item->child; c; c = c->next)
		redact_cjson(r, c);
}

void rk_secret_redactor_json(const struct rk_secret_redactor *r, cJSON *doc)
{
	if (r && r->n && doc)
		redact_cjson(r, doc);
}

char *rk_secret_redactor_text(const struct rk_secret_redactor *r, const char *text)
{
	if (!r || !r->n)
		return rk_xstrdup(text);
	cJSON *doc = cJSON_ParseWithOpts(text, NULL, 1); /* all of it, or it is text */
	if (doc) {
		redact_cjson(r, doc);
		char *s = cJSON_PrintUnformatted(doc);
		cJSON_Delete(doc);
		return s;
	}
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_adds(&b, text);
	values_redact(r->v, r->n, &b);
	return rk_buf_detach(&b, NULL);
}

void rk_secret_redactor_history(const struct rk_secret_redactor *r, struct rk_buf *b)
{
	rk_secret_redactor_buf(r, b);
	rk_secret_redact_patterns(b);
}

void rk_secret_redact_history(struct rk_engine *eng, const struct rk_actor *a, struct rk_buf *b)
{
	struct rk_secret_redactor *r = rk_secret_redactor_new(eng, a);
	rk_secret_redactor_history(r, b);
	rk_secret_redactor_free(r);
}

/* --- streams: what could begin a value ------------------------------------------------ */

/* The most text one byte of a value can take: \u00XX. */
#define FORM_BYTES_MAX 6

size_t rk_secret_redactor_span(const struct rk_secret_redactor *r)
{
	size_t span = 0;
	for (size_t i = 0; r && i < r->n; i++)
		if (FORM_BYTES_MAX * r->v[i].len > span)
			span = FORM_BYTES_MAX * r->v[i].len;
	return span;
}

/* The longest tail of t[0..n), at most limit bytes, that is f[0..j) for a
 * j < m (ci: in either case). */
static size_t tail_begins(const char *t, size_t n, size_t limit, const char *f, size_t m, int ci)
{
	size_t j = limit < n ? limit : n;
	if (j >= m)
		j = m - 1;
	for (; j > 0; j--)
		if (ci ? !strncasecmp(t + n - j, f, j) : !memcmp(t + n - j, f, j))
			return j;
	return 0;
}

/* Whether t[i..n) could begin s written as decoded_at reads it: every byte
 * of it stands for the next bytes of s, and the text ends before s does
 * (an escape cut by the end counts as one that could fit). */
static int decoded_begins(const char *t, size_t n, size_t i, const char *s, size_t len)
{
	size_t p = i, k = 0;
	while (p < n) {
		if (k >= len)
			return 0; /* a whole one: redacted, not held */
		unsigned char c = (unsigned char)t[p], u[4];
		size_t ul = 0, el = 0;
		if (c == '\\' && (el = json_escape(t + p, n - p, u, &ul)) && ul <= len - k && !memcmp(u, s + k, ul)) {
			p += el;
			k += ul;
		} else if (c == '\\' && !el && n - p < 12) {
			return 1; /* \uXXXX (or a surrogate pair) cut by the end */
		} else if (c == '%' && p + 2 < n && hex_byte(t + p + 1) == (unsigned char)s[k]) {
			p += 3;
			k++;
		} else if (c == '%' && p + 2 >= n && (p + 1 == n || hex_value(t[p + 1]) == (unsigned char)s[k] >> 4)) {
			return 1; /* %X cut by the end */
		} else if ((c == '+' && s[k] == ' ') || c == (unsigned char)s[k]) {
			p++;
			k++;
		} else {
			return 0;
		}
	}
	return k < len;
}

/* The longest tail of t[0..n), at most limit bytes, that could begin a
 * form of s (redact_one's forms). */
static size_t hold_one(const char *t, size_t n, size_t limit, const char *s, size_t len)
{
	size_t best = 0, j;
	static const int whole[] = {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_URLSAFE};
	for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
		char *f = base64_variant(s, len, whole[i]); /* the unpadded forms begin the same */
		if ((j = tail_begins(t, n, limit, f, strlen(f), 0)) > best)
			best = j;
		free_form(f);
	}
	char *hex = hex_of(s, len);
	if ((j = tail_begins(t, n, limit, hex, 2 * len, 1)) > best)
		best = j;
	free_form(hex);
	static const int cores[] = {sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
				    sodium_base64_VARIANT_URLSAFE_NO_PADDING};
	for (size_t v = 0; v < 2; v++)
		for (size_t k = 0; k < 3; k++) {
			size_t start = (8 * k + 5) / 6, end = 8 * (k + len) / 6;
			if (end < start + BASE64_CORE_MIN)
				continue;
			char *in = rk_xcalloc(1, k + len);
			memcpy(in + k, s, len);
			char *enc = base64_variant(in, k + len, cores[v]);
			if ((j = tail_begins(t, n, limit, enc + start, end - start, 0)) > best)
				best = j;
			sodium_memzero(in, k + len);
			free(in);
			free_form(enc);
		}
	/* as it is, escaped or a mix: the earliest start that could be one */
	for (size_t i = n - (limit < n ? limit : n); i + best < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if ((c == (unsigned char)s[0] || c == '\\' || c == '%' || (c == '+' && s[0] == ' ')) &&
		    decoded_begins(t, n, i, s, len)) {
			best = n - i;
			break;
		}
	}
	return best;
}

/* The longest tail of t[0..n), at most limit bytes, that could begin a
 * form of one of r's values. */
static size_t begins(const struct rk_secret_redactor *r, const char *t, size_t n, size_t limit)
{
	size_t hold = 0;
	for (size_t i = 0; i < r->n && hold < limit; i++) {
		const char *s = r->v[i].v;
		size_t len = r->v[i].len, h = hold_one(t, n, limit, s, len);
		const char *colon = memchr(s, ':', len);
		if (colon && (size_t)(s + len - colon - 1) >= 4) { /* basic: the password alone */
			size_t hp = hold_one(t, n, limit, colon + 1, (size_t)(s + len - colon - 1));
			if (hp > h)
				h = hp;
		}
		if (h > hold)
			hold = h;
	}
	return hold;
}

/* Whether t[0..cut) and t[cut..n), each redacted on its own, give whole
 * (t redacted whole): no value is cut in two there. */
static int cut_keeps(const struct rk_secret_redactor *r, const char *t, size_t n, size_t cut,
		     const struct rk_buf *whole)
{
	struct rk_buf a, b;
	rk_buf_init(&a);
	rk_buf_init(&b);
	rk_buf_add(&a, t, cut);
	rk_buf_add(&b, t + cut, n - cut);
	values_redact(r->v, r->n, &a);
	values_redact(r->v, r->n, &b);
	int same = a.len + b.len == whole->len && !memcmp(a.data, whole->data, a.len) &&
		   !memcmp(b.data, whole->data + a.len, b.len);
	sodium_memzero(a.data, a.len);
	sodium_memzero(b.data, b.len);
	rk_buf_release(&a);
	rk_buf_release(&b);
	return same;
}

size_t rk_secret_redactor_hold(const struct rk_secret_redactor *r, const char *text, size_t n)
{
	size_t span = rk_secret_redactor_span(r);
	if (span == 0 || n == 0)
		return 0;
	/* a value that could go on past n starts in the last span - 1 bytes,
	 * and one that overlaps those in the last 2 * span */
	const char *w = n > 2 * span ? text + n - 2 * span : text;
	size_t wn = (size_t)(text + n - w);
	struct rk_buf b;
	rk_buf_init(&b);
	rk_buf_add(&b, w, wn);
	values_redact(r->v, r->n, &b);
	/* whole values are redacted first: one that ends in the tail is no
	 * beginning, and is not cut. After the last [redacted], b is text's
	 * own tail, byte for byte. */
	size_t limit = span - 1, m = sizeof(RK_SECRET_REDACTED) - 1;
	for (size_t i = b.len >= m ? b.len - m + 1 : 0; i-- > 0;)
		if (!memcmp(b.data + i, RK_SECRET_REDACTED, m)) {
			if (b.len - i - m < limit)
				limit = b.len - i - m;
			break;
		}
	size_t hold = begins(r, b.data, b.len, limit);
	/* a longer form can begin before a shorter one that is whole (base64
	 * whose first characters are a base64 core): keep that back too, when
	 * the cut leaves every value whole */
	size_t raw = begins(r, w, wn, span - 1);
	if (raw > hold && cut_keeps(r, w, wn, wn - raw, &b))
		hold = raw;
	sodium_memzero(b.data, b.len);
	rk_buf_release(&b);
	return hold;
}

int rk_secret_request(struct rk_engine *eng, const struct rk_actor *a, const char *run_id, const char *name,
		      const char *origin_url, const char *auth, const char *reason, cJSON **out, struct rk_error *err)
{
	char *origin = NULL, *kind = NULL, *param = NULL;
	int r = check_name(name, err);
	if (r || (r = rk_secret_origin(origin_url, 1, &origin, err)) ||
	    (r = rk_secret_auth_parse(auth, &kind, &param, err)))
		goto out;
	if (reason && strlen(reason) > 1000) {
		r = rk_error_set(err, RK_EINVALID, "request_secret: reason exceeds 1000 characters");
		goto out;
	}
	struct sealed s;
	struct rk_error e2;
	int have = load_sealed(eng, a, name, &s, &e2) == 0;
	int same = have && !strcmp(s.origin, origin);
	if (have)
		sealed_release(&s);
	if (!same) {
		char *id = rk_id_new("srq");
		struct rk_secret_request_row row = {.id = id,
						    .run_id = run_id,
						    .user_id = a->user,
						    .space_id = a->space,
						    .bot_id = a->bot ? a->bot : "",
						    .name = name,
						    .origin = origin,
						    .auth = kind,
						    .auth_param = param,
						    .reason = reason,
						    .created_at = rk_now_ms()};
		r = rk_db_secret_request_insert(eng->db, &row, err);
		free(id);
		if (r)
			goto out;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "origin", origin);
	cJSON_AddStringToObject(o, "auth", auth);
	cJSON_AddStringToObject(o, "state", same ? "available" : "requested");
	char *cmd = rk_xasprintf("rakazo secret set %s --origin %s --auth %s%s%s", name, origin, auth,
				 a->bot ? " --bot " : "", a->bot ? a->bot : "");
	cJSON_AddStringToObject(o, "command", cmd);
	free(cmd);
	cJSON_AddStringToObject(o, "note",
				same ? "the secret is set: use secret_request with its name"
				     : "a person has to set the value; you never see it. Use secret_request "
				       "once it is set");
	*out = o;
out:
	free(origin);
	free(kind);
	free(param);
	return r;
}

/* --- sending -------------------------------------------------------------------------- */

struct response {
	struct rk_buf body, headers;
	int truncated;
};

static void on_header(void *ud, const char *p, size_t len)
{
	struct response *rs = ud;
	if (rs->headers.len + len <= 65536)
		rk_buf_add(&rs->headers, p, len);
}

static int header_forbidden(const char *name, const struct sealed *s)
{
	/* accept-encoding and te: the response is asked for as identity (and
	 * decoded when it comes encoded all the same) so it can be redacted */
	static const char *const never[] = {"host",   "content-length",	     "transfer-encoding", "connection",
					    "cookie", "proxy-authorization", "accept-encoding",	  "te",
					    NULL};
	for (size_t i = 0; never[i]; i++)
		if (!strcasecmp(name, never[i]))
			return 1;
	enum rk_secret_auth auth = rk_secret_auth_of(s->kind);
	if ((auth == RK_SECRET_BEARER || auth == RK_SECRET_BASIC) && !strcasecmp(name, "authorization"))
		return 1;
	return auth == RK_SECRET_HEADER && !strcasecmp(name, s->param);
}

/* The response as the model gets it: the headers it may need and the body,
 * with every form of the value gone. */
static cJSON *response_doc(long status, struct response *rs, const char *value, size_t vlen)
{
	rk_secret_redact(&rs->body, value, vlen);
	rk_secret_redact(&rs->headers, value, vlen);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "status", (double)status);
	cJSON *h = cJSON_AddObjectToObject(o, "headers");
	/* the last block of headers (after any 100 Continue) */
	char *text = rs->headers.data, *line, *save = NULL;
	for (line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		if (!strncmp(line, "HTTP/", 5)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(o, h));
			h = cJSON_AddObjectToObject(o, "headers");
			continue;
		}
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		for (char *p = line; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (strcmp(line, "set-cookie") == 0)
			continue; /* a session is a credential too */
		if (strcmp(line, "content-encoding") == 0)
			continue; /* the body is decoded already */
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!cJSON_GetObjectItemCaseSensitive(h, line))
			cJSON_AddStringToObject(h, line, v);
	}
	if (rk_utf8_valid(rs->body.data, rs->body.len)) {
		cJSON_AddStringToObject(o, "body", rs->body.data);
	} else {
		char *b64 = rk_base64_encode(rs->body.data, rs->body.len);
		cJSON_AddStringToObject(o, "body_base64", b64);
		free(b64);
	}
	cJSON_AddBoolToObject(o, "truncated", rs->truncated);
	return o;
}

int rk_secret_send(struct rk_engine *eng, const struct rk_actor *a, const struct rk_secret_http *req, cJSON **out,
		   struct rk_error *err)
{
	*out = NULL;
	const char *method = req->method && *req->method ? req->method : "GET";
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", NULL};
	int known = 0;
	for (size_t i = 0; methods[i]; i++)
		known |= !strcmp(methods[i], method);
	if (!known)
		return rk_error_set(err, RK_EINVALID,
				    "secret_request: method must be GET, POST, PUT, PATCH, DELETE or HEAD");
	if (req->headers && !cJSON_IsObject(req->headers))
		return rk_error_set(err, RK_EINVALID, "secret_request: headers must be an object of strings");
	char *origin = NULL;
	int r = rk_secret_origin(req->url, 0, &origin, err);
	if (r)
		return rk_error_prefix(err, "secret_request");
	struct sealed s;
	if ((r = load_sealed(eng, a, req->name, &s, err))) {
		free(origin);
		return r;
	}
	if (strcmp(origin, s.origin) != 0) {
		r = rk_error_set(err, RK_EDENIED, "secret_request: secret '%s' may only go to %s, not to %s", req->name,
				 s.origin, origin);
		rk_log(RK_LOG_WARN, "secret %s: refused a request to %s (its origin is %s)", req->name, origin,
		       s.origin);
		free(origin);
		sealed_release(&s);
		return r;
	}
	free(origin);
	/* the model's header lines, the auth line and a NULL */
	char **hdrs = rk_xcalloc((size_t)cJSON_GetArraySize(req->headers) + 2, sizeof(*hdrs));
	size_t nh = 0;
	const cJSON *h;
	cJSON_ArrayForEach(h, req->headers)
	{
		if (!cJSON_IsString(h) || !token_ok(h->string) || strpbrk(h->valuestring, "\r\n")) {
			r = rk_error_set(err, RK_EINVALID, "secret_request: header '%s' is not a valid header",
					 h->string);
			break;
		}
		if (header_forbidden(h->string, &s)) {
			r = rk_error_set(err, RK_EINVALID, "secret_request: header '%s' cannot be set here", h->string);
			break;
		}
		hdrs[nh++] = rk_xasprintf("%s: %s", h->string, h->valuestring);
	}
	char *value = NULL, *url = NULL, *auth_line = NULL;
	size_t vlen = 0;
	struct response rs = {RK_BUF_INIT, RK_BUF_INIT, 0};
	struct rk_http_response hr;
	rk_http_response_init(&hr);
	rk_buf_init(&rs.body);
	rk_buf_init(&rs.headers);
	if (r || (r = open_sealed(eng, a, req->name, &s, &value, &vlen, err)))
		goto out;
	if (memchr(value, '\r', vlen) || memchr(value, '\n', vlen) || strlen(value) != vlen) {
		r = rk_error_set(err, RK_EINVALID, "secret '%s' holds a line break or NUL: it cannot be sent",
				 req->name);
		goto out;
	}
	if (rk_secret_auth_of(s.kind) == RK_SECRET_QUERY) {
		char *k = rk_http_escape(s.param), *v = rk_http_escape(value);
		const char *sep = strchr(req->url, '?') ? "&" : "?";
		url = sodium_malloc(strlen(req->url) + strlen(k) + strlen(v) + 3);
		strcpy(url, req->url);
		strcat(url, sep);
		strcat(url, k);
		strcat(url, "=");
		strcat(url, v);
		sodium_memzero(v, strlen(v));
		free(k);
		free(v);
	} else {
		struct rk_buf line = RK_BUF_INIT;
		rk_buf_init(&line);
		if (rk_secret_auth_of(s.kind) == RK_SECRET_BEARER) {
			rk_buf_adds(&line, "Authorization: Bearer ");
			rk_buf_add(&line, value, vlen);
		} else if (rk_secret_auth_of(s.kind) == RK_SECRET_BASIC) {
			char *b64 = base64_variant(value, vlen, sodium_base64_VARIANT_ORIGINAL);
			rk_buf_adds(&line, "Authorization: Basic ");
			rk_buf_adds(&line, b64);
			sodium_memzero(b64, strlen(b64));
			free(b64);
		} else {
			rk_buf_printf(&line, "%s: ", s.param);
			rk_buf_add(&line, value, vlen);
		}
		auth_line = sodium_malloc(line.len + 1);
		memcpy(auth_line, line.data, line.len + 1);
		sodium_memzero(line.data, line.len);
		rk_buf_release(&line);
		hdrs[nh++] = auth_line;
	}
	/* Sent once on a connection of its own, redirects never followed (the
	 * secret goes to its origin only). Redaction needs the body as it is
	 * meant: the identity encoding policy (decoded when it comes compressed
	 * all the same; any other encoding fails the call). A body is sent as
	 * libcurl always sent it: a GET with one goes out as a POST, form-typed
	 * unless the model set a Content-Type. */
	struct rk_http_request q = {
		RK_HTTP_ONCE,
		.method = !strcmp(method, "GET") && req->body ? "POST" : method,
		.url = url ? url : req->url,
		.headers = (const char *const *)hdrs,
		.body = req->body,
		.body_len = req->body ? strlen(req->body) : 0,
		.content_type = "application/x-www-form-urlencoded",
		.connect_timeout_ms = 10000,
		.timeout_ms = 30000,
		.max_response = RK_SECRET_RESPONSE_MAX,
		.truncate = 1,
		.encoding = RK_HTTP_ENCODING_IDENTITY,
		.user_agent = "rakazo/" RK_VERSION,
		.on_header = on_header,
		.on_header_ctx = &rs,
	};
	if (rk_http_do(&q, &hr, NULL) < 0) {
		/* libcurl's message names the host at most, never the header */
		if (hr.failure == RK_HTTP_FAIL_ENCODING)
			r = rk_error_set(err, RK_EUNSUPPORTED,
					 "secret_request: %s %s: the response is in an encoding that cannot be decoded "
					 "(and so not redacted): refused",
					 method, s.origin);
		else
			r = rk_error_set(err, hr.failure == RK_HTTP_FAIL_TIMEOUT ? RK_ETIMEOUT : RK_EUNAVAILABLE,
					 "secret_request: %s %s: %s", method, s.origin,
					 hr.failure_text ? hr.failure_text : "the request failed");
		goto out;
	}
	long status = hr.status;
	struct rk_buf got = hr.body;
	hr.body = rs.body;
	rs.body = got;
	rs.truncated = hr.truncated;
	*out = response_doc(status, &rs, value, vlen);
	rk_log(RK_LOG_INFO, "secret %s: %s %s -> %ld", req->name, method, s.origin, status);
out:
	for (size_t i = 0; i < nh; i++)
		if (hdrs[i] != auth_line)
			free(hdrs[i]);
	free(hdrs);
	rk_http_response_release(&hr);
	if (auth_line)
		sodium_free(auth_line);
	if (url)
		sodium_free(url);
	rk_secret_value_free(value, vlen);
	rk_buf_release(&rs.body);
	rk_buf_release(&rs.headers);
	sealed_release(&s);
	return r;
}
