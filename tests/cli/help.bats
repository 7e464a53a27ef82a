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

@test "every command in the table has help: rakazo help SUB, rakazo SUB --help and the rakazo-SUB link agree" {
	local sub n=0 help
	for sub in $(rk --complete-helper); do
		run rk help "$sub"
		[ "$status" -eq 0 ] || { echo "rakazo help $sub: status $status" >&2; return 1; }
		[[ ${lines[0]} == "usage: rakazo $sub"* ]] || { echo "rakazo help $sub: ${lines[0]}" >&2; return 1; }
		[ "${#lines[@]}" -ge 3 ] || { echo "rakazo help $sub is too short: $output" >&2; return 1; }
		help=$output
		run rk "$sub" --help
		[ "$status" -eq 0 ] && [ "$output" = "$help" ] || { echo "rakazo $sub --help differs" >&2; return 1; }
		run rk "$sub" -h
		[ "$status" -eq 0 ] && [ "$output" = "$help" ] || { echo "rakazo $sub -h differs" >&2; return 1; }
		# help and version are no rakazo-SUB links (make install makes none)
		case $sub in help | version) continue ;; esac
		ln -s "$RAKAZO_BIN" "$BATS_TEST_TMPDIR/rakazo-$sub"
		run "$BATS_TEST_TMPDIR/rakazo-$sub" --help
		[ "$status" -eq 0 ] && [ "$output" = "$help" ] || { echo "rakazo-$sub --help differs" >&2; return 1; }
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
}

@test "the Makefile's link list is the command table" {
	local root=$BATS_TEST_DIRNAME/../..
	[ "$(sh "$root/scripts/subcommands.sh" | sort)" = "$(rk --complete-helper | sort)" ]
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

@test "make install DESTDIR PREFIX=/usr: the binary, a rakazo-SUB link per command, man pages, completions" {
	command -v make >/dev/null || skip "make is not installed"
	local root
	root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	local d=$BATS_TEST_TMPDIR/dest build=${BUILD:-build}
	# the tree under test: the binary this suite runs, built in $BUILD
	[ "$RAKAZO_BIN" -ef "$root/$build/rakazo" ] || skip "RAKAZO_BIN is not $build/rakazo of this tree"
	run make -s -C "$root" install BUILD="$build" DESTDIR="$d" PREFIX=/usr
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[ -x "$d/usr/bin/rakazo" ] && [ -x "$d/usr/bin/rakazo-agent" ]
	cmp "$d/usr/bin/rakazo" "$RAKAZO_BIN"
	[ "$("$d/usr/bin/rakazo" --version)" = "$(rk --version)" ]
	local sub n=0
	for sub in $(rk --complete-helper); do
		case $sub in help | version)
			[ ! -e "$d/usr/bin/rakazo-$sub" ] || { echo "rakazo-$sub should not be installed" >&2; return 1; }
			continue ;;
		esac
		# relative, so the tree can move
		[ "$(readlink "$d/usr/bin/rakazo-$sub")" = rakazo ] || { echo "rakazo-$sub: $(readlink "$d/usr/bin/rakazo-$sub")" >&2; return 1; }
		run "$d/usr/bin/rakazo-$sub" --help
		[ "$status" -eq 0 ] && [[ ${lines[0]} == "usage: rakazo $sub"* ]] || { echo "rakazo-$sub --help: $output" >&2; return 1; }
		cmp "$d/usr/share/man/man1/rakazo-$sub.1" "$root/man/rakazo-$sub.1"
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
	cmp "$d/usr/share/man/man1/rakazo.1" "$root/man/rakazo.1"
	cmp "$d/usr/share/bash-completion/completions/rakazo" "$root/completions/rakazo.bash"
	cmp "$d/usr/share/zsh/site-functions/_rakazo" "$root/completions/_rakazo"
	cmp "$d/usr/share/fish/vendor_completions.d/rakazo.fish" "$root/completions/rakazo.fish"
	# the image recipe goes along whole: the same tag from the installed copy
	cmp "$d/usr/share/rakazo/image/build.sh" "$root/image/build.sh"
	[ "$(cd "$d/usr/share/rakazo/image" && sh build.sh --tag)" = "$(sh "$root/image/build.sh" --tag)" ]
	# nothing outside DESTDIR: every installed path is under usr/
	[ -z "$(find "$d" -mindepth 1 -maxdepth 1 ! -name usr)" ]
}
