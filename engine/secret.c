/* Secrets: sealed storage, origin checks, sending, redaction (see secret.h). */

#include "secret.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/json.h"
#include "util/id.h"
#include "util/ipc.h"
#include "util/log.h"
#include "util/time.h"

#define KEY_BYTES crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES

/* --- the master key ---------------------------------------------------------------- */

static int hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
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
static void associated_data(struct rk_buf *ad, const char *user, const char *space, const char *bot,
			    const char *name)
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
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *pass = NULL, *path = NULL, *query = NULL;
	int r = 0;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		r = rk_error_set(err, RK_EINVALID, "'%s' is not a URL", url);
		goto out;
	}
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_HOST, &host, 0);
	curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	curl_url_get(u, CURLUPART_USER, &user, 0);
	curl_url_get(u, CURLUPART_PASSWORD, &pass, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	if (!scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		r = rk_error_set(err, RK_EINVALID, "'%s': only http and https URLs are allowed", url);
	} else if (user || pass || at_in_authority(url)) {
		r = rk_error_set(err, RK_EDENIED, "the URL has userinfo (user@...): refused");
	} else if (!host || !*host || !port) {
		r = rk_error_set(err, RK_EINVALID, "'%s' has no host", url);
	} else if (origin_only && ((path && strcmp(path, "/") != 0) || query)) {
		r = rk_error_set(err, RK_EINVALID, "'%s' is not an origin: give scheme://host[:port] only", url);
	} else {
		for (char *p = host; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		*origin = rk_xasprintf("%s://%s:%s", scheme, host, port);
	}
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(user);
	curl_free(pass);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(u);
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
	if (spec && (!strcmp(spec, "bearer") || !strcmp(spec, "basic"))) {
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

static void replace_all(struct rk_buf *b, const char *needle, size_t n)
{
	if (n == 0 || b->len < n)
		return;
	struct rk_buf out = RK_BUF_INIT;
	rk_buf_init(&out);
	size_t i = 0, changed = 0;
	while (i < b->len) {
		char *hit = i + n <= b->len ? memmem(b->data + i, b->len - i, needle, n) : NULL;
		if (!hit)
			break;
		size_t at = (size_t)(hit - b->data);
		rk_buf_add(&out, b->data + i, at - i);
		rk_buf_adds(&out, RK_SECRET_REDACTED);
		i = at + n;
		changed = 1;
	}
	if (!changed) {
		rk_buf_release(&out);
		return;
	}
	rk_buf_add(&out, b->data + i, b->len - i);
	rk_buf_release(b);
	*b = out;
}

static char *base64_variant(const char *s, size_t len, int variant)
{
	size_t cap = sodium_base64_encoded_len(len, variant);
	char *o = rk_xmalloc(cap);
	sodium_bin2base64(o, cap, (const unsigned char *)s, len, variant);
	return o;
}

static char *hex_of(const char *s, size_t len, int upper)
{
	char *o = rk_xmalloc(2 * len + 1);
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	const char *d = upper ? up : lo;
	for (size_t i = 0; i < len; i++) {
		o[2 * i] = d[(unsigned char)s[i] >> 4];
		o[2 * i + 1] = d[(unsigned char)s[i] & 15];
	}
	o[2 * len] = 0;
	return o;
}

/* Percent-encoding of every byte outside the unreserved set; space as
 * plus when form is set. */
static char *percent_of(const char *s, size_t len, int upper, int form)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			rk_buf_addc(&b, (char)c);
		else if (form && c == ' ')
			rk_buf_addc(&b, '+');
		else
			rk_buf_printf(&b, upper ? "%%%02X" : "%%%02x", c);
	}
	return rk_buf_detach(&b, NULL);
}

static void redact_one(struct rk_buf *b, const char *s, size_t len)
{
	if (len == 0)
		return;
	char *forms[12];
	size_t n = 0;
	forms[n++] = rk_xstrndup(s, len);
	forms[n++] = base64_variant(s, len, sodium_base64_VARIANT_ORIGINAL);
	forms[n++] = base64_variant(s, len, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	forms[n++] = base64_variant(s, len, sodium_base64_VARIANT_URLSAFE);
	forms[n++] = base64_variant(s, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	forms[n++] = hex_of(s, len, 0);
	forms[n++] = hex_of(s, len, 1);
	forms[n++] = percent_of(s, len, 1, 0);
	forms[n++] = percent_of(s, len, 0, 0);
	forms[n++] = percent_of(s, len, 1, 1);
	/* longest first, so a longer form is not cut up by a shorter one inside it */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strlen(forms[j]) > strlen(forms[i])) {
				char *t = forms[i];
				forms[i] = forms[j];
				forms[j] = t;
			}
	for (size_t i = 0; i < n; i++) {
		replace_all(b, forms[i], strlen(forms[i]));
		sodium_memzero(forms[i], strlen(forms[i]));
		free(forms[i]);
	}
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
	} shapes[] = {{"sk-", 16}, {"ghp_", 20}, {"gho_", 20}, {"ghs_", 20}, {"ghu_", 20}, {"github_pat_", 20},
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
	static const char *const options[] = {"--password", "--passwd", "--token", "--api-key", "--apikey",
					      "--secret", "--access-key", "--client-secret", NULL};
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
				if (!prefix_ci(s, n, i, options[k]) || (i + ol < n && ident_char((unsigned char)s[i + ol])))
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
	if (!strcmp(kind, "basic") && !memchr(value, ':', len)) {
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
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, &ctlen, value, len, (const unsigned char *)ad.data, ad.len,
						   NULL, nonce, key);
	sodium_memzero(key, sizeof(key));
	rk_buf_release(&ad);
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"INSERT INTO secrets (id, user_id, space_id, bot_id, name, origin, auth, auth_param, nonce, ciphertext, "
		"created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11) "
		"ON CONFLICT (user_id, space_id, bot_id, name) DO UPDATE SET origin = excluded.origin, "
		"auth = excluded.auth, auth_param = excluded.auth_param, nonce = excluded.nonce, "
		"ciphertext = excluded.ciphertext, updated_at = excluded.updated_at",
		err);
	if (!st) {
		r = -err->code;
	} else {
		char *id = rk_id_new("sec");
		rk_db_bind_text(st, 1, id);
		rk_db_bind_text(st, 2, a->user);
		rk_db_bind_text(st, 3, a->space);
		rk_db_bind_text(st, 4, bot);
		rk_db_bind_text(st, 5, name);
		rk_db_bind_text(st, 6, origin);
		rk_db_bind_text(st, 7, kind);
		rk_db_bind_text(st, 8, param);
		rk_stmt_bind_blob(st, 9, nonce, sizeof(nonce));
		rk_stmt_bind_blob(st, 10, ct, (int)ctlen);
		rk_stmt_bind_int64(st, 11, rk_now_ms());
		r = rk_db_step_done(eng->db, st, "store the secret", err);
		free(id);
	}
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
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"SELECT name, nullif(bot_id, ''), origin, auth || coalesce(':' || auth_param, ''), 'set', created_at, "
		"updated_at, NULL FROM secrets WHERE user_id = ?1 AND space_id = ?2 "
		"UNION ALL SELECT q.name, nullif(q.bot_id, ''), q.origin, q.auth || coalesce(':' || q.auth_param, ''), "
		"'requested', q.created_at, "
		"q.created_at, q.reason FROM secret_requests q WHERE q.user_id = ?1 AND q.space_id = ?2 "
		"AND NOT EXISTS (SELECT 1 FROM secrets s WHERE s.user_id = q.user_id AND s.space_id = q.space_id "
		"AND s.name = q.name AND s.bot_id IN (q.bot_id, '')) "
		"AND q.rowid = (SELECT max(rowid) FROM secret_requests r WHERE r.user_id = q.user_id AND "
		"r.space_id = q.space_id AND r.name = q.name AND r.bot_id = q.bot_id) "
		"ORDER BY 1, 2",
		err);
	if (!st)
		return -err->code;
	rk_db_bind_text(st, 1, a->user);
	rk_db_bind_text(st, 2, a->space);
	static const struct rk_db_json_col cols[] = {{"name", 's'},	  {"bot", 's'},	       {"origin", 's'},
						   {"auth", 's'},	  {"state", 's'},      {"created_at", 't'},
						   {"updated_at", 't'}, {"reason", 's'},     {0}};
	return rk_db_json_rows(eng->db, st, cols, "list secrets", out, err);
}

int rk_secret_remove(struct rk_engine *eng, const struct rk_actor *a, const char *name, struct rk_error *err)
{
	int r = check_name(name, err);
	if (r)
		return r;
	struct rk_stmt *st = rk_db_prepare(
		eng->db, "DELETE FROM secrets WHERE user_id = ? AND space_id = ? AND bot_id = ? AND name = ?", err);
	if (!st)
		return -err->code;
	rk_db_bind_text(st, 1, a->user);
	rk_db_bind_text(st, 2, a->space);
	rk_db_bind_text(st, 3, a->bot ? a->bot : "");
	rk_db_bind_text(st, 4, name);
	if ((r = rk_db_step_done(eng->db, st, "remove the secret", err)))
		return r;
	if (rk_db_changes(eng->db) == 0)
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
	struct rk_stmt *st = rk_db_prepare(eng->db,
					 "SELECT bot_id, origin, auth, auth_param, nonce, ciphertext FROM secrets "
					 "WHERE user_id = ? AND space_id = ? AND name = ? AND bot_id IN (?, '') "
					 "ORDER BY bot_id = '' LIMIT 1",
					 err);
	if (!st)
		return -err->code;
	rk_db_bind_text(st, 1, a->user);
	rk_db_bind_text(st, 2, a->space);
	rk_db_bind_text(st, 3, name);
	rk_db_bind_text(st, 4, a->bot ? a->bot : "");
	int rc = rk_stmt_step(st);
	if (rc == RK_SQL_ROW) {
		s->bot = rk_db_col_text(st, 0);
		s->origin = rk_db_col_text(st, 1);
		s->kind = rk_db_col_text(st, 2);
		s->param = rk_db_col_text(st, 3);
		if (rk_stmt_column_bytes(st, 4) != NONCE_BYTES || rk_stmt_column_bytes(st, 5) < (int)TAG_BYTES) {
			r = rk_error_set(err, RK_ECORRUPT, "secret '%s' is damaged in the database: set it again", name);
		} else {
			memcpy(s->nonce, rk_stmt_column_blob(st, 4), NONCE_BYTES);
			s->ctlen = (size_t)rk_stmt_column_bytes(st, 5);
			s->ct = rk_xmalloc(s->ctlen);
			memcpy(s->ct, rk_stmt_column_blob(st, 5), s->ctlen);
		}
	} else if (rc == RK_SQL_DONE) {
		r = rk_error_set(err, RK_ENOTFOUND,
				 "no secret '%s' for %s%s%s in space '%s': the bot can ask with request_secret, a "
				 "person sets it with `rakazo secret set %s --origin URL --auth METHOD`",
				 name, a->user, a->bot ? "'s bot " : "", a->bot ? a->bot : "", a->space, name);
	} else {
		r = rk_db_sql_error(eng->db, err, "read the secret");
	}
	rk_stmt_finalize(st);
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

int rk_secret_reveal_for_origin(struct rk_engine *eng, const struct rk_actor *a, const char *name,
				const char *origin, char **value, size_t *len, char **kind, struct rk_error *err)
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
				 want ? want : origin && *origin && strcmp(origin, "null") ? origin : "of no web origin");
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

void rk_secret_redact_history(struct rk_engine *eng, const struct rk_actor *a, struct rk_buf *b)
{
	struct rk_stmt *st = NULL;
	struct rk_error e;
	if (eng && eng->db && a && a->user)
		st = rk_db_prepare(eng->db,
				   "SELECT name, bot_id, nonce, ciphertext FROM secrets WHERE user_id = ? AND space_id = ? "
				   "AND bot_id IN (?, '')",
				   &e);
	if (st) {
		rk_db_bind_text(st, 1, a->user);
		rk_db_bind_text(st, 2, a->space);
		rk_db_bind_text(st, 3, a->bot ? a->bot : "");
		unsigned char key[KEY_BYTES];
		int have_key = 0;
		while (rk_stmt_step(st) == RK_SQL_ROW) {
			/* one master key read for all of them (only when a secret exists) */
			if (!have_key && master_key(eng, key, &e)) {
				rk_log(RK_LOG_WARN, "history: secrets cannot be read to redact them: %s", e.message);
				break;
			}
			have_key = 1;
			char *name = rk_db_col_text(st, 0);
			struct sealed s = {.bot = rk_db_col_text(st, 1)};
			char *v = NULL;
			size_t len = 0;
			if (rk_stmt_column_bytes(st, 2) == NONCE_BYTES && rk_stmt_column_bytes(st, 3) >= (int)TAG_BYTES) {
				memcpy(s.nonce, rk_stmt_column_blob(st, 2), NONCE_BYTES);
				s.ctlen = (size_t)rk_stmt_column_bytes(st, 3);
				s.ct = rk_xmalloc(s.ctlen);
				memcpy(s.ct, rk_stmt_column_blob(st, 3), s.ctlen);
			}
			if (s.ct && unseal(key, a, name, &s, &v, &len, &e) == 0)
				rk_secret_redact(b, v, len);
			else
				rk_log(RK_LOG_WARN, "history: secret '%s' cannot be read to redact it", name);
			rk_secret_value_free(v, len);
			sealed_release(&s);
			free(name);
		}
		rk_stmt_finalize(st);
		sodium_memzero(key, sizeof(key));
	}
	rk_secret_redact_patterns(b);
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
		struct rk_stmt *st = rk_db_prepare(eng->db,
						 "INSERT INTO secret_requests (id, run_id, user_id, space_id, bot_id, name, "
						 "origin, auth, auth_param, reason, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
						 err);
		if (!st) {
			r = -err->code;
			goto out;
		}
		char *id = rk_id_new("srq");
		rk_db_bind_text(st, 1, id);
		rk_db_bind_text(st, 2, run_id);
		rk_db_bind_text(st, 3, a->user);
		rk_db_bind_text(st, 4, a->space);
		rk_db_bind_text(st, 5, a->bot ? a->bot : "");
		rk_db_bind_text(st, 6, name);
		rk_db_bind_text(st, 7, origin);
		rk_db_bind_text(st, 8, kind);
		rk_db_bind_text(st, 9, param);
		rk_db_bind_text(st, 10, reason);
		rk_stmt_bind_int64(st, 11, rk_now_ms());
		r = rk_db_step_done(eng->db, st, "record the secret request", err);
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
	cJSON_AddStringToObject(o, "note", same ? "the secret is set: use secret_request with its name"
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

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct response *rs = ud;
	size_t len = size * n;
	if (rs->body.len + len > RK_SECRET_RESPONSE_MAX) {
		size_t room = RK_SECRET_RESPONSE_MAX - rs->body.len;
		rk_buf_add(&rs->body, p, room);
		rs->truncated = 1;
		return 0; /* stops the transfer */
	}
	rk_buf_add(&rs->body, p, len);
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct response *rs = ud;
	size_t len = size * n;
	if (rs->headers.len + len <= 65536)
		rk_buf_add(&rs->headers, p, len);
	return len;
}

static int header_forbidden(const char *name, const struct sealed *s)
{
	static const char *const never[] = {"host", "content-length", "transfer-encoding", "connection", "cookie",
					    "proxy-authorization", NULL};
	for (size_t i = 0; never[i]; i++)
		if (!strcasecmp(name, never[i]))
			return 1;
	if ((!strcmp(s->kind, "bearer") || !strcmp(s->kind, "basic")) && !strcasecmp(name, "authorization"))
		return 1;
	return !strcmp(s->kind, "header") && !strcasecmp(name, s->param);
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
		return rk_error_set(err, RK_EINVALID, "secret_request: method must be GET, POST, PUT, PATCH, DELETE or HEAD");
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
		rk_log(RK_LOG_WARN, "secret %s: refused a request to %s (its origin is %s)", req->name, origin, s.origin);
		free(origin);
		sealed_release(&s);
		return r;
	}
	free(origin);
	struct curl_slist *hdrs = NULL;
	const cJSON *h;
	cJSON_ArrayForEach(h, req->headers)
	{
		if (!cJSON_IsString(h) || !token_ok(h->string) || strpbrk(h->valuestring, "\r\n")) {
			r = rk_error_set(err, RK_EINVALID, "secret_request: header '%s' is not a valid header", h->string);
			break;
		}
		if (header_forbidden(h->string, &s)) {
			r = rk_error_set(err, RK_EINVALID, "secret_request: header '%s' cannot be set here", h->string);
			break;
		}
		char *line = rk_xasprintf("%s: %s", h->string, h->valuestring);
		hdrs = curl_slist_append(hdrs, line);
		free(line);
	}
	char *value = NULL, *url = NULL, *auth_line = NULL;
	size_t vlen = 0;
	CURL *curl = NULL;
	struct response rs = {RK_BUF_INIT, RK_BUF_INIT, 0};
	rk_buf_init(&rs.body);
	rk_buf_init(&rs.headers);
	if (r || (r = open_sealed(eng, a, req->name, &s, &value, &vlen, err)))
		goto out;
	if (memchr(value, '\r', vlen) || memchr(value, '\n', vlen) || strlen(value) != vlen) {
		r = rk_error_set(err, RK_EINVALID, "secret '%s' holds a line break or NUL: it cannot be sent", req->name);
		goto out;
	}
	curl = curl_easy_init();
	if (!curl) {
		r = rk_error_set(err, RK_EFAILED, "secret_request: libcurl could not start");
		goto out;
	}
	if (!strcmp(s.kind, "query")) {
		char *k = curl_easy_escape(curl, s.param, 0), *v = curl_easy_escape(curl, value, (int)vlen);
		const char *sep = strchr(req->url, '?') ? "&" : "?";
		url = sodium_malloc(strlen(req->url) + strlen(k) + strlen(v) + 3);
		strcpy(url, req->url);
		strcat(url, sep);
		strcat(url, k);
		strcat(url, "=");
		strcat(url, v);
		sodium_memzero(v, strlen(v));
		curl_free(k);
		curl_free(v);
	} else {
		struct rk_buf line = RK_BUF_INIT;
		rk_buf_init(&line);
		if (!strcmp(s.kind, "bearer")) {
			rk_buf_adds(&line, "Authorization: Bearer ");
			rk_buf_add(&line, value, vlen);
		} else if (!strcmp(s.kind, "basic")) {
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
		hdrs = curl_slist_append(hdrs, auth_line);
	}
	curl_easy_setopt(curl, CURLOPT_URL, url ? url : req->url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &rs);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &rs);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "rakazo/" RK_VERSION);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (req->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req->body));
	}
	CURLcode cc = curl_easy_perform(curl);
	long status = 0;
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && rs.truncated)) {
		/* curl's message names the host at most, never the header */
		r = rk_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? RK_ETIMEOUT : RK_EUNAVAILABLE,
				 "secret_request: %s %s: %s", method, s.origin, curl_easy_strerror(cc));
		goto out;
	}
	*out = response_doc(status, &rs, value, vlen);
	rk_log(RK_LOG_INFO, "secret %s: %s %s -> %ld", req->name, method, s.origin, status);
out:
	if (curl)
		curl_easy_cleanup(curl);
	for (struct curl_slist *h2 = hdrs; h2; h2 = h2->next)
		sodium_memzero(h2->data, strlen(h2->data)); /* the list holds a copy of the auth line */
	if (hdrs)
		curl_slist_free_all(hdrs);
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
