# Shared setup for the bats suites: every test gets its own data directory,
# and teardown ends every process started for it (the worker, session
# holders and the commands they run), found by that directory alone.

: "${RAKAZO_BIN:=$BATS_TEST_DIRNAME/../../build/rakazo}"
case $RAKAZO_BIN in /*) ;; *) RAKAZO_BIN=$PWD/$RAKAZO_BIN ;; esac
export RAKAZO_BIN

# The tests call python3 for JSON a lot; a version manager's shim (pyenv)
# costs more than the call itself, so use the interpreter it points at
# (tests/run.sh finds it once for the whole run).
if [ -z "${RK_PYTHON:-}" ]; then
	RK_PYTHON=$(command python3 -c 'import sys; print(sys.executable)')
	export RK_PYTHON
fi
python3() {
	"$RK_PYTHON" "$@"
}

setup() {
	export RAKAZO_DATA_DIR="$BATS_TEST_TMPDIR/data"
	export RAKAZO_OWNER="user:bats"
	export RAKAZO_TEST_LABEL="bats-$$"
	export NO_COLOR=1
	export RAKAZO_FAKE_QUIET=1 # fake creates' warning (tests/security/api.bats checks it)
	unset RAKAZO_FAKE_FAULTS RAKAZO_FAKE_DELAY_MS RAKAZO_NO_WORKER RAKAZO_SESSION_IDLE_MS RAKAZO_LOG
	mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
	RK_CLOSE_FDS=$(rk_close_fds)
	rk_pg_setup
}

teardown() {
	rk_kill_all
	rk_remove_containers
	rk_pg_teardown
}

# RAKAZO_TEST_PG=DIR (a server from `sh scripts/pg.sh start DIR`, as `make
# check-pg` starts): every test gets a database of its own on it, as it gets
# a data directory of its own on SQLite.
rk_pg_setup() {
	unset RAKAZO_DATABASE_URL RK_PG_DB
	[ -n "${RAKAZO_TEST_PG:-}" ] || return 0
	RK_PG_DB="rk_bats_$$_${BATS_TEST_NUMBER}_$RANDOM"
	psql -h "$RAKAZO_TEST_PG" -U rakazo -d postgres -qtAc "CREATE DATABASE $RK_PG_DB" >/dev/null
	export RAKAZO_DATABASE_URL="postgresql://rakazo@/$RK_PG_DB?host=$RAKAZO_TEST_PG"
}

rk_pg_teardown() {
	[ -n "${RK_PG_DB:-}" ] || return 0
	psql -h "$RAKAZO_TEST_PG" -U rakazo -d postgres -qtAc "DROP DATABASE IF EXISTS $RK_PG_DB WITH (FORCE)" >/dev/null || true
}

# Runs SQL on this test's state, whichever backend holds it; prints rows as a|b.
rk_sql() {
	if [ -n "${RAKAZO_DATABASE_URL:-}" ]; then
		psql "$RAKAZO_DATABASE_URL" -qtAX -v ON_ERROR_STOP=1 -c "$1"
	else
		python3 - "$RAKAZO_DATA_DIR/rakazo.db" "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=30)
for row in c.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
c.commit()
EOF
	fi
}

# Skips a test that reads SQLite's file itself.
rk_sqlite_only() {
	[ -z "${RAKAZO_DATABASE_URL:-}" ] || skip "reads SQLite's file directly"
}

# Force-removes the docker containers this test's data directory made (by
# the run's label, then by where their workspace is mounted from), for a
# test that ended before its own `computer delete --wait`.
rk_remove_containers() {
	[ -S /var/run/docker.sock ] || return 0
	local q ids id
	q='filters=%7B%22label%22%3A%5B%22rakazo.test%3D'"$RAKAZO_TEST_LABEL"'%22%5D%7D'
	ids=$(curl -sf --max-time 5 --unix-socket /var/run/docker.sock "http://localhost/containers/json?all=1&$q" |
		python3 -c '
import json, sys
for c in json.load(sys.stdin):
    if any(m.get("Source", "").startswith(sys.argv[1] + "/") for m in c.get("Mounts", [])):
        print(c["Id"])
' "$RAKAZO_DATA_DIR" 2>/dev/null) || return 0
	for id in $ids; do
		curl -sf --max-time 30 -X DELETE --unix-socket /var/run/docker.sock \
			"http://localhost/containers/$id?force=1" >/dev/null || true
	done
	return 0
}

# Runs the binary as from a terminal: with only stdin, stdout and stderr.
# Bats keeps descriptors of its own open (3, 4 and more), which a process
# left behind would hold and which no user's shell has; sessions.bats checks
# a caller with an extra descriptor on its own.
rk() {
	eval '"$RAKAZO_BIN" "$@"' "$RK_CLOSE_FDS"
}

rk_close_fds() {
	local f n list=
	for f in /proc/$BASHPID/fd/*; do
		n=${f##*/}
		[ "$n" -gt 2 ] && list="$list $n>&-"
	done
	echo "$list"
}

# Pids of every process whose environment names this test's data directory:
# the worker (it sets RAKAZO_DATA_DIR itself), session holders and their
# commands. Exact match on a per-test path, so nothing else is touched.
rk_pids() {
	local dir=${1:-$RAKAZO_DATA_DIR} f pid
	for f in $(grep -lzxF "RAKAZO_DATA_DIR=$dir" /proc/[0-9]*/environ 2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] || echo "$pid"
	done
}

rk_kill_all() {
	local dir=${1:-$RAKAZO_DATA_DIR} pid wpid
	[ -d "$dir" ] || return 0
	# a failed test shows what the engine logged (its data directory goes with it)
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -z "${1:-}" ] && [ -s "$dir/log/rakazo.log" ]; then
		echo "--- the last lines of $dir/log/rakazo.log:"
		tail -n 40 "$dir/log/rakazo.log"
	fi
	if [ -f "$dir/worker.lock" ]; then
		wpid=$(head -n1 "$dir/worker.lock" 2>/dev/null || true)
		if [ -n "$wpid" ]; then kill -9 "$wpid" 2>/dev/null || true; fi
	fi
	for pid in $(rk_pids "$dir"); do
		kill -9 "$pid" 2>/dev/null || true
	done
	return 0
}

# rk_json EXPR: reads JSON on stdin, prints python's repr-free value of EXPR
# over `d` (strings bare, everything else as JSON).
rk_json() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))
' "$1"
}

# A running fake computer named $1 (default t).
rk_fake() {
	rk computer create --provider fake --name "${1:-t}" --wait --json >/dev/null
}

# The id of computer $1.
rk_id() {
	rk computer show "$1" --json | rk_json 'd["id"]'
}

# Runs "$@" and fails the test (with output) unless it exits with $want.
expect_status() {
	local want=$1
	shift
	run "$@"
	if [ "$status" -ne "$want" ]; then
		echo "expected exit $want, got $status from: $*" >&2
		echo "output: $output" >&2
		return 1
	fi
}

# A --json error: exit $1, stdout empty, stderr exactly one {"error":...} line with code $2.
expect_json_error() {
	local want=$1 code=$2
	shift 2
	local out err st=0
	out=$("$@" 2>"$BATS_TEST_TMPDIR/stderr") || st=$?
	err=$(cat "$BATS_TEST_TMPDIR/stderr")
	if [ "$st" -ne "$want" ]; then
		echo "expected exit $want, got $st from: $*; stderr: $err" >&2
		return 1
	fi
	if [ -n "$out" ]; then
		echo "stdout not empty on failure: $out" >&2
		return 1
	fi
	if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then
		echo "stderr is not one line: $err" >&2
		return 1
	fi
	printf '%s' "$err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert list(d) == ["error"], d
e = d["error"]
assert sorted(e) == ["code", "message"], e
assert e["code"] == sys.argv[1], e
assert isinstance(e["message"], str) and e["message"], e
' "$code" || { echo "bad error document: $err" >&2; return 1; }
}

# Waits up to $2 seconds (default 10) for "$1" to succeed.
wait_for() {
	local cmd=$1 n=$(( ${2:-10} * 20 ))
	while [ $n -gt 0 ]; do
		eval "$cmd" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	echo "timed out waiting for: $cmd" >&2
	return 1
}

# Skips the test when the docker provider is not available (fails with
# RAKAZO_REQUIRE_DOCKER=1).
docker_or_skip() {
	local up
	up=$(rk computer providers --json | rk_json '[p["available"] for p in d if p["name"] == "docker"][0]')
	if [ "$up" != true ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "docker is down and RAKAZO_REQUIRE_DOCKER=1" >&2; return 1; }
		skip "docker is down"
	fi
}

# Inserts a run row for bot $2 on computer $1 in state $3 (the run helper's
# `rakazo run --bot` makes these; here the table is written directly).
run_row() {
	local rid=${4:-run_$2_$3}
	rk_sql "DELETE FROM runs WHERE id = '$rid'" >/dev/null
	rk_sql "INSERT INTO runs (id, bot_id, computer_id, task, state, created_at) VALUES ('$rid', '$2', '$(rk_id "$1")', 'task', '$3', $(date +%s%3N))" >/dev/null
}

# Starts `rakazo screen gateway` on a free loopback port; sets GW (HOST:PORT).
gateway_start() {
	eval '"$RAKAZO_BIN" screen gateway --listen 127.0.0.1:0 >"$BATS_TEST_TMPDIR/gw.out" 2>"$BATS_TEST_TMPDIR/gw.err" &' \
		"$RK_CLOSE_FDS"
	GW_PID=$!
	wait_for 'grep -q "listening on" "$BATS_TEST_TMPDIR/gw.out"' 10
	GW=$(sed -n 's#.*ws://\([^/]*\)/.*#\1#p' "$BATS_TEST_TMPDIR/gw.out")
	[ -n "$GW" ]
}

# "WxH" of a PNG file after checking its signature and IHDR.
png_size() {
	python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature: %r" % d[:8]
assert d[12:16] == b"IHDR", "no IHDR first"
print("%dx%d" % struct.unpack(">II", d[16:24]))
EOF
}

# "R G B" of pixel (X, Y) of a PNG (ImageMagick).
pixel() {
	convert "$1[1x1+$2+$3]" -depth 8 rgb:- | od -An -tu1 | awk '{print $1, $2, $3}'
}

# setup() of the suites on a remote provider or store (an emulator or s3rver
# behind HTTP): setup's environment with quick HTTP retries, no fake-only
# knobs and no PostgreSQL (their state is the provider's).
rk_remote_setup() {
	export RAKAZO_DATA_DIR="$BATS_TEST_TMPDIR/data"
	export RAKAZO_OWNER="user:bats"
	export NO_COLOR=1
	export RAKAZO_HTTP_BACKOFF_MS=20
	unset RAKAZO_FAKE_FAULTS RAKAZO_FAKE_DELAY_MS RAKAZO_NO_WORKER RAKAZO_SESSION_IDLE_MS RAKAZO_LOG
	mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
	RK_CLOSE_FDS=$(rk_close_fds)
}

# Deletes every computer of this test's data directory (waiting), so that a
# provider's machines do not outlive the test that made them.
rk_delete_computers() {
	local name
	for name in $(rk computer list --json 2>/dev/null | rk_json '" ".join(c["name"] for c in d)' 2>/dev/null); do
		rk computer delete "$name" --wait --timeout 120 --json >/dev/null 2>&1 || true
	done
}

# For a suite whose one docker computer serves the whole file (a desktop
# with Chromium takes seconds to start: browser.bats, security/browser.bats):
# the data directory, owner and container label are the file's, so
# teardown_file (which setup never ran for) may delete the computer and find
# its container. rk_file_setup is setup_file's, rk_file_test_setup setup's,
# rk_file_teardown NAME teardown_file's.
rk_file_setup() {
	export RAKAZO_DATA_DIR="$BATS_FILE_TMPDIR/data"
	export RAKAZO_OWNER="user:bats"
	export RAKAZO_TEST_LABEL="bats-$$"
	mkdir -p -m 0700 "$RAKAZO_DATA_DIR"
}

rk_file_test_setup() {
	export RAKAZO_DATA_DIR="$BATS_FILE_TMPDIR/data"
	export NO_COLOR=1
	unset RAKAZO_FAKE_FAULTS RAKAZO_FAKE_DELAY_MS RAKAZO_NO_WORKER RAKAZO_SESSION_IDLE_MS RAKAZO_LOG
	RK_CLOSE_FDS=$(rk_close_fds)
}

rk_file_teardown() {
	export RAKAZO_DATA_DIR="$BATS_FILE_TMPDIR/data"
	"$RAKAZO_BIN" computer delete "$1" --wait >/dev/null 2>&1 || true
	RK_CLOSE_FDS=$(rk_close_fds)
	rk_kill_all || true
	rk_remove_containers || true
}
