#ifndef RK_LIMITS_H
#define RK_LIMITS_H
/* A computer's resource limits (struct rk_limits, providers/provider.h): as
 * typed, as stored at create, and what its provider enforces. Below the
 * lifecycle, which checks them when a computer is made, and the provider
 * facade, which hands them to the provider. */

#include <cJSON.h>

#include "engine/state/db.h"
#include "providers/provider.h"

#define RK_LIMIT_MIN_MEMORY (64LL << 20)
#define RK_LIMIT_MAX_MEMORY (1LL << 40)
#define RK_LIMIT_MIN_CPUS 0.01
#define RK_LIMIT_MAX_CPUS 1024.0
#define RK_LIMIT_MIN_PIDS 64
#define RK_LIMIT_MAX_PIDS 4194304

/* One limit as typed (what names it in the message, e.g. "--memory"): a
 * memory size is bytes or a whole number with k, m, g or t (binary: 512m,
 * 2g, optionally followed by b or ib); CPUs a decimal number (0.5); pids a
 * whole number. Out of range or malformed is RK_EINVALID. */
int rk_limits_parse_memory(const char *s, const char *what, int64_t *out, struct rk_error *err);
int rk_limits_parse_cpus(const char *s, const char *what, double *out, struct rk_error *err);
int rk_limits_parse_pids(const char *s, const char *what, int64_t *out, struct rk_error *err);
/* The limits of a new computer on provider ops from a create body's
 * "resources" ({"memory", "cpus", "pids"}: numbers, or strings as above;
 * NULL or null asks for none): each is checked, one the provider cannot
 * enforce is RK_EUNSUPPORTED, and the others it enforces get defaults. */
int rk_limits_from_json(const cJSON *resources, const struct rk_provider_ops *ops, struct rk_limits *out,
			struct rk_error *err);
/* {"memory": bytes, "cpus": n, "pids": n}, null for a limit that is 0 (none). */
cJSON *rk_limits_to_json(const struct rk_limits *l);
/* A computer's limits: the stored ones, or for one made before limits
 * existed, its provider's defaults. */
void rk_computer_limits(const struct rk_computer *c, struct rk_limits *out);

#endif
