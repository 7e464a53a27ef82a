#!/usr/bin/env bats
# rakazo checkpoint (issue 6): checkpoints, restore, tar+zstd export/import,
# strict imports, replacement of a lost docker container, across kinds.

load helper

teardown() {
	if [ -n "${DOCKER_UP:-}" ]; then
		docker ps -aq --filter "label=rakazo.test=$RAKAZO_TEST_LABEL" | xargs -r docker rm -f >/dev/null 2>&1 || true
	fi
	rk_kill_all
}

docker_up() {
	if curl -sf --max-time 2 --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 &&
		[ -n "$(docker images -q "$("$RAKAZO_BIN" computer image tag)" 2>/dev/null)" ]; then
		DOCKER_UP=1
		return 0
	fi
	[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "docker is required but not up" >&2; return 1; }
	skip "docker is not running (or the image is not built)"
}

home_of() {
	rk computer show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["home_key"])'
}

jget() {
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

@test "create, list, show and verify a marker checkpoint" {
	rk computer create --provider fake --name a --wait --json >/dev/null
	run rk checkpoint create a --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["kind"]')" = marker ]
	[ "$(echo "$output" | jget 'd["latest"]')" = True ]
	rev=$(echo "$output" | jget 'd["id"]')
	run rk checkpoint list a --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'len(d)')" = 1 ]
	run rk checkpoint show a "$rev" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["reason"]')" = manual ]
	run rk checkpoint verify a --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["ok"]')" = True ]
	run rk checkpoint show a rev-0000000000000-00000000
	[ "$status" -eq 3 ]
}

@test "stop checkpoints first; restore brings an older revision back" {
	rk computer create --provider fake --name b --revisions 3 --wait --json >/dev/null
	printf 'one' | rk computer file write b notes.txt -
	r1=$(rk checkpoint create b --json | jget 'd["id"]')
	printf 'two' | rk computer file write b notes.txt -
	rk computer stop b --wait --json >/dev/null
	run rk checkpoint list b --json
	[ "$(echo "$output" | jget 'd[0]["reason"]')" = stop ]
	[ "$(echo "$output" | jget 'd[0]["kind"]')" = snapshot ]
	run rk checkpoint restore b --revision "$r1" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["restored_from"]')" = "$r1" ]
	[ "$(cat "$RAKAZO_DATA_DIR/homes/$(home_of b)/notes.txt")" = one ]
	rk computer resume b --wait --json >/dev/null
	[ "$(rk computer file read b notes.txt)" = one ]
	# restore refuses a running computer: its machine holds the directory
	run rk checkpoint restore b --revision "$r1"
	[ "$status" -eq 4 ]
	[[ "$output" == *"stop it first"* ]]
}

@test "export streams tar+zstd, leaves out browser caches only, and imports into another computer" {
	rk computer create --provider fake --name src --wait --json >/dev/null
	h="$RAKAZO_DATA_DIR/homes/$(home_of src)"
	mkdir -p "$h/project/Cache" "$h/.browser-profiles/default/Default/Cache"
	echo keep >"$h/project/Cache/x"
	echo keep >"$h/project/lock"
	echo cookie >"$h/.browser-profiles/default/Default/Cookies"
	echo drop >"$h/.browser-profiles/default/Default/Cache/data_0"
	ln -s host-1 "$h/.browser-profiles/default/SingletonLock"
	rk checkpoint create src --json >/dev/null
	rk checkpoint export src -o "$BATS_TEST_TMPDIR/ws.tar.zst"
	run tar --zstd -tf "$BATS_TEST_TMPDIR/ws.tar.zst"
	[ "$status" -eq 0 ]
	[[ "$output" == *"project/Cache/x"* ]]
	[[ "$output" == *"project/lock"* ]]
	[[ "$output" == *"Default/Cookies"* ]]
	[[ "$output" != *"data_0"* ]]
	[[ "$output" != *"SingletonLock"* ]]
	rk computer create --provider fake --name dst --wait --json >/dev/null
	rk computer stop dst --wait --json >/dev/null
	rk checkpoint export src | rk checkpoint import dst - --json >/dev/null
	rk computer resume dst --wait --json >/dev/null
	[ "$(rk computer file read dst .browser-profiles/default/Default/Cookies)" = cookie ]
	[ "$(rk computer file read dst project/lock)" = keep ]
}

@test "export a - | import b - composes as a pipeline; FILE as the second argument; both at once is usage" {
	rk computer create --provider fake --name a --wait --json >/dev/null
	echo piped | rk computer file write a work/p.txt -
	rk checkpoint create a --json >/dev/null
	rk computer create --provider fake --name b --wait --json >/dev/null
	rk computer stop b --wait --json >/dev/null
	run bash -c 'set -o pipefail; "$RAKAZO_BIN" checkpoint export a - | "$RAKAZO_BIN" checkpoint import b - --json'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(echo "$output" | jget 'd["imported"]["files"] >= 1')" = True ]
	[ "$(cat "$RAKAZO_DATA_DIR/homes/$(home_of b)/work/p.txt")" = piped ]
	rk checkpoint export a "$BATS_TEST_TMPDIR/a.tar.zst"
	[ "$(tar --zstd -xOf "$BATS_TEST_TMPDIR/a.tar.zst" work/p.txt)" = piped ]
	expect_status 2 rk checkpoint export a - -o "$BATS_TEST_TMPDIR/x.tar.zst"
	[[ $output == *"rakazo: usage: give the output once"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/x.tar.zst" ]
	expect_status 2 rk checkpoint export a x y
}

# A stand-in for Chromium on a fake computer: a process whose command line
# names the workspace's profile dir, that writes its cookie file only when
# it is closed cleanly (SIGTERM), as Chromium flushes its cookie store.
start_browser() {
	cat >"$1/fakebrowser.py" <<'EOF2'
import os, signal, sys, time
prof = sys.argv[1].split("=", 1)[1]
def close(*_):
    os.makedirs(prof + "/Default", exist_ok=True)
    with open(prof + "/Default/Cookies", "w") as f:
        f.write("written-on-close")
    sys.exit(0)
signal.signal(signal.SIGTERM, close)
os.makedirs(prof, exist_ok=True)
open(prof + "/up", "w").close()
while True:
    time.sleep(0.1)
EOF2
	rm -f "$1/.browser-profiles/default/up"
	rk computer exec "$2" -- "setsid -f '$RK_PYTHON' fakebrowser.py --user-data-dir=\$PWD/.browser-profiles/default </dev/null >/dev/null 2>&1" >/dev/null
	wait_for "[ -e '$1/.browser-profiles/default/up' ]" 20
}

@test "quiesce: a Private computer's browser is closed cleanly before the checkpoint copies it; --no-quiesce leaves it" {
	rk computer create --provider fake --name q --revisions 3 --wait --json >/dev/null
	h="$RAKAZO_DATA_DIR/homes/$(home_of q)"
	start_browser "$h" q
	pgrep -f -- "--user-data-dir=$h/.browser-profiles" >/dev/null
	rk checkpoint create q --no-quiesce --json >/dev/null
	# left running: the snapshot has no cookie file
	pgrep -f -- "--user-data-dir=$h/.browser-profiles" >/dev/null
	! rk checkpoint export q - | tar --zstd -tf - | grep -q Default/Cookies
	rk checkpoint create q --json >/dev/null
	# closed before the copy: what it wrote as it closed is in the revision
	[ "$(rk checkpoint export q - | tar --zstd -xOf - ./.browser-profiles/default/Default/Cookies 2>/dev/null ||
		rk checkpoint export q - | tar --zstd -xOf - .browser-profiles/default/Default/Cookies)" = written-on-close ]
	! pgrep -f -- "--user-data-dir=$h/.browser-profiles" >/dev/null
}

@test "import refuses every kind of tar slip and writes nothing outside" {
	rk computer create --provider fake --name t --wait --json >/dev/null
	rk computer stop t --wait --json >/dev/null
	d=$BATS_TEST_TMPDIR
	python3 - "$d" <<'EOF'
import io, sys, tarfile
d = sys.argv[1]
def f(n, data=b'x'):
    i = tarfile.TarInfo(n); i.size = len(data); return (i, data)
def l(n, target, kind=tarfile.SYMTYPE):
    i = tarfile.TarInfo(n); i.type = kind; i.linkname = target; return (i, None)
def dev(n, kind):
    i = tarfile.TarInfo(n); i.type = kind; i.devmajor = 1; i.devminor = 3; return (i, None)
cases = {
    'absolute': [f('ok'), f(d + '/slip-abs')],
    'dotdot': [f('a/../../slip-dotdot')],
    'symlink_out': [l('ln', '../../outside')],
    'symlink_abs': [l('ln', '/etc')],
    'hardlink_out': [l('hl', '../outside', tarfile.LNKTYPE)],
    'device': [dev('null', tarfile.CHRTYPE)],
    'fifo': [dev('pipe', tarfile.FIFOTYPE)],
    'through_link': [l('ln', '.'), f('ln/../../slip-through')],
}
for name, members in cases.items():
    with tarfile.open(d + '/' + name + '.tar', 'w') as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
with tarfile.open(d + '/too_big.tar', 'w') as t:
    m, data = f('big', b'y' * 20000)
    t.addfile(m, io.BytesIO(data))
EOF
	for k in absolute dotdot symlink_out symlink_abs hardlink_out device fifo through_link; do
		run rk checkpoint import t "$d/$k.tar"
		echo "$k: $output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"rakazo: invalid_argument: "* ]]
	done
	RAKAZO_IMPORT_LIMIT=10000 run rk checkpoint import t "$d/too_big.tar"
	[ "$status" -ne 0 ]
	[[ "$output" == *"too_large"* ]]
	[ ! -e "$d/slip-abs" ]
	[ ! -e "$d/slip-dotdot" ]
	[ ! -e "$RAKAZO_DATA_DIR/slip-dotdot" ]
	[ ! -e "$RAKAZO_DATA_DIR/homes/slip-through" ]
	run ls -A "$RAKAZO_DATA_DIR/homes"
	[ "$(echo "$output" | wc -l)" -eq 1 ] # no staging dir left behind
}

@test "verify --all after checkpoints of several computers" {
	rk computer create --provider fake --name v1 --wait --json >/dev/null
	rk computer create --provider fake --name v2 --revisions 2 --wait --json >/dev/null
	echo x | rk computer file write v2 x.txt -
	rk checkpoint create v1 --json >/dev/null
	rk checkpoint create v2 --json >/dev/null
	run rk checkpoint verify --all --deep --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'all(x["ok"] for x in d)')" = True ]
}

# The cookie page server (tests/fixtures/cookie_server.py) inside computer
# $1 on 127.0.0.1:8765, logging to /tmp/requests.log in the machine (not in
# the workspace: a new machine starts with an empty log).
serve_cookies() {
	rk computer exec "$1" -- 'setsid -f python3 srv/cookie_server.py 8765 /tmp/requests.log </dev/null >/dev/null 2>&1' >/dev/null
	wait_for "rk computer exec $1 -- 'python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", 8765))\"' >/dev/null 2>&1" 30
}

# The server in computer $1 saw a request for page $2 carrying cookie text $3 ("" for any).
served() {
	rk computer exec "$1" -- cat /tmp/requests.log 2>/dev/null |
		awk -F'\t' -v p="/$2" -v c="$3" '$1 == p && index($2, c) > 0 { f = 1 } END { exit !f }'
}

# Computer $1's Chromium (display 0) loads page $2 until the server has seen
# a request for it carrying cookie text $3: a browser just up may drop the
# first keys.
load_until() {
	local i
	rk screen shot "$1" --json >/dev/null
	wait_for "rk computer exec $1 -- 'DISPLAY=:0 xdotool search --onlyvisible --class chromium' >/dev/null 2>&1" 60
	for i in 1 2 3 4 5 6; do
		rk screen act "$1" --no-observe -a '[{"action":"key","keys":"ctrl+l"},{"action":"wait","ms":300},
			{"action":"type","text":"http://127.0.0.1:8765/'"$2"'?v='"$i"'"},{"action":"wait","ms":200},
			{"action":"key","keys":"Return"}]' --json >/dev/null
		wait_for "served $1 $2 '$3'" 8 2>/dev/null && return 0
	done
	echo "computer $1 never got page $2 with cookie '$3' to the server" >&2
	rk computer exec "$1" -- cat /tmp/requests.log >&2
	return 1
}

@test "docker: a destroyed container is replaced and the file and the Chromium cookie are back (issue 6)" {
	docker_up
	rk computer create --name d1 --wait --json >/dev/null
	echo precious | rk computer file write d1 work/notes.txt -
	rk computer file write d1 srv/cookie_server.py <"$BATS_TEST_DIRNAME/../fixtures/cookie_server.py"
	serve_cookies d1
	# Chromium gets a persistent cookie (one=alpha) from a page in the container
	load_until d1 one ""
	h="$RAKAZO_DATA_DIR/homes/$(home_of d1)"
	run rk checkpoint create d1 --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["kind"]')" = marker ]
	# the checkpoint closed Chromium cleanly first: the cookie is in its database on the host
	python3 - "$h/.browser-profiles/default/Default/Cookies" <<'EOF'
import sqlite3, sys
names = [r[0] for r in sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True).execute("SELECT name FROM cookies")]
assert "one" in names, names
EOF
	# the container goes (Docker API), the computer provisions through its stale ref
	ref=$(rk computer show d1 --json | jget 'd["provider_ref"]')
	curl -sf -X DELETE --unix-socket /var/run/docker.sock "http://localhost/containers/$ref?force=1"
	rk computer stop d1 --wait --json >/dev/null
	run rk computer resume d1 --wait --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["result"]["replacement"]')" = True ]
	[ "$(echo "$output" | jget 'd["result"]["restore"]["source"]')" = live ]
	[ "$(rk computer show d1 --json | jget 'd["provider_ref"]')" != "$ref" ]
	[ "$(rk computer file read d1 work/notes.txt)" = precious ]
	# the new container's Chromium sends the cookie the old one was given
	serve_cookies d1
	load_until d1 two "one=alpha"
	rk checkpoint verify d1 --json >/dev/null
}

@test "docker -> fake -> docker: the workspace moves across kinds" {
	docker_up
	rk computer create --name k1 --no-desktop --wait --json >/dev/null
	echo across | rk computer file write k1 notes.txt -
	echo 'c=1' | rk computer file write k1 .browser-profiles/default/Default/Cookies -
	rk checkpoint create k1 --json >/dev/null
	rk computer create --provider fake --name k2 --wait --json >/dev/null
	rk computer stop k2 --wait --json >/dev/null
	rk checkpoint export k1 | rk checkpoint import k2 - --json >/dev/null
	rk computer resume k2 --wait --json >/dev/null
	[ "$(rk computer file read k2 notes.txt)" = across ]
	rk computer create --name k3 --no-desktop --wait --json >/dev/null
	rk computer stop k3 --wait --json >/dev/null
	rk checkpoint export k2 | rk checkpoint import k3 - --json >/dev/null
	rk computer resume k3 --wait --json >/dev/null
	[ "$(rk computer file read k3 notes.txt)" = across ]
	[ "$(rk computer file read k3 .browser-profiles/default/Default/Cookies)" = 'c=1' ]
	run rk computer exec k3 -- cat notes.txt
	[[ "$output" == *across* ]]
}
