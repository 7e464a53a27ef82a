#!/usr/bin/env bats
# Redaction (issue 20, medium 3 and the low item on typed secrets): a
# secret's value, in every form tests/fixtures/redaction_forms.py lists
# (plain, JSON-escaped, \u00XX, URL- and form-encoded, base64, base64url,
# hex, base64 inside a longer text, and all of these inside gzip and
# deflate bodies), reaches none of: what the model is sent, the run's
# events and stored conversation, the terminal history, the sessions list,
# the log. A real `rakazo run` against tests/emulators/model_server (its
# --dump keeps every request), secret_request against a loopback origin.

load helper
load ../cli/model

FORMS=$BATS_TEST_DIRNAME/../fixtures/redaction_forms.py
VALUE='Rz7"q/Kx-91+Se cret&Tok=Zz?>'

teardown() {
	local p
	for p in ${RUN_PIDS:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	for p in ${ORIGIN_PID:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	stop_server
	rk_kill_all
}

start_origin() {
	local out=$BATS_TEST_TMPDIR/origin.out
	python3 "$FORMS" serve x >"$out" 2>&1 3>&- 4>&- &
	ORIGIN_PID=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	ORIGIN_URL=$(sed -n 's|^listening on \(http://.*\)$|\1|p' "$out")
}

# Fails when "$@" succeeds (a bare `! cmd` never fails a bats test).
refute() {
	if "$@"; then
		echo "unexpectedly succeeded: $*" >&2
		return 1
	fi
}

# check CHANNEL FILE...: no form of VALUE in any of them
check() {
	python3 "$FORMS" check "$VALUE" "$@"
}

@test "redaction: every form of a secret, from a file, a shell, gzip and deflate bodies, is out of every channel" {
	start_origin
	printf '%s' "$VALUE" | rk secret set svc --origin "$ORIGIN_URL" --auth bearer >/dev/null
	rk_fake t
	python3 "$FORMS" file "$VALUE" | rk computer file write t forms.txt - >/dev/null
	python3 - "$FORMS" "$VALUE" "$ORIGIN_URL" >"$BATS_TEST_TMPDIR/scenario.json" <<'EOF'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("forms", sys.argv[1])
f = importlib.util.module_from_spec(spec)
spec.loader.exec_module(f)
value, url = sys.argv[2], sys.argv[3]
quoted = " ".join("'%s'" % t for t in f.texts(value))
call = lambda name, args: {"tool_calls": [{"name": name, "arguments": args}]}
print(json.dumps({"steps": [
  {"reply": call("read_file", {"path": "forms.txt"})},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": call("shell", {"command": "cat forms.txt; printf '%s\\n' " + quoted})},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": call("secret_request", {"name": "svc", "url": url + "/gzip"})},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": call("secret_request", {"name": "svc", "url": url + "/deflate"})},
  {"expect": {"last_tool_result_contains": "[redacted]"},
   "reply": call("secret_request", {"name": "svc", "url": url + "/x-rot13"})},
  {"reply": call("secret_request", {"name": "svc", "url": url + "/gzip", "headers": {"Accept-Encoding": "gzip"}})},
  {"reply": call("read_file", {"path": "no-such-dir/" + "-".join(f.texts(value))[:900]})},
  {"reply": {"content": "done: " + value}}]}))
EOF
	MODEL_DUMP=$BATS_TEST_TMPDIR/dump start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer t --json "read the file"
	echo "$output" >"$BATS_TEST_TMPDIR/events"
	server_ok
	[ "$status" -eq 0 ]
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	# the model got redacted results, and errors for what cannot be redacted
	python3 - "$BATS_TEST_TMPDIR/events" <<'EOF'
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if '"tool.result"' in l]
names = [(r["name"], r.get("error", {}).get("code")) for r in res]
assert names == [("read_file", None), ("shell", None), ("secret_request", None), ("secret_request", None),
                 ("secret_request", "unsupported"), ("secret_request", "invalid_argument"),
                 ("read_file", names[-1][1])], names
assert names[-1][1] is not None
EOF
	# each channel, each form
	check model "$BATS_TEST_TMPDIR/dump"
	check events "$BATS_TEST_TMPDIR/events"
	rk run logs "$id" --json >"$BATS_TEST_TMPDIR/logs"
	check events "$BATS_TEST_TMPDIR/logs"
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	check run "$BATS_TEST_TMPDIR/show"
	rk_sql "SELECT data FROM run_messages" >"$BATS_TEST_TMPDIR/conversation"
	check conversation "$BATS_TEST_TMPDIR/conversation"
	rk computer history t --json >"$BATS_TEST_TMPDIR/history"
	grep -q 'forms.txt' "$BATS_TEST_TMPDIR/history" # (the check can fail: the shell is there)
	check history "$BATS_TEST_TMPDIR/history"
	rk computer sessions t --json >"$BATS_TEST_TMPDIR/sessions"
	check sessions "$BATS_TEST_TMPDIR/sessions"
	grep -q 'tool read_file' "$RAKAZO_DATA_DIR/log/rakazo.log"
	check log "$RAKAZO_DATA_DIR/log/rakazo.log"
	# and nothing in the data directory holds one (database, WAL, log)
	local f
	for f in $(find "$RAKAZO_DATA_DIR" -type f ! -path '*/homes/*' ! -name 'master.key'); do
		check datadir "$f"
	done
}

@test "redaction: a secret in a command, typed to a session's stdin or echoed back stays out of history and the sessions list" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer --bot b1 >/dev/null
	rk_fake t
	# a command that carries it
	rk computer exec t -- printf '%s\\n' "'$VALUE'" >/dev/null
	# typed to a running command's stdin, in every form (the CLI unescapes C escapes: double them)
	run rk computer exec t --yield-ms 250 --json -- cat
	[ "$status" -eq 0 ]
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	python3 "$FORMS" file "$VALUE" >"$BATS_TEST_TMPDIR/typed"
	rk computer input t "$sid" "$(sed 's/\\/\\\\/g' "$BATS_TEST_TMPDIR/typed")\\n\\x04" --yield-ms 2000 >"$BATS_TEST_TMPDIR/echoed"
	# (the check can fail: cat gave it back)
	grep -qF -- "$VALUE" "$BATS_TEST_TMPDIR/echoed"
	rk computer history t --json >"$BATS_TEST_TMPDIR/history"
	grep -q '"input"' "$BATS_TEST_TMPDIR/history"
	check history "$BATS_TEST_TMPDIR/history"
	# typed a piece at a time, as at a password prompt: history keeps the line whole, redacted
	run rk computer exec t --yield-ms 250 --json -- 'cat >/dev/null'
	[ "$status" -eq 0 ]
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	rk computer input t "$sid" 'Rz7"q/K' --yield-ms 250 >/dev/null
	rk computer input t "$sid" 'x-91+Se cr' --yield-ms 250 >/dev/null
	rk computer input t "$sid" 'et&Tok=Zz?>\n' --yield-ms 250 >/dev/null
	rk computer input t "$sid" 'not a secret\n\x04' --yield-ms 1000 >/dev/null
	rk computer history t --json >"$BATS_TEST_TMPDIR/history"
	grep -q 'not a secret' "$BATS_TEST_TMPDIR/history"
	refute grep -qF -- 'Rz7' "$BATS_TEST_TMPDIR/history"
	refute grep -qF -- 'Tok=Zz' "$BATS_TEST_TMPDIR/history"
	rk computer sessions t --json >"$BATS_TEST_TMPDIR/sessions"
	grep -q 'printf' "$BATS_TEST_TMPDIR/sessions"
	check sessions "$BATS_TEST_TMPDIR/sessions"
	check log "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "redaction: Ctrl-C at the secret prompt leaves the terminal echoing" {
	python3 - "$RAKAZO_BIN" <<'EOF'
import fcntl, os, select, subprocess, sys, termios, time
master, slave = os.openpty()
def ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
p = subprocess.Popen([sys.argv[1], "secret", "set", "x", "--origin", "https://a.example", "--auth", "bearer"],
                     stdin=slave, stdout=slave, stderr=slave, preexec_fn=ctty, close_fds=True)
seen, deadline = b"", time.time() + 30
while b"not shown" not in seen and time.time() < deadline:
    if select.select([master], [], [], 0.2)[0]:
        seen += os.read(master, 4096)
assert b"not shown" in seen, seen
while termios.tcgetattr(slave)[3] & termios.ECHO and time.time() < deadline:
    time.sleep(0.05)  # the prompt turns echo off just after it is shown
assert not termios.tcgetattr(slave)[3] & termios.ECHO
os.write(master, b"\x03")
st = p.wait(timeout=30)
while select.select([master], [], [], 0.2)[0]:
    try:
        seen += os.read(master, 4096)
    except OSError:
        break
lflag = termios.tcgetattr(slave)[3]
assert lflag & termios.ECHO, "echo left off after Ctrl-C: %r" % seen
assert st == 130, (st, seen)
EOF
	# nothing was stored
	[ "$(rk secret list --json | rk_json 'len(d)')" = 0 ]
}

# The value cut in two, as a command prints it in two writes (written in
# octal escapes: the command itself holds neither half).
HALF1='Rz7"q/Kx-91+'
HALF2='Se cret&Tok=Zz?>'
octal() {
	python3 -c 'import sys; print("".join("\\%03o" % b for b in sys.argv[1].encode()))' "$1"
}
TWO_WRITES="printf 'start $(octal "$HALF1")'; read go; printf '$(octal "$HALF2") end'"

# refute_halves FILE...: neither half of the value is in them
refute_halves() {
	if grep -oE -- '.{0,60}(Kx-91|Tok=Zz).{0,20}' "$@" >&2; then
		echo "a half of the value is there" >&2
		return 1
	fi
}

@test "redaction: a secret printed in two writes and read by the model in two calls reaches it whole, redacted" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	python3 - "$TWO_WRITES" >"$BATS_TEST_TMPDIR/scenario.json" <<'PY'
import json, sys
call = lambda name, args: {"tool_calls": [{"name": name, "arguments": args}]}
print(json.dumps({"steps": [
  {"reply": call("shell", {"command": sys.argv[1], "yield_ms": 5000})},
  # the first write came (and the command waits for its input)
  {"expect": {"last_tool_result_contains": "start"},
   "reply": call("write_stdin", {"session": "$last_session", "chars": "\n", "yield_ms": 10000})},
  {"expect": {"last_tool_result_contains": "[redacted] end"}, "reply": {"content": "done"}}]}))
PY
	MODEL_DUMP=$BATS_TEST_TMPDIR/dump start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer t --json "print it"
	echo "$output" >"$BATS_TEST_TMPDIR/events"
	server_ok
	[ "$status" -eq 0 ]
	refute_halves "$BATS_TEST_TMPDIR/dump" "$BATS_TEST_TMPDIR/events"
	rk computer history t --json >"$BATS_TEST_TMPDIR/history"
	grep -q 'start' "$BATS_TEST_TMPDIR/history"
	refute_halves "$BATS_TEST_TMPDIR/history"
	check model "$BATS_TEST_TMPDIR/dump"
}

@test "redaction: a secret the model writes in a slow stream is split across pieces, yet no model.text event holds half" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	# chat sends the text 9 bytes a chunk; 150 ms between chunks makes the
	# run hand its text on chunk by chunk, so the value spans several
	python3 - "$VALUE" >"$BATS_TEST_TMPDIR/scenario.json" <<'PY'
import json, sys
print(json.dumps({"steps": [
  {"expect": {"stream": True}, "event_delay_ms": 150, "reply": {"content": "The token is " + sys.argv[1] + " and that is all."}}]}))
PY
	start_server "$BATS_TEST_TMPDIR/scenario.json"
	run rk run --computer t --json "say it"
	echo "$output" >"$BATS_TEST_TMPDIR/events"
	server_ok
	[ "$status" -eq 0 ]
	[ "$(grep -c '"type":"model.text"' "$BATS_TEST_TMPDIR/events")" -ge 3 ]
	grep -qF 'The token is [redacted] and that is all.' "$BATS_TEST_TMPDIR/events"
	refute_halves "$BATS_TEST_TMPDIR/events"
	rk run logs "$(rk run list --json | rk_json 'd[0]["id"]')" >"$BATS_TEST_TMPDIR/logs"
	refute_halves "$BATS_TEST_TMPDIR/logs"
}

@test "redaction: a secret printed in two writes that came in two reads is one history record, redacted" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	run rk computer exec t --yield-ms 250 --json -- "$TWO_WRITES"
	[ "$status" -eq 0 ]
	sid=$(printf '%s' "$output" | rk_json 'd["session"]')
	# a person's own reads are not held back: read until the first write is there
	printf '%s' "$output" >"$BATS_TEST_TMPDIR/seen"
	wait_for 'grep -q Kx-91 "$BATS_TEST_TMPDIR/seen" || { rk computer input t '"$sid"' "" --yield-ms 250 >>"$BATS_TEST_TMPDIR/seen" 2>/dev/null; false; }' 30
	run rk computer input t "$sid" '\n' --yield-ms 10000
	[ "$status" -eq 0 ]
	[[ "$output" == *"$HALF2 end"* ]]
	rk computer history t --json >"$BATS_TEST_TMPDIR/history"
	grep -q 'start' "$BATS_TEST_TMPDIR/history"
	grep -qF '[redacted] end' "$BATS_TEST_TMPDIR/history"
	refute_halves "$BATS_TEST_TMPDIR/history"
}

@test "redaction: the event and error the reaper stores for a run whose process died are redacted" {
	# a value the reaper's own words hold: what it stores goes through the
	# redactor like every other event of a run
	printf '%s' 'the process running it' | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	start_server run_hang.json
	rk run --no-auto-resume "sleep a lot" >/dev/null 2>&1 &
	RUN_PIDS=$!
	wait_for '[ "$(rk_sql "SELECT state FROM runs")" = running ] && [ "$(rk_sql "SELECT steps FROM runs")" = 1 ]' 30
	pid=$(rk_sql "SELECT worker_pid FROM runs")
	id=$(rk_sql "SELECT id FROM runs")
	kill -9 "$pid"
	wait_for '! kill -0 '"$pid"' 2>/dev/null' 10
	rk run show "$id" --json >"$BATS_TEST_TMPDIR/show"
	[ "$(rk_json 'd["state"]' <"$BATS_TEST_TMPDIR/show")" = interrupted ]
	rk run logs "$id" --json | tail -n1 >"$BATS_TEST_TMPDIR/last"
	[ "$(rk_json 'd["type"]' <"$BATS_TEST_TMPDIR/last")" = run.interrupted ]
	grep -qF 'worker_gone: [redacted] (pid' "$BATS_TEST_TMPDIR/last"
	rk_sql "SELECT data FROM run_events" >"$BATS_TEST_TMPDIR/stored"
	refute grep -qF 'the process running it' "$BATS_TEST_TMPDIR/last" "$BATS_TEST_TMPDIR/show" "$BATS_TEST_TMPDIR/stored"
}

@test "redaction: what a run keeps of a model's arguments (approvals, the judge, memory, secret requests, attachments) holds no form of a secret" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	python3 "$FORMS" file "$VALUE" | rk computer file write t forms.txt - >/dev/null
	rk approval set --effect require_approval --match tool --value write_file --json >/dev/null
	python3 - "$FORMS" "$VALUE" >"$BATS_TEST_TMPDIR/scenario.json" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("forms", sys.argv[1])
f = importlib.util.module_from_spec(spec)
spec.loader.exec_module(f)
all_forms = " ".join(f.texts(sys.argv[2]))
call = lambda name, args: {"tool_calls": [{"name": name, "arguments": args}]}
print(json.dumps({"steps": [
  # waits for a person (a rule), who denies it
  {"reply": call("write_file", {"path": "x.txt", "content": all_forms})},
  # no rule: the judge (this server too) is asked, and allows it
  {"expect": {"last_tool_result_contains": "denied"},
   "reply": call("memory_write", {"path": "notes.md", "content": "keys: " + all_forms})},
  {"expect": {"messages_contain": "memory_write"}, "reply": {"content": "ALLOW"}},
  {"expect": {"last_tool_result_contains": "revision"},
   "reply": call("request_secret", {"name": "other", "origin": "https://b.example", "auth": "bearer",
                                    "reason": "it is " + all_forms})},
  {"expect": {"last_tool_result_contains": "requested"}, "reply": call("attach_file", {"path": "forms.txt"})},
  {"expect": {"last_tool_result_contains": "attachment_id"}, "reply": {"content": "done"}}]}))
PY
	MODEL_DUMP=$BATS_TEST_TMPDIR/dump start_server "$BATS_TEST_TMPDIR/scenario.json"
	RAKAZO_JUDGE_MODEL=scripted RAKAZO_JUDGE_BASE_URL=$RAKAZO_MODEL_BASE_URL rk run --computer t --json "keep it" >"$BATS_TEST_TMPDIR/events" 2>&1 &
	RUN_PIDS=$!
	wait_for "rk run list --json | grep -q waiting_approval" 30
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	rk approval pending --json >"$BATS_TEST_TMPDIR/pending"
	grep -q write_file "$BATS_TEST_TMPDIR/pending"
	grep -qF '[redacted]' "$BATS_TEST_TMPDIR/pending"
	check approvals "$BATS_TEST_TMPDIR/pending"
	rk run deny "$id" --note "not that" --json >/dev/null
	wait "$RUN_PIDS"
	RUN_PIDS=
	server_ok
	[ "$(rk run show "$id" --json | rk_json 'd["state"]')" = completed ]
	# the judge was sent what the model is sent: redacted
	check model "$BATS_TEST_TMPDIR/dump"
	rk_sql "SELECT arguments FROM approvals" >"$BATS_TEST_TMPDIR/approvals"
	grep -qF 'x.txt' "$BATS_TEST_TMPDIR/approvals"
	check approvals "$BATS_TEST_TMPDIR/approvals"
	rk_sql "SELECT content FROM memory_documents UNION ALL SELECT content FROM memory_revisions" >"$BATS_TEST_TMPDIR/memory"
	grep -q 'keys: ' "$BATS_TEST_TMPDIR/memory"
	check memory "$BATS_TEST_TMPDIR/memory"
	rk_sql "SELECT reason FROM secret_requests" >"$BATS_TEST_TMPDIR/requests"
	grep -q 'it is ' "$BATS_TEST_TMPDIR/requests"
	check requests "$BATS_TEST_TMPDIR/requests"
	att=$(find "$RAKAZO_DATA_DIR/attachments" -type f -name forms.txt)
	[ -s "$att" ]
	check attachment "$att"
	local f
	for f in $(find "$RAKAZO_DATA_DIR" -type f ! -path '*/homes/*' ! -name 'master.key'); do
		check datadir "$f"
	done
}

@test "redaction: a person's words reach the model redacted too (the task, a takeover note), and so does the takeover reason stored" {
	printf '%s' "$VALUE" | rk secret set svc --origin https://a.example --auth bearer >/dev/null
	rk_fake t
	python3 - "$VALUE" >"$BATS_TEST_TMPDIR/scenario.json" <<'PY'
import json, sys
print(json.dumps({"steps": [
  {"expect": {"messages_contain": "log in with [redacted]"},
   "reply": {"tool_calls": [{"name": "request_takeover", "arguments": {"reason": "type " + sys.argv[1]}}]}},
  {"expect": {"last_tool_result_contains": "use [redacted]"}, "reply": {"content": "done"}}]}))
PY
	MODEL_DUMP=$BATS_TEST_TMPDIR/dump start_server "$BATS_TEST_TMPDIR/scenario.json"
	id=$(rk run --detach --computer t "log in with $VALUE")
	wait_for '[ "$(rk run show '"$id"' --json | rk_json "d[\"state\"]")" = waiting_takeover ]' 30
	rk run show "$id" --json | rk_json 'd["takeover_reason"]' >"$BATS_TEST_TMPDIR/reason"
	[ "$(cat "$BATS_TEST_TMPDIR/reason")" = "type [redacted]" ]
	rk run continue "$id" --note "use $VALUE" --json >/dev/null
	wait_for '[ "$(rk run show '"$id"' --json | rk_json "d[\"state\"]")" = completed ]' 30
	server_ok
	check model "$BATS_TEST_TMPDIR/dump"
}
