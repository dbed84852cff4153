#!/usr/bin/env bash
# pyflink-venv: a Python virtual environment with PyFlink (apache-flink from PyPI) of one Flink version, for
# Python jobs on the host (tests/e2e/test_python.py; `make pyflink`):
#
#     scripts/pyflink-venv.sh VERSION DIR [CACHE]
#
# makes DIR (python3 -m venv) and installs apache-flink==VERSION with its dependencies (pandas, pyarrow, numpy,
# apache-beam, pemja: about 600 MB; 3 minutes on 2 cores with a fast network). CACHE is where
# scripts/flink-dist.py keeps apache-flink-libraries: pip takes it from there (--find-links) rather than download
# its 230 to 320 MB again. Done once: DIR/.complete marks a finished install; a failed one is removed whole.
# The image variant installs the same into the Flink image (container/README.md, "Python jobs").
set -euo pipefail
version=$1
dir=$2
cache=${3:-}
if [ -f "$dir/.complete" ]; then
	exit 0
fi
rm -rf "$dir"
trap 'rm -rf "$dir"' ERR
echo "pyflink-venv: installing apache-flink==$version into $dir" >&2
python3 -m venv "$dir"
links=()
if [ -n "$cache" ] && [ -d "$cache" ]; then
	links=(--find-links "$cache")
fi
"$dir/bin/pip" install -q --disable-pip-version-check "${links[@]}" "apache-flink==$version" >&2
"$dir/bin/python" -c 'import pyflink.table' >&2
touch "$dir/.complete"
