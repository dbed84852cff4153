#!/usr/bin/env bash
# pyflink-wheels: the wheels of PyFlink (apache-flink from PyPI) of one Flink version and of all it depends on, for
# the Python image variant (scripts/container-base.sh VARIANT=python), whose build has no network:
#
#     scripts/pyflink-wheels.sh VERSION [DIR] [CACHE]
#
# makes DIR (default build/pyflink-wheels-VERSION) with `pip wheel`: the binary wheels as PyPI has them for this
# machine's Python and platform (CPython 3.11 on x86_64 here, the same as Debian bookworm's python3), and wheels
# built here from the few dependencies PyPI has as source only (crcmod). CACHE is where scripts/flink-dist.py
# keeps apache-flink-libraries (pip takes it from there). About 400 MB. Done once: DIR/.complete marks it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=$1
dir=${2:-$top/build/pyflink-wheels-$version}
cache=${3:-$top/build/pypi}
if [ -f "$dir/.complete" ]; then
	exit 0
fi
rm -rf "$dir"
trap 'rm -rf "$dir"' ERR
echo "pyflink-wheels: apache-flink==$version and its dependencies into $dir" >&2
links=()
if [ -d "$cache" ]; then
	links=(--find-links "$cache")
fi
# async-timeout: redis (of apache-beam) needs it on Pythons before 3.11.3, as Debian bookworm's 3.11.2 is, and pip
# leaves it out when this machine's Python is newer
python3 -m pip wheel -q --disable-pip-version-check -w "$dir" "${links[@]}" "apache-flink==$version" \
	"async-timeout>=4.0.3" >&2
touch "$dir/.complete"
