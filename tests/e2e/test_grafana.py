"""conf/grafana/flinklet-dashboard.json against what flinklet serves. What someone importing the dashboard relies on:
every PromQL query in it (panels and variables) asks for metrics a real flinklet's /metrics serves, with samples, on
the real MiniCluster with a checkpoint, a savepoint and the autoscaler's evaluations behind it; every metric flinklet
serves is on the dashboard; the Prometheus data source is the variable ${DS_PROMETHEUS}, and the panels are a
well-formed Grafana model (unique ids, places on the grid that do not overlap). Flink's own metrics (flink_*, served
by flinklet beside its own: tests/e2e/test_flink_metrics.py) are many; those the dashboard charts must be served, not
every one Flink has charted."""
import json
import os
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import wait_for

DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "conf", "grafana", "flinklet-dashboard.json")

AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.scaling.enabled": "false",  # recommendations only: the job keeps its parallelism
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "metrics.fetcher.update-interval": "2000",
}

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are not functions, keywords, label names
    (in matchers or grouping clauses), durations or variables."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", e):
        if not m.group(2) and m.group(1) not in KEYWORDS:
            names.add(m.group(1))
    return names


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def panels(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])


def queries(dash):
    """Every PromQL expression: the panels' targets, and the metric of each label_values() variable."""
    out = []
    for p in panels(dash):
        for t in p.get("targets", []):
            out.append(t["expr"])
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\(\s*(.+?)\s*,\s*\w+\s*\)", q)
        assert m, f"variable {v['name']}: a label_values(metric, label) query (got {q!r})"
        out.append(m.group(1))
    return out


def dashboard_metrics(dash):
    names = set()
    for q in queries(dash):
        found = metric_names(q)
        assert found, f"no metric in {q!r}"
        names |= found
    return names


def test_metric_names_of_promql():
    assert metric_names('100 * flinklet_volume_free_bytes{instance=~"$instance"} / flinklet_volume_size_bytes{x="a{b}"}') \
        == {"flinklet_volume_free_bytes", "flinklet_volume_size_bytes"}
    assert metric_names('max by (vertex_name) (flinklet_vertex_parallelism{instance=~"$instance"})') \
        == {"flinklet_vertex_parallelism"}
    assert metric_names("rate(flinklet_process_cpu_seconds_total[$__rate_interval]) > bool 0") \
        == {"flinklet_process_cpu_seconds_total"}
    assert metric_names("sum without (instance) (increase(a_total[1h])) or on (job) b") == {"a_total", "b"}


def test_dashboard_model():
    dash = load()
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    ds = [v for v in dash["templating"]["list"] if v["name"] == "DS_PROMETHEUS"]
    assert ds and ds[0]["type"] == "datasource" and ds[0]["query"] == "prometheus", ds
    ids = [p["id"] for p in panels(dash)]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    cells = {}
    for p in panels(dash):
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, (p["title"], g)
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t.get("datasource", p["datasource"])["uid"] == "${DS_PROMETHEUS}", p["title"]
    names = dashboard_metrics(dash)
    assert all(n.startswith(("flinklet_", "flink_")) for n in names), \
        sorted(n for n in names if not n.startswith(("flinklet_", "flink_")))
    # what the issue asks the dashboard to show
    for want in ("flinklet_lifecycle_state", "flinklet_jvm_restarts_total", "flinklet_flink_checkpoints_completed",
                 "flinklet_flink_checkpoints_failed", "flinklet_last_checkpoint_age_seconds", "flinklet_savepoints_total",
                 "flinklet_autoscaler_evaluations_total", "flinklet_vertex_parallelism", "flinklet_volume_free_bytes",
                 "flinklet_volume_write_errors_total",
                 # the job's panels (issue 28): records in and out per vertex, busy and back-pressure, source lag,
                 # checkpoint duration and size, state size, and whether Flink's metrics are there at all
                 "flink_taskmanager_job_task_numRecordsInPerSecond", "flink_taskmanager_job_task_numRecordsOutPerSecond",
                 "flink_taskmanager_job_task_busyTimeMsPerSecond",
                 "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
                 "flink_taskmanager_job_task_operator_pendingRecords", "flink_jobmanager_job_lastCheckpointDuration",
                 "flink_jobmanager_job_lastCheckpointSize", "flink_jobmanager_job_lastCheckpointFullSize",
                 "flinklet_flink_metrics_up"):
        assert want in names, want


def served(text):
    """Names of the samples in a Prometheus text exposition (a family without samples serves nothing)."""
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


# asan_elsewhere: /metrics is rendered under ASan by test_http; what this adds is the dashboard's side
@pytest.mark.asan_elsewhere
def test_every_queried_metric_is_served(flinklets):
    dash = load()
    # served only while a tuned JVM runs (tests/e2e/test_memory_tuning.py reads it there); pendingRecords only by a
    # source that knows its backlog (Kafka's), not by the datagen source of the job here, whose source lag the panel
    # shows as currentEmitEventTimeLag
    wanted = dashboard_metrics(dash) - {"flinklet_memory_tuning_running_bytes",
                                        "flink_taskmanager_job_task_operator_pendingRecords"}
    # a budget, so that memory tuning's recommendation and the smallest budget are served after an evaluation
    f = flinklets(conf=AUTOSCALER, memory="1g").start()
    f.wait_stable()
    f.wait_checkpoint(2)
    code, _ = f.http("/api/v1/savepoint", method="POST", token=f.token())
    assert code == 202, code
    wait_for(lambda: f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], 90, "the savepoint")

    def scrape():
        code, text = f.http("/metrics")
        assert code == 200
        return text

    # the autoscaler's gauges appear once it has evaluated a full metric window
    missing = {}

    def all_served():
        missing["now"] = sorted(wanted - served(scrape()))
        return not missing["now"]
    try:
        wait_for(all_served, 240, "every metric of the dashboard in /metrics")
    except AssertionError:
        raise AssertionError(f"queried by the dashboard, not served: {missing['now']}\n{scrape()}")
    text = scrape()
    have = served(text)
    assert not wanted - have, f"queried by the dashboard, not served: {sorted(wanted - have)}"
    # and the other way round: nothing flinklet serves of its own is missing from the dashboard (Flink's families,
    # a few hundred, are charted where they answer a question, not all)
    families = {fam.name for fam in text_string_to_metric_families(text) if fam.name.startswith("flinklet_")}
    charted = dashboard_metrics(dash)
    uncharted = [n for n in families if n not in charted and n + "_total" not in charted]
    assert "flinklet_memory_tuning_running_bytes" in dashboard_metrics(dash)
    assert not uncharted, f"served by flinklet, not on the dashboard: {sorted(uncharted)}"


# asan_elsewhere: as above
@pytest.mark.asan_elsewhere
def test_every_flinklet_family_of_the_dashboard_is_declared_with_every_option_off(flinklets):
    """A job with no autoscaler, no memory tuning and no checkpoint yet: every flinklet_ family the dashboard (or an
    alert) names is declared in /metrics (its HELP and TYPE), with or without samples, so that no query refers to a
    name Prometheus has never seen."""
    wanted = {n for n in dashboard_metrics(load()) if n.startswith("flinklet_")}
    f = flinklets(conf={"execution.checkpointing.interval": "1 h"}).start()
    f.wait_stable()
    code, text = f.http("/metrics")
    assert code == 200
    declared = set(re.findall(r"^# TYPE (flinklet_\w+) ", text, re.M))
    # a counter's samples are its family's name with _total (the dashboard queries the samples)
    missing = sorted(n for n in wanted if n not in declared and n.removesuffix("_total") not in declared)
    assert not missing, f"named by the dashboard, not declared with every option off: {missing}"
