package dev.flinklet.jobs;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.flink.streaming.api.operators.StreamingRuntimeContext;
import org.apache.flink.util.Collector;

/**
 * StatefulCounter on Flink 2.x's asynchronous state API (State V2): the keyed stream with
 * {@code enableAsyncState()}, the count in {@code org.apache.flink.api.common.state.v2.ValueState} read and
 * written through its futures. With ForSt and its primary directory the checkpoint directory (Flink 2.x's
 * default), this is the job whose working files live on the volume, under the checkpoint directory's
 * {@code shared/}. The output is StatefulCounter's ({@code seq,key,count}, exactly once through a FileSink that
 * commits on checkpoints), so tests/jobs/check_output.py checks it.
 *
 * <p>Arguments: --output DIR (required), --rate N (records/s, default 100), --keys N (default 16), --pad-bytes N
 * (each key also keeps N bytes of incompressible state, written on its first record; default 0).
 */
public final class AsyncStateCounter {

    private AsyncStateCounter() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        String output = args.getRequired("output");
        long rate = args.getLong("rate", 100);
        long keys = args.getLong("keys", 16);
        long padBytes = args.getLong("pad-bytes", 0);
        if (rate <= 0 || keys <= 0 || padBytes < 0 || padBytes > (64 << 20)) {
            throw new IllegalArgumentException("--rate and --keys must be > 0, --pad-bytes 0..64 MiB");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataGeneratorSource<Long> source = new DataGeneratorSource<>(
                new StatefulCounter.Identity(), Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.LONG);
        DataStream<String> lines = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Sequence")
                .uid("source")
                .keyBy(new StatefulCounter.ModKey(keys))
                .enableAsyncState()
                .process(new Count((int) padBytes))
                .name("Count")
                .uid("count");
        FileSink<String> sink = FileSink.forRowFormat(new Path(output), new SimpleStringEncoder<String>("UTF-8"))
                .withBucketAssigner(new BasePathBucketAssigner<>())
                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                .build();
        lines.sinkTo(sink).name("Output").uid("sink");
        env.execute("AsyncStateCounter");
    }

    /** Counts records per key in asynchronous state; emits "seq,key,count". */
    static final class Count extends KeyedProcessFunction<Long, Long, String> {
        private static final long serialVersionUID = 1L;
        private final int padBytes;
        private transient ValueState<Long> counter;
        private transient ValueState<byte[]> pad;

        Count(int padBytes) {
            this.padBytes = padBytes;
        }

        @Override
        public void open(OpenContext openContext) {
            StreamingRuntimeContext ctx = (StreamingRuntimeContext) getRuntimeContext();
            counter = ctx.getValueState(new ValueStateDescriptor<>("count", Types.LONG));
            if (padBytes > 0) {
                pad = ctx.getValueState(
                        new ValueStateDescriptor<>("pad", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            }
        }

        @Override
        public void processElement(Long seq, Context ctx, Collector<String> out) {
            long key = ctx.getCurrentKey();
            counter.asyncValue().thenAccept(c -> {
                long n = (c == null ? 0L : c) + 1;
                counter.asyncUpdate(n);
                if (pad != null && n == 1) {
                    byte[] b = new byte[padBytes];
                    new java.util.Random(key * 31 + seq).nextBytes(b);
                    pad.asyncUpdate(b);
                }
                out.collect(seq + "," + key + "," + n);
            });
        }
    }
}
