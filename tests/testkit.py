"""testkit: helpers shared by the e2e tests, the fault-injection tests and the benchmarks: free loopback ports,
waiting for a condition, and what a Flink JVM started by hand needs (Java 17 flags, console logging)."""
import socket
import time

# The module flags Flink's own scripts pass on Java 17 (as src/flinkconf.c does for the MiniCluster).
JAVA17 = [
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED", "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED", "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
]

LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.console.ref = C
appender.console.name = C
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %-5p %c{1} - %m%n
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what, interval=0.5, error=AssertionError):
    """The first truthy value of pred(), polled every interval seconds; error after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise error(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def norm(location):
    """A snapshot location as a path: file:/x, file:///x and /x name the same directory."""
    p = location
    for prefix in ("file://", "file:"):
        if p.startswith(prefix):
            p = p[len(prefix):]
            break
    while p.startswith("//"):
        p = p[1:]
    return p.rstrip("/")
