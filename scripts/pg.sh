#!/bin/sh
# A throwaway PostgreSQL for tests: on a unix socket only (listen_addresses
# is empty: no TCP), its cluster and socket in DIR.
#   sh scripts/pg.sh start DIR    initdb (first time) and start; prints the
#                                 RAKAZO_DATABASE_URL to use
#   sh scripts/pg.sh stop DIR     stop it (the cluster stays in DIR)
# initdb and postgres refuse to run as root: as root they run as PG_USER
# (default nobody), which then owns DIR. The server's superuser is "rakazo",
# trusted on the socket, and the database is "rakazo".
set -eu
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	echo "usage: sh scripts/pg.sh start|stop DIR" >&2
	exit 2
fi
bin=${PG_BIN:-}
if [ -z "$bin" ]; then
	for b in /usr/lib/postgresql/*/bin; do
		[ -x "$b/initdb" ] && bin=$b
	done
fi
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
	echo "pg: PostgreSQL's server is not installed; run 'make deps' (installs postgresql)" >&2
	exit 1
fi
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u "${PG_USER:-nobody}" -- "$@"
	else
		"$@"
	fi
}
case $cmd in
start)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[ "$(id -u)" = 0 ] && chown "${PG_USER:-nobody}" "$dir"
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as "$bin/initdb" -D "$dir/data" -U rakazo --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
			cat "$dir/initdb.log" >&2
			exit 1
		}
	fi
	as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses='' -k $dir -c fsync=off -c full_page_writes=off -c max_connections=200" \
		start >/dev/null || {
		cat "$dir/server.log" >&2
		exit 1
	}
	as "$bin/psql" -h "$dir" -U rakazo -d postgres -qtAc "SELECT 1 FROM pg_database WHERE datname = 'rakazo'" |
		grep -q 1 || as "$bin/createdb" -h "$dir" -U rakazo rakazo
	echo "postgresql://rakazo@/rakazo?host=$dir"
	;;
stop)
	dir=$(cd "$dir" && pwd)
	[ -f "$dir/data/postmaster.pid" ] || exit 0
	as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	;;
*)
	echo "usage: sh scripts/pg.sh start|stop DIR" >&2
	exit 2
	;;
esac
