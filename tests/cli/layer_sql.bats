#!/usr/bin/env bats
# The layer check's SQL rule (issue 21): SQL text only in engine/state/,
# the machine and gateway files on its allow-list excepted. It runs on a copy
# of the tree with one file added; other rules of the check (added by others)
# may fail on a copy, so the passing cases look for this rule's message only.

load helper

# A copy of what the layer check reads, in $BATS_TEST_TMPDIR/tree.
copy_tree() {
	root=$BATS_TEST_DIRNAME/../..
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t"
	cp -r "$root/scripts" "$root/engine" "$root/api" "$root/providers" "$root/cmd" "$root/tui" "$t/"
}

@test "layer check: the tree as it is passes" {
	copy_tree
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"SQL belongs in engine/state/"* ]]
}

@test "layer check: SQL outside engine/state/ fails, naming the file; in engine/state/ it passes" {
	copy_tree
	for f in engine/access/sql_here.c cmd/sql_here.c api/sql_here.c engine/machine/sql_here.c; do
		printf 'static void f(void) { rk_db_prepare(0, "SELECT 1", 0); }\n' >"$t/$f"
		run sh "$t/scripts/layer-check.sh"
		[ "$status" -eq 1 ]
		[[ $output == *"SQL belongs in engine/state/"* ]]
		[[ $output == *"$f:1:"* ]]
		rm "$t/$f"
	done
	printf 'static void f(void) { rk_db_exec(0, "DELETE FROM x", 0); }\n' >"$t/engine/state/sql_here.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"SQL belongs in engine/state/"* ]]
}

@test "layer check: a file on the allow-list keeps its SQL until it moves" {
	copy_tree
	printf 'static void f(void) { rk_db_prepare(0, "SELECT 1", 0); }\n' >>"$t/engine/machine/idle.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"SQL belongs in engine/state/"* ]]
}
