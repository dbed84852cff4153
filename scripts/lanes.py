#!/usr/bin/env python3
"""lanes.py: runs make check's long suites as many small items on a few lanes, longest first.

make check's end-to-end work is e2e-asan (each test file against the ASan/UBSan build), e2e-rest (the heavy and
asan_elsewhere tests against the optimised build), the matrix (the core files on the other Flink versions), the
static tests (tests/static: the tree's layout), the fault injection, valgrind, chaos, the fuzzers' smoke run and the
parity harnesses (--whole names these suites, an item each). Run as a few big suites side by
side, the longest suite sets the time; cut into one item per test file and suite and dealt longest-first to
whichever lane is free (list scheduling), the lanes end within minutes of each other.

Each item is a `make` of the suite's own target narrowed to one file (E2E_FILES, MATRIX_FILES), so an item runs
exactly what the suite's target runs for that file, with the suite's environment. e2e-asan items get their own
sanitizer log folder, as a report is failed on the test during which it appeared, and two sessions side by side
must not see each other's. An item's output goes to <out>/<item>.log and is printed whole when it fails.

The expected seconds of each item come from --estimates (a JSON object, item name -> seconds, kept in the tree
and refreshed from a run's --record); an item without one counts as DEFAULT_SECONDS. At the end a table says
where the time went: each item's seconds, each lane's total and the wall time.

Exit status: 0 when every item passed, 1 otherwise (every item runs regardless, as make -k would).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

DEFAULT_SECONDS = 60

# pytest exits 5 when nothing is selected: a suite without tests for a marker expression (an item is made only
# for a file that has some)
NO_TESTS = 5

ASAN_MARKS = "not heavy and not asan_elsewhere"
REST_MARKS = "heavy or asan_elsewhere"
MATRIX_MARKS = "not heavy and not single_version"


def collected_files(marks, paths, env):
    """The test files of paths that have a test marks selects (pytest --collect-only)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", marks] + paths, capture_output=True, text=True, env=env)
    if out.returncode not in (0, NO_TESTS):
        sys.exit(f"lanes: collecting {' '.join(paths)} with -m '{marks}' failed:\n{out.stdout}\n{out.stderr}")
    files = []
    for line in out.stdout.splitlines():
        m = re.match(r"^(tests/[^:]+\.py)::", line)
        if m and m.group(1) not in files:
            files.append(m.group(1))
    return files


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def plan(args):
    """The items: (name, argv) for each suite's files, and the whole-suite items."""
    make = [args.make, "--no-print-directory"]
    env = dict(os.environ, FLINKLET_NO_JVM="1")
    items = []
    e2e = ["tests/e2e"]
    for f in collected_files(ASAN_MARKS, e2e, env):
        items.append((f"e2e-asan:{stem(f)}",
                      make + ["e2e-asan", f"E2E_FILES={f}",
                              f"E2E_SANITIZER_LOGS={os.path.join(args.out, 'asan-logs', stem(f))}"]))
    for f in collected_files(REST_MARKS, e2e, env):
        items.append((f"e2e-rest:{stem(f)}", make + ["e2e-rest", f"E2E_FILES={f}"]))
    for v in args.matrix_versions.split():
        for f in collected_files(MATRIX_MARKS, args.matrix_files.split(), env):
            items.append((f"matrix-{v}:{stem(f)}", make + ["e2e-matrix", f"MATRIX_VERSIONS={v}", f"MATRIX_FILES={f}"]))
    for target in args.whole.split():
        items.append((target, make + [target]))
    return items


class Lanes:
    def __init__(self, items, estimates, lanes, out):
        # longest first; ties by name, so that a run is repeatable
        self.queue = sorted(items, key=lambda it: (-estimates.get(it[0], DEFAULT_SECONDS), it[0]))
        self.lock = threading.Lock()
        self.out = out
        self.results = {}  # name -> (seconds, rc, lane)
        self.lane_seconds = [0.0] * lanes
        self.lanes = lanes

    def next_item(self):
        with self.lock:
            return self.queue.pop(0) if self.queue else None

    def run_lane(self, lane):
        while True:
            item = self.next_item()
            if item is None:
                return
            name, argv = item
            log = os.path.join(self.out, re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".log")
            start = time.monotonic()
            with open(log, "w") as f:
                f.write("$ " + " ".join(argv) + "\n")
                f.flush()
                rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            seconds = time.monotonic() - start
            ok = rc == 0
            with self.lock:
                self.results[name] = (seconds, 0 if ok else rc, lane)
                self.lane_seconds[lane] += seconds
                print(f"lanes: [{lane}] {'ok  ' if ok else 'FAIL'} {seconds:7.1f}s  {name}", flush=True)
                if not ok:
                    with open(log, errors="replace") as f:
                        print(f"---- {log}\n{f.read()}---- end of {log}", flush=True)

    def run(self):
        threads = [threading.Thread(target=self.run_lane, args=(i,)) for i in range(self.lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lanes", type=int, default=2)
    p.add_argument("--make", default=os.environ.get("MAKE", "make"))
    p.add_argument("--out", required=True, help="folder for the items' logs")
    p.add_argument("--estimates", help="JSON: item -> expected seconds")
    p.add_argument("--record", help="write the measured seconds here (JSON, the form of --estimates)")
    p.add_argument("--matrix-versions", default="")
    p.add_argument("--matrix-files", default="")
    p.add_argument("--whole", default="", help="targets run whole, each one item")
    p.add_argument("--only", help="a regular expression: run only the items whose names it finds")
    p.add_argument("--dry-run", action="store_true", help="print the items in the order they would start")
    args = p.parse_args()
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    estimates = {}
    if args.estimates and os.path.exists(args.estimates):
        with open(args.estimates) as f:
            estimates = json.load(f)
    items = plan(args)
    if args.only:
        items = [it for it in items if re.search(args.only, it[0])]
    if args.dry_run:
        for name, argv in Lanes(items, estimates, args.lanes, args.out).queue:
            print(f"{estimates.get(name, DEFAULT_SECONDS):7.1f}  {name}: {' '.join(argv)}")
        return 0
    print(f"lanes: {len(items)} items on {args.lanes} lanes, about "
          f"{sum(estimates.get(n, DEFAULT_SECONDS) for n, _ in items) / 60 / args.lanes:.0f} min each", flush=True)
    wall = time.monotonic()
    lanes = Lanes(items, estimates, args.lanes, args.out)
    lanes.run()
    wall = time.monotonic() - wall
    failed = sorted(n for n, (_, rc, _) in lanes.results.items() if rc != 0)
    print("\nlanes: where the time went (seconds)")
    for name, (seconds, rc, lane) in sorted(lanes.results.items(), key=lambda kv: -kv[1][0]):
        print(f"  {seconds:7.1f}  [{lane}] {name}{'  FAILED' if rc else ''}")
    for i, s in enumerate(lanes.lane_seconds):
        print(f"  lane {i}: {s / 60:.1f} min")
    print(f"  wall: {wall / 60:.1f} min; {len(items)} items, {len(failed)} failed")
    if args.record:
        with open(args.record, "w") as f:
            json.dump({n: round(s, 1) for n, (s, _, _) in sorted(lanes.results.items())}, f, indent=1, sort_keys=True)
            f.write("\n")
    if failed:
        print("lanes: failed: " + " ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
