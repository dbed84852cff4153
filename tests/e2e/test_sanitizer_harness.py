"""The sanitizer check of make e2e-asan is shown able to fail. Under e2e-asan, conftest.py fails every test during
which flinklet (built with -fsanitize=address,undefined) left an asan.* or ubsan.* report; a check that looked in
the wrong place, or a binary whose sanitizers were not on, would pass everything. Here the same binary, with the
same options, runs with a preloaded library that loses a block, and LeakSanitizer's report must land where
conftest.py looks, naming the planted function; a program built like flinklet that overflows a signed int must
leave UBSan's report there too.
Skipped unless FLINKLET_SANITIZER_LOGS is set (make e2e-asan)."""
import os
import shlex
import subprocess

import pytest

from conftest import BIN, SANITIZER_LOGS, _read, _sanitizer_env, sanitizer_reports

pytestmark = pytest.mark.skipif(not SANITIZER_LOGS, reason="checks the e2e-asan harness: make e2e-asan")

PLANTED = r"""
#include <stdlib.h>
#include <string.h>
/* loaded into flinklet: a block lost before main when FLINKLET_PLANT=leak */
__attribute__((constructor)) static void plant_fault(void)
{
	const char *what = getenv("FLINKLET_PLANT");
	if (what && !strcmp(what, "leak")) {
		void *volatile lost = malloc(48);
		lost = NULL;
	}
}
"""


@pytest.fixture(scope="module")
def plant(tmp_path_factory):
    d = tmp_path_factory.mktemp("plant")
    src, lib = d / "plant.c", d / "plant.so"
    src.write_text(PLANTED)
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O0", "-o", str(lib), str(src)], check=True)
    return str(lib)


def run_planted(plant, tmp_path, what):
    """flinklet --version with the fault `what` planted, its reports in a directory of this test's own."""
    logdir = tmp_path / "reports"
    logdir.mkdir()
    env = {**os.environ, **_sanitizer_env(str(logdir)), "LD_PRELOAD": plant}
    if what:
        env["FLINKLET_PLANT"] = what
    r = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=60, env=env)
    return r, reports_in(logdir)


def reports_in(logdir):
    """{"asan" or "ubsan": the report's text} of what the harness's own lookup (conftest.sanitizer_reports, the
    one that fails e2e-asan's tests) finds under logdir."""
    return {os.path.basename(p).split(".")[0]: _read(p, limit=10**6) for p in sanitizer_reports(str(logdir))}


def test_a_planted_leak_is_reported_where_the_harness_looks(plant, tmp_path):
    r, reports = run_planted(plant, tmp_path, "leak")
    assert r.returncode != 0, "LeakSanitizer fails the exit"
    assert "asan" in reports, (r.returncode, r.stderr[-2000:], reports)
    assert "detected memory leaks" in reports["asan"] and "48 byte(s)" in reports["asan"], reports["asan"][-3000:]
    assert "plant_fault" in reports["asan"], reports["asan"][-3000:]


OVERFLOW = r"""
#include <limits.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	(void)argv;
	volatile int big = INT_MAX - 1 + argc;
	volatile int more = big + 1; /* argc is 1: one past INT_MAX */
	printf("%d\n", more);
	return 0;
}
"""


def test_a_planted_overflow_is_reported_where_the_harness_looks(tmp_path):
    """UBSan's half: an overflow in a program built and linked the way flinklet's sanitizer build is
    (FLINKLET_ASAN_CC, from the Makefile), run with the harness's options, reports into the directory conftest.py
    reads. (With gcc's shared sanitizer runtimes, UBSan ignored log_path and wrote to stderr, unseen; the Makefile
    links them statically since this test found it.)"""
    cc = os.environ.get("FLINKLET_ASAN_CC", "")
    assert cc, "make e2e-asan sets FLINKLET_ASAN_CC: the compiler command line of flinklet's sanitizer build"
    src, prog = tmp_path / "overflow.c", tmp_path / "overflow"
    src.write_text(OVERFLOW)
    subprocess.run([*shlex.split(cc), "-o", str(prog), str(src)], check=True)
    logdir = tmp_path / "reports"
    logdir.mkdir()
    r = subprocess.run([str(prog)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **_sanitizer_env(str(logdir))})
    assert r.returncode != 0, "-fno-sanitize-recover: the first finding ends the process"
    reports = reports_in(logdir)
    assert "ubsan" in reports, (r.returncode, r.stderr[-2000:], reports)
    assert "signed integer overflow" in reports["ubsan"] and "overflow.c" in reports["ubsan"], reports["ubsan"]


def test_without_a_planted_fault_there_is_no_report(plant, tmp_path):
    r, reports = run_planted(plant, tmp_path, None)
    assert r.returncode == 0 and r.stdout.startswith("flinklet "), (r.returncode, r.stderr[-2000:])
    assert reports == {}, reports
