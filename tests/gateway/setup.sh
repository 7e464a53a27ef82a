#!/bin/sh
# Installs the screen gateway tests' npm packages (noVNC and playwright-core,
# pinned in tests/gateway/package.json) into RAKAZO_NODE_DIR (default
# build/node, ignored by git). Chromium itself is the Debian package
# (scripts/deps.sh). Idempotent: nothing is fetched when they are there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${RAKAZO_NODE_DIR:-$here/../../build/node}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "gateway setup: node and npm are missing (sh scripts/deps.sh installs them)" >&2
	exit 1
fi
mkdir -p "$dir"
if [ -f "$dir/node_modules/@novnc/novnc/core/rfb.js" ] && [ -f "$dir/node_modules/playwright-core/index.mjs" ] &&
	cmp -s "$here/package.json" "$dir/package.json"; then
	echo "gateway setup: npm packages present"
	exit 0
fi
cp "$here/package.json" "$dir/package.json"
cd "$dir"
npm install --no-audit --no-fund --ignore-scripts --loglevel=error
echo "gateway setup: done"
