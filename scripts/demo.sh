#!/bin/sh
# One command on a fresh Debian machine: install what is needed, start
# dockerd, build rakazo and the computer image, then run the demo on the
# default provider (a local Docker computer): create it, run commands in it,
# move files in and out, then the main job: `rakazo run`, a model working on
# the computer through its tools. Without a model configured that model is a
# replay (tests/emulators/model_server playing tests/fixtures/scenarios/demo.json);
# with RAKAZO_MODEL_BASE_URL, RAKAZO_MODEL and RAKAZO_API_KEY set the same
# command runs the real model. Everything is cleaned up at the end.
set -eu
cd "$(dirname "$0")/.."

sh scripts/deps.sh
sh scripts/dockerd.sh >/dev/null
make -s
sh image/build.sh >/dev/null

RK=./build/rakazo
NAME=demo-$$
echo "demo: creating a docker computer '$NAME'"
$RK computer create --provider docker --name "$NAME" --wait >/dev/null
SERVER_PID=
cleanup() {
	[ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true
	$RK screen close "$NAME" >/dev/null 2>&1 || true
	$RK computer delete "$NAME" --wait >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
$RK computer show "$NAME"
echo "demo: running a command inside it"
$RK computer exec "$NAME" -- 'echo "hello from $(hostname) as $(id -un)"; uname -sr; pwd'
echo "demo: writing and reading a file in its workspace"
echo "notes from the operator" | $RK computer file write "$NAME" notes/hello.txt
$RK computer file list "$NAME" notes
$RK computer exec "$NAME" -- 'wc -c notes/hello.txt'
echo "demo: a session with stdin"
out=$($RK computer exec --json --yield-ms 500 "$NAME" -- 'read x; echo "you said: $x"')
sid=$(printf '%s' "$out" | sed -n 's/.*"session":"\([^"]*\)".*/\1/p')
$RK computer input "$NAME" "$sid" 'hi there\n'
echo "demo: pause, and a command that resumes it on its own"
$RK computer pause "$NAME" --wait >/dev/null
$RK computer exec "$NAME" -- 'echo resumed'

TASK="Find out what system this computer runs, look at its screen, and write a short summary to notes/summary.txt."
echo "demo: the main job: rakazo run, a model working on '$NAME' through its tools"
if [ -n "${RAKAZO_MODEL_BASE_URL:-}" ] && [ -n "${RAKAZO_MODEL:-}" ]; then
	echo "demo: RAKAZO_MODEL_BASE_URL and RAKAZO_MODEL are set: this runs the real model '$RAKAZO_MODEL'"
else
	make -s model-server
	out=$(mktemp)
	./build/tests/emulators/model_server tests/fixtures/scenarios/demo.json >"$out" 2>&1 &
	SERVER_PID=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	rm -f "$out"
	[ -n "$port" ] || { echo "demo: the scripted model server did not start" >&2; exit 1; }
	export RAKAZO_MODEL_BASE_URL="http://127.0.0.1:$port/v1" RAKAZO_MODEL=scripted
	echo "demo: NOTE: no model is configured, so this is a REPLAY of a scripted model"
	echo "demo:   (tests/emulators/model_server playing tests/fixtures/scenarios/demo.json), not a real one."
	echo "demo:   With RAKAZO_MODEL_BASE_URL, RAKAZO_MODEL and RAKAZO_API_KEY set, the same command runs a real model."
fi
echo "demo: \$ rakazo run --computer $NAME '$TASK'"
$RK run --computer "$NAME" "$TASK"
echo "demo: what the run did, as the computer's terminal history records it"
$RK computer history "$NAME" | tail -n 12
echo "demo: the file the model wrote"
$RK computer file read "$NAME" notes/summary.txt
echo "demo: done; deleting '$NAME'"
