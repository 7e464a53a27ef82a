/* Spaces someone made on purpose (see space.h). */

#include "engine/access/space.h"

#include <stdlib.h>
#include <string.h>

#include "engine/state/db.h"
#include "engine/util/buf.h"
#include "engine/util/time.h"

int rk_space_create(struct rk_engine *eng, const struct rk_actor *a, const char *name, const char *description,
		    const char *run_id, struct rk_error *err)
{
	if (!rk_authz_name_ok(name))
		return rk_error_set(err, RK_EINVALID, "space name '%s' is not valid: use 1 to 128 letters, digits and . _ @ + -",
				    name ? name : "");
	if (!strcmp(name, RK_SPACE_DEFAULT))
		return rk_error_set(err, RK_ECONFLICT, "space '%s' always exists", name);
	if (description && strlen(description) > 1000)
		return rk_error_set(err, RK_EINVALID, "a space's description is at most 1000 bytes");
	struct rk_stmt *st = rk_db_prepare(eng->db,
					 "INSERT INTO spaces (id, description, created_by, run_id, created_at) "
					 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
					 err);
	if (!st)
		return -rk_err(err)->code;
	char *by = a->bot ? rk_xasprintf("user:%s/bot:%s", a->user, a->bot) : rk_xasprintf("user:%s", a->user);
	rk_db_bind_text(st, 1, name);
	rk_db_bind_text(st, 2, description);
	rk_db_bind_text(st, 3, by);
	rk_db_bind_text(st, 4, run_id);
	rk_stmt_bind_int64(st, 5, rk_now_ms());
	free(by);
	int r = rk_db_step_done(eng->db, st, "create the space", err);
	if (r == 0 && rk_db_changes(eng->db) == 0)
		r = rk_error_set(err, RK_ECONFLICT, "space '%s' exists", name);
	return r;
}

int rk_space_list(struct rk_engine *eng, cJSON **out, struct rk_error *err)
{
	/* the recorded spaces, and every space a computer lives in (used by name) */
	struct rk_stmt *st = rk_db_prepare(
		eng->db,
		"WITH names(id) AS (SELECT 'default' UNION SELECT id FROM spaces UNION SELECT space_id FROM computer_access) "
		"SELECT n.id, s.description, s.created_by, s.run_id, s.created_at, "
		"  (SELECT count(*) FROM computers c LEFT JOIN computer_access ca ON ca.computer_id = c.id "
		"   WHERE coalesce(ca.space_id, 'default') = n.id AND c.state != 'deleted') "
		"FROM names n LEFT JOIN spaces s ON s.id = n.id ORDER BY n.id != 'default', n.id",
		err);
	if (!st)
		return -rk_err(err)->code;
	static const struct rk_db_json_col cols[] = {{"id", 's'},     {"description", 's'}, {"created_by", 's'},
						     {"run_id", 's'}, {"created_at", 't'},  {"computers", 'i'},
						     {0}};
	return rk_db_json_rows(eng->db, st, cols, "list spaces", out, err);
}
