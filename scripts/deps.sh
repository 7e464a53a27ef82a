#!/bin/sh
# Installs the Debian packages rakazo's build, tests, lint and benchmarks need.
# Idempotent: packages already present are not touched, and apt is only
# asked when something is missing.
set -eu

BUILD="build-essential pkg-config libcurl4-openssl-dev libcjson-dev libsodium-dev
libarchive-dev libvncserver-dev libncurses-dev libsqlite3-dev libreadline-dev
libpng-dev libjpeg62-turbo-dev libzstd-dev libmicrohttpd-dev libwebsockets-dev libpq-dev"
RUNTIME="docker.io debootstrap zstd ca-certificates curl sqlite3 bats tar procps
postgresql python3 tmux xvfb x11vnc python3-tk xdotool imagemagick chromium nodejs"
# make lint: scan-build (clang-tools, running clang) and cppcheck; make format
LINT="clang clang-tools cppcheck clang-format"

# npm comes with some nodejs builds; Debian's own package only when it did not
if ! command -v npm >/dev/null 2>&1; then
	RUNTIME="$RUNTIME npm"
fi

missing=""
for p in $BUILD $RUNTIME $LINT; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "deps: all packages present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
echo "deps: done"
