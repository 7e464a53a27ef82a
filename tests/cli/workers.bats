#!/usr/bin/env bats
# Several workers on one state (`rakazo worker --join`): each command runs
# once, a dead worker's command is taken back (by its pid on this host, by
# its heartbeat from another), a worker taken for dead stops. Runs on
# SQLite and, under `make check-pg`, on PostgreSQL.

load helper

# Starts a joined worker in the background; its pid in $W, output in $1.
start_worker() {
	local log=$1
	shift
	RAKAZO_NO_WORKER=1 "$@" "$RAKAZO_BIN" worker --join >"$log" 2>&1 3>&- 4>&- &
	W=$!
}

workers_registered() {
	[ "$(rk_sql 'SELECT count(*) FROM workers')" = "$1" ]
}

# Waits until execution $1 is inside its provider call.
in_provider_call() {
	wait_for "[ \"\$(rk_sql \"SELECT count(*) FROM lifecycle_executions WHERE id = '$1' AND provider_call_at IS NOT NULL\")\" = 1 ]" 40
}

execution_state() {
	rk computer execution show "$1" --json | rk_json 'd["state"]'
}

# Creates $1 fake computers named $2<1..$1> and waits until every create has
# succeeded; no command was started twice.
create_all_once() {
	local i
	for i in $(seq 1 "$1"); do
		rk computer create --provider fake --name "$2$i" --json >/dev/null
	done
	wait_for "[ \"\$(rk_sql \"SELECT count(*) FROM lifecycle_executions WHERE state = 'succeeded'\")\" = $1 ]" 90
	[ -z "$(rk_sql "SELECT execution_id FROM execution_events WHERE type = 'started' GROUP BY execution_id HAVING count(*) > 1")" ]
}

@test "two joined workers share the commands: each runs exactly once, both take some" {
	export RAKAZO_NO_WORKER=1 RAKAZO_FAKE_DELAY_MS=150
	local w1 w2
	start_worker "$BATS_TEST_TMPDIR/w1.log" env
	w1=$W
	start_worker "$BATS_TEST_TMPDIR/w2.log" env
	w2=$W
	wait_for "workers_registered 2" 20
	create_all_once 16 c
	# one start each
	[ "$(rk_sql "SELECT count(*) FROM execution_events WHERE type = 'started'")" = 16 ]
	# both did work, and nobody else did
	[ "$(rk_sql 'SELECT count(DISTINCT worker_id) FROM lifecycle_executions')" = 2 ]
	[ "$(rk_sql 'SELECT count(*) FROM lifecycle_executions WHERE worker_id NOT IN (SELECT id FROM workers)')" = 0 ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 16 ]
	# stopped, they leave the table
	kill -TERM "$w1" "$w2"
	wait "$w1" "$w2" || true
	workers_registered 0
}

@test "a lone worker and joined workers refuse each other (4 conflict)" {
	export RAKAZO_NO_WORKER=1
	local w
	start_worker "$BATS_TEST_TMPDIR/w.log" env
	w=$W
	wait_for "workers_registered 1" 20
	run rk worker --once
	[ "$status" -eq 4 ]
	[[ $output == *"--join"* ]]
	kill -TERM "$w"
	wait "$w" || true
	RAKAZO_NO_WORKER=1 "$RAKAZO_BIN" worker >"$BATS_TEST_TMPDIR/lone.log" 2>&1 3>&- 4>&- &
	w=$!
	wait_for "workers_registered 1" 20
	run rk worker --join --once
	[ "$status" -eq 4 ]
	[[ $output == *"alone"* ]]
	kill -TERM "$w"
	wait "$w" || true
}

@test "a joined worker killed in its provider call: another marks the command outcome_unknown, never runs it again" {
	export RAKAZO_NO_WORKER=1
	local w1 w2 id
	# the fake provider's check and its provision take 12 s each
	RAKAZO_FAKE_DELAY_MS=12000 start_worker "$BATS_TEST_TMPDIR/w1.log" env
	w1=$W
	wait_for "workers_registered 1" 20
	id=$(rk computer create --provider fake --name slow --json | rk_json 'd["id"]')
	start_worker "$BATS_TEST_TMPDIR/w2.log" env
	w2=$W
	wait_for "workers_registered 2" 20
	in_provider_call "$id"
	kill -9 "$w1"
	wait "$w1" || true
	# on this host its pid answers: no need to wait out the heartbeat
	wait_for "[ \"\$(execution_state $id)\" = outcome_unknown ]" 20
	rk computer execution events "$id" --json | rk_json '[e["type"] for e in d]' | grep -q decision_needed
	[ "$(rk_sql "SELECT count(*) FROM execution_events WHERE execution_id = '$id' AND type = 'started'")" = 1 ]
	# the dead one's row is gone, the living one's stays
	wait_for "workers_registered 1" 10
	kill -TERM "$w2"
	wait "$w2" || true
}

@test "a worker of another host is judged by its heartbeat: kept while heard, taken over when silent, and then it stops" {
	export RAKAZO_NO_WORKER=1 RAKAZO_WORKER_DEAD_MS=4000
	local w1 w2 id rc w1_id w2_id
	# w1 plays another host (its pid means nothing to w2) and is slow
	RAKAZO_HOST_KEY=another-host RAKAZO_FAKE_DELAY_MS=60000 start_worker "$BATS_TEST_TMPDIR/w1.log" env
	w1=$W
	wait_for "workers_registered 1" 20
	w1_id=$(rk_sql 'SELECT id FROM workers')
	id=$(rk computer create --provider fake --name far --json | rk_json 'd["id"]')
	wait_for "[ \"\$(execution_state $id)\" = running ]" 20
	start_worker "$BATS_TEST_TMPDIR/w2.log" env
	w2=$W
	wait_for "workers_registered 2" 20
	w2_id=$(rk_sql "SELECT id FROM workers WHERE id <> '$w1_id'")
	# heard every second: w2 leaves w1's command alone past the limit
	sleep 6
	[ "$(execution_state "$id")" = running ]
	[ "$(rk_sql "SELECT worker_id FROM lifecycle_executions WHERE id = '$id'")" = "$w1_id" ]
	# silent (stopped, as a host that dropped off): w2 takes the command
	# back (it had not reached the provider) and runs it itself
	kill -STOP "$w1"
	wait_for "[ \"\$(execution_state $id)\" = succeeded ]" 40
	[ "$(rk_sql "SELECT worker_id FROM lifecycle_executions WHERE id = '$id'")" = "$w2_id" ]
	rk computer execution events "$id" --json | rk_json '[e["type"] for e in d]' | grep -q requeued
	workers_registered 1
	# back, w1 finds itself taken for dead and stops without writing
	kill -CONT "$w1"
	rc=0
	wait "$w1" || rc=$?
	[ "$rc" = 75 ]
	[ "$(execution_state "$id")" = succeeded ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 1 ]
	kill -TERM "$w2"
	wait "$w2" || true
}

@test "PostgreSQL: workers in two network namespaces, each with its own data directory, share the commands" {
	[ -n "${RAKAZO_DATABASE_URL:-}" ] || skip "needs the PostgreSQL state (make check-pg)"
	unshare -n true 2>/dev/null || skip "unshare -n needs root"
	export RAKAZO_NO_WORKER=1 RAKAZO_FAKE_DELAY_MS=150
	local w1 w2
	mkdir -p "$BATS_TEST_TMPDIR/h1" "$BATS_TEST_TMPDIR/h2"
	# no network in either: the state is reached over its unix socket
	RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/h1 start_worker "$BATS_TEST_TMPDIR/w1.log" unshare -n env
	w1=$W
	RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/h2 start_worker "$BATS_TEST_TMPDIR/w2.log" unshare -n env
	w2=$W
	wait_for "workers_registered 2" 20
	create_all_once 12 n
	[ "$(rk_sql 'SELECT count(DISTINCT worker_id) FROM lifecycle_executions')" = 2 ]
	kill -TERM "$w1" "$w2"
	wait "$w1" "$w2" || true
	workers_registered 0
}

@test "PostgreSQL: a session held in another network namespace answers input through the state" {
	[ -n "${RAKAZO_DATABASE_URL:-}" ] || skip "needs the PostgreSQL state (make check-pg)"
	unshare -n true 2>/dev/null || skip "unshare -n needs root"
	local sid
	rk_fake t
	# its holder starts in a namespace of its own: its socket is out of reach here
	sid=$(unshare -n env "$RAKAZO_BIN" computer exec t --json --yield-ms 300 -- 'read x; echo got $x' | rk_json 'd["session"]')
	[ -n "$sid" ]
	run rk computer input t "$sid" 'abc\n' --json --yield-ms 2000
	[ "$status" -eq 0 ]
	[[ $output == *'got abc'* ]]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
	# the calls left in the state are gone once answered
	[ "$(rk_sql 'SELECT count(*) FROM session_calls')" = 0 ]
	# a session nobody holds any more is ended, not waited for
	run rk computer input t "$sid" 'x\n' --json
	[ "$status" -eq 3 ]
}
