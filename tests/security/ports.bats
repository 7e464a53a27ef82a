#!/usr/bin/env bats
# rakazo serve's other routes against a bounded token holder and the
# network (issue 20, item 1: "audit every other route for the same class of
# hole"): a forwarded port answers only its maker and ends with its maker's
# rights; error replies show no host path; refused requests cannot fill the
# disk through the log.

load helper
load ../cli/serve

FWD="$BATS_TEST_DIRNAME/../fixtures/forward.py"

teardown() {
	local p
	for p in ${HOLD_PIDS:-}; do kill "$p" 2>/dev/null || true; done
	if [ -n "${SERVE_PID:-}" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
	rk_kill_all
	rk_remove_containers
}

# A running computer of provider $2 (default fake) made through the API;
# prints its id.
api_computer() {
	api POST /v1/computers "{\"commandKey\":\"mk-$1\",\"name\":\"$1\",\"source\":{\"provider\":\"${2:-fake}\",\"template\":null}}"
	[ "$CODE" = 202 ] || { echo "create: $CODE $BODY" >&2; return 1; }
	local exe id
	exe=$(jq_ 'd["id"]')
	id=$(jq_ 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(jq_ 'd[\"state\"]')\" = succeeded ]" 90
	echo "$id"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts forward.py's echo server on port $2 inside computer $1; it logs
# each connection it takes to echo.log in the workspace.
echo_server() {
	local b64
	b64=$(base64 -w0 "$FWD")
	api PUT "/v1/computers/$1/files" "{\"path\":\"forward.py\",\"content\":\"$b64\",\"encoding\":\"base64\"}"
	[ "$CODE" = 200 ] || { echo "upload: $CODE $BODY" >&2; return 1; }
	api POST "/v1/computers/$1/sessions" "{\"command\":\"exec python3 forward.py echo-server $2 echo.log\",\"yieldTimeMs\":500}"
	[ "$(jq_ 'd["running"]')" = true ] || { echo "echo server: $BODY" >&2; return 1; }
	api POST "/v1/computers/$1/sessions" "{\"command\":\"python3 forward.py wait-port $2\",\"yieldTimeMs\":30000}"
	[ "$(jq_ 'd["exitCode"]')" = 0 ] || { echo "echo server not up: $BODY" >&2; return 1; }
}

# How many connections the echo server in computer $1 took.
connections() {
	api GET "/v1/computers/$1/files?path=echo.log"
	if [ "$CODE" = 404 ]; then echo 0; return; fi
	jq_ 'd["content"].count("connection")'
}

# forward PUT as token $3 of port $2 of computer $1: sets FWD_ADDR, SECRET.
forward() {
	api PUT "/v1/computers/$1/ports/$2" "" "${3:-$TOKEN}"
	[ "$CODE" = 200 ] || { echo "forward: $CODE $BODY" >&2; return 1; }
	FWD_ADDR=$(jq_ 'd["address"]')
	SECRET=$(jq_ 'd.get("secret")')
}

# Holds a connection through the forward (echo checked) in the background;
# its verdict lands in $BATS_TEST_TMPDIR/hold$1.
hold() {
	rm -f "$BATS_TEST_TMPDIR/ready$1" "$BATS_TEST_TMPDIR/hold$1"
	python3 "$FWD" hold "$FWD_ADDR" "$SECRET" "$BATS_TEST_TMPDIR/ready$1" >"$BATS_TEST_TMPDIR/hold$1" 2>&1 &
	HOLD_PIDS="${HOLD_PIDS:-} $!"
	wait_for "[ -e '$BATS_TEST_TMPDIR/ready$1' ]" 30
}

held_closed() { [ "$(cat "$BATS_TEST_TMPDIR/hold$1" 2>/dev/null)" = closed ]; }

# 0 when nothing listens at $FWD_ADDR any more.
listener_gone() {
	python3 -c '
import socket, sys
h, p = sys.argv[1].rsplit(":", 1)
try:
    socket.create_connection((h, int(p)), timeout=5).close()
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)' "$FWD_ADDR"
}

# --- forwarded ports ---------------------------------------------------------------------

@test "ports: a connection without the forward's secret gets nothing from the service inside the computer" {
	serve_start
	id=$(api_computer box)
	port=$(free_port)
	echo_server "$id" "$port"
	forward "$id" "$port"
	seen=$(connections "$id")
	# anyone else on this host: no secret, a wrong one, a request straight away
	run python3 "$FWD" send "$FWD_ADDR" - "ping
"
	[ -z "$output" ]
	[[ $SECRET =~ ^[0-9a-f]{64}$ ]] || { echo "no secret in the reply: $BODY" >&2; false; }
	run python3 "$FWD" send "$FWD_ADDR" "${SECRET%?}x" "ping
"
	[ -z "$output" ]
	run python3 "$FWD" send "$FWD_ADDR" - "GET / HTTP/1.0

"
	[ -z "$output" ]
	run python3 "$FWD" send "$FWD_ADDR" "$SECRET$SECRET" "ping
"
	[ -z "$output" ]
	# none of them reached the computer's service
	[ "$(connections "$id")" = "$seen" ]
	# the maker, with the secret, reaches it
	[ "$(python3 "$FWD" send "$FWD_ADDR" "$SECRET" "ping
")" = ping ]
	[ "$(connections "$id")" = $((seen + 1)) ]
	# the same PUT again: the same address, a new secret; the old one opens nothing
	old=$SECRET
	addr=$FWD_ADDR
	forward "$id" "$port"
	[ "$FWD_ADDR" = "$addr" ] && [ "$SECRET" != "$old" ]
	run python3 "$FWD" send "$FWD_ADDR" "$old" "ping
"
	[ -z "$output" ]
	[ "$(python3 "$FWD" send "$FWD_ADDR" "$SECRET" "pong
")" = pong ]
	# another token's forward of the same port is its own, with its own secret
	other=$(rk serve token create other 2>/dev/null)
	forward "$id" "$port" "$other"
	[ "$FWD_ADDR" != "$addr" ]
	run python3 "$FWD" send "$addr" "$SECRET" "ping
"
	[ -z "$output" ]
	grep -q "without the forward's secret" "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "ports: revoking the token that made a forward closes it and cuts its connections" {
	serve_start
	id=$(api_computer box)
	port=$(free_port)
	echo_server "$id" "$port"
	tok=$(rk serve token create maker 2>/dev/null)
	forward "$id" "$port" "$tok"
	hold 1
	rk serve token revoke maker >/dev/null
	# within about a second (the bound is generous for a loaded machine)
	wait_for "held_closed 1" 15
	wait_for listener_gone 15
	grep -q "ended: its token was revoked" "$RAKAZO_DATA_DIR/log/rakazo.log"
	# the token that made the server's own forward keeps it
	forward "$id" "$port"
	[ "$(python3 "$FWD" send "$FWD_ADDR" "$SECRET" "ping
")" = ping ]
}

@test "ports: a forward ends when its computer stops or is deleted" {
	serve_start
	id=$(api_computer box)
	port=$(free_port)
	echo_server "$id" "$port"
	forward "$id" "$port"
	hold 1
	rk computer stop "$id" >/dev/null
	wait_for "held_closed 1" 15
	wait_for listener_gone 15
	grep -q "ended: the computer is no longer running" "$RAKAZO_DATA_DIR/log/rakazo.log"

	id2=$(api_computer box2)
	port=$(free_port)
	echo_server "$id2" "$port"
	forward "$id2" "$port"
	hold 2
	api DELETE "/v1/computers/$id2" '{"commandKey":"del-box2"}'
	[ "$CODE" = 202 ]
	wait_for "held_closed 2" 30
	wait_for listener_gone 15
}

@test "ports: a bot's forward ends when the bot loses its right to the computer" {
	docker_or_skip
	serve_start
	id=$(api_computer dbox docker)
	port=$(free_port)
	echo_server "$id" "$port"
	bot=$(rk serve token create bottok --bot b1 2>/dev/null)
	api PUT "/v1/computers/$id/bots/b1"
	[ "$CODE" = 200 ] || [ "$CODE" = 201 ]
	forward "$id" "$port" "$bot"
	hold 1
	api DELETE "/v1/computers/$id/bots/b1"
	[ "$CODE" = 200 ] || [ "$CODE" = 204 ]
	wait_for "held_closed 1" 15
	wait_for listener_gone 15
	grep -q "ended: its token's bot lost its right" "$RAKAZO_DATA_DIR/log/rakazo.log"
	api DELETE "/v1/computers/$id" '{"commandKey":"del-dbox"}'
}

# --- error replies ---------------------------------------------------------------------------

# Every file route on computer $1 with paths that fail; no reply may hold
# the data directory (as given or resolved).
no_host_paths() {
	local real p replies="$BATS_TEST_TMPDIR/replies"
	real=$(cd "$RAKAZO_DATA_DIR" && pwd -P)
	: >"$replies"
	for p in nosuch nosuch/deeper ../x a/../../x /etc/shadow/x fifo sock lnk lnk/x fifo/x dangling up up/x d '' . / \
		/home/user/rakazo-home/nosuch "$RAKAZO_DATA_DIR/rakazo.db"; do
		api GET "/v1/computers/$1/files?path=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$p")"
		printf '%s %s\n' "$CODE" "$BODY" >>"$replies"
		api GET "/v1/computers/$1/directory?path=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$p")"
		printf '%s %s\n' "$CODE" "$BODY" >>"$replies"
		api DELETE "/v1/computers/$1/files?path=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$p")"
		printf '%s %s\n' "$CODE" "$BODY" >>"$replies"
		api PUT "/v1/computers/$1/files" "$(python3 -c 'import json, sys; print(json.dumps({"path": sys.argv[1] + "/y", "content": "a"}))' "$p")"
		printf '%s %s\n' "$CODE" "$BODY" >>"$replies"
	done
	# errors only: the paths the caller sent itself are left out of the check
	grep -v '^2' "$replies" | grep -vF "\"path\":\"$RAKAZO_DATA_DIR" >"$replies.err" || true
	[ -s "$replies.err" ]
	if grep -F -e "$RAKAZO_DATA_DIR" -e "$real" -e "/homes/" -e "/run/" "$replies.err" | grep -v "rakazo.db"; then
		echo "a reply shows a host path" >&2
		return 1
	fi
}

special_files() {
	api POST "/v1/computers/$1/sessions" '{"command":"mkdir -p d; mkfifo fifo; ln -s /etc/passwd lnk; ln -s /nonexistent dangling; ln -s ../../.. up; python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind(\\\"sock\\\")\"","yieldTimeMs":5000}'
	[ "$CODE" = 200 ]
}

@test "errors: replies for missing files, bad paths, special files and a missing workspace never show the data directory" {
	serve_start
	id=$(api_computer box)
	special_files "$id"
	no_host_paths "$id"
	# the workspace itself gone from under the computer
	ws="$RAKAZO_DATA_DIR/homes/$(rk_sql "select home_key from computers where id = '$id'")"
	[ -d "$ws" ]
	mv "$ws" "$ws.away"
	no_host_paths "$id"
	mv "$ws.away" "$ws"
}

@test "errors: a docker computer's replies never show the data directory, its workspace there or not" {
	docker_or_skip
	serve_start
	id=$(api_computer dbox docker)
	special_files "$id"
	no_host_paths "$id"
	ws="$RAKAZO_DATA_DIR/homes/$(rk_sql "select home_key from computers where id = '$id'")"
	[ -d "$ws" ]
	mv "$ws" "$ws.away"
	no_host_paths "$id"
	mv "$ws.away" "$ws"
	api DELETE "/v1/computers/$id" '{"commandKey":"del-dbox"}'
}

# --- the log ----------------------------------------------------------------------------------

@test "log: thousands of refused requests without a token add a bounded number of lines" {
	serve_start
	log="$RAKAZO_DATA_DIR/log/rakazo.log"
	before=$(wc -l <"$log")
	start=$(date +%s)
	run python3 "$FWD" refused 127.0.0.1 "$PORT" 3000
	[ "$status" -eq 0 ]
	elapsed=$(( $(date +%s) - start + 1 ))
	# every request was answered
	[ "$output" -ge 2900 ] || { echo "only $output answered 401" >&2; false; }
	added=$(( $(wc -l <"$log") - before ))
	echo "3000 refusals in ${elapsed}s added $added lines" >&2
	# at most 10 lines a second, and one summary per address a second
	[ "$added" -le $(( (elapsed + 3) * (10 + 4) + 10 )) ]
	[ "$added" -lt 1000 ]
	# the summary names the count and the address
	wait_for "grep -qE '[0-9]+ more refused requests from 127\.0\.0\.[2-5]' '$log'" 10
	# the refusals logged say where they came from
	grep -q '401 denied.*(from 127.0.0.' "$log"
}
