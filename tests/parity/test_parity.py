"""The differential test against the operator's Java autoscaler (issue 19): `make parity` runs this.

test_parity_with_the_operator generates PARITY_CASES plan documents (default 4000, seed PARITY_SEED) and needs every
difference between `flinklet autoscaler plan` and the operator's classes to be one of parity.KNOWN.
test_a_planted_difference_is_caught shows the comparison is not blind: outputs that agree stop agreeing when one
number of flinklet's answer is changed. Needs build/flinklet and the harness (build/parity, built by `make parity`).
"""
import copy
import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import parity  # noqa: E402

BIN = os.environ.get("FLINKLET_BIN", os.path.join(ROOT, "build", "flinklet"))
HARNESS = os.environ.get("PARITY_HARNESS", os.path.join(ROOT, "build", "parity"))
CASES = int(os.environ.get("PARITY_CASES", "4000"))
SEED = int(os.environ.get("PARITY_SEED", "19"))

if not os.path.exists(os.path.join(HARNESS, "flinklet-parity-harness.jar")):
    pytest.skip("no parity harness in %s: run `make parity`" % HARNESS, allow_module_level=True)


def test_parity_with_the_operator():
    r = subprocess.run([sys.executable, os.path.join(HERE, "parity.py"), "run", "--bin", BIN, "--harness", HARNESS,
                        "--cases", str(CASES), "--seed", str(SEED)], capture_output=True, text=True, timeout=3600)
    print(r.stdout[-20000:])
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-4000:]
    assert "UNEXPLAINED                              0" in r.stdout


def test_a_planted_difference_is_caught():
    cases = [parity.gen_case(SEED, i) for i in range(60)]
    answers = parity.run_harness(HARNESS, cases)
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            fl = parity.run_flinklet(BIN, c, tmp)
            diffs, used = parity.compare(c, fl, answers[c["id"]])
            if diffs or used or "error" in fl:
                continue
            v = c["plan"]["vertices"][0]["id"]
            for change in ("rate", "parallelism"):
                bad = copy.deepcopy(fl)
                if change == "rate":
                    bad["vertices"][v]["evaluated"]["TARGET_DATA_RATE"] = \
                        parity.fnum(bad["vertices"][v]["evaluated"]["TARGET_DATA_RATE"]) * 1.01 + 1
                else:
                    bad["vertices"][v]["newParallelism"] += 1
                assert parity.compare(c, bad, answers[c["id"]])[0], (change, c["id"])
            checked += 1
    assert checked >= 10
