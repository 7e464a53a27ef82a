#!/usr/bin/env bats
# Input from outside, as an attacker shapes it (issue 20): strict JSON
# everywhere it is parsed (a duplicate key, a NUL in a string or deep
# nesting is refused, never read one way here and another there), error
# JSON that is always UTF-8, terminal escapes that never reach a terminal
# raw, and an OpenAPI spec that lists every status the server answers.

load helper

CLIENT="$BATS_TEST_DIRNAME/../fixtures/api_client.py"
SPEC="$BATS_TEST_DIRNAME/../../api/openapi.json"

teardown() {
	if [ -n "${SERVE_PID:-}" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
	rk_kill_all
	rk_remove_containers
	rk_pg_teardown
}

start_server() {
	local extra=()
	# the fake provider is a test double the server offers only when told to
	if "$RAKAZO_BIN" serve --help 2>&1 | grep -q -- --providers; then extra=(--providers fake); fi
	( eval 'exec "$RAKAZO_BIN" serve --listen 127.0.0.1:0 "${extra[@]}" --token-file "$BATS_TEST_TMPDIR/token" \
		--url-file "$BATS_TEST_TMPDIR/url"' "$RK_CLOSE_FDS" ) >"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	SERVE_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	URL=$(cat "$BATS_TEST_TMPDIR/url")
	TOKEN=$(cat "$BATS_TEST_TMPDIR/token")
}

# api METHOD PATH [BODY]: sets CODE and BODY (the reply); the body is sent as bytes.
api() {
	local args=(-s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	CODE=$(curl "${args[@]}" "$URL$2")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
}

# A running fake computer named $1 with a desktop, reachable through the API; prints its id.
fake_computer() {
	rk computer create --provider fake --name "$1" --wait --json 2>/dev/null | rk_json 'd["computer_id"]'
}

# Runs "$@" on a pseudo-terminal (stdout and stderr both); the bytes it wrote go to $1.
on_tty() {
	local out=$1
	shift
	python3 - "$out" "$@" <<'EOF'
import os, select, sys
out = sys.argv[1]
pid, fd = os.forkpty()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
data = b""
while True:
    r, _, _ = select.select([fd], [], [], 120)
    if not r:
        break
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    data += b
os.waitpid(pid, 0)
open(out, "wb").write(data)
EOF
}

# Fails when the bytes in file $1 hold a raw ESC, BEL or C1 control (U+0080..U+009F, or a lone 0x9b).
no_raw_controls() {
	python3 - "$1" <<'EOF'
import re, sys
data = open(sys.argv[1], "rb").read()
bad = re.search(rb"[\x1b\x07\x9b]|\xc2[\x80-\x9f]", data)
if bad:
    sys.exit("a raw control reached the terminal at byte %d: %r" % (bad.start(), data[max(0, bad.start() - 20):bad.start() + 20]))
EOF
}

@test "input: a duplicate key in --actions is refused, not clicked at x=7 (issue 20)" {
	rk_fake t
	before=$(rk screen shot t --json | rk_json 'd["frame_hash"]')
	run rk screen act t -a '[{"action":"click","x":7,"y":7,"x":900}]' --json
	[ "$status" -eq 2 ] || { echo "exit $status: $output"; false; }
	[[ $output == *'duplicate key \"x\" in object at offset 31'* ]]
	# nothing ran: the screen is as it was
	[ "$(rk screen shot t --json | rk_json 'd["frame_hash"]')" = "$before" ]
	# the same for a browser action and a provider's options
	run rk browser act t -a '{"action":"click","ref":"e1","ref":"e2"}'
	[ "$status" -eq 2 ] && [[ $output == *'duplicate key "ref"'* ]]
	run rk computer create --provider fake --name u --options '{"network":"none","network":"host"}'
	[ "$status" -ne 0 ] && [[ $output == *'duplicate key "network"'* ]]
}

@test "input: nesting too deep says so, not 'not valid JSON' (issue 20)" {
	rk_fake t
	deep=$(python3 -c 'print("[" * 65 + "]" * 65)')
	run rk screen act t -a "$deep"
	[ "$status" -eq 2 ] && [[ $output == *"nesting deeper than 64 levels at offset 64"* ]] || { echo "$output"; false; }
	# and a NUL in a typed text is refused, not typed up to the NUL
	run rk screen act t -a '[{"action":"type","text":"ls\u0000; rm -rf ~"}]'
	[ "$status" -eq 2 ] && [[ $output == *"NUL character (\\u0000)"* ]] || { echo "$output"; false; }
}

@test "input: a NUL in an API string is a 400, never a truncated name or command (issue 20)" {
	id=$(fake_computer box)
	start_server
	api PUT "/v1/computers/$id/files" '{"path":"notes/a\u0000.sh","content":"echo pwned"}'
	[ "$CODE" = 400 ] || { echo "$CODE $BODY"; false; }
	[[ $BODY == *'NUL character (\\u0000) at offset'* ]]
	# no file under the cut name
	run rk computer file read box notes/a
	[ "$status" -eq 3 ]
	api POST "/v1/computers/$id/sessions" '{"command":"echo safe\u0000; echo cut-off-part"}'
	[ "$CODE" = 400 ] || { echo "$CODE $BODY"; false; }
	# a duplicate key and a deep body are refused the same way, saying why
	api PUT "/v1/computers/$id/files" '{"path":"notes/b","path":"notes/c","content":"x"}'
	[ "$CODE" = 400 ] && [[ $BODY == *'duplicate key \"path\" in object at offset 18'* ]] || { echo "$CODE $BODY"; false; }
	deep=$(python3 -c 'print("{\"path\":" + "[" * 80 + "]" * 80 + "}")')
	api PUT "/v1/computers/$id/files" "$deep"
	[ "$CODE" = 400 ] && [[ $BODY == *"nesting deeper than 64 levels"* ]] || { echo "$CODE $BODY"; false; }
	run rk computer file list box notes --json
	[ "$output" = "[]" ] || [ "$status" -eq 3 ] || { echo "$output"; false; }
}

@test "input: error JSON is valid UTF-8 even when it quotes the caller's bytes (issue 20)" {
	start_server
	curl -s -o "$BATS_TEST_TMPDIR/e.json" -H "Authorization: Bearer $TOKEN" "$URL/v1/computers/cmp_%FF%C3%1B"
	run python3 -c 'import json, sys; d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8")); print(d["error"]["message"])' \
		"$BATS_TEST_TMPDIR/e.json"
	[ "$status" -eq 0 ] || { echo "not UTF-8 JSON: $(od -c "$BATS_TEST_TMPDIR/e.json" | head -5)"; false; }
	[[ $output == *'cmp_\xff\xc3'* ]]
	# the CLI's --json error line too
	rk computer show $'x\xff\xfe' --json 2>"$BATS_TEST_TMPDIR/cli.err" && false
	run python3 -c 'import json, sys; print(json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))["error"]["code"])' \
		"$BATS_TEST_TMPDIR/cli.err"
	[ "$status" -eq 0 ] && [ "$output" = not_found ] || { echo "$output"; od -c "$BATS_TEST_TMPDIR/cli.err" | head; false; }
}

@test "input: terminal escapes from a computer never reach the terminal raw (issue 20)" {
	rk_fake t
	printf 'before \033]0;pwned\007 \033[2J \302\233 after\n' | rk computer file write t notes/evil.txt
	printf 'x' | rk computer file write t $'notes/\e]0;title\aname'
	# the file's bytes to a terminal: escaped, and said so
	on_tty "$BATS_TEST_TMPDIR/read.out" "$RAKAZO_BIN" computer file read t notes/evil.txt
	no_raw_controls "$BATS_TEST_TMPDIR/read.out"
	grep -qF 'before \x1b]0;pwned\x07 \x1b[2J \u009b after' "$BATS_TEST_TMPDIR/read.out"
	grep -qF 'control characters in notes/evil.txt are shown escaped' "$BATS_TEST_TMPDIR/read.out"
	# to a pipe, or with -o -, the bytes are as they were written
	[ "$(rk computer file read t notes/evil.txt | od -An -c | tr -d ' \n')" = \
		"$(printf 'before \033]0;pwned\007 \033[2J \302\233 after\n' | od -An -c | tr -d ' \n')" ]
	# a path in a table, an error quoting a path, a JSON document on a terminal
	on_tty "$BATS_TEST_TMPDIR/list.out" "$RAKAZO_BIN" computer file list t notes
	no_raw_controls "$BATS_TEST_TMPDIR/list.out"
	grep -qF '\x1b]0;title\x07name' "$BATS_TEST_TMPDIR/list.out"
	on_tty "$BATS_TEST_TMPDIR/err.out" "$RAKAZO_BIN" computer file read t $'no\e[2Jsuch'
	no_raw_controls "$BATS_TEST_TMPDIR/err.out"
	grep -qF 'rakazo: not_found:' "$BATS_TEST_TMPDIR/err.out"
	on_tty "$BATS_TEST_TMPDIR/json.out" "$RAKAZO_BIN" computer file read t notes/evil.txt --json
	no_raw_controls "$BATS_TEST_TMPDIR/json.out"
	tr -d '\r' <"$BATS_TEST_TMPDIR/json.out" | rk_json 'd["content"]' | grep -qF "$(printf 'before \033]0;pwned\007 \033[2J \302\233 after')"
}

@test "input: every answer of the server has its status in api/openapi.json (issue 20)" {
	id=$(fake_computer box)
	bot=$(rk serve token create st-bot --bot nobody 2>/dev/null)
	start_server
	# the spec's routes are the server's
	rk serve routes --json >"$BATS_TEST_TMPDIR/routes.json"
	run python3 "$CLIENT" "$URL" "$TOKEN" openapi "$SPEC" "$BATS_TEST_TMPDIR/routes.json"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# and every route, driven through good and bad requests, answers only statuses the spec lists
	max=$(grep -o 'RK_API_BODY_MAX ([0-9u* ]*)' "$BATS_TEST_DIRNAME/../../api/api.h" | tr -dc "0-9*")
	run python3 "$CLIENT" "$URL" "$TOKEN" statuses "$id" "$bot" "$((max))"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ ${lines[${#lines[@]}-1]} == "ok statuses "* ]]
}
