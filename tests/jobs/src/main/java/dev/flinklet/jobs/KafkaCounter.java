package dev.flinklet.jobs;

import java.util.Properties;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * StatefulCounter's pipeline between two Kafka topics: records {@code seq} (decimal text) read from
 * the input topic from its earliest offsets, keyed by seq % keys, a keyed counter in ValueState, and
 * {@code seq,key,count} written to the output topic by a KafkaSink with DeliveryGuarantee.EXACTLY_ONCE:
 * each checkpoint commits one Kafka transaction per sink subtask, so a reader with
 * isolation.level=read_committed sees every seq exactly once and, for each key, the counts 1..n.
 *
 * <p>Arguments: --bootstrap HOST:PORT (required), --input TOPIC (required), --output TOPIC (required),
 * --transactional-id-prefix P (required: it must stay the same across restarts, so that a restored
 * sink finds and aborts the transactions its previous run left open), --transaction-timeout-ms N (the
 * producer's transaction.timeout.ms, default 900000: the broker's default transaction.max.timeout.ms, which
 * it must not exceed, and longer than flinklet's whole crash loop with its default restart settings; the
 * sink's own default, 1 h, is refused by such a broker; docs/operations.md, "Kafka jobs"), --rate N (records/s read in total, default unlimited: a throttle after
 * the source, so that a test can fault the job while it still has input), --subtask-rate N (records/s each
 * Parse subtask reads at most, default unlimited: the work per record, so that more subtasks read more, for the
 * autoscaler's tests), --keys N (default 16).
 *
 * <p>Checkpointing, parallelism, state backend and restart strategy are deliberately NOT set here:
 * they come from the Flink configuration given by the supervisor.
 */
public final class KafkaCounter {

    private KafkaCounter() {}

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        String bootstrap = args.getRequired("bootstrap");
        String input = args.getRequired("input");
        String output = args.getRequired("output");
        String prefix = args.getRequired("transactional-id-prefix");
        long txTimeout = args.getLong("transaction-timeout-ms", 900_000);
        long rate = args.getLong("rate", 0);
        long subtaskRate = args.getLong("subtask-rate", 0);
        long keys = args.getLong("keys", 16);
        if (keys <= 0) {
            throw new IllegalArgumentException("--keys must be > 0");
        }
        if (rate < 0 || subtaskRate < 0 || txTimeout <= 0) {
            throw new IllegalArgumentException(
                    "--rate and --subtask-rate must be >= 0, --transaction-timeout-ms > 0");
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();

        KafkaSource<String> source =
                KafkaSource.<String>builder()
                        .setBootstrapServers(bootstrap)
                        .setTopics(input)
                        .setGroupId(prefix + "-source")
                        .setStartingOffsets(OffsetsInitializer.earliest())
                        .setValueOnlyDeserializer(new SimpleStringSchema())
                        .build();

        DataStream<Long> seqs =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka input")
                        .uid("kafka-source")
                        .map(new ParseThrottle(rate, subtaskRate))
                        .name("Parse")
                        .uid("parse");

        DataStream<String> lines =
                seqs.keyBy(new ModKey(keys)).process(new Count()).name("Count").uid("count");

        Properties producer = new Properties();
        producer.setProperty("transaction.timeout.ms", Long.toString(txTimeout));
        KafkaSink<String> sink =
                KafkaSink.<String>builder()
                        .setBootstrapServers(bootstrap)
                        .setKafkaProducerConfig(producer)
                        .setRecordSerializer(
                                KafkaRecordSerializationSchema.builder()
                                        .setTopic(output)
                                        .setValueSerializationSchema(new SimpleStringSchema())
                                        .build())
                        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                        .setTransactionalIdPrefix(prefix)
                        .build();
        lines.sinkTo(sink).name("Kafka output").uid("kafka-sink");

        env.execute("KafkaCounter (" + input + " -> " + output + ")");
    }

    /**
     * "seq" -> seq, at most rate records/s over all subtasks and subtaskRate records/s in each (0:
     * unlimited).
     */
    static final class ParseThrottle extends RichMapFunction<String, Long> {
        private static final long serialVersionUID = 1L;
        private final long rate;
        private final long subtaskRate;
        private transient double perRecordMs;
        private transient long start;
        private transient long seen;
        private transient long periodNs;
        private transient long lastNs;

        ParseThrottle(long rate, long subtaskRate) {
            this.rate = rate;
            this.subtaskRate = subtaskRate;
        }

        @Override
        public void open(OpenContext openContext) {
            int subtasks = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
            perRecordMs = rate > 0 ? 1000.0 * subtasks / rate : 0;
            periodNs = subtaskRate > 0 ? 1_000_000_000L / subtaskRate : 0;
            start = System.currentTimeMillis();
        }

        @Override
        public Long map(String value) throws Exception {
            if (periodNs > 0) {
                // one record per period at most, with no credit for idle time: the subtask's capacity
                long now = System.nanoTime();
                long allowed = Math.max(lastNs + periodNs, now);
                if (allowed > now) {
                    LockSupport.parkNanos(allowed - now);
                }
                lastNs = allowed;
            }
            if (perRecordMs > 0) {
                long due = start + (long) (++seen * perRecordMs);
                long wait = due - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
            }
            return Long.parseLong(value.trim());
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
        private transient ValueState<Long> counter;

        @Override
        public void open(OpenContext openContext) {
            counter = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Long seq, Context ctx, Collector<String> out) throws Exception {
            Long c = counter.value();
            long n = (c == null ? 0L : c) + 1;
            counter.update(n);
            out.collect(seq + "," + ctx.getCurrentKey() + "," + n);
        }
    }
}
