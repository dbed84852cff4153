#!/usr/bin/env python3
"""Check the committed output of the StatefulCounter job.

Usage: python3 check_output.py DIR [--expect-count N]

Reads every committed file under DIR (recursively; files and directories whose
names start with "." -- the FileSink's in-progress/pending files -- are skipped).
Each line is "seq,key,count". Checks:
  * no seq appears twice                       (counted in "duplicates")
  * for each key the counts are exactly 1..n_k (missing values counted in "gaps",
    repeated count values counted in "duplicates")
  * every line parses as three integers
With --expect-count N: also records == N and the seqs are exactly 0..N-1.

Prints a one-line JSON summary and exits 0 if all checks pass, else 1.
"""
import argparse
import json
import os
import sys


def committed_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield os.path.join(dirpath, name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--expect-count", type=int, default=None)
    opts = ap.parse_args(argv)

    root = opts.dir
    if root.startswith("file://"):
        root = root[len("file://"):]
    elif root.startswith("file:"):
        root = root[len("file:"):]

    errors = []
    seqs = set()
    counts = {}  # key -> list of count values
    records = 0
    duplicates = 0
    bad_lines = 0
    files = 0

    if not os.path.isdir(root):
        errors.append("output directory does not exist: %s" % root)
    else:
        for path in committed_files(root):
            files += 1
            with open(path, "r", encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        s, k, c = line.split(",")
                        seq, key, cnt = int(s), int(k), int(c)
                    except ValueError:
                        bad_lines += 1
                        if bad_lines <= 5:
                            errors.append("bad line %s:%d: %r" % (path, lineno, line))
                        continue
                    records += 1
                    if seq in seqs:
                        duplicates += 1
                        if duplicates <= 5:
                            errors.append("duplicate seq %d (%s:%d)" % (seq, path, lineno))
                    seqs.add(seq)
                    counts.setdefault(key, []).append(cnt)

    gaps = 0
    for key, vals in counts.items():
        present = set(vals)
        dup = len(vals) - len(present)
        if dup:
            duplicates += dup
            errors.append("key %d: %d duplicate count values" % (key, dup))
        n = max(present)
        missing = n - len([v for v in present if 1 <= v <= n])
        bad = [v for v in present if v < 1]
        if missing or bad:
            gaps += missing + len(bad)
            errors.append("key %d: counts are not 1..%d (%d missing, %d < 1)"
                          % (key, n, missing, len(bad)))

    max_seq = max(seqs) if seqs else None
    if opts.expect_count is not None:
        n = opts.expect_count
        if records != n:
            errors.append("expected %d records, got %d" % (n, records))
        if seqs != set(range(n)):
            missing_seqs = n - len([s for s in seqs if 0 <= s < n])
            extra = len([s for s in seqs if not 0 <= s < n])
            errors.append("seqs are not exactly 0..%d (%d missing, %d out of range)"
                          % (n - 1, missing_seqs, extra))

    summary = {
        "records": records,
        "keys": len(counts),
        "duplicates": duplicates,
        "gaps": gaps,
        "max_seq": max_seq,
        "files": files,
        "bad_lines": bad_lines,
        "ok": not errors and bad_lines == 0,
    }
    print(json.dumps(summary))
    for e in errors:
        print("check_output: " + e, file=sys.stderr)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
