#!/usr/bin/env bats
# rakazo run: usage and cost per step and per run, the --max-cost budget,
# the model's unusual stops (refusal, a reply cut at its output limit, a
# content filter) and the model endpoint's errors (a 400 naming the field,
# 429 with retry-after), against tests/emulators/model_server on a fake
# computer, for the Messages and Responses protocols (and chat where it
# has the feature).

load helper
load model

teardown() {
	stop_server
	rk_kill_all
}

last_run() {
	rk run list --json | rk_json 'd[0]'
}

# scenario NAME JSON: writes the steps to $BATS_TEST_TMPDIR/NAME.json.
scenario() {
	printf '%s\n' "$2" >"$BATS_TEST_TMPDIR/$1.json"
}

# A config file with a price (USD per million tokens) for the scripted model.
priced_config() {
	printf '{"model": {"price": {"input": %s, "output": %s}}}\n' "$1" "$2" >"$BATS_TEST_TMPDIR/config.json"
	export RAKAZO_CONFIG=$BATS_TEST_TMPDIR/config.json
}

# The protocol flags for api $1 (the emulator takes any key).
proto() {
	export RAKAZO_API_KEY=sk-test-budget
	if [ "$1" = chat ]; then
		API_FLAGS=(--api chat)
	else
		API_FLAGS=(--api "$1" --base-url "$RAKAZO_MODEL_BASE_URL" --model scripted)
	fi
}

@test "run --max-cost: the run stops cleanly (failed, max_cost, the spent amount named), resumes with a higher limit" {
	rk_fake t
	priced_config 1000 1000 # a dollar per thousand tokens: the first step spends well over $0.50
	scenario cost '{"steps": [
		{"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "echo one"}}]}}]}'
	start_server "$BATS_TEST_TMPDIR/cost.json"
	run rk run --max-cost 0.50 "spend"
	[ "$status" -eq 1 ]
	server_ok
	[[ "$output" == *"max_cost: the run spent \$"*" of its \$0.5000 budget (config file prices of scripted)"* ]]
	id=$(last_run | rk_json 'd["id"]')
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	python3 - "$BATS_TEST_TMPDIR/show" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["state"] == "failed" and d["reason"] == "max_cost", d
u = d["usage"]
# every token at $1000 per million: the cost is a thousandth of the tokens
assert abs(u["cost_usd"] - (u["input_tokens"] + u["output_tokens"]) / 1000) < 1e-5, u
assert u["cost_usd"] > 0.5, u
assert str("%.4f" % u["cost_usd"]) in d["error"], (u, d["error"])
assert len(d["turns"]) == 1 and d["turns"][0]["usage"]["cost_usd"] == u["cost_usd"], d["turns"]
PY
	# the checkpoint was made as for the other limits
	[ "$(rk checkpoint show t --json | rk_json 'd["reason"]')" = "run-failed:$id" ]
	# a higher limit goes on from where it stopped; the cost keeps adding up
	scenario more '{"steps": [{"expect": {"last_tool_result_contains": "one"}, "reply": {"content": "done"}}]}'
	start_server "$BATS_TEST_TMPDIR/more.json"
	rk run resume "$id" --max-cost 1000
	server_ok
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show2"
	python3 - "$BATS_TEST_TMPDIR/show" "$BATS_TEST_TMPDIR/show2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["state"] == "completed" and b["final_answer"] == "done", b
assert b["usage"]["cost_usd"] > a["usage"]["cost_usd"], (a["usage"], b["usage"])
assert len(b["turns"]) == 2
assert abs(sum(t["usage"]["cost_usd"] for t in b["turns"]) - b["usage"]["cost_usd"]) < 1e-5
PY
}

@test "run --max-cost: a model without a price is a usage error before any run; a bad amount too" {
	rk_fake t
	export RAKAZO_MODEL_BASE_URL=http://127.0.0.1:9/v1 RAKAZO_MODEL=scripted
	expect_status 2 rk run --max-cost 1 "anything"
	[[ "$output" == *"--max-cost: no price is known for the model scripted"*'"price"'* ]]
	[ "$(rk run list --json | rk_json 'len(d)')" = 0 ]
	expect_status 2 rk run --max-cost abc "anything"
	[[ "$output" == *"--max-cost: 'abc' is not an amount of US dollars"* ]]
	expect_status 2 rk run --max-cost 0 "anything"
	expect_status 2 rk run --max-cost -3 "anything"
	[ "$(rk run list --json | rk_json 'len(d)')" = 0 ]
	# a built-in price: a vendor's model needs no config
	expect_status 5 rk run --model-retries 0 --max-cost 1 --api messages --model claude-sonnet-4-5 "anything"
	[ "$(last_run | rk_json 'd["reason"]')" = model ]
}

@test "run: usage per step and per run: input, cached, output, images (new and carried) and cost in show, list, logs, events" {
	rk_fake t
	priced_config 3 15
	scenario img '{"steps": [
		{"expect": {"image_count_max": 0}, "reply": {"tool_calls": [{"name": "computer_observe", "arguments": {}}]}},
		{"expect": {"image_count_min": 1}, "reply": {"tool_calls": [{"name": "computer_observe", "arguments": {}}]}},
		{"expect": {"image_count_min": 1, "image_count_max": 1}, "reply": {"content": "seen"}}]}'
	start_server "$BATS_TEST_TMPDIR/img.json"
	rk run --computer t --json "look twice" >"$BATS_TEST_TMPDIR/events"
	server_ok
	id=$(last_run | rk_json 'd["id"]')
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	rk run list --json >"$BATS_TEST_TMPDIR/list"
	python3 - "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/show" "$BATS_TEST_TMPDIR/list" "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
show = json.load(open(sys.argv[2]))
lst = json.load(open(sys.argv[3]))
rep = json.load(open(sys.argv[4]))
turns = [e for e in ev if e["type"] == "model.turn"]
assert [t["usage"]["images"] for t in turns] == [0, 1, 1], turns
assert [t["usage"]["new_images"] for t in turns] == [0, 1, 0], turns
assert [t["stop"] for t in turns] == [None, None, None]
# the tokens are what the server answered, per step
for t, r in zip(turns, rep["requests"]):
    assert t["usage"]["output_tokens"] == r["usage"]["completion_tokens"], (t, r)
    assert t["usage"]["input_tokens"] == r["usage"]["prompt_tokens"], (t, r)
    assert t["usage"]["cached_input_tokens"] == r["usage"]["prompt_tokens_details"]["cached_tokens"]
    u = t["usage"]
    want = ((u["input_tokens"] - u["cached_input_tokens"]) * 3 + u["cached_input_tokens"] * 3 + u["output_tokens"] * 15) / 1e6
    assert abs(u["cost_usd"] - want) < 2e-6, (u, want)
fin = ev[-1]
assert fin["type"] == "run.finished" and fin["usage"]["images"] == 2, fin
u = show["usage"]
assert u["images"] == 2 and u == fin["usage"], (u, fin["usage"])
for k in ("input_tokens", "output_tokens", "cached_input_tokens", "images"):
    assert u[k] == sum(t["usage"][k] for t in show["turns"]), k
assert abs(u["cost_usd"] - sum(t["usage"]["cost_usd"] for t in turns)) < 1e-5
assert [t["step"] for t in show["turns"]] == [1, 2, 3]
assert lst[0]["usage"] == u
PY
	# the human log names each step's cost
	rk run logs "$id" | grep -E 'model.turn +step 2 \(\$0\.[0-9]{4}\)'
	# a model with no price: the cost is null, not 0
	unset RAKAZO_CONFIG
	scenario plain '{"steps": [{"reply": {"content": "ok"}}]}'
	start_server "$BATS_TEST_TMPDIR/plain.json"
	rk run --computer t "anything" >/dev/null
	server_ok
	[ "$(last_run | rk_json 'd["usage"]["cost_usd"]')" = null ]
}

@test "run: a refusal is shown and recorded: the run fails with reason refusal and the model's words (messages, responses, chat)" {
	rk_fake t
	local api
	for api in messages responses chat; do
		scenario refuse '{"steps": [{"expect": {"protocol": "'$api'"}, "reply": {"refusal": "I cannot help with that request.", "refusal_category": "cyber"}}]}'
		start_server "$BATS_TEST_TMPDIR/refuse.json"
		proto $api
		run rk run "${API_FLAGS[@]}" "do something bad"
		[ "$status" -eq 1 ]
		server_ok
		[[ "$output" == *"rakazo: warning: the model refused ("*"): I cannot help with that request."* ]]
		[[ "$output" == *"refusal: the model declined: I cannot help with that request."* ]]
		id=$(last_run | rk_json 'd["id"]')
		[ "$(rk run show "$id" --json | rk_json 'd["reason"]')" = refusal ]
		[ "$(rk run show "$id" --json | rk_json 'd["turns"][0]["stop"]')" = refusal ]
		[[ "$(rk run show "$id" --json | rk_json 'd["turns"][0]["refusal"]')" == "I cannot help with that request."* ]]
		if [ $api = messages ]; then
			# Anthropic's stop_details name the policy category
			[[ "$(last_run | rk_json 'd["error"]')" == *"I cannot help with that request. (category cyber)" ]]
		fi
		[ "$(rk run show "$id" --json | rk_json 'd["final_answer"]')" = null ]
		rk run logs "$id" | grep -qE "model.turn +step 1 \[refusal: I cannot help with that request.( \(category cyber\))?\]"
	done
	# the messages reply said so in its stop_reason, the responses one in a refusal part
	[ "$(rk run show "$id" --json | rk_json 'd["turns"][0]["finish_reason"]')" = stop ]
}

@test "run: a reply cut at the output limit: its tool call is not run, the model is told, and two cuts in a row fail (output_limit)" {
	rk_fake t
	local api
	for api in messages responses; do
		scenario cut '{"steps": [
			{"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes/cut.txt", "content": "half"}}], "finish_reason": "length"}},
			{"expect": {"last_tool_result_contains": "cut off at the output token limit"},
			 "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes/ok.txt", "content": "whole"}}]}},
			{"reply": {"content": "a long answer that was cut", "finish_reason": "length"}},
			{"expect": {"messages_contain": "Your last reply was cut off"}, "reply": {"content": "short answer"}}]}'
		start_server "$BATS_TEST_TMPDIR/cut.json"
		proto $api
		rk run --computer t "${API_FLAGS[@]}" --json "write it" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err"
		server_ok
		python3 - "$BATS_TEST_TMPDIR/events" "$api" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
turns = [e for e in ev if e["type"] == "model.turn"]
fin = {"messages": "max_tokens", "responses": "max_output_tokens"}[sys.argv[2]]
assert [t["stop"] for t in turns] == ["max_tokens", None, "max_tokens", None], turns
assert turns[0]["finish_reason"] == fin and turns[2]["finish_reason"] == fin, turns
calls = [e["arguments"]["path"] for e in ev if e["type"] == "tool.call"]
assert calls == ["notes/ok.txt"], calls  # the cut call never ran
assert ev[-1]["state"] == "completed" and ev[-1]["answer"] == "short answer", ev[-1]
PY
		[ "$(rk computer file read t notes/ok.txt)" = whole ]
		run rk computer file read t notes/cut.txt
		[ "$status" -ne 0 ]
	done
	# human mode says so; two cut replies in a row end the run
	scenario cut2 '{"steps": [
		{"reply": {"content": "cut one", "finish_reason": "length"}},
		{"reply": {"content": "cut two", "finish_reason": "length"}}]}'
	start_server "$BATS_TEST_TMPDIR/cut2.json"
	proto responses
	run rk run --computer t "${API_FLAGS[@]}" "write it"
	[ "$status" -eq 1 ]
	server_ok
	[[ "$output" == *"rakazo: warning: the model's reply was cut at its output limit (max_output_tokens)"* ]]
	[[ "$output" == *"output_limit: the model's reply was cut at its output limit (max_output_tokens) 2 times in a row"* ]]
	[ "$(last_run | rk_json 'd["reason"]')" = output_limit ]
}

@test "run: a content filter stop fails the run with reason content_filter (responses, chat)" {
	rk_fake t
	local api
	for api in responses chat; do
		scenario filt '{"steps": [{"reply": {"content": "partial", "finish_reason": "content_filter"}}]}'
		start_server "$BATS_TEST_TMPDIR/filt.json"
		proto $api
		run rk run --computer t "${API_FLAGS[@]}" "anything"
		[ "$status" -eq 1 ]
		server_ok
		[[ "$output" == *"content_filter: the vendor's content filter stopped the model's reply"* ]]
		[ "$(last_run | rk_json 'd["reason"]')" = content_filter ]
	done
}

@test "run: a 400 names the request field: Anthropic's message, OpenAI's param" {
	rk_fake t
	scenario bad '{"steps": [{"fault": "status", "status": 400, "type": "invalid_request_error",
		"message": "messages.3.content.0: image exceeds 5 MB maximum"}]}'
	start_server "$BATS_TEST_TMPDIR/bad.json"
	proto messages
	run rk run --computer t "${API_FLAGS[@]}" "anything"
	[ "$status" -ne 0 ]
	server_ok
	[[ "$(last_run | rk_json 'd["error"]')" == "model: "*"HTTP 400"*"invalid_request_error: "*"messages.3.content.0: image exceeds 5 MB maximum"* ]]
	[ "$(last_run | rk_json 'd["reason"]')" = model ]
	scenario bad '{"steps": [{"fault": "status", "status": 400, "type": "invalid_request_error",
		"param": "input[3].content", "code": "invalid_value", "message": "Invalid value for content."}]}'
	start_server "$BATS_TEST_TMPDIR/bad.json"
	proto responses
	run rk run --computer t "${API_FLAGS[@]}" "anything"
	[ "$status" -ne 0 ]
	server_ok
	[[ "$(last_run | rk_json 'd["error"]')" == "model: "*"HTTP 400"*"invalid_request_error: "*"Invalid value for content."*"(param: "*"input[3].content"* ]]
	# one request each: a 400 is not retried
	[ "$(rk_json 'len(d["requests"])' <"$BATS_TEST_TMPDIR/report.json")" = 1 ]
}

@test "run: 429 with retry-after N is retried after N seconds or more; 529 overloaded and 503 are retried (messages, responses)" {
	rk_fake t
	local api
	for api in messages responses; do
		scenario slow '{"steps": [{"fault": "status", "status": 429, "type": "rate_limit_error", "retry_after": 2},
			{"reply": {"content": "after the wait"}}]}'
		start_server "$BATS_TEST_TMPDIR/slow.json"
		proto $api
		[ "$(rk run --computer t "${API_FLAGS[@]}" "anything" 2>/dev/null)" = "after the wait" ]
		server_ok
		# measured by the server: the retry came at least retry-after after the 429 (the backoff
		# alone waits 0.5 s at most)
		python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["requests"]
assert [q["status"] for q in r] == [429, 200], r
gap = r[1]["received_ms"] - r[0]["received_ms"]
assert gap >= 2000, gap
PY
	done
	scenario busy '{"steps": [{"fault": "status", "status": 529, "type": "overloaded_error", "message": "Overloaded"},
		{"reply": {"content": "ok"}}]}'
	start_server "$BATS_TEST_TMPDIR/busy.json"
	proto messages
	[ "$(rk run --computer t "${API_FLAGS[@]}" "anything" 2>/dev/null)" = ok ]
	server_ok
	scenario busy '{"steps": [{"fault": "status", "status": 503, "type": "server_error"}, {"reply": {"content": "ok"}}]}'
	start_server "$BATS_TEST_TMPDIR/busy.json"
	proto responses
	[ "$(rk run --computer t "${API_FLAGS[@]}" "anything" 2>/dev/null)" = ok ]
	server_ok
}

@test "run: pause_turn sends the paused turn back and goes on; a full context window fails the run (messages)" {
	rk_fake t
	scenario pause '{"steps": [{"reply": {"content": "working on it", "stop_reason": "pause_turn"}},
		{"expect": {"messages_contain": "working on it"}, "reply": {"content": "finished"}}]}'
	start_server "$BATS_TEST_TMPDIR/pause.json"
	proto messages
	run rk run --computer t "${API_FLAGS[@]}" "long task"
	[ "$status" -eq 0 ]
	server_ok
	[[ "$output" == *"rakazo: warning: the model paused its turn (pause_turn); it goes on"* ]]
	[[ "$output" == *finished* ]]
	# the paused turn went back as the conversation's last (assistant) turn, for the model to go on
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["requests"]
assert r[1]["roles"][-1] == "assistant", r[1]["roles"]
PY
	[ "$(last_run | rk_json 'd["final_answer"]')" = finished ]
	scenario full '{"steps": [{"reply": {"content": "", "stop_reason": "model_context_window_exceeded"}}]}'
	start_server "$BATS_TEST_TMPDIR/full.json"
	proto messages
	run rk run --computer t "${API_FLAGS[@]}" "long task"
	[ "$status" -eq 1 ]
	server_ok
	[[ "$output" == *"context_window: the conversation filled the model's context window (model_context_window_exceeded)"* ]]
	[ "$(last_run | rk_json 'd["reason"]')" = context_window ]
}
