#!/usr/bin/env bats
# The HTTP API against a token holder who wants the host (issue 20): the
# fake provider runs commands on this host, so `rakazo serve` offers only
# the providers it is told (--providers; by default those available here,
# never fake), a bot's token never reaches fake, and a command key belongs
# to the identity that used it.

load helper

# rakazo serve --json ARGS... in the background; sets URL, TOKEN. Teardown
# ends it (it runs with this test's data directory).
serve_up() {
	rm -f "$BATS_TEST_TMPDIR/url"
	( eval 'exec "$RAKAZO_BIN" serve --json --listen 127.0.0.1:0 --token-file "$BATS_TEST_TMPDIR/token" \
		--url-file "$BATS_TEST_TMPDIR/url" "$@"' "$RK_CLOSE_FDS" ) >"$BATS_TEST_TMPDIR/serve.out" 2>"$BATS_TEST_TMPDIR/serve.err" &
	local pid=$!
	wait_for "[ -s '$BATS_TEST_TMPDIR/url' ] || ! kill -0 $pid 2>/dev/null" 30
	[ -s "$BATS_TEST_TMPDIR/url" ] || { cat "$BATS_TEST_TMPDIR/serve.err"; return 1; }
	URL=$(cat "$BATS_TEST_TMPDIR/url")
	TOKEN=$(cat "$BATS_TEST_TMPDIR/token")
}

# call METHOD PATH [BODY] [TOKEN]: sets CODE and BODY.
call() {
	local args=(-s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X "$1" -H "Authorization: Bearer ${4:-$TOKEN}")
	[ -z "${3:-}" ] || args+=(-H 'Content-Type: application/json' --data-binary "$3")
	CODE=$(curl "${args[@]}" "$URL$2")
	BODY=$(cat "$BATS_TEST_TMPDIR/reply")
}

field() { printf '%s' "$BODY" | rk_json "$1"; }

fake_body() { echo "{\"commandKey\":\"$1\",\"name\":\"$2\",\"source\":{\"provider\":\"fake\",\"template\":null}}"; }

# Waits for execution $1 to succeed (as token $2).
settled() {
	wait_for "call GET /v1/executions/$1 '' ${2:-$TOKEN} && [ \"\$(field 'd[\"state\"]')\" = succeeded ]" 30
}

@test "api: serve offers no fake by default: a create naming it is 400 with the offered providers, and nothing runs" {
	serve_up
	[[ $(rk_json 'd["providers"]' <"$BATS_TEST_TMPDIR/serve.out") != *fake* ]]
	call POST /v1/computers "$(fake_body k1 host)"
	[ "$CODE" = 400 ] || { echo "$CODE $BODY"; false; }
	[ "$(field 'd["error"]["category"]')" = invalid_request ]
	[[ $(field 'd["error"]["message"]') == *"provider 'fake' is not offered by this server (it offers: "* ]]
	call POST /v1/computers '{"commandKey":"k2","name":"x","source":{"provider":"nosuch","template":null}}'
	[ "$CODE" = 400 ] && [[ $(field 'd["error"]["message"]') == *"it offers: "* ]]
	[ "$(rk_sql "select count(*) from computers")" = 0 ]
	[ ! -e "$RAKAZO_DATA_DIR/fake" ]
}

@test "api: a fake computer the operator made is out of every route's reach" {
	rk_fake host
	id=$(rk_id host)
	exe=$(rk computer execution list --json | rk_json 'd[0]["id"]')
	serve_up
	call GET /v1/computers
	[ "$CODE" = 200 ] && [ "$(field 'd["computers"]')" = '[]' ]
	for route in "GET /v1/computers/$id" "POST /v1/computers/$id/sessions" "GET /v1/computers/$id/files?path=/etc/hostname" \
		"PUT /v1/computers/$id/files" "GET /v1/computers/$id/directory?path=/" "PUT /v1/computers/$id/ports/22" \
		"POST /v1/computers/$id/pause" "POST /v1/computers/$id/desktop/screenshot" "GET /v1/computers/$id/usage" \
		"GET /v1/executions/$exe" "GET /v1/executions/$exe/observe"; do
		call ${route% *} "${route#* }" '{"command":"cat /etc/hostname","path":"x","content":"y","commandKey":"p"}'
		[ "$CODE" = 403 ] || { echo "$route: $CODE $BODY"; false; }
		[[ $(field 'd["error"]["message"]') == *"provider 'fake' is not offered"* ]]
	done
	[ "$(rk computer show host --json | rk_json 'd["state"]')" = running ]
	[ ! -e "$RAKAZO_DATA_DIR/homes/$(rk computer show host --json | rk_json 'd["home_key"]')/x" ]
}

@test "api: --providers fake warns once on stderr, and a bot's token never reaches fake" {
	serve_up --providers fake,fake
	[ "$(grep -c 'warning: serve offers provider fake, a test double' "$BATS_TEST_TMPDIR/serve.err")" = 1 ]
	grep -q 'run on this host as this user' "$BATS_TEST_TMPDIR/serve.err"
	[ "$(rk_json 'd["providers"]' <"$BATS_TEST_TMPDIR/serve.out")" = '["fake"]' ]
	bot=$(rk serve token create bt --bot b1 2>/dev/null)
	# (a bot's token creates nothing at all: authz.bats)
	call POST /v1/computers "$(fake_body kb botbox)" "$bot"
	[ "$CODE" = 403 ] && [ "$(field 'd["error"]["category"]')" = forbidden ]
	# a member's token may, and may even grant the bot a right: the bot still never reaches it
	call POST /v1/computers "$(fake_body km box)"
	[ "$CODE" = 202 ]
	exe=$(field 'd["id"]')
	id=$(field 'd["computerId"]')
	settled "$exe"
	call PUT "/v1/computers/$id/bots/b1"
	[ "$CODE" = 200 ]
	for route in "GET /v1/computers/$id" "POST /v1/computers/$id/sessions" "GET /v1/computers/$id/files?path=/etc/hostname" \
		"GET /v1/executions/$exe"; do
		call ${route% *} "${route#* }" '{"command":"id -un"}' "$bot"
		[ "$CODE" = 403 ] || { echo "$route: $CODE $BODY"; false; }
		[[ $(field 'd["error"]["message"]') == *"its commands run on the server's host"* ]]
	done
	call GET /v1/computers "" "$bot"
	[ "$(field 'd["computers"]')" = '[]' ]
	[ "$(rk_sql "select count(*) from computers")" = 1 ]
}

@test "api: --providers names only providers the API can make computers on" {
	run rk serve --listen 127.0.0.1:0 --providers docker,nosuch
	[ "$status" -eq 2 ] && [[ $output == *"--providers: 'nosuch' is not a provider"* ]]
	run rk serve --listen 127.0.0.1:0 --providers paired
	[ "$status" -eq 2 ] && [[ $output == *"rakazo pair"* ]]
}

@test "api: computer create --provider fake says once on stderr that it runs on this host; --json's stdout stays clean" {
	unset RAKAZO_FAKE_QUIET
	out=$(rk computer create --provider fake --name t --wait --json 2>"$BATS_TEST_TMPDIR/err")
	[ "$(printf '%s' "$out" | rk_json 'd["state"]')" = succeeded ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" = 1 ]
	grep -q 'provider fake is a test double: the commands of computer t run on this host as this user' "$BATS_TEST_TMPDIR/err"
	rk computer providers --json | rk_json '[p["capabilities"]["hostExec"] for p in d if p["name"] == "fake"][0]' | grep -qx true
}

@test "api: a command key belongs to its token: another token's same key never returns the first one's receipt" {
	serve_up --providers fake
	other=$(rk serve token create other 2>/dev/null)
	call POST /v1/computers "$(fake_body shared a)"
	[ "$CODE" = 202 ]
	first=$(field 'd["id"]')
	id=$(field 'd["computerId"]')
	settled "$first"
	# the same key and body from another token: never the first receipt (the name is taken: 409, naming nothing of it)
	call POST /v1/computers "$(fake_body shared a)" "$other"
	[[ $BODY != *"$first"* ]] || { echo "$CODE $BODY"; false; }
	[ "$CODE" = 409 ]
	# the same key with another body: its own command, not a conflict with the first
	call POST /v1/computers "$(fake_body shared b)" "$other"
	[ "$CODE" = 202 ] && [ "$(field 'd["reused"]')" = false ]
	[ "$(field 'd["id"]')" != "$first" ]
	settled "$(field 'd["id"]')" "$other"
	# a pause receipt is not read by key either
	call POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	[ "$CODE" = 202 ]
	pause=$(field 'd["id"]')
	settled "$pause"
	call POST "/v1/computers/$id/pause" '{"commandKey":"p1"}' "$other"
	[[ $BODY != *"$pause"* ]] || { echo "$CODE $BODY"; false; }
	# the first token's retries still give its own receipts
	call POST /v1/computers "$(fake_body shared a)"
	[ "$CODE" = 202 ] && [ "$(field 'd["id"]')" = "$first" ] && [ "$(field 'd["reused"]')" = true ]
	call POST "/v1/computers/$id/pause" '{"commandKey":"p1"}'
	[ "$CODE" = 202 ] && [ "$(field 'd["id"]')" = "$pause" ] && [ "$(field 'd["reused"]')" = true ]
}

@test "api: migration 10 keeps every execution and event, and gives old creates their computer's owner as key scope" {
	rk computer create --provider fake --name t --command-key k1 --wait --json >/dev/null
	first=$(rk computer execution list --json | rk_json 'd[0]["id"]')
	rk computer pause t --command-key p1 --wait --json >/dev/null
	events=$(rk_sql "select count(*) from execution_events")
	latest=$(rk_sql "select max(version) from schema_migrations")
	# back to the shape before it: one global UNIQUE command key
	local stmt
	while IFS= read -r stmt; do
		[ -z "$stmt" ] || rk_sql "$stmt"
	done <<'EOF'
CREATE TABLE le9 (id TEXT PRIMARY KEY, computer_id TEXT NOT NULL, op TEXT NOT NULL, command_key TEXT NOT NULL UNIQUE, body TEXT NOT NULL, body_hash TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', phase TEXT NOT NULL DEFAULT 'submitted', error_code TEXT, error_message TEXT, result TEXT, cancel_requested BIGINT NOT NULL DEFAULT 0, worker_pid BIGINT, provider_call_at BIGINT, created_at BIGINT NOT NULL, started_at BIGINT, finished_at BIGINT, worker_id TEXT)
INSERT INTO le9 SELECT id, computer_id, op, command_key, body, body_hash, state, phase, error_code, error_message, result, cancel_requested, worker_pid, provider_call_at, created_at, started_at, finished_at, worker_id FROM lifecycle_executions
CREATE TABLE ev9 (execution_id TEXT NOT NULL REFERENCES le9(id), sequence BIGINT NOT NULL, type TEXT NOT NULL, data TEXT, created_at BIGINT NOT NULL, PRIMARY KEY (execution_id, sequence))
INSERT INTO ev9 SELECT execution_id, sequence, type, data, created_at FROM execution_events
DROP TABLE execution_events
DROP TABLE lifecycle_executions
ALTER TABLE le9 RENAME TO lifecycle_executions
ALTER TABLE ev9 RENAME TO execution_events
ALTER TABLE computers DROP COLUMN resources
ALTER TABLE screen_capabilities DROP COLUMN maker_user
ALTER TABLE screen_capabilities DROP COLUMN maker_space
ALTER TABLE screen_capabilities DROP COLUMN maker_bot
ALTER TABLE screen_capabilities DROP COLUMN maker_token
ALTER TABLE runs DROP COLUMN cached_tokens
ALTER TABLE runs DROP COLUMN cache_write_tokens
ALTER TABLE runs DROP COLUMN auto_resumes_left
ALTER TABLE runs DROP COLUMN images
ALTER TABLE runs DROP COLUMN cost_micro_usd
DELETE FROM schema_migrations WHERE version >= 10
EOF
	# the next command migrates: 10, then the later ones again (11: the
	# computers' resources, 12: who made a screen capability, 13: a run's
	# prompt-cache tokens, 14: its automatic resumes, 15: its images and cost)
	rk computer list --json >/dev/null
	[ "$(rk_sql "select max(version) from schema_migrations")" = "$latest" ]
	[ "$(rk_sql "select op || '=' || key_scope from lifecycle_executions order by created_at")" = "$(printf 'create=user:bats\npause=')" ]
	[ "$(rk_sql "select count(*) from execution_events")" = "$events" ]
	# the owner's retry of the create still finds its receipt
	[ "$(rk computer create --provider fake --name t --command-key k1 --wait --json | rk_json 'd["id"]')" = "$first" ]
}
