#!/usr/bin/env bats
# The layer check's client rule (issue 21): cmd/ and tui/ are clients of the
# engine's services. A call to rk_db_* or rk_sql_*, or an include of
# engine/state/db*.h, sql.h or engine/store/*.h there, fails the check and
# names the line. It runs on a copy of the tree; other rules of the check
# (added by others) may fail on a copy, so the passing cases look for this
# rule's message only.

load helper

MSG="cmd/ and tui/ call engine services"

copy_tree() {
	root=$BATS_TEST_DIRNAME/../..
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t"
	cp -r "$root/scripts" "$root/engine" "$root/api" "$root/providers" "$root/cmd" "$root/tui" "$t/"
}

@test "layer check: the clients as they are pass the client rule" {
	copy_tree
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$MSG"* ]]
}

@test "layer check: cmd/ and tui/ may not call rk_db_ or rk_sql_" {
	copy_tree
	printf 'int f(void) { return rk_db_computer_list(0, 0, 0, 0); }\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"$MSG"* && $output == *"cmd/x.c:1:"* ]]
	rm "$t/cmd/x.c"
	printf 'const char *v(void) { return rk_sql_url(); }\n' >"$t/tui/y.c"
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"$MSG"* && $output == *"tui/y.c:1:"* ]]
	# a service of the engine is fine, and so is a comment naming rk_db_
	printf 'int f(void) { return rk_computer_list(0, 0, 0, 0); } /* not rk_db_computer_list */\n' >"$t/tui/y.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$MSG"* ]]
}

@test "layer check: cmd/ and tui/ may not include engine/state/db*.h, sql.h or engine/store/*.h" {
	copy_tree
	local h
	for h in engine/state/db.h engine/state/db_runs.h engine/state/sql.h engine/store/workspace.h; do
		printf '#include "%s"\n' "$h" >"$t/cmd/x.c"
		run sh "$t/scripts/layer-check.sh"
		[ "$status" -eq 1 ]
		[[ $output == *"$MSG"* && $output == *"cmd/x.c:1:"* ]]
	done
	printf '#include "engine/state/engine.h"\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$MSG"* ]]
}
