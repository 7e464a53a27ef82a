/* A team computer's tables: their SQL (see db_team.h), through db.h's
 * statement helpers. */

#include "engine/state/db_team.h"

#include <stdlib.h>
#include <string.h>

#include "engine/util/buf.h"

/* --- team_bots ------------------------------------------------------------ */

int rk_db_team_bot_laid_out(struct rk_db *db, const char *computer_id, const char *bot_id, const char *layout_ref,
			    struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT 1 FROM team_bots WHERE computer_id = ? AND bot_id = ? AND layout_ref IS ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	rk_db_bind_text(st, 3, layout_ref);
	int done = rk_stmt_step(st) == RK_SQL_ROW;
	rk_stmt_finalize(st);
	return done;
}

int rk_db_team_bot_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *layout_ref,
		       int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "INSERT INTO team_bots (computer_id, bot_id, layout_ref, created_at) VALUES (?, ?, ?, ?) "
			      "ON CONFLICT (computer_id, bot_id) DO UPDATE SET layout_ref = excluded.layout_ref",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	rk_db_bind_text(st, 3, layout_ref);
	rk_stmt_bind_int64(st, 4, now_ms);
	return rk_db_step_done(db, st, "record team bot", err);
}

/* --- display_slots ---------------------------------------------------------- */

void rk_slot_row_release(struct rk_slot_row *s)
{
	if (!s)
		return;
	free(s->bot_id);
	free(s->state);
	free(s->profile);
	memset(s, 0, sizeof(*s));
}

void rk_slot_rows_free(struct rk_slot_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rk_slot_row_release(&rows[i]);
	free(rows);
}

int rk_db_slot_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_slot_row *out,
		      struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT slot, state, generation FROM display_slots WHERE computer_id = ? AND "
					   "bot_id = ?",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	int found = rk_stmt_step(st) == RK_SQL_ROW;
	if (found) {
		out->slot = rk_stmt_column_int(st, 0);
		out->state = rk_db_col_text(st, 1);
		out->generation = rk_stmt_column_int64(st, 2);
	}
	rk_stmt_finalize(st);
	return found;
}

int rk_db_slot_live_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, int *slot,
			   int64_t *generation, struct rk_error *err)
{
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT slot, generation FROM display_slots WHERE computer_id = ? AND bot_id = ? "
				    "AND state = 'live'",
				    err);
	if (!st)
		return rk_error_pass(err);
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	int found = rk_stmt_step(st) == RK_SQL_ROW;
	if (found) {
		*slot = rk_stmt_column_int(st, 0);
		*generation = rk_stmt_column_int64(st, 1);
	}
	rk_stmt_finalize(st);
	return found;
}

int rk_db_slot_tenant(struct rk_db *db, const char *computer_id, int slot, char **bot_id, int64_t *generation,
		      struct rk_error *err)
{
	*bot_id = NULL;
	struct rk_stmt
		*st = rk_db_prepare(db,
				    "SELECT bot_id, generation FROM display_slots WHERE computer_id = ? AND slot = ? "
				    "AND bot_id IS NOT NULL",
				    err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int(st, 2, slot);
	int rc = rk_stmt_step(st), found = rc == RK_SQL_ROW;
	if (found) {
		*bot_id = rk_db_col_text(st, 0);
		*generation = rk_stmt_column_int64(st, 1);
	}
	rk_stmt_finalize(st);
	return found ? 1 : rc == RK_SQL_DONE ? 0 : rk_db_sql_error(db, err, "slot tenant");
}

static void slot_row(struct rk_stmt *st, void *p)
{
	struct rk_slot_row *s = p;
	s->slot = rk_stmt_column_int(st, 0);
	s->bot_id = rk_db_col_text(st, 1);
	s->state = rk_db_col_text(st, 2);
	s->generation = rk_stmt_column_int64(st, 3);
	s->profile = rk_db_col_text(st, 4);
}

static void slot_release_any(void *p)
{
	rk_slot_row_release(p);
}

int rk_db_slot_list(struct rk_db *db, const char *computer_id, struct rk_slot_row **out, size_t *n,
		    struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db,
					   "SELECT slot, bot_id, state, generation, profile FROM display_slots WHERE "
					   "computer_id = ? AND bot_id IS NOT NULL ORDER BY slot",
					   err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	return rk_db_collect(db, st, sizeof(**out), slot_row, slot_release_any, (void **)out, n, "list screens", err);
}

int rk_db_slot_count(struct rk_db *db, const char *computer_id)
{
	int bots = 0;
	struct rk_stmt *st = rk_db_prepare(
		db, "SELECT count(*) FROM display_slots WHERE computer_id = ? AND bot_id IS NOT NULL", NULL);
	if (st) {
		rk_db_bind_text(st, 1, computer_id);
		if (rk_stmt_step(st) == RK_SQL_ROW)
			bots = rk_stmt_column_int(st, 0);
		rk_stmt_finalize(st);
	}
	return bots;
}

int rk_db_slot_claim(struct rk_db *db, const char *computer_id, int slot, const char *bot_id, const char *profile,
		     int64_t now_ms, int64_t *generation, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		"INSERT INTO display_slots (computer_id, slot, bot_id, state, generation, profile, updated_at) "
		"VALUES (?1, ?2, ?3, 'starting', 1, ?4, ?5) ON CONFLICT (computer_id, slot) DO UPDATE SET "
		"bot_id = ?3, state = 'starting', generation = display_slots.generation + 1, profile = ?4, updated_at = ?5",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int(st, 2, slot);
	rk_db_bind_text(st, 3, bot_id);
	rk_db_bind_text(st, 4, profile);
	rk_stmt_bind_int64(st, 5, now_ms);
	int r = rk_db_step_done(db, st, "claim screen", err);
	if (r)
		return r;
	st = rk_db_prepare(db, "SELECT generation FROM display_slots WHERE computer_id = ? AND slot = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int(st, 2, slot);
	*generation = rk_stmt_step(st) == RK_SQL_ROW ? rk_stmt_column_int64(st, 0) : 1;
	rk_stmt_finalize(st);
	return 0;
}

int rk_db_slot_set_state(struct rk_db *db, const char *computer_id, int slot, int64_t generation, const char *state,
			 int vacate, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(
		db,
		vacate ? "UPDATE display_slots SET bot_id = NULL, profile = NULL, state = ?4, updated_at = ?5 WHERE "
			 "computer_id = ?1 AND slot = ?2 AND generation = ?3"
		       : "UPDATE display_slots SET state = ?4, updated_at = ?5 WHERE computer_id = ?1 AND slot = ?2 AND "
			 "generation = ?3",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int(st, 2, slot);
	rk_stmt_bind_int64(st, 3, generation);
	rk_db_bind_text(st, 4, state);
	rk_stmt_bind_int64(st, 5, now_ms);
	return rk_db_step_done(db, st, "screen state", err);
}

int rk_db_slots_vacate(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st =
		rk_db_prepare(db,
			      "UPDATE display_slots SET bot_id = NULL, profile = NULL, state = 'free', updated_at = ?2 "
			      "WHERE computer_id = ?1 AND bot_id IS NOT NULL",
			      err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, now_ms);
	int r = rk_db_step_done(db, st, "forget screens", err);
	return r ? r : (int)rk_db_changes(db);
}

/* --- control_leases ----------------------------------------------------------- */

int rk_db_control_grant(struct rk_db *db, const char *computer_id, const char *bot_id, const char *holder,
			const char *lease_id, int64_t expires_at, int64_t now_ms, int extend, char **granted_id,
			struct rk_error *err)
{
	*granted_id = NULL;
	struct rk_stmt *st = rk_db_prepare(
		db,
		"INSERT INTO control_leases (computer_id, bot_id, holder, lease_id, expires_at, created_at) VALUES "
		"(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (computer_id, bot_id) DO UPDATE SET expires_at = ?5, "
		"holder = CASE WHEN ?7 <> 0 THEN control_leases.holder ELSE ?3 END, lease_id = CASE WHEN ?7 <> 0 THEN control_leases.lease_id ELSE ?4 END, "
		"created_at = CASE WHEN ?7 <> 0 THEN control_leases.created_at ELSE ?6 END RETURNING lease_id",
		err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	rk_db_bind_text(st, 3, holder);
	rk_db_bind_text(st, 4, lease_id);
	rk_stmt_bind_int64(st, 5, expires_at);
	rk_stmt_bind_int64(st, 6, now_ms);
	rk_stmt_bind_int(st, 7, extend);
	int r = 0;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		*granted_id = rk_db_col_text(st, 0);
	else
		r = rk_db_sql_error(db, err, "grant control");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_control_drop(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_error *err)
{
	struct rk_stmt *st = rk_db_prepare(db, "DELETE FROM control_leases WHERE computer_id = ? AND bot_id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	rk_db_bind_text(st, 1, computer_id);
	rk_db_bind_text(st, 2, bot_id);
	return rk_db_step_done(db, st, "release control", err);
}

int rk_db_control_held_fresh(const char *data_dir, const char *computer_id, const char *bot_id, const char *holder,
			     int64_t now_ms)
{
	char *path = rk_xasprintf("%s/rakazo.db", data_dir);
	struct rk_db *db = NULL;
	int rc = rk_db_open_v2(path, &db, RK_SQL_OPEN_READONLY | RK_SQL_OPEN_NOMUTEX, NULL);
	free(path);
	int live = -1;
	struct rk_stmt *st = NULL;
	if (rc == RK_SQL_OK) {
		rk_db_busy_timeout(db, 1000);
		rc = rk_stmt_prepare_v2(
			db,
			"SELECT 1 FROM control_leases WHERE computer_id = ? AND bot_id = ? AND holder = ? "
			"AND expires_at > ?",
			-1, &st, NULL);
	}
	if (rc == RK_SQL_OK) {
		rk_db_bind_text(st, 1, computer_id);
		rk_db_bind_text(st, 2, bot_id);
		rk_db_bind_text(st, 3, holder);
		rk_stmt_bind_int64(st, 4, now_ms);
		rc = rk_stmt_step(st);
		live = rc == RK_SQL_ROW ? 1 : rc == RK_SQL_DONE ? 0 : -1;
	}
	rk_stmt_finalize(st);
	rk_db_close(db);
	return live;
}
