#!/bin/sh
# The layer check (make layer-check, in make check after the build):
#   - the engine and providers never touch the terminal: no curses, no
#     printf or puts, no stdout, no exit() (comments are left out);
#   - only the SQL drivers include a database's client library, and SQL
#     text is in engine/state/ only;
#   - the wings' arrows point down: scripts/graph.py --check refuses an
#     include or a call into a higher wing, and any cycle of modules. Calls
#     are read from the objects in $BUILD (default build): build first.
# Usage: sh scripts/layer-check.sh [DIR]   (DIR: the tree, default this one)
# RK_LAYER_TEXT_ONLY=1 stops before the graph (see below).
scripts=$(cd "$(dirname "$0")" && pwd)
cd "${1:-$scripts/..}" || exit 2
bad=$(for f in engine/*/*.[ch] api/*.[ch] providers/*.[ch] providers/*/*.[ch]; do
	[ -f "$f" ] || continue
	sed -e 's|/\*.*\*/||g' -e 's|//.*$||' -e 's|^[[:space:]]*\*.*$||' -e 's|^[[:space:]]*/\*.*$||' "$f" |
		grep -nE '#include *<n?curses|(^|[^_a-z])(printf|puts|exit) *\(|\bstdout\b' |
		sed "s|^|$f:|"
done)
if [ -n "$bad" ]; then
	echo "layer check failed: the engine must not print, exit or use curses:"
	echo "$bad"
	exit 1
fi
# SQL goes through engine/state/sql.h: only its drivers include a database's client library.
drv=$(grep -lE '#include *<(sqlite3|libpq-fe)\.h>' engine/*/*.[ch] providers/*.[ch] \
	providers/*/*.[ch] cmd/*.[ch] tui/*.[ch] 2>/dev/null | grep -vxE 'engine/state/sql_(sqlite|pg)\.c')
if [ -n "$drv" ]; then
	echo "layer check failed: only engine/state/sql_sqlite.c and engine/state/sql_pg.c include sqlite3.h or libpq-fe.h:"
	echo "$drv"
	exit 1
fi
# cmd/ and tui/ are clients of the engine's services: no table access
# (rk_db_*, rk_sql_*, the token table's rk_api_token_* calls: tokens are
# engine/access/token.h), and no state or workspace-store header of their
# own (the store is local or S3: engine/machine/checkpoint.h picks it).
pat='(^|[^_a-zA-Z0-9])rk_((db|sql)_[a-z_0-9]+|api_token_(create|list|revoke|verify|live))\b|#include *"engine/(state/(db[a-z_]*|sql)\.h|store/[^"]*)"'
cli=$(grep -nE "$pat" cmd/*.[ch] tui/*.[ch] 2>/dev/null | sed -e 's|/\*.*\*/||g' -e 's|//.*$||' |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*/?\*' | grep -E "$pat")
if [ -n "$cli" ]; then
	echo "layer check failed: cmd/ and tui/ call engine services, not rk_db_/rk_sql_/rk_api_token_ table calls or engine/state/db*.h, sql.h, engine/store/*.h:"
	echo "$cli"
	exit 1
fi
# HTTP goes through engine/util/http.h: only engine/util/http.c includes libcurl.
crl=$(grep -lE '#include *<curl/' engine/*/*.[ch] api/*.[ch] providers/*.[ch] providers/*/*.[ch] \
	cmd/*.[ch] tui/*.[ch] 2>/dev/null | grep -vx 'engine/util/http.c')
if [ -n "$crl" ]; then
	echo "layer check failed: only engine/util/http.c includes curl (use engine/util/http.h):"
	echo "$crl"
	exit 1
fi
# SQL text lives in engine/state/ only: every other file, whatever its wing,
# calls its table-access functions (db.h, db_runs.h, db_team.h ...).
sql=$(grep -nE '(^|[^_a-z])(rk_db_prepare|rk_db_exec|rk_stmt_prepare_v2) *\(' engine/*/*.[ch] api/*.[ch] \
	providers/*.[ch] providers/*/*.[ch] cmd/*.[ch] tui/*.[ch] 2>/dev/null |
	grep -vE '^engine/state/')
if [ -n "$sql" ]; then
	echo "layer check failed: SQL belongs in engine/state/ (add a table-access function there and call it):"
	echo "$sql"
	exit 1
fi
# RK_LAYER_TEXT_ONLY=1: the text rules above only (tests/cli/layer_rules.bats
# checks them on copies of the tree, which have no objects to read calls from)
if [ -n "${RK_LAYER_TEXT_ONLY:-}" ]; then
	echo "layer check: text rules ok"
	exit 0
fi
build=${BUILD:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
if ! graph=$(python3 "$scripts/graph.py" --root . --build "$build" --check 2>&1); then
	echo "layer check failed: an upward edge or a cycle (the wing order is in scripts/graph.py):"
	echo "$graph" | sed -n '/^upward edges:/,$p'
	exit 1
fi
case $graph in *"calls not read"*)
	echo "layer check failed: calls are read from the objects in $build: build first (make)"
	exit 1
	;;
esac
echo "layer check: ok"
