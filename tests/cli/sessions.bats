#!/usr/bin/env bats
# Shell sessions on the fake provider: exec, input, Ctrl-C/Ctrl-D, tty,
# bounded output, idle end, kill and history.

load helper

setup_file() { :; }

running_session() {
	rk computer sessions t --json | rk_json '[s["id"] for s in d if s["state"]=="running"][0]'
}

@test "exec gives the exit code and the output" {
	rk_fake t
	run rk computer exec t --json -- 'echo out; echo err >&2; exit 3'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 3 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["session"]')" = null ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"]')" = null ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *out* ]]
	[ "$(printf '%s' "$output" | rk_json 'sorted(d)')" = '["exitCode", "output", "running", "session", "signal", "truncated"]' ]
}

@test "exec reports a signal that ended the command" {
	rk_fake t
	run rk computer exec t --json -- 'kill -TERM $$'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"]')" = SIGTERM ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = null ]
}

@test "exec works when the caller holds an extra descriptor (a shell's 3>, bats' fds)" {
	rk_fake t
	run "$RAKAZO_BIN" computer exec t --json -- echo hi 3>/dev/null
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = hi ]
}

@test "exec without --json prints the output as it is" {
	rk_fake t
	run rk computer exec t -- 'printf "a\nb\n"'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
}

@test "--yield-ms 300 on read, then input abc\\n" {
	rk_fake t
	run rk computer exec t --json --yield-ms 300 -- 'read x; echo got $x'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = true ]
	local sid
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	run rk computer input t "$sid" 'abc\n' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "got abc" ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
}

@test "Ctrl-C through input interrupts sleep 100" {
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --yield-ms 300 -- sleep 100 | rk_json 'd["session"]')
	run rk computer input t "$sid" '\x03' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"] == "SIGINT" or d["exitCode"] not in (None, 0)')" = true ]
}

@test "Ctrl-D through input ends cat" {
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --yield-ms 300 -- cat | rk_json 'd["session"]')
	run rk computer input t "$sid" 'hello\n' --json --yield-ms 300
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = hello ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = true ]
	run rk computer input t "$sid" '\x04' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
}

@test "a tty python3 REPL answers print(6*7) with 42" {
	rk_fake t
	run rk computer exec t --json --tty --yield-ms 1000 -- python3 -q
	[ "$status" -eq 0 ]
	local sid
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	run rk computer input t "$sid" 'print(6*7)\n' --json
	[ "$status" -eq 0 ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *42* ]]
	run rk computer input t "$sid" 'exit()\n' --json
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
}

@test "resize a tty session" {
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --tty --yield-ms 300 -- 'read x; stty size' | rk_json 'd["session"]')
	run rk computer resize t "$sid" --rows 40 --cols 100 --json
	[ "$status" -eq 0 ]
	run rk computer input t "$sid" '\n' --json
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *"40 100"* ]]
}

@test "output over 64 KiB: truncated true and exactly its last 65536 bytes kept" {
	rk_fake t
	# seq 1 100000 prints 588895 bytes: the reply must end with 100000
	run rk computer exec t --json -- 'seq 1 100000'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["truncated"]')" = true ]
	printf '%s' "$output" | python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["output"])' > "$BATS_TEST_TMPDIR/out"
	[ "$(wc -c < "$BATS_TEST_TMPDIR/out")" = 65536 ]
	seq 1 100000 | tail -c 65536 | cmp - "$BATS_TEST_TMPDIR/out"
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/out")" = 100000 ]
	# the head is gone: the first whole line kept is 89079 (the one before is
	# cut to its last bytes), not 1
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out")" = 89079 ]
	[ "$(head -n 1 "$BATS_TEST_TMPDIR/out")" = 78 ]
	run rk computer exec t --json --max-output 10 -- 'echo 0123456789abcdef'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'repr(d["output"])')" = "'789abcdef\\n'" ]
	[ "$(printf '%s' "$output" | rk_json 'len(d["output"])')" = 10 ]
	[ "$(printf '%s' "$output" | rk_json 'd["truncated"]')" = true ]
}

@test "a session ends after RAKAZO_SESSION_IDLE_MS without a call" {
	export RAKAZO_SESSION_IDLE_MS=1000
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --yield-ms 300 -- sleep 100 | rk_json 'd["session"]')
	sleep 2
	expect_json_error 3 not_found rk computer input t "$sid" 'x' --json
}

@test "a yield outside 250..30000 ms is a usage error" {
	rk_fake t
	expect_json_error 2 invalid_argument rk computer exec t --json --yield-ms 100 -- true
	expect_json_error 2 invalid_argument rk computer exec t --json --yield-ms 30001 -- true
	[ "$(rk computer sessions t --json | rk_json 'len(d)')" = 0 ]
}

@test "input to an unknown session is not_found" {
	rk_fake t
	expect_json_error 3 not_found rk computer input t cse_nosuch 'x' --json
	expect_json_error 2 invalid_argument rk computer input t cse_nosuch '\xZZ' --json
}

@test "kill returns the last output and ends the session" {
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --yield-ms 300 -- 'echo started; sleep 0.5; echo later; sleep 100' | rk_json 'd["session"]')
	sleep 1
	run rk computer kill t "$sid" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *later* ]]
	[ "$(rk computer sessions t --json | rk_json "[s['state'] for s in d if s['id']=='$sid'][0]")" != running ]
	expect_status 3 rk computer input t "$sid" 'x' --json
}

@test "history lists the command, the input and the output" {
	rk_fake t
	rk computer exec t --json -- 'echo hello-history' >/dev/null
	run rk computer history t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[h["data"] for h in d if h["kind"]=="command"][0]')" = "echo hello-history" ]
	[[ $(printf '%s' "$output" | rk_json '"".join(h["data"] for h in d if h["kind"]=="output")') == *hello-history* ]]
	[ "$(printf '%s' "$output" | rk_json '[h.get("exit_code") for h in d if h["kind"]=="exit"][0]')" = 0 ]
	run rk computer history t
	[[ $output == *'$ echo hello-history'* ]]
	[[ $output == *'[exit 0]'* ]]
}

@test "history redacts stored secrets (raw and base64) and credential-looking text in commands, input and output" {
	rk_fake t
	printf 'Zq7-history-secret-value' | rk secret set api --origin https://api.example.com --auth bearer --json >/dev/null
	b64=$(printf 'Zq7-history-secret-value' | base64)
	rk computer exec t --json -- "echo Zq7-history-secret-value; echo $b64 >/dev/null; echo 'Authorization: Bearer plain-tok3n'; GH_TOKEN=ghx123 true" >/dev/null
	out=$(rk computer exec t --json --yield-ms 500 -- 'read x; echo "got ${#x}"')
	sid=$(printf '%s' "$out" | rk_json 'd["session"]')
	rk computer input t "$sid" 'Zq7-history-secret-value\n' >/dev/null
	wait_for "rk computer history t --json | rk_json 'any(h[\"kind\"] == \"exit\" and h[\"session\"] == \"$sid\" for h in d)' | grep -q true" 10
	rk computer history t --json >"$BATS_TEST_TMPDIR/hist"
	! grep -q 'Zq7-history-secret-value' "$BATS_TEST_TMPDIR/hist"
	! grep -q "$b64" "$BATS_TEST_TMPDIR/hist"
	! grep -q 'plain-tok3n\|ghx123' "$BATS_TEST_TMPDIR/hist"
	python3 - "$BATS_TEST_TMPDIR/hist" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
cmd = [e["data"] for e in h if e["kind"] == "command"][0]
assert cmd == "echo [redacted]; echo [redacted] >/dev/null; echo 'Authorization: Bearer [redacted]'; GH_TOKEN=[redacted] true", cmd
assert any(e["kind"] == "input" and e["data"] == "[redacted]\n" for e in h), [e for e in h if e["kind"] == "input"]
out = "".join(e["data"] for e in h if e["kind"] == "output")
assert "[redacted]" in out and "got 24" in out, out
PY
	# the command itself ran with the real value
	run rk computer exec t -- 'printf %s Zq7-history-secret-value | wc -c'
	[ "$output" = 24 ]
	# a bot's own secret is redacted in that bot's commands
	printf 'Bot9-own-secret' | rk secret set botkey --bot b1 --origin https://api.example.com --auth bearer --json >/dev/null
	rk computer exec t --bot b1 --json -- 'echo Bot9-own-secret' >/dev/null
	rk computer history t --json >"$BATS_TEST_TMPDIR/hist2"
	[ "$(rk_json '[h["data"] for h in d if h["kind"] == "command" and h["bot"] == "b1"][0]' <"$BATS_TEST_TMPDIR/hist2")" = 'echo [redacted]' ]
	! grep -q 'Bot9-own-secret' "$BATS_TEST_TMPDIR/hist2"
}

@test "history --follow prints the entries there are, then new ones as they come (NDJSON with --json), until a signal" {
	rk_fake t
	rk computer exec t --json -- 'echo first-entry' >/dev/null
	"$RAKAZO_BIN" computer history t --follow --json >"$BATS_TEST_TMPDIR/ndjson" 2>"$BATS_TEST_TMPDIR/err" 3>&- 4>&- &
	jpid=$!
	"$RAKAZO_BIN" computer history t -f >"$BATS_TEST_TMPDIR/human" 2>&1 3>&- 4>&- &
	hpid=$!
	wait_for "grep -q first-entry '$BATS_TEST_TMPDIR/ndjson'" 10
	rk computer exec t --json -- 'echo second-entry' >/dev/null
	wait_for "grep -q 'exit_code' <(grep -A9 second-entry '$BATS_TEST_TMPDIR/ndjson')" 10
	wait_for "grep -qF '\$ echo second-entry' '$BATS_TEST_TMPDIR/human'" 10
	kill -TERM "$jpid" "$hpid"
	st=0
	wait "$jpid" || st=$?
	[ "$st" -eq 0 ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	python3 - "$BATS_TEST_TMPDIR/ndjson" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(isinstance(r, dict) for r in rows), rows
ids = [r["id"] for r in rows]
assert ids == sorted(set(ids)), ids          # each entry once, in order
cmds = [r["data"] for r in rows if r["kind"] == "command"]
assert cmds == ["echo first-entry", "echo second-entry"], cmds
assert sum(1 for r in rows if r["kind"] == "exit") == 2, rows
PY
	grep -qF '$ echo first-entry' "$BATS_TEST_TMPDIR/human"
	# bad input is refused before anything is followed
	expect_status 2 rk computer history t --follow --limit 0
	expect_status 3 rk computer history nosuch --follow
}

@test "sessions lists running and ended sessions" {
	rk_fake t
	rk computer exec t --json -- true >/dev/null
	rk computer exec t --json --yield-ms 300 -- sleep 100 >/dev/null
	run rk computer sessions t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'len(d)')" = 2 ]
	[ "$(printf '%s' "$output" | rk_json 'sorted(s["state"] for s in d)[-1]')" = running ]
}

@test "exec --env and --cwd reach the command" {
	rk_fake t
	rk computer exec t --json -- 'mkdir -p sub' >/dev/null
	run rk computer exec t --json --env FOO=bar --cwd sub -- 'echo $FOO; basename $PWD'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "$(printf 'bar\nsub')" ]
	expect_json_error 2 usage rk computer exec t --json --env NOEQUALS -- true
}
