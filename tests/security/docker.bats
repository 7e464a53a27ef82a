#!/usr/bin/env bats
# Issue 20, item 7: a docker computer holds no privilege it does not need
# and cannot take the host down. Against the real dockerd (skipped when
# docker is down, a failure with RAKAZO_REQUIRE_DOCKER=1).

load helper

DOCKER_SOCK=/var/run/docker.sock

teardown() {
	local name
	if [ -n "${SERVE_PID:-}" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
	rk_delete_computers
	rk_remove_containers
	rk_kill_all
}

# A running docker computer named $1, shell only, made with the options
# that follow.
docker_computer() {
	docker_or_skip
	local name=$1
	shift
	run rk computer create --provider docker --name "$name" --no-desktop "$@" --wait --timeout 300 --json
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

# Prints `docker inspect`'s value of the Python expression $2 over the
# container document d of computer $1.
inspect_of() {
	local ref
	ref=$(rk computer show "$1" --json | rk_json 'd["provider_ref"]')
	curl -sf --max-time 10 --unix-socket "$DOCKER_SOCK" "http://localhost/containers/$ref/json" | rk_json "$2"
}

# The output of `rakazo computer exec $1 -- $2`.
exec_out() {
	rk computer exec "$1" --json -- "$2" | rk_json 'd["output"]'
}

# A server of this data directory on a free loopback port: URL, TOKEN.
start_server() {
	( eval 'exec "$RAKAZO_BIN" serve --listen 127.0.0.1:0 --token-file "$BATS_TEST_TMPDIR/token" --url-file "$BATS_TEST_TMPDIR/url"' \
		"$RK_CLOSE_FDS" ) >"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	SERVE_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	URL=$(cat "$BATS_TEST_TMPDIR/url")
	TOKEN=$(cat "$BATS_TEST_TMPDIR/token")
}

# api METHOD PATH [BODY]: sets CODE and BODY (the reply).
api() {
	local args=(-s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	CODE=$(curl "${args[@]}" "$URL$2")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
}

# How many processes on the host belong to computer $1's container (its
# cgroup names the container id).
host_procs_of() {
	local ref
	ref=$(rk computer show "$1" --json | rk_json 'd["provider_ref"]')
	grep -l -- "$ref" /proc/[0-9]*/cgroup 2>/dev/null | wc -l
}

@test "docker security: the workspace and run dir are mounted nosuid,nodev" {
	docker_computer d
	run exec_out d 'grep -E " /home/user/rakazo-home | /run/rakazo " /proc/self/mountinfo'
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(printf '%s\n' "$output" | grep -c .)" -eq 2 ]
	while read -r line; do
		opts=$(printf '%s' "$line" | cut -d' ' -f6)
		[[ ,$opts, == *,nosuid,* ]]
		[[ ,$opts, == *,nodev,* ]]
	done <<<"$output"
}

@test "docker security: no new privileges, no capabilities, for the user and for root" {
	docker_computer d
	run exec_out d 'grep -E "^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb):" /proc/self/status'
	[ "$status" -eq 0 ]
	echo "$output"
	[[ $output == *"NoNewPrivs:	1"* ]]
	[ "$(printf '%s\n' "$output" | grep -c ':	0000000000000000$')" -eq 4 ]
	# root inside (docker exec -u 0, the daemon's own way in) holds none either
	[ "$(inspect_of d 'd["HostConfig"]["CapDrop"]')" = '["ALL"]' ]
	[ "$(inspect_of d 'd["HostConfig"]["CapAdd"]')" = null ]
	[[ $(inspect_of d 'd["HostConfig"]["SecurityOpt"]') == *no-new-privileges* ]]
	if command -v docker >/dev/null; then
		ref=$(rk computer show d --json | rk_json 'd["provider_ref"]')
		run docker exec -u 0 "$ref" grep -E '^(CapEff|NoNewPrivs):' /proc/self/status
		[ "$status" -eq 0 ]
		[[ $output == *"CapEff:	0000000000000000"* ]]
		[[ $output == *"NoNewPrivs:	1"* ]]
	fi
}

@test "docker security: a root-owned setuid binary in the workspace does not give euid 0" {
	[ "$(id -u)" = 0 ] || skip "plants a root-owned file: needs root"
	docker_computer d
	# the computer's own id(1), made root's and setuid on the host, as an
	# import or a host-side write could leave it
	rk computer exec d -- 'cp /usr/bin/id ./suid-id' >/dev/null
	home="$RAKAZO_DATA_DIR/homes/$(rk computer show d --json | rk_json 'd["id"]')"
	chown 0:0 "$home/suid-id"
	chmod 4755 "$home/suid-id"
	[ "$(stat -c '%u %a' "$home/suid-id")" = "0 4755" ]
	run exec_out d './suid-id -u; ./suid-id -ru'
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(printf '%s\n' "$output" | sed -n 1p)" = 1000 ]
	[ "$(printf '%s\n' "$output" | sed -n 2p)" = 1000 ]
}

@test "docker security: the workspace root is the computer user's after a checkpoint import" {
	[ "$(id -u)" = 0 ] || skip "the owner is only root's to set"
	docker_computer d
	rk computer stop d --wait --timeout 120 --json >/dev/null
	mkdir -p "$BATS_TEST_TMPDIR/ws"
	echo hi >"$BATS_TEST_TMPDIR/ws/a.txt"
	tar -C "$BATS_TEST_TMPDIR/ws" -cf "$BATS_TEST_TMPDIR/ws.tar" a.txt
	rk checkpoint import d "$BATS_TEST_TMPDIR/ws.tar" --json >/dev/null
	rk computer resume d --wait --timeout 120 --json >/dev/null
	run exec_out d 'stat -c %u .; touch made-by-user && echo writable'
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(printf '%s\n' "$output" | sed -n 1p)" = 1000 ]
	[[ $output == *writable* ]]
}

@test "docker security: every computer gets the default limits, shown and enforced" {
	docker_computer d
	[ "$(rk computer show d --json | rk_json 'd["resources"]["memory"]')" = 4294967296 ]
	[ "$(rk computer show d --json | rk_json 'd["resources"]["pids"]')" = 1024 ]
	cpus=$(rk computer show d --json | rk_json 'd["resources"]["cpus"]')
	[ "$cpus" = "$(($(nproc) < 2 ? $(nproc) : 2))" ]
	[ "$(inspect_of d 'd["HostConfig"]["Memory"]')" = 4294967296 ]
	[ "$(inspect_of d 'd["HostConfig"]["MemorySwap"]')" = 4294967296 ]
	[ "$(inspect_of d 'd["HostConfig"]["PidsLimit"]')" = 1024 ]
	[ "$(inspect_of d 'd["HostConfig"]["NanoCpus"]')" = "$((cpus * 1000000000))" ]
	run rk computer show d
	[[ $output == *resources:* ]]
	[[ $output == *4294967296* ]]
	# the provider says which limits it enforces, and their defaults
	run rk computer providers --json
	[ "$(printf '%s' "$output" | rk_json '[p["capabilities"]["memoryLimit"] and p["capabilities"]["cpusLimit"] and p["capabilities"]["pidsLimit"] for p in d if p["name"] == "docker"][0]')" = true ]
	[ "$(printf '%s' "$output" | rk_json '[p["limits"] for p in d if p["name"] == "docker"][0]["pids"]')" = 1024 ]
}

@test "docker security: --memory/--cpus/--pids are stored, shown and in docker" {
	docker_computer b --memory 384m --cpus 0.5 --pids 200
	run rk computer show b --json
	[ "$(printf '%s' "$output" | rk_json 'd["resources"]')" = '{"memory": 402653184, "cpus": 0.5, "pids": 200}' ]
	[ "$(inspect_of b 'd["HostConfig"]["Memory"]')" = 402653184 ]
	[ "$(inspect_of b 'd["HostConfig"]["NanoCpus"]')" = 500000000 ]
	[ "$(inspect_of b 'd["HostConfig"]["PidsLimit"]')" = 200 ]
}

@test "docker security: a container without the computer's limits (an older rakazo's) gets them at its next start" {
	docker_computer d --pids 300
	ref=$(rk computer show d --json | rk_json 'd["provider_ref"]')
	curl -sf --max-time 30 --unix-socket "$DOCKER_SOCK" -H 'Content-Type: application/json' \
		-d '{"Memory":8589934592,"MemorySwap":8589934592,"PidsLimit":-1}' "http://localhost/containers/$ref/update" >/dev/null
	[ "$(inspect_of d 'd["HostConfig"]["Memory"]')" = 8589934592 ]
	rk computer stop d --wait --timeout 120 --json >/dev/null
	rk computer resume d --wait --timeout 120 --json >/dev/null
	[ "$(rk computer show d --json | rk_json 'd["provider_ref"]')" = "$ref" ]
	[ "$(inspect_of d 'd["HostConfig"]["Memory"]')" = 4294967296 ]
	[ "$(inspect_of d 'd["HostConfig"]["MemorySwap"]')" = 4294967296 ]
	[ "$(inspect_of d 'd["HostConfig"]["PidsLimit"]')" = 300 ]
}

@test "docker security: bad limits are usage errors (2); a provider that cannot enforce one says so" {
	expect_status 2 rk computer create --provider docker --name x --memory 12x
	[[ $output == *"--memory '12x' is not a memory size"* ]]
	expect_status 2 rk computer create --provider docker --name x --memory 1m
	[[ $output == *"out of range"* ]]
	expect_status 2 rk computer create --provider docker --name x --cpus 0
	expect_status 2 rk computer create --provider docker --name x --cpus lots
	expect_status 2 rk computer create --provider docker --name x --pids 10
	[[ $output == *"--pids '10' is out of range"* ]]
	expect_status 2 rk computer create --provider docker --name x --pids 1e3
	run rk computer create --provider fake --name x --memory 1g --wait --json
	[ "$status" -ne 0 ]
	[[ $output == *"provider 'fake' cannot enforce a memory limit"* ]]
	[ "$(rk computer list --json | rk_json 'len(d)')" = 0 ]
	# a fake computer has none, and says so
	rk computer create --provider fake --name f --wait --json >/dev/null
	[ "$(rk computer show f --json | rk_json 'd["resources"]')" = '{"memory": null, "cpus": null, "pids": null}' ]
}

@test "docker security: the API's create takes resources and its computer JSON shows them" {
	docker_or_skip
	start_server
	api POST /v1/computers '{"commandKey":"k1","name":"a","source":{"provider":"docker","template":null},"resources":{"memory":"1x"}}'
	[ "$CODE" = 400 ]
	[[ $BODY == *"resources.memory '1x' is not a memory size"* ]]
	api POST /v1/computers '{"commandKey":"k2","name":"a","source":{"provider":"docker","template":null},"resources":{"swap":1}}'
	[ "$CODE" = 400 ]
	api POST /v1/computers '{"commandKey":"k3","name":"a","source":{"provider":"docker","template":null},"resources":{"memory":"768m","cpus":0.5,"pids":300}}'
	[ "$CODE" = 202 ] || { echo "$BODY"; return 1; }
	exe=$(printf '%s' "$BODY" | rk_json 'd["id"]')
	id=$(printf '%s' "$BODY" | rk_json 'd["computerId"]')
	wait_for "api GET /v1/executions/$exe && [ \"\$(printf '%s' \"\$BODY\" | rk_json 'd[\"state\"]')\" = succeeded ]" 300
	api GET "/v1/computers/$id"
	[ "$CODE" = 200 ]
	[ "$(printf '%s' "$BODY" | rk_json 'd["resources"]')" = '{"memory": 805306368, "cpus": 0.5, "pids": 300}' ]
	[ "$(inspect_of a 'd["HostConfig"]["PidsLimit"]')" = 300 ]
}

@test "docker security: a memory hog is killed inside the computer; the computer goes on" {
	docker_computer b --memory 256m --cpus 0.5 --pids 256
	# the limit is there before anything tries it (no hog runs on the host)
	[ "$(inspect_of b 'd["HostConfig"]["Memory"]')" = 268435456 ]
	run rk computer exec b --json -- 'python3 -c "a = [b\"x\" * (1 << 20) for _ in range(1024)]"; echo "hog=$?"'
	[ "$status" -eq 0 ]
	echo "$output"
	[[ $(printf '%s' "$output" | rk_json 'd["output"]') == *hog=137* ]]
	[ "$(inspect_of b 'd["State"]["Running"]')" = true ]
	[ "$(exec_out b 'echo still here')" = "still here" ]
}

@test "docker security: a fork bomb stops at the pids limit; the host answers; a restart clears it" {
	docker_computer b --memory 512m --cpus 0.5 --pids 128
	# the limit is there before the bomb goes off (none ever runs unbounded)
	[ "$(inspect_of b 'd["HostConfig"]["PidsLimit"]')" = 128 ]
	# bounded three ways: the pids limit, the bomb's own 30 s and timeout's kill
	rk computer exec b --json --yield-ms 1000 -- \
		'timeout -s KILL 60 bash -c "b() { ((SECONDS < 30)) && { b | b & }; }; b; sleep 60"' >/dev/null
	wait_for '[ "$(host_procs_of b)" -ge 120 ]' 60
	# never more than the limit, however hard it tries
	for _ in 1 2 3; do
		n=$(host_procs_of b)
		echo "processes in the computer: $n"
		[ "$n" -le 128 ]
	done
	# the host answers, and so does rakazo about the computer (a command may
	# find no process slot free: then it says so, promptly)
	[ "$(echo host)" = host ]
	run timeout 60 "$RAKAZO_BIN" computer exec b --json -- 'echo alive'
	echo "$output"
	[ "$status" -ne 124 ]
	run timeout 60 "$RAKAZO_BIN" computer show b --json
	[ "$status" -eq 0 ]
	# a stop ends every process of it; the computer comes back whole
	rk computer stop b --wait --timeout 120 --json >/dev/null
	rk computer resume b --wait --timeout 120 --json >/dev/null
	[ "$(exec_out b 'echo ok')" = ok ]
	[ "$(host_procs_of b)" -lt 20 ]
	run exec_out b 'grep " /home/user/rakazo-home " /proc/self/mountinfo'
	[[ $output == *nosuid,nodev* ]]
}
