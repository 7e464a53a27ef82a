#!/usr/bin/env bats
# The layer check (scripts/layer-check.sh, issue 21): cmd/ and tui/ are
# clients of the engine's services. A tree with one offending line fails
# the check and names it; the same tree without it passes.

load helper

# A copy of the check over a tree of its own holding one cmd/ file.
layer_tree() {
	local t=$BATS_TEST_TMPDIR/tree
	rm -rf "$t"
	mkdir -p "$t/scripts" "$t/cmd" "$t/tui"
	cp "$BATS_TEST_DIRNAME/../../scripts/layer-check.sh" "$t/scripts/"
	printf '%s\n' "$1" >"$t/$2"
	echo "$t"
}

@test "layer check: cmd/ and tui/ may not call rk_db_ or rk_sql_" {
	local t
	t=$(layer_tree 'int f(void) { return rk_db_computer_list(0, 0, 0, 0); }' cmd/x.c)
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"cmd/x.c:1:"* ]]
	t=$(layer_tree 'const char *v(void) { return rk_sql_url(); }' tui/y.c)
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"tui/y.c:1:"* ]]
	# a service of the engine is fine, and so is a comment naming rk_db_
	t=$(layer_tree 'int f(void) { return rk_computer_list(0, 0, 0, 0); } /* not rk_db_computer_list */' cmd/x.c)
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 0 ]
}

@test "layer check: cmd/ and tui/ may not include engine/state/db*.h, sql.h or engine/store/*.h" {
	local t h
	for h in engine/state/db.h engine/state/db_runs.h engine/state/sql.h engine/store/workspace.h; do
		t=$(layer_tree "#include \"$h\"" cmd/x.c)
		run sh "$t/scripts/layer-check.sh"
		[ "$status" -eq 1 ]
		[[ $output == *"cmd/x.c:1:"* ]]
	done
	t=$(layer_tree '#include "engine/state/engine.h"' tui/y.c)
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 0 ]
}
