# Sourced by tests/run.sh and the bats suites: starts and stops the vendor
# emulators (tests/emulators/KIND/server.js) for the remote providers.
#
#   rk_emulator_up KIND    KIND is daytona or box. Starts the emulator on a free
#                          loopback port and exports its endpoint and key
#                          (DAYTONA_API_URL/DAYTONA_API_KEY, BOX_API_URL/
#                          BOX_API_KEY), so the provider becomes available.
#                          Returns 1 with a note on stderr when node, dockerd
#                          or the computer image is missing.
#   rk_emulators_down      stops every emulator started here; each removes
#                          the containers it made.
#
# RK_ROOT is the repository (default: the current directory).

rk_emulator_up() {
	_k=$1
	_root=${RK_ROOT:-.}
	if ! command -v node >/dev/null 2>&1; then
		echo "note: node is not installed: the $_k emulator is not started" >&2
		return 1
	fi
	if ! docker info >/dev/null 2>&1; then
		echo "note: dockerd is not reachable: the $_k emulator is not started" >&2
		return 1
	fi
	_img=${RAKAZO_IMAGE:-$(sh "$_root/image/build.sh" --tag)}
	if ! docker image inspect "$_img" >/dev/null 2>&1; then
		echo "note: image $_img is not built: the $_k emulator is not started" >&2
		return 1
	fi
	_pf=$(mktemp "${TMPDIR:-/tmp}/rakazo-emu-$_k.XXXXXX") || return 1
	rm -f "$_pf"
	node "$_root/tests/emulators/$_k/server.js" --image "$_img" --port-file "$_pf" \
		--key "emulator-$_k-key" >"$_pf.log" 2>&1 </dev/null &
	_pid=$!
	RK_EMULATOR_PIDS="${RK_EMULATOR_PIDS:-} $_pid"
	_i=0
	while [ ! -s "$_pf" ]; do
		_i=$((_i + 1))
		if [ $_i -ge 200 ] || ! kill -0 "$_pid" 2>/dev/null; then
			echo "note: the $_k emulator did not start:" >&2
			cat "$_pf.log" >&2
			return 1
		fi
		sleep 0.05
	done
	_url=$(cat "$_pf")
	rm -f "$_pf"
	case $_k in
	daytona)
		DAYTONA_API_URL="$_url/api"
		DAYTONA_API_KEY="emulator-$_k-key"
		DAYTONA_EMULATOR_URL=$_url
		export DAYTONA_API_URL DAYTONA_API_KEY DAYTONA_EMULATOR_URL
		;;
	box)
		BOX_API_URL="$_url/api/box/v1"
		BOX_API_KEY="emulator-$_k-key"
		BOX_EMULATOR_URL=$_url
		export BOX_API_URL BOX_API_KEY BOX_EMULATOR_URL
		;;
	esac
	return 0
}

rk_emulators_down() {
	for _p in ${RK_EMULATOR_PIDS:-}; do
		kill "$_p" 2>/dev/null
		_i=0
		while kill -0 "$_p" 2>/dev/null && [ $_i -lt 200 ]; do
			_i=$((_i + 1))
			sleep 0.05
		done
	done
	RK_EMULATOR_PIDS=
}

# For the bats suites (tests/cli/{daytona,box,remote_move}.bats):
#   rk_emulator_file_up KIND...   in setup_file: starts the emulators, keeps their
#                                 pids in BATS_FILE_TMPDIR and why one did not start
#   rk_emulator_file_down         in teardown_file
#   rk_emulator_require VAR...    in setup: skips (or fails with
#                                 RAKAZO_REQUIRE_DOCKER=1) unless each VAR is set
rk_emulator_file_up() {
	for _k in "$@"; do
		rk_emulator_up "$_k" 2>>"$BATS_FILE_TMPDIR/emulator.note" || break
	done
	echo "${RK_EMULATOR_PIDS:-}" >"$BATS_FILE_TMPDIR/pids"
}

rk_emulator_file_down() {
	RK_EMULATOR_PIDS=$(cat "$BATS_FILE_TMPDIR/pids" 2>/dev/null)
	rk_emulators_down
}

rk_emulator_require() {
	for _v in "$@"; do
		eval "_val=\${$_v:-}"
		[ -n "$_val" ] && continue
		_why=$(cat "$BATS_FILE_TMPDIR/emulator.note" 2>/dev/null)
		[ -n "$_why" ] || _why="the emulators need node, dockerd and the computer image"
		if [ "${RAKAZO_REQUIRE_DOCKER:-0}" = 1 ]; then
			echo "$_why (RAKAZO_REQUIRE_DOCKER=1)" >&2
			return 1
		fi
		skip "$_why"
	done
}
