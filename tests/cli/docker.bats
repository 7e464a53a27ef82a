#!/usr/bin/env bats
# The docker provider against the real dockerd. Skips when dockerd does not
# answer, unless RAKAZO_REQUIRE_DOCKER=1 (then that is a failure).

load helper

docker_up() {
	curl -sf --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1
}

setup() {
	export RAKAZO_DATA_DIR="$BATS_TEST_TMPDIR/data"
	export RAKAZO_OWNER="user:bats"
	export RAKAZO_TEST_LABEL="bats-$$"
	export NO_COLOR=1
	unset RAKAZO_FAKE_FAULTS RAKAZO_FAKE_DELAY_MS RAKAZO_NO_WORKER RAKAZO_SESSION_IDLE_MS
	mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
	RK_CLOSE_FDS=$(rk_close_fds)
	if ! docker_up; then
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "dockerd does not answer on /var/run/docker.sock and RAKAZO_REQUIRE_DOCKER=1" >&2
			return 1
		fi
		skip "dockerd is not running"
	fi
}

teardown() {
	rk_delete_computers
	# anything a failed delete left behind
	rk_remove_containers
	rk_kill_all
}

@test "docker: create, exec, file round trip, delete" {
	run rk computer create --provider docker --name d --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(rk computer show d --json | rk_json 'd["state"]')" = running ]
	run rk computer exec d --json -- 'echo hi; id -un'
	[ "$status" -eq 0 ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == hi* ]]
	printf 'abc' | rk computer file write d x.txt -x
	[ "$(rk computer file read d x.txt)" = abc ]
	run rk computer delete d --wait --timeout 120 --json
	[ "$status" -eq 0 ]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 0 ]
}

@test "docker: an unreachable DOCKER_HOST is unavailable (5)" {
	export DOCKER_HOST=unix:///nonexistent
	expect_status 5 rk computer create --provider docker --name d --wait --timeout 60 --json
}

# A running docker computer named $1 (default d), shell only.
docker_computer() {
	docker_or_skip
	run rk computer create --provider docker --name "${1:-d}" --no-desktop --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

# The container id behind computer $1.
container_of() {
	rk computer show "$1" --json | rk_json 'd["provider_ref"]'
}

# How many processes in computer $1 match pgrep -f "$2" (pgrep itself runs
# through bash -lc, whose command line holds the pattern, so match on a
# bracketed form).
procs_in() {
	rk computer exec "$1" --json -- "pgrep -fc '$2' || true" | rk_json 'd["output"]'
}

@test "docker: exit codes and signals come back through the session" {
	docker_computer d
	run rk computer exec d --json -- 'echo out; echo err >&2; exit 3'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 3 ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"]')" = null ]
	[ "$(printf '%s' "$output" | rk_json 'd["session"]')" = null ]
	[ "$(printf '%s' "$output" | rk_json 'sorted(d["output"].split())')" = '["err", "out"]' ]
	run rk computer exec d --json -- true
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
	run rk computer exec d --json -- 'kill -TERM $$'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"]')" = SIGTERM ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = null ]
	run rk computer exec d --json -- 'kill -KILL $$'
	[ "$(printf '%s' "$output" | rk_json 'd["signal"]')" = SIGKILL ]
}

@test "docker: Ctrl-C through input interrupts sleep 100, with and without a tty" {
	docker_computer d
	local sid
	sid=$(rk computer exec d --json --yield-ms 300 -- 'sleep 100' | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	run rk computer input d "$sid" '\x03' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["signal"] == "SIGINT" or d["exitCode"] == 130')" = true ]
	[ "$(procs_in d '[s]leep 100')" = 0 ]
	# on a tty, ^C goes through the line discipline to the foreground group
	sid=$(rk computer exec d --json --tty --yield-ms 500 -- 'sleep 100; echo not-reached' | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	run rk computer input d "$sid" '\x03' --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') != *not-reached* ]]
	[ "$(procs_in d '[s]leep 100')" = 0 ]
}

@test "docker: a tty python3 REPL answers print(6*7) with 42 and exits with its code" {
	docker_computer d
	run rk computer exec d --json --tty --yield-ms 2000 -- python3 -q
	[ "$status" -eq 0 ]
	local sid
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *'>>> '* ]]
	run rk computer input d "$sid" 'print(6*7)\n' --json --yield-ms 2000
	[ "$status" -eq 0 ]
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *42* ]]
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = true ]
	run rk computer input d "$sid" 'raise SystemExit(5)\n' --json --yield-ms 5000
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 5 ]
}

@test "docker: output over 64 KiB is truncated to its tail" {
	docker_computer d
	run rk computer exec d --json -- 'seq 1 100000'
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["truncated"]')" = true ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = 0 ]
	printf '%s' "$output" | python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["output"])' > "$BATS_TEST_TMPDIR/out"
	seq 1 100000 | tail -c 65536 | cmp - "$BATS_TEST_TMPDIR/out"
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/out")" = 100000 ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out")" = 89079 ]
}

@test "docker: a session unused for RAKAZO_SESSION_IDLE_MS ends and its command is killed" {
	export RAKAZO_SESSION_IDLE_MS=1500
	docker_computer d
	local sid
	sid=$(rk computer exec d --json --yield-ms 300 -- 'sleep 100' | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	# listing sessions does not touch them
	wait_for "[ \"\$(rk computer sessions d --json | rk_json \"[s['state'] for s in d if s['id']=='$sid'][0]\")\" != running ]" 60
	expect_json_error 3 not_found rk computer input d "$sid" 'x' --json
	wait_for "[ \"\$(procs_in d '[s]leep 100')\" = 0 ]" 30
}

@test "docker: a container removed mid-session gives a clear result, not a hang" {
	docker_computer d
	local sid cid
	sid=$(rk computer exec d --json --yield-ms 500 -- 'echo before; sleep 100' | rk_json 'd["session"]')
	[[ $sid == cse_* ]]
	cid=$(container_of d)
	[ -n "$cid" ]
	curl -sf --max-time 60 -X DELETE --unix-socket /var/run/docker.sock \
		"http://localhost/containers/$cid?force=1"
	# a bounded wait: timeout's 124 would be the hang
	run timeout 120 "$RAKAZO_BIN" computer input d "$sid" '' --json --yield-ms 5000
	[ "$status" -eq 0 ] || { echo "status $status: $output" >&2; return 1; }
	# the end is reported as lost: how the command ended is unknown
	[ "$(printf '%s' "$output" | rk_json 'd["running"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd.get("lost")')" = true ]
	[ "$(printf '%s' "$output" | rk_json 'd["exitCode"]')" = null ]
	[ "$(printf '%s' "$output" | rk_json 'd["session"]')" = null ]
	# the session is over
	run timeout 60 "$RAKAZO_BIN" computer input d "$sid" '' --json
	[ "$status" -eq 3 ]
}

@test "docker: with dockerd stopped (a dead socket) calls are unavailable (5) with how to start it" {
	docker_computer d
	# the worker keeps the environment it started with: end it, so the next
	# one starts with the dead socket below
	rk_kill_all
	# a socket file nothing listens on: what a stopped dockerd leaves behind
	python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$BATS_TEST_TMPDIR/dead.sock"
	[ -S "$BATS_TEST_TMPDIR/dead.sock" ]
	export DOCKER_HOST="unix://$BATS_TEST_TMPDIR/dead.sock"
	[ "$(rk computer providers --json | rk_json '[p["available"] for p in d if p["name"] == "docker"][0]')" = false ]
	expect_json_error 5 unavailable rk computer create --provider docker --name e --no-desktop --wait --timeout 60 --json
	[[ $(cat "$BATS_TEST_TMPDIR/stderr") == *"docker is not running at $BATS_TEST_TMPDIR/dead.sock: start it with"*scripts/dockerd.sh* ]]
	run rk computer stop d --wait --timeout 60
	[ "$status" -eq 5 ]
	[[ ${lines[-1]} == "rakazo: unavailable: "*"docker is not running at $BATS_TEST_TMPDIR/dead.sock"* ]]
	run rk doctor --json
	[ "$(printf '%s' "$output" | rk_json '[c["status"] for c in d["checks"] if c["check"] == "provider docker"][0]')" != ok ]
	# the computer itself was left as it was
	rk_kill_all
	unset DOCKER_HOST
	[ "$(rk computer show d --json | rk_json 'd["state"]')" = running ]
	run rk computer exec d --json -- 'echo back'
	[ "$(printf '%s' "$output" | rk_json 'd["output"]')" = back ]
}

@test "docker: doctor asks dockerd for the computer image, and reports a missing one" {
	docker_or_skip
	local tag
	tag=$(rk computer image tag)
	[[ $tag == rakazo-computer:* ]]
	run rk doctor --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[c["status"] for c in d["checks"] if c["check"]=="docker image"][0]')" = ok ]
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="docker image"][0]') == "$tag: in dockerd ("* ]]
	# the tag a run uses can be overridden; a missing one is reported, not assumed
	export RAKAZO_IMAGE=rakazo-computer:missing-$$
	[ "$(rk computer image tag)" = "$RAKAZO_IMAGE" ]
	run rk doctor --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[c["status"] for c in d["checks"] if c["check"]=="docker image"][0]')" = warn ]
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="docker image"][0]') == *"$RAKAZO_IMAGE (from RAKAZO_IMAGE) is not in dockerd"* ]]
	# and creating from it fails with the same news
	expect_json_error 5 unavailable rk computer create --provider docker --name m --no-desktop --wait --timeout 120 --json
	[[ $(cat "$BATS_TEST_TMPDIR/stderr") == *"$RAKAZO_IMAGE is not built"* ]]
	# a down dockerd leaves the image unchecked, and says why
	unset RAKAZO_IMAGE
	rk_kill_all
	DOCKER_HOST=unix:///nonexistent run rk doctor --json
	[[ $(printf '%s' "$output" | rk_json '[c["detail"] for c in d["checks"] if c["check"]=="docker image"][0]') == "not checked: docker is not running"* ]]
}

@test "docker: image build reuses a built recipe and follows DOCKER_HOST; dockerd.sh does too" {
	docker_or_skip
	local tag
	tag=$(rk computer image tag)
	# another path to the same daemon: a build through it finds the image and reuses it
	ln -s /var/run/docker.sock "$BATS_TEST_TMPDIR/other.sock"
	DOCKER_HOST="unix://$BATS_TEST_TMPDIR/other.sock" run rk computer image build --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[[ $output == *"image: $tag already built"* ]]
	[ "$(printf '%s\n' "$output" | grep '^{' | rk_json 'd["image"]')" = "$tag" ]
	# a DOCKER_HOST with nothing behind it is not the default socket in disguise
	python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$BATS_TEST_TMPDIR/dead.sock"
	DOCKER_HOST="unix://$BATS_TEST_TMPDIR/dead.sock" run rk computer image build
	[ "$status" -eq 5 ]
	[[ $output == *"docker is not running on $BATS_TEST_TMPDIR/dead.sock"* ]]
	DOCKER_HOST=tcp://127.0.0.1:9 run sh "$BATS_TEST_DIRNAME/../../image/build.sh"
	[ "$status" -eq 2 ]
	[[ $output == *"is not a unix:// socket"* ]]
	# dockerd.sh finds the daemon up on DOCKER_HOST's socket and starts nothing
	DOCKER_HOST="unix://$BATS_TEST_TMPDIR/other.sock" run sh "$BATS_TEST_DIRNAME/../../scripts/dockerd.sh"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	DOCKER_HOST=tcp://127.0.0.1:9 run sh "$BATS_TEST_DIRNAME/../../scripts/dockerd.sh"
	[ "$status" -eq 2 ]
	[[ $output == *"is not a unix:// socket"* ]]
}
