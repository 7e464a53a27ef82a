#!/usr/bin/env bats
# rakazo run with the vendors' native computer tools (issue 22): the
# Messages and Responses protocols against tests/emulators/model_server,
# whose expectations check what was sent (the tool's type and declared
# size, the beta header, the screenshot's size and type); then the screen
# says where the model's click landed. The fake display draws a red 10x10
# marker centred on each left click, so a click aimed at a 6-pixel target
# must put the marker's centre within 3 pixels of it, at every size.

load helper
load model

teardown() {
	stop_server
	rk_kill_all
}

# The marker's centre on a full-size screenshot: "X Y" of the red pixels'
# bounding box centre, or nothing.
red_centre() {
	convert "$1" rgb:- | python3 -c '
import sys
w, h = int(sys.argv[1]), int(sys.argv[2])
d = sys.stdin.buffer.read()
xs, ys = [], []
for i in range(0, len(d), 3):
    if d[i] > 200 and d[i + 1] < 60 and d[i + 2] < 60:
        p = i // 3
        xs.append(p % w); ys.append(p // w)
if xs:
    print((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
' "$2" "$3"
}

# native_click PROTOCOL MODEL TYPE SCREEN_W SCREEN_H DISPLAY_W DISPLAY_H TARGET_X TARGET_Y
# A fake computer with that screen; the scripted model (which must be told
# the size the tool declares) clicks the model-space pixel over the target.
native_click() {
	local api=$1 model=$2 type=$3 sw=$4 sh=$5 dw=$6 dh=$7 tx=$8 ty=$9
	rk computer create --provider fake --name t --screen "${sw}x${sh}" --wait --json >/dev/null
	python3 - "$BATS_TEST_TMPDIR/scenario.json" "$api" "$type" "$sw" "$sh" "$dw" "$dh" "$tx" "$ty" <<'PY'
import json, sys
out, api, typ = sys.argv[1:4]
sw, sh, dw, dh, tx, ty = map(int, sys.argv[4:10])
# the model's pixel whose centre lies over the target's
mx, my = (2 * tx + 1) * dw // (2 * sw), (2 * ty + 1) * dh // (2 * sh)
first = {"protocol": api, "native_tool_type": typ, "image_count_max": 0}
if typ != "computer":  # the GA Responses tool declares no size: its screenshots say it
    first.update({"display_width": dw, "display_height": dh})
if api == "messages":
    first["anthropic_beta_includes"] = {"computer_20250124": "computer-use-2025-01-24",
                                        "computer_20251124": "computer-use-2025-11-24"}[typ]
    call = {"name": "computer", "arguments": {"action": "left_click", "coordinate": [mx, my]}}
elif typ == "computer":
    call = {"name": "computer", "arguments": {"actions": [{"type": "click", "button": "left", "x": mx, "y": my}]}}
else:
    call = {"name": "computer", "arguments": {"action": {"type": "click", "button": "left", "x": mx, "y": my}}}
steps = [
    {"expect": first, "reply": {"content": "Clicking the target.", "tool_calls": [call]}},
    {"expect": dict({"protocol": api, "tool_result_has_image": True, "image_media_type": "image/jpeg",
                     "image_size": [dw, dh]}, **({} if typ == "computer" else {"image_matches_display": True})),
     "reply": {"content": "Clicked."}},
]
json.dump({"steps": steps}, open(out, "w"))
PY
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	ANTHROPIC_API_KEY=test-anthropic-key OPENAI_API_KEY=test-openai-key \
		rk run --computer t --api "$api" --base-url "$RAKAZO_MODEL_BASE_URL" --model "$model" --json \
		"click the target" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err" || {
		cat "$BATS_TEST_TMPDIR/err" >&2
		stop_server || true
		cat "$BATS_TEST_TMPDIR/report.json" >&2 2>/dev/null
		return 1
	}
	server_ok
	grep -q '"type":"run.computer_tool"' "$BATS_TEST_TMPDIR/events"
	rk screen shot t -o "$BATS_TEST_TMPDIR/full.png"
	[ "$(png_size "$BATS_TEST_TMPDIR/full.png")" = "${sw}x${sh}" ]
	local c
	c=$(red_centre "$BATS_TEST_TMPDIR/full.png" "$sw" "$sh")
	echo "target $tx,$ty: marker centred at $c" >&2
	[ -n "$c" ]
	python3 -c 'import sys; x, y, tx, ty = map(float, sys.argv[1:]); assert abs(x - tx) <= 3 and abs(y - ty) <= 3' $c "$tx" "$ty"
	rk computer delete t --wait >/dev/null
}

@test "native: Messages, computer_20250124 at 1366x768 (not scaled): the click lands on a 6-pixel target" {
	native_click messages claude-sonnet-4-5 computer_20250124 1366 768 1366 768 977 433
}

@test "native: Messages at 1920x1080 (shown at 1430x804): the click lands on a 6-pixel target" {
	native_click messages claude-sonnet-4-5 computer_20250124 1920 1080 1430 804 1337 611
}

@test "native: Messages, computer_20251124 at 2560x1440 (shown at 1430x804): the click lands" {
	native_click messages claude-opus-4-6 computer_20251124 2560 1440 1430 804 2011 1283
}

@test "native: Responses, the GA computer tool at 1366x768: the click lands on a 6-pixel target" {
	native_click responses gpt-5.1 computer 1366 768 1366 768 977 433
}

@test "native: Responses at 1920x1080 (shown at 1365x768): the click lands on a 6-pixel target" {
	native_click responses gpt-5.1 computer 1920 1080 1365 768 1337 611
}

@test "native: Responses, computer_use_preview at 2560x1440 (shown at 1024x576): the click lands" {
	native_click responses computer-use-preview computer_use_preview 2560 1440 1024 576 2011 1283
}

# native_files PROTOCOL MODEL TYPE [FILES_API]
# Nine clicks on a fake computer, each moving the red marker, so each of the
# nine screenshots is a new frame; the defaults keep 2 and drop 4 at a time.
# With the emulator's Files API (FILES_API true, the default) every frame is
# uploaded once and the requests refer to it by id; without it (false)
# uploads are given up and the frames go inline. The report is left in
# $BATS_TEST_TMPDIR/report.json.
native_files() {
	local api=$1 model=$2 type=$3 files=${4:-true}
	rk computer create --provider fake --name t --screen 1280x800 --wait --json >/dev/null
	python3 - "$BATS_TEST_TMPDIR/scenario.json" "$api" "$type" "$files" <<'PY'
import json, sys
out, api, typ, files = sys.argv[1:5]
beta = {"computer_20250124": "computer-use-2025-01-24"}.get(typ)
steps = []
for i in range(10):
    expect = {"protocol": api}
    if i:
        expect["tool_result_has_image"] = True
    if i and api == "messages" and files == "true":
        expect["anthropic_beta_includes"] = [beta, "files-api-2025-04-14"]
    if i == 9:
        steps.append({"expect": expect, "reply": {"content": "Nine clicks."}})
        break
    x, y = 100 + 90 * i, 200 + 40 * i
    if api == "messages":
        args = {"action": "left_click", "coordinate": [x, y]}
    else:
        args = {"actions": [{"type": "click", "button": "left", "x": x, "y": y}]}
    steps.append({"expect": expect, "reply": {"content": "Click %d." % (i + 1),
                                              "tool_calls": [{"name": "computer", "arguments": args}]}})
json.dump({"steps": steps, "files_api": files == "true"}, open(out, "w"))
PY
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	ANTHROPIC_API_KEY=test-anthropic-key OPENAI_API_KEY=test-openai-key \
		rk run --computer t --api "$api" --base-url "$RAKAZO_MODEL_BASE_URL" --model "$model" --json \
		"click nine times" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err" || {
		cat "$BATS_TEST_TMPDIR/err" >&2
		stop_server || true
		cat "$BATS_TEST_TMPDIR/report.json" >&2 2>/dev/null
		return 1
	}
	server_ok
	grep -q '"state":"completed"' "$BATS_TEST_TMPDIR/events"
	rk computer delete t --wait >/dev/null
}

# The report of a native_files run with the Files API: nine frames
# uploaded once each, every image sent by id, the pruned ones deleted
# mid-run (live files drop), the rest at the end. With $1 "placeholder"
# (Responses) inline images may be the 1x1 placeholder a computer_call_output
# of a pruned frame carries, and nothing bigger.
files_report_ok() {
	python3 - "$BATS_TEST_TMPDIR/report.json" "${1:-}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f, reqs = d["files"], d["requests"]
print("files:", f, "live per request:", [r["files_live"] for r in reqs], file=sys.stderr)
assert f["uploaded"] == 9 and f["duplicate_uploads"] == 0, f
# inline only Responses' 1x1 placeholder: a computer_call_output whose frame was pruned
assert all(r["inline_image_chars"] <= 100 * r["inline_images"] for r in reqs), reqs[-1]
assert sum(r["inline_images"] for r in reqs) == 0 or "placeholder" == sys.argv[2], reqs[-1]
assert sum(r["file_images"] for r in reqs) == f["referenced"] > 9, f
assert max(r["file_images"] for r in reqs) <= 6, [r["file_images"] for r in reqs]
live = [r["files_live"] for r in reqs]
assert max(live) <= 7 and any(b < a for a, b in zip(live, live[1:])), live
assert f["deleted"] == 9 and f["live"] == 0, f
PY
}

@test "native files: Messages uploads each new frame once, sends it by id, deletes the pruned and the rest at the end" {
	native_files messages claude-sonnet-4-5 computer_20250124
	files_report_ok
}

@test "native files: Responses uploads each new frame once, sends it by id, deletes the pruned and the rest at the end" {
	native_files responses gpt-5.1 computer
	files_report_ok placeholder
}

@test "native files: an endpoint without a Files API gets the frames inline, the run completes, said once in the log" {
	native_files messages claude-sonnet-4-5 computer_20250124 false
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f, reqs = d["files"], d["requests"]
assert f["uploaded"] == 0 and f["referenced"] == 0, f
assert all(r["file_images"] == 0 for r in reqs) and sum(r["inline_images"] for r in reqs) > 9, reqs
PY
	[ "$(grep -c 'has no Files API' "$RAKAZO_DATA_DIR/log/rakazo.log")" -eq 1 ]
	# upload_images false in the config file: not even tried
	printf '{"model": {"upload_images": false}}\n' >"$BATS_TEST_TMPDIR/config.json"
	: >"$RAKAZO_DATA_DIR/log/rakazo.log"
	RAKAZO_CONFIG=$BATS_TEST_TMPDIR/config.json native_files responses gpt-5.1 computer
	python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["files"]; assert f["uploaded"] == 0, f' \
		"$BATS_TEST_TMPDIR/report.json"
	! grep -q 'Files API\|/files' "$RAKAZO_DATA_DIR/log/rakazo.log"
	printf '{"model": {"upload_images": "sometimes"}}\n' >"$BATS_TEST_TMPDIR/config.json"
	RAKAZO_CONFIG=$BATS_TEST_TMPDIR/config.json run rk run --computer t --api messages --model claude-sonnet-4-5 \
		--base-url http://127.0.0.1:9/v1 "x"
	[ "$status" -ne 0 ]
	[[ $output == *'upload_images must be true, false or "auto"'* ]]
}

@test "native: --screen out of range, an unknown --api and a native tool on chat are refused" {
	run rk computer create --provider fake --name small --screen 320x200 --json
	[ "$status" -eq 2 ]
	[[ $output == *"options.screen must be WIDTHxHEIGHT from 640x480 to 3840x2160"* ]]
	run rk computer create --provider fake --name odd --options '{"screen":"wide"}' --json
	[ "$status" -eq 2 ]
	rk_fake t
	run rk run --computer t --api bogus --model m "x"
	[ "$status" -eq 2 ]
	[[ $output == *"unknown model API 'bogus' from --api: use chat, messages or responses"* ]]
	RAKAZO_COMPUTER_TOOL=computer_20250124 run rk run --computer t --api chat --base-url http://127.0.0.1:9/v1 \
		--model m "x"
	[ "$status" -eq 2 ]
	[[ $output == *"RAKAZO_COMPUTER_TOOL: the chat API has no native computer tool (use none)"* ]]
}

@test "native: doctor checks the configured model: reachable, key, computer tool; a dead endpoint fails" {
	"$MODEL_SERVER" "$SCENARIOS/basic.json" --keep-running >"$BATS_TEST_TMPDIR/server.out" 2>/dev/null 3>&- 4>&- &
	SERVER_PID=$!
	wait_for "grep -q '^listening on ' '$BATS_TEST_TMPDIR/server.out'" 10
	local url
	url=$(sed -n 's|^listening on \(http://127.0.0.1:[0-9]*\)$|\1|p' "$BATS_TEST_TMPDIR/server.out")/v1
	# (other checks may fail here: only the model's is read)
	RAKAZO_MODEL=claude-opus-4-6 RAKAZO_MODEL_API=messages RAKAZO_MODEL_BASE_URL=$url ANTHROPIC_API_KEY=k \
		rk doctor --json >"$BATS_TEST_TMPDIR/doctor" 2>/dev/null || true
	rk_json <"$BATS_TEST_TMPDIR/doctor" '[c for c in d["checks"] if c["check"] == "model"][0]' >"$BATS_TEST_TMPDIR/check"
	grep -q '"status": *"ok"' "$BATS_TEST_TMPDIR/check"
	grep -q 'over messages, key from ANTHROPIC_API_KEY: reachable, key accepted' "$BATS_TEST_TMPDIR/check"
	grep -q 'computer tool: computer_20251124' "$BATS_TEST_TMPDIR/check"
	# the key is never shown
	! grep -q '"k"' "$BATS_TEST_TMPDIR/check"
	local st=0
	RAKAZO_MODEL=gpt-5.1 RAKAZO_MODEL_API=responses RAKAZO_MODEL_BASE_URL=http://127.0.0.1:9/v1 OPENAI_API_KEY=k \
		rk doctor --json 2>/dev/null >"$BATS_TEST_TMPDIR/doctor" || st=$?
	[ "$st" -eq 1 ]
	rk_json <"$BATS_TEST_TMPDIR/doctor" '[c for c in d["checks"] if c["check"] == "model"][0]["status"]' | grep -qx fail
}

# native_e2e PROTOCOL MODEL: on a docker computer of 1600x900 (scaled for
# both vendors), the scripted model runs a shell command, clicks a 6x6
# button found on the screen, types Unicode into the field the click
# opened, and answers; the page's title proves the click and the text.
native_e2e() {
	local api=$1 model=$2
	docker_or_skip
	rk computer create --provider docker --name e2e --screen 1600x900 --wait --timeout 180 --json >/dev/null
	cat >"$BATS_TEST_TMPDIR/page.html" <<'HTML'
<!doctype html><html><head><meta charset="utf-8"><title>waiting</title>
<style>body{margin:0;background:#fff} #b{position:absolute;left:613px;top:287px;width:6px;height:6px;
background:#f0f;border:0;padding:0} #t{position:absolute;left:40px;top:40px;width:400px;display:none}</style>
</head><body><button id="b" onclick="var t=document.getElementById('t');t.style.display='block';t.focus();document.title='clicked'"></button>
<input id="t" oninput="document.title='typed:'+this.value"></body></html>
HTML
	rk computer file write e2e page.html "$BATS_TEST_TMPDIR/page.html" >/dev/null
	rk browser navigate e2e "file:///home/user/rakazo-home/page.html" >/dev/null
	rk screen shot e2e -o "$BATS_TEST_TMPDIR/full.png"
	local c
	c=$(convert "$BATS_TEST_TMPDIR/full.png" rgb:- | python3 -c '
import sys
w = 1600
d = sys.stdin.buffer.read()
xs, ys = [], []
for i in range(0, len(d), 3):
    if d[i] > 220 and d[i + 1] < 40 and d[i + 2] > 220:
        p = i // 3
        xs.append(p % w); ys.append(p // w)
assert xs and max(xs) - min(xs) <= 6 and max(ys) - min(ys) <= 6, (len(xs),)
print((min(xs) + max(xs)) // 2, (min(ys) + max(ys)) // 2)
')
	[ -n "$c" ]
	python3 - "$BATS_TEST_TMPDIR/scenario.json" "$api" $c <<'PY'
import json, sys
out, api = sys.argv[1:3]
sx, sy = int(sys.argv[3]), int(sys.argv[4])
dw, dh = (1430, 804) if api == "messages" else (1365, 768)
mx, my = (2 * sx + 1) * dw // (2 * 1600), (2 * sy + 1) * dh // (2 * 900)
text = "héllo ✓ 日本"
if api == "messages":
    click = {"action": "left_click", "coordinate": [mx, my]}
    typ = {"action": "type", "text": text}
    wait = {"action": "wait", "duration": 1}
else:
    click = {"actions": [{"type": "click", "button": "left", "x": mx, "y": my}]}
    typ = {"actions": [{"type": "type", "text": text}]}
    wait = {"actions": [{"type": "wait"}]}
steps = [
    {"expect": {"protocol": api, "tools_include": ["computer", "shell"]},
     "reply": {"content": "First the shell.", "tool_calls": [{"name": "shell", "arguments": {"command": "echo e2e-$((6*7))"}}]}},
    {"expect": {"last_tool_result_contains": "e2e-42"},
     "reply": {"content": "Now the button.", "tool_calls": [{"name": "computer", "arguments": click}]}},
    {"expect": {"tool_result_has_image": True, "image_size": [dw, dh]},
     "reply": {"content": "Typing.", "tool_calls": [{"name": "computer", "arguments": typ}]}},
    # a wait, then a look: the page's title follows the typing a little later
    {"expect": {"tool_result_has_image": True},
     "reply": {"content": "Waiting for the page.", "tool_calls": [{"name": "computer", "arguments": wait}]}},
    # (an unchanged screen after the wait is sent as a note on Messages, an
    # image on Responses, whose computer_call_output must be one)
    {"expect": {"tool_result_has_image": api == "responses"},
     "reply": {"content": "Clicked the button and typed the text."}},
]
json.dump({"steps": steps}, open(out, "w"))
PY
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	ANTHROPIC_API_KEY=k OPENAI_API_KEY=k rk run --computer e2e --api "$api" --base-url "$RAKAZO_MODEL_BASE_URL" \
		--model "$model" --json "click the button and type" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err" || {
		cat "$BATS_TEST_TMPDIR/err" >&2
		stop_server || true
		cat "$BATS_TEST_TMPDIR/report.json" >&2 2>/dev/null
		return 1
	}
	server_ok
	# the page's title, as a screenshot's window says it after the wait (the
	# run's end checkpoint quiesces the browser, so a later look shows a
	# reloaded page); the field takes text only once the button was clicked
	grep -q '"title\\":\\"typed:héllo ✓ 日本 - Chromium\\"' "$BATS_TEST_TMPDIR/events" || {
		cat "$BATS_TEST_TMPDIR/events" >&2
		false
	}
	# the run's history shows every step: the shell call, the computer calls, the answer
	local run
	run=$(rk run list --json | rk_json 'd[0]["id"]')
	rk run logs "$run" --json >"$BATS_TEST_TMPDIR/logs"
	[ "$(grep -c '"type":"tool.call"' "$BATS_TEST_TMPDIR/logs")" -eq 4 ]
	[ "$(grep -c '"type":"tool.result"' "$BATS_TEST_TMPDIR/logs")" -eq 4 ]
	grep -q '"type":"run.computer_tool"' "$BATS_TEST_TMPDIR/logs"
	grep -q 'Clicked the button and typed the text.' "$BATS_TEST_TMPDIR/logs"
	rk computer delete e2e --wait --timeout 120 >/dev/null
}

@test "native e2e: Messages on docker at 1600x900: shell, a 6-pixel button, Unicode, the answer" {
	native_e2e messages claude-sonnet-4-5
}

@test "native e2e: Responses on docker at 1600x900: shell, a 6-pixel button, Unicode, the answer" {
	native_e2e responses gpt-5.1
}

@test "native: a computer call the vendor flagged waits for a person; deny, then approve acknowledges it" {
	rk_fake t
	cat >"$BATS_TEST_TMPDIR/scenario.json" <<'JSON'
{"steps": [
  {"reply": {"content": "Clicking.", "tool_calls": [{"name": "computer", "arguments": {
     "actions": [{"type": "click", "button": "left", "x": 100, "y": 100}],
     "pending_safety_checks": [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page may be hostile."}]}}]}},
  {"expect": {"messages_contain": "denied computer: not that", "acknowledged_safety_checks": []},
   "reply": {"content": "Again.", "tool_calls": [{"name": "computer", "arguments": {
     "actions": [{"type": "click", "button": "left", "x": 200, "y": 100}],
     "pending_safety_checks": [{"id": "cu_sc_2", "code": "irrelevant_domain", "message": "Off task?"}]}}]}},
  {"expect": {"acknowledged_safety_checks": ["cu_sc_2"], "tool_result_has_image": true},
   "reply": {"content": "Done."}}]}
JSON
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	OPENAI_API_KEY=k rk run --computer t --api responses --base-url "$RAKAZO_MODEL_BASE_URL" --model gpt-5.1 --json \
		"click" >"$BATS_TEST_TMPDIR/run.out" 2>&1 &
	local pid=$! run_id
	wait_for "rk run list --json | grep -q waiting_approval" 30
	run_id=$(rk run list --json | rk_json 'd[0]["id"]')
	# a person sees the vendor's check with the call
	rk approval pending --json >"$BATS_TEST_TMPDIR/pending"
	grep -q 'malicious_instructions' "$BATS_TEST_TMPDIR/pending"
	grep -q 'the model.s vendor flagged this computer call' "$BATS_TEST_TMPDIR/pending"
	rk run deny "$run_id" --note "not that" --json >/dev/null
	wait_for "rk approval pending --json | grep -q cu_sc_2" 30 || { cat "$BATS_TEST_TMPDIR/run.out" >&2; stop_server || true; cat "$BATS_TEST_TMPDIR/report.json" >&2; false; }
	rk run approve "$run_id" --json >/dev/null
	wait "$pid"
	server_ok
	[ "$(rk run show "$run_id" --json | rk_json 'd["state"]')" = completed ]
	# only the approved click happened: one marker, where the model's (200,100)
	# of the 1229x768 image it is shown lies on the 1280x800 screen
	rk screen shot t -o "$BATS_TEST_TMPDIR/s.png"
	local c
	c=$(red_centre "$BATS_TEST_TMPDIR/s.png" 1280 800)
	echo "marker at $c" >&2
	python3 -c 'import sys; x, y = map(float, sys.argv[1:]); assert abs(x - 200.5 * 1280 / 1229) <= 2 and abs(y - 100.5 * 800 / 768) <= 2' $c
}
