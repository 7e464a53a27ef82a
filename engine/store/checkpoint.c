/* The checkpoint record and the files no checkpoint keeps (see checkpoint.h). */

#include "engine/store/checkpoint.h"

#include <stdlib.h>
#include <string.h>

void rk_workspace_checkpoint_release(struct rk_workspace_checkpoint *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->reason);
	free(r->checksum);
	free(r->skipped_names);
	memset(r, 0, sizeof(*r));
}

void rk_workspace_checkpoints_free(struct rk_workspace_checkpoint *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		rk_workspace_checkpoint_release(&r[i]);
	free(r);
}

const char *rk_workspace_kind_name(enum rk_workspace_kind k)
{
	return k == RK_WORKSPACE_MARKER ? "marker" : "snapshot";
}

/* --- exclusions ------------------------------------------------------------- */

static const char *const cache_dirs[] = {"Cache",
					 "Code Cache",
					 "GPUCache",
					 "GrShaderCache",
					 "ShaderCache",
					 "DawnGraphiteCache",
					 "DawnWebGPUCache",
					 "Crashpad",
					 "CacheStorage",
					 "component_crx_cache",
					 "optimization_guide_model_store",
					 NULL};
static const char *const lock_names[] = {"SingletonCookie", "SingletonLock",	  "SingletonSocket", "lockfile", "lock",
					 ".parentlock",	    "DevToolsActivePort", "BrowserMetrics",  NULL};

static int seg_is(const char *seg, size_t len, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (strlen(names[i]) == len && !memcmp(seg, names[i], len))
			return 1;
	return 0;
}

int rk_workspace_excluded(const char *path)
{
	static const char top[] = ".browser-profiles";
	size_t tl = sizeof(top) - 1;
	if (strncmp(path, top, tl) != 0 || path[tl] != '/')
		return 0;
	const char *p = path + tl + 1;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		int last = !slash;
		if (seg_is(p, len, cache_dirs))
			return 1;
		if (last) {
			if (seg_is(p, len, lock_names) || !strncmp(p, "Singleton", 9) ||
			    !strncmp(p, "BrowserMetrics", 14) || (len > 4 && !memcmp(p + len - 4, ".tmp", 4)))
				return 1;
		}
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}
