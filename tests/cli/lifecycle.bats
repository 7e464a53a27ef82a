#!/usr/bin/env bats
# Saved lifecycle commands: idempotency, the lifecycle itself, events, cancel.

load helper

exe_ids() {
	rk computer execution list --json | rk_json "' '.join(e['id'] for e in d if e['op']=='$1')"
}

@test "the same command key twice gives the same execution" {
	local a b
	a=$(rk computer create --provider fake --name t --command-key k1 --json | rk_json 'd["id"]')
	b=$(rk computer create --provider fake --name t --command-key k1 --json)
	[ "$a" = "$(printf '%s' "$b" | rk_json 'd["id"]')" ]
	[ "$(printf '%s' "$b" | rk_json 'd["reused"]')" = true ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 1 ]
}

@test "20 parallel creates with one key make one computer and one execution" {
	local i pids=
	for i in $(seq 1 20); do
		"$RAKAZO_BIN" computer create --provider fake --name t --command-key k1 --json \
			>"$BATS_TEST_TMPDIR/out.$i" 2>"$BATS_TEST_TMPDIR/err.$i" 3>&- 4>&- &
		pids="$pids $!"
	done
	local fail=0 p
	for p in $pids; do wait "$p" || fail=$((fail + 1)); done
	cat "$BATS_TEST_TMPDIR"/err.* >&2 || true
	[ "$fail" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | rk_json_lines 'd["id"]' | sort -u | wc -l)" -eq 1 ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 1 ]
	[ "$(rk computer execution list --json | rk_json 'len(d)')" = 1 ]
}

rk_json_lines() {
	python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(eval(sys.argv[1]))
' "$1"
}

@test "create, pause, exec auto-resumes, stop, resume, delete" {
	rk_fake t
	run rk computer pause t --wait --json
	[ "$status" -eq 0 ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = paused ]
	run rk computer exec t --json -- echo hi
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = hi ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
	[ -n "$(exe_ids resume)" ]
	[ "$(rk computer execution show "$(exe_ids resume)" --json | rk_json 'd["state"]')" = succeeded ]
	rk computer stop t --wait --json >/dev/null
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = stopped ]
	rk computer resume t --wait --json >/dev/null
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
	run rk computer delete t --wait --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["state"]')" = succeeded ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 0 ]
	expect_status 3 rk computer show t --json
}

@test "a receipt comes back at once and --wait gives the finished execution" {
	export RAKAZO_FAKE_DELAY_MS=2000
	run rk computer create --provider fake --name t --json
	[ "$status" -eq 0 ]
	[[ $(printf '%s' "$output" | rk_json 'd["state"]') =~ ^(pending|running)$ ]]
	local id
	id=$(printf '%s' "$output" | rk_json 'd["id"]')
	[[ $id == exe_* ]]
	run rk computer show t --json
	[ "$(printf '%s' "$output" | rk_json 'd["execution_id"]')" = "$id" ]
	wait_for '[ "$(rk computer execution show '"$id"' --json | rk_json "d[\"state\"]")" = succeeded ]'
}

@test "execution events: submitted, started, provider_call, succeeded with sequences 1..N" {
	rk_fake t
	local id
	id=$(exe_ids create)
	run rk computer execution events "$id" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '" ".join(e["type"] for e in d)')" = "submitted started provider_call succeeded" ]
	[ "$(printf '%s' "$output" | rk_json '[e["sequence"] for e in d] == list(range(1, len(d) + 1))')" = true ]
	run rk computer execution events "$id" --after-sequence 2 --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '" ".join(e["type"] for e in d)')" = "provider_call succeeded" ]
	[ "$(printf '%s' "$output" | rk_json 'd[0]["sequence"]')" = 3 ]
	run rk computer execution events "$id"
	[ "$status" -eq 0 ]
	[[ $output == *submitted*succeeded* ]]
}

@test "execution events --follow streams NDJSON and ends when the command ends" {
	export RAKAZO_FAKE_DELAY_MS=700
	local id
	id=$(rk computer create --provider fake --name t --json | rk_json 'd["id"]')
	run timeout 20 "$RAKAZO_BIN" computer execution events "$id" --follow --json 3>&- 4>&-
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | rk_json_lines 'd["type"]' | tr '\n' ' ')" = "submitted started provider_call succeeded " ]
	[ "$(printf '%s\n' "$output" | rk_json_lines 'd["sequence"]' | tr '\n' ' ')" = "1 2 3 4 " ]
}

@test "cancel a pending command: cancelled, and the created computer goes" {
	export RAKAZO_NO_WORKER=1
	local id
	id=$(rk computer create --provider fake --name t --json | rk_json 'd["id"]')
	run rk computer execution cancel "$id" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["state"]')" = cancelled ]
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = cancelled ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 0 ]
	# a settled command cannot be cancelled again
	expect_json_error 4 conflict rk computer execution cancel "$id" --json
	# the events say so
	[ "$(rk computer execution events "$id" --json | rk_json 'd[-1]["type"]')" = cancelled ]
}

@test "a pending command (no worker) runs when worker --once comes" {
	export RAKAZO_NO_WORKER=1
	local id
	id=$(rk computer create --provider fake --name t --json | rk_json 'd["id"]')
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = pending ]
	rk worker --once
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = succeeded ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
}

@test "execution list filters by computer" {
	rk_fake a
	rk_fake b
	rk computer pause a --wait --json >/dev/null
	[ "$(rk computer execution list a --json | rk_json 'len(d)')" = 2 ]
	[ "$(rk computer execution list b --json | rk_json 'len(d)')" = 1 ]
	[ "$(rk computer execution list --json | rk_json 'len(d)')" = 3 ]
	expect_status 3 rk computer execution list nosuch --json
}

@test "doctor --json reports a sound database" {
	rk_fake t
	run rk doctor --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["ok"]')" = true ]
	[ "$(printf '%s' "$output" | rk_json '[c["status"] for c in d["checks"] if c["check"]=="database"][0]')" = ok ]
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="database"][0]') == *"integrity ok"* ]]
	[ "$(printf '%s' "$output" | rk_json 'd["data_dir"]')" = "$RAKAZO_DATA_DIR" ]
	# the backend is named; on PostgreSQL (make check-pg) the server's version is shown instead of a journal mode
	if [ -n "${RAKAZO_DATABASE_URL:-}" ]; then
		[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="backend"][0]') == "postgresql: postgresql://rakazo@/"* ]]
		[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="database"][0]') == *", server "[0-9]* ]]
		return
	fi
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="backend"][0]') == "sqlite: "* ]]
	# the journal mode doctor shows is the one the file has (SQLite keeps WAL in the file)
	local mode
	mode=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode").fetchone()[0])' "$RAKAZO_DATA_DIR/rakazo.db")
	[ "$mode" = wal ]
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="database"][0]') == *", journal_mode $mode" ]]
	[ "$(printf '%s' "$output" | rk_json '[c["check"] for c in d["checks"] if c["check"]=="journal mode"]')" = '[]' ]
}

@test "teardown leaves no process behind" {
	rk_fake t
	rk computer exec t --json --yield-ms 300 -- sleep 100 >/dev/null
	[ -n "$(rk_pids)" ]
	rk_kill_all
	wait_for '[ -z "$(rk_pids)" ]' 5
}

@test "a worker whose binary is replaced (a rebuild, an upgrade) restarts on the new one between commands" {
	local bin="$BATS_TEST_TMPDIR/rakazo" pid new
	cp "$RAKAZO_BIN" "$bin"
	RAKAZO_SELF="$bin" "$bin" computer create --provider fake --name t --wait --json >/dev/null
	# this data directory's worker (other suites may run workers of their own)
	for pid in $(pgrep -f "^rakazo worker --idle-exit"); do
		tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "RAKAZO_DATA_DIR=$RAKAZO_DATA_DIR" && break
		pid=
	done
	[ -n "$pid" ] || { echo "no worker"; return 1; }
	[ "$(stat -L -c %i /proc/$pid/exe)" = "$(stat -c %i "$bin")" ]
	# a new file at the same path, as make and install leave it
	cp "$RAKAZO_BIN" "$bin.new"
	mv "$bin.new" "$bin"
	new=$(stat -c %i "$bin")
	wait_for "[ \"\$(stat -L -c %i /proc/$pid/exe 2>/dev/null)\" = $new ]" 10
	# the same process, still the data directory's worker, runs commands
	RAKAZO_SELF="$bin" "$bin" computer pause t --wait --json >/dev/null
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = paused ]
	kill "$pid"
}

@test "RAKAZO_DATABASE_URL: a server that does not answer is unavailable, named without its password; a URL of another kind is refused" {
	export RAKAZO_DATABASE_URL="postgresql://rakazo:s3cret@/rakazo?host=$BATS_TEST_TMPDIR/nosuch&connect_timeout=5"
	run rk computer list --json
	[ "$status" -eq 5 ]
	[[ $output == *'"code":"unavailable"'* ]]
	[[ $output == *"postgresql://rakazo@/rakazo?host=$BATS_TEST_TMPDIR/nosuch"* ]]
	[[ $output != *s3cret* ]]
	local doc st=0
	doc=$(rk doctor --json 2>/dev/null) || st=$?
	[ "$st" -eq 1 ]
	[[ $doc != *s3cret* ]]
	[ "$(printf '%s' "$doc" | rk_json '[c["status"] for c in d["checks"] if c["check"]=="state"][0]')" = fail ]
	[[ $(printf '%s' "$doc" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="state"][0]') == *"not reachable"* ]]
	[[ $(printf '%s' "$doc" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="backend"][0]') == "postgresql: postgresql://rakazo@/rakazo?host="* ]]
	export RAKAZO_DATABASE_URL="mysql://u:pw@localhost/rakazo"
	expect_json_error 2 invalid_argument rk computer list --json
	# nothing was made: no SQLite file either
	[ ! -e "$RAKAZO_DATA_DIR/rakazo.db" ]
}
