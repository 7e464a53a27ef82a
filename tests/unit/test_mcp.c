/* api/mcp: the protocol core without a transport or a database: the tool
 * table's schemas, JSON-RPC errors, the two eras, the HTTP statuses and the
 * Streamable HTTP header checks. Nothing here reaches a tool's body (an
 * argument outside its schema is refused first), so no engine is opened. */

#include <stdlib.h>
#include <string.h>

#include "api/mcp.h"
#include "engine/util/buf.h"
#include "check.h"

static cJSON *doc;
static struct rk_mcp_reply rep;

/* Handles msg on m; doc is the reply (NULL when none). */
static void send_msg(struct rk_mcp *m, const char *msg)
{
	struct rk_buf out;
	rk_buf_init(&out);
	cJSON_Delete(doc);
	rk_mcp_handle(m, msg, strlen(msg), &out, &rep);
	doc = rep.replied ? cJSON_Parse(out.data) : NULL;
	rk_buf_release(&out);
}

static int err_code(void)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "error"), "code");
	return cJSON_IsNumber(c) ? c->valueint : 0;
}

static const cJSON *result(void)
{
	return cJSON_GetObjectItemCaseSensitive(doc, "result");
}

#define META                                                                                                           \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"             \
	"clientCapabilities\":{}}"

TEST(tool_table_schemas_parse_and_names_are_unique)
{
	struct rk_mcp *m = rk_mcp_new(NULL, NULL);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}");
	CHECK(result() != NULL);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META "}}");
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(result(), "tools"), *t;
	size_t n = 0;
	cJSON_ArrayForEach(t, tools)
	{
		CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "inputSchema")));
		CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "outputSchema")));
		CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring, rk_mcp_tool_name(n)));
		for (size_t j = 0; j < n; j++)
			CHECK(strcmp(rk_mcp_tool_name(j), rk_mcp_tool_name(n)));
		n++;
	}
	CHECK(n >= 14 && rk_mcp_tool_name(n) == NULL);
	rk_mcp_free(m);
}

TEST(jsonrpc_errors)
{
	struct rk_mcp *m = rk_mcp_new(NULL, NULL);
	send_msg(m, "{");
	CHECK_EQ_INT(err_code(), -32700);
	CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "id")));
	send_msg(m, "[]");
	CHECK_EQ_INT(err_code(), -32600);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}");
	CHECK_EQ_INT(err_code(), -32600);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
	CHECK_EQ_INT(err_code(), -32600);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"ping\"}"); /* duplicate key */
	CHECK_EQ_INT(err_code(), -32700);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}");
	CHECK(!rep.replied);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"); /* a client's response: nothing waits */
	CHECK(!rep.replied);
	rk_mcp_free(m);
}

TEST(handshake_then_legacy_requests)
{
	struct rk_mcp *m = rk_mcp_new(NULL, NULL);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	CHECK_EQ_INT(err_code(), -32602); /* neither initialized nor 2026-07-28 */
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"u\",\"version\":\"1\"}}}");
	CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(result(), "protocolVersion")->valuestring, "2025-06-18"));
	CHECK(!cJSON_GetObjectItemCaseSensitive(result(), "resultType"));
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result(), "tools")));
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\"}");
	CHECK_EQ_INT(err_code(), -32601);
	rk_mcp_free(m);
}

TEST(arguments_outside_the_schema_are_a_tool_error)
{
	struct rk_mcp *m = rk_mcp_new(NULL, NULL);
	static const char *const bad[] = {
		"{\"computer\":1,\"command\":\"true\"}",
		"{\"computer\":\"c\"}",
		"{\"computer\":\"c\",\"command\":\"true\",\"timeout_ms\":1.5}",
		"{\"computer\":\"c\",\"command\":\"true\",\"timeout_ms\":100}",
		"{\"computer\":\"c\",\"command\":\"true\",\"env\":{}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *msg = rk_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{" META
					 ",\"name\":\"shell_exec\",\"arguments\":%s}}",
					 bad[i]);
		send_msg(m, msg);
		free(msg);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result(), "isError")));
		const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result(), "content"), 0);
		CHECK(c && !strncmp(cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring, "invalid_argument: ", 18));
	}
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{" META
		    ",\"name\":\"shell_exec\",\"arguments\":\"x\"}}");
	CHECK_EQ_INT(err_code(), -32602);
	rk_mcp_free(m);
}

TEST(http_statuses_and_headers)
{
	struct rk_mcp_options o = {.transport = "http",
				   .header_version = "2026-07-28",
				   .header_method = "tools/call",
				   .header_name = "=?base64?Y29tcHV0ZXJfbGlzdA==?="};
	struct rk_mcp *m = rk_mcp_new(NULL, &o);
	/* computer_list with no engine fails inside the tool: still a 200 result */
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{" META
		    ",\"name\":\"computer_delete\",\"arguments\":{}}}");
	CHECK_EQ_INT(err_code(), -32020);
	CHECK_EQ_INT(rep.http_status, 400);
	rk_mcp_free(m);
	o.header_method = "frob";
	m = rk_mcp_new(NULL, &o);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"frob\",\"params\":{" META "}}");
	CHECK_EQ_INT(err_code(), -32601);
	CHECK_EQ_INT(rep.http_status, 404);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
	CHECK_EQ_INT(rep.http_status, 202);
	send_msg(m, "nope");
	CHECK_EQ_INT(rep.http_status, 400);
	rk_mcp_free(m);
	/* a legacy client over HTTP: no header at all is 2025-03-26's way */
	struct rk_mcp_options l = {.transport = "http"};
	m = rk_mcp_new(NULL, &l);
	send_msg(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"frob\"}");
	CHECK_EQ_INT(err_code(), -32601);
	CHECK_EQ_INT(rep.http_status, 200);
	rk_mcp_free(m);
}

int main(void)
{
	RUN(tool_table_schemas_parse_and_names_are_unique);
	RUN(jsonrpc_errors);
	RUN(handshake_then_legacy_requests);
	RUN(arguments_outside_the_schema_are_a_tool_error);
	RUN(http_statuses_and_headers);
	cJSON_Delete(doc);
	return check_summary("mcp");
}
