#!/usr/bin/env bash
# lint: the formatting check (clang-format, style in .clang-format), the static analyser (cppcheck),
# the project's banned calls (system, popen, sprintf, strcpy, strcat, gets, strtok), and the configuration keys
# the C code reads by name (scripts/check_option_keys.py: none misspelt), and what docs/CODE_STYLE.md asks that a
# program can check (scripts/check_style.py: each file's top comment, commit subjects and bodies).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(ls src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h tests/support/*.c tests/support/*.h 2>/dev/null)
echo "lint: clang-format"
clang-format --dry-run --Werror $files
echo "lint: cppcheck"
incs=$(for d in src/*/; do printf -- "-I%s " "${d%/}"; done)
# shellcheck disable=SC2086
cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	--std=c11 --inline-suppr --suppress=missingIncludeSystem $incs -D_GNU_SOURCE src
echo "lint: banned calls"
if grep -nE '\b(system|popen|sprintf|vsprintf|strcpy|strcat|gets|strtok)\s*\(' src/*/*.c src/*/*.h; then
	echo "lint: banned call found" >&2
	exit 1
fi
echo "lint: option keys"
python3 scripts/check_option_keys.py
echo "lint: style (docs/CODE_STYLE.md: top comments, commit messages)"
python3 scripts/check_style.py
echo "lint: ok"
