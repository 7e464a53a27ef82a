/* Unit tests for engine/team (paths, bot ids, run state, screen slots),
 * engine/idle (deferred Team checkpoints) and engine/reservation, on a fake
 * Team computer in a temporary data directory. The CLI and the docker
 * desktops are in tests/cli/team.bats. */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/checkpoint.h"
#include "engine/state/db_runs.h"
#include "engine/machine/execution.h"
#include "engine/machine/idle.h"
#include "engine/machine/lease.h"
#include "engine/machine/reservation.h"
#include "engine/machine/team.h"
#include "engine/util/fs.h"
#include "engine/machine/worker.h"
#include "check.h"
#include "fresh_db.h"

static char *data_dir;

static struct rk_engine *team_engine(struct rk_computer *c, const char *mode)
{
	char tmpl[] = "/tmp/rk-team-XXXXXX";
	data_dir = rk_xstrdup(mkdtemp(tmpl));
	setenv("RAKAZO_DATA_DIR", data_dir, 1);
	fresh_database();
	setenv("RAKAZO_OWNER", "user:unit", 1);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		printf("  engine: %s\n", e.message);
		return NULL;
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "name", "t");
	cJSON_AddStringToObject(b, "provider", "fake");
	cJSON_AddStringToObject(b, "mode", mode);
	struct rk_submit s = {.op = "create", .body = b};
	struct rk_execution x = {0};
	int existed;
	if (rk_execution_submit(eng, &s, &x, &existed, &e) == 0) {
		struct rk_worker_options o = {.once = 1};
		rk_worker_run(eng, &o, &e);
	}
	rk_execution_release(&x);
	cJSON_Delete(b);
	if (rk_db_computer_get(eng->db, "t", c, &e) != 0)
		printf("  computer: %s\n", e.message);
	return eng;
}

static void team_done(struct rk_engine *eng, struct rk_computer *c)
{
	rk_computer_release(c);
	rk_engine_free(eng);
	rk_fs_remove_tree(data_dir, NULL);
	free(data_dir);
}

static void check_path(const struct rk_computer *c, const char *bot, const char *in, const char *want)
{
	char *out = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_team_path(c, bot, in, &out, &e), 0);
	CHECK_EQ_STR(out, want);
	free(out);
}

TEST(paths)
{
	struct rk_computer team = {.mode = "team"}, priv = {.mode = "private"};
	check_path(&team, "a", "notes.txt", "bots/a/notes.txt");
	check_path(&team, "a", "", "bots/a");
	check_path(&team, "a", NULL, "bots/a");
	check_path(&team, "a", ".", "bots/a");
	check_path(&team, "a", "shared/x", "shared/x");
	check_path(&team, "a", "shared", "shared");
	check_path(&team, "a", "sharedx/y", "bots/a/sharedx/y");
	check_path(&team, "a", "bots/b/y", "bots/b/y");
	check_path(&team, "a", "~", "");
	check_path(&team, "a", "~/top", "top");
	check_path(&team, "a", "~x", "bots/a/~x");
	check_path(&team, "a", "/etc/hosts", "/etc/hosts");
	check_path(&team, NULL, "notes.txt", "notes.txt");
	check_path(&priv, "a", "notes.txt", "notes.txt");
	char *out = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_team_path(&team, "../a", "x", &out, &e), -RK_EINVALID);
	CHECK(out == NULL);
}

TEST(bot_ids)
{
	struct rk_error e;
	CHECK_EQ_INT(rk_team_bot_check("writer-1.b_2", &e), 0);
	CHECK_EQ_INT(rk_team_bot_check("", &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_team_bot_check(NULL, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_team_bot_check(".x", &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_team_bot_check("a/b", &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_team_bot_check("a'b", &e), -RK_EINVALID);
	char long_id[70];
	memset(long_id, 'x', 65);
	long_id[65] = '\0';
	CHECK_EQ_INT(rk_team_bot_check(long_id, &e), -RK_EINVALID);
	long_id[64] = '\0';
	CHECK_EQ_INT(rk_team_bot_check(long_id, &e), 0);
}

static void add_run(struct rk_engine *eng, const char *id, const char *computer, const char *bot, const char *state)
{
	struct rk_run_row r = {.id = (char *)id, .bot_id = (char *)bot, .computer_id = (char *)computer,
			       .task = "task", .state = (char *)state};
	struct rk_error e;
	CHECK_EQ_INT(rk_db_run_insert(eng->db, &r, &e), 0);
}

TEST(run_state_and_takeover)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = team_engine(&c, "team");
	REQUIRE(eng && c.id);
	char *state = NULL, *run = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_team_bot_run_state(eng->db, c.id, "a", &state, &run, &e), 0);
	CHECK(state == NULL);
	add_run(eng, "r-old", c.id, "a", "completed");
	add_run(eng, "r-wait", c.id, "a", "waiting_takeover");
	add_run(eng, "r-b", c.id, "b", "running");
	CHECK_EQ_INT(rk_team_bot_run_state(eng->db, c.id, "a", &state, &run, &e), 0);
	CHECK_EQ_STR(state, "waiting_takeover");
	CHECK_EQ_STR(run, "r-wait");
	free(state);
	free(run);
	cJSON *o = NULL;
	CHECK_EQ_INT(rk_team_takeover(eng, &c, "a", 0, &o, &e), 0);
	CHECK(rk_team_control_live(eng->db, c.id, "a", NULL));
	CHECK(!rk_team_control_live(eng->db, c.id, "b", NULL));
	cJSON_Delete(o);
	/* b's own run is active */
	CHECK_EQ_INT(rk_team_takeover(eng, &c, "b", 0, &o, &e), -RK_ECONFLICT);
	CHECK(strstr(e.message, "Stop the bot first") != NULL);
	/* a running run outranks one waiting */
	add_run(eng, "r-new", c.id, "a", "running");
	CHECK_EQ_INT(rk_team_bot_run_state(eng->db, c.id, "a", &state, NULL, &e), 0);
	CHECK_EQ_STR(state, "running");
	free(state);
	CHECK_EQ_INT(rk_team_release_control(eng, &c, "a", &e), 0);
	CHECK_EQ_INT(rk_team_takeover(eng, &c, "a", 0, &o, &e), -RK_ECONFLICT);
	team_done(eng, &c);
}

TEST(screen_slots)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = team_engine(&c, "team");
	REQUIRE(eng && c.id);
	int slot = -1;
	int64_t gen = -1;
	struct rk_error e;
	CHECK_EQ_INT(rk_team_screen_slot(eng, c.id, "a", &slot, &gen, &e), -RK_ENOTFOUND);
	struct rk_display_shot shot = {0};
	CHECK_EQ_INT(rk_team_screen_observe(eng, &c, "a", 0, NULL, &shot, &e), 0);
	rk_display_shot_release(&shot);
	CHECK_EQ_INT(rk_team_screen_slot(eng, c.id, "a", &slot, &gen, &e), 0);
	CHECK_EQ_INT(slot, 1);
	CHECK_EQ_INT(gen, 1);
	CHECK_EQ_INT(rk_team_screen_release(eng, &c, "a", 0, &e), 0);
	CHECK_EQ_INT(rk_team_screen_slot(eng, c.id, "a", &slot, &gen, &e), -RK_ENOTFOUND);
	/* the next tenant of slot 1 has a new generation */
	CHECK_EQ_INT(rk_team_screen_observe(eng, &c, "b", 0, NULL, &shot, &e), 0);
	rk_display_shot_release(&shot);
	CHECK_EQ_INT(rk_team_screen_slot(eng, c.id, "b", &slot, &gen, &e), 0);
	CHECK_EQ_INT(slot, 1);
	CHECK_EQ_INT(gen, 2);
	/* the call's lease is given back */
	struct rk_lease l = {0};
	CHECK_EQ_INT(rk_db_lease_get(eng->db, c.id, "b", &l, &e), 0);
	CHECK(l.holder == NULL);
	rk_lease_release_record(&l);
	rk_display_close(eng, &c, 1, &e);
	team_done(eng, &c);
}

/* The reason of c's latest revision ("" when none); static storage. */
static const char *latest_reason(struct rk_engine *eng, const char *computer_id)
{
	static char reason[64];
	reason[0] = '\0';
	struct rk_stmt *st = rk_db_prepare(
		eng->db, "SELECT reason FROM home_revisions WHERE computer_id = ? ORDER BY created_at DESC LIMIT 1", NULL);
	rk_stmt_bind_text(st, 1, computer_id, -1);
	if (rk_stmt_step(st) == RK_SQL_ROW)
		snprintf(reason, sizeof(reason), "%s", (const char *)rk_stmt_column_text(st, 0));
	rk_stmt_finalize(st);
	return reason;
}

static int revision_count(struct rk_engine *eng, const char *computer_id)
{
	struct rk_stmt *st = rk_db_prepare(eng->db, "SELECT count(*) FROM home_revisions WHERE computer_id = ?", NULL);
	rk_stmt_bind_text(st, 1, computer_id, -1);
	int n = rk_stmt_step(st) == RK_SQL_ROW ? rk_stmt_column_int(st, 0) : -1;
	rk_stmt_finalize(st);
	return n;
}

/* Bot b takes the lease (in *lb), then bot a's run (completed, or failed)
 * ends: its checkpoint is deferred, blocked by b, with the run's reason. */
static void deferred_run_end(struct rk_engine *eng, const struct rk_computer *c, const char *run, int failed,
			     struct rk_lease *lb)
{
	struct rk_error e;
	CHECK_EQ_INT(rk_lease_acquire(eng, c->id, "b", "run-b", 60000, lb, &e), 0);
	add_run(eng, run, c->id, "a", failed ? "failed" : "completed");
	CHECK_EQ_INT(rk_idle_run_end(eng, c->id, run, failed, &e), 0);
	cJSON *d = rk_idle_deferred_to_json(eng->db, c->id);
	CHECK(d != NULL);
	char *want = rk_xasprintf("%s:%s", failed ? "run-failed" : "run", run);
	if (d) {
		CHECK_EQ_STR(cJSON_GetObjectItem(d, "reason")->valuestring, want);
		CHECK(strstr(cJSON_GetObjectItem(d, "blocked_by")->valuestring, "bot b") != NULL);
	}
	free(want);
	cJSON_Delete(d);
}

TEST(deferred_team_checkpoint)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = team_engine(&c, "team");
	REQUIRE(eng && c.id);
	struct rk_error e;
	int before = revision_count(eng, c.id);
	struct rk_lease lb = {0};
	/* a's run ends while b works: deferred */
	deferred_run_end(eng, &c, "ra", 0, &lb);
	CHECK_EQ_INT(revision_count(eng, c.id), before);
	/* still blocked while b's lease lives */
	CHECK_EQ_INT(rk_idle_flush_deferred(eng, &c, &e), 0);
	/* when b's lease ends, the deferred checkpoint is made */
	CHECK_EQ_INT(rk_lease_release(eng, c.id, "b", lb.fence, &e), 0);
	CHECK_EQ_INT(rk_idle_flush_deferred(eng, &c, &e), 1);
	CHECK_EQ_INT(revision_count(eng, c.id), before + 1);
	CHECK_EQ_STR(latest_reason(eng, c.id), "run:ra");
	CHECK(rk_idle_deferred_to_json(eng->db, c.id) == NULL);
	/* a person's control defers too; a Private computer never defers */
	cJSON *o = NULL;
	CHECK_EQ_INT(rk_team_takeover(eng, &c, "x", 0, &o, &e), 0);
	cJSON_Delete(o);
	CHECK_EQ_INT(rk_idle_checkpoint(eng, &c, "a", "manual", &e), 1);
	CHECK_EQ_STR(latest_reason(eng, c.id), "run:ra");
	CHECK_EQ_INT(rk_team_release_control(eng, &c, "x", &e), 0); /* flushes */
	CHECK_EQ_STR(latest_reason(eng, c.id), "manual");
	rk_lease_release_record(&lb);
	team_done(eng, &c);
}

/* A stand-in for Chromium in c's workspace: its command line names the
 * profile dir, and it writes Default/Cookies only when closed by SIGTERM
 * (as Chromium writes its cookie store when it closes cleanly). */
static pid_t start_browser(struct rk_engine *eng, const struct rk_computer *c, char **cookies)
{
	char *prof = rk_xasprintf("%s/homes/%s/.browser-profiles/default", eng->data_dir, c->home_key);
	char *flag = rk_xasprintf("--user-data-dir=%s", prof);
	*cookies = rk_xasprintf("%s/Default/Cookies", prof);
	rk_fs_mkdirs(prof, 0700, NULL);
	unlink(*cookies);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c",
		      "trap 'mkdir -p \"$0/Default\"; echo closed > \"$0/Default/Cookies\"; exit 0' TERM; "
		      "while :; do sleep 0.05; done",
		      prof, flag, (char *)NULL);
		_exit(127);
	}
	free(prof);
	free(flag);
	usleep(200000); /* the trap is set */
	return pid;
}

/* Waits up to 5 s for pid; 1 when it ended. */
static int ended(pid_t pid)
{
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 1;
		usleep(50000);
	}
	return 0;
}

TEST(run_end_quiesces_private_computers_only)
{
	/* Private: the run's checkpoint closes the browser cleanly first, so
	 * what it writes as it closes is in the workspace it marks */
	struct rk_computer c = {0};
	struct rk_engine *eng = team_engine(&c, "private");
	REQUIRE(eng && c.id);
	struct rk_error e;
	char *cookies = NULL;
	pid_t b = start_browser(eng, &c, &cookies);
	add_run(eng, "rp", c.id, NULL, "completed");
	CHECK_EQ_INT(rk_idle_run_end(eng, c.id, "rp", 0, &e), 0);
	if (!ended(b)) {
		CHECK(!"the browser was not closed");
		kill(b, SIGKILL);
		waitpid(b, NULL, 0);
	}
	CHECK(rk_fs_exists(cookies));
	CHECK_EQ_STR(latest_reason(eng, c.id), "run:rp");
	free(cookies);
	team_done(eng, &c);

	/* Team: never closed under the bots; a failed run's checkpoint is
	 * deferred like a completed one's while another bot works */
	eng = team_engine(&c, "team");
	REQUIRE(eng && c.id);
	b = start_browser(eng, &c, &cookies);
	int before = revision_count(eng, c.id);
	struct rk_lease lb = {0};
	deferred_run_end(eng, &c, "rf", 1, &lb);
	CHECK_EQ_INT(revision_count(eng, c.id), before);
	CHECK_EQ_INT(rk_lease_release(eng, c.id, "b", lb.fence, &e), 0);
	CHECK_EQ_INT(rk_idle_flush_deferred(eng, &c, &e), 1);
	CHECK_EQ_STR(latest_reason(eng, c.id), "run-failed:rf");
	CHECK(waitpid(b, NULL, WNOHANG) == 0); /* still running */
	CHECK(!rk_fs_exists(cookies));
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	free(cookies);
	rk_lease_release_record(&lb);
	team_done(eng, &c);
}

TEST(reservation_blocks_leases)
{
	struct rk_computer c = {0};
	struct rk_engine *eng = team_engine(&c, "team");
	REQUIRE(eng && c.id);
	struct rk_error e;
	CHECK_EQ_INT(rk_reservation_begin(eng, &c, "update", &e), 0);
	CHECK_EQ_INT(rk_reservation_begin(eng, &c, "recovery", &e), -RK_ECONFLICT);
	struct rk_lease l = {0};
	CHECK_EQ_INT(rk_lease_acquire(eng, c.id, "a", "h", 60000, &l, &e), -RK_ECONFLICT);
	CHECK(strstr(e.message, "update job") != NULL);
	CHECK_EQ_INT(rk_reservation_phase(eng, c.id, "running", &e), 0);
	cJSON *j = rk_reservation_to_json(eng->db, c.id);
	REQUIRE(j != NULL);
	CHECK_EQ_STR(cJSON_GetObjectItem(j, "phase")->valuestring, "running");
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "phases")), 2);
	cJSON_Delete(j);
	/* silent past the limit: interrupted, kept, and no longer this job's to write */
	setenv("RAKAZO_RESERVATION_SILENT_MS", "1", 1);
	usleep(5000);
	CHECK_EQ_INT(rk_reservation_scan(eng, &e), 0);
	unsetenv("RAKAZO_RESERVATION_SILENT_MS");
	CHECK_EQ_INT(rk_reservation_phase(eng, c.id, "done", &e), -RK_ESTALE);
	CHECK_EQ_INT(rk_reservation_check(eng->db, c.id, &e), -RK_ECONFLICT);
	/* its owner frees it (this process is the job, so it has stopped its own work) */
	CHECK_EQ_INT(rk_reservation_release(eng, &c, &e), 0);
	CHECK_EQ_INT(rk_reservation_check(eng->db, c.id, &e), 0);
	CHECK_EQ_INT(rk_lease_acquire(eng, c.id, "a", "h", 60000, &l, &e), 0);
	rk_lease_release_record(&l);
	team_done(eng, &c);
}

int main(void)
{
	rk_engine_hooks_init();
	RUN(paths);
	RUN(bot_ids);
	RUN(run_state_and_takeover);
	RUN(screen_slots);
	RUN(deferred_team_checkpoint);
	RUN(run_end_quiesces_private_computers_only);
	RUN(reservation_blocks_leases);
	return check_summary("team");
}
