#!/usr/bin/env bats
# The official MCP TypeScript SDK (tests/mcp, installed by tests/mcp/setup.sh)
# drives rakazo's MCP server on a docker computer end to end (issue 24):
# tests/mcp/stdio.mjs over stdio. Skips without node or the SDK, unless
# RAKAZO_REQUIRE_DOCKER=1.

load helper

mcp_deps_or_skip() {
	MCP_DEPS=$(cd "$BATS_TEST_DIRNAME/../mcp" && pwd)
	if ! command -v node >/dev/null || [ ! -d "$MCP_DEPS/node_modules/@modelcontextprotocol/sdk" ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "the MCP SDK is not installed: sh tests/mcp/setup.sh" >&2; return 1; }
		skip "node or @modelcontextprotocol/sdk is missing (sh tests/mcp/setup.sh)"
	fi
}

@test "mcp sdk: the official Client over stdio drives a docker computer: create, observe, act, exec, files, delete" {
	mcp_deps_or_skip
	docker_or_skip
	run env RAKAZO_MCP_DEPS="$MCP_DEPS" RK_XCLIENT="$BATS_TEST_DIRNAME/../fixtures/xclient.py" RK_NAME=mcp-stdio \
		node "$MCP_DEPS/stdio.mjs"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"sdk mcp stdio: "*" passed, 0 failed"* ]]
}

@test "mcp sdk: the official Client over Streamable HTTP (/mcp on rakazo serve, a bearer token) drives a docker computer" {
	mcp_deps_or_skip
	docker_or_skip
	load serve
	PROVIDERS=docker serve_start
	run env RAKAZO_MCP_DEPS="$MCP_DEPS" RK_URL="$URL" RK_TOKEN="$TOKEN" \
		RK_XCLIENT="$BATS_TEST_DIRNAME/../fixtures/xclient.py" RK_NAME=mcp-http node "$MCP_DEPS/http.mjs"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"sdk mcp http: "*" passed, 0 failed"* ]]
}

@test "mcp sdk: @modelcontextprotocol/inspector-cli lists the tools and calls one over stdio" {
	mcp_deps_or_skip
	local insp=$MCP_DEPS/node_modules/@modelcontextprotocol/inspector-cli/build
	[ -f "$insp/cli.js" ] || skip "inspector-cli is missing (sh tests/mcp/setup.sh)"
	rk_fake t
	# it reads its own package.json relative to the working directory: run it from its build/
	run bash -c 'cd "$1" && shift && exec node cli.js "$@"' _ "$insp" --cli "$RAKAZO_BIN" mcp --method tools/list
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | sed -n '/^{/,$p' | rk_json '[t["name"] for t in d["tools"]][:3]')" = \
		'["computer_list", "computer_create", "computer_show"]' ]
	run bash -c 'cd "$1" && shift && exec node cli.js "$@"' _ "$insp" --cli -e "RAKAZO_DATA_DIR=$RAKAZO_DATA_DIR" \
		-e RAKAZO_OWNER=user:bats "$RAKAZO_BIN" mcp --method tools/call --tool-name shell_exec \
		--tool-arg computer=t --tool-arg 'command=echo from-inspector'
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | sed -n '/^{/,$p' | rk_json 'd["structuredContent"]["stdout"]')" = from-inspector ]
}
