#!/usr/bin/env bats
# The layer check's HTTP rule (issue 21): engine/util/http.c is the one file
# that includes curl; any other file of the engine, api/, providers/, cmd/ or
# tui/ that does fails `make layer-check`. Run on a copy of the sources.

setup() {
	root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	tree="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$tree"
	for d in engine api providers cmd tui scripts; do
		[ -d "$root/$d" ] && cp -r "$root/$d" "$tree/"
	done
}

@test "layer check: only engine/util/http.c includes curl" {
	run sh "$tree/scripts/layer-check.sh"
	[[ $output != *"only engine/util/http.c includes curl"* ]]
	grep -q '#include <curl/curl.h>' "$tree/engine/util/http.c"
}

@test "layer check: curl included elsewhere fails and names the file" {
	for f in providers/docker/api.c cmd/pair.c; do
		cp "$root/$f" "$tree/$f"
		sed -i '1i #include <curl/curl.h>' "$tree/$f"
		run sh "$tree/scripts/layer-check.sh"
		[ "$status" -ne 0 ]
		[[ $output == *"only engine/util/http.c includes curl"* ]]
		[[ $output == *"$f"* ]]
		cp "$root/$f" "$tree/$f"
	done
}
