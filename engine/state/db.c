#define RK_DB_C /* db.h: the analyser's model of rk_db_sql_error is not for here */
#include "engine/state/db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/host.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/time.h"

RK_NAMES_DEFINE(rk_computer_mode, RK_COMPUTER_MODE, RK_COMPUTER_MODES)
RK_NAMES_DEFINE(rk_computer_state, RK_COMPUTER_STATE, RK_COMPUTER_STATES)
RK_NAMES_DEFINE(rk_session_state, RK_SESSION_STATE, RK_SESSION_STATES)

/* Migrations run in order, each in one transaction. Adding a table is one
 * more entry here. Never edit an entry that has shipped.
 *
 * One list for both backends: .sql is SQLite's, and PostgreSQL runs it as
 * pg_ddl() translates it (INTEGER is BIGINT, an INTEGER PRIMARY KEY is a
 * BIGSERIAL, BLOB is BYTEA; PRAGMAs, sqlite_master edits and virtual tables
 * are left out), then .pg, what only PostgreSQL needs. */
struct migration {
	const char *sql;
	const char *pg;
};

/* Each migration is SQL laid out as the table it makes: not reformatted. */
// clang-format off
static const struct migration migrations[] = {
	/* 1: the core */
	{"CREATE TABLE computers ("
	"  id TEXT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  provider_ref TEXT,"
	"  home_key TEXT NOT NULL UNIQUE,"
	"  home_revision TEXT NOT NULL DEFAULT 'empty',"
	"  state TEXT NOT NULL DEFAULT 'stopped' CHECK (state IN"
	"    ('starting','running','paused','stopped','offline','failed','restoring','deleted')),"
	"  mode TEXT NOT NULL DEFAULT 'private' CHECK (mode IN ('team','private')),"
	"  desktop INTEGER NOT NULL DEFAULT 1,"
	"  pause_after INTEGER DEFAULT 600,"
	"  revisions_kept INTEGER NOT NULL DEFAULT 1,"
	"  owner TEXT NOT NULL,"
	"  options TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  updated_at INTEGER NOT NULL,"
	"  deleted_at INTEGER);"
	"CREATE UNIQUE INDEX computers_live_name ON computers(name) WHERE deleted_at IS NULL;"
	"CREATE TABLE bots ("
	"  id TEXT PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE,"
	"  computer_id TEXT REFERENCES computers(id),"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE runs ("
	"  id TEXT PRIMARY KEY,"
	"  bot_id TEXT,"
	"  thread_id TEXT,"
	"  computer_id TEXT,"
	"  task TEXT NOT NULL,"
	"  model TEXT,"
	"  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','running','waiting_takeover',"
	"    'completed','failed','interrupted','cancelled')),"
	"  steps INTEGER NOT NULL DEFAULT 0,"
	"  input_tokens INTEGER NOT NULL DEFAULT 0,"
	"  output_tokens INTEGER NOT NULL DEFAULT 0,"
	"  final_answer TEXT,"
	"  error TEXT,"
	"  worker_pid INTEGER,"
	"  heartbeat_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  started_at INTEGER,"
	"  finished_at INTEGER);"
	"CREATE TABLE execution_leases ("
	"  computer_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  fence INTEGER NOT NULL DEFAULT 0,"
	"  holder TEXT,"
	"  expires_at INTEGER,"
	"  updated_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, bot_id));"
	"CREATE TABLE lease_writes ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  computer_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  fence INTEGER NOT NULL,"
	"  what TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE computer_reservations ("
	"  computer_id TEXT NOT NULL,"
	"  display INTEGER NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  fence INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, display),"
	"  UNIQUE (computer_id, bot_id));"
	"CREATE TABLE lifecycle_executions ("
	"  id TEXT PRIMARY KEY,"
	"  computer_id TEXT NOT NULL,"
	"  op TEXT NOT NULL CHECK (op IN ('create','pause','resume','stop','delete')),"
	"  command_key TEXT NOT NULL UNIQUE,"
	"  body TEXT NOT NULL,"
	"  body_hash TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN"
	"    ('pending','running','succeeded','failed','cancelled','outcome_unknown')),"
	"  phase TEXT NOT NULL DEFAULT 'submitted',"
	"  error_code TEXT,"
	"  error_message TEXT,"
	"  result TEXT,"
	"  cancel_requested INTEGER NOT NULL DEFAULT 0,"
	"  worker_pid INTEGER,"
	"  provider_call_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  started_at INTEGER,"
	"  finished_at INTEGER);"
	"CREATE INDEX lifecycle_executions_computer ON lifecycle_executions(computer_id, state);"
	"CREATE INDEX lifecycle_executions_pending ON lifecycle_executions(state, created_at);"
	"CREATE TABLE execution_events ("
	"  execution_id TEXT NOT NULL REFERENCES lifecycle_executions(id),"
	"  sequence INTEGER NOT NULL,"
	"  type TEXT NOT NULL,"
	"  data TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (execution_id, sequence));"
	"CREATE TABLE usage_records ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  computer_id TEXT NOT NULL,"
	"  started_at INTEGER NOT NULL,"
	"  ended_at INTEGER);"
	"CREATE INDEX usage_records_open ON usage_records(computer_id) WHERE ended_at IS NULL;"
	"CREATE TABLE terminal_history ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  computer_id TEXT NOT NULL,"
	"  session_id TEXT,"
	"  bot_id TEXT,"
	"  run_id TEXT,"
	"  kind TEXT NOT NULL CHECK (kind IN ('command','input','output','exit')),"
	"  data BLOB,"
	"  exit_code INTEGER,"
	"  signal INTEGER,"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX terminal_history_computer ON terminal_history(computer_id, id);"
	"CREATE TABLE exec_sessions ("
	"  id TEXT PRIMARY KEY,"
	"  computer_id TEXT NOT NULL,"
	"  owner TEXT NOT NULL,"
	"  command TEXT NOT NULL,"
	"  tty INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running','ended')),"
	"  holder_pid INTEGER,"
	"  exit_code INTEGER,"
	"  signal INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER NOT NULL);"
	"CREATE TABLE home_revisions ("
	"  id TEXT PRIMARY KEY,"
	"  home_key TEXT NOT NULL,"
	"  reason TEXT NOT NULL,"
	"  bytes INTEGER NOT NULL DEFAULT 0,"
	"  files INTEGER NOT NULL DEFAULT 0,"
	"  checksum TEXT,"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX home_revisions_key ON home_revisions(home_key, created_at);",
	 /* PostgreSQL: runs are listed in insertion order by SQLite's rowid, so
	  * they get one; and SQLite's scalar max/min(a, b, ...) and instr */
	 "ALTER TABLE runs ADD COLUMN rowid BIGSERIAL;"
	 "CREATE FUNCTION max(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT greatest($1, $2)';"
	 "CREATE FUNCTION max(bigint, bigint, bigint, bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS "
	 "  'SELECT greatest($1, $2, $3, $4, $5)';"
	 "CREATE FUNCTION min(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT least($1, $2)';"
	 "CREATE FUNCTION instr(text, text) RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT strpos($1, $2)';"},
	/* 2: checkpoints. ref_kind is the provider kind that made provider_ref, so
	 * a ref from another kind counts as a replacement; home_revisions mirrors
	 * the home store's revisions (the store's files are the truth). */
	{"ALTER TABLE computers ADD COLUMN ref_kind TEXT;"
	"UPDATE computers SET ref_kind = kind WHERE provider_ref IS NOT NULL;"
	"ALTER TABLE home_revisions ADD COLUMN kind TEXT NOT NULL DEFAULT 'snapshot';"
	"ALTER TABLE home_revisions ADD COLUMN computer_id TEXT;", NULL},
	/* 3: runs: their stored events (what the NDJSON stream prints, by
	 * sequence), their conversation without image bytes (for resume), why
	 * they ended, cancel requests, the execution lease's fence and takeovers.
	 * Its SQL lives in db_runs.c. */
	{"ALTER TABLE runs ADD COLUMN reason TEXT;"
	"ALTER TABLE runs ADD COLUMN options TEXT;"
	"ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE runs ADD COLUMN lease_bot TEXT;"
	"ALTER TABLE runs ADD COLUMN lease_fence INTEGER;"
	"ALTER TABLE runs ADD COLUMN takeover_reason TEXT;"
	"ALTER TABLE runs ADD COLUMN takeover_note TEXT;"
	"ALTER TABLE runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX runs_live ON runs(state) WHERE state IN ('queued','running','waiting_takeover');"
	"CREATE TABLE run_events ("
	"  run_id TEXT NOT NULL,"
	"  seq INTEGER NOT NULL,"
	"  type TEXT NOT NULL,"
	"  data TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (run_id, seq));"
	"CREATE TABLE run_messages ("
	"  run_id TEXT NOT NULL,"
	"  seq INTEGER NOT NULL,"
	"  data TEXT NOT NULL,"
	"  PRIMARY KEY (run_id, seq));", NULL},
	/* 4: Team computers (issue 8). display_slots: one row per (computer,
	 * slot), a bot's screen while bot_id is set; generation grows each time
	 * the slot gets a new tenant. control_leases: a person's control of a
	 * bot's screen. computer_reservations is remade computer-level (the
	 * display-shaped table of migration 1 was never used): an update or
	 * recovery job's hold on the whole computer. team_bots: bots that have
	 * used a computer and the machine ref their folders were made on.
	 * deferred_checkpoints and idle_schedules: issue 6's Team deferral and
	 * pause_after. */
	{"CREATE TABLE display_slots ("
	"  computer_id TEXT NOT NULL,"
	"  slot INTEGER NOT NULL,"
	"  bot_id TEXT,"
	"  state TEXT NOT NULL DEFAULT 'free' CHECK (state IN ('free','starting','live','releasing')),"
	"  generation INTEGER NOT NULL DEFAULT 0,"
	"  profile TEXT,"
	"  updated_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, slot));"
	"CREATE UNIQUE INDEX display_slots_bot ON display_slots(computer_id, bot_id) WHERE bot_id IS NOT NULL;"
	"CREATE TABLE control_leases ("
	"  computer_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  holder TEXT NOT NULL,"
	"  lease_id TEXT NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, bot_id));"
	"DROP TABLE computer_reservations;"
	"CREATE TABLE computer_reservations ("
	"  computer_id TEXT PRIMARY KEY,"
	"  kind TEXT NOT NULL CHECK (kind IN ('update','recovery')),"
	"  owner TEXT NOT NULL,"
	"  worker_pid INTEGER,"
	"  operation TEXT,"
	"  phase TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active','interrupted')),"
	"  heartbeat_at INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE reservation_phases ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  computer_id TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  phase TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE team_bots ("
	"  computer_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  layout_ref TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, bot_id));"
	"CREATE TABLE deferred_checkpoints ("
	"  computer_id TEXT PRIMARY KEY,"
	"  reason TEXT NOT NULL,"
	"  blocked_by TEXT,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE idle_schedules ("
	"  computer_id TEXT PRIMARY KEY,"
	"  last_active_at INTEGER NOT NULL,"
	"  due_at INTEGER,"
	"  updated_at INTEGER NOT NULL);"
	/* a session's command can end before anyone has read its end */
	"ALTER TABLE exec_sessions ADD COLUMN command_ended_at INTEGER;", NULL},
	/* 5: screen capabilities (engine/gateway/gateway.c): only a token's hash is
	 * kept; vnc_* is the identity of the slot's VNC socket it was made for */
	{"CREATE TABLE IF NOT EXISTS screen_capabilities ("
	"  id TEXT PRIMARY KEY,"
	"  token_hash TEXT NOT NULL UNIQUE,"
	"  computer_id TEXT NOT NULL,"
	"  display INTEGER NOT NULL,"
	"  bot_id TEXT,"
	"  generation INTEGER NOT NULL DEFAULT 0,"
	"  policy TEXT NOT NULL CHECK (policy IN ('view', 'control')),"
	"  socket_path TEXT NOT NULL,"
	"  vnc_socket TEXT NOT NULL,"
	"  vnc_dev INTEGER NOT NULL,"
	"  vnc_ino INTEGER NOT NULL,"
	"  vnc_ctime_ns INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  revoked_at INTEGER,"
	"  revoke_reason TEXT,"
	"  created_by TEXT);"
	"CREATE INDEX IF NOT EXISTS screen_capabilities_slot ON screen_capabilities(computer_id, display);", NULL},
	/* 6: (serve) API tokens
	 * (only a hash of the secret is kept), bots' rights to computers, and
	 * paired machines (a hash of each one's secret). */
	{"CREATE TABLE api_tokens ("
	"  id TEXT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  secret_hash TEXT NOT NULL,"
	"  bot_id TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER,"
	"  revoked_at INTEGER);"
	"CREATE TABLE computer_rights ("
	"  computer_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL,"
	"  granted_by TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (computer_id, bot_id));"
	"CREATE TABLE paired_machines ("
	"  computer_id TEXT PRIMARY KEY,"
	"  secret_hash TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL);", NULL},
	/* 7: trust (engine/access/secret.c, memory.c, approval.c and authz.c own these
	 * tables and their SQL). runs.state also takes waiting_approval: the
	 * CHECK list is widened in place, whatever columns runs has by now (a
	 * looser CHECK leaves every stored row valid, the one schema edit SQLite
	 * documents as safe this way); the CREATE TABLEs after it bump the
	 * schema cookie, so other connections read the new schema. */
	{"PRAGMA writable_schema=ON;"
	"UPDATE sqlite_master SET sql = replace(sql, '''waiting_takeover'',', '''waiting_takeover'',''waiting_approval'',')"
	"  WHERE type = 'table' AND name = 'runs' AND sql NOT LIKE '%waiting_approval%';"
	"PRAGMA writable_schema=OFF;"
	"CREATE TABLE secrets ("
	"  id TEXT PRIMARY KEY,"
	"  user_id TEXT NOT NULL,"
	"  space_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL DEFAULT '',"
	"  name TEXT NOT NULL,"
	"  origin TEXT NOT NULL,"
	"  auth TEXT NOT NULL CHECK (auth IN ('bearer','header','basic','query')),"
	"  auth_param TEXT,"
	"  nonce BLOB NOT NULL,"
	"  ciphertext BLOB NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  updated_at INTEGER NOT NULL,"
	"  UNIQUE (user_id, space_id, bot_id, name));"
	"CREATE TABLE secret_requests ("
	"  id TEXT PRIMARY KEY,"
	"  run_id TEXT,"
	"  user_id TEXT NOT NULL,"
	"  space_id TEXT NOT NULL,"
	"  bot_id TEXT NOT NULL DEFAULT '',"
	"  name TEXT NOT NULL,"
	"  origin TEXT NOT NULL,"
	"  auth TEXT NOT NULL,"
	"  auth_param TEXT,"
	"  reason TEXT,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE memory_documents ("
	"  id INTEGER PRIMARY KEY,"
	"  space_id TEXT NOT NULL,"
	"  user_id TEXT NOT NULL,"
	"  scope TEXT NOT NULL CHECK (scope IN ('user','bot')),"
	"  bot_id TEXT NOT NULL DEFAULT '',"
	"  path TEXT NOT NULL,"
	"  content TEXT NOT NULL,"
	"  revision INTEGER NOT NULL DEFAULT 1,"
	"  created_at INTEGER NOT NULL,"
	"  updated_at INTEGER NOT NULL,"
	"  UNIQUE (space_id, user_id, scope, bot_id, path));"
	"CREATE TABLE memory_revisions ("
	"  document_id INTEGER NOT NULL REFERENCES memory_documents(id),"
	"  revision INTEGER NOT NULL,"
	"  content TEXT NOT NULL,"
	"  run_id TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (document_id, revision));"
	"CREATE VIRTUAL TABLE memory_fts USING fts5(path, content, tokenize = 'unicode61');"
	"CREATE TABLE approval_rules ("
	"  id TEXT PRIMARY KEY,"
	"  space_id TEXT NOT NULL,"
	"  user_id TEXT NOT NULL,"
	"  effect TEXT NOT NULL CHECK (effect IN ('allow','require_approval')),"
	"  match TEXT NOT NULL CHECK (match IN ('tool','connector','category')),"
	"  value TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  UNIQUE (space_id, user_id, match, value, effect));"
	"CREATE TABLE approvals ("
	"  id TEXT PRIMARY KEY,"
	"  run_id TEXT NOT NULL,"
	"  user_id TEXT NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  arguments TEXT,"
	"  reason TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','approved','denied')),"
	"  note TEXT,"
	"  decided_by TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  decided_at INTEGER);"
	"CREATE INDEX approvals_run ON approvals(run_id, state);"
	"CREATE TABLE computer_access ("
	"  computer_id TEXT PRIMARY KEY,"
	"  space_id TEXT NOT NULL,"
	"  owner TEXT NOT NULL);"
	"CREATE TABLE spaces ("
	"  id TEXT PRIMARY KEY,"
	"  description TEXT,"
	"  created_by TEXT NOT NULL,"
	"  run_id TEXT,"
	"  created_at INTEGER NOT NULL);"
	"PRAGMA writable_schema=RESET;",
	 /* PostgreSQL: the CHECK widened as a constraint; memory_fts a plain
	  * table (memory.c searches by substring there); secret_requests are
	  * ordered by rowid */
	 "ALTER TABLE runs DROP CONSTRAINT runs_state_check;"
	 "ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN ('queued','running','waiting_takeover',"
	 "  'waiting_approval','completed','failed','interrupted','cancelled'));"
	 "CREATE TABLE memory_fts (rowid BIGINT PRIMARY KEY, path TEXT, content TEXT);"
	 "ALTER TABLE secret_requests ADD COLUMN rowid BIGSERIAL;"},
	/* 8: several workers on one state (engine/machine/worker.c): each registers
	 * and heart-beats; a claimed command names its worker, and a run's
	 * pid comes with the host key that makes it meaningful (engine/util/host.h) */
	{"CREATE TABLE workers ("
	"  id TEXT PRIMARY KEY,"
	"  host TEXT NOT NULL,"
	"  host_key TEXT NOT NULL,"
	"  pid INTEGER NOT NULL,"
	"  started_at INTEGER NOT NULL,"
	"  heartbeat_at INTEGER NOT NULL);"
	"ALTER TABLE lifecycle_executions ADD COLUMN worker_id TEXT;"
	"ALTER TABLE runs ADD COLUMN worker_host TEXT;"
	"ALTER TABLE exec_sessions ADD COLUMN holder_host TEXT;"
	/* session calls through the state, for a holder on another host
	 * (engine/machine/session.c relay_call) */
	"CREATE TABLE session_calls ("
	"  id TEXT PRIMARY KEY,"
	"  session_id TEXT NOT NULL,"
	"  request TEXT NOT NULL,"
	"  reply TEXT,"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX session_calls_open ON session_calls(session_id, created_at);",
	 NULL},
	/* 9: memory search by words on PostgreSQL too (engine/agent/memory.c): its
	 * text-search vector of memory_fts, indexed; SQLite has FTS5 already */
	{"",
	 "CREATE INDEX memory_fts_words ON memory_fts USING gin (" RK_MEMORY_PG_TSV ");"},
	/* 10: a command key belongs to whoever used it (issue 20): unique per
	 * (key_scope, command_key), so one API token cannot read another's
	 * receipt by guessing its key. A UNIQUE column cannot be dropped in
	 * place: both tables are rebuilt (the events' REFERENCES follow the
	 * rename), the same statements on both backends. A create's old
	 * executions take their computer's owner as the scope; others none. */
	{"CREATE TABLE lifecycle_executions_v10 ("
	"  id TEXT PRIMARY KEY,"
	"  computer_id TEXT NOT NULL,"
	"  op TEXT NOT NULL CHECK (op IN ('create','pause','resume','stop','delete')),"
	"  key_scope TEXT NOT NULL DEFAULT '',"
	"  command_key TEXT NOT NULL,"
	"  body TEXT NOT NULL,"
	"  body_hash TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN"
	"    ('pending','running','succeeded','failed','cancelled','outcome_unknown')),"
	"  phase TEXT NOT NULL DEFAULT 'submitted',"
	"  error_code TEXT,"
	"  error_message TEXT,"
	"  result TEXT,"
	"  cancel_requested INTEGER NOT NULL DEFAULT 0,"
	"  worker_pid INTEGER,"
	"  provider_call_at INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  started_at INTEGER,"
	"  finished_at INTEGER,"
	"  worker_id TEXT,"
	"  UNIQUE (key_scope, command_key));"
	"INSERT INTO lifecycle_executions_v10 (id, computer_id, op, key_scope, command_key, body, body_hash, state,"
	"  phase, error_code, error_message, result, cancel_requested, worker_pid, provider_call_at, created_at,"
	"  started_at, finished_at, worker_id)"
	"  SELECT e.id, e.computer_id, e.op, coalesce((SELECT c.owner FROM computers c WHERE c.id = e.computer_id"
	"  AND e.op = 'create'), ''), e.command_key, e.body, e.body_hash, e.state, e.phase, e.error_code,"
	"  e.error_message, e.result, e.cancel_requested, e.worker_pid, e.provider_call_at, e.created_at,"
	"  e.started_at, e.finished_at, e.worker_id FROM lifecycle_executions e;"
	"CREATE TABLE execution_events_v10 ("
	"  execution_id TEXT NOT NULL REFERENCES lifecycle_executions_v10(id),"
	"  sequence INTEGER NOT NULL,"
	"  type TEXT NOT NULL,"
	"  data TEXT,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (execution_id, sequence));"
	"INSERT INTO execution_events_v10 (execution_id, sequence, type, data, created_at)"
	"  SELECT execution_id, sequence, type, data, created_at FROM execution_events;"
	"DROP TABLE execution_events;"
	"DROP TABLE lifecycle_executions;"
	"ALTER TABLE lifecycle_executions_v10 RENAME TO lifecycle_executions;"
	"ALTER TABLE execution_events_v10 RENAME TO execution_events;"
	"CREATE INDEX lifecycle_executions_computer ON lifecycle_executions(computer_id, state);"
	"CREATE INDEX lifecycle_executions_pending ON lifecycle_executions(state, created_at);",
	 NULL},
	/* 11: a computer's resource limits (rk_limits_to_json; issue 20) */
	{"ALTER TABLE computers ADD COLUMN resources TEXT;", NULL},
	/* 12: who made a screen capability (engine/gateway/gateway.c; issue 20): the
	 * actor it was shared as and the API token it came through, if any. The
	 * gateway checks that actor's right again; a row made before has none
	 * and authorizes nothing. */
	{"ALTER TABLE screen_capabilities ADD COLUMN maker_user TEXT;"
	 "ALTER TABLE screen_capabilities ADD COLUMN maker_space TEXT;"
	 "ALTER TABLE screen_capabilities ADD COLUMN maker_bot TEXT;"
	 "ALTER TABLE screen_capabilities ADD COLUMN maker_token TEXT;",
	 NULL},
	/* 13: a run's prompt-cache usage (issue 23): input tokens read from the
	 * vendor's cache and written to it, both within input_tokens */
	{"ALTER TABLE runs ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;"
	 "ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;",
	 NULL},
	/* 14: automatic resumes a run has left (engine/agent/run.h auto-resume):
	 * 1 for a run made with auto-resume on, taken by the one worker whose
	 * conditional update wins; runs made before have none */
	{"ALTER TABLE runs ADD COLUMN auto_resumes_left INTEGER NOT NULL DEFAULT 0;", NULL},
	/* 15: a run's images sent to the model (each request's, summed) and
	 * what it cost in millionths of a USD (NULL: the model has no price) */
	{"ALTER TABLE runs ADD COLUMN images INTEGER NOT NULL DEFAULT 0;"
	 "ALTER TABLE runs ADD COLUMN cost_micro_usd INTEGER;",
	 NULL},
};
// clang-format on

#define MIGRATION_COUNT ((int)(sizeof(migrations) / sizeof(migrations[0])))

int rk_db_migration_count(void)
{
	return MIGRATION_COUNT;
}

static int sql_error(struct rk_db *db, struct rk_error *err, const char *what)
{
	int rc = rk_db_errcode(db);
	enum rk_code code = RK_EFAILED;
	if (rc == RK_SQL_BUSY || rc == RK_SQL_LOCKED)
		code = RK_EUNAVAILABLE;
	else if (rc == RK_SQL_CORRUPT || rc == RK_SQL_NOTADB)
		code = RK_ECORRUPT;
	else if (rc == RK_SQL_READONLY || rc == RK_SQL_CANTOPEN || rc == RK_SQL_IOERR || rc == RK_SQL_FULL)
		code = RK_EIO;
	else if (rc == RK_SQL_CONSTRAINT)
		code = RK_ECONFLICT;
	return rk_error_set(err, code, "database: %s: %s", what, rk_db_errmsg(db));
}

int rk_db_exec(struct rk_db *db, const char *sql, struct rk_error *err)
{
	if (db->drv->exec(db, sql) != RK_SQL_OK)
		return sql_error(db, err, "statement failed");
	return 0;
}

int rk_db_begin(struct rk_db *db, struct rk_error *err)
{
	/* SQLite's BEGIN IMMEDIATE takes the one write lock at once: every
	 * read-then-write transaction runs alone. On PostgreSQL one
	 * transaction-scoped advisory lock keeps exactly that guarantee across
	 * processes and hosts (it waits up to the lock timeout, then the
	 * transaction fails as unavailable, as SQLite's busy timeout does). */
	if (rk_db_dialect(db) == RK_DIALECT_PG)
		return rk_db_exec(db, "BEGIN; SELECT pg_advisory_xact_lock(7020817545106538351)", err);
	return rk_db_exec(db, "BEGIN IMMEDIATE", err);
}

int rk_db_commit(struct rk_db *db, struct rk_error *err)
{
	return rk_db_exec(db, "COMMIT", err);
}

void rk_db_rollback(struct rk_db *db)
{
	if (rk_db_in_transaction(db))
		db->drv->exec(db, "ROLLBACK");
}

/* --- statement helpers ---------------------------------------------------- */

static struct rk_stmt *prep(struct rk_db *db, const char *sql, struct rk_error *err)
{
	struct rk_stmt *st = NULL;
	if (rk_stmt_prepare_v2(db, sql, -1, &st, NULL) != RK_SQL_OK) {
		sql_error(db, err, "prepare failed");
		return NULL;
	}
	return st;
}

static void bind_text(struct rk_stmt *st, int i, const char *s)
{
	if (s)
		rk_stmt_bind_text(st, i, s, -1);
	else
		rk_stmt_bind_null(st, i);
}

static char *col_text(struct rk_stmt *st, int i)
{
	const unsigned char *t = rk_stmt_column_text(st, i);
	return t ? rk_xstrdup((const char *)t) : NULL;
}

static int64_t col_int(struct rk_stmt *st, int i, int64_t null_value)
{
	return rk_stmt_column_type(st, i) == RK_SQL_NULL ? null_value : rk_stmt_column_int64(st, i);
}

/* Steps a statement that returns no rows; finalizes it. */
static int step_done(struct rk_db *db, struct rk_stmt *st, const char *what, struct rk_error *err)
{
	int rc = rk_stmt_step(st);
	int r = 0;
	if (rc != RK_SQL_DONE && rc != RK_SQL_ROW)
		r = sql_error(db, err, what);
	rk_stmt_finalize(st);
	return r;
}

/* Steps st to its end into a malloc'd array of size-byte elements filled by
 * from_row; on failure releases what it read. Finalizes st. */
static int collect_rows(struct rk_db *db, struct rk_stmt *st, size_t size, void (*from_row)(struct rk_stmt *, void *),
			void (*release)(void *), void **out, size_t *n, const char *what, struct rk_error *err)
{
	size_t cap = 8, count = 0;
	char *arr = rk_xcalloc(cap, size);
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (count == cap) {
			cap *= 2;
			arr = rk_xrealloc(arr, cap * size);
		}
		memset(arr + count * size, 0, size);
		from_row(st, arr + count * size);
		count++;
	}
	if (rc != RK_SQL_DONE) {
		int r = sql_error(db, err, what);
		rk_stmt_finalize(st);
		for (size_t i = 0; i < count; i++)
			release(arr + i * size);
		free(arr);
		return r;
	}
	rk_stmt_finalize(st);
	*out = arr;
	*n = count;
	return 0;
}

struct rk_stmt *rk_db_prepare(struct rk_db *db, const char *sql, struct rk_error *err)
{
	return prep(db, sql, err);
}

int rk_db_step_done(struct rk_db *db, struct rk_stmt *st, const char *what, struct rk_error *err)
{
	return step_done(db, st, what, err);
}

int rk_db_sql_error(struct rk_db *db, struct rk_error *err, const char *what)
{
	return sql_error(db, err, what);
}

void rk_db_bind_text(struct rk_stmt *st, int i, const char *s)
{
	bind_text(st, i, s);
}

char *rk_db_col_text(struct rk_stmt *st, int i)
{
	return col_text(st, i);
}

int rk_db_json_rows(struct rk_db *db, struct rk_stmt *st, const struct rk_db_json_col *cols, const char *what,
		    cJSON **out, struct rk_error *err)
{
	cJSON *arr = cJSON_CreateArray();
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		cJSON *o = cJSON_CreateObject();
		for (int i = 0; cols[i].key; i++) {
			int null = rk_stmt_column_type(st, i) == RK_SQL_NULL;
			char t[32];
			if (null && cols[i].type != 'b')
				cJSON_AddNullToObject(o, cols[i].key);
			else if (cols[i].type == 'i')
				cJSON_AddNumberToObject(o, cols[i].key, (double)rk_stmt_column_int64(st, i));
			else if (cols[i].type == 'b')
				cJSON_AddBoolToObject(o, cols[i].key, rk_stmt_column_int(st, i) != 0);
			else if (cols[i].type == 't')
				cJSON_AddStringToObject(o, cols[i].key,
							rk_iso8601(rk_stmt_column_int64(st, i), t, sizeof(t)));
			else
				cJSON_AddStringToObject(o, cols[i].key, (const char *)rk_stmt_column_text(st, i));
		}
		cJSON_AddItemToArray(arr, o);
	}
	int r = rc == RK_SQL_DONE ? 0 : sql_error(db, err, what);
	rk_stmt_finalize(st);
	if (r) {
		cJSON_Delete(arr);
		return r;
	}
	*out = arr;
	return 0;
}

int rk_db_collect(struct rk_db *db, struct rk_stmt *st, size_t size, void (*from_row)(struct rk_stmt *, void *),
		  void (*release)(void *), void **out, size_t *n, const char *what, struct rk_error *err)
{
	return collect_rows(db, st, size, from_row, release, out, n, what, err);
}

/* --- open and migrate ------------------------------------------------------- */

int rk_db_schema_version(struct rk_db *db)
{
	struct rk_stmt *st = prep(db, "SELECT coalesce(max(version),0) FROM schema_migrations", NULL);
	int v = -1;
	if (st && rk_stmt_step(st) == RK_SQL_ROW)
		v = rk_stmt_column_int(st, 0);
	rk_stmt_finalize(st);
	return v;
}

/* A migration's SQL in PostgreSQL's dialect (malloc'd): each statement of
 * m->sql with SQLite's types renamed, SQLite-only statements left out, then
 * m->pg. The migrations hold no ';' inside a literal. */
static char *pg_ddl(const struct migration *m)
{
	static const char *const skip[] = {"PRAGMA", "UPDATE sqlite_master", "CREATE VIRTUAL TABLE", NULL};
	static const char *const from[] = {"INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER PRIMARY KEY", "INTEGER",
					   "BLOB", NULL};
	static const char *const to[] = {"BIGSERIAL PRIMARY KEY", "BIGSERIAL PRIMARY KEY", "BIGINT", "BYTEA"};
	struct rk_buf b;
	rk_buf_init(&b);
	for (const char *p = m->sql; *p;) {
		size_t n = strcspn(p, ";");
		int drop = 0;
		for (int i = 0; skip[i]; i++)
			drop |= !strncmp(p, skip[i], strlen(skip[i]));
		for (size_t i = 0; !drop && i < n;) {
			int k;
			for (k = 0; from[k]; k++)
				if (!strncmp(p + i, from[k], strlen(from[k])) && i + strlen(from[k]) <= n)
					break;
			if (from[k]) {
				rk_buf_adds(&b, to[k]);
				i += strlen(from[k]);
			} else {
				rk_buf_addc(&b, p[i++]);
			}
		}
		if (!drop && n)
			rk_buf_addc(&b, ';');
		p += n;
		if (*p == ';')
			p++;
	}
	if (m->pg)
		rk_buf_adds(&b, m->pg);
	return rk_buf_detach(&b, NULL);
}

static int apply_migration(struct rk_db *db, const struct migration *m, struct rk_error *err)
{
	if (rk_db_dialect(db) != RK_DIALECT_PG)
		return rk_db_exec(db, m->sql, err);
	char *sql = pg_ddl(m);
	int r = rk_db_exec(db, sql, err);
	free(sql);
	return r;
}

static int migrate(struct rk_db *db, struct rk_error *err)
{
	/* in the write lock: two processes opening a new database at once */
	int r = rk_db_begin(db, err);
	if (r ||
	    (r = rk_db_exec(db,
			    rk_db_dialect(db) == RK_DIALECT_PG
				    ? "CREATE TABLE IF NOT EXISTS schema_migrations ("
				      " version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)"
				    : "CREATE TABLE IF NOT EXISTS schema_migrations ("
				      " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
			    err)) ||
	    (r = rk_db_commit(db, err))) {
		rk_db_rollback(db);
		return r;
	}
	for (int v = 1; v <= MIGRATION_COUNT; v++) {
		if ((r = rk_db_begin(db, err)))
			return r;
		/* checked inside the write lock: another process may have just done it */
		int have = rk_db_schema_version(db);
		if (have > MIGRATION_COUNT) {
			rk_db_rollback(db);
			return rk_error_set(err, RK_EFAILED,
					    "database %s has schema %d, newer than this rakazo knows (%d): "
					    "upgrade rakazo",
					    db->path, have, MIGRATION_COUNT);
		}
		if (have >= v) {
			rk_db_rollback(db);
			continue;
		}
		if (apply_migration(db, &migrations[v - 1], err)) {
			rk_db_rollback(db);
			return rk_error_prefix(err, "migration %d", v);
		}
		struct rk_stmt *st = prep(db, "INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)", err);
		if (!st) {
			rk_db_rollback(db);
			return -rk_err(err)->code;
		}
		rk_stmt_bind_int(st, 1, v);
		rk_stmt_bind_int64(st, 2, rk_now_ms());
		if ((r = step_done(db, st, "record migration", err)) || (r = rk_db_commit(db, err))) {
			rk_db_rollback(db);
			return r;
		}
	}
	return 0;
}

int rk_db_open(const char *data_dir, struct rk_db **out, struct rk_error *err)
{
	int r = rk_fs_mkdirs(data_dir, 0700, err);
	if (r)
		return rk_error_prefix(err, "cannot use data directory %s (set RAKAZO_DATA_DIR)", data_dir);
	if (access(data_dir, W_OK | X_OK) != 0)
		return rk_error_errno(err, RK_EIO, errno, "data directory %s is not writable (set RAKAZO_DATA_DIR)",
				      data_dir);
	const char *url = rk_sql_url();
	if (url && strncmp(url, "postgresql://", 13) != 0 && strncmp(url, "postgres://", 11) != 0) {
		char *shown = rk_sql_url_redacted(url);
		r = rk_error_set(err, RK_EINVALID,
				 "RAKAZO_DATABASE_URL '%s' is not a postgresql:// URL: unset it for SQLite in the data "
				 "directory, or name a PostgreSQL database",
				 shown);
		free(shown);
		return r;
	}
	char *path = rk_path_join(data_dir, "rakazo.db");
	/* SQLite makes its file 0644 (less the umask); the WAL and SHM files
	 * take its mode. Only a new file is made here: closing a descriptor of a
	 * file this process has open elsewhere would drop SQLite's POSIX locks
	 * on it (another connection then deletes the WAL under this one). */
	if (!url) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	}
	struct rk_db *db = NULL;
	int rc = rk_db_open_v2(path, &db, RK_SQL_OPEN_READWRITE | RK_SQL_OPEN_CREATE, NULL);
	free(path);
	if (rc != RK_SQL_OK) {
		/* a server that does not answer is unavailable; a file that cannot be opened is io */
		enum rk_code code = db && rk_db_errcode(db) == RK_SQL_BUSY ? RK_EUNAVAILABLE : RK_EIO;
		if (db && rk_db_dialect(db) == RK_DIALECT_PG) /* its message names the server */
			r = rk_error_set(err, code, "%s", rk_db_errmsg(db));
		else
			r = rk_error_set(err, code, "cannot open database %s: %s", db ? db->path : "",
					 db ? rk_db_errmsg(db) : "out of memory");
		goto fail;
	}
	rk_db_busy_timeout(db, 15000);
	if (rk_db_dialect(db) == RK_DIALECT_SQLITE && ((r = rk_db_exec(db, "PRAGMA journal_mode=WAL", err)) ||
						       (r = rk_db_exec(db, "PRAGMA synchronous=NORMAL", err)) ||
						       (r = rk_db_exec(db, "PRAGMA foreign_keys=ON", err))))
		goto fail;
	if ((r = migrate(db, err)))
		goto fail;
	*out = db;
	return 0;
fail:
	rk_db_close(db);
	return r;
}

/* The rows of a PRAGMA that answers in text, joined with "; " (malloc'd). */
static int pragma_text(struct rk_db *db, const char *sql, const char *what, char **result, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	struct rk_buf b;
	rk_buf_init(&b);
	int rc;
	while ((rc = rk_stmt_step(st)) == RK_SQL_ROW) {
		if (b.len)
			rk_buf_adds(&b, "; ");
		const unsigned char *t = rk_stmt_column_text(st, 0);
		rk_buf_adds(&b, t ? (const char *)t : "");
	}
	rk_stmt_finalize(st);
	if (rc != RK_SQL_DONE) {
		rk_buf_release(&b);
		return sql_error(db, err, what);
	}
	*result = rk_buf_detach(&b, NULL);
	return 0;
}

int rk_db_integrity_check(struct rk_db *db, char **result, struct rk_error *err)
{
	/* PostgreSQL checks its own pages; that it answers is what is asked here */
	if (rk_db_dialect(db) == RK_DIALECT_PG)
		return pragma_text(db, "SELECT 'ok'", "integrity check", result, err);
	return pragma_text(db, "PRAGMA integrity_check", "integrity check", result, err);
}

int rk_db_journal_mode(struct rk_db *db, char **result, struct rk_error *err)
{
	if (rk_db_dialect(db) == RK_DIALECT_PG)
		return pragma_text(db, "SELECT current_setting('server_version')", "server version", result, err);
	return pragma_text(db, "PRAGMA journal_mode", "journal mode", result, err);
}

/* --- computers ---------------------------------------------------------------- */

void rk_computer_release(struct rk_computer *c)
{
	if (!c)
		return;
	free(c->id);
	free(c->name);
	free(c->kind);
	free(c->provider_ref);
	free(c->home_key);
	free(c->home_revision);
	free(c->state);
	free(c->mode);
	free(c->owner);
	free(c->options);
	free(c->resources);
	memset(c, 0, sizeof(*c));
}

#define COMPUTER_COLS                                                                                                  \
	"id, name, kind, provider_ref, home_key, home_revision, state, mode, owner, options, desktop, "                \
	"pause_after, revisions_kept, created_at, updated_at, resources"

static void computer_from_row(struct rk_stmt *st, struct rk_computer *c)
{
	c->id = col_text(st, 0);
	c->name = col_text(st, 1);
	c->kind = col_text(st, 2);
	c->provider_ref = col_text(st, 3);
	c->home_key = col_text(st, 4);
	c->home_revision = col_text(st, 5);
	c->state = col_text(st, 6);
	c->mode = col_text(st, 7);
	c->owner = col_text(st, 8);
	c->options = col_text(st, 9);
	c->desktop = (int)col_int(st, 10, 1);
	c->pause_after = col_int(st, 11, -1);
	c->revisions_kept = (int)col_int(st, 12, 1);
	c->created_at = col_int(st, 13, 0);
	c->updated_at = col_int(st, 14, 0);
	c->resources = col_text(st, 15);
}

int rk_db_computer_insert(struct rk_db *db, const struct rk_computer *c, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO computers (" COMPUTER_COLS ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, c->id);
	bind_text(st, 2, c->name);
	bind_text(st, 3, c->kind);
	bind_text(st, 4, c->provider_ref);
	bind_text(st, 5, c->home_key);
	bind_text(st, 6, c->home_revision ? c->home_revision : "empty");
	bind_text(st, 7, c->state ? c->state : "stopped");
	bind_text(st, 8, c->mode ? c->mode : "private");
	bind_text(st, 9, c->owner);
	bind_text(st, 10, c->options);
	rk_stmt_bind_int(st, 11, c->desktop);
	if (c->pause_after < 0)
		rk_stmt_bind_null(st, 12);
	else
		rk_stmt_bind_int64(st, 12, c->pause_after);
	rk_stmt_bind_int(st, 13, c->revisions_kept > 0 ? c->revisions_kept : 1);
	rk_stmt_bind_int64(st, 14, c->created_at);
	rk_stmt_bind_int64(st, 15, c->updated_at);
	bind_text(st, 16, c->resources);
	int rc = rk_stmt_step(st);
	rk_stmt_finalize(st);
	if (rc == RK_SQL_CONSTRAINT)
		return rk_error_set(err, RK_ECONFLICT, "a computer named '%s' already exists", c->name);
	if (rc != RK_SQL_DONE)
		return sql_error(db, err, "insert computer");
	return 0;
}

int rk_db_computer_get(struct rk_db *db, const char *id_or_name, struct rk_computer *out, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT " COMPUTER_COLS " FROM computers WHERE (id = ?1 OR name = ?1) "
				  "AND deleted_at IS NULL ORDER BY id = ?1 DESC LIMIT 1",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id_or_name);
	int rc = rk_stmt_step(st);
	int r = 0;
	if (rc == RK_SQL_ROW)
		computer_from_row(st, out);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "no computer '%s' (see `rakazo computer list`)", id_or_name);
	else
		r = sql_error(db, err, "get computer");
	rk_stmt_finalize(st);
	return r;
}

static void computer_row(struct rk_stmt *st, void *p)
{
	computer_from_row(st, p);
}

static void computer_release_any(void *p)
{
	rk_computer_release(p);
}

int rk_db_computer_list(struct rk_db *db, struct rk_computer **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT " COMPUTER_COLS
				  " FROM computers WHERE deleted_at IS NULL ORDER BY created_at, id",
				  err);
	if (!st)
		return -rk_err(err)->code;
	return collect_rows(db, st, sizeof(struct rk_computer), computer_row, computer_release_any, (void **)out, n,
			    "list computers", err);
}

static int update_computer_text(struct rk_db *db, const char *sql, const char *id, const char *value,
				struct rk_error *err)
{
	struct rk_stmt *st = prep(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, value);
	rk_stmt_bind_int64(st, 2, rk_now_ms());
	bind_text(st, 3, id);
	return step_done(db, st, "update computer", err);
}

int rk_db_computer_set_state(struct rk_db *db, const char *id, const char *state, struct rk_error *err)
{
	return update_computer_text(db, "UPDATE computers SET state = ?, updated_at = ? WHERE id = ?", id, state, err);
}

int rk_db_computer_set_ref(struct rk_db *db, const char *id, const char *ref, struct rk_error *err)
{
	return update_computer_text(db, "UPDATE computers SET provider_ref = ?, updated_at = ? WHERE id = ?", id, ref,
				    err);
}

int rk_db_computer_set_home_revision(struct rk_db *db, const char *id, const char *revision, struct rk_error *err)
{
	return update_computer_text(db, "UPDATE computers SET home_revision = ?, updated_at = ? WHERE id = ?", id,
				    revision, err);
}

int rk_db_computer_mark_ref_kind(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "UPDATE computers SET ref_kind = kind WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	return step_done(db, st, "update computer", err);
}

int rk_db_computer_ref_kind(struct rk_db *db, const char *id, char **out, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "SELECT ref_kind FROM computers WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	int rc = rk_stmt_step(st);
	int r = 0;
	*out = NULL;
	if (rc == RK_SQL_ROW)
		*out = col_text(st, 0);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "no computer '%s'", id);
	else
		r = sql_error(db, err, "get computer");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_home_revision_record(struct rk_db *db, const struct rk_workspace_checkpoint_row *h, struct rk_error *err)
{
	struct rk_stmt
		*st = prep(db,
			   "INSERT INTO home_revisions(id, home_key, reason, bytes, files, checksum, "
			   "created_at, kind, computer_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO "
			   "UPDATE SET home_key = excluded.home_key, reason = excluded.reason, bytes = excluded.bytes, "
			   "files = excluded.files, checksum = excluded.checksum, created_at = excluded.created_at, "
			   "kind = excluded.kind, computer_id = excluded.computer_id",
			   err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, h->id);
	bind_text(st, 2, h->home_key);
	bind_text(st, 3, h->reason);
	rk_stmt_bind_int64(st, 4, h->bytes);
	rk_stmt_bind_int64(st, 5, h->files);
	bind_text(st, 6, h->checksum);
	rk_stmt_bind_int64(st, 7, h->created_at);
	bind_text(st, 8, h->kind);
	bind_text(st, 9, h->computer_id);
	return step_done(db, st, "record the checkpoint", err);
}

int rk_db_home_revision_prune(struct rk_db *db, const char *home_key, const char *const *keep, size_t n,
			      struct rk_error *err)
{
	/* a temp table would do too; the lists are short (revisions kept) */
	struct rk_buf sql;
	rk_buf_init(&sql);
	rk_buf_adds(&sql, "DELETE FROM home_revisions WHERE home_key = ?1");
	if (n) {
		rk_buf_adds(&sql, " AND id NOT IN (");
		for (size_t i = 0; i < n; i++)
			rk_buf_printf(&sql, "%s?%zu", i ? "," : "", i + 2);
		rk_buf_adds(&sql, ")");
	}
	struct rk_stmt *st = prep(db, sql.data, err);
	rk_buf_release(&sql);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, home_key);
	for (size_t i = 0; i < n; i++)
		bind_text(st, (int)i + 2, keep[i]);
	return step_done(db, st, "prune checkpoints", err);
}

int rk_db_computer_mark_deleted(struct rk_db *db, const char *id, struct rk_error *err)
{
	return update_computer_text(db,
				    "UPDATE computers SET state = ?, updated_at = ?2, deleted_at = ?2 WHERE id = ?3",
				    id, "deleted", err);
}

/* --- executions ------------------------------------------------------------------ */

void rk_execution_release(struct rk_execution *e)
{
	if (!e)
		return;
	free(e->worker_id);
	free(e->id);
	free(e->computer_id);
	free(e->op);
	free(e->command_key);
	free(e->body);
	free(e->body_hash);
	free(e->state);
	free(e->phase);
	free(e->error_code);
	free(e->error_message);
	free(e->result);
	free(e->key_scope);
	memset(e, 0, sizeof(*e));
}

#define EXECUTION_COLS                                                                                                 \
	"id, computer_id, op, command_key, body, body_hash, state, phase, error_code, error_message, "                 \
	"result, created_at, started_at, finished_at, provider_call_at, cancel_requested, worker_pid, worker_id, "     \
	"key_scope"

static void execution_from_row(struct rk_stmt *st, struct rk_execution *e)
{
	e->id = col_text(st, 0);
	e->computer_id = col_text(st, 1);
	e->op = col_text(st, 2);
	e->command_key = col_text(st, 3);
	e->body = col_text(st, 4);
	e->body_hash = col_text(st, 5);
	e->state = col_text(st, 6);
	e->phase = col_text(st, 7);
	e->error_code = col_text(st, 8);
	e->error_message = col_text(st, 9);
	e->result = col_text(st, 10);
	e->created_at = col_int(st, 11, 0);
	e->started_at = col_int(st, 12, 0);
	e->finished_at = col_int(st, 13, 0);
	e->provider_call_at = col_int(st, 14, 0);
	e->cancel_requested = col_int(st, 15, 0);
	e->worker_pid = col_int(st, 16, 0);
	e->worker_id = col_text(st, 17);
	e->key_scope = col_text(st, 18);
}

static void bind_time(struct rk_stmt *st, int i, int64_t t)
{
	if (t)
		rk_stmt_bind_int64(st, i, t);
	else
		rk_stmt_bind_null(st, i);
}

int rk_db_execution_insert(struct rk_db *db, const struct rk_execution *e, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO lifecycle_executions (" EXECUTION_COLS
				  ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, e->id);
	bind_text(st, 2, e->computer_id);
	bind_text(st, 3, e->op);
	bind_text(st, 4, e->command_key);
	bind_text(st, 5, e->body);
	bind_text(st, 6, e->body_hash);
	bind_text(st, 7, e->state ? e->state : "pending");
	bind_text(st, 8, e->phase ? e->phase : "submitted");
	bind_text(st, 9, e->error_code);
	bind_text(st, 10, e->error_message);
	bind_text(st, 11, e->result);
	rk_stmt_bind_int64(st, 12, e->created_at);
	bind_time(st, 13, e->started_at);
	bind_time(st, 14, e->finished_at);
	bind_time(st, 15, e->provider_call_at);
	rk_stmt_bind_int64(st, 16, e->cancel_requested);
	bind_time(st, 17, e->worker_pid);
	bind_text(st, 18, e->worker_id);
	bind_text(st, 19, e->key_scope ? e->key_scope : "");
	int rc = rk_stmt_step(st);
	rk_stmt_finalize(st);
	if (rc == RK_SQL_CONSTRAINT)
		return rk_error_set(err, RK_ECONFLICT, "command key '%s' is already used", e->command_key);
	if (rc != RK_SQL_DONE)
		return sql_error(db, err, "insert execution");
	return 0;
}

/* One row of sql with ?1 = arg and, when given, ?2 = arg2; missing names the last of them. */
static int execution_query_one(struct rk_db *db, const char *sql, const char *arg, const char *arg2,
			       struct rk_execution *out, const char *missing, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, arg);
	if (arg2)
		bind_text(st, 2, arg2);
	int rc = rk_stmt_step(st);
	int r = 0;
	if (rc == RK_SQL_ROW)
		execution_from_row(st, out);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, missing, arg2 ? arg2 : arg);
	else
		r = sql_error(db, err, "get execution");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_execution_get(struct rk_db *db, const char *id, struct rk_execution *out, struct rk_error *err)
{
	return execution_query_one(db, "SELECT " EXECUTION_COLS " FROM lifecycle_executions WHERE id = ?", id, NULL,
				   out, "no execution '%s'", err);
}

int rk_db_execution_by_key(struct rk_db *db, const char *scope, const char *key, struct rk_execution *out,
			   struct rk_error *err)
{
	return execution_query_one(db,
				   "SELECT " EXECUTION_COLS " FROM lifecycle_executions WHERE key_scope = ?1 "
				   "AND command_key = ?2",
				   scope ? scope : "", key, out, "no execution with command key '%s'", err);
}

int rk_db_execution_active(struct rk_db *db, const char *computer_id, struct rk_execution *out, struct rk_error *err)
{
	return execution_query_one(db,
				   "SELECT " EXECUTION_COLS " FROM lifecycle_executions WHERE computer_id = ? "
				   "AND state IN ('pending','running','outcome_unknown') ORDER BY created_at LIMIT 1",
				   computer_id, NULL, out, "no active execution on computer '%s'", err);
}

int rk_db_execution_claim(struct rk_db *db, int64_t worker_pid, const char *worker_id, struct rk_execution *out,
			  struct rk_error *err)
{
	int r = execution_query_one(db,
				    "SELECT " EXECUTION_COLS " FROM lifecycle_executions WHERE state = 'pending' "
				    "AND ?1 IS NOT NULL ORDER BY created_at, id LIMIT 1",
				    "", NULL, out, "no pending execution%s", err);
	if (r)
		return r;
	free(out->state);
	out->state = rk_xstrdup("running");
	out->worker_pid = worker_pid;
	free(out->worker_id);
	out->worker_id = worker_id ? rk_xstrdup(worker_id) : NULL;
	if (!out->started_at)
		out->started_at = rk_now_ms();
	return rk_db_execution_update(db, out, err);
}

int rk_db_execution_update(struct rk_db *db, const struct rk_execution *e, struct rk_error *err)
{
	struct rk_stmt
		*st = prep(db,
			   "UPDATE lifecycle_executions SET state = ?, phase = ?, error_code = ?, "
			   "error_message = ?, result = ?, started_at = ?, finished_at = ?, "
			   "provider_call_at = ?, cancel_requested = ?, worker_pid = ?, worker_id = ? WHERE id = ?",
			   err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, e->state);
	bind_text(st, 2, e->phase);
	bind_text(st, 3, e->error_code);
	bind_text(st, 4, e->error_message);
	bind_text(st, 5, e->result);
	bind_time(st, 6, e->started_at);
	bind_time(st, 7, e->finished_at);
	bind_time(st, 8, e->provider_call_at);
	rk_stmt_bind_int64(st, 9, e->cancel_requested);
	bind_time(st, 10, e->worker_pid);
	bind_text(st, 11, e->worker_id);
	bind_text(st, 12, e->id);
	return step_done(db, st, "update execution", err);
}

int rk_db_execution_request_cancel(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "UPDATE lifecycle_executions SET cancel_requested = 1 WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	return step_done(db, st, "cancel execution", err);
}

static void id_row(struct rk_stmt *st, void *p)
{
	*(char **)p = col_text(st, 0);
}

static void free_any(void *p)
{
	free(*(char **)p);
}

int rk_db_execution_running_ids(struct rk_db *db, char ***ids, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "SELECT id FROM lifecycle_executions WHERE state = 'running' ORDER BY created_at",
				  err);
	if (!st)
		return -rk_err(err)->code;
	return collect_rows(db, st, sizeof(char *), id_row, free_any, (void **)ids, n, "list running executions", err);
}

static void mark_row(struct rk_stmt *st, void *p)
{
	struct rk_execution_mark *m = p;
	m->id = col_text(st, 0);
	m->last_sequence = rk_stmt_column_int64(st, 1);
}

static void mark_release(void *p)
{
	free(((struct rk_execution_mark *)p)->id);
}

int rk_db_execution_marks(struct rk_db *db, struct rk_execution_mark **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT e.id, coalesce((SELECT max(v.sequence) FROM execution_events v WHERE "
				  "v.execution_id = e.id), 0) FROM lifecycle_executions e WHERE e.state IN "
				  "('pending','running')",
				  err);
	if (!st)
		return -rk_err(err)->code;
	return collect_rows(db, st, sizeof(**out), mark_row, mark_release, (void **)out, n, "list execution marks",
			    err);
}

void rk_execution_marks_free(struct rk_execution_mark *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++)
		free(m[i].id);
	free(m);
}

static void execution_row(struct rk_stmt *st, void *p)
{
	execution_from_row(st, p);
}

static void execution_release_any(void *p)
{
	rk_execution_release(p);
}

int rk_db_execution_list(struct rk_db *db, const char *computer_id, struct rk_execution **out, size_t *n,
			 struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT " EXECUTION_COLS " FROM lifecycle_executions WHERE ?1 IS NULL OR "
				  "computer_id = ?1 ORDER BY created_at, id",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	return collect_rows(db, st, sizeof(struct rk_execution), execution_row, execution_release_any, (void **)out, n,
			    "list executions", err);
}

int rk_db_execution_count_pending(struct rk_db *db, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "SELECT count(*) FROM lifecycle_executions WHERE state IN ('pending','running')",
				  err);
	if (!st)
		return -rk_err(err)->code;
	int n = 0;
	if (rk_stmt_step(st) == RK_SQL_ROW)
		n = rk_stmt_column_int(st, 0);
	rk_stmt_finalize(st);
	return n;
}

int rk_db_event_append(struct rk_db *db, const char *execution_id, const char *type, const char *data,
		       struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO execution_events (execution_id, sequence, type, data, created_at) "
				  "SELECT ?1, coalesce(max(sequence), 0) + 1, ?2, ?3, ?4 FROM execution_events "
				  "WHERE execution_id = ?1",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, execution_id);
	bind_text(st, 2, type);
	bind_text(st, 3, data);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	return step_done(db, st, "append event", err);
}

static void event_release_one(void *p)
{
	struct rk_event *ev = p;
	free(ev->type);
	free(ev->data);
}

void rk_events_free(struct rk_event *ev, size_t n)
{
	for (size_t i = 0; ev && i < n; i++)
		event_release_one(&ev[i]);
	free(ev);
}

static void event_row(struct rk_stmt *st, void *p)
{
	struct rk_event *ev = p;
	ev->sequence = rk_stmt_column_int64(st, 0);
	ev->type = col_text(st, 1);
	ev->data = col_text(st, 2);
	ev->created_at = rk_stmt_column_int64(st, 3);
}

int rk_db_events_after(struct rk_db *db, const char *execution_id, int64_t after, struct rk_event **out, size_t *n,
		       struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT sequence, type, data, created_at FROM execution_events WHERE "
				  "execution_id = ? AND sequence > ? ORDER BY sequence",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, execution_id);
	rk_stmt_bind_int64(st, 2, after);
	return collect_rows(db, st, sizeof(struct rk_event), event_row, event_release_one, (void **)out, n,
			    "list events", err);
}

/* --- leases ------------------------------------------------------------------------ */

void rk_lease_release_record(struct rk_lease *l)
{
	if (!l)
		return;
	free(l->computer_id);
	free(l->bot_id);
	free(l->holder);
	memset(l, 0, sizeof(*l));
}

int rk_db_lease_get(struct rk_db *db, const char *computer_id, const char *bot_id, struct rk_lease *out,
		    struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT computer_id, bot_id, holder, fence, expires_at FROM execution_leases "
				  "WHERE computer_id = ? AND bot_id = ?",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, bot_id);
	int rc = rk_stmt_step(st);
	int r = 0;
	if (rc == RK_SQL_ROW) {
		out->computer_id = col_text(st, 0);
		out->bot_id = col_text(st, 1);
		out->holder = col_text(st, 2);
		out->fence = col_int(st, 3, 0);
		out->expires_at = col_int(st, 4, 0);
	} else if (rc == RK_SQL_DONE) {
		r = rk_error_set(err, RK_ENOTFOUND, "no lease for bot '%s' on computer '%s'", bot_id, computer_id);
	} else {
		r = sql_error(db, err, "get lease");
	}
	rk_stmt_finalize(st);
	return r;
}

int rk_db_lease_live_any(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_lease *out,
			 struct rk_error *err)
{
	memset(out, 0, sizeof(*out));
	struct rk_stmt *st = prep(db,
				  "SELECT bot_id, holder FROM execution_leases WHERE computer_id = ? AND holder IS NOT "
				  "NULL AND expires_at > ? LIMIT 1",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, now_ms);
	int live = rk_stmt_step(st) == RK_SQL_ROW;
	if (live) {
		out->computer_id = rk_xstrdup(computer_id);
		out->bot_id = col_text(st, 0);
		out->holder = col_text(st, 1);
	}
	rk_stmt_finalize(st);
	return live;
}

int rk_db_lease_put(struct rk_db *db, const char *computer_id, const char *bot_id, const char *holder, int64_t fence,
		    int64_t expires_at, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt
		*st = prep(db,
			   "INSERT INTO execution_leases (computer_id, bot_id, fence, holder, expires_at, updated_at) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (computer_id, bot_id) DO UPDATE SET "
			   "fence = excluded.fence, holder = excluded.holder, expires_at = excluded.expires_at, "
			   "updated_at = excluded.updated_at",
			   err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, bot_id);
	rk_stmt_bind_int64(st, 3, fence);
	bind_text(st, 4, holder);
	rk_stmt_bind_int64(st, 5, expires_at);
	rk_stmt_bind_int64(st, 6, now_ms);
	return step_done(db, st, "acquire lease", err);
}

static int lease_fenced_update(struct rk_db *db, const char *sql, const char *computer_id, const char *bot_id,
			       int64_t fence, int64_t a, int64_t b, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, sql, err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, bot_id);
	rk_stmt_bind_int64(st, 3, fence);
	rk_stmt_bind_int64(st, 4, a);
	rk_stmt_bind_int64(st, 5, b);
	int r = step_done(db, st, "update lease", err);
	if (r)
		return r;
	if (rk_db_changes(db) == 0)
		return rk_error_set(err, RK_ESTALE,
				    "lease token %lld for bot '%s' on computer '%s' is stale: another holder took it",
				    (long long)fence, bot_id, computer_id);
	return 0;
}

int rk_db_lease_renew(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence, int64_t ttl_ms,
		      int64_t now_ms, struct rk_error *err)
{
	return lease_fenced_update(db,
				   "UPDATE execution_leases SET expires_at = ?4 + ?5, updated_at = ?4 WHERE "
				   "computer_id = ?1 AND bot_id = ?2 AND fence = ?3 AND holder IS NOT NULL AND "
				   "expires_at > ?4",
				   computer_id, bot_id, fence, now_ms, ttl_ms, err);
}

int rk_db_lease_drop(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence, struct rk_error *err)
{
	return lease_fenced_update(db,
				   "UPDATE execution_leases SET holder = NULL, expires_at = NULL, updated_at = ?4 "
				   "WHERE computer_id = ?1 AND bot_id = ?2 AND fence = ?3 AND holder IS NOT NULL "
				   "AND ?5 = ?5",
				   computer_id, bot_id, fence, rk_now_ms(), 0, err);
}

int rk_db_lease_fenced_write(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t fence,
			     const char *what, int64_t now_ms, struct rk_error *err)
{
	/* the fence check and the write are one statement, so no stale holder can slip in between */
	struct rk_stmt *st = prep(db,
				  "INSERT INTO lease_writes (computer_id, bot_id, fence, what, created_at) "
				  "SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM execution_leases WHERE "
				  "computer_id = ?1 AND bot_id = ?2 AND fence = ?3 AND holder IS NOT NULL AND "
				  "expires_at > ?5)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, bot_id);
	rk_stmt_bind_int64(st, 3, fence);
	bind_text(st, 4, what);
	rk_stmt_bind_int64(st, 5, now_ms);
	int r = step_done(db, st, "fenced write", err);
	if (r)
		return r;
	if (rk_db_changes(db) == 0)
		return rk_error_set(err, RK_ESTALE, "write refused: lease token %lld for bot '%s' is stale",
				    (long long)fence, bot_id);
	return 0;
}

int rk_db_control_live(struct rk_db *db, const char *computer_id, const char *bot_id, int64_t now_ms, char **holder)
{
	if (holder)
		*holder = NULL;
	struct rk_stmt *st = prep(db,
				  "SELECT holder FROM control_leases WHERE computer_id = ?1 AND (?2 IS NULL OR "
				  "bot_id = ?2) AND expires_at > ?3 LIMIT 1",
				  NULL);
	if (!st)
		return 0;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, bot_id);
	rk_stmt_bind_int64(st, 3, now_ms);
	int live = rk_stmt_step(st) == RK_SQL_ROW;
	if (live && holder)
		*holder = col_text(st, 0);
	rk_stmt_finalize(st);
	return live;
}

/* --- usage ---------------------------------------------------------------------------- */

int rk_db_usage_open(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO usage_records (computer_id, started_at) SELECT ?1, ?2 WHERE NOT EXISTS "
				  "(SELECT 1 FROM usage_records WHERE computer_id = ?1 AND ended_at IS NULL)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, now_ms);
	return step_done(db, st, "open usage", err);
}

int rk_db_usage_close(struct rk_db *db, const char *computer_id, int64_t now_ms, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "UPDATE usage_records SET ended_at = ?2 WHERE computer_id = ?1 AND ended_at IS NULL",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	rk_stmt_bind_int64(st, 2, now_ms);
	return step_done(db, st, "close usage", err);
}

/* --- exec sessions and terminal history ---------------------------------------------- */

void rk_session_row_release(struct rk_session_row *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->computer_id);
	free(s->owner);
	free(s->command);
	free(s->state);
	memset(s, 0, sizeof(*s));
}

int rk_db_session_insert(struct rk_db *db, const struct rk_session_row *s, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO exec_sessions (id, computer_id, owner, command, tty, state, holder_pid, "
				  "created_at, last_used_at) VALUES (?,?,?,?,?,'running',?,?,?)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, s->id);
	bind_text(st, 2, s->computer_id);
	bind_text(st, 3, s->owner);
	bind_text(st, 4, s->command);
	rk_stmt_bind_int(st, 5, s->tty);
	bind_time(st, 6, s->holder_pid);
	rk_stmt_bind_int64(st, 7, s->created_at);
	rk_stmt_bind_int64(st, 8, s->created_at);
	return step_done(db, st, "insert session", err);
}

#define SESSION_COLS                                                                                                   \
	"id, computer_id, owner, command, state, tty, holder_pid, exit_code, signal, created_at, last_used_at"

static void session_from_row(struct rk_stmt *st, struct rk_session_row *s)
{
	s->id = col_text(st, 0);
	s->computer_id = col_text(st, 1);
	s->owner = col_text(st, 2);
	s->command = col_text(st, 3);
	s->state = col_text(st, 4);
	s->tty = (int)col_int(st, 5, 0);
	s->holder_pid = col_int(st, 6, 0);
	s->exit_code = col_int(st, 7, -1);
	s->signal = col_int(st, 8, -1);
	s->created_at = col_int(st, 9, 0);
	s->last_used_at = col_int(st, 10, 0);
}

int rk_db_session_get(struct rk_db *db, const char *id, struct rk_session_row *out, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "SELECT " SESSION_COLS " FROM exec_sessions WHERE id = ?", err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	int rc = rk_stmt_step(st);
	int r = 0;
	if (rc == RK_SQL_ROW)
		session_from_row(st, out);
	else if (rc == RK_SQL_DONE)
		r = rk_error_set(err, RK_ENOTFOUND, "no session '%s'", id);
	else
		r = sql_error(db, err, "get session");
	rk_stmt_finalize(st);
	return r;
}

int rk_db_session_touch(struct rk_db *db, const char *id, int64_t holder_pid, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "UPDATE exec_sessions SET last_used_at = ?2, holder_pid = coalesce(?3, holder_pid), "
				  "holder_host = CASE WHEN ?3 IS NULL THEN holder_host ELSE ?4 END WHERE id = ?1",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, rk_now_ms());
	bind_time(st, 3, holder_pid);
	bind_text(st, 4, rk_host_key());
	return step_done(db, st, "touch session", err);
}

int rk_db_session_end(struct rk_db *db, const char *id, int64_t exit_code, int64_t signal, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "UPDATE exec_sessions SET state = 'ended', exit_code = ?2, signal = ?3, "
				  "last_used_at = ?4 WHERE id = ?1",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	if (exit_code < 0)
		rk_stmt_bind_null(st, 2);
	else
		rk_stmt_bind_int64(st, 2, exit_code);
	if (signal < 0)
		rk_stmt_bind_null(st, 3);
	else
		rk_stmt_bind_int64(st, 3, signal);
	rk_stmt_bind_int64(st, 4, rk_now_ms());
	return step_done(db, st, "end session", err);
}

int rk_db_session_command_ended(struct rk_db *db, const char *id, struct rk_error *err)
{
	struct rk_stmt *st = prep(db, "UPDATE exec_sessions SET command_ended_at = ?2 WHERE id = ?1", err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, id);
	rk_stmt_bind_int64(st, 2, rk_now_ms());
	return step_done(db, st, "session command ended", err);
}

static void session_row(struct rk_stmt *st, void *p)
{
	session_from_row(st, p);
}

static void session_release_any(void *p)
{
	rk_session_row_release(p);
}

int rk_db_session_list(struct rk_db *db, const char *computer_id, struct rk_session_row **out, size_t *n,
		       struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT " SESSION_COLS
				  " FROM exec_sessions WHERE computer_id = ? ORDER BY created_at, id",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	return collect_rows(db, st, sizeof(struct rk_session_row), session_row, session_release_any, (void **)out, n,
			    "list sessions", err);
}

int rk_db_history_append(struct rk_db *db, const char *computer_id, const char *session_id, const char *bot_id,
			 const char *kind, const void *data, size_t len, int64_t exit_code, int64_t signal,
			 struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "INSERT INTO terminal_history (computer_id, session_id, bot_id, kind, data, exit_code, "
				  "signal, created_at) VALUES (?,?,?,?,?,?,?,?)",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, session_id);
	bind_text(st, 3, bot_id);
	bind_text(st, 4, kind);
	if (data)
		rk_stmt_bind_blob64(st, 5, data, len);
	else
		rk_stmt_bind_null(st, 5);
	if (exit_code < 0)
		rk_stmt_bind_null(st, 6);
	else
		rk_stmt_bind_int64(st, 6, exit_code);
	if (signal < 0)
		rk_stmt_bind_null(st, 7);
	else
		rk_stmt_bind_int64(st, 7, signal);
	rk_stmt_bind_int64(st, 8, rk_now_ms());
	return step_done(db, st, "append history", err);
}

static void history_release_one(void *p)
{
	struct rk_history_entry *h = p;
	free(h->session_id);
	free(h->bot_id);
	free(h->kind);
	free(h->data);
}

void rk_history_free(struct rk_history_entry *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++)
		history_release_one(&h[i]);
	free(h);
}

static void history_row(struct rk_stmt *st, void *p)
{
	struct rk_history_entry *h = p;
	h->id = rk_stmt_column_int64(st, 0);
	h->session_id = col_text(st, 1);
	h->bot_id = col_text(st, 2);
	h->kind = col_text(st, 3);
	int len = rk_stmt_column_bytes(st, 4);
	const void *blob = rk_stmt_column_blob(st, 4);
	h->data = rk_xmalloc((size_t)len + 1);
	if (len > 0)
		memcpy(h->data, blob, (size_t)len);
	h->data[len] = '\0';
	h->data_len = (size_t)len;
	h->exit_code = col_int(st, 5, -1);
	h->signal = col_int(st, 6, -1);
	h->created_at = rk_stmt_column_int64(st, 7);
}

int rk_db_history_list(struct rk_db *db, const char *computer_id, const char *session_id, int64_t after, size_t limit,
		       struct rk_history_entry **out, size_t *n, struct rk_error *err)
{
	struct rk_stmt *st = prep(db,
				  "SELECT id, session_id, bot_id, kind, data, exit_code, signal, created_at FROM "
				  "terminal_history WHERE computer_id = ?1 AND (?2 IS NULL OR session_id = ?2) AND "
				  "id > ?3 ORDER BY id LIMIT ?4",
				  err);
	if (!st)
		return -rk_err(err)->code;
	bind_text(st, 1, computer_id);
	bind_text(st, 2, session_id);
	rk_stmt_bind_int64(st, 3, after);
	rk_stmt_bind_int64(st, 4, limit ? (int64_t)limit : 1000);
	return collect_rows(db, st, sizeof(struct rk_history_entry), history_row, history_release_one, (void **)out, n,
			    "list history", err);
}
