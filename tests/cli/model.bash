# The scripted model (tests/emulators/model_server) for the bats suites that
# run `rakazo run`: start it on a scenario of tests/fixtures/scenarios, point
# the model config at it, and check its report.

MODEL_SERVER=$BATS_TEST_DIRNAME/../../build/tests/emulators/model_server
SCENARIOS=$BATS_TEST_DIRNAME/../fixtures/scenarios

# Ends the server of this test, if one is left (teardown).
stop_server() {
	if [ -n "${SERVER_PID:-}" ]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	SERVER_PID=
	return 0
}

# Starts the scripted server on scenario $1 (a file of SCENARIOS, or a path
# with a slash) and points the model config at it. A second server in the
# same test first waits for the one before (server_ok). With MODEL_DUMP set,
# every request body is appended to that file (model_server --dump).
start_server() {
	local out=$BATS_TEST_TMPDIR/server.out scenario=$1
	case $scenario in */*) ;; *) scenario=$SCENARIOS/$scenario ;; esac
	if [ -n "${SERVER_PID:-}" ]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -f "$out" "$BATS_TEST_TMPDIR/report.json"
	"$MODEL_SERVER" "$scenario" --report "$BATS_TEST_TMPDIR/report.json" ${MODEL_DUMP:+--dump "$MODEL_DUMP"} >"$out" 2>"$BATS_TEST_TMPDIR/server.err" 3>&- 4>&- &
	SERVER_PID=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	local port
	port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$out")
	export RAKAZO_MODEL_BASE_URL="http://127.0.0.1:$port/v1" RAKAZO_MODEL=scripted
}

# Waits for the server to exit (it does after its last step) and checks that
# every step was served and every expectation held.
server_ok() {
	local st=0
	wait "$SERVER_PID" || st=$?
	SERVER_PID=
	python3 - "$BATS_TEST_TMPDIR/report.json" <<'PY' || { cat "$BATS_TEST_TMPDIR/server.err" >&2; return 1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] and d["ok"] and d["failures"] == [], d["failures"]
PY
	[ "$st" -eq 0 ]
}
