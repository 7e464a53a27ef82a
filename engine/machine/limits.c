#include "engine/machine/limits.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/util/json.h"

int rk_limits_parse_memory(const char *s, const char *what, int64_t *out, struct rk_error *err)
{
	const char *p = s;
	uint64_t v = 0;
	int digits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX / 10
					      : v * 10 + (uint64_t)(*p - '0'); /* too big either way */
	int shift = 0;
	char u = (char)tolower((unsigned char)*p);
	if (u && strchr("kmgt", u)) {
		shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : 40;
		p++;
		if (tolower((unsigned char)*p) == 'i' && tolower((unsigned char)p[1]) == 'b')
			p += 2;
		else if (tolower((unsigned char)*p) == 'b')
			p++;
	} else if (u == 'b') {
		p++;
	}
	if (!digits || *p)
		return rk_error_set(err, RK_EINVALID,
				    "%s '%s' is not a memory size: give bytes or a whole number with k, m, g or t "
				    "(512m, 2g)",
				    what, s);
	if (v > (uint64_t)RK_LIMIT_MAX_MEMORY >> shift || (int64_t)(v << shift) < RK_LIMIT_MIN_MEMORY)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is out of range: from 64m to 1t", what, s);
	*out = (int64_t)(v << shift);
	return 0;
}

static int cpus_in_range(double v, const char *what, const char *shown, struct rk_error *err)
{
	if (!isfinite(v) || v < RK_LIMIT_MIN_CPUS || v > RK_LIMIT_MAX_CPUS)
		return rk_error_set(err, RK_EINVALID, "%s %s is out of range: from 0.01 to 1024 CPUs", what, shown);
	return 0;
}

int rk_limits_parse_cpus(const char *s, const char *what, double *out, struct rk_error *err)
{
	char *end = NULL;
	errno = 0;
	double v = isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1])) ? strtod(s, &end) : 0;
	if (!end || *end || errno)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is not a number of CPUs: give a decimal number (1, 0.5)",
				    what, s);
	char shown[128];
	snprintf(shown, sizeof(shown), "'%s'", s);
	int r = cpus_in_range(v, what, shown, err);
	if (r)
		return r;
	*out = v;
	return 0;
}

static int pids_in_range(double v, const char *what, const char *shown, struct rk_error *err)
{
	if (v < RK_LIMIT_MIN_PIDS || v > RK_LIMIT_MAX_PIDS)
		return rk_error_set(err, RK_EINVALID,
				    "%s %s is out of range: from 64 to 4194304 (a desktop with a browser needs ~200)",
				    what, shown);
	return 0;
}

int rk_limits_parse_pids(const char *s, const char *what, int64_t *out, struct rk_error *err)
{
	char *end = NULL;
	errno = 0;
	long long v = isdigit((unsigned char)*s) ? strtoll(s, &end, 10) : 0;
	if (!end || *end || errno)
		return rk_error_set(err, RK_EINVALID, "%s '%s' is not a whole number of processes", what, s);
	char shown[128];
	snprintf(shown, sizeof(shown), "'%s'", s);
	int r = pids_in_range((double)v, what, shown, err);
	if (r)
		return r;
	*out = v;
	return 0;
}

/* One field of "resources": absent or null is 0, a string is parsed as the
 * CLI parses it, a number is range-checked. */
static int limit_field(const cJSON *res, const char *key, const struct rk_provider_ops *ops, unsigned cap,
		       struct rk_limits *out, struct rk_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, key);
	if (!v || cJSON_IsNull(v))
		return 0;
	char what[64];
	snprintf(what, sizeof(what), "create: resources.%s", key);
	if (!(ops->caps & cap))
		return rk_error_set(err, RK_EUNSUPPORTED,
				    "provider '%s' cannot enforce a %s limit: leave it out (`rakazo computer providers` "
				    "lists the limits each enforces)",
				    ops->name, key);
	if (cJSON_IsString(v)) {
		if (cap == RK_CAP_LIMIT_MEMORY)
			return rk_limits_parse_memory(v->valuestring, what, &out->memory, err);
		if (cap == RK_CAP_LIMIT_CPUS)
			return rk_limits_parse_cpus(v->valuestring, what, &out->cpus, err);
		return rk_limits_parse_pids(v->valuestring, what, &out->pids, err);
	}
	if (!cJSON_IsNumber(v))
		return rk_error_set(err, RK_EINVALID, "%s must be a number or a string", what);
	double d = v->valuedouble;
	char shown[64];
	snprintf(shown, sizeof(shown), "%.17g", d);
	int r;
	if (cap == RK_CAP_LIMIT_CPUS) {
		if ((r = cpus_in_range(d, what, shown, err)))
			return r;
		out->cpus = d;
	} else if (d != floor(d)) {
		return rk_error_set(err, RK_EINVALID, "%s must be a whole number", what);
	} else if (cap == RK_CAP_LIMIT_PIDS) {
		if ((r = pids_in_range(d, what, shown, err)))
			return r;
		out->pids = (int64_t)d;
	} else {
		if (d < (double)RK_LIMIT_MIN_MEMORY || d > (double)RK_LIMIT_MAX_MEMORY)
			return rk_error_set(err, RK_EINVALID, "%s %s is out of range: from 64m to 1t", what, shown);
		out->memory = (int64_t)d;
	}
	return 0;
}

int rk_limits_from_json(const cJSON *resources, const struct rk_provider_ops *ops, struct rk_limits *out,
			struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	if (resources && !cJSON_IsNull(resources)) {
		if (!cJSON_IsObject(resources))
			return rk_error_set(err, RK_EINVALID,
					    "create: resources must be an object {\"memory\", \"cpus\", \"pids\"}");
		for (const cJSON *c = resources->child; c; c = c->next)
			if (strcmp(c->string, "memory") && strcmp(c->string, "cpus") && strcmp(c->string, "pids"))
				return rk_error_set(err, RK_EINVALID,
						    "create: unknown field '%s' in resources (memory, cpus, pids)",
						    c->string);
		int r;
		if ((r = limit_field(resources, "memory", ops, RK_CAP_LIMIT_MEMORY, out, err)) ||
		    (r = limit_field(resources, "cpus", ops, RK_CAP_LIMIT_CPUS, out, err)) ||
		    (r = limit_field(resources, "pids", ops, RK_CAP_LIMIT_PIDS, out, err)))
			return r;
	}
	rk_limits_defaults(ops->caps, out);
	return 0;
}

cJSON *rk_limits_to_json(const struct rk_limits *l)
{
	cJSON *o = cJSON_CreateObject();
	if (l->memory > 0)
		cJSON_AddNumberToObject(o, "memory", (double)l->memory);
	else
		cJSON_AddNullToObject(o, "memory");
	if (l->cpus > 0)
		cJSON_AddNumberToObject(o, "cpus", l->cpus);
	else
		cJSON_AddNullToObject(o, "cpus");
	if (l->pids > 0)
		cJSON_AddNumberToObject(o, "pids", (double)l->pids);
	else
		cJSON_AddNullToObject(o, "pids");
	return o;
}

void rk_computer_limits(const struct rk_computer *c, struct rk_limits *out)
{
	memset(out, 0, sizeof(*out));
	const struct rk_provider_ops *ops = rk_provider_find(c->kind);
	unsigned caps = ops ? ops->caps : 0;
	cJSON *doc = c->resources ? cJSON_Parse(c->resources) : NULL;
	const cJSON *v;
	/* what was stored at create, never more than the provider enforces */
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "memory")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_MEMORY))
		out->memory = (int64_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "cpus")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_CPUS))
		out->cpus = v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(doc, "pids")) && cJSON_IsNumber(v) && (caps & RK_CAP_LIMIT_PIDS))
		out->pids = (int64_t)v->valuedouble;
	cJSON_Delete(doc);
	rk_limits_defaults(caps, out);
}
