#include <stdlib.h>
#include <string.h>

#include "providers/provider.h"

extern const struct rk_provider_ops rk_provider_fake;
extern const struct rk_provider_ops rk_provider_docker;
extern const struct rk_provider_ops rk_provider_paired;
extern const struct rk_provider_ops rk_provider_daytona;
extern const struct rk_provider_ops rk_provider_box;
extern const struct rk_provider_ops rk_provider_e2b;

/* A new provider is a new file plus one line here. */
const struct rk_provider_ops *const rk_providers[] = {
	&rk_provider_docker,
	&rk_provider_fake,
	&rk_provider_paired,
	&rk_provider_daytona,
	&rk_provider_box,
	&rk_provider_e2b,
	NULL,
};

const struct rk_provider_ops *rk_provider_find(const char *name)
{
	for (size_t i = 0; name && rk_providers[i]; i++)
		if (strcmp(rk_providers[i]->name, name) == 0)
			return rk_providers[i];
	return NULL;
}

int rk_provider_can(const char *name, unsigned caps)
{
	const struct rk_provider_ops *ops = rk_provider_find(name);
	return ops && (ops->caps & caps) == caps;
}

void rk_file_entries_free(struct rk_file_entry *entries, size_t n)
{
	for (size_t i = 0; entries && i < n; i++)
		free(entries[i].name);
	free(entries);
}
