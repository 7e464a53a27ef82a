/* The benchmarks' throwaway PostgreSQL: scripts/pg.sh in dir, on a unix
 * socket. Included by the bench programs that measure the state on it. */
#ifndef RK_BENCH_PG_SERVER_H
#define RK_BENCH_PG_SERVER_H
#include <stdio.h>
#include <string.h>

#include "engine/util/buf.h"

/* Starts it; its RAKAZO_DATABASE_URL in url. 1 when up, 0 when not. */
static int bench_pg_start(const char *dir, char *url, size_t url_size)
{
	char *start = rk_xasprintf("sh scripts/pg.sh start %s", dir);
	FILE *f = popen(start, "r");
	free(start);
	url[0] = '\0';
	int up = f && fgets(url, (int)url_size, f);
	up = (f ? pclose(f) == 0 : 0) && up;
	url[strcspn(url, "\n")] = '\0';
	return up;
}

/* Stops it; 0 or -1. */
static int bench_pg_stop(const char *dir)
{
	char *stop = rk_xasprintf("sh scripts/pg.sh stop %s >/dev/null", dir);
	int r = system(stop) == 0 ? 0 : -1;
	free(stop);
	return r;
}
#endif
