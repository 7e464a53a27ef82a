#!/usr/bin/env bats
# rakazo screen shot|act|info|watch|close as users type them (issue 5).
# The fake provider's tests always run. The docker ones drive a real
# computer: tests/fixtures/xclient.py on display :1 changes color where
# clicked, records typed text, scroll and keys in files; they skip when
# docker is down (RAKAZO_REQUIRE_DOCKER=1: fail instead).

load helper

teardown() {
	if [ -n "${DOCKER_C:-}" ]; then
		rk computer delete "$DOCKER_C" --wait >/dev/null 2>&1 || true
	fi
	if [ -n "${TMUX_SOCK:-}" ]; then
		tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true
	fi
	rk_kill_all
}

# The frame hash of display ${2:-0} of computer $1 now.
frame_hash() {
	rk screen shot "$1" --display "${2:-0}" --json | rk_json 'd["frame_hash"]'
}

# Runs "$@" expecting exit 2 and a message that contains $msg.
expect_invalid() {
	local msg=$1
	shift
	run "$@"
	if [ "$status" -ne 2 ] || [[ $output != *"$msg"* ]]; then
		echo "expected exit 2 and '$msg', got $status: $output" >&2
		return 1
	fi
}

# --- the fake provider ------------------------------------------------------------

@test "shot writes a PNG of the whole screen and prints its metadata" {
	rk_fake t
	run rk screen shot t -o "$BATS_TEST_TMPDIR/a.png" --json
	[ "$status" -eq 0 ]
	[ "$(png_size "$BATS_TEST_TMPDIR/a.png")" = 1280x800 ]
	[ "$(printf '%s' "$output" | rk_json 'd["path"]')" = "$BATS_TEST_TMPDIR/a.png" ]
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"], d["scale"], d["mime_type"]]')" = '[1280, 800, 1, "image/png"]' ]
	[ "$(printf '%s' "$output" | rk_json 'len(d["frame_hash"])')" = 64 ]
	[ "$(printf '%s' "$output" | rk_json 'd["unchanged"]')" = false ]
	# the fake desktop's grey background and white text field
	[ "$(pixel "$BATS_TEST_TMPDIR/a.png" 640 500)" = "128 128 128" ]
	[ "$(pixel "$BATS_TEST_TMPDIR/a.png" 30 25)" = "255 255 255" ]
	# human output names the file
	run rk screen shot t -o "$BATS_TEST_TMPDIR/b.png"
	[ "$status" -eq 0 ]
	[[ $output == *"path"*"$BATS_TEST_TMPDIR/b.png"* ]]
}

@test "shot --max-width 640 --max-height 400 downscales with scale 0.5" {
	rk_fake t
	run rk screen shot t --max-width 640 --max-height 400 -o "$BATS_TEST_TMPDIR/s.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"], d["screen_width"], d["screen_height"], d["scale"]]')" = '[640, 400, 1280, 800, 0.5]' ]
	[ "$(png_size "$BATS_TEST_TMPDIR/s.png")" = 640x400 ]
	# one limit alone keeps the aspect
	run rk screen shot t --max-width 1024 -o "$BATS_TEST_TMPDIR/w.png" --json
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"], d["scale"]]')" = '[1024, 640, 0.8]' ]
	[ "$(png_size "$BATS_TEST_TMPDIR/w.png")" = 1024x640 ]
	# never enlarged
	run rk screen shot t --max-width 4000 --json
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["scale"]]')" = '[1280, 1]' ]
}

@test "shot --consumer: an unchanged frame comes without an image and writes no file" {
	rk_fake t
	run rk screen shot t --consumer c1 -o "$BATS_TEST_TMPDIR/1.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["unchanged"]')" = false ]
	[ -f "$BATS_TEST_TMPDIR/1.png" ]
	first=$(printf '%s' "$output" | rk_json 'd["frame_hash"]')
	id1=$(printf '%s' "$output" | rk_json 'd["frame_id"]')

	run rk screen shot t --consumer c1 -o "$BATS_TEST_TMPDIR/2.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["unchanged"]')" = true ]
	[ "$(printf '%s' "$output" | rk_json '"path" in d')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["frame_hash"]')" = "$first" ]
	[ "$(printf '%s' "$output" | rk_json 'int(d["frame_id"])')" -gt "$id1" ]
	[ ! -e "$BATS_TEST_TMPDIR/2.png" ]
	# -o - writes nothing either
	[ "$(rk screen shot t --consumer c1 -o - | wc -c)" -eq 0 ]

	# another consumer, and no consumer, still get the image
	rk screen shot t --consumer c2 -o "$BATS_TEST_TMPDIR/3.png" >/dev/null
	[ "$(png_size "$BATS_TEST_TMPDIR/3.png")" = 1280x800 ]
	rk screen shot t -o "$BATS_TEST_TMPDIR/4.png" >/dev/null
	[ -f "$BATS_TEST_TMPDIR/4.png" ]

	# once the screen changes, c1 gets it again
	rk screen act t -a '[{"action":"click","x":400,"y":300}]' --no-observe >/dev/null
	run rk screen shot t --consumer c1 -o "$BATS_TEST_TMPDIR/5.png" --json
	[ "$(printf '%s' "$output" | rk_json 'd["unchanged"]')" = false ]
	[ "$(printf '%s' "$output" | rk_json 'd["frame_hash"]')" != "$first" ]
	[ -f "$BATS_TEST_TMPDIR/5.png" ]
}

@test "act: click and type change the frame and its pixels" {
	rk_fake t
	before=$(frame_hash t)
	run rk screen act t -a '[{"action":"click","x":400,"y":300},{"action":"type","text":"hi"}]' \
		-o "$BATS_TEST_TMPDIR/act.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["completed"], d["settled"]]')" = '[2, true]' ]
	[ "$(printf '%s' "$output" | rk_json 'd["observation"]["cursor"]')" = '{"x": 400, "y": 300}' ]
	after=$(printf '%s' "$output" | rk_json 'd["observation"]["frame_hash"]')
	[ "$after" != "$before" ]
	[ "$(frame_hash t)" = "$after" ]
	[ "$(png_size "$BATS_TEST_TMPDIR/act.png")" = 1280x800 ]
	[ "$(pixel "$BATS_TEST_TMPDIR/act.png" 400 300)" = "255 0 0" ]  # a red left-click marker
	[ "$(pixel "$BATS_TEST_TMPDIR/act.png" 700 300)" = "128 128 128" ]
	# right click is blue, through @FILE and stdin
	echo '[{"action":"right_click","x":600,"y":300}]' >"$BATS_TEST_TMPDIR/b.json"
	rk screen act t -a "@$BATS_TEST_TMPDIR/b.json" -o "$BATS_TEST_TMPDIR/r.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/r.png" 600 300)" = "0 0 255" ]
	echo '{"actions":[{"action":"click","x":650,"y":300,"button":"middle"}],"settle_ms":0}' |
		rk screen act t -a - -o "$BATS_TEST_TMPDIR/m.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/m.png" 650 300)" = "0 255 0" ]
}

@test "act: coordinates in a downscaled screenshot land on the right screen point" {
	rk_fake t
	run rk screen act t --max-width 640 -a '[{"action":"click","x":100,"y":150}]' -o "$BATS_TEST_TMPDIR/s.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["observation"]["width"], d["observation"]["scale"]]')" = '[640, 0.5]' ]
	[ "$(printf '%s' "$output" | rk_json 'd["observation"]["cursor"]')" = '{"x": 100, "y": 150}' ]
	[ "$(png_size "$BATS_TEST_TMPDIR/s.png")" = 640x400 ]
	rk screen shot t -o "$BATS_TEST_TMPDIR/full.png" >/dev/null
	# (100, 150) in 640x400 is the centre of that pixel on 1280x800: (201, 301)
	[ "$(pixel "$BATS_TEST_TMPDIR/full.png" 201 301)" = "255 0 0" ]
	# the same point is off the small image but not the screen: refused
	expect_invalid "action 0: click: point (700, 100) is off the screen (the screenshot is 640x400" \
		rk screen act t --max-width 640 -a '[{"action":"click","x":700,"y":100}]'
}

@test "act: --no-observe gives no screenshot, --settle-ms is bounded" {
	rk_fake t
	run rk screen act t -a '[{"action":"move","x":10,"y":10}]' --no-observe --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["observation"]')" = null ]
	[ "$(printf '%s' "$output" | rk_json 'd["completed"]')" = 1 ]
	expect_status 2 rk screen act t -a '[{"action":"move","x":10,"y":10}]' --settle-ms 3001
	expect_status 2 rk screen act t
	[[ $output == *"--actions"* ]]
}

@test "act: bad batches exit 2 naming the index and field, and nothing runs" {
	rk_fake t
	rk screen act t -a '[{"action":"click","x":5,"y":5}]' --no-observe >/dev/null
	before=$(frame_hash t)
	ok='{"action":"click","x":100,"y":100}'
	expect_invalid "actions is not valid JSON" rk screen act t -a "[$ok,"
	expect_invalid 'action 1: unknown action "clik"' rk screen act t -a "[$ok,{\"action\":\"clik\"}]"
	expect_invalid 'action 0: click: unknown field "z"' rk screen act t -a '[{"action":"click","x":1,"y":1,"z":1}]'
	expect_invalid "action 0: type: text must be a string" rk screen act t -a '[{"action":"type","text":5}]'
	expect_invalid "action 0: click: x must be an integer" rk screen act t -a '[{"action":"click","x":1.5,"y":1}]'
	many=$(python3 -c 'import json; print(json.dumps([{"action":"move","x":1,"y":1}] * 25))')
	expect_invalid "a batch takes 1 to 24 actions, got 25" rk screen act t -a "$many"
	expect_invalid "a batch takes 1 to 24 actions, got 0" rk screen act t -a '[]'
	expect_invalid "action 2: click: point (1280, 10) is off the screen (the screenshot is 1280x800: x 0..1279, y 0..799)" \
		rk screen act t -a "[$ok,$ok,{\"action\":\"click\",\"x\":1280,\"y\":10}]"
	expect_invalid "action 1: move: y must be from 0 to 65535" \
		rk screen act t -a "[$ok,{\"action\":\"move\",\"x\":5,\"y\":-1}]"
	expect_invalid 'action 1: key: unknown key "bogus" in "ctrl+bogus"' \
		rk screen act t -a "[$ok,{\"action\":\"key\",\"keys\":\"ctrl+bogus\"}]"
	expect_invalid "action 0: wait: ms must be from 0 to 5000" rk screen act t -a '[{"action":"wait","ms":5001}]'
	expect_invalid "settle_ms" rk screen act t -a "{\"actions\":[$ok],\"settle_ms\":4000}"
	expect_invalid "actions" rk screen act t -a '{"action":"click","x":1,"y":1}'
	# under --json: one error line, stdout empty
	expect_json_error 2 invalid_argument rk screen act t -a '[{"action":"clik"}]' --json
	# none of it ran: the valid clicks before a bad one included
	[ "$(frame_hash t)" = "$before" ]
}

@test "info gives the display's size, transport and holder; close ends the holder" {
	rk_fake t
	run rk screen info t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["computer"], d["display"], d["width"], d["height"], d["transport"]]')" = '["t", 0, 1280, 800, "provider"]' ]
	pid=$(printf '%s' "$output" | rk_json 'd["holder_pid"]')
	kill -0 "$pid"
	# the same holder answers the next call
	[ "$(rk screen info t --json | rk_json 'd["holder_pid"]')" = "$pid" ]
	run rk screen info t
	[[ $output == *"transport"*"provider"* ]]
	# a second display has its own holder
	[ "$(rk screen info t --display 2 --json | rk_json '[d["display"], d["holder_pid"] != '"$pid"']')" = '[2, true]' ]
	run rk screen close t
	[ "$status" -eq 0 ]
	wait_for "! kill -0 $pid 2>/dev/null" 5
	# the next call starts the display again
	pid2=$(rk screen info t --json | rk_json 'd["holder_pid"]')
	[ "$pid2" != "$pid" ]
	rk screen close t --display 2
	rk screen close t
}

@test "shot refuses to write a PNG to a terminal; -o - and a pipe get the PNG" {
	rk_fake t
	rk screen info t >/dev/null
	run script -qec "$RAKAZO_BIN screen shot t" /dev/null
	[ "$status" -eq 2 ]
	[[ $output == *"refusing to write a PNG to a terminal"* ]]
	rk screen shot t -o - >"$BATS_TEST_TMPDIR/o.png"
	[ "$(png_size "$BATS_TEST_TMPDIR/o.png")" = 1280x800 ]
	rk screen shot t --max-width 320 >"$BATS_TEST_TMPDIR/p.png"
	[ "$(png_size "$BATS_TEST_TMPDIR/p.png")" = 320x200 ]
	expect_json_error 2 usage rk screen shot t -o - --json
}

@test "screen errors: unknown computer, no desktop, display out of range, watch without a terminal" {
	expect_json_error 3 not_found rk screen shot nosuch --json
	rk computer create --provider fake --name nd --no-desktop --wait --json >/dev/null
	expect_json_error 1 unsupported rk screen shot nd --json
	rk_fake t
	expect_status 2 rk screen shot t --display 64
	[[ $output == *"--display must be from 0 to 63"* ]]
	expect_status 2 rk screen watch t </dev/null
	[[ $output == *"screen watch needs a terminal"* ]]
}

@test "watch draws the desktop in tmux, shows the computer in its status line, q quits and restores the terminal" {
	command -v tmux >/dev/null || skip "no tmux"
	rk_fake t
	rk screen info t >/dev/null
	TMUX_SOCK="rk-screen-$$-$BATS_TEST_NUMBER"
	tmux -L "$TMUX_SOCK" -f /dev/null new-session -d -x 80 -y 24 -s w \
		"env RAKAZO_DATA_DIR='$RAKAZO_DATA_DIR' NO_COLOR=1 TERM=xterm-256color '$RAKAZO_BIN' screen watch t --mode halfblock; echo \"EXITED \$?\"; stty -a | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' '; echo; sleep 600"
	wait_for "tmux -L $TMUX_SOCK capture-pane -p -t w | grep -q ' t :0  1280x800  frame [0-9]*  q quits'" 15
	[ "$(tmux -L "$TMUX_SOCK" display -p -t w '#{alternate_on} #{cursor_flag}')" = "1 0" ]
	# the frame: half blocks over the whole width
	tmux -L "$TMUX_SOCK" capture-pane -p -t w | head -n1 | grep -q '▀▀▀▀▀▀▀▀▀▀'
	tmux -L "$TMUX_SOCK" send-keys -t w q
	wait_for "tmux -L $TMUX_SOCK capture-pane -p -t w | grep -q 'EXITED 0'" 10
	run tmux -L "$TMUX_SOCK" capture-pane -p -t w
	[[ $output == *"icanon echo"* ]]
	[[ $output != *"q quits"* ]]
	[ "$(tmux -L "$TMUX_SOCK" display -p -t w '#{alternate_on} #{cursor_flag}')" = "0 1" ]
}

# Runs `screen watch t ARGS` in an 80x24 pty answering as terminal $1 (kitty,
# sixel or none) until frame $2 (after command $3 once frame 1 is up); the
# raw output in $BATS_TEST_TMPDIR/watch.out, the exit status in $output.
pty_watch() {
	local answer=$1 frames=$2 then=$3
	shift 3
	run python3 "$BATS_TEST_DIRNAME/../fixtures/pty_watch.py" "$BATS_TEST_TMPDIR/watch.out" "$answer" "$frames" "$then" \
		-- env -u TERM_PROGRAM -u KITTY_WINDOW_ID TERM=xterm-256color RAKAZO_DATA_DIR="$RAKAZO_DATA_DIR" "$RAKAZO_BIN" screen watch t "$@"
}

# What the watch output holds: kitty pictures (count, and the first PNG's
# size), sixel pictures (count, first raster size, well formed), half-block
# cells, and the mode on the status line.
watch_parse() {
	python3 - "$BATS_TEST_TMPDIR/watch.out" <<'EOF'
import base64, re, struct, sys
d = open(sys.argv[1], "rb").read()
out = {}
# kitty: a=T starts a picture; its chunks (m=1 ... m=0) carry one base64 PNG
pics = re.findall(rb"\x1b_Ga=T,f=100,[^;]*;([A-Za-z0-9+/=]*)\x1b\\((?:\x1b_Gm=[01];[A-Za-z0-9+/=]*\x1b\\)*)", d)
out["kitty"] = len(re.findall(rb"\x1b_Ga=T,", d))
if pics:
    first, rest = pics[0]
    b64 = first + b"".join(re.findall(rb"\x1b_Gm=[01];([A-Za-z0-9+/=]*)\x1b\\", rest))
    png = base64.b64decode(b64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", "not a PNG"
    out["kitty_png"] = "%dx%d" % struct.unpack(">II", png[16:24])
    ms = re.findall(rb"\x1b_Gm=([01]);", rest)
    assert ms and ms[-1] == b"0" and all(m == b"1" for m in ms[:-1]), "chunks: m=1 ... m=0"
# sixel: DCS q, raster attributes, colours and data, ST
six = re.findall(rb"\x1bPq\"1;1;(\d+);(\d+)((?:#\d+;2;\d+;\d+;\d+)+)([#$!\-0-9?-~]*)\x1b\\", d)
out["sixel"] = len(re.findall(rb"\x1bPq", d))
if six:
    out["sixel_size"] = "%sx%s" % (six[0][0].decode(), six[0][1].decode())
    out["sixel_bands"] = six[0][3].count(b"-")
out["halfblock"] = d.count("▀".encode())
m = re.findall(rb"frame \d+  q quits  (\w+)", d)
out["mode"] = m[-1].decode() if m else None
print(" ".join("%s=%s" % (k, out[k]) for k in sorted(out)))
EOF
}

@test "watch --mode kitty sends the frame as a PNG in kitty APC chunks; --mode sixel as DCS q ... ST; a bad mode is usage (issue 5)" {
	rk_fake t
	pty_watch none 1 "" --mode kitty
	[ "$output" = 0 ]
	run watch_parse
	[[ $output == *"kitty=1 kitty_png=1280x800"* ]] || { echo "$output"; return 1; }
	[[ $output == *"mode=kitty"* ]] && [[ $output == *"halfblock=0"* ]] && [[ $output == *"sixel=0"* ]]
	pty_watch none 1 "" --mode sixel
	[ "$output" = 0 ]
	run watch_parse
	# 80x24 cells of 8x16 pixels at most: the 1280x800 screen fits 589x368
	[[ $output == *"sixel=1 sixel_bands=62 sixel_size=589x368"* ]] || { echo "$output"; return 1; }
	[[ $output == *"mode=sixel"* ]] && [[ $output == *"kitty=0"* ]]
	expect_status 2 rk screen watch t --mode jpeg </dev/null
	[[ $output == *"rakazo: usage: unknown --mode 'jpeg'"* ]]
}

@test "watch --mode auto asks the terminal: kitty when it answers the graphics query, sixel when DA1 lists 4, else half blocks" {
	rk_fake t
	pty_watch kitty 1 ""
	[ "$output" = 0 ]
	grep -q $'\e_Gi=31,s=1,v=1,a=q' "$BATS_TEST_TMPDIR/watch.out"
	run watch_parse
	[[ $output == *"kitty=1"* ]] && [[ $output == *"mode=kitty"* ]] || { echo "$output"; return 1; }
	pty_watch sixel 1 ""
	run watch_parse
	[[ $output == *"sixel=1"* ]] && [[ $output == *"mode=sixel"* ]] || { echo "$output"; return 1; }
	# no answer: the query times out and half blocks draw
	pty_watch none 1 ""
	[ "$output" = 0 ]
	run watch_parse
	[[ $output == *"kitty=0"* ]] && [[ $output == *"sixel=0"* ]] && [[ $output == *"mode=halfblock"* ]] || { echo "$output"; return 1; }
	[[ $output != *"halfblock=0"* ]]
	# the environment of a kitty terminal is enough
	run python3 "$BATS_TEST_DIRNAME/../fixtures/pty_watch.py" "$BATS_TEST_TMPDIR/watch.out" none 1 "" \
		-- env TERM=xterm-kitty RAKAZO_DATA_DIR="$RAKAZO_DATA_DIR" "$RAKAZO_BIN" screen watch t
	run watch_parse
	[[ $output == *"mode=kitty"* ]]
}

@test "watch redraws only when the framebuffer changes: one picture while the screen is still, the next after a click" {
	rk_fake t
	# frame 1, then 1.5 s of a still screen with no picture, then a click: frame 2
	STILL_S=1.5 pty_watch none 2 "env RAKAZO_DATA_DIR='$RAKAZO_DATA_DIR' '$RAKAZO_BIN' screen act t --no-observe -a '[{\"action\":\"click\",\"x\":300,\"y\":300}]' >/dev/null" --mode kitty
	[ "$output" = "0
still=1" ] || { echo "$output"; return 1; }
	run watch_parse
	[[ $output == *"kitty=2"* ]] || { echo "$output"; return 1; }
}

# --- a real docker computer ---------------------------------------------------------

# A docker computer d with xclient.py running on display :1, state in st/.
# x11vnc draws the pointer into the pixels: colors are checked 10 px up and
# left of a click, inside the client's 40x40 square and off the arrow.
# A docker computer d (teardown removes it), or skip without docker.
docker_d() {
	docker_or_skip
	DOCKER_C=d
	rk computer create --name d --wait --json >/dev/null
}

docker_xclient() {
	docker_d
	rk computer file write d xclient.py <"$BATS_TEST_DIRNAME/../fixtures/xclient.py"
	[ "$(rk screen info d --display 1 --json | rk_json '[d["transport"], d["width"], d["height"]]')" = '["vnc", 1280, 800]' ]
	rk computer exec d -- 'rm -rf st && mkdir st && DISPLAY=:1 setsid -f python3 xclient.py st </dev/null >/dev/null 2>&1'
	wait_for "rk computer file read d st/ready >/dev/null 2>&1" 20
	# and its grey canvas is on the screen
	wait_for 'rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/ready.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/ready.png" 640 500)" = "128 128 128" ]' 10
}

# The client's state file st/$1.
state() {
	rk computer file read d "st/$1"
}

# Waits (up to 15 s) until the X client's state file $1 reads exactly $2:
# the client writes it after it has handled the events, which on a loaded
# machine can be after `screen act` returns. Shows the last value if not.
state_is() {
	local name=$1 want=$2
	wait_for '[ "$(state "$name" 2>/dev/null)" = "$want" ]' 15 && return 0
	printf 'state %s: got %q, wanted %q\n' "$name" "$(state "$name" 2>/dev/null)" "$want" >&2
	return 1
}

@test "docker: a click changes the color at the clicked point" {
	docker_xclient
	rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/0.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/0.png" 300 300)" = "128 128 128" ]
	run rk screen act d --display 1 -a '[{"action":"click","x":300,"y":300},{"action":"right_click","x":500,"y":300}]' \
		-o "$BATS_TEST_TMPDIR/1.png" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["completed"], d["settled"]]')" = '[2, true]' ]
	[ "$(pixel "$BATS_TEST_TMPDIR/1.png" 290 290)" = "255 0 0" ]
	[ "$(pixel "$BATS_TEST_TMPDIR/1.png" 490 290)" = "0 0 255" ]
	[ "$(pixel "$BATS_TEST_TMPDIR/1.png" 400 300)" = "128 128 128" ]
	state events | grep -qx 'press 1 300 300'
	state events | grep -qx 'press 3 500 300'
	# a double click is yellow (polled: the act's own screenshot was seen
	# to come before x11vnc sent this change, see the report on issue 5)
	# Both clicks must arrive every time; Tk pairs them into a double only
	# when x11vnc injects them within Tk's 500 ms, which a loaded 2-core
	# machine can miss (seen in CI), so the pairing gets three tries.
	for try in 1 2 3; do
		rk screen act d --display 1 -a '[{"action":"double_click","x":700,"y":500}]' --no-observe >/dev/null
		# the client writes its events file on its own time: poll it too
		wait_for "[ \$(rk computer file read d st/events | grep -cx 'release 1 700 500') -ge $((2 * try)) ]" 10
		if wait_for "rk computer file read d st/events | grep -qx 'double 1 700 500'" 3; then break; fi
	done
	state events | grep -qx 'double 1 700 500'
	wait_for 'rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/2.png" >/dev/null && [ "$(pixel "$BATS_TEST_TMPDIR/2.png" 690 490)" = "255 255 0" ]' 5
}

@test "docker: typed Unicode text arrives exactly" {
	docker_xclient
	text='aé漢ñ😀 Hello, World! ÄÖÜ'
	batch=$(python3 -c 'import json, sys; print(json.dumps([{"action": "type", "text": sys.argv[1]}]))' "$text")
	rk screen act d --display 1 -a "$batch" --no-observe >/dev/null
	state_is text "$text"
	# Return and BackSpace are keys
	rk screen act d --display 1 -a '[{"action":"key","keys":"BackSpace"},{"action":"key","keys":"Return"},{"action":"type","text":"ok"}]' --no-observe >/dev/null
	state_is text "$(printf '%s\nok' "${text%Ü}")"
}

@test "docker: a text with more new characters than the keymap has spare keys arrives exactly" {
	docker_xclient
	# 150 distinct CJK characters: about 85 fit on spare keys at once, so
	# keys are reused within the text; then Latin-1 on keys used moments ago
	local cjk latin
	cjk=$(python3 -c 'print("".join(chr(0x4e00 + i * 17) for i in range(150)))')
	latin='ÀÉÈÊËÎÏÔÙÛàéèêëîïôùûçÇ'
	batch=$(python3 -c 'import json, sys; print(json.dumps([{"action": "type", "text": sys.argv[1]}, {"action": "type", "text": sys.argv[2]}]))' "$cjk" "$latin")
	rk screen act d --display 1 -a "$batch" --no-observe >/dev/null
	state_is text "$cjk$latin"
}

@test "docker: scroll moves the client's counter and its box" {
	docker_xclient
	run rk screen act d --display 1 -a '[{"action":"scroll","x":600,"y":400,"dy":3}]' -o "$BATS_TEST_TMPDIR/s.png" --json
	[ "$status" -eq 0 ]
	[ "$(state scroll)" = 3 ]
	[ "$(pixel "$BATS_TEST_TMPDIR/s.png" 1240 40)" = "164 164 164" ]  # 128 + 3 * 12
	rk screen act d --display 1 -a '[{"action":"scroll","x":600,"y":400,"direction":"up","amount":5}]' --no-observe >/dev/null
	[ "$(state scroll)" = -2 ]
	[ "$(state events | grep -c '^scroll down 600 400$')" = 3 ]
	[ "$(state events | grep -c '^scroll up 600 400$')" = 5 ]
}

@test "docker: a key combo arrives with its modifiers" {
	docker_xclient
	rk screen act d --display 1 -a '[{"action":"key","keys":"ctrl+shift+t"},{"action":"key","keys":"alt+x"}]' --no-observe >/dev/null
	state events | grep -qx 'key ctrl+shift T'
	state events | grep -qx 'key alt x'
	# nothing is typed while ctrl is held
	[ "$(state text)" = "" ]
	# down and up separately
	rk screen act d --display 1 -a '[{"action":"key_down","keys":"ctrl"},{"action":"key","keys":"a"},{"action":"key_up","keys":"ctrl"},{"action":"key","keys":"b"}]' --no-observe >/dev/null
	state events | grep -qx 'key ctrl a'
	[ "$(state text)" = b ]
}

@test "docker: a click in a downscaled screenshot's coordinates lands on the screen point" {
	docker_xclient
	run rk screen shot d --display 1 --max-width 640 --json
	[ "$(printf '%s' "$output" | rk_json '[d["width"], d["height"], d["scale"]]')" = '[640, 400, 0.5]' ]
	run rk screen act d --display 1 --max-width 640 -a '[{"action":"click","x":100,"y":150}]' -o "$BATS_TEST_TMPDIR/s.png" --json
	[ "$status" -eq 0 ]
	[ "$(png_size "$BATS_TEST_TMPDIR/s.png")" = 640x400 ]
	state events | grep -qx 'press 1 201 301'
	rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/full.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/full.png" 191 291)" = "255 0 0" ]
	# in the small image the square is 20x20 around (100, 150)
	[ "$(pixel "$BATS_TEST_TMPDIR/s.png" 95 145)" = "255 0 0" ]
}

@test "docker: x11vnc dying mid-batch is a clear unavailable error, no hang, and the next shot works" {
	docker_xclient
	rk screen shot d --display 1 >/dev/null
	# a batch that waits 20 s; x11vnc goes after about one (on a loaded
	# machine the kill may land in any of the waits: the batch stops there)
	(sleep 1; rk computer exec d -- 'kill $(cut -d" " -f1 /run/rakazo/desktop/1/x11vnc.pid)' >"$BATS_TEST_TMPDIR/kill.out" 2>&1; echo $? >"$BATS_TEST_TMPDIR/kill.rc") &
	run timeout 60 "$RAKAZO_BIN" screen act d --display 1 --no-observe -a '[{"action":"wait","ms":5000},{"action":"wait","ms":5000},{"action":"wait","ms":5000},{"action":"wait","ms":5000},{"action":"click","x":10,"y":10}]'
	wait
	cat "$BATS_TEST_TMPDIR/kill.out"
	[ "$(cat "$BATS_TEST_TMPDIR/kill.rc")" = 0 ]
	[ "$status" -eq 5 ]
	[[ $output =~ unavailable.*action\ ([0-3]):\ wait:\ the\ display\ went\ away.*\(([0-3])\ actions\ completed\) ]]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	# the click never ran
	[ "$(state events | grep -c '^press')" = 0 ]
	# the holder starts the display again
	run rk screen shot d --display 1 -o "$BATS_TEST_TMPDIR/again.png" --json
	[ "$status" -eq 0 ]
	[ "$(pixel "$BATS_TEST_TMPDIR/again.png" 640 500)" = "128 128 128" ]
	rk screen act d --display 1 -a '[{"action":"click","x":300,"y":300}]' -o "$BATS_TEST_TMPDIR/after.png" >/dev/null
	[ "$(pixel "$BATS_TEST_TMPDIR/after.png" 290 290)" = "255 0 0" ]
}

# In computer d: kills display 2's piece $1 (its pid file's process) with
# signal $2, starts a `sleep` that outlives it, then runs shell text $3 with
# $q the sleep's pid and $s the killed process's start time.
kill_then_reuse() {
	rk computer exec d -- 'read -r p s </run/rakazo/desktop/2/'"$1"'.pid; kill -'"$2"' $p
		while kill -0 $p 2>/dev/null; do sleep 0.05; done
		setsid -f sleep 600 </dev/null >/dev/null 2>&1; sleep 0.2; q=$(pgrep -n -x sleep)
		'"$3"
}

@test "docker: a pid file naming some other live process (as in a replacement container) does not pass for x11vnc" {
	docker_d
	rk screen shot d --display 2 --json >/dev/null
	# x11vnc goes and leaves its socket; its pid now belongs to another process
	kill_then_reuse x11vnc TERM 'echo "$q $s" >/run/rakazo/desktop/2/x11vnc.pid'
	[ "$(rk computer exec d -- 'test -S /run/rakazo/vnc/2.sock && echo stale')" = stale ]
	# the display starts again, and its x11vnc is not taken as running (a
	# shot racing the holder's notice of the kill may fail once)
	rk screen shot d --display 2 --json >/dev/null 2>&1 || true
	run rk screen shot d --display 2 --json
	[ "$status" -eq 0 ]
	run rk computer exec d -- 'rakazo-desktop status 2'
	[[ $output == *"x11vnc running"* ]]
}

@test "docker: an X lock naming some other live process (as after a container restart) does not keep the display down" {
	docker_d
	rk screen shot d --display 2 --json >/dev/null
	# Xvfb dies without removing its lock, whose pid is now another process's
	kill_then_reuse xvfb KILL 'rm -f /tmp/.X2-lock; printf "%10d\n" $q >/tmp/.X2-lock'
	# the holder notices its screen went; then the display starts again
	wait_for 'rk screen shot d --display 2 --json >/dev/null 2>&1' 10
	run rk computer exec d -- 'rakazo-desktop status 2'
	[[ $output == *"xvfb running"* ]]
}

@test "docker: after stop and resume the first screen call works (no error from the stopped screen's holder)" {
	docker_d
	for i in 1 2 3; do
		rk screen shot d --display 2 --json >/dev/null
		rk computer stop d --wait --json >/dev/null
		rk computer resume d --wait --json >/dev/null
		run rk screen shot d --display 2 --json
		echo "$output"
		[ "$status" -eq 0 ]
	done
	grep -q "the screen went away, holder ends" "$RAKAZO_DATA_DIR/log/rakazo.log"
}

@test "docker: a shot names the active window and its title" {
	docker_xclient
	wait_for 'rk screen shot d --display 1 --json >"$BATS_TEST_TMPDIR/s.json" && [ "$(rk_json "d[\"active_window\"][\"title\"]" <"$BATS_TEST_TMPDIR/s.json")" = "rakazo test client" ]' 10
	[[ $(rk_json 'd["active_window"]["id"]' <"$BATS_TEST_TMPDIR/s.json") =~ ^0x[0-9a-f]+$ ]]
}

@test "docker: info and close on a real display" {
	docker_d
	run rk screen info d --display 2 --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[d["display"], d["transport"], d["width"], d["height"]]')" = '[2, "vnc", 1280, 800]' ]
	rk screen close d --display 2
	run rk computer exec d -- 'rakazo-desktop status 2'
	[[ $output == *"x11vnc stopped"* ]]
	[[ $output == *"xvfb stopped"* ]]
}
