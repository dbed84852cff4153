"""`flinklet autoscaler plan` gives, byte for byte, the pinned outputs of tests/golden/plan_golden.py's generated
inputs and of the docs' examples: the autoscaler's decisions did not change while it was made faster. Needs the
binary only (no Flink)."""
import os
import subprocess
import sys

from conftest import BIN

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "plan_golden.py")


def test_plan_outputs_are_the_pinned_ones():
    r = subprocess.run([sys.executable, GOLDEN, "check", "--bin", BIN], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "246 of 246 cases as pinned" in r.stdout, r.stdout
