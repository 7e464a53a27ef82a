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
# HTTP goes through engine/util/http.h: only engine/util/http.c includes libcurl.
crl=$(grep -lE '#include *<curl/' engine/*/*.[ch] api/*.[ch] providers/*.[ch] providers/*/*.[ch] \
	cmd/*.[ch] tui/*.[ch] 2>/dev/null | grep -vx 'engine/util/http.c')
if [ -n "$crl" ]; then
	echo "layer check failed: only engine/util/http.c includes curl (use engine/util/http.h):"
	echo "$crl"
	exit 1
fi
echo "layer check: ok"
