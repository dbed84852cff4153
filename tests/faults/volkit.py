"""volkit: helpers of the volume fault tests (test_volume_faults.py, test_metadata_faults.py, test_status_record.py):
the LD_PRELOAD shim's path, a fast poll, a savepoint as Flink leaves one, and calls to flinklet's endpoint."""
import json
import os
import struct
import urllib.request

SHIM = os.environ.get("FLINKLET_VOLSHIM", os.path.abspath("build/volshim.so"))
FAST = {"flinklet.rest.poll-interval": "50 ms"}


def make_savepoint(state, job_id):
    """What Flink leaves for a completed savepoint: a directory of a new name (Flink's are random) with a
    _metadata Flink can read, its checkpoint id above those before it (Flink's counter goes on)."""
    parent = os.path.join(state, "savepoints")
    cid = len(os.listdir(parent)) + 1 if os.path.isdir(parent) else 1
    path = os.path.join(parent, f"savepoint-{job_id[:6]}-{os.urandom(6).hex()}")
    os.makedirs(path)
    with open(os.path.join(path, "_metadata"), "wb") as f:
        f.write(struct.pack(">IIQ", 0x4960672D, 4, cid) + b"\0" * 64)
    return path


def post(st, what):
    with open(st["supervisor"]["tokenFile"]) as f:
        token = f.read().strip()
    req = urllib.request.Request(f"http://{st['supervisor']['httpAddress']}/api/v1/{what}", data=b"",
                                 method="POST", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


def stable(sup, st):
    """STABLE as written by this flinklet (not a status.json an earlier one left)."""
    return (st and st["supervisor"]["pid"] == sup.proc.pid and st["lifecycleState"] == "STABLE"
            and st["jvm"]["pid"] > 0 and st)


def get(addr, path):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=30) as r:
        return r.status, json.loads(r.read())
