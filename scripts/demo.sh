#!/usr/bin/env bash
# demo: runs the stateful demo job (tests/jobs, StatefulCounter) under flinklet with conf/demo.yaml and
# a state directory under the checkout, waits until it is RUNNING, and says where to look.
# Ctrl-C stops it (flinklet stops the JVM; the newest checkpoint stays the restore point), and running
# `make demo` again resumes from it. DEMO_SECONDS=N stops it by itself after N seconds.
set -euo pipefail
bin=$1 flink_home=$2 jar=$3
top=$(cd "$(dirname "$0")/.." && pwd)
state=${DEMO_STATE_DIR:-$top/build/demo-state}
mkdir -p "$state"

"$bin" check-config -c "$top/conf/demo.yaml" --state-dir "$state" >/dev/null
"$bin" run -c "$top/conf/demo.yaml" --state-dir "$state" --flink-home "$flink_home" --jar "$jar" \
	-- --rate 50 --keys 8 --output "$state/output" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' INT TERM

for _ in $(seq 1 120); do
	if "$bin" status --state-dir "$state" --ready; then break; fi
	if ! kill -0 $pid 2>/dev/null; then wait $pid; exit $?; fi
	sleep 1
done
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["flink"]["restPort"])' "$state/status.json")
cat <<MSG

======================================================================================
 flinklet demo: the job is RUNNING.
   status:       $bin status --state-dir $state      (or $state/status.json)
   events:       $state/events.jsonl
   checkpoints:  $state/checkpoints/
   Flink web UI: http://localhost:$port/   (REST: curl localhost:$port/jobs/overview)
   job output:   $state/output/   (committed files; lines are seq,key,count)
 Ctrl-C stops it; 'make demo' again resumes from the newest checkpoint.
======================================================================================

MSG
"$bin" status --state-dir "$state"
if [ -n "${DEMO_SECONDS:-}" ]; then
	sleep "$DEMO_SECONDS"
	"$bin" status --state-dir "$state"
	kill -TERM $pid
fi
wait $pid
