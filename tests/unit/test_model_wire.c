/* engine/agent/model: the Messages and Responses protocols (issue 22) and
 * the configuration that picks a protocol: request bodies, URLs and
 * headers, replies read back, vendor turns replayed verbatim, errors and
 * retries, and a full round trip of each protocol against a small HTTP
 * server on 127.0.0.1 that records what it got and answers what the test
 * scripted (the chat protocol's own tests are test_model.c). */

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/agent/model.h"
#include "engine/util/buf.h"
#include "engine/util/fs.h"
#include "engine/util/json.h"
#include "engine/util/log.h"
#include "check.h"

#define KEY "sk-ant-test-SECRET-52c1e0"

static char data_dir[PATH_MAX];

/* ---- a small scripted HTTP server ---- */

#define MAX_STEPS 8

struct step {
	int status;
	const char *headers; /* extra response header lines, each ending "\r\n", or NULL */
	const char *body;
};

struct seen {
	char *request_line; /* "POST /v1/messages?beta=true HTTP/1.1" */
	char *headers;	    /* the header block, as sent */
	char *body;
};

struct server {
	int fd, port;
	pthread_t thread;
	struct step steps[MAX_STEPS];
	int nsteps;
	struct seen seen[MAX_STEPS];
	int served;
};

static char *read_request(int c, char **head_out)
{
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	char chunk[65536];
	size_t head = 0, want = 0;
	for (;;) {
		ssize_t n = read(c, chunk, sizeof(chunk));
		if (n <= 0)
			break;
		rk_buf_add(&b, chunk, (size_t)n);
		if (!head) {
			char *end = strstr(b.data, "\r\n\r\n");
			if (!end)
				continue;
			head = (size_t)(end - b.data) + 4;
			const char *cl = strcasestr(b.data, "\r\ncontent-length:");
			want = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
		}
		if (head && b.len >= head + want)
			break;
	}
	if (!head) {
		rk_buf_release(&b);
		return NULL;
	}
	*head_out = rk_xstrndup(b.data, head);
	char *body = rk_xstrndup(b.data + head, b.len - head);
	rk_buf_release(&b);
	return body;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	while (s->served < s->nsteps) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			break;
		char *head = NULL;
		char *body = read_request(c, &head);
		if (!body) {
			close(c);
			continue;
		}
		struct seen *w = &s->seen[s->served];
		char *eol = strstr(head, "\r\n");
		w->request_line = rk_xstrndup(head, eol ? (size_t)(eol - head) : strlen(head));
		w->headers = head;
		w->body = body;
		const struct step *st = &s->steps[s->served++];
		char *reply = rk_xasprintf("HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: "
					   "%zu\r\nConnection: close\r\n%s\r\n%s",
					   st->status, strlen(st->body), st->headers ? st->headers : "", st->body);
		size_t off = 0, len = strlen(reply);
		while (off < len) {
			ssize_t n = write(c, reply + off, len - off);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		free(reply);
		close(c);
	}
	return NULL;
}

static int server_start(struct server *s)
{
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s->fd, 8) != 0 ||
	    getsockname(s->fd, (struct sockaddr *)&sa, &sl) != 0)
		return -1;
	s->port = ntohs(sa.sin_port);
	return pthread_create(&s->thread, NULL, serve, s) == 0 ? 0 : -1;
}

static void server_stop(struct server *s)
{
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->fd);
}

static void server_free(struct server *s)
{
	for (int i = 0; i < s->served; i++) {
		free(s->seen[i].request_line);
		free(s->seen[i].headers);
		free(s->seen[i].body);
	}
}

/* The value of header name in a recorded request, or NULL (caller frees). */
static char *header(const struct seen *w, const char *name)
{
	char *pat = rk_xasprintf("\r\n%s:", name);
	const char *h = strcasestr(w->headers, pat);
	free(pat);
	if (!h)
		return NULL;
	h += strlen(name) + 3;
	while (*h == ' ')
		h++;
	return rk_xstrndup(h, strcspn(h, "\r\n"));
}

static void config_for(struct rk_model_config *cfg, const char *api, int port)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.base_url = url;
	f.model = "scripted";
	f.api_key = KEY;
	f.api = api;
	struct rk_error e;
	if (rk_model_config_load(&f, data_dir, cfg, &e) != 0)
		printf("  config: %s\n", e.message);
	cfg->backoff_ms = 10;
	cfg->timeout_ms = 10000;
}

/* How many members named key the document has, at any depth. */
static int count_key(const cJSON *j, const char *key)
{
	int n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, j)
	{
		n += c->string && !strcmp(c->string, key);
		n += count_key(c, key);
	}
	return n;
}

/* ---- fixtures ---- */

static cJSON *shell_params;

static struct rk_model_tool shell_tool(void)
{
	return (struct rk_model_tool){.name = "shell",
				      .description = "Run a shell command.",
				      .parameters = shell_params};
}

static struct rk_model_tool native_tool(const char *type, const char *beta)
{
	return (struct rk_model_tool){.name = "computer",
				      .native_type = type,
				      .native_beta = beta,
				      .display_w = 1280,
				      .display_h = 800,
				      .enable_zoom = 1};
}

static const unsigned char fake_jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00, 0xff, 0xd9};
static const unsigned char fake_png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0};

static const cJSON *item(const cJSON *arr, int i)
{
	return cJSON_GetArrayItem(arr, i);
}

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str(const cJSON *o, const char *k)
{
	return rk_json_string(o, k, NULL);
}

/* The same JSON, whatever the spacing. */
static int same_json(const char *a, const cJSON *b)
{
	cJSON *pa = cJSON_Parse(a);
	int eq = pa && b && cJSON_Compare(pa, b, 1);
	cJSON_Delete(pa);
	return eq;
}

/* system x2, a user turn with a JPEG, an assistant turn of two calls (one
 * native), their results (the native one with a screenshot), a note. */
static struct rk_model_conversation *tool_conversation(void)
{
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "You operate a computer.");
	rk_model_add_message(c, RK_MODEL_SYSTEM, "Be brief.");
	struct rk_model_message *u = rk_model_add_message(c, RK_MODEL_USER, "Open the browser.");
	rk_model_message_add_image_as(c, u, "image/jpeg", fake_jpeg, sizeof(fake_jpeg), "h1", "frame 1, 1280x800");
	struct rk_model_tool_call calls[2] = {
		{.id = "call_1",
		 .name = "computer",
		 .arguments = "{\"action\":\"left_click\",\"coordinate\":[10,20]}",
		 .native = 1},
		{.id = "call_2", .name = "shell", .arguments = "{\"command\":\"ls\"}"},
	};
	struct rk_model_reply r = {.text = "On it.", .calls = calls, .ncalls = 2};
	rk_model_add_reply(c, &r);
	struct rk_model_message *t1 = rk_model_add_tool_result(c, "call_1", "clicked");
	t1->native = 1;
	rk_model_message_add_image(c, t1, fake_png, sizeof(fake_png), "h2", "frame 2, 1280x800");
	rk_model_add_tool_result(c, "call_2", "file.txt");
	rk_model_add_message(c, RK_MODEL_USER, "A person says: hurry.");
	return c;
}

/* ---- configuration ---- */

static void clear_env(void)
{
	const char *vars[] = {"RAKAZO_MODEL_BASE_URL", "RAKAZO_MODEL",	    "RAKAZO_API_KEY",	"OPENAI_API_KEY",
			      "OPENROUTER_API_KEY",    "ANTHROPIC_API_KEY", "RAKAZO_MODEL_API", "RAKAZO_CONFIG"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

TEST(config_infers_the_protocol_from_the_model_name)
{
	struct rk_model_config cfg;
	struct rk_error e;
	setenv("ANTHROPIC_API_KEY", "ant-key", 1);
	setenv("OPENAI_API_KEY", "oai-key", 1);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.model = "anthropic/claude-sonnet-4-5";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_MESSAGES);
	CHECK_EQ_STR(cfg.model, "claude-sonnet-4-5");
	CHECK_EQ_STR(cfg.base_url, "https://api.anthropic.com/v1");
	CHECK_EQ_STR(cfg.api_key, "ant-key");
	CHECK_EQ_STR(cfg.key_source, "ANTHROPIC_API_KEY");
	rk_model_config_release(&cfg);

	f.model = "openai/gpt-5";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_RESPONSES);
	CHECK_EQ_STR(cfg.model, "gpt-5");
	CHECK_EQ_STR(cfg.base_url, "https://api.openai.com/v1");
	CHECK_EQ_STR(cfg.api_key, "oai-key");
	CHECK_EQ_STR(cfg.key_source, "OPENAI_API_KEY");
	rk_model_config_release(&cfg);

	/* the vendor's own host set explicitly: still the vendor's protocol */
	f.base_url = "https://api.anthropic.com/v1/messages";
	f.model = "anthropic/claude-haiku-4-5";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_MESSAGES);
	CHECK_EQ_STR(cfg.base_url, "https://api.anthropic.com/v1");
	CHECK_EQ_STR(cfg.model, "claude-haiku-4-5");
	rk_model_config_release(&cfg);

	/* a router's model names look the same: chat, as before, name unchanged */
	setenv("OPENROUTER_API_KEY", "router-key", 1);
	f.base_url = "https://openrouter.ai/api/v1";
	f.model = "anthropic/claude-sonnet-4-5";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_CHAT);
	CHECK_EQ_STR(cfg.model, "anthropic/claude-sonnet-4-5");
	CHECK_EQ_STR(cfg.key_source, "OPENROUTER_API_KEY");
	rk_model_config_release(&cfg);

	/* any other name is chat, and chat needs a base URL as before */
	f.base_url = NULL;
	f.model = "llama-3";
	CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "no model configured: set RAKAZO_MODEL_BASE_URL") != NULL);
	clear_env();
}

TEST(config_explicit_protocol_and_keys)
{
	struct rk_model_config cfg;
	struct rk_error e;
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	/* --api with a local server: the protocol's own path is dropped */
	f.api = "messages";
	f.base_url = "http://127.0.0.1:8080/v1/messages/";
	f.model = "local-claude";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_MESSAGES);
	CHECK_EQ_STR(cfg.base_url, "http://127.0.0.1:8080/v1");
	CHECK(cfg.api_key == NULL && cfg.key_source == NULL);
	rk_model_config_release(&cfg);

	/* an explicit protocol without a base URL: the vendor's; its prefix dropped */
	f.base_url = NULL;
	f.model = "anthropic/claude-opus-4-1";
	setenv("ANTHROPIC_API_KEY", "ant-key", 1);
	setenv("RAKAZO_API_KEY", "rakazo-key", 1);
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_STR(cfg.base_url, "https://api.anthropic.com/v1");
	CHECK_EQ_STR(cfg.model, "claude-opus-4-1");
	CHECK_EQ_STR(cfg.api_key, "rakazo-key"); /* RAKAZO_API_KEY beats the vendor's */
	CHECK_EQ_STR(cfg.key_source, "RAKAZO_API_KEY");
	rk_model_config_release(&cfg);
	unsetenv("RAKAZO_API_KEY");

	/* the environment names the protocol; its vendor key follows it */
	f = (struct rk_model_flags)RK_MODEL_FLAGS_INIT;
	setenv("RAKAZO_MODEL_API", "responses", 1);
	setenv("RAKAZO_MODEL_BASE_URL", "http://127.0.0.1:8081/v1/responses", 1);
	setenv("RAKAZO_MODEL", "gpt-local", 1);
	setenv("OPENAI_API_KEY", "oai-key", 1);
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_RESPONSES);
	CHECK_EQ_STR(cfg.base_url, "http://127.0.0.1:8081/v1");
	CHECK_EQ_STR(cfg.key_source, "OPENAI_API_KEY");
	rk_model_config_release(&cfg);
	/* the flag beats the environment */
	f.api = "chat";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_CHAT);
	CHECK_EQ_STR(cfg.base_url, "http://127.0.0.1:8081/v1/responses");
	rk_model_config_release(&cfg);
	clear_env();

	/* the config file's "api" */
	char *path = rk_path_join(data_dir, "config.json");
	const char *file = "{\"model\":{\"api\":\"messages\",\"model\":\"claude-x\",\"api_key\":\"file-key\"}}";
	rk_fs_write_atomic(path, file, strlen(file), 0600, NULL);
	REQUIRE(rk_model_config_load(NULL, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.api, RK_MODEL_API_MESSAGES);
	CHECK_EQ_STR(cfg.base_url, "https://api.anthropic.com/v1");
	CHECK_EQ_STR(cfg.key_source, "config file");
	rk_model_config_release(&cfg);

	/* an unknown name lists the three */
	const char *bad = "{\"model\":{\"api\":\"soap\",\"model\":\"m\"}}";
	rk_fs_write_atomic(path, bad, strlen(bad), 0600, NULL);
	CHECK_EQ_INT(rk_model_config_load(NULL, data_dir, &cfg, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "'soap'") && strstr(e.message, "config file") &&
	      strstr(e.message, "chat, messages or responses"));
	f = (struct rk_model_flags)RK_MODEL_FLAGS_INIT;
	f.api = "Messages";
	CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EUSAGE);
	CHECK(strstr(e.message, "from --api") != NULL);
	unlink(path);
	free(path);
	CHECK_EQ_STR(rk_model_api_name(RK_MODEL_API_RESPONSES), "responses");
}

/* ---- Messages ---- */

TEST(messages_request_shape)
{
	struct rk_model_config cfg = {.api = RK_MODEL_API_MESSAGES, .base_url = "http://x/v1", .model = "claude"};
	struct rk_model_conversation *c = tool_conversation();
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer_20251124", "computer-use-2025-11-24")};
	cJSON *req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	CHECK_EQ_STR(str(req, "model"), "claude");
	CHECK_EQ_INT(get(req, "max_tokens")->valueint, RK_MODEL_MAX_TOKENS_DEFAULT);
	CHECK_EQ_STR(str(req, "system"), "You operate a computer.\n\nBe brief.");
	const cJSON *msgs = get(req, "messages");
	REQUIRE(cJSON_GetArraySize(msgs) == 3);
	/* user: text, the image's label, the image (its own media type) */
	const cJSON *u = item(msgs, 0);
	CHECK_EQ_STR(str(u, "role"), "user");
	const cJSON *uc = get(u, "content");
	REQUIRE(cJSON_GetArraySize(uc) == 3);
	CHECK_EQ_STR(str(item(uc, 0), "text"), "Open the browser.");
	CHECK_EQ_STR(str(item(uc, 1), "text"), "screenshot: frame 1, 1280x800");
	const cJSON *img = item(uc, 2);
	CHECK_EQ_STR(str(img, "type"), "image");
	CHECK_EQ_STR(str(get(img, "source"), "type"), "base64");
	CHECK_EQ_STR(str(get(img, "source"), "media_type"), "image/jpeg");
	CHECK_EQ_STR(str(get(img, "source"), "data"), "/9j/4AAQSkZJRgD/2Q==");
	/* assistant: text, then tool_use blocks with input objects */
	const cJSON *a = item(msgs, 1);
	CHECK_EQ_STR(str(a, "role"), "assistant");
	const cJSON *ac = get(a, "content");
	REQUIRE(cJSON_GetArraySize(ac) == 3);
	CHECK_EQ_STR(str(item(ac, 0), "text"), "On it.");
	CHECK_EQ_STR(str(item(ac, 1), "type"), "tool_use");
	CHECK_EQ_STR(str(item(ac, 1), "id"), "call_1");
	CHECK_EQ_STR(str(item(ac, 1), "name"), "computer");
	CHECK_EQ_STR(str(get(item(ac, 1), "input"), "action"), "left_click");
	CHECK_EQ_STR(str(get(item(ac, 2), "input"), "command"), "ls");
	/* one user turn: both tool results first, then the note */
	const cJSON *r = item(msgs, 2);
	CHECK_EQ_STR(str(r, "role"), "user");
	const cJSON *rc = get(r, "content");
	REQUIRE(cJSON_GetArraySize(rc) == 3);
	CHECK_EQ_STR(str(item(rc, 0), "type"), "tool_result");
	CHECK_EQ_STR(str(item(rc, 0), "tool_use_id"), "call_1");
	const cJSON *trc = get(item(rc, 0), "content");
	REQUIRE(cJSON_GetArraySize(trc) == 3);
	CHECK_EQ_STR(str(item(trc, 0), "text"), "clicked");
	CHECK_EQ_STR(str(item(trc, 2), "type"), "image");
	CHECK_EQ_STR(str(get(item(trc, 2), "source"), "media_type"), "image/png");
	CHECK_EQ_STR(str(item(rc, 1), "tool_use_id"), "call_2");
	CHECK_EQ_STR(str(item(get(item(rc, 1), "content"), 0), "text"), "file.txt");
	CHECK_EQ_STR(str(item(rc, 2), "text"), "A person says: hurry.");
	/* tools: a function tool's schema, the native tool's display */
	const cJSON *t = get(req, "tools");
	REQUIRE(cJSON_GetArraySize(t) == 2);
	CHECK_EQ_STR(str(item(t, 0), "name"), "shell");
	CHECK_EQ_STR(str(item(t, 0), "description"), "Run a shell command.");
	CHECK(cJSON_Compare(get(item(t, 0), "input_schema"), shell_params, 1));
	CHECK(get(item(t, 0), "type") == NULL);
	CHECK_EQ_STR(str(item(t, 1), "type"), "computer_20251124");
	CHECK_EQ_STR(str(item(t, 1), "name"), "computer");
	CHECK_EQ_INT(get(item(t, 1), "display_width_px")->valueint, 1280);
	CHECK_EQ_INT(get(item(t, 1), "display_height_px")->valueint, 800);
	CHECK(cJSON_IsTrue(get(item(t, 1), "enable_zoom")));
	CHECK(get(req, "tool_choice") == NULL && get(req, "stream") == NULL);
	CHECK_EQ_INT(count_key(req, "cache_control"), 0); /* prompt_cache is off here */
	cJSON_Delete(req);

	/* the older tool has no zoom; max_tokens as configured */
	tools[1] = native_tool("computer_20250124", "computer-use-2025-01-24");
	cfg.max_tokens = 1000;
	req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	CHECK(get(item(get(req, "tools"), 1), "enable_zoom") == NULL);
	CHECK_EQ_INT(get(req, "max_tokens")->valueint, 1000);
	cJSON_Delete(req);
	rk_model_conversation_free(c);
}

TEST(messages_url_and_headers)
{
	struct rk_model_config cfg = {.api = RK_MODEL_API_MESSAGES,
				      .base_url = "https://api.anthropic.com/v1",
				      .model = "claude",
				      .api_key = KEY};
	struct rk_model_tool tools[3] = {shell_tool(), native_tool("computer_20251124", "computer-use-2025-11-24"),
					 native_tool("computer_20250124", "computer-use-2025-01-24")};
	struct rk_model_http h;
	struct rk_error e;
	REQUIRE(rk_model_request_http(&cfg, tools, 2, &h, &e) == 0);
	CHECK_EQ_STR(h.url, "https://api.anthropic.com/v1/messages?beta=true");
	CHECK_EQ_STR(h.path, "/messages?beta=true");
	CHECK_EQ_STR(h.key_header, "x-api-key");
	CHECK_EQ_STR(h.headers[0], "Accept: application/json");
	CHECK_EQ_STR(h.headers[1], "anthropic-version: " RK_MODEL_ANTHROPIC_VERSION);
	CHECK_EQ_STR(h.headers[2], "anthropic-beta: computer-use-2025-11-24");
	CHECK(h.headers[3] == NULL);
	rk_model_http_release(&h);
	CHECK_EQ_STR(RK_MODEL_ANTHROPIC_VERSION, "2026-10-21"); /* what SDK 1.17's client.js sends */
	/* two betas: comma-joined, as the SDK joins them */
	REQUIRE(rk_model_request_http(&cfg, tools, 3, &h, &e) == 0);
	CHECK_EQ_STR(h.headers[2], "anthropic-beta: computer-use-2025-11-24,computer-use-2025-01-24");
	rk_model_http_release(&h);
	/* no native tool: no beta, no query */
	REQUIRE(rk_model_request_http(&cfg, tools, 1, &h, &e) == 0);
	CHECK_EQ_STR(h.path, "/messages");
	CHECK(h.headers[2] == NULL);
	rk_model_http_release(&h);
	/* the other vendor's tool type is refused */
	struct rk_model_tool gpt = native_tool("computer_use_preview", NULL);
	CHECK_EQ_INT(rk_model_request_http(&cfg, &gpt, 1, &h, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "the messages protocol has no native tool of type 'computer_use_preview'") != NULL);
}

static const char anthropic_reply[] =
	"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":["
	"{\"type\":\"thinking\",\"thinking\":\"The button is top left.\",\"signature\":\"c2lnbmF0dXJl\"},"
	"{\"type\":\"text\",\"text\":\"Clicking it.\"},"
	"{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"computer\",\"input\":{\"action\":\"left_click\","
	"\"coordinate\":[640,400],\"text\":\"shift\"}},"
	"{\"type\":\"tool_use\",\"id\":\"toolu_02\",\"name\":\"shell\",\"input\":{\"command\":\"date\"}}],"
	"\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":100,"
	"\"cache_read_input_tokens\":2000,\"cache_creation_input_tokens\":300,\"output_tokens\":42}}";

TEST(messages_reply_parse)
{
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer_20251124", "computer-use-2025-11-24")};
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_MESSAGES, anthropic_reply, strlen(anthropic_reply), tools, 2, &r,
				     &e) == 0);
	CHECK_EQ_STR(r.text, "Clicking it.");
	REQUIRE(r.ncalls == 2);
	CHECK_EQ_STR(r.calls[0].id, "toolu_01");
	CHECK_EQ_STR(r.calls[0].name, "computer");
	CHECK_EQ_INT(r.calls[0].native, 1);
	CHECK_EQ_STR(r.calls[0].arguments, "{\"action\":\"left_click\",\"coordinate\":[640,400],\"text\":\"shift\"}");
	CHECK(r.calls[0].safety_checks == NULL);
	CHECK_EQ_STR(r.calls[1].name, "shell");
	CHECK_EQ_INT(r.calls[1].native, 0);
	CHECK_EQ_STR(r.finish_reason, "tool_use");
	CHECK_EQ_INT(r.prompt_tokens, 2400);
	CHECK_EQ_INT(r.completion_tokens, 42);
	CHECK_EQ_INT(r.cached_tokens, 2000);
	CHECK_EQ_INT(r.vendor_api, RK_MODEL_API_MESSAGES);
	cJSON *doc = cJSON_Parse(anthropic_reply);
	CHECK(same_json(r.vendor_json, get(doc, "content")));
	cJSON_Delete(doc);
	rk_model_reply_release(&r);

	/* without a native tool declared, "computer" is a function tool's call */
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_MESSAGES, anthropic_reply, strlen(anthropic_reply), tools, 1, &r,
				     &e) == 0);
	CHECK_EQ_INT(r.calls[0].native, 0);
	rk_model_reply_release(&r);

	/* an error body, a body without content */
	const char
		*err_body = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
	CHECK_EQ_INT(rk_model_reply_parse(RK_MODEL_API_MESSAGES, err_body, strlen(err_body), tools, 2, &r, &e),
		     -RK_EFAILED);
	CHECK(strstr(e.message, "overloaded_error: \"Overloaded\"") != NULL);
	CHECK_EQ_INT(rk_model_reply_parse(RK_MODEL_API_MESSAGES, "{\"id\":1}", 8, tools, 2, &r, &e), -RK_EFAILED);
	CHECK(strstr(e.message, "malformed reply: no content list") != NULL);
	const char *no_id = "{\"content\":[{\"type\":\"tool_use\",\"name\":\"shell\",\"input\":{}}]}";
	CHECK_EQ_INT(rk_model_reply_parse(RK_MODEL_API_MESSAGES, no_id, strlen(no_id), tools, 2, &r, &e), -RK_EFAILED);
	CHECK(r.calls == NULL && r.text == NULL);
}

/* the toolset form: tool_use blocks named after the action */
TEST(messages_computer_toolset)
{
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer_toolset_20260801", NULL)};
	tools[1].enable_zoom = 0;
	struct rk_model_config cfg = {.api = RK_MODEL_API_MESSAGES, .base_url = "http://x/v1", .model = "claude"};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_USER, "go");
	const char *body = "{\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"scroll\","
			   "\"toolset_name\":\"computer\",\"input\":{\"coordinate\":[5,6],\"scroll_direction\":"
			   "\"down\",\"scroll_amount\":3}}],\"stop_reason\":\"tool_use\"}";
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_MESSAGES, body, strlen(body), tools, 2, &r, &e) == 0);
	REQUIRE(r.ncalls == 1);
	CHECK_EQ_INT(r.calls[0].native, 1);
	CHECK_EQ_STR(r.calls[0].name, "computer");
	CHECK_EQ_STR(r.calls[0].arguments,
		     "{\"action\":\"scroll\",\"coordinate\":[5,6],\"scroll_direction\":\"down\",\"scroll_amount\":3}");
	rk_model_add_reply(c, &r);
	struct rk_model_message *t = rk_model_add_tool_result(c, "toolu_9", "scrolled");
	t->native = 1;
	rk_model_reply_release(&r);
	cJSON *req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	const cJSON *tool = item(get(req, "tools"), 1);
	CHECK_EQ_STR(str(tool, "type"), "computer_toolset_20260801");
	CHECK(get(tool, "name") == NULL && get(tool, "display_width_px") == NULL);
	CHECK(cJSON_IsFalse(get(get(get(tool, "configs"), "zoom"), "enabled")));
	const cJSON *res = item(get(item(get(req, "messages"), 2), "content"), 0);
	CHECK_EQ_STR(str(res, "toolset_name"), "computer");
	/* the turn replays as the vendor sent it */
	const cJSON *use = item(get(item(get(req, "messages"), 1), "content"), 0);
	CHECK_EQ_STR(str(use, "name"), "scroll");
	cJSON_Delete(req);
	/* rebuilt without the vendor's form: the action names the member again */
	free(c->msgs[1]->vendor_json);
	c->msgs[1]->vendor_json = NULL;
	req = rk_model_request_json(&cfg, c, tools, 2);
	use = item(get(item(get(req, "messages"), 1), "content"), 0);
	CHECK_EQ_STR(str(use, "name"), "scroll");
	CHECK_EQ_STR(str(use, "toolset_name"), "computer");
	CHECK(get(get(use, "input"), "action") == NULL);
	CHECK_EQ_INT(get(get(use, "input"), "scroll_amount")->valueint, 3);
	cJSON_Delete(req);
	rk_model_conversation_free(c);
}

/* a thinking block goes back verbatim; another protocol rebuilds the turn */
TEST(messages_replays_the_vendor_turn)
{
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer_20251124", "computer-use-2025-11-24")};
	struct rk_model_config cfg = {.api = RK_MODEL_API_MESSAGES, .base_url = "http://x/v1", .model = "claude"};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_USER, "go");
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_MESSAGES, anthropic_reply, strlen(anthropic_reply), tools, 2, &r,
				     &e) == 0);
	struct rk_model_message *a = rk_model_add_reply(c, &r);
	CHECK_EQ_STR(a->vendor_json, r.vendor_json);
	CHECK_EQ_INT(a->vendor_api, RK_MODEL_API_MESSAGES);
	CHECK_EQ_INT(a->calls[0].native, 1);
	rk_model_reply_release(&r);
	rk_model_add_tool_result(c, "toolu_01", "clicked")->native = 1;
	rk_model_add_tool_result(c, "toolu_02", "Tue");
	cJSON *req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	cJSON *doc = cJSON_Parse(anthropic_reply);
	CHECK(cJSON_Compare(get(item(get(req, "messages"), 1), "content"), get(doc, "content"), 1));
	cJSON_Delete(doc);
	cJSON_Delete(req);
	/* on responses the thinking cannot go: text and calls are rebuilt */
	cfg.api = RK_MODEL_API_RESPONSES;
	tools[1] = native_tool("computer", NULL);
	req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	const cJSON *in = get(req, "input");
	REQUIRE(cJSON_GetArraySize(in) == 7);
	CHECK_EQ_STR(str(item(in, 1), "role"), "assistant");
	CHECK_EQ_STR(str(item(in, 1), "content"), "Clicking it.");
	CHECK_EQ_STR(str(item(in, 2), "type"), "computer_call");
	CHECK_EQ_STR(str(item(in, 3), "type"), "function_call");
	CHECK_EQ_STR(str(item(in, 4), "type"), "computer_call_output");
	CHECK_EQ_STR(str(item(in, 5), "type"), "function_call_output");
	CHECK_EQ_STR(str(item(get(item(in, 6), "content"), 0), "text"), "computer call toolu_01: clicked");
	cJSON_Delete(req);
	rk_model_conversation_free(c);
}

/* ---- Responses ---- */

TEST(responses_request_shape)
{
	struct rk_model_config cfg = {.api = RK_MODEL_API_RESPONSES, .base_url = "http://x/v1", .model = "gpt"};
	struct rk_model_conversation *c = tool_conversation();
	c->msgs[4]->acknowledged = rk_xstrdup("[{\"id\":\"cu_sc_1\",\"code\":\"malicious_instructions\"}]");
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer", NULL)};
	cJSON *req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	CHECK_EQ_STR(str(req, "model"), "gpt");
	CHECK_EQ_STR(str(req, "instructions"), "You operate a computer.\n\nBe brief.");
	CHECK(cJSON_IsFalse(get(req, "store")));
	CHECK(cJSON_GetArraySize(get(req, "include")) == 1 &&
	      !strcmp(item(get(req, "include"), 0)->valuestring, "reasoning.encrypted_content"));
	CHECK(get(req, "max_output_tokens") == NULL && get(req, "previous_response_id") == NULL);
	CHECK(get(req, "truncation") == NULL);
	const cJSON *in = get(req, "input");
	REQUIRE(cJSON_GetArraySize(in) == 8);
	/* the user's turn: text, the label, the image as a data URL */
	const cJSON *u = get(item(in, 0), "content");
	CHECK_EQ_STR(str(item(in, 0), "role"), "user");
	CHECK_EQ_STR(str(item(u, 0), "type"), "input_text");
	CHECK_EQ_STR(str(item(u, 2), "type"), "input_image");
	CHECK_EQ_STR(str(item(u, 2), "image_url"), "data:image/jpeg;base64,/9j/4AAQSkZJRgD/2Q==");
	CHECK_EQ_STR(str(item(u, 2), "detail"), "auto");
	/* the assistant's turn rebuilt: text, a computer_call, a function_call */
	CHECK_EQ_STR(str(item(in, 1), "content"), "On it.");
	const cJSON *cc = item(in, 2);
	CHECK_EQ_STR(str(cc, "type"), "computer_call");
	CHECK_EQ_STR(str(cc, "call_id"), "call_1");
	CHECK_EQ_STR(str(item(in, 3), "type"), "function_call");
	CHECK_EQ_STR(str(item(in, 3), "arguments"), "{\"command\":\"ls\"}");
	/* the native result: the screenshot, the approved checks */
	const cJSON *co = item(in, 4);
	CHECK_EQ_STR(str(co, "type"), "computer_call_output");
	CHECK_EQ_STR(str(co, "call_id"), "call_1");
	CHECK_EQ_STR(str(get(co, "output"), "type"), "computer_screenshot");
	CHECK(strncmp(rk_json_string(get(co, "output"), "image_url", ""), "data:image/png;base64,iVBORw0K", 30) == 0);
	CHECK_EQ_STR(str(item(get(co, "acknowledged_safety_checks"), 0), "id"), "cu_sc_1");
	/* the function result's text */
	CHECK_EQ_STR(str(item(in, 5), "type"), "function_call_output");
	CHECK_EQ_STR(str(item(in, 5), "call_id"), "call_2");
	CHECK_EQ_STR(str(item(in, 5), "output"), "file.txt");
	/* the native result's text, after the run of results; then the note */
	CHECK_EQ_STR(str(item(get(item(in, 6), "content"), 0), "text"), "computer call call_1: clicked");
	CHECK_EQ_STR(str(item(get(item(in, 7), "content"), 0), "text"), "A person says: hurry.");
	/* tools */
	const cJSON *t = get(req, "tools");
	REQUIRE(cJSON_GetArraySize(t) == 2);
	CHECK_EQ_STR(str(item(t, 0), "type"), "function");
	CHECK_EQ_STR(str(item(t, 0), "name"), "shell");
	CHECK(cJSON_IsFalse(get(item(t, 0), "strict")));
	CHECK(cJSON_Compare(get(item(t, 0), "parameters"), shell_params, 1));
	CHECK_EQ_STR(str(item(t, 1), "type"), "computer");
	CHECK_EQ_INT(cJSON_GetArraySize(item(t, 1)), 1); /* the GA tool has no other field */
	cJSON_Delete(req);

	/* the preview tool: its display, environment and truncation; max_output_tokens */
	tools[1] = native_tool("computer_use_preview", NULL);
	cfg.max_tokens = 2048;
	req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	const cJSON *pt = item(get(req, "tools"), 1);
	CHECK_EQ_STR(str(pt, "type"), "computer_use_preview");
	CHECK_EQ_INT(get(pt, "display_width")->valueint, 1280);
	CHECK_EQ_INT(get(pt, "display_height")->valueint, 800);
	CHECK_EQ_STR(str(pt, "environment"), "linux");
	CHECK_EQ_STR(str(req, "truncation"), "auto");
	CHECK_EQ_INT(get(req, "max_output_tokens")->valueint, 2048);
	cJSON_Delete(req);

	/* a function result with an image carries it in a content list; a
	 * native result whose frame was pruned carries a placeholder */
	struct rk_model_message *t2 = c->msgs[5];
	rk_model_message_add_image(c, t2, fake_png, sizeof(fake_png), "h3", "frame 3");
	rk_model_prune_images(c, 1, 0);
	req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	in = get(req, "input");
	const cJSON *fo = get(item(in, 5), "output");
	REQUIRE(cJSON_IsArray(fo));
	CHECK_EQ_STR(str(item(fo, 0), "text"), "file.txt");
	CHECK_EQ_STR(str(item(fo, 2), "type"), "input_image");
	const char *ph = rk_json_string(get(item(in, 4), "output"), "image_url", "");
	CHECK(strncmp(ph, "data:image/png;base64,", 22) == 0 && strlen(ph) < 140);
	CHECK(strstr(str(item(get(item(in, 6), "content"), 0), "text"), "[screenshot omitted") != NULL);
	cJSON_Delete(req);
	rk_model_conversation_free(c);

	struct rk_model_http h;
	struct rk_error e;
	cfg.api_key = KEY;
	REQUIRE(rk_model_request_http(&cfg, tools, 2, &h, &e) == 0);
	CHECK_EQ_STR(h.path, "/responses");
	CHECK_EQ_STR(h.key_header, "Authorization");
	CHECK(h.headers[1] == NULL);
	rk_model_http_release(&h);
	struct rk_model_tool claude = native_tool("computer_20250124", "computer-use-2025-01-24");
	CHECK_EQ_INT(rk_model_request_http(&cfg, &claude, 1, &h, &e), -RK_EINVALID);
}

static const char openai_reply[] =
	"{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"error\":null,"
	"\"incomplete_details\":null,\"output\":["
	"{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"gAAAAB-opaque\"},"
	"{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":["
	"{\"type\":\"output_text\",\"text\":\"Let me look.\",\"annotations\":[]}]},"
	"{\"type\":\"computer_call\",\"id\":\"cu_1\",\"call_id\":\"call_c1\",\"status\":\"completed\","
	"\"actions\":[{\"type\":\"click\",\"button\":\"left\",\"x\":10,\"y\":20},{\"type\":\"type\",\"text\":\"hi\"}],"
	"\"pending_safety_checks\":[{\"id\":\"cu_sc_1\",\"code\":\"malicious_instructions\",\"message\":\"m\"}]},"
	"{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_f1\",\"name\":\"shell\","
	"\"arguments\":\"{\\\"command\\\":\\\"date\\\"}\",\"status\":\"completed\"}],"
	"\"usage\":{\"input_tokens\":1500,\"input_tokens_details\":{\"cached_tokens\":1024},\"output_tokens\":77,"
	"\"output_tokens_details\":{\"reasoning_tokens\":50},\"total_tokens\":1577}}";

TEST(responses_reply_parse)
{
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer", NULL)};
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_RESPONSES, openai_reply, strlen(openai_reply), tools, 2, &r, &e) ==
		0);
	CHECK_EQ_STR(r.text, "Let me look.");
	REQUIRE(r.ncalls == 2);
	CHECK_EQ_STR(r.calls[0].id, "call_c1");
	CHECK_EQ_STR(r.calls[0].name, "computer");
	CHECK_EQ_INT(r.calls[0].native, 1);
	CHECK_EQ_STR(r.calls[0].arguments, "{\"actions\":[{\"type\":\"click\",\"button\":\"left\",\"x\":10,\"y\":20},"
					   "{\"type\":\"type\",\"text\":\"hi\"}]}");
	CHECK_EQ_STR(r.calls[0].safety_checks,
		     "[{\"id\":\"cu_sc_1\",\"code\":\"malicious_instructions\",\"message\":\"m\"}]");
	CHECK_EQ_STR(r.calls[1].id, "call_f1");
	CHECK_EQ_STR(r.calls[1].name, "shell");
	CHECK_EQ_STR(r.calls[1].arguments, "{\"command\":\"date\"}");
	CHECK_EQ_INT(r.calls[1].native, 0);
	CHECK_EQ_STR(r.finish_reason, "completed");
	CHECK_EQ_INT(r.prompt_tokens, 1500);
	CHECK_EQ_INT(r.completion_tokens, 77);
	CHECK_EQ_INT(r.cached_tokens, 1024);
	CHECK_EQ_INT(r.vendor_api, RK_MODEL_API_RESPONSES);
	cJSON *doc = cJSON_Parse(openai_reply);
	CHECK(same_json(r.vendor_json, get(doc, "output")));
	cJSON_Delete(doc);
	rk_model_reply_release(&r);

	/* the preview's single action; an incomplete response says why */
	const char *preview = "{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},"
			      "\"output\":[{\"type\":\"computer_call\",\"id\":\"cu_2\",\"call_id\":\"call_c2\","
			      "\"action\":{\"type\":\"screenshot\"},\"pending_safety_checks\":[]}]}";
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_RESPONSES, preview, strlen(preview), tools, 2, &r, &e) == 0);
	CHECK_EQ_STR(r.calls[0].arguments, "{\"action\":{\"type\":\"screenshot\"}}");
	CHECK(r.calls[0].safety_checks == NULL);
	CHECK_EQ_STR(r.finish_reason, "max_output_tokens");
	CHECK(r.text == NULL);
	CHECK_EQ_INT(r.prompt_tokens, -1);
	rk_model_reply_release(&r);

	/* a failed response is an error with its message */
	const char *failed = "{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"it broke\"},"
			     "\"output\":[]}";
	CHECK_EQ_INT(rk_model_reply_parse(RK_MODEL_API_RESPONSES, failed, strlen(failed), tools, 2, &r, &e),
		     -RK_EFAILED);
	CHECK(strstr(e.message, "answered with an error: \"it broke\"") != NULL);
	const char *noid = "{\"output\":[{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{}\"}]}";
	CHECK_EQ_INT(rk_model_reply_parse(RK_MODEL_API_RESPONSES, noid, strlen(noid), tools, 2, &r, &e), -RK_EFAILED);
	CHECK(strstr(e.message, "a function_call has no call_id") != NULL);
}

/* the previous output items go back as they came, reasoning included */
TEST(responses_replays_the_vendor_turn)
{
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer", NULL)};
	struct rk_model_config cfg = {.api = RK_MODEL_API_RESPONSES, .base_url = "http://x/v1", .model = "gpt"};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "sys");
	rk_model_add_message(c, RK_MODEL_USER, "go");
	struct rk_model_reply r;
	struct rk_error e;
	REQUIRE(rk_model_reply_parse(RK_MODEL_API_RESPONSES, openai_reply, strlen(openai_reply), tools, 2, &r, &e) ==
		0);
	struct rk_model_message *a = rk_model_add_reply(c, &r);
	CHECK_EQ_STR(a->calls[0].safety_checks, r.calls[0].safety_checks);
	rk_model_reply_release(&r);
	struct rk_model_message *t = rk_model_add_tool_result(c, "call_c1", NULL);
	t->native = 1;
	rk_model_message_add_image(c, t, fake_png, sizeof(fake_png), "h9", "frame 9");
	rk_model_add_tool_result(c, "call_f1", "Tue");
	cJSON *req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	const cJSON *in = get(req, "input");
	REQUIRE(cJSON_GetArraySize(in) == 7);
	cJSON *doc = cJSON_Parse(openai_reply);
	const cJSON *out = get(doc, "output");
	for (int i = 0; i < 4; i++)
		CHECK(cJSON_Compare(item(in, 1 + i), item(out, i), 1));
	CHECK_EQ_STR(str(item(in, 1), "encrypted_content"), "gAAAAB-opaque");
	cJSON_Delete(doc);
	CHECK_EQ_STR(str(item(in, 5), "type"), "computer_call_output");
	CHECK(get(item(in, 5), "acknowledged_safety_checks") == NULL); /* none approved */
	CHECK_EQ_STR(str(item(in, 6), "type"), "function_call_output");
	cJSON_Delete(req);
	/* on messages the reasoning cannot go: the turn is rebuilt */
	cfg.api = RK_MODEL_API_MESSAGES;
	tools[1] = native_tool("computer_20250124", "computer-use-2025-01-24");
	req = rk_model_request_json(&cfg, c, tools, 2);
	REQUIRE(req != NULL);
	const cJSON *ac = get(item(get(req, "messages"), 1), "content");
	REQUIRE(cJSON_GetArraySize(ac) == 3);
	CHECK_EQ_STR(str(item(ac, 0), "text"), "Let me look.");
	CHECK_EQ_STR(str(item(ac, 1), "id"), "call_c1");
	CHECK(cJSON_IsArray(get(get(item(ac, 1), "input"), "actions")));
	cJSON_Delete(req);
	rk_model_conversation_free(c);
}

/* ---- chat ---- */

TEST(chat_refuses_a_native_tool_and_sends_the_image_type)
{
	struct rk_model_config cfg = {.api = RK_MODEL_API_CHAT, .base_url = "http://127.0.0.1:9/v1", .model = "m"};
	struct rk_model_conversation *c = tool_conversation();
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer", NULL)};
	CHECK(rk_model_request_json(&cfg, c, tools, 2) == NULL);
	struct rk_model_http h;
	struct rk_error e;
	CHECK_EQ_INT(rk_model_request_http(&cfg, tools, 2, &h, &e), -RK_EINVALID);
	CHECK_EQ_STR(e.message, "the chat protocol has no native computer tool");
	struct rk_model_reply r;
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 2, &r, &e), -RK_EINVALID);
	CHECK_EQ_INT(r.attempts, 0); /* nothing was sent */
	cJSON *req = rk_model_request_json(&cfg, c, tools, 1);
	REQUIRE(req != NULL);
	const cJSON *u = get(item(get(req, "messages"), 2), "content");
	CHECK_EQ_STR(str(get(item(u, 2), "image_url"), "url"), "data:image/jpeg;base64,/9j/4AAQSkZJRgD/2Q==");
	cJSON_Delete(req);
	REQUIRE(rk_model_request_http(&cfg, tools, 1, &h, &e) == 0);
	CHECK_EQ_STR(h.path, "/chat/completions");
	CHECK(h.key_header == NULL); /* no key configured */
	rk_model_http_release(&h);
	rk_model_conversation_free(c);
}

/* ---- round trips ---- */

static const char anthropic_done[] =
	"{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
	"\"Done.\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}";

TEST(messages_round_trip)
{
	struct server s = {.nsteps = 3};
	s.steps[0] = (struct step){529, NULL,
				   "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
				   "\"Overloaded\"},\"request_id\":\"req_1\"}"};
	s.steps[1] = (struct step){200, NULL, anthropic_reply};
	s.steps[2] = (struct step){200, NULL, anthropic_done};
	REQUIRE(server_start(&s) == 0);
	struct rk_model_config cfg;
	config_for(&cfg, "messages", s.port);
	cfg.upload_images = 0; /* the image inline here (uploaded: files_round_trip) */
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer_20251124", "computer-use-2025-11-24")};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "sys");
	rk_model_add_message(c, RK_MODEL_USER, "click it");
	struct rk_model_reply r;
	struct rk_error e;
	int rc = rk_model_complete(&cfg, c, tools, 2, &r, &e);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		printf("  %s\n", e.message);
	CHECK_EQ_INT(r.attempts, 2); /* 529 overloaded is retried */
	CHECK_EQ_INT(r.http_status, 200);
	REQUIRE(r.ncalls == 2);
	CHECK_EQ_INT(r.calls[0].native, 1);
	rk_model_add_reply(c, &r);
	rk_model_reply_release(&r);
	struct rk_model_message *t = rk_model_add_tool_result(c, "toolu_01", "clicked");
	t->native = 1;
	rk_model_message_add_image(c, t, fake_png, sizeof(fake_png), "h1", "frame 1");
	rk_model_add_tool_result(c, "toolu_02", "Tue");
	rc = rk_model_complete(&cfg, c, tools, 2, &r, &e);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.text, "Done.");
	CHECK_EQ_STR(r.finish_reason, "end_turn");
	CHECK_EQ_INT(r.cached_tokens, -1);
	rk_model_reply_release(&r);
	rk_model_config_release(&cfg);
	server_stop(&s);
	REQUIRE(s.served == 3);
	for (int i = 0; i < 3; i++) {
		const struct seen *w = &s.seen[i];
		CHECK_EQ_STR(w->request_line, "POST /v1/messages?beta=true HTTP/1.1");
		char *k = header(w, "x-api-key"), *v = header(w, "anthropic-version"), *b = header(w, "anthropic-beta"),
		     *ct = header(w, "content-type"), *auth = header(w, "authorization");
		CHECK_EQ_STR(k, KEY);
		CHECK_EQ_STR(v, "2026-10-21");
		CHECK_EQ_STR(b, "computer-use-2025-11-24");
		CHECK_EQ_STR(ct, "application/json");
		CHECK(auth == NULL);
		free(k), free(v), free(b), free(ct), free(auth);
	}
	/* the second turn: the reply's content verbatim, then one user turn of results */
	cJSON *body = cJSON_Parse(s.seen[2].body);
	REQUIRE(body != NULL);
	CHECK_EQ_STR(str(body, "model"), "scripted");
	/* prompt caching: the system prompt as a block with a breakpoint, and
	 * one on the last block of each of the last two user turns */
	const cJSON *sys = get(body, "system");
	CHECK(cJSON_GetArraySize(sys) == 1);
	CHECK_EQ_STR(str(item(sys, 0), "text"), "sys");
	CHECK_EQ_STR(str(get(item(sys, 0), "cache_control"), "type"), "ephemeral");
	const cJSON *msgs = get(body, "messages");
	REQUIRE(cJSON_GetArraySize(msgs) == 3);
	CHECK_EQ_STR(str(get(item(get(item(msgs, 0), "content"), 0), "cache_control"), "type"), "ephemeral");
	cJSON *doc = cJSON_Parse(anthropic_reply);
	CHECK(cJSON_Compare(get(item(msgs, 1), "content"), get(doc, "content"), 1));
	cJSON_Delete(doc);
	const cJSON *res = get(item(msgs, 2), "content");
	REQUIRE(cJSON_GetArraySize(res) == 2);
	CHECK_EQ_STR(str(item(res, 0), "tool_use_id"), "toolu_01");
	CHECK(get(item(res, 0), "cache_control") == NULL);
	CHECK_EQ_STR(str(item(res, 1), "tool_use_id"), "toolu_02");
	CHECK_EQ_STR(str(get(item(res, 1), "cache_control"), "type"), "ephemeral");
	CHECK_EQ_INT(count_key(body, "cache_control"), 3); /* of the API's 4 */
	cJSON_Delete(body);
	/* the first request: two breakpoints, system and its one user turn */
	body = cJSON_Parse(s.seen[0].body);
	REQUIRE(body != NULL);
	CHECK_EQ_INT(count_key(body, "cache_control"), 2);
	cJSON_Delete(body);
	server_free(&s);
	rk_model_conversation_free(c);
}

TEST(responses_round_trip)
{
	struct server s = {.nsteps = 3};
	s.steps[0] = (struct step){429, "Retry-After: 0\r\n",
				   "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"param\":null,"
				   "\"code\":\"rate_limit_exceeded\"}}"};
	s.steps[1] = (struct step){200, NULL, openai_reply};
	s.steps[2] = (struct step){
		200, NULL,
		"{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
		"\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\"}]}],\"usage\":"
		"{\"input_tokens\":9,\"output_tokens\":1,\"input_tokens_details\":{\"cached_tokens\":0}}}"};
	REQUIRE(server_start(&s) == 0);
	struct rk_model_config cfg;
	config_for(&cfg, "responses", s.port);
	cfg.upload_images = 0; /* the image inline here (uploaded: files_round_trip) */
	cfg.cache_key = rk_xstrdup("rakazo-run_wire");
	struct rk_model_tool tools[2] = {shell_tool(), native_tool("computer", NULL)};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "sys");
	rk_model_add_message(c, RK_MODEL_USER, "click it");
	struct rk_model_reply r;
	struct rk_error e;
	int rc = rk_model_complete(&cfg, c, tools, 2, &r, &e);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		printf("  %s\n", e.message);
	CHECK_EQ_INT(r.attempts, 2); /* 429 is retried */
	REQUIRE(r.ncalls == 2);
	struct rk_model_message *a = rk_model_add_reply(c, &r);
	rk_model_reply_release(&r);
	struct rk_model_message *t = rk_model_add_tool_result(c, "call_c1", NULL);
	t->native = 1;
	t->acknowledged = rk_xstrdup(a->calls[0].safety_checks); /* a person approved */
	rk_model_message_add_image(c, t, fake_png, sizeof(fake_png), "h1", "frame 1");
	rk_model_add_tool_result(c, "call_f1", "Tue");
	rc = rk_model_complete(&cfg, c, tools, 2, &r, &e);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.text, "Done.");
	CHECK_EQ_INT(r.cached_tokens, 0);
	rk_model_reply_release(&r);
	rk_model_config_release(&cfg);
	server_stop(&s);
	REQUIRE(s.served == 3);
	for (int i = 0; i < 3; i++) {
		const struct seen *w = &s.seen[i];
		CHECK_EQ_STR(w->request_line, "POST /v1/responses HTTP/1.1");
		char *auth = header(w, "authorization"), *k = header(w, "x-api-key");
		CHECK_EQ_STR(auth, "Bearer " KEY);
		CHECK(k == NULL);
		free(auth), free(k);
	}
	cJSON *body = cJSON_Parse(s.seen[2].body);
	REQUIRE(body != NULL);
	CHECK_EQ_STR(str(body, "instructions"), "sys");
	CHECK(cJSON_IsFalse(get(body, "store")));
	CHECK_EQ_STR(str(body, "prompt_cache_key"), "rakazo-run_wire");
	const cJSON *in = get(body, "input");
	REQUIRE(cJSON_GetArraySize(in) == 7);
	cJSON *doc = cJSON_Parse(openai_reply);
	CHECK(cJSON_Compare(item(in, 1), item(get(doc, "output"), 0), 1)); /* the reasoning item */
	cJSON_Delete(doc);
	const cJSON *co = item(in, 5);
	CHECK_EQ_STR(str(co, "type"), "computer_call_output");
	CHECK_EQ_STR(str(co, "call_id"), "call_c1");
	CHECK_EQ_STR(str(item(get(co, "acknowledged_safety_checks"), 0), "id"), "cu_sc_1");
	CHECK_EQ_STR(str(item(in, 6), "output"), "Tue");
	cJSON_Delete(body);
	server_free(&s);
	rk_model_conversation_free(c);
}

TEST(vendor_errors_are_worded_and_keep_the_key_out)
{
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_USER, "hi");
	struct rk_model_tool tools[1] = {shell_tool()};
	struct rk_model_reply r;
	struct rk_error e;
	struct rk_model_config cfg;

	/* OpenAI's 400 names the param; not retried */
	struct server s = {.nsteps = 1};
	s.steps[0] = (struct step){400, NULL,
				   "{\"error\":{\"message\":\"Invalid schema for function 'shell'.\",\"type\":"
				   "\"invalid_request_error\",\"param\":\"tools[0].parameters\",\"code\":"
				   "\"invalid_function_parameters\"}}"};
	REQUIRE(server_start(&s) == 0);
	config_for(&cfg, "responses", s.port);
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), -RK_EINVALID);
	CHECK_EQ_INT(r.attempts, 1);
	CHECK(strstr(e.message, "HTTP 400") != NULL);
	CHECK(strstr(e.message, "invalid_request_error: \"Invalid schema for function 'shell'.\" (param: "
			       "\"tools[0].parameters\")") != NULL);
	rk_model_config_release(&cfg);
	server_stop(&s);
	server_free(&s);

	/* Anthropic's 401 names its error type and the key's source, not the key */
	struct server s2 = {.nsteps = 1};
	s2.steps[0] = (struct step){401, NULL,
				    "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":"
				    "\"invalid x-api-key " KEY "\"}}"};
	REQUIRE(server_start(&s2) == 0);
	config_for(&cfg, "messages", s2.port);
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), -RK_EDENIED);
	CHECK(strstr(e.message, "authentication_error: \"invalid x-api-key [redacted]\"") != NULL);
	CHECK(strstr(e.message, "check the API key from --api-key") != NULL);
	CHECK(strstr(e.message, KEY) == NULL && strstr(e.message, "SECRET") == NULL);
	rk_model_config_release(&cfg);
	server_stop(&s2);
	server_free(&s2);

	/* 529 until the retries run out: unavailable, after every attempt */
	struct server s3 = {.nsteps = 2};
	for (int i = 0; i < 2; i++)
		s3.steps[i] = (struct step){529, NULL,
					    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
					    "\"Overloaded\"}}"};
	REQUIRE(server_start(&s3) == 0);
	config_for(&cfg, "messages", s3.port);
	cfg.max_retries = 1;
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), -RK_EUNAVAILABLE);
	CHECK_EQ_INT(r.attempts, 2);
	CHECK(strstr(e.message, "HTTP 529") && strstr(e.message, "overloaded_error"));
	rk_model_config_release(&cfg);
	server_stop(&s3);
	server_free(&s3);
	rk_model_conversation_free(c);
}

TEST(key_never_in_the_log)
{
	char *path = rk_xasprintf("%s/log/rakazo.log", data_dir);
	struct rk_buf b = RK_BUF_INIT;
	rk_buf_init(&b);
	REQUIRE(rk_fs_read_all(path, 64u << 20, &b, NULL) == 0);
	CHECK(strstr(b.data, "model: POST http://127.0.0.1:") != NULL); /* the log was written */
	CHECK(strstr(b.data, "/v1/messages?beta=true") != NULL);
	CHECK(strstr(b.data, KEY) == NULL);
	CHECK(strstr(b.data, "SECRET") == NULL);
	rk_buf_release(&b);
	free(path);
}

/* Screenshots sent once (model_files.c): uploaded before the request that
 * first carries them, referred to by id, deleted once pruned; an endpoint
 * without the API gets them inline. */
TEST(files_round_trip)
{
	struct server s = {.nsteps = 7};
	s.steps[0] = (struct step){200, NULL,
				   "{\"id\":\"file_011CNha8iCJcU1wXNR6q4V8w\",\"type\":\"file\",\"filename\":\"s.png\","
				   "\"mime_type\":\"image/png\",\"size_bytes\":12}"};
	s.steps[1] = (struct step){200, NULL, anthropic_done};
	s.steps[2] = (struct step){200, NULL, "{\"id\":\"file_011CNha8iCJcU1wXNR6q4V8w\",\"type\":\"file_deleted\"}"};
	s.steps[3] = (struct step){200, NULL, "{\"id\":\"file_011CSecond\",\"type\":\"file\"}"};
	s.steps[4] = (struct step){200, NULL, anthropic_done};
	/* a refused file source: sent again inline, and uploads stay off */
	s.steps[5] = (struct step){400, NULL,
				   "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
				   "\"file source not supported\"}}"};
	s.steps[6] = (struct step){200, NULL, anthropic_done};
	REQUIRE(server_start(&s) == 0);
	struct rk_model_config cfg;
	config_for(&cfg, "messages", s.port);
	CHECK_EQ_INT(cfg.upload_images, 1); /* "auto": on for messages */
	struct rk_model_tool tools[1] = {native_tool("computer_20251124", "computer-use-2025-11-24")};
	struct rk_model_conversation *c = rk_model_conversation_new();
	rk_model_add_message(c, RK_MODEL_SYSTEM, "sys");
	struct rk_model_message *u = rk_model_add_message(c, RK_MODEL_USER, "look");
	rk_model_message_add_image(c, u, fake_png, sizeof(fake_png), "h1", "frame 1");
	struct rk_model_reply r;
	struct rk_error e;
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), 0);
	rk_model_reply_release(&r);
	CHECK_EQ_STR(u->parts[1].file_id, "file_011CNha8iCJcU1wXNR6q4V8w");
	/* without a request, nothing is uploaded: request_json shows what is known */
	cJSON *req = rk_model_request_json(&cfg, c, tools, 1);
	CHECK_EQ_STR(str(get(item(get(item(get(req, "messages"), 0), "content"), 2), "source"), "type"), "file");
	cJSON_Delete(req);
	/* a second frame: uploaded; the first pruned (keep 1, no block): deleted */
	u = rk_model_add_message(c, RK_MODEL_USER, "again");
	rk_model_message_add_image(c, u, fake_png, sizeof(fake_png) - 1, "h2", "frame 2");
	CHECK_EQ_INT(rk_model_prune_images(c, 1, 0), 1);
	CHECK_EQ_INT((int)c->nstale, 1);
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), 0);
	rk_model_reply_release(&r);
	CHECK_EQ_INT((int)c->nstale, 0);
	CHECK_EQ_STR(u->parts[1].file_id, "file_011CSecond");
	/* refused: once more inline, and off from then on */
	CHECK_EQ_INT(rk_model_complete(&cfg, c, tools, 1, &r, &e), 0);
	rk_model_reply_release(&r);
	CHECK(u->parts[1].file_id == NULL);
	CHECK_EQ_INT(c->files_off, 1);
	CHECK_EQ_INT((int)c->nstale, 1); /* file_011CSecond, deleted at the end */
	server_stop(&s);
	rk_model_files_end(&cfg, c); /* the server is gone: the delete fails, logged */
	CHECK_EQ_INT((int)c->nstale, 0);
	rk_model_config_release(&cfg);
	REQUIRE(s.served == 7);
	const struct seen *w = &s.seen[0];
	CHECK_EQ_STR(w->request_line, "POST /v1/files HTTP/1.1");
	char *ct = header(w, "content-type"), *b = header(w, "anthropic-beta"), *k = header(w, "x-api-key"),
	     *v = header(w, "anthropic-version");
	CHECK(ct && !strncmp(ct, "multipart/form-data; boundary=rakazo-", 37));
	CHECK_EQ_STR(b, "files-api-2025-04-14");
	CHECK_EQ_STR(k, KEY);
	CHECK_EQ_STR(v, "2026-10-21");
	CHECK(strstr(w->body, "Content-Disposition: form-data; name=\"file\"; filename=\"screenshot-h1.png\"\r\n"
			      "Content-Type: image/png\r\n\r\n") != NULL);
	free(ct), free(b), free(k), free(v);
	w = &s.seen[1];
	CHECK_EQ_STR(w->request_line, "POST /v1/messages?beta=true HTTP/1.1");
	b = header(w, "anthropic-beta");
	CHECK_EQ_STR(b, "computer-use-2025-11-24,files-api-2025-04-14");
	free(b);
	cJSON *body = cJSON_Parse(w->body);
	const cJSON *img = item(get(item(get(body, "messages"), 0), "content"), 2);
	CHECK_EQ_STR(str(img, "type"), "image");
	CHECK_EQ_STR(str(get(img, "source"), "type"), "file");
	CHECK_EQ_STR(str(get(img, "source"), "file_id"), "file_011CNha8iCJcU1wXNR6q4V8w");
	CHECK(strstr(w->body, "base64") == NULL);
	cJSON_Delete(body);
	/* the pruned file is deleted before the new frame goes up */
	CHECK_EQ_STR(s.seen[2].request_line, "DELETE /v1/files/file_011CNha8iCJcU1wXNR6q4V8w HTTP/1.1");
	CHECK_EQ_STR(s.seen[3].request_line, "POST /v1/files HTTP/1.1");
	b = header(&s.seen[2], "anthropic-beta");
	CHECK_EQ_STR(b, "files-api-2025-04-14");
	free(b);
	CHECK(strstr(s.seen[4].body, "\"file_id\":\"file_011CSecond\"") != NULL);
	CHECK(strstr(s.seen[5].body, "\"file_id\":\"file_011CSecond\"") != NULL);
	CHECK(strstr(s.seen[6].body, "file_id") == NULL);
	CHECK(strstr(s.seen[6].body, "\"type\":\"base64\"") != NULL);
	b = header(&s.seen[6], "anthropic-beta");
	CHECK_EQ_STR(b, "computer-use-2025-11-24");
	free(b);
	server_free(&s);
	rk_model_conversation_free(c);

	/* responses: purpose vision, Bearer; a 404 (no Files API) turns uploads off, inline */
	struct server s2 = {.nsteps = 2};
	s2.steps[0] = (struct step){404, NULL, "{\"error\":\"not found\"}"};
	s2.steps[1] = (struct step){200, NULL,
				    "{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
				    "\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\"}]}]}"};
	REQUIRE(server_start(&s2) == 0);
	config_for(&cfg, "responses", s2.port);
	c = rk_model_conversation_new();
	u = rk_model_add_message(c, RK_MODEL_USER, "look");
	rk_model_message_add_image(c, u, fake_png, sizeof(fake_png), "h1", "frame 1");
	CHECK_EQ_INT(rk_model_complete(&cfg, c, NULL, 0, &r, &e), 0);
	rk_model_reply_release(&r);
	CHECK_EQ_INT(c->files_off, 1);
	CHECK(u->parts[1].file_id == NULL);
	rk_model_config_release(&cfg);
	server_stop(&s2);
	REQUIRE(s2.served == 2);
	CHECK_EQ_STR(s2.seen[0].request_line, "POST /v1/files HTTP/1.1");
	k = header(&s2.seen[0], "authorization");
	CHECK(k && !strcmp(k, "Bearer " KEY));
	free(k);
	CHECK(strstr(s2.seen[0].body, "name=\"purpose\"\r\n\r\nvision\r\n") != NULL);
	CHECK(strstr(s2.seen[1].body, "\"image_url\":\"data:image/png;base64,") != NULL);
	server_free(&s2);
	rk_model_conversation_free(c);

	/* chat: never uploads; "upload_images" is checked */
	char *path = rk_path_join(data_dir, "files-config.json");
	struct rk_error fe;
	rk_fs_write_atomic(path, "{\"model\":{\"upload_images\":\"maybe\"}}", 35, 0600, &fe);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.base_url = "http://127.0.0.1:9/v1";
	f.model = "m";
	f.api = "messages";
	f.config_path = path;
	CHECK_EQ_INT(rk_model_config_load(&f, data_dir, &cfg, &e), -RK_EINVALID);
	CHECK(strstr(e.message, "upload_images must be true, false or \"auto\"") != NULL);
	rk_fs_write_atomic(path, "{\"model\":{\"upload_images\":true}}", 32, 0600, &fe);
	f.api = "chat";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.upload_images, 0);
	rk_model_config_release(&cfg);
	rk_fs_write_atomic(path, "{\"model\":{\"upload_images\":false}}", 33, 0600, &fe);
	f.api = "responses";
	REQUIRE(rk_model_config_load(&f, data_dir, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.upload_images, 0);
	rk_model_config_release(&cfg);
	free(path);
}

int main(void)
{
	clear_env();
	char tmpl[] = "/tmp/rk-model-wire-XXXXXX";
	if (!mkdtemp(tmpl)) {
		printf("cannot make a temporary directory\n");
		return 1;
	}
	snprintf(data_dir, sizeof(data_dir), "%s", tmpl);
	setenv("RAKAZO_LOG", "debug", 1);
	rk_log_open(data_dir);
	signal(SIGPIPE, SIG_IGN);
	shell_params = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
				   "\"required\":[\"command\"]}");
	RUN(config_infers_the_protocol_from_the_model_name);
	RUN(config_explicit_protocol_and_keys);
	RUN(messages_request_shape);
	RUN(messages_url_and_headers);
	RUN(messages_reply_parse);
	RUN(messages_computer_toolset);
	RUN(messages_replays_the_vendor_turn);
	RUN(responses_request_shape);
	RUN(responses_reply_parse);
	RUN(responses_replays_the_vendor_turn);
	RUN(chat_refuses_a_native_tool_and_sends_the_image_type);
	RUN(messages_round_trip);
	RUN(responses_round_trip);
	RUN(files_round_trip);
	RUN(vendor_errors_are_worded_and_keep_the_key_out);
	RUN(key_never_in_the_log);
	cJSON_Delete(shell_params);
	if (!getenv("RAKAZO_KEEP_TMP"))
		rk_fs_remove_tree(data_dir, NULL);
	return check_summary("model_wire");
}
