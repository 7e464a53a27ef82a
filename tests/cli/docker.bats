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
	mkdir -p "$RAKAZO_DATA_DIR"
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
	local name
	for name in $(rk computer list --json 2>/dev/null | rk_json '" ".join(c["name"] for c in d)' 2>/dev/null); do
		rk computer delete "$name" --wait --timeout 120 --json >/dev/null 2>&1 || true
	done
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
