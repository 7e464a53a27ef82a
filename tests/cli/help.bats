#!/usr/bin/env bats
# help, version and the multi-call links, as a user types them.

load helper

@test "rakazo help lists every command and the exit statuses" {
	run rk help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo COMMAND"* ]]
	for c in $(rk --complete-helper); do
		[[ $output == *"  $c "* ]] || { echo "help misses $c"; return 1; }
	done
	[[ $output == *"130 interrupted"* ]]
}

@test "rakazo with no arguments and rakazo --help show the overview" {
	run rk
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo COMMAND"* ]]
	run rk --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo COMMAND"* ]]
}

@test "rakazo help computer and rakazo computer --help list the verbs" {
	run rk help computer
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo computer"* ]]
	local a=$output
	run rk computer --help
	[ "$status" -eq 0 ]
	[ "$output" = "$a" ]
	for v in $(rk --complete-helper computer); do
		[[ $output == *"computer $v "* ]] || { echo "computer --help misses $v"; return 1; }
	done
}

@test "rakazo computer create --help lists its options" {
	run rk computer create --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo computer create"* ]]
	for o in $(rk --complete-helper computer create); do
		[[ $output == *"$o"* ]] || { echo "create --help misses $o"; return 1; }
	done
	run rk help computer create
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo computer create"* ]]
}

@test "option help starts in one column whether or not the option has a short name" {
	run rk computer create --help
	[ "$status" -eq 0 ]
	# "  -p, --provider NAME   provider: ..." and "      --mode team|private   a Team ..."
	local provider mode
	provider=$(printf '%s\n' "$output" | grep -- '--provider NAME')
	mode=$(printf '%s\n' "$output" | grep -- '--mode team')
	local p=${provider%%provider: docker*} m=${mode%%a Team computer*}
	[ "${#p}" -eq "${#m}" ] || { echo "help columns differ: ${#p} vs ${#m}"; printf '%s\n%s\n' "$provider" "$mode"; return 1; }
}

@test "rakazo --version and rakazo version print the version" {
	run rk --version
	[ "$status" -eq 0 ]
	[[ $output =~ ^rakazo\ [0-9]+\.[0-9]+\.[0-9]+ ]]
	local v=$output
	run rk version
	[ "$status" -eq 0 ]
	[ "$output" = "$v" ]
	run rk version --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["version"]')" = "${v#rakazo }" ]
}

@test "a link named rakazo-computer runs rakazo computer" {
	ln -s "$RAKAZO_BIN" "$BATS_TEST_TMPDIR/rakazo-computer"
	rk_fake t
	run "$BATS_TEST_TMPDIR/rakazo-computer" list --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd[0]["name"]')" = t ]
	run "$BATS_TEST_TMPDIR/rakazo-computer" --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: rakazo computer"* ]]
}

@test "a link named rakazo-nosuch is a usage error" {
	ln -s "$RAKAZO_BIN" "$BATS_TEST_TMPDIR/rakazo-nosuch"
	run "$BATS_TEST_TMPDIR/rakazo-nosuch" list
	[ "$status" -eq 2 ]
	[[ $output == *"no command 'nosuch'"* ]]
}

@test "rakazo help of an unknown command is a usage error" {
	run rk help nosuch
	[ "$status" -eq 2 ]
	run rk help computer nosuch
	[ "$status" -eq 2 ]
}
