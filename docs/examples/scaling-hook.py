#!/usr/bin/env python3
"""flinklet's scaling hook: no rescale on Fridays after 15:00 UTC, and never more than 16 slots in all."""
import json
import sys
import time

MAX_SLOTS = 16

proposal = json.load(sys.stdin)
now = time.gmtime(proposal["time"] / 1000)
if now.tm_wday == 4 and now.tm_hour >= 15:
    print(json.dumps({"decision": "veto", "reason": "no rescale on Friday afternoons"}))
    sys.exit(0)
wanted = {v["id"]: v["proposedParallelism"] for v in proposal["vertices"]}
# with slot sharing, the job needs as many slots as its widest vertex
if max(wanted.values()) <= MAX_SLOTS:
    print(json.dumps({"decision": "apply"}))
else:
    capped = {v["id"]: min(v["proposedParallelism"], MAX_SLOTS)
              for v in proposal["vertices"] if not v["excluded"] and v["proposedParallelism"] > MAX_SLOTS}
    print(json.dumps({"decision": "adjust", "parallelism": capped, "reason": f"capped at {MAX_SLOTS} slots"}))
