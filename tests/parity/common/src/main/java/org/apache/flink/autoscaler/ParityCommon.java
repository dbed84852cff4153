/*
 * ParityCommon: what the two Java sides of flinklet's differential test (tests/parity/, `make parity`)
 * share: ParityHarness (tests/parity/src, the operator 1.10 autoscaler) and ParityHarness116
 * (tests/parity/oracle-1.16/src, the operator 1.16 autoscaler). Both Maven builds compile this folder
 * with their own (tests/parity/pom.xml and oracle-1.16/pom.xml, compileSourceRoots), each against its
 * own release: what stands here is the code whose text, and whose calls into the operator's classes,
 * are the same in both releases.
 *
 * The protocol (JSON lines in, one JSON line out per case, serve), the context and the event
 * recorder, and the reading of a plan document into the operator's inputs: its configuration, the
 * TaskManager's resources, the topology, the metric window (or the evaluated metrics it gives) and
 * the scaling history; and the writing of each vertex's figures and the events. What the releases do
 * differently (the evaluator, the vertex scaler, delayed scale-downs) stays in each harness.
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
import org.apache.flink.autoscaler.metrics.ScalingMetric;
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
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

final class ParityCommon {
    private ParityCommon() {}

    static final ObjectMapper JSON = new ObjectMapper();

    /** The metrics a plan's evaluated input may give, and which field each one fills. */
    static final ScalingMetric[] AVERAGE_INPUTS = {
        ScalingMetric.TARGET_DATA_RATE, ScalingMetric.TRUE_PROCESSING_RATE, ScalingMetric.LOAD
    };

    static final ScalingMetric[] CURRENT_INPUTS = {
        ScalingMetric.CATCH_UP_DATA_RATE, ScalingMetric.LAG
    };

    /** The evaluated metrics written back: name, and whether the average (else the current) counts. */
    static final Object[][] REPORTED = {
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

        /** Nothing to release (1.16 declares it; 1.10 does not, hence no @Override). */
        public void close() {}

        /** How many IneffectiveScaling events came after the first `before`. */
        int ineffectiveSince(int before) {
            int n = 0;
            for (int i = before; i < events.size(); i++) {
                if ("IneffectiveScaling".equals(events.get(i)[1])) {
                    n++;
                }
            }
            return n;
        }
    }

    /** One case of the protocol: its input line and the result object to fill. */
    interface Case {
        void run(JsonNode c, ObjectNode r) throws Exception;
    }

    /**
     * Reads JSON lines {"id": ...} on stdin and writes one JSON line per case: {"id": ...} filled by
     * the case, or with "error" when it threw.
     */
    static void serve(Case handler) throws Exception {
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
                handler.run(c, r);
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

    /** The plan's "config", as Flink's Configuration. */
    static Configuration planConfig(JsonNode plan) {
        var conf = new Configuration();
        var cfg = plan.get("config");
        if (cfg != null) {
            cfg.fields().forEachRemaining(e -> conf.setString(e.getKey(), configValue(e.getValue())));
        }
        return conf;
    }

    /**
     * The plan's TaskManager ("taskManager": memory and slots) set in conf; returns its CPU, null when
     * the plan gives none.
     */
    static Double taskManagerInto(JsonNode plan, Configuration conf) {
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
        return cpu;
    }

    /** The plan's vertex ids, in its order. */
    static LinkedHashMap<String, JobVertexID> vertexIds(JsonNode plan) {
        var ids = new LinkedHashMap<String, JobVertexID>();
        for (var v : plan.get("vertices")) {
            ids.put(v.get("id").asText(), JobVertexID.fromHexString(v.get("id").asText()));
        }
        return ids;
    }

    /** The plan's topology: its vertices, their inputs, slot sharing groups and source partitions. */
    static JobTopology topology(JsonNode plan, Map<String, JobVertexID> ids) {
        var infos = new ArrayList<VertexInfo>();
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
        return new JobTopology(infos);
    }

    /**
     * The plan's metric window ("samples") as the collector hands it to the evaluator, fully collected.
     * As the collector does in the cycle, a vertex without busy time in the newest sample is excluded
     * from scaling (AutoScalerUtils.excludeVertexFromScaling on conf, the cycle's configuration).
     */
    static CollectedMetricHistory sampledHistory(
            JsonNode plan, Map<String, JobVertexID> ids, JobTopology topology, Configuration conf) {
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
            window.put(Instant.ofEpochMilli(s.get("timestamp").asLong()), new CollectedMetrics(vm, gm));
        }
        var latest = window.get(window.lastKey()).getVertexMetrics();
        for (var id : ids.values()) {
            if (!Double.isFinite(latest.get(id).getOrDefault(ScalingMetric.LOAD, Double.NaN))) {
                AutoScalerUtils.excludeVertexFromScaling(conf, id);
            }
        }
        var history = new CollectedMetricHistory(topology, window, Instant.EPOCH);
        history.setFullyCollected(true);
        return history;
    }

    /**
     * The evaluated metrics a plan without a window gives (each vertex's "evaluated", the job's
     * "global"), with the processing rate thresholds the evaluator would add.
     */
    static EvaluatedMetrics givenEvaluated(
            JsonNode plan, Map<String, JobVertexID> ids, Configuration conf, Duration restartTime) {
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
                            v.has("numSourcePartitions") ? v.get("numSourcePartitions").asInt() : 0));
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
        return new EvaluatedMetrics(vertexMetrics, global);
    }

    /** The plan's scaling history per vertex (each vertex's "history"), before the store trims it. */
    static Map<JobVertexID, SortedMap<Instant, ScalingSummary>> rawHistory(
            JsonNode plan, Map<String, JobVertexID> ids) {
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
        return rawHistory;
    }

    /** A harness's probe of one vertex the configuration does not exclude: what it writes into vo. */
    interface VertexProbe {
        void run(
                JobVertexID id,
                Map<ScalingMetric, EvaluatedScalingMetric> metrics,
                Collection<ShipStrategy> inputs,
                ObjectNode vo)
                throws Exception;
    }

    /**
     * Each vertex's own change, before the job-level gates: an object per vertex, {"excluded": true}
     * for one the configuration excludes, else what probe writes and whether it is "outside" its
     * utilization bounds.
     */
    static ObjectNode probeVertices(
            Map<String, JobVertexID> ids,
            EvaluatedMetrics evaluated,
            JobTopology topology,
            Configuration conf,
            VertexProbe probe)
            throws Exception {
        var excluded = conf.get(AutoScalerOptions.VERTEX_EXCLUDE_IDS);
        var vertices = JSON.createObjectNode();
        for (var e : ids.entrySet()) {
            var id = e.getValue();
            var vo = vertices.putObject(e.getKey());
            var metrics = evaluated.getVertexMetrics().get(id);
            if (excluded.contains(id.toHexString())) {
                vo.put("excluded", true);
            } else {
                probe.run(id, metrics, topology.get(id).getInputs().values(), vo);
                vo.put("outside", outside(metrics));
            }
        }
        return vertices;
    }

    /** The vertex scaler an executor runs (its private field), on clock. */
    static JobVertexScaler<String, Ctx> vertexScalerOf(ScalingExecutor<String, Ctx> executor, Clock clock)
            throws ReflectiveOperationException {
        var field = ScalingExecutor.class.getDeclaredField("jobVertexScaler");
        field.setAccessible(true);
        @SuppressWarnings("unchecked")
        var scaler = (JobVertexScaler<String, Ctx>) field.get(executor);
        scaler.setClock(clock);
        return scaler;
    }

    /** Whether the vertex's true processing rate is outside its utilization bounds. */
    static boolean outside(Map<ScalingMetric, EvaluatedScalingMetric> metrics) {
        double tpr = metrics.get(ScalingMetric.TRUE_PROCESSING_RATE).getAverage();
        return tpr < metrics.get(ScalingMetric.SCALE_UP_RATE_THRESHOLD).getCurrent()
                || tpr > metrics.get(ScalingMetric.SCALE_DOWN_RATE_THRESHOLD).getCurrent();
    }

    /**
     * Writes each vertex's parallelism before and after the executed decision (its override, when it
     * scaled) and the evaluated metrics of REPORTED into its object of vertices, then "scaling" and
     * "vertices" into r.
     */
    static void putVertices(
            ObjectNode r,
            ObjectNode vertices,
            Map<String, JobVertexID> ids,
            EvaluatedMetrics evaluated,
            boolean scaled,
            Map<String, String> overrides) {
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
    }

    /** Writes the events as r's "events": type, reason, message and key each. */
    static void putEvents(ObjectNode r, Events events) {
        ArrayNode ev = r.putArray("events");
        for (var e : events.events) {
            var eo = ev.addObject();
            eo.put("type", e[0]);
            eo.put("reason", e[1]);
            eo.put("message", e[2]);
            eo.put("key", e[3]);
        }
    }
}
