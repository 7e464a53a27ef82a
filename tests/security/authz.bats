#!/usr/bin/env bats
# Authorization (issue 20, item 8): one resolver turns (identity, target)
# into an authorised computer for every command, route and tool. Every verb
# that names a computer is tried as someone without a right to it: another
# user of the space (denied, exit 8 / HTTP 403), a member of another space
# (the computer is invisible there: not_found, exit 3 / HTTP 404) and a bot
# without a grant (denied). Nothing may be done: no file written or removed,
# no checkpoint, no action on the screen, no session, share, lease, run or
# lifecycle change. The owner still succeeds.

load helper
load ../cli/model

teardown() {
	local p
	stop_server
	for p in ${SERVE_PIDS:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rk_kill_all
}

# The identities without a right to the owner's (user:bats, space default)
# computer, and what each is told.
IDENTITIES=(
	"RAKAZO_OWNER=user:mallory|8|denied"
	"RAKAZO_OWNER=user:mallory RAKAZO_SPACE=elsewhere|3|not_found"
	"RAKAZO_OWNER=bot:b9|8|denied"
)

# The owner's fake computer t: a file, a checkpoint, a screen that has been
# looked at, a session running cat; payloads for the import verbs.
owner_setup() {
	rk_fake t
	printf 'topsecret' | rk computer file write t secret.txt - --json >/dev/null
	rk checkpoint create t --reason owner --json >/dev/null
	rk checkpoint export t -o "$BATS_TEST_TMPDIR/cp.tar.zst" 2>/dev/null
	rk computer export t -o "$BATS_TEST_TMPDIR/ws.tar" 2>/dev/null
	rk screen shot t --json >/dev/null
	printf 'pwned' >"$BATS_TEST_TMPDIR/payload"
	SID=$(rk computer exec t --json --yield-ms 300 -- cat | rk_json 'd["session"]')
	EXE=$(rk computer execution list t --json | rk_json 'd[0]["id"]')
	[ -n "$SID" ] && [ -n "$EXE" ]
	CHECKPOINTS=$(rk checkpoint list t --json | rk_json 'len(d)')
}

# What must be unchanged after the strangers tried everything.
nothing_done() {
	[ "$(rk computer file read t secret.txt)" = topsecret ]
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = running ]
	[ "$(rk checkpoint list t --json | rk_json 'len(d)')" = "$CHECKPOINTS" ]
	[ "$(rk computer file list t --json | rk_json '[e["name"] for e in d if "pwned" in e["name"]]')" = '[]' ]
	if grep -rqs pwned "$RAKAZO_DATA_DIR/homes" "$RAKAZO_DATA_DIR/fake"; then
		echo "a stranger's write or action reached the computer" >&2
		grep -rls pwned "$RAKAZO_DATA_DIR/homes" "$RAKAZO_DATA_DIR/fake" >&2
		return 1
	fi
	[ ! -e "$BATS_TEST_TMPDIR/stolen.tar" ] && [ ! -e "$BATS_TEST_TMPDIR/stolen.tar.zst" ] &&
		[ ! -e "$BATS_TEST_TMPDIR/stolen.png" ]
	[ "$(rk computer sessions t --json | rk_json '[s["id"] for s in d]')" = "[\"$SID\"]" ]
	[ "$(rk computer rights t --json)" = '[]' ]
	[ "$(rk screen shares --all --json)" = '[]' ]
	[ "$(rk run list --json)" = '[]' ]
	[ "$(rk screen list t --json)" = '[]' ]
	expect_json_error 3 not_found rk computer lease show t --bot b1 --json
	[ "$(rk computer list --json | rk_json '[c["name"] for c in d]')" = '["t"]' ]
}

@test "authz: every CLI verb on another's computer is refused, with nothing done; the owner still succeeds" {
	# a model is configured (nothing listens there): `run` reaches the computer's check
	export RAKAZO_MODEL_BASE_URL=http://127.0.0.1:9/v1 RAKAZO_MODEL=scripted
	owner_setup
	local T=$BATS_TEST_TMPDIR
	local verbs=(
		"computer show t"
		"computer exec t --json -- touch pwned-exec"
		"computer input t $SID pwned\\n"
		"computer resize t $SID --rows 30 --cols 90"
		"computer kill t $SID"
		"computer sessions t"
		"computer history t"
		"computer file list t"
		"computer file read t secret.txt"
		"computer file write t pwned.txt $T/payload"
		"computer file remove t secret.txt"
		"computer export t -o $T/stolen.tar"
		"computer import t $T/ws.tar"
		"computer pause t"
		"computer resume t"
		"computer stop t"
		"computer delete t"
		"computer job t --json -- touch pwned-job"
		"computer release t"
		"computer lease acquire t --bot b1"
		"computer lease show t --bot b1"
		"computer grant t --bot b9"
		"computer rights t"
		"computer execution list t"
		"computer execution show $EXE"
		"computer execution events $EXE"
		"computer execution cancel $EXE"
		"computer execution decide $EXE --outcome failed"
		"screen shot t -o $T/stolen.png"
		"screen act t --actions [{\"action\":\"type\",\"text\":\"pwned\"}]"
		"screen info t"
		"screen list t"
		"screen close t"
		"screen watch t"
		"screen share t --view"
		"screen share t --control"
		"screen takeover t --bot b1"
		"screen release t --bot b1"
		"screen release-control t --bot b1"
		"browser navigate t http://127.0.0.1:9/pwned"
		"browser snapshot t"
		"browser act t --action {\"action\":\"click\",\"ref\":\"e1\"}"
		"checkpoint create t --reason pwned"
		"checkpoint list t"
		"checkpoint show t"
		"checkpoint export t -o $T/stolen.tar.zst"
		"checkpoint restore t"
		"checkpoint import t $T/cp.tar.zst"
		"checkpoint verify t"
		"run --computer t pwned"
		"run list --computer t"
	)
	local id env want code v args
	for id in "${IDENTITIES[@]}"; do
		IFS='|' read -r env want code <<<"$id"
		for v in "${verbs[@]}"; do
			read -ra args <<<"$v"
			[[ " $v " == *" -- "* ]] || args+=(--json) # --json before a command's --
			# shellcheck disable=SC2086
			expect_json_error "$want" "$code" env $env "$RAKAZO_BIN" "${args[@]}" </dev/null ||
				{ echo "as $env: rakazo $v" >&2; return 1; }
		done
		# the dashboard (no --json: it has none)
		run env $env "$RAKAZO_BIN" tui --computer t </dev/null
		[ "$status" -eq "$want" ] && [[ "$output" == *"$code"* ]] || { echo "as $env: tui: $status $output" >&2; return 1; }
		# a bot creates no computer (rakazo-computer(1))
		[ "$env" != RAKAZO_OWNER=bot:b9 ] ||
			expect_json_error 8 denied env $env "$RAKAZO_BIN" computer create --provider fake --name pwned --json
	done
	nothing_done

	# the owner still does all of it
	rk computer exec t --json --wait -- touch mine >/dev/null 2>&1 || rk computer exec t --json --yield-ms 2000 -- touch mine >/dev/null
	wait_for '[ "$(rk computer file list t --json | rk_json "[e[\"name\"] for e in d if e[\"name\"] == \"mine\"]")" = "[\"mine\"]" ]' 20
	rk screen act t --actions '[{"action":"type","text":"mine"}]' --no-observe --json >/dev/null
	grep -rqs mine "$RAKAZO_DATA_DIR/fake"
	rk screen shot t -o "$T/own.png" --json >/dev/null
	[ -s "$T/own.png" ]
	rk checkpoint create t --reason again --json >/dev/null
	rk checkpoint export t -o "$T/own.tar.zst" 2>/dev/null
	[ -s "$T/own.tar.zst" ]
	[ "$(rk computer file read t secret.txt)" = topsecret ]
	rk computer grant t --bot b9 --json >/dev/null
	# with the grant the bot uses it (the rights are read on every call)
	RAKAZO_OWNER=bot:b9 rk screen shot t --json >/dev/null
	RAKAZO_OWNER=bot:b9 rk checkpoint list t --json >/dev/null
}

@test "authz: lists show only the computers the caller may use" {
	rk_fake t
	RAKAZO_OWNER=user:mallory rk_fake m
	[ "$(rk computer list --json | rk_json '[c["name"] for c in d]')" = '["t"]' ]
	[ "$(RAKAZO_OWNER=user:mallory rk computer list --json | rk_json '[c["name"] for c in d]')" = '["m"]' ]
	[ "$(RAKAZO_OWNER=bot:b9 rk computer list --json)" = '[]' ]
	rk computer grant t --bot b9 --json >/dev/null
	[ "$(RAKAZO_OWNER=bot:b9 rk computer list --json | rk_json '[c["name"] for c in d]')" = '["t"]' ]
	[ "$(RAKAZO_OWNER=user:mallory rk computer execution list --json | rk_json 'len(d)')" = 1 ]
	[ "$(RAKAZO_OWNER=user:mallory rk checkpoint verify --all --json | rk_json '[r["name"] for r in d]')" = '["m"]' ]
	# a run without --computer picks among the computers the caller may use: none
	echo x | expect_json_error 3 not_found env RAKAZO_OWNER=user:nobody RAKAZO_MODEL_BASE_URL=http://127.0.0.1:9/v1 \
		RAKAZO_MODEL=scripted "$RAKAZO_BIN" run --json -
}

@test "authz: a run is refused to whoever may not use its computer; lists show only their own" {
	rk_fake t
	start_server run_answer.json
	echo 'what is the answer?' | rk run --computer t - >/dev/null
	server_ok
	local run_id id env want code v args
	run_id=$(rk run list --json | rk_json 'd[0]["id"]')
	for id in "${IDENTITIES[@]}"; do
		IFS='|' read -r env want code <<<"$id"
		for v in "show $run_id" "logs $run_id" "cancel $run_id" "continue $run_id" "resume $run_id"; do
			read -ra args <<<"$v"
			# shellcheck disable=SC2086
			expect_json_error "$want" "$code" env $env "$RAKAZO_BIN" run "${args[@]}" --json </dev/null ||
				{ echo "as $env: rakazo run $v" >&2; return 1; }
		done
		# rm tries every id and lists those it removed: none
		# shellcheck disable=SC2086
		run env $env "$RAKAZO_BIN" run rm "$run_id" --json
		[ "$status" -eq "$want" ] && [[ "$output" == *'"removed":[]'* ]] && [[ "$output" == *"\"$code\""* ]]
		# shellcheck disable=SC2086
		[ "$(env $env "$RAKAZO_BIN" run list --json)" = '[]' ]
	done
	[ "$(rk run list --json | rk_json '[r["id"] for r in d]')" = "[\"$run_id\"]" ]
	[ "$(rk run show "$run_id" --json | rk_json 'd["state"]')" = completed ]
}

@test "authz: a revoke stops a bot's next tool on its computer, whatever the tool (attach_file, open_path)" {
	rk_fake t
	printf 'topsecret' | rk computer file write t secret.txt - --json >/dev/null
	cat >"$BATS_TEST_TMPDIR/revoked.json" <<'EOF'
{"steps": [
  {"reply": {"content": "I need a person.", "tool_calls": [{"name": "request_takeover", "arguments": {"reason": "wait"}}]}},
  {"reply": {"tool_calls": [{"name": "attach_file", "arguments": {"path": "secret.txt"}}]}},
  {"expect": {"last_tool_result_contains": "denied"},
   "reply": {"tool_calls": [{"name": "open_path", "arguments": {"path": "secret.txt"}}]}},
  {"expect": {"last_tool_result_contains": "denied"}, "reply": {"content": "stopped"}}]}
EOF
	start_server "$BATS_TEST_TMPDIR/revoked.json"
	local a
	a=$(rk run --detach --computer t --bot b1 "read the secret")
	wait_for '[ "$(rk run show '"$a"' --json | rk_json "d[\"state\"]")" = waiting_takeover ]' 30
	# the run's start gave b1 its right; the person takes it away
	rk computer revoke t --bot b1 --json >/dev/null
	rk run continue "$a" --json >/dev/null
	wait_for '[ "$(rk run show '"$a"' --json | rk_json "d[\"state\"]")" = completed ]' 30
	server_ok
	[ "$(rk run show "$a" --json | rk_json 'len(d["attachments"])')" = 0 ]
}

# Runs `rakazo serve` with ENV... (its identity: the member a member's token
# acts as); sets URL to its base URL.
serve_as() {
	local name=$1
	shift
	rm -f "$BATS_TEST_TMPDIR/url-$name"
	( eval 'exec env "$@" "$RAKAZO_BIN" serve --listen 127.0.0.1:0 --providers fake --url-file "$BATS_TEST_TMPDIR/url-$name"' "$RK_CLOSE_FDS" ) \
		>/dev/null 2>"$BATS_TEST_TMPDIR/serve-$name.err" &
	SERVE_PIDS="${SERVE_PIDS:-} $!"
	wait_for '[ -s "$BATS_TEST_TMPDIR/url-$name" ]' 30
	URL=$(cat "$BATS_TEST_TMPDIR/url-$name")
}

# api BASE TOKEN METHOD PATH [BODY]: sets CODE.
api() {
	local args=(-s -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' -X "$3" -H "Authorization: Bearer $2")
	[ -n "${5:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$5")
	CODE=$(curl --max-time 60 "${args[@]}" "$1$4")
}

@test "authz: every API route on another's computer is 403 (404 from another space), with nothing done; bots create nothing" {
	owner_setup
	local id member bot
	id=$(rk_id t)
	member=$(rk serve token create member)
	bot=$(rk serve token create botb9 --bot b9)
	serve_as owner RAKAZO_OWNER=user:bats
	local owner_url=$URL
	serve_as mallory RAKAZO_OWNER=user:mallory
	local mallory_url=$URL
	serve_as elsewhere RAKAZO_OWNER=user:bats RAKAZO_SPACE=elsewhere
	local elsewhere_url=$URL
	local routes=(
		"GET /v1/computers/$id"
		"DELETE /v1/computers/$id {\"commandKey\":\"pwned-del\"}"
		"POST /v1/computers/$id/pause {\"commandKey\":\"pwned-pause\"}"
		"POST /v1/computers/$id/resume {\"commandKey\":\"pwned-resume\"}"
		"GET /v1/executions/$EXE"
		"GET /v1/executions/$EXE/observe"
		"POST /v1/executions/$EXE/cancel"
		"POST /v1/executions/$EXE/decision {\"outcome\":\"failed\"}"
		"POST /v1/computers/$id/sessions {\"command\":\"touch pwned-api\"}"
		"POST /v1/computers/$id/sessions/$SID/input {\"chars\":\"pwned\\n\"}"
		"POST /v1/computers/$id/sessions/$SID/resize {\"rows\":30,\"cols\":90}"
		"DELETE /v1/computers/$id/sessions/$SID"
		"GET /v1/computers/$id/files?path=secret.txt"
		"PUT /v1/computers/$id/files {\"path\":\"pwned.txt\",\"content\":\"pwned\"}"
		"DELETE /v1/computers/$id/files?path=secret.txt"
		"GET /v1/computers/$id/directory"
		"POST /v1/computers/$id/desktop/screenshot {}"
		"POST /v1/computers/$id/desktop/actions {\"actions\":[{\"action\":\"type\",\"text\":\"pwned\"}]}"
		"POST /v1/computers/$id/desktop/stream {\"control\":true}"
		"PUT /v1/computers/$id/ports/8080"
		"GET /v1/computers/$id/usage"
		"GET /v1/computers/$id/bots"
		"PUT /v1/computers/$id/bots/b9"
		"GET /v1/computers/$id/bots/b9"
		"DELETE /v1/computers/$id/bots/b9"
	)
	local who base tok want r m p b
	for who in "mallory|$mallory_url|$member|403" "elsewhere|$elsewhere_url|$member|404" "bot|$owner_url|$bot|403"; do
		IFS='|' read -r _ base tok want <<<"$who"
		for r in "${routes[@]}"; do
			read -r m p b <<<"$r"
			api "$base" "$tok" "$m" "$p" "${b:-}"
			[ "$CODE" = "$want" ] || {
				echo "as $who: $r: $CODE $(cat "$BATS_TEST_TMPDIR/reply")" >&2
				return 1
			}
		done
		api "$base" "$tok" GET /v1/computers
		[ "$CODE" = 200 ] && [ "$(rk_json 'd["computers"]' <"$BATS_TEST_TMPDIR/reply")" = '[]' ]
	done
	# a bot's token creates no computer (rakazo-computer(1), rakazo-serve(1))
	api "$owner_url" "$bot" POST /v1/computers \
		'{"commandKey":"pwned-mk","name":"pwned","source":{"provider":"fake","template":null}}'
	[ "$CODE" = 403 ]
	[ "$(rk_sql "select count(*) from lifecycle_executions where command_key = 'pwned-mk'")" = 0 ]
	nothing_done
	# the owner's server, the member's token: the owner's computer
	api "$owner_url" "$member" GET "/v1/computers/$id"
	[ "$CODE" = 200 ]
	api "$owner_url" "$member" GET "/v1/computers/$id/usage"
	[ "$CODE" = 200 ]
	api "$owner_url" "$member" GET /v1/computers
	[ "$(rk_json '[c["name"] for c in d["computers"]]' <"$BATS_TEST_TMPDIR/reply")" = '["t"]' ]
	# with a grant the bot's token passes the rights check, and stops only at
	# fake's own rule: a bot never reaches a provider that runs on the host
	# (api.bats; serve.bats' bot-rights test reaches a granted paired machine)
	rk computer grant t --bot b9 --json >/dev/null
	api "$owner_url" "$bot" GET "/v1/computers/$id/usage"
	[ "$CODE" = 403 ]
	[[ "$(cat "$BATS_TEST_TMPDIR/reply")" == *"its commands run on the server's host"* ]]
}
