#!/usr/bin/env bats
# Issue 20, items 5 and 6. Special files in a workspace (FIFOs, sockets,
# devices, links) never hang a read, an export or a checkpoint; and every
# import (computer import, checkpoint import) goes through the one archive
# reader, which refuses a hostile archive whole: nothing changes in the
# workspace and nothing lands outside it.

load helper

home_of() {
	rk computer show "$1" --json | rk_json 'd["home_key"]'
}

# A bound unix socket at $1 (the binding process exits; the node stays).
mksock() {
	python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$1"
}

# Runs the binary with a time bound: an old binary blocked here for ever.
rk_bounded() {
	run timeout 30 "$RAKAZO_BIN" "$@"
	if [ "$status" -eq 124 ]; then
		echo "rakazo $* did not return within 30 s" >&2
		return 1
	fi
}

# Every entry of a tree, with its type, mode, size and content hash: two
# equal digests mean nothing changed.
tree_digest() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
for dp, dns, fns in sorted(os.walk(root)):
    for n in sorted(dns + fns):
        p = os.path.join(dp, n)
        st = os.lstat(p)
        h = ""
        if stat.S_ISREG(st.st_mode):
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            h = os.readlink(p)
        print(os.path.relpath(p, root), oct(st.st_mode), st.st_uid, st.st_size if not stat.S_ISDIR(st.st_mode) else 0, h)
EOF
}

@test "a FIFO, a socket and a link to /etc/passwd in a workspace: file read answers at once, with what they are" {
	rk_fake t
	h=$RAKAZO_DATA_DIR/homes/$(home_of t)
	mkfifo "$h/pipe"
	mksock "$h/sock"
	ln -s /etc/passwd "$h/passwd"
	printf 'plain' >"$h/plain.txt"
	rk_bounded computer file read t pipe
	[ "$status" -eq 2 ]
	[[ $output == *"invalid_argument"*"pipe is not a regular file: it is a FIFO"* ]]
	rk_bounded computer file read t sock
	[ "$status" -eq 2 ]
	[[ $output == *"not a regular file: it is a socket"* ]]
	rk_bounded computer file read t passwd
	[ "$status" -eq 2 ]
	[[ $output == *"symbolic link"* ]]
	[[ $output != *root:* ]]
	rk_bounded computer file read t pipe --json
	[ "$status" -eq 2 ]
	[[ $output == *'"code":"invalid_argument"'* ]]
	# the regular file still reads, and the listing names them all
	[ "$(rk computer file read t plain.txt)" = plain ]
	rk_bounded computer file list t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'sorted(f["name"] for f in d)')" = '["passwd", "pipe", "plain.txt", "sock"]' ]
	# an export completes and leaves the FIFO and the socket out
	run timeout 30 bash -c '"$RAKAZO_BIN" computer export t | tar -tvf -'
	[ "$status" -eq 0 ]
	[[ $output == *plain.txt* ]]
	[[ $output != *pipe* ]]
	[[ $output != *sock* ]]
	# so does a checkpoint export of the live workspace
	run timeout 30 bash -c '"$RAKAZO_BIN" checkpoint export t --no-compress | tar -tf -'
	[ "$status" -eq 0 ]
	[[ $output == *plain.txt* ]]
	[[ $output != *pipe* ]]
}

@test "checkpoint create and stop complete with FIFOs and sockets in the workspace, and say they left them out" {
	rk computer create --provider fake --name t --revisions 3 --wait --json >/dev/null
	h=$RAKAZO_DATA_DIR/homes/$(home_of t)
	mkdir -p "$h/run"
	mkfifo "$h/run/pipe"
	mksock "$h/run/sock"
	printf 'kept' >"$h/kept.txt"
	rk_bounded checkpoint create t --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | rk_json 'd["kind"]')" = snapshot ]
	[ "$(printf '%s' "$output" | rk_json 'd["files"]')" = 1 ]
	[ "$(printf '%s' "$output" | rk_json 'd["skipped"]')" = 2 ]
	warn=$(printf '%s' "$output" | rk_json 'd["warnings"][0]')
	[[ $warn == *"left out 2 special files"* ]]
	[[ $warn == *"run/pipe (a FIFO)"* ]]
	[[ $warn == *"run/sock (a socket)"* ]]
	# the human form says so too
	rk_bounded checkpoint create t
	[ "$status" -eq 0 ]
	[[ $output == *"left out 2 special files"* ]]
	# stop checkpoints as well, and the revision remembers the count
	rk_bounded computer stop t --wait --json
	[ "$status" -eq 0 ]
	run rk checkpoint show t --json
	[ "$(printf '%s' "$output" | rk_json 'd["skipped"]')" = 2 ]
}

@test "docker: a FIFO read through the CLI and the API returns at once with the error" {
	docker_or_skip
	rk computer create --provider docker --name d --wait --json >/dev/null
	rk computer exec d -- 'mkfifo pipe /tmp/pipe2 && ln -s /etc/passwd passwd && printf ok >plain.txt' >/dev/null
	# in the workspace (read on the host side) and outside it (in the container)
	rk_bounded computer file read d pipe
	[ "$status" -eq 2 ]
	[[ $output == *"not a regular file"* ]]
	rk_bounded computer file read d /tmp/pipe2
	[ "$status" -eq 2 ]
	[[ $output == *"not a regular file"* ]]
	# a link to /etc/passwd reads the computer's own file, never the host's
	rk_bounded computer file read d passwd
	[ "$status" -eq 0 ]
	[ "$output" = "$(rk computer exec d -- 'cat /etc/passwd')" ]
	[ "$(rk computer file read d plain.txt)" = ok ]
	# the API route answers too (and its thread is free again: a second
	# request on the same server answers)
	( eval 'exec "$RAKAZO_BIN" serve --listen 127.0.0.1:0 --token-file "$BATS_TEST_TMPDIR/token" --url-file "$BATS_TEST_TMPDIR/url" >"$BATS_TEST_TMPDIR/serve.out" 2>&1' "$RK_CLOSE_FDS" ) &
	SERVE_PID=$!
	wait_for '[ -s "$BATS_TEST_TMPDIR/url" ]' 30
	url=$(cat "$BATS_TEST_TMPDIR/url")
	id=$(rk_id d)
	for i in 1 2; do
		code=$(curl -s --max-time 30 -o "$BATS_TEST_TMPDIR/reply" -w '%{http_code}' \
			-H "Authorization: Bearer $(cat "$BATS_TEST_TMPDIR/token")" "$url/v1/computers/$id/files?path=pipe")
		[ "$code" = 400 ] || { echo "HTTP $code: $(cat "$BATS_TEST_TMPDIR/reply")"; kill "$SERVE_PID"; false; }
		grep -q "not a regular file" "$BATS_TEST_TMPDIR/reply"
	done
	kill "$SERVE_PID"
	rk computer delete d --wait --json >/dev/null
}

# The hostile archives of the table, each beginning with a harmless file
# (a partial extraction would leave it behind).
make_hostile() {
	python3 - "$1" <<'EOF'
import gzip, io, sys, tarfile
d = sys.argv[1]
def f(n, data=b'x', mode=0o644):
    i = tarfile.TarInfo(n); i.size = len(data); i.mode = mode; return (i, data)
def l(n, target, kind=tarfile.SYMTYPE):
    i = tarfile.TarInfo(n); i.type = kind; i.linkname = target; return (i, None)
def dev(n, kind):
    i = tarfile.TarInfo(n); i.type = kind; i.devmajor = 1; i.devminor = 3; return (i, None)
first = f('new.txt', b'should not land')
cases = {
    'absolute': [f(d + '/slip-abs')],
    'dotdot': [f('a/../../slip-dotdot')],
    'symlink_abs': [l('ln', '/etc/passwd')],
    'symlink_out': [l('ln', '../../outside')],
    'symlink_chain': [l('a/b/l', '../..'), l('a/b/x', 'l/../../..')],
    'hardlink_abs': [l('hl', '/etc/passwd', tarfile.LNKTYPE)],
    'hardlink_out': [l('hl', '../outside', tarfile.LNKTYPE)],
    'hardlink_via_link': [l('up', '.'), l('hl', 'up/new.txt', tarfile.LNKTYPE)],
    'char_device': [dev('null', tarfile.CHRTYPE)],
    'block_device': [dev('disk', tarfile.BLKTYPE)],
    'fifo': [dev('pipe', tarfile.FIFOTYPE)],
    'through_link': [l('ln', 'sub'), f('ln/x')],
    'too_many': [f('many/%d' % k) for k in range(100)],
    'too_big': [f('big', b'y' * 20000)],
}
for name, members in cases.items():
    with tarfile.open(d + '/' + name + '.tar', 'w', format=tarfile.PAX_FORMAT) as t:
        for m, data in [first] + members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
# a compression bomb: 64 MiB of zeros in a few dozen KiB
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w') as t:
    m, data = f('zeros', b'\0' * (64 << 20))
    t.addfile(m, io.BytesIO(data))
open(d + '/bomb.tar.gz', 'wb').write(gzip.compress(buf.getvalue(), 9))
EOF
}

@test "hostile archives: computer import and checkpoint import refuse each whole and change nothing" {
	rk_fake live
	rk_fake down
	printf 'before' | rk computer file write live keep.txt -
	printf 'before' | rk computer file write down keep.txt -
	rk checkpoint create down --json >/dev/null
	rk computer stop down --wait --json >/dev/null
	a=$BATS_TEST_TMPDIR/archives
	mkdir -p "$a"
	make_hostile "$a"
	hl=$RAKAZO_DATA_DIR/homes/$(home_of live)
	hd=$RAKAZO_DATA_DIR/homes/$(home_of down)
	live0=$(tree_digest "$hl")
	down0=$(tree_digest "$hd")
	revs0=$(rk checkpoint list down --json | rk_json 'len(d)')
	homes0=$(ls -A "$RAKAZO_DATA_DIR/homes")
	export RAKAZO_IMPORT_LIMIT=10000 RAKAZO_IMPORT_MAX_ENTRIES=50
	for k in absolute dotdot symlink_abs symlink_out symlink_chain hardlink_abs hardlink_out hardlink_via_link \
		char_device block_device fifo through_link too_many too_big bomb; do
		f=$a/$k.tar
		[ -e "$f" ] || f=$a/$k.tar.gz
		for verb in "computer import live" "checkpoint import down"; do
			rk_bounded $verb "$f"
			echo "$verb $k: $status $output"
			[ "$status" -ne 0 ]
			case $k in
			too_*|bomb) [[ $output == *too_large* ]] ;;
			*) [[ $output == *invalid_argument* ]] ;;
			esac
		done
		[ "$(tree_digest "$hl")" = "$live0" ] || { echo "computer import of $k changed the workspace"; false; }
		[ "$(tree_digest "$hd")" = "$down0" ] || { echo "checkpoint import of $k changed the workspace"; false; }
	done
	unset RAKAZO_IMPORT_LIMIT RAKAZO_IMPORT_MAX_ENTRIES
	[ "$(rk checkpoint list down --json | rk_json 'len(d)')" = "$revs0" ]
	# nothing outside either, and no staging left behind
	[ ! -e "$a/slip-abs" ]
	[ ! -e "$RAKAZO_DATA_DIR/slip-dotdot" ]
	[ ! -e "$RAKAZO_DATA_DIR/homes/slip-dotdot" ]
	[ "$(ls -A "$RAKAZO_DATA_DIR/homes")" = "$homes0" ]
	[ "$(rk computer file read live keep.txt)" = before ]
}

@test "an import drops setuid, setgid and sticky bits and the archive's owners, and merges into the workspace" {
	rk_fake live
	rk_fake down
	rk computer stop down --wait --json >/dev/null
	printf 'old' | rk computer file write live keep.txt -
	printf 'old' | rk computer file write live replaced.txt -
	hl=$RAKAZO_DATA_DIR/homes/$(home_of live)
	hd=$RAKAZO_DATA_DIR/homes/$(home_of down)
	printf 'outside' >"$BATS_TEST_TMPDIR/outside"
	ln -s "$BATS_TEST_TMPDIR/outside" "$hl/link"
	python3 - "$BATS_TEST_TMPDIR/suid.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:
    def f(n, data, mode):
        i = tarfile.TarInfo(n); i.size = len(data); i.mode = mode; i.uid = 4242; i.gid = 4242
        i.uname = 'evil'; i.gname = 'evil'; t.addfile(i, io.BytesIO(data))
    d = tarfile.TarInfo('shared'); d.type = tarfile.DIRTYPE; d.mode = 0o3777; d.uid = 4242; t.addfile(d)
    f('shared/suid', b'#!/bin/sh\nid\n', 0o6755)
    f('replaced.txt', b'new', 0o644)
    f('link', b'not through the link', 0o644)
EOF
	rk_bounded computer import live "$BATS_TEST_TMPDIR/suid.tar"
	[ "$status" -eq 0 ]
	rk_bounded checkpoint import down "$BATS_TEST_TMPDIR/suid.tar" --json
	[ "$status" -eq 0 ]
	for h in "$hl" "$hd"; do
		[ "$(stat -c %a "$h/shared/suid")" = 755 ]
		[ "$(stat -c %a "$h/shared")" = 777 ]
		[ "$(stat -c %u "$h/shared/suid")" != 4242 ]
		[ "$(stat -c %u "$h/shared")" != 4242 ]
		[ "$(cat "$h/replaced.txt")" = new ]
	done
	# merged: what the workspace had stays; a link in the way is replaced, never written through
	[ "$(cat "$hl/keep.txt")" = old ]
	[ ! -L "$hl/link" ]
	[ "$(cat "$hl/link")" = "not through the link" ]
	[ "$(cat "$BATS_TEST_TMPDIR/outside")" = outside ]
}

@test "an archive that puts a file where the workspace has a directory is refused before anything moves" {
	rk_fake live
	printf 'inside' | rk computer file write live dir/inner.txt -
	hl=$RAKAZO_DATA_DIR/homes/$(home_of live)
	before=$(tree_digest "$hl")
	python3 - "$BATS_TEST_TMPDIR/clash.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], 'w') as t:
    for n in ('a-first.txt', 'dir'):
        i = tarfile.TarInfo(n); i.size = 1; t.addfile(i, io.BytesIO(b'x'))
EOF
	rk_bounded computer import live "$BATS_TEST_TMPDIR/clash.tar"
	[ "$status" -ne 0 ]
	[[ $output == *"where the workspace has a directory: dir"* ]]
	[ "$(tree_digest "$hl")" = "$before" ]
}

@test "docker: computer import and checkpoint import drop setuid bits and give the files to the computer's user; a device is refused" {
	docker_or_skip
	[ "$(id -u)" = 0 ] || skip "the host-side import runs as root"
	rk computer create --provider docker --name d --wait --json >/dev/null
	printf 'before' | rk computer file write d keep.txt -
	python3 - "$BATS_TEST_TMPDIR" <<'EOF2'
import io, sys, tarfile
d = sys.argv[1]
def f(n, data, mode):
    i = tarfile.TarInfo(n); i.size = len(data); i.mode = mode; i.uid = 0; i.gid = 0; i.uname = 'root'; return (i, data)
dev = tarfile.TarInfo('null'); dev.type = tarfile.CHRTYPE; dev.devmajor = 1; dev.devminor = 3
for name, members in {'suid': [f('rootshell', b'#!/bin/sh\nid -u\n', 0o4755)],
                      'device': [f('new.txt', b'x', 0o644), (dev, None)]}.items():
    with tarfile.open(d + '/' + name + '.tar', 'w', format=tarfile.PAX_FORMAT) as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
EOF2
	h=$RAKAZO_DATA_DIR/homes/$(home_of d)
	before=$(tree_digest "$h")
	rk_bounded computer import d "$BATS_TEST_TMPDIR/device.tar"
	[ "$status" -eq 2 ]
	[[ $output == *"a character device"* ]]
	[ "$(tree_digest "$h")" = "$before" ]
	rk_bounded computer import d "$BATS_TEST_TMPDIR/suid.tar"
	[ "$status" -eq 0 ]
	[ "$(rk computer exec d -- 'stat -c "%a %u" rootshell')" = "755 1000" ]
	[ "$(rk computer exec d -- './rootshell')" = 1000 ]
	# checkpoint import while stopped: the same reader, the same owner
	rk computer stop d --wait --json >/dev/null
	rk_bounded checkpoint import d "$BATS_TEST_TMPDIR/suid.tar" --json
	[ "$status" -eq 0 ]
	[ "$(stat -c '%a %u' "$h/rootshell")" = "755 1000" ]
	rk_bounded checkpoint import d "$BATS_TEST_TMPDIR/device.tar"
	[ "$status" -eq 2 ]
	[ ! -e "$h/new.txt" ]
	rk computer delete d --wait --json >/dev/null
}
