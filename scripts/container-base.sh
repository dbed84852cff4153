#!/usr/bin/env bash
# container-base: builds a local stand-in for the official Flink image, for machines that cannot pull one
# (no registry): a Debian bookworm rootfs (debootstrap, variant minbase) with a Java 17 JRE, the shared
# libraries flinklet links against, the user flink (uid/gid 9999, as in the official image), and the
# Maven-fetched Flink jars (make flink-lib) under /opt/flink/lib; imported into podman as
#
#     localhost/flinklet-base:<flink version>-<12 hex of the inputs>
#
# The inputs are this script, the package list, the suite, the architecture, and the names and contents of the
# jars. When an image with that tag exists nothing is built. The tag is the only line on stdout; progress goes
# to stderr. Use it as the Containerfile's base:
#
#     podman build -f container/Containerfile --build-arg FLINK_IMAGE="$(scripts/container-base.sh)" ...
#
# Environment: FLINK_VERSION (2.2.1), FLINK_LIB (build/flink-$FLINK_VERSION/lib), DEBIAN_MIRROR
# (http://deb.debian.org/debian), PODMAN (the podman command with its global options; by default
# `podman --runtime runc --cgroup-manager cgroupfs` where runc is installed, else `podman`).
# Needs root (debootstrap), which is also what the podman that runs the image needs here.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
self="$top/scripts/container-base.sh"

FLINK_VERSION=${FLINK_VERSION:-2.2.1}
FLINK_LIB=${FLINK_LIB:-$top/build/flink-$FLINK_VERSION/lib}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -z "${PODMAN:-}" ]; then
	if command -v runc >/dev/null; then PODMAN="podman --runtime runc --cgroup-manager cgroupfs"; else PODMAN=podman; fi
fi
read -r -a podman <<<"$PODMAN"
suite=bookworm
# the JRE, the TLS roots for https jars, and the runtime side of flinklet's -dev packages (scripts/deps.sh)
packages=(openjdk-17-jre-headless ca-certificates libcurl3-gnutls libcjson1 libyaml-0-2 libsystemd0 libmicrohttpd12 libnettle8)
name=localhost/flinklet-base

say() { echo "container-base: $*" >&2; }

if ! ls "$FLINK_LIB"/flink-core-*.jar >/dev/null 2>&1; then
	say "no Flink jars in $FLINK_LIB (run: make flink-lib FLINK_VERSION=$FLINK_VERSION)"
	exit 3
fi
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)

inputs=$(
	sha256sum <"$self"
	echo "suite=$suite arch=$arch packages=${packages[*]}"
	cd "$FLINK_LIB" && find . -maxdepth 1 -name '*.jar' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
)
hash=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-12)
tag="$name:$FLINK_VERSION-$hash"

if "${podman[@]}" image exists "$tag"; then
	say "$tag exists (cached)"
	echo "$tag"
	exit 0
fi

# one build at a time (two test runs, or make and a test, may ask at once)
lockdir=${TMPDIR:-/var/tmp}
exec 9>"$lockdir/flinklet-container-base.lock"
flock 9
if "${podman[@]}" image exists "$tag"; then
	say "$tag exists (built meanwhile)"
	echo "$tag"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	say "building the base image needs root (debootstrap and chroot)"
	exit 3
fi
if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap"
	env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 || {
		env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2
	}
fi

work=$(mktemp -d "$lockdir/flinklet-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
start=$(date +%s)
say "building $tag: debootstrap $suite ($arch, minbase + ${packages[*]}) from $DEBIAN_MIRROR"
include=$(
	IFS=,
	echo "${packages[*]}"
)
debootstrap --variant=minbase --arch="$arch" --include="$include" "$suite" "$root" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 || {
	tail -n 40 "$work/debootstrap.log" >&2
	say "debootstrap failed"
	exit 1
}

say "adding the user flink (9999) and the Flink jars"
chroot "$root" groupadd --system --gid 9999 flink
chroot "$root" useradd --system --home-dir /opt/flink --no-create-home --uid 9999 --gid flink --shell /bin/bash flink
mkdir -p "$root/opt/flink/lib" "$root/opt/flink/usrlib" "$root/opt/flink/conf"
cp "$FLINK_LIB"/*.jar "$root/opt/flink/lib/"
chown -R 9999:9999 "$root/opt/flink"
java_home=$(dirname "$(dirname "$(chroot "$root" readlink -f /usr/bin/java)")")

# what an image does not need: package caches and lists, documentation, man pages
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log "$root"/var/cache/debconf/*-old
# a resolv.conf/hostname from the build host has no business in the image
: >"$root/etc/resolv.conf"
rm -f "$root/etc/hostname"

say "importing into podman"
tar --numeric-owner --xattrs -C "$root" -cf "$work/rootfs.tar" .
"${podman[@]}" import \
	--change "ENV FLINK_HOME=/opt/flink" \
	--change "ENV JAVA_HOME=$java_home" \
	--change "ENV PATH=/opt/flink/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	--change "ENV LANG=C.UTF-8" \
	--change "WORKDIR /opt/flink" \
	--change "USER flink" \
	--change "LABEL dev.flinklet.base.inputs=$hash" \
	--change "LABEL dev.flinklet.base.flink-version=$FLINK_VERSION" \
	"$work/rootfs.tar" "$tag" >/dev/null
"${podman[@]}" tag "$tag" "$name:$FLINK_VERSION"
# the bases of earlier inputs of this Flink version are superseded: untag them (an image still in use by a
# container stays until that is removed)
"${podman[@]}" images --format '{{.Repository}}:{{.Tag}}' "$name" | while read -r old; do
	case "$old" in
	"$tag" | "$name:$FLINK_VERSION") ;;
	"$name:$FLINK_VERSION-"*) if "${podman[@]}" rmi "$old" >/dev/null 2>&1; then say "removed the superseded $old"; fi ;;
	esac
done
say "built $tag in $(($(date +%s) - start)) s"
echo "$tag"
