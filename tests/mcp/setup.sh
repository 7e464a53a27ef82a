#!/bin/sh
# Installs the official MCP TypeScript SDK and inspector-cli the MCP tests
# drive rakazo with into tests/mcp/node_modules (git-ignored). Idempotent;
# needs node and npm.
set -e
cd "$(dirname "$0")"
command -v npm >/dev/null 2>&1 || { echo "tests/mcp/setup.sh: npm is not installed" >&2; exit 1; }
if [ -d node_modules/@modelcontextprotocol/sdk ] && [ -d node_modules/@modelcontextprotocol/inspector-cli ]; then
	exit 0
fi
npm install --no-audit --no-fund --no-package-lock --loglevel=error
