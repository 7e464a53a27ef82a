#!/usr/bin/env bats
# rakazo screen share / revoke / gateway: capabilities and the WebSocket
# relay. The fake provider has no VNC, so it covers the refusals; the
# docker ones drive a real desktop, through the gateway with a real noVNC
# client (npm @novnc/novnc in headless Chromium, tests/gateway/setup.sh)
# and with tests/gateway/rfb_ws.py. They skip when docker, node or the npm
# packages are missing (RAKAZO_REQUIRE_DOCKER=1: fail instead).

load helper
load gateway

# A docker computer d with xclient.py on display :1 (grey canvas; clicks
# draw squares and are logged in st/events), and a gateway.
docker_desktop() {
	docker_or_skip
	rk computer create --name d --wait --json >/dev/null
	rk computer file write d xclient.py <"$BATS_TEST_DIRNAME/../fixtures/xclient.py"
	[ "$(rk screen info d --display 1 --json | rk_json 'd["transport"]')" = vnc ]
	rk computer exec d -- 'rm -rf st && mkdir st && DISPLAY=:1 setsid -f python3 xclient.py st </dev/null >/dev/null 2>&1'
	wait_for "rk computer file read d st/ready >/dev/null 2>&1" 20
	# and its grey canvas is on the screen
	wait_for 'rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/ready.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/ready.png" 640 500)" = "128 128 128" ]' 10
	gateway_start
}

events() {
	rk computer file read d st/events 2>/dev/null || true
}

# --- refusals, no desktop needed ------------------------------------------------------

@test "share: usage errors and a display with no VNC store nothing" {
	rk_fake c
	expect_status 2 rk screen share c
	[[ "$output" == *"exactly one of --view and --control"* ]]
	expect_status 2 rk screen share c --view --control
	expect_status 2 rk screen share c --view --ttl 0
	expect_status 2 rk screen share c --view --bot b1 --display 2
	expect_status 3 rk screen share nosuch --view
	# the fake provider captures itself: no VNC for the gateway to relay
	expect_status 1 rk screen share c --view --json
	[[ "$output" == *'"code":"unsupported"'* ]]
	[[ "$output" == *"relays VNC only"* ]]
	# a bot's screen: a bad bot id is a usage error; a bot with no screen yet
	# is not_found with how to start it; the fake's bot screens have no VNC
	expect_status 2 rk screen share c --view --bot .bad
	expect_json_error 3 not_found rk screen share c --view --bot b1 --json
	[[ "$(rk screen share c --view --bot b1 2>&1)" == *"rakazo screen shot c --bot b1"* ]]
	rk screen shot c --bot b1 --json >/dev/null
	expect_status 1 rk screen share c --control --bot b1
	[[ "$output" == *"relays VNC only"* ]]
	run rk screen revoke --all --json
	[ "$status" -eq 0 ]
	[ "$output" = '{"revoked":0}' ]
	[ "$(rk screen shares --all --json)" = '[]' ]
}

@test "revoke: unknown tokens and ids are not_found, bad ones invalid, and --all takes no argument" {
	expect_status 3 rk screen revoke AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
	expect_status 3 rk screen revoke cap_nosuch
	expect_status 2 rk screen revoke 'not a token'
	expect_status 2 rk screen revoke
	expect_status 2 rk screen revoke --all cap_x
}

@test "gateway: bad --listen is a usage error, a taken port is unavailable" {
	expect_status 2 rk screen gateway --listen nonsense
	expect_status 2 rk screen gateway --listen 127.0.0.1:99999
	gateway_start
	expect_status 5 rk screen gateway --listen "$GW"
}

@test "gateway: no, malformed and unknown tokens get 401; plain HTTP gets 400" {
	gateway_start
	[ "$(upgrade_status)" = 401 ]
	[ "$(upgrade_status bad)" = 401 ]
	[ "$(upgrade_status AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA)" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://$GW/websockify")" = 400 ]
	# the refusal is logged
	grep -q "refused a connection (401)" "$RAKAZO_DATA_DIR/log/rakazo.log"
	[ "$(cat "$RAKAZO_DATA_DIR/run/gateway/address")" = "$GW" ]
	# SIGTERM ends it cleanly, and share's URLs stop naming its address
	kill -TERM "$GW_PID"
	wait_for '! kill -0 "$GW_PID" 2>/dev/null' 10
	[ ! -e "$RAKAZO_DATA_DIR/run/gateway/address" ]
}

# --- a real desktop ------------------------------------------------------------------------

@test "docker: noVNC with a view token sees the frame and its click never reaches the screen; with control it does" {
	node_or_skip
	docker_desktop
	view=$(share_token d --display 1 --view)
	run novnc "ws://$GW/websockify?token=$view" --wait-pixel 640,400=128,128,128 --click 300,300 --pixel 290,290
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json '[d["connected"], d["width"], d["height"]]')" = '[true, 1280, 800]' ]
	[ "$(echo "$output" | rk_json 'd["pixels"]["640,400"]')" = '[128, 128, 128]' ]
	[ "$(echo "$output" | rk_json 'd["clicked"]')" = true ]
	# the raw client's click and key too, through the same kind of token
	run rfb "ws://$GW/websockify?token=$view" --click 320,320 --key 0x61 --pixel 310,310
	[ "$status" -eq 0 ]
	[[ "$output" == *"310,310 128 128 128"* ]]
	# a later click by the agent arrives; the viewers' earlier ones never did
	rk screen act d --display 1 -a '[{"action":"click","x":500,"y":500}]' --no-observe >/dev/null
	wait_for '[[ "$(events)" == *"press 1 500 500"* ]]' 20
	[[ "$(events)" != *"300 300"* ]]
	[[ "$(events)" != *"320 320"* ]]
	[[ "$(events)" != *"key"* ]]
	rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/v.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/v.png" 290 290)" = "128 128 128" ]

	control=$(share_token d --display 1 --control)
	run novnc "ws://$GW/websockify?token=$control" --click 300,300 --wait-pixel 290,290=255,0,0
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json 'd["pixels"]["290,290"]')" = '[255, 0, 0]' ]
	wait_for '[[ "$(events)" == *"press 1 300 300"* ]]' 20
}

@test "docker: revoked, expired and stale-after-slot-reuse tokens get 403, and revoking drops a connected viewer" {
	docker_desktop
	view=$(share_token d --display 1 --view)
	control=$(share_token d --display 1 --control)
	short=$(share_token d --display 1 --view --ttl 6)
	# a viewer connected when its capability expires is dropped (6 s: time
	# enough to connect on a loaded machine)
	rfb "ws://$GW/websockify?token=$short" --hold >"$BATS_TEST_TMPDIR/hold-short" 2>&1 &
	[ "$(upgrade_status "$view")" = 101 ]
	run rfb "ws://$GW/websockify?token=$view" --pixel 640,500
	[ "$status" -eq 0 ]
	[[ "$output" == *"640,500 128 128 128"* ]]
	# expiry: refused once the second is over, and its forwarder is gone
	wait_for '[ "$(upgrade_status "$short")" = 403 ]' 20
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold-short"' 10
	grep -q connected "$BATS_TEST_TMPDIR/hold-short"
	rk screen share d --display 1 --view --json >/dev/null # a fresh one still works

	# a viewer connected when its capability is revoked is disconnected
	rfb "ws://$GW/websockify?token=$view" --hold >"$BATS_TEST_TMPDIR/hold" 2>&1 &
	wait_for 'grep -q connected "$BATS_TEST_TMPDIR/hold"' 20
	run rk screen revoke --json -- "$view"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = '{"revoked":1}' ]
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 20
	[ "$(upgrade_status "$view")" = 403 ]

	# slot reuse: the display is closed and started again for the next tenant
	[ "$(upgrade_status "$control")" = 101 ]
	rk screen close d --display 1
	[ "$(rk screen info d --display 1 --json | rk_json 'd["transport"]')" = vnc ]
	[ "$(upgrade_status "$control")" = 403 ]
	run rfb "ws://$GW/websockify?token=$control" --click 300,300
	[ "$status" -ne 0 ]
	[[ "$output" == *"status 403"* ]]
	# no capability socket outlives its capability
	wait_for '[ -z "$(ls "$RAKAZO_DATA_DIR/run/gateway" | grep -v address)" ]' 10
	# the next tenant's own share works
	fresh=$(share_token d --display 1 --view)
	[ "$(upgrade_status "$fresh")" = 101 ]
	grep -q "refused a connection (403)" "$RAKAZO_DATA_DIR/log/rakazo.log"
	# and no token ever is
	! grep -qF -e "$view" -e "$control" -e "$fresh" "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "docker: revoke --all ends every capability's forwarder" {
	docker_desktop
	a=$(share_token d --display 1 --view)
	b=$(share_token d --display 1 --control)
	run rk screen shares --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json '[[c["policy"], c["display"], c["state"]] for c in d]')" = '[["view", 1, "live"], ["control", 1, "live"]]' ]
	# the tokens are shown once, at share, and never stored
	[[ "$output" != *"$a"* && "$output" != *"$b"* && "$output" != *token* ]]
	# (a negated command never fails a bats test: the match itself returns 1)
	local dump
	if [ -n "${RAKAZO_DATABASE_URL:-}" ]; then
		dump=$(pg_dump -a "$RAKAZO_DATABASE_URL")
	else
		dump=$(sqlite3 "$RAKAZO_DATA_DIR/rakazo.db" .dump)
	fi
	[ -n "$dump" ]
	if grep -qF -e "$a" -e "$b" <<<"$dump"; then echo "a token is stored" >&2; return 1; fi
	run rk screen revoke --all --json
	[ "$status" -eq 0 ]
	[ "$output" = '{"revoked":2}' ]
	[ "$(upgrade_status "$a")" = 403 ]
	[ "$(upgrade_status "$b")" = 403 ]
	[ -z "$(ls "$RAKAZO_DATA_DIR/run/gateway" | grep -v address)" ]
	[ "$(rk screen shares --json)" = '[]' ]
	[ "$(rk screen shares --all --json | rk_json '[c["state"] for c in d]')" = '["revoked", "revoked"]' ]
	# the events file saw none of it
	[ -z "$(events)" ]
}

@test "docker: a close whose gateway teardown fails keeps the display for a retry" {
	docker_desktop
	tok=$(share_token d --display 1 --view)
	id=$(ls "$RAKAZO_DATA_DIR/run/gateway" | sed -n 's/\.lock$//p')
	[ -n "$id" ]
	# something else holds the capability's lock (naming no pid to signal):
	# teardown cannot confirm its clients are gone
	lock="$RAKAZO_DATA_DIR/run/gateway/$id.lock"
	rm -f "$lock"
	echo 1 >"$lock"
	flock -o "$lock" sleep 60 &
	holder=$!
	wait_for '! flock -n "$lock" true' 10
	expect_status 6 rk screen close d --display 1
	[[ "$output" == *"still connected, so the slot stays reserved"* ]]
	# the display was not stopped: the same x11vnc still serves the holder
	rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/kept.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/kept.png" 640 500)" = "128 128 128" ]
	[[ "$(rk computer exec d -- 'rakazo-desktop status 1')" == *"x11vnc running"* ]]
	# and the capability is revoked already
	[ "$(upgrade_status "$tok")" = 403 ]
	# once it can be confirmed, the retry goes through
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	rk screen close d --display 1
	[[ "$(rk computer exec d -- 'rakazo-desktop status 1')" == *"x11vnc stopped"* ]]
}

# --- a bot's screen on a Team computer ------------------------------------------------------

# A Team docker computer tc (networking off) where bot alpha's screen is
# up, with xclient.py over its Chromium (grey; clicks draw squares and are
# logged in st/events); sets SLOT to alpha's display and starts a gateway.
team_desktop() {
	docker_or_skip
	rk computer create --name tc --team --wait --json >/dev/null
	[ "$(rk computer show tc --json | rk_json 'd["options"]["network"] if d["options"] else "none"')" = none ]
	SLOT=$(rk screen shot tc --bot alpha --json | rk_json 'd["slot"]')
	# the bot's Chromium first, so the test client maps over it
	wait_for "rk computer exec tc -- 'DISPLAY=:$SLOT xdotool search --onlyvisible --class chromium' >/dev/null 2>&1" 30
	rk computer file write tc xclient.py <"$BATS_TEST_DIRNAME/../fixtures/xclient.py"
	rk computer exec tc -- "rm -rf st && mkdir st && DISPLAY=:$SLOT setsid -f python3 xclient.py st --above </dev/null >/dev/null 2>&1"
	wait_for "rk computer file read tc st/ready >/dev/null 2>&1" 30
	wait_for 'rk screen shot tc --bot alpha -o "$BATS_TEST_TMPDIR/ready.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/ready.png" 640 500)" = "128 128 128" ]' 20
	gateway_start
}

team_events() {
	rk computer file read tc st/events 2>/dev/null || true
}

@test "docker: a bot's screen: noVNC's view sees it and never acts; control works only under takeover, and its click reaches the bot's screen" {
	node_or_skip
	team_desktop
	run rk screen share tc --bot alpha --view --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json '[d["bot"], d["display"], d["policy"], d["generation"] > 0]')" = "[\"alpha\", $SLOT, \"view\", true]" ]
	view=$(echo "$output" | rk_json 'd["token"]')
	# (away from the pointer at the middle, which x11vnc draws into the frame)
	run novnc "ws://$GW/websockify?token=$view" --wait-pixel 200,600=128,128,128 --click 300,300 --pixel 290,290
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json '[d["connected"], d["clicked"], d["pixels"]["200,600"]]')" = '[true, true, [128, 128, 128]]' ]
	# no control without the takeover, by --bot or by its display
	expect_json_error 8 denied rk screen share tc --bot alpha --control --json
	[[ "$(rk screen share tc --bot alpha --control 2>&1)" == *"rakazo screen takeover"* ]]
	expect_status 8 rk screen share tc --display "$SLOT" --control
	rk screen takeover tc --bot alpha --json >/dev/null
	control=$(share_token tc --bot alpha --control)
	run novnc "ws://$GW/websockify?token=$control" --click 400,300 --wait-pixel 390,290=255,0,0
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json 'd["pixels"]["390,290"]')" = '[255, 0, 0]' ]
	wait_for '[[ "$(team_events)" == *"press 1 400 300"* ]]' 20
	# the viewer's click never arrived
	[[ "$(team_events)" != *"300 300"* ]]
	# the bot's own actions wait while the person has control
	expect_json_error 4 conflict rk screen act tc --bot alpha -a '[{"action":"click","x":5,"y":5}]' --json
	# someone else's takeover token: the sharer must hold the control
	RAKAZO_OWNER=user:other expect_json_error 8 denied rk screen share tc --bot alpha --control --json
}

@test "docker: takeover conflicts through the gateway: a live lease or an active run is 409, waiting_takeover is not; release-control ends control tokens" {
	team_desktop
	rk screen takeover tc --bot alpha --json >/dev/null
	view=$(share_token tc --bot alpha --view)
	control=$(share_token tc --bot alpha --control)
	[ "$(upgrade_status "$control")" = 101 ]
	# the bot takes its execution lease: Stop the bot first (409; the CLI's exit 4)
	fence=$(rk computer lease acquire tc --bot alpha --holder run-1 --json | rk_json 'd["fence"]')
	[ "$(upgrade_status "$control")" = 409 ]
	run rk screen share tc --bot alpha --control
	[ "$status" -eq 4 ]
	[[ "$output" == *"Stop the bot first"* ]]
	grep -q "refused a connection (409)" "$RAKAZO_DATA_DIR/log/rakazo.log"
	# a viewer is never in conflict
	[ "$(upgrade_status "$view")" = 101 ]
	rk computer lease release tc --bot alpha --fence "$fence"
	[ "$(upgrade_status "$control")" = 101 ]
	# an active run: 409; a run waiting for the person: let through
	run_row tc alpha running r1
	[ "$(upgrade_status "$control")" = 409 ]
	expect_json_error 4 conflict rk screen share tc --bot alpha --control --json
	run_row tc alpha waiting_takeover r1
	[ "$(upgrade_status "$control")" = 101 ]
	# a connected control client is dropped when the person gives control
	# back; the token is revoked and the view one still works
	rfb "ws://$GW/websockify?token=$control" --hold >"$BATS_TEST_TMPDIR/hold" 2>&1 &
	wait_for 'grep -q connected "$BATS_TEST_TMPDIR/hold"' 20
	rk screen release-control tc --bot alpha
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 20
	[ "$(upgrade_status "$control")" = 403 ]
	[ "$(upgrade_status "$view")" = 101 ]
	[ "$(rk screen shares --all --json | rk_json '[[c["policy"], c["state"]] for c in d]')" = '[["view", "live"], ["control", "revoked"]]' ]
	# a takeover that lapses on its own ends its control tokens too
	run_row tc alpha completed r1
	rk screen takeover tc --bot alpha --ttl-ms 4000 --json >/dev/null
	short=$(share_token tc --bot alpha --control)
	[ "$(upgrade_status "$short")" = 101 ]
	wait_for '[ "$(upgrade_status "$short")" = 403 ]' 20
	# with no forwarder left behind for it
	id=$(rk screen shares --all --json | rk_json '[c["id"] for c in d][-1]')
	wait_for '[ ! -e "$RAKAZO_DATA_DIR/run/gateway/$id.sock" ]' 10
}

@test "docker: stale view and control tokens of a bot are refused after its slot goes to another bot" {
	team_desktop
	rk screen takeover tc --bot alpha --json >/dev/null
	view=$(share_token tc --bot alpha --view)
	control=$(share_token tc --bot alpha --control)
	rfb "ws://$GW/websockify?token=$view" --hold >"$BATS_TEST_TMPDIR/hold" 2>&1 &
	wait_for 'grep -q connected "$BATS_TEST_TMPDIR/hold"' 20
	gen=$(rk screen list tc --json | rk_json '[s["generation"] for s in d if s["bot_id"] == "alpha"][0]')
	# alpha gives its screen up: its viewer is dropped first
	rk screen release-control tc --bot alpha
	rk screen release tc --bot alpha
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 20
	# and its transport is down before the slot goes to anyone
	[[ "$(rk computer exec tc -- "rakazo-desktop status $SLOT")" == *"x11vnc stopped"* ]]
	# beta gets the same slot, a new generation; the same person takes it over
	[ "$(rk screen shot tc --bot beta --json | rk_json 'd["slot"]')" = "$SLOT" ]
	[ "$(rk screen list tc --json | rk_json '[s["generation"] for s in d if s["bot_id"] == "beta"][0]')" -gt "$gen" ]
	rk screen takeover tc --bot beta --json >/dev/null
	[ "$(upgrade_status "$view")" = 403 ]
	[ "$(upgrade_status "$control")" = 403 ]
	# even were their revocation lost, the binding to alpha's tenancy (its
	# slot generation and VNC socket) refuses them
	rk_sql "UPDATE screen_capabilities SET revoked_at = NULL WHERE bot_id = 'alpha'"
	[ "$(upgrade_status "$view")" = 403 ]
	[ "$(upgrade_status "$control")" = 403 ]
	grep -q "was for a screen that is gone" "$RAKAZO_DATA_DIR/log/rakazo.log"
	# beta's own tokens reach beta's screen
	bview=$(share_token tc --bot beta --view)
	bcontrol=$(share_token tc --bot beta --control)
	[ "$(upgrade_status "$bview")" = 101 ]
	[ "$(upgrade_status "$bcontrol")" = 101 ]
	run rfb "ws://$GW/websockify?token=$bview" --pixel 640,500
	[ "$status" -eq 0 ]
	! grep -qF -e "$view" -e "$control" -e "$bview" -e "$bcontrol" "$RAKAZO_DATA_DIR/log/rakazo.log"
}
