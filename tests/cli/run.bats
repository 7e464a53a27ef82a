#!/usr/bin/env bats
# rakazo run: the agent loop against tests/emulators/model_server on fake
# computers. Each test replays a scenario (tests/fixtures/scenarios/run_*.json)
# whose expectations check what the engine sent; the server's exit status
# and report say whether every expectation held.

load helper

MODEL_SERVER=$BATS_TEST_DIRNAME/../../build/tests/emulators/model_server
SCENARIOS=$BATS_TEST_DIRNAME/../fixtures/scenarios

teardown() {
	if [ -n "${SERVER_PID:-}" ]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	rk_kill_all
}

# Starts the scripted server on scenario $1 and points the model config at it.
start_server() {
	local out=$BATS_TEST_TMPDIR/server.out
	"$MODEL_SERVER" "$SCENARIOS/$1" --report "$BATS_TEST_TMPDIR/report.json" >"$out" 2>"$BATS_TEST_TMPDIR/server.err" 3>&- 4>&- &
	SERVER_PID=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	local port
	port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$out")
	export RAKAZO_MODEL_BASE_URL="http://127.0.0.1:$port/v1" RAKAZO_MODEL=scripted
}

# Waits for the server to exit (it does after its last step) and checks that
# every step was served and every expectation held.
server_ok() {
	local st=0
	wait "$SERVER_PID" || st=$?
	SERVER_PID=
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'EOF' || { cat "$BATS_TEST_TMPDIR/server.err" >&2; return 1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] and d["ok"] and d["failures"] == [], d["failures"]
EOF
	[ "$st" -eq 0 ]
}

# Every line of $1 is a JSON object with a type; prints the types in order.
event_types() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert isinstance(e, dict) and e["type"] and e["run_id"].startswith("run_"), e
    print(e["type"])
' "$1"
}

last_run() {
	rk run list --json | rk_json 'd[0]'
}

@test "run: files, shell, two observes (the second without bytes), then the answer; the run completes" {
	rk_fake t
	start_server run_fake.json
	rk run --computer t --json "write a note and read it back" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err"
	server_ok
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	event_types "$BATS_TEST_TMPDIR/events" >"$BATS_TEST_TMPDIR/types"
	[ "$(head -n1 "$BATS_TEST_TMPDIR/types")" = run.started ]
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/types")" = run.finished ]
	[ "$(grep -c '^tool.call$' "$BATS_TEST_TMPDIR/types")" -eq 5 ]
	[ "$(grep -c '^model.turn$' "$BATS_TEST_TMPDIR/types")" -eq 6 ]
	grep -q '^run.checkpoint$' "$BATS_TEST_TMPDIR/types"
	# no image bytes in any event; the observes name their frame, the second is unchanged
	! grep -q 'iVBORw0KGgo' "$BATS_TEST_TMPDIR/events"
	python3 - "$BATS_TEST_TMPDIR/events" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
obs = [e for e in ev if e["type"] == "tool.result" and e["name"] == "computer_observe"]
assert [o["image"] for o in obs] == ["sent", "unchanged"], obs
assert len(obs[0]["frame_hash"]) == 64 and obs[0]["frame_hash"] == obs[1]["frame_hash"]
fin = ev[-1]
assert fin["state"] == "completed" and fin["answer"] == "Wrote notes/x.txt and read it back.", fin
assert all("error" not in e for e in ev if e["type"] == "tool.result")
EOF
	run rk computer file read t notes/x.txt
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the run" ]
	[ "$(last_run | rk_json 'd["state"]')" = completed ]
	[ "$(last_run | rk_json 'd["steps"]')" = 6 ]
	[ "$(last_run | rk_json 'd["final_answer"]')" = "Wrote notes/x.txt and read it back." ]
	[ "$(last_run | rk_json 'd["usage"]["input_tokens"] > 0')" = true ]
	[ "$(last_run | rk_json 'd["finished_at"] is not None and d["heartbeat_at"] is not None')" = true ]
	# the run's end made a checkpoint of the computer
	[ "$(rk computer show t --json | rk_json 'd["home_revision"] is not None')" = true ]
}

@test "run: the task from stdin; human output is the answer on stdout; show and list find the run" {
	rk_fake t
	start_server run_answer.json
	run sh -c 'echo "what is the answer" | "$RAKAZO_BIN" run - 2>/dev/null'
	[ "$status" -eq 0 ]
	[ "$output" = "the answer is 42" ]
	server_ok
	id=$(last_run | rk_json 'd["id"]')
	[ "$(rk run show "$id" --json | rk_json 'd["task"]')" = "what is the answer" ]
	[ "$(rk run show "$id" --json | rk_json 'd["model"]')" = scripted ]
	run rk run list
	[ "$status" -eq 0 ]
	[[ "$output" == *"$id"*completed* ]]
	expect_json_error 3 not_found rk run show run_nosuchrun --json
}

@test "run: an unknown tool, malformed and missing arguments are error results and the run goes on" {
	rk_fake t
	start_server run_tool_errors.json
	rk run --json "try some bad calls" >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/events" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
res = [e for e in ev if e["type"] == "tool.result"]
codes = [r.get("error", {}).get("code") for r in res]
assert codes == ["not_found", "invalid_argument", "invalid_argument", None], codes
calls = [e for e in ev if e["type"] == "tool.call"]
assert calls[1]["arguments"] == "{\"path\": \"x.txt\"", calls[1]   # the raw text of malformed arguments
assert ev[-1]["state"] == "completed" and ev[-1]["answer"] == "recovered", ev[-1]
EOF
}

@test "run: on a computer without a desktop the graphical tools are not offered and fail as results" {
	rk computer create --provider fake --name nd --no-desktop --wait --json >/dev/null
	start_server run_no_desktop.json
	rk run --computer nd --json "look at the screen" >"$BATS_TEST_TMPDIR/events"
	server_ok
	grep -q '"code":"unsupported"' "$BATS_TEST_TMPDIR/events"
	! grep -q '"name":"computer_act"' "$BATS_TEST_TMPDIR/report.json"
	[ "$(last_run | rk_json 'd["state"]')" = completed ]
}

@test "run: --max-steps ends a run that never answers: failed, reason max_steps, exit 1" {
	rk_fake t
	start_server run_max_steps.json
	run rk run --max-steps 2 --json "loop forever"
	[ "$status" -eq 1 ]
	server_ok
	printf '%s\n' "$output" | grep '"type":"run.finished"' | grep -q '"reason":"max_steps"'
	[ "$(last_run | rk_json 'd["state"]')" = failed ]
	[[ "$(last_run | rk_json 'd["error"]')" == max_steps:* ]]
	[ "$(last_run | rk_json 'd["steps"]')" = 2 ]
}

@test "run: a model endpoint that is down fails the run as unavailable (exit 5) with the reason" {
	rk_fake t
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
	export RAKAZO_MODEL_BASE_URL="http://127.0.0.1:$port/v1" RAKAZO_MODEL=scripted
	run rk run --model-retries 0 "anything"
	[ "$status" -eq 5 ]
	[[ "$output" == *"rakazo: unavailable: run run_"*"failed"*"model"* ]]
	[ "$(last_run | rk_json 'd["state"]')" = failed ]
	[[ "$(last_run | rk_json 'd["error"]')" == model:* ]]
	# --json: the events on stdout end with run.finished, one error line on stderr
	rk run --model-retries 0 --json "anything" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err" && false
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["reason"]')" = model ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 1 ]
	[ "$(rk_json 'd["error"]["code"]' <"$BATS_TEST_TMPDIR/err")" = unavailable ]
}

@test "run: usage errors: no model configured, no task, no computer, two computers and none named" {
	unset RAKAZO_MODEL_BASE_URL RAKAZO_MODEL
	expect_status 2 rk run "a task"
	[[ "$output" == *"no model configured"* ]]
	export RAKAZO_MODEL_BASE_URL=http://127.0.0.1:9/v1 RAKAZO_MODEL=scripted
	expect_status 3 rk run "a task"
	[[ "$output" == *"rakazo computer create"* ]]
	rk_fake a
	run sh -c '"$RAKAZO_BIN" run - </dev/null'
	[ "$status" -eq 2 ]
	[[ "$output" == *"the task is empty"* ]]
	rk_fake b
	expect_status 2 rk run "a task"
	[[ "$output" == *"name one with --computer"* ]]
	expect_status 3 rk run --computer nosuch "a task"
	[ "$(rk run list --json)" = "[]" ]
}
