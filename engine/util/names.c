#include "engine/util/names.h"

#include <string.h>

int rk_names_find(const char *const *names, int count, const char *s)
{
	for (int i = 1; s && i < count; i++)
		if (names[i] && !strcmp(names[i], s))
			return i;
	return 0;
}

const char *rk_names_name(const char *const *names, int count, int value)
{
	return value > 0 && value < count && names[value] ? names[value] : names[0];
}
