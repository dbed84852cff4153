/*
 * ParityHarness116: the second oracle of flinklet's differential test (tests/parity/, `make parity`), the same
 * protocol as ParityHarness (tests/parity/src) run against the operator 1.16 autoscaler (flink-autoscaler
 * 1.16: the scaling cycle state, the composable alignment modes of FLIP-586, delayed scale-downs that keep
 * their recommendations, the per-second TPR numerator, the expected processing rate of FLINK-39743).
 *
 * Reads JSON lines {"id": ..., "plan": <a flinklet plan document>} on stdin and writes one JSON line per case
 * with the evaluated metrics, each vertex's own change (type, target, the unaligned and the aligned
 * parallelism, outside its utilization bound), the executed decision with the parallelism applied, the
 * pending delayed scale-downs after it and the events. tests/parity/parity.py compares that with
 * `flinklet autoscaler plan`.
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
import org.apache.flink.autoscaler.utils.AutoScalerUtils;
import org.apache.flink.configuration.Configuration;
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
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

public final class ParityHarness116 {
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

        @Override
        public void close() {}
    }

    public static void main(String[] args) throws Exception {
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
                run(c.get("plan"), c.has("resolve") && c.get("resolve").asBoolean(), r);
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

    static void run(JsonNode plan, boolean resolve, ObjectNode r) throws Exception {
        var conf = new Configuration();
        var cfg = plan.get("config");
        if (cfg != null) {
            cfg.fields().forEachRemaining(e -> conf.setString(e.getKey(), configValue(e.getValue())));
        }
        // 1.16 declares the utilization target's spellings as flinklet reads them: "resolve" changes nothing
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
            evaluated =
                    new ScalingMetricEvaluator<String, Ctx>(List.of())
                            .computeEvaluatedMetrics(null, conf, history, restartTime);
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

        // pending delayed scale-downs, with their recommendations (1.16 keeps them)
        var dsd = plan.get("delayedScaleDown");

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
                                topology,
                                copy,
                                scalingHistory.getOrDefault(id, Collections.emptySortedMap()),
                                restartTime,
                                delayedScaleDown(dsd, ids));
                vo.put("change", change.isNoChange() ? "NO_CHANGE" : "CHANGE");
                int p = (int) metrics.get(ScalingMetric.PARALLELISM).getCurrent();
                vo.put("target", change.isNoChange() ? p : change.getNewParallelism());
                int ineffective = 0;
                for (int i = before; i < probeEvents.events.size(); i++) {
                    if ("IneffectiveScaling".equals(probeEvents.events.get(i)[1])) {
                        ineffective++;
                    }
                }
                vo.put("ineffective", ineffective);
                targets(
                        probe,
                        conf,
                        ctx,
                        id,
                        p,
                        inputs,
                        topology,
                        metrics,
                        scalingHistory.getOrDefault(id, Collections.emptySortedMap()),
                        restartTime,
                        vo);
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
        var delayed = delayedScaleDown(dsd, ids);
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
        delayed.getDelayedVertices()
                .forEach(
                        (id, info) ->
                                pending.put(id.toHexString(), info.getFirstTriggerTime().toEpochMilli()));
        ArrayNode ev = r.putArray("events");
        for (var e : events.events) {
            var eo = ev.addObject();
            eo.put("type", e[0]);
            eo.put("reason", e[1]);
            eo.put("message", e[2]);
            eo.put("key", e[3]);
        }
    }

    /**
     * The vertex's clamped target without alignment ("unaligned") and with it ("aligned"), from the
     * operator's own capacity and scale functions and the factor limits it applies.
     */
    /** The plan's pending delayed scale-downs, as the state store would give them back. */
    static DelayedScaleDown delayedScaleDown(JsonNode dsd, Map<String, JobVertexID> ids) {
        var d = new DelayedScaleDown();
        if (dsd == null || !dsd.has("delayedVertices")) {
            return d;
        }
        dsd.get("delayedVertices")
                .fields()
                .forEachRemaining(
                        e -> {
                            var recs = new LinkedList<DelayedScaleDown.RecommendedParallelism>();
                            var given = e.getValue().get("recommendedParallelisms");
                            if (given != null) {
                                for (var rp : given) {
                                    recs.add(
                                            new DelayedScaleDown.RecommendedParallelism(
                                                    Instant.ofEpochMilli(rp.get("triggerTime").asLong()),
                                                    rp.get("parallelism").asInt(),
                                                    rp.path("outsideUtilizationBound").asBoolean()));
                                }
                            }
                            d.getDelayedVertices()
                                    .put(
                                            ids.get(e.getKey()),
                                            new DelayedScaleDown.VertexDelayedScaleDownInfo(
                                                    Instant.ofEpochMilli(
                                                            e.getValue().get("firstTriggerTime").asLong()),
                                                    recs));
                        });
        return d;
    }

    /**
     * The vertex's clamped target without alignment ("unaligned") and with it ("aligned"), from the
     * operator's own capacity and scale functions and the factor limits it applies.
     */
    static void targets(
            JobVertexScaler<String, Ctx> scaler,
            Configuration conf,
            Ctx ctx,
            JobVertexID id,
            int p,
            Collection<ShipStrategy> inputs,
            JobTopology topology,
            Map<ScalingMetric, EvaluatedScalingMetric> metrics,
            SortedMap<Instant, ScalingSummary> history,
            Duration restartTime,
            ObjectNode vo) {
        double tpr = metrics.get(ScalingMetric.TRUE_PROCESSING_RATE).getAverage();
        double capacity =
                AutoScalerUtils.getTargetProcessingCapacity(
                        metrics, conf, conf.get(AutoScalerOptions.UTILIZATION_TARGET), true, restartTime);
        if (Double.isNaN(tpr) || Double.isNaN(capacity)) {
            return;
        }
        double f = capacity / tpr;
        if (conf.get(AutoScalerOptions.OBSERVED_SCALABILITY_ENABLED)) {
            f = f / JobVertexScaler.calculateObservedScalingCoefficient(history, conf);
        }
        f = Math.max(f, 1 - conf.get(AutoScalerOptions.MAX_SCALE_DOWN_FACTOR));
        f = Math.min(f, 1 + conf.get(AutoScalerOptions.MAX_SCALE_UP_FACTOR));
        int lower = Math.min(p, conf.get(AutoScalerOptions.VERTEX_MIN_PARALLELISM));
        int upper = Math.max(p, conf.get(AutoScalerOptions.VERTEX_MAX_PARALLELISM));
        int maxP = (int) metrics.get(ScalingMetric.MAX_PARALLELISM).getCurrent();
        int partitions = (int) metrics.get(ScalingMetric.NUM_SOURCE_PARTITIONS).getCurrent();
        var copy = new HashMap<>(metrics);
        vo.put(
                "unaligned",
                scaler.scale(id, p, List.of(), 0, maxP, f, lower, upper, copy, topology, ctx));
        vo.put(
                "aligned",
                scaler.scale(id, p, inputs, partitions, maxP, f, lower, upper, copy, topology, ctx));
        vo.put("alignable", partitions > 0 || inputs.contains(ShipStrategy.HASH));
    }
}
