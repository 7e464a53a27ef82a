#!/bin/sh
# One command on a fresh Debian machine: install what is needed, start
# dockerd, build rakazo and the computer image, then run the demo on the
# default provider (a local Docker computer): create it, run commands in it,
# move files in and out, and clean up.
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
trap '$RK computer delete "$NAME" --wait >/dev/null 2>&1 || true' EXIT INT TERM
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
echo "demo: done; deleting '$NAME'"
