# The Computers API server, for the suites that drive it over HTTP
# (serve.bats, security/server.bats, security/ports.bats).

# serve_start [ARG...]: runs `rakazo serve` on LISTEN (default a free
# loopback port) for this test's data directory, offering PROVIDERS (default
# fake,docker: fake is offered only when named, as it runs commands on this
# host), with ARG... added; sets SERVE_PID, URL, PORT and TOKEN.
serve_start() {
	rm -f "$BATS_TEST_TMPDIR/url"
	( eval 'exec "$RAKAZO_BIN" serve --listen "${LISTEN:-127.0.0.1:0}" --providers "${PROVIDERS:-fake,docker}" \
		--token-file "$BATS_TEST_TMPDIR/token" --url-file "$BATS_TEST_TMPDIR/url" "$@"' "$RK_CLOSE_FDS" ) \
		>"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	SERVE_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	URL=$(cat "$BATS_TEST_TMPDIR/url")
	PORT=${URL##*:}
	TOKEN=$(cat "$BATS_TEST_TMPDIR/token")
}

# api METHOD PATH [BODY] [TOKEN]: sets CODE and BODY (the reply).
api() {
	local tok=${4-$TOKEN} args=(-s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X "$1")
	[ -n "$tok" ] && args+=(-H "Authorization: Bearer $tok")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	CODE=$(curl "${args[@]}" "$URL$2")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
}

jq_() { printf '%s' "$BODY" | rk_json "$1"; }
