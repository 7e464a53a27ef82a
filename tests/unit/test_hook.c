/* engine/machine/hook: the table a lower module raises its events through,
 * rk_engine_hooks_init's answers, and the lifecycle, worker and display
 * raising them. Real SQLite and the fake provider in a temporary DATA_DIR. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agent/hooks.h"
#include "engine/agent/run.h"
#include "engine/gateway/gateway.h"
#include "engine/machine/checkpoint.h"
#include "engine/machine/display.h"
#include "engine/machine/execution.h"
#include "engine/machine/hook.h"
#include "engine/machine/team.h"
#include "engine/machine/worker.h"
#include "engine/state/db.h"
#include "engine/state/engine.h"
#include "engine/util/fs.h"
#include "check.h"
#include "fresh_db.h"

static struct rk_engine *open_engine(void)
{
	char tmpl[] = "/tmp/rk-hook-XXXXXX";
	char *d = mkdtemp(tmpl);
	setenv("RAKAZO_DATA_DIR", d, 1);
	fresh_database();
	struct rk_engine *eng = NULL;
	struct rk_error e;
	if (rk_engine_open(&eng, &e) != 0)
		printf("  engine: %s\n", e.message);
	return eng;
}

static void close_engine(struct rk_engine *eng)
{
	char *dir = rk_xstrdup(eng->data_dir);
	rk_engine_free(eng);
	rk_fs_remove_tree(dir, NULL);
	free(dir);
}

/* --- the table ------------------------------------------------------------------ */

static int waited, reaped;

static int stub_waiting(struct rk_engine *eng, struct rk_error *err)
{
	waited++;
	return 0;
}

static int stub_reap(struct rk_engine *eng, int *marked, struct rk_error *err)
{
	reaped++;
	*marked = 2;
	return 0;
}

TEST(unanswered_event_is_an_error)
{
	rk_hooks_reset();
	struct rk_error e;
	rk_error_clear(&e);
	CHECK_EQ_INT(RK_HOOK(display_closing, &e, NULL, "cmp_x", 1, &e), -RK_EFAILED);
	CHECK(strstr(e.message, "display_closing") != NULL);
	/* the check names the first event nothing answers */
	CHECK_EQ_INT(rk_hooks_check(&e), -RK_EFAILED);
	CHECK(strstr(e.message, "before_provision") != NULL);
	/* err may be NULL */
	CHECK_EQ_INT(RK_HOOK(waiting, NULL, NULL, NULL), -RK_EFAILED);
}

TEST(registrations_merge)
{
	rk_hooks_reset();
	waited = reaped = 0;
	rk_hooks_register(&(struct rk_hooks){.waiting = stub_waiting});
	rk_hooks_register(&(struct rk_hooks){.reap_runs = stub_reap});
	/* a part without a field leaves the earlier answer alone */
	rk_hooks_register(&(struct rk_hooks){0});
	CHECK(rk_hooks()->waiting == stub_waiting);
	CHECK(rk_hooks()->reap_runs == stub_reap);
	CHECK(rk_hooks()->display_closing == NULL);
	int marked = 0;
	CHECK_EQ_INT(RK_HOOK(waiting, NULL, NULL, NULL), 0);
	CHECK_EQ_INT(RK_HOOK(reap_runs, NULL, NULL, &marked, NULL), 0);
	CHECK_EQ_INT(waited, 1);
	CHECK_EQ_INT(reaped, 1);
	CHECK_EQ_INT(marked, 2);
}

TEST(engine_start_answers_every_event)
{
	rk_hooks_reset();
	rk_engine_hooks_init();
	rk_engine_hooks_init(); /* again: harmless */
	struct rk_error e;
	CHECK_EQ_INT(rk_hooks_check(&e), 0);
	const struct rk_hooks *h = rk_hooks();
	CHECK(h->before_provision == rk_checkpoint_before_provision);
	CHECK(h->after_provision == rk_checkpoint_after_provision);
	CHECK(h->after_resume == rk_checkpoint_after_resume);
	CHECK(h->before_lifecycle == rk_checkpoint_before_lifecycle);
	CHECK(h->deleted == rk_checkpoint_forget);
	CHECK(h->waiting == rk_worker_ensure);
	CHECK(h->computer_down == rk_team_screens_forget);
	CHECK(h->display_closing == rk_gateway_teardown_slot);
	CHECK(h->control_released == rk_gateway_revoke_control);
	CHECK(h->reap_runs == rk_run_reap);
	CHECK(h->resume_runs == rk_run_auto_resume);
}

/* --- raised by the lifecycle, the worker and display -------------------------------- */

static int provisions, resumes, stops, deletes;
static char stopped_op[16];
static int refuse_stop;

static int count_before_provision(struct rk_engine *eng, const struct rk_computer *c, cJSON *result,
				  struct rk_error *err)
{
	provisions++;
	return rk_checkpoint_before_provision(eng, c, result, err);
}

static int count_after_resume(struct rk_engine *eng, const struct rk_computer *c, const struct rk_machine_ctx *mc,
			      cJSON *result, struct rk_error *err)
{
	resumes++;
	return rk_checkpoint_after_resume(eng, c, mc, result, err);
}

static int count_before_lifecycle(struct rk_engine *eng, const struct rk_computer *c, const char *op,
				  struct rk_error *err)
{
	stops++;
	snprintf(stopped_op, sizeof(stopped_op), "%s", op);
	if (refuse_stop)
		return rk_error_set(err, RK_EIO, "the checkpoint failed (test)");
	return rk_checkpoint_before_lifecycle(eng, c, op, err);
}

static int count_deleted(struct rk_engine *eng, const struct rk_computer *c, struct rk_error *err)
{
	deletes++;
	return rk_checkpoint_forget(eng, c, err);
}

static void drain(struct rk_engine *eng)
{
	struct rk_worker_options o = {.once = 1};
	struct rk_error e;
	if (rk_worker_run(eng, &o, &e) != 0)
		printf("  worker: %s\n", e.message);
}

/* submits op on computer (NULL: a create of "hooked") and runs it; the execution's final state */
static char *run_op(struct rk_engine *eng, const char *op, const char *computer)
{
	cJSON *body = NULL;
	if (!computer) {
		body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "name", "hooked");
		cJSON_AddStringToObject(body, "provider", "fake");
	}
	struct rk_submit s = {.op = op, .computer = computer, .body = body};
	struct rk_execution x = {0}, done = {0};
	struct rk_error e;
	int existed;
	char *state = NULL;
	if (rk_execution_submit(eng, &s, &x, &existed, &e) == 0) {
		drain(eng);
		if (rk_execution_get(eng, x.id, &done, &e) == 0)
			state = rk_xstrdup(done.state);
	} else {
		printf("  submit %s: %s\n", op, e.message);
	}
	rk_execution_release(&x);
	rk_execution_release(&done);
	cJSON_Delete(body);
	return state;
}

static char *computer_state(struct rk_engine *eng)
{
	struct rk_computer c = {0};
	struct rk_error e;
	char *s = rk_db_computer_get(eng->db, "hooked", &c, &e) == 0 ? rk_xstrdup(c.state) : NULL;
	rk_computer_release(&c);
	return s;
}

TEST(worker_refuses_to_start_without_hooks)
{
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	rk_hooks_reset();
	struct rk_worker_options o = {.once = 1};
	struct rk_error e;
	CHECK_EQ_INT(rk_worker_run(eng, &o, &e), -RK_EFAILED);
	CHECK(strstr(e.message, "rk_engine_hooks_init") != NULL);
	rk_engine_hooks_init();
	CHECK_EQ_INT(rk_worker_run(eng, &o, &e), 0);
	close_engine(eng);
}

TEST(lifecycle_raises_its_hooks)
{
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	rk_hooks_reset();
	rk_engine_hooks_init();
	rk_hooks_register(&(struct rk_hooks){.before_provision = count_before_provision,
					     .after_resume = count_after_resume,
					     .before_lifecycle = count_before_lifecycle,
					     .deleted = count_deleted});
	provisions = resumes = stops = deletes = refuse_stop = 0;
	char *st = run_op(eng, "create", NULL);
	CHECK_EQ_STR(st, "succeeded");
	free(st);
	CHECK_EQ_INT(provisions, 1);
	st = run_op(eng, "pause", "hooked");
	CHECK_EQ_STR(st, "succeeded");
	free(st);
	CHECK_EQ_INT(stops, 1);
	CHECK_EQ_STR(stopped_op, "pause");
	st = run_op(eng, "resume", "hooked");
	CHECK_EQ_STR(st, "succeeded");
	free(st);
	CHECK_EQ_INT(resumes + provisions, 2); /* a resume of the machine, or a new one */

	/* a stop whose checkpoint fails leaves the machine as it is */
	refuse_stop = 1;
	st = run_op(eng, "stop", "hooked");
	CHECK_EQ_STR(st, "failed");
	free(st);
	CHECK_EQ_STR(stopped_op, "stop");
	st = computer_state(eng);
	CHECK_EQ_STR(st, "running");
	free(st);
	refuse_stop = 0;

	st = run_op(eng, "delete", "hooked");
	CHECK_EQ_STR(st, "succeeded");
	free(st);
	CHECK_EQ_INT(deletes, 1);
	rk_engine_hooks_init();
	close_engine(eng);
}

static int closing_display = -1;
static char closing_computer[32];

static int refuse_closing(struct rk_engine *eng, const char *computer_id, int display, struct rk_error *err)
{
	closing_display = display;
	snprintf(closing_computer, sizeof(closing_computer), "%s", computer_id);
	return rk_error_set(err, RK_ECONFLICT, "clients of display %d are still connected (test)", display);
}

TEST(display_close_asks_the_gateway_first)
{
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	rk_engine_hooks_init();
	rk_hooks_register(&(struct rk_hooks){.display_closing = refuse_closing});
	struct rk_computer c = {.id = "cmp_disp", .name = "disp", .kind = "fake", .state = "running"};
	struct rk_error e;
	/* the answer's refusal keeps the display: nothing else is tried */
	CHECK_EQ_INT(rk_display_close(eng, &c, 3, &e), -RK_ECONFLICT);
	CHECK_EQ_INT(closing_display, 3);
	CHECK_EQ_STR(closing_computer, "cmp_disp");
	rk_engine_hooks_init();
	close_engine(eng);
}

TEST(worker_pass_reaps_runs_through_its_hook)
{
	struct rk_engine *eng = open_engine();
	REQUIRE(eng != NULL);
	rk_engine_hooks_init();
	reaped = 0;
	rk_hooks_register(&(struct rk_hooks){.reap_runs = stub_reap});
	drain(eng);
	CHECK_EQ_INT(reaped, 1);
	rk_engine_hooks_init();
	close_engine(eng);
}

int main(void)
{
	RUN(unanswered_event_is_an_error);
	RUN(registrations_merge);
	RUN(engine_start_answers_every_event);
	RUN(worker_refuses_to_start_without_hooks);
	RUN(lifecycle_raises_its_hooks);
	RUN(display_close_asks_the_gateway_first);
	RUN(worker_pass_reaps_runs_through_its_hook);
	return check_summary("hook");
}
