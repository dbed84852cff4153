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
 * It lives in the operator's package to reach the members it marks @VisibleForTesting. Test code only:
 * never shipped with flinklet. Written for this project; no code is taken from the operator.
 */
package org.apache.flink.autoscaler;

import org.apache.flink.autoscaler.config.AutoScalerOptions;
import org.apache.flink.autoscaler.event.AutoScalerEventHandler;
import org.apache.flink.autoscaler.metrics.CollectedMetricHistory;
import org.apache.flink.autoscaler.metrics.CollectedMetrics;
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
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.instance.SlotSharingGroupId;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
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
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Pattern;

public final class ParityHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The metrics a plan's evaluated input may give, and which field each one fills. */
    private static final ScalingMetric[] AVERAGE_INPUTS = {
        ScalingMetric.TARGET_DATA_RATE, ScalingMetric.TRUE_PROCESSING_RATE, ScalingMetric.LOAD
    };

    private static final ScalingMetric[] CURRENT_INPUTS = {
        ScalingMetric.CATCH_UP_DATA_RATE, ScalingMetric.LAG
    };

    /** The evaluated metrics written back: name, and whether the average (else the current) counts. */
    private static final Object[][] REPORTED = {
        {ScalingMetric.TARGET_DATA_RATE, true},
        {ScalingMetric.TRUE_PROCESSING_RATE, true},
        {ScalingMetric.LOAD, true},
        {ScalingMetric.CATCH_UP_DATA_RATE, false},
        {ScalingMetric.LAG, false},
        {ScalingMetric.SCALE_UP_RATE_THRESHOLD, false},
        {ScalingMetric.SCALE_DOWN_RATE_THRESHOLD, false},
        {ScalingMetric.EXPECTED_PROCESSING_RATE, false},
    };

    /** The context with the TaskManager's CPU, which the operator knows and the base class does not. */
    static final class Ctx extends JobAutoScalerContext<String> {
        private final Double cpu;

        Ctx(Configuration conf, Double cpu) {
            super("parity", null, null, conf, new UnregisteredMetricsGroup(), null);
            this.cpu = cpu;
        }

        @Override
        public Optional<Double> getTaskManagerCpu() {
            return Optional.ofNullable(cpu);
        }
    }

    /** Records every event; the reason and message are all the comparison needs. */
    static final class Events implements AutoScalerEventHandler<String, Ctx> {
        final List<String[]> events = new ArrayList<>();

        @Override
        public void handleEvent(
                Ctx ctx,
                Type type,
                String reason,
                String message,
                String messageKey,
                Duration interval) {
            events.add(new String[] {type.toString(), reason, message, String.valueOf(messageKey)});
        }
    }

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
        var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        var out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode c = JSON.readTree(line);
            ObjectNode r = JSON.createObjectNode();
            r.put("id", c.get("id").asText());
            try {
                if (c.has("memory")) {
                    runMemory(c.get("memory"), r);
                } else {
                    run(c.get("plan"), c.has("resolve") && c.get("resolve").asBoolean(), r);
                }
            } catch (Throwable t) {
                r.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
            }
            out.println(JSON.writeValueAsString(r));
        }
        out.flush();
    }

    static double num(JsonNode n) {
        if (n == null || n.isNull() || n.isMissingNode()) {
            return Double.NaN;
        }
        if (n.isTextual()) {
            return Double.parseDouble(n.asText());
        }
        return n.asDouble();
    }

    /** The release's name for a sample metric, or null for one it does not know (it never collects it). */
    static ScalingMetric metric(String name) {
        try {
            return ScalingMetric.valueOf(name);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    static void putNum(ObjectNode o, String name, double x) {
        if (Double.isFinite(x)) {
            o.put(name, x);
        } else {
            o.put(name, Double.toString(x));
        }
    }

    /** Flink's string form of a plan "config" value (lists become a;b). */
    static String configValue(JsonNode v) {
        if (v.isArray()) {
            var parts = new ArrayList<String>();
            v.forEach(e -> parts.add(e.asText()));
            return String.join(";", parts);
        }
        return v.asText();
    }

    static SlotSharingGroupId groupId(String name) {
        long h = name.hashCode();
        return new SlotSharingGroupId(h, ~h);
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
        var conf = new Configuration();
        var cfg = plan.get("config");
        if (cfg != null) {
            cfg.fields().forEachRemaining(e -> conf.setString(e.getKey(), configValue(e.getValue())));
        }
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
        Double cpu = null;
        var tm = plan.get("taskManager");
        if (tm != null) {
            if (tm.has("cpu")) {
                cpu = tm.get("cpu").asDouble();
            }
            if (tm.has("memory")) {
                conf.setString("taskmanager.memory.process.size", tm.get("memory").asText());
            }
            if (tm.has("slots")) {
                conf.setString("taskmanager.numberOfTaskSlots", tm.get("slots").asText());
            }
        }
        var ctx = new Ctx(conf, cpu);
        var now = Instant.ofEpochMilli(plan.get("now").asLong());

        // topology
        var infos = new ArrayList<VertexInfo>();
        var ids = new LinkedHashMap<String, JobVertexID>();
        for (var v : plan.get("vertices")) {
            ids.put(v.get("id").asText(), JobVertexID.fromHexString(v.get("id").asText()));
        }
        for (var v : plan.get("vertices")) {
            var inputs = new LinkedHashMap<JobVertexID, ShipStrategy>();
            if (v.has("inputs")) {
                for (var i : v.get("inputs")) {
                    inputs.put(ids.get(i.get("id").asText()), ShipStrategy.of(i.get("shipStrategy").asText()));
                }
            }
            var group = v.has("slotSharingGroup") ? groupId(v.get("slotSharingGroup").asText()) : null;
            var info =
                    new VertexInfo(
                            ids.get(v.get("id").asText()),
                            group,
                            inputs,
                            v.get("parallelism").asInt(),
                            v.get("maxParallelism").asInt(),
                            false,
                            null);
            if (v.has("numSourcePartitions")) {
                info.setNumSourcePartitions(v.get("numSourcePartitions").asInt());
            }
            infos.add(info);
        }
        var topology = new JobTopology(infos);

        var store = new InMemoryAutoScalerStateStore<String, Ctx>();
        var tracking = new ScalingTracking();
        Duration restartTime = tracking.getMaxRestartTimeOrDefault(conf);

        // evaluation: the window through the evaluator, or the given evaluated metrics
        EvaluatedMetrics evaluated;
        if (plan.has("samples")) {
            SortedMap<Instant, CollectedMetrics> window = new TreeMap<>();
            for (var s : plan.get("samples")) {
                var vm = new HashMap<JobVertexID, Map<ScalingMetric, Double>>();
                for (var id : ids.values()) {
                    vm.put(id, new HashMap<>());
                }
                var sv = s.get("vertices");
                if (sv != null) {
                    sv.fields()
                            .forEachRemaining(
                                    e ->
                                            e.getValue()
                                                    .fields()
                                                    .forEachRemaining(
                                                            m -> {
                                                                var k = metric(m.getKey());
                                                                if (k != null) {
                                                                    vm.get(ids.get(e.getKey()))
                                                                            .put(k, num(m.getValue()));
                                                                }
                                                            }));
                }
                var gm = new HashMap<ScalingMetric, Double>();
                var sg = s.get("global");
                if (sg != null) {
                    sg.fields()
                            .forEachRemaining(
                                    m -> gm.put(ScalingMetric.valueOf(m.getKey()), num(m.getValue())));
                }
                window.put(
                        Instant.ofEpochMilli(s.get("timestamp").asLong()), new CollectedMetrics(vm, gm));
            }
            // as the collector does in the cycle: a vertex without busy time in the newest sample is
            // excluded from scaling (AutoScalerUtils.excludeVertexFromScaling on the cycle's configuration)
            var latest = window.get(window.lastKey()).getVertexMetrics();
            for (var id : ids.values()) {
                if (!Double.isFinite(latest.get(id).getOrDefault(ScalingMetric.LOAD, Double.NaN))) {
                    AutoScalerUtils.excludeVertexFromScaling(conf, id);
                }
            }
            var history = new CollectedMetricHistory(topology, window, Instant.EPOCH);
            history.setFullyCollected(true);
            evaluated = new ScalingMetricEvaluator().evaluate(conf, history, restartTime);
        } else {
            var vertexMetrics = new HashMap<JobVertexID, Map<ScalingMetric, EvaluatedScalingMetric>>();
            boolean backlog = plan.has("processingBacklog") && plan.get("processingBacklog").asBoolean();
            for (var v : plan.get("vertices")) {
                var m = new HashMap<ScalingMetric, EvaluatedScalingMetric>();
                var ev = v.get("evaluated");
                for (var k : AVERAGE_INPUTS) {
                    if (ev != null && ev.has(k.name())) {
                        m.put(k, EvaluatedScalingMetric.avg(num(ev.get(k.name()))));
                    }
                }
                for (var k : CURRENT_INPUTS) {
                    if (ev != null && ev.has(k.name())) {
                        m.put(k, EvaluatedScalingMetric.of(num(ev.get(k.name()))));
                    }
                }
                m.putIfAbsent(ScalingMetric.CATCH_UP_DATA_RATE, EvaluatedScalingMetric.of(0));
                m.putIfAbsent(ScalingMetric.LOAD, EvaluatedScalingMetric.avg(Double.NaN));
                m.put(ScalingMetric.PARALLELISM, EvaluatedScalingMetric.of(v.get("parallelism").asInt()));
                m.put(
                        ScalingMetric.MAX_PARALLELISM,
                        EvaluatedScalingMetric.of(v.get("maxParallelism").asInt()));
                m.put(
                        ScalingMetric.NUM_SOURCE_PARTITIONS,
                        EvaluatedScalingMetric.of(
                                v.has("numSourcePartitions")
                                        ? v.get("numSourcePartitions").asInt()
                                        : 0));
                ScalingMetricEvaluator.computeProcessingRateThresholds(m, conf, backlog, restartTime);
                vertexMetrics.put(ids.get(v.get("id").asText()), m);
            }
            var global = new HashMap<ScalingMetric, EvaluatedScalingMetric>();
            for (var k :
                    new ScalingMetric[] {
                        ScalingMetric.GC_PRESSURE,
                        ScalingMetric.HEAP_MAX_USAGE_RATIO,
                        ScalingMetric.HEAP_MEMORY_USED,
                        ScalingMetric.MANAGED_MEMORY_USED,
                        ScalingMetric.METASPACE_MEMORY_USED,
                        ScalingMetric.NUM_TASK_SLOTS_USED
                    }) {
                global.put(k, new EvaluatedScalingMetric(Double.NaN, Double.NaN));
            }
            var g = plan.get("global");
            if (g != null) {
                g.fields()
                        .forEachRemaining(
                                e -> {
                                    var k = ScalingMetric.valueOf(e.getKey());
                                    var val = e.getValue();
                                    if (val.isObject()) {
                                        global.put(
                                                k,
                                                new EvaluatedScalingMetric(
                                                        num(val.get("current")), num(val.get("average"))));
                                    } else {
                                        global.put(k, EvaluatedScalingMetric.of(num(val)));
                                    }
                                });
            }
            evaluated = new EvaluatedMetrics(vertexMetrics, global);
        }

        // scaling history, trimmed as the operator loads it
        var rawHistory = new HashMap<JobVertexID, SortedMap<Instant, ScalingSummary>>();
        for (var v : plan.get("vertices")) {
            if (!v.has("history")) {
                continue;
            }
            var h = new TreeMap<Instant, ScalingSummary>();
            for (var e : v.get("history")) {
                var m = new HashMap<ScalingMetric, EvaluatedScalingMetric>();
                m.put(
                        ScalingMetric.TRUE_PROCESSING_RATE,
                        EvaluatedScalingMetric.avg(num(e.get("TRUE_PROCESSING_RATE"))));
                m.put(
                        ScalingMetric.EXPECTED_PROCESSING_RATE,
                        EvaluatedScalingMetric.of(num(e.get("EXPECTED_PROCESSING_RATE"))));
                h.put(
                        Instant.ofEpochMilli(e.get("timestamp").asLong()),
                        new ScalingSummary(
                                e.get("currentParallelism").asInt(),
                                e.get("newParallelism").asInt(),
                                m));
            }
            rawHistory.put(ids.get(v.get("id").asText()), h);
        }
        store.storeScalingHistory(ctx, rawHistory);
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
        var excluded = conf.get(AutoScalerOptions.VERTEX_EXCLUDE_IDS);

        // each vertex's own change, on copies, before the job-level gates
        var vertices = JSON.createObjectNode();
        var probeEvents = new Events();
        var probe = new JobVertexScaler<String, Ctx>(probeEvents);
        probe.setClock(clock);
        for (var e : ids.entrySet()) {
            var id = e.getValue();
            var vo = vertices.putObject(e.getKey());
            var metrics = evaluated.getVertexMetrics().get(id);
            if (excluded.contains(id.toHexString())) {
                vo.put("excluded", true);
            } else {
                var copy = new HashMap<>(metrics);
                var inputs = topology.get(id).getInputs().values();
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
                int ineffective = 0;
                for (int i = before; i < probeEvents.events.size(); i++) {
                    if ("IneffectiveScaling".equals(probeEvents.events.get(i)[1])) {
                        ineffective++;
                    }
                }
                vo.put("ineffective", ineffective);
                targets(conf, ctx, id, p, inputs, metrics, restartTime, vo);
                double tpr = metrics.get(ScalingMetric.TRUE_PROCESSING_RATE).getAverage();
                vo.put(
                        "outside",
                        tpr < metrics.get(ScalingMetric.SCALE_UP_RATE_THRESHOLD).getCurrent()
                                || tpr > metrics.get(ScalingMetric.SCALE_DOWN_RATE_THRESHOLD).getCurrent());
            }
        }

        // the executor, as one cycle runs it
        var events = new Events();
        var executor = new ScalingExecutor<String, Ctx>(events, store);
        var field = ScalingExecutor.class.getDeclaredField("jobVertexScaler");
        field.setAccessible(true);
        @SuppressWarnings("unchecked")
        var scaler = (JobVertexScaler<String, Ctx>) field.get(executor);
        scaler.setClock(clock);
        var delayed = new DelayedScaleDown(firstTrigger);
        boolean scaled =
                executor.scaleResource(
                        ctx, evaluated, scalingHistory, tracking, now, topology, delayed);
        var overrides = store.getParallelismOverrides(ctx);

        for (var e : ids.entrySet()) {
            var vo = (ObjectNode) vertices.get(e.getKey());
            var metrics = evaluated.getVertexMetrics().get(e.getValue());
            int p = (int) metrics.get(ScalingMetric.PARALLELISM).getCurrent();
            String hex = e.getValue().toHexString();
            vo.put("currentParallelism", p);
            vo.put(
                    "newParallelism",
                    scaled && overrides.containsKey(hex) ? Integer.parseInt(overrides.get(hex)) : p);
            var eo = vo.putObject("evaluated");
            for (var rep : REPORTED) {
                var k = (ScalingMetric) rep[0];
                var m = metrics.get(k);
                double x = m == null ? Double.NaN : ((Boolean) rep[1] ? m.getAverage() : m.getCurrent());
                putNum(eo, k.name(), x);
            }
        }
        r.put("scaling", scaled);
        r.set("vertices", vertices);
        var pending = r.putObject("delayedScaleDown");
        delayed.getFirstTriggerTime()
                .forEach((id, t) -> pending.put(id.toHexString(), t.toEpochMilli()));
        ArrayNode ev = r.putArray("events");
        for (var e : events.events) {
            var eo = ev.addObject();
            eo.put("type", e[0]);
            eo.put("reason", e[1]);
            eo.put("message", e[2]);
            eo.put("key", e[3]);
        }
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
        var conf = new Configuration();
        var cfg = plan.get("config");
        if (cfg != null) {
            cfg.fields().forEachRemaining(e -> conf.setString(e.getKey(), configValue(e.getValue())));
        }
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
