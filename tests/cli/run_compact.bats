#!/usr/bin/env bats
# rakazo run keeps a long conversation inside the model's context window:
# when a turn's input nears compact_at x context_window, the model
# summarises the older part and the run goes on from the summary
# (engine/agent/model_compact.h). The scripted model
# (tests/emulators/model_server) enforces the same window, refusing a
# longer request as the vendors do, and answers the summary requests.

load helper
load model

teardown() {
	stop_server
	rk_kill_all
}

# Ends a server that still waits for steps (its report is written on SIGTERM).
end_server() {
	kill "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
}

# The model config: a 6000-token window, and $1 (more JSON members) if given.
model_config() {
	printf '{"model": {"context_window": 6000%s}}\n' "${1:+, $1}" >"$BATS_TEST_TMPDIR/config.json"
	export RAKAZO_CONFIG="$BATS_TEST_TMPDIR/config.json"
}

TASK="TASK-7f3a: list the workspace until told to stop"

@test "run compact: a 200-step run compacts before the window and completes; task, summary and memory survive" {
	rk_fake t
	model_config
	export MODEL_DUMP="$BATS_TEST_TMPDIR/dump"
	start_server run_compact.json
	t0=$(date +%s)
	rk run --max-steps 200 --json "$TASK" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err"
	t1=$(date +%s)
	server_ok
	python3 - "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/report.json" "$MODEL_DUMP" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
dump = [l for l in open(sys.argv[3])]
fin = ev[-1]
assert fin["type"] == "run.finished" and fin["state"] == "completed" and fin["steps"] == 200, fin
comp = [e for e in ev if e["type"] == "run.compacted"]
assert len(comp) >= 2, len(comp)
assert not [e for e in ev if e["type"] == "run.compaction_failed"]
for c in comp:
    assert c["method"] == "summary" and c["context_window"] == 6000, c
    assert c["before_tokens"] >= 0.8 * 6000 and c["after_tokens"] < 0.6 * c["before_tokens"], c
    assert c["kept_messages"] == 6 and c["dropped_messages"] > 0, c
    assert c["usage"]["input_tokens"] > 0, c
# one summary request per compaction, none refused; every request inside the window
assert rep["summaries"] == len(comp), (rep["summaries"], len(comp))
assert max(r["input_tokens"] for r in rep["requests"]) <= 6000
assert len(dump) == len(rep["requests"])
first = next(i for i, r in enumerate(rep["requests"]) if r.get("summary"))
assert rep["requests"][first - 1]["input_tokens"] > 4000
for i, line in enumerate(dump):
    assert "TASK-7f3a" in line, i
    if i > first and not rep["requests"][i].get("summary"):
        # after a compaction: the summary, and the memory note by its contents
        assert "SUMMARY-41c9" in line and "MEMORY-MARKER-5b2e" in line and "notes/compact.md" in line, i
print(f"# 200 steps, {len(comp)} compactions", file=sys.stderr)
PY
	echo "# run_compact: 200 steps in $((t1 - t0)) s, $(grep -c run.compacted "$BATS_TEST_TMPDIR/events") compactions" >&3
	# the run's history keeps the compactions
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	[ "$(rk run logs "$id" --json | grep -c '"type":"run.compacted"')" -eq "$(grep -c run.compacted "$BATS_TEST_TMPDIR/events")" ]
}

@test "run compact: with compaction off the same run passes the window and fails with the vendor's error" {
	rk_fake t
	model_config '"compact": false'
	start_server run_compact.json
	run rk run --max-steps 200 --json "$TASK"
	[ "$status" -ne 0 ]
	[[ "$output" == *"maximum context length is 6000 tokens"* ]]
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	[ "$(rk run show "$id" --json | rk_json 'd["reason"]')" = model ]
	[ "$(rk run logs "$id" --json | grep -c '"type":"run.compacted"')" -eq 0 ]
	end_server
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["summaries"] == 0 and not rep["completed"]
last = rep["requests"][-1]
assert last["action"] == "refused" and last["status"] == 400 and last["input_tokens"] > 6000, last
PY
	# compact_at 0 turns it off too; a bad value is refused
	model_config '"compact_at": 0'
	start_server run_compact.json
	run rk run --max-steps 200 "$TASK"
	[ "$status" -ne 0 ]
	[[ "$output" == *"maximum context length"* ]]
	end_server
	model_config '"compact_at": 1.5'
	expect_status 2 rk run "$TASK"
	[[ "$output" == *'"compact_at" must be a fraction'* ]]
	model_config '"compact": "sometimes"'
	expect_status 2 rk run "$TASK"
	[[ "$output" == *'"compact" must be'* ]]
}

@test "run compact: a resume after a compaction replays the compacted conversation, not the full one" {
	rk_fake t
	model_config
	start_server run_compact_part.json
	run rk run --max-steps 61 --json "$TASK"
	[ "$status" -eq 1 ]
	server_ok
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	[ "$(rk run show "$id" --json | rk_json 'd["reason"]')" = max_steps ]
	[ "$(rk run logs "$id" --json | grep -c '"type":"run.compacted"')" -ge 1 ]
	start_server run_compact_resume.json
	rk run resume "$id" --json >"$BATS_TEST_TMPDIR/events"
	server_ok
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["answer"]')" = "Resumed from the summary and done." ]
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))["requests"][0]
# the full conversation (a system message, the task, 61 turns of a call and
# its result, the resume note) would be 125 messages and past the window;
# the compacted one starts with the summary message
assert req["messages"] < 100 and req["roles"][:3] == ["system", "user", "assistant"], req
assert req["input_tokens"] < 0.8 * 6000, req
PY
}

@test "run compact: on messages the vendor compacts (compaction parameter and beta); its block goes back first, on resume too" {
	rk_fake t
	model_config
	export RAKAZO_MODEL_API=messages RAKAZO_API_KEY=test-key MODEL_DUMP="$BATS_TEST_TMPDIR/dump"
	start_server run_compact.json
	rk run --max-steps 200 --json "$TASK" >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/report.json" "$MODEL_DUMP" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
dump = [json.loads(l) for l in open(sys.argv[3])]
assert ev[-1]["state"] == "completed" and ev[-1]["steps"] == 200, ev[-1]
comp = [e for e in ev if e["type"] == "run.compacted"]
assert len(comp) >= 2 and all(c["method"] == "server" and c["kept_messages"] == 0 for c in comp), comp
assert rep["summaries"] == len(comp)
for i, r in enumerate(rep["requests"]):
    q = dump[i]
    if r.get("summary"):
        # the SDK's compactBeforeNextTurn: the whole conversation, tools and all, and the parameter
        assert q["compaction"] == {"type": "summarize"} and q["tools"], q.keys()
        assert "compact-2026-09-04" in r["anthropic_beta"] and r["beta_query"], r
        assert q["messages"][-1]["role"] == "user"
    else:
        assert "compaction" not in q
    if i > 0 and rep["requests"][i - 1].get("summary"):
        # the signed block goes back first and verbatim; then the task and the memory note
        first = q["messages"][0]
        assert first["role"] == "assistant" and first["content"][0]["type"] == "compaction", first
        assert first["content"][0]["content"].startswith("SUMMARY-41c9") and first["content"][0]["signature"]
        text = json.dumps(q["messages"][1])
        assert "TASK-7f3a" in text and "MEMORY-MARKER-5b2e" in text, text
PY
	# a resume after the vendor's compaction sends the block back first again
	unset MODEL_DUMP
	start_server run_compact_part.json
	run rk run --max-steps 61 --json "$TASK"
	[ "$status" -eq 1 ]
	server_ok
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	start_server run_compact_resume.json
	rk run resume "$id" --json >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))["requests"][0]
assert req["roles"][0] == "assistant" and req["input_tokens"] < 0.8 * 6000, req
assert all(a["ok"] for a in req["assertions"]), req["assertions"]
PY
}

@test "run compact: on responses the vendor compacts (POST /responses/compact); its items go back verbatim, on resume too" {
	rk_fake t
	model_config
	export RAKAZO_MODEL_API=responses RAKAZO_API_KEY=test-key MODEL_DUMP="$BATS_TEST_TMPDIR/dump"
	start_server run_compact.json
	rk run --max-steps 200 --json "$TASK" >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/report.json" "$MODEL_DUMP" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
dump = [json.loads(l) for l in open(sys.argv[3])]
assert ev[-1]["state"] == "completed" and ev[-1]["steps"] == 200, ev[-1]
comp = [e for e in ev if e["type"] == "run.compacted"]
assert len(comp) >= 2 and all(c["method"] == "server" for c in comp), comp
assert rep["summaries"] == len(comp)
for i, r in enumerate(rep["requests"]):
    q = dump[i]
    if r.get("summary"):
        # the SDK's responses.compact body: the conversation, no turn settings
        assert set(q) <= {"model", "input", "instructions", "prompt_cache_key"} and q["input"], q.keys()
    if i > 0 and rep["requests"][i - 1].get("summary"):
        items = [it.get("type") for it in q["input"]]
        assert items.count("compaction") == 1, items
        text = json.dumps(q["input"])
        assert "TASK-7f3a" in text and "MEMORY-MARKER-5b2e" in text and "function_call" not in text[:text.index("compaction")]
PY
	unset MODEL_DUMP
	start_server run_compact_part.json
	run rk run --max-steps 61 --json "$TASK"
	[ "$status" -eq 1 ]
	server_ok
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	start_server run_compact_resume.json
	rk run resume "$id" --json >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))["requests"][0]
assert "compaction" in req["roles"] and req["input_tokens"] < 0.8 * 6000, req
PY
}

@test "run compact: the official SDKs' compaction calls and the emulator agree (fidelity)" {
	local deps="$BATS_TEST_DIRNAME/../sdk"
	if [ ! -d "$deps/node_modules/@anthropic-ai/sdk" ] || [ ! -d "$deps/node_modules/openai" ] ||
		! command -v node >/dev/null 2>&1; then
		[ "${RAKAZO_REQUIRE_DOCKER:-0}" != 1 ] || { echo "the SDKs are not installed: sh tests/sdk/setup.sh" >&2; return 1; }
		skip "the SDKs are not installed (sh tests/sdk/setup.sh)"
	fi
	run env MODEL_SERVER="$MODEL_SERVER" node "$deps/compaction.mjs"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"sdk compaction: 7 passed, 0 failed"* ]]
}
