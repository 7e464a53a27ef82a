#!/usr/bin/env bats
# rakazo run: the agent loop against tests/emulators/model_server on fake
# computers. Each test replays a scenario (tests/fixtures/scenarios/run_*.json)
# whose expectations check what the engine sent; the server's exit status
# and report say whether every expectation held.

load helper
load model

teardown() {
	for p in ${RUN_PIDS:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	stop_server
	rk_kill_all
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
	# a failed run is checkpointed too (issue 6)
	[ "$(rk checkpoint show t --json | rk_json 'd["reason"]')" = "run-failed:$(last_run | rk_json 'd["id"]')" ]
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

# The state of run $1 (after `run list`'s stale check).
run_state() {
	rk run list --json >/dev/null && rk run show "$1" --json | rk_json 'd["state"]'
}

@test "run logs: the stored events are the stream (seq 1..N, no image bytes); --after; show's counters; history lines" {
	rk_fake t
	start_server run_fake.json
	rk run --computer t --json "write a note and read it back" >"$BATS_TEST_TMPDIR/events"
	server_ok
	id=$(last_run | rk_json 'd["id"]')
	rk run logs "$id" --json >"$BATS_TEST_TMPDIR/logs"
	cmp "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/logs"
	python3 - "$BATS_TEST_TMPDIR/logs" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["seq"] for e in ev] == list(range(1, len(ev) + 1)), [e["seq"] for e in ev]
res = [e for e in ev if e["type"] == "tool.result"]
assert any("hello from the run" in r["output"] for r in res if r["name"] == "shell"), res
PY
	! grep -q 'iVBORw0KGgo' "$BATS_TEST_TMPDIR/logs"
	n=$(wc -l <"$BATS_TEST_TMPDIR/logs")
	rk run logs "$id" --after 3 --json >"$BATS_TEST_TMPDIR/tail"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/tail")" -eq $((n - 3)) ]
	[ "$(head -n1 "$BATS_TEST_TMPDIR/tail" | rk_json 'd["seq"]')" = 4 ]
	# a run that has ended: --follow prints what there is and returns
	run rk run logs "$id" --follow
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *run.started* ]]
	[[ "${lines[-1]}" == *"run.finished"*completed* ]]
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["counters"]["tool_calls"]' <"$BATS_TEST_TMPDIR/show")" = 5 ]
	[ "$(rk_json 'd["counters"]["events"]' <"$BATS_TEST_TMPDIR/show")" = "$n" ]
	[ "$(rk_json 'd["attempts"]' <"$BATS_TEST_TMPDIR/show")" = 1 ]
	expect_status 3 rk run logs run_nosuchrun
	# terminal history: the shell command and the write_file line, as `computer history` shows them
	rk computer history t --json >"$BATS_TEST_TMPDIR/hist"
	python3 - "$BATS_TEST_TMPDIR/hist" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
cmds = [e["data"] for e in h if e["kind"] == "command"]
assert "write_file notes/x.txt (19 bytes)" in cmds, cmds
assert "cat notes/x.txt" in cmds, cmds
w = [e for e in h if e["data"].startswith("write_file")][0]
assert w["exit_code"] == 0, w
PY
	run rk computer history t
	[[ "$output" == *'$ write_file notes/x.txt (19 bytes)'* ]]
}

@test "run resume: a run failed by max_steps continues the same run from its stored conversation; other states are a conflict" {
	rk_fake t
	start_server run_max_steps.json
	run rk run --max-steps 2 "loop forever"
	[ "$status" -eq 1 ]
	server_ok
	id=$(last_run | rk_json 'd["id"]')
	[ "$(rk run show "$id" --json | rk_json 'd["reason"]')" = max_steps ]
	start_server run_resume_after.json
	rk run resume "$id" --json >"$BATS_TEST_TMPDIR/events"
	server_ok
	[ "$(head -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["resumed"]')" = true ]
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["answer"]')" = "resumed and done" ]
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))["requests"][0]
PY
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/show")" = completed ]
	[ "$(rk_json 'd["attempts"]' <"$BATS_TEST_TMPDIR/show")" = 2 ]
	[ "$(rk_json 'd["steps"]' <"$BATS_TEST_TMPDIR/show")" = 3 ]
	[ "$(rk run list --json | rk_json 'len(d)')" = 1 ]
	# events go on numbering over the attempts
	rk run logs "$id" --json | python3 -c '
import json, sys
seq = [json.loads(l)["seq"] for l in sys.stdin]
assert seq == list(range(1, len(seq) + 1)), seq
'
	expect_status 4 rk run resume "$id"
	[[ "$output" == *"is completed"* ]]
	expect_status 3 rk run resume run_nosuchrun
}

@test "run: the agent's session is its thread and bot: the next run goes on from the last one, on another computer" {
	rk_fake c1
	rk_fake c2
	start_server run_thread_1.json
	rk run --computer c1 --thread t1 --bot b1 --json "remember a word" >"$BATS_TEST_TMPDIR/one.ndjson"
	server_ok
	local first
	first=$(last_run | rk_json 'd["id"]')
	start_server run_thread_2.json
	rk run --computer c2 --thread t1 --bot b1 --json "what was the word?" >"$BATS_TEST_TMPDIR/two.ndjson"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/two.ndjson" "$first" <<'EOF'
import json, sys
t = [e for e in map(json.loads, open(sys.argv[1])) if e["type"] == "run.thread"]
assert len(t) == 1 and t[0]["previous_run_id"] == sys.argv[2] and t[0]["messages"] == 2, t
EOF
	[ "$(last_run | rk_json 'd["final_answer"]')" = 'it was plum' ]
	# another bot, or no thread, starts afresh (the scenario asserts the model saw no old turn)
	start_server run_thread_fresh.json
	rk run --computer c2 --thread t1 --bot b2 --json "what was the word?" >"$BATS_TEST_TMPDIR/three.ndjson"
	server_ok
	run grep -c '"run.thread"' "$BATS_TEST_TMPDIR/three.ndjson"
	[ "$output" = 0 ]
	[ "$(last_run | rk_json 'd["thread_id"]')" = t1 ]
}

@test "run --detach returns at once; cancel from another process ends it cancelled and kills its shell session" {
	rk_fake t
	start_server run_hang.json
	id=$(rk run --detach "sleep a lot")
	[[ "$id" == run_* ]]
	# the run goes on without the CLI: its shell call left a session running, then the model hangs
	wait_for '[ "$(rk run show '"$id"' --json | rk_json "d[\"counters\"][\"tool_calls\"]")" = 1 ] && grep -q "\"step\":1" "$RAKAZO_DATA_DIR/../server.out" 2>/dev/null || [ "$(rk run logs '"$id"' --json | grep -c tool.result)" = 1 ]' 30
	[ "$(rk run show "$id" --json | rk_json 'd["state"]')" = running ]
	pid=$(rk run show "$id" --json | rk_json 'd["worker_pid"]')
	kill -0 "$pid"
	sid=$(rk run logs "$id" --json | grep '"type":"tool.result"' | rk_json 'json.loads(d["output"])["session"]')
	[[ "$sid" == ses_* || -n "$sid" ]]
	rk computer sessions t --json | rk_json '[s["state"] for s in d if s["id"] == "'"$sid"'"]' | grep -q running
	rk run logs "$id" --follow --json >"$BATS_TEST_TMPDIR/follow" &
	FOLLOW=$!
	rk run cancel "$id" --json >"$BATS_TEST_TMPDIR/cancel"
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/cancel")" = cancelled ]
	[ "$(rk_json 'd["reason"]' <"$BATS_TEST_TMPDIR/cancel")" = cancelled ]
	wait "$FOLLOW"
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/follow" | rk_json 'd["state"]')" = cancelled ]
	wait_for '! kill -0 '"$pid"' 2>/dev/null' 10
	wait_for '[ -z "$(rk computer sessions t --json | rk_json "[s[\"id\"] for s in d if s[\"state\"] == \"running\"]" | tr -d "[]")" ]' 10
	expect_status 4 rk run cancel "$id"
	[[ "$output" == *"already ended: cancelled"* ]]
	expect_status 4 rk run resume "$id"
}

# A run on fake computer t that is busy for a minute (run_hang.json: a shell
# call that leaves a session running, then a model call that hangs), in the
# background (RUN_PIDS). Without auto-resume: these tests look at the
# interrupted run (tests/cli/run_resume.bats has the worker resume it).
start_busy_run() {
	rk_fake t
	start_server run_hang.json
	rk run --no-auto-resume "sleep a lot" >/dev/null 2>&1 &
	RUN_PIDS=$!
}

@test "run: kill -9 of the process leaves the run interrupted (worker_gone), and it resumes" {
	start_busy_run
	wait_for '[ "$(rk run list --json | rk_json "len(d) and d[0][\"steps\"]")" = 1 ] && [ "$(rk run logs $(last_run | rk_json "d[\"id\"]") --json | grep -c tool.result)" = 1 ]' 30
	id=$(last_run | rk_json 'd["id"]')
	[ "$(run_state "$id")" = running ]
	pid=$(rk run show "$id" --json | rk_json 'd["worker_pid"]')
	kill -9 "$pid"
	wait_for '! kill -0 '"$pid"' 2>/dev/null' 10
	[ "$(run_state "$id")" = interrupted ]
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["reason"]' <"$BATS_TEST_TMPDIR/show")" = worker_gone ]
	[[ "$(rk_json 'd["error"]' <"$BATS_TEST_TMPDIR/show")" == *"rakazo run resume $id"* ]]
	[ "$(rk run logs "$id" --json | tail -n1 | rk_json 'd["type"]')" = run.interrupted ]
	# its lease went with it: another run of the same bot may start (here: the resume)
	start_server run_resume_after.json
	run rk run resume "$id"
	[ "$status" -eq 0 ]
	[ "$output" = "resumed and done" ]
	server_ok
	[ "$(rk run show "$id" --json | rk_json 'd["state"]')" = completed ]
}

# Column $1 of the newest run, read from the database itself: every `rakazo
# run` verb reaps stale runs on its own, which the next test must not call.
db_run() {
	rk_sql "SELECT $1 FROM runs ORDER BY created_at DESC LIMIT 1"
}

@test "run: the worker marks a run whose process died interrupted (worker_gone), with no run command called" {
	start_busy_run
	wait_for '[ "$(db_run state)" = running ] && [ "$(db_run steps)" = 1 ]' 30
	pid=$(db_run worker_pid)
	# the run made sure a worker watches it, and the worker stays while the run is live
	wpid=$(head -n1 "$RAKAZO_DATA_DIR/worker.lock")
	kill -0 "$wpid"
	kill -9 "$pid"
	wait_for '! kill -0 '"$pid"' 2>/dev/null' 10
	wait_for '[ "$(db_run state)" = interrupted ]' 30
	[ "$(db_run reason)" = worker_gone ]
	grep -q " $wpid info worker: 1 run(s) marked interrupted" "$RAKAZO_DATA_DIR/log/rakazo.log"
	id=$(db_run id)
	[ "$(rk run logs "$id" --json | tail -n1 | rk_json 'd["type"]')" = run.interrupted ]
}

@test "run: a stalled run (no heartbeat for RAKAZO_RUN_STALE_MS) is marked interrupted (stale) by run list" {
	start_busy_run
	wait_for '[ "$(rk run list --json | rk_json "len(d) and d[0][\"steps\"]")" = 1 ] && [ "$(rk run logs $(last_run | rk_json "d[\"id\"]") --json | grep -c tool.result)" = 1 ]' 30
	id=$(last_run | rk_json 'd["id"]')
	pid=$(rk run show "$id" --json | rk_json 'd["worker_pid"]')
	kill -STOP "$pid"
	[ "$(run_state "$id")" = running ]   # the default is 10 minutes
	export RAKAZO_RUN_STALE_MS=1000
	wait_for '[ "$(run_state '"$id"')" = interrupted ]' 20
	[ "$(rk run show "$id" --json | rk_json 'd["reason"]')" = stale ]
	[[ "$(rk run show "$id" --json | rk_json 'd["error"]')" == stale:* ]]
	kill -9 "$pid"
}

@test "run: one run per bot and computer (exit 4), other bots in parallel; request_takeover waits for run continue --note" {
	rk_fake t
	cid=$(rk_id t)
	start_server run_takeover.json
	a=$(rk run --detach --bot alpha "log in and go on")
	wait_for '[ "$(rk run show '"$a"' --json | rk_json "d[\"state\"]")" = waiting_takeover ]' 30
	rk run show "$a" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["takeover_reason"]' <"$BATS_TEST_TMPDIR/show")" = "please log in to the site" ]
	# it holds the (computer, alpha) execution lease
	[ "$(rk computer lease show t --bot alpha --json | rk_json 'd["holder"]')" = "$a" ]
	# a second run of alpha is refused with the first one named; nothing is stored for it
	expect_status 4 rk run --bot alpha "another task"
	[[ "$output" == *"conflict"*"$a"* ]]
	[ "$(rk run list --json | rk_json 'len(d)')" = 1 ]
	# another bot runs meanwhile (on its own scripted model)
	port_a=$RAKAZO_MODEL_BASE_URL
	SAVED=$SERVER_PID
	SERVER_PID=
	start_server run_answer.json
	run rk run --bot beta "what is the answer"
	[ "$status" -eq 0 ]
	[ "$output" = "the answer is 42" ]
	server_ok
	SERVER_PID=$SAVED
	[ "$(rk run show "$a" --json | rk_json 'd["state"]')" = waiting_takeover ]
	expect_status 4 rk run continue "$(last_run | rk_json 'd["id"]')"
	rk run continue "$a" --note "logged in as demo" --json >"$BATS_TEST_TMPDIR/cont"
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/cont")" != waiting_takeover ]
	# the run ends completed with the model's answer after the note (the
	# scenario checks the note came back as request_takeover's result)
	wait_for '[ "$(rk run show '"$a"' --json | rk_json "d[\"state\"]")" = completed ]' 30
	[ "$(rk run show "$a" --json | rk_json 'd["final_answer"]')" = "thanks, carrying on" ]
	server_ok
	# and its lease is free
	[ "$(rk computer lease show t --bot alpha --json | rk_json 'd["holder"]')" = null ]
}

@test "run: open_path, launch_app and attach_file; one history line each with size or error, none for read-only tools" {
	rk_fake t
	start_server run_open_attach.json
	rk run --computer t --json "attach the report" >"$BATS_TEST_TMPDIR/events"
	server_ok
	id=$(last_run | rk_json 'd["id"]')
	[ "$(last_run | rk_json 'd["state"]')" = completed ]
	python3 - "$BATS_TEST_TMPDIR/events" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
res = [(e["name"], e.get("error", {}).get("code")) for e in ev if e["type"] == "tool.result"]
assert res == [("write_file", None), ("attach_file", None), ("attach_file", "invalid_argument"),
               ("launch_app", None), ("launch_app", "not_found"), ("open_path", "not_found"),
               ("read_file", None), ("list_files", None)], res
launched = [e for e in ev if e["type"] == "tool.result" and e["name"] == "launch_app"][0]
assert launched["image"] == "sent" and len(launched["frame_hash"]) == 64, launched
PY
	# the attachment is a copy kept with the run
	att=$(ls -d "$RAKAZO_DATA_DIR/attachments/$id"/att_*)
	[ "$(echo "$att" | wc -l)" -eq 1 ]
	[ "$(cat "$att/report.md")" = "$(printf '# Report\n\nall good')" ]
	# run show lists it
	rk run show "$id" --json | python3 -c '
import json, sys
a = json.load(sys.stdin)["attachments"]
assert len(a) == 1 and a[0]["path"] == "notes/report.md" and a[0]["mime_type"] == "text/markdown", a
assert a[0]["bytes"] == 19 and a[0]["stored"] == sys.argv[1] + "/report.md" and a[0]["id"].startswith("att_"), a
' "$att"
	rk computer history t --json >"$BATS_TEST_TMPDIR/hist"
	python3 - "$BATS_TEST_TMPDIR/hist" <<'PY'
import json, sys
h = [e for e in json.load(open(sys.argv[1])) if e["kind"] == "command"]
lines = [(e["data"], e["exit_code"]) for e in h]
want = [("write_file notes/report.md (19 bytes)", 0), ("attach_file notes/report.md (19 bytes)", 0),
        ("attach_file tool.exe: attach_file: unsupported attachment type of 'tool.exe'", 1),
        ("launch_app true", 0),
        ("launch_app no-such-app-rk: launch_app: 'no-such-app-rk' is not installed on the computer", 1),
        ("open_path nowhere/missing.html: open_path: no such file in the workspace", 1)]
assert len(lines) == len(want), lines
for (got, code), (w, wc) in zip(lines, want):
    assert got.startswith(w) and code == wc, (got, code, w)
assert not any(d.startswith(("read_file", "list_files")) for d, _ in lines), lines
PY
}

@test "run rm and prune: ended runs go with their events, conversation and attachments; live ones and bad input are refused" {
	rk_fake t
	start_server run_open_attach.json
	rk run --computer t --json "attach the report" >/dev/null
	server_ok
	a=$(last_run | rk_json 'd["id"]')
	[ -d "$RAKAZO_DATA_DIR/attachments/$a" ]
	start_server run_answer.json
	rk run --computer t "what is the answer" >/dev/null
	server_ok
	b=$(last_run | rk_json 'd["id"]')
	start_server run_takeover.json
	c=$(rk run --detach --computer t --bot alpha "log in and go on")
	wait_for '[ "$(rk run show '"$c"' --json | rk_json "d[\"state\"]")" = waiting_takeover ]' 30
	# a live run stays, and says how to end it
	expect_status 4 rk run rm "$c"
	[[ "$output" == *"cancel it"* ]]
	[ "$(rk run show "$c" --json | rk_json 'd["state"]')" = waiting_takeover ]
	# rm goes on past an unknown id, prints what it removed, exits with the failure
	st=0
	rk run rm "$a" run_nosuch >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || st=$?
	[ "$st" -eq 3 ]
	[ "$(cat "$BATS_TEST_TMPDIR/out")" = "$a" ]
	grep -q "not_found.*run_nosuch" "$BATS_TEST_TMPDIR/err"
	expect_status 3 rk run show "$a"
	expect_status 3 rk run logs "$a"
	[ ! -e "$RAKAZO_DATA_DIR/attachments/$a" ]
	[ "$(rk_sql "SELECT count(*) FROM run_events WHERE run_id = '$a'")" = 0 ]
	[ "$(rk_sql "SELECT count(*) FROM run_messages WHERE run_id = '$a'")" = 0 ]
	# the computer's history keeps what the run did
	rk computer history t --json | grep -q 'attach_file notes/report.md'
	# prune: by the time a run ended
	rk_sql "UPDATE runs SET finished_at = finished_at - 10 * 86400000 WHERE id = '$b'"
	rk run prune --older-than 5 --dry-run --json >"$BATS_TEST_TMPDIR/dry"
	[ "$(rk_json '[d["removed"], d["dry_run"]]' <"$BATS_TEST_TMPDIR/dry")" = "[[\"$b\"], true]" ]
	rk run show "$b" --json >/dev/null
	[ "$(rk run prune --older-than 5)" = "$b" ]
	expect_status 3 rk run show "$b"
	[ "$(rk run prune --older-than 5 --json | rk_json 'd["removed"]')" = "[]" ]
	# usage
	expect_status 2 rk run prune
	expect_status 2 rk run prune --older-than -1
	expect_status 2 rk run rm
	# a cancelled run is an ended one
	rk run cancel "$c" --json >/dev/null
	[ "$(rk run prune --older-than 0)" = "$c" ]
	[ "$(rk run list --json | rk_json 'len(d)')" = 0 ]
}
