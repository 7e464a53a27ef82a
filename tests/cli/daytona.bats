#!/usr/bin/env bats
# The daytona provider through the CLI against the Daytona emulator
# (tests/emulators/daytona): the whole lifecycle, the desktop and extra Team
# screens, and the fault cases (429, 5xx, slow replies, a reply dropped after
# the action happened, a sandbox that vanishes). Skips without node, dockerd
# or the computer image, unless RAKAZO_REQUIRE_DOCKER=1.

load helper

setup_file() {
	export RAKAZO_TEST_LABEL="bats-daytona-$$"
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	RK_ROOT="$BATS_TEST_DIRNAME/../.." rk_emulator_file_up daytona
}

teardown_file() {
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	rk_emulator_file_down
}

setup() {
	rk_remote_setup
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	rk_emulator_require DAYTONA_EMULATOR_URL || return 1
	curl -sf -X DELETE "$DAYTONA_EMULATOR_URL/_emulator/faults" >/dev/null
	curl -sf -X DELETE "$DAYTONA_EMULATOR_URL/_emulator/requests" >/dev/null
}

teardown() {
	rk_delete_computers
	rk_kill_all
}

fault() {
	curl -sf -X POST -d "$1" "$DAYTONA_EMULATOR_URL/_emulator/faults" >/dev/null
}

# How many requests METHOD PATH-REGEX the emulator saw.
seen() {
	curl -sf "$DAYTONA_EMULATOR_URL/_emulator/requests" |
		python3 -c 'import json, re, sys; print(sum(1 for r in json.load(sys.stdin) if r["method"] == sys.argv[1] and re.search(sys.argv[2], r["path"])))' "$1" "$2"
}

sandboxes() {
	curl -sf "$DAYTONA_EMULATOR_URL/_emulator/sandboxes" | rk_json 'len([s for s in d if s["labels"].get("rakazo.test") == "'"$RAKAZO_TEST_LABEL"'"])'
}

dt_create() {
	run rk computer create --provider daytona --name "${1:-dt}" --wait --timeout 120 --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "daytona: create, exec with stdin and exit codes, files, tty refused, stop keeps files, delete" {
	dt_create
	[ "$(rk computer show dt --json | rk_json 'd["state"]')" = running ]
	run rk computer exec dt --json -- 'echo hi; pwd; exit 3'
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 3 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "hi
/home/user/rakazo-home" ]
	local sid
	sid=$(rk computer exec dt --json -- 'read v; echo got $v; cat; echo end' | rk_json 'd["session"]')
	run rk computer input dt "$sid" 'y\nmore\n' --json
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "got y
more" ]
	run rk computer input dt "$sid" '\x04' --yield-ms 5000 --json
	[ "$(printf '%s' "$output" | rk_json '[d["running"], d["output"]]')" = '[false, "end\n"]' ]
	printf 'abc' | rk computer file write dt notes/a.txt -x
	[ "$(rk computer file read dt notes/a.txt)" = abc ]
	[ "$(rk computer file list dt notes --json | rk_json '[(e["name"], e["executable"]) for e in d]')" = '[["a.txt", true]]' ]
	expect_status 1 rk computer exec dt --tty --json -- ls
	[[ $output == *'"code":"unsupported"'* ]]
	run rk computer stop dt --wait --json
	[ "$status" -eq 0 ]
	run rk computer exec dt --json -- 'cat notes/a.txt'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = abc ]
	run rk computer delete dt --wait --json
	[ "$status" -eq 0 ]
	[ "$(sandboxes)" = 0 ]
}

@test "daytona: with {\"archive\":true} stop archives the sandbox and the next use starts it, files kept" {
	run rk computer create --provider daytona --name dt --options '{"archive":true}' --wait --timeout 120 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local id
	id=$(rk computer show dt --json | rk_json 'd["provider_ref"]')
	printf 'kept' | rk computer file write dt k.txt
	run rk computer stop dt --wait --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(curl -sf "$DAYTONA_EMULATOR_URL/_emulator/sandboxes" | rk_json "[s['state'] for s in d if s['id'] == '$id'][0]")" = archived ]
	run rk computer exec dt --json -- 'cat k.txt'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = kept ]
	[ "$(rk computer show dt --json | rk_json 'd["provider_ref"]')" = "$id" ]
}

@test "daytona: the API key never reaches the log, the database or the sandbox" {
	dt_create
	run rk computer exec dt --json -- 'env'
	[ "$status" -eq 0 ]
	[[ $output != *"$DAYTONA_API_KEY"* ]]
	! grep -rqaF "$DAYTONA_API_KEY" "$RAKAZO_DATA_DIR"
}

@test "daytona: 429 and 503 are retried (the create and a file read succeed)" {
	fault '{"method":"POST","path":"^/api/sandbox$","status":429,"retry_after":0,"times":2}'
	dt_create
	[ "$(seen POST '^/api/sandbox$')" = 3 ]
	printf 'x' | rk computer file write dt f.txt
	fault '{"method":"GET","path":"/files/download$","status":503,"times":2}'
	[ "$(rk computer file read dt f.txt)" = x ]
	[ "$(seen GET '/files/download$')" = 3 ]
}

@test "daytona: a 500 on create fails the create (unavailable, 5) and is not retried (a mutation)" {
	fault '{"method":"POST","path":"^/api/sandbox$","status":500,"times":5}'
	expect_status 5 rk computer create --provider daytona --name dt --wait --timeout 120 --json
	[ "$(seen POST '^/api/sandbox$')" = 1 ]
	[ "$(rk computer show dt --json | rk_json 'd["state"]')" = failed ]
}

@test "daytona: a create whose reply is dropped after it happened is outcome_unknown; decided, the sandbox is found" {
	fault '{"method":"POST","path":"^/api/sandbox$","drop":"after","times":1}'
	expect_status 7 rk computer create --provider daytona --name dt --wait --timeout 120 --json
	[[ $output == *'"code":"outcome_unknown"'* ]]
	local id
	id=$(rk computer execution list --json | rk_json '[e["id"] for e in d if e["op"] == "create"][0]')
	[ "$(rk computer execution events "$id" --json | rk_json '[e["type"] for e in d][-1]')" = decision_needed ]
	[ "$(sandboxes)" = 1 ]
	run rk computer execution decide "$id" --outcome succeeded --json
	[ "$status" -eq 0 ]
	# the next call provisions again and finds the sandbox by its label: still one
	run rk computer resume dt --wait --json
	run rk computer exec dt --json -- 'echo found'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = found ]
	[ "$(sandboxes)" = 1 ]
}

@test "daytona: slow replies still complete" {
	dt_create
	fault '{"method":"POST","path":"/process/session$","delay_ms":1500,"times":1}'
	run rk computer exec dt --json -- 'echo slow'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = slow ]
}

@test "daytona: a vanished sandbox is replaced and its workspace restored from the checkpoint" {
	dt_create
	printf 'kept' | rk computer file write dt notes/keep.txt
	rk checkpoint create dt --json >/dev/null
	local old new
	old=$(rk computer show dt --json | rk_json 'd["provider_ref"]')
	curl -sf -X POST "$DAYTONA_EMULATOR_URL/_emulator/sandboxes/$old/vanish" >/dev/null
	run rk computer exec dt --json -- 'cat notes/keep.txt'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = kept ]
	new=$(rk computer show dt --json | rk_json 'd["provider_ref"]')
	[ -n "$new" ] && [ "$new" != "$old" ]
}

@test "daytona: checkpoint restore and import reach the sandbox: on resume when stopped (restoring, a tool call waits), at once when running; a failed push changes nothing (issue 6)" {
	run rk computer create --provider daytona --name dt --revisions 3 --no-desktop --wait --timeout 120 --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	printf one | rk computer file write dt notes.txt
	local r1 home
	r1=$(rk checkpoint create dt --json | rk_json 'd["id"]')
	printf two | rk computer file write dt notes.txt
	printf later | rk computer file write dt later.txt
	rk computer stop dt --wait --json >/dev/null
	home="$RAKAZO_DATA_DIR/homes/$(rk computer show dt --json | rk_json 'd["home_key"]')"

	# stopped: the revision becomes the latest and the host home at once...
	run rk checkpoint restore dt --revision "$r1" --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(cat "$home/notes.txt")" = one ]
	[ ! -e "$home/later.txt" ]
	[ "$(rk checkpoint show dt --json | rk_json 'd["reason"]')" = "restore:$r1" ]
	# ...and the sandbox gets it on resume, before any tool runs: a slow
	# upload holds the computer in `restoring`, and a command waits for it
	fault '{"method":"POST","path":"/files/upload-v2$","delay_ms":3000,"times":1}'
	rk computer resume dt --wait --timeout 120 --json >"$BATS_TEST_TMPDIR/resume.json" &
	local bg=$!
	wait_for '[ "$(rk computer show dt --json | rk_json "d[\"state\"]")" = restoring ]' 60
	run rk computer exec dt --json -- 'cat notes.txt; [ -e later.txt ] && echo stale || echo clean'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "oneclean" ] || { echo "$output"; cat "$BATS_TEST_TMPDIR/resume.json"; return 1; }
	wait "$bg"
	[ "$(rk_json 'd["result"]["restore"]["pending"]' <"$BATS_TEST_TMPDIR/resume.json")" = true ]
	[ "$(rk computer show dt --json | rk_json 'd["state"]')" = running ]

	# running: an import goes into the sandbox at once (emptied first)
	mkdir -p "$BATS_TEST_TMPDIR/ws/sub"
	printf three >"$BATS_TEST_TMPDIR/ws/notes.txt"
	printf deep >"$BATS_TEST_TMPDIR/ws/sub/d.txt"
	tar -C "$BATS_TEST_TMPDIR/ws" -cf "$BATS_TEST_TMPDIR/ws.tar" .
	run rk checkpoint import dt "$BATS_TEST_TMPDIR/ws.tar" --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(rk computer exec dt --json -- 'cat notes.txt sub/d.txt' | rk_json 'd["output"]')" = threedeep ]
	[ "$(cat "$home/notes.txt")" = three ]

	# a push that fails leaves the latest revision and the host home as they were
	local latest
	latest=$(rk checkpoint show dt --json | rk_json 'd["id"]')
	fault '{"method":"POST","path":"/files/upload-v2$","status":400,"times":20}'
	run rk checkpoint restore dt --revision "$r1" --json
	[ "$status" -ne 0 ]
	[ "$(rk checkpoint show dt --json | rk_json 'd["id"]')" = "$latest" ]
	[ "$(cat "$home/notes.txt")" = three ]
	curl -sf -X DELETE "$DAYTONA_EMULATOR_URL/_emulator/faults" >/dev/null
}

@test "daytona: a holder whose provider call is retried leaves the database intact (regression: log lines in rakazo.db)" {
	dt_create
	fault '{"method":"POST","path":"/process/session$","status":503,"times":8}'
	expect_status 5 rk computer exec dt --json -- 'echo hi'
	[ "$(sqlite3 "$RAKAZO_DATA_DIR/rakazo.db" 'pragma integrity_check')" = ok ]
	grep -q 'retrying' "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "daytona: the primary screen (computer use) and two extra Team screens on 6082/6083 and 6084/6085" {
	dt_create
	run rk screen shot dt -o "$BATS_TEST_TMPDIR/0.png" --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"]]')" = '[1280, 800]' ]
	[ "$(head -c 4 "$BATS_TEST_TMPDIR/0.png" | tail -c 3)" = PNG ]
	rk screen act dt --actions '[{"action":"move","x":100,"y":120}]' --no-observe --json >/dev/null
	run rk computer exec dt --json -- 'DISPLAY=:0 xdotool getmouselocation'
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == "x:100 y:120 "* ]]
	for i in 1 2; do
		run rk screen shot dt -d $i -o "$BATS_TEST_TMPDIR/$i.png" --json
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
		rk screen act dt -d $i --actions "[{\"action\":\"move\",\"x\":3$i,\"y\":4$i}]" --no-observe --json >/dev/null
		run rk computer exec dt --json -- "DISPLAY=:$((i + 1)) xdotool getmouselocation"
		[[ $(printf '%s' "$output" | rk_json 'd["output"]') == "x:3$i y:4$i "* ]]
		run rk computer exec dt --json -- "pgrep -af 'rfbport $((6080 + 2 * i)) -viewonly' && pgrep -af 'rfbport $((6081 + 2 * i)) '"
		[ "$status" -eq 0 ] && [ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
	done
	# the primary display is untouched by the extra ones
	run rk computer exec dt --json -- 'DISPLAY=:0 xdotool getmouselocation'
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == "x:100 y:120 "* ]]
}

@test "daytona: no key is unavailable (5) with a message that says what to set" {
	unset DAYTONA_API_KEY
	expect_json_error 5 unavailable rk computer create --provider daytona --name dt --wait --json
	grep -q DAYTONA_API_KEY "$BATS_TEST_TMPDIR/stderr"
}

@test "daytona: the official @daytonaio/sdk runs its scenario against the emulator (fidelity)" {
	local deps="$BATS_TEST_DIRNAME/../sdk"
	if [ ! -d "$deps/node_modules/@daytonaio/sdk" ]; then
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "@daytonaio/sdk is not installed: run sh tests/sdk/setup.sh (RAKAZO_REQUIRE_DOCKER=1)" >&2
			return 1
		fi
		skip "@daytonaio/sdk is not installed (sh tests/sdk/setup.sh)"
	fi
	run env RAKAZO_SDK_DEPS="$deps" node "$deps/daytona.mjs"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"sdk daytona: 16 passed, 0 failed"* ]]
}
