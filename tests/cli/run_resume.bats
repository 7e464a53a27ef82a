#!/usr/bin/env bats
# Auto-resume (engine/agent/run.h): a run whose process is killed is
# resumed once by a worker, from its last committed step, in a process of
# its own; --no-auto-resume leaves it interrupted. The scripted model
# (tests/fixtures/scenarios/run_auto_resume*.json) hangs on a model turn
# while the test kills the run's process; each shell step appends a line to
# effects.txt on the fake computer, so a step run twice shows there.

load helper
load model

# First in each test: the worker (started by the first command that needs
# one, before the model server: its environment has no model endpoint)
# passes 5 times a second; the model server keeps every request.
quick_worker() {
	export RAKAZO_IDLE_SCAN_MS=200
	export MODEL_DUMP=$BATS_TEST_TMPDIR/requests
}

teardown() {
	# the hanging steps would hold the server's exit for their whole length
	if [ -n "${SERVER_PID:-}" ]; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
	SERVER_PID=
	for p in ${WORKER_PIDS:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	rk_kill_all
	rk_pg_teardown
}

# Requests the model server got so far.
requests() {
	if [ -f "$MODEL_DUMP" ]; then wc -l <"$MODEL_DUMP"; else echo 0; fi
}

# Column $1 of the one run, from the database itself (a `rakazo run` verb
# would reap on its own).
db_run() {
	rk_sql "SELECT $1 FROM runs"
}

# Starts `rakazo run ARGS...` in the background, waits for the model
# request $1 (a hanging turn) and kills the process that runs it: KILLED
# is its pid, STEPS the steps the run had committed.
kill_at_request() {
	local n=$1 pid
	wait_for '[ "$(requests)" -ge '"$n"' ]' 60
	pid=$(db_run worker_pid)
	[ "$(db_run state)" = running ]
	STEPS=$(db_run steps)
	kill -9 "$pid"
	wait_for '! kill -0 '"$pid"' 2>/dev/null' 10
	KILLED=$pid
}

# The types of run $1's stored events, one a line.
types_of() {
	rk run logs "$1" --json | rk_json_lines 'd["type"]'
}

rk_json_lines() {
	python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(eval(sys.argv[1]))
' "$1"
}

@test "auto-resume: a killed worker's run resumes on another worker without repeating a committed step" {
	quick_worker
	rk_fake t
	start_server run_auto_resume.json
	rk run "append three lines" >/dev/null 2>&1 &
	kill_at_request 3
	local first=$KILLED id
	id=$(db_run id)
	# two steps were committed before the kill
	[ "$STEPS" = 2 ]
	wait_for '[ "$(db_run state)" = completed ]' 60
	server_ok
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["final_answer"]' <"$BATS_TEST_TMPDIR/show")" = "done after a resume" ]
	[ "$(rk_json 'd["attempts"]' <"$BATS_TEST_TMPDIR/show")" = 2 ]
	[ "$(rk_json 'd["auto_resumes_left"]' <"$BATS_TEST_TMPDIR/show")" = 0 ]
	[ "$(rk_json 'd["worker_pid"]' <"$BATS_TEST_TMPDIR/show")" != "$first" ]
	# each committed step's effect is there once, in order
	run rk computer file read t effects.txt
	[ "$status" -eq 0 ]
	[ "$output" = $'step1\nstep2\nstep3' ]
	rk run logs "$id" --json >"$BATS_TEST_TMPDIR/events"
	python3 - "$BATS_TEST_TMPDIR/events" "$first" "$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
types = [e["type"] for e in ev]
# the reaper's word, then the worker's, then the new attempt
assert types.count("run.auto_resumed") == 1, types
i = types.index("run.auto_resumed")
assert types[i - 1] == "run.interrupted" and types[i + 1] == "run.started", types
inter, auto, started = ev[i - 1], ev[i], ev[i + 1]
assert inter["reason"] == "worker_gone" and inter["auto_resume"] is True, inter
assert auto["from_attempt"] == 1 and auto["reason"] == "worker_gone", auto
assert auto["worker"]["pid"] == int(sys.argv[3]) and auto["worker"]["host"], auto
assert auto["previous"]["pid"] == int(sys.argv[2]), auto
assert started["resumed"] is True and started["attempt"] == 2, started
assert [e["resumed"] for e in ev if e["type"] == "run.started"] == [False, True]
# one tool call per step, none repeated
calls = [e["arguments"]["command"] for e in ev if e["type"] == "tool.call"]
assert calls == ["echo step%d >> effects.txt" % k for k in (1, 2, 3)], calls
assert ev[-1]["type"] == "run.finished" and ev[-1]["state"] == "completed", ev[-1]
EOF
	grep -q "worker: 1 run(s) auto-resumed" "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "auto-resume: with --no-auto-resume a killed run stays interrupted" {
	quick_worker
	rk_fake t
	start_server run_hang.json
	rk run --no-auto-resume "sleep a lot" >/dev/null 2>&1 &
	kill_at_request 2
	local id wpid
	id=$(db_run id)
	wpid=$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")
	wait_for '[ "$(db_run state)" = interrupted ]' 30
	[ "$(db_run reason)" = worker_gone ]
	# the worker marked it; its later passes (5 a second) leave it be
	wait_for 'grep -q " '"$wpid"' info worker: 1 run(s) marked interrupted" "$RAKAZO_DATA_DIR/log/rakazo.log"' 10
	sleep 2
	[ "$(db_run state)" = interrupted ]
	[ "$(db_run attempts)" = 1 ]
	[ "$(requests)" = 2 ]
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["auto_resumes_left"]' <"$BATS_TEST_TMPDIR/show")" = 0 ]
	[ "$(db_run options | rk_json 'd["auto_resume"]')" = false ]
	run types_of "$id"
	[[ "$output" != *run.auto_resumed* ]]
	[ "$(printf '%s\n' "$output" | tail -n1)" = run.interrupted ]
	[ "$(rk run logs "$id" --json | tail -n1 | rk_json 'd["auto_resume"]')" = false ]
	! grep -q "auto-resumed" "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "auto-resume: a run killed again after its auto-resume is not resumed a second time" {
	quick_worker
	rk_fake t
	start_server run_auto_resume_twice.json
	rk run "append two lines" >/dev/null 2>&1 &
	kill_at_request 2
	local first=$KILLED id wpid
	id=$(db_run id)
	# the worker resumes it; the new attempt's model turn hangs too: killed again
	kill_at_request 4
	[ "$KILLED" != "$first" ]
	wait_for '[ "$(db_run state)" = interrupted ]' 30
	[ "$(db_run reason)" = worker_gone ]
	wpid=$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")
	wait_for '[ "$(grep -c " '"$wpid"' info worker: 1 run(s) marked interrupted" "$RAKAZO_DATA_DIR/log/rakazo.log")" = 2 ]' 10
	sleep 2
	[ "$(db_run state)" = interrupted ]
	[ "$(db_run attempts)" = 2 ]
	[ "$(requests)" = 4 ]
	run types_of "$id"
	[ "$(printf '%s\n' "$output" | grep -c '^run.auto_resumed$')" = 1 ]
	[ "$(printf '%s\n' "$output" | grep -c '^run.interrupted$')" = 2 ]
	[ "$(printf '%s\n' "$output" | tail -n1)" = run.interrupted ]
	[ "$(rk run logs "$id" --json | tail -n1 | rk_json 'd["auto_resume"]')" = false ]
	run rk computer file read t effects.txt
	[ "$output" = $'step1\nstep2' ]
	# a person may still resume it
	[[ "$(rk run show "$id" --json | rk_json 'd["error"]')" == *"rakazo run resume $id"* ]]
}

@test "auto-resume: of two workers racing for a dead run's resume, one takes it" {
	quick_worker
	# two workers share the data directory; neither knows the model's endpoint
	local w
	for w in 1 2; do
		"$RAKAZO_BIN" worker --join >/dev/null 2>&1 3>&- 4>&- &
		WORKER_PIDS="${WORKER_PIDS:-} $!"
	done
	wait_for '[ "$(rk_sql "SELECT count(*) FROM workers")" = 2 ]' 20
	rk_fake t
	start_server run_auto_resume.json
	rk run "append three lines" >/dev/null 2>&1 &
	kill_at_request 3
	local id
	id=$(db_run id)
	wait_for '[ "$(db_run state)" = completed ]' 60
	server_ok
	run rk computer file read t effects.txt
	[ "$output" = $'step1\nstep2\nstep3' ]
	run types_of "$id"
	[ "$(printf '%s\n' "$output" | grep -c '^run.auto_resumed$')" = 1 ]
	[ "$(printf '%s\n' "$output" | grep -c '^run.started$')" = 2 ]
	local by
	by=$(rk run logs "$id" --json | grep '"run.auto_resumed"' | rk_json 'd["worker"]["pid"]')
	[[ " $WORKER_PIDS " == *" $by "* ]]
}

@test "auto-resume: a run gone quiet (stale) is resumed, and the stalled process, when its model answers, writes nothing" {
	quick_worker
	# the hanging model turn (12 s) outlasts the heartbeat limit the worker judges by
	export RAKAZO_RUN_STALE_MS=5000
	rk_fake t
	start_server run_auto_resume_stale.json
	rk run "append three lines" >/dev/null 2>&1 &
	wait_for '[ "$(requests)" -ge 3 ]' 60
	local old id
	old=$(db_run worker_pid)
	id=$(db_run id)
	# the new attempt waits for a person (heart-beating) while the first
	# process, still in its model call, gets the late answer
	wait_for '[ "$(db_run state)" = waiting_takeover ]' 60
	[ "$(db_run worker_pid)" != "$old" ]
	wait_for '! kill -0 '"$old"' 2>/dev/null' 60
	grep -q " $old warn run $id: superseded" "$RAKAZO_DATA_DIR/log/rakazo.log"
	[ "$(db_run state)" = waiting_takeover ]
	[ "$(db_run steps)" = 3 ]
	rk run continue "$id" --note "all good"
	wait_for '[ "$(db_run state)" = completed ]' 60
	server_ok
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json '[d["state"], d["final_answer"], d["steps"], d["attempts"]]' <"$BATS_TEST_TMPDIR/show")" = '["completed", "done after a resume", 5, 2]' ]
	run rk computer file read t effects.txt
	[ "$output" = $'step1\nstep2\nstep3' ]
	rk run logs "$id" --json >"$BATS_TEST_TMPDIR/events"
	python3 - "$BATS_TEST_TMPDIR/events" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
auto = [e for e in ev if e["type"] == "run.auto_resumed"]
assert len(auto) == 1 and auto[0]["reason"] == "stale" and auto[0]["from_attempt"] == 1, auto
# the stalled attempt's late answer is nowhere
assert not any(e.get("text") == "too late" for e in ev), ev
assert [e["type"] for e in ev].count("run.finished") == 1
assert ev[-1]["type"] == "run.finished" and ev[-1]["answer"] == "done after a resume", ev[-1]
PY
}
