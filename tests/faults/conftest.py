"""Fixtures of the fault-injection tests: the real build/flinklet, a fake "java" that only stays up, and the
misbehaving Flink REST server of fakeflink.py on rest.port. No real JVM, no real Flink: these tests are
about what flinklet does with what it is told (tests/e2e stays mock-free)."""
import os
import sys

import pytest

# the supervisor aborts on a broken internal invariant (src/supervisor/supervisor.c): a test that trips one fails loudly
os.environ.setdefault("FLINKLET_STRICT", "1")

from fakeflink import FakeFlink  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
# the harness (tests/testkit.py), re-exported to the tests; its wait_for polls every 0.5 s unless told: these
# tests pass interval=0.1 (flinklet's timers here are a few hundred milliseconds)
from testkit import BIN, Supervisor, free_port, wait_for  # noqa: E402,F401


@pytest.fixture
def server():
    s = FakeFlink().start()
    yield s
    s.close()


@pytest.fixture
def supervisors(tmp_path):
    made = []

    def make(server, **kw):
        s = Supervisor(tmp_path, server, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


@pytest.fixture(scope="session", autouse=True)
def real_binary():
    assert os.access(BIN, os.X_OK), f"{BIN} is not built (make)"
