#ifndef RK_SECRET_H
#define RK_SECRET_H
/* Secrets a bot may use without seeing them.
 *
 * A secret is a value, the origin it may be sent to (scheme, host, port)
 * and how it is sent: bearer (Authorization: Bearer V), header:NAME
 * (NAME: V), basic (V is "user:password"; Authorization: Basic base64(V))
 * or query:NAME (?NAME=V). It belongs to a user in a space, and to one bot
 * or to all the user's bots (bot "").
 *
 * Storage: XChaCha20-Poly1305 (libsodium) under a 32-byte master key, from
 * RAKAZO_MASTER_KEY (64 hex digits) or DATA_DIR/master.key (made on first
 * use, mode 0600; a file readable by others is refused). The associated
 * data binds each ciphertext to its user, space, bot and name, so a row
 * copied to another bot or name fails to decrypt (RK_ECORRUPT).
 *
 * Use: rk_secret_send sends one HTTP request to the secret's origin with
 * the auth added. The URL must have exactly the stored origin, and no
 * userinfo or fragment. Redirects are not followed. Before anything of the
 * response reaches the caller, the body is decoded (the request asks for
 * "Accept-Encoding: identity"; a gzip, deflate, br or zstd body is
 * decompressed, one in another encoding refused) and the value is replaced
 * by "[redacted]" in every form rk_secret_redact knows. Values never go to
 * a shell, an environment, history, events or the log, and every tool
 * result is redacted with all of the user's values (engine/agent/tools.h). The one other
 * use is the page browser's fill_secret: a login typed into a field of a
 * page of the secret's own origin. */

#include <cJSON.h>
#include <stddef.h>

#include "engine/access/actor.h"
#include "engine/state/engine.h"
#include "engine/util/buf.h"
#include "engine/util/err.h"
#include "engine/util/names.h"

#define RK_SECRET_VALUE_MAX 65536
#define RK_SECRET_RESPONSE_MAX (1u << 20)
#define RK_SECRET_REDACTED "[redacted]"

/* "scheme://host:port" of url (lowercase, the port always written), malloc'd.
 * Only http and https. With origin_only, anything beyond the origin (a
 * path other than "/", a query) is refused too. Userinfo and fragments are
 * always refused. */
int rk_secret_origin(const char *url, int origin_only, char **origin, struct rk_error *err);
/* Checks an auth spec (bearer, basic, header:NAME, query:NAME); *kind and
 * *param (malloc'd, NULL for none) are its parts. */
int rk_secret_auth_parse(const char *spec, char **kind, char **param, struct rk_error *err);
/* Replaces every form of secret in b by "[redacted]": as it is, with any
 * of its bytes JSON-escaped (\" \/ \uXXXX ...), percent-encoded (%XX in
 * either case, '+' for a space) or a mix of these; base64 and base64url,
 * padded or not, also inside a longer base64 text (at any byte offset,
 * when at least 8 characters come from the secret alone); hex in either
 * case. For basic ("user:password") the password alone too. What has to be
 * decoded first (a compressed body) is decoded by whoever has it. */
void rk_secret_redact(struct rk_buf *b, const char *secret, size_t len);
/* Replaces what looks like a credential in b by "[redacted]": the value
 * after "Authorization:" (and its scheme word) or "Bearer ", of NAME=VALUE
 * and NAME: VALUE where NAME has key, token, secret, password, passwd or
 * credential in it, of --password/--token/--api-key/--secret VALUE (or
 * =VALUE), the password of scheme://user:password@, and whole tokens of
 * well-known key shapes (sk-..., ghp_..., github_pat_..., xoxb-..., glpat-...,
 * AKIA...). A quoted value is redacted up to its closing quote. */
void rk_secret_redact_patterns(struct rk_buf *b);
/* The values of every secret of a's user (in every space, for every bot),
 * to take out of whatever leaves for the model, the run's events and
 * conversation, the terminal history and the log. No secret stored: nothing
 * is decrypted (and no master key is made); one that cannot be read is
 * logged and skipped. Never NULL; a NULL a (or one without a user) redacts
 * nothing. Each value read is also kept for the rest of the process (at
 * most 1024), and every log line (util/log.h) is redacted with them. */
struct rk_secret_redactor;
struct rk_secret_redactor *rk_secret_redactor_new(struct rk_engine *eng, const struct rk_actor *a);
void rk_secret_redactor_free(struct rk_secret_redactor *r);
/* rk_secret_redact with each value (r NULL: nothing). */
void rk_secret_redactor_buf(const struct rk_secret_redactor *r, struct rk_buf *b);
/* The same in every string and member name of doc. */
void rk_secret_redactor_json(const struct rk_secret_redactor *r, cJSON *doc);
/* text redacted, malloc'd: a JSON document string by string (and printed
 * again), anything else as text. */
char *rk_secret_redactor_text(const struct rk_secret_redactor *r, const char *text);
/* For text people read later (the terminal history, the sessions list):
 * rk_secret_redactor_buf with r, then rk_secret_redact_patterns. */
void rk_secret_redactor_history(const struct rk_secret_redactor *r, struct rk_buf *b);
/* The same with a's redactor, read now. */
void rk_secret_redact_history(struct rk_engine *eng, const struct rk_actor *a, struct rk_buf *b);
/* Streams (a command's output read a piece at a time): a value split
 * between two pieces is whole in neither, so whoever hands the pieces on
 * keeps back the tail of each that could begin a form of one of r's values
 * until the next piece (or the end) says whether it is one. span: the
 * longest text a value can take in any form (6 bytes for each of its
 * bytes, \u00XX), 0 without values. hold: how many bytes at the end of
 * text[0..n) to keep back, at most span - 1 and usually none: the longest
 * tail that begins a form (as it is, escaped, base64, base64 inside a
 * longer text, hex) without being a whole one (that is redacted). */
size_t rk_secret_redactor_span(const struct rk_secret_redactor *r);
size_t rk_secret_redactor_hold(const struct rk_secret_redactor *r, const char *text, size_t n);

/* Stores (or replaces) a's secret name (a->bot: for that bot only). */
int rk_secret_set(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *origin_url,
		  const char *auth, const void *value, size_t len, struct rk_error *err);
/* a's secrets and the requests bots made for ones not set yet, a cJSON array
 * of {name, bot, origin, auth, state: set|requested, ...}; never values. */
int rk_secret_list(struct rk_engine *eng, const struct rk_actor *a, cJSON **out, struct rk_error *err);
int rk_secret_remove(struct rk_engine *eng, const struct rk_actor *a, const char *name, struct rk_error *err);
/* The plaintext of a's secret name (the bot's own, else the user's), for
 * tests and rk_secret_send; *value is sodium_malloc'd: free it with
 * rk_secret_value_free. */
int rk_secret_reveal(struct rk_engine *eng, const struct rk_actor *a, const char *name, char **value, size_t *len,
		     struct rk_error *err);
void rk_secret_value_free(char *value, size_t len);
/* The same, only for a page of origin (scheme://host[:port]): anything but
 * the secret's stored origin is RK_EDENIED and the value is not decrypted.
 * *kind (malloc'd, when asked): its auth kind (bearer, basic, header,
 * query). The page browser's fill_secret types it into a field
 * (engine/machine/browser.h). */
int rk_secret_reveal_for_origin(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *origin,
				char **value, size_t *len, char **kind, struct rk_error *err);

/* The request_secret tool: records that the bot needs secret name. *out:
 * {name, origin, auth, state: requested|available, command}. */
int rk_secret_request(struct rk_engine *eng, const struct rk_actor *a, const char *run_id, const char *name,
		      const char *origin, const char *auth, const char *reason, cJSON **out, struct rk_error *err);

struct rk_secret_http {
	const char *name, *url, *method; /* method NULL: GET */
	const cJSON *headers;		 /* object of strings, or NULL */
	const char *body;		 /* or NULL */
};
/* The secret_request tool. *out: {status, headers {lowercase name: value},
 * body (UTF-8 text) | body_base64, truncated}, already redacted. */
int rk_secret_send(struct rk_engine *eng, const struct rk_actor *a, const struct rk_secret_http *req, cJSON **out,
		   struct rk_error *err);

/* How a secret is sent (secrets.auth, the kind of rk_secret_auth_parse):
 * a bearer token, a header, basic auth or a query parameter. */
#define RK_SECRET_AUTHS(X)                                                                                             \
	X(RK_SECRET_BEARER, "bearer")                                                                                  \
	X(RK_SECRET_HEADER, "header")                                                                                  \
	X(RK_SECRET_BASIC, "basic")                                                                                    \
	X(RK_SECRET_QUERY, "query")
RK_NAMES_ENUM(rk_secret_auth, RK_SECRET_AUTH, RK_SECRET_AUTHS);

#endif
