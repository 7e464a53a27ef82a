#!/bin/sh
# tests/emulators/e2b/start.sh DIR [IMAGE]: starts the E2B emulator in the
# background on a free loopback port, its pid in DIR/e2b-emulator.pid, its
# log in DIR/e2b-emulator.log, and prints its base URL once it listens.
# Stop it with: kill "$(cat DIR/e2b-emulator.pid)" (it removes its containers).
dir=${1:?usage: start.sh DIR [IMAGE]}
image=${2:-${E2B_EMULATOR_IMAGE:-$(sh "$(dirname "$0")/../../../image/build.sh" --tag 2>/dev/null)}}
command -v node >/dev/null 2>&1 || { echo "e2b emulator: node is not installed" >&2; exit 1; }
mkdir -p "$dir"
rm -f "$dir/e2b-emulator.port"
node "$(dirname "$0")/server.mjs" --image "$image" --port-file "$dir/e2b-emulator.port" \
	>"$dir/e2b-emulator.log" 2>&1 </dev/null &
echo $! >"$dir/e2b-emulator.pid"
i=0
while [ ! -s "$dir/e2b-emulator.port" ]; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$(cat "$dir/e2b-emulator.pid")" 2>/dev/null; then
		echo "e2b emulator: did not start" >&2
		cat "$dir/e2b-emulator.log" >&2
		exit 1
	fi
	sleep 0.1
done
echo "http://127.0.0.1:$(cat "$dir/e2b-emulator.port")"
