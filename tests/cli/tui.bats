#!/usr/bin/env bats
# rakazo tui (issue 9), driven in tmux as a person would: keys in with
# send-keys, the screen out with capture-pane. Each test has its own tmux
# server (-L), so nothing here touches another tmux. The fake provider's
# tests always run; the docker one skips when docker is down
# (RAKAZO_REQUIRE_DOCKER=1: fail instead).

load helper

MODEL_SERVER=$BATS_TEST_DIRNAME/../../build/tests/emulators/model_server

teardown() {
	model_stop
	if [ -n "${DOCKER_C:-}" ]; then
		rk computer delete "$DOCKER_C" --wait --timeout 120 >/dev/null 2>&1 || true
	fi
	tm kill-server 2>/dev/null || true
	rk_kill_all
	rk_remove_containers
}

# tmux on this test's own server, without bats' descriptors.
tm() {
	eval 'tmux -L "rk-tui-$$-$BATS_TEST_NUMBER" -f /dev/null "$@"' "$RK_CLOSE_FDS"
}

# The scripted model (tests/emulators/model_server) replaying scenario $1,
# with the model config pointed at it.
model_start() {
	local out=$BATS_TEST_TMPDIR/model.out
	model_stop
	"$MODEL_SERVER" "$BATS_TEST_DIRNAME/../fixtures/scenarios/$1" >"$out" 2>&1 3>&- 4>&- &
	MODEL_PID=$!
	wait_for "grep -q '^listening on ' '$out'" 10
	export RAKAZO_MODEL=scripted \
		RAKAZO_MODEL_BASE_URL="$(sed -n 's|^listening on \(http://127.0.0.1:[0-9]*\)$|\1|p' "$out")/v1"
}

model_stop() {
	[ -n "${MODEL_PID:-}" ] || return 0
	kill "$MODEL_PID" 2>/dev/null || true
	wait "$MODEL_PID" 2>/dev/null || true
	MODEL_PID=
}

# The server exits 0 after its last step when every expectation held.
model_done() {
	local st=0
	wait "$MODEL_PID" || st=$?
	MODEL_PID=
	[ "$st" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/model.out" >&2; return 1; }
}

# The state of run $1 as the table has it (rakazo run show would reap it first).
run_state_stored() {
	python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT state FROM runs WHERE id = ?", (sys.argv[2],)).fetchone()[0])' \
		"$RAKAZO_DATA_DIR/rakazo.db" "$1"
}

# A shell in a COLSxROWS tmux window; then `rakazo tui ARGS` typed into it.
tui_start() {
	local cols=$1 rows=$2
	shift 2
	tm new-session -d -x "$cols" -y "$rows" "env -i PATH=/usr/bin:/bin HOME=$HOME TERM=screen-256color LANG=C.UTF-8 \
RAKAZO_DATA_DIR=$RAKAZO_DATA_DIR RAKAZO_OWNER=$RAKAZO_OWNER RAKAZO_TEST_LABEL=$RAKAZO_TEST_LABEL \
${TUI_ENV:-NO_COLOR=1} bash --norc --noprofile"
	tm send-keys "cd $BATS_TEST_TMPDIR; PS1='prompt\$ '; stty -g > $BATS_TEST_TMPDIR/stty.before" Enter
	tm send-keys "$RAKAZO_BIN tui $*; echo tui-exit=\$?" Enter
	wait_for 'tm display -p "#{alternate_on}" | grep -qx 1' 20
	wait_for 'shows " 1 Computers"' 20
}

screen_text() {
	tm capture-pane -p
}

shows() {
	screen_text | grep -qF -- "$1"
}

# The footer names the focused pane first.
focused() {
	screen_text | tail -n 1 | grep -qE "^ $1 "
}

# After the dashboard has gone: the shell's terminal as it was.
expect_restored() {
	[ "$(tm display -p '#{alternate_on}')" = 0 ]
	[ "$(tm display -p '#{cursor_flag}')" = 1 ]
	[ "$(tm display -p '#{mouse_any_flag}')" = 0 ]
	rm -f "$BATS_TEST_TMPDIR/stty.after"
	tm send-keys "stty -g > $BATS_TEST_TMPDIR/stty.tmp && mv $BATS_TEST_TMPDIR/stty.tmp $BATS_TEST_TMPDIR/stty.after" Enter
	wait_for '[ -s "$BATS_TEST_TMPDIR/stty.after" ]'
	cmp "$BATS_TEST_TMPDIR/stty.before" "$BATS_TEST_TMPDIR/stty.after"
}

# The screen pane's frame hash as its title shows it.
frame_hash_shown() {
	screen_text | grep -oE 'frame [0-9]+  [0-9a-f]{16}' | awk '{print $3}' | head -n 1
}

@test "tui: off a terminal it is a usage error; bare rakazo off a terminal prints help" {
	expect_status 2 rk tui </dev/null
	[[ "$output" == *"needs a terminal"* ]]
	expect_status 2 rk tui --json </dev/null
	expect_status 2 rk tui extra </dev/null
	run rk </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: rakazo COMMAND"* ]]
	[[ "$output" == *"tui"* ]]
}

@test "tui: bare rakazo on a terminal opens the dashboard" {
	rk_fake box
	tm new-session -d -x 120 -y 30 "env RAKAZO_DATA_DIR=$RAKAZO_DATA_DIR NO_COLOR=1 $RAKAZO_BIN"
	wait_for 'shows " 1 Computers"' 20
	wait_for 'shows "box"' 20
	tm send-keys q
	wait_for '! tm has-session 2>/dev/null' 20
}

@test "tui: navigation across every pane with Tab, digits, hjkl and the help" {
	rk_fake alpha
	rk_fake beta
	rk computer exec alpha -- 'echo alpha-output' >/dev/null
	rk computer exec beta -- 'echo beta-output' >/dev/null
	tui_start 120 35
	wait_for 'focused Computers'
	# the history of the selected computer is on the right
	wait_for 'shows "alpha-output"'
	tm send-keys j
	wait_for 'shows "beta-output"'
	! shows "alpha-output"
	tm send-keys k
	wait_for 'shows "alpha-output"'
	local p
	for p in Runs Timeline History Files Screen Computers; do
		tm send-keys Tab
		wait_for "focused $p"
	done
	tm send-keys BTab
	wait_for 'focused Screen'
	tm send-keys 3
	wait_for 'focused Timeline'
	wait_for 'shows "no run selected"'
	tm send-keys h
	wait_for 'focused Computers'
	tm send-keys l
	wait_for 'focused Timeline'
	tm send-keys 4
	wait_for 'focused History'
	tm send-keys Left
	wait_for 'focused Computers'
	tm send-keys Down
	wait_for 'shows "beta-output"'
	tm send-keys '?'
	wait_for 'shows "Keys (any key closes"'
	shows "takeover"
	tm send-keys x
	wait_for '! shows "Keys (any key closes"'
	# search: in the computers list, / finds by name
	tm send-keys 1 / a l p h Enter
	wait_for 'shows "alpha-output"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: the mouse selects a computer and focuses a pane" {
	rk_fake alpha
	rk_fake beta
	rk computer exec beta -- 'echo beta-output' >/dev/null
	tui_start 120 35
	wait_for 'shows " beta "'
	# rows: 0 header, 1 title, 2 heading, 3 alpha, 4 beta
	local y
	y=$(screen_text | grep -n ' beta ' | head -n 1 | cut -d: -f1)
	# an X10 mouse press and release at column 5 of that row (0-based y-1), as
	# the terminal would send them (TERM=screen: kmous is ESC [ M)
	local row col
	row=$(printf "\\$(printf %o $((y - 1 + 33)))")
	col=$(printf "\\$(printf %o $((5 + 33)))")
	tm send-keys -l $'\e[M '"$col$row"
	tm send-keys -l $'\e[M#'"$col$row"
	wait_for 'shows "beta-output"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: the file browser previews a stopped computer's workspace and refreshes on its own" {
	rk_fake t
	printf 'the quick brown fox\njumps over\n' | rk computer file write t notes/a.txt
	rk computer stop t --wait --json >/dev/null
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = stopped ]
	tui_start 120 35
	tm send-keys 5
	wait_for 'focused Files'
	wait_for 'shows "stored workspace"'
	wait_for 'shows "notes/"'
	tm send-keys l
	wait_for 'shows "a.txt"'
	wait_for 'shows "the quick brown fox"'
	shows "jumps over"
	# a file that appears in the stored home shows up without a key
	local home
	home=$(ls -d "$RAKAZO_DATA_DIR"/homes/*/ | head -n 1)
	printf 'second file\n' >"$home/notes/b.txt"
	wait_for 'shows "b.txt"'
	# into the preview and back, up to the root
	tm send-keys j
	wait_for 'shows "second file"'
	tm send-keys h
	wait_for 'shows "notes/"'
	! shows "a.txt"
	# a directory that goes away while it shows says so, and h still leads up
	tm send-keys l
	wait_for 'shows "b.txt"'
	rm -rf "$home/notes"
	wait_for 'shows "cannot read /notes"'
	tm send-keys h
	wait_for 'shows "(empty directory)"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: download and upload go through a running computer; stopped, they are refused" {
	rk_fake t
	printf 'download me\n' | rk computer file write t notes/a.txt
	printf 'upload me\n' >"$BATS_TEST_TMPDIR/up.txt"
	tui_start 120 35
	tm send-keys 5
	wait_for 'shows "notes/"'
	tm send-keys l
	wait_for 'shows "download me"'
	tm send-keys d
	wait_for 'shows "downloaded t:/notes/a.txt to a.txt"'
	[ "$(cat "$BATS_TEST_TMPDIR/a.txt")" = "download me" ]
	# a second one does not overwrite what is here
	tm send-keys d
	wait_for 'shows "a.txt exists here: not overwritten"'
	tm send-keys u
	wait_for 'shows "upload local file:"'
	tm send-keys -l "$BATS_TEST_TMPDIR/up.txt"
	tm send-keys Enter
	wait_for 'shows "uploaded"'
	[ "$(rk computer file read t notes/up.txt)" = "upload me" ]
	wait_for 'shows "up.txt"'
	# a local file that is not there is an error, not a crash
	tm send-keys u
	tm send-keys -l "$BATS_TEST_TMPDIR/nosuch.txt"
	tm send-keys Enter
	wait_for 'shows "upload failed"'
	rk computer stop t --wait --json >/dev/null
	wait_for 'shows "stopped, from the stored workspace"'
	rm "$BATS_TEST_TMPDIR/a.txt"
	tm send-keys d
	wait_for 'shows "download needs the computer running"'
	[ ! -e "$BATS_TEST_TMPDIR/a.txt" ]
	tm send-keys u
	wait_for 'shows "upload needs the computer running"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: the history pane follows rakazo computer exec from another shell, live" {
	rk_fake t
	tui_start 120 35
	tm send-keys 4
	wait_for 'focused History'
	wait_for 'shows "no terminal history yet"'
	# the fake provider runs commands on this host: a file holds this one until the test lets it go
	rk computer exec t --yield-ms 30000 -- "echo first-mark; while [ ! -e '$BATS_TEST_TMPDIR/go' ]; do sleep 0.1; done; echo second-mark" >"$BATS_TEST_TMPDIR/exec.out" &
	local pid=$!
	# the command shows while it is still running ...
	wait_for 'shows "$ echo first-mark; while"' 20
	kill -0 "$pid"
	touch "$BATS_TEST_TMPDIR/go"
	# ... and its output and exit when it ends, with no key pressed
	wait_for 'shows "second-mark"' 30
	wait_for 'shows "[exit 0]"'
	wait "$pid"
	shows "first-mark"
	# scrollback: up leaves the tail, G follows it again
	tm send-keys k
	wait_for 'shows "scrollback (G follows)"'
	tm send-keys G
	wait_for 'shows "live tail"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: history shows escape sequences and control characters removed, tabs expanded, wide characters whole" {
	rk_fake t
	rk computer exec t -- "printf '\033[31mred\033[0m\tafter\r\n'; printf 'h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac\x07end\n'" >/dev/null
	tui_start 120 35
	wait_for 'shows "red     after"'
	shows "héllo 日本end"
	! shows "[31m"
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: NO_COLOR turns every colour off; without it the screen is truecolor half blocks" {
	rk_fake t
	tui_start 120 35
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	tm capture-pane -p -e >"$BATS_TEST_TMPDIR/mono.txt"
	# reverse and bold only: no foreground or background colour at all
	! grep -qE $'\e\\[[0-9;]*(3[0-9]|4[0-9]|9[0-7])(;[0-9]+)*m' "$BATS_TEST_TMPDIR/mono.txt"
	grep -q '@\|#\|=' "$BATS_TEST_TMPDIR/mono.txt"
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
	# an empty NO_COLOR is no NO_COLOR
	tm send-keys clear Enter
	tm send-keys "NO_COLOR= $RAKAZO_BIN tui; echo tui2-exit=\$?" Enter
	wait_for 'tm display -p "#{alternate_on}" | grep -qx 1' 20
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	wait_for 'tm capture-pane -p -e | grep -q "38;2;"'
	tm capture-pane -p | grep -q '▀'
	tm send-keys q
	wait_for 'shows "tui2-exit=0"'
}

@test "tui: the screen pane shows a changed frame after rakazo screen act" {
	rk_fake t
	tui_start 120 35
	tm send-keys 6
	wait_for 'focused Screen'
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	local before after
	before=$(frame_hash_shown)
	screen_text >"$BATS_TEST_TMPDIR/before.txt"
	rk screen act t --actions '[{"action":"type","text":"WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW"}]' --no-observe --json >/dev/null
	wait_for '[ "$(frame_hash_shown)" != "'"$before"'" ]' 30
	after=$(frame_hash_shown)
	[ -n "$after" ]
	# the picture itself changed, not only the title
	screen_text | grep -v 'frame [0-9]' >"$BATS_TEST_TMPDIR/after.txt"
	grep -v 'frame [0-9]' "$BATS_TEST_TMPDIR/before.txt" >"$BATS_TEST_TMPDIR/before2.txt"
	! cmp -s "$BATS_TEST_TMPDIR/before2.txt" "$BATS_TEST_TMPDIR/after.txt"
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: a stopped computer's screen waits instead of resuming it" {
	rk_fake t
	rk computer stop t --wait --json >/dev/null
	tui_start 120 35
	tm send-keys 6
	wait_for 'shows "its screen shows while it runs"'
	[ "$(rk computer show t --json | rk_json 'd["state"]')" = stopped ]
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: takeover sends typed keys to the computer under the control lease and gives them back" {
	# the organization's: another member may use it, and meets the person's control
	rk computer create --provider fake --name t --org --wait --json >/dev/null
	tui_start 120 35
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	tm send-keys t
	wait_for 'shows "TAKEOVER"'
	# the person holds the control lease of the main display's bot: another person is refused
	wait_for 'RAKAZO_OWNER=user:other rk screen takeover t --bot default --json 2>&1 | grep -q "user:bats already has control"'
	tm send-keys -l 'qjk?'
	wait_for 'fake_typed "qjk?"' 20
	# q went to the computer: the dashboard is still up
	shows " 6 Screen"
	tm send-keys C-]
	wait_for 'shows "takeover ended"'
	# given back: another person may take it now
	wait_for 'RAKAZO_OWNER=user:other rk screen takeover t --bot default --json >/dev/null 2>&1'
	RAKAZO_OWNER=user:other rk screen release-control t --bot default
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

# How many rows of the window hold a run of exactly $1 half blocks.
block_rows() {
	screen_text | python3 -c '
import re, sys
n = int(sys.argv[1])
print(sum(1 for line in sys.stdin if any(len(m) == n for m in re.findall("\u2580+", line))))
' "$1"
}

# The fake screen's typed text ends with $1.
fake_typed() {
	python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["text"].endswith(sys.argv[2]) else 1)' \
		"$(ls "$RAKAZO_DATA_DIR"/fake/*/screen-0.json | head -n 1)" "$1"
}

# The fake screen's clicks so far (DATA_DIR/fake/REF/screen-0.json marks), one "x y button" a line.
fake_clicks() {
	python3 -c '
import json, sys
for m in json.load(open(sys.argv[1])).get("marks", []):
    if m[2]:
        print(m[0], m[1], m[2])
' "$(ls "$RAKAZO_DATA_DIR"/fake/*/screen-0.json | head -n 1)"
}

@test "tui: takeover is the control lease: refused while a run works, granted while it waits; a click reaches the screen; giving it back lets the run go on" {
	# the organization's: another member may use it, and meets the person's control
	rk computer create --provider fake --name t --org --wait --json >/dev/null
	# a run at work (its model call hangs): the person may not take over
	model_start run_hang.json
	local busy
	busy=$(rk run --detach --computer t "keep busy")
	wait_for 'rk run logs '"$busy"' | grep -q "tool.result *shell"' 30
	tui_start 120 35
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	tm send-keys t
	wait_for 'shows "takeover: conflict: Stop the bot first"'
	shows "$busy"
	! shows "TAKEOVER"
	rk run cancel "$busy" --wait 30 >/dev/null
	model_stop
	# a run that asks for a person waits; the person takes over
	model_start tui_takeover.json
	local id
	id=$(rk run --detach --computer t "ask for help")
	wait_for '[ "$(rk run show '"$id"' --json | rk_json "d[\"state\"]")" = waiting_takeover ]' 30
	tm send-keys t
	wait_for 'shows "TAKEOVER"'
	wait_for '! shows "taking the control lease"'
	RAKAZO_OWNER=user:other expect_json_error 4 conflict rk screen takeover t --bot default --json
	# a left click on the picture (an X10 press and release, as the terminal sends them)
	# reaches the computer's screen as one click
	local before clicks
	before=$(rk screen shot t --json | rk_json 'd["frame_hash"]')
	clicks=$(fake_clicks | wc -l)
	local row col
	row=$(printf "\\$(printf %o $((2 + 6 + 33)))")
	col=$(printf "\\$(printf %o $((61 + 20 + 33)))")
	tm send-keys -l $'\e[M '"$col$row"
	tm send-keys -l $'\e[M#'"$col$row"
	wait_for '[ "$(fake_clicks | wc -l)" -eq $((clicks + 1)) ]' 20
	# a key after it: once it is there, the release has been handled too, and made no click
	tm send-keys -l 'z'
	wait_for 'fake_typed z' 20
	[ "$(fake_clicks | wc -l)" -eq $((clicks + 1)) ]
	# left button (1), inside the screen
	fake_clicks | tail -n 1 | awk '{ exit !($3 == 1 && $1 > 0 && $1 < 1280 && $2 > 0 && $2 < 800) }'
	[ "$(rk screen shot t --json | rk_json 'd["frame_hash"]')" != "$before" ]
	# still waiting while the person has control; Ctrl-] gives it back and the run goes on
	[ "$(rk run show "$id" --json | rk_json 'd["state"]')" = waiting_takeover ]
	tm send-keys C-]
	wait_for 'shows "takeover ended"'
	wait_for '[ "$(rk run show '"$id"' --json | rk_json "d[\"state\"]")" = completed ]' 30
	model_done
	[ "$(rk run show "$id" --json | rk_json 'd["final_answer"]')" = "thanks, carrying on" ]
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: resize to 60x20 and back without a crash" {
	rk_fake t
	rk computer exec t -- 'echo resize-mark' >/dev/null
	tui_start 120 35
	wait_for 'shows "resize-mark"'
	tm resize-window -x 60 -y 20
	# one pane at a time: the computers list fills the window
	wait_for '[ "$(screen_text | head -n 1 | wc -L)" -le 60 ]'
	wait_for '! shows "resize-mark"'
	shows " 1 Computers"
	tm send-keys 4
	wait_for 'shows "resize-mark"'
	tm send-keys 6
	wait_for 'focused Screen'
	tm resize-window -x 120 -y 35
	wait_for 'shows " 1 Computers"'
	wait_for 'shows " 6 Screen"'
	tm resize-window -x 30 -y 8
	tm resize-window -x 120 -y 35
	wait_for 'shows " 1 Computers"'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: quitting restores the terminal (alternate screen, cursor, mouse, tty modes)" {
	rk_fake t
	tui_start 100 30
	[ "$(tm display -p '#{alternate_on}')" = 1 ]
	[ "$(tm display -p '#{cursor_flag}')" = 0 ]
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
	expect_restored
}

@test "tui: SIGTERM and a fatal signal restore the terminal too" {
	rk_fake t
	tui_start 100 30
	local pid
	pid=$(pgrep -f "$RAKAZO_BIN tui" -P "$(tm display -p '#{pane_pid}')" | head -n 1)
	[ -n "$pid" ]
	kill -TERM "$pid"
	wait_for 'shows "tui-exit=0"'
	expect_restored
	tm send-keys clear Enter
	tm send-keys "$RAKAZO_BIN tui; echo tui2-exit=\$?" Enter
	wait_for 'tm display -p "#{alternate_on}" | grep -qx 1' 20
	wait_for 'shows " 1 Computers"'
	pid=$(pgrep -f "$RAKAZO_BIN tui" -P "$(tm display -p '#{pane_pid}')" | head -n 1)
	kill -SEGV "$pid"
	wait_for 'shows "tui2-exit=139"'
	expect_restored
}

@test "tui: a display that stops answering never freezes the keys" {
	rk_fake t
	rk screen shot t --json >/dev/null
	local holder
	holder=$(rk screen info t --json | rk_json 'd["holder_pid"]')
	[ -n "$holder" ] && kill -0 "$holder"
	tui_start 120 35
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 30
	# the screen thread now waits on a holder that does not answer (up to 30 s)
	kill -STOP "$holder"
	local p
	for p in Computers Runs Timeline History Files Screen; do
		tm send-keys Tab
		wait_for "focused $p"
	done
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
	kill -CONT "$holder"
}

@test "tui: runs and a run's timeline from the runs table" {
	rk_fake t
	local id
	id=$(rk computer show t --json | rk_json 'd["id"]')
	python3 - "$RAKAZO_DATA_DIR/rakazo.db" "$id" <<'EOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
now = int(time.time() * 1000)
cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
row = {"id": "run_tuitest1", "computer_id": sys.argv[2], "task": "write the notes file", "model": "m-test",
       "state": "completed", "steps": 4, "input_tokens": 1200, "output_tokens": 300, "cached_tokens": 900,
       "images": 7, "cost_micro_usd": 12345, "final_answer": "all done here",
       "created_at": now - 5000, "started_at": now - 4000, "finished_at": now - 1000}
row = {k: v for k, v in row.items() if k in cols}
db.execute("INSERT INTO runs (%s) VALUES (%s)" % (",".join(row), ",".join("?" * len(row))), list(row.values()))
db.commit()
EOF
	tui_start 140 35
	wait_for 'shows "run_tuitest1"'
	shows "completed"
	shows "m-test"
	shows "1500"
	tm send-keys 2
	wait_for 'focused Runs'
	tm send-keys Enter
	wait_for 'focused Timeline'
	wait_for 'shows "all done here"'
	shows "4 steps, 1200 input (900 cached) + 300 output tokens"
	shows "usage     7 images sent, cost \$0.0123"
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: a run's timeline shows its model turns, tool calls and results, and the frame it saw in half blocks" {
	rk_fake t
	model_start run_fake.json
	rk run --computer t --json "write a note and read it back" >/dev/null
	model_done
	TUI_ENV="NO_COLOR=" tui_start 160 60
	tm send-keys 2
	wait_for 'focused Runs'
	tm send-keys Enter
	wait_for 'focused Timeline'
	wait_for 'shows "tool.call list_files"'
	local name
	for name in write_file shell computer_observe; do
		shows "tool.call $name"
		shows "tool.result $name"
	done
	shows "model.turn step 1: Looking around."
	shows "run.finished completed: Wrote notes/x.txt and read it back."
	shows "6 steps"
	# under the first observe's result (a new frame) its picture: 1280x800 in 32x20 pixels, ten
	# rows of 32 half blocks in the fake's grey; the second observe (the same frame) has none
	wait_for '[ "$(block_rows 32)" = 10 ]'
	local res pic
	res=$(screen_text | grep -n "tool.result computer_observe" | head -n 1 | cut -d: -f1)
	pic=$(screen_text | grep -n "▀" | head -n 1 | cut -d: -f1)
	[ "$pic" -eq $((res + 1)) ]
	tm capture-pane -p -e | grep -q "38;2;128;128;128"
	# in a lower window, at the end: the picture's first row is above the pane's top, the
	# other nine show from the pane's first row, and the next event follows them
	tm resize-window -x 160 -y 18
	tm send-keys G
	wait_for '[ "$(block_rows 32)" = 9 ]'
	screen_text | sed -n 3p | grep -q "▀"
	[ "$(screen_text | grep -n "model.turn step 5" | cut -d: -f1)" -eq 12 ]
	# up three lines and back: the picture moves whole, and where it was is blank again
	tm send-keys k k k
	wait_for '[ "$(block_rows 32)" = 10 ] && [ "$(screen_text | grep -n "model.turn step 5" | cut -d: -f1)" -eq 15 ]'
	tm send-keys j j j
	wait_for '[ "$(screen_text | grep -n "model.turn step 5" | cut -d: -f1)" -eq 12 ]'
	wait_for '[ "$(screen_text | grep -o "▀" | wc -l)" -eq $((9 * 32)) ]'
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: pending approvals show: the runs title counts them, the timeline names the call and how to decide it (issue 11)" {
	rk_fake t
	rk approval set --effect require_approval --match tool --value write_file --json >/dev/null
	model_start run_approval.json
	local id
	id=$(rk run --computer t --detach "buy pianos")
	wait_for "[ \"\$(run_state_stored $id)\" = waiting_approval ]" 30
	tui_start 160 50
	tm send-keys 2
	wait_for 'focused Runs'
	wait_for 'shows "1 waiting for approval"'
	tm send-keys Enter
	wait_for 'focused Timeline'
	wait_for 'shows "waiting for approval: write_file"'
	shows "order 3 pianos"
	shows "rakazo run approve $id"
	rk run approve "$id" --json >/dev/null
	model_done
	wait_for 'shows "run.finished completed: ordered"' 30
	run shows "waiting for approval"
	[ "$status" -ne 0 ]
	tm send-keys q
	wait_for 'screen_text | grep -q "tui-exit=0"'
	[ "$(rk computer file read t buy.txt)" = 'order 3 pianos' ]
}

@test "tui: a running run's timeline follows its events live" {
	rk_fake t
	model_start tui_takeover.json
	local id
	id=$(rk run --detach --computer t "ask for help")
	tui_start 140 35
	tm send-keys 2 Enter
	wait_for 'focused Timeline'
	wait_for 'shows "run.waiting_takeover please click the button"' 30
	shows "live tail"
	! shows "run.finished"
	rk run continue "$id" --note "done by hand" >/dev/null
	wait_for 'shows "run.takeover_ended done by hand"' 30
	wait_for 'shows "run.finished completed: thanks, carrying on"' 30
	model_done
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: a run whose process died shows as interrupted without anyone running rakazo run list" {
	rk_fake t
	local cid dead
	cid=$(rk_id t)
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	python3 - "$RAKAZO_DATA_DIR/rakazo.db" "$cid" "$dead" <<'EOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
now = int(time.time() * 1000)
# auto_resume false: a worker would resume it (rakazo-run(1))
db.execute("INSERT INTO runs (id, computer_id, task, model, state, worker_pid, heartbeat_at, created_at, started_at) "
           "VALUES ('run_tuidead1', ?, 'a task', 'm', 'running', ?, ?, ?, ?)", (sys.argv[2], int(sys.argv[3]), now, now, now))
db.commit()
EOF
	[ "$(run_state_stored run_tuidead1)" = running ]
	tui_start 140 35
	wait_for 'shows "run_tuidead1"'
	wait_for '[ "$(run_state_stored run_tuidead1)" = interrupted ]' 30
	wait_for 'screen_text | grep "run_tuidead1" | grep -q " interrupte"' 10
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

@test "tui: the computers pane counts live screens: the main display and each bot's" {
	rk computer create --provider fake --name t --team --wait --json >/dev/null
	tui_start 140 35
	wait_for 'screen_text | grep -qE "^ t +running +fake +1 "'
	rk screen shot t --bot a --json >/dev/null
	rk screen shot t --bot b --json >/dev/null
	wait_for 'screen_text | grep -qE "^ t +running +fake +3 "'
	rk screen release t --bot a
	wait_for 'screen_text | grep -qE "^ t +running +fake +2 "'
	rk computer stop t --wait --json >/dev/null
	wait_for 'screen_text | grep -qE "^ t +stopped +fake +0 "' 20
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}

# --- a real docker computer ------------------------------------------------------------

docker_or_skip() {
	local up
	up=$(rk computer providers --json | rk_json '[p["available"] for p in d if p["name"] == "docker"][0]')
	if [ "$up" != true ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "docker is down and RAKAZO_REQUIRE_DOCKER=1" >&2; return 1; }
		skip "docker is down"
	fi
}

@test "tui docker: the screen pane shows a changed frame after rakazo screen act" {
	docker_or_skip
	rk computer create --provider docker --name d --wait --timeout 300 --json >/dev/null
	DOCKER_C=d
	rk screen shot d --json >/dev/null
	tui_start 120 35
	tm send-keys 6
	wait_for '[ -n "$(frame_hash_shown)" ]' 60
	local before
	before=$(frame_hash_shown)
	rk screen act d --actions '[{"action":"key","keys":"ctrl+l"},{"action":"type","text":"rakazo tui test"},{"action":"right_click","x":200,"y":300}]' --no-observe --json >/dev/null
	wait_for '[ "$(frame_hash_shown)" != "'"$before"'" ]' 60
	tm send-keys q
	wait_for 'shows "tui-exit=0"'
}
