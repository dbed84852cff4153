/* OneJobExecutorLoader: the pipeline executors of Flink's CLI (execution.target: local, a per-job MiniCluster), with
 * each submission counted: the first job main() submits is kept for the launcher to wait on, a second is refused
 * (one job per JVM: a second per-job MiniCluster would take the same REST port, and the job id is fixed). Every way a
 * program submits passes here: env.execute() and env.executeAsync(), and the Table API's, whose executor is the
 * context StreamExecutionEnvironment the CLI installs. The local executor's per-job MiniCluster is kept
 * (FlinkletLauncher.CLUSTER): a JVM that runs a next job closes it first. */
package dev.flinklet.launcher;

import org.apache.flink.api.dag.Pipeline;
import org.apache.flink.client.deployment.executors.LocalExecutor;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.PipelineExecutor;
import org.apache.flink.core.execution.PipelineExecutorFactory;
import org.apache.flink.core.execution.PipelineExecutorServiceLoader;
import org.apache.flink.util.FlinkRuntimeException;

import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

/** A PipelineExecutorServiceLoader whose executors submit one job. */
final class OneJobExecutorLoader implements PipelineExecutorServiceLoader {
    private final PipelineExecutorServiceLoader delegate;
    private final String mainClass;
    private CompletableFuture<JobClient> submitted;
    private String refused;

    OneJobExecutorLoader(PipelineExecutorServiceLoader delegate, String mainClass) {
        this.delegate = delegate;
        this.mainClass = mainClass;
    }

    /** The first submission's client, or null when main() submitted none. */
    synchronized CompletableFuture<JobClient> submitted() {
        return submitted;
    }

    /** Why a second submission was refused, or null when there was none. */
    synchronized String refused() {
        return refused;
    }

    private synchronized CompletableFuture<JobClient> submit(PipelineExecutor executor, Pipeline pipeline,
            Configuration configuration, ClassLoader classLoader) throws Exception {
        if (submitted != null) {
            refused = mainClass + "'s main() submitted a second job: flinklet runs one job per JVM, the first one"
                    + " main() submits (submit the statements as one job: a StatementSet, or EXECUTE STATEMENT SET)";
            throw new FlinkRuntimeException(refused);
        }
        submitted = executor.execute(pipeline, configuration, classLoader);
        return submitted;
    }

    @Override
    public PipelineExecutorFactory getExecutorFactory(Configuration configuration) throws Exception {
        PipelineExecutorFactory factory = delegate.getExecutorFactory(configuration);
        return new PipelineExecutorFactory() {
            @Override
            public String getName() {
                return factory.getName();
            }

            @Override
            public boolean isCompatibleWith(Configuration c) {
                return factory.isCompatibleWith(c);
            }

            @Override
            public PipelineExecutor getExecutor(Configuration c) {
                /* the local executor as its factory makes it, with the MiniCluster it starts kept */
                PipelineExecutor executor = LocalExecutor.NAME.equals(factory.getName())
                        ? LocalExecutor.createWithFactory(c, conf -> {
                            MiniCluster cluster = new MiniCluster(conf, () -> FlinkletLauncher.rpcSystem(
                                    conf.getConfiguration()));
                            FlinkletLauncher.CLUSTER.set(cluster);
                            return cluster;
                        })
                        : factory.getExecutor(c);
                return (pipeline, conf, classLoader) -> submit(executor, pipeline, conf, classLoader);
            }
        };
    }

    @Override
    public Stream<String> getExecutorNames() {
        return delegate.getExecutorNames();
    }
}
