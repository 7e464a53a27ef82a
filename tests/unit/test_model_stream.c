/* engine/agent/model_stream.c: the three protocols' server-sent events read
 * in any split (a byte at a time, CRLF, data over several lines, comments
 * and pings), the sink told text and each tool call when it is decided, and
 * the body they add up to read by the same parser as a whole reply. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agent/model.h"
#include "engine/agent/model_wire.h"
#include "engine/util/buf.h"
#include "check.h"

struct seen {
	struct rk_buf text;
	int texts;
	char calls[4][200]; /* "id name args" */
	size_t call_at[4];  /* bytes fed when each came */
	int ncalls;
	size_t fed;
};

static void on_text(void *ctx, const char *d, size_t n)
{
	struct seen *s = ctx;
	rk_buf_add(&s->text, d, n);
	s->texts++;
}

static void on_call(void *ctx, const char *id, const char *name, const char *args)
{
	struct seen *s = ctx;
	if (s->ncalls < 4) {
		snprintf(s->calls[s->ncalls], sizeof(s->calls[0]), "%s %s %s", id, name, args);
		s->call_at[s->ncalls++] = s->fed;
	}
}

/* Feeds text in pieces of step bytes (0: all at once); returns the body or
 * NULL with err. */
static char *feed(int api, const char *text, size_t step, struct seen *s, int *started, struct rk_error *err)
{
	memset(s, 0, sizeof(*s));
	rk_buf_init(&s->text);
	struct rk_model_sink sink = {on_text, on_call, s};
	struct rk_model_stream *st = rk_model_stream_new(api, &sink, 1 << 20);
	size_t len = strlen(text);
	for (size_t off = 0; off < len;) {
		size_t n = step && len - off > step ? step : len - off;
		s->fed = off + n;
		if (rk_model_stream_feed(st, text + off, n) != 0)
			break;
		off += n;
	}
	size_t blen;
	char *body = rk_model_stream_body(st, &blen, err);
	*started = rk_model_stream_started(st);
	rk_model_stream_free(st);
	return body;
}

static const char messages_sse[] =
	": a comment the server sends to keep the line open\r\n"
	"event: message_start\r\n"
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
	"\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,"
	"\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":2048,\"output_tokens\":1}}}\r\n\r\n"
	"event: ping\ndata: {\"type\": \"ping\"}\n\n"
	"event: content_block_start\n"
	"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\","
	"\"signature\":\"\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm, \"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"a list\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EoSIG\"}}\n\n"
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	"event: content_block_start\n"
	"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}\n\n"
	"event: content_block_delta\n"
	/* one event's data over two lines: joined by a newline */
	"data: {\"type\":\"content_block_delta\",\"index\":1,\n"
	"data: \"delta\":{\"type\":\"text_delta\",\"text\":\"look. \\u00fc\"}}\n\n"
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
	"event: content_block_start\n"
	"data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\","
	"\"name\":\"shell\",\"input\":{}}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
	"\"{\\\"comm\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
	"\"and\\\": \\\"ls\\\"}\"}}\n\n"
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
	"event: message_delta\n"
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},"
	"\"usage\":{\"output_tokens\":42}}\n\n"
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

TEST(messages_in_any_split)
{
	size_t steps[] = {0, 1, 7, 97};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		struct rk_error e = {0};
		int started;
		char *body = feed(RK_MODEL_API_MESSAGES, messages_sse, steps[i], &s, &started, &e);
		REQUIRE(body != NULL);
		CHECK(started);
		CHECK_EQ_STR(s.text.data, "Let me look. \xc3\xbc");
		CHECK_EQ_INT(s.ncalls, 1);
		CHECK_EQ_STR(s.calls[0], "toolu_1 shell {\"command\":\"ls\"}");
		/* decided at its block's end, before the message ended */
		CHECK(!steps[i] ||
		      s.call_at[0] < (size_t)(strstr(messages_sse, "event: message_delta") - messages_sse) + steps[i]);
		struct rk_model_reply r;
		REQUIRE(rk_model_reply_parse(RK_MODEL_API_MESSAGES, body, strlen(body), NULL, 0, &r, &e) == 0);
		CHECK_EQ_STR(r.text, "Let me look. \xc3\xbc");
		CHECK_EQ_INT((int)r.ncalls, 1);
		CHECK_EQ_STR(r.calls[0].arguments, "{\"command\":\"ls\"}");
		CHECK_EQ_STR(r.finish_reason, "tool_use");
		CHECK_EQ_INT((int)r.completion_tokens, 42);
		CHECK_EQ_INT((int)r.cached_tokens, 2048);
		CHECK_EQ_INT((int)r.prompt_tokens, 2058);
		/* the thinking block goes back whole, signed */
		CHECK(strstr(r.vendor_json, "{\"type\":\"thinking\",\"thinking\":\"hmm, a list\",\"signature\":\"EoSIG\"}"));
		CHECK(strstr(r.vendor_json, "\"input\":{\"command\":\"ls\"}"));
		rk_model_reply_release(&r);
		free(body);
		rk_buf_release(&s.text);
	}
}

TEST(messages_errors)
{
	struct seen s;
	struct rk_error e = {0};
	int started;
	const char *overloaded =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n"
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
	CHECK(feed(RK_MODEL_API_MESSAGES, overloaded, 5, &s, &started, &e) == NULL);
	CHECK_EQ_INT(e.code, RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "overloaded_error: Overloaded") != NULL);
	CHECK(!started);
	rk_buf_release(&s.text);

	/* cut after some text: it ended before message_stop */
	size_t cut = (size_t)(strstr(messages_sse, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
						    "\"index\":1}") -
			      messages_sse);
	char *half = strndup(messages_sse, cut);
	CHECK(feed(RK_MODEL_API_MESSAGES, half, 3, &s, &started, &e) == NULL);
	CHECK_EQ_INT(e.code, RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "ended before its last event") != NULL);
	CHECK(started);
	free(half);
	rk_buf_release(&s.text);

	/* a server that ignored "stream": its JSON comes back as it is */
	char *body = feed(RK_MODEL_API_MESSAGES, "  {\"content\":[]}", 4, &s, &started, &e);
	CHECK_EQ_STR(body, "  {\"content\":[]}");
	free(body);
	rk_buf_release(&s.text);
}

static const char responses_sse[] =
	"event: response.created\n"
	"data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":"
	"\"in_progress\",\"output\":[]}}\n\n"
	"event: response.output_item.added\n"
	"data: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":"
	"\"message\",\"id\":\"msg_1\",\"content\":[]}}\n\n"
	"event: response.output_text.delta\n"
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"output_index\":0,\"delta\":\"Hi \"}\n\n"
	"event: response.output_text.delta\n"
	"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"output_index\":0,\"delta\":\"there\"}\n\n"
	"event: response.function_call_arguments.delta\n"
	"data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":4,\"delta\":\"{\\\"command\"}\n\n"
	"event: response.output_item.done\n"
	"data: {\"type\":\"response.output_item.done\",\"sequence_number\":5,\"output_index\":1,\"item\":{\"type\":"
	"\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"shell\",\"arguments\":"
	"\"{\\\"command\\\":\\\"ls\\\"}\",\"status\":\"completed\"}}\n\n"
	"event: response.completed\n"
	"data: {\"type\":\"response.completed\",\"sequence_number\":6,\"response\":{\"id\":\"resp_1\",\"status\":"
	"\"completed\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"ENC\"},"
	"{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
	"\"Hi there\"}]},{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"shell\","
	"\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}],\"usage\":{\"input_tokens\":5000,\"input_tokens_details\":"
	"{\"cached_tokens\":4096},\"output_tokens\":9}}}\n\n";

TEST(responses_in_any_split)
{
	size_t steps[] = {0, 1, 13};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		struct rk_error e = {0};
		int started;
		char *body = feed(RK_MODEL_API_RESPONSES, responses_sse, steps[i], &s, &started, &e);
		REQUIRE(body != NULL);
		CHECK_EQ_STR(s.text.data, "Hi there");
		CHECK_EQ_INT(s.ncalls, 1);
		CHECK_EQ_STR(s.calls[0], "call_1 shell {\"command\":\"ls\"}");
		CHECK(!steps[i] || s.call_at[0] < (size_t)(strstr(responses_sse, "event: response.completed") -
							     responses_sse) + steps[i]);
		struct rk_model_reply r;
		REQUIRE(rk_model_reply_parse(RK_MODEL_API_RESPONSES, body, strlen(body), NULL, 0, &r, &e) == 0);
		CHECK_EQ_STR(r.text, "Hi there");
		CHECK_EQ_STR(r.calls[0].id, "call_1");
		CHECK_EQ_INT((int)r.cached_tokens, 4096);
		CHECK(strstr(r.vendor_json, "\"encrypted_content\":\"ENC\"") != NULL);
		rk_model_reply_release(&r);
		free(body);
		rk_buf_release(&s.text);
	}
	struct seen s;
	struct rk_error e = {0};
	int started;
	CHECK(feed(RK_MODEL_API_RESPONSES,
		   "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null,"
		   "\"sequence_number\":2}\n\n",
		   0, &s, &started, &e) == NULL);
	CHECK_EQ_INT(e.code, RK_EUNAVAILABLE);
	CHECK(strstr(e.message, "server_error: boom") != NULL);
	rk_buf_release(&s.text);
}

static const char chat_sse[] =
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
	"\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"On it\"},\"finish_reason\":null}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":"
	"\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"comm\"}}]},\"finish_reason\":null}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
	"\"arguments\":\"and\\\":\\\"ls\\\"}\"}}]},\"finish_reason\":null}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":"
	"\"function\",\"function\":{\"name\":\"files_read\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
	"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":7,\"total_tokens\":37,"
	"\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
	"data: [DONE]\n\n";

TEST(chat_in_any_split)
{
	size_t steps[] = {0, 1, 11};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		struct rk_error e = {0};
		int started;
		char *body = feed(RK_MODEL_API_CHAT, chat_sse, steps[i], &s, &started, &e);
		REQUIRE(body != NULL);
		CHECK_EQ_STR(s.text.data, "On it");
		CHECK_EQ_INT(s.ncalls, 2);
		CHECK_EQ_STR(s.calls[0], "call_a shell {\"command\":\"ls\"}");
		CHECK_EQ_STR(s.calls[1], "call_b files_read {}");
		/* the first is whole when the second begins, before the finish */
		CHECK(!steps[i] || s.call_at[0] < (size_t)(strstr(chat_sse, "\"finish_reason\":\"tool_calls\"") -
							     chat_sse) + steps[i]);
		struct rk_model_reply r;
		REQUIRE(rk_model_reply_parse(RK_MODEL_API_CHAT, body, strlen(body), NULL, 0, &r, &e) == 0);
		CHECK_EQ_STR(r.text, "On it");
		CHECK_EQ_INT((int)r.ncalls, 2);
		CHECK_EQ_STR(r.calls[0].arguments, "{\"command\":\"ls\"}");
		CHECK_EQ_STR(r.finish_reason, "tool_calls");
		CHECK_EQ_INT((int)r.prompt_tokens, 30);
		CHECK_EQ_INT((int)r.completion_tokens, 7);
		rk_model_reply_release(&r);
		free(body);
		rk_buf_release(&s.text);
	}
	struct seen s;
	struct rk_error e = {0};
	int started;
	CHECK(feed(RK_MODEL_API_CHAT, "data: {\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}\n\n", 0, &s,
		   &started, &e) == NULL);
	CHECK(strstr(e.message, "server_error: busy") != NULL);
	rk_buf_release(&s.text);
}

/* "stream" in the config file and flags->no_stream; on by default. */
TEST(config_stream_key)
{
	char path[] = "/tmp/rk-stream-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	struct rk_model_flags f = RK_MODEL_FLAGS_INIT;
	f.base_url = "http://127.0.0.1:9/v1";
	f.model = "m";
	f.config_path = path;
	const char *files[] = {"{}", "{\"model\": {\"stream\": false}}", "{\"model\": {\"stream\": 1}}"};
	int want[] = {1, 0, -1};
	for (int i = 0; i < 3; i++) {
		REQUIRE(ftruncate(fd, 0) == 0 && pwrite(fd, files[i], strlen(files[i]), 0) == (ssize_t)strlen(files[i]));
		struct rk_model_config cfg;
		struct rk_error e = {0};
		int rc = rk_model_config_load(&f, NULL, &cfg, &e);
		if (want[i] < 0) {
			CHECK_EQ_INT(rc, -RK_EINVALID);
			CHECK(strstr(e.message, "stream") != NULL);
			continue;
		}
		REQUIRE(rc == 0);
		CHECK_EQ_INT(cfg.stream, want[i]);
		rk_model_config_release(&cfg);
	}
	REQUIRE(ftruncate(fd, 0) == 0 && pwrite(fd, "{}", 2, 0) == 2);
	f.no_stream = 1;
	struct rk_model_config cfg;
	struct rk_error e = {0};
	REQUIRE(rk_model_config_load(&f, NULL, &cfg, &e) == 0);
	CHECK_EQ_INT(cfg.stream, 0);
	rk_model_config_release(&cfg);
	close(fd);
	unlink(path);
}

int main(void)
{
	RUN(messages_in_any_split);
	RUN(messages_errors);
	RUN(responses_in_any_split);
	RUN(chat_in_any_split);
	RUN(config_stream_key);
	return check_summary("model_stream");
}
