#!/usr/bin/env bats
# Team computers (issue 8) and the Team parts of issue 6: bots' folders, a
# screen and a Chromium profile per bot, leases on bots' calls, takeover,
# reservations, deferred checkpoints and idle suspension. The fake
# provider's tests always run; the docker ones drive real Chromium desktops
# in a container with networking off, and skip when docker is down
# (RAKAZO_REQUIRE_DOCKER=1: fail instead).

load helper

team() {
	rk computer create --provider fake --name "${1:-t}" --team --wait --json >/dev/null
}

home() {
	echo "$RAKAZO_DATA_DIR/homes/$(rk computer show "${1:-t}" --json | rk_json 'd["home_key"]')"
}

@test "team: --team and --private make the mode; both, or with --mode, are a usage error" {
	team t
	[ "$(rk computer show t --json | rk_json 'd["mode"]')" = team ]
	rk computer create --provider fake --name p --private --wait --json >/dev/null
	[ "$(rk computer show p --json | rk_json 'd["mode"]')" = private ]
	expect_json_error 2 usage rk computer create --provider fake --name x --team --private --json
	expect_json_error 2 usage rk computer create --provider fake --name x --team --mode private --json
	run rk computer show x --json
	[ "$status" -eq 3 ]
}

@test "team: a bot's relative paths are in bots/<bot>/, shared/ and ~/ reach the root, shell starts in its folder" {
	team t
	local h
	h=$(home t)
	printf 'mine' | rk computer file write t notes.txt --bot alpha
	[ "$(cat "$h/bots/alpha/notes.txt")" = mine ]
	[ -d "$h/shared" ]
	printf 'ours' | rk computer file write t shared/plan.txt --bot alpha
	[ "$(cat "$h/shared/plan.txt")" = ours ]
	printf 'top' | rk computer file write t '~/top.txt' --bot alpha
	[ "$(cat "$h/top.txt")" = top ]
	# another bot sees the shared file, and alpha's through bots/
	[ "$(rk computer file read t shared/plan.txt --bot beta)" = ours ]
	[ "$(rk computer file read t bots/alpha/notes.txt --bot beta)" = mine ]
	run rk computer file read t notes.txt --bot beta
	[ "$status" -eq 3 ]
	[ "$(rk computer file list t --bot beta --json | rk_json 'len(d)')" = 0 ]
	[ "$(rk computer file list t '~' --bot beta --json | rk_json 'sorted(e["name"] for e in d)')" = '["bots", "shared", "top.txt"]' ]
	run rk computer exec t --bot alpha -- 'pwd; cat notes.txt'
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == */bots/alpha ]]
	[ "${lines[1]}" = mine ]
	run rk computer exec t --bot alpha --cwd shared -- 'cat plan.txt'
	[ "$output" = ours ]
	# no escape through the bot's folder
	expect_json_error 2 invalid_argument rk computer file read t ../beta/x --bot alpha --json
	# without --bot, paths are the workspace's as before
	[ "$(rk computer file read t bots/alpha/notes.txt)" = mine ]
}

@test "team: on a Private computer the whole workspace is the bot's home" {
	rk computer create --provider fake --name p --private --wait --json >/dev/null
	printf 'x' | rk computer file write p notes.txt --bot alpha
	[ -f "$(home p)/notes.txt" ]
	[ ! -e "$(home p)/bots" ]
	run rk computer exec p --bot alpha -- 'pwd'
	[ "$output" = "$(home p)" ]
}

@test "team: a bad bot id is refused before anything is made" {
	team t
	local b
	for b in '../x' '.hidden' 'a b' "$(printf 'x%.0s' $(seq 1 65))" "a;rm"; do
		expect_json_error 2 invalid_argument rk computer file write t n.txt --bot "$b" --json </dev/null
		expect_json_error 2 invalid_argument rk screen shot t --bot "$b" --json
	done
	[ ! -e "$(home t)/bots" ]
	[ "$(rk screen list t --json)" = '[]' ]
}

@test "team: each bot gets its own screen slot and profile, lazily, and show reports multiScreen" {
	team t
	[ "$(rk screen list t --json)" = '[]' ]
	[ "$(rk computer show t --json | rk_json '[d["capabilities"]["multiScreen"], d["capabilities"]["screen_limit"]]')" = '[true, null]' ]
	[ "$(rk screen shot t --bot alpha --json | rk_json '[d["bot_id"], d["slot"], d["generation"]]')" = '["alpha", 1, 1]' ]
	[ "$(rk screen act t --bot beta -a '[{"action":"click","x":10,"y":10}]' --json | rk_json '[d["slot"], d["completed"]]')" = '[2, 1]' ]
	# the same bot keeps its slot
	[ "$(rk screen shot t --bot alpha --json | rk_json 'd["slot"]')" = 1 ]
	[ -d "$(home t)/.browser-profiles/alpha" ]
	[ -d "$(home t)/.browser-profiles/beta" ]
	[ "$(rk screen list t --json | rk_json '[(s["slot"], s["bot_id"], s["state"], s["profile"]) for s in d]')" = \
		'[[1, "alpha", "live", ".browser-profiles/alpha"], [2, "beta", "live", ".browser-profiles/beta"]]' ]
	[ "$(rk computer show t --json | rk_json 'len(d["screens"])')" = 2 ]
	# bots' screens are not the computer's display 0
	rk screen act t -a '[{"action":"type","text":"zero"}]' --no-observe --json >/dev/null
	[ "$(rk screen shot t --bot alpha --json | rk_json 'd["active_window"]["title"]')" != "zero" ]
}

@test "team: past SANDBOX_TEAM_SCREEN_LIMIT graphical calls are MULTI_SCREEN_UNAVAILABLE; shell and files keep working" {
	team t
	export SANDBOX_TEAM_SCREEN_LIMIT=2
	rk screen shot t --bot a --json >/dev/null
	rk screen shot t --bot b --json >/dev/null
	expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen shot t --bot c --json
	expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen act t --bot c -a '[{"action":"wait","ms":1}]' --json
	run rk screen shot t --bot c -o "$BATS_TEST_TMPDIR/c.png"
	[ "$status" -eq 5 ]
	[[ $output == *"rakazo: MULTI_SCREEN_UNAVAILABLE: "* ]]
	printf 'still' | rk computer file write t n.txt --bot c
	[ "$(rk computer exec t --bot c -- 'cat n.txt')" = still ]
	[ "$(rk computer show t --json | rk_json 'd["capabilities"]["screen_limit"]')" = 2 ]
	[ "$(rk screen list t --json | rk_json 'len(d)')" = 2 ]
	# a released screen makes room
	rk screen release t --bot a
	[ "$(rk screen shot t --bot c --json | rk_json 'd["slot"]')" = 1 ]
}

@test "team: a provider that cannot start another display gives MULTI_SCREEN_UNAVAILABLE and the slot back" {
	team t
	RAKAZO_FAKE_FAULTS=display_start=fail expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen shot t --bot a --json
	[ "$(rk screen list t --json)" = '[]' ]
	RAKAZO_FAKE_FAULTS=display_start=fail run rk computer exec t --bot a -- 'echo shell works'
	[ "$output" = "shell works" ]
	[ "$(rk screen shot t --bot a --json | rk_json '[d["slot"], d["generation"]]')" = '[1, 2]' ]
}

@test "team: release frees the slot and keeps the profile; a bot that comes back on another slot has its own profile" {
	team t
	rk screen shot t --bot a --json >/dev/null
	rk screen shot t --bot b --json >/dev/null
	printf 'cookie of a' | rk computer file write t .browser-profiles/a/Cookies
	run rk screen release t --bot a --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["released"]')" = true ]
	[ "$(rk screen list t --json | rk_json '[s["bot_id"] for s in d]')" = '["b"]' ]
	# c takes the free slot 1, a new tenant: its generation moves on
	[ "$(rk screen shot t --bot c --json | rk_json '[d["slot"], d["generation"]]')" = '[1, 2]' ]
	[ "$(rk screen shot t --bot a --json | rk_json '[d["slot"], d["generation"]]')" = '[3, 1]' ]
	[ "$(cat "$(home t)/.browser-profiles/a/Cookies")" = "cookie of a" ]
	[ ! -e "$(home t)/.browser-profiles/c/Cookies" ]
	expect_json_error 3 not_found rk screen release t --bot nobody --json
}

@test "team: a stopped computer's screens are free again (the worker notices); profiles stay" {
	export RAKAZO_IDLE_SCAN_MS=100
	team t
	rk screen shot t --bot a --json >/dev/null
	rk computer stop t --wait --json >/dev/null
	wait_for "[ \"\$(rk screen list t --json)\" = '[]' ]" 10
	[ -d "$(home t)/.browser-profiles/a" ]
	[ "$(rk screen shot t --bot a --json | rk_json '[d["slot"], d["generation"]]')" = '[1, 2]' ]
}

@test "team: a bot's call takes its lease; with --fence it runs under the caller's, a stale one is refused" {
	team t
	local fence
	fence=$(rk computer lease acquire t --bot a --holder run-1 --json | rk_json 'd["fence"]')
	expect_json_error 4 conflict rk computer exec t --bot a --json -- true
	expect_json_error 4 conflict rk screen act t --bot a -a '[{"action":"wait","ms":1}]' --json
	expect_json_error 4 conflict rk computer file list t --bot a --json
	rk computer exec t --bot a --fence "$fence" -- true
	rk screen shot t --bot a --fence "$fence" --json >/dev/null
	# another bot works in parallel
	rk computer exec t --bot b -- true
	rk computer lease release t --bot a --fence "$fence"
	rk computer lease acquire t --bot a --holder run-2 --json >/dev/null
	expect_json_error 4 stale_lease rk computer exec t --bot a --fence "$fence" --json -- true
	expect_json_error 2 usage rk computer exec t --fence 3 --json -- true
	# a call without --fence gives its own lease back
	rk computer lease release t --bot a --fence "$((fence + 1))"
	rk computer exec t --bot a -- true
	[ "$(rk computer lease show t --bot a --json | rk_json 'd["holder"]')" = null ]
}

@test "team: a bot's session input, resize and kill carry its fence; a stale one is refused on each call" {
	team t
	local fence sid fence2
	fence=$(rk computer lease acquire t --bot a --holder run-1 --json | rk_json 'd["fence"]')
	sid=$(rk computer exec t --bot a --fence "$fence" --tty --yield-ms 300 --json -- cat | rk_json 'd["session"]')
	[ -n "$sid" ] && [ "$sid" != None ]
	run rk computer input t "$sid" 'one\n' --bot a --fence "$fence" --json
	[ "$status" -eq 0 ] && [[ "$output" == *one* ]]
	rk computer resize t "$sid" --rows 30 --cols 90 --bot a --fence "$fence" --json >/dev/null
	# the lease moves on: the old token reaches nothing, not even a live session
	rk computer lease release t --bot a --fence "$fence"
	fence2=$(rk computer lease acquire t --bot a --holder run-2 --json | rk_json 'd["fence"]')
	expect_json_error 4 stale_lease rk computer input t "$sid" 'two\n' --bot a --fence "$fence" --json
	expect_json_error 4 stale_lease rk computer resize t "$sid" --rows 20 --cols 80 --bot a --fence "$fence" --json
	expect_json_error 4 stale_lease rk computer kill t "$sid" --bot a --fence "$fence" --json
	expect_json_error 2 usage rk computer input t "$sid" 'x' --fence "$fence2" --json
	run rk computer kill t "$sid" --bot a --fence "$fence2" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
}

@test "team: takeover is refused while the bot holds a live lease or an active run, allowed when waiting_takeover" {
	# the organization's, so another member may use it (and meets the conflict)
	rk computer create --provider fake --name t --team --org --wait --json >/dev/null
	rk screen shot t --bot a --json >/dev/null
	local fence
	fence=$(rk computer lease acquire t --bot a --holder run-1 --json | rk_json 'd["fence"]')
	run rk screen takeover t --bot a
	[ "$status" -eq 4 ]
	[[ $output == *"Stop the bot first"* ]]
	rk computer lease release t --bot a --fence "$fence"
	run_row t a running r1
	run rk screen takeover t --bot a --json
	[ "$status" -eq 4 ]
	[[ $output == *"Stop the bot first"* ]]
	run_row t a queued r1
	expect_json_error 4 conflict rk screen takeover t --bot a --json
	# the bot asked for a person: takeover is granted
	run_row t a waiting_takeover r1
	run rk screen takeover t --bot a --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["bot_id"], d["holder"], d["waiting_run"], d["slot"], d["lease_id"][:4]]')" = \
		'["a", "user:bats", "r1", 1, "ctl_"]' ]
	# again by the same person: extended; by another: conflict
	[ "$(rk screen takeover t --bot a --json | rk_json 'd["extended"]')" = true ]
	RAKAZO_OWNER=user:other expect_json_error 4 conflict rk screen takeover t --bot a --json
	# while a person has control the bot's actions are refused, its screenshots are not
	expect_json_error 4 conflict rk screen act t --bot a -a '[{"action":"wait","ms":1}]' --json
	rk screen shot t --bot a --json >/dev/null
	[ "$(rk screen list t --json | rk_json 'd[0]["control"]')" = user:bats ]
	# other bots are untouched
	rk screen act t --bot b -a '[{"action":"wait","ms":1}]' --json >/dev/null
	RAKAZO_OWNER=user:other expect_json_error 8 denied rk screen release-control t --bot a --json
	rk screen release-control t --bot a
	expect_json_error 3 not_found rk screen release-control t --bot a --json
	# the run that waited for the person goes on (issue 9: release ends the wait)
	[ "$(rk_sql "SELECT state FROM runs WHERE id = 'r1'")" = running ]
	# after release the bot continues
	rk screen act t --bot a -a '[{"action":"wait","ms":1}]' --json >/dev/null
	# and with the run done, takeover is free again
	run_row t a completed r1
	rk screen takeover t --bot a --json >/dev/null
	rk screen release-control t --bot a
}

@test "team: control expires on its own (--ttl-ms)" {
	team t
	rk screen takeover t --bot a --ttl-ms 1000 --json >/dev/null
	expect_json_error 4 conflict rk screen act t --bot a -a '[{"action":"wait","ms":1}]' --json
	sleep 1.2
	rk screen act t --bot a -a '[{"action":"wait","ms":1}]' --json >/dev/null
	expect_json_error 2 usage rk screen takeover t --json
}

@test "team: an update job reserves the computer, stores its phases and frees it when done" {
	team t
	run rk computer job t --json -- 'mkdir -p shared && echo updated > shared/version'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["kind"], d["exit_code"]]')" = '["update", 0]' ]
	[ "$(cat "$(home t)/shared/version")" = updated ]
	[ "$(rk computer show t --json | rk_json 'd["reservation"]')" = null ]
	[ "$(rk checkpoint list t --json | rk_json '[r["reason"] for r in d]')" = '["update"]' ]
	# a failing command fails the job and still frees the computer
	run rk computer job t --kind recovery -- 'exit 3'
	[ "$status" -eq 1 ]
	rk computer lease acquire t --bot a --json >/dev/null
	# a live lease keeps a job from starting
	expect_json_error 4 conflict rk computer job t --json -- true
	expect_json_error 2 invalid_argument rk computer job t --kind nonsense --json -- true
}

@test "team: a killed job's reservation excludes leases, stop and takeover; goes interrupted; only its owner frees it once stopped" {
	# the worker started by create scans every 100 ms and calls a job silent after 3 s
	# (a job heartbeats about every second)
	export RAKAZO_RESERVATION_SILENT_MS=3000 RAKAZO_IDLE_SCAN_MS=100
	team t
	"$RAKAZO_BIN" computer job t -- 'sleep 30' >/dev/null 2>&1 3>&- 4>&- &
	local job=$!
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"reservation\"][\"phase\"] if d[\"reservation\"] else None')\" = running ]" 20
	[ "$(rk computer show t --json | rk_json 'd["reservation"]["phases"]')" = '["reserved", "checkpoint", "running"]' ]
	expect_json_error 4 conflict rk computer lease acquire t --bot a --json
	expect_json_error 4 conflict rk computer exec t --bot a --json -- true
	expect_json_error 4 conflict rk screen takeover t --bot a --json
	expect_json_error 4 conflict rk computer stop t --json
	expect_json_error 4 conflict rk computer pause t --json
	kill -9 "$job"
	wait "$job" || true
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"reservation\"][\"state\"]')\" = interrupted ]" 20
	# a stale heartbeat never frees it: still reserved
	expect_json_error 4 conflict rk screen takeover t --bot a --json
	RAKAZO_OWNER=user:other expect_json_error 8 denied rk computer release t --json
	# its command still runs in the computer: release waits for it
	run rk computer release t --json
	[ "$status" -eq 4 ]
	local sid
	sid=$(rk computer show t --json | rk_json 'd["reservation"]["operation"]')
	rk computer kill t "$sid" --json >/dev/null
	rk computer release t --json >/dev/null
	rk computer lease acquire t --bot a --json >/dev/null
	expect_json_error 3 not_found rk computer release t --json
}

@test "idle: a computer idle for pause_after is checkpointed and paused as its own lifecycle command" {
	export RAKAZO_IDLE_SECOND_MS=20 RAKAZO_IDLE_SCAN_MS=100
	rk computer create --provider fake --name t --pause-after 30 --wait --json >/dev/null
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"state\"]')\" = paused ]" 20
	run rk computer execution list t --json
	[ "$(printf '%s' "$output" | rk_json '[e["op"] for e in d]')" = '["create", "pause"]' ]
	[ "$(printf '%s' "$output" | rk_json 'd[1]["command_key"][:5]')" = "idle:" ]
	[ "$(rk checkpoint list t --json | rk_json '[r["reason"] for r in d]')" = '["pause"]' ]
}

@test "idle: a running session, a live lease or a person's control keeps the computer from pausing" {
	export RAKAZO_IDLE_SECOND_MS=20 RAKAZO_IDLE_SCAN_MS=100
	rk computer create --provider fake --name t --team --pause-after 30 --wait --json >/dev/null
	rk screen takeover t --bot a --json >/dev/null
	rk computer lease acquire t --bot b --json >/dev/null
	rk computer exec t --yield-ms 250 -- 'sleep 3' >/dev/null 2>&1 || true
	sleep 2
	[ "$(rk computer show t --json | rk_json '[d["state"], d["idle"]["busy"]]')" = '["running", true]' ]
	rk screen release-control t --bot a
	rk computer lease release t --bot b --fence 1 --json >/dev/null
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"state\"]')\" = paused ]" 20
	# a paused computer has no schedule (the next scan drops it); the next call resumes it
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"idle\"] is None')\" = true ]" 10
	rk computer exec t --bot a -- true
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
}

@test "idle: a session held on another host keeps the computer busy until it could have ended on its own" {
	export RAKAZO_IDLE_SECOND_MS=20 RAKAZO_IDLE_SCAN_MS=100 RAKAZO_SESSION_IDLE_MS=5000
	local sid pid
	rk computer create --provider fake --name t --pause-after 30 --wait --json >/dev/null
	# the holder plays another host: its pid means nothing to this host's worker
	sid=$(RAKAZO_HOST_KEY=elsewhere rk computer exec t --json --yield-ms 250 -- 'sleep 60' | rk_json 'd["session"]')
	[ "$(rk_sql "SELECT holder_host FROM exec_sessions WHERE id = '$sid'")" = elsewhere ]
	# that host goes down: the holder is gone, the row still says running
	pid=$(rk_sql "SELECT holder_pid FROM exec_sessions WHERE id = '$sid'")
	kill -9 "$pid"
	# well past pause-after (30 idle seconds of 20 ms), within the session idle limit
	sleep 2
	[ "$(rk computer show t --json | rk_json '[d["state"], d["idle"]["busy"]]')" = '["running", true]' ]
	# past the limit the holder would have ended it itself: the computer pauses
	wait_for "[ \"\$(rk computer show t --json | rk_json 'd[\"state\"]')\" = paused ]" 30
}

# --- real docker computers ------------------------------------------------------------

docker_or_skip() {
	local up
	up=$(rk computer providers --json | rk_json '[p["available"] for p in d if p["name"] == "docker"][0]')
	if [ "$up" != true ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "docker is down and RAKAZO_REQUIRE_DOCKER=1" >&2; return 1; }
		skip "docker is down"
	fi
}

# A Team docker computer tc serving the cookie pages on 127.0.0.1:8765 inside it.
docker_team() {
	docker_or_skip
	rk computer create --name tc --team --wait --json >/dev/null
	[ "$(rk computer show tc --json | rk_json 'd["options"]["network"] if d["options"] else "none"')" = none ]
	rk computer file write tc shared/cookie_server.py <"$BATS_TEST_DIRNAME/../fixtures/cookie_server.py"
	rk computer exec tc -- 'cd shared && setsid -f python3 cookie_server.py 8765 requests.log </dev/null >/dev/null 2>&1'
	wait_for "rk computer exec tc -- 'python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", 8765))\"' >/dev/null 2>&1" 20
}

# Waits for bot $1's Chromium window on its display.
browser_up() {
	local slot
	slot=$(rk screen list tc --json | rk_json "[s['slot'] for s in d if s['bot_id'] == '$1'][0]")
	wait_for "rk computer exec tc -- 'DISPLAY=:$slot xdotool search --onlyvisible --class chromium' >/dev/null 2>&1" 30
}

# Bot $1 opens page $2 in its Chromium (a fresh query each time, so nothing comes from a cache).
visit() {
	VISITS=$((${VISITS:-0} + 1))
	rk screen act tc --bot "$1" --no-observe -a '[{"action":"key","keys":"ctrl+l"},{"action":"wait","ms":300},
		{"action":"type","text":"http://127.0.0.1:8765/'"$2"'?v='"$VISITS"'"},{"action":"wait","ms":200},
		{"action":"key","keys":"Return"}]' --json >/dev/null
}

# The server saw a request for page $1 carrying cookie text $2 ("" for none).
served() {
	rk computer file read tc shared/requests.log 2>/dev/null | awk -F'\t' -v p="/$1" -v c="$2" \
		'$1 == p && (c == "" ? $2 == "" : index($2, c) > 0) { found = 1 } END { exit !found }'
}

# Bot $1 visits page $2 until the server has seen a request for it with
# cookie text $3 ("" for none): a browser just up may drop the first keys.
visit_until() {
	local i
	for i in 1 2 3 4 5; do
		visit "$1" "$2"
		wait_for "served $2 '$3'" 8 2>/dev/null && return 0
	done
	echo "bot $1 never got page $2 with cookie '$3' to the server" >&2
	rk computer file read tc shared/requests.log >&2
	return 1
}

# The cookie names in bot $1's profile (Chromium's Cookies database, on the host).
cookies_of() {
	python3 - "$RAKAZO_DATA_DIR/homes/$(rk computer show tc --json | rk_json 'd["home_key"]')/.browser-profiles/$1/Default/Cookies" <<'EOF'
import sqlite3, sys
try:
    c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    print(" ".join(sorted(r[0] for r in c.execute("SELECT name FROM cookies"))))
except sqlite3.Error:
    print("")
EOF
}

@test "docker: two bots' Chromium desktops in parallel on two pages, independent cookies, profiles that persist across slots" {
	docker_team
	# both screens start at once
	rk screen shot tc --bot alpha --json >"$BATS_TEST_TMPDIR/a.json" 3>&- 4>&- &
	local pa=$!
	rk screen shot tc --bot beta --json >"$BATS_TEST_TMPDIR/b.json" 3>&- 4>&- &
	local pb=$!
	wait "$pa"
	wait "$pb"
	[ "$(rk screen list tc --json | rk_json 'sorted(s["slot"] for s in d if s["state"] == "live")')" = '[1, 2]' ]
	local slot_alpha
	slot_alpha=$(rk_json 'd["slot"]' <"$BATS_TEST_TMPDIR/a.json")
	browser_up alpha
	browser_up beta
	# in parallel, each on its own page
	visit_until alpha one "" 3>&- 4>&- &
	pa=$!
	visit_until beta two "" 3>&- 4>&- &
	pb=$!
	wait "$pa"
	wait "$pb"
	# each loads its page again: the server sees each browser's own cookie only
	visit_until alpha one "one=alpha" 3>&- 4>&- &
	pa=$!
	VISITS=100 visit_until beta two "two=beta" 3>&- 4>&- &
	pb=$!
	wait "$pa"
	wait "$pb"
	! served one "two=beta"
	! served two "one=alpha"
	# the two screens show different pages
	rk screen shot tc --bot alpha -o "$BATS_TEST_TMPDIR/alpha.png" --json >/dev/null
	rk screen shot tc --bot beta -o "$BATS_TEST_TMPDIR/beta.png" --json >/dev/null
	! cmp -s "$BATS_TEST_TMPDIR/alpha.png" "$BATS_TEST_TMPDIR/beta.png"
	# release closes alpha's Chromium cleanly: its cookie is on disk, in its profile only
	rk screen release tc --bot alpha
	[ "$(rk computer exec tc -- 'pgrep -fc "[-]-user-data-dir=$PWD/[.]browser-profiles/alpha( |$)" || true')" = 0 ]
	[ "$(cookies_of alpha)" = one ]
	[[ "$(cookies_of beta)" != *one* ]]
	# gamma takes alpha's old slot; alpha comes back on another one, with its own profile
	[ "$(rk screen shot tc --bot gamma --json | rk_json 'd["slot"]')" = "$slot_alpha" ]
	[ "$(rk screen shot tc --bot alpha --json | rk_json 'd["slot"]')" = 3 ]
	browser_up alpha
	: >"$BATS_TEST_TMPDIR/empty"
	rk computer file write tc shared/requests.log "$BATS_TEST_TMPDIR/empty"
	visit_until alpha one "one=alpha"
	# gamma's fresh profile on alpha's old slot has no cookie of alpha's
	browser_up gamma
	visit_until gamma two ""
	! served two "one=alpha"
	rk screen release tc --bot gamma
	[ "$(cookies_of gamma)" = two ]
}

@test "docker: takeover conflicts: live lease, active run, waiting_takeover, after release; control blocks the bot's actions" {
	docker_team
	rk screen shot tc --bot alpha --json >/dev/null
	local fence
	fence=$(rk computer lease acquire tc --bot alpha --holder run-1 --json | rk_json 'd["fence"]')
	run rk screen takeover tc --bot alpha
	[ "$status" -eq 4 ]
	[[ $output == *"Stop the bot first"* ]]
	rk computer lease release tc --bot alpha --fence "$fence"
	run_row tc alpha running r1
	run rk screen takeover tc --bot alpha
	[ "$status" -eq 4 ]
	[[ $output == *"Stop the bot first"* ]]
	run_row tc alpha waiting_takeover r1
	[ "$(rk screen takeover tc --bot alpha --json | rk_json 'd["waiting_run"]')" = r1 ]
	expect_json_error 4 conflict rk screen act tc --bot alpha -a '[{"action":"click","x":5,"y":5}]' --json
	rk screen shot tc --bot alpha --json >/dev/null
	rk screen release-control tc --bot alpha
	run_row tc alpha completed r1
	rk screen act tc --bot alpha -a '[{"action":"click","x":5,"y":5}]' --no-observe --json >/dev/null
	rk screen takeover tc --bot alpha --json >/dev/null
	rk screen release-control tc --bot alpha
	rk screen release tc --bot alpha
}

@test "run: a bot's model tools work in its folder and on its own screen (rakazo run --bot)" {
	local server=$BATS_TEST_DIRNAME/../../build/tests/emulators/model_server out=$BATS_TEST_TMPDIR/server.out
	team t
	printf 'the brief' | rk computer file write t shared/brief.txt
	"$server" "$BATS_TEST_DIRNAME/../fixtures/scenarios/run_team.json" --report "$BATS_TEST_TMPDIR/report.json" \
		>"$out" 2>"$BATS_TEST_TMPDIR/server.err" 3>&- 4>&- &
	local spid=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	export RAKAZO_MODEL_BASE_URL="$(sed -n 's|^listening on \(http://127.0.0.1:[0-9]*\)$|\1|p' "$out")/v1" RAKAZO_MODEL=scripted
	run rk run --computer t --bot writer 'draft it'
	wait "$spid"
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] and d["ok"] and d["failures"] == [], d["failures"]
' "$BATS_TEST_TMPDIR/report.json"
	[ "$(cat "$(home t)/bots/writer/draft.txt")" = "bot draft" ]
	[ "$(rk screen list t --json | rk_json '[(s["slot"], s["bot_id"]) for s in d]')" = '[[1, "writer"]]' ]
}
