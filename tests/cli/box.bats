#!/usr/bin/env bats
# The box provider through the CLI against the Box emulator
# (tests/emulators/box): noEnv machines, the TTL kept fresh while in use, stop
# archives and provision resumes the same id, the one desktop (a second
# screen is MULTI_SCREEN_UNAVAILABLE), the desktop secret kept off every
# output, the desktop watched and driven through the screen gateway (its
# noVNC page's websockify endpoint as the upstream), and the fault cases.
# Skips without node, dockerd or the computer image, unless
# RAKAZO_REQUIRE_DOCKER=1.

load helper
load gateway

setup_file() {
	export RAKAZO_TEST_LABEL="bats-box-$$"
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	RK_ROOT="$BATS_TEST_DIRNAME/../.." rk_emulator_file_up box
}

teardown_file() {
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	rk_emulator_file_down
}

setup() {
	rk_remote_setup
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	rk_emulator_require BOX_EMULATOR_URL || return 1
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/faults" >/dev/null
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
}

teardown() {
	rk_delete_computers
	rk_kill_all
}

fault() {
	curl -sf -X POST -d "$1" "$BOX_EMULATOR_URL/_emulator/faults" >/dev/null
}

seen() {
	curl -sf "$BOX_EMULATOR_URL/_emulator/requests" |
		python3 -c 'import json, re, sys; print(sum(1 for r in json.load(sys.stdin) if r["method"] == sys.argv[1] and re.search(sys.argv[2], r["path"])))' "$1" "$2"
}

# The emulator's view of box $1 (its ref): EXPR over d.
box_state() {
	curl -sf "$BOX_EMULATOR_URL/_emulator/boxes" | rk_json "[b for b in d if b['id'] == '$1'][0]$2"
}

bx_create() {
	run rk computer create --provider box --name "${1:-b}" --wait --timeout 120 --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

ref() {
	rk computer show "${1:-b}" --json | rk_json 'd["provider_ref"]'
}

@test "box: create with noEnv (no account key in the machine), exec, files, delete" {
	bx_create
	local id
	id=$(ref)
	[ "$(box_state "$id" '["noEnv"]')" = true ]
	[ "$(box_state "$id" '["ttlSeconds"]')" = 7200 ]
	run rk computer exec b --json -- 'env; pwd'
	[ "$status" -eq 0 ]
	local out
	out=$(printf '%s' "$output" | rk_json 'd["output"]')
	[[ $out == *RAKAZO_SANDBOX=computer* ]]
	[[ $out != *ASCII_API_KEY* ]] && [[ $out != *"$BOX_API_KEY"* ]]
	[[ $out == *"/home/user/rakazo-home" ]]
	printf 'abc' | rk computer file write b notes/a.txt
	[ "$(rk computer file read b notes/a.txt)" = abc ]
	local sid
	sid=$(rk computer exec b --json -- 'read v; echo got $v; cat; echo end' | rk_json 'd["session"]')
	run rk computer input b "$sid" 'y\nmore\n' --json
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = "got y
more" ]
	run rk computer input b "$sid" '\x04' --yield-ms 5000 --json
	[ "$(printf '%s' "$output" | rk_json '[d["running"], d["output"]]')" = '[false, "end\n"]' ]
	expect_status 1 rk computer exec b --tty --json -- ls
	run rk computer delete b --wait --json
	[ "$status" -eq 0 ]
	[ "$(curl -sf "$BOX_EMULATOR_URL/_emulator/boxes" | rk_json "len([x for x in d if x['id'] == '$id'])")" = 0 ]
}

@test "box: stop archives the machine; the next call resumes the same id with the files" {
	bx_create
	local id
	id=$(ref)
	printf 'kept' | rk computer file write b k.txt
	run rk computer stop b --wait --json
	[ "$status" -eq 0 ]
	[ "$(box_state "$id" '["state"]')" = archived ]
	run rk computer resume b --wait --json
	[ "$status" -eq 0 ]
	[ "$(ref)" = "$id" ]
	[ "$(box_state "$id" '["state"]')" = ready ]
	[ "$(rk computer file read b k.txt)" = kept ]
	[ "$(seen POST "/boxes/$id/resume$")" = 1 ]
}

@test "box: the TTL is refreshed while the computer is in use, at most once a minute" {
	bx_create
	local id before after
	id=$(ref)
	before=$(box_state "$id" '["expiresAt"]')
	rk computer exec b --json -- true >/dev/null
	[ "$(seen PATCH "/boxes/$id$")" = 0 ] # refreshed at create: not again within the minute
	rm -f "$RAKAZO_DATA_DIR/run/$(rk_id b)/box-ttl" # the minute has passed
	sleep 1.1
	rk computer exec b --json -- true >/dev/null
	[ "$(seen PATCH "/boxes/$id$")" = 1 ]
	after=$(box_state "$id" '["expiresAt"]')
	[[ $after > $before ]]
}

@test "box: one desktop: display 0 works through ImageMagick and xdotool, a second screen is MULTI_SCREEN_UNAVAILABLE (5)" {
	bx_create
	run rk screen shot b -o "$BATS_TEST_TMPDIR/0.png" --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"]]')" = '[1920, 1080]' ]
	rk screen act b --actions '[{"action":"move","x":200,"y":210}]' --no-observe --json >/dev/null
	run rk computer exec b --json -- 'DISPLAY=:0 xdotool getmouselocation'
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == "x:200 y:210 "* ]]
	expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen shot b -d 1 --json
	grep -q 'does not support multiple screens' "$BATS_TEST_TMPDIR/stderr"
	expect_json_error 5 MULTI_SCREEN_UNAVAILABLE rk screen act b -d 2 --actions '[{"action":"move","x":1,"y":1}]' --json
	# and the emulator itself refuses a second desktop
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $BOX_API_KEY" \
		-H 'content-type: application/json' -d '{"display":1}' "$BOX_EMULATOR_URL/api/box/v1/boxes/$(ref)/desktop")
	[ "$code" = 409 ]
}

@test "box: the desktop's secret URL is kept 0600 for the gateway and appears in no output or log" {
	bx_create
	run rk screen shot b -o "$BATS_TEST_TMPDIR/0.png" --json
	[ "$status" -eq 0 ]
	local f token
	f="$RAKAZO_DATA_DIR/run/$(rk_id b)/box-desktop.url"
	[ -f "$f" ]
	[ "$(stat -c %a "$f")" = 600 ]
	token=$(sed -n 's/.*_token=\([^&]*\).*/\1/p' "$f")
	[ -n "$token" ]
	[[ $output != *"$token"* ]]
	run rk computer show b --json
	[[ $output != *"$token"* ]]
	! grep -rqaF "$token" "$RAKAZO_DATA_DIR/log" "$RAKAZO_DATA_DIR/rakazo.db"
}

@test "box: 429 on a command is retried; a command reply dropped after it ran is outcome_unknown, never success" {
	bx_create
	fault '{"method":"POST","path":"/command$","status":429,"retry_after":0,"times":2}'
	run rk computer exec b --json -- 'echo retried'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = retried ]
	fault '{"method":"POST","path":"/command$","drop":"after","times":1}'
	expect_status 7 rk computer exec b --json -- 'echo once >> once.txt'
	# it did run: the caller was told to check, not that it failed or succeeded
	[ "$(rk computer file read b once.txt)" = once ]
}

@test "box: a vanished machine is replaced (a new id) and its workspace restored" {
	bx_create
	printf 'kept' | rk computer file write b notes/keep.txt
	rk checkpoint create b --json >/dev/null
	local old new
	old=$(ref)
	curl -sf -X POST "$BOX_EMULATOR_URL/_emulator/boxes/$old/vanish" >/dev/null
	run rk computer exec b --json -- 'cat notes/keep.txt'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = kept ]
	new=$(ref)
	[ -n "$new" ] && [ "$new" != "$old" ]
}

@test "box: a delete without the confirmation header is refused by the API" {
	bx_create
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $BOX_API_KEY" \
		"$BOX_EMULATOR_URL/api/box/v1/boxes/$(ref)")
	[ "$code" = 400 ]
	[ "$(rk computer show b --json | rk_json 'd["state"]')" = running ]
}

@test "box: describe says one desktop: multiScreen false in providers and in the computer's capabilities" {
	run rk computer providers --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[p["available"] for p in d if p["name"] == "box"][0]')" = true ]
	[ "$(printf '%s' "$output" | rk_json '[p["capabilities"]["multiScreen"] for p in d if p["name"] == "box"][0]')" = false ]
	[ "$(printf '%s' "$output" | rk_json '[p["capabilities"]["desktop"] for p in d if p["name"] == "box"][0]')" = true ]
	[[ ,$(printf '%s' "$output" | rk_json '[p["caps"] for p in d if p["name"] == "box"][0]'), != *,multiScreen,* ]]
	bx_create
	run rk computer show b --json
	[ "$(printf '%s' "$output" | rk_json 'd["capabilities"]["multiScreen"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["capabilities"]["graphical"]')" = true ]
}

@test "box: 5xx on reads are retried; a 500 on create fails it (unavailable, 5) and is not retried (a mutation)" {
	bx_create
	printf 'x' | rk computer file write b f.txt
	fault '{"method":"GET","path":"/artifacts/raw$","status":503,"times":2}'
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
	[ "$(rk computer file read b f.txt)" = x ]
	[ "$(seen GET '/artifacts/raw$')" = 3 ]
	fault '{"method":"GET","path":"/boxes/[^/]+$","status":502,"times":2}'
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
	run rk computer exec b --json -- 'echo through'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = through ]
	[ "$(seen GET '/boxes/[^/]+$')" -ge 3 ]
	fault '{"method":"POST","path":"/boxes$","status":500,"times":5}'
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
	expect_status 5 rk computer create --provider box --name c --wait --timeout 120 --json
	[ "$(seen POST '/boxes$')" = 1 ]
	[ "$(rk computer show c --json | rk_json 'd["state"]')" = failed ]
}

@test "box: slow replies are waited for" {
	bx_create
	fault '{"method":"POST","path":"/command$","delay_ms":1500,"times":1}'
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
	run rk computer exec b --json -- 'echo slow'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = slow ]
	# waited for, not sent again (a command is a mutation)
	[ "$(seen POST '/command$')" = 1 ]
	printf 'late' | rk computer file write b late.txt
	fault '{"method":"GET","path":"/artifacts/raw$","delay_ms":1500,"times":1}'
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/requests" >/dev/null
	[ "$(rk computer file read b late.txt)" = late ]
	[ "$(seen GET '/artifacts/raw$')" = 1 ]
}

# --- the desktop through the screen gateway ------------------------------------------------

# The desktop's noVNC address (its _token is the secret), its port and secret.
desktop_url() {
	cat "$RAKAZO_DATA_DIR/run/$(rk_id b)/box-desktop.url"
}
desktop_port() {
	desktop_url | sed -n 's#^http://127\.0\.0\.1:\([0-9]*\)/.*#\1#p'
}
desktop_secret() {
	desktop_url | sed -n 's/.*_token=\([^&]*\).*/\1/p'
}

# Box b with xclient.py on its one desktop (:0; a grey canvas, clicks draw
# squares and are logged in st/events), and a gateway.
box_desktop() {
	bx_create
	rk computer file write b xclient.py <"$BATS_TEST_DIRNAME/../fixtures/xclient.py"
	rk screen shot b -o "$BATS_TEST_TMPDIR/first.png" >/dev/null
	rk computer exec b -- 'rm -rf st && mkdir st && DISPLAY=:0 setsid -f python3 xclient.py st </dev/null >/dev/null 2>&1'
	wait_for "rk computer file read b st/ready >/dev/null 2>&1" 30
	wait_for 'rk screen shot b -o "$BATS_TEST_TMPDIR/ready.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/ready.png" 640 500)" = "128 128 128" ]' 30
	gateway_start
}

box_events() {
	rk computer file read b st/events 2>/dev/null || true
}

pointer() {
	rk computer exec b --json -- 'DISPLAY=:0 xdotool getmouselocation' | rk_json 'd["output"]'
}

@test "box: through the gateway a view token sees the desktop and its input never reaches it; a control token's click does" {
	node_or_skip
	box_desktop
	rk screen act b -a '[{"action":"move","x":100,"y":100}]' --no-observe >/dev/null
	view=$(share_token b --view)
	# a real RFB handshake and a full frame from the box's x11vnc, through its websockify
	# (x11vnc with no client of its own may first serve what it last saw: wait for the canvas)
	run rfb "ws://$GW/websockify?token=$view" --wait-pixel 640,500=128,128,128 --click 300,300 --key 0x61 --pixel 290,290
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1920x1080"* ]]
	[[ "$output" == *"290,290 128 128 128"* ]]
	[[ "$(pointer)" == "x:100 y:100 "* ]]
	run novnc "ws://$GW/websockify?token=$view" --wait-pixel 640,400=128,128,128 --click 320,320 --pixel 310,310
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json '[d["connected"], d["width"], d["height"], d["clicked"], d["pixels"]["310,310"]]')" = '[true, 1920, 1080, true, [128, 128, 128]]' ]
	# the agent's own click arrives; the viewers' never did
	rk screen act b -a '[{"action":"click","x":500,"y":500}]' --no-observe >/dev/null
	wait_for '[[ "$(box_events)" == *"press 1 500 500"* ]]' 30
	[[ "$(box_events)" != *"300 300"* ]]
	[[ "$(box_events)" != *"320 320"* ]]
	[[ "$(box_events)" != *"key"* ]]
	control=$(share_token b --control)
	run novnc "ws://$GW/websockify?token=$control" --click 300,300 --wait-pixel 290,290=255,0,0
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json 'd["pixels"]["290,290"]')" = '[255, 0, 0]' ]
	wait_for '[[ "$(box_events)" == *"press 1 300 300"* ]]' 30
	run rfb "ws://$GW/websockify?token=$control" --click 700,400
	[ "$status" -eq 0 ]
	[[ "$(pointer)" == "x:700 y:400 "* ]]
	wait_for '[[ "$(box_events)" == *"press 1 700 400"* ]]' 30
	wait_for 'rk screen shot b -o "$BATS_TEST_TMPDIR/after.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/after.png" 690 390)" = "255 0 0" ]' 30
}

@test "box: the desktop's _token appears in no output of share, shares, info, the gateway's pages, replies and log, or the database" {
	bx_create
	gateway_start
	local out="$BATS_TEST_TMPDIR/all" secret view
	rk screen share b --view --json >"$out"
	view=$(rk_json 'd["token"]' <"$out")
	rk screen share b --control >>"$out" 2>&1
	rk screen shares --json >>"$out"
	rk screen shares --all >>"$out"
	rk screen info b --json >>"$out"
	rk computer show b --json >>"$out"
	secret=$(desktop_secret)
	[ -n "$secret" ] && [ ${#secret} -ge 16 ]
	rfb "ws://$GW/websockify?token=$view" --pixel 1,1 >>"$out" 2>&1
	curl -s --max-time 10 "http://$GW/websockify?token=$view" >>"$out"
	curl -s --max-time 10 "http://$GW/" >>"$out"
	curl -s --max-time 10 -H 'Upgrade: websocket' -H 'Connection: Upgrade' "http://$GW/websockify?token=AAAA" >>"$out"
	# a refusal names the endpoint, never its secret
	curl -sf -X POST "$BOX_EMULATOR_URL/_emulator/boxes/$(ref)/desktop/rotate" >/dev/null
	rfb "ws://$GW/websockify?token=$view" --pixel 1,1 >>"$out" 2>&1 || true
	grep -q "refused its secret (HTTP 401)" "$out"
	grep -q "ws://127.0.0.1:$(desktop_port)/websockify" "$out"
	cat "$BATS_TEST_TMPDIR/gw.out" "$BATS_TEST_TMPDIR/gw.err" >>"$out"
	cat "$RAKAZO_DATA_DIR/log/"* >>"$out"
	sqlite3 "$RAKAZO_DATA_DIR/rakazo.db" .dump >>"$out"
	grep -q "cap_" "$out"
	! grep -qF "$secret" "$out"
	! grep -qF "$(desktop_secret)" "$out"
	! grep -q "_token=" "$out"
	# the computer goes: so do its capabilities' forwarders, secret and all
	[ -n "$(ls "$RAKAZO_DATA_DIR/run/gateway" | grep '\.sock$')" ]
	rk computer delete b --wait --json >/dev/null
	wait_for '[ -z "$(ls "$RAKAZO_DATA_DIR/run/gateway" | grep "\.sock$")" ]' 20
	[ "$(upgrade_status "$view")" = 403 ]
}

@test "box: a desktop whose secret changed or whose endpoint is gone: share is unavailable (5) and a client through the gateway is told why, with no hang" {
	bx_create
	gateway_start
	local view port secret held
	view=$(share_token b --view)
	port=$(desktop_port)
	secret=$(desktop_secret)
	[ -n "$port" ] && [ -n "$secret" ]
	# the emulator's websockify: 401 without the secret or with a wrong one
	[ "$(rfb "ws://127.0.0.1:$port/websockify" --status)" = 401 ]
	[ "$(rfb "ws://127.0.0.1:$port/websockify?_token=wrong" --status)" = 401 ]
	[ "$(rfb "ws://127.0.0.1:$port/websockify?_token=$secret" --status)" = 101 ]
	# the secret changes: the capability made with the old one gets a reason, at once
	curl -sf -X POST "$BOX_EMULATOR_URL/_emulator/boxes/$(ref)/desktop/rotate" >/dev/null
	run rfb "ws://$GW/websockify?token=$view" --pixel 1,1
	[ "$status" -eq 4 ]
	[[ "$output" == *"refused its secret (HTTP 401)"* ]]
	# and noVNC shows it (when its npm packages are here: tests/gateway/setup.sh)
	if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -f "$NODE_DIR/node_modules/@novnc/novnc/core/rfb.js" ]; then
		run novnc "ws://$GW/websockify?token=$view"
		echo "$output"
		[ "$(echo "$output" | rk_json 'd["connected"]')" = false ]
		[[ "$(echo "$output" | rk_json 'd["security_failure"]')" == *"refused its secret (HTTP 401)"* ]]
	fi
	# a page address with a wrong secret, or none: share refuses to hand out a token
	fault '{"method":"POST","path":"/desktop$","status":200,"times":5,"body":{"state":"ready","vnc":true,"url":"http://127.0.0.1:'"$port"'/vnc.html?_token=wrong"}}'
	expect_json_error 5 unavailable rk screen share b --view --json
	grep -q "HTTP 401" "$BATS_TEST_TMPDIR/stderr"
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/faults" >/dev/null
	fault '{"method":"POST","path":"/desktop$","status":200,"times":5,"body":{"state":"ready","vnc":true,"url":"http://127.0.0.1:'"$port"'/vnc.html"}}'
	expect_json_error 5 unavailable rk screen share b --control --json
	grep -q "HTTP 401" "$BATS_TEST_TMPDIR/stderr"
	curl -sf -X DELETE "$BOX_EMULATOR_URL/_emulator/faults" >/dev/null
	[ "$(rk screen shares --json | rk_json 'len(d)')" = 1 ]
	# a share with the current secret works again
	held=$(share_token b --view)
	rfb "ws://$GW/websockify?token=$held" --hold >"$BATS_TEST_TMPDIR/hold" 2>&1 &
	wait_for 'grep -q connected "$BATS_TEST_TMPDIR/hold"' 30
	# the endpoint goes away: the connected viewer is dropped, a new one is told why
	curl -sf -X POST "$BOX_EMULATOR_URL/_emulator/boxes/$(ref)/desktop/down" >/dev/null
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 30
	run rfb "ws://$GW/websockify?token=$held" --pixel 1,1
	[ "$status" -eq 4 ]
	[[ "$output" == *"cannot reach the desktop's websockify endpoint ws://127.0.0.1:$port/websockify"* ]]
	expect_json_error 5 unavailable rk screen share b --view --json
	grep -q "cannot reach" "$BATS_TEST_TMPDIR/stderr"
	# the HTTP API's desktop/stream says the same: 503, unavailable
	eval '"$RAKAZO_BIN" serve --listen 127.0.0.1:0 --token-file "$BATS_TEST_TMPDIR/token" --url-file "$BATS_TEST_TMPDIR/url" >/dev/null 2>&1 &' "$RK_CLOSE_FDS"
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	local code
	code=$(curl -s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' --max-time 60 -X POST \
		-H "Authorization: Bearer $(cat "$BATS_TEST_TMPDIR/token")" -H 'Content-Type: application/json' -d '{}' \
		"$(cat "$BATS_TEST_TMPDIR/url")/v1/computers/$(rk_id b)/desktop/stream")
	cat "$BATS_TEST_TMPDIR/reply"
	[ "$code" = 503 ]
	grep -q '"code":"unavailable"' "$BATS_TEST_TMPDIR/reply"
	# its detail is in the server's log, with the endpoint and not its secret
	local eid
	eid=$(rk_json 'd["error"]["errorId"]' <"$BATS_TEST_TMPDIR/reply")
	grep "$eid" "$RAKAZO_DATA_DIR/log/rakazo.log" | grep -q "cannot reach the desktop's websockify endpoint ws://127.0.0.1:$port/websockify"
	! grep -q "_token=" "$BATS_TEST_TMPDIR/reply" "$RAKAZO_DATA_DIR/log/rakazo.log"
}
