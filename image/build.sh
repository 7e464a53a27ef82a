#!/bin/sh
# Builds the rakazo computer image from Debian packages: debootstrap
# (minbase) plus the files under image/rootfs, imported with `docker import`.
# No registry image is pulled. The tag carries a hash of the recipe, so a
# build whose recipe is already imported is a no-op.
#
#   image/build.sh          build (or reuse) and print the tag
#   image/build.sh --tag    print the tag only
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm

# The hash covers what makes the image: the packages, the rootfs files and
# this script from its "the recipe" line on. The plumbing above that line
# (which docker socket, reuse) can change without a new tag.
recipe_hash() {
	(
		cd "$HERE"
		echo "suite=$SUITE"
		printf 'build.sh %s\n' "$(sed -n '/^# --- the recipe/,$p' build.sh | sha256sum | cut -c1-64)"
		find packages.txt rootfs -type f | LC_ALL=C sort | while read -r f; do
			printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-64)"
			# the mode matters too: an init that lost its x bit is a new recipe
			stat -c '%a' "$f"
		done
	) | sha256sum | cut -c1-12
}

TAG="rakazo-computer:$(recipe_hash)"
if [ "${1:-}" = "--tag" ]; then
	echo "$TAG"
	exit 0
fi

# The socket: DOCKER_SOCK, else DOCKER_HOST's unix://PATH, else the default;
# `docker import` below is pointed at the same one.
case ${DOCKER_HOST:-} in
'' | unix://*) ;;
*)
	echo "image: DOCKER_HOST=$DOCKER_HOST is not a unix:// socket; rakazo talks to docker over a unix socket" >&2
	exit 2
	;;
esac
HOST_SOCK=${DOCKER_HOST:+${DOCKER_HOST#unix://}}
SOCK=${DOCKER_SOCK:-${HOST_SOCK:-/var/run/docker.sock}}
DOCKER_HOST="unix://$SOCK"
export DOCKER_HOST
api() { curl -sf --unix-socket "$SOCK" "http://localhost/v1.41$1"; }
if ! curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; then
	echo "image: docker is not running on $SOCK; start it with scripts/dockerd.sh" >&2
	exit 5
fi
if api "/images/$TAG/json" >/dev/null 2>&1; then
	echo "image: $TAG already built" >&2
	echo "$TAG"
	exit 0
fi
for tool in debootstrap tar; do
	command -v $tool >/dev/null 2>&1 || { echo "image: $tool missing; run 'make deps'" >&2; exit 1; }
done

# --- the recipe (hashed: a change below is a new image tag) -----------------
start=$(date +%s)
MIRROR=${RAKAZO_DEBIAN_MIRROR:-}
if [ -z "$MIRROR" ]; then
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	elif [ -f /etc/apt/sources.list ]; then
		MIRROR=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list)
	fi
fi
[ -n "$MIRROR" ] || { echo "image: no Debian mirror found; set RAKAZO_DEBIAN_MIRROR" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rakazo-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
ROOT="$WORK/rootfs"
CACHE=${RAKAZO_DEB_CACHE:-/var/cache/rakazo-debs}
mkdir -p "$CACHE"
PKGS=$(grep -v '^#' "$HERE/packages.txt" | grep -v '^$' | paste -sd, -)

echo "image: debootstrap $SUITE (minbase) with $(echo "$PKGS" | tr ',' '\n' | wc -l) packages..." >&2
debootstrap --variant=minbase --cache-dir="$CACHE" --include="$PKGS" \
	"$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
	tail -n 30 "$WORK/debootstrap.log" >&2
	echo "image: debootstrap failed" >&2
	exit 1
}
echo "image: debootstrap done in $(($(date +%s) - start)) s" >&2

cp -a "$HERE/rootfs/." "$ROOT/"
chroot "$ROOT" /bin/sh -eu <<'IN'
useradd -u 1000 -U -m -d /home/user -s /bin/bash user
mkdir -p /home/user/rakazo-home /run/rakazo /var/run/dbus
chown -R 1000:1000 /home/user /run/rakazo
chmod 0755 /usr/local/bin/*
dbus-uuidgen --ensure=/etc/machine-id
IN
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* \
	"$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/tmp/*
mkdir -p "$ROOT/tmp" && chmod 1777 "$ROOT/tmp"

echo "image: importing $TAG..." >&2
tar --numeric-owner -C "$ROOT" -c . | docker import \
	-c 'ENV DISPLAY=:0' \
	-c 'ENV HOME=/home/user' \
	-c 'ENV LANG=C.UTF-8' \
	-c 'ENV PATH=/home/user/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
	-c 'USER 1000:1000' \
	-c 'WORKDIR /home/user/rakazo-home' \
	-c 'LABEL rakazo.image=computer' \
	-c 'CMD ["/usr/bin/tini","-s","-g","--","/usr/local/bin/rakazo-init"]' \
	- "$TAG" >/dev/null
size=$(api "/images/$TAG/json" | sed -n 's/.*"Size":\([0-9]*\).*/\1/p')
echo "image: built $TAG in $(($(date +%s) - start)) s, $((size / 1048576)) MiB" >&2
echo "$TAG"
