#!/bin/sh
# The engine and providers never touch the terminal: no curses, no printf or
# puts, no stdout, no exit(). Comments are left out of the check.
cd "$(dirname "$0")/.."
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
# (rk_db_*, rk_sql_*), and no state or workspace-store header of their own
# (the store is local or S3: engine/machine/checkpoint.h picks it).
pat='(^|[^_a-zA-Z0-9])rk_(db|sql)_[a-z_0-9]+|#include *"engine/(state/(db[a-z_]*|sql)\.h|store/[^"]*)"'
cli=$(grep -nE "$pat" cmd/*.[ch] tui/*.[ch] 2>/dev/null | sed -e 's|/\*.*\*/||g' -e 's|//.*$||' |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*/?\*' | grep -E "$pat")
if [ -n "$cli" ]; then
	echo "layer check failed: cmd/ and tui/ call engine services, not rk_db_/rk_sql_ or engine/state/db*.h, sql.h, engine/store/*.h:"
	echo "$cli"
	exit 1
fi
echo "layer check: ok"
