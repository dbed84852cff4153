#!/usr/bin/env python3
"""Checks of docs/CODE_STYLE.md that a program can make:

- every C file under src/ and tests/support/ opens with a comment that names the module ("/* name: what it is
  for ..."), the name being the file's own;
- every commit since STYLE_FROM (the first commit made under the style) has a subject of at most 72 characters and
  a body (a blank line, then text), but for a merge, whose branch's commits say what and why. Skipped where there
  is no git history (a source tarball)."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
STYLE_FROM = "c8c0de2"  # layout: scheme lists in src/config, the jar's download in sup_fetch.c
SUBJECT_MAX = 72


def top_comments():
    bad = []
    for d in ("src", "tests/support"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, errors="replace") as fh:
                    head = fh.read(300)
                name = f[:-2]
                if not re.match(rf"/\* {re.escape(name)}: \S", head):
                    bad.append(f"{os.path.relpath(path, ROOT)}: does not open with \"/* {name}: <what it is for>\"")
    return bad


def commits():
    try:
        subprocess.run(["git", "-C", ROOT, "cat-file", "-e", STYLE_FROM + "^{commit}"], check=True,
                       capture_output=True)
        log = subprocess.run(["git", "-C", ROOT, "log", "--format=%h%x00%P%x00%B%x01", f"{STYLE_FROM}^..HEAD"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []  # no history here (a tarball, a shallow clone without it)
    bad = []
    for entry in log.split("\x01"):
        entry = entry.strip("\n")
        if not entry:
            continue
        sha, parents, msg = entry.split("\x00", 2)
        merge = len(parents.split()) > 1
        lines = msg.rstrip("\n").split("\n")
        if len(lines[0]) > SUBJECT_MAX:
            bad.append(f"commit {sha}: subject of {len(lines[0])} characters (at most {SUBJECT_MAX})")
        if not merge and (len(lines) < 3 or lines[1] != "" or not any(x.strip() for x in lines[2:])):
            bad.append(f"commit {sha}: no body (a blank line after the subject, then what and why)")
    return bad


def main():
    bad = top_comments() + commits()
    for b in bad:
        print(f"style: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
