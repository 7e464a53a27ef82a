#!/usr/bin/env bats
# rakazo serve and rakazo screen gateway against a hostile network: the
# unauthenticated get a bounded share of the server (issue 20, item 4), both
# listen on loopback unless --public (issue 20, low), and a revoked token's
# streams and sessions end at once (issue 20, low). Attackers come from
# other loopback addresses (127.0.0.2 and up), so the per-peer caps apply to
# them and not to the test's own client on 127.0.0.1.

load helper

FLOOD="$BATS_TEST_DIRNAME/../fixtures/flood.py"

# Starts `rakazo serve` ("$@" added) on a free loopback port; sets SERVE_PID,
# URL, PORT and TOKEN.
serve_start() {
	rm -f "$BATS_TEST_TMPDIR/url"
	( eval 'exec "$RAKAZO_BIN" serve --listen 127.0.0.1:0 --token-file "$BATS_TEST_TMPDIR/token" \
		--url-file "$BATS_TEST_TMPDIR/url" "$@"' "$RK_CLOSE_FDS" ) \
		>"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	SERVE_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	URL=$(cat "$BATS_TEST_TMPDIR/url")
	PORT=${URL##*:}
	TOKEN=$(cat "$BATS_TEST_TMPDIR/token")
}

teardown() {
	if [ -n "${SERVE_PID:-}" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
	if [ -n "${GW_PID:-}" ]; then kill "$GW_PID" 2>/dev/null || true; fi
	rk_kill_all
	rk_remove_containers
}

# --- the unauthenticated get a bounded share -------------------------------------------

@test "serve: 600 idle connections and 20 large uploads without a token neither shut out a client with one nor grow the server's memory" {
	serve_start
	run python3 "$FLOOD" flood 127.0.0.1 "$PORT" "$TOKEN" "$SERVE_PID" 15
	echo "$output"
	[ "$status" -eq 0 ]
	printf '%s' "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
grown = (d["rss_peak_kb"] - d["rss_before_kb"]) // 1024
print("VmRSS before %d kB, at most %d kB (+%d MiB), after %d kB; %d idle held at most; %d upload bytes sent"
      % (d["rss_before_kb"], d["rss_peak_kb"], grown, d["rss_after_kb"], d["idle_open_max"], d["upload_bytes"]),
      file=sys.stderr)
# the client with a token is answered every time, well within the bound
assert d["probes"], d
for p in d["probes"]:
    assert p["status"] == 200 and p["seconds"] < 20, p
# a stranger gets a few connections per address, not every slot
assert d["idle_open_max"] <= 6 * 16, d
# no body is read before the token: the memory stays put
assert grown < 64, "VmRSS grew by %d MiB" % grown
'
	# the server still serves
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/computers")" = 200 ]
}

@test "serve: a request without a token is answered 401 on its headers, before its body is read" {
	serve_start
	# 20 MiB announced, none sent: the answer comes anyway, and the connection ends
	run python3 - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"PUT /v1/computers/cmp_x/files?path=a HTTP/1.1\r\nHost: x\r\nContent-Length: 20971520\r\n\r\n")
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
print(got.split(b"\r\n")[0].decode())
print("connection: close" in got.decode().lower())
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "HTTP/1.1 401 Unauthorized" ]
	[ "${lines[1]}" = True ]
	# the open routes take no body at all
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X GET --data-binary x "$URL/v1/health")" = 400 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/health")" = 200 ]
	# and a header block past 32 KiB is refused, not buffered
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)" "$URL/v1/health")" -ge 400 ]
}

@test "serve: a connection whose headers never end is cut within seconds" {
	serve_start
	run python3 "$FLOOD" trickle 127.0.0.1 "$PORT" 60
	echo "closed after $output s"
	[ "$status" -eq 0 ]
	# HEADERS_MS is 10 s; the bound leaves a loaded machine room
	python3 -c 'import sys; assert float(sys.argv[1]) < 40' "$output"
	# one that shows a token keeps its connection for long polls and streams
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/v1/computers")" = 200 ]
}

# --- a revoked token's streams end ---------------------------------------------------------

@test "serve: an event stream ends within a second or so of its token's revocation" {
	# a command that stays pending (no worker) keeps its stream open
	RAKAZO_NO_WORKER=1 rk computer create --provider fake --name t --json >"$BATS_TEST_TMPDIR/create.json" 2>/dev/null
	exe=$(rk_json 'd["id"]' <"$BATS_TEST_TMPDIR/create.json")
	RAKAZO_NO_WORKER=1 serve_start
	tok=$(rk serve token create watcher)
	curl -s -N --max-time 60 -H "Authorization: Bearer $tok" "$URL/v1/executions/$exe/observe?afterSequence=0" \
		>"$BATS_TEST_TMPDIR/stream" &
	curl_pid=$!
	wait_for 'grep -q "event: submitted" "$BATS_TEST_TMPDIR/stream"' 20
	# another token's stream of the same command stays
	curl -s -N --max-time 60 -H "Authorization: Bearer $TOKEN" "$URL/v1/executions/$exe/observe?afterSequence=0" \
		>"$BATS_TEST_TMPDIR/other" &
	other_pid=$!
	wait_for 'grep -q "event: submitted" "$BATS_TEST_TMPDIR/other"' 20
	rk serve token revoke watcher >/dev/null
	# ended by the server (curl's own limit is 60 s); the bound is generous
	wait_for '! kill -0 $curl_pid 2>/dev/null' 10
	wait "$curl_pid" # a clean end of the stream, not an error
	kill -0 "$other_pid"
	kill "$other_pid"
	grep -q "its token .* was revoked" "$RAKAZO_DATA_DIR/log/rakazo.log"
}
