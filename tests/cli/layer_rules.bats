#!/usr/bin/env bats
# The layer check's text rules (issue 21), each on a copy of the tree with
# one file added or changed (scripts/layer-check.sh DIR):
#   - SQL text only in engine/state/, in no file of any other wing;
#   - engine/util/http.c is the one file that includes curl;
#   - cmd/ and tui/ call engine services: no rk_db_*/rk_sql_, no state or
#     store header.
# The graph (it needs built objects) is left out on a copy
# (RK_LAYER_TEXT_ONLY=1; tests/cli/layers.bats checks it on the real tree),
# and a passing case still looks for the absence of its own rule's message.


CLIENT_MSG="cmd/ and tui/ call engine services"

setup() {
	export RK_LAYER_TEXT_ONLY=1
	root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t"
	cp -r "$root/scripts" "$root/engine" "$root/api" "$root/providers" "$root/cmd" "$root/tui" "$t/"
}

@test "layer check: the tree as it is passes" {
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"SQL belongs in engine/state/"* ]]
}

@test "layer check: SQL outside engine/state/ fails, naming the file; in engine/state/ it passes" {
	# (cmd/ and tui/ meet the client rule first: see the last tests)
	for f in engine/access/sql_here.c api/sql_here.c engine/machine/sql_here.c; do
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

@test "layer check: no file is let off the SQL rule (the machine and gateway files that once were)" {
	local f call
	for f in engine/machine/team.c engine/machine/reservation.c engine/machine/idle.c engine/machine/session.c \
		engine/machine/worker.c engine/gateway/gateway.c; do
		for call in 'rk_db_prepare(0, "SELECT 1", 0)' 'rk_db_exec(0, "DELETE FROM x", 0)' \
			'rk_stmt_prepare_v2(0, "SELECT 1", -1, 0, 0)'; do
			cp "$root/$f" "$t/$f"
			printf 'static void sql_here(void) { %s; }\n' "$call" >>"$t/$f"
			run sh "$t/scripts/layer-check.sh"
			[ "$status" -eq 1 ]
			[[ $output == *"SQL belongs in engine/state/"* ]]
			[[ $output == *"$f:"* ]]
		done
		cp "$root/$f" "$t/$f"
	done
}

@test "layer check: only engine/util/http.c includes curl" {
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"only engine/util/http.c includes curl"* ]]
	grep -q '#include <curl/curl.h>' "$t/engine/util/http.c"
}

@test "layer check: curl included elsewhere fails and names the file" {
	for f in providers/docker/api.c cmd/pair.c; do
		cp "$root/$f" "$t/$f"
		sed -i '1i #include <curl/curl.h>' "$t/$f"
		run sh "$t/scripts/layer-check.sh"
		[ "$status" -ne 0 ]
		[[ $output == *"only engine/util/http.c includes curl"* ]]
		[[ $output == *"$f"* ]]
		cp "$root/$f" "$t/$f"
	done
}

@test "layer check: the clients as they are pass the client rule" {
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$CLIENT_MSG"* ]]
}

@test "layer check: cmd/ and tui/ may not call rk_db_, rk_sql_ or the token table" {
	printf 'int f(void) { return rk_db_computer_list(0, 0, 0, 0); }\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"$CLIENT_MSG"* && $output == *"cmd/x.c:1:"* ]]
	rm "$t/cmd/x.c"
	printf 'const char *v(void) { return rk_sql_url(); }\n' >"$t/tui/y.c"
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"$CLIENT_MSG"* && $output == *"tui/y.c:1:"* ]]
	rm "$t/tui/y.c"
	# the token table too: tokens are engine/access/token.h's service
	printf 'int f(void) { return rk_api_token_verify(0, "s", 0, 0); }\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[ "$status" -eq 1 ]
	[[ $output == *"$CLIENT_MSG"* && $output == *"cmd/x.c:1:"* ]]
	printf 'int f(void) { return rk_token_verify(0, "s", 0, 0); }\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$CLIENT_MSG"* ]]
	rm "$t/cmd/x.c"
	# a service of the engine is fine, and so is a comment naming rk_db_
	printf 'int f(void) { return rk_computer_list(0, 0, 0, 0); } /* not rk_db_computer_list */\n' >"$t/tui/y.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$CLIENT_MSG"* ]]
}

@test "layer check: cmd/ and tui/ may not include engine/state/db*.h, sql.h or engine/store/*.h" {
	local h
	for h in engine/state/db.h engine/state/db_runs.h engine/state/sql.h engine/store/workspace.h; do
		printf '#include "%s"\n' "$h" >"$t/cmd/x.c"
		run sh "$t/scripts/layer-check.sh"
		[ "$status" -eq 1 ]
		[[ $output == *"$CLIENT_MSG"* && $output == *"cmd/x.c:1:"* ]]
	done
	printf '#include "engine/state/engine.h"\n' >"$t/cmd/x.c"
	run sh "$t/scripts/layer-check.sh"
	[[ $output != *"$CLIENT_MSG"* ]]
}
