/* Unit tests for engine/tools (schemas, error results) and engine/db_runs
 * (the runs table). The tools against real computers are in tests/cli/run.bats. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/state/db_runs.h"
#include "engine/agent/tools.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "check.h"

static cJSON *parse_error(const struct rk_tool_result *r)
{
	cJSON *doc = cJSON_Parse(r->text);
	return doc ? cJSON_GetObjectItemCaseSensitive(doc, "error") ? doc : (cJSON_Delete(doc), NULL) : NULL;
}

/* r is an error result with code whose message holds msg (case i); released. */
static void check_error(struct rk_tool_result *r, size_t i, const char *code, const char *msg)
{
	CHECK(r->is_error);
	CHECK_EQ_STR(r->error_code, code);
	CHECK(r->png == NULL && r->frame_hash[0] == 0);
	cJSON *doc = parse_error(r);
	CHECK(doc != NULL);
	const char *m = doc ? rk_json_string(cJSON_GetObjectItemCaseSensitive(doc, "error"), "message", "") : "";
	if (!strstr(m, msg))
		printf("  case %zu: message \"%s\" lacks \"%s\"\n", i, m, msg);
	CHECK(strstr(m, msg) != NULL);
	cJSON_Delete(doc);
	rk_tool_result_release(r);
}

TEST(definitions)
{
	size_t n, nd;
	const struct rk_model_tool *all = rk_tools_definitions(1, &n);
	const struct rk_model_tool *text = rk_tools_definitions(0, &nd);
	CHECK_EQ_INT(n, 16); /* 10 + request_secret, secret_request, memory_read/write/search, create_space */
	CHECK_EQ_INT(nd, 12);
	CHECK_EQ_STR(all[0].name, "computer_observe");
	CHECK_EQ_STR(all[1].name, "computer_act");
	CHECK_EQ_STR(all[2].name, "open_path");
	CHECK_EQ_STR(all[3].name, "launch_app");
	/* without a desktop: no graphical tool, but attach_file */
	int attach = 0;
	for (size_t i = 0; i < nd; i++) {
		CHECK(strncmp(text[i].name, "computer_", 9) != 0);
		CHECK(strcmp(text[i].name, "open_path") && strcmp(text[i].name, "launch_app"));
		attach |= !strcmp(text[i].name, "attach_file");
	}
	CHECK(attach);
	/* the schemas require what the tools need */
	const char *required[][2] = {{"open_path", "path"}, {"launch_app", "application"}, {"attach_file", "path"}};
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < n; i++) {
			if (strcmp(all[i].name, required[k][0]))
				continue;
			const cJSON *req = cJSON_GetObjectItemCaseSensitive(all[i].parameters, "required");
			CHECK(cJSON_GetArraySize(req) == 1 &&
			      !strcmp(cJSON_GetArrayItem(req, 0)->valuestring, required[k][1]));
		}
	for (size_t i = 0; i < n; i++) {
		CHECK(cJSON_IsObject(all[i].parameters));
		CHECK(all[i].description && all[i].description[0]);
		CHECK(rk_tools_known(all[i].name));
	}
	/* built once: the same objects every time */
	CHECK(rk_tools_definitions(1, &n)[2].parameters == all[2].parameters);
	CHECK(!rk_tools_known("nope"));
}

TEST(error_results)
{
	struct rk_computer c = {.id = "cmp_x", .name = "x", .kind = "fake", .desktop = 0};
	struct rk_tools_ctx ctx = {.computer = &c};
	struct rk_tool_result r;
	const struct {
		const char *name, *args, *code, *msg;
	} cases[] = {
		{"no_such_tool", "{}", "not_found", "unknown tool 'no_such_tool'"},
		{NULL, "{}", "not_found", "unknown tool"},
		{"shell", "{\"command\":", "invalid_argument", "shell"},
		{"shell", "[1]", "invalid_argument", "shell"},
		{"shell", "{}", "invalid_argument", "command is required"},
		{"shell", "{\"command\":\"\"}", "invalid_argument", "command is empty"},
		{"shell", "{\"command\":\"x\",\"yield_ms\":5}", "invalid_argument", "yield_ms"},
		{"read_file", "{\"path\":\"a\",\"max_bytes\":250001}", "invalid_argument", "max_bytes"},
		{"write_file", "{\"path\":\"a\"}", "invalid_argument", "content is required"},
		{"write_file", "{\"path\":\"a\",\"content\":\"x\",\"encoding\":\"latin1\"}", "invalid_argument", "utf8 or base64"},
		{"write_file", "{\"path\":\"a\",\"content\":\"!!\",\"encoding\":\"base64\"}", "invalid_argument", "base64"},
		{"write_stdin", "{\"session\":\"s\"}", "invalid_argument", "chars is required"},
		{"computer_observe", "{}", "unsupported", "has no desktop"},
		{"computer_act", "{\"actions\":[]}", "unsupported", "has no desktop"},
		{"open_path", "{}", "invalid_argument", "path is required"},
		{"open_path", "{\"path\":\"a.html\"}", "unsupported", "has no desktop"},
		{"launch_app", "{}", "invalid_argument", "application is required"},
		{"launch_app", "{\"application\":\"xterm; rm -rf ~\"}", "invalid_argument", "a program name"},
		{"launch_app", "{\"application\":\"-e\"}", "invalid_argument", "a program name"},
		{"launch_app", "{\"application\":\"xterm\",\"uri\":\"--help\"}", "invalid_argument", "uri"},
		{"launch_app", "{\"application\":\"xterm\"}", "unsupported", "has no desktop"},
		{"attach_file", "{}", "invalid_argument", "path is required"},
		{"attach_file", "{\"path\":\"tool.exe\"}", "invalid_argument", "unsupported attachment type"},
		{"attach_file", "{\"path\":\"noext\"}", "invalid_argument", "unsupported attachment type"},
		{"attach_file", "{\"path\":\"notes/a.txt\"}", "unsupported", "only a run keeps attachments"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(rk_tools_call(&ctx, cases[i].name, cases[i].args, &r), 0);
		check_error(&r, i, cases[i].code, cases[i].msg);
	}
}

/* The browser tools check their arguments, and whether the computer has a
 * page browser, before any lease, slot or computer is touched (no engine
 * here: anything further would crash). */
TEST(browser_args)
{
	struct rk_computer c = {.id = "cmp_x", .name = "x", .kind = "fake", .desktop = 1};
	const struct {
		const char *bot, *name, *args, *code, *msg;
	} cases[] = {
		{NULL, "browser_act", "{\"action\":\"fill_secret\",\"ref\":\"e1\"}", "invalid_argument", "name is required"},
		{NULL, "browser_act", "{\"action\":\"fill_secret\",\"name\":\"n\"}", "invalid_argument", "ref is required"},
		{NULL, "browser_act", "{\"action\":\"fill_secret\",\"ref\":\"e1\",\"name\":\"n\",\"part\":\"pin\"}",
		 "invalid_argument", "part must be username or password"},
		{NULL, "browser_navigate", "{\"url\":\"http://127.0.0.1/\"}", "unsupported", "has no page browser"},
		{"alpha", "browser_snapshot", "{}", "unsupported", "has no page browser"},
		{"alpha", "browser_act", "{\"action\":\"fill_secret\",\"ref\":\"e1\",\"name\":\"n\"}", "unsupported",
		 "has no page browser"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rk_tools_ctx ctx = {.computer = &c, .bot_id = cases[i].bot};
		struct rk_tool_result r;
		CHECK_EQ_INT(rk_tools_call(&ctx, cases[i].name, cases[i].args, &r), 0);
		check_error(&r, i, cases[i].code, cases[i].msg);
	}
}

TEST(runs_table)
{
	char tmpl[] = "/tmp/rk-test-runs-XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	struct rk_db *db;
	struct rk_error e;
	CHECK_EQ_INT(rk_db_open(dir, &db, &e), 0);
	struct rk_run_row a = {.id = "run_a", .task = "first", .state = "queued", .computer_id = "cmp_1",
			       .created_at = 1000};
	struct rk_run_row b = {.id = "run_b", .task = "second", .state = "queued", .computer_id = "cmp_2",
			       .model = "m", .created_at = 2000};
	CHECK_EQ_INT(rk_db_run_insert(db, &a, &e), 0);
	CHECK_EQ_INT(rk_db_run_insert(db, &b, &e), 0);
	CHECK_EQ_INT(rk_db_run_insert(db, &a, &e), -RK_ECONFLICT);
	struct rk_run_row bad = {.id = "run_c", .task = "x", .state = "sleeping"};
	CHECK_EQ_INT(rk_db_run_insert(db, &bad, &e), -RK_EINVALID);

	CHECK_EQ_INT(rk_db_run_set_state(db, "run_a", "running", 42, &e), 0);
	struct rk_run_usage u = {.input = 100, .output = 20, .cached = 70, .cache_write = 25, .images = 4, .cost_micro = -1};
	CHECK_EQ_INT(rk_db_run_progress(db, "run_a", 3, &u, &e), 0);
	/* no price: the cost is NULL, read back as -1 */
	struct rk_run_row nc = {0};
	CHECK_EQ_INT(rk_db_run_get(db, "run_a", &nc, &e), 0);
	CHECK_EQ_INT(nc.cost_micro, -1);
	CHECK_EQ_INT(nc.images, 4);
	rk_run_row_release(&nc);
	u.cost_micro = 12345;
	CHECK_EQ_INT(rk_db_run_progress(db, "run_a", 3, &u, &e), 0);
	CHECK_EQ_INT(rk_db_run_heartbeat(db, "run_a", &e), 0);
	CHECK_EQ_INT(rk_db_run_finish(db, "run_a", "running", NULL, NULL, &e), -RK_EINVALID);
	CHECK_EQ_INT(rk_db_run_finish(db, "run_a", "completed", "done", NULL, &e), 0);
	CHECK_EQ_INT(rk_db_run_heartbeat(db, "run_zz", &e), -RK_ENOTFOUND);
	CHECK_EQ_INT(rk_db_run_set_state(db, "run_zz", "failed", -1, &e), -RK_ENOTFOUND);

	struct rk_run_row r = {0};
	CHECK_EQ_INT(rk_db_run_get(db, "run_a", &r, &e), 0);
	CHECK_EQ_STR(r.state, "completed");
	CHECK_EQ_STR(r.final_answer, "done");
	CHECK(r.error == NULL && r.bot_id == NULL);
	CHECK_EQ_INT(r.steps, 3);
	CHECK_EQ_INT(r.input_tokens, 100);
	CHECK_EQ_INT(r.output_tokens, 20);
	CHECK_EQ_INT(r.cached_tokens, 70);
	CHECK_EQ_INT(r.cache_write_tokens, 25);
	CHECK_EQ_INT(r.images, 4);
	CHECK_EQ_INT(r.cost_micro, 12345);
	CHECK_EQ_INT(r.worker_pid, 42);
	CHECK(r.started_at > 0 && r.finished_at >= r.started_at && r.heartbeat_at > 0);
	rk_run_row_release(&r);
	CHECK_EQ_INT(rk_db_run_get(db, "run_zz", &r, &e), -RK_ENOTFOUND);

	struct rk_run_row *rows;
	size_t n;
	CHECK_EQ_INT(rk_db_run_list(db, NULL, 0, &rows, &n, &e), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(rows[0].id, "run_b"); /* newest first */
		CHECK_EQ_INT(rows[0].started_at, -1);
	}
	rk_run_rows_free(rows, n);
	CHECK_EQ_INT(rk_db_run_list(db, "cmp_1", 0, &rows, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	rk_run_rows_free(rows, n);
	CHECK_EQ_INT(rk_db_run_list(db, NULL, 1, &rows, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	rk_run_rows_free(rows, n);

	CHECK(rk_run_state_valid("waiting_takeover") && !rk_run_state_valid("done") && !rk_run_state_valid(NULL));
	CHECK(rk_run_state_is_final("cancelled") && !rk_run_state_is_final("queued"));
	rk_db_close(db);
	rk_fs_remove_tree(dir, &e);
}

/* Auto-resume's claim: only an interrupted run whose process died or went
 * quiet, with a resume left, is taken, and only once (the conditional
 * update two racing workers meet). */
TEST(runs_auto_resume_claim)
{
	char tmpl[] = "/tmp/rk-test-claim-XXXXXX";
	char *dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	struct rk_db *db;
	struct rk_error e;
	CHECK_EQ_INT(rk_db_open(dir, &db, &e), 0);
	struct rk_run_row gone = {.id = "run_gone", .task = "t", .state = "queued", .auto_resumes_left = 1};
	struct rk_run_row off = {.id = "run_off", .task = "t", .state = "queued"};
	struct rk_run_row cut = {.id = "run_cut", .task = "t", .state = "queued", .auto_resumes_left = 1};
	CHECK_EQ_INT(rk_db_run_insert(db, &gone, &e), 0);
	CHECK_EQ_INT(rk_db_run_insert(db, &off, &e), 0);
	CHECK_EQ_INT(rk_db_run_insert(db, &cut, &e), 0);
	const char *ids[] = {"run_gone", "run_off", "run_cut"};
	for (size_t i = 0; i < 3; i++) {
		struct rk_run_row r = {0};
		CHECK_EQ_INT(rk_db_run_get(db, ids[i], &r, &e), 0);
		CHECK_EQ_INT(rk_db_run_mark_interrupted(db, ids[i], r.heartbeat_at, i == 2 ? "interrupted" : "worker_gone",
							"x", &e),
			     1);
		rk_run_row_release(&r);
	}
	/* a live run is none of them; Ctrl-C's interruption and an opted-out run neither */
	struct rk_run_row *rows;
	size_t n;
	CHECK_EQ_INT(rk_db_run_list_auto_resumable(db, &rows, &n, &e), 0);
	CHECK_EQ_INT(n, 1);
	if (n == 1)
		CHECK_EQ_STR(rows[0].id, "run_gone");
	rk_run_rows_free(rows, n);
	CHECK_EQ_INT(rk_db_run_claim_auto_resume(db, "run_off", &e), 0);
	CHECK_EQ_INT(rk_db_run_claim_auto_resume(db, "run_cut", &e), 0);
	CHECK_EQ_INT(rk_db_run_claim_auto_resume(db, "run_gone", &e), 1);
	CHECK_EQ_INT(rk_db_run_claim_auto_resume(db, "run_gone", &e), 0); /* the second worker */
	struct rk_run_row r = {0};
	CHECK_EQ_INT(rk_db_run_get(db, "run_gone", &r, &e), 0);
	CHECK_EQ_STR(r.state, "queued");
	CHECK_EQ_INT(r.auto_resumes_left, 0);
	/* dies again: interrupted, and no resume is left */
	CHECK_EQ_INT(rk_db_run_mark_interrupted(db, "run_gone", r.heartbeat_at, "worker_gone", "x", &e), 1);
	rk_run_row_release(&r);
	CHECK_EQ_INT(rk_db_run_list_auto_resumable(db, &rows, &n, &e), 0);
	CHECK_EQ_INT(n, 0);
	rk_run_rows_free(rows, n);
	CHECK_EQ_INT(rk_db_run_claim_auto_resume(db, "run_gone", &e), 0);
	rk_db_close(db);
	rk_fs_remove_tree(dir, &e);
}

int main(void)
{
	RUN(definitions);
	RUN(error_results);
	RUN(browser_args);
	RUN(runs_table);
	RUN(runs_auto_resume_claim);
	return check_summary("tools");
}
