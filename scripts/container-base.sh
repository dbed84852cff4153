#!/usr/bin/env bash
# container-base: builds a local stand-in for the official Flink image, for machines that cannot pull one
# (no registry): a Debian bookworm rootfs (debootstrap, variant minbase) with a Java 17 runtime made by jlink
# from the build machine's JDK (only the modules Flink uses: JAVA_MODULES below), the shared libraries flinklet
# links against, the user flink (uid/gid 9999, as in the official image), and the Flink jars of make flink-lib
# (the distribution's lib/ and opt/, or the module jars) under /opt/flink/lib and /opt/flink/opt less what a
# MiniCluster never loads (DROP_JARS below, and RocksDB's and ForSt's native libraries for other platforms, also
# those inside flink-dist); imported into podman as
#
#     localhost/flinklet-base:<flink version>-<12 hex of the inputs>
#
# The inputs are this script, the package list, the suite, the architecture, the JDK's version, and the names
# and contents of the jars. When an image with that tag exists nothing is built. The tag is the only line on
# stdout; progress goes to stderr. Use it as the Containerfile's base:
#
#     podman build -f container/Containerfile --build-arg FLINK_IMAGE="$(scripts/container-base.sh)" ...
#
# Environment: FLINK_VERSION (2.2.1), FLINK_LIB (build/flink-$FLINK_VERSION/lib), DEBIAN_MIRROR
# (http://deb.debian.org/debian), PODMAN (the podman command with its global options; by default
# `podman --runtime runc --cgroup-manager cgroupfs` where runc is installed, else `podman`), JDK (a Java 17 JDK
# with jmods/, Debian's openjdk-17-jdk-headless; default: the one javac belongs to), BASE_NAME (the image name,
# default localhost/flinklet-base), VARIANT (empty, or `systemd`: the same with systemd as /sbin/init, for
# tests/e2e/test_systemd.py; named BASE_NAME-systemd; or `builder`: no Java and no jars, but the C toolchain and
# flinklet's -dev packages, a stand-in for the Containerfile's BUILDER debian:bookworm, for its build stage without
# a registry; named BASE_NAME-builder:bookworm-<12 hex>; or `python`: the same as the default with Debian's Python
# and PyFlink of FLINK_VERSION in the virtual environment /opt/pyflink, installed with no network from the wheels
# in PYFLINK_WHEELS (default build/pyflink-wheels-$FLINK_VERSION, made by scripts/pyflink-wheels.sh), for Python
# jobs; named BASE_NAME-python).
# Needs root (debootstrap), which is also what the podman that runs the image needs here.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
self="$top/scripts/container-base.sh"

FLINK_VERSION=${FLINK_VERSION:-2.2.1}
FLINK_LIB=${FLINK_LIB:-$top/build/flink-$FLINK_VERSION/lib}
# the distribution's opt/ beside lib/ (flink-python for Python jobs, the SQL client: 42 MB), copied when there
FLINK_OPT=${FLINK_OPT:-$(dirname "$FLINK_LIB")/opt}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -z "${PODMAN:-}" ]; then
	if command -v runc >/dev/null; then PODMAN="podman --runtime runc --cgroup-manager cgroupfs"; else PODMAN=podman; fi
fi
read -r -a podman <<<"$PODMAN"
suite=bookworm
# the TLS roots for https jars, the C++ runtime of the JVM and RocksDB, and the runtime side of flinklet's -dev
# packages (scripts/deps.sh). No libcurl: flinklet links its own (scripts/curl.sh), and Debian's libcurl3-gnutls
# would bring libssh2, OpenLDAP, SASL, Kerberos, rtmp, psl, nghttp2 and brotli that nothing here loads.
packages=(ca-certificates libstdc++6 libgnutls30 libcjson1 libyaml-0-2 libsystemd0 libmicrohttpd12 libnettle8 zlib1g)
name=${BASE_NAME:-localhost/flinklet-base}
VARIANT=${VARIANT:-}
case "$VARIANT" in
"") ;;
systemd)
	packages+=(systemd systemd-sysv)
	name=$name-systemd
	;;
python)
	# python3-venv brings ensurepip's pip and setuptools: the venv installs the wheels with no network
	packages+=(python3 python3-venv)
	name=$name-python
	PYFLINK_WHEELS=${PYFLINK_WHEELS:-$top/build/pyflink-wheels-$FLINK_VERSION}
	if [ ! -f "$PYFLINK_WHEELS/.complete" ]; then
		echo "container-base: no PyFlink wheels in $PYFLINK_WHEELS (run: scripts/pyflink-wheels.sh $FLINK_VERSION)" >&2
		exit 3
	fi
	;;
builder)
	# what the Containerfile's build stage installs in a BUILDER that lacks it: the toolchain, the -dev
	# packages, and what scripts/curl.sh needs to unpack Debian's curl source (dpkg-source) and fetch it (apt's
	# keyring, a minbase has it)
	packages=(gcc make pkg-config libc6-dev binutils libcjson-dev libyaml-dev libsystemd-dev libmicrohttpd-dev
		nettle-dev libgnutls28-dev zlib1g-dev dpkg-dev debian-archive-keyring ca-certificates)
	name=$name-builder
	;;
*)
	echo "container-base: unknown VARIANT=$VARIANT (empty, systemd, python or builder)" >&2
	exit 2
	;;
esac
# The Java modules of the runtime: what jdeps finds in Flink's jars (jdeps --print-module-deps, jar by jar),
# java.rmi (Flink's --add-exports), the TLS and naming providers a job's connectors use, and the JMX agent.
# Tested by tests/e2e/test_container.py (the job, with RocksDB, in the image).
JAVA_MODULES=java.base,java.desktop,java.instrument,java.logging,java.management,java.management.rmi,java.naming,java.net.http,java.rmi,java.scripting,java.security.jgss,java.security.sasl,java.sql,java.xml,jdk.attach,jdk.charsets,jdk.crypto.cryptoki,jdk.crypto.ec,jdk.jdi,jdk.jfr,jdk.management,jdk.management.agent,jdk.naming.dns,jdk.net,jdk.sctp,jdk.security.auth,jdk.unsupported,jdk.zipfs
# java.desktop's native side (X11, sound, fonts, images) that a headless JVM never loads
JLINK_EXCLUDE=$(printf 'glob:/java.desktop/lib/%s,' libawt_xawt.so libjawt.so libjsound.so libsplashscreen.so \
	libfontmanager.so liblcms.so libjavajpeg.so)
# jars of flink-lib a MiniCluster never loads: the async-profiler of the web UI's profiling
# (rest.profiling.enabled, off by default). Not ZooKeeper's (flink-shaded-zookeeper-3), though it is for high
# availability: flink-runtime's tasks load the Guava relocated inside it (shaded.curator5...collect.Iterables).
DROP_JARS=('async-profiler-*.jar')

say() { echo "container-base: $*" >&2; }

if [ "$VARIANT" != builder ] && ! compgen -G "$FLINK_LIB/flink-dist-*.jar" >/dev/null &&
	! compgen -G "$FLINK_LIB/flink-core-*.jar" >/dev/null; then
	say "no Flink jars in $FLINK_LIB (run: make flink-lib FLINK_VERSION=$FLINK_VERSION)"
	exit 3
fi
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
# RocksDB's and ForSt's jars carry native libraries for every platform (eleven each); the image keeps this
# architecture's glibc one (lib<name>-<platform>.so)
case "$arch" in
amd64) native_platform=linux64 ;;
arm64) native_platform=linux-aarch64 ;;
ppc64el) native_platform=linux-ppc64le ;;
s390x) native_platform=linux-s390x ;;
*) native_platform= ;;
esac
if [ "$VARIANT" = builder ]; then
	JDK=none
elif [ -z "${JDK:-}" ]; then
	javac=$(command -v javac || true)
	JDK=$([ -n "$javac" ] && dirname "$(dirname "$(readlink -f "$javac")")" || true)
fi
if [ "$VARIANT" = builder ]; then
	jdk_version=none
elif [ -z "$JDK" ] || [ ! -f "$JDK/jmods/java.base.jmod" ] || ! "$JDK/bin/java" -version 2>&1 | grep -q 'version "17'; then
	say "no Java 17 JDK with jmods/ (JDK=${JDK:-unset}): install openjdk-17-jdk-headless (make deps)"
	exit 3
else
	jdk_version=$("$JDK/bin/java" -version 2>&1 | head -n 2 | tr '\n' ' ')
fi

inputs=$(
	sha256sum <"$self"
	echo "suite=$suite arch=$arch packages=${packages[*]} jdk=$jdk_version"
	if [ "$VARIANT" != builder ]; then
		cd "$FLINK_LIB" && find . -maxdepth 1 -name '*.jar' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		if [ -d "$FLINK_OPT" ]; then
			cd "$FLINK_OPT" && find . -maxdepth 1 -name '*.jar' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		fi
	fi
	if [ "$VARIANT" = python ]; then
		cd "$PYFLINK_WHEELS" && find . -maxdepth 1 -name '*.whl' -printf '%f %s\n' | LC_ALL=C sort
	fi
)
hash=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-12)
# the builder has no Flink in it: it is named after its Debian release
release=$([ "$VARIANT" = builder ] && echo "$suite" || echo "$FLINK_VERSION")
tag="$name:$release-$hash"

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

java_home=/opt/java
if [ "$VARIANT" != builder ]; then
	say "the Java runtime: jlink of $JDK ($JAVA_MODULES)"
	"$JDK/bin/jlink" --add-modules "$JAVA_MODULES" --strip-debug --no-man-pages --no-header-files --compress=2 \
		--exclude-files="${JLINK_EXCLUDE%,}" --output "$root$java_home" >&2
	# found through JAVA_HOME, PATH, and /usr/bin/java as Debian's JRE has it (what a systemd unit's PATH finds).
	# Run here, not in the chroot: the launcher finds its libraries through /proc/self/exe, which a chroot without
	# /proc lacks. The default class-data archive of the JDK's classes (lib/server/classes.jsa) does not depend on
	# where the runtime is installed.
	ln -s "$java_home/bin/java" "$root/usr/bin/java"
	"$root$java_home/bin/java" -Xshare:dump >/dev/null 2>&1 || say "no default class-data archive (java -Xshare:dump failed)"
	"$root$java_home/bin/java" -version >&2

	say "adding the user flink (9999) and the Flink jars"
	chroot "$root" groupadd --system --gid 9999 flink
	chroot "$root" useradd --system --home-dir /opt/flink --no-create-home --uid 9999 --gid flink --shell /bin/bash flink
	mkdir -p "$root/opt/flink/lib" "$root/opt/flink/usrlib" "$root/opt/flink/conf" "$root/opt/flink/plugins"
	cp "$FLINK_LIB"/*.jar "$root/opt/flink/lib/"
	if [ -d "$FLINK_OPT" ]; then
		mkdir -p "$root/opt/flink/opt"
		cp "$FLINK_OPT"/*.jar "$root/opt/flink/opt/"
	fi
	for pattern in "${DROP_JARS[@]}"; do
		# shellcheck disable=SC2086 # the pattern is a glob
		rm -f "$root"/opt/flink/lib/$pattern
	done
	# the distribution's flink-dist jar carries both sets (RocksDB's and ForSt's) inside
	for jar in "$root"/opt/flink/lib/frocksdbjni-*.jar "$root"/opt/flink/lib/forstjni-*.jar \
		"$root"/opt/flink/lib/flink-dist-*.jar; do
		[ -f "$jar" ] && [ -n "$native_platform" ] || continue
		case "$(basename "$jar")" in
		frocksdbjni-*) libs=(librocksdbjni) ;;
		forstjni-*) libs=(libforstjni) ;;
		*) libs=(librocksdbjni libforstjni) ;;
		esac
		python3 - "$jar" "$native_platform" "${libs[@]}" <<'PY'
import os, sys, zipfile
path, platform, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
tmp = path + ".tmp"
with zipfile.ZipFile(path) as src:
    names = set(src.namelist())
    # a prefix without a library for this platform keeps all of its own
    strip = [p for p in prefixes if f"{p}-{platform}.so" in names]
    for p in set(prefixes) - set(strip):
        print(f"container-base: {p}-{platform}.so is not in {path}, its libraries kept", file=sys.stderr)
    if not strip:
        sys.exit(0)
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            name = info.filename
            if "/" not in name and any(name.startswith(p + "-") and name != f"{p}-{platform}.so" for p in strip):
                continue
            dst.writestr(info, src.read(name))
os.replace(tmp, path)
PY
	done
	chown -R 9999:9999 "$root/opt/flink"
fi

if [ "$VARIANT" = python ]; then
	# PyFlink as the operator's examples/flink-python-example has it (pip install apache-flink), from the wheels
	# with no network. Its pyflink/lib and pyflink/opt are Flink's jars again (apache-flink-libraries, about
	# 300 MB): a job under flinklet does not load them (the JVM's class path is /opt/flink/lib; the script and
	# the UDFs' workers talk to that JVM), so they are left out (tests/e2e/test_container_python.py runs both).
	say "PyFlink $FLINK_VERSION into /opt/pyflink from $PYFLINK_WHEELS"
	mkdir -p "$root/tmp/wheels"
	cp "$PYFLINK_WHEELS"/*.whl "$root/tmp/wheels/"
	chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin python3 -m venv /opt/pyflink
	chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin /opt/pyflink/bin/pip install -q --no-index --no-cache-dir --disable-pip-version-check \
		--find-links /tmp/wheels "apache-flink==$FLINK_VERSION" >&2
	rm -rf "$root/tmp/wheels"
	site=$(chroot "$root" /opt/pyflink/bin/python -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))')
	rm -rf "$root$site/lib" "$root$site/opt"
	chroot "$root" /opt/pyflink/bin/python -c 'import pyflink.table, pyflink.fn_execution' >&2
fi

# what an image does not need: package caches and lists, documentation, man pages
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log "$root"/var/cache/debconf/*-old
# a resolv.conf/hostname from the build host has no business in the image
: >"$root/etc/resolv.conf"
rm -f "$root/etc/hostname"

say "importing into podman"
variant_changes=(--change "USER flink")
if [ "$VARIANT" = builder ]; then
	variant_changes=(--change "USER root" --change "WORKDIR /")
elif [ "$VARIANT" = systemd ]; then
	# systemd is PID 1 as root; it stops on SIGRTMIN+3
	variant_changes=(--change "USER root" --change 'CMD ["/sbin/init"]' --change "STOPSIGNAL SIGRTMIN+3")
fi
tar --numeric-owner --xattrs -C "$root" -cf "$work/rootfs.tar" .
"${podman[@]}" import \
	--change "ENV FLINK_HOME=/opt/flink" \
	--change "ENV JAVA_HOME=$java_home" \
	--change "ENV PATH=/opt/flink/bin:$java_home/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	--change "ENV LANG=C.UTF-8" \
	--change "WORKDIR /opt/flink" \
	"${variant_changes[@]}" \
	--change "LABEL dev.flinklet.base.inputs=$hash" \
	--change "LABEL dev.flinklet.base.flink-version=$FLINK_VERSION" \
	"$work/rootfs.tar" "$tag" >/dev/null
"${podman[@]}" tag "$tag" "$name:$release"
# the bases of earlier inputs of this Flink version are superseded: untag them (an image still in use by a
# container stays until that is removed)
"${podman[@]}" images --format '{{.Repository}}:{{.Tag}}' "$name" | while read -r old; do
	case "$old" in
	"$tag" | "$name:$release") ;;
	"$name:$release-"*) if "${podman[@]}" rmi "$old" >/dev/null 2>&1; then say "removed the superseded $old"; fi ;;
	esac
done
say "built $tag in $(($(date +%s) - start)) s"
echo "$tag"
