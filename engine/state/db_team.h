#ifndef RK_DB_TEAM_H
#define RK_DB_TEAM_H
/* A team computer's tables (engine/machine/team.h): team_bots (the bots
 * whose folders are laid out, and on which machine), display_slots (the
 * screen each bot holds, by generation) and control_leases (a person's
 * control of a bot's screen; rk_db_control_live in db.h reads it too).
 * Their SQL lives here; the rules (which slot, how many, who may take
 * control) stay in engine/machine/team.c. Strings in a record are malloc'd
 * and owned by it (release it). */

#include <stddef.h>
#include <stdint.h>

#include "engine/state/db.h"
#include "engine/util/err.h"

/* --- team_bots ------------------------------------------------------------ */

/* 1 when bot's shared/ and bots/<bot>/ were laid out on the machine
 * layout_ref names (the computer's provider_ref, NULL matching NULL), 0 when
 * not (a failed read counts as not), < 0 when the query cannot be made. */
int rk_db_team_bot_laid_out(struct rk_db *db, const char *computer_id, const char *bot_id, const char *layout_ref,
			    struct rk_error *err);
/* Records bot's folders as laid out on layout_ref (created_at now_ms when new). */
int rk_db_team_bot_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *layout_ref,
		       int64_t now_ms, struct rk_error *err);

/* --- display_slots ---------------------------------------------------------- */

/* A slot; its state is named by engine/machine/team.h's RK_SLOT_STATES. */
struct rk_slot_row {
	int slot;
	char *bot_id, *state, *profile; /* profile may be NULL */
	int64_t generation;
};
void rk_slot_row_release(struct rk_slot_row *s);
void rk_slot_rows_free(struct rk_slot_row *rows, size_t n);

/* The slot bot holds, whatever its state: 1 with slot, state and generation
 * in *out, 0 when it holds none (a failed read counts as none), < 0 when the
 * query cannot be made. */
int rk_db_slot_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_slot_row *out,
		      struct rk_error *err);
/* The slot bot holds while it is live: 1 with *slot and *generation, 0 when
 * none is (or the read failed), < 0 when the query cannot be made. */
int rk_db_slot_live_of_bot(struct rk_db *db, const char *computer_id, const char *bot_id, int *slot,
			   int64_t *generation, struct rk_error *err);
/* The bot holding slot: 1 with *bot_id (malloc'd) and *generation, 0 when
 * nobody holds it. */
int rk_db_slot_tenant(struct rk_db *db, const char *computer_id, int slot, char **bot_id, int64_t *generation,
		      struct rk_error *err);
/* The slots bots hold on the computer, lowest first; *out is malloc'd (free
 * with rk_slot_rows_free). */
int rk_db_slot_list(struct rk_db *db, const char *computer_id, struct rk_slot_row **out, size_t *n,
		    struct rk_error *err);
/* How many slots bots hold (0 when the read fails). */
int rk_db_slot_count(struct rk_db *db, const char *computer_id);
/* In the caller's transaction: gives slot to bot, starting, at the slot's
 * next generation (1 for a slot never used); *generation is the new one. */
int rk_db_slot_claim(struct rk_db *db, const char *computer_id, int slot, const char *bot_id, const char *profile,
		     int64_t now_ms, int64_t *generation, struct rk_error *err);
/* Sets slot's state while it is still at generation (a later claim is left
 * alone); vacate: its bot and profile go too. */
int rk_db_slot_set_state(struct rk_db *db, const char *computer_id, int slot, int64_t generation, const char *state,
			 int vacate, int64_t now_ms, struct rk_error *err);
/* Every slot a bot holds is free again (the machine stopped): the slots
 * freed, or < 0. */
int rk_db_slots_vacate(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err);

/* --- control_leases ----------------------------------------------------------- */

/* One upsert of a person's control of bot's screen until expires_at: a new
 * lease (holder, lease_id, created now_ms), or with extend the lease there
 * is, its holder, id and creation kept. *granted_id (malloc'd) is the id
 * the lease has now. */
int rk_db_control_grant(struct rk_db *db, const char *computer_id, const char *bot_id, const char *holder,
			const char *lease_id, int64_t expires_at, int64_t now_ms, int extend, char **granted_id,
			struct rk_error *err);
int rk_db_control_drop(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_error *err);
/* Whether holder controls bot's screen at now_ms, read through a read-only
 * connection of its own to the state of data_dir (for a forked process,
 * which must not use its parent's): 1 yes, 0 no, -1 when it cannot be read. */
int rk_db_control_held_fresh(const char *data_dir, const char *computer_id, const char *bot_id, const char *holder,
			     int64_t now_ms);

#endif
