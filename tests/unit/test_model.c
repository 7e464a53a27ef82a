/* engine/model: the chat-completions client against the scripted model
 * server (tests/emulators/model_server) on 127.0.0.1, plus configuration,
 * the conversation's wire shape, pruning and duplicate frames. */

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/screen/picture.h"
#include "engine/agent/model.h"
#include "engine/agent/model_compact.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/id.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "engine/util/time.h"
#include "check.h"

#define KEY "sk-test-SECRET-7f3a91c2"

static char data_dir[PATH_MAX];
static char server_bin[PATH_MAX + 64];

struct server {
	pid_t pid;
	int port;
	char dir[PATH_MAX];
	char report[PATH_MAX + 16];
	int exit_status; /* after server_wait: its exit status, -1 when it had to be killed */
};

static int find_server(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 0;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	/* BUILD/tests/unit/test_model -> BUILD/tests/emulators/model_server */
	snprintf(server_bin, sizeof(server_bin), "%s/../emulators/model_server", self);
	return access(server_bin, X_OK) == 0;
}

/* Starts the server on a scenario; 0 on success. */
static int server_start(struct server *s, const char *scenario)
{
	memset(s, 0, sizeof(*s));
	char tmpl[] = "/tmp/rk-model-XXXXXX";
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(s->dir, sizeof(s->dir), "%s", tmpl);
	char *sc = rk_path_join(s->dir, "scenario.json");
	char *log = rk_path_join(s->dir, "server.log");
	snprintf(s->report, sizeof(s->report), "%s/report.json", s->dir);
	rk_fs_write_atomic(sc, scenario, strlen(scenario), 0600, NULL);
	int p[2];
	if (pipe(p) != 0)
		return -1;
	s->pid = fork();
	if (s->pid == 0) {
		dup2(p[1], 1);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		close(p[0]);
		execl(server_bin, server_bin, sc, "--report", s->report, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	free(sc);
	free(log);
	char line[200];
	size_t len = 0;
	while (len < sizeof(line) - 1) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		if (poll(&pfd, 1, 10000) <= 0)
			break;
		ssize_t n = read(p[0], line + len, 1);
		if (n <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(p[0]);
	const char *prefix = "listening on http://127.0.0.1:";
	if (strncmp(line, prefix, strlen(prefix)) != 0) {
		printf("  model_server did not start: \"%s\" (log in %s)\n", line, s->dir);
		return -1;
	}
	s->port = atoi(line + strlen(prefix));
	return s->port > 0 ? 0 : -1;
}

/* Waits for the server to end by itself (it does after its last step);
 * with stop, sends SIGTERM first. Returns the report (caller frees). */
static cJSON *server_wait(struct server *s, int stop)
{
	if (s->pid <= 0)
		return NULL;
	if (stop)
		kill(s->pid, SIGTERM);
	int st = 0;
	s->exit_status = -1;
	for (int i = 0; i < 500; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			s->pid = 0;
			break;
		}
		if (i == 250)
			kill(s->pid, SIGTERM);
		rk_sleep_ms(20);
	}
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	cJSON *doc = NULL;
	if (rk_fs_read_all(s->report, 16u << 20, &b, NULL) == 0)
		doc = cJSON_ParseWithLength(b.data, b.len);
	rk_buf_release(&b);
	if (!getenv("RAKAZO_KEEP_TMP"))
		rk_fs_remove_tree(s->dir, NULL);
	return doc;
}

static int report_served(const cJSON *rep)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rep, "served");
	return cJSON_IsNumber(v) ? v->valueint : -1;
}

static int report_ok(const cJSON *rep)
{
	int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"));
	if (!ok) {
		char *t = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(rep, "failures"));
		printf("  server failures: %s\n", t ? t : "(no report)");
		free(t);
	}
	return ok;
}

static void config_for(struct rk_model_config *cfg, int port)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.base_url = url;
	f.model = "scripted";
	f.api_key = KEY;
	struct rk_error e;
	if (rk_model_config_load(&f, data_dir, cfg, &e) != 0)
		printf("  config: %s\n", e.message);
	cfg->backoff_ms = 10;
	cfg->timeout_ms = 10000;
}

/* A small PNG of one color; shade makes distinct frames. */
static void make_png(int shade, struct rk_buf *png, char hash[65])
{
	unsigned char rgb[16 * 12 * 3];
	for (size_t i = 0; i < sizeof(rgb); i++)
		rgb[i] = (unsigned char)(i % 3 == 0 ? shade : i % 3 == 1 ? 255 - shade : 40);
	rk_buf_init(png);
	rk_picture_png_encode(rgb, 16, 12, png, NULL);
	rk_sha256_hex(rgb, sizeof(rgb), hash);
}

static void add_frame(struct rk_model_conversation *c, struct rk_model_message *m, int shade, int expect_added)
{
	struct rk_buf png;
	char hash[65], label[64];
	make_png(shade, &png, hash);
	snprintf(label, sizeof(label), "frame %d, 16x12", shade);
	CHECK_EQ_INT(rk_model_message_add_image(c, m, png.data, png.len, hash, label), expect_added);
	rk_buf_release(&png);
}

static void no_key_in(const struct rk_error *e)
{
	CHECK(strstr(e->message, KEY) == NULL);
	CHECK(strstr(e->message, "SECRET") == NULL);
}

static struct rk_model_tool tools[3];
static cJSON *tool_params;

static void setup_tools(void)
{
	tool_params = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"actions\":{\"type\":\"array\"}},"
				  "\"required\":[\"actions\"]}");
	tools[0] = (struct rk_model_tool){.name = "computer_observe",
					  .description = "Take a screenshot of the computer's screen."};
	tools[1] = (struct rk_model_tool){.name = "computer_act",
					  .description = "Run a batch of mouse and keyboard actions.",
					  .parameters = tool_params};
	tools[2] = (struct rk_model_tool){.name = "shell", .description = "Run a shell command."};
}

static struct rk_model_conversation *basic_conversation(void)
{
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "You operate a computer through tools.");
	rk_model_add_message(c, RK_MODEL_USER, "Open the browser.");
	return c;
}

/* Runs one completion against a one-off server; returns the call's rc. */
static int complete_with(const char *scenario, struct rk_model_conversation *c, struct rk_model_config *cfg_over,
			 struct rk_model_reply *reply, struct rk_error *e, cJSON **report, int stop)
{
	struct server s;
	if (server_start(&s, scenario) != 0) {
		server_wait(&s, 1);
		return rk_error_set(e, RK_EFAILED, "server did not start");
	}
	struct rk_model_config cfg;
	config_for(&cfg, s.port);
	if (cfg_over) {
		cfg.timeout_ms = cfg_over->timeout_ms ? cfg_over->timeout_ms : cfg.timeout_ms;
		cfg.max_retries = cfg_over->max_retries;
		cfg.cancel = cfg_over->cancel;
	}
	int rc = rk_model_complete(&cfg, c, tools, 3, reply, e);
	rk_model_config_release(&cfg);
	*report = server_wait(&s, stop);
	return rc;
}

TEST(config_missing_is_clear)
{
	struct rk_model_config cfg;
	struct rk_error e;
	CHECK_EQ_INT(rk_model_config_load(NULL, data_dir, &cfg, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "no model configured: set RAKAZO_MODEL_BASE_URL") != NULL);
	/* a URL without a model names what is missing */
	setenv("RAKAZO_MODEL_BASE_URL", "http://127.0.0.1:9/v1", 1);
	CHECK_EQ_INT(rk_model_config_load(NULL, data_dir, &cfg, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "RAKAZO_MODEL") != NULL);
	setenv("RAKAZO_MODEL_BASE_URL", "ftp://example/v1", 1);
	setenv("RAKAZO_MODEL", "m", 1);
	CHECK_EQ_INT(rk_model_config_load(NULL, data_dir, &cfg, &e), -RK_EINVALID);
	unsetenv("RAKAZO_MODEL_BASE_URL");
	unsetenv("RAKAZO_MODEL");
}

TEST(config_precedence_flags_env_file)
{
	char *path = rk_path_join(data_dir, "config.json");
	const char *file = "{\"model\":{\"base_url\":\"http://127.0.0.1:1/v1/chat/completions\",\"model\":\"from-file\","
			   "\"api_key\":\"file-key\",\"timeout_s\":30,\"max_retries\":2,\"keep_images\":3,"
			   "\"prune_block\":0,\"prompt_cache\":false}}";
	rk_fs_write_atomic(path, file, strlen(file), 0600, NULL);
	struct rk_model_config cfg;
	struct rk_error e;
	setenv("OPENAI_API_KEY", "vendor-key", 1);
	REQUIRE(rk_model_config_load(NULL, data_dir, &cfg, &e) == 0);
	CHECK_EQ_STR(cfg.base_url, "http://127.0.0.1:1/v1");
	CHECK_EQ_STR(cfg.model, "from-file");
	CHECK_EQ_STR(cfg.api_key, "file-key"); /* an explicit key beats the vendor fallback */
	CHECK_EQ_STR(cfg.key_source, "config file");
	CHECK_EQ_INT(cfg.timeout_ms, 30000);
	CHECK_EQ_INT(cfg.max_retries, 2);
	CHECK_EQ_INT(cfg.keep_images, 3);
	CHECK_EQ_INT(cfg.prune_block, 0);
	CHECK_EQ_INT(cfg.prompt_cache, 0);
	rk_model_config_release(&cfg);

	setenv("RAKAZO_MODEL", "from-env", 1);
	setenv("RAKAZO_API_KEY", "env-key", 1);
	REQUIRE(rk_model_config_load(NULL, data_dir, &cfg, &e) == 0);
	CHECK_EQ_STR(cfg.model, "from-env");
	CHECK_EQ_STR(cfg.api_key, "env-key");
	rk_model_config_release(&cfg);

	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.model = "from-flag";
	f.base_url = "https://api.example.test/v1/";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_STR(cfg.model, "from-flag");
	CHECK_EQ_STR(cfg.base_url, "https://api.example.test/v1");
	rk_model_config_release(&cfg);
	unsetenv("RAKAZO_MODEL");
	unsetenv("RAKAZO_API_KEY");

	/* the vendor keys: OpenRouter's for openrouter.ai, else OpenAI's */
	unlink(path);
	setenv("OPENROUTER_API_KEY", "router-key", 1);
	f = (struct rk_model_flags)RK_MODEL_FLAGS_INIT;
	f.model = "m";
	f.base_url = "https://openrouter.ai/api/v1";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.prune_block, RK_MODEL_PRUNE_BLOCK_DEFAULT); /* no file: the defaults */
	CHECK_EQ_INT(cfg.prompt_cache, 1);
	CHECK_EQ_STR(cfg.api_key, "router-key");
	rk_model_config_release(&cfg);
	f.base_url = "http://127.0.0.1:8000/v1";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_STR(cfg.api_key, "vendor-key");
	CHECK_EQ_STR(cfg.key_source, "OPENAI_API_KEY");
	rk_model_config_release(&cfg);
	unsetenv("OPENAI_API_KEY");
	unsetenv("OPENROUTER_API_KEY");

	/* a malformed file is an error naming it */
	rk_fs_write_atomic(path, "{\"model\": [", 11, 0600, NULL);
	CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "config.json") != NULL);
	unlink(path);
	free(path);
}

TEST(plain_reply)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"expect\":{\"has_authorization\":true,\"model\":\"scripted\","
			       "\"messages_min\":2,\"tools_include\":[\"computer_observe\",\"computer_act\"]},"
			       "\"reply\":{\"content\":\"hello there\"}}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	if (rc != 0)
		printf("  %s\n", e.message);
	CHECK_EQ_STR(r.text, "hello there");
	CHECK_EQ_INT(r.ncalls, 0);
	CHECK_EQ_STR(r.finish_reason, "stop");
	CHECK(r.prompt_tokens > 0);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(tool_call_reply_and_arguments)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"reply\":{\"tool_calls\":[{\"name\":\"computer_act\",\"arguments\":"
			       "{\"actions\":[{\"type\":\"click\",\"x\":10,\"y\":20}]}},{\"name\":\"shell\","
			       "\"arguments\":\"{oops\"}]}}]}",
			       c, NULL, &r, &e, &rep, 0);
	REQUIRE(rc == 0);
	CHECK(r.text == NULL);
	REQUIRE(r.ncalls == 2);
	CHECK_EQ_STR(r.finish_reason, "tool_calls");
	CHECK_EQ_STR(r.calls[0].name, "computer_act");
	CHECK(r.calls[0].id && r.calls[0].id[0]);
	cJSON *args = NULL;
	CHECK_EQ_INT(rk_model_tool_call_args(&r.calls[0], &args, &e), 0);
	const cJSON *a0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(args, "actions"), 0);
	CHECK_EQ_STR(rk_json_string(a0, "type", NULL), "click");
	CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(a0, "x")->valueint, 10);
	cJSON_Delete(args);
	/* malformed arguments: a clear error naming the tool, kept raw */
	CHECK_EQ_STR(r.calls[1].arguments, "{oops");
	CHECK_EQ_INT(rk_model_tool_call_args(&r.calls[1], &args, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "tool shell") != NULL);
	CHECK(args == NULL);
	/* issue 20: strict JSON, so the tool and the run log read the same values */
	struct rk_model_tool_call dup = {.name = "computer_act",
					 .arguments = "{\"actions\":[{\"action\":\"click\",\"x\":7,\"y\":7,\"x\":9}]}"};
	CHECK_EQ_INT(rk_model_tool_call_args(&dup, &args, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "the arguments for tool computer_act: duplicate key \"x\"") != NULL);
	struct rk_model_tool_call nul = {.name = "write_file", .arguments = "{\"path\":\"a\\u0000.sh\"}"};
	CHECK_EQ_INT(rk_model_tool_call_args(&nul, &args, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "NUL character") != NULL);
	/* empty arguments are an empty object */
	struct rk_model_tool_call empty = {.name = "computer_observe", .arguments = ""};
	CHECK_EQ_INT(rk_model_tool_call_args(&empty, &args, &e), 0);
	CHECK(cJSON_IsObject(args));
	cJSON_Delete(args);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

/* observe -> tool result with a screenshot -> the server sees the image */
TEST(image_in_tool_result_reaches_server)
{
	struct server s;
	REQUIRE(server_start(&s, "{\"steps\":["
				 "{\"expect\":{\"image_count_min\":1},"
				 " \"reply\":{\"tool_calls\":[{\"name\":\"computer_observe\",\"arguments\":{}}]}},"
				 "{\"expect\":{\"tool_result_has_image\":true,\"image_count_min\":2,"
				 "\"last_tool_result_contains\":\"observed\"},\"reply\":{\"content\":\"I see it\"}}]}") ==
		0);
	struct rk_model_config cfg;
	config_for(&cfg, s.port);
	struct rk_model_conversation *c = basic_conversation();
	/* a user message with an image part too */
	add_frame(c, c->msgs[1], 10, 1);
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_complete(&cfg, c, tools, 3, &r, &e) == 0);
	REQUIRE(r.ncalls == 1);
	rk_model_add_reply(c, &r);
	struct rk_model_message *t = rk_model_add_tool_result(c, r.calls[0].id, "observed the screen (frame 2)");
	add_frame(c, t, 20, 1);
	rk_model_reply_release(&r);
	int rc = rk_model_complete(&cfg, c, tools, 3, &r, &e);
	CHECK_EQ_INT(rc, 0);
	if (rc != 0)
		printf("  %s\n", e.message);
	CHECK_EQ_STR(r.text, "I see it");
	rk_model_reply_release(&r);
	cJSON *rep = server_wait(&s, 0);
	CHECK(report_ok(rep));
	CHECK_EQ_INT(s.exit_status, 0);
	cJSON_Delete(rep);
	rk_model_config_release(&cfg);
	rk_model_conversation_free(c);
}

/* the wire shape: images of a run of tool results ride in one user message after the run */
TEST(tool_images_follow_the_tool_messages)
{
	struct rk_model_config cfg = {.base_url = "http://x", .model = "m"};
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_tool_call calls[2] = {{.id = "call_a", .name = "computer_observe", .arguments = "{}"},
					      {.id = "call_b", .name = "shell", .arguments = "{}"}};
	struct rk_model_reply r = {.calls = calls, .ncalls = 2};
	rk_model_add_reply(c, &r);
	add_frame(c, rk_model_add_tool_result(c, "call_a", "shot"), 30, 1);
	add_frame(c, rk_model_add_tool_result(c, "call_b", "shell output"), 31, 1);
	cJSON *req = rk_model_request_json(&cfg, c, NULL, 0);
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
	REQUIRE(cJSON_GetArraySize(msgs) == 6);
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(msgs, 2), "role", NULL), "assistant");
	CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 2), "content")));
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(msgs, 3), "role", NULL), "tool");
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(msgs, 3), "content", NULL), "shot");
	CHECK_EQ_STR(rk_json_string(cJSON_GetArrayItem(msgs, 4), "tool_call_id", NULL), "call_b");
	const cJSON *u = cJSON_GetArrayItem(msgs, 5);
	CHECK_EQ_STR(rk_json_string(u, "role", NULL), "user");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(u, "content");
	REQUIRE(cJSON_GetArraySize(content) == 4);
	CHECK(strstr(rk_json_string(cJSON_GetArrayItem(content, 0), "text", ""), "call_a") != NULL);
	const cJSON *img = cJSON_GetArrayItem(content, 1);
	CHECK_EQ_STR(rk_json_string(img, "type", NULL), "image_url");
	const char *url = rk_json_string(cJSON_GetObjectItemCaseSensitive(img, "image_url"), "url", "");
	CHECK(strncmp(url, "data:image/png;base64,iVBORw0KGgo", 33) == 0);
	CHECK(cJSON_GetObjectItemCaseSensitive(req, "tools") == NULL);
	cJSON_Delete(req);
	rk_model_conversation_free(c);
}

/* Block pruning: nothing changes until keep + block screenshots are
 * exceeded, then all but keep go at once, and the text left for a pruned
 * one never changes again (the prompt's prefix stays cacheable). */
TEST(prune_in_blocks_keeps_the_prefix_still)
{
	struct rk_model_conversation *c = basic_conversation();
	char *before = NULL;
	int dropped[10];
	for (int i = 0; i < 10; i++) {
		struct rk_model_message *m = rk_model_add_message(c, RK_MODEL_USER, "look");
		add_frame(c, m, 50 + i, 1);
		dropped[i] = rk_model_prune_images(c, 2, 3);
		CHECK(rk_model_image_count(c) <= 5);
	}
	/* 6 images -> 2, then 6 again at the 10th: drops at the 6th and 10th */
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(dropped[i], i == 5 || i == 9 ? 4 : 0);
	CHECK_EQ_INT(rk_model_image_count(c), 2);
	before = rk_xstrdup(c->msgs[2]->parts[1].text);
	rk_model_prune_images(c, 2, 3);
	CHECK_EQ_STR(c->msgs[2]->parts[1].text, before);
	free(before);
	rk_model_conversation_free(c);
}

TEST(prune_keeps_last_two_images)
{
	struct rk_model_conversation *c = basic_conversation();
	for (int i = 0; i < 4; i++) {
		struct rk_model_message *m = rk_model_add_message(c, RK_MODEL_USER, "look");
		add_frame(c, m, 50 + i, 1);
	}
	CHECK_EQ_INT(rk_model_image_count(c), 4);
	CHECK_EQ_INT(rk_model_prune_images(c, 2, 0), 2);
	CHECK_EQ_INT(rk_model_image_count(c), 2);
	CHECK_EQ_INT(rk_model_prune_images(c, 2, 0), 0);
	/* the pruned frames keep their metadata as text */
	const struct rk_model_part *p = &c->msgs[2]->parts[1];
	REQUIRE(p->kind == RK_MODEL_TEXT);
	CHECK(p->pruned && p->png == NULL);
	CHECK(strstr(p->text, "frame 50") != NULL);
	CHECK(p->frame_hash[0] != 0);
	CHECK_EQ_INT(c->msgs[5]->parts[1].kind, RK_MODEL_IMAGE);

	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"expect\":{\"image_count_max\":2,\"image_count_min\":2},"
			       "\"reply\":{\"content\":\"ok\"}}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(duplicate_frame_sends_no_bytes)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_tool_call calls[1] = {{.id = "call_1", .name = "computer_observe", .arguments = "{}"}};
	struct rk_model_reply a = {.calls = calls, .ncalls = 1};
	rk_model_add_reply(c, &a);
	add_frame(c, rk_model_add_tool_result(c, "call_1", "frame 1"), 77, 1);
	calls[0].id = "call_2";
	rk_model_add_reply(c, &a);
	/* the same frame again: a text part, no bytes */
	add_frame(c, rk_model_add_tool_result(c, "call_2", "frame 2"), 77, 0);
	CHECK_EQ_INT(rk_model_image_count(c), 1);
	const struct rk_model_part *p = &c->msgs[c->n - 1]->parts[1];
	REQUIRE(p->kind == RK_MODEL_TEXT);
	CHECK(strstr(p->text, "unchanged") != NULL);

	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"expect\":{\"no_image_for_duplicate_frame\":true,"
			       "\"tool_result_has_image\":false,\"image_count_max\":1,"
			       "\"last_tool_result_contains\":\"unchanged\"},\"reply\":{\"content\":\"same\"}}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

/* the server's duplicate check itself: the same bytes twice fail the step with a 500 */
TEST(server_catches_a_resent_frame)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_buf png;
	char hash[65];
	make_png(90, &png, hash);
	/* no hash given: the client cannot dedupe, so the bytes go twice */
	rk_model_message_add_image(c, rk_model_add_message(c, RK_MODEL_USER, "a"), png.data, png.len, NULL, "x");
	rk_model_message_add_image(c, rk_model_add_message(c, RK_MODEL_USER, "b"), png.data, png.len, NULL, "x");
	rk_buf_release(&png);
	struct rk_model_config over = {.max_retries = 0};
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"expect\":{\"no_image_for_duplicate_frame\":true},"
			       "\"reply\":{\"content\":\"x\"}}]}",
			       c, &over, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, -RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "no_image_for_duplicate_frame") != NULL);
	CHECK(strstr(e.message, "step 1") != NULL);
	CHECK(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")));
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(retry_after_429_then_success)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"status\",\"status\":429,\"retry_after\":1,"
			       "\"message\":\"slow down\"},{\"reply\":{\"content\":\"after the wait\"}}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.text, "after the wait");
	CHECK_EQ_INT(r.attempts, 2);
	CHECK(report_ok(rep));
	CHECK_EQ_INT(report_served(rep), 2);
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(retry_500_twice_then_success)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"status\",\"status\":500},{\"fault\":\"status\",\"status\":503},"
			       "{\"reply\":{\"content\":\"third time\"}}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.text, "third time");
	CHECK_EQ_INT(r.attempts, 3);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(retries_are_bounded)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_config over = {.max_retries = 1};
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"status\",\"status\":502},{\"fault\":\"status\",\"status\":502},"
			       "{\"reply\":{\"content\":\"never\"}}]}",
			       c, &over, &r, &e, &rep, 1);
	CHECK_EQ_INT(rc, -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 2);
	CHECK(strstr(e.message, "HTTP 502") != NULL);
	CHECK_EQ_INT(report_served(rep), 2);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(unauthorized_is_denied_without_retry)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	/* the server echoes the key, as some do: the message must not */
	int rc = complete_with("{\"steps\":[{\"fault\":\"status\",\"status\":401,"
			       "\"message\":\"Incorrect API key provided: " KEY "\"},"
			       "{\"reply\":{\"content\":\"never reached\"}}]}",
			       c, NULL, &r, &e, &rep, 1);
	CHECK_EQ_INT(rc, -RK_EDENIED);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "Incorrect API key") != NULL);
	CHECK(strstr(e.message, "[redacted]") != NULL);
	no_key_in(&e);
	CHECK_EQ_INT(report_served(rep), 1);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(bad_request_is_invalid_with_the_server_message)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"status\",\"status\":400,"
			       "\"message\":\"tools[1].parameters is not a valid schema\"}]}",
			       c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, -RK_EINVALID);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "HTTP 400") != NULL);
	CHECK(strstr(e.message, "not a valid schema") != NULL);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(garbage_is_a_malformed_reply)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"garbage\"}]}", c, NULL, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, -RK_EFAILED);
	CHECK(strstr(e.message, "the model endpoint returned a malformed reply: the reply is not valid JSON") != NULL);
	CHECK(strstr(e.message, "<html>") != NULL);
	CHECK(r.text == NULL && r.ncalls == 0);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

/* issue 20: a reply with a duplicate key or a NUL is refused, not read one way */
TEST(ambiguous_reply_is_malformed)
{
	static const char *const bodies[][2] = {
		{"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":\\\"a\\\",\\\"content\\\":\\\"b\\\"}}]}",
		 "duplicate key \"content\""},
		{"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":\\\"a\\\\u0000b\\\"}}]}",
		 "NUL character"},
	};
	for (size_t i = 0; i < 2; i++) {
		struct rk_model_conversation *c = basic_conversation();
		struct rk_model_reply r;
		struct rk_error e;
		cJSON *rep = NULL;
		char *scenario = rk_xasprintf("{\"steps\":[{\"fault\":\"raw\",\"body\":\"%s\"}]}", bodies[i][0]);
		int rc = complete_with(scenario, c, NULL, &r, &e, &rep, 0);
		free(scenario);
		CHECK_EQ_INT(rc, -RK_EFAILED);
		CHECK(strstr(e.message, "malformed reply") && strstr(e.message, bodies[i][1]));
		CHECK(r.text == NULL);
		cJSON_Delete(rep);
		rk_model_conversation_free(c);
	}
}

TEST(hang_beyond_timeout_is_timeout)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_config over = {.timeout_ms = 300, .max_retries = 3};
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"hang\",\"ms\":1500,\"reply\":{\"content\":\"late\"}}]}", c,
			       &over, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, -RK_ETIMEOUT);
	CHECK_EQ_INT(r.attempts, 1); /* a slow model is not asked again */
	CHECK(strstr(e.message, "did not answer within 300 ms") != NULL);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(dropped_connection_is_retried)
{
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"close\"},{\"reply\":{\"content\":\"back\"}}]}", c, NULL, &r,
			       &e, &rep, 0);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.text, "back");
	CHECK_EQ_INT(r.attempts, 2);
	CHECK(report_ok(rep));
	rk_model_reply_release(&r);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

TEST(connection_refused_is_unavailable)
{
	/* a port that was just ours and is closed: nothing listens there */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	REQUIRE(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	close(fd);
	struct rk_model_config cfg;
	config_for(&cfg, ntohs(sa.sin_port));
	cfg.max_retries = 2;
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_reply r;
	struct rk_error e;
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 3, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 3);
	CHECK(strstr(e.message, "not reachable") != NULL);
	CHECK(strstr(e.message, "127.0.0.1") != NULL);
	no_key_in(&e);
	rk_model_config_release(&cfg);
	rk_model_conversation_free(c);
}

TEST(cancel_interrupts_the_call)
{
	volatile sig_atomic_t stop = 1;
	struct rk_model_conversation *c = basic_conversation();
	struct rk_model_config over = {.max_retries = 3, .cancel = &stop};
	struct rk_model_reply r;
	struct rk_error e;
	cJSON *rep = NULL;
	int rc = complete_with("{\"steps\":[{\"fault\":\"hang\",\"ms\":1000,\"reply\":{\"content\":\"late\"}}]}", c,
			       &over, &r, &e, &rep, 0);
	CHECK_EQ_INT(rc, -RK_EINTERRUPTED);
	cJSON_Delete(rep);
	rk_model_conversation_free(c);
}

/* tests/fixtures/scenarios/basic.json, driven the way the agent loop will:
 * observe -> act -> shell -> answer, with prune before every call */
static int read_fixture(const char *name, struct rk_buf *out)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	const char *src = getenv("RAKAZO_SRC_DIR");
	char *cands[3] = {rk_xasprintf("%s/tests/fixtures/scenarios/%s", src ? src : ".", name),
			  rk_xasprintf("tests/fixtures/scenarios/%s", name),
			  rk_xasprintf("%s/../../../tests/fixtures/scenarios/%s", self, name)};
	int rc = -1;
	for (int i = 0; i < 3; i++) {
		if (rc != 0 && rk_fs_read_all(cands[i], 1u << 20, out, NULL) == 0)
			rc = 0;
		free(cands[i]);
	}
	return rc;
}

TEST(basic_scenario_fixture)
{
	struct rk_buf sc = RK_BUF_INIT;
	rk_buf_init(&sc);
	REQUIRE(read_fixture("basic.json", &sc) == 0);
	struct server s;
	REQUIRE(server_start(&s, sc.data) == 0);
	rk_buf_release(&sc);
	struct rk_model_config cfg;
	config_for(&cfg, s.port);
	struct rk_model_conversation *c = basic_conversation();
	const char *seen[4] = {0};
	int shade = 100;
	for (int turn = 0; turn < 6; turn++) {
		struct rk_model_reply r;
		struct rk_error e;
		rk_model_prune_images(c, cfg.keep_images, 0);
		int rc = rk_model_complete(&cfg, c, tools, 3, &r, &e);
		CHECK_EQ_INT(rc, 0);
		if (rc != 0) {
			printf("  turn %d: %s\n", turn, e.message);
			break;
		}
		rk_model_add_reply(c, &r);
		if (r.ncalls == 0) {
			CHECK(strstr(r.text, "scripted-ok") != NULL);
			rk_model_reply_release(&r);
			break;
		}
		for (size_t i = 0; i < r.ncalls; i++) {
			const struct rk_model_tool_call *call = &r.calls[i];
			cJSON *args = NULL;
			CHECK_EQ_INT(rk_model_tool_call_args(call, &args, &e), 0);
			if (turn < 4)
				seen[turn] = strcmp(call->name, "computer_observe") == 0 ? "observe"
					     : strcmp(call->name, "computer_act") == 0   ? "act"
					     : strcmp(call->name, "shell") == 0          ? "shell"
											 : "other";
			struct rk_model_message *t;
			if (strcmp(call->name, "shell") == 0) {
				t = rk_model_add_tool_result(c, call->id, "{\"stdout\":\"scripted-ok\\n\",\"code\":0}");
			} else {
				t = rk_model_add_tool_result(c, call->id, "completed; screenshot attached");
				add_frame(c, t, shade++, 1);
			}
			cJSON_Delete(args);
		}
		rk_model_reply_release(&r);
	}
	CHECK_EQ_STR(seen[0], "observe");
	CHECK_EQ_STR(seen[1], "act");
	CHECK_EQ_STR(seen[2], "shell");
	cJSON *rep = server_wait(&s, 0);
	CHECK(report_ok(rep));
	CHECK_EQ_INT(s.exit_status, 0);
	cJSON_Delete(rep);
	rk_model_config_release(&cfg);
	rk_model_conversation_free(c);
}

TEST(key_never_in_the_log)
{
	char *path = rk_xasprintf("%s/log/rakazo.log", data_dir);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	REQUIRE(rk_fs_read_all(path, 64u << 20, &b, NULL) == 0);
	CHECK(strstr(b.data, "model: POST") != NULL); /* the log was written */
	CHECK(strstr(b.data, KEY) == NULL);
	CHECK(strstr(b.data, "SECRET") == NULL);
	CHECK(strstr(b.data, "Bearer") == NULL);
	rk_buf_release(&b);
	free(path);
}

TEST(price_lookup_by_name)
{
	struct rk_model_price p = {0};
	CHECK_EQ_INT(rk_model_price_lookup("claude-sonnet-4-5-20250929", &p), 1);
	CHECK(p.input == 3 && p.output == 15 && p.cached == 0.30 && p.cache_write == 3.75);
	CHECK(!strcmp(p.source, "built-in"));
	/* a router's name, dots for dashes */
	CHECK_EQ_INT(rk_model_price_lookup("anthropic/claude-opus-4.5", &p), 1);
	CHECK(p.input == 5 && p.output == 25);
	/* the longest prefix, and not a later version by an earlier one's prefix */
	CHECK_EQ_INT(rk_model_price_lookup("claude-opus-4-1-20250805", &p), 1);
	CHECK(p.input == 15);
	CHECK_EQ_INT(rk_model_price_lookup("claude-opus-4-20250514", &p), 1);
	CHECK(p.input == 15);
	CHECK_EQ_INT(rk_model_price_lookup("claude-opus-4-9", &p), 0);
	CHECK_EQ_INT(rk_model_price_lookup("gpt-5-mini", &p), 0);
	CHECK_EQ_INT(rk_model_price_lookup("computer-use-preview-2025-03-11", &p), 1);
	CHECK(p.output == 12);
	CHECK_EQ_INT(rk_model_price_lookup("scripted", &p), 0);
	CHECK_EQ_INT(rk_model_price_lookup(NULL, &p), 0);
	/* 1000 plain + 2000 cached + 500 written input, 100 output at Sonnet's */
	CHECK_EQ_INT(rk_model_price_lookup("claude-sonnet-4-5", &p), 1);
	CHECK_EQ_INT((int)rk_model_cost_micro(&p, 3500, 2000, 500, 100), 3000 + 600 + 1875 + 1500);
	struct rk_model_price none = {0};
	CHECK_EQ_INT((int)rk_model_cost_micro(&none, 10, 0, 0, 10), -1);
}

TEST(price_from_the_config_file)
{
	char *path = rk_path_join(data_dir, "price.json");
	const char *doc = "{\"model\":{\"base_url\":\"http://127.0.0.1:9/v1\",\"model\":\"local-llm\","
			  "\"price\":{\"input\":2,\"output\":8}}}";
	REQUIRE(rk_fs_write_atomic(path, doc, strlen(doc), 0600, NULL) == 0);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.config_path = path;
	struct rk_model_config cfg;
	struct rk_error e;
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK(cfg.price.known && cfg.price.input == 2 && cfg.price.output == 8 && cfg.price.cached == 2);
	CHECK(!strcmp(cfg.price.source, "config file"));
	rk_model_config_release(&cfg);
	/* an unknown model has none; a bad price is named */
	doc = "{\"model\":{\"base_url\":\"http://127.0.0.1:9/v1\",\"model\":\"local-llm\"}}";
	REQUIRE(rk_fs_write_atomic(path, doc, strlen(doc), 0600, NULL) == 0);
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK(!cfg.price.known);
	rk_model_config_release(&cfg);
	doc = "{\"model\":{\"model\":\"x\",\"base_url\":\"http://127.0.0.1:9/v1\",\"price\":{\"input\":1}}}";
	REQUIRE(rk_fs_write_atomic(path, doc, strlen(doc), 0600, NULL) == 0);
	CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "price.output") != NULL);
	free(path);
}

TEST(stop_reasons_in_one_word)
{
	struct rk_model_reply r = {0};
	CHECK(rk_model_stop_of(&r) == NULL);
	const char *cases[][2] = {{"end_turn", NULL},
				  {"tool_use", NULL},
				  {"stop", NULL},
				  {"completed", NULL},
				  {"max_tokens", "max_tokens"},
				  {"max_output_tokens", "max_tokens"},
				  {"length", "max_tokens"},
				  {"pause_turn", "pause_turn"},
				  {"model_context_window_exceeded", "context_window"},
				  {"content_filter", "content_filter"},
				  {"refusal", "refusal"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r.finish_reason = (char *)cases[i][0];
		const char *got = rk_model_stop_of(&r);
		CHECK(cases[i][1] ? got && !strcmp(got, cases[i][1]) : got == NULL);
	}
	r.finish_reason = "completed";
	r.refusal = "no";
	CHECK(!strcmp(rk_model_stop_of(&r), "refusal"));
}

TEST(compaction_settings_window_and_due)
{
	char *path = rk_path_join(data_dir, "config.json");
	struct rk_model_config cfg;
	struct rk_error e;
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.base_url = "http://127.0.0.1:1/v1";
	/* defaults: the model's own window, else the protocol's; 0.8; auto */
	const char *none = "{}";
	rk_fs_write_atomic(path, none, strlen(none), 0600, NULL);
	f.model = "claude-sonnet-4-5";
	f.api = "messages";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.context_window, 200000);
	CHECK(cfg.compact_at > 0.79 && cfg.compact_at < 0.81);
	CHECK_EQ_INT(cfg.compact, RK_MODEL_COMPACT_AUTO);
	rk_model_config_release(&cfg);
	f.model = "qwen3";
	f.api = NULL;
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.context_window, 32768);
	/* due at compact_at x window, counting the growth; never when off */
	CHECK(!rk_model_compact_due(&cfg, 20000, 1000));
	CHECK(rk_model_compact_due(&cfg, 25000, 1300));
	CHECK(rk_model_compact_due(&cfg, 26300, 0));
	CHECK(!rk_model_compact_due(&cfg, -1, 99999)); /* not counted: the caller estimates */
	cfg.compact = RK_MODEL_COMPACT_OFF;
	CHECK(!rk_model_compact_due(&cfg, 32000, 0));
	rk_model_config_release(&cfg);

	const char *file = "{\"model\":{\"context_window\":6000,\"compact_at\":0.5,\"compact\":\"summary\"}}";
	rk_fs_write_atomic(path, file, strlen(file), 0600, NULL);
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.context_window, 6000);
	CHECK_EQ_INT(cfg.compact, RK_MODEL_COMPACT_SUMMARY);
	CHECK(rk_model_compact_due(&cfg, 3000, 0) && !rk_model_compact_due(&cfg, 2999, 0));
	/* nothing old enough to drop: no request, the conversation as it was */
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "sys");
	rk_model_add_message(c, RK_MODEL_USER, "the task");
	struct rk_model_compaction k = {.task = "the task"};
	CHECK_EQ_INT(rk_model_compact(&cfg, c, NULL, 0, &k, &e), 0);
	CHECK_EQ_INT(k.dropped, 0);
	CHECK_EQ_INT(c->n, 2);
	/* four turns of a call and its result: the summary request goes out
	 * (nothing listens on port 1: unavailable), the conversation stays whole */
	for (int i = 0; i < 4; i++) {
		struct rk_model_reply r = {0};
		struct rk_model_tool_call call = {.id = "call_1", .name = "list_files", .arguments = "{}"};
		r.calls = &call;
		r.ncalls = 1;
		rk_model_add_reply(c, &r);
		rk_model_add_tool_result(c, "call_1", "{\"entries\":[]}");
	}
	cfg.max_retries = 0;
	CHECK(rk_model_compact(&cfg, c, NULL, 0, &k, &e) < 0);
	CHECK(strstr(e.message, "compaction") != NULL);
	CHECK_EQ_INT(c->n, 10);
	rk_model_compaction_release(&k);
	rk_model_conversation_free(c);
	rk_model_config_release(&cfg);

	const char *bad[] = {"{\"model\":{\"compact_at\":1.5}}", "{\"model\":{\"compact\":\"sometimes\"}}",
			     "{\"model\":{\"context_window\":-3}}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rk_fs_write_atomic(path, bad[i], strlen(bad[i]), 0600, NULL);
		CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EINVALID);
	}
	unlink(path);
	free(path);
}

int main(void)
{
	const char *vars[] = {"RAKAZO_MODEL_BASE_URL", "RAKAZO_MODEL", "RAKAZO_API_KEY", "OPENAI_API_KEY",
			      "OPENROUTER_API_KEY", "RAKAZO_CONFIG"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	char tmpl[] = "/tmp/rk-model-data-XXXXXX";
	if (!mkdtemp(tmpl)) {
		printf("cannot make a temporary directory\n");
		return 1;
	}
	snprintf(data_dir, sizeof(data_dir), "%s", tmpl);
	setenv("RAKAZO_LOG", "debug", 1);
	rk_log_open(data_dir);
	signal(SIGPIPE, SIG_IGN);
	setup_tools();
	if (!find_server()) {
		printf("FAIL model_server: %s is not built (make test-bins)\n", server_bin);
		printf("unit: 0 passed, 1 failed\n");
		return 1;
	}
	RUN(config_missing_is_clear);
	RUN(price_lookup_by_name);
	RUN(price_from_the_config_file);
	RUN(stop_reasons_in_one_word);
	RUN(config_precedence_flags_env_file);
	RUN(plain_reply);
	RUN(tool_call_reply_and_arguments);
	RUN(image_in_tool_result_reaches_server);
	RUN(tool_images_follow_the_tool_messages);
	RUN(prune_keeps_last_two_images);
	RUN(prune_in_blocks_keeps_the_prefix_still);
	RUN(duplicate_frame_sends_no_bytes);
	RUN(server_catches_a_resent_frame);
	RUN(retry_after_429_then_success);
	RUN(retry_500_twice_then_success);
	RUN(retries_are_bounded);
	RUN(unauthorized_is_denied_without_retry);
	RUN(bad_request_is_invalid_with_the_server_message);
	RUN(garbage_is_a_malformed_reply);
	RUN(ambiguous_reply_is_malformed);
	RUN(hang_beyond_timeout_is_timeout);
	RUN(dropped_connection_is_retried);
	RUN(connection_refused_is_unavailable);
	RUN(cancel_interrupts_the_call);
	RUN(basic_scenario_fixture);
	RUN(key_never_in_the_log);
	RUN(compaction_settings_window_and_due);
	cJSON_Delete(tool_params);
	if (!getenv("RAKAZO_KEEP_TMP"))
		rk_fs_remove_tree(data_dir, NULL);
	return check_summary("model");
}
