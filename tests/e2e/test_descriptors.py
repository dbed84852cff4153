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


def access_mode(pid, fd):
    """O_RDONLY, O_WRONLY or O_RDWR: how a process opened one of its descriptors."""
    with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
        for line in fh:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & os.O_ACCMODE
    raise AssertionError(f"no flags in /proc/{pid}/fdinfo/{fd}")


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
    # what it does share: its stdout and stderr, the pipes flinklet reads, and its stdin: the launcher's control
    # channel (flinklet.upgrade.keep-jvm, on by default), a pipe the JVM only reads and flinklet only writes
    pipes_shared = {t for t in theirs.values() if t.startswith("pipe:")} & set(mine.values())
    assert {theirs[0], theirs[1], theirs[2]} <= pipes_shared, (theirs.get(0), theirs.get(1), theirs.get(2), mine)
    assert access_mode(jvm, 0) == os.O_RDONLY
    assert [access_mode(f.proc.pid, fd) for fd, t in mine.items() if t == theirs[0]] == [os.O_WRONLY]
    for fd in (1, 2):
        assert access_mode(jvm, fd) == os.O_WRONLY
        assert {access_mode(f.proc.pid, m) for m, t in mine.items() if t == theirs[fd]} == {os.O_RDONLY}
    for fd, t in theirs.items():
        if fd > 2 and t in mine.values() and not t.startswith(("/", "anon_inode:")):
            raise AssertionError(f"the JVM's fd {fd} ({t}) is one of flinklet's")
    # and the lock works as it should: with flinklet gone (kill -9, the JVM dies with it) a new one starts
    os.kill(f.proc.pid, signal.SIGKILL)
    f.proc.wait(10)
    wait_for(lambda: not os.path.exists(f"/proc/{jvm}"), 30, "the JVM to die with flinklet")
    g = flinklets(state_dir=f.state).start()
    assert g.wait_stable()["jobStatus"]["jobId"] == st["jobStatus"]["jobId"]

