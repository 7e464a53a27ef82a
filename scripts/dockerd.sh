#!/bin/sh
# Starts dockerd when its API does not answer, and waits for /_ping.
# Computers run with --network none, so no bridge and no iptables are needed.
# Prints the pid of a daemon it started (empty when one was already up), so
# a caller can stop exactly what it started.
#
# The socket: DOCKER_SOCK, else DOCKER_HOST when it is unix://PATH (as rakazo
# and the docker CLI read it), else /var/run/docker.sock. A daemon started
# here listens on that socket.
set -eu
case ${DOCKER_HOST:-} in
'' | unix://*) ;;
*)
	echo "dockerd: DOCKER_HOST=$DOCKER_HOST is not a unix:// socket; rakazo talks to docker over a unix socket" >&2
	exit 2
	;;
esac
HOST_SOCK=${DOCKER_HOST:+${DOCKER_HOST#unix://}}
SOCK=${DOCKER_SOCK:-${HOST_SOCK:-/var/run/docker.sock}}
LOG=${DOCKERD_LOG:-/tmp/rakazo-dockerd.log}

ping() { curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

if ping; then
	exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
	echo "dockerd: not installed; run 'make deps' (installs docker.io)" >&2
	exit 1
fi
# A stale socket or a pid file naming a reused pid stops dockerd from
# starting; a private pid file avoids the second, dockerd replaces the first.
mkdir -p /run/rakazo
setsid dockerd --bridge=none --iptables=false --ip-masq=false \
	--host "unix://$SOCK" --pidfile /run/rakazo/dockerd.pid >"$LOG" 2>&1 </dev/null &
pid=$!
i=0
while ! ping; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "dockerd: did not answer on $SOCK; see $LOG" >&2
		tail -n 20 "$LOG" >&2 || true
		exit 1
	fi
	sleep 0.1
done
echo "$pid"
