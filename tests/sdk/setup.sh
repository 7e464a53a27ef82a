#!/bin/sh
# Installs the vendors' SDKs the fidelity scenarios use into
# tests/sdk/node_modules (git-ignored). Idempotent; needs node and npm.
set -e
cd "$(dirname "$0")"
command -v npm >/dev/null 2>&1 || { echo "tests/sdk/setup.sh: npm is not installed" >&2; exit 1; }
if [ -d node_modules/e2b ] && [ -d node_modules/@e2b/desktop ] && [ -d node_modules/@daytonaio/sdk ] &&
	[ -d node_modules/@anthropic-ai/sdk ] && [ -d node_modules/openai ]; then
	exit 0
fi
npm install --no-audit --no-fund --no-package-lock --loglevel=error
