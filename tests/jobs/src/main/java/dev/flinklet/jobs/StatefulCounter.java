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
 * function throws on its first record, so the job fails at run time), --fail-after N (each Count
 * subtask throws {@code java.lang.RuntimeException: boom ...} once it has processed N records since it
 * opened: the job runs a while, then fails, and again after each restart), --exit-at-start (main()
 * throws before building the pipeline), --pad-bytes N (each key also keeps N bytes of
 * incompressible state, written on its first record: keys x N is the state's size, for tests
 * and benchmarks of large state; default 0), --open-delay-file PATH (while that file exists, the
 * Count function's open() sleeps the milliseconds it holds: its tasks stay INITIALIZING, as a
 * restore of a large state from a slow volume keeps them), --snapshot-delay-file PATH (while that file exists, a
 * SnapshotDelay step after Count sleeps the milliseconds it holds in each checkpoint's synchronous part: with
 * execution.checkpointing.timeout below that, every checkpoint expires while the job runs on).
 *
 * <p>Checkpointing, parallelism, state backend and restart strategy are deliberately NOT set
 * here: they come from the Flink configuration given by the supervisor.
 */
public final class StatefulCounter {

    private StatefulCounter() {}

    public static void main(String[] argv) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.execute(build(env, Args.parse(argv)));
    }

    /** Builds the pipeline on env from the arguments above; returns the job's name. */
    static String build(StreamExecutionEnvironment env, Args args) {
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
        long failAfter = args.getLong("fail-after", 0);
        long padBytes = args.getLong("pad-bytes", 0);
        String openDelayFile = args.get("open-delay-file", null);
        String snapshotDelayFile = args.get("snapshot-delay-file", null);
        if (rate <= 0) {
            throw new IllegalArgumentException("--rate must be > 0");
        }
        if (keys <= 0) {
            throw new IllegalArgumentException("--keys must be > 0");
        }
        if (count < 0 || work < 0 || failAfter < 0 || padBytes < 0 || padBytes > (64 << 20)) {
            throw new IllegalArgumentException(
                    "--count, --work and --fail-after must be >= 0, --pad-bytes 0..64 MiB");
        }

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
                        .process(new Count(work, workFile, failOnRecord, failAfter, (int) padBytes,
                                openDelayFile))
                        .name("Count")
                        .uid("count");
        if (snapshotDelayFile != null) {
            lines = lines.map(new SnapshotDelay(snapshotDelayFile)).name("SnapshotDelay").uid("snapshot-delay");
        }

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
        return name;
    }

    /** Passes records on; while its file exists, each checkpoint's snapshot sleeps the milliseconds it holds. */
    static final class SnapshotDelay implements org.apache.flink.api.common.functions.MapFunction<String, String>,
            org.apache.flink.streaming.api.checkpoint.CheckpointedFunction {
        private static final long serialVersionUID = 1L;
        private final String file;

        SnapshotDelay(String file) {
            this.file = file;
        }

        @Override
        public String map(String line) {
            return line;
        }

        @Override
        public void snapshotState(org.apache.flink.runtime.state.FunctionSnapshotContext context)
                throws InterruptedException {
            long ms = 0;
            try {
                ms = Long.parseLong(new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(file)),
                        java.nio.charset.StandardCharsets.UTF_8).trim());
            } catch (Exception e) {
                ms = 0; // no file (or not a number): no delay
            }
            if (ms > 0) {
                Thread.sleep(ms);
            }
        }

        @Override
        public void initializeState(org.apache.flink.runtime.state.FunctionInitializationContext context) {}
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
        private final long failAfter;
        private final int padBytes;
        private final String openDelayFile;
        private transient ValueState<Long> counter;
        private transient ValueState<byte[]> pad;
        private transient long sink; // keeps the busy loop from being optimised away
        private transient long currentWork;
        private transient long workReadAt;
        private transient long processed; // records of this subtask since it opened (--fail-after)

        /** workFile, when given, holds the busy-loop iterations per record, re-read every second: a test
         * raises and lowers the load of a running job without restarting it. */
        Count(long work, String workFile, boolean failOnRecord, long failAfter, int padBytes,
                String openDelayFile) {
            this.work = work;
            this.workFile = workFile;
            this.failOnRecord = failOnRecord;
            this.failAfter = failAfter;
            this.padBytes = padBytes;
            this.openDelayFile = openDelayFile;
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
        public void open(OpenContext openContext) throws InterruptedException {
            counter = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            if (padBytes > 0) {
                pad = getRuntimeContext().getState(
                        new ValueStateDescriptor<>("pad",
                                org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo
                                        .BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            }
            if (openDelayFile != null) {
                long ms = 0;
                try {
                    ms = Long.parseLong(
                            new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(openDelayFile)),
                                    java.nio.charset.StandardCharsets.UTF_8).trim());
                } catch (Exception e) {
                    ms = 0; // no file (or not a number): no delay
                }
                if (ms > 0) {
                    Thread.sleep(ms);
                }
            }
        }

        @Override
        public void processElement(Long seq, Context ctx, Collector<String> out) throws Exception {
            if (failOnRecord) {
                throw new RuntimeException(
                        "StatefulCounter: --fail-on-record given, failing on record " + seq);
            }
            if (failAfter > 0 && ++processed > failAfter) {
                throw new RuntimeException(
                        "boom (StatefulCounter --fail-after " + failAfter + ": this subtask processed "
                                + failAfter + " records)");
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
            if (pad != null && n == 1) {
                byte[] b = new byte[padBytes];
                new java.util.Random(ctx.getCurrentKey() * 31 + seq).nextBytes(b);
                pad.update(b);
            }
            out.collect(seq + "," + ctx.getCurrentKey() + "," + n);
        }
    }
}
