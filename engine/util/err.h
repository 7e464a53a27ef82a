#ifndef RK_ERR_H
#define RK_ERR_H
/* Errors: a stable code users can grep, a human message, an exit status.
 * Functions return 0 (or a non-negative value) on success and -RK_E... on
 * failure, after filling the caller's struct rk_error. */

#include <stddef.h>

enum rk_code {
	RK_OK = 0,
	RK_EFAILED,	     /* failed: something went wrong; the message says what */
	RK_EUSAGE,	     /* usage: bad flags or arguments */
	RK_EINVALID,	     /* invalid_argument: a value is malformed or out of range */
	RK_ENOTFOUND,	     /* not_found */
	RK_ECONFLICT,	     /* conflict: another command holds it, or the key was reused */
	RK_EUNAVAILABLE,     /* unavailable: a provider, daemon or socket is not reachable */
	RK_ETIMEOUT,	     /* timeout */
	RK_EOUTCOME_UNKNOWN, /* outcome_unknown: a reply was lost; check before retrying */
	RK_EDENIED,	     /* denied: approval or rights */
	RK_EINTERRUPTED,     /* interrupted */
	RK_EUNSUPPORTED,     /* unsupported: this provider cannot do that */
	RK_ETOOLARGE,	     /* too_large: over a size limit */
	RK_EIO,		     /* io: a local file or disk operation failed */
	RK_ECORRUPT,	     /* corrupt: stored data failed a check */
	RK_ESTALE,	     /* stale_lease: a fencing token was superseded */
	RK_EMULTISCREEN,     /* MULTI_SCREEN_UNAVAILABLE */
	RK_ECODE_COUNT
};

struct rk_error {
	enum rk_code code;
	char message[1024];
};

/* Fills err (which may be NULL) and returns -code. The message is a format
 * string of ours; untrusted text goes in through %s only. */
int rk_error_set(struct rk_error *err, enum rk_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like rk_error_set, with ": strerror(errno_value)" appended. */
int rk_error_errno(struct rk_error *err, enum rk_code code, int errno_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Prefixes the message already in err with more context. Returns -err->code. */
int rk_error_prefix(struct rk_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rk_error_clear(struct rk_error *err);
/* err itself, or, where a caller passed NULL, this thread's scratch error:
 * every err parameter may be NULL, yet the code still travels back up the
 * call chain (return -rk_err(err)->code after a callee failed). */
struct rk_error *rk_err(struct rk_error *err);
/* -rk_err(err)->code: passes up the failure a callee has set in err. The
 * same value, written so that the analyser sees a failure (below). */
int rk_error_pass(struct rk_error *err);
#if defined(__clang_analyzer__) && !defined(RK_ERR_C)
/* The static analyser (make lint) reads one file at a time and cannot see
 * err.c: tell it what err.c guarantees, that rk_error_set and rk_error_errno
 * return a code < 0 (an unknown code becomes RK_EFAILED), so it does not
 * follow failure paths as if they had succeeded. Compiled code is untouched. */
static inline int rk_error_negative_(int r)
{
	if (r >= 0)
		__builtin_unreachable();
	return r;
}
#define rk_error_set(...) rk_error_negative_(rk_error_set(__VA_ARGS__))
#define rk_error_errno(...) rk_error_negative_(rk_error_errno(__VA_ARGS__))
/* (a callee that failed has set a code: the contract rk_err relies on) */
#define rk_error_pass(err) rk_error_negative_(rk_error_pass(err))
#endif

const char *rk_code_name(enum rk_code code); /* "not_found" */
int rk_code_exit_status(enum rk_code code);  /* 3 */
/* Code from its stable name; RK_EFAILED when unknown. */
enum rk_code rk_code_from_name(const char *name);

#endif
