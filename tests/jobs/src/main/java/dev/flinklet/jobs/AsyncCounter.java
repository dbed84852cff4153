package dev.flinklet.jobs;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * StatefulCounter's pipeline (the same arguments), submitted the way Flink's docs submit a job whose client does
 * not wait for it: {@code env.executeAsync()}, the job id printed, and main() returns at once. Under Flink's CLI
 * alone the JVM exits when main() returns, and the job with it; under flinklet the job runs until it ends.
 */
public final class AsyncCounter {

    private AsyncCounter() {}

    public static void main(String[] argv) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        String name = StatefulCounter.build(env, Args.parse(argv));
        JobClient client = env.executeAsync("Async" + name);
        System.out.println("AsyncCounter: submitted job " + client.getJobID() + "; main() returns");
    }
}
