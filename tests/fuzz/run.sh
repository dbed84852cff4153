#!/usr/bin/env bash
# run.sh MAKE BUILD CC SECONDS TARGET...: builds the libFuzzer targets and runs each for SECONDS, starting from
# tests/fuzz/corpus/<target>/ (read-only; new inputs go to BUILD/fuzz/corpus/<target>/). Prints executions
# and crashes per target. A crash's input is saved as tests/fuzz/crashes/<target>/<crash-...> and the run
# fails. Without a working clang (and libFuzzer runtime) it says so and skips (exit 0): scripts/deps.sh
# installs clang.
set -uo pipefail
cd "$(dirname "$0")/../.."
make_cmd=$1 build=$2 cc=$3 seconds=$4
shift 4
targets=("$@")

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' >"$probe/p.c"
if ! command -v "$cc" >/dev/null 2>&1 ||
	! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
	echo "fuzz: SKIPPED: $cc with libFuzzer (-fsanitize=fuzzer,address,undefined) is not available and was not" \
		"installed (scripts/deps.sh installs clang; on Debian 12 also libclang-rt-14-dev if the runtime is missing)"
	exit 0
fi

bins=()
for t in "${targets[@]}"; do bins+=("$build/fuzz/$t"); done
$make_cmd --no-print-directory "${bins[@]}" >/dev/null || { echo "fuzz: build failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
ubsan_base=print_stacktrace=1:halt_on_error=1
status=0
summary=()
known=()
for t in "${targets[@]}"; do
	# the saved reproducers of reported bugs: replayed without suppressions, listed, never fail the run
	for c in tests/fuzz/crashes/"$t"/*; do
		[ -f "$c" ] || continue
		if FLINKLET_FUZZ_REPLAY=1 UBSAN_OPTIONS=$ubsan_base "$build/fuzz/$t" "$c" >"$build/fuzz/replay.log" 2>&1; then
			known+=("$c: no longer reproduces (fixed? remove it and its guard/suppression)")
		else
			where=$(grep -m1 -oE '(src|tests)/[a-z_]+\.c:[0-9]+' "$build/fuzz/replay.log")
			known+=("$c: known, still reproduces${where:+ at $where}")
		fi
	done
done
rm -f "$build/fuzz/replay.log"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-$ubsan_base:suppressions=$PWD/tests/fuzz/known-ubsan.supp}
for t in "${targets[@]}"; do
	corpus="$build/fuzz/corpus/$t" artifacts="$build/fuzz/artifacts/$t"
	mkdir -p "$corpus" "$artifacts"
	rm -f "$artifacts"/*
	log="$build/fuzz/$t.log"
	seeds=tests/fuzz/corpus/$t
	dict=()
	[ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
	echo "== fuzz $t (${seconds}s, seeds $seeds)"
	"$build/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		"${dict[@]}" -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
	crashes=$(find "$artifacts" -type f | wc -l)
	if [ $rc -ne 0 ] || [ "$crashes" -gt 0 ]; then
		status=1
		mkdir -p "tests/fuzz/crashes/$t"
		for a in "$artifacts"/*; do [ -f "$a" ] && cp "$a" "tests/fuzz/crashes/$t/"; done
		grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|deadly signal' "$log" | sed 's/^/   /'
		echo "   crash input(s) saved under tests/fuzz/crashes/$t/, log $log"
	fi
	summary+=("$(printf '%-16s %12s execs  %-10s crashes %s' "$t" "${execs:-?}" "${cov:-cov: ?}" "$crashes")")
done
echo "== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#known[@]} -gt 0 ]; then
	echo "== known bugs (reported; reproducers in tests/fuzz/crashes/, see tests/fuzz/README.md)"
	printf '%s\n' "${known[@]}"
fi
exit $status
