#!/usr/bin/env bats
# One test per documented exit status (engine/util/err.c, rakazo(1)), each
# with --json: stdout empty, one {"error":{"code","message"}} line on stderr.

load helper

first_exe() {
	rk computer execution list --json | rk_json "[e['id'] for e in d if e['op']=='${1:-create}'][0]"
}

@test "0 ok: a successful command exits 0 and prints one JSON document" {
	run rk computer create --provider fake --name t --wait --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[ "$(printf '%s' "$output" | rk_json 'd["state"]')" = succeeded ]
}

@test "1 failure: a create that fails at the provider exits 1" {
	export RAKAZO_FAKE_FAULTS=provision=fail
	expect_status 1 rk computer create --provider fake --name t --wait --json
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = failed ]
	expect_json_error 1 failed rk computer create --provider fake --name t2 --wait --json
}

@test "2 usage: an unknown flag" {
	expect_json_error 2 usage rk computer list --json --bogus
	expect_json_error 2 usage rk computer create --json -Z
	run rk computer list --bogus
	[ "$status" -eq 2 ]
	[[ $output == *"unknown option --bogus"* ]]
}

@test "2 usage: missing arguments" {
	expect_json_error 2 usage rk computer show --json
	expect_json_error 2 usage rk computer exec --json
	expect_json_error 2 usage rk computer create --json
	expect_json_error 2 usage rk computer create --json --name
}

@test "2 usage: --json anywhere on the line gives a JSON error" {
	expect_json_error 2 usage rk computer list --bogus --json
	expect_json_error 2 usage rk computer --json
	expect_json_error 2 usage rk computer nosuch --json
	expect_json_error 2 usage rk nosuch --json
}

@test "3 not_found: an unknown computer id" {
	expect_json_error 3 not_found rk computer show cmp_nosuch --json
	expect_json_error 3 not_found rk computer pause nosuch --json
	expect_json_error 3 not_found rk computer execution show exe_nosuch --json
}

@test "4 conflict: a command key reused with a different body" {
	rk computer create --provider fake --name t --command-key k1 --json >/dev/null
	expect_json_error 4 conflict rk computer create --provider fake --name t2 --command-key k1 --json
	[ "$(rk computer list --json | rk_json 'len(d)')" = 1 ]
}

@test "4 conflict: pause while a create is still running" {
	export RAKAZO_FAKE_DELAY_MS=3000
	rk computer create --provider fake --name t --json >/dev/null
	expect_json_error 4 conflict rk computer pause t --json
}

@test "4 conflict: pause while a create is still pending" {
	export RAKAZO_NO_WORKER=1
	rk computer create --provider fake --name t --json >/dev/null
	expect_json_error 4 conflict rk computer pause t --json
	[ "$(rk computer execution list --json | rk_json 'len(d)')" = 1 ]
}

@test "4 conflict: a second worker for the same data directory" {
	"$RAKAZO_BIN" worker >/dev/null 2>&1 &
	local pid=$!
	wait_for '[ -s "$RAKAZO_DATA_DIR/worker.lock" ] && [ "$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")" = '"$pid"' ]'
	expect_json_error 4 conflict rk worker --once --json
	kill -TERM "$pid"
	wait "$pid" || true
}

@test "5 unavailable: exec on a computer whose create failed" {
	export RAKAZO_FAKE_FAULTS=provision=fail
	run rk computer create --provider fake --name t --wait --json
	[ "$status" -eq 1 ]
	expect_json_error 5 unavailable rk computer exec t --json -- true
}

@test "5 unavailable: the fake provider injected unavailable" {
	export RAKAZO_FAKE_FAULTS=provision=unavailable
	expect_status 5 rk computer create --provider fake --name t --wait --json
}

@test "6 timeout: --wait --timeout 1 on a slow create" {
	export RAKAZO_FAKE_DELAY_MS=5000
	local t0=$SECONDS
	expect_json_error 6 timeout rk computer create --provider fake --name t --wait --timeout 1 --json
	[ $((SECONDS - t0)) -lt 4 ]
}

@test "7 outcome_unknown: a lost provider reply, then decide" {
	export RAKAZO_FAKE_FAULTS=provision=lost_reply
	expect_status 7 rk computer create --provider fake --name t --wait --json
	[[ $output == *'"code":"outcome_unknown"'* ]]
	local id
	id=$(first_exe)
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = outcome_unknown ]
	run rk computer execution events "$id" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[e["type"] for e in d][-1]')" = decision_needed ]
	# a lifecycle command waits for the decision
	expect_json_error 4 conflict rk computer stop t --json
	run rk computer execution decide "$id" --outcome succeeded --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["state"]')" = succeeded ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
	run rk computer execution events "$id" --json
	[ "$(printf '%s' "$output" | rk_json '[e["type"] for e in d][-1]')" = decided ]
	# deciding twice is a conflict
	expect_json_error 4 conflict rk computer execution decide "$id" --outcome failed --json
}

@test "7 outcome_unknown: a create decided succeeded gives a usable computer" {
	export RAKAZO_FAKE_FAULTS=provision=lost_reply
	run rk computer create --provider fake --name t --wait --json
	[ "$status" -eq 7 ]
	rk computer execution decide "$(first_exe)" --outcome succeeded --json >/dev/null
	run rk computer exec t --json -- echo hi
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = hi ]
}

@test "7 outcome_unknown: decide failed marks the create failed" {
	export RAKAZO_FAKE_FAULTS=provision=lost_reply
	run rk computer create --provider fake --name t --wait --json
	[ "$status" -eq 7 ]
	run rk computer execution decide "$(first_exe)" --outcome failed --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["state"]')" = failed ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = failed ]
}

@test "--json --wait: a command that fails leaves stdout empty" {
	export RAKAZO_FAKE_FAULTS=provision=lost_reply,stop=fail
	expect_json_error 7 outcome_unknown rk computer create --provider fake --name t --wait --json
	rk computer execution decide "$(first_exe)" --outcome succeeded --json >/dev/null
	expect_json_error 1 failed rk computer stop t --wait --json
}

@test "8 denied: session input from another owner" {
	rk_fake t
	local sid
	sid=$(rk computer exec t --json --yield-ms 300 -- 'read x; echo got $x' | rk_json 'd["session"]')
	[ -n "$sid" ] && [ "$sid" != null ]
	RAKAZO_OWNER=user:mallory expect_json_error 8 denied rk computer input t "$sid" 'abc\n' --json
	RAKAZO_OWNER=user:mallory expect_json_error 8 denied rk computer kill t "$sid" --json
	# the owner's session is untouched
	run rk computer input t "$sid" 'abc\n' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "got abc" ]
}

@test "130 interrupted: execution events --follow stopped by SIGINT" {
	export RAKAZO_NO_WORKER=1
	rk computer create --provider fake --name t --json >/dev/null
	local id
	id=$(first_exe)
	"$RAKAZO_BIN" computer execution events "$id" --follow --json >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	local pid=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/out" ]'
	kill -INT "$pid"
	local st=0
	wait "$pid" || st=$?
	[ "$st" -eq 130 ]
	[ "$(rk_json 'd["error"]["code"]' <"$BATS_TEST_TMPDIR/err")" = interrupted ]
	# stopping the stream leaves the command alone
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = pending ]
}

@test "130 interrupted: a foreground worker stopped by SIGINT" {
	"$RAKAZO_BIN" worker --json >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	local pid=$!
	wait_for '[ "$(head -n1 "$RAKAZO_DATA_DIR/worker.lock" 2>/dev/null)" = '"$pid"' ]'
	kill -INT "$pid"
	local st=0
	wait "$pid" || st=$?
	[ "$st" -eq 130 ]
	[ "$(rk_json 'd["error"]["code"]' <"$BATS_TEST_TMPDIR/err")" = interrupted ]
}

@test "human errors are one 'rakazo: code: message' line on stderr" {
	run rk computer show nosuch
	[ "$status" -eq 3 ]
	[[ $output == "rakazo: not_found: "* ]]
}
