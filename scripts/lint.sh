#!/usr/bin/env bash
# lint: the formatting check (clang-format, style in .clang-format), the static analyser (cppcheck),
# the project's banned calls (system, popen, sprintf, strcpy, strcat, gets, strtok), and the configuration keys
# the C code reads by name (scripts/check_option_keys.py: none misspelt), and what docs/CODE_STYLE.md asks that a
# program can check (scripts/check_style.py: each file's top comment, commit subjects and bodies), and pyflakes'
# errors in the Python of the tests, the benchmarks and the scripts.
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
echo "lint: python (pyflakes: undefined names, names used before assignment, redefinitions)"
# pyflakes' unused names and placeholder-less f-strings are style; what it says beyond them is a bug a test
# would only show when it runs (a name that no longer exists after an edit, say)
py_findings=$(python3 -m pyflakes tests bench scripts java 2>&1 |
	grep -vE "imported but unused|is assigned to but never used|f-string is missing placeholders|unable to detect undefined names" || true)
if [ -n "$py_findings" ]; then
	echo "$py_findings" >&2
	echo "lint: pyflakes found the above" >&2
	exit 1
fi
echo "lint: style (docs/CODE_STYLE.md: top comments, commit messages)"
python3 scripts/check_style.py
echo "lint: ok"
