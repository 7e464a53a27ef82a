#!/usr/bin/env bats
# The completion scripts and man pages cover the command table as
# `rakazo --complete-helper` prints it (walked recursively).

load helper

# "cmd verb ... word" lines for every word the helper can print.
walk() {
	local prefix=("$@") w
	for w in $(rk --complete-helper "${prefix[@]}"); do
		echo "${prefix[*]} $w"
		case $w in --*) ;; *) [ ${#prefix[@]} -lt 3 ] && walk "${prefix[@]}" "$w" ;; esac
	done
}

@test "every command, verb and option is in the bash, zsh and fish completions" {
	local root=$BATS_TEST_DIRNAME/../..
	local f line word missing=
	walk >"$BATS_TEST_TMPDIR/words"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/words")" -gt 50 ]
	for f in completions/rakazo.bash completions/_rakazo completions/rakazo.fish; do
		[ -f "$root/$f" ] || { echo "missing $f"; return 1; }
		while read -r line; do
			word=${line##* }
			# fish spells an option "-l name"
			case $f:$word in *.fish:--*) word="-l ${word#--}" ;; esac
			grep -qF -- "$word" "$root/$f" || missing="$missing $f:${line# }"
		done <"$BATS_TEST_TMPDIR/words"
	done
	[ -z "$missing" ] || { echo "not in completions:$missing"; return 1; }
}

@test "the bash completion parses and completes the first words" {
	local root=$BATS_TEST_DIRNAME/../..
	bash -n "$root/completions/rakazo.bash"
	run bash -c '
		rakazo() { "$RAKAZO_BIN" "$@"; }
		source "$1"
		COMP_WORDS=(rakazo comp); COMP_CWORD=1; _rakazo; echo "${COMPREPLY[*]}"
		COMP_WORDS=(rakazo computer cr); COMP_CWORD=2; _rakazo; echo "${COMPREPLY[*]}"
		COMP_WORDS=(rakazo computer create --na); COMP_CWORD=3; _rakazo; echo "${COMPREPLY[*]}"
	' _ "$root/completions/rakazo.bash"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = computer ]
	[ "${lines[1]}" = create ]
	[ "${lines[2]}" = --name ]
}

@test "every subcommand has a man page that names each of its verbs and options" {
	local root=$BATS_TEST_DIRNAME/../..
	local sub line word missing=
	[ -f "$root/man/rakazo.1" ]
	for sub in $(rk --complete-helper); do
		case $sub in help | version)
			grep -q "^\.SS.*$sub\|^\.B.*$sub\|\\\\fB$sub" "$root/man/rakazo.1" || missing="$missing rakazo.1:$sub"
			continue ;;
		esac
		[ -f "$root/man/rakazo-$sub.1" ] || { missing="$missing rakazo-$sub.1"; continue; }
		grep -qF -e "rakazo-$sub" -e "rakazo\\-$sub" "$root/man/rakazo.1" || missing="$missing rakazo.1:see-also:$sub"
		while read -r line; do
			word=${line##* }
			# roff writes - as \-
			grep -qF -- "$word" "$root/man/rakazo-$sub.1" ||
				grep -qF -- "$(printf '%s' "$word" | sed 's/-/\\-/g')" "$root/man/rakazo-$sub.1" ||
				missing="$missing rakazo-$sub.1:${line# }"
		done < <(walk "$sub")
	done
	[ -z "$missing" ] || { echo "not in man pages:$missing"; return 1; }
}

@test "the man pages render" {
	command -v man >/dev/null || skip "man is not installed"
	local root=$BATS_TEST_DIRNAME/../.. p
	for p in "$root"/man/*.1; do
		run man -l "$p"
		[ "$status" -eq 0 ]
		[ -n "$output" ]
	done
}
