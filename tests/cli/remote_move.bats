#!/usr/bin/env bats
# A workspace moves docker -> e2b -> daytona -> docker through checkpoints,
# every file, mode, link and the browser profile intact, the profile's cache
# left behind. Each hop checkpoints one computer, exports that revision and
# imports it into the next: into a running e2b or daytona sandbox through
# `checkpoint export A - | checkpoint import B -` (the new latest revision,
# pushed at once through the provider's import), into a running docker
# computer through the provider-neutral `computer import` (a docker
# computer's `checkpoint import` wants it stopped: it binds its home). Needs
# dockerd, the image and node (for the e2b and daytona emulators); skips
# without them unless RAKAZO_REQUIRE_DOCKER=1.

load helper

setup_file() {
	export RAKAZO_TEST_LABEL="bats-move-$$"
	export RK_ROOT="$BATS_TEST_DIRNAME/../.."
	command -v node >/dev/null 2>&1 && curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 ||
		return 0
	. "$RK_ROOT/tests/emulators/daytona/emulator.sh"
	rk_emulator_up daytona 2>"$BATS_FILE_TMPDIR/emulator.note" || return 0
	echo "$RK_EMULATOR_PIDS" >"$BATS_FILE_TMPDIR/pids"
	E2B_API_URL=$(sh "$RK_ROOT/tests/emulators/e2b/start.sh" "$BATS_FILE_TMPDIR") || return 0
	export E2B_API_URL
}

teardown_file() {
	RK_EMULATOR_PIDS=$(cat "$BATS_FILE_TMPDIR/pids" 2>/dev/null)
	. "$BATS_TEST_DIRNAME/../emulators/daytona/emulator.sh"
	rk_emulators_down
	if [ -s "$BATS_FILE_TMPDIR/e2b-emulator.pid" ]; then
		kill "$(cat "$BATS_FILE_TMPDIR/e2b-emulator.pid")" 2>/dev/null || true
	fi
}

setup() {
	rk_remote_setup
	if [ -z "${DAYTONA_EMULATOR_URL:-}" ] || [ -z "${E2B_API_URL:-}" ]; then
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "the move needs dockerd, the image and node (the e2b and daytona emulators)" >&2
			return 1
		fi
		skip "the move needs dockerd, the image and node (the e2b and daytona emulators)"
	fi
	export E2B_SANDBOX_URL=$E2B_API_URL E2B_API_KEY=e2b_bats_key E2B_DOMAIN=emulator.invalid
}

teardown() {
	rk_delete_computers
	rk_remove_containers
	rk_kill_all
}

# What a workspace holds, as one line a file: path, mode, sha256 (links:
# their target), the profile cache excluded; run in the computer.
inventory='cd ~/rakazo-home && find . -mindepth 1 \( -type f -o -type l \) ! -path "./.browser-profiles/*/Cache/*" -printf "%P\n" | LC_ALL=C sort |
	while IFS= read -r f; do
		if [ -L "$f" ]; then echo "$f link $(readlink "$f")"; else echo "$f $(stat -c %a "$f") $(sha256sum < "$f" | cut -c1-16)"; fi
	done'

# One hop: checkpoint computer $1, export that revision (tar+zstd, kept in
# $1.tar) and bring it into the running computer $2: through the checkpoint
# pipeline (a remote $2), or the provider-neutral import (hop ... computer).
hop() {
	rk checkpoint create "$1" --json >/dev/null
	if [ "${3:-}" = computer ]; then
		rk checkpoint export "$1" -o "$BATS_TEST_TMPDIR/$1.tar.zst"
		zstd -qdc "$BATS_TEST_TMPDIR/$1.tar.zst" >"$BATS_TEST_TMPDIR/$1.tar"
		rk computer import "$2" "$BATS_TEST_TMPDIR/$1.tar" --json >/dev/null
	else
		rk checkpoint export "$1" - | tee "$BATS_TEST_TMPDIR/$1.tar.zst" | rk checkpoint import "$2" - --json >/dev/null
		zstd -qdc "$BATS_TEST_TMPDIR/$1.tar.zst" >"$BATS_TEST_TMPDIR/$1.tar"
		[ "$(rk checkpoint show "$2" --json | rk_json 'd["reason"]')" = import ]
	fi
}

@test "a workspace moves docker -> e2b -> daytona -> docker with every file and the browser profile" {
	run rk computer create --provider docker --name d1 --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	rk computer exec d1 --json -- 'mkdir -p project/deep/er .browser-profiles/default/Default/Cache &&
		echo code > project/main.c && chmod 755 project/main.c && printf "\0\1\2\377" > project/bin.dat &&
		echo secret > project/deep/er/notes.txt && chmod 600 project/deep/er/notes.txt &&
		ln -s main.c project/link.c && head -c 300000 /dev/urandom > project/big.bin &&
		echo cookie-jar > .browser-profiles/default/Default/Cookies &&
		echo "{\"x\":1}" > .browser-profiles/default/Default/Preferences &&
		echo stale > .browser-profiles/default/Default/Cache/data_0' >/dev/null
	local want got
	want=$(rk computer exec d1 --json -- "$inventory" | rk_json 'd["output"]')
	[[ $want == *".browser-profiles/default/Default/Cookies 6"* ]]
	[[ $want == *"project/link.c link main.c"* ]]

	rk computer create --provider e2b --name e --wait --json >/dev/null
	hop d1 e
	got=$(rk computer exec e --json -- "$inventory" | rk_json 'd["output"]')
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
	rk computer exec e --json -- 'echo from-e2b > project/e2b.txt' >/dev/null

	rk computer create --provider daytona --name dt --wait --json >/dev/null
	hop e dt
	! tar -tf "$BATS_TEST_TMPDIR/e.tar" | grep -q 'Default/Cache'
	want=$(rk computer exec e --json -- "$inventory" | rk_json 'd["output"]')
	got=$(rk computer exec dt --json -- "$inventory" | rk_json 'd["output"]')
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
	rk computer exec dt --json -- 'echo from-daytona > project/daytona.txt' >/dev/null

	run rk computer create --provider docker --name d2 --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	hop dt d2 computer
	! tar -tf "$BATS_TEST_TMPDIR/dt.tar" | grep -q 'Default/Cache'
	want=$(rk computer exec dt --json -- "$inventory" | rk_json 'd["output"]')
	got=$(rk computer exec d2 --json -- "$inventory" | rk_json 'd["output"]')
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
	[[ $got == *"project/e2b.txt"* ]] && [[ $got == *"project/daytona.txt"* ]]
	[ "$(rk computer exec d2 --json -- 'cat .browser-profiles/default/Default/Cookies' | rk_json 'd["output"]')" = cookie-jar ]
}
