/*
 * ParityHarness: the Java side of flinklet's differential test (tests/parity/, `make parity`).
 *
 * Reads JSON lines {"id": ..., "plan": <a flinklet plan document>} on stdin and, for each, runs the
 * operator's own autoscaler classes (flink-autoscaler from Maven Central: ScalingMetricEvaluator,
 * JobVertexScaler, ScalingExecutor, DelayedScaleDown, ScalingHistoryUtils) on the same inputs: the
 * metric window (or evaluated metrics), topology, options, scaling history, pending delayed scale-downs,
 * TaskManager resources for the quota and the decision time. Writes one JSON line per case with the
 * evaluated metrics, each vertex's own change (type, target, the unaligned and the aligned parallelism,
 * outside its utilization bound), the executed decision with the parallelism applied, the pending
 * delayed scale-downs after it and the events. tests/parity/run.py compares that with
 * `flinklet autoscaler plan`.
 *
 * A line {"id": ..., "memory": {"plan": ..., "taskManager": ...}} runs the operator's memory tuning
 * instead (MemoryTuning.tuneTaskManagerMemory) for one TaskManager laid out as flinklet's pod is (see
 * runMemory), and writes the TaskManager its ConfigChanges configure, as Flink's own memory utilities derive it.
 *
 * What the two harnesses share (the protocol, the reading of a plan, the written figures) is
 * ParityCommon (tests/parity/common/, compiled by both builds); what stands here is this release's.
 *
 * It lives in the operator's package to reach the members it marks @VisibleForTesting. Test code only:
 * never shipped with flinklet. Written for this project; no code is taken from the operator.
 */
package org.apache.flink.autoscaler;

import static org.apache.flink.autoscaler.ParityCommon.*;

import org.apache.flink.autoscaler.config.AutoScalerOptions;
import org.apache.flink.autoscaler.metrics.EvaluatedMetrics;
import org.apache.flink.autoscaler.metrics.EvaluatedScalingMetric;
import org.apache.flink.autoscaler.metrics.ScalingHistoryUtils;
import org.apache.flink.autoscaler.metrics.ScalingMetric;
import org.apache.flink.autoscaler.state.InMemoryAutoScalerStateStore;
import org.apache.flink.autoscaler.topology.JobTopology;
import org.apache.flink.autoscaler.topology.ShipStrategy;
import org.apache.flink.autoscaler.topology.VertexInfo;
import org.apache.flink.autoscaler.tuning.MemoryTuning;
import org.apache.flink.autoscaler.utils.AutoScalerUtils;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Pattern;

public final class ParityHarness {
    /** MemoryTuning's log line with the sizes it computed, each as "... (N bytes)" or "N bytes". */
    static final Pattern OPTIMIZED =
            Pattern.compile(
                    "Optimized memory sizes - heap: (.*) managed: (.*), network: (.*), meta: (.*)|"
                            + "Optimized memory sizes: heap: (.*) managed: (.*), network: (.*), meta: (.*)");

    static final Pattern BYTES = Pattern.compile("(\\d+) bytes");

    /** The last "Optimized memory sizes" line MemoryTuning logged. */
    static final String[] LAST_OPTIMIZED = {null};

    static void quietLogs() {
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        Logger tuning = Logger.getLogger(MemoryTuning.class.getName());
        tuning.setLevel(Level.INFO);
        tuning.setUseParentHandlers(false);
        tuning.addHandler(
                new Handler() {
                    @Override
                    public void publish(LogRecord record) {
                        if (record.getMessage() != null
                                && record.getMessage().startsWith("Optimized memory sizes")) {
                            LAST_OPTIMIZED[0] = record.getMessage();
                        }
                    }

                    @Override
                    public void flush() {}

                    @Override
                    public void close() {}
                });
    }

    public static void main(String[] args) throws Exception {
        quietLogs();
        serve(
                (c, r) -> {
                    if (c.has("memory")) {
                        runMemory(c.get("memory"), r);
                    } else {
                        run(c.get("plan"), c.has("resolve") && c.get("resolve").asBoolean(), r);
                    }
                });
    }

    /**
     * The utilization target as the operator's main branch declares it (FLINK-36836: the key
     * utilization.target, deprecated key target.utilization, then the two old-prefix fallback keys),
     * resolved by Flink's own Configuration.
     */
    static final ConfigOption<Double> MAIN_UTILIZATION_TARGET =
            ConfigOptions.key("job.autoscaler.utilization.target")
                    .doubleType()
                    .defaultValue(0.7)
                    .withDeprecatedKeys("job.autoscaler.target.utilization")
                    .withFallbackKeys(
                            "kubernetes.operator.job.autoscaler.utilization.target",
                            "kubernetes.operator.job.autoscaler.target.utilization");

    static void run(JsonNode plan, boolean resolve, ObjectNode r) throws Exception {
        var conf = planConfig(plan);
        if (resolve) {
            // give this release, which knows one spelling less, the value main's declaration reads
            double target = conf.get(MAIN_UTILIZATION_TARGET);
            for (var k :
                    List.of(
                            MAIN_UTILIZATION_TARGET.key(),
                            "kubernetes.operator.job.autoscaler.utilization.target",
                            "kubernetes.operator.job.autoscaler.target.utilization")) {
                conf.removeKey(k);
            }
            conf.set(AutoScalerOptions.TARGET_UTILIZATION, target);
        }
        var ctx = new Ctx(conf, taskManagerInto(plan, conf));
        var now = Instant.ofEpochMilli(plan.get("now").asLong());

        // topology
        var ids = vertexIds(plan);
        var topology = topology(plan, ids);

        var store = new InMemoryAutoScalerStateStore<String, Ctx>();
        var tracking = new ScalingTracking();
        Duration restartTime = tracking.getMaxRestartTimeOrDefault(conf);

        // evaluation: the window through the evaluator, or the given evaluated metrics
        EvaluatedMetrics evaluated;
        if (plan.has("samples")) {
            var history = sampledHistory(plan, ids, topology, conf);
            evaluated = new ScalingMetricEvaluator().evaluate(conf, history, restartTime);
        } else {
            evaluated = givenEvaluated(plan, ids, conf, restartTime);
        }

        // scaling history, trimmed as the operator loads it
        store.storeScalingHistory(ctx, rawHistory(plan, ids));
        var scalingHistory = ScalingHistoryUtils.getTrimmedScalingHistory(store, ctx, now);

        // pending delayed scale-downs: this release keeps the first trigger time only
        var firstTrigger = new HashMap<JobVertexID, Instant>();
        var dsd = plan.get("delayedScaleDown");
        if (dsd != null && dsd.has("delayedVertices")) {
            dsd.get("delayedVertices")
                    .fields()
                    .forEachRemaining(
                            e ->
                                    firstTrigger.put(
                                            ids.get(e.getKey()),
                                            Instant.ofEpochMilli(
                                                    e.getValue().get("firstTriggerTime").asLong())));
        }

        var clock = Clock.fixed(now, ZoneOffset.UTC);

        // each vertex's own change, on copies, before the job-level gates
        var probeEvents = new Events();
        var probe = new JobVertexScaler<String, Ctx>(probeEvents);
        probe.setClock(clock);
        var vertices = probeVertices(ids, evaluated, topology, conf, (id, metrics, inputs, vo) -> {
            var copy = new HashMap<>(metrics);
            int before = probeEvents.events.size();
            var change =
                    probe.computeScaleTargetParallelism(
                            ctx,
                            id,
                            inputs,
                            copy,
                            scalingHistory.getOrDefault(id, Collections.emptySortedMap()),
                            restartTime,
                            new DelayedScaleDown(new HashMap<>(firstTrigger)));
            vo.put("change", change.getChangeType().toString());
            int p = (int) metrics.get(ScalingMetric.PARALLELISM).getCurrent();
            vo.put(
                    "target",
                    change.getChangeType() == JobVertexScaler.ParallelismChangeType.NO_CHANGE
                            ? p
                            : change.getNewParallelism());
            vo.put("ineffective", probeEvents.ineffectiveSince(before));
            targets(conf, ctx, id, p, inputs, metrics, restartTime, vo);
        });

        // the executor, as one cycle runs it
        var events = new Events();
        var executor = new ScalingExecutor<String, Ctx>(events, store);
        vertexScalerOf(executor, clock);
        var delayed = new DelayedScaleDown(firstTrigger);
        boolean scaled =
                executor.scaleResource(
                        ctx, evaluated, scalingHistory, tracking, now, topology, delayed);
        var overrides = store.getParallelismOverrides(ctx);

        putVertices(r, vertices, ids, evaluated, scaled, overrides);
        var pending = r.putObject("delayedScaleDown");
        delayed.getFirstTriggerTime()
                .forEach((id, t) -> pending.put(id.toHexString(), t.toEpochMilli()));
        putEvents(r, events);
    }

    static MemorySize bytes(JsonNode o, String field) {
        return new MemorySize(o.get(field).asLong());
    }

    /** The TaskManager a configuration gives, as Flink's memory utilities (the operator's) derive it. */
    static ObjectNode taskManager(Configuration conf) {
        var spec = MemoryTuning.FLINK_MEMORY_UTILS.memoryProcessSpecFromConfig(conf);
        var o = JSON.createObjectNode();
        o.put("process", spec.getTotalProcessMemorySize().getBytes());
        o.put("flink", spec.getTotalFlinkMemorySize().getBytes());
        o.put("heap", spec.getFlinkMemory().getJvmHeapMemorySize().getBytes());
        o.put("managed", spec.getFlinkMemory().getManaged().getBytes());
        o.put("network", spec.getFlinkMemory().getNetwork().getBytes());
        o.put("metaspace", spec.getJvmMetaspaceSize().getBytes());
        o.put("overhead", spec.getJvmOverheadSize().getBytes());
        o.put("frameworkOffHeap", spec.getFlinkMemory().getFrameworkOffHeap().getBytes());
        o.put("taskOffHeap", spec.getFlinkMemory().getTaskOffHeap().getBytes());
        return o;
    }

    /**
     * The operator's memory tuning for one TaskManager laid out as flinklet's pod: its process memory
     * is the pod's JVM share (spec.resources.memory less flinklet's own), its metaspace, network,
     * framework and task off-heap and managed memory are flinklet's split's, its JVM overhead (min =
     * max) holds what flinklet keeps for the JVM's native memory (code cache, JVM native, RocksDB
     * native), its framework heap is 0 (as the operator's tuning sets it), so its task heap comes to
     * flinklet's heap. The plan's topology, parallelisms, evaluated memory use and tuning options are
     * the operator's inputs; there are no scaling summaries (no rescale in the same cycle) and, one
     * TaskManager being all there is, no scale-down compensation.
     */
    static void runMemory(JsonNode mem, ObjectNode r) throws Exception {
        var plan = mem.get("plan");
        var tm = mem.get("taskManager");
        var conf = planConfig(plan);
        conf.set(TaskManagerOptions.TOTAL_PROCESS_MEMORY, bytes(tm, "processMemory"));
        conf.set(TaskManagerOptions.JVM_METASPACE, bytes(tm, "metaspace"));
        conf.set(TaskManagerOptions.JVM_OVERHEAD_MIN, bytes(tm, "jvmOverhead"));
        conf.set(TaskManagerOptions.JVM_OVERHEAD_MAX, bytes(tm, "jvmOverhead"));
        conf.set(TaskManagerOptions.FRAMEWORK_OFF_HEAP_MEMORY, bytes(tm, "frameworkOffHeap"));
        conf.set(TaskManagerOptions.TASK_OFF_HEAP_MEMORY, bytes(tm, "taskOffHeap"));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, bytes(tm, "network"));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, bytes(tm, "network"));
        conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, bytes(tm, "managed"));
        conf.set(TaskManagerOptions.FRAMEWORK_HEAP_MEMORY, MemorySize.ZERO);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, tm.get("slots").asInt());
        conf.set(AutoScalerOptions.MEMORY_SCALING_ENABLED, false);
        // the recommendation is the same either way; only enabled returns it
        conf.set(AutoScalerOptions.MEMORY_TUNING_ENABLED, true);
        var ctx = new Ctx(conf, null);

        var infos = new ArrayList<VertexInfo>();
        var vertexMetrics = new HashMap<JobVertexID, Map<ScalingMetric, EvaluatedScalingMetric>>();
        for (var v : plan.get("vertices")) {
            var inputs = new LinkedHashMap<JobVertexID, ShipStrategy>();
            if (v.has("inputs")) {
                for (var i : v.get("inputs")) {
                    inputs.put(
                            JobVertexID.fromHexString(i.get("id").asText()),
                            ShipStrategy.of(i.get("shipStrategy").asText()));
                }
            }
            var id = JobVertexID.fromHexString(v.get("id").asText());
            infos.add(
                    new VertexInfo(
                            id, inputs, v.get("parallelism").asInt(), v.get("maxParallelism").asInt()));
            var m = new HashMap<ScalingMetric, EvaluatedScalingMetric>();
            m.put(ScalingMetric.PARALLELISM, EvaluatedScalingMetric.of(v.get("parallelism").asInt()));
            vertexMetrics.put(id, m);
        }
        var global = new HashMap<ScalingMetric, EvaluatedScalingMetric>();
        plan.get("global")
                .fields()
                .forEachRemaining(
                        e ->
                                global.put(
                                        ScalingMetric.valueOf(e.getKey()),
                                        new EvaluatedScalingMetric(
                                                num(e.getValue().get("current")),
                                                num(e.getValue().get("average")))));
        var evaluated = new EvaluatedMetrics(vertexMetrics, global);

        r.set("current", taskManager(conf));
        LAST_OPTIMIZED[0] = null;
        var changes =
                MemoryTuning.tuneTaskManagerMemory(
                        ctx, evaluated, new JobTopology(infos), Map.of(), new Events());
        var computed = r.putObject("computed");
        var line = LAST_OPTIMIZED[0] == null ? null : OPTIMIZED.matcher(LAST_OPTIMIZED[0]);
        if (line != null && line.matches()) {
            int base = line.group(1) != null ? 1 : 5;
            String[] names = {"heap", "managed", "network", "metaspace"};
            for (int i = 0; i < names.length; i++) {
                var b = BYTES.matcher(line.group(base + i));
                if (b.find()) {
                    computed.put(names[i], Long.parseLong(b.group(1)));
                }
            }
        }
        var overrides = r.putObject("overrides");
        changes.getOverrides().forEach(overrides::put);
        if (changes.getOverrides().isEmpty()) {
            r.putNull("recommended");
        } else {
            r.set("recommended", taskManager(changes.newConfigWithOverrides(conf)));
        }
    }

    /**
     * The vertex's clamped target without alignment ("unaligned") and with it ("aligned"), from the
     * operator's own capacity and scale functions and the factor limits it applies.
     */
    static void targets(
            Configuration conf,
            Ctx ctx,
            JobVertexID id,
            int p,
            Collection<ShipStrategy> inputs,
            Map<ScalingMetric, EvaluatedScalingMetric> metrics,
            Duration restartTime,
            ObjectNode vo) {
        double tpr = metrics.get(ScalingMetric.TRUE_PROCESSING_RATE).getAverage();
        double capacity =
                AutoScalerUtils.getTargetProcessingCapacity(
                        metrics, conf, conf.get(AutoScalerOptions.TARGET_UTILIZATION), true, restartTime);
        if (Double.isNaN(tpr) || Double.isNaN(capacity)) {
            return;
        }
        double f = capacity / tpr;
        f = Math.max(f, 1 - conf.get(AutoScalerOptions.MAX_SCALE_DOWN_FACTOR));
        f = Math.min(f, 1 + conf.get(AutoScalerOptions.MAX_SCALE_UP_FACTOR));
        int lower = Math.min(p, conf.get(AutoScalerOptions.VERTEX_MIN_PARALLELISM));
        int upper = Math.max(p, conf.get(AutoScalerOptions.VERTEX_MAX_PARALLELISM));
        int maxP = (int) metrics.get(ScalingMetric.MAX_PARALLELISM).getCurrent();
        int partitions = (int) metrics.get(ScalingMetric.NUM_SOURCE_PARTITIONS).getCurrent();
        var quiet = new Events();
        vo.put(
                "unaligned",
                JobVertexScaler.scale(id, p, List.of(), 0, maxP, f, lower, upper, quiet, ctx));
        vo.put(
                "aligned",
                JobVertexScaler.scale(id, p, inputs, partitions, maxP, f, lower, upper, quiet, ctx));
        vo.put("alignable", partitions > 0 || inputs.contains(ShipStrategy.HASH));
    }
}
