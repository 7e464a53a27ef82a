# The screen gateway's test clients, for tests/cli/gateway.bats and the
# box desktop's tests in box.bats: tests/gateway/rfb_ws.py (stdlib) and a
# real noVNC in headless Chromium (tests/gateway/novnc.mjs; its npm packages
# come from tests/gateway/setup.sh).

GW_DIR="$BATS_TEST_DIRNAME/../gateway"
NODE_DIR="${RAKAZO_NODE_DIR:-$BATS_TEST_DIRNAME/../../build/node}"

# The HTTP status of a WebSocket upgrade to the gateway with token $1
# (101 when it is let through; the client then hangs up).
upgrade_status() {
	python3 "$GW_DIR/rfb_ws.py" "ws://$GW/websockify${1+?token=$1}" --status
}

rfb() {
	python3 "$GW_DIR/rfb_ws.py" "$@"
}

# A token for computer $1: share $1 "$@" --json, printing the token.
share_token() {
	local c=$1
	shift
	rk screen share "$c" "$@" --json | rk_json 'd["token"]'
}

node_or_skip() {
	if ! command -v node >/dev/null || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] ||
		[ ! -f "$NODE_DIR/node_modules/@novnc/novnc/core/rfb.js" ] ||
		[ ! -f "$NODE_DIR/node_modules/playwright-core/index.mjs" ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && {
			echo "node, chromium or the npm packages are missing (sh tests/gateway/setup.sh) and RAKAZO_REQUIRE_DOCKER=1" >&2
			return 1
		}
		skip "no node, chromium or noVNC (sh tests/gateway/setup.sh)"
	fi
}

novnc() {
	RAKAZO_NODE_DIR="$NODE_DIR" node "$GW_DIR/novnc.mjs" "$@"
}
