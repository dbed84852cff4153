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
import org.apache.flink.autoscaler.utils.AutoScalerUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;

public final class ParityHarness116 {
    public static void main(String[] args) throws Exception {
        serve((c, r) -> run(c.get("plan"), c.has("resolve") && c.get("resolve").asBoolean(), r));
    }

    static void run(JsonNode plan, boolean resolve, ObjectNode r) throws Exception {
        var conf = planConfig(plan);
        // 1.16 declares the utilization target's spellings as flinklet reads them: "resolve" changes nothing
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
            evaluated =
                    new ScalingMetricEvaluator<String, Ctx>(List.of())
                            .computeEvaluatedMetrics(null, conf, history, restartTime);
        } else {
            evaluated = givenEvaluated(plan, ids, conf, restartTime);
        }

        // scaling history, trimmed as the operator loads it
        store.storeScalingHistory(ctx, rawHistory(plan, ids));
        var scalingHistory = ScalingHistoryUtils.getTrimmedScalingHistory(store, ctx, now);

        // pending delayed scale-downs, with their recommendations (1.16 keeps them)
        var dsd = plan.get("delayedScaleDown");

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
                            topology,
                            copy,
                            scalingHistory.getOrDefault(id, Collections.emptySortedMap()),
                            restartTime,
                            delayedScaleDown(dsd, ids));
            vo.put("change", change.isNoChange() ? "NO_CHANGE" : "CHANGE");
            int p = (int) metrics.get(ScalingMetric.PARALLELISM).getCurrent();
            vo.put("target", change.isNoChange() ? p : change.getNewParallelism());
            vo.put("ineffective", probeEvents.ineffectiveSince(before));
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
        });

        // the executor, as one cycle runs it
        var events = new Events();
        var executor = new ScalingExecutor<String, Ctx>(events, store);
        vertexScalerOf(executor, clock);
        var delayed = delayedScaleDown(dsd, ids);
        boolean scaled =
                executor.scaleResource(
                        ctx, evaluated, scalingHistory, tracking, now, topology, delayed);
        var overrides = store.getParallelismOverrides(ctx);

        putVertices(r, vertices, ids, evaluated, scaled, overrides);
        var pending = r.putObject("delayedScaleDown");
        delayed.getDelayedVertices()
                .forEach(
                        (id, info) ->
                                pending.put(id.toHexString(), info.getFirstTriggerTime().toEpochMilli()));
        putEvents(r, events);
    }

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
