#!/usr/bin/env bats
# Fenced execution leases.

load helper

@test "acquire gives fence 1; another holder while it is live is a conflict" {
	rk_fake t
	run rk computer lease acquire t --bot b1 --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["fence"]')" = 1 ]
	[ "$(printf '%s' "$output" | rk_json 'd["bot_id"]')" = b1 ]
	expect_json_error 4 conflict rk computer lease acquire t --bot b1 --holder other --json
	# another bot has its own lease
	[ "$(rk computer lease acquire t --bot b2 --holder other --json | rk_json 'd["fence"]')" = 1 ]
	[ "$(rk computer lease show t --bot b1 --json | rk_json 'd["fence"]')" = 1 ]
}

@test "after expiry another holder gets fence 2, and a write with fence 1 is stale" {
	rk_fake t
	rk computer lease acquire t --bot b1 --holder h1 --ttl-ms 1000 --json >/dev/null
	run rk computer lease write t --bot b1 --fence 1 --what first --json
	[ "$status" -eq 0 ]
	sleep 1.2
	run rk computer lease acquire t --bot b1 --holder h2 --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["fence"]')" = 2 ]
	expect_json_error 4 stale_lease rk computer lease write t --bot b1 --fence 1 --json
	rk computer lease write t --bot b1 --fence 2 --json >/dev/null
}

@test "renew and release take the fence" {
	rk_fake t
	rk computer lease acquire t --bot b1 --ttl-ms 1000 --json >/dev/null
	rk computer lease renew t --bot b1 --fence 1 --ttl-ms 60000 --json >/dev/null
	sleep 1.2
	expect_json_error 4 conflict rk computer lease acquire t --bot b1 --holder other --json
	run rk computer lease release t --bot b1 --fence 1 --json
	[ "$status" -eq 0 ]
	[ "$(rk computer lease acquire t --bot b1 --holder other --json | rk_json 'd["fence"]')" = 2 ]
	expect_status 4 rk computer lease renew t --bot b1 --fence 1 --json
	expect_json_error 2 usage rk computer lease write t --bot b1 --json
	expect_json_error 2 usage rk computer lease acquire t --json
}

@test "20 processes contending for one (computer, bot): exactly one wins" {
	rk_fake t
	local i pids=
	for i in $(seq 1 20); do
		"$RAKAZO_BIN" computer lease acquire t --bot b1 --holder "h$i" --ttl-ms 600000 --json \
			>"$BATS_TEST_TMPDIR/out.$i" 2>"$BATS_TEST_TMPDIR/err.$i" 3>&- 4>&- &
		pids="$pids $!"
	done
	local ok=0 conflict=0 other=0 p st
	for p in $pids; do
		st=0
		wait "$p" || st=$?
		case $st in 0) ok=$((ok + 1)) ;; 4) conflict=$((conflict + 1)) ;; *) other=$((other + 1)) ;; esac
	done
	cat "$BATS_TEST_TMPDIR"/err.* | grep -v '"conflict"' >&2 || true
	[ "$ok" -eq 1 ]
	[ "$conflict" -eq 19 ]
	[ "$other" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR"/out.* | rk_json 'd["fence"]')" = 1 ]
}
