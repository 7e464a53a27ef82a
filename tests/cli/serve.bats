#!/usr/bin/env bats
# rakazo serve: the Computers HTTP API, driven with curl and with a small
# Python-stdlib client (tests/fixtures/api_client.py), on the fake provider
# (and docker when it is up). Every test runs its own server on a free
# loopback port of its own data directory.

load helper
load serve

CLIENT="$BATS_TEST_DIRNAME/../fixtures/api_client.py"
FWD="$BATS_TEST_DIRNAME/../fixtures/forward.py"
SPEC="$BATS_TEST_DIRNAME/../../api/openapi.json"

# Runs the binary in the background as $! itself (not a subshell around it),
# without bats' descriptors.
rk_bg() {
	( eval 'exec "$RAKAZO_BIN" "$@"' "$RK_CLOSE_FDS" ) &
}

teardown() {
	if [ -n "${SERVE_PID:-}" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
	rk_kill_all "$BATS_TEST_TMPDIR/machine"
	rk_kill_all
	rk_remove_containers
}

# A running fake computer made through the API; prints its id.
api_fake() {
	api POST /v1/computers "{\"commandKey\":\"mk-$1\",\"name\":\"$1\",\"source\":{\"provider\":\"fake\",\"template\":null},\"desktop\":true}"
	[ "$CODE" = 202 ] || { echo "create: $CODE $BODY" >&2; return 1; }
	local exe id
	exe=$(jq_ 'd["id"]')
	id=$(jq_ 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = succeeded ]" 30
	echo "$id"
}

state_digest() {
	local t
	for t in computers lifecycle_executions exec_sessions computer_rights api_tokens; do
		rk_sql "select count(*) from $t"
	done
}

@test "serve: tokens are shown once, stored only as a hash, listed and revoked" {
	run rk serve token create ci --json
	[ "$status" -eq 0 ]
	secret=$(printf '%s' "$output" | rk_json 'd["token"]')
	id=$(printf '%s' "$output" | rk_json 'd["id"]')
	[[ $secret == "$id".* ]]
	# stored only as a hash: not in the database (SQLite's file, or PostgreSQL's dump)
	local dump
	if [ -n "${RAKAZO_DATABASE_URL:-}" ]; then
		dump=$(pg_dump -a "$RAKAZO_DATABASE_URL")
	else
		dump=$(cat "$RAKAZO_DATA_DIR"/rakazo.db* | tr -d '\0')
	fi
	[ -n "$dump" ]
	if grep -qaF "${secret#*.}" <<<"$dump"; then echo "the secret is stored" >&2; return 1; fi
	[ "$(rk_sql "select length(secret_hash) from api_tokens")" = 64 ]
	expect_status 4 rk serve token create ci
	run rk serve token list --json
	[ "$(printf '%s' "$output" | rk_json '[t["name"] for t in d]')" = '["ci"]' ]
	run rk serve token revoke ci --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["revoked_at"] is not None')" = true ]
	expect_status 3 rk serve token revoke ci
	expect_status 2 rk serve token create 'bad name'
	expect_status 2 rk serve --listen 10.0.0.1:80
	expect_status 2 rk serve --listen nonsense
	run rk serve routes --json
	[ "$status" -eq 0 ]
}

@test "serve: bad tokens get 401 with a clear error, and change nothing" {
	serve_start
	rk serve token create gone >/dev/null 2>&1
	gone=$(rk serve token create gone2 2>/dev/null)
	rk serve token revoke gone2 >/dev/null
	before=$(state_digest)
	body='{"commandKey":"k","name":"x","source":{"provider":"fake","template":null}}'
	api POST /v1/computers "$body" ""
	[ "$CODE" = 401 ]
	[ "$(jq_ 'd["error"]["category"]')" = unauthorized ]
	[[ $(jq_ 'd["error"]["errorId"]') == err_* ]]
	api POST /v1/computers "$body" "tok_nosuch.0000"
	[ "$CODE" = 401 ]
	# the secret with its last digit changed (never to itself)
	case $TOKEN in *0) wrong=${TOKEN%?}1 ;; *) wrong=${TOKEN%?}0 ;; esac
	api POST /v1/computers "$body" "$wrong"
	[ "$CODE" = 401 ]
	api POST /v1/computers "$body" "garbage"
	[ "$CODE" = 401 ]
	CODE=$(curl -s -o /dev/null -w '%{http_code}' -u a:b "$URL/v1/computers")
	[ "$CODE" = 401 ]
	api POST /v1/computers "$body" "$gone"
	[ "$CODE" = 401 ]
	[ "$(state_digest)" = "$before" ]
	api GET /v1/health "" ""
	[ "$CODE" = 200 ]
}

@test "serve: malformed requests get clear errors and nothing stored changes" {
	serve_start
	id=$(api_fake box)
	before=$(state_digest)
	api POST /v1/computers '{"commandKey":'
	[ "$CODE" = 400 ] && [ "$(jq_ 'd["error"]["category"]')" = invalid_request ]
	api POST /v1/computers '[1,2]'
	[ "$CODE" = 400 ]
	api POST /v1/computers '{"commandKey":"k","name":"x","colour":"red"}'
	[ "$CODE" = 400 ] && [[ $(jq_ 'd["error"]["message"]') == *colour* ]]
	api POST /v1/computers '{"commandKey":"k","name":"bad name!","source":{"provider":"fake"}}'
	[ "$CODE" = 400 ]
	api POST /v1/computers '{"commandKey":"k","name":"x","source":{"provider":"nosuch"}}'
	[ "$CODE" = 400 ]
	api POST /v1/computers '{"commandKey":"k","name":"x","pauseAfter":"soon","source":{"provider":"fake"}}'
	[ "$CODE" = 400 ]
	api POST "/v1/computers/$id/pause" '{}'
	[ "$CODE" = 400 ]
	api GET /v1/nosuch
	[ "$CODE" = 404 ] && [ "$(jq_ 'd["error"]["category"]')" = route_not_found ]
	api GET "/v1/computers/$id/nosuch"
	[ "$CODE" = 404 ] && [ "$(jq_ 'd["error"]["category"]')" = route_not_found ]
	api PATCH "/v1/computers/$id"
	[ "$CODE" = 405 ] && [ "$(jq_ 'd["error"]["category"]')" = method_not_allowed ]
	api GET /v1/computers/cmp_nosuch
	[ "$CODE" = 404 ] && [ "$(jq_ 'd["error"]["category"]')" = not_found ]
	api GET "/v1/executions/exe_nosuch/observe?afterSequence=-1"
	[ "$CODE" = 400 ]
	api POST "/v1/computers/$id/sessions" '{"command":"true","yieldTimeMs":5}'
	[ "$CODE" = 400 ]
	api PUT "/v1/computers/$id/files" '{"path":"a","content":"!!!","encoding":"base64"}'
	[ "$CODE" = 400 ]
	api PUT "/v1/computers/$id/files" '{"path":"../../etc/x","content":"a"}'
	[ "$CODE" = 400 ]
	# a body over the limit: refused from its Content-Length, before it is read
	head -c 26000000 /dev/zero | tr '\0' 'a' >"$BATS_TEST_TMPDIR/big"
	CODE=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
		--data-binary @"$BATS_TEST_TMPDIR/big" "$URL/v1/computers/$id/files")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
	[ "$CODE" = 413 ] && [ "$(jq_ 'd["error"]["category"]')" = too_large ]
	# and one sent chunked, with no length to refuse it by
	CODE=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
		-H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/big" "$URL/v1/computers/$id/files")
	[ "$CODE" = 413 ]
	[ "$(state_digest)" = "$before" ]
	api GET "/v1/computers/$id/directory"
	[ "$(jq_ 'd["entries"]')" = '[]' ]
}

@test "serve: the same key and body give the same execution; conflicts name the execution (python client)" {
	serve_start
	run python3 "$CLIENT" "$URL" "$TOKEN" retry
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "serve: a second lifecycle command while one runs is ComputerConflict with its execution id" {
	serve_start
	id=$(api_fake box)
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
	rk_kill_all
	RAKAZO_FAKE_DELAY_MS=3000 serve_start
	api POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	[ "$CODE" = 202 ]
	pause=$(jq_ 'd["id"]')
	api POST "/v1/computers/$id/resume" '{"commandKey":"r1"}'
	[ "$CODE" = 409 ]
	[ "$(jq_ 'd["error"]["category"]')" = ComputerConflict ]
	[ "$(jq_ 'd["error"]["executionId"]')" = "$pause" ]
	api GET "/v1/computers/$id"
	[ "$(jq_ 'd["executionId"]')" = "$pause" ]
	# the retry of the pause is the pause, not a conflict
	api POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	[ "$CODE" = 202 ] && [ "$(jq_ 'd["id"]')" = "$pause" ] && [ "$(jq_ 'd["reused"]')" = true ]
}

@test "serve: observe streams events by sequence and resumes after one (python client)" {
	serve_start
	id=$(api_fake box)
	run python3 "$CLIENT" "$URL" "$TOKEN" sse "$id"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "serve: closing the event stream does not stop the command; cancel does" {
	serve_start
	id=$(api_fake box)
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
	rk_kill_all
	RAKAZO_NO_WORKER=1 serve_start
	api POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	exe=$(jq_ 'd["id"]')
	run curl -s -N --max-time 2 -H "Authorization: Bearer $TOKEN" "$URL/v1/executions/$exe/observe?afterSequence=0"
	[[ $output == *"event: submitted"* ]]
	api GET "/v1/executions/$exe"
	[ "$(jq_ 'd["state"]')" = pending ]
	api POST "/v1/executions/$exe/cancel"
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["state"]')" = cancelled ]
	run curl -s -N --max-time 20 -H "Authorization: Bearer $TOKEN" "$URL/v1/executions/$exe/observe?afterSequence=1"
	[ "$status" -eq 0 ]
	[[ $output == *"event: cancelled"* ]]
	[[ $output != *"event: submitted"* ]]
}

@test "serve: an unknown pause result waits for a decision and keeps the usage record open" {
	serve_start
	id=$(api_fake box)
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
	rk_kill_all
	RAKAZO_FAKE_FAULTS=pause=lost_reply serve_start
	api POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	exe=$(jq_ 'd["id"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = outcome_unknown ]" 30
	api GET "/v1/computers/$id/usage"
	[ "$(jq_ 'd["records"][-1]["endedAt"]')" = null ]
	api POST "/v1/computers/$id/resume" '{"commandKey":"r1"}'
	[ "$CODE" = 409 ] && [ "$(jq_ 'd["error"]["executionId"]')" = "$exe" ]
	api POST "/v1/executions/$exe/decision" '{"outcome":"maybe"}'
	[ "$CODE" = 400 ]
	api POST "/v1/executions/$exe/decision" '{"outcome":"succeeded"}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["state"]')" = succeeded ]
}

@test "serve: sessions take input with C escapes and end with Ctrl-D (python client)" {
	serve_start
	id=$(api_fake box)
	run python3 "$CLIENT" "$URL" "$TOKEN" session "$id"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "serve: a tty session resizes and is stopped by DELETE; a session belongs to its starter" {
	serve_start
	id=$(api_fake box)
	api POST "/v1/computers/$id/sessions" '{"command":"sleep 60","tty":true,"rows":30,"cols":100,"yieldTimeMs":250,"env":{"GREETING":"hi"}}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["running"]')" = true ]
	sid=$(jq_ 'd["session"]')
	api POST "/v1/computers/$id/sessions/$sid/resize" '{"rows":40,"cols":120}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["rows"]')" = 40 ]
	other=$(rk serve token create other 2>/dev/null)
	api POST "/v1/computers/$id/sessions/$sid/input" '{"chars":"x"}' "$other"
	[ "$CODE" = 403 ] && [ "$(jq_ 'd["error"]["category"]')" = forbidden ]
	api DELETE "/v1/computers/$id/sessions/$sid"
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["running"]')" = false ] && [ "$(jq_ 'd["session"]')" = null ]
	api POST "/v1/computers/$id/sessions" '{"command":"echo $GREETING; exit 4","env":{"GREETING":"hi there"},"yieldTimeMs":5000}'
	[ "$(jq_ 'd["exitCode"]')" = 4 ] && [ "$(jq_ 'd["output"]')" = "hi there" ]
}

@test "serve: files in utf8 and base64, directories, removal" {
	serve_start
	id=$(api_fake box)
	api PUT "/v1/computers/$id/files" '{"path":"notes/a.txt","content":"héllo\n"}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["size"]')" = 7 ]
	api GET "/v1/computers/$id/files?path=notes/a.txt"
	[ "$(jq_ 'd["encoding"]')" = utf8 ] && [ "$(jq_ 'd["content"]')" = "héllo" ]
	api GET "/v1/computers/$id/files?path=notes/a.txt&encoding=base64"
	[ "$(jq_ 'd["content"]')" = "aMOpbGxvCg==" ]
	api GET "/v1/computers/$id/files?path=notes/a.txt&maxBytes=3"
	[ "$CODE" = 413 ]
	api GET "/v1/computers/$id/files?path=notes/none.txt"
	[ "$CODE" = 404 ]
	run python3 "$CLIENT" "$URL" "$TOKEN" files "$id"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(rk computer file read box notes/a.txt)" = "héllo" ]
}

@test "serve: desktop screenshot and batched actions on the fake screen" {
	serve_start
	id=$(api_fake box)
	api POST "/v1/computers/$id/desktop/screenshot"
	[ "$CODE" = 200 ]
	printf '%s' "$BODY" | python3 -c '
import base64, json, sys
d = json.load(sys.stdin)
png = base64.b64decode(d["image"])
assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
assert (d["width"], d["height"], d["mimeType"]) == (1280, 800, "image/png"), d
'
	api POST "/v1/computers/$id/desktop/actions" '{"actions":[{"action":"move","x":100,"y":200},{"action":"click","x":300,"y":400}],"settleMs":0}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["completed"]')" = 2 ]
	[ "$(jq_ 'd["observation"]["cursor"]')" = '{"x": 300, "y": 400}' ]
	[ "$(jq_ 'd["observation"]["image"][:8]')" = iVBORw0K ]
	api POST "/v1/computers/$id/desktop/actions" '{"actions":[{"action":"teleport"}]}'
	[ "$CODE" = 400 ]
	# a stream needs a VNC transport, which the fake's screen has not; bad bodies are 400s first
	api POST "/v1/computers/$id/desktop/stream"
	[ "$CODE" = 422 ] && [ "$(jq_ 'd["error"]["category"]')" = ComputerUnsupported ]
	[[ "$(jq_ 'd["error"]["message"]')" == *"relays VNC only"* ]]
	for bad in '{"control":"yes"}' '{"ttlSeconds":0}' '{"display":1,"botId":"a"}' '{"botId":".x"}' '{"viewOnly":true}'; do
		api POST "/v1/computers/$id/desktop/stream" "$bad"
		[ "$CODE" = 400 ] || { echo "$bad: $CODE $BODY"; false; }
	done
	api POST "/v1/computers/$id/desktop/stream" '{"botId":"nobody"}'
	[ "$CODE" = 404 ]
	[ "$(rk screen shares --all --json)" = '[]' ]
	api PUT "/v1/computers/$id/ports/99999"
	[ "$CODE" = 400 ]
	api POST /v1/computers '{"commandKey":"nd","name":"nodesk","source":{"provider":"fake","template":null}}'
	exe=$(jq_ 'd["id"]')
	nd=$(jq_ 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = succeeded ]" 30
	api POST "/v1/computers/$nd/desktop/screenshot"
	[ "$CODE" = 422 ] && [ "$(jq_ 'd["error"]["category"]')" = ComputerUnsupported ]
	api POST /v1/computers '{"commandKey":"tp","name":"tpl","source":{"provider":"fake","template":"ubuntu"}}'
	[ "$CODE" = 422 ]
}

@test "serve: a bot reaches only computers it has a right to; revoking it mid-session stops its next input" {
	serve_start
	# paired machines: a bot's token never reaches the fake provider (tests/security/api.bats)
	PAIRS=0
	start_machine
	id=$MID
	api POST /v1/paired '{"name":"other"}'
	other=$(jq_ 'd["computerId"]')
	bot=$(rk serve token create b1tok --bot b1 2>/dev/null)
	api GET "/v1/computers/$id" "" "$bot"
	[ "$CODE" = 403 ] && [ "$(jq_ 'd["error"]["category"]')" = forbidden ] && [[ $(jq_ 'd["error"]["errorId"]') == err_* ]]
	api PUT "/v1/computers/$id/bots/b1"
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["botId"]')" = b1 ]
	api GET "/v1/computers/$id/bots"
	[ "$(jq_ '[b["botId"] for b in d["bots"]]')" = '["b1"]' ]
	api GET /v1/computers "" "$bot"
	[ "$(jq_ '[c["id"] for c in d["computers"]]')" = "[\"$id\"]" ]
	api PUT "/v1/computers/$id/bots/b2" "" "$bot"
	[ "$CODE" = 403 ]
	api POST "/v1/computers/$id/sessions" '{"command":"cat","yieldTimeMs":250}' "$bot"
	[ "$CODE" = 200 ]
	sid=$(jq_ 'd["session"]')
	api POST "/v1/computers/$id/sessions/$sid/input" '{"chars":"a\\n","yieldTimeMs":250}' "$bot"
	[ "$CODE" = 200 ]
	api POST "/v1/computers/$other/sessions" '{"command":"true"}' "$bot"
	[ "$CODE" = 403 ]
	api DELETE "/v1/computers/$id/bots/b1"
	[ "$CODE" = 200 ]
	api POST "/v1/computers/$id/sessions/$sid/input" '{"chars":"b\\n","yieldTimeMs":250}' "$bot"
	[ "$CODE" = 403 ] && [ "$(jq_ 'd["error"]["category"]')" = forbidden ]
	api GET "/v1/computers/$id/bots/b1"
	[ "$CODE" = 404 ]
	# the history shows the input that went through and not the refused one
	run rk computer history laptop --session "$sid" --json
	[[ $output == *'"data": "a\n"'* || $output == *'"data":"a\n"'* ]]
	[[ $output != *'b\n'* ]]
}

@test "serve: pauseAfter feeds the computer's idle pause; null never pauses; usage is recorded" {
	serve_start
	api POST /v1/computers '{"commandKey":"n1","name":"never","pauseAfter":null,"shared":true,"source":{"provider":"fake","template":null}}'
	exe=$(jq_ 'd["id"]')
	cid=$(jq_ 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = succeeded ]" 30
	api GET "/v1/computers/$cid"
	[ "$(jq_ 'd["pauseAfter"]')" = null ] && [ "$(jq_ 'd["shared"]')" = true ]
	id=$(api_fake box)
	api GET "/v1/computers/$id"
	[ "$(jq_ 'd["pauseAfter"]')" = 600 ]
	[ "$(rk computer show box --json | rk_json 'd["pause_after"]')" = 600 ]
	api GET "/v1/computers/$id/usage"
	[ "$(jq_ 'len(d["records"])')" = 1 ] && [ "$(jq_ 'd["records"][0]["endedAt"]')" = null ]
	api DELETE "/v1/computers/$id" '{"commandKey":"d1"}'
	[ "$CODE" = 202 ]
}

@test "serve: every route in api/openapi.json answers, and the server has no other (python client)" {
	serve_start
	rk serve routes --json >"$BATS_TEST_TMPDIR/routes.json"
	run python3 "$CLIENT" "$URL" "$TOKEN" openapi "$SPEC" "$BATS_TEST_TMPDIR/routes.json"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# every reply the client reads is checked against the spec's schema for its status
	run python3 "$CLIENT" "$URL" "$TOKEN" contract "$(api_fake contract)"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == "ok contract "* ]]
}

@test "serve: a docker computer's desktop through the API" {
	[ -S /var/run/docker.sock ] || skip "docker not running"
	img=$(rk computer image tag)
	curl -sf --unix-socket /var/run/docker.sock "http://localhost/images/$img/json" >/dev/null || skip "no image $img"
	serve_start
	api POST /v1/computers '{"commandKey":"dk","name":"dbox","desktop":true,"source":{"provider":"docker","template":null}}'
	[ "$CODE" = 202 ]
	exe=$(jq_ 'd["id"]')
	id=$(jq_ 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" != pending ] && [ \"\$(jq_ 'd[\"state\"]')\" != running ]" 120
	[ "$(jq_ 'd["state"]')" = succeeded ]
	api POST "/v1/computers/$id/desktop/actions" '{"actions":[{"action":"move","x":200,"y":150}],"settleMs":200}'
	[ "$CODE" = 200 ] || { echo "$BODY"; false; }
	[ "$(jq_ 'd["completed"]')" = 1 ]
	[ "$(jq_ 'd["observation"]["image"][:8]')" = iVBORw0K ]
	api POST "/v1/computers/$id/sessions" '{"command":"echo $HOME; id -un","yieldTimeMs":10000}'
	[ "$(jq_ 'd["exitCode"]')" = 0 ]
	# desktop/stream: a gateway URL with a view capability (the default),
	# the same as `rakazo screen share`; the token is in the URL only
	gateway_start
	api POST "/v1/computers/$id/desktop/stream" '{"ttlSeconds":600}'
	[ "$CODE" = 200 ] || { echo "$BODY"; false; }
	[ "$(jq_ '[d["policy"], d["display"], d["bot"], d["state"], d["computerId"] == "'"$id"'"]')" = '["view", 0, null, "live", true]' ]
	view=$(jq_ 'd["url"]')
	[[ "$view" == "ws://$GW/websockify?token="* ]]
	run python3 "$BATS_TEST_DIRNAME/../gateway/rfb_ws.py" "$view" --status
	[ "$output" = 101 ]
	run python3 "$BATS_TEST_DIRNAME/../gateway/rfb_ws.py" "$view" --pixel 10,10
	[ "$status" -eq 0 ] && [[ "$output" == *"10,10 "* ]]
	api POST "/v1/computers/$id/desktop/stream" '{"control":true,"ttlSeconds":600}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["policy"]')" = control ]
	[ "$(rk screen shares --json | rk_json '[c["policy"] for c in d]')" = '["view", "control"]' ]
	! grep -qF "${view#*token=}" "$RAKAZO_DATA_DIR/log/rakazo.log"
	# a bot's screen: view is given; control needs the person's takeover, and
	# a busy bot is the conflict
	rk screen shot "$id" --bot alpha --json >/dev/null
	api POST "/v1/computers/$id/desktop/stream" '{"botId":"alpha"}'
	[ "$CODE" = 200 ] && [ "$(jq_ '[d["bot"], d["display"]]')" = '["alpha", 1]' ]
	api POST "/v1/computers/$id/desktop/stream" '{"botId":"alpha","control":true}'
	[ "$CODE" = 403 ] && [ "$(jq_ 'd["error"]["category"]')" = forbidden ]
	rk computer lease acquire "$id" --bot alpha --holder run-1 --json >/dev/null
	api POST "/v1/computers/$id/desktop/stream" '{"botId":"alpha","control":true}'
	[ "$CODE" = 409 ] && [ "$(jq_ 'd["error"]["category"]')" = ComputerConflict ]
	# a port inside a computer with no network, reached through the forward
	api PUT "/v1/computers/$id/files" '{"path":"www/hello.txt","content":"from the container\n"}'
	api POST "/v1/computers/$id/sessions" '{"command":"cd www && exec python3 -m http.server 8000 --bind 127.0.0.1","yieldTimeMs":250}'
	api PUT "/v1/computers/$id/ports/8000"
	[ "$CODE" = 200 ] || { echo "$BODY"; false; }
	# a connection sends the forward's secret first (issue 20)
	addr=$(jq_ 'd["address"]')
	secret=$(jq_ 'd["secret"]')
	wait_for "python3 '$FWD' get '$addr' '$secret' /hello.txt '$BATS_TEST_TMPDIR/got'" 30
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "from the container" ]
	api DELETE "/v1/computers/$id" '{"commandKey":"dk-del"}'
	exe=$(jq_ 'd["id"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = succeeded ]" 60
}

@test "serve: concurrent session starts all work (helpers fork from a clean process, not the threaded server)" {
	serve_start
	id=$(api_fake box)
	pids=
	for i in $(seq 12); do
		curl -s -o "$BATS_TEST_TMPDIR/s$i" -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" \
			-d "{\"command\":\"echo n$i\",\"yieldTimeMs\":5000}" "$URL/v1/computers/$id/sessions" >"$BATS_TEST_TMPDIR/c$i" &
		pids="$pids $!"
	done
	wait $pids
	for i in $(seq 12); do
		[ "$(cat "$BATS_TEST_TMPDIR/c$i")" = 200 ] || { cat "$BATS_TEST_TMPDIR/s$i"; false; }
		[ "$(rk_json 'd["output"]' <"$BATS_TEST_TMPDIR/s$i")" = "n$i" ]
	done
}

@test "serve: a forwarded port carries bytes both ways to a server inside the computer" {
	serve_start
	id=$(api_fake box)
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	blob=$(python3 -c 'import base64; print(base64.b64encode(bytes(range(256)) * 40).decode())')
	api PUT "/v1/computers/$id/files" "{\"path\":\"site/blob.bin\",\"content\":\"$blob\",\"encoding\":\"base64\"}"
	[ "$CODE" = 200 ]
	api POST "/v1/computers/$id/sessions" "{\"command\":\"cd site && exec python3 -m http.server $port --bind 127.0.0.1\",\"yieldTimeMs\":250}"
	[ "$(jq_ 'd["running"]')" = true ]
	api PUT "/v1/computers/$id/ports/$port"
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["port"]')" = "$port" ]
	url=$(jq_ 'd["url"]')
	[[ $url == http://127.0.0.1:* ]]
	api PUT "/v1/computers/$id/ports/$port"
	[ "$(jq_ 'd["url"]')" = "$url" ]
	# a connection sends the forward's secret (the latest PUT's) first (issue 20)
	addr=$(jq_ 'd["address"]')
	secret=$(jq_ 'd["secret"]')
	wait_for "python3 '$FWD' get '$addr' '$secret' /blob.bin '$BATS_TEST_TMPDIR/got'" 20
	python3 -c 'import sys; assert open(sys.argv[1], "rb").read() == bytes(range(256)) * 40' "$BATS_TEST_TMPDIR/got"
	# a request body goes the other way
	run python3 "$FWD" send "$addr" "$secret" "POST /blob.bin HTTP/1.0
Content-Length: 6

posted"
	[[ $output == *501* || $output == *"Unsupported method"* ]]
}

# A paired machine: `rakazo pair` with a data directory and a root of its own.
start_machine() {
	mkdir -p "$BATS_TEST_TMPDIR/root"
	RAKAZO_DATA_DIR="$BATS_TEST_TMPDIR/machine" rk_bg pair "$URL" --token "$TOKEN" --name laptop \
		--root "$BATS_TEST_TMPDIR/root" --json "$@" >"$BATS_TEST_TMPDIR/pair.out$PAIRS" 2>"$BATS_TEST_TMPDIR/pair.err$PAIRS"
	MACHINE_PID=$!
	wait_for "[ -s '$BATS_TEST_TMPDIR/pair.out$PAIRS' ]" 20
	MID=$(rk_json 'd["computer_id"]' <"$BATS_TEST_TMPDIR/pair.out$PAIRS")
	PAIRS=$(( ${PAIRS:-0} + 1 ))
}

computer_state() { api GET "/v1/computers/$1" && jq_ 'd["state"]'; }

@test "serve: a paired machine runs sessions and files over its one connection, and reconnects" {
	serve_start
	PAIRS=0
	start_machine
	[[ $MID == cmp_* ]]
	[ "$(computer_state "$MID")" = running ]
	api PUT "/v1/computers/$MID/files" '{"path":"notes/a.txt","content":"from the api"}'
	[ "$CODE" = 200 ]
	[ "$(cat "$BATS_TEST_TMPDIR/root/notes/a.txt")" = "from the api" ]
	api GET "/v1/computers/$MID/directory?path=notes"
	[ "$(jq_ '[e["name"] for e in d["entries"]]')" = '["a.txt"]' ]
	api POST "/v1/computers/$MID/sessions" '{"command":"cat","yieldTimeMs":250}'
	sid=$(jq_ 'd["session"]')
	out=
	api POST "/v1/computers/$MID/sessions/$sid/input" '{"chars":"one\ntwo\n","yieldTimeMs":500}'
	out=$(jq_ 'd["output"]')
	wait_for 'api POST "/v1/computers/$MID/sessions/$sid/input" "{\"yieldTimeMs\":250}"; out="$out$(jq_ "d[\"output\"]")"; [[ $out == *two* ]]' 20
	[[ $out == one*two* ]]
	api POST "/v1/computers/$MID/sessions" '{"command":"pwd; exit 3","yieldTimeMs":5000}'
	[ "$(jq_ 'd["exitCode"]')" = 3 ] && [ "$(jq_ 'd["output"]')" = "$BATS_TEST_TMPDIR/root" ]
	# no desktop, no pause, no terminal
	api POST "/v1/computers/$MID/desktop/stream"
	[ "$CODE" = 422 ] && [ "$(jq_ 'd["error"]["category"]')" = ComputerUnsupported ]
	api POST "/v1/computers/$MID/pause" '{"commandKey":"pp"}'
	[ "$CODE" = 422 ]
	api POST "/v1/computers/$MID/sessions" '{"command":"true","tty":true}'
	[ "$CODE" = 422 ]
	# the connection breaks: offline, the running session is lost (unknown), nothing replayed
	kill "$MACHINE_PID"; wait "$MACHINE_PID" 2>/dev/null || true
	wait_for '[ "$(computer_state "$MID")" = offline ]' 20
	api POST "/v1/computers/$MID/sessions/$sid/input" '{"chars":"three\n","yieldTimeMs":250}'
	[ "$CODE" = 200 ] && [ "$(jq_ 'd["lost"]')" = true ] && [ "$(jq_ 'd["running"]')" = false ]
	api GET "/v1/computers/$MID/files?path=notes/a.txt"
	[ "$CODE" = 503 ] && [ "$(jq_ 'd["error"]["category"]')" = ComputerUnavailable ]
	# it pairs once: the next run reuses its secret and is the same computer
	start_machine
	[ "$(rk_json 'd["computer_id"]' <"$BATS_TEST_TMPDIR/pair.out1")" = "$MID" ]
	[ "$(computer_state "$MID")" = running ]
	api GET "/v1/computers/$MID/files?path=notes/a.txt"
	[ "$(jq_ 'd["content"]')" = "from the api" ]
	api GET /v1/computers
	[ "$(jq_ 'len([c for c in d["computers"] if c["provider"] == "paired"])')" = 1 ]
	# a newer connection replaces this one, which is told and stops
	first=$MACHINE_PID
	start_machine
	wait_for "! kill -0 $first 2>/dev/null" 20
	run wait "$first"
	[ "$status" -eq 4 ]
	[ "$(computer_state "$MID")" = running ]
	api GET "/v1/computers/$MID/files?path=notes/a.txt"
	[ "$CODE" = 200 ]
	# a server that starts again has no connection yet: offline until the machine dials
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
	LISTEN=${URL#http://} serve_start
	api GET "/v1/computers/$MID"
	[ "$(jq_ 'd["state"]')" = offline ] || [ "$(jq_ 'd["state"]')" = running ]
	wait_for '[ "$(computer_state "$MID")" = running ]' 30
	api GET "/v1/computers/$MID/files?path=notes/a.txt"
	[ "$CODE" = 200 ]
}

@test "serve: pairing needs a member's token and a machine secret" {
	serve_start
	api POST /v1/paired '{"name":"laptop"}' ""
	[ "$CODE" = 401 ]
	bot=$(rk serve token create bt --bot b1 2>/dev/null)
	api POST /v1/paired '{"name":"laptop"}' "$bot"
	[ "$CODE" = 403 ]
	CODE=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -H 'Authorization: Machine cmp_x.00' -H 'Connection: Upgrade' \
		-H 'Upgrade: rakazo-pair' "$URL/v1/paired/connect")
	[ "$CODE" = 401 ]
	api POST /v1/computers '{"commandKey":"pz","name":"pz","source":{"provider":"paired","template":null}}'
	[ "$CODE" = 400 ]
	expect_status 2 rk pair "$URL"
	expect_status 2 rk pair notaurl --token x
}
