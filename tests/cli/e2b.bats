#!/usr/bin/env bats
# The e2b provider through the CLI, against the E2B emulator
# (tests/emulators/e2b), whose sandboxes are real containers. Faults are
# injected through the emulator's /_emulator routes. Skips without node or
# dockerd, unless RAKAZO_REQUIRE_DOCKER=1 (then that is a failure).

load helper

emu() { # METHOD PATH [JSON]
	curl -sf --max-time 30 -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} "$E2B_API_URL$2"
}

fault() { # JSON
	emu POST /_emulator/faults "$1" >/dev/null
}

# How many calls METHOD PATH the emulator has seen.
calls() {
	emu GET /_emulator/requests | rk_json "len([r for r in d if r['method'] == '$1' and r['path'] == '$2'])"
}

# GET PATH on the control plane, as a client with a key.
vendor() {
	curl -sf --max-time 30 -H 'X-API-Key: e2b_bats_key' "$E2B_API_URL$1"
}

sandboxes() {
	emu GET /_emulator/sandboxes | rk_json 'len(d)'
}

setup_file() {
	command -v node >/dev/null 2>&1 && curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 ||
		return 0
	E2B_API_URL=$(sh "$BATS_TEST_DIRNAME/../emulators/e2b/start.sh" "$BATS_FILE_TMPDIR") || return 1
	export E2B_API_URL
}

teardown_file() {
	if [ -s "$BATS_FILE_TMPDIR/e2b-emulator.pid" ]; then
		kill "$(cat "$BATS_FILE_TMPDIR/e2b-emulator.pid")" 2>/dev/null || true
	fi
}

setup() {
	export RAKAZO_DATA_DIR="$BATS_TEST_TMPDIR/data"
	export RAKAZO_OWNER="user:bats"
	export RAKAZO_TEST_LABEL="bats-$$"
	export NO_COLOR=1
	unset RAKAZO_FAKE_FAULTS RAKAZO_FAKE_DELAY_MS RAKAZO_NO_WORKER RAKAZO_SESSION_IDLE_MS RAKAZO_LOG
	mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
	RK_CLOSE_FDS=$(rk_close_fds)
	if [ -z "${E2B_API_URL:-}" ]; then
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "the e2b emulator needs node and dockerd, and RAKAZO_REQUIRE_DOCKER=1" >&2
			return 1
		fi
		skip "the e2b emulator needs node and dockerd"
	fi
	export E2B_SANDBOX_URL=$E2B_API_URL E2B_API_KEY=e2b_bats_key E2B_DOMAIN=emulator.invalid
	export RAKAZO_HTTP_BACKOFF_MS=20
	emu DELETE /_emulator/faults >/dev/null
	emu DELETE /_emulator/requests >/dev/null
}

teardown() {
	emu DELETE /_emulator/faults >/dev/null 2>&1 || true
	rk_delete_computers
	rk_kill_all
}

@test "e2b: available with a key and the emulator, unavailable without a key" {
	run rk computer providers --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[p["available"] for p in d if p["name"] == "e2b"][0]')" = true ]
	E2B_API_KEY= RAKAZO_CONFIG=/nonexistent run rk computer providers --json
	[ "$(printf '%s' "$output" | rk_json '[p["reason"] for p in d if p["name"] == "e2b"][0]')" = \
		"e2b: no API key: set E2B_API_KEY or providers.e2b.api_key in the config file" ]
	# a wrong key is the vendor's 401: denied, and the key is not in the message
	E2B_API_KEY=wrong-key E2B_EMULATOR_API_KEY= run rk computer providers --json
	[ "$status" -eq 0 ]
	[[ $output != *wrong-key* ]]
}

@test "e2b: create, exec in the workspace, files both ways, stop and start keep them, delete" {
	run rk computer create --provider e2b --name t --wait --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local ref
	ref=$(printf '%s' "$output" | rk_json 'd["result"]["provider_ref"]')
	[ "$(vendor "/sandboxes/$ref" | rk_json 'd["templateID"]')" = desktop ]
	run rk computer exec t --json -- 'pwd; echo $HOME'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "$(printf '/home/user/rakazo-home\n/home/user')" ]
	printf 'from the host' | rk computer file write t notes/a.txt - --json >/dev/null
	[ "$(rk computer exec t --json -- cat notes/a.txt | rk_json 'd["output"]')" = "from the host" ]
	rk computer exec t --json -- 'echo made inside > notes/b.txt' >/dev/null
	[ "$(rk computer file read t notes/b.txt)" = "made inside" ]
	[ "$(rk computer file list t notes --json | rk_json '" ".join(e["name"] for e in d)')" = "a.txt b.txt" ]
	run rk computer stop t --wait --json
	[ "$status" -eq 0 ]
	[ "$(vendor "/sandboxes/$ref" | rk_json 'd["state"]')" = paused ]
	run rk computer resume t --wait --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(rk computer file read t notes/b.txt)" = "made inside" ]
	run rk computer delete t --wait --json
	[ "$status" -eq 0 ]
	[ "$(sandboxes)" = 0 ]
	[ "$(calls POST /v2/sandboxes)" = 1 ]
}

@test "e2b: the API key is not passed into the machine" {
	rk computer create --provider e2b --name t --wait --json >/dev/null
	run rk computer exec t --json -- 'env; cat /proc/1/environ | tr "\0" "\n"'
	[ "$status" -eq 0 ]
	[[ $output != *e2b_bats_key* ]]
	run rk computer file read t /proc/self/environ
	[[ $output != *e2b_bats_key* ]]
	# nor logged, nor stored with the computer
	! grep -rq e2b_bats_key "$RAKAZO_DATA_DIR"
	RAKAZO_LOG=debug rk computer exec t --json -- true >/dev/null
	! grep -rq e2b_bats_key "$RAKAZO_DATA_DIR"
}

@test "e2b: screen 0 observes and acts with the desktop SDK's commands; its live-view URL is kept" {
	rk computer create --provider e2b --name t --wait --json >/dev/null
	run rk screen shot t -o "$BATS_TEST_TMPDIR/s.png" --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json '"%dx%d" % (d["width"], d["height"])')" = 1280x800 ]
	[ "$(head -c 4 "$BATS_TEST_TMPDIR/s.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
	run rk screen act t --actions '[{"action":"move","x":123,"y":234},{"action":"click"}]' --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $(rk computer exec t --json -- 'DISPLAY=:0 xdotool getmouselocation' | rk_json 'd["output"]') == "x:123 y:234 "* ]]
	local url
	url=$(cat "$RAKAZO_DATA_DIR"/run/*/e2b-live-view-url)
	[[ $url == https://6080-*.emulator.invalid/vnc.html\?*view_only=true*password=* ]]
	[ "$(stat -c %a "$RAKAZO_DATA_DIR"/run/*/e2b-live-view-url)" = 600 ]
	# the viewer's x11vnc is view-only and password protected
	run rk computer exec t --json -- 'pgrep -af "x11vnc.*rfbport 5900 "'
	[[ $output == *-viewonly* && $output == *-rfbauth* ]]
}

@test "e2b: Team screens 1 and 2 get their own Xvfb and ports 6080+2i/6081+2i; screen 8 is refused" {
	rk computer create --provider e2b --name t --mode team --wait --json >/dev/null
	run rk screen act t -d 1 --actions '[{"action":"move","x":11,"y":22}]' --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run rk screen act t -d 2 --actions '[{"action":"move","x":33,"y":44}]' --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $(rk computer exec t --json -- 'DISPLAY=:2 xdotool getmouselocation' | rk_json 'd["output"]') == "x:11 y:22 "* ]]
	[[ $(rk computer exec t --json -- 'DISPLAY=:3 xdotool getmouselocation' | rk_json 'd["output"]') == "x:33 y:44 "* ]]
	run rk computer exec t --json -- 'pgrep -af "x11vnc.*rfbport 590[2-5] " | sed "s/.*rfbport \([0-9]*\).*/\1/" | sort | tr "\n" " "'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "5902 5903 5904 5905 " ]
	grep -q '^https://6082-' "$RAKAZO_DATA_DIR"/run/*/e2b-live-view-url-1
	grep -q '^https://6084-' "$RAKAZO_DATA_DIR"/run/*/e2b-live-view-url-2
	expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen shot t -d 8 --json
}

@test "e2b fault: 429 on create is retried (Retry-After honoured) and the create succeeds" {
	fault '{"method":"POST","path":"^/v2/sandboxes$","kind":"429","count":2,"retry_after":"0"}'
	run rk computer create --provider e2b --name t --wait --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(calls POST /v2/sandboxes)" = 3 ]
	[ "$(sandboxes)" = 1 ]
}

@test "e2b fault: 5xx on reads are retried; a 500 on create fails it, with no sandbox left" {
	rk computer create --provider e2b --name t --wait --json >/dev/null
	fault '{"method":"POST","path":"^/filesystem.Filesystem/ListDir$","kind":"503","count":2}'
	run rk computer file list t --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(calls POST /filesystem.Filesystem/ListDir)" = 3 ]
	fault '{"method":"POST","path":"^/v2/sandboxes$","kind":"500","count":1}'
	run rk computer create --provider e2b --name u --wait --json
	[ "$status" -eq 5 ]
	[[ $output == *'"code":"unavailable"'* && $output == *'emulated fault 500 (HTTP 500)'* ]]
	[ "$(rk computer show u --json | rk_json 'd["state"]')" = failed ]
	[ "$(sandboxes)" = 1 ]
}

@test "e2b fault: a dropped create reply is outcome_unknown with a decision; decided succeeded, the sandbox is found" {
	fault '{"method":"POST","path":"^/v2/sandboxes$","kind":"drop","count":1}'
	run rk computer create --provider e2b --name t --wait --json
	[ "$status" -eq 7 ]
	[[ $output == *'"code":"outcome_unknown"'* ]]
	local id
	id=$(rk computer execution list --json | rk_json 'd[0]["id"]')
	[ "$(rk computer execution show "$id" --json | rk_json 'd["state"]')" = outcome_unknown ]
	[ "$(rk computer execution events "$id" --json | rk_json 'd[-1]["type"]')" = decision_needed ]
	# the sandbox was made: one, not retried blindly
	[ "$(sandboxes)" = 1 ]
	[ "$(calls POST /v2/sandboxes)" = 1 ]
	rk computer execution decide "$id" --outcome succeeded --json >/dev/null
	run rk computer exec t --json -- echo found
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = found ]
	[ "$(sandboxes)" = 1 ]
	[ "$(calls POST /v2/sandboxes)" = 1 ]
	# the engine's delete skips the provider for a computer with no ref
	# (engine/machine/execution.c), so this sandbox is removed here
	emu POST "/_emulator/sandboxes/$(emu GET /_emulator/sandboxes | rk_json 'd[0]["sandboxID"]')/vanish" >/dev/null
}

@test "e2b fault: a dropped reply after a command started is outcome_unknown, not success" {
	rk computer create --provider e2b --name t --wait --json >/dev/null
	fault '{"method":"POST","path":"^/process.Process/Start$","kind":"drop","count":1}'
	run rk computer exec t --json -- 'echo ran >> /tmp/ran.txt'
	[ "$status" -eq 7 ] || { echo "$output"; return 1; }
	[[ $output == *outcome_unknown* ]]
	# it did run, once
	[ "$(rk computer file read t /tmp/ran.txt)" = ran ]
}

@test "e2b fault: a slow reply is waited for" {
	rk computer create --provider e2b --name t --wait --json >/dev/null
	fault '{"method":"GET","path":"^/files$","kind":"slow","delay_ms":1500}'
	rk computer file write t slow.txt - <<<"patience" --json >/dev/null
	run rk computer file read t slow.txt
	[ "$status" -eq 0 ]
	[ "$output" = patience ]
}

@test "e2b fault: a vanished sandbox reads as gone and the next use replaces it" {
	local ref
	ref=$(rk computer create --provider e2b --name t --wait --json | rk_json 'd["result"]["provider_ref"]')
	emu POST "/_emulator/sandboxes/$ref/vanish" >/dev/null
	! vendor "/sandboxes/$ref" >/dev/null
	run rk computer exec t --json -- echo again
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = again ]
	local now
	now=$(emu GET /_emulator/sandboxes | rk_json '" ".join(s["sandboxID"] for s in d if s["metadata"].get("rakazo_test") == "'"$RAKAZO_TEST_LABEL"'")')
	[ -n "$now" ] && [ "$now" != "$ref" ]
}

@test "e2b: a workspace moves docker -> e2b -> docker with its files and browser profile" {
	curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null || skip "dockerd is not running"
	run rk computer create --provider docker --name d1 --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	rk computer exec d1 --json -- 'mkdir -p project/Cache .browser-profiles/default/Default/Cache &&
		echo kept > project/Cache/x && echo code > project/main.c && chmod +x project/main.c &&
		echo cookie-jar > .browser-profiles/default/Default/Cookies &&
		echo stale > .browser-profiles/default/Default/Cache/data_0 &&
		ln -s main.c project/link.c' >/dev/null
	rk computer export d1 -o "$BATS_TEST_TMPDIR/one.tar"
	rk computer create --provider e2b --name e --wait --json >/dev/null
	rk computer import e "$BATS_TEST_TMPDIR/one.tar" --json >/dev/null
	run rk computer exec e --json -- 'cat project/main.c project/Cache/x .browser-profiles/default/Default/Cookies;
		test -x project/main.c && echo exec; readlink project/link.c'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "$(printf 'code\nkept\ncookie-jar\nexec\nmain.c')" ]
	rk computer exec e --json -- 'echo from e2b > project/e2b.txt' >/dev/null
	rk computer export e -o "$BATS_TEST_TMPDIR/two.tar"
	# the profile's cache stayed behind; the same name elsewhere travelled
	! tar -tf "$BATS_TEST_TMPDIR/two.tar" | grep -q 'Default/Cache'
	tar -tf "$BATS_TEST_TMPDIR/two.tar" | grep -q 'project/Cache/x'
	run rk computer create --provider docker --name d2 --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	rk computer import d2 "$BATS_TEST_TMPDIR/two.tar" --json >/dev/null
	run rk computer exec d2 --json -- 'cat project/main.c project/e2b.txt .browser-profiles/default/Default/Cookies'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "$(printf 'code\nfrom e2b\ncookie-jar')" ]
}

@test "e2b: a sandbox its timeout paused is resumed on the next use" {
	local ref
	ref=$(rk computer create --provider e2b --name t --wait --json | rk_json 'd["result"]["provider_ref"]')
	rk computer exec t --json -- 'echo before > kept.txt' >/dev/null
	# created with onTimeout pause (autoPause), as the reference creates them
	emu POST "/_emulator/sandboxes/$ref/expire" >/dev/null
	[ "$(vendor "/sandboxes/$ref" | rk_json 'd["state"]')" = paused ]
	# the engine sees it paused and resumes it (connect) before the command
	run rk computer exec t --json -- cat kept.txt
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = before ]
	[ "$(vendor "/sandboxes/$ref" | rk_json 'd["state"]')" = running ]
	[ "$(calls POST "/v2/sandboxes/$ref/connect")" -ge 1 ]
}

@test "e2b: in use, the sandbox's timeout is pushed ahead, at most once a minute" {
	local ref
	ref=$(rk computer create --provider e2b --name t --wait --json | rk_json 'd["result"]["provider_ref"]')
	rk computer exec t --json -- true >/dev/null
	[ "$(calls POST "/sandboxes/$ref/timeout")" = 0 ]
	# as if the last use was long ago
	python3 -c '
import json, sys
p = sys.argv[1]
d = json.load(open(p)); d["touched_ms"] = 0; json.dump(d, open(p, "w"))
' "$(ls "$RAKAZO_DATA_DIR"/run/*/e2b.json)"
	rk computer exec t --json -- true >/dev/null
	rk computer exec t --json -- true >/dev/null
	[ "$(calls POST "/sandboxes/$ref/timeout")" = 1 ]
}

@test "e2b: the official e2b and @e2b/desktop SDKs run their scenario against the emulator (fidelity)" {
	run sh "$BATS_TEST_DIRNAME/../sdk/run-e2b.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"sdk: "*" passed, 0 failed"* ]]
	[[ $output != *"sdk: 0 passed, 0 failed"* ]] || [ "${RAKAZO_REQUIRE_DOCKER:-}" != 1 ]
}
