#!/bin/sh
# Starts the local S3-compatible server (s3rver, installed by
# tests/s3/setup.sh, run by tests/s3/s3rver.js so that a PUT is atomic as
# on S3) on 127.0.0.1 with a free port, storing into DIR, with the bucket
# BUCKET (default rakazo-test) made. With OWNER_PID it also ends
# when that process is gone (a test killed before its cleanup). Usage:
#   start.sh DIR [BUCKET [OWNER_PID]]
# Prints, once it listens:
#   endpoint=http://127.0.0.1:PORT
#   pid=PID
# Its credentials are s3rver's: AWS_ACCESS_KEY_ID=S3RVER
# AWS_SECRET_ACCESS_KEY=S3RVER. Stop it with `kill PID`.
# Exit 77 when node or s3rver is missing (callers skip), 1 when it did not start.
set -eu
dir=${1:?usage: start.sh DIR [BUCKET]}
bucket=${2:-rakazo-test}
owner=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
nd=${RAKAZO_S3_NODE_DIR:-$here/../../build/s3node}
bin=$nd/node_modules/s3rver/bin/s3rver.js
if ! command -v node >/dev/null 2>&1; then
	echo "s3 start: node is missing (sh scripts/deps.sh installs it)" >&2
	exit 77
fi
if [ ! -f "$bin" ]; then
	echo "s3 start: s3rver is not installed (run sh tests/s3/setup.sh)" >&2
	exit 77
fi
mkdir -p "$dir/data"
log=$dir/s3rver.log
: >"$log"
node "$here/s3rver.js" "$nd" -d "$dir/data" -a 127.0.0.1 -p 0 --configure-bucket "$bucket" >"$log" 2>&1 </dev/null &
pid=$!
i=0
while [ $i -lt 300 ]; do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
	if [ -n "$port" ]; then
		if [ -n "$owner" ]; then
			(
				while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
				kill "$pid" 2>/dev/null
			) >/dev/null 2>&1 </dev/null &
		fi
		echo "endpoint=http://127.0.0.1:$port"
		echo "pid=$pid"
		exit 0
	fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
kill "$pid" 2>/dev/null || true
echo "s3 start: s3rver did not start:" >&2
cat "$log" >&2
exit 1
