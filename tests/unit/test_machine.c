/* engine/machine/machine: the provider facade. Real SQLite and the fake
 * provider in a temporary DATA_DIR. */

#include <stdlib.h>
#include <string.h>

#include "engine/agent/hooks.h"
#include "engine/machine/execution.h"
#include "engine/machine/machine.h"
#include "engine/machine/worker.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "check.h"
#include "fresh_db.h"

static struct rk_engine *eng;
static struct rk_computer comp;

/* a running fake computer named "facade" */
static int setup(void)
{
	char tmpl[] = "/tmp/rk-machine-XXXXXX";
	char *d = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", d, 1);
	fresh_database();
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0) {
		printf("  engine: %s\n", e.message);
		return -1;
	}
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", "facade");
	cJSON_AddStringToObject(body, "provider", "fake");
	struct rk_submit s = {.op = "create", .body = body};
	struct rk_execution x = {0};
	int existed;
	int r = rk_execution_submit(eng, &s, &x, &existed, &e);
	cJSON_Delete(body);
	rk_execution_release(&x);
	struct rk_worker_options o = {.once = 1};
	if (r == 0)
		r = rk_worker_run(eng, &o, &e);
	if (r == 0)
		r = rk_db_computer_get(eng->db, "facade", &comp, &e);
	if (r)
		printf("  setup: %s\n", e.message);
	return r;
}

TEST(calls_reach_the_provider)
{
	struct rk_machine_ctx mc;
	struct rk_error e;
	REQUIRE(rk_machine_open(&mc, eng, &comp, &e) == 0);
	CHECK(mc.ops != NULL && mc.c == &comp);
	CHECK_EQ_INT(rk_machine_check(&mc, &e), 0);
	enum rk_machine_state st = RK_MACHINE_GONE;
	CHECK_EQ_INT(rk_machine_status(&mc, &st, &e), 0);
	CHECK_EQ_INT(st, RK_MACHINE_RUNNING);
	CHECK_EQ_INT(rk_machine_file_write(&mc, "note.txt", "hello", 5, 0, &e), 0);
	struct rk_buf b;
	rk_buf_init(&b);
	CHECK_EQ_INT(rk_machine_file_read(&mc, "note.txt", 1024, &b, &e), 0);
	CHECK(b.len == 5 && !memcmp(b.data, "hello", 5));
	rk_buf_release(&b);
	rk_machine_ctx_release(&mc);
}

TEST(a_missing_operation_is_unsupported)
{
	/* the fake provider serves no noVNC page of its own */
	struct rk_machine_ctx mc;
	struct rk_error e;
	REQUIRE(rk_machine_open(&mc, eng, &comp, &e) == 0);
	char *url = NULL;
	CHECK_EQ_INT(rk_machine_display_novnc(&mc, 0, &url, &e), -RK_EUNSUPPORTED);
	CHECK(url == NULL);
	CHECK(strstr(e.message, "facade") != NULL);
	CHECK(strstr(e.message, "noVNC") != NULL);
	/* err may be NULL */
	CHECK_EQ_INT(rk_machine_display_novnc(&mc, 0, &url, NULL), -RK_EUNSUPPORTED);
	rk_machine_ctx_release(&mc);
}

TEST(an_unknown_provider_is_unavailable)
{
	struct rk_computer c = comp;
	c.kind = "nope";
	struct rk_machine_ctx mc;
	struct rk_error e;
	CHECK_EQ_INT(rk_machine_open(&mc, eng, &c, &e), -RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "nope") != NULL);
	CHECK_EQ_INT(rk_machine_open(&mc, eng, &c, NULL), -RK_EUNAVAILABLE);
	rk_machine_ctx_release(&mc); /* harmless after a failed open */
}

TEST(a_provider_failure_keeps_its_code_and_message)
{
	struct rk_machine_ctx mc;
	struct rk_error e;
	REQUIRE(rk_machine_open(&mc, eng, &comp, &e) == 0);
	struct rk_buf b;
	rk_buf_init(&b);
	int r = rk_machine_file_read(&mc, "no-such-file", 1024, &b, &e);
	CHECK(r < 0);
	CHECK_EQ_INT(r, -(int)e.code);
	CHECK(e.message[0] != '\0');
	rk_buf_release(&b);
	rk_machine_ctx_release(&mc);
}

TEST(one_machine_open_for_several_calls)
{
	struct rk_machine_ctx mc;
	struct rk_error e;
	REQUIRE(rk_machine_open(&mc, eng, &comp, &e) == 0);
	/* stop is idempotent: twice is fine, and the machine is down after */
	CHECK_EQ_INT(rk_machine_stop(&mc, &e), 0);
	CHECK_EQ_INT(rk_machine_stop(&mc, &e), 0);
	enum rk_machine_state st = RK_MACHINE_RUNNING;
	CHECK_EQ_INT(rk_machine_status(&mc, &st, &e), 0);
	CHECK(st != RK_MACHINE_RUNNING);
	rk_machine_ctx_release(&mc);
}

int main(void)
{
	rk_engine_hooks_init();
	if (setup() != 0) {
		printf("FAIL setup\n");
		return 1;
	}
	RUN(calls_reach_the_provider);
	RUN(a_missing_operation_is_unsupported);
	RUN(an_unknown_provider_is_unavailable);
	RUN(a_provider_failure_keeps_its_code_and_message);
	RUN(one_machine_open_for_several_calls); /* last: it stops the machine */
	char *dir = rk_xstrdup(eng->data_dir);
	rk_computer_release(&comp);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
	return check_summary("machine");
}
