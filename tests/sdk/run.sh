#!/bin/sh
# Fidelity: the vendors' official SDKs from npm run a scripted scenario
# against our emulators (create, run a command, write and read a file, take
# a screenshot, delete). If an SDK and an emulator disagree, the emulator is
# wrong.
#
#   sh tests/sdk/run.sh [setup|daytona|anthropic|openai]
#
# setup installs the SDKs (tests/sdk/setup.sh: tests/sdk/node_modules,
# git-ignored; .ci/run can call either); daytona (the default) runs tests/sdk/daytona.mjs against a fresh
# emulator. Box's SDK is not published on npm, so box has no SDK run.
# anthropic and openai run tests/sdk/anthropic.mjs or openai.mjs against
# the scripted model server (build/tests/emulators/model_server: make
# model-server first).
# Without node (or dockerd, or the image) it skips with a note, unless
# RAKAZO_REQUIRE_DOCKER=1, when that is a failure.
# Prints "sdk: N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
DEPS=$(pwd)/tests/sdk

skip() {
	echo "sdk: skipped: $1"
	if [ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ]; then
		echo "sdk: 0 passed, 1 failed"
		exit 1
	fi
	echo "sdk: 0 passed, 0 failed"
	exit 0
}

setup() {
	command -v npm >/dev/null 2>&1 || skip "npm is not installed"
	sh tests/sdk/setup.sh || skip "npm install of the SDKs (tests/sdk/package.json) failed"
}

case ${1:-daytona} in
setup)
	setup
	echo "sdk: setup done in $DEPS"
	;;
daytona)
	command -v node >/dev/null 2>&1 || skip "node is not installed"
	setup
	: "${RAKAZO_TEST_LABEL:=rakazo-sdk-$$}"
	export RAKAZO_TEST_LABEL
	. tests/emulators/daytona/emulator.sh
	rk_emulator_up daytona || skip "the daytona emulator cannot start"
	trap rk_emulators_down EXIT
	RAKAZO_SDK_DEPS=$DEPS node tests/sdk/daytona.mjs | tee "${TMPDIR:-/tmp}/rakazo-sdk.$$"
	line=$(grep '^sdk daytona:' "${TMPDIR:-/tmp}/rakazo-sdk.$$")
	rm -f "${TMPDIR:-/tmp}/rakazo-sdk.$$"
	echo "sdk: ${line#sdk daytona: }"
	case $line in *" 0 failed") exit 0 ;; *) exit 1 ;; esac
	;;
anthropic | openai)
	command -v node >/dev/null 2>&1 || skip "node is not installed"
	[ -x build/tests/emulators/model_server ] || skip "build/tests/emulators/model_server is not built (make model-server)"
	setup
	node "tests/sdk/$1.mjs" | tee "${TMPDIR:-/tmp}/rakazo-sdk.$$"
	line=$(grep "^sdk $1:" "${TMPDIR:-/tmp}/rakazo-sdk.$$")
	rm -f "${TMPDIR:-/tmp}/rakazo-sdk.$$"
	echo "sdk: ${line#sdk "$1": }"
	case $line in *" 0 failed") exit 0 ;; *) exit 1 ;; esac
	;;
*)
	echo "usage: sh tests/sdk/run.sh [setup|daytona|anthropic|openai]" >&2
	exit 2
	;;
esac
