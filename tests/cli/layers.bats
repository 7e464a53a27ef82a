#!/usr/bin/env bats
# The layer check (scripts/graph.py --check, run by scripts/layer-check.sh
# in `make check`): on a tiny tree of its own, an upward include, an upward
# call and a cycle each fail it, naming the edge or the modules, and a tree
# whose arrows all point down passes; layer-check.sh runs it after its own
# checks and refuses to pass when the objects are not built.

GRAPH=$BATS_TEST_DIRNAME/../../scripts/graph.py

# put FILE TEXT: writes TEXT to $T/FILE (dirs made).
put() {
	mkdir -p "$T/$(dirname "$1")"
	printf '%s\n' "$2" >"$T/$1"
}

setup() {
	T=$BATS_TEST_TMPDIR/tree
	rm -rf "$T"
	mkdir -p "$T"
}

@test "layers: a tree whose arrows point down passes (exit 0)" {
	put engine/util/a.h 'int a(void);'
	put engine/util/a.c '#include "engine/util/a.h"
int a(void) { return 1; }'
	put engine/agent/b.h 'int b(void);'
	put engine/agent/b.c '#include "engine/agent/b.h"
#include "engine/util/a.h"
int b(void) { return a(); }'
	run python3 "$GRAPH" --root "$T" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"upward edges: 0"* ]]
	[[ "$output" == *"cycles: 0"* ]]
}

@test "layers: an upward include fails the check (exit 1) and names the edge" {
	put engine/util/a.c '#include "engine/agent/b.h"
int a(void) { return 1; }'
	put engine/agent/b.h 'int b(void);'
	run python3 "$GRAPH" --root "$T" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"upward edges: 1"* ]]
	[[ "$output" == *"engine/util/a -> engine/agent/b  (include: engine/util is below engine/agent)"* ]]
	# without --check it only reports
	run python3 "$GRAPH" --root "$T"
	[ "$status" -eq 0 ]
	[[ "$output" == *"engine/util/a -> engine/agent/b"* ]]
}

@test "layers: an upward call with no include fails the check once the objects are built" {
	command -v cc >/dev/null && command -v nm >/dev/null || skip "no cc or nm here"
	put engine/util/a.c 'int b(void);
int a(void) { return b(); }'
	put engine/agent/b.c 'int b(void) { return 2; }'
	mkdir -p "$T/build/engine/util" "$T/build/engine/agent"
	cc -c -o "$T/build/engine/util/a.o" "$T/engine/util/a.c"
	cc -c -o "$T/build/engine/agent/b.o" "$T/engine/agent/b.c"
	run python3 "$GRAPH" --root "$T" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"engine/util/a -> engine/agent/b  (call: engine/util is below engine/agent)"* ]]
	[[ "$output" != *"calls not read"* ]]
}

@test "layers: a cycle inside one wing fails the check (exit 1) and names its modules" {
	put engine/util/x.h 'int x(void);'
	put engine/util/x.c '#include "engine/util/x.h"
#include "engine/util/y.h"
int x(void) { return 0; }'
	put engine/util/y.h 'int y(void);'
	put engine/util/y.c '#include "engine/util/y.h"
#include "engine/util/x.h"
int y(void) { return 0; }'
	run python3 "$GRAPH" --root "$T" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"upward edges: 0"* ]]
	[[ "$output" == *"cycles: 1"* ]]
	[[ "$output" == *"2 modules: engine/util/x engine/util/y"* ]]
}

@test "layers: scripts/layer-check.sh runs the graph check after its own, on the tree it is given" {
	command -v cc >/dev/null && command -v nm >/dev/null || skip "no cc or nm here"
	LAYER_CHECK=$BATS_TEST_DIRNAME/../../scripts/layer-check.sh
	put engine/util/a.h 'int a(void);'
	put engine/util/a.c '#include "engine/util/a.h"
int a(void) { return 1; }'
	# not built: calls cannot be read, so the check refuses to pass
	run sh "$LAYER_CHECK" "$T"
	[ "$status" -eq 1 ]
	[[ "$output" == *"build first"* ]]
	mkdir -p "$T/build/engine/util"
	cc -c -iquote "$T" -o "$T/build/engine/util/a.o" "$T/engine/util/a.c"
	run sh "$LAYER_CHECK" "$T"
	[ "$status" -eq 0 ]
	[ "$output" = "layer check: ok" ]
	# an upward include
	put engine/agent/b.h 'int b(void);'
	put engine/util/a.c '#include "engine/util/a.h"
#include "engine/agent/b.h"
int a(void) { return 1; }'
	run sh "$LAYER_CHECK" "$T"
	[ "$status" -eq 1 ]
	[[ "$output" == *"engine/util/a -> engine/agent/b  (include: engine/util is below engine/agent)"* ]]
	# the old checks still run first: the engine never prints
	put engine/util/a.c '#include <stdio.h>
int a(void) { return printf("x"); }'
	run sh "$LAYER_CHECK" "$T"
	[ "$status" -eq 1 ]
	[[ "$output" == *"must not print"* ]]
}
