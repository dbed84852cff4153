"""A job that fails, on the real MiniCluster (issue 27): its code throws (StatefulCounter --fail-after), Flink fails
it over once (restart-strategy fixed-delay, one attempt) and then gives up, the CLI ends the JVM with code 1. flinklet
names Flink's root exception, `java.lang.RuntimeException: boom ...` from the job's code, read from GET
/jobs/:id/exceptions in the shape of the Flink version at hand (the other answer shapes are in
tests/faults/test_status_record.py): in a JobFailover event while Flink restarts the job, and in a JobFailed event and status.json
`error` once it FAILED; the JVM gone, no task is said to run. In the core files of the Flink version matrix."""
from conftest import wait_for

BOOM = "java.lang.RuntimeException: boom (StatefulCounter --fail-after"


def test_a_job_that_fails_names_its_root_exception(flinklets):
    f = flinklets(
        conf={
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "1",
            # longer than Flink's web.refresh-interval (3 s): GET /jobs/:id, a cached copy, shows the failover
            "restart-strategy.fixed-delay.delay": "6 s",
            "flinklet.rest.poll-interval": "500 ms",
        },
        # each Count subtask throws after 150 records (about 3 s at 100 records/s over 2 subtasks)
        job={"upgradeMode": "last-state",
             "args": ["--rate", "100", "--keys", "8", "--fail-after", "150", "--output", "OUT"]},
    ).start()
    st = f.wait_stable()
    job_id, jvm = st["jobStatus"]["jobId"], st["jvm"]["pid"]

    # the failover Flink makes in the JVM: its root exception, from Flink's exception history
    ev = wait_for(lambda: [e for e in f.events() if e["type"] == "JobFailover"], 90, "a JobFailover event")
    assert BOOM in ev[0]["message"] and job_id in ev[0]["message"], ev[0]

    # Flink gives up after its one attempt: the job FAILED, the CLI ends the JVM with 1
    failed = wait_for(lambda: [e for e in f.events() if e["type"] == "JobFailed"], 90, "a JobFailed event")
    assert BOOM in failed[0]["message"] and job_id in failed[0]["message"], failed[0]
    assert failed[0]["level"] == "Warning"
    # status.json says so until the next JVM's job runs (flinklet restarts it at once, from its checkpoint): a status
    # read before events that show no JobRunning after the newest JobFailed is one written before that job ran
    def failed_status():
        s = f.status()
        types = [e["type"] for e in f.events()]
        newest = len(types) - 1 - types[::-1].index("JobFailed")
        return "JobRunning" not in types[newest:] and s["error"] and " FAILED: " in s["error"] and s
    st = wait_for(failed_status, 90, "status.json saying the job FAILED")
    assert st["error"].startswith(f"job {job_id} FAILED: ") and BOOM in st["error"], st["error"]
    exited = [e for e in f.events() if e["type"] == "JvmExited"]
    assert exited and "exited with code 1" in exited[0]["message"], exited
    st = wait_for(lambda: (s := f.status()) and s["jvm"]["pid"] not in (0, jvm) and s, 90, "the JVM started again")
    assert st["jvm"]["starts"] >= 2 and st["jvm"]["restarts"] == st["jvm"]["starts"] - 1, st["jvm"]
    f.stop()
    final = f.status()
    assert final["jvm"]["pid"] == 0 and final["jobStatus"]["tasks"]["running"] == 0, final
