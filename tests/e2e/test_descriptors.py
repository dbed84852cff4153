"""Issue 14, item 5: the JVM gets no descriptor of flinklet's but 0, 1 and 2. An inherited one would let the job's
code (which runs in that JVM) read the control API's connections, hold the state directory's lock after flinklet
is gone (a new flinklet could not start), or keep the HTTP port open. Checked from /proc on the real JVM."""
import os
import signal

from conftest import wait_for


def fd_targets(pid):
    """{fd number: readlink target} of a process."""
    out = {}
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            out[int(name)] = os.readlink(os.path.join(base, name))
        except OSError:  # closed meanwhile
            pass
    return out


def test_the_jvm_shares_no_descriptor_with_flinklet_but_its_output(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    jvm = st["jvm"]["pid"]
    # a client of the endpoint while we look: its connection is one of flinklet's sockets
    code, _ = f.http("/status")
    assert code == 200
    mine = fd_targets(f.proc.pid)
    theirs = fd_targets(jvm)
    shared_sockets = {t for t in mine.values() if t.startswith("socket:")} & \
        {t for t in theirs.values() if t.startswith("socket:")}
    assert not shared_sockets, f"the JVM holds flinklet's sockets {shared_sockets}:\n{mine}\n{theirs}"
    # files of the state directory flinklet holds open (its lock above all) are not the JVM's
    state = os.path.realpath(f.state)
    flinklet_files = {t for t in mine.values() if t.startswith(state + "/") and "/checkpoints/" not in t}
    assert flinklet_files, f"flinklet holds no file of the state directory open? {mine}"
    leaked = flinklet_files & set(theirs.values())
    assert not leaked, f"the JVM inherited {leaked}"
    # what it does share: its stdout and stderr, the pipes flinklet reads (and stdin on /dev/null)
    pipes_shared = {t for t in theirs.values() if t.startswith("pipe:")} & set(mine.values())
    assert {theirs[1], theirs[2]} <= pipes_shared, (theirs.get(1), theirs.get(2), mine)
    assert theirs[0] == "/dev/null"
    for fd, t in theirs.items():
        if fd > 2 and t in mine.values() and not t.startswith(("/", "anon_inode:")):
            raise AssertionError(f"the JVM's fd {fd} ({t}) is one of flinklet's")
    # and the lock works as it should: with flinklet gone (kill -9, the JVM dies with it) a new one starts
    os.kill(f.proc.pid, signal.SIGKILL)
    f.proc.wait(10)
    wait_for(lambda: not os.path.exists(f"/proc/{jvm}"), 30, "the JVM to die with flinklet")
    g = flinklets(state_dir=f.state).start()
    assert g.wait_stable()["jobStatus"]["jobId"] == st["jobStatus"]["jobId"]
