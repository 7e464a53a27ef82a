/* engine/db, lease, execution, worker: real SQLite in a temporary DATA_DIR. */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/machine/computer.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "providers/provider.h"
#include "engine/machine/execution.h"
#include "engine/machine/lease.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/time.h"
#include "engine/machine/worker.h"
#include "check.h"
#include "fresh_db.h"

static char *new_data_dir(void)
{
	char tmpl[] = "/tmp/rk-state-XXXXXX";
	char *d = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", d, 1);
	fresh_database();
	return rk_xstrdup(d);
}

static struct rk_engine *open_engine(void)
{
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0)
		printf("  engine: %s\n", e.message);
	return eng;
}

static cJSON *create_body(const char *name)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "name", name);
	cJSON_AddStringToObject(b, "provider", "fake");
	return b;
}

TEST(migrations_idempotent)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	CHECK_EQ_INT(rk_db_schema_version(eng->db), rk_db_migration_count());
	char *res = NULL;
	struct rk_error e;
	CHECK_EQ_INT(rk_db_integrity_check(eng->db, &res, &e), 0);
	CHECK_EQ_STR(res, "ok");
	free(res);
	rk_engine_free(eng);
	/* opening again applies nothing and keeps the version */
	eng = open_engine();
	REQUIRE(eng != NULL);
	CHECK_EQ_INT(rk_db_schema_version(eng->db), rk_db_migration_count());
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(unusable_data_dir)
{
	char *dir = new_data_dir();
	char *file = rk_path_join(dir, "plain-file");
	rk_fs_write_atomic(file, "x", 1, 0600, NULL);
	char *under = rk_path_join(file, "sub");
	setenv("RAKAZO_DATA_DIR", under, 1);
	struct rk_engine *eng = NULL;
	struct rk_error e;
	CHECK(rk_engine_open(&eng, &e) != 0);
	CHECK(eng == NULL);
	CHECK(strstr(e.message, "RAKAZO_DATA_DIR") != NULL);
	rk_fs_remove_tree(dir, NULL);
	free(under);
	free(file);
	free(dir);
}

TEST(submit_same_key_same_execution)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	cJSON *body = create_body("t");
	struct rk_submit s = {.op = "create", .body = body, .command_key = "k1"};
	struct rk_execution a = {0}, b = {0};
	struct rk_error e;
	int existed;
	REQUIRE(rk_execution_submit(eng, &s, &a, &existed, &e) == 0);
	CHECK_EQ_INT(existed, 0);
	REQUIRE(rk_execution_submit(eng, &s, &b, &existed, &e) == 0);
	CHECK_EQ_INT(existed, 1);
	CHECK_EQ_STR(a.id, b.id);
	CHECK_EQ_STR(a.computer_id, b.computer_id);
	/* the same key with a different body is a conflict */
	cJSON *other = create_body("u");
	struct rk_submit s2 = {.op = "create", .body = other, .command_key = "k1"};
	struct rk_execution c = {0};
	CHECK_EQ_INT(rk_execution_submit(eng, &s2, &c, &existed, &e), -RK_ECONFLICT);
	CHECK(strstr(e.message, a.id) != NULL);
	/* a second lifecycle command while one is pending: conflict naming it */
	struct rk_submit p = {.op = "pause", .computer = a.computer_id};
	CHECK_EQ_INT(rk_execution_submit(eng, &p, &c, &existed, &e), -RK_ECONFLICT);
	CHECK(strstr(e.message, a.id) != NULL);
	cJSON_Delete(body);
	cJSON_Delete(other);
	rk_execution_release(&a);
	rk_execution_release(&b);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* issue 20: one identity's key is not another's; the same identity keeps its receipt */
TEST(command_key_scoped_to_identity)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	char *own = eng->owner;
	cJSON *ba = create_body("a"), *bb = create_body("b");
	struct rk_submit sa = {.op = "create", .body = ba, .command_key = "k1"};
	struct rk_submit sb = {.op = "create", .body = bb, .command_key = "k1"};
	struct rk_execution a = {0}, x = {0};
	struct rk_error e;
	int existed;
	eng->owner = "api:tok_a";
	REQUIRE(rk_execution_submit(eng, &sa, &a, &existed, &e) == 0);
	/* token b, same key and body: never a's receipt (a's name is taken, and the error names nothing of a's) */
	eng->owner = "api:tok_b";
	int r = rk_execution_submit(eng, &sa, &x, &existed, &e);
	CHECK(r == -RK_ECONFLICT && !strstr(e.message, a.id));
	/* token b, same key, another body: a command of its own */
	CHECK_EQ_INT(rk_execution_submit(eng, &sb, &x, &existed, &e), 0);
	CHECK_EQ_INT(existed, 0);
	CHECK(x.id && strcmp(x.id, a.id) != 0);
	CHECK_EQ_STR(x.key_scope, "api:tok_b");
	rk_execution_release(&x);
	/* token a again: its own receipt */
	eng->owner = "api:tok_a";
	CHECK_EQ_INT(rk_execution_submit(eng, &sa, &x, &existed, &e), 0);
	CHECK_EQ_INT(existed, 1);
	CHECK_EQ_STR(x.id, a.id);
	rk_execution_release(&x);
	/* an explicit scope is shared by whoever uses it (the idle scanners) */
	struct rk_execution y = {0};
	struct rk_submit si = {.op = "create", .body = bb, .command_key = "idle:k", .key_scope = "idle"};
	cJSON *bc = create_body("c");
	si.body = bc;
	CHECK_EQ_INT(rk_execution_submit(eng, &si, &x, &existed, &e), 0);
	eng->owner = "api:tok_b";
	CHECK_EQ_INT(rk_execution_submit(eng, &si, &y, &existed, &e), 0);
	CHECK_EQ_INT(existed, 1);
	CHECK_EQ_STR(x.id, y.id);
	eng->owner = own;
	cJSON_Delete(ba);
	cJSON_Delete(bb);
	cJSON_Delete(bc);
	rk_execution_release(&a);
	rk_execution_release(&x);
	rk_execution_release(&y);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(bad_create_bodies)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	const char *bad[] = {"{\"provider\":\"fake\"}", "{\"name\":\"a b\",\"provider\":\"fake\"}",
			     "{\"name\":\"t\",\"provider\":\"nope\"}", "{\"name\":\"t\",\"provider\":\"fake\",\"x\":1}",
			     "{\"name\":\"t\",\"provider\":\"fake\",\"pause_after\":\"soon\"}",
			     "{\"name\":\"t\",\"provider\":\"fake\",\"mode\":\"shared\"}", "[]"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rk_error e;
		cJSON *b = cJSON_Parse(bad[i]);
		struct rk_submit s = {.op = "create", .body = b};
		struct rk_execution x = {0};
		int existed;
		CHECK_EQ_INT(rk_execution_submit(eng, &s, &x, &existed, &e), -RK_EINVALID);
		cJSON_Delete(b);
	}
	struct rk_computer *cs;
	size_t n;
	struct rk_error e;
	CHECK_EQ_INT(rk_db_computer_list(eng->db, &cs, &n, &e), 0);
	CHECK_EQ_INT(n, 0);
	free(cs);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* issue 20, item 7: limits as typed and in a create body */
TEST(resource_limits)
{
	static const struct {
		const char *in;
		long long want; /* 0: refused */
	} mem[] = {{"512m", 512LL << 20}, {"2g", 2LL << 30}, {"2G", 2LL << 30}, {"2GiB", 2LL << 30},
		   {"1024MB", 1LL << 30}, {"67108864", 64LL << 20}, {"1t", 1LL << 40}, {"64m", 64LL << 20},
		   {"63m", 0}, {"2t", 0}, {"", 0}, {"g", 0}, {"1.5g", 0}, {"-1g", 0}, {"0x10g", 0},
		   {"12x", 0}, {"2gb ", 0}, {"99999999999999999999999g", 0}};
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
		int64_t v = 0;
		struct rk_error e;
		int r = rk_limits_parse_memory(mem[i].in, "--memory", &v, &e);
		if (mem[i].want) {
			CHECK_EQ_INT(r, 0);
			CHECK_EQ_INT(v, mem[i].want);
		} else {
			CHECK_EQ_INT(r, -RK_EINVALID);
			CHECK(strstr(e.message, "--memory") != NULL);
		}
	}
	double c = 0;
	int64_t p = 0;
	CHECK_EQ_INT(rk_limits_parse_cpus("0.5", "--cpus", &c, NULL), 0);
	CHECK(c == 0.5);
	CHECK_EQ_INT(rk_limits_parse_cpus(".25", "--cpus", &c, NULL), 0);
	CHECK_EQ_INT(rk_limits_parse_cpus("0", "--cpus", &c, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_cpus("nan", "--cpus", &c, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_cpus("1e3x", "--cpus", &c, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_cpus("2000", "--cpus", &c, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_pids("64", "--pids", &p, NULL), 0);
	CHECK_EQ_INT(p, 64);
	CHECK_EQ_INT(rk_limits_parse_pids("63", "--pids", &p, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_pids("+100", "--pids", &p, NULL), -RK_EINVALID);
	CHECK_EQ_INT(rk_limits_parse_pids("99999999999999999999", "--pids", &p, NULL), -RK_EINVALID);

	/* a body: strings or numbers; defaults for the rest; none for a
	 * provider that enforces none, which refuses one asked */
	const struct rk_provider_ops *docker = rk_provider_find("docker"), *fake = rk_provider_find("fake");
	REQUIRE(docker && fake);
	struct rk_limits l;
	cJSON *res = cJSON_Parse("{\"memory\":\"1g\",\"pids\":300}");
	CHECK_EQ_INT(rk_limits_from_json(res, docker, &l, NULL), 0);
	CHECK_EQ_INT(l.memory, 1LL << 30);
	CHECK_EQ_INT(l.pids, 300);
	CHECK(l.cpus > 0 && l.cpus <= RK_LIMIT_DEFAULT_CPUS);
	CHECK_EQ_INT(rk_limits_from_json(res, fake, &l, NULL), -RK_EUNSUPPORTED);
	cJSON_Delete(res);
	CHECK_EQ_INT(rk_limits_from_json(NULL, fake, &l, NULL), 0);
	CHECK(l.memory == 0 && l.cpus == 0 && l.pids == 0);
	CHECK_EQ_INT(rk_limits_from_json(NULL, docker, &l, NULL), 0);
	CHECK_EQ_INT(l.memory, RK_LIMIT_DEFAULT_MEMORY);
	CHECK_EQ_INT(l.pids, RK_LIMIT_DEFAULT_PIDS);
	const char *bad[] = {"[]", "{\"swap\":1}", "{\"memory\":1.5}", "{\"memory\":1}", "{\"cpus\":0}",
			     "{\"pids\":64.5}", "{\"pids\":true}", "{\"memory\":\"lots\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		res = cJSON_Parse(bad[i]);
		CHECK_EQ_INT(rk_limits_from_json(res, docker, &l, NULL), -RK_EINVALID);
		cJSON_Delete(res);
	}
	/* stored with the computer: a computer made before limits gets its
	 * provider's defaults, one with limits keeps them */
	struct rk_computer comp = {.kind = "docker"};
	rk_computer_limits(&comp, &l);
	CHECK_EQ_INT(l.memory, RK_LIMIT_DEFAULT_MEMORY);
	comp.resources = "{\"memory\":268435456,\"cpus\":0.5,\"pids\":128}";
	rk_computer_limits(&comp, &l);
	CHECK_EQ_INT(l.memory, 256LL << 20);
	CHECK(l.cpus == 0.5);
	CHECK_EQ_INT(l.pids, 128);
	comp.kind = "fake";
	rk_computer_limits(&comp, &l);
	CHECK(l.memory == 0 && l.cpus == 0 && l.pids == 0);
}

/* runs the worker in this process until nothing is pending */
static void drain(struct rk_engine *eng)
{
	struct rk_worker_options o = {.once = 1};
	struct rk_error e;
	rk_worker_run(eng, &o, &e);
}

TEST(lifecycle_through_worker)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	cJSON *body = create_body("life");
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0};
	struct rk_error e;
	int existed;
	REQUIRE(rk_execution_submit(eng, &s, &x, &existed, &e) == 0);
	drain(eng);
	struct rk_execution done = {0};
	REQUIRE(rk_execution_get(eng, x.id, &done, &e) == 0);
	CHECK_EQ_STR(done.state, "succeeded");
	struct rk_computer c = {0};
	REQUIRE(rk_db_computer_get(eng->db, "life", &c, &e) == 0);
	CHECK_EQ_STR(c.state, "running");
	CHECK(c.provider_ref != NULL);
	const char *ops[] = {"pause", "resume", "stop", "resume", "delete"};
	const char *states[] = {"paused", "running", "stopped", "running", NULL};
	for (int i = 0; i < 5; i++) {
		struct rk_submit l = {.op = ops[i], .computer = c.id};
		struct rk_execution y = {0}, z = {0};
		REQUIRE(rk_execution_submit(eng, &l, &y, &existed, &e) == 0);
		drain(eng);
		REQUIRE(rk_execution_get(eng, y.id, &z, &e) == 0);
		CHECK_EQ_STR(z.state, "succeeded");
		struct rk_computer now = {0};
		int r = rk_db_computer_get(eng->db, c.id, &now, &e);
		if (states[i]) {
			CHECK_EQ_INT(r, 0);
			CHECK_EQ_STR(now.state, states[i]);
		} else {
			CHECK_EQ_INT(r, -RK_ENOTFOUND); /* deleted */
		}
		rk_computer_release(&now);
		/* events are numbered 1.. in order */
		struct rk_event *ev;
		size_t n;
		CHECK_EQ_INT(rk_db_events_after(eng->db, y.id, 0, &ev, &n, &e), 0);
		CHECK(n >= 4);
		for (size_t k = 0; k < n; k++)
			CHECK_EQ_INT(ev[k].sequence, (int64_t)k + 1);
		if (n >= 4) {
			CHECK_EQ_STR(ev[0].type, "submitted");
			CHECK_EQ_STR(ev[n - 1].type, "succeeded");
		}
		rk_events_free(ev, n);
		rk_execution_release(&y);
		rk_execution_release(&z);
	}
	cJSON_Delete(body);
	rk_computer_release(&c);
	rk_execution_release(&x);
	rk_execution_release(&done);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(lost_reply_needs_decision)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	setenv("RAKAZO_FAKE_FAULTS", "provision=lost_reply", 1);
	cJSON *body = create_body("lost");
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0}, y = {0};
	struct rk_error e;
	int existed;
	REQUIRE(rk_execution_submit(eng, &s, &x, &existed, &e) == 0);
	drain(eng);
	unsetenv("RAKAZO_FAKE_FAULTS");
	REQUIRE(rk_execution_get(eng, x.id, &y, &e) == 0);
	CHECK_EQ_STR(y.state, "outcome_unknown");
	struct rk_event *ev;
	size_t n;
	CHECK_EQ_INT(rk_db_events_after(eng->db, x.id, 0, &ev, &n, &e), 0);
	CHECK(n > 0 && !strcmp(ev[n - 1].type, "decision_needed"));
	rk_events_free(ev, n);
	/* it blocks further lifecycle commands until decided */
	struct rk_submit p = {.op = "pause", .computer = x.computer_id};
	struct rk_execution z = {0};
	CHECK_EQ_INT(rk_execution_submit(eng, &p, &z, &existed, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(rk_execution_decide(eng, x.id, "maybe", &z, &e), -RK_EUSAGE);
	CHECK_EQ_INT(rk_execution_decide(eng, x.id, "succeeded", &z, &e), 0);
	CHECK_EQ_STR(z.state, "succeeded");
	rk_execution_release(&z);
	CHECK_EQ_INT(rk_execution_decide(eng, x.id, "failed", &z, &e), -RK_ECONFLICT);
	cJSON_Delete(body);
	rk_execution_release(&x);
	rk_execution_release(&y);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(recovery_after_crash)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	struct rk_error e;
	int existed;
	/* two creates, left "running" as if a worker died: one before, one during its provider call */
	struct rk_execution a = {0}, b = {0};
	cJSON *ba = create_body("before"), *bb = create_body("during");
	struct rk_submit sa = {.op = "create", .body = ba}, sb = {.op = "create", .body = bb};
	REQUIRE(rk_execution_submit(eng, &sa, &a, &existed, &e) == 0);
	REQUIRE(rk_execution_submit(eng, &sb, &b, &existed, &e) == 0);
	free(a.state);
	a.state = rk_xstrdup("running");
	free(b.state);
	b.state = rk_xstrdup("running");
	b.provider_call_at = 12345;
	CHECK_EQ_INT(rk_db_execution_update(eng->db, &a, &e), 0);
	CHECK_EQ_INT(rk_db_execution_update(eng->db, &b, &e), 0);
	CHECK_EQ_INT(rk_execution_recover(eng, NULL, NULL, &e), 0);
	struct rk_execution ra = {0}, rb = {0};
	CHECK_EQ_INT(rk_execution_get(eng, a.id, &ra, &e), 0);
	CHECK_EQ_INT(rk_execution_get(eng, b.id, &rb, &e), 0);
	CHECK_EQ_STR(ra.state, "pending");
	CHECK_EQ_STR(rb.state, "outcome_unknown");
	drain(eng);
	rk_execution_release(&ra);
	CHECK_EQ_INT(rk_execution_get(eng, a.id, &ra, &e), 0);
	CHECK_EQ_STR(ra.state, "succeeded");
	cJSON_Delete(ba);
	cJSON_Delete(bb);
	rk_execution_release(&a);
	rk_execution_release(&b);
	rk_execution_release(&ra);
	rk_execution_release(&rb);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(cancel_pending)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	cJSON *body = create_body("gone");
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0}, y = {0};
	struct rk_error e;
	int existed;
	REQUIRE(rk_execution_submit(eng, &s, &x, &existed, &e) == 0);
	CHECK_EQ_INT(rk_execution_cancel(eng, x.id, &y, &e), 0);
	CHECK_EQ_STR(y.state, "cancelled");
	rk_execution_release(&y);
	CHECK_EQ_INT(rk_execution_cancel(eng, x.id, &y, &e), -RK_ECONFLICT);
	/* the name is free again */
	struct rk_computer c = {0};
	CHECK_EQ_INT(rk_db_computer_get(eng->db, "gone", &c, &e), -RK_ENOTFOUND);
	cJSON_Delete(body);
	rk_execution_release(&x);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(lease_fencing)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	struct rk_lease l1 = {0}, l2 = {0};
	struct rk_error e;
	REQUIRE(rk_lease_acquire(eng, "cmp_x", "bot1", "alice", 1000, &l1, &e) == 0);
	CHECK_EQ_INT(l1.fence, 1);
	CHECK_EQ_INT(rk_lease_acquire(eng, "cmp_x", "bot1", "bob", 1000, &l2, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(rk_lease_fenced_write(eng, "cmp_x", "bot1", 1, "w1", &e), 0);
	/* another bot on the same computer has its own lease */
	REQUIRE(rk_lease_acquire(eng, "cmp_x", "bot2", "bob", 1000, &l2, &e) == 0);
	CHECK_EQ_INT(l2.fence, 1);
	rk_lease_release_record(&l2);
	rk_sleep_ms(1100);
	REQUIRE(rk_lease_acquire(eng, "cmp_x", "bot1", "bob", 60000, &l2, &e) == 0);
	CHECK_EQ_INT(l2.fence, 2);
	CHECK_EQ_INT(rk_lease_fenced_write(eng, "cmp_x", "bot1", 1, "late", &e), -RK_ESTALE);
	CHECK_EQ_INT(rk_lease_renew(eng, "cmp_x", "bot1", 1, 1000, &e), -RK_ESTALE);
	CHECK_EQ_INT(rk_lease_release(eng, "cmp_x", "bot1", 1, &e), -RK_ESTALE);
	CHECK_EQ_INT(rk_lease_renew(eng, "cmp_x", "bot1", 2, 60000, &e), 0);
	CHECK_EQ_INT(rk_lease_release(eng, "cmp_x", "bot1", 2, &e), 0);
	/* released: the fence keeps growing, never reused */
	struct rk_lease l3 = {0};
	REQUIRE(rk_lease_acquire(eng, "cmp_x", "bot1", "carol", 60000, &l3, &e) == 0);
	CHECK_EQ_INT(l3.fence, 3);
	rk_lease_release_record(&l1);
	rk_lease_release_record(&l2);
	rk_lease_release_record(&l3);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

TEST(lease_many_processes)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	rk_engine_free(eng);
	/* 16 processes race for the same lease, 10 rounds, short ttl; each winner
	 * records a fenced write. Never two holders: every fence wins once. */
	enum { PROCS = 16 };
	int pipes[PROCS][2];
	for (int i = 0; i < PROCS; i++) {
		(void)!pipe(pipes[i]);
		pid_t pid = fork();
		if (pid == 0) {
			close(pipes[i][0]);
			struct rk_engine *me = open_engine();
			int wins = 0;
			for (int round = 0; me && round < 40; round++) {
				struct rk_lease l = {0};
				struct rk_error e;
				char holder[32];
				snprintf(holder, sizeof(holder), "p%d", i);
				if (rk_lease_acquire(me, "cmp_race", "bot", holder, 1000, &l, &e) == 0) {
					if (rk_lease_fenced_write(me, "cmp_race", "bot", l.fence, holder, &e) == 0)
						wins++;
					rk_lease_release(me, "cmp_race", "bot", l.fence, &e);
				}
				rk_lease_release_record(&l);
			}
			(void)!write(pipes[i][1], &wins, sizeof(wins));
			rk_engine_free(me);
			_exit(0);
		}
		close(pipes[i][1]);
	}
	int total = 0;
	for (int i = 0; i < PROCS; i++) {
		int w = 0;
		(void)!read(pipes[i][0], &w, sizeof(w));
		close(pipes[i][0]);
		total += w;
	}
	while (wait(NULL) > 0)
		;
	eng = open_engine();
	REQUIRE(eng != NULL);
	struct rk_lease cur = {0};
	struct rk_error e;
	REQUIRE(rk_db_lease_get(eng->db, "cmp_race", "bot", &cur, &e) == 0);
	/* every acquisition took a fresh fence and made exactly one write */
	CHECK(total > 0);
	CHECK_EQ_INT(cur.fence, total);
	struct rk_stmt *st;
	rk_stmt_prepare_v2(eng->db,
			   "SELECT count(*), count(DISTINCT fence) FROM lease_writes WHERE computer_id='cmp_race'", -1,
			   &st, NULL);
	REQUIRE(rk_stmt_step(st) == RK_SQL_ROW);
	CHECK_EQ_INT(rk_stmt_column_int(st, 0), total);
	CHECK_EQ_INT(rk_stmt_column_int(st, 1), total);
	rk_stmt_finalize(st);
	rk_lease_release_record(&cur);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* Regression: a machine that vanished under a "running" record (a killed
 * container) is brought back by a saved resume before work runs. */
TEST(vanished_machine_is_resumed)
{
	char *dir = new_data_dir();
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	cJSON *body = create_body("vanish");
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0};
	struct rk_error e;
	int existed;
	REQUIRE(rk_execution_submit(eng, &s, &x, &existed, &e) == 0);
	drain(eng);
	struct rk_computer c = {0};
	REQUIRE(rk_db_computer_get(eng->db, "vanish", &c, &e) == 0);
	char *old_ref = rk_xstrdup(c.provider_ref);
	char *state = rk_xasprintf("%s/fake/%s/state", dir, c.provider_ref);
	CHECK_EQ_INT(rk_fs_write_atomic(state, "gone\n", 5, 0600, &e), 0);
	/* the worker runs in this process: ensure_running waits on it */
	unsetenv("RAKAZO_NO_WORKER");
	setenv("RAKAZO_SELF", getenv("RAKAZO_TEST_RAKAZO_BIN") ? getenv("RAKAZO_TEST_RAKAZO_BIN") : "/nonexistent", 1);
	pid_t pid = fork();
	if (pid == 0) {
		struct rk_engine *w = open_engine();
		struct rk_worker_options o = {.idle_exit_ms = 3000};
		struct rk_error we;
		rk_worker_run(w, &o, &we);
		_exit(0);
	}
	rk_sleep_ms(200);
	int r = rk_computer_ensure_running(eng, &c, &e);
	if (r)
		printf("  ensure_running: %s\n", e.message);
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_STR(c.state, "running");
	CHECK(c.provider_ref && strcmp(c.provider_ref, old_ref) != 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	setenv("RAKAZO_NO_WORKER", "1", 1);
	free(state);
	free(old_ref);
	cJSON_Delete(body);
	rk_computer_release(&c);
	rk_execution_release(&x);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

int main(void)
{
	rk_engine_hooks_init();
	setenv("RAKAZO_NO_WORKER", "1", 1);
	RUN(migrations_idempotent);
	RUN(unusable_data_dir);
	RUN(submit_same_key_same_execution);
	RUN(command_key_scoped_to_identity);
	RUN(bad_create_bodies);
	RUN(resource_limits);
	RUN(lifecycle_through_worker);
	RUN(lost_reply_needs_decision);
	RUN(recovery_after_crash);
	RUN(cancel_pending);
	RUN(lease_fencing);
	RUN(lease_many_processes);
	RUN(vanished_machine_is_resumed);
	return check_summary("state");
}
