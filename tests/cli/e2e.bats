#!/usr/bin/env bats
# The acceptance test of `rakazo run` (issue 7), offline: a docker computer
# with networking off serves tests/fixtures/pages on 127.0.0.1:8000 inside
# it. marker.html has one button with a fixed layout (it fills the page
# below y=120); a click makes the server write pages/marker.txt. The scripted
# model (scenario run_e2e.json) opens the page, observes, clicks the button
# at a point of that layout, checks the marker with shell and writes a note
# with write_file. The test checks the marker and the recorded tool calls,
# removes the container through the Docker API, has the stale provider ref
# replaced by a new container, and reads the model's file back.
#
# Skips when docker is down (fails with RAKAZO_REQUIRE_DOCKER=1). The
# opt-in variant runs the same task with a real vision model when
# RAKAZO_E2E_MODEL and a key (RAKAZO_API_KEY or OPENAI_API_KEY) are set.

load helper
load model

DOCKER_SOCK=/var/run/docker.sock

TASK='Open http://127.0.0.1:8000/marker.html on the screen and click its big "Make the marker" button. Then check with the shell that the file pages/marker.txt exists, and write the file notes/e2e.txt saying that the button made the marker.'

teardown() {
	stop_server
	rk_kill_all
	rk_remove_containers
}

serving() {
	[ "$(rk computer exec e2e -- "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8000/marker.html\"); print(\"up\")'" 2>/dev/null)" = up ]
}

# Skips (fails with RAKAZO_REQUIRE_DOCKER=1) when the computer image is not built.
image_or_skip() {
	local image
	image=$(sh "$BATS_TEST_DIRNAME/../../image/build.sh" --tag)
	if [ "$(docker_status "/images/$image/json")" != 200 ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "image $image is not built and RAKAZO_REQUIRE_DOCKER=1" >&2; return 1; }
		skip "the computer image $image is not built (make image)"
	fi
}

# The docker computer e2e, networking off, serving the pages.
e2e_computer() {
	docker_or_skip
	image_or_skip
	rk computer create --name e2e --options '{"network":"none"}' --wait --json >/dev/null
	[ "$(rk computer show e2e --json | rk_json 'd["options"]["network"]')" = none ]
	local f
	for f in serve.py marker.html; do
		rk computer file write e2e "pages/$f" <"$BATS_TEST_DIRNAME/../fixtures/pages/$f"
	done
	rk computer exec e2e -- 'cd pages && setsid -f python3 serve.py 8000 </dev/null >/dev/null 2>&1' >/dev/null
	wait_for serving 30
	# no marker before anyone clicks
	expect_status 3 rk computer file read e2e pages/marker.txt
}

# The HTTP status of a Docker API GET of $1.
docker_status() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 30 --unix-socket "$DOCKER_SOCK" "http://localhost$1"
}

# Removes e2e's container through the Docker API, then stop and resume: the
# stale provider ref is replaced by a new container, with the workspace back.
destroy_and_replace() {
	local ref
	ref=$(rk computer show e2e --json | rk_json 'd["provider_ref"]')
	[ -n "$ref" ]
	[ "$(docker_status "/containers/$ref/json")" = 200 ]
	curl -sf --max-time 60 -X DELETE --unix-socket "$DOCKER_SOCK" "http://localhost/containers/$ref?force=1" >/dev/null
	[ "$(docker_status "/containers/$ref/json")" = 404 ]
	rk computer stop e2e --wait --json >/dev/null
	run rk computer resume e2e --wait --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json 'd["result"]["replacement"]')" = true ]
	local new
	new=$(rk computer show e2e --json | rk_json 'd["provider_ref"]')
	[ -n "$new" ] && [ "$new" != "$ref" ]
	[ "$(docker_status "/containers/$new/json")" = 200 ]
}

@test "e2e: the scripted model opens the page, clicks its button, uses shell and write_file; the file survives a replaced container" {
	e2e_computer
	start_server run_e2e.json
	rk run --computer e2e --json "$TASK" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/err"
	server_ok
	# the click reached the page's server: its marker, with where the page saw the click
	run rk computer file read e2e pages/marker.txt
	[ "$status" -eq 0 ]
	# (page coordinates: the screen's 640,560 less Chromium's frame and bars)
	[[ "$output" =~ ^"clicked at "([0-9]+)","([0-9]+)$ ]]
	[ "${BASH_REMATCH[2]}" -ge 120 ]
	# the recorded tool calls, as `run logs` and `run show` give them
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	rk run logs "$id" --json >"$BATS_TEST_TMPDIR/logs"
	cmp "$BATS_TEST_TMPDIR/events" "$BATS_TEST_TMPDIR/logs"
	! grep -q 'iVBORw0KGgo' "$BATS_TEST_TMPDIR/logs"
	python3 - "$BATS_TEST_TMPDIR/logs" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
calls = [e for e in ev if e["type"] == "tool.call"]
assert [c["name"] for c in calls] == ["open_path", "computer_observe", "computer_act", "shell", "write_file"], calls
act = json.loads(calls[2]["arguments"]) if isinstance(calls[2]["arguments"], str) else calls[2]["arguments"]
assert act["actions"] == [{"action": "click", "x": 640, "y": 560}], act
res = [e for e in ev if e["type"] == "tool.result"]
assert [r["name"] for r in res] == [c["name"] for c in calls], res
assert all("error" not in r for r in res), [r for r in res if "error" in r]
assert res[0]["image"] == "sent" and len(res[0]["frame_hash"]) == 64, res[0]
# the click changed the screen (the button turns green): a new frame
assert res[2]["image"] == "sent" and res[2]["frame_hash"] != res[0]["frame_hash"], res[2]
assert "clicked at " in res[3]["output"], res[3]
fin = ev[-1]
assert fin["type"] == "run.finished" and fin["state"] == "completed", fin
assert fin["answer"] == "Clicked the button; the server made its marker; wrote notes/e2e.txt.", fin
PY
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/show")" = completed ]
	[ "$(rk_json 'd["counters"]["tool_calls"]' <"$BATS_TEST_TMPDIR/show")" = 5 ]
	# terminal history: open_path, the shell command and write_file; not the observe
	rk computer history e2e --json >"$BATS_TEST_TMPDIR/hist"
	python3 - "$BATS_TEST_TMPDIR/hist" <<'PY'
import json, sys
cmds = [e["data"] for e in json.load(open(sys.argv[1])) if e["kind"] == "command"]
assert "open_path http://127.0.0.1:8000/marker.html" in cmds, cmds
assert "write_file notes/e2e.txt (27 bytes)" in cmds, cmds
assert any(c.endswith("cat pages/marker.txt") for c in cmds), cmds
assert not any("observe" in c or "computer_act" in c for c in cmds), cmds
PY
	[ "$(rk computer file read e2e notes/e2e.txt)" = "the button made the marker" ]

	destroy_and_replace
	[ "$(rk computer file read e2e notes/e2e.txt)" = "the button made the marker" ]
	[[ "$(rk computer file read e2e pages/marker.txt)" == "clicked at "* ]]
	rk computer delete e2e --wait --json >/dev/null
}

@test "e2e (real model, opt-in): the same task with a vision model from RAKAZO_E2E_MODEL" {
	[ -n "${RAKAZO_E2E_MODEL:-}" ] ||
		skip "set RAKAZO_E2E_MODEL (a vision model), a key (RAKAZO_API_KEY or OPENAI_API_KEY) and, for an endpoint other than api.openai.com, RAKAZO_MODEL_BASE_URL"
	[ -n "${RAKAZO_API_KEY:-}${OPENAI_API_KEY:-}" ] ||
		skip "RAKAZO_E2E_MODEL is set but no key is: set RAKAZO_API_KEY or OPENAI_API_KEY"
	e2e_computer
	export RAKAZO_MODEL=$RAKAZO_E2E_MODEL
	export RAKAZO_MODEL_BASE_URL=${RAKAZO_MODEL_BASE_URL:-https://api.openai.com/v1}
	run rk run --computer e2e --json --max-steps 30 "$TASK"
	echo "$output" >"$BATS_TEST_TMPDIR/events"
	[ "$status" -eq 0 ]
	[ "$(tail -n1 "$BATS_TEST_TMPDIR/events" | rk_json 'd["state"]')" = completed ]
	[[ "$(rk computer file read e2e pages/marker.txt)" == "clicked at "* ]]
	python3 - "$BATS_TEST_TMPDIR/events" <<'PY'
import json, sys
names = {json.loads(l)["name"] for l in open(sys.argv[1]) if json.loads(l)["type"] == "tool.call"}
assert {"computer_act", "shell", "write_file"} <= names, names
PY
	note=$(rk computer file read e2e notes/e2e.txt)
	[ -n "$note" ]
	destroy_and_replace
	[ "$(rk computer file read e2e notes/e2e.txt)" = "$note" ]
	rk computer delete e2e --wait --json >/dev/null
}
