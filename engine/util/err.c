#define RK_ERR_C /* err.h: the analyser's model of these functions is not for here */
#include "engine/util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The one table of codes: stable name and exit status (documented in rakazo(1)). */
static const struct {
	const char *name;
	int exit_status;
} codes[RK_ECODE_COUNT] = {
	[RK_OK] = {"ok", 0},
	[RK_EFAILED] = {"failed", 1},
	[RK_EUSAGE] = {"usage", 2},
	[RK_EINVALID] = {"invalid_argument", 2},
	[RK_ENOTFOUND] = {"not_found", 3},
	[RK_ECONFLICT] = {"conflict", 4},
	[RK_EUNAVAILABLE] = {"unavailable", 5},
	[RK_ETIMEOUT] = {"timeout", 6},
	[RK_EOUTCOME_UNKNOWN] = {"outcome_unknown", 7},
	[RK_EDENIED] = {"denied", 8},
	[RK_EINTERRUPTED] = {"interrupted", 130},
	[RK_EUNSUPPORTED] = {"unsupported", 1},
	[RK_ETOOLARGE] = {"too_large", 1},
	[RK_EIO] = {"io", 1},
	[RK_ECORRUPT] = {"corrupt", 1},
	[RK_ESTALE] = {"stale_lease", 4},
	[RK_EMULTISCREEN] = {"MULTI_SCREEN_UNAVAILABLE", 5},
};

/* What a failure sets when its caller passed no struct rk_error. */
static _Thread_local struct rk_error scratch;

struct rk_error *rk_err(struct rk_error *err)
{
	return err ? err : &scratch;
}

int rk_error_pass(struct rk_error *err)
{
	return -(int)rk_err(err)->code;
}

static int vset(struct rk_error *err, enum rk_code code, const char *fmt, va_list ap)
{
	if (code <= RK_OK || code >= RK_ECODE_COUNT)
		code = RK_EFAILED;
	err = rk_err(err);
	err->code = code;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	return -(int)code;
}

int rk_error_set(struct rk_error *err, enum rk_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, code, fmt, ap);
	va_end(ap);
	return r;
}

int rk_error_errno(struct rk_error *err, enum rk_code code, int errno_value, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, code, fmt, ap);
	va_end(ap);
	err = rk_err(err);
	{
		size_t n = strlen(err->message);
		snprintf(err->message + n, sizeof(err->message) - n, ": %s", strerror(errno_value));
	}
	return r;
}

int rk_error_prefix(struct rk_error *err, const char *fmt, ...)
{
	err = rk_err(err);
	char head[512], old[sizeof(err->message)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->message, sizeof(old));
	/* room for both, then cut to the message's size: truncation is fine here */
	char whole[sizeof(head) + sizeof(old) + 2];
	snprintf(whole, sizeof(whole), "%s: %s", head, old);
	size_t n = strlen(whole);
	if (n >= sizeof(err->message))
		n = sizeof(err->message) - 1;
	memcpy(err->message, whole, n);
	err->message[n] = '\0';
	if (err->code <= RK_OK || err->code >= RK_ECODE_COUNT)
		err->code = RK_EFAILED;
	return -(int)err->code;
}

void rk_error_clear(struct rk_error *err)
{
	if (err) {
		err->code = RK_OK;
		err->message[0] = '\0';
	}
}

const char *rk_code_name(enum rk_code code)
{
	if (code < RK_OK || code >= RK_ECODE_COUNT)
		return "failed";
	return codes[code].name;
}

int rk_code_exit_status(enum rk_code code)
{
	if (code < RK_OK || code >= RK_ECODE_COUNT)
		return 1;
	return codes[code].exit_status;
}

enum rk_code rk_code_from_name(const char *name)
{
	for (int i = 0; name && i < RK_ECODE_COUNT; i++)
		if (strcmp(codes[i].name, name) == 0)
			return (enum rk_code)i;
	return RK_EFAILED;
}
