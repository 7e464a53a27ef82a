#!/usr/bin/env bats
# The data directory is private (issue 20, Low): DATA_DIR 0700, the
# database, the master key and the log 0600; made so, and repaired with one
# warning on stderr (never on stdout) when found looser.

load helper
bats_require_minimum_version 1.5.0

mode() { stat -c %a "$1"; }

# A secret makes the master key.
make_key() {
	printf 'tok-1234' | rk secret set gh --origin https://api.example.com --auth bearer --json >/dev/null
}

@test "datadir: rakazo makes DATA_DIR 0700 and the database, master key and log 0600, without a warning" {
	export RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/fresh/data
	run --separate-stderr rk computer list --json
	[ "$status" -eq 0 ] && [ "$output" = '[]' ] && [ -z "$stderr" ]
	make_key
	[ "$(mode "$RAKAZO_DATA_DIR")" = 700 ]
	[ "$(mode "$RAKAZO_DATA_DIR/rakazo.db")" = 600 ]
	[ "$(mode "$RAKAZO_DATA_DIR/master.key")" = 600 ]
	[ "$(mode "$RAKAZO_DATA_DIR/log")" = 700 ]
	[ "$(mode "$RAKAZO_DATA_DIR/log/rakazo.log")" = 600 ]
}

@test "datadir: looser modes are repaired on open, with one warning on stderr that names them" {
	rk computer list --json >/dev/null
	make_key
	chmod 755 "$RAKAZO_DATA_DIR" "$RAKAZO_DATA_DIR/log"
	chmod 644 "$RAKAZO_DATA_DIR/rakazo.db" "$RAKAZO_DATA_DIR/log/rakazo.log"
	chmod 664 "$RAKAZO_DATA_DIR/master.key"
	run --separate-stderr rk computer list
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	[ "$(printf '%s\n' "$stderr" | grep -c 'rakazo: warning: ')" = 1 ]
	local f
	for f in "$RAKAZO_DATA_DIR " rakazo.db master.key "log " log/rakazo.log "set every secret again"; do
		[[ "$stderr" == *"$f"* ]] || { echo "the warning does not name $f: $stderr" >&2; return 1; }
	done
	[ "$(mode "$RAKAZO_DATA_DIR")" = 700 ] && [ "$(mode "$RAKAZO_DATA_DIR/log")" = 700 ]
	[ "$(mode "$RAKAZO_DATA_DIR/rakazo.db")" = 600 ] && [ "$(mode "$RAKAZO_DATA_DIR/log/rakazo.log")" = 600 ]
	[ "$(mode "$RAKAZO_DATA_DIR/master.key")" = 600 ]
	# the engine's log has it too
	grep -q 'warn others could reach' "$RAKAZO_DATA_DIR/log/rakazo.log"
	# repaired once: the next command is quiet, and the secret still works
	run --separate-stderr rk secret list --json
	[ "$status" -eq 0 ] && [ -z "$stderr" ]
	# under --json the warning is one JSON line on stderr; stdout stays the answer
	chmod 640 "$RAKAZO_DATA_DIR/rakazo.db"
	run --separate-stderr rk computer list --json
	[ "$status" -eq 0 ] && [ "$output" = '[]' ]
	printf '%s' "$stderr" | rk_json 'd["warning"]["message"]' | grep -q 'rakazo.db (0640 to 0600)'
}

@test "datadir: a link inside DATA_DIR is not followed when modes are repaired" {
	rk computer list --json >/dev/null
	printf 'not rakazo\n' >"$BATS_TEST_TMPDIR/outside"
	chmod 644 "$BATS_TEST_TMPDIR/outside"
	ln -s "$BATS_TEST_TMPDIR/outside" "$RAKAZO_DATA_DIR/master.key"
	rk computer list --json >/dev/null
	[ "$(mode "$BATS_TEST_TMPDIR/outside")" = 644 ]
}
