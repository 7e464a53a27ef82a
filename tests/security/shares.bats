#!/usr/bin/env bats
# Screen-share capabilities and the store-wide verbs (issue 20, item 8: one
# resolver turns (identity, target) into an authorised computer for every
# command). `screen shares` lists, and `screen revoke TOKEN|ID|--all`
# revokes, only capabilities on computers the caller may use: another user
# of the space and a bot without a grant are denied (exit 8) with nothing
# revoked; from another space a capability is as unknown as a token nobody
# made (not_found, exit 3, the same message). `checkpoint gc` is the
# operator's: a bot is denied it.
#
# The fake provider has no VNC, so the capabilities on its computers are
# written to the table as `screen share` writes them (no forwarder: revoking
# marks the row); the docker test makes a real one and drives the gateway.

load helper
load ../cli/gateway

# plant_share COMPUTER_ID [bot]: a live view capability on display 0 of the
# computer; prints "TOKEN CAP_ID".
plant_share() {
	local tok id hash now bot=${2:-}
	tok=$(python3 -c 'import base64, os; t = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("="); print("A" + t[1:] if t[0] == "-" else t)')
	hash=$(python3 -c 'import hashlib, sys; print(hashlib.blake2b(sys.argv[1].encode(), digest_size=32).hexdigest())' "$tok")
	id="cap_planted$RANDOM$RANDOM"
	now=$(date +%s%3N)
	rk_sql "INSERT INTO screen_capabilities (id, token_hash, computer_id, display, bot_id, generation, policy, socket_path, vnc_socket, vnc_dev, vnc_ino, vnc_ctime_ns, created_at, expires_at, created_by) VALUES ('$id', '$hash', '$1', 0, ${bot:+'$bot'}${bot:-NULL}, 0, 'view', '/nonexistent/$id.sock', '/nonexistent/vnc', 0, 0, 0, $now, $((now + 3600000)), 'user:bats')" >/dev/null
	echo "$tok $id"
}

# The state of capability $1 as the table has it ("live" or "revoked").
cap_state() {
	rk_sql "SELECT CASE WHEN revoked_at IS NULL THEN 'live' ELSE 'revoked' END FROM screen_capabilities WHERE id = '$1'"
}

# Ids of the capabilities `screen shares ARGS` lists to ENV...: shares_of ENV... -- ARGS
shares_of() {
	local env=()
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	env "${env[@]}" "$RAKAZO_BIN" screen shares "$@" --json | rk_json 'sorted(c["id"] for c in d)'
}

# The owner's (user:bats, default space) fake computer t, mallory's m in the
# same space, and e of user:bats in space elsewhere, each with a desktop and
# one capability: T/TID, M/MID, E/EID.
three_computers() {
	rk_fake t
	RAKAZO_OWNER=user:mallory rk_fake m
	RAKAZO_SPACE=elsewhere rk_fake e
	rk screen shot t --json >/dev/null
	read -r T TID <<<"$(plant_share "$(rk_id t)")"
	read -r M MID <<<"$(plant_share "$(RAKAZO_OWNER=user:mallory rk_id m)")"
	read -r E EID <<<"$(plant_share "$(RAKAZO_SPACE=elsewhere rk_id e)")"
}

@test "shares: each caller lists only the capabilities of computers it may use" {
	three_computers
	[ "$(shares_of RAKAZO_OWNER=user:bats -- )" = "[\"$TID\"]" ]
	[ "$(shares_of RAKAZO_OWNER=user:bats -- --all)" = "[\"$TID\"]" ]
	[ "$(shares_of RAKAZO_OWNER=user:mallory -- )" = "[\"$MID\"]" ]
	[ "$(shares_of RAKAZO_OWNER=user:mallory -- --all)" = "[\"$MID\"]" ]
	[ "$(shares_of RAKAZO_OWNER=bot:b9 -- --all)" = '[]' ]
	[ "$(shares_of RAKAZO_OWNER=user:bats RAKAZO_SPACE=elsewhere -- --all)" = "[\"$EID\"]" ]
	# the human table says no more than the JSON
	run env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen shares --all
	[ "$status" -eq 0 ]
	[[ "$output" == *"$MID"* ]] && [[ "$output" != *"$TID"* ]] && [[ "$output" != *"$(rk_id t)"* ]]
	# a grant lets the bot see what it may now use
	rk computer grant t --bot b9 --json >/dev/null
	[ "$(shares_of RAKAZO_OWNER=bot:b9 -- )" = "[\"$TID\"]" ]
	rk computer revoke t --bot b9 --json >/dev/null
	[ "$(shares_of RAKAZO_OWNER=bot:b9 -- )" = '[]' ]
}

@test "shares --computer: resolved like every target (denied, or not_found from another space)" {
	three_computers
	[ "$(shares_of RAKAZO_OWNER=user:bats -- --computer t)" = "[\"$TID\"]" ]
	[ "$(shares_of RAKAZO_OWNER=user:mallory -- --computer m --all)" = "[\"$MID\"]" ]
	expect_json_error 8 denied env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen shares --computer t --json
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" screen shares --computer t --json
	expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen shares --computer t --json
	expect_json_error 3 not_found "$RAKAZO_BIN" screen shares --computer nosuch --json
}

@test "revoke: another's token or id is denied (not_found from another space), and nothing is revoked" {
	three_computers
	local env v unknown
	for env in RAKAZO_OWNER=user:mallory RAKAZO_OWNER=bot:b9; do
		for v in "$T" "$TID"; do
			expect_json_error 8 denied env $env "$RAKAZO_BIN" screen revoke --json -- "$v" ||
				{ echo "as $env: revoke $v" >&2; return 1; }
		done
		expect_json_error 8 denied env $env "$RAKAZO_BIN" screen revoke --all --computer t --json
	done
	# from another space the owner's token is as unknown as one nobody made:
	# the same code and the same words
	unknown=$(python3 -c 'print("B" * 43)')
	expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- "$unknown"
	local want
	want=$(cat "$BATS_TEST_TMPDIR/stderr")
	for v in "$T" "$TID"; do
		expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- "$v"
		[ "$(cat "$BATS_TEST_TMPDIR/stderr")" = "$want" ] ||
			{ echo "another space tells the token exists: $(cat "$BATS_TEST_TMPDIR/stderr") vs $want" >&2; return 1; }
	done
	expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- cap_nosuch
	want=$(cat "$BATS_TEST_TMPDIR/stderr")
	expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- "$TID"
	[ "$(cat "$BATS_TEST_TMPDIR/stderr")" = "$want" ]
	[ "$(cap_state "$TID")" = live ] && [ "$(cap_state "$MID")" = live ] && [ "$(cap_state "$EID")" = live ]
	# the owner revokes their own, by token and by id
	run rk screen revoke --json -- "$T"
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	[ "$(cap_state "$TID")" = revoked ]
	# mallory revokes hers; e's owner theirs (in its space)
	run env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen revoke --json -- "$MID"
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	run env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- "$E"
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
}

@test "revoke --all: only the capabilities of computers the caller may use" {
	three_computers
	local T2 TID2
	read -r T2 TID2 <<<"$(plant_share "$(rk_id t)")"
	run env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":0}' ]
	run env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	run env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	[ "$(cap_state "$MID")" = revoked ] && [ "$(cap_state "$EID")" = revoked ]
	[ "$(cap_state "$TID")" = live ] && [ "$(cap_state "$TID2")" = live ]
	[ "$(shares_of RAKAZO_OWNER=user:bats -- )" = "$(python3 -c 'import json, sys; print(json.dumps(sorted(sys.argv[1:])))' "$TID" "$TID2")" ]
	# --computer narrows the owner's --all to one computer
	rk_fake u
	local U UID_
	read -r U UID_ <<<"$(plant_share "$(rk_id u)")"
	run rk screen revoke --all --computer u --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	[ "$(cap_state "$UID_")" = revoked ] && [ "$(cap_state "$TID")" = live ]
	# a granted bot may use t, so it may revoke what is shared of it
	rk computer grant t --bot b9 --json >/dev/null
	run env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":2}' ]
	[ "$(cap_state "$TID")" = revoked ] && [ "$(cap_state "$TID2")" = revoked ]
}

@test "revoke: a capability of a deleted computer stays its owner's" {
	three_computers
	# a stranger's computer gone: its capabilities are still not another's to revoke
	RAKAZO_OWNER=user:mallory rk computer delete m --wait --json >/dev/null
	[ "$(shares_of RAKAZO_OWNER=user:bats -- --all)" = "[\"$TID\"]" ]
	expect_json_error 8 denied rk screen revoke --json -- "$M"
	run rk screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	[ "$(rk_sql "SELECT count(*) FROM screen_capabilities WHERE id = '$MID' AND revoked_at IS NOT NULL AND revoke_reason = 'revoked'")" = 0 ]
}

@test "docker: a stranger cannot revoke a real share; its viewer still gets through" {
	docker_or_skip
	rk computer create --name d --wait --json >/dev/null
	[ "$(rk screen info d --display 1 --json | rk_json 'd["transport"]')" = vnc ]
	gateway_start
	local view id
	view=$(share_token d --display 1 --view)
	id=$(rk screen shares --json | rk_json 'd[0]["id"]')
	[ "$(upgrade_status "$view")" = 101 ]
	[ "$(shares_of RAKAZO_OWNER=user:mallory -- --all)" = '[]' ]
	expect_json_error 8 denied env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen revoke --json -- "$view"
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" screen revoke --json -- "$id"
	expect_json_error 3 not_found env RAKAZO_SPACE=elsewhere "$RAKAZO_BIN" screen revoke --json -- "$view"
	run env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" screen revoke --all --json
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":0}' ]
	[ "$(upgrade_status "$view")" = 101 ]
	[ "$(cap_state "$id")" = live ]
	run rk screen revoke --json -- "$view"
	[ "$status" -eq 0 ] && [ "$output" = '{"revoked":1}' ]
	[ "$(upgrade_status "$view")" = 403 ]
	rk computer delete d --wait --timeout 120 --json >/dev/null
}

# --- the maker's right -----------------------------------------------------------------------
# A capability is only as good as its maker's right to the computer: the
# identity that shared it (a member, a bot, or an API token acting for one)
# is checked again, through the resolver, when a client connects, and the
# gateway drops the connected clients of one whose maker lost the right.

# A viewer held on token $1 in the background; its output goes to file $2.
hold_viewer() {
	rfb "ws://$GW/websockify?token=$1" --hold >"$2" 2>&1 &
	wait_for "grep -q connected '$2'" 30
}

@test "gateway: its sweep revokes the capabilities whose maker lost the right, and only those" {
	rk_fake t
	rk computer grant t --bot b9 --json >/dev/null
	local tid tok B BID P PID_ K KID O OID
	tid=$(rk_id t)
	tok=$(rk serve token create web --json | rk_json 'd["id"]')
	read -r B BID <<<"$(plant_share "$tid")"
	read -r P PID_ <<<"$(plant_share "$tid")"
	read -r K KID <<<"$(plant_share "$tid")"
	read -r O OID <<<"$(plant_share "$tid")"
	# made as bot b9, as the member bats, through the API token web; O has
	# no maker (a row from before makers were kept)
	rk_sql "UPDATE screen_capabilities SET maker_user = 'bats', maker_space = 'default' WHERE id IN ('$BID', '$PID_', '$KID')" >/dev/null
	rk_sql "UPDATE screen_capabilities SET maker_bot = 'b9' WHERE id = '$BID'" >/dev/null
	rk_sql "UPDATE screen_capabilities SET maker_token = '$tok' WHERE id = '$KID'" >/dev/null
	gateway_start
	# one sweep looks at every capability: once O is gone the others were kept
	wait_for '[ "$(cap_state "$OID")" = revoked ]' 20
	[ "$(cap_state "$BID")" = live ] && [ "$(cap_state "$PID_")" = live ] && [ "$(cap_state "$KID")" = live ]
	rk computer revoke t --bot b9 --json >/dev/null
	wait_for '[ "$(cap_state "$BID")" = revoked ]' 20
	[ "$(cap_state "$PID_")" = live ] && [ "$(cap_state "$KID")" = live ]
	rk serve token revoke web --json >/dev/null
	wait_for '[ "$(cap_state "$KID")" = revoked ]' 20
	[ "$(cap_state "$PID_")" = live ]
	[ "$(rk_sql "SELECT count(*) FROM screen_capabilities WHERE revoke_reason = 'its maker lost the right'")" = 3 ]
	# the owner's list says so too
	[ "$(shares_of RAKAZO_OWNER=user:bats -- )" = "[\"$PID_\"]" ]
}

@test "docker: a bot's share dies with the bot's grant: new clients are refused, connected ones dropped" {
	docker_or_skip
	rk computer create --name d --wait --json >/dev/null
	[ "$(rk screen info d --display 1 --json | rk_json 'd["transport"]')" = vnc ]
	rk computer grant d --bot b9 --json >/dev/null
	gateway_start
	local doc bot id mine
	doc=$(RAKAZO_OWNER=bot:b9 rk screen share d --display 1 --view --json)
	bot=$(echo "$doc" | rk_json 'd["token"]')
	id=$(echo "$doc" | rk_json 'd["id"]')
	mine=$(share_token d --display 1 --view)
	[ "$(upgrade_status "$bot")" = 101 ]
	hold_viewer "$bot" "$BATS_TEST_TMPDIR/hold"
	rk computer revoke d --bot b9 --json >/dev/null
	# the next client is refused at once: the maker's right is read again
	[ "$(upgrade_status "$bot")" = 403 ]
	# the connected one is dropped (the gateway looks every half second)
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 20
	# and the capability is revoked for good: a new grant does not bring it back
	wait_for '[ "$(cap_state "$id")" = revoked ]' 20
	rk computer grant d --bot b9 --json >/dev/null
	[ "$(upgrade_status "$bot")" = 403 ]
	# the owner's own share of the same screen is untouched
	[ "$(upgrade_status "$mine")" = 101 ]
	rk computer delete d --wait --timeout 120 --json >/dev/null
}

@test "docker: a share made through the API dies with the API token that made it" {
	docker_or_skip
	rk computer create --name d --wait --json >/dev/null
	[ "$(rk screen info d --display 1 --json | rk_json 'd["transport"]')" = vnc ]
	gateway_start
	rm -f "$BATS_TEST_TMPDIR/url"
	( eval 'exec "$RAKAZO_BIN" serve --json --listen 127.0.0.1:0 --providers docker --url-file "$BATS_TEST_TMPDIR/url"' \
		"$RK_CLOSE_FDS" ) >"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	local url web other view kept
	url=$(cat "$BATS_TEST_TMPDIR/url")
	web=$(rk serve token create web 2>/dev/null)
	other=$(rk serve token create other 2>/dev/null)
	# stream URL: stream TOKEN -> the gateway URL of a view capability on display 1
	stream() {
		curl -sf -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
			--data-binary '{"display":1,"ttlSeconds":600}' "$url/v1/computers/$(rk_id d)/desktop/stream" |
			rk_json 'd["url"]'
	}
	view=$(stream "$web")
	kept=$(stream "$other")
	[[ "$view" == "ws://$GW/websockify?token="* ]]
	[ "$(upgrade_status "${view#*token=}")" = 101 ]
	hold_viewer "${view#*token=}" "$BATS_TEST_TMPDIR/hold"
	rk serve token revoke web --json >/dev/null
	[ "$(upgrade_status "${view#*token=}")" = 403 ]
	wait_for 'grep -q closed "$BATS_TEST_TMPDIR/hold"' 20
	# another token's share goes on
	[ "$(upgrade_status "${kept#*token=}")" = 101 ]
	rk computer delete d --wait --timeout 120 --json >/dev/null
}

# --- checkpoint gc -------------------------------------------------------------------------

@test "checkpoint gc: a bot is denied it, with nothing removed; a person's gc removes no one's revisions" {
	rk computer create --provider fake --name t --revisions 3 --wait --json >/dev/null
	printf 'one' | rk computer file write t a.txt - --json >/dev/null
	rk checkpoint create t --reason one --json >/dev/null
	printf 'two' | rk computer file write t a.txt - --json >/dev/null
	rk checkpoint create t --reason two --json >/dev/null
	local before garbage
	before=$(rk checkpoint list t --json | rk_json '[r["id"] for r in d]')
	# an object no revision names: what gc is for
	garbage="$RAKAZO_DATA_DIR/objects/ab/ab$(printf '0%.0s' $(seq 62))"
	mkdir -p "${garbage%/*}"
	printf 'stale' >"$garbage"
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" checkpoint gc --json
	[ -e "$garbage" ]
	# a bot with a grant is still not the operator
	rk computer grant t --bot b9 --json >/dev/null
	expect_json_error 8 denied env RAKAZO_OWNER=bot:b9 "$RAKAZO_BIN" checkpoint gc --json
	[ -e "$garbage" ]
	# a person at the terminal runs the store's maintenance; it removes only
	# what no revision names, so another's checkpoints stay whole
	run env RAKAZO_OWNER=user:mallory "$RAKAZO_BIN" checkpoint gc --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | rk_json 'd["objects_removed"]')" = 1 ]
	[ ! -e "$garbage" ]
	[ "$(rk checkpoint list t --json | rk_json '[r["id"] for r in d]')" = "$before" ]
	rk checkpoint verify t --deep --json >/dev/null
	rk checkpoint verify t "$(rk checkpoint list t --json | rk_json 'd[1]["id"]')" --deep --json >/dev/null
}
