#!/usr/bin/env bash
# deps: installs what flinklet needs on a fresh Debian-like machine, only when it is missing. `deps.sh run`
# (make demo): what building and running it takes: a C compiler, the C libraries' -dev packages, a JDK and
# Maven (the Flink jars themselves come through Maven: make flink-lib), python3 for the demo's banner.
# `deps.sh` or `deps.sh test` (make check): that and the test toolchain: cmocka, the linters, clang for the
# fuzzers, valgrind, podman and debootstrap for the container test, pytest and its helpers.
set -euo pipefail

mode=${1:-test}
case "$mode" in
run | test) ;;
*)
	echo "usage: deps.sh [run|test]" >&2
	exit 2
	;;
esac

need=()
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null || need+=(pkg-config)
# libcurl. CURL=bundled (the Makefile's default): scripts/curl.sh builds a static one from Debian's curl source
# package, which takes apt-get source (dpkg-source from dpkg-dev, the archive's keyring) and GnuTLS's -dev package.
# CURL=system: Debian's libcurl in its GnuTLS flavour, libcurl's headers (either -dev flavour) and libssh2's.
if [ "${CURL:-bundled}" = system ]; then
	have_pc libcurl || need+=(libcurl4-openssl-dev)
	ldconfig -p | grep -q 'libcurl-gnutls\.so\.4 ' || need+=(libcurl3-gnutls)
	have_pc libssh2 || need+=(libssh2-1-dev)
else
	command -v dpkg-source >/dev/null || need+=(dpkg-dev)
	[ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
fi
have_pc gnutls || need+=(libgnutls28-dev)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
have_pc nettle || need+=(nettle-dev)
have_pc libcjson || need+=(libcjson-dev)
have_pc yaml-0.1 || need+=(libyaml-dev)
have_pc libsystemd || need+=(libsystemd-dev)
have_pc libmicrohttpd || need+=(libmicrohttpd-dev)
have_pc zlib || need+=(zlib1g-dev)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v python3 >/dev/null || need+=(python3)
if [ "$mode" = test ]; then
	have_pc cmocka || need+=(libcmocka-dev)
	command -v clang-format >/dev/null || need+=(clang-format)
	command -v cppcheck >/dev/null || need+=(cppcheck)
	# clang with its libFuzzer runtime (make fuzz, fuzz-smoke); Debian 12's clang only recommends the runtime
	fuzz_ok() { echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
		clang -x c - -fsanitize=fuzzer,address,undefined -o /dev/null >/dev/null 2>&1; }
	command -v clang >/dev/null || need+=(clang)
	if ! command -v clang >/dev/null || ! fuzz_ok; then
		apt-cache show libclang-rt-dev >/dev/null 2>&1 && need+=(libclang-rt-dev)
	fi
	command -v unshare >/dev/null || need+=(util-linux)
	# make valgrind: one e2e test with flinklet under memcheck
	command -v valgrind >/dev/null || need+=(valgrind)
	# the container test: podman (with runc), and debootstrap for the locally built base image
	command -v podman >/dev/null || need+=(podman)
	command -v runc >/dev/null || need+=(runc)
	command -v debootstrap >/dev/null || need+=(debootstrap)
	# the status page's test (tests/e2e/test_status_page.py) renders it in headless Chromium
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
fi

if [ ${#need[@]} -gt 0 ]; then
	echo "deps: installing ${need[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if [ "$mode" = run ]; then
	echo "deps: all present (to run; 'scripts/deps.sh test' adds the test toolchain)"
	exit 0
fi

# promtool (tests/e2e/test_flink_metrics.py checks a real scrape of /metrics with `promtool check metrics`): taken
# out of Debian's prometheus package into build/tools/, without installing (or starting) the Prometheus server
if ! command -v promtool >/dev/null && [ ! -x build/tools/promtool ]; then
	echo "deps: extracting promtool from Debian's prometheus package into build/tools/"
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -q prometheus >/dev/null 2>&1) &&
		dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool &&
		mkdir -p build/tools && mv "$tmp/usr/bin/promtool" build/tools/promtool
	rm -rf "$tmp"
	[ -x build/tools/promtool ] || { echo "deps: could not get promtool (apt-get download prometheus)" >&2; exit 1; }
fi

# py MODULE PIP-NAME DEBIAN-PACKAGE WHY: a Python module the tests import, from pip, else from Debian
py() {
	python3 -c "import $1" 2>/dev/null && return 0
	echo "deps: installing $2${4:+ ($4)}"
	python3 -m pip install -q "$2" 2>/dev/null || {
		local sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo"
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$3"
	}
}
py pytest pytest python3-pytest
py xdist pytest-xdist python3-pytest-xdist "make faults runs its tests four at a time with it"
py prometheus_client prometheus_client python3-prometheus-client "the e2e tests parse /metrics with it"
py yaml pyyaml python3-yaml "the e2e tests read the Kubernetes manifests with it"
py jsonschema jsonschema python3-jsonschema "the export tests validate against the operator's CRD with it"
py pyflakes pyflakes python3-pyflakes "make lint checks the Python of tests/, bench/ and scripts/ for undefined names with it"
py kubernetes_validate kubernetes-validate python3-kubernetes-validate "the manifest tests validate conf/kubernetes against Kubernetes' schemas (strict, offline) with it"
echo "deps: all present"
