package dev.flinklet.jobs;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.flink.util.Collector;

/**
 * The flinklet test/demo job: a rate-limited sequence 0..count-1, keyed by seq % keys, a keyed
 * counter in ValueState, written exactly-once to a FileSink that commits on checkpoints.
 *
 * <p>Output lines are {@code seq,key,count} where count is the key's count after this record
 * (starting at 1). Committed files (names not starting with ".") never contain a seq twice, and
 * for each key the counts are exactly 1..n.
 *
 * <p>Arguments: --output DIR (required, path or file: URI), --rate N (records/s total, default
 * 100), --work N (busy-loop iterations per record, default 0), --work-file PATH (the iterations, re-read
 * from that file every second), --keys N (default 16), --count N
 * (bounded: the job finishes after N records; default unbounded), --fail-on-record (the Count
 * function throws on its first record, so the job fails at run time), --exit-at-start (main()
 * throws before building the pipeline).
 *
 * <p>Checkpointing, parallelism, state backend and restart strategy are deliberately NOT set
 * here: they come from the Flink configuration given by the supervisor.
 */
public final class StatefulCounter {

    private StatefulCounter() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        if (args.getFlag("exit-at-start")) {
            throw new RuntimeException("StatefulCounter: --exit-at-start given, failing in main()");
        }
        String output = args.getRequired("output");
        long rate = args.getLong("rate", 100);
        long work = args.getLong("work", 0);
        String workFile = args.get("work-file", null);
        long keys = args.getLong("keys", 16);
        long count = args.getLong("count", Long.MAX_VALUE);
        boolean failOnRecord = args.getFlag("fail-on-record");
        if (rate <= 0) {
            throw new IllegalArgumentException("--rate must be > 0");
        }
        if (keys <= 0) {
            throw new IllegalArgumentException("--keys must be > 0");
        }
        if (count < 0 || work < 0) {
            throw new IllegalArgumentException("--count and --work must be >= 0");
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();

        DataGeneratorSource<Long> source =
                new DataGeneratorSource<>(
                        new Identity(),
                        count,
                        RateLimiterStrategy.perSecond(rate),
                        Types.LONG);

        DataStream<Long> seqs =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "Sequence").uid("source");

        DataStream<String> lines =
                seqs.keyBy(new ModKey(keys))
                        .process(new Count(work, workFile, failOnRecord))
                        .name("Count")
                        .uid("count");

        FileSink<String> sink =
                FileSink.forRowFormat(new Path(output), new SimpleStringEncoder<String>("UTF-8"))
                        .withBucketAssigner(new BasePathBucketAssigner<>())
                        .withRollingPolicy(OnCheckpointRollingPolicy.build())
                        .build();
        lines.sinkTo(sink).name("Output").uid("sink");

        String name = "StatefulCounter";
        if (count != Long.MAX_VALUE) {
            name += " (count=" + count + ")";
        }
        env.execute(name);
    }

    /** index -> index. */
    static final class Identity implements GeneratorFunction<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long map(Long index) {
            return index;
        }
    }

    /** seq -> seq % keys. */
    static final class ModKey implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long keys;

        ModKey(long keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long seq) {
            return seq % keys;
        }
    }

    /** Counts records per key; emits "seq,key,count". */
    static final class Count extends KeyedProcessFunction<Long, Long, String> {
        private static final long serialVersionUID = 1L;
        private final long work;
        private final String workFile;
        private final boolean failOnRecord;
        private transient ValueState<Long> counter;
        private transient long sink; // keeps the busy loop from being optimised away
        private transient long currentWork;
        private transient long workReadAt;

        /** workFile, when given, holds the busy-loop iterations per record, re-read every second: a test
         * raises and lowers the load of a running job without restarting it. */
        Count(long work, String workFile, boolean failOnRecord) {
            this.work = work;
            this.workFile = workFile;
            this.failOnRecord = failOnRecord;
        }

        private long work() {
            if (workFile == null) {
                return work;
            }
            long now = System.currentTimeMillis();
            if (now - workReadAt >= 1000) {
                workReadAt = now;
                try {
                    currentWork = Long.parseLong(
                            new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(workFile)),
                                    java.nio.charset.StandardCharsets.UTF_8).trim());
                } catch (Exception e) {
                    currentWork = work;
                }
            }
            return currentWork;
        }

        @Override
        public void open(OpenContext openContext) {
            counter = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Long seq, Context ctx, Collector<String> out) throws Exception {
            if (failOnRecord) {
                throw new RuntimeException(
                        "StatefulCounter: --fail-on-record given, failing on record " + seq);
            }
            long x = sink;
            long iterations = work();
            for (long i = 0; i < iterations; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
            sink = x;
            Long c = counter.value();
            long n = (c == null ? 0L : c) + 1;
            counter.update(n);
            out.collect(seq + "," + ctx.getCurrentKey() + "," + n);
        }
    }
}
