#include "engine/state/engine.h"

#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/log.h"

char *rk_data_dir_resolve(void)
{
	const char *d = getenv("RAKAZO_DATA_DIR");
	if (d && *d)
		return rk_xstrdup(d);
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && *xdg == '/')
		return rk_xasprintf("%s/rakazo", xdg);
	const char *home = getenv("HOME");
	if (!home || !*home) {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/tmp";
	}
	return rk_xasprintf("%s/.local/share/rakazo", home);
}

static char *resolve_owner(void)
{
	const char *o = getenv("RAKAZO_OWNER");
	if (o && *o)
		return rk_xstrdup(o);
	struct passwd *pw = getpwuid(getuid());
	if (pw)
		return rk_xasprintf("user:%s", pw->pw_name);
	return rk_xasprintf("user:%d", (int)getuid());
}

static char *resolve_self(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return rk_xstrdup("rakazo");
	buf[n] = '\0';
	return rk_xstrdup(buf);
}

/* DATA_DIR holds the database, the master key and the log: they are the
 * owner's alone, the directories 0700 and the files 0600. rakazo makes them
 * so (db.c, secret.c, util/log.c); one found looser (made by hand, copied,
 * left by an older rakazo) loses the extra bits here, and one warning names
 * what was repaired. A symbolic link is left as it is (chmod would follow
 * it out of DATA_DIR). */
static void private_modes(const char *data_dir)
{
	static const struct {
		const char *name; /* under DATA_DIR; "" is DATA_DIR itself */
		mode_t mode;
	} want[] = {
		{"", 0700},	      {"rakazo.db", 0600}, {"rakazo.db-wal", 0600},  {"rakazo.db-shm", 0600},
		{"master.key", 0600}, {"log", 0700},	   {"log/rakazo.log", 0600},
	};
	struct rk_buf fixed;
	rk_buf_init(&fixed);
	int key = 0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char *path = *want[i].name ? rk_path_join(data_dir, want[i].name) : rk_xstrdup(data_dir);
		struct stat st;
		mode_t m;
		/* DATA_DIR itself may be a link the person made; what is inside may not */
		if ((*want[i].name ? lstat(path, &st) : stat(path, &st)) == 0 && !S_ISLNK(st.st_mode) &&
		    st.st_uid == geteuid() && ((m = st.st_mode & 07777) & ~want[i].mode) &&
		    chmod(path, m & want[i].mode) == 0) {
			rk_buf_printf(&fixed, "%s%s (%04o to %04o)", fixed.len ? ", " : "", path, (unsigned)m,
				      (unsigned)(m & want[i].mode));
			key |= !strcmp(want[i].name, "master.key");
		}
		free(path);
	}
	if (fixed.len)
		rk_warn("others could reach the data directory's private files; modes repaired: %s%s", fixed.data,
			key ? "; the master key was readable: if anyone else could have read it, set every secret "
			      "again (rakazo-secret(1))"
			    : "");
	rk_buf_release(&fixed);
}

int rk_engine_open(struct rk_engine **out, struct rk_error *err)
{
	struct rk_engine *eng = rk_xcalloc(1, sizeof(*eng));
	eng->data_dir = rk_data_dir_resolve();
	int r = rk_db_open(eng->data_dir, &eng->db, err);
	if (r) {
		rk_engine_free(eng);
		return r;
	}
	rk_log_open(eng->data_dir);
	private_modes(eng->data_dir);
	eng->owner = resolve_owner();
	const char *bin = getenv("RAKAZO_SELF");
	eng->self_exe = bin && *bin ? rk_xstrdup(bin) : resolve_self();
	*out = eng;
	return 0;
}

void rk_engine_free(struct rk_engine *eng)
{
	if (!eng)
		return;
	rk_db_close(eng->db);
	free(eng->data_dir);
	free(eng->owner);
	free(eng->self_exe);
	free(eng);
}

int rk_engine_spawn(struct rk_engine *eng, rk_ipc_main_fn fn, void *arg, struct rk_error *err)
{
	rk_db_close(eng->db);
	eng->db = NULL;
	int r = rk_ipc_spawn(fn, arg, err);
	struct rk_error e2;
	if (rk_db_open(eng->data_dir, &eng->db, &e2) != 0) {
		if (r == 0)
			r = rk_error_set(err, e2.code, "%s", e2.message);
		eng->db = NULL;
	}
	return r;
}

/* --- what `rakazo doctor` reports about the state ------------------------------ */

char *rk_engine_backend(void)
{
	const char *url = rk_sql_url();
	if (!url)
		return rk_xasprintf("sqlite: embedded, in the data directory (set RAKAZO_DATABASE_URL for PostgreSQL)");
	char *where = rk_sql_url_redacted(url);
	char *s = rk_xasprintf("postgresql: %s (RAKAZO_DATABASE_URL)", where);
	free(where);
	return s;
}

int rk_engine_health(struct rk_engine *eng, struct rk_engine_health *out, struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_db *db = eng->db;
	int r = rk_db_integrity_check(db, &out->integrity, err);
	if (r)
		return r;
	out->path = db->path;
	out->pg = rk_db_dialect(db) == RK_DIALECT_PG;
	struct rk_error e;
	if (rk_db_journal_mode(db, &out->mode, &e) != 0)
		out->mode = rk_xasprintf("%s unknown (%s)", out->pg ? "server version" : "journal mode", e.message);
	out->schema = rk_db_schema_version(db);
	out->migrations = rk_db_migration_count();
	return 0;
}

void rk_engine_health_release(struct rk_engine_health *h)
{
	if (!h)
		return;
	free(h->integrity);
	free(h->mode);
	memset(h, 0, sizeof(*h));
}

const char *rk_engine_sqlite_version(void)
{
	return rk_sql_sqlite.version();
}

const char *rk_engine_pg_version(void)
{
	return rk_sql_pg.version();
}
