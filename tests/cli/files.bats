#!/usr/bin/env bats
# Files in a computer's workspace, and export/import of the whole of it.

load helper

@test "binary round trip: all 256 byte values, compared with cmp" {
	rk_fake t
	python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)' >"$BATS_TEST_TMPDIR/bytes"
	rk computer file write t bin/all.bin "$BATS_TEST_TMPDIR/bytes" --json >/dev/null
	rk computer file read t bin/all.bin >"$BATS_TEST_TMPDIR/back"
	cmp "$BATS_TEST_TMPDIR/bytes" "$BATS_TEST_TMPDIR/back"
	rk computer file read t bin/all.bin -o "$BATS_TEST_TMPDIR/back2"
	cmp "$BATS_TEST_TMPDIR/bytes" "$BATS_TEST_TMPDIR/back2"
	# from stdin too
	rk computer file write t bin/stdin.bin <"$BATS_TEST_TMPDIR/bytes"
	rk computer file read t bin/stdin.bin | cmp "$BATS_TEST_TMPDIR/bytes" -
}

@test "--json read gives base64 for binary and utf8 for text" {
	rk_fake t
	python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))' >"$BATS_TEST_TMPDIR/bytes"
	rk computer file write t all.bin "$BATS_TEST_TMPDIR/bytes"
	printf 'héllo\n' | rk computer file write t text.txt
	run rk computer file read t all.bin --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["encoding"]')" = base64 ]
	[ "$(printf '%s' "$output" | rk_json 'd["size"]')" = 256 ]
	printf '%s' "$output" | python3 -c 'import json,sys,base64; assert base64.b64decode(json.load(sys.stdin)["content"]) == bytes(range(256))'
	run rk computer file read t text.txt --json
	[ "$(printf '%s' "$output" | rk_json 'd["encoding"]')" = utf8 ]
	[ "$(printf '%s' "$output" | rk_json 'd["content"]')" = "héllo" ]
	run rk computer file read t text.txt --json --encoding base64
	[ "$(printf '%s' "$output" | rk_json 'd["encoding"]')" = base64 ]
	expect_json_error 2 invalid_argument rk computer file read t all.bin --json --encoding utf8
	# --base64 input decodes
	printf 'aGk=' | rk computer file write t hi.txt --base64
	[ "$(rk computer file read t hi.txt)" = hi ]
}

@test "the executable bit shows in file list --json" {
	rk_fake t
	printf '#!/bin/sh\necho run\n' | rk computer file write t run.sh -x
	printf 'data' | rk computer file write t plain.txt
	run rk computer file list t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json '[f["executable"] for f in d if f["name"]=="run.sh"][0]')" = true ]
	[ "$(printf '%s' "$output" | rk_json '[f.get("executable", False) for f in d if f["name"]=="plain.txt"][0]')" = false ]
	[ "$(printf '%s' "$output" | rk_json '[f["size"] for f in d if f["name"]=="plain.txt"][0]')" = 4 ]
	[ "$(rk computer exec t --json -- ./run.sh | rk_json 'd["output"]')" = run ]
}

@test "--max-bytes refuses a larger file" {
	rk_fake t
	printf 'abcdef' | rk computer file write t six.txt
	expect_json_error 1 too_large rk computer file read t six.txt --max-bytes 4 --json
	[ "$(rk_json 'd["error"]["message"]' <"$BATS_TEST_TMPDIR/stderr")" = "computer file exceeds 4 bytes" ]
	run rk computer file read t six.txt --max-bytes 6
	[ "$output" = abcdef ]
}

@test "remove a file; removing it again is not_found" {
	rk_fake t
	printf 'x' | rk computer file write t gone.txt
	run rk computer file remove t gone.txt --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["removed"]')" = true ]
	[ "$(rk computer file list t --json | rk_json 'len([f for f in d if f["name"]=="gone.txt"])')" = 0 ]
	expect_json_error 3 not_found rk computer file read t gone.txt --json
	expect_json_error 3 not_found rk computer file remove t gone.txt --json
}

@test "export then import into another computer keeps bytes and the exec bit" {
	rk_fake a
	rk_fake b
	python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))' >"$BATS_TEST_TMPDIR/bytes"
	rk computer file write a dir/all.bin "$BATS_TEST_TMPDIR/bytes"
	printf '#!/bin/sh\necho ok\n' | rk computer file write a dir/tool.sh -x
	rk computer export a -o "$BATS_TEST_TMPDIR/a.tar"
	run tar -tvf "$BATS_TEST_TMPDIR/a.tar"
	[ "$status" -eq 0 ]
	[[ $output == *dir/all.bin* ]]
	[[ $output =~ -rwx[-r][-w][-x].*dir/tool.sh ]]
	rk computer export a | cmp -s - "$BATS_TEST_TMPDIR/a.tar" || rk computer export a | tar -tf - | grep -q dir/tool.sh
	rk computer import b "$BATS_TEST_TMPDIR/a.tar"
	rk computer file read b dir/all.bin | cmp "$BATS_TEST_TMPDIR/bytes" -
	[ "$(rk computer file list b dir --json | rk_json '[f["executable"] for f in d if f["name"]=="tool.sh"][0]')" = true ]
	[ "$(rk computer exec b --json -- ./dir/tool.sh | rk_json 'd["output"]')" = ok ]
	# import from stdin
	rk_fake c
	rk computer import c - <"$BATS_TEST_TMPDIR/a.tar"
	rk computer file read c dir/all.bin | cmp "$BATS_TEST_TMPDIR/bytes" -
}

@test "import of a tar that climbs out of the workspace is refused" {
	rk_fake t
	python3 - "$BATS_TEST_TMPDIR/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    info = tarfile.TarInfo("../escape.txt")
    data = b"evil"
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
PY
	run rk computer import t "$BATS_TEST_TMPDIR/evil.tar" --json
	[ "$status" -ne 0 ]
	[ ! -e "$RAKAZO_DATA_DIR/homes/escape.txt" ]
	[ -z "$(find "$RAKAZO_DATA_DIR" -name escape.txt)" ]
}

@test "an output named with -o that is a FIFO or a device is written in place, never replaced (screen shot, file read, export)" {
	rk_fake t
	printf 'hello' | rk computer file write t note.txt -
	local fifo=$BATS_TEST_TMPDIR/out.fifo
	mkfifo "$fifo"
	cat "$fifo" >"$BATS_TEST_TMPDIR/shot.png" &
	rk screen shot t -o "$fifo" >/dev/null
	wait $!
	[ -p "$fifo" ]
	[ "$(head -c 8 "$BATS_TEST_TMPDIR/shot.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	cat "$fifo" >"$BATS_TEST_TMPDIR/note" &
	rk computer file read t note.txt -o "$fifo" >/dev/null
	wait $!
	[ -p "$fifo" ] && [ "$(cat "$BATS_TEST_TMPDIR/note")" = hello ]
	cat "$fifo" >"$BATS_TEST_TMPDIR/home.tar.zst" &
	rk checkpoint export t -o "$fifo"
	wait $!
	[ -p "$fifo" ]
	zstd -dc "$BATS_TEST_TMPDIR/home.tar.zst" | tar -tf - | grep -qx 'note.txt\|./note.txt'
	# and the real one: /dev/null stays the device
	rk screen shot t -o /dev/null >/dev/null
	[ -c /dev/null ]
}
