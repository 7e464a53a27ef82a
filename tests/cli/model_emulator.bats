#!/usr/bin/env bats
# The scripted model server (tests/emulators/model_server) on its three
# protocols: the vendors' official SDKs against it (tests/sdk/anthropic.mjs,
# tests/sdk/openai.mjs), then plain HTTP: the requests a vendor refuses are
# refused (HTTP 500 naming the step and the check, recorded in the report),
# and the event streams come in each vendor's order.

load helper
load model

teardown() {
	stop_server
	rk_kill_all
}

# Runs the SDK script $1 (anthropic, openai) and checks its summary line $2.
# Skipped when the SDK is not installed (sh tests/sdk/setup.sh), unless
# RAKAZO_REQUIRE_DOCKER=1, as the other SDK fidelity tests are.
sdk_run() {
	local deps="$BATS_TEST_DIRNAME/../sdk" pkg=$3
	if [ ! -d "$deps/node_modules/$pkg" ] || ! command -v node >/dev/null 2>&1; then
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "$pkg is not installed: run sh tests/sdk/setup.sh (RAKAZO_REQUIRE_DOCKER=1)" >&2
			return 1
		fi
		skip "$pkg is not installed (sh tests/sdk/setup.sh)"
	fi
	run env MODEL_SERVER="$MODEL_SERVER" node "$deps/$1.mjs"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"$2"* ]] || { echo "$output"; return 1; }
}

# A w x h PNG, base64 (python3 -c, no imaging library).
png_b64() {
	python3 - "$1" "$2" <<'PY'
import base64, struct, sys, zlib
w, h = int(sys.argv[1]), int(sys.argv[2])
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
raw = b"".join(b"\0" + bytes((x * 7) & 255 for x in range(w * 3)) for _ in range(h))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
print(base64.b64encode(png).decode())
PY
}

# Writes scenario text $1 to a file and starts the server on it.
scenario() {
	printf '%s\n' "$1" >"$BATS_TEST_TMPDIR/scenario.json"
	start_server "$BATS_TEST_TMPDIR/scenario.json"
}

# POSTs stdin to PATH ($1, under the base URL) with the other arguments as
# curl options; the body goes to $BATS_TEST_TMPDIR/body, the status to stdout.
post() {
	local path=$1
	shift
	curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' -H 'content-type: application/json' "$@" \
		--data-binary @- "$RAKAZO_MODEL_BASE_URL$path"
}

ANTHROPIC=(-H 'x-api-key: sk-test' -H 'anthropic-version: 2023-06-01')
OPENAI=(-H 'Authorization: Bearer sk-test')

# The error of the last answer: a Messages error has "type": "error".
error_message() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2] == "messages":
    assert d["type"] == "error", d
print(d["error"]["type"], d["error"]["message"])
' "$BATS_TEST_TMPDIR/body" "${1:-}"
}

# Waits for the server and checks that it served every step and that its
# failures are exactly the checks named, one per refused step, in order.
server_refused() {
	local st=0
	wait "$SERVER_PID" || st=$?
	SERVER_PID=
	[ "$st" -eq 1 ]
	python3 - "$BATS_TEST_TMPDIR/report.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2:]
assert d["completed"] and not d["ok"], d
got = [f.split("assertion failed: ")[1].split(":")[0] for f in d["failures"]]
assert got == want, (got, d["failures"])
for r in d["requests"]:
    if r["action"] == "assertion_failed":
        assert r["status"] == 500 and [a for a in r["assertions"] if not a["ok"]], r
PY
}

# The SSE event names of the last answer, one a line.
sse_events() {
	python3 - "$BATS_TEST_TMPDIR/body" <<'PY'
import json, sys
for block in open(sys.argv[1], encoding="utf-8").read().split("\n\n"):
    if not block.strip():
        continue
    lines = dict(l.split(": ", 1) for l in block.split("\n"))
    data = lines["data"]
    if data == "[DONE]":
        print("[DONE]")
        continue
    d = json.loads(data)
    name = lines.get("event") or d.get("object")
    assert "event" not in lines or d["type"] == name, block
    print(name)
PY
}

@test "model emulator: the official @anthropic-ai/sdk runs its scenario on the Messages API (fidelity)" {
	sdk_run anthropic "sdk anthropic: 16 passed, 0 failed" @anthropic-ai/sdk
}

@test "model emulator: the official openai SDK runs its scenario on the Responses API and chat (fidelity)" {
	sdk_run openai "sdk openai: 18 passed, 0 failed" openai
}

@test "model emulator: Messages refuses no max_tokens, no anthropic-version and no key, each naming its check" {
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "ok"}}]}'
	[ "$(post /messages "${ANTHROPIC[@]}" <<<'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}')" = 500 ]
	[ "$(error_message messages)" = "scenario_assertion step 1: assertion failed: max_tokens: max_tokens, a positive integer, is required" ]
	[ "$(post /messages -H 'x-api-key: k' <<<'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}')" = 500 ]
	[[ $(error_message messages) == *"step 2: assertion failed: anthropic_version: "* ]]
	[ "$(post /messages -H 'anthropic-version: 2023-06-01' <<<'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}')" = 500 ]
	[[ $(error_message messages) == *"step 3: assertion failed: api_key: neither an x-api-key nor an Authorization: Bearer header came"* ]]
	# and the same request whole is answered, at /messages without /v1 too
	local base=${RAKAZO_MODEL_BASE_URL%/v1}
	curl -sS -o "$BATS_TEST_TMPDIR/body" "${ANTHROPIC[@]}" --data-binary '{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}' "$base/messages"
	[ "$(rk_json 'd["content"][0]["text"]' <"$BATS_TEST_TMPDIR/body")" = ok ]
	server_refused max_tokens anthropic_version api_key
}

@test "model emulator: bad images are refused: mislabelled, truncated, not base64, a URL source, a non-image data URL" {
	local png
	png=$(png_b64 40 30)
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}, {"reply": {"content": "e"}}, {"reply": {"content": "f"}}, {"expect": {"image_size": [40, 30], "image_media_type": "image/png"}, "reply": {"content": "g"}}]}'
	image() { # $1 media type, $2 data
		printf '{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "%s", "data": "%s"}}]}]}' "$1" "$2"
	}
	[ "$(image image/jpeg "$png" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *"images_valid: 1 of 1 images are bad: image 1: labelled image/jpeg, but the bytes are a PNG"* ]]
	[ "$(image image/png "${png:0:120}" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *"images_valid: 1 of 1 images are bad: image 1: the PNG does not decode"* ]]
	[ "$(image image/png 'not base64!' | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *"image 1: the data is not base64"* ]]
	[ "$(post /messages "${ANTHROPIC[@]}" <<<'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}}]}]}')" = 500 ]
	[[ $(error_message messages) == *"an image block's source is \"url\", not base64"* ]]
	[ "$(printf '{"model": "m", "store": false, "input": [{"role": "user", "content": [{"type": "input_image", "detail": "auto", "image_url": "data:image/gif;base64,%s"}]}]}' "$png" | post /responses "${OPENAI[@]}")" = 500 ]
	[[ $(error_message) == *"media type \"image/gif\" (only image/png and image/jpeg are sent)"* ]]
	# chat takes PNG and JPEG data URLs and checks their bytes alike
	[ "$(printf '{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,%s"}}]}]}' "$png" | post /chat/completions)" = 500 ]
	[[ $(error_message) == *"images_valid: 1 of 1 images are bad: image 1: labelled image/jpeg, but the bytes are a PNG"* ]]
	[ "$(image image/png "$png" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	server_refused images_valid images_valid images_valid images_valid images_valid images_valid
}

@test "model emulator: Messages tool results answer the assistant's tool_use, in one user message, ahead of text" {
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}, {"reply": {"content": "ok"}}]}'
	local use='{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}, {"type": "tool_use", "id": "toolu_2", "name": "shell", "input": {}}]}'
	local r1='{"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"}'
	local r2='{"type": "tool_result", "tool_use_id": "toolu_2", "content": "two"}'
	msgs() {
		printf '{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "go"}, %s]}' "$1"
	}
	# a tool_result that answers nothing
	[ "$(msgs "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"toolu_nobody\", \"content\": \"x\"}]}" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *'step 1: assertion failed: tool_use_ids_match: message 1: the tool_result for "toolu_nobody" answers no tool_use of the assistant message right before it'* ]]
	# the results split over two user messages
	[ "$(msgs "$use, {\"role\": \"user\", \"content\": [$r1]}, {\"role\": \"user\", \"content\": [$r2]}" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *'step 2: assertion failed: tool_results_in_one_message: messages 2 and 3 both hold tool results'* ]]
	# one call left unanswered
	[ "$(msgs "$use, {\"role\": \"user\", \"content\": [$r1]}" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *'tool_use_ids_match: message 1: tool_use "toolu_2" has no tool_result in the user message right after it'* ]]
	# text before the results
	[ "$(msgs "$use, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"note\"}, $r1, $r2]}" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *'the tool_result for "toolu_1" comes after other content; tool results go first'* ]]
	[ "$(msgs "$use, {\"role\": \"user\", \"content\": [$r1, $r2, {\"type\": \"text\", \"text\": \"note\"}]}" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	server_refused tool_use_ids_match tool_results_in_one_message tool_use_ids_match tool_use_ids_match
}

@test "model emulator: a native computer tool needs its beta; expect checks the tool, its size and the screenshot" {
	local png
	png=$(png_b64 1366 768)
	scenario '{"steps": [
		{"reply": {"content": "a"}},
		{"expect": {"native_tool_type": "computer_20250124", "display_width": 1366, "display_height": 768, "anthropic_beta_includes": ["computer-use-2025-01-24", "other-beta"], "image_size": [1366, 768], "image_media_type": "image/png", "image_max_long_edge": 1366, "image_matches_display": true},
		 "reply": {"tool_calls": [{"name": "computer", "arguments": {"action": "left_click", "coordinate": [683, 384]}}, {"name": "shell", "arguments": {"cmd": "ls"}}]}},
		{"expect": {"image_size": [1024, 768], "image_matches_display": true}, "reply": {"content": "c"}}]}'
	local tools='[{"type": "computer_20250124", "name": "computer", "display_width_px": 1366, "display_height_px": 768}, {"name": "shell", "input_schema": {"type": "object"}}]'
	body() {
		printf '{"model": "m", "max_tokens": 5, "tools": %s, "messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "%s"}}]}]}' "$tools" "$png"
	}
	[ "$(body | post /messages "${ANTHROPIC[@]}" -H 'anthropic-beta: computer-use-2025-11-24')" = 500 ]
	[[ $(error_message messages) == *'anthropic_beta: a computer_20250124 tool needs anthropic-beta computer-use-2025-01-24; got "computer-use-2025-11-24"'* ]]
	[ "$(body | post '/messages?beta=true' "${ANTHROPIC[@]}" -H 'anthropic-beta: computer-use-2025-01-24, other-beta')" = 200 ]
	python3 - "$BATS_TEST_TMPDIR/body" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stop_reason"] == "tool_use", d
(c, s) = d["content"]
assert c["type"] == "tool_use" and c["name"] == "computer" and c["input"] == {"action": "left_click", "coordinate": [683, 384]}, c
assert s["name"] == "shell" and s["id"].startswith("toolu_01") and len(s["id"]) == 30 and s["id"] != c["id"], s
assert d["usage"]["input_tokens"] >= 1366 * 768 // 750 and d["usage"]["cache_read_input_tokens"] == 0, d["usage"]
PY
	[ "$(body | post /messages "${ANTHROPIC[@]}" -H 'anthropic-beta: computer-use-2025-01-24')" = 500 ]
	[[ $(error_message messages) == *'image_size: the last image is 1366x768, wanted 1024x768'* ]]
	server_refused anthropic_beta image_size
	rk_json 'd["requests"][1]["beta_query"], d["requests"][1]["display"], d["requests"][1]["native_tool"]' <"$BATS_TEST_TMPDIR/report.json" >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = '[true, [1366, 768], "computer_20250124"]' ]
}

@test "model emulator: Responses refuses store on by default, outputs that answer nothing, unanswered calls, a bad screenshot" {
	local png
	png=$(png_b64 8 8)
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}, {"reply": {"content": "e"}}, {"expect": {"store": true}, "reply": {"content": "ok"}}]}'
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "input": "hi"}')" = 500 ]
	[[ $(error_message) == *'step 1: assertion failed: store: store is on, wanted off (the default unless the step'* ]]
	[ "$(post /responses <<<'{"model": "m", "input": "hi", "store": false}')" = 500 ]
	[[ $(error_message) == *'step 2: assertion failed: authorization: no Authorization: Bearer header came'* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": [{"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"}, {"type": "function_call_output", "call_id": "call_2", "output": "x"}]}')" = 500 ]
	[[ $(error_message) == *'call_ids_match: input item 0: the function_call "call_1" has no function_call_output after it'* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": [{"type": "computer_call", "call_id": "call_1", "actions": [], "pending_safety_checks": [], "status": "completed", "id": "cu_1"}, {"type": "computer_call_output", "call_id": "call_1", "output": {"type": "input_image", "image_url": "data:image/png;base64,xx"}}]}')" = 500 ]
	[[ $(error_message) == *"computer_call_output: input item 1: a computer_call_output's output is {\"type\":\"computer_screenshot\""* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": [{"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"}, {"type": "computer_call_output", "call_id": "call_1", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,'"$png"'"}}]}')" = 500 ]
	[[ $(error_message) == *'call_ids_match: input item 0: the function_call "call_1" has no function_call_output after it'* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "input": "hi", "store": true}')" = 200 ]
	server_refused store authorization call_ids_match computer_call_output call_ids_match
}

@test "model emulator: previous_response_id needs a stored response; with store off, reasoning comes back whole" {
	scenario '{"steps": [
		{"expect": {"store": true}, "reply": {"reasoning": "r", "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]}},
		{"expect": {"store": true, "previous_response_id": true}, "reply": {"content": "b"}},
		{"expect": {"store": true, "previous_response_id": true, "last_tool_result_contains": "listing"}, "reply": {"reasoning": "r2", "tool_calls": [{"name": "shell", "arguments": {"cmd": "pwd"}}]}},
		{"reply": {"reasoning": "r3", "tool_calls": [{"name": "shell", "arguments": {"cmd": "id"}}]}},
		{"reply": {"content": "e"}},
		{"reply": {"content": "f"}},
		{"reply": {"content": "g"}}]}'
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "input": "hi", "store": true}')" = 200 ]
	local first call
	first=$(rk_json 'd["id"]' <"$BATS_TEST_TMPDIR/body")
	call=$(rk_json 'd["output"][1]["call_id"]' <"$BATS_TEST_TMPDIR/body")
	# continuing without answering the call it ended with
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": true, "previous_response_id": "'"$first"'", "input": "and?"}')" = 500 ]
	[[ $(error_message) == *"call_ids_match: the previous response's function_call \"$call\" has no function_call_output in the input"* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": true, "previous_response_id": "'"$first"'", "input": [{"type": "function_call_output", "call_id": "'"$call"'", "output": "listing"}]}')" = 200 ]
	[ "$(rk_json 'd["previous_response_id"]' <"$BATS_TEST_TMPDIR/body")" = "$first" ]
	# store off, and no encrypted_content asked for: the reasoning cannot come back
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "input": "hi", "store": false}')" = 200 ]
	cp "$BATS_TEST_TMPDIR/body" "$BATS_TEST_TMPDIR/unstored"
	local out unstored
	unstored=$(rk_json 'd["id"]' <"$BATS_TEST_TMPDIR/unstored")
	out=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["output"]))' "$BATS_TEST_TMPDIR/unstored")
	call=$(rk_json 'd["output"][1]["call_id"]' <"$BATS_TEST_TMPDIR/unstored")
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "previous_response_id": "'"$unstored"'", "input": [{"type": "function_call_output", "call_id": "'"$call"'", "output": "x"}]}')" = 500 ]
	[[ $(error_message) == *"previous_response_id: was created with store off, so the vendor kept no copy of \"$unstored\""* ]]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": ['"${out:1:-1}"', {"type": "function_call_output", "call_id": "'"$call"'", "output": "x"}]}')" = 500 ]
	[[ $(error_message) == *"reasoning_replayed: input item 0: the reasoning item"*"must carry its encrypted_content"* ]]
	# the call without the reasoning item served before it
	out=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["output"][1]))' "$BATS_TEST_TMPDIR/unstored")
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": ['"$out"', {"type": "function_call_output", "call_id": "'"$call"'", "output": "x"}]}')" = 500 ]
	[[ $(error_message) == *"reasoning_replayed: input item 0: the function_call"*"comes without the reasoning item"* ]]
	server_refused call_ids_match previous_response_id reasoning_replayed reasoning_replayed
}

@test "model emulator: with thinking on, the thinking block must come back with its tool_use" {
	scenario '{"steps": [{"reply": {"reasoning": "hmm", "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}]}'
	local req='{"model": "m", "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": [{"role": "user", "content": "go"}]}'
	[ "$(post /messages "${ANTHROPIC[@]}" <<<"$req")" = 200 ]
	local content use
	content=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["content"]))' "$BATS_TEST_TMPDIR/body")
	use=$(rk_json 'd["content"][1]["id"]' <"$BATS_TEST_TMPDIR/body")
	[ "$(rk_json 'd["content"][0]["type"]' <"$BATS_TEST_TMPDIR/body")" = thinking ]
	local stripped
	stripped=$(python3 -c 'import json,sys; print(json.dumps([b for b in json.loads(sys.argv[1]) if b["type"] != "thinking"]))' "$content")
	next() {
		printf '{"model": "m", "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": %s}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "%s", "content": "x"}]}]}' "$1" "$use"
	}
	[ "$(next "$stripped" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *"thinking_replayed: message 1: tool_use \"$use\" comes back without the thinking block served before it"* ]]
	[ "$(next "$content" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	server_refused thinking_replayed
}

@test "model emulator: streams come in each vendor's event order, in small pieces; a cut stream drops mid-way" {
	scenario '{"steps": [
		{"expect": {"stream": true, "protocol": "messages"}, "reply": {"content": "Hello, streaming world", "tool_calls": [{"name": "shell", "arguments": {"cmd": "echo one two three four"}}]}},
		{"expect": {"stream": true, "protocol": "responses"}, "reply": {"content": "Hi", "tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]}},
		{"expect": {"stream": true, "protocol": "chat"}, "reply": {"content": "Hi"}},
		{"fault": "cut", "reply": {"content": "This answer never ends because the connection drops half-way."}}]}'
	[ "$(post /messages "${ANTHROPIC[@]}" <<<'{"model": "m", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "hi"}]}')" = 200 ]
	sse_events | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ' >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "message_startx1 pingx1 content_block_startx1 content_block_deltax3 content_block_stopx1 content_block_startx1 content_block_deltax5 content_block_stopx1 message_deltax1 message_stopx1 " ]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "stream": true, "input": "hi"}')" = 200 ]
	sse_events | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ' >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "response.createdx1 response.in_progressx1 response.output_item.addedx1 response.content_part.addedx1 response.output_text.deltax1 response.output_text.donex1 response.content_part.donex1 response.output_item.donex1 response.output_item.addedx1 response.function_call_arguments.deltax3 response.function_call_arguments.donex1 response.output_item.donex1 response.completedx1 " ]
	[ "$(post /chat/completions --raw <<<'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}')" = 200 ]
	# chunked in pieces of at most 97 bytes, so events split across reads
	python3 - "$BATS_TEST_TMPDIR/body" <<'PY'
import sys
raw, sizes, body = open(sys.argv[1], "rb").read(), [], b""
while raw:
    line, raw = raw.split(b"\r\n", 1)
    n = int(line, 16)
    sizes.append(n)
    body, raw = body + raw[:n], raw[n + 2:]
assert len(sizes) > 3 and max(sizes) <= 97 and sizes[-1] == 0, sizes
open(sys.argv[1], "wb").write(body)
PY
	[ "$(sse_events | tr '\n' ' ')" = "chat.completion.chunk chat.completion.chunk chat.completion.chunk [DONE] " ]
	# a cut answer: the transfer ends early (curl: 18, partial file)
	local st=0
	curl -sS -o "$BATS_TEST_TMPDIR/body" "${ANTHROPIC[@]}" --data-binary '{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}' "$RAKAZO_MODEL_BASE_URL/messages" 2>/dev/null || st=$?
	[ "$st" -eq 18 ]
	[ -s "$BATS_TEST_TMPDIR/body" ]
	! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$BATS_TEST_TMPDIR/body"
	server_ok
}

@test "model emulator: GET models answers in the shape of whoever asks" {
	scenario '{"steps": [{"reply": {"content": "a"}}]}'
	curl -sS "${ANTHROPIC[@]}" "$RAKAZO_MODEL_BASE_URL/models" >"$BATS_TEST_TMPDIR/body"
	[ "$(rk_json 'd["data"][0]["type"], d["has_more"]' <"$BATS_TEST_TMPDIR/body")" = '["model", false]' ]
	curl -sS "${OPENAI[@]}" "$RAKAZO_MODEL_BASE_URL/models" >"$BATS_TEST_TMPDIR/body"
	[ "$(rk_json 'd["object"], d["data"][0]["id"]' <"$BATS_TEST_TMPDIR/body")" = '["list", "scripted"]' ]
	[ "$(post /responses "${OPENAI[@]}" <<<'{"model": "m", "store": false, "input": "hi"}')" = 200 ]
	server_ok
}

@test "model emulator: an unknown expectation or a cut fault without a reply is a bad scenario (exit 2)" {
	printf '%s\n' '{"steps": [{"expect": {"image_colour": "red"}, "reply": {}}]}' >"$BATS_TEST_TMPDIR/s.json"
	run "$MODEL_SERVER" "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
	[[ $output == *'step 1: unknown expectation "image_colour"'* ]]
	printf '%s\n' '{"steps": [{"fault": "cut"}]}' >"$BATS_TEST_TMPDIR/s.json"
	run "$MODEL_SERVER" "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
	[[ $output == *'step 1: a cut fault needs the "reply" it cuts'* ]]
	printf '%s\n' '{"steps": [{"expect": {"image_size": [1]}, "reply": {}}]}' >"$BATS_TEST_TMPDIR/s.json"
	run "$MODEL_SERVER" "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
	printf '%s\n' '{"steps": [{"fault": "stream_error"}]}' >"$BATS_TEST_TMPDIR/s.json"
	run "$MODEL_SERVER" "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
	[[ $output == *'a stream_error fault needs the "reply" it starts'* ]]
	printf '%s\n' '{"steps": [{"stall_ms": "long", "reply": {}}]}' >"$BATS_TEST_TMPDIR/s.json"
	run "$MODEL_SERVER" "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
	[[ $output == *'stall_ms must be a number of ms'* ]]
}

# A Messages request on claude-sonnet-4-6 (1024 tokens at least to cache):
# the system text $1 then about 1300 tokens of rules, marked for caching
# with ttl $3 ("" for none), then the user's $2.
cached_body() {
	python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
cc = {"type": "ephemeral"}
if sys.argv[3]:
    cc["ttl"] = sys.argv[3]
system = sys.argv[1] + "The house rules, at length. " * 200
print(json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 5,
    "system": [{"type": "text", "text": system, "cache_control": cc}],
    "messages": [{"role": "user", "content": sys.argv[2]}]}))
PY
}

# The last answer's Messages usage: input, cache read, cache creation, then
# the 5m and 1h creations; each answer's three parts must add up to the
# same total for the same prompt, so the total is checked by the caller.
usage_of() {
	rk_json 'd["usage"]["input_tokens"], d["usage"]["cache_read_input_tokens"], d["usage"]["cache_creation_input_tokens"], d["usage"]["cache_creation"]["ephemeral_5m_input_tokens"], d["usage"]["cache_creation"]["ephemeral_1h_input_tokens"]' <"$BATS_TEST_TMPDIR/body"
}

@test "model emulator: Messages caching: a repeat reads the breakpoint's prefix, a changed early block reads nothing" {
	scenario '{"steps": [{"expect": {"cache_breakpoints_min": 1}, "reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}, {"reply": {"content": "e"}}]}'
	[ "$(cached_body "" "Hello there" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	local first written in
	first=$(usage_of)
	in=$(rk_json 'd[0]' <<<"$first")
	written=$(rk_json 'd[2]' <<<"$first")
	[ "$in" -gt 0 ] && [ "$in" -lt 20 ] # the user's text, after the breakpoint
	[ "$written" -ge 1024 ]		    # the system block, written
	[ "$first" = "[$in, 0, $written, $written, 0]" ]
	# the same again: the prefix is read, only the user's text is new input
	[ "$(cached_body "" "Hello there" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of)" = "[$in, $written, 0, 0, 0]" ]
	# another question after the breakpoint still reads it
	[ "$(cached_body "" "And what about the garden, please?" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of | rk_json 'd[0] > '"$in"', d[1:]')" = "[true, [$written, 0, 0, 0]]" ]
	# one early block changed (12 bytes more): nothing to read, a new write
	[ "$(cached_body "Revised now " "Hello there" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of)" = "[$in, 0, $((written + 3)), $((written + 3)), 0]" ]
	# a stream's message_start carries the same split
	cached_body "" "Hello there" | python3 -c 'import json,sys; d=json.load(sys.stdin); d["stream"]=True; print(json.dumps(d))' >"$BATS_TEST_TMPDIR/req"
	[ "$(post /messages "${ANTHROPIC[@]}" <"$BATS_TEST_TMPDIR/req")" = 200 ]
	sed -n 's/^data: //p' "$BATS_TEST_TMPDIR/body" | head -1 | rk_json 'd["message"]["usage"]["input_tokens"], d["message"]["usage"]["cache_read_input_tokens"], d["message"]["usage"]["cache_creation_input_tokens"]' >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "[$in, $written, 0]" ]
	server_ok
	rk_json '[r["cache_breakpoints"] for r in d["requests"]], d["requests"][1]["usage"]["cache_read_input_tokens"]' <"$BATS_TEST_TMPDIR/report.json" >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "[[1, 1, 1, 1, 1], $written]" ]
}

@test "model emulator: Messages refuses cache_control as the API does: a 5th breakpoint, another type, a 1h after a 5m, empty text (400)" {
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}, {"reply": {"content": "e"}}, {"expect": {"cache_breakpoints_min": 2}, "reply": {"content": "f"}}, {"expect": {"cache_breakpoints_min": 2}, "reply": {"content": "g"}}]}'
	blocks() { # $1: the cache_control of each of the user's blocks, as a JSON list
		python3 - "$1" "${2:-}" <<'PY'
import json, sys
body = {"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": [
    dict({"type": "text", "text": "block %d" % i}, **({"cache_control": cc} if cc else {})) for i, cc in enumerate(json.loads(sys.argv[1]))]}]}
if sys.argv[2]:
    body["cache_control"] = json.loads(sys.argv[2])
print(json.dumps(body))
PY
	}
	local e='{"type": "ephemeral"}'
	[ "$(blocks "[$e, $e, $e, $e, $e]" | post /messages "${ANTHROPIC[@]}")" = 400 ]
	[ "$(error_message messages)" = "invalid_request_error A maximum of 4 blocks with cache_control may be provided. Found 5." ]
	# four on blocks and the top-level one, which takes a slot of its own
	[ "$(blocks "[$e, $e, $e, $e, null]" "$e" | post /messages "${ANTHROPIC[@]}")" = 400 ]
	[ "$(error_message messages)" = "invalid_request_error A maximum of 4 blocks with cache_control may be provided. Found 5." ]
	[ "$(blocks '[{"type": "persistent"}]' | post /messages "${ANTHROPIC[@]}")" = 400 ]
	[ "$(error_message messages)" = "invalid_request_error messages.0.content.0.cache_control.type: Input should be 'ephemeral'" ]
	[ "$(blocks '[{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]' | post /messages "${ANTHROPIC[@]}")" = 400 ]
	[ "$(error_message messages)" = "invalid_request_error messages.0.content.1.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block." ]
	[ "$(post /messages "${ANTHROPIC[@]}" <<<'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}]}]}')" = 400 ]
	[ "$(error_message messages)" = "invalid_request_error messages.0.content.0.text: cache_control cannot be set for empty text blocks" ]
	# fewer breakpoints than the step wants: the emulator's own check (500)
	[ "$(blocks "[$e]" | post /messages "${ANTHROPIC[@]}")" = 500 ]
	[[ $(error_message messages) == *"step 6: assertion failed: cache_breakpoints_min: 1 cache_control breakpoints, wanted at least 2"* ]]
	# 1h then 5m is fine, and the top-level one counts
	[ "$(blocks '[{"type": "ephemeral", "ttl": "1h"}, null]' "$e" | post /messages "${ANTHROPIC[@]}")" = 200 ]
	server_refused cache_control cache_control cache_control cache_control cache_control cache_breakpoints_min
	rk_json '[(r["action"], r["status"], r["cache_breakpoints"]) for r in d["requests"][:5]]' <"$BATS_TEST_TMPDIR/report.json" >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = '[["refused", 400, 5], ["refused", 400, 5], ["refused", 400, 0], ["refused", 400, 2], ["refused", 400, 1]]' ]
}

@test "model emulator: Messages caching splits 1h and 5m writes, and below the model's minimum caches nothing" {
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}]}'
	# a 1h breakpoint on a long tool, a 5m one on the long system text
	python3 - <<'PY' >"$BATS_TEST_TMPDIR/req"
import json
tool = {"name": "rules", "description": "Look the rules up. " * 250, "input_schema": {"type": "object"},
        "cache_control": {"type": "ephemeral", "ttl": "1h"}}
print(json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 5, "tools": [tool],
    "system": [{"type": "text", "text": "The house rules, at length. " * 200, "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "hi"}]}))
PY
	[ "$(post /messages "${ANTHROPIC[@]}" <"$BATS_TEST_TMPDIR/req")" = 200 ]
	python3 - "$BATS_TEST_TMPDIR/body" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]
c = u["cache_creation"]
assert u["cache_read_input_tokens"] == 0 and 0 < u["input_tokens"] < 20, u
assert c["ephemeral_1h_input_tokens"] >= 1024 and c["ephemeral_5m_input_tokens"] >= 1024, u
assert u["cache_creation_input_tokens"] == c["ephemeral_1h_input_tokens"] + c["ephemeral_5m_input_tokens"], u
PY
	# claude-opus-4-6 caches 4096 tokens and more: the same prompt is too short
	sed 's/claude-sonnet-4-6/claude-opus-4-6/' "$BATS_TEST_TMPDIR/req" >"$BATS_TEST_TMPDIR/opus"
	[ "$(post /messages "${ANTHROPIC[@]}" <"$BATS_TEST_TMPDIR/opus")" = 200 ]
	[ "$(usage_of | rk_json 'd[1:3]')" = "[0, 0]" ]
	[ "$(post /messages "${ANTHROPIC[@]}" <"$BATS_TEST_TMPDIR/opus")" = 200 ]
	[ "$(usage_of | rk_json 'd[1:3]')" = "[0, 0]" ]
	server_ok
}

@test "model emulator: the lookback checks 20 positions from a breakpoint; a run of tool_use or tool_result blocks is one" {
	scenario '{"steps": [{"reply": {"content": "a"}}, {"reply": {"content": "b"}}, {"reply": {"content": "c"}}, {"reply": {"content": "d"}}]}'
	# system (position 1), then user blocks 0..N-1 (positions 2..N+1), the
	# breakpoint on the last; "tools": an assistant turn of 24 tool_use
	# blocks and a user turn of their 24 results after block 4.
	convo() {
		python3 - "$1" "${2:-}" <<'PY'
import json, sys
n, tools = int(sys.argv[1]), sys.argv[2] == "tools"
blocks = [{"type": "text", "text": "note %d" % i} for i in range(n)]
msgs = [{"role": "user", "content": blocks}]
if tools:
    uses = [{"type": "tool_use", "id": "toolu_%02d" % i, "name": "shell", "input": {"cmd": "true"}} for i in range(24)]
    results = [{"type": "tool_result", "tool_use_id": "toolu_%02d" % i, "content": "ok"} for i in range(24)]
    msgs += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
msgs[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
print(json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 5,
    "system": [{"type": "text", "text": "The house rules, at length. " * 200}], "messages": msgs}))
PY
	}
	[ "$(convo 5 | post /messages "${ANTHROPIC[@]}")" = 200 ] # writes at position 6
	local written
	written=$(usage_of | rk_json 'd[2]')
	[ "$written" -ge 1024 ]
	# a breakpoint at position 26 checks 26..7: the write at 6 is one too far
	[ "$(convo 25 | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of | rk_json 'd[1]')" = 0 ]
	# at position 25 it checks 25..6 and reads it
	[ "$(convo 24 | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of | rk_json 'd[1]')" = "$written" ]
	# 48 blocks of tool calls and results after position 6 are two positions
	[ "$(convo 5 tools | post /messages "${ANTHROPIC[@]}")" = 200 ]
	[ "$(usage_of | rk_json 'd[1]')" = "$written" ]
	server_ok
}

@test "model emulator: Responses and chat cache by themselves: a repeat reads in 128-token steps from 1024, per prompt_cache_key" {
	scenario '{"steps": [
		{"expect": {"prompt_cache_key": "a"}, "reply": {"content": "a"}}, {"expect": {"prompt_cache_key": true}, "reply": {"content": "b"}},
		{"reply": {"content": "c"}}, {"expect": {"prompt_cache_key": false}, "reply": {"content": "d"}}, {"reply": {"content": "e"}},
		{"reply": {"content": "f"}}, {"reply": {"content": "g"}}, {"reply": {"content": "h"}}]}'
	responses() { # $1: the prompt_cache_key as JSON (null: none), $2: the instructions' repeats
		printf '{"model": "gpt-5.5", "store": false, "prompt_cache_key": %s, "instructions": "%s", "input": "hi"}' "$1" "$(printf 'The house rules, at length. %.0s' $(seq "$2"))"
	}
	cached() {
		rk_json 'd["usage"]["input_tokens"], d["usage"]["input_tokens_details"]["cached_tokens"]' <"$BATS_TEST_TMPDIR/body"
	}
	[ "$(responses '"a"' 200 | post /responses "${OPENAI[@]}")" = 200 ]
	local total
	total=$(cached | rk_json 'd[0]')
	[ "$total" -ge 1024 ]
	[ "$(cached)" = "[$total, 0]" ]
	[ "$(responses '"a"' 200 | post /responses "${OPENAI[@]}")" = 200 ]
	python3 - "$(cached)" <<'PY'
import json, sys
total, got = json.loads(sys.argv[1])
assert got >= 1024 and (got - 1024) % 128 == 0 and total - 128 < got <= total, (total, got)
PY
	# another key, another cache
	[ "$(responses '"b"' 200 | post /responses "${OPENAI[@]}")" = 200 ]
	[ "$(cached)" = "[$total, 0]" ]
	# below 1024 tokens nothing is cached, however often it comes
	[ "$(responses null 20 | post /responses "${OPENAI[@]}")" = 200 ]
	[ "$(responses null 20 | post /responses "${OPENAI[@]}")" = 200 ]
	[ "$(cached | rk_json 'd[1]')" = 0 ]
	[ "$(responses '{"a": 1}' 20 | post /responses "${OPENAI[@]}")" = 400 ]
	rk_json 'd["error"]' <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "{\"message\": \"Invalid type for 'prompt_cache_key': expected a string, but got an object instead.\", \"type\": \"invalid_request_error\", \"param\": \"prompt_cache_key\", \"code\": \"invalid_type\"}" ]
	# chat the same, in prompt_tokens_details
	chat() {
		printf '{"model": "gpt-5.5", "prompt_cache_key": "c", "messages": [{"role": "system", "content": "%s"}, {"role": "user", "content": "hi"}]}' "$(printf 'The house rules, at length. %.0s' $(seq 200))"
	}
	[ "$(chat | post /chat/completions "${OPENAI[@]}")" = 200 ]
	[ "$(rk_json 'd["usage"]["prompt_tokens_details"]["cached_tokens"]' <"$BATS_TEST_TMPDIR/body")" = 0 ]
	[ "$(chat | post /chat/completions "${OPENAI[@]}")" = 200 ]
	python3 - "$BATS_TEST_TMPDIR/body" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]
got = u["prompt_tokens_details"]["cached_tokens"]
assert got >= 1024 and (got - 1024) % 128 == 0 and u["prompt_tokens"] - 128 < got <= u["prompt_tokens"], u
PY
	server_refused prompt_cache_key
}

@test "model emulator: Files API in each vendor's shape; images by file_id are checked and cost as inline; deleted ids are refused" {
	png_b64 64 40 | base64 -d >"$BATS_TEST_TMPDIR/shot.png"
	scenario '{"steps": [
		{"expect": {"image_size": [64, 40], "image_media_type": "image/png", "tool_result_has_image": true}, "reply": {"content": "a"}},
		{"expect": {"image_size": [64, 40]}, "reply": {"content": "b"}},
		{"reply": {"content": "never sent: a deleted file"}},
		{"reply": {"content": "never sent: a deleted file"}}]}'
	local base=$RAKAZO_MODEL_BASE_URL files=(-H 'anthropic-beta: files-api-2025-04-14')
	upload() { curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' "$@"; }
	# Anthropic: the beta is required, then file_... metadata
	[ "$(upload "${ANTHROPIC[@]}" -F "file=@$BATS_TEST_TMPDIR/shot.png;type=image/png" "$base/files")" = 400 ]
	[[ $(error_message messages) == *'files-api-2025-04-14'* ]]
	[ "$(upload "${ANTHROPIC[@]}" "${files[@]}" -F "file=@$BATS_TEST_TMPDIR/shot.png;type=image/png" "$base/files")" = 200 ]
	local aid
	aid=$(rk_json 'd["id"]' <"$BATS_TEST_TMPDIR/body")
	rk_json 'd["type"], d["mime_type"], d["filename"], d["size_bytes"]' <"$BATS_TEST_TMPDIR/body" >"$BATS_TEST_TMPDIR/got"
	[ "$(cat "$BATS_TEST_TMPDIR/got")" = "[\"file\", \"image/png\", \"shot.png\", $(stat -c %s "$BATS_TEST_TMPDIR/shot.png")]" ]
	# OpenAI: a purpose is required, then file-... metadata
	[ "$(upload "${OPENAI[@]}" -F "file=@$BATS_TEST_TMPDIR/shot.png;type=image/png" "$base/files")" = 400 ]
	[ "$(rk_json 'd["error"]["param"]' <"$BATS_TEST_TMPDIR/body")" = purpose ]
	[ "$(upload "${OPENAI[@]}" -F purpose=vision -F "file=@$BATS_TEST_TMPDIR/shot.png;type=image/png" "$base/files")" = 200 ]
	local oid
	oid=$(rk_json 'd["id"]' <"$BATS_TEST_TMPDIR/body")
	[[ $oid == file-* ]]
	# a Messages tool result whose image is the file: checked, and as many tokens as inline
	msg() {
		printf '{"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "image", "source": %s}]}]}]}' "$1"
	}
	[ "$(msg "{\"type\": \"file\", \"file_id\": \"$aid\"}" | post /messages "${ANTHROPIC[@]}" "${files[@]}")" = 200 ]
	local by_id
	by_id=$(rk_json 'd["usage"]["input_tokens"]' <"$BATS_TEST_TMPDIR/body")
	# a Responses computer_call_output whose screenshot is the file
	printf '{"model": "m", "store": false, "input": [{"type": "computer_call", "call_id": "c1", "id": "cu_1", "actions": [], "pending_safety_checks": [], "status": "completed"}, {"type": "computer_call_output", "call_id": "c1", "output": {"type": "computer_screenshot", "file_id": "%s"}}]}' "$oid" |
		post /responses "${OPENAI[@]}" >/dev/null
	# deleted: GET and DELETE say 404, a request that refers to it is refused as each vendor does
	[ "$(curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' -X DELETE "${ANTHROPIC[@]}" "${files[@]}" "$base/files/$aid")" = 200 ]
	[ "$(rk_json 'd["type"]' <"$BATS_TEST_TMPDIR/body")" = file_deleted ]
	[ "$(curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' -X DELETE "${OPENAI[@]}" "$base/files/$oid")" = 200 ]
	[ "$(rk_json 'd["deleted"]' <"$BATS_TEST_TMPDIR/body")" = true ]
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "${OPENAI[@]}" "$base/files/$oid")" = 404 ]
	[ "$(msg "{\"type\": \"file\", \"file_id\": \"$aid\"}" | post /messages "${ANTHROPIC[@]}" "${files[@]}")" = 404 ]
	[ "$(error_message messages)" = "not_found_error File not found: $aid" ]
	printf '{"model": "m", "store": false, "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "%s", "detail": "auto"}]}]}' "$oid" |
		post /responses "${OPENAI[@]}" >/dev/null || true
	[ "$(rk_json 'd["error"]["type"], d["error"]["param"]' <"$BATS_TEST_TMPDIR/body")" = '["invalid_request_error", "input[0].content"]' ]
	server_refused file_id file_id
	python3 - "$BATS_TEST_TMPDIR/report.json" "$by_id" "$BATS_TEST_TMPDIR/shot.png" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
f = d["files"]
assert f == {"uploaded": 2, "uploaded_bytes": 2 * os.path.getsize(sys.argv[3]), "deleted": 2, "live": 0,
             "duplicate_uploads": 1, "referenced": 2}, f
r = d["requests"]
assert [(x["file_images"], x["inline_images"]) for x in r] == [(1, 0), (1, 0), (0, 0), (0, 0)], r
assert r[1]["last_image"] == {"media_type": "image/png", "width": 64, "height": 40}, r[1]
assert [x["status"] for x in r] == [200, 200, 404, 400], r
# a 64x40 image costs ceil(64*40/750) = 4 tokens by id as inline
assert int(sys.argv[2]) >= 4, sys.argv[2]
PY
	# an endpoint without the API
	scenario '{"files_api": false, "steps": [{"reply": {"content": "a"}}]}'
	[ "$(upload "${OPENAI[@]}" -F purpose=vision -F "file=@$BATS_TEST_TMPDIR/shot.png;type=image/png" "$RAKAZO_MODEL_BASE_URL/files")" = 404 ]
	printf '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}' | post /chat/completions >/dev/null
	server_ok
}
