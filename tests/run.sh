#!/bin/sh
# The one test command's driver: sh tests/run.sh [unit|cli|security|conformance|pg]
#
#   unit         every $BUILD/tests/unit/test_* (each ends "unit: N passed, N failed")
#   conformance  $BUILD/tests/conformance/conformance PROVIDER for each provider
#                `rakazo computer providers --json` calls available (with the
#                E2B emulator started for e2b when node and dockerd are here),
#                then daytona and box against their emulators
#   cli          bats --tap tests/cli
#   security     bats --tap tests/security (the threat model's tests, SECURITY.md)
#   pg           the state's unit tests and state-heavy bats suites again on a
#                throwaway PostgreSQL (scripts/pg.sh), each test in a database
#                of its own (RAKAZO_TEST_PG; tests/cli/helper.bash)
#
# Each suite's output is shown as it runs; the last line is the sum,
# "N passed, N failed[, N skipped]". Exits non-zero when anything failed or
# a suite ended without its closing line (a crash), or ran past the timeout.
#
# Environment: RAKAZO_BIN (default ./$BUILD/rakazo), BUILD (default build),
# RAKAZO_TEST_TIMEOUT (seconds per suite run, default 1500: each half of
# bats over tests/cli takes about 14 minutes on a 2-core machine),
# RAKAZO_REQUIRE_DOCKER=1: a provider whose backend should be up (docker; the
# e2b, daytona and box emulators when node and the computer image are here)
# but is reported unavailable, or whose emulator does not start, is a failure
# instead of a note.

BUILD=${BUILD:-build}
RAKAZO_BIN=${RAKAZO_BIN:-./$BUILD/rakazo}
case $RAKAZO_BIN in /*) ;; *) RAKAZO_BIN=$(pwd)/$RAKAZO_BIN ;; esac
export RAKAZO_BIN BUILD
: "${RAKAZO_TEST_LABEL:=rakazo-test-$$}"
export RAKAZO_TEST_LABEL
limit=${RAKAZO_TEST_TIMEOUT:-1500}
what=${1:-all}

case $what in
all | unit | cli | security | conformance | pg) ;;
*)
	echo "usage: sh tests/run.sh [unit|cli|security|conformance|pg]" >&2
	exit 2
	;;
esac

passed=0
failed=0
skipped=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rakazo-run.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# run NAME CMD...: runs CMD under the timeout, its output shown and kept in
# $tmp/out, its exit status in $rc.
run() {
	name=$1
	shift
	{
		timeout --kill-after=10 "$limit" "$@" 2>&1
		echo $? >"$tmp/rc"
	} | tee "$tmp/out"
	rc=$(cat "$tmp/rc")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "run.sh: $name did not finish in ${limit}s" >&2
	fi
}

# counts PREFIX: adds the last "PREFIX: N passed, N failed" line of $tmp/out;
# a missing line (a crash, a timeout) counts as one failure.
counts() {
	line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$tmp/out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "run.sh: $name ended without its '$1: N passed, N failed' line (status $rc)" >&2
		failed=$((failed + 1))
		return
	fi
	p=$(echo "$line" | sed -E 's/^[^:]*: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then
		echo "run.sh: $name reported no failure but exited with status $rc" >&2
		failed=$((failed + 1))
	fi
}

suite_unit() {
	found=0
	for t in "$BUILD"/tests/unit/test_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		case $t in *.d | *.o) continue ;; esac
		found=1
		run "$t" "$t"
		counts unit
	done
	[ $found -eq 1 ] || echo "run.sh: no unit tests in $BUILD/tests/unit (make test-bins)" >&2
}

# The docker socket: DOCKER_HOST's when it is unix://, else the default.
docker_sock() {
	case ${DOCKER_HOST:-} in
	unix://*) echo "${DOCKER_HOST#unix://}" ;;
	*) echo /var/run/docker.sock ;;
	esac
}

docker_up() {
	curl -sf --max-time 5 --unix-socket "$(docker_sock)" http://localhost/_ping >/dev/null 2>&1
}

# Can the vendor emulators run here (node, dockerd and the computer image)?
emulators_possible() {
	command -v node >/dev/null 2>&1 || return 1
	docker_up || return 1
	img=${RAKAZO_IMAGE:-$(sh image/build.sh --tag 2>/dev/null)}
	[ -n "$img" ] && curl -sf --max-time 5 --unix-socket "$(docker_sock)" \
		"http://localhost/images/$img/json" >/dev/null 2>&1
}

# missing WHAT: a backend that should be up is not. A failure with
# RAKAZO_REQUIRE_DOCKER=1, else a note.
missing() {
	if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
		echo "run.sh: $1 (RAKAZO_REQUIRE_DOCKER=1): counted as a failure" >&2
		failed=$((failed + 1))
	else
		echo "run.sh: note: $1: skipped"
	fi
}

# provider_field JSON NAME FIELD: "true" for an available provider, or its
# "reason" string, from `rakazo computer providers --json`.
provider_field() {
	echo "$1" | awk -v want="$2" -v field="$3" '{
		n = split($0, a, "{\"name\":\"")
		for (i = 2; i <= n; i++) {
			name = a[i]
			sub(/".*/, "", name)
			if (name != want) continue
			if (field == "available") { print (a[i] ~ /"available":true/) ? "true" : "false"; exit }
			if (match(a[i], /"reason":"[^"]*"/)) print substr(a[i], RSTART + 10, RLENGTH - 11)
			exit
		}
	}'
}

suite_conformance() {
	bin=$BUILD/tests/conformance/conformance
	if [ ! -x "$bin" ]; then
		echo "run.sh: note: $bin is not built yet; conformance skipped"
		return
	fi
	# the E2B emulator stands in for the vendor, unless a real key is set
	e2b_pid=
	if [ -z "${E2B_API_KEY:-}" ] && emulators_possible; then
		if url=$(sh tests/emulators/e2b/start.sh "$tmp/e2b"); then
			e2b_pid=$(cat "$tmp/e2b/e2b-emulator.pid")
			export E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY=e2b_emulator_key E2B_DOMAIN=emulator.invalid
		else
			missing "the e2b emulator did not start"
		fi
	fi
	json=$("$RAKAZO_BIN" computer providers --json) || {
		echo "run.sh: '$RAKAZO_BIN computer providers --json' failed" >&2
		failed=$((failed + 1))
		return
	}
	providers=$(echo "$json" | awk '{
		n = split($0, a, "{\"name\":\"")
		for (i = 2; i <= n; i++) {
			name = a[i]
			sub(/".*/, "", name)
			if (a[i] ~ /"available":true/) print name
		}
	}')
	if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ] && [ "$(provider_field "$json" docker available)" != true ]; then
		missing "provider docker is unavailable: $(provider_field "$json" docker reason)"
	fi
	if [ -n "$e2b_pid" ] && [ "$(provider_field "$json" e2b available)" != true ]; then
		missing "provider e2b is unavailable with its emulator running: $(provider_field "$json" e2b reason)"
	fi
	for p in $providers; do
		run "conformance $p" "$bin" "$p"
		counts conformance
	done
	if [ -n "$e2b_pid" ]; then
		kill "$e2b_pid" 2>/dev/null
		unset E2B_API_URL E2B_SANDBOX_URL E2B_API_KEY E2B_DOMAIN
	fi
	suite_conformance_emulated
}

# The remote providers against their vendor emulators (when node, dockerd
# and the image are here; else a note and nothing run).
suite_conformance_emulated() {
	. tests/emulators/daytona/emulator.sh
	wanted=0
	emulators_possible && wanted=1
	for k in daytona box; do
		[ -f "tests/emulators/$k/server.js" ] || continue
		if rk_emulator_up "$k"; then
			pj=$("$RAKAZO_BIN" computer providers --json)
			if [ "$(provider_field "$pj" "$k" available)" = true ]; then
				run "conformance $k (emulator)" "$bin" "$k"
				counts conformance
			else
				missing "provider $k is unavailable with its emulator running: $(provider_field "$pj" "$k" reason)"
			fi
		elif [ $wanted -eq 1 ]; then
			missing "the $k emulator did not start although node, dockerd and the image are here"
		fi
		rk_emulators_down
		unset DAYTONA_API_URL DAYTONA_API_KEY DAYTONA_EMULATOR_URL BOX_API_URL BOX_API_KEY BOX_EMULATOR_URL
	done
}

suite_cli() {
	if ! command -v bats >/dev/null 2>&1; then
		echo "run.sh: bats is not installed (apt-get install bats)" >&2
		failed=$((failed + 1))
		return
	fi
	# two bats runs, each under its own timeout: all of tests/cli in one
	# run outgrew it on a 2-core machine (about 27 minutes); every other
	# file goes to each half, so both take about as long
	set -- tests/cli/*.bats
	half1="" half2="" i=0
	for f; do
		if [ $((i % 2)) -eq 0 ]; then half1="$half1 $f"; else half2="$half2 $f"; fi
		i=$((i + 1))
	done
	# shellcheck disable=SC2086 # the halves are lists of paths without blanks
	suite_bats "bats tests/cli (1 of 2)" $half1
	# shellcheck disable=SC2086
	suite_bats "bats tests/cli (2 of 2)" $half2
}

# The attacks of SECURITY.md's threat model, one file per item.
suite_security() {
	command -v bats >/dev/null 2>&1 || return
	set -- tests/security/*.bats
	[ -f "$1" ] || return
	suite_bats "bats tests/security" "$@"
}

# suite_bats NAME FILE...: bats over the files, its TAP counted.
suite_bats() {
	name=$1
	shift
	# the bats helpers call python3 often: find the real interpreter once
	RK_PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	export RK_PYTHON
	run "$name" bats --tap "$@"
	ok=$(grep -E '^ok ' "$tmp/out" | grep -vcE '^ok [0-9]+ .*# skip')
	sk=$(grep -cE '^ok [0-9]+ .*# skip' "$tmp/out")
	no=$(grep -cE '^not ok ' "$tmp/out")
	plan=$(grep -E '^1\.\.[0-9]+$' "$tmp/out" | head -n 1 | sed 's/^1\.\.//')
	passed=$((passed + ok))
	failed=$((failed + no))
	skipped=$((skipped + sk))
	ran=$((ok + sk + no))
	if [ -z "$plan" ]; then
		echo "run.sh: bats printed no plan (status $rc)" >&2
		failed=$((failed + 1))
	elif [ "$ran" -lt "$plan" ]; then
		echo "run.sh: bats ended after $ran of $plan tests (status $rc)" >&2
		failed=$((failed + plan - ran))
	elif [ "$no" -eq 0 ] && [ "$rc" -ne 0 ]; then
		echo "run.sh: bats exited with status $rc" >&2
		failed=$((failed + 1))
	fi
}

# The state on PostgreSQL: these units and suites again, on a server of its own.
PG_UNITS="test_state test_team test_trust test_api"
PG_SUITES="lifecycle leases sessions team status crash workers run_resume"

suite_pg() {
	pgdir=$(mktemp -d "${TMPDIR:-/tmp}/rakazo-pg.XXXXXX") || return
	if ! sh scripts/pg.sh start "$pgdir" >"$tmp/pg.out" 2>&1; then
		cat "$tmp/pg.out" >&2
		missing "PostgreSQL did not start (make deps installs it)"
		rm -rf "$pgdir"
		return
	fi
	for t in $PG_UNITS; do
		[ -x "$BUILD/tests/unit/$t" ] || continue
		run "$t (PostgreSQL)" env RAKAZO_TEST_PG="$pgdir" "$BUILD/tests/unit/$t"
		counts unit
	done
	files=
	for f in $PG_SUITES; do files="$files tests/cli/$f.bats"; done
	# the kill -9 rounds ran 50 times on SQLite already; 20 here
	export RAKAZO_TEST_PG="$pgdir" RK_CRASH_ROUNDS="${RK_CRASH_ROUNDS:-20}"
	# shellcheck disable=SC2086
	suite_bats "bats on PostgreSQL" $files
	unset RAKAZO_TEST_PG RK_CRASH_ROUNDS
	sh scripts/pg.sh stop "$pgdir" >/dev/null 2>&1
	rm -rf "$pgdir"
}

case $what in
all)
	suite_unit
	suite_conformance
	suite_cli
	suite_security
	suite_pg
	;;
unit) suite_unit ;;
conformance) suite_conformance ;;
cli) suite_cli ;;
security) suite_security ;;
pg) suite_pg ;;
esac

if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
