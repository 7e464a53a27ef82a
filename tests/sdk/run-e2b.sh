#!/bin/sh
# The E2B fidelity scenario: the official SDKs against the emulator.
# Skips (exit 0, "sdk: skipped") without node or docker unless
# RAKAZO_REQUIRE_DOCKER=1. Prints the scenario's "sdk: N passed, N failed".
here=$(cd "$(dirname "$0")" && pwd)
skip() {
	if [ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ]; then
		echo "sdk e2b: required but $1" >&2
		echo "sdk: 0 passed, 1 failed"
		exit 1
	fi
	echo "sdk e2b: skipped: $1"
	echo "sdk: 0 passed, 0 failed"
	exit 0
}
command -v node >/dev/null 2>&1 || skip "node is not installed"
docker info >/dev/null 2>&1 || skip "docker is not reachable"
sh "$here/setup.sh" || skip "the SDKs could not be installed (npm)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rakazo-sdk-e2b.XXXXXX")
trap 'kill "$(cat "$tmp/e2b-emulator.pid" 2>/dev/null)" 2>/dev/null; sleep 1; rm -rf "$tmp"' EXIT
url=$(sh "$here/../emulators/e2b/start.sh" "$tmp") || { echo "sdk: 0 passed, 1 failed"; exit 1; }
E2B_API_URL=$url E2B_SANDBOX_URL=$url E2B_API_KEY=e2b_emulator_key E2B_DOMAIN=emulator.invalid \
	node "$here/e2b.mjs"
