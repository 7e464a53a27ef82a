#!/usr/bin/env bats
# Bad input is refused with invalid_argument or usage, and changes nothing.

load helper

snapshot() {
	{ rk computer list --json; rk computer execution list --json; } | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    for x in d:
        x.pop("updated_at", None)
    print(json.dumps(d, sort_keys=True))
'
}

# refuse STATUS CODE CMD...: the call fails so, and state is unchanged.
refuse() {
	local before after
	before=$(snapshot)
	expect_json_error "$@"
	after=$(snapshot)
	[ "$before" = "$after" ] || { echo "state changed by: ${*:3}"; diff <(echo "$before") <(echo "$after"); return 1; }
}

@test "unknown flags are usage errors" {
	rk_fake t
	refuse 2 usage rk computer create --json --provider fake --name u --frobnicate
	refuse 2 usage rk computer pause t --json --bogus
	refuse 2 usage rk computer exec t --json -Q -- true
	refuse 2 usage rk computer create --json --provider fake --name u --revisions many
	refuse 2 usage rk computer create --json --provider fake --name u --timeout 0
}

@test "--options must be a JSON object" {
	rk_fake t
	refuse 2 invalid_argument rk computer create --json --provider fake --name u --options '{"a":'
	refuse 2 invalid_argument rk computer create --json --provider fake --name u --options '[]'
	refuse 2 invalid_argument rk computer create --json --provider fake --name u --options '"x"'
}

@test "bad names and an unknown provider are refused" {
	rk_fake t
	refuse 2 invalid_argument rk computer create --json --provider fake --name 'a b'
	refuse 2 invalid_argument rk computer create --json --provider fake --name 'a/b'
	refuse 2 invalid_argument rk computer create --json --provider fake --name ''
	refuse 2 invalid_argument rk computer create --json --provider fake --name "$(printf 'x%.0s' $(seq 1 65))"
	refuse 2 invalid_argument rk computer create --json --provider nosuch --name u
	refuse 2 invalid_argument rk computer create --json --provider fake --name u --mode public
	refuse 2 usage rk computer create --json --provider fake --name u --pause-after soon
	refuse 2 invalid_argument rk computer create --json --provider fake --name u --command-key ''
}

@test "a second computer with a taken name is a conflict" {
	rk_fake t
	refuse 4 conflict rk computer create --json --provider fake --name t
}

@test "paths that leave the workspace are refused" {
	rk_fake t
	refuse 2 invalid_argument rk computer file read t ../x --json
	refuse 2 invalid_argument rk computer file read t /etc/passwd --json
	run bash -c 'printf a | "$RAKAZO_BIN" computer file write t "a/../../x" --json'
	[ "$status" -eq 2 ]
	[[ $output == *invalid_argument* ]]
	[ ! -e "$RAKAZO_DATA_DIR/homes/x" ]
	refuse 2 invalid_argument rk computer file list t ../.. --json
	refuse 2 invalid_argument rk computer file remove t ../x --json
}

@test "bad escapes and bad --env are refused before anything runs" {
	rk_fake t
	refuse 2 invalid_argument rk computer input t cse_x '\x' --json
	refuse 2 usage rk computer exec t --json --env =x -- true
	[ "$(rk computer sessions t --json | rk_json 'len(d)')" = 0 ]
}

@test "a data directory that cannot be made gives a clear message" {
	: >"$BATS_TEST_TMPDIR/file"
	RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/file/sub expect_json_error 1 io rk computer list --json
	[[ $(rk_json 'd["error"]["message"]' <"$BATS_TEST_TMPDIR/stderr") == *"$BATS_TEST_TMPDIR/file/sub"* ]]
	RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/file/sub run rk computer create --provider fake --name t
	[ "$status" -ne 0 ]
	[[ $output == "rakazo: "*"RAKAZO_DATA_DIR"* ]]
	RAKAZO_DATA_DIR=$BATS_TEST_TMPDIR/file/sub run rk doctor --json
	[ "$status" -eq 1 ]
	[ "$(printf '%s' "$output" | head -n1 | rk_json 'd["ok"]')" = false ]
}

@test "an existing data directory that is not writable gives a clear message and exit 1" {
	# root writes anywhere: run as nobody then (a 0555 directory otherwise)
	local as=()
	[ "$(id -u)" != 0 ] || as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# nobody must reach it, so not under the test's private tmp
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/rk-readonly.XXXXXX")
	chmod 0555 "$dir"
	RAKAZO_DATA_DIR=$dir expect_json_error 1 io "${as[@]}" "$RAKAZO_BIN" computer list --json
	[ "$(rk_json 'd["error"]["message"]' <"$BATS_TEST_TMPDIR/stderr")" = "data directory $dir is not writable (set RAKAZO_DATA_DIR): Permission denied" ]
	RAKAZO_DATA_DIR=$dir run "${as[@]}" "$RAKAZO_BIN" computer create --provider fake --name t
	[ "$status" -eq 1 ]
	[ "$output" = "rakazo: io: data directory $dir is not writable (set RAKAZO_DATA_DIR): Permission denied" ]
	RAKAZO_DATA_DIR=$dir run "${as[@]}" "$RAKAZO_BIN" doctor --json
	[ "$status" -eq 1 ]
	[ "$(printf '%s' "$output" | head -n1 | rk_json '[c["status"] for c in d["checks"] if c["check"]=="state"][0]')" = fail ]
	# nothing was made in it
	[ -z "$(ls -A "$dir")" ]
	rmdir "$dir"
}

@test "XDG_DATA_HOME is used when RAKAZO_DATA_DIR is unset" {
	unset RAKAZO_DATA_DIR
	export XDG_DATA_HOME=$BATS_TEST_TMPDIR/xdg
	run rk doctor --json
	[ "$(printf '%s' "$output" | head -n1 | rk_json 'd["data_dir"]')" = "$XDG_DATA_HOME/rakazo" ]
	[ -f "$XDG_DATA_HOME/rakazo/rakazo.db" ]
}
