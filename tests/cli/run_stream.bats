#!/usr/bin/env bats
# rakazo run with streamed model replies (engine/agent/model_stream.c)
# against tests/emulators/model_server, over the three protocols: a streamed
# run ends as the same run does unstreamed, its text and tool calls come as
# events while the model writes, a mid-stream error before any output is
# retried and one after fails the step, and `run cancel` stops a stalled
# stream within a second or so.

load helper
load model

export ANTHROPIC_API_KEY=test-anthropic-key OPENAI_API_KEY=test-openai-key

teardown() {
	stop_server
	rk_kill_all
}

# A scenario in $BATS_TEST_TMPDIR/$1.json from the JSON on stdin.
scenario() {
	cat >"$BATS_TEST_TMPDIR/$1.json"
	echo "$BATS_TEST_TMPDIR/$1.json"
}

# Two steps: text and a shell call, then the answer; stream true|false.
two_steps() {
	scenario "two_$1" <<EOF
{"steps": [
  {"expect": {"stream": $1},
   "reply": {"content": "Let me look.\nFirst the shell, then the answer: ünïcode too.", "reasoning": "the user wants a listing",
             "tool_calls": [{"id": "call_fixed_1", "name": "shell", "arguments": {"command": "echo streamed-ok", "timeout_ms": 5000}}]}},
  {"expect": {"stream": $1, "last_tool_result_contains": "streamed-ok"}, "reply": {"content": "All done: streamed-ok."}}]}
EOF
}

# What a run's events say that must not depend on streaming: the model
# turns (text, finish reason, calls, usage), the calls and the results, the
# end; ids and times left out.
same_view() {
	python3 - "$1" <<'PY'
import json, sys
out = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    t = e["type"]
    if t == "model.turn":
        out.append([t, e["step"], e["text"], e["finish_reason"], e["tool_calls"], e["usage"]])
    elif t == "tool.call":
        out.append([t, e["name"], e["arguments"]])
    elif t == "tool.result":
        out.append([t, e["name"], e["output"], e.get("error")])
    elif t == "run.finished":
        out.append([t, e["state"], e.get("answer"), e["usage"]])
print(json.dumps(out, sort_keys=True))
PY
}

# The second request as the model got it, ids and signatures masked and the
# stream members dropped: what the engine sends back of the streamed turn.
second_request() {
	python3 - "$1" <<'PY'
import json, re, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = reqs[1]
r.pop("stream", None)
r.pop("stream_options", None)
def mask(v):
    if isinstance(v, dict):
        return {k: ("X" if k in ("id", "signature", "encrypted_content", "prompt_cache_key") else mask(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [mask(x) for x in v]
    return v
print(json.dumps(mask(r), sort_keys=True))
PY
}

@test "stream: each protocol's streamed run matches the unstreamed one (events, usage, the turn sent back)" {
	rk_fake t
	for api in messages responses chat; do
		export RAKAZO_MODEL_API=$api
		MODEL_DUMP=$BATS_TEST_TMPDIR/dump_on_$api start_server "$(two_steps true)"
		rk run -c t --json "list it" >"$BATS_TEST_TMPDIR/on_$api" 2>"$BATS_TEST_TMPDIR/err"
		server_ok
		MODEL_DUMP=$BATS_TEST_TMPDIR/dump_off_$api start_server "$(two_steps false)"
		rk run -c t --no-stream --json "list it" >"$BATS_TEST_TMPDIR/off_$api" 2>"$BATS_TEST_TMPDIR/err"
		server_ok
		[ "$(same_view "$BATS_TEST_TMPDIR/on_$api")" = "$(same_view "$BATS_TEST_TMPDIR/off_$api")" ]
		same_view "$BATS_TEST_TMPDIR/on_$api" | grep -q 'All done: streamed-ok.'
		# the turn goes back in the vendor's form, reasoning included, the same either way
		second_request "$BATS_TEST_TMPDIR/dump_on_$api" >"$BATS_TEST_TMPDIR/req_on"
		second_request "$BATS_TEST_TMPDIR/dump_off_$api" >"$BATS_TEST_TMPDIR/req_off"
		diff <(python3 -m json.tool "$BATS_TEST_TMPDIR/req_on") <(python3 -m json.tool "$BATS_TEST_TMPDIR/req_off")
		# the streamed run's text and its call came as events before the turn's
		python3 - "$BATS_TEST_TMPDIR/on_$api" "$BATS_TEST_TMPDIR/off_$api" <<'PY'
import json, sys
on = [json.loads(l) for l in open(sys.argv[1])]
off = [json.loads(l) for l in open(sys.argv[2])]
types = [e["type"] for e in on]
turn = types.index("model.turn")
text = "".join(e["text"] for e in on[:turn] if e["type"] == "model.text" and e["step"] == 1)
assert text == on[turn]["text"], (text, on[turn]["text"])
calls = [e for e in on[:turn] if e["type"] == "model.tool_call"]
assert len(calls) == 1 and calls[0]["name"] == "shell", calls
assert calls[0]["arguments"] == {"command": "echo streamed-ok", "timeout_ms": 5000}, calls
# text in a few events (a line, or 100 ms), not one per token
assert 1 <= sum(e["type"] == "model.text" and e["step"] == 1 for e in on) <= 5, types
assert not any(e["type"] in ("model.text", "model.tool_call") for e in off), [e["type"] for e in off]
PY
	done
}

@test "stream: \"stream\": false in the config file asks for whole replies; a bad value is refused" {
	rk_fake t
	export RAKAZO_MODEL_API=messages
	printf '{"model": {"stream": false}}\n' >"$BATS_TEST_TMPDIR/config.json"
	start_server "$(two_steps false)"
	RAKAZO_CONFIG=$BATS_TEST_TMPDIR/config.json rk run -c t --json "list it" >/dev/null
	server_ok
	printf '{"model": {"stream": "no"}}\n' >"$BATS_TEST_TMPDIR/config.json"
	RAKAZO_CONFIG=$BATS_TEST_TMPDIR/config.json expect_status 2 rk run -c t "list it"
	[[ "$output" == *stream* ]]
}

@test "stream: a slow stream's text comes in several events while the model writes, its call before the turn ends" {
	rk_fake t
	export RAKAZO_MODEL_API=responses
	start_server "$(scenario slow <<'EOF'
{"steps": [
  {"expect": {"stream": true}, "event_delay_ms": 60,
   "reply": {"content": "one two three four five six seven eight nine ten eleven twelve", "tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}},
  {"reply": {"content": "done"}}]}
EOF
)"
	rk run -c t --json "go" >"$BATS_TEST_TMPDIR/events"
	server_ok
	python3 - "$BATS_TEST_TMPDIR/events" <<'PY'
import json, sys
from datetime import datetime
ev = [json.loads(l) for l in open(sys.argv[1])]
t = lambda e: datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
texts = [e for e in ev if e["type"] == "model.text" and e["step"] == 1]
turn = next(e for e in ev if e["type"] == "model.turn")
call = next(e for e in ev if e["type"] == "model.tool_call")
assert len(texts) >= 2, texts
assert "".join(e["text"] for e in texts) == turn["text"]
# the first text arrived well before the turn ended (the stream takes > 1 s)
assert t(turn) - t(texts[0]) > 0.3, (texts[0]["time"], turn["time"])
assert ev.index(call) < ev.index(turn) and call["arguments"] == {"command": "echo hi"}
PY
}

@test "stream: an overloaded error mid-stream before any output is retried, for each protocol" {
	rk_fake t
	for api in messages responses chat; do
		export RAKAZO_MODEL_API=$api
		start_server "$(scenario "err_$api" <<'EOF'
{"steps": [
  {"expect": {"stream": true}, "fault": "stream_error", "after": "start", "reply": {"content": "never seen"}},
  {"expect": {"stream": true}, "reply": {"content": "second try"}}]}
EOF
)"
		RAKAZO_HTTP_BACKOFF_MS=10 rk run -c t --json "go" >"$BATS_TEST_TMPDIR/events"
		server_ok
		[ "$(tail -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["answer"]')" = "second try" ]
		! grep -q 'never seen' "$BATS_TEST_TMPDIR/events"
	done
}

@test "stream: an error after the text started fails the step with a clear error, not a retry" {
	rk_fake t
	export RAKAZO_MODEL_API=messages
	start_server "$(scenario late <<'EOF'
{"steps": [
  {"expect": {"stream": true}, "fault": "stream_error", "after": "text", "reply": {"content": "Half of this answer is shown before the error comes."}}]}
EOF
)"
	expect_status 5 rk run -c t --json "go"
	server_ok
	[[ "$output" == *"after its output had started"* ]]
	[[ "$output" == *"overloaded_error"* ]]
	[ "$(rk run list --json | rk_json 'd[0]["reason"]')" = model ]
}

@test "stream: run cancel during a stalled stream ends the run cancelled within a second or so" {
	rk_fake t
	export RAKAZO_MODEL_API=messages
	MODEL_DUMP=$BATS_TEST_TMPDIR/dump start_server "$(scenario stall <<'EOF'
{"steps": [
  {"expect": {"stream": true}, "stall_ms": 60000, "reply": {"content": "this comes a minute late"}}]}
EOF
)"
	id=$(rk run -c t --detach "wait for the model")
	# the request arrived and its stream began: message_start, then nothing
	wait_for '[ -s "$BATS_TEST_TMPDIR/dump" ]' 30
	sleep 0.5
	[ "$(rk run show "$id" --json | rk_json 'd["state"]')" = running ]
	t0=$(date +%s%N)
	rk run cancel "$id" --wait 30 --json >"$BATS_TEST_TMPDIR/cancel"
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	echo "cancel took $ms ms" >&3
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/cancel")" = cancelled ]
	[ "$(rk_json 'd["reason"]' <"$BATS_TEST_TMPDIR/cancel")" = cancelled ]
	# the stall is 60 s: the run must not have waited for it
	[ "$ms" -lt 3000 ]
	server_ok
}
