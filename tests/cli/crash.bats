#!/usr/bin/env bats
# kill -9 at random points: after `worker --once` the database is sound and
# no execution is left running.

load helper

# The database passes doctor's integrity check and every execution is settled
# (succeeded, failed, cancelled), resumable (pending) or outcome_unknown.
check_sound() {
	local doc list
	doc=$(rk doctor --json) || { echo "doctor failed: $doc"; return 1; }
	list=$(rk computer execution list --json) || return 1
	python3 - "$doc" "$list" <<'PY' || return 1
import json, sys
doc, execs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
db = [c for c in doc["checks"] if c["check"] == "database"][0]
assert db["status"] == "ok" and "integrity ok" in db["detail"], db
bad = [(e["id"], e["op"], e["state"]) for e in execs
       if e["state"] not in ("succeeded", "failed", "cancelled", "pending", "outcome_unknown")]
assert not bad, "stuck executions: %r" % bad
PY
}

# Kills whatever worker holds the lock, then recovers with `worker --once`
# (an on-demand worker may have started in between: then again).
recover() {
	local i wpid
	for i in 1 2 3 4 5; do
		wpid=$(head -n1 "$RAKAZO_DATA_DIR/worker.lock" 2>/dev/null || true)
		if [ -n "$wpid" ]; then kill -9 "$wpid" 2>/dev/null || true; fi
		RAKAZO_NO_WORKER=1 rk worker --once --json >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "worker --once never got the lock" >&2
	return 1
}

@test "kill -9 of the CLI or the worker at random points leaves a sound state (50 rounds)" {
	local round op victim pid wpid ms
	local ops=(create pause resume stop)
	for round in $(seq 1 "${RK_CRASH_ROUNDS:-50}"); do
		export RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/d$round
		mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
		# on PostgreSQL (make check-pg) each round's data directory gets its own database too
		rk_pg_teardown
		rk_pg_setup
		export RAKAZO_FAKE_DELAY_MS=$((RANDOM % 60))
		op=${ops[$((RANDOM % 4))]}
		case $op in
		create) set -- computer create --provider fake --name t --wait --json ;;
		resume) rk computer create --provider fake --name t --wait --json >/dev/null
			rk computer pause t --wait --json >/dev/null
			set -- computer resume t --wait --json ;;
		*) rk computer create --provider fake --name t --wait --json >/dev/null
			set -- computer "$op" t --wait --json ;;
		esac
		"$RAKAZO_BIN" "$@" >/dev/null 2>&1 3>&- 4>&- &
		pid=$!
		ms=$((RANDOM % 100))
		sleep "$(printf '0.%03d' "$ms")"
		if [ $((RANDOM % 2)) = 0 ]; then
			victim=cli
			kill -9 "$pid" 2>/dev/null || true
		else
			victim=worker
			wpid=$(head -n1 "$RAKAZO_DATA_DIR/worker.lock" 2>/dev/null || true)
			if [ -n "$wpid" ]; then kill -9 "$wpid" 2>/dev/null || true; fi
		fi
		wait "$pid" 2>/dev/null || true
		recover
		check_sound || { echo "round $round: $op, kill -9 $victim after ${ms} ms"; return 1; }
		rk_kill_all
	done
}

@test "worker killed during the provider call: outcome_unknown, decision_needed, decide" {
	export RAKAZO_FAKE_DELAY_MS=3000
	local id
	id=$(rk computer create --provider fake --name t --json | rk_json 'd["id"]')
	wait_for '[ "$(rk computer execution show '"$id"' --json | rk_json "d[\"phase\"]")" = provider_call ]'
	kill -9 "$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")"
	RAKAZO_NO_WORKER=1 rk worker --once
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = outcome_unknown ]
	[ "$(rk computer execution events "$id" --json | rk_json 'd[-1]["type"]')" = decision_needed ]
	run rk computer execution decide "$id" --outcome failed --json
	[ "$status" -eq 0 ]
	check_sound
}
