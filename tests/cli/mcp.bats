#!/usr/bin/env bats
# rakazo mcp (issue 24): the MCP server on stdio, spoken to in raw JSON-RPC
# lines as the spec writes them: the handshake revisions, the stateless
# 2026-07-28 revision, the JSON-RPC errors for bad input (and that nothing
# runs then), the tools on a fake computer, rights and approval rules.
# tests/cli/mcp_sdk.bats drives it with the official SDK on docker.

load helper

V=2026-07-28
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'

# mcp LINE...: the lines to `rakazo mcp`, its stdout in $BATS_TEST_TMPDIR/out
# (one reply a line), stderr in .../err.
mcp() {
	printf '%s\n' "$@" | rk mcp >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
}

# call ID TOOL ARGS: a tools/call line (legacy, after INIT).
call() {
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"
}

# reply ID EXPR: EXPR over the reply `r` to request ID (python).
reply() {
	python3 - "$BATS_TEST_TMPDIR/out" "$1" "$2" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
want = json.loads(sys.argv[2])
m = [r for r in rs if r.get("id") == want]
assert len(m) == 1, "%d replies with id %r in %r" % (len(m), want, rs)
r = m[0]
v = eval(sys.argv[3])
print(v if isinstance(v, str) else json.dumps(v))
EOF
}

# structured ID EXPR: EXPR over the structuredContent `s` of a tool's result.
structured() {
	reply "$1" 'r["result"].get("structuredContent") if not r["result"].get("isError") else "ERROR " + r["result"]["content"][0]["text"]' |
		python3 -c '
import json, sys
t = sys.stdin.read()
if t.startswith("ERROR "):
    sys.exit("tool failed: " + t)
s = json.loads(t)
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))
' "$2"
}

@test "mcp: initialize with 2025-11-25 and 2025-06-18, an unknown version gets 2025-11-25; notifications get no reply" {
	mcp "$INIT" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":1,"method":"ping"}' \
		'{"jsonrpc":"2.0","id":"two","method":"tools/list","params":{}}'
	[ "$(wc -l <"$BATS_TEST_TMPDIR/out")" -eq 3 ]
	[ "$(reply 0 'r["result"]["protocolVersion"]')" = 2025-11-25 ]
	[ "$(reply 0 'r["result"]["serverInfo"]["name"]')" = rakazo ]
	[ "$(reply 0 '"tools" in r["result"]["capabilities"]')" = true ]
	[ "$(reply 1 'r["result"]')" = "{}" ]
	names=$(reply '"two"' '" ".join(t["name"] for t in r["result"]["tools"])')
	for t in computer_list computer_create computer_show computer_start computer_stop computer_delete \
		screen_observe screen_act shell_exec file_read file_write file_list; do
		[[ " $names " == *" $t "* ]] || { echo "missing tool $t in: $names"; return 1; }
	done
	# every tool has both schemas and the hints
	reply '"two"' 'all(t["inputSchema"]["type"] == "object" and t["outputSchema"]["type"] == "object" and "readOnlyHint" in t["annotations"] for t in r["result"]["tools"])' | grep -qx true
	reply '"two"' '[t["annotations"] for t in r["result"]["tools"] if t["name"] == "computer_delete"][0]["destructiveHint"]' | grep -qx true
	mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}'
	[ "$(reply 1 'r["result"]["protocolVersion"]')" = 2025-06-18 ]
	mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}'
	[ "$(reply 1 'r["result"]["protocolVersion"]')" = 2025-11-25 ]
}

@test "mcp: malformed JSON-RPC gets the spec's errors, stdout holds only replies, and the server goes on" {
	mcp "$INIT" 'not json' '{"jsonrpc":"2.0","id":1,' '[{"jsonrpc":"2.0","id":2,"method":"ping"}]' \
		'{"id":3,"method":"ping"}' '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}' \
		'{"jsonrpc":"2.0","id":4,"method":7}' '{"jsonrpc":"2.0","id":5,"method":"ping","params":[1]}' \
		'{"jsonrpc":"2.0","id":6,"method":"frobnicate"}' \
		'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}' \
		'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}' \
		'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"computer_list","arguments":[1]}}' \
		'{"jsonrpc":"2.0","id":10,"method":"ping"}'
	python3 - "$BATS_TEST_TMPDIR/out" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["jsonrpc"] == "2.0" for r in rs), rs
codes = [(r.get("id"), r["error"]["code"]) for r in rs if "error" in r]
want = [(None, -32700), (None, -32700), (None, -32600), (3, -32600), (None, -32600), (4, -32600), (5, -32600),
        (6, -32601), (7, -32602), (8, -32602), (9, -32602)]
assert codes == want, codes
assert "no_such_tool" in [r for r in rs if r.get("id") == 7][0]["error"]["message"]
assert [r for r in rs if r.get("id") == 10][0]["result"] == {}
EOF
}

@test "mcp: arguments that do not fit the inputSchema are a tool error and nothing runs" {
	rk_fake t
	mcp "$INIT" "$(call 1 file_write '{"computer":"t","path":"a.txt","content":"x","executable":"yes"}')" \
		"$(call 2 file_write '{"computer":"t","path":"b.txt","content":"x","mode":"0644"}')" \
		"$(call 3 shell_exec '{"computer":"t"}')" \
		"$(call 4 shell_exec '{"computer":"t","command":"touch ran","timeout_ms":1}')" \
		"$(call 5 file_read '{"computer":"t","path":"a.txt","encoding":"utf16"}')"
	for i in 1 2 3 4 5; do
		[ "$(reply $i 'r["result"]["isError"]')" = true ]
		[ "$(reply $i '"structuredContent" in r["result"]')" = false ]
	done
	[[ $(reply 1 'r["result"]["content"][0]["text"]') == "invalid_argument: file_write: argument 'executable' must be a boolean" ]]
	[[ $(reply 2 'r["result"]["content"][0]["text"]') == *"unknown argument 'mode'"* ]]
	[[ $(reply 3 'r["result"]["content"][0]["text"]') == *"argument 'command' is required"* ]]
	[[ $(reply 4 'r["result"]["content"][0]["text"]') == *"'timeout_ms' must be from 250"* ]]
	run rk computer file list t --json
	[[ $output != *a.txt* && $output != *b.txt* && $output != *ran* ]]
}

@test "mcp: a line over 24 MiB is -32600 and the rest of it is dropped; the next line is answered" {
	python3 -c '
import sys
sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"" + "a" * (25 << 20) + "\"}}\n")
sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
' | rk mcp >"$BATS_TEST_TMPDIR/out"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/out")" -eq 2 ]
	[ "$(head -n1 "$BATS_TEST_TMPDIR/out" | rk_json 'd["error"]["code"]')" = -32600 ]
	[[ $(head -n1 "$BATS_TEST_TMPDIR/out" | rk_json 'd["error"]["message"]') == *"too large"* ]]
	[ "$(reply 2 'r["result"]')" = "{}" ]
}

@test "mcp: the tools on a fake computer: create, list, exec with stdout and stderr apart, files, delete" {
	mcp "$INIT" "$(call 1 computer_create '{"name":"m1","provider":"fake"}')" \
		"$(call 2 computer_list '{}')" \
		"$(call 3 shell_exec '{"computer":"m1","command":"echo out; echo err >&2; exit 3"}')" \
		"$(call 4 file_write '{"computer":"m1","path":"dir/hello.txt","content":"héllo\n"}')" \
		"$(call 5 file_read '{"computer":"m1","path":"dir/hello.txt"}')" \
		"$(call 6 file_write '{"computer":"m1","path":"bin.dat","content":"AAEC/w==","encoding":"base64"}')" \
		"$(call 7 file_read '{"computer":"m1","path":"bin.dat","encoding":"base64"}')" \
		"$(call 8 file_read '{"computer":"m1","path":"bin.dat"}')" \
		"$(call 9 file_list '{"computer":"m1","path":"dir"}')" \
		"$(call 10 shell_exec '{"computer":"m1","command":"cat dir/hello.txt; kill -9 $$"}')" \
		"$(call 11 computer_show '{"computer":"nosuch"}')"
	[ "$(structured 1 's["computer"]["state"]')" = running ]
	[ "$(structured 1 's["execution"]["state"]')" = succeeded ]
	[ "$(structured 2 '[c["name"] for c in s["computers"]]')" = '["m1"]' ]
	[ "$(structured 3 's["exit_code"]')" = 3 ]
	[ "$(structured 3 's["stdout"]')" = out ]
	[ "$(structured 3 's["stderr"]')" = err ]
	[ "$(structured 3 's["timed_out"]')" = false ]
	[ "$(structured 4 's["bytes"]')" = 7 ]
	[ "$(structured 5 's["content"]')" = "héllo" ]
	[ "$(structured 7 's["content"]')" = "AAEC/w==" ]
	[[ $(reply 8 'r["result"]["content"][0]["text"]') == "invalid_argument: "*"encoding base64"* ]]
	[ "$(structured 9 '[e["name"] for e in s["entries"]]')" = '["hello.txt"]' ]
	[ "$(structured 10 's["signal"]')" = 9 ]
	[ "$(structured 10 's["exit_code"]')" = null ]
	[[ $(reply 11 'r["result"]["content"][0]["text"]') == "not_found: "* ]]
	# the same computer as the CLI sees it, then gone
	[ "$(rk computer file read m1 dir/hello.txt)" = "héllo" ]
	mcp "$INIT" "$(call 1 computer_delete '{"computer":"m1"}')"
	[ "$(structured 1 's["execution"]["state"]')" = succeeded ]
	run rk computer show m1 --json
	[ "$status" -eq 3 ]
}

@test "mcp: sessions with stdin, zoom, checkpoints and memory on a fake computer" {
	rk_fake t
	mcp "$INIT" "$(call 1 shell_start '{"computer":"t","command":"cat"}')"
	[ "$(structured 1 's["running"]')" = true ]
	s=$(structured 1 's["session"]')
	mcp "$INIT" "$(call 2 shell_input "{\"computer\":\"t\",\"session\":\"$s\",\"input\":\"hi\\\\n\"}")" \
		"$(call 3 shell_kill "{\"computer\":\"t\",\"session\":\"$s\"}")" \
		"$(call 4 shell_input "{\"computer\":\"t\",\"session\":\"$s\",\"input\":\"x\"}")" \
		"$(call 5 screen_zoom '{"computer":"t","region":[0,0,100,50]}')" \
		"$(call 6 screen_zoom '{"computer":"t","region":[0,0,"a",50]}')" \
		"$(call 7 checkpoint_create '{"computer":"t","reason":"from mcp"}')" \
		"$(call 8 checkpoint_list '{"computer":"t"}')" \
		"$(call 9 memory_write '{"path":"notes/fish","content":"a blue whale"}')" \
		"$(call 10 memory_search '{"query":"whale"}')" \
		"$(call 11 memory_read '{"path":"notes/fish"}')" \
		"$(call 12 memory_write '{"path":"notes/fish","content":"x","expected_revision":7}')" \
		"$(call 13 browser_navigate '{"computer":"t","url":"http://127.0.0.1:1/"}')" \
		"$(call 14 browser_act '{"computer":"t"}')"
	[ "$(structured 2 's["output"]')" = hi ]
	[ "$(structured 3 's["running"]')" = false ]
	[[ $(reply 4 'r["result"]["content"][0]["text"]') == not_found:* ]]
	[ "$(reply 5 '[c["type"] for c in r["result"]["content"]]')" = '["image", "text"]' ]
	[ "$(structured 5 's["width"] > 0')" = true ]
	[[ $(reply 6 'r["result"]["content"][0]["text"]') == *"items of argument 'region' must be of type integer"* ]]
	rev=$(structured 7 's["id"]')
	[ "$(structured 7 's["reason"]')" = "from mcp" ]
	[ "$(structured 8 '[c["id"] for c in s["checkpoints"]][0]')" = "$rev" ]
	[ "$(structured 10 '[x["path"] for x in s["results"]]')" = '["notes/fish"]' ]
	[ "$(structured 11 's["content"]')" = "a blue whale" ]
	[ "$(reply 12 'r["result"]["isError"]')" = true ]
	# the fake provider has no page browser; browser_act's schema is the agent tool's, with the computer
	[[ $(reply 13 'r["result"]["content"][0]["text"]') == unsupported:* ]]
	[[ $(reply 14 'r["result"]["content"][0]["text"]') == *"argument 'action' is required"* ]]
	# the same records the CLI shows
	[ "$(rk memory read notes/fish)" = "a blue whale" ]
	rk checkpoint list t --json | grep -qF "$rev"
	# a running computer is refused, as on the command line; stopped, it is restored
	mcp "$INIT" "$(call 1 checkpoint_restore "{\"computer\":\"t\",\"checkpoint\":\"$rev\"}")" \
		"$(call 2 computer_stop '{"computer":"t"}')" \
		"$(call 3 checkpoint_restore '{"computer":"t"}')" \
		"$(call 4 checkpoint_restore '{"computer":"t","checkpoint":"rev-nosuch"}')"
	[[ $(reply 1 'r["result"]["content"][0]["text"]') == conflict:*"stop it first"* ]]
	[ "$(structured 2 's["computer"]["state"]')" = stopped ]
	[ "$(structured 3 's["latest"]')" = true ]
	[[ $(reply 4 'r["result"]["content"][0]["text"]') == not_found:* ]]
}

@test "mcp: resources: a computer's screen and its files, by template; a missing one is the era's error" {
	rk_fake t
	rk computer file write t notes.txt <<<"hello resource"
	id=$(rk_id t)
	res() { printf '{"jsonrpc":"2.0","id":%s,"method":"resources/read","params":{"uri":"%s"}}' "$1" "$2"; }
	mcp "$INIT" '{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}' \
		'{"jsonrpc":"2.0","id":2,"method":"resources/list"}' \
		"$(res 3 "rakazo://computers/t/screen")" "$(res 4 "rakazo://computers/t/files/notes.txt")" \
		"$(res 5 "rakazo://computers/t/files/nosuch.txt")" "$(res 6 "file:///etc/passwd")" \
		"$(res 7 "rakazo://computers/nosuch/screen")"
	[ "$(reply 0 '"resources" in r["result"]["capabilities"]')" = true ]
	[ "$(reply 1 '[t["uriTemplate"] for t in r["result"]["resourceTemplates"]]')" = \
		'["rakazo://computers/{computer}/screen", "rakazo://computers/{computer}/files/{+path}"]' ]
	[ "$(reply 2 '[x["uri"] for x in r["result"]["resources"]]')" = "[\"rakazo://computers/$id/screen\"]" ]
	reply 3 'r["result"]["contents"][0]["blob"]' | base64 -d >"$BATS_TEST_TMPDIR/s.png"
	png_size "$BATS_TEST_TMPDIR/s.png"
	[ "$(reply 4 'r["result"]["contents"][0]["text"]')" = "hello resource" ]
	for i in 5 6 7; do [ "$(reply $i 'r["error"]["code"]')" = -32002 ]; done
	# 2026-07-28 retired -32002: -32602
	mcp "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{$META,\"uri\":\"rakazo://computers/t/files/nosuch\"}}"
	[ "$(reply 1 'r["error"]["code"]')" = -32602 ]
}

@test "mcp: a bot without a grant is denied and nothing runs; with one it works" {
	rk_fake t
	export RAKAZO_OWNER=bot:b1
	mcp "$INIT" "$(call 1 shell_exec '{"computer":"t","command":"touch bot-ran"}')" \
		"$(call 2 file_write '{"computer":"t","path":"bot.txt","content":"x"}')" \
		"$(call 3 computer_delete '{"computer":"t"}')" "$(call 4 computer_list '{}')"
	for i in 1 2 3; do
		[[ $(reply $i 'r["result"]["content"][0]["text"]') == denied:* ]] || { reply $i r; return 1; }
	done
	[ "$(structured 4 's["computers"]')" = "[]" ]
	export RAKAZO_OWNER=user:bats
	run rk computer file list t --json
	[[ $output != *bot-ran* && $output != *bot.txt* ]]
	rk computer show t --json >/dev/null
	rk computer grant t --bot b1
	export RAKAZO_OWNER=bot:b1
	mcp "$INIT" "$(call 1 shell_exec '{"computer":"t","command":"echo hi"}')"
	[ "$(structured 1 's["stdout"]')" = hi ]
}

@test "mcp: an approval rule on a tool refuses the call over MCP, saying how to allow it" {
	rk_fake t
	rk approval set --effect require_approval --match tool --value shell >/dev/null
	mcp "$INIT" "$(call 1 shell_exec '{"computer":"t","command":"touch held"}')"
	text=$(reply 1 'r["result"]["content"][0]["text"]')
	[[ $text == denied:* ]]
	[[ $text == *"rakazo approval set --effect allow"* ]]
	run rk computer file list t --json
	[[ $output != *held* ]]
}

@test "mcp 2026-07-28: server/discover, _meta on every request, resultType, the version-mismatch error" {
	mcp "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$META}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$META}}" \
		'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}' \
		'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}' \
		'{"jsonrpc":"2.0","id":5,"method":"tools/list"}' \
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{$META,\"name\":\"computer_list\",\"arguments\":{}}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{$META,\"protocolVersion\":\"2025-11-25\"}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{$META}}"
	[ "$(reply 1 'r["result"]["resultType"]')" = complete ]
	[ "$(reply 1 'r["result"]["supportedVersions"]')" = '["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]' ]
	[ "$(reply 1 'r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]')" = rakazo ]
	[ "$(reply 1 '"tools" in r["result"]["capabilities"]')" = true ]
	[ "$(reply 2 'r["result"]["resultType"]')" = complete ]
	[ "$(reply 2 'len(r["result"]["tools"]) > 10')" = true ]
	[ "$(reply 3 'r["error"]["code"]')" = -32022 ]
	[ "$(reply 3 'r["error"]["data"]["requested"]')" = 1900-01-01 ]
	[ "$(reply 3 '"2026-07-28" in r["error"]["data"]["supported"]')" = true ]
	[ "$(reply 4 'r["error"]["code"]')" = -32602 ]
	[[ $(reply 4 'r["error"]["message"]') == *clientCapabilities* ]]
	[ "$(reply 5 'r["error"]["code"]')" = -32602 ]
	[ "$(reply 6 'r["result"]["resultType"]')" = complete ]
	[ "$(reply 6 'r["result"]["structuredContent"]["computers"]')" = "[]" ]
	# initialize and ping are the handshake revisions': under 2026-07-28 they are unknown
	[ "$(reply 7 'r["error"]["code"]')" = -32601 ]
	[ "$(reply 8 'r["error"]["code"]')" = -32601 ]
	# discover and tools/list are cacheable results
	[ "$(reply 1 '[r["result"]["ttlMs"] > 0, r["result"]["cacheScope"]]')" = '[true, "public"]' ]
	[ "$(reply 2 '[r["result"]["ttlMs"] > 0, r["result"]["cacheScope"]]')" = '[true, "public"]' ]
}

# --- Streamable HTTP: /mcp on rakazo serve ---------------------------------------

# mpost BODY [CURL-ARG...]: POST /mcp with the token; sets CODE, BODY, and
# HDRS (the reply's headers).
mpost() {
	local body=$1
	shift
	CODE=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -D "$BATS_TEST_TMPDIR/hdrs" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer ${TOK:-$TOKEN}" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "$@" --data-binary "$body" "$URL/mcp")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
	HDRS=$(cat "$BATS_TEST_TMPDIR/hdrs")
}
MH=(-H 'MCP-Protocol-Version: 2026-07-28')

@test "mcp http: JSON answers, 202 for a notification, 405 on GET and DELETE, 401 without a token, 400 for bad JSON" {
	load serve
	serve_start
	mpost "$INIT"
	[ "$CODE" = 200 ]
	[[ $HDRS == *"Content-Type: application/json"* ]]
	[[ $HDRS != *"Mcp-Session-Id"* ]]
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["protocolVersion"]')" = 2025-11-25 ]
	mpost '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$CODE" = 202 ]
	[ -z "$BODY" ]
	mpost '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'len(d["result"]["tools"]) > 10')" = true ]
	for m in GET DELETE; do
		c=$(curl -s -o /dev/null -w '%{http_code}' -X $m -H "Authorization: Bearer $TOKEN" "$URL/mcp")
		[ "$c" = 405 ]
	done
	TOK=nope mpost "$INIT"
	[ "$CODE" = 401 ]
	mpost 'not json'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32700 ]
	mpost '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}' -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32602 ]
}

@test "mcp http 2026-07-28: headers equal to the body or 400 HeaderMismatch; version, _meta and unknown methods" {
	load serve
	serve_start
	disc="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$META}}"
	mpost "$disc" "${MH[@]}" -H 'Mcp-Method: server/discover'
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["resultType"]')" = complete ]
	mpost "$disc" "${MH[@]}"
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32020 ]
	mpost "$disc" "${MH[@]}" -H 'Mcp-Method: tools/list'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32020 ]
	mpost "$disc" -H 'MCP-Protocol-Version: 2025-11-25' -H 'Mcp-Method: server/discover'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32020 ]
	mpost '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}' \
		-H 'MCP-Protocol-Version: 1900-01-01' -H 'Mcp-Method: server/discover'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32022 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["data"]["requested"]')" = 1900-01-01 ]
	mpost '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}' "${MH[@]}" -H 'Mcp-Method: tools/list'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32602 ]
	mpost "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"frob\",\"params\":{$META}}" "${MH[@]}" -H 'Mcp-Method: frob'
	[ "$CODE" = 404 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32601 ]
	# tools/call: Mcp-Name plain or in the Base64 sentinel, and it must be the tool's
	callb="{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{$META,\"name\":\"computer_list\",\"arguments\":{}}}"
	mpost "$callb" "${MH[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: computer_list'
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["structuredContent"]')" = '{"computers": []}' ]
	mpost "$callb" "${MH[@]}" -H 'Mcp-Method: tools/call' -H "Mcp-Name: =?base64?$(printf computer_list | base64)?="
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["resultType"]')" = complete ]
	mpost "$callb" "${MH[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: computer_delete'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32020 ]
	mpost "$callb" "${MH[@]}" -H 'Mcp-Method: tools/call'
	[ "$CODE" = 400 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["error"]["code"]')" = -32020 ]
}

@test "mcp http: a bot's token reaches only what its bot may use; another site's Origin is refused" {
	rk_fake t
	bot=$(rk serve token create mcp-bot --bot b1 2>/dev/null)
	load serve
	serve_start
	TOK=$bot mpost "$INIT"
	[ "$CODE" = 200 ]
	TOK=$bot mpost "$(call 1 computer_list '{}')" -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["structuredContent"]["computers"]')" = "[]" ]
	TOK=$bot mpost "$(call 2 shell_exec '{"computer":"t","command":"touch via-bot"}')" -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["isError"]')" = true ]
	[[ $(printf '%s' "$BODY" | rk_json 'd["result"]["content"][0]["text"]') == denied:* ]]
	# granted, the fake provider still runs on the server's host: never for a bot's token
	rk computer grant t --bot b1
	TOK=$bot mpost "$(call 3 shell_exec '{"computer":"t","command":"touch via-bot"}')" -H 'MCP-Protocol-Version: 2025-11-25'
	[[ $(printf '%s' "$BODY" | rk_json 'd["result"]["content"][0]["text"]') == *"server's host"* ]]
	run rk computer file list t --json
	[[ $output != *via-bot* ]]
	# the member's token works on it
	mpost "$(call 4 shell_exec '{"computer":"t","command":"echo member"}')" -H 'MCP-Protocol-Version: 2025-11-25'
	[ "$(printf '%s' "$BODY" | rk_json 'd["result"]["structuredContent"]["stdout"]')" = member ]
	mpost "$INIT" -H 'Origin: http://evil.example'
	[ "$CODE" = 403 ]
	mpost "$INIT" -H "Origin: http://127.0.0.1:$PORT"
	[ "$CODE" = 200 ]
}
