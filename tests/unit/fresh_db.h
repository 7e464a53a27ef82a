#ifndef RK_FRESH_DB_H
#define RK_FRESH_DB_H
/* The state backend for a unit test's fresh data directory. Unset
 * RAKAZO_TEST_PG: SQLite in the directory, nothing to do. RAKAZO_TEST_PG=DIR
 * (a server from `sh scripts/pg.sh start DIR`): a new database on it, named
 * in RAKAZO_DATABASE_URL, so every test starts empty as it does on SQLite. */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/state/sql.h"

static inline void fresh_database(void)
{
	static int n;
	const char *dir = getenv("RAKAZO_TEST_PG");
	if (!dir || !*dir)
		return;
	char url[1024], name[64], sql[128];
	snprintf(url, sizeof(url), "postgresql://rakazo@/postgres?host=%s", dir);
	snprintf(name, sizeof(name), "rk_unit_%ld_%d", (long)getpid(), ++n);
	setenv("RAKAZO_DATABASE_URL", url, 1);
	struct rk_db *db = NULL;
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	if (rk_db_open_v2("", &db, 0, NULL) != RK_SQL_OK || db->drv->exec(db, sql) != RK_SQL_OK) {
		fprintf(stderr, "fresh_database: %s\n", db ? rk_db_errmsg(db) : "out of memory");
		abort();
	}
	rk_db_close(db);
	snprintf(url, sizeof(url), "postgresql://rakazo@/%s?host=%s", name, dir);
	setenv("RAKAZO_DATABASE_URL", url, 1);
}

#endif
