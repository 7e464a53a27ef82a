#!/bin/sh
# make bench [BENCH=NAME]: runs every benchmark program in $BUILD/tests/bench
# and prints its `bench: NAME ours=... base=... ratio=...` lines. With a name,
# only that figure (programs read RAKAZO_BENCH and skip the rest).
BUILD=${BUILD:-build}
want=${1:-}
export RAKAZO_BENCH="$want"
found=0
status=0
for b in "$BUILD"/tests/bench/*; do
	[ -x "$b" ] || continue
	[ -f "$b" ] || continue
	case "$b" in *.d|*.o) continue ;; esac
	out=$("$b" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && { echo "$out"; echo "bench: $(basename "$b") failed with status $rc" >&2; status=1; continue; }
	if [ -n "$want" ]; then
		lines=$(printf '%s\n' "$out" | grep -E "^bench: $want( |$)")
	else
		lines=$(printf '%s\n' "$out" | grep -E '^(bench:|skip:)')
	fi
	[ -n "$lines" ] && { printf '%s\n' "$lines"; found=1; }
done
if [ "$found" = 0 ]; then
	echo "bench: no figure${want:+ named $want} was produced" >&2
	exit 1
fi
exit $status
