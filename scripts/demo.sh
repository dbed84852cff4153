#!/usr/bin/env bash
# demo: runs the stateful demo job (tests/jobs, StatefulCounter) under flinklet with conf/demo.yaml and a
# state directory under the checkout (DEMO_STATE_DIR, default build/demo-state), waits until it is RUNNING and
# says where to look and which restore point it resumed from. Ctrl-C stops it with a savepoint, and the banner
# then says whether the savepoint was taken and where; running `make demo` again resumes from it.
# DEMO_SECONDS=N stops it the same way by itself after N seconds. DEMO_OPTS adds flinklet options, e.g.
# DEMO_OPTS="-D rest.port=18081 -D flinklet.http.address=127.0.0.1:18091" where 8081 or 8091 is taken.
#
# Usage: scripts/demo.sh FLINKLET FLINK_HOME JOBS_JAR   (make demo passes the built ones)
#
# Signals: flinklet runs in a session of its own (setsid), so the terminal's SIGINT on Ctrl-C reaches this
# script (and make, which waits for it) but not flinklet. The script turns it into exactly one SIGTERM, which
# flinklet answers with stop-with-savepoint, then waits for flinklet to exit and reports. A second Ctrl-C sends
# a second SIGTERM: flinklet kills the JVM at once without a savepoint (exit 4), and the next run resumes from
# the newest complete checkpoint or savepoint. SIGTERM and SIGHUP (the terminal closed) to the script stop flinklet the same way.
# The script's exit status is flinklet's (0: stopped with the savepoint; docs/operations.md, "Exit codes").
set -euo pipefail
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
	echo "demo: needs bash 5.1 or newer (wait -p), this is $BASH_VERSION" >&2
	exit 2
fi
bin=$1 flink_home=$2 jar=$3
top=$(cd "$(dirname "$0")/.." && pwd)
state=${DEMO_STATE_DIR:-$top/build/demo-state}
mkdir -p "$state"
status_json=$state/status.json
read -ra opts <<<"${DEMO_OPTS:-}"

# field EXPR: the value of a Python expression over status.json (the document is `s`), empty when absent
field() {
	python3 - "$status_json" "$1" <<'PY' 2>/dev/null || true
import json, sys
try:
    with open(sys.argv[1]) as f:
        s = json.load(f)
    v = eval(sys.argv[2], {"s": s})
except Exception:
    v = None
print("" if v is None else v)
PY
}
say() { printf '%s\n' "$@" 2>/dev/null || true; } # the terminal may be gone (SIGHUP)

"$bin" check-config -c "$top/conf/demo.yaml" "${opts[@]}" --state-dir "$state" >/dev/null
# the savepoint before this run, to tell a new one from it when the run ends
sp_before=$(field 's["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]')

# From here on nothing may end the script before flinklet has exited: no set -e, and every helper (which the
# terminal's SIGINT reaches too) may fail. The trap is set before flinklet starts: a Ctrl-C at any instant is
# one SIGTERM to it.
set +e
stops=0 pid=
stop() { # [why]
	stops=$((stops + 1))
	if [ $stops -eq 1 ]; then
		say "" "flinklet demo: stopping${1:+ ($1)}: flinklet takes a savepoint, then ends the JVM" \
			"(Ctrl-C again: at once, without a savepoint)"
	else
		say "" "flinklet demo: stopping at once: flinklet kills the JVM without a savepoint"
	fi
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; fi
}
trap stop INT TERM HUP

# setsid execs flinklet in place (the script's children are no process group leaders: no job control), so $!
# is flinklet's pid
setsid "$bin" run -c "$top/conf/demo.yaml" "${opts[@]}" --state-dir "$state" --flink-home "$flink_home" --jar "$jar" \
	-- --rate 50 --keys 8 --output "$state/output" &
pid=$!
if [ $stops -gt 0 ]; then kill -TERM "$pid" 2>/dev/null; fi # a stop came before $pid was known

# ready: what `flinklet status --ready` says (STABLE, RUNNING, every task running), read from status.json itself,
# and the document is this flinklet's, not one an earlier run left behind. (`flinklet status` takes the state
# directory's lock for an instant when no supervisor holds it: while flinklet starts it must not run.)
ready() {
	local j='s["jobStatus"]' t='s["jobStatus"]["tasks"]'
	[ "$(field "(s['supervisor']['pid'] == $pid and s['lifecycleState'] == 'STABLE' and $j['state'] == 'RUNNING'
		and 0 < $t['running'] and $t['running'] + $t['finished'] == $t['total'])")" = True ]
}

# until the job is RUNNING, flinklet ends, or a stop comes (flinklet's log shows what it is doing meanwhile)
while [ $stops -eq 0 ] && kill -0 "$pid" 2>/dev/null && ! ready; do
	sleep 1
done

if [ $stops -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
	# Flink's web UI through flinklet's endpoint (Flink's own REST port is on loopback only)
	endpoint=$(field '"http://localhost:" + s["supervisor"]["httpAddress"].rpartition(":")[2]')
	ui="$endpoint/flink/"
	kind=$(field 's["restoredFrom"]["kind"]')
	if [ -z "$kind" ] || [ "$kind" = none ]; then
		restored="nothing: a fresh start (no checkpoint or savepoint in $state yet)"
	else
		restored="$kind $(field 's["restoredFrom"]["location"]')"
	fi
	say "" \
		"======================================================================================" \
		" flinklet demo: the job is RUNNING." \
		"   resumed from: $restored" \
		"   status page:  ${ui%flink/}" \
		"   status:       $bin status --state-dir $state      (or $status_json)" \
		"   events:       $state/events.jsonl" \
		"   checkpoints:  $state/checkpoints/" \
		"   Flink web UI: $ui   (REST: curl ${ui}jobs/overview)" \
		"   endpoint:     $endpoint/status, /metrics, /healthz; POST /api/v1/savepoint with the token in" \
		"                 $state/http.token (or: $bin savepoint --state-dir $state)" \
		"   job output:   $state/output/   (committed files; lines are seq,key,count)" \
		" Ctrl-C stops it with a savepoint; 'make demo' again resumes from that savepoint." \
		"======================================================================================" ""
	"$bin" status --state-dir "$state"
	if [ -n "${DEMO_SECONDS:-}" ]; then
		sleep "$DEMO_SECONDS"
		if [ $stops -eq 0 ]; then
			"$bin" status --state-dir "$state"
			stop "DEMO_SECONDS=$DEMO_SECONDS"
		fi
	fi
fi

# wait for flinklet itself: `wait` returns early for every trapped signal (-p tells which is which)
while :; do
	unset done_pid
	wait -p done_pid "$pid"
	code=$?
	if [ -n "${done_pid:-}" ] || [ $code -eq 127 ]; then break; fi
done
trap - INT TERM HUP

sp=$(field 's["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]')
ck=$(field 's["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["location"]')
error=$(field 's["error"]')
say "" "======================================================================================"
if [ $code -eq 0 ] && [ -n "$sp" ] && [ "$sp" != "$sp_before" ]; then
	say " flinklet demo: stopped with a savepoint (flinklet exit 0)." \
		"   savepoint:    $sp" \
		" 'make demo' again resumes from this savepoint."
elif [ -n "$ck" ]; then
	say " flinklet demo: stopped WITHOUT a savepoint (flinklet exit $code)${error:+: $error}" \
		"   newest checkpoint: $ck" \
		" 'make demo' again resumes from the newest complete checkpoint or savepoint in $state."
else
	say " flinklet demo: flinklet exited $code without a savepoint or checkpoint${error:+: $error}" \
		" 'make demo' again starts the job afresh (see $state/events.jsonl)."
fi
say "   status:       $bin status --state-dir $state" \
	"======================================================================================"
exit $code
