#!/bin/sh
# Installs the S3 home store tests' local S3-compatible server (s3rver,
# pinned in tests/s3/package.json) into RAKAZO_S3_NODE_DIR (default
# build/s3node, ignored by git). Idempotent: nothing is fetched when it is
# there. tests/s3/start.sh runs it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${RAKAZO_S3_NODE_DIR:-$here/../../build/s3node}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "s3 setup: node and npm are missing (sh scripts/deps.sh installs them)" >&2
	exit 1
fi
mkdir -p "$dir"
if [ -f "$dir/node_modules/s3rver/bin/s3rver.js" ] && cmp -s "$here/package.json" "$dir/package.json"; then
	echo "s3 setup: s3rver present"
	exit 0
fi
cp "$here/package.json" "$dir/package.json"
cd "$dir"
npm install --no-audit --no-fund --loglevel=error
echo "s3 setup: done"
