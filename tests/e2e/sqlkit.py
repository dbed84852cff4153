"""sqlkit: what the e2e files that run a SQL script as the job share (test_sql_script.py,
test_sql_exactly_once.py): a flinklet configuration whose job is an inline script (`spec.job.sql`), the events of a
kind, and the rows Flink's filesystem sink has committed (its hidden in-progress files left out)."""
import csv
import json
import os


def config_text(f, sql, allow_non_restored=False, parallelism=1, script=None):
    """f's configuration with the script inline as a literal block, or the file or URI script (no jarURI, no
    entryClass)."""
    lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:", f"  name: {f.name}",
             "spec:", "  flinkConfiguration:"]
    lines += [f"    {json.dumps(k)}: {json.dumps(str(v))}" for k, v in f.conf.items()]
    lines += ["  job:", f"    parallelism: {parallelism}",
              f"    allowNonRestoredState: {str(allow_non_restored).lower()}"]
    if script:  # a file, or a URI flinklet downloads (http://, https://, s3://)
        uri = str(script) if "://" in str(script) else f"local://{script}"
        return "\n".join(lines + [f"    sqlScript: {uri}"]) + "\n"
    lines += ["    sql: |"] + ["      " + line if line else "" for line in sql.splitlines()]
    return "\n".join(lines) + "\n"


def events_of(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def committed_rows(directory):
    """The CSV rows of the files Flink's filesystem sink committed under directory (a checkpoint's or the end's):
    its in-progress and pending files are hidden ones (`.part-...inprogress...`), whatever a killed JVM left too."""
    rows = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in sorted(files):
            if name.startswith((".", "_")):
                continue
            with open(os.path.join(root, name), newline="") as fh:
                rows += [r for r in csv.reader(fh) if r]
    return rows
