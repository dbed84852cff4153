/* config_options: flinklet's own options (flinklet.*, and the operator's client timeout): the table of each
 * key with its kind, default, range and documentation (config_check checks and fills in the spec by it,
 * config_emit and the docs print it), and the lookup of one by its key. */
#include "config.h"

#include <string.h>

const struct option_def flinklet_options[] = {
    {"flinklet.state.dir", OPT_PATH, "/var/lib/flinklet", 0, 0, NULL,
     "The state directory (the mounted volume): status.json, events.jsonl, checkpoints/, savepoints/, "
     "autoscaler/. Overridden by --state-dir."},
    {"flinklet.http.address", OPT_HOSTPORT, "0.0.0.0:8091", 0, 0, NULL,
     "host:port of the supervisor's own HTTP endpoint (health, readiness, status, metrics, control): an IPv4 "
     "address, localhost or a bracketed IPv6 address ([::1]:8091; [::]:8091 is dual-stack); off: none."},
    {"flinklet.http.max-connections", OPT_INT, "64", 1, 10000, NULL,
     "Open connections the HTTP endpoint keeps at most; one more is closed at once."},
    {"flinklet.http.max-connections-per-ip", OPT_INT, "16", 0, 10000, NULL,
     "Open connections from one client address the HTTP endpoint keeps at most; one more is closed at once "
     "(0: no per-address limit)."},
    {"flinklet.http.connection-timeout", OPT_DURATION, "10 s", 1000, 0, NULL,
     "An HTTP connection without any traffic for this long is closed (at least 1 s)."},
    {"flinklet.metrics.flink", OPT_BOOL, "true", 0, 0, NULL,
     "Serve Flink's own metrics (the job's throughput, busy and back-pressured time, checkpoints, ...) through "
     "flinklet's /metrics: each JVM gets flinklet's Prometheus reporter on a free loopback port, which flinklet "
     "scrapes. Not when the configuration sets metrics.reporter.* or metrics.reporters (the user's reporters win)."},
    {"flinklet.flink.home", OPT_PATH, NULL, 0, 0, NULL,
     "Flink installation whose lib/ holds the jars. Default: --flink-home, else $FLINK_HOME, else /opt/flink."},
    {"flinklet.java.bin", OPT_PATH, NULL, 0, 0, NULL,
     "The java launcher. Default: $JAVA_HOME/bin/java, else java on $PATH."},
    {"flinklet.jvm.options", OPT_STRING, "", 0, 0, NULL,
     "Extra JVM options, split on white space, appended after the ones flinklet derives."},
    {"flinklet.jvm.class-data-sharing", OPT_ENUM, "auto", 0, 0, "auto,off",
     "auto: the JVM starts from a class-data-sharing archive of the classes an earlier JVM of the same JDK and "
     "Flink jars loaded (made once, after the job first runs; not under 512m of spec.resources.memory); off: "
     "never."},
    {"flinklet.jvm.class-data-sharing.archive-dir", OPT_PATH, NULL, 0, 0, NULL,
     "Where the class-data-sharing archive is kept (a cache). Default: <state dir>/cds."},
    {"flinklet.jvm.class-data-sharing.dump-delay", OPT_DURATION, "30 s", 0, 0, NULL,
     "How long the job runs before flinklet asks its JVM to write the archive (the job pauses while it does)."},
    {"flinklet.jvm.crash-logs", OPT_INT, "5", 1, 1000, NULL,
     "The JVM's fatal-error logs (hs_err_pid<N>.log) are written to <state dir>/jvm-crashes; those of this many "
     "crashes, the newest, are kept there."},
    {"flinklet.upgrade.keep-jvm", OPT_BOOL, "true", 0, 0, NULL,
     "true: an upgrade that changes only the job (its jar, entry class, arguments, parallelism, job-level options) "
     "submits the new job to the running JVM after the stop-with-savepoint; false: every upgrade starts a new JVM."},
    {"flinklet.recovery.standby-jvm", OPT_BOOL, "false", 0, 0, NULL,
     "true: once the job is RUNNING, a second JVM is started and waits idle (no job, no port; its memory is the "
     "cost: an idle JVM's resident set, about 180 MiB measured); when the job's JVM dies, the restart runs the job "
     "in it instead of starting a JVM (docs/operations.md, \"The standby JVM\")."},
    {"flinklet.startup.timeout", OPT_DURATION, "3 min", 0, 0, NULL,
     "How long the JVM may take from launch until the job is RUNNING with every task running."},
    {"flinklet.leftovers.cleanup", OPT_BOOL, "true", 0, 0, NULL,
     "Before each launch, remove what dead JVMs left of the job on the volume: checkpoints beyond the newest "
     "num-retained, unfinished checkpoints and savepoints, and shared/ files no kept snapshot names."},
    {"flinklet.startup.restore-timeout", OPT_DURATION, "30 min", 0, 0, NULL,
     "How long a launch that is visibly restoring its state (Flink restores the point, its REST API answers, the "
     "job is not yet RUNNING with every task running) may take: the startup timeout is extended meanwhile."},
    {"flinklet.rest.poll-interval", OPT_DURATION, "2 s", 10, 0, NULL,
     "How often the supervisor asks Flink's REST API for the job's state and checkpoints."},
    {"flinklet.rest.startup-poll-interval", OPT_DURATION, "200 ms", 10, 0, NULL,
     "How often it asks while a JVM starts, until the job is RUNNING (also while a stop waits for RUNNING to "
     "take its savepoint); each request then times out after three quarters of it, longer while they run out."},
    {"flinklet.shutdown.timeout", OPT_DURATION, "25 s", 0, 0, NULL,
     "The whole budget from SIGTERM to exit (fits Kubernetes' default 30 s grace period)."},
    {"flinklet.jvm.stop-grace-period", OPT_DURATION, "10 s", 0, 0, NULL,
     "After SIGTERM to the JVM, how long to wait before SIGKILL (always within the shutdown budget)."},
    {"flinklet.restart.backoff.initial", OPT_DURATION, "1 s", 0, 0, NULL,
     "Delay before the first restart after a crash; it doubles with each consecutive crash."},
    {"flinklet.restart.backoff.max", OPT_DURATION, "1 min", 0, 0, NULL, "The longest delay between restarts."},
    {"flinklet.restart.stable-period", OPT_DURATION, "5 min", 0, 0, NULL,
     "A job RUNNING this long resets the backoff and the crash-loop count."},
    {"flinklet.restart.max-attempts", OPT_INT, "10", 0, 1000000, NULL,
     "Consecutive failed starts before the supervisor gives up (lifecycle FAILED, exit 1); 0: never."},
    {"flinklet.restore.fallback", OPT_ENUM, "previous", 0, 0, "previous,never",
     "When Flink cannot read the newest restore point: previous (restore the next older one, loudly) or never "
     "(stop with lifecycle FAILED instead of rewinding the job)."},
    {"flinklet.memory-tuning.relaunch-above", OPT_MEMORY, "0", 0, 0, NULL,
     "With job.autoscaler.memory.tuning.enabled: when a recommendation moves at least this much memory into or out "
     "of the heap, flinklet relaunches the job through a savepoint at once to apply it; 0 (the default): memory "
     "tuning waits for the next launch flinklet makes anyway."},
    {"flinklet.restore.claim-savepoints", OPT_ENUM, "auto", 0, 0, "auto,never",
     "auto: restore flinklet's own native stop savepoints in claim mode where the Flink version can restore the "
     "checkpoints after such a restore (FLINK-39964: 2.2.2, 2.3.1, 2.4 and later), so that the first checkpoint "
     "after the restore is incremental; never: every savepoint in no_claim mode."},
    {"flinklet.restore.max-failures", OPT_INT, "3", 1, 1000, NULL,
     "Consecutive launches that got as far as restoring the same point and failed before it is given up "
     "(without evidence that Flink cannot read it)."},
    {"flinklet.health.rest-timeout", OPT_DURATION, "1 min", 0, 0, NULL,
     "The hang window: a running JVM whose REST API left this long's worth of polls (one per "
     "flinklet.rest.poll-interval) unanswered in a row is hung: it is killed and restarted."},
    {"kubernetes.operator.cluster.health-check.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "The operator's job health check: restart on too many job restarts or no checkpoint progress."},
    {"kubernetes.operator.cluster.health-check.restarts.threshold", OPT_INT, "64", 1, 1000000000, NULL,
     "More job restarts than this within the window make the job unhealthy."},
    {"kubernetes.operator.cluster.health-check.restarts.window", OPT_DURATION, "2 min", 0, 0, NULL,
     "The window of the restarts threshold."},
    {"kubernetes.operator.cluster.health-check.checkpoint-progress.enabled", OPT_BOOL, "true", 0, 0, NULL,
     "With the health check on: no completed checkpoint within the window makes the job unhealthy."},
    {"kubernetes.operator.cluster.health-check.checkpoint-progress.window", OPT_DURATION, NULL, 0, 0, NULL,
     "Default: max(checkpoint interval, checkpoint timeout) x (tolerable failed checkpoints + 2)."},
    {"flinklet.snapshot.timeout", OPT_DURATION, "10 min", 0, 0, NULL,
     "How long a savepoint or checkpoint flinklet asked for (manual, periodic, upgrade, suspend) may take."},
    {"flinklet.volume.min-free-percent", OPT_INT, "5", 0, 99, NULL,
     "Below this share of free space on the state volume: a VolumeLow event and a status error (0: off)."},
    {"kubernetes.operator.periodic.savepoint.interval", OPT_DURATION, NULL, 0, 0, NULL,
     "Take a savepoint this often (PERIODIC). Default: none."},
    {"kubernetes.operator.periodic.checkpoint.interval", OPT_DURATION, NULL, 0, 0, NULL,
     "Trigger a checkpoint this often (PERIODIC), besides Flink's own interval. Default: none."},
    {"kubernetes.operator.savepoint.history.max.count", OPT_INT, "10", 1, 100000, NULL,
     "Savepoints kept in the history; older ones are disposed of."},
    {"kubernetes.operator.savepoint.history.max.age", OPT_DURATION, "1 d", 0, 0, NULL,
     "Savepoints older than this are disposed of (the newest is always kept)."},
    {"kubernetes.operator.savepoint.cleanup.enabled", OPT_BOOL, "true", 0, 0, NULL,
     "Dispose of savepoints beyond the history limits."},
    {"kubernetes.operator.savepoint.format.type", OPT_ENUM, NULL, 0, 0, "CANONICAL,NATIVE",
     "The format of the savepoints flinklet takes. Default: NATIVE with forst (every savepoint) and for rocksdb's "
     "stop savepoints (shutdown, suspend, upgrade within rocksdb), CANONICAL otherwise."},
    {"kubernetes.operator.checkpoint.type", OPT_ENUM, "FULL", 0, 0, "FULL,INCREMENTAL",
     "The type of the checkpoints flinklet triggers (Flink's REST API refuses INCREMENTAL)."},
    {"kubernetes.operator.deployment.rollback.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Roll an upgraded spec back to the last stable one when it is not RUNNING within the readiness timeout."},
    {"kubernetes.operator.deployment.readiness.timeout", OPT_DURATION, "5 min", 0, 0, NULL,
     "How long an upgraded spec may take to be RUNNING before it is rolled back."},
    {"kubernetes.operator.job.upgrade.last-state-fallback.enabled", OPT_BOOL, "true", 0, 0, NULL,
     "When the savepoint of an upgrade or suspend fails: go on from the newest checkpoint (true) or keep the job "
     "running on the old spec (false)."},
    {"flinklet.job.jar.sha256", OPT_STRING, NULL, 0, 0, NULL,
     "The sha256 (64 hex digits) a downloaded jar must have; it also names the jar in the cache."},
    {"flinklet.job.sql-script.sha256", OPT_STRING, NULL, 0, 0, NULL,
     "The sha256 (64 hex digits) a downloaded SQL script (a remote spec.job.sqlScript) must have; it also names the "
     "script in the cache."},
    {"flinklet.artifacts.timeout", OPT_DURATION, "2 min", 1000, 0, NULL,
     "The total time budget of one jar download attempt: connecting, redirects and the transfer."},
    {"flinklet.artifacts.connect-timeout", OPT_DURATION, "30 s", 1000, 0, NULL,
     "Connecting for a jar download (name lookup, TLS, a proxy's tunnel) within this, inside the total budget."},
    {"flinklet.artifacts.max-size", OPT_MEMORY, "2g", 1, 0, NULL,
     "The largest jar downloaded: an answer announcing or bringing more is refused at once."},
    {"flinklet.artifacts.allowed-schemes", OPT_STRING, "https,s3", 0, 0, NULL,
     "The schemes of the remote jars flinklet downloads (https, s3, http; separated by ',' or ';'); the URL and its "
     "redirects keep to them. Local jars need no entry."},
    {"flinklet.artifacts.retries", OPT_INT, "3", 0, 100, NULL,
     "Retries of a failed jar download (not of one refused by the size cap, the schemes or the checksum)."},
    {"flinklet.artifacts.ca-file", OPT_PATH, NULL, 0, 0, NULL,
     "A PEM file of CA certificates to verify https downloads with, instead of the system's."},
    {"flinklet.artifacts.s3.endpoint", OPT_STRING, NULL, 0, 0, NULL,
     "An S3-compatible endpoint (https://host:port), addressed path-style; default: AWS."},
    {"flinklet.artifacts.s3.region", OPT_STRING, NULL, 0, 0, NULL,
     "The S3 region to sign for; default: $AWS_REGION, else $AWS_DEFAULT_REGION, else us-east-1."},
    {"flinklet.http.token-file", OPT_PATH, NULL, 0, 0, NULL,
     "The bearer token of the control API (a Kubernetes secret mount, say). Default: <state dir>/http.token, "
     "generated on the first start."},
    {"flinklet.scratch.dir", OPT_PATH, NULL, 0, 0, NULL,
     "Local scratch space of the JVM (Flink's io.tmp.dirs unless set, and java.io.tmpdir): RocksDB's working "
     "files, spills, BLOBs; emptied for each launch. Default: $TMPDIR (else /tmp)/flinklet-<name>-<hash of the "
     "state directory>."},
    {"flinklet.log.level", OPT_ENUM, "info", 0, 0, "debug,info,warn,error", "The supervisor's log level."},
    {"kubernetes.operator.flink.client.timeout", OPT_DURATION, "10 s", 0, 0, NULL,
     "Timeout of one request to Flink's REST API (the operator's option, same default)."},
    {"flinklet.autoscaler.hook", OPT_PATH, NULL, 0, 0, NULL,
     "An executable that reviews every rescale the autoscaler decides before it is executed: the proposal (JSON) "
     "on its stdin, its answer on its stdout (apply, veto, or adjust the parallelism). One that fails or does not "
     "answer in time vetoes the rescale. Default: none."},
    {"flinklet.autoscaler.hook.timeout", OPT_DURATION, "10 s", 100, 0, NULL,
     "How long the scaling hook may take: then its process group is killed and the rescale is not executed."},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

const struct option_def *option_find(const char *key)
{
	for (const struct option_def *o = flinklet_options; o->key; o++)
		if (!strcmp(o->key, key))
			return o;
	return NULL;
}
