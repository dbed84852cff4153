"""What the Flink Kubernetes Operator accepts as a FlinkDeployment, for the export tests, in two versions: 1.16
(the default) and 1.15.0. For each: the CRD's openAPIV3Schema (tests/fixtures/operator-1.16 and
tests/fixtures/operator-1.15.0, the operator's own files), what the API server prunes (a field the CRD does not
know is dropped before the operator sees it), and its admission validator's rules for an application deployment
(DefaultValidator and AutoscalerValidator, as summed up in the project's reference notes for 1.15 and read in the
operator's source for 1.16). `violations(doc, operator)` returns one message per broken rule; an empty list means
that operator would take the document."""
import os
import re
from fractions import Fraction

import jsonschema
import yaml

DEFAULT = "1.16"
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
CRDS = {
    "1.15": os.path.join(FIXTURES, "operator-1.15.0", "flinkdeployments.flink.apache.org-v1.yml"),
    "1.16": os.path.join(FIXTURES, "operator-1.16", "flinkdeployments.flink.apache.org-v1.yml"),
}
CRD = CRDS["1.15"]  # the 1.15.0 file, as before
NAME = re.compile(r"^[a-z]([-a-z0-9]{0,43}[a-z0-9])?$")
FORBIDDEN = ("kubernetes.namespace", "kubernetes.cluster-id", "high-availability.cluster-id")
LOG_KEYS = ("log4j-console.properties", "logback-console.xml")
UNIT_RANGE = ("job.autoscaler.target.utilization", "job.autoscaler.target.utilization.boundary",
              "job.autoscaler.utilization.target", "job.autoscaler.utilization.min", "job.autoscaler.utilization.max")
# what stands for the JobManager's and TaskManager's memory when the spec gives none (Flink's process specs)
JM_MEMORY_KEYS = ("jobmanager.memory.process.size", "jobmanager.memory.flink.size", "jobmanager.memory.heap.size")
TM_MEMORY_KEYS = ("taskmanager.memory.process.size", "taskmanager.memory.flink.size")

_schemas = {}


def schema(operator=DEFAULT):
    if operator not in _schemas:
        with open(CRDS[operator]) as f:
            crd = yaml.safe_load(f)
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
        _schemas[operator] = version["schema"]["openAPIV3Schema"]
    return _schemas[operator]


def version_at_least(label, wanted):
    def parts(v):
        return tuple(int(x) for x in v[1:].split("_"))
    return parts(label) >= parts(wanted)


# Kubernetes' resource.Quantity: a decimal number and a binary (Ki..Ei), decimal (n..E) or exponent suffix
QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": Fraction(1, 10**9),
          "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "P": 10**15, "E": 10**18}
FLINK_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 2**10, "kb": 2**10, "kibibytes": 2**10, "m": 2**20, "mb": 2**20,
               "mebibytes": 2**20, "g": 2**30, "gb": 2**30, "gibibytes": 2**30, "t": 2**40, "tb": 2**40,
               "tebibytes": 2**40}


def k8s_quantity(text):
    """What Kubernetes reads a quantity as (a Fraction); ValueError for what it does not parse."""
    m = QUANTITY.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Fraction(10) ** int(suffix[1:])
    return number * SUFFIX[suffix]


def operator_memory_bytes(text):
    """What the operator reads a memory of `resource` (1.15, 1.16) or `resources` (1.16) as
    (parseResourceMemoryString: Flink's MemorySize first, so "2048m" is 2 GiB to it while Kubernetes reads
    millibytes, else Kubernetes' quantity); ValueError when neither takes it."""
    s = str(text).strip()
    m = re.match(r"^(\d+)(.*)$", s)
    if m and m.group(2).strip().lower() in FLINK_UNITS:
        return int(m.group(1)) * FLINK_UNITS[m.group(2).strip().lower()]
    q = re.sub(r"\s", "", s).upper()
    q = q[:-1] if q.endswith("B") else q
    q = q[:-1] + "i" if q.endswith("I") else q
    v = k8s_quantity(q)
    if v.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return int(v)


DURATION_UNITS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1, "s": 1000,
                  "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000, "m": 60000, "min": 60000,
                  "mins": 60000, "minute": 60000, "minutes": 60000, "h": 3600000, "hour": 3600000,
                  "hours": 3600000, "d": 86400000, "day": 86400000, "days": 86400000}


def duration_ms(text):
    """Flink's Duration syntax ("30 s", "1 min", a bare number is milliseconds)."""
    m = re.match(r"^\s*(\d+)\s*([a-z]*)\s*$", str(text).lower())
    if not m or m.group(2) not in DURATION_UNITS:
        raise ValueError(f"{text!r} is not a duration")
    return int(m.group(1)) * DURATION_UNITS[m.group(2)]


def pruned(doc, sch, path=""):
    """The fields the API server drops from `doc` under a structural schema (unknown to it, not preserved)."""
    out = []
    if not isinstance(doc, dict) or not isinstance(sch, dict) or sch.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(doc, list) and isinstance(sch, dict) and "items" in sch:
            for i, item in enumerate(doc):
                out += pruned(item, sch["items"], f"{path}[{i}]")
        return out
    props, extra = sch.get("properties"), sch.get("additionalProperties")
    for k, v in doc.items():
        if props is not None and k in props:
            out += pruned(v, props[k], f"{path}.{k}" if path else k)
        elif isinstance(extra, dict):
            out += pruned(v, extra, f"{path}.{k}" if path else k)
        elif extra is not True:  # an object with neither properties nor additionalProperties keeps nothing
            out.append(f"{path}.{k}" if path else k)
    return out


def memory_defined(part, operator):
    """The memory the operator takes from the spec's resource (and, from 1.16, resources)."""
    if (part.get("resource") or {}).get("memory"):
        return True
    if operator == "1.15":
        return False
    res = part.get("resources") or {}
    return any((res.get(s) or {}).get("memory") is not None for s in ("requests", "limits"))


def resources_violations(name, res):
    """DefaultValidator.validateResourceRequirements (1.16): each quantity parses, cpu and memory are positive,
    and no request exceeds its limit."""
    out = []
    amounts = {}
    for section in ("requests", "limits"):
        for key, q in (res.get(section) or {}).items():
            try:
                if key == "memory":
                    v = operator_memory_bytes(q)
                    if v <= 0:
                        out.append(f"{name} resource requirements {section} memory must be positive: {q}")
                elif key == "cpu":
                    v = k8s_quantity(q)
                    if v <= 0:
                        out.append(f"{name} resource requirements {section} cpu must be positive: {q}")
                else:
                    v = k8s_quantity(q)
                    if v < 0:
                        out.append(f"{name} resource requirements {section} {key} must not be negative: {q}")
                amounts[(section, key)] = v
            except ValueError as e:
                out.append(f"{name} resource requirements {section} {key} parse error: {e}")
    for key in ("cpu", "memory"):
        req, lim = amounts.get(("requests", key)), amounts.get(("limits", key))
        if req is not None and lim is not None and req > lim:
            out.append(f"{name} resource requirements {key} request must not exceed its limit")
    return out


def autoscaler_violations(conf, operator):
    """AutoscalerValidator and DefaultValidator's autoscaler rules that 1.16 added (FLINK-39826), with the
    autoscaler on."""
    if operator == "1.15" or str(conf.get("job.autoscaler.enabled", "false")).lower() != "true":
        return []
    out = []
    for k in ("job.autoscaler.memory.gc-pressure.threshold", "job.autoscaler.memory.heap-usage.threshold"):
        if k in conf and not 0 <= float(conf[k]) <= 1:
            out.append(f"{k} {conf[k]} is not within [0, 1]")
    try:
        window = duration_ms(conf.get("job.autoscaler.metrics.window", "15 min"))
        interval = duration_ms(conf.get("kubernetes.operator.reconcile.interval", "60 s"))
    except ValueError as e:
        return out + [str(e)]
    if window < interval:
        out.append("The autoscaler metric window (job.autoscaler.metrics.window) must not be smaller than the "
                   "operator reconcile interval (kubernetes.operator.reconcile.interval)")
    return out


def flatten(conf, prefix=""):
    """flinkConfiguration as the operator reads it: nested maps joined with '.' (FLINK-37406), values as strings."""
    out = {}
    for k, v in (conf or {}).items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def violations(doc, operator=DEFAULT):
    out = []
    try:
        jsonschema.Draft7Validator(schema(operator)).validate(doc)
    except jsonschema.ValidationError as e:
        out.append(f"schema: {'/'.join(str(p) for p in e.absolute_path)}: {e.message}")
    sch = schema(operator)
    for p in pruned(doc.get("spec") or {}, sch["properties"]["spec"], "spec"):
        out.append(f"{p}: unknown to the operator {operator}'s CRD (the API server drops it)")
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    conf = flatten(spec.get("flinkConfiguration"))
    job = spec.get("job")
    # 1. the name
    if not NAME.match(str(meta.get("name", ""))):
        out.append(f"metadata.name {meta.get('name')!r} does not match {NAME.pattern}")
    # 2. the Flink version
    fv = spec.get("flinkVersion")
    if not fv:
        out.append("Flink Version must be defined.")
    elif not version_at_least(fv, "v1_15"):
        out.append(f"flinkVersion {fv} is older than v1_15")
    # 3. the operator's own keys and options
    for k in FORBIDDEN:
        if k in conf:
            out.append(f"flinkConfiguration sets {k}, which the operator owns")
    ha = str(conf.get("high-availability.type", conf.get("high-availability", "NONE"))).lower()
    if str(conf.get("kubernetes.operator.deployment.rollback.enabled", "false")).lower() == "true" and ha == "none":
        out.append("rollback enabled without high availability")
    if (str(conf.get("kubernetes.operator.cluster.health-check.enabled", "false")).lower() == "true"
            and str(conf.get("kubernetes.operator.jm-deployment-recovery.enabled", "true")).lower() == "false"):
        out.append("health check enabled while JobManager deployment recovery is off")
    # 4. log configuration
    for k in (spec.get("logConfiguration") or {}):
        if k not in LOG_KEYS:
            out.append(f"logConfiguration key {k} is not one the operator knows")
    # 5. the job
    if job:
        ck = conf.get("execution.checkpointing.dir") or conf.get("state.checkpoints.dir")
        sp = conf.get("execution.checkpointing.savepoint-dir") or conf.get("state.savepoints.dir")
        mode = job.get("upgradeMode", "stateless")
        if mode in ("last-state", "savepoint") and not ck:
            out.append(f"upgradeMode {mode} needs execution.checkpointing.dir")
        if not sp:
            if mode == "savepoint":
                out.append("upgradeMode savepoint needs execution.checkpointing.savepoint-dir")
            if job.get("savepointTriggerNonce") is not None:
                out.append("savepointTriggerNonce needs execution.checkpointing.savepoint-dir")
            for k in ("kubernetes.operator.periodic.savepoint.interval",
                      "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age"):
                if k in conf:
                    out.append(f"{k} needs execution.checkpointing.savepoint-dir")
        if (spec.get("taskManager") or {}).get("replicas") is None and int(job.get("parallelism", 1)) < 1:
            out.append("job parallelism must be at least 1")
    # 6. JobManager and TaskManager resources (what the API server pruned is not there for the operator)
    for part, name, keys in (("jobManager", "JobManager", JM_MEMORY_KEYS),
                             ("taskManager", "TaskManager", TM_MEMORY_KEYS)):
        spec_part = spec.get(part) or {}
        res = spec_part.get("resource") or {}
        mem = res.get("memory")
        if mem is not None:
            try:
                operator_memory_bytes(mem)
            except ValueError as e:
                out.append(f"{name} resource memory parse error: {e}")
        if operator != "1.15":
            out += resources_violations(name, spec_part.get("resources") or {})
        if not memory_defined(spec_part, operator) and not any(k in conf for k in keys):
            where = f"`spec.{part}.resource.memory`"
            if operator != "1.15":
                where += f" or `spec.{part}.resources.requests.memory`"
            out.append(f"{name} resource memory must be defined using {where}")
        replicas = spec_part.get("replicas")
        if replicas is not None and replicas < 1:
            out.append(f"{part}.replicas must be at least 1")
    if ((spec.get("jobManager") or {}).get("replicas") or 1) > 1 and ha == "none":
        out.append("more than one JobManager without high availability")
    # 7. the autoscaler's options
    for k in UNIT_RANGE:
        if k in conf:
            try:
                v = float(conf[k])
            except ValueError:
                out.append(f"{k} {conf[k]!r} is not a number")
                continue
            if not 0 <= v <= 1:
                out.append(f"{k} {v} is not within [0, 1]")
    out += autoscaler_violations(conf, operator)
    return out
