#!/usr/bin/env bats
# Trust (issue 11): secrets, memory, approval rules and authorization, as
# users type them, with runs against tests/emulators/model_server and
# secret_request against the loopback tests/fixtures/echo_server.

load helper
load model

BUILD_DIR=$BATS_TEST_DIRNAME/../../build
ECHO_SERVER=$BUILD_DIR/tests/fixtures/echo_server

teardown() {
	local p
	for p in ${SERVER_PID:-} ${ECHO_PID:-} ${JUDGE_PID:-} ${RUN_PID:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rk_kill_all
}

start_echo() {
	local out=$BATS_TEST_TMPDIR/echo.out
	"$ECHO_SERVER" --log "$BATS_TEST_TMPDIR/echo.log" >"$out" 2>&1 3>&- 4>&- &
	ECHO_PID=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	ECHO_URL=$(sed -n 's|^listening on \(http://.*\)$|\1|p' "$out")
}

# run_until_approval PROMPT: starts `rk run --computer t PROMPT` in the
# background (RUN_PID, its output in run.out) and waits until its call
# waits for a person; sets run_id (the caller's local).
run_until_approval() {
	rk run --computer t --json "$1" >"$BATS_TEST_TMPDIR/run.out" 2>&1 &
	RUN_PID=$!
	wait_for "rk run list --json | grep -q waiting_approval" 30
	run_id=$(rk run list --json | rk_json 'd[0]["id"]')
}

# Fails when "$@" succeeds (a bare `! cmd` never fails a bats test).
refute() {
	if "$@"; then
		echo "unexpectedly succeeded: $*" >&2
		return 1
	fi
}

@test "secret set reads the value from stdin; list and errors never show it" {
	printf 'sk-live-0123456789\n' | rk secret set api --origin https://API.example.com --auth bearer --json >"$BATS_TEST_TMPDIR/set"
	[ "$(rk_json 'd["origin"]' <"$BATS_TEST_TMPDIR/set")" = https://api.example.com:443 ]
	printf 'k2' | rk secret set api --bot b1 --origin https://api.example.com:8443 --auth header:X-Api-Key --json >/dev/null
	run rk secret list --json
	[ "$status" -eq 0 ]
	[[ "$output" != *sk-live* ]]
	[ "$(printf '%s' "$output" | rk_json 'len(d)')" = 2 ]
	[ "$(printf '%s' "$output" | rk_json '[s["auth"] for s in d if s["bot"] == "b1"][0]')" = header:X-Api-Key ]
	# bad input: exit codes, nothing stored
	expect_json_error 8 denied rk secret set x --origin https://u:p@api.example.com --auth bearer --json </dev/null
	expect_json_error 2 invalid_argument rk secret set x --origin https://api.example.com/path --auth bearer --json </dev/null
	expect_json_error 2 invalid_argument rk secret set x --origin https://api.example.com --auth token --json </dev/null
	expect_json_error 2 invalid_argument rk secret set x --origin https://api.example.com --auth bearer --json </dev/null
	expect_json_error 2 usage rk secret set x --auth bearer --json </dev/null
	expect_json_error 2 invalid_argument rk secret set 'a b' --origin https://a.example --auth basic --json </dev/null
	printf 'nopair' | expect_json_error 2 invalid_argument rk secret set b --origin https://a.example --auth basic --json
	[ "$(rk secret list --json | rk_json 'len(d)')" = 2 ]
	# the master key is the owner's only
	[ "$(stat -c %a "$RAKAZO_DATA_DIR/master.key")" = 600 ]
	rk secret rm api --json >/dev/null
	expect_json_error 3 not_found rk secret rm api --json
	[ "$(rk secret list --json | rk_json 'len(d)')" = 1 ]
	refute grep -ra sk-live "$RAKAZO_DATA_DIR"
}

@test "a run uses a secret it never sees: redacted response, nothing in history, logs, the database or a shell's environment" {
	start_echo
	local value='Zq9-secret_VALUE+/=x'
	printf '%s' "$value" | rk secret set svc --origin "$ECHO_URL" --auth bearer >/dev/null
	rk_fake t
	python3 - "$ECHO_URL" >"$BATS_TEST_TMPDIR/scenario.json" <<'EOF'
import json, sys
url = sys.argv[1]
print(json.dumps({"steps": [
  {"expect": {"tools_include": ["secret_request", "request_secret"]},
   "reply": {"tool_calls": [{"name": "secret_request", "arguments": {"name": "svc", "url": url + "/api?x=1"}}]}},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": {"tool_calls": [{"name": "secret_request", "arguments": {"name": "svc", "url": url.replace("127.0.0.1", "localhost") + "/"}}]}},
  {"expect": {"last_tool_result_contains": "may only go to"},
   "reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "env; echo env-done; sleep 120", "yield_ms": 1500}}]}},
  {"expect": {"last_tool_result_contains": "env-done"},
   "reply": {"tool_calls": [{"name": "request_secret", "arguments": {"name": "gh", "origin": "https://api.github.com", "auth": "bearer", "reason": "open a pull request"}}]}},
  {"expect": {"last_tool_result_contains": "rakazo secret set gh"},
   "reply": {"content": "done"}}]}))
EOF
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer t --json "call the service"
	[ "$status" -eq 0 ]
	server_ok
	# the server got it once: the refused call never left
	[ "$(wc -l <"$BATS_TEST_TMPDIR/echo.log")" -eq 1 ]
	# the events (the run's whole output) hold no form of it
	[[ "$output" != *"$value"* ]]
	[[ "$output" != *WnE5LXNlY3JldF9WQUxVRSsvPXg* ]]
	# nor the data directory: database, WAL, logs, terminal history
	refute grep -raF -- "$value" "$RAKAZO_DATA_DIR"
	refute grep -raF -- WnE5LXNlY3JldF9WQUxVRSsvPXg "$RAKAZO_DATA_DIR"
	# (the check can fail: the name it was stored under is there)
	grep -raqF -- svc "$RAKAZO_DATA_DIR"
	# nor the environment of any process the run left (session holders, commands)
	local pid n=0
	for pid in $(rk_pids); do
		refute grep -aqF -- "$value" "/proc/$pid/environ"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] # the shell's sleep and its session holder are still there
	# the bot's ask is listed for the person
	run rk secret list --json
	[ "$(printf '%s' "$output" | rk_json '[s["state"] for s in d if s["name"] == "gh"][0]')" = requested ]
}

@test "memory: cross-user and cross-space reads return nothing; expected revision conflicts" {
	RAKAZO_USER=alice rk memory write notes.md --content 'the door code is 4711' --json >/dev/null
	RAKAZO_USER=alice rk memory write notes.md --content 'the door code is 4712' --expected-revision 1 --json >/dev/null
	[ "$(RAKAZO_USER=alice rk memory read notes.md)" = 'the door code is 4712' ]
	expect_json_error 3 not_found env RAKAZO_USER=bob "$RAKAZO_BIN" memory read notes.md --json
	[ "$(RAKAZO_USER=bob rk memory read --json)" = '[]' ]
	[ "$(RAKAZO_USER=bob rk memory search door --json | rk_json 'len(d["results"])')" = 0 ]
	[ "$(RAKAZO_USER=alice RAKAZO_SPACE=other rk memory search door --json | rk_json 'len(d["results"])')" = 0 ]
	[ "$(RAKAZO_USER=alice rk memory search DOOR --json | rk_json 'd["results"][0]["path"]')" = notes.md ]
	# a concurrent overwrite fails and leaves the stored revision alone
	expect_json_error 4 conflict env RAKAZO_USER=alice "$RAKAZO_BIN" memory write notes.md --content stale --expected-revision 1 --json
	[ "$(RAKAZO_USER=alice rk memory history notes.md --json | rk_json 'len(d)')" = 2 ]
	[ "$(RAKAZO_USER=alice rk memory read notes.md)" = 'the door code is 4712' ]
	# a bot's documents are its own
	RAKAZO_USER=alice rk memory write plan.md --bot b1 --content 'bot plan' --json >/dev/null
	[ "$(RAKAZO_USER=alice rk memory read --bot b1 --json | rk_json 'len(d)')" = 2 ]
	[ "$(RAKAZO_USER=alice rk memory read --bot b2 --json | rk_json 'len(d)')" = 1 ]
	expect_json_error 2 invalid_argument env RAKAZO_USER=alice "$RAKAZO_BIN" memory write ../up.md --content x --json
	expect_json_error 2 usage env RAKAZO_USER=alice "$RAKAZO_BIN" memory write a.md x.md --content x --json
}

@test "approval rules: precedence, personal rules in a shared space, exit codes" {
	export RAKAZO_SPACE=team
	RAKAZO_USER=alice rk approval set --effect require_approval --match category --value write --json >/dev/null
	RAKAZO_USER=alice rk approval set --effect allow --match connector --value memory --json >/dev/null
	local id
	id=$(RAKAZO_USER=alice rk approval set --effect require_approval --match tool --value memory_write --json | rk_json 'd["id"]')
	[ "$(RAKAZO_USER=alice rk approval list --json | rk_json '[r["match"] for r in d]')" = '["tool", "connector", "category"]' ]
	# bob shares the space, not alice's rules
	[ "$(RAKAZO_USER=bob rk approval list --json)" = '[]' ]
	expect_json_error 4 conflict env RAKAZO_USER=alice "$RAKAZO_BIN" approval set --effect require_approval --match tool --value memory_write --json
	expect_json_error 2 usage env RAKAZO_USER=alice "$RAKAZO_BIN" approval set --effect sometimes --match tool --value x --json
	expect_json_error 2 usage env RAKAZO_USER=alice "$RAKAZO_BIN" approval set --effect allow --match name --value x --json
	expect_json_error 3 not_found env RAKAZO_USER=bob "$RAKAZO_BIN" approval rm "$id" --json
	RAKAZO_USER=alice rk approval rm "$id" --json >/dev/null
	[ "$(RAKAZO_USER=alice rk approval list --json | rk_json 'len(d)')" = 2 ]
}

@test "a call that needs approval pauses the run in waiting_approval: run deny (the write never happens), then run approve" {
	rk_fake t
	rk approval set --effect require_approval --match tool --value write_file --json >/dev/null
	cat >"$BATS_TEST_TMPDIR/scenario.json" <<'EOF'
{"steps": [
  {"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "buy.txt", "content": "order 3 pianos"}}]}},
  {"expect": {"last_tool_result_contains": "too many pianos"},
   "reply": {"tool_calls": [{"name": "read_file", "arguments": {"path": "buy.txt"}}]}},
  {"expect": {"last_tool_result_contains": "not_found"},
   "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "buy.txt", "content": "order 1 piano"}}]}},
  {"expect": {"last_tool_result_contains": "\"ok\":true"}, "reply": {"content": "ordered one"}}]}
EOF
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	local run_id
	run_until_approval "buy pianos"
	[ "$(rk approval pending --json | rk_json 'd[0]["tool"]')" = write_file ]
	# only the person whose run it is decides; never a bot (it could approve itself)
	expect_json_error 8 denied env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" run approve "$run_id" --json
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" run approve "$run_id" --json
	rk run deny "$run_id" --note "too many pianos" --json >/dev/null
	# the second write waits too; this one is approved
	wait_for "rk approval pending --json | grep -q 'order 1 piano'" 30
	[ "$(rk run show "$run_id" --json | rk_json 'd["state"]')" = waiting_approval ]
	rk run approve "$run_id" --json >/dev/null
	wait "$RUN_PID"
	RUN_PID=
	server_ok
	[ "$(rk run show "$run_id" --json | rk_json 'd["state"]')" = completed ]
	[ "$(rk computer file read t buy.txt)" = 'order 1 piano' ]
	[ "$(rk approval pending --json)" = '[]' ]
	expect_json_error 3 not_found rk run approve "$run_id" --json
	expect_json_error 3 not_found rk run approve run_nope --json
}

@test "switching space hides the other space's computers" {
	RAKAZO_SPACE=red rk computer create --provider fake --name r1 --wait --json >/dev/null
	RAKAZO_SPACE=blue rk computer create --provider fake --name b1 --wait --json >/dev/null
	[ "$(RAKAZO_SPACE=red rk computer list --json | rk_json '[c["name"] for c in d]')" = '["r1"]' ]
	[ "$(RAKAZO_SPACE=blue rk computer list --json | rk_json '[c["name"] for c in d]')" = '["b1"]' ]
	[ "$(rk computer list --json)" = '[]' ]
	expect_json_error 3 not_found env RAKAZO_SPACE=blue "$RAKAZO_BIN" computer show r1 --json
	expect_json_error 3 not_found env RAKAZO_SPACE=blue "$RAKAZO_BIN" computer exec r1 --json -- true
	expect_json_error 3 not_found env RAKAZO_SPACE=blue "$RAKAZO_BIN" computer delete r1 --json
	[ "$(RAKAZO_SPACE=red rk computer show r1 --json | rk_json 'd["state"]')" = running ]
}

@test "a bot needs a grant; a revoke stops a live session's next input; bots never own computers" {
	rk_fake t
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" computer exec t --json -- true
	rk computer grant t --bot b1 --json >/dev/null
	[ "$(rk computer rights t --json | rk_json '[g["bot"] for g in d]')" = '["b1"]' ]
	local sid
	sid=$(RAKAZO_OWNER=bot:b1 rk computer exec t --json --yield-ms 300 -- cat | rk_json 'd["session"]')
	[ -n "$sid" ]
	run env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" computer input t "$sid" 'one\n' --json
	[ "$status" -eq 0 ]
	[[ "$output" == *one* ]]
	rk computer revoke t --bot b1 --json >/dev/null
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" computer input t "$sid" 'two\n' --json
	expect_json_error 3 not_found rk computer revoke t --bot b1 --json
	# another member may not grant, a bot may not create
	expect_json_error 8 denied env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" computer grant t --bot b9 --json
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" computer create --provider fake --name mine --json
	[ "$(rk computer list --json | rk_json 'len(d)')" = 1 ]
}

@test "a capability that needs approval does not reach the provider" {
	rk_fake t
	rk approval set --effect require_approval --match tool --value computers.delete --json >/dev/null
	expect_json_error 8 denied rk computer delete t --wait --json
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
	[ "$(rk computer execution list t --json | rk_json '[e["op"] for e in d]')" = '["create"]' ]
	# an org computer is every member's
	rk computer create --provider fake --name shared --org --wait --json >/dev/null
	RAKAZO_OWNER=user:carol rk computer exec shared --json -- true >/dev/null
	expect_json_error 8 denied env RAKAZO_OWNER=user:carol "$RAKAZO_BIN" computer exec t --json -- true
}

@test "docker: after a run that used a secret, no process in the container has it in its environment" {
	curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 || skip "dockerd is not running"
	unset RAKAZO_NO_WORKER
	start_echo
	local value='Dk7-container_secret-Q'
	printf '%s' "$value" | rk secret set svc --origin "$ECHO_URL" --auth header:X-Api-Key >/dev/null
	run rk computer create --provider docker --name d --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	python3 - "$ECHO_URL" >"$BATS_TEST_TMPDIR/scenario.json" <<'PY'
import json, sys
print(json.dumps({"steps": [
  {"reply": {"tool_calls": [{"name": "secret_request", "arguments": {"name": "svc", "url": sys.argv[1] + "/x"}}]}},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "env; echo env-done; sleep 300", "yield_ms": 1500}}]}},
  {"expect": {"last_tool_result_contains": "env-done"}, "reply": {"content": "done"}}]}))
PY
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer d --json "call it"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	server_ok
	# every process in the container (the run's sleep among them): not in any environment
	run rk computer exec d -- 'for f in /proc/[0-9]*/environ; do tr "\0" "\n" <"$f"; done 2>/dev/null; echo procs=$(ls -d /proc/[0-9]* | wc -l)'
	[ "$status" -eq 0 ]
	[[ "$output" == *procs=* ]]
	[[ "$output" == *HOME=* ]] # environments were read
	[[ "$output" != *"$value"* ]]
	refute grep -raF -- "$value" "$RAKAZO_DATA_DIR"
	rk computer delete d --wait --timeout 120 --json >/dev/null
}

@test "a bot's run keeps its memory through the memory tools; the person sees it with --bot, another user never" {
	rk_fake t
	RAKAZO_USER=bats rk memory write team.md --content 'deploys on tuesdays' --json >/dev/null
	cat >"$BATS_TEST_TMPDIR/scenario.json" <<'JSON'
{"steps": [
  {"expect": {"tools_include": ["memory_read", "memory_write", "memory_search"]},
   "reply": {"tool_calls": [{"name": "memory_search", "arguments": {"query": "tuesdays"}}]}},
  {"expect": {"last_tool_result_contains": "team.md"},
   "reply": {"tool_calls": [{"name": "memory_write", "arguments": {"path": "bot/notes.md", "content": "learned: tuesdays", "expected_revision": 0}}]}},
  {"expect": {"last_tool_result_contains": "\"revision\":1"},
   "reply": {"tool_calls": [{"name": "memory_write", "arguments": {"path": "bot/notes.md", "content": "stale", "expected_revision": 0}}]}},
  {"expect": {"last_tool_result_contains": "conflict"},
   "reply": {"tool_calls": [{"name": "memory_read", "arguments": {}}]}},
  {"expect": {"last_tool_result_contains": "bot/notes.md"}, "reply": {"content": "noted"}}]}
JSON
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer t --bot b1 --json "remember"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	server_ok
	[ "$(RAKAZO_USER=bats rk memory read bot/notes.md --bot b1)" = 'learned: tuesdays' ]
	[ "$(RAKAZO_USER=bats rk memory read --bot b1 --json | rk_json 'sorted(x["scope"] for x in d)')" = '["bot", "user"]' ]
	expect_json_error 3 not_found env RAKAZO_USER=bats "$RAKAZO_BIN" memory read bot/notes.md --bot b2 --json
	[ "$(RAKAZO_USER=eve rk memory read --json)" = '[]' ]
}

@test "a master key given in the environment never reaches a computer's shell" {
	export RAKAZO_MASTER_KEY=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0
	printf 'v4lue' | rk secret set s --origin https://a.example --auth bearer --json >/dev/null
	[ ! -e "$RAKAZO_DATA_DIR/master.key" ]
	rk_fake t
	run rk computer exec t -- 'env; echo env-done'
	[ "$status" -eq 0 ]
	[[ "$output" == *env-done* ]]
	[[ "$output" != *0f1e2d3c4b5a6978* ]]
	expect_json_error 2 invalid_argument env RAKAZO_MASTER_KEY=short "$RAKAZO_BIN" secret set s2 --origin https://a.example --auth bearer --json </dev/null
}

# Runs the binary in the background as $! itself, without bats' descriptors.
rk_bg() {
	( eval 'exec "$RAKAZO_BIN" "$@"' "$RK_CLOSE_FDS" ) &
}

@test "one rights model: a run's bot, the CLI's grants and the API's rights are the same right; API computers are the org's" {
	rk_fake t
	# a person who starts a bot's run on their computer gives the bot its right
	start_server run_answer.json
	echo 'what is the answer?' | rk run --computer t --bot b7 - >/dev/null
	server_ok
	[ "$(rk computer rights t --json | rk_json '[[g["bot"], g["granted_by"]] for g in d]')" = "[[\"b7\", \"user:bats\"]]" ]
	# a bot starts runs only as itself, and only on a computer it has a right to
	rk computer create --provider fake --name other --wait --json >/dev/null
	echo x | expect_json_error 8 denied env RAKAZO_OWNER=bot:b7 "$RAKAZO_BIN" run --computer other --json -
	echo x | expect_json_error 8 denied env RAKAZO_OWNER=bot:b7 "$RAKAZO_BIN" run --computer t --bot b8 --json -
	# the API reads the same right: b7's token reaches t, and a CLI revoke takes it away
	bot_token=$(rk serve token create b7-token --bot b7)
	person_token=$(rk serve token create ops)
	rk_bg serve --listen 127.0.0.1:0 --providers fake --url-file "$BATS_TEST_TMPDIR/url" >/dev/null 2>"$BATS_TEST_TMPDIR/serve.err"
	SERVER_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	local url id code
	url=$(cat "$BATS_TEST_TMPDIR/url")
	id=$(rk computer show t --json | rk_json 'd["id"]')
	# t is a fake computer, which no bot's token reaches (SECURITY.md): with
	# the right, the rights check passes and fake's own rule answers; without
	# it, the rights check does
	code=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -H "Authorization: Bearer $bot_token" "$url/v1/computers/$id/usage")
	[ "$code" = 403 ] && grep -q "run on the server's host" "$BATS_TEST_TMPDIR/reply"
	rk computer revoke t --bot b7 --json >/dev/null
	code=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -H "Authorization: Bearer $bot_token" "$url/v1/computers/$id/usage")
	[ "$code" = 403 ] && ! grep -q "run on the server's host" "$BATS_TEST_TMPDIR/reply"
	# a right granted through the API is the CLI's right too
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $person_token" "$url/v1/computers/$id/bots/b9")
	[ "$code" = 200 ] || [ "$code" = 201 ]
	[ "$(rk computer rights t --json | rk_json '[g["bot"] for g in d]')" = '["b9"]' ]
	# a computer made through the API belongs to the organization: members use it from the CLI
	code=$(curl -s -o "$BATS_TEST_TMPDIR/made" -w '%{http_code}' -H "Authorization: Bearer $person_token" \
		-H 'Content-Type: application/json' \
		--data-binary '{"commandKey":"k1","name":"apimade","source":{"provider":"fake","template":null}}' "$url/v1/computers")
	[ "$code" = 202 ]
	wait_for "$RAKAZO_BIN computer show apimade --json | grep -q '\"state\":\"running\"'" 30
	RAKAZO_OWNER=user:carol rk computer exec apimade --json -- true >/dev/null
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" computer exec apimade --json -- true
}

@test "create_space always waits for a person, even under an allow rule; a webhook's run asks before writing, a person's does not" {
	rk_fake t
	rk approval set --effect allow --match tool --value create_space --json >/dev/null
	cat >"$BATS_TEST_TMPDIR/space.json" <<'EOF2'
{"steps": [
  {"reply": {"tool_calls": [{"name": "create_space", "arguments": {"name": "research", "description": "papers"}}]}},
  {"expect": {"last_tool_result_contains": "\"created\":true"}, "reply": {"content": "made it"}}]}
EOF2
	start_server "$BATS_TEST_TMPDIR/space.json"
	local run_id
	run_until_approval "make a research space"
	[ "$(rk approval pending --json | rk_json 'd[0]["tool"]')" = create_space ]
	[[ "$(rk approval pending --json | rk_json 'd[0]["reason"]')" == *"always needs a person"* ]]
	[ "$(rk space list --json | rk_json '[s["id"] for s in d]')" = '["default"]' ]
	rk run approve "$run_id" --json >/dev/null
	wait "$RUN_PID"
	RUN_PID=
	server_ok
	[ "$(rk space list --json | rk_json '[[s["id"], s["run_id"]] for s in d]')" = "[[\"default\", null], [\"research\", \"$run_id\"]]" ]

	# the same write: a person's run goes through, a webhook's waits (and is denied here)
	cat >"$BATS_TEST_TMPDIR/write.json" <<'EOF2'
{"steps": [
  {"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "hook.txt", "content": "from a hook"}}]}},
  {"reply": {"content": "done"}}]}
EOF2
	start_server "$BATS_TEST_TMPDIR/write.json"
	rk run --computer t --json "write it" >/dev/null 2>&1
	server_ok
	[ "$(rk computer file read t hook.txt)" = 'from a hook' ]
	rk computer file remove t hook.txt --json >/dev/null
	start_server "$BATS_TEST_TMPDIR/write.json"
	rk run --computer t --trigger webhook --json "write it" >"$BATS_TEST_TMPDIR/run2.out" 2>&1 &
	RUN_PID=$!
	wait_for "rk run list --json | grep -q waiting_approval" 30
	run_id=$(rk run list --json | rk_json '[r["id"] for r in d if r["state"] == "waiting_approval"][0]')
	[[ "$(rk approval pending --json | rk_json 'd[0]["reason"]')" == *webhook* ]]
	rk run deny "$run_id" --note "not from a hook" --json >/dev/null
	wait "$RUN_PID"
	RUN_PID=
	server_ok
	expect_json_error 3 not_found rk computer file read t hook.txt --json
	echo x | expect_json_error 2 usage rk run --computer t --trigger cron --json -
}

# The judge is the agent's model client, which registers it with the approval
# rules (access never calls up into agent): a run in the foreground and a
# detached one (its own process) both still ask it.
@test "the judge decides a changing call in a foreground and a detached run: ASK waits for a person, ALLOW goes on" {
	rk_fake t
	cat >"$BATS_TEST_TMPDIR/judge.json" <<'EOF2'
{"steps": [
  {"expect": {"messages_contain": "Tool: write_file"}, "reply": {"content": "ASK"}},
  {"expect": {"messages_contain": "Tool: write_file"}, "reply": {"content": "ALLOW"}}]}
EOF2
	"$MODEL_SERVER" "$BATS_TEST_TMPDIR/judge.json" --report "$BATS_TEST_TMPDIR/judge-report.json" \
		>"$BATS_TEST_TMPDIR/judge.out" 2>&1 3>&- 4>&- &
	JUDGE_PID=$!
	wait_for "grep -q '^listening on ' '$BATS_TEST_TMPDIR/judge.out'" 10
	export RAKAZO_JUDGE_MODEL=judge
	export RAKAZO_JUDGE_BASE_URL="$(sed -n 's|^listening on \(http://.*\)$|\1|p' "$BATS_TEST_TMPDIR/judge.out")/v1"
	cat >"$BATS_TEST_TMPDIR/write.json" <<'EOF2'
{"steps": [
  {"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "judged.txt", "content": "one"}}]}},
  {"expect": {"last_tool_result_contains": "\"ok\":true"}, "reply": {"content": "done"}}]}
EOF2
	# foreground: the judge answers ASK, so the call waits for a person
	start_server "$BATS_TEST_TMPDIR/write.json"
	local run_id
	run_until_approval "write it"
	[[ "$(rk approval pending --json | rk_json 'd[0]["reason"]')" == *"judge: wants a person"* ]]
	rk run approve "$run_id" --json >/dev/null
	wait "$RUN_PID"
	RUN_PID=
	server_ok
	[ "$(rk computer file read t judged.txt)" = one ]
	rk computer file remove t judged.txt --json >/dev/null
	# detached: the judge answers ALLOW, so the call goes through unasked
	start_server "$BATS_TEST_TMPDIR/write.json"
	run_id=$(rk run --detach --computer t "write it")
	wait_for "[ \"\$(rk run show $run_id --json | rk_json 'd[\"state\"]')\" = completed ]" 30
	server_ok
	[ "$(rk computer file read t judged.txt)" = one ]
	wait "$JUDGE_PID"
	JUDGE_PID=
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["completed"] and d["ok"], d' \
		"$BATS_TEST_TMPDIR/judge-report.json"
}

@test "space: create, list and bad input; a bot cannot create one" {
	expect_json_error 2 invalid_argument rk space create 'bad name' --json
	expect_json_error 4 conflict rk space create default --json
	rk space create lab --description 'experiments' --json >/dev/null
	expect_json_error 4 conflict rk space create lab --json
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b1 "$RAKAZO_BIN" space create botspace --json
	RAKAZO_SPACE=lab rk computer create --provider fake --name l1 --wait --json >/dev/null
	[ "$(rk space list --json | rk_json '[[s["id"], s["computers"], s["created_by"]] for s in d]')" = '[["default", 0, null], ["lab", 1, "user:bats"]]' ]
	expect_status 2 rk space list extra
}
