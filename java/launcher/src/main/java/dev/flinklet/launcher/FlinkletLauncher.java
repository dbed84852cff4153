/* FlinkletLauncher: the MiniCluster JVM's main class. Flink's CLI `run -t local` (the same arguments: -s, -cm, -n,
 * -c, the jar and its arguments; the same FLINK_CONF_DIR/config.yaml), with application-mode semantics: the one job
 * the user's main() submits runs until Flink says it ended, whatever main() does after submitting it. The CLI alone
 * calls System.exit when main() returns, which ends the per-job MiniCluster and the job with it: a main() that
 * returns after env.executeAsync(), tableEnv.executeSql("INSERT ...") or a StatementSet's execute() would stop its
 * job within seconds. Exit codes are the CLI's: 0 when the job FINISHED (a stop-with-savepoint too), 1 when it
 * FAILED or was CANCELED, when main() threw, submitted no job or a second one.
 *
 * A job-only upgrade keeps the JVM (issue 38, docs/operations.md "Upgrade paths and their cost"): flinklet says
 * `hold` on the JVM's standard input before it stops the job with a savepoint; when the job then ends FINISHED,
 * its MiniCluster is closed (its REST port and reporter port free again) and the launcher waits, saying
 * `flinklet-launcher: idle` on standard output, for `run` with the next job's CLI arguments, which it runs as it ran
 * the first: FLINK_CONF_DIR/config.yaml read again, the jar in a fresh user class loader, a new per-job MiniCluster
 * (the same fixed job id, the restore path and mode of the arguments). The protocol is LauncherControl's. Without
 * `hold`, or after `release` or the end of standard input (the supervisor is gone), the JVM exits as before. */
package dev.flinklet.launcher;

import org.apache.flink.api.common.JobID;
import org.apache.flink.client.ClientUtils;
import org.apache.flink.client.cli.CliFrontend;
import org.apache.flink.client.cli.CustomCommandLine;
import org.apache.flink.client.cli.DefaultCLI;
import org.apache.flink.client.cli.GenericCLI;
import org.apache.flink.client.program.PackagedProgram;
import org.apache.flink.client.program.ProgramInvocationException;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.execution.DefaultExecutorServiceLoader;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.security.SecurityConfiguration;
import org.apache.flink.runtime.security.SecurityUtils;
import org.apache.flink.runtime.util.EnvironmentInformation;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.rpc.RpcService;
import org.apache.flink.runtime.rpc.RpcSystem;
import org.apache.flink.util.Reference;

/** The CLI's `run`, with the wait for the job after main() returns. */
public final class FlinkletLauncher extends CliFrontend {
    private static final Logger LOG = LoggerFactory.getLogger(FlinkletLauncher.class);
    /** The JVM's environment and options at start (about 80 lines), which flinklet's log4j configuration mutes. */
    private static final Logger ENVIRONMENT = LoggerFactory.getLogger(FlinkletLauncher.class.getName() + ".environment");
    /** The CLI's code for a launcher that could not even start (CliFrontend's INITIAL_RET_CODE). */
    private static final int INITIAL_RET_CODE = 31;
    /** The per-job MiniCluster of the job running (or just ended), closed before the next job's is started. */
    static final AtomicReference<MiniCluster> CLUSTER = new AtomicReference<>();
    /** How long a MiniCluster may take to close before the next job (its REST port must be free again). */
    private static final long CLOSE_TIMEOUT_S = 60;
    /** The RPC system (Pekko, in a class loader of its own) of every MiniCluster of this JVM: loaded once, its
     * classes loaded and compiled once. A MiniCluster loads and closes one of its own by default, which costs a
     * next job more than a second. */
    private static RpcSystem rpc;

    /** The JVM's RPC system, lent to a MiniCluster (it is not the MiniCluster's to close). */
    static synchronized Reference<RpcSystem> rpcSystem(Configuration configuration) {
        if (rpc == null) {
            rpc = RpcSystem.load(configuration);
        }
        return Reference.borrowed(rpc);
    }

    FlinkletLauncher(Configuration configuration, List<CustomCommandLine> commandLines) {
        super(configuration, commandLines);
    }

    @Override
    protected void executeProgram(Configuration configuration, PackagedProgram program)
            throws ProgramInvocationException {
        String mainClass = program.getMainClassName();
        OneJobExecutorLoader loader = new OneJobExecutorLoader(new DefaultExecutorServiceLoader(), mainClass);
        try {
            ClientUtils.executeProgram(loader, configuration, program, false, false);
        } catch (ProgramInvocationException e) {
            String refused = loader.refused();
            if (refused == null) {
                throw e;
            }
            /* main() let the refusal of its second job through: say that, not how it surfaced */
            LOG.debug("main() ended with", e);
            throw new ProgramInvocationException(refused);
        }
        String refused = loader.refused();
        if (refused != null) {
            throw new ProgramInvocationException(refused);
        }
        CompletableFuture<JobClient> submitted = loader.submitted();
        if (submitted == null) {
            throw new ProgramInvocationException(mainClass + "'s main() returned without submitting a job: flinklet"
                    + " runs the one job main() submits (env.execute(), env.executeAsync(), tableEnv.executeSql("
                    + "\"INSERT ...\"), a StatementSet's execute())");
        }
        awaitJob(mainClass, submitted);
    }

    /** Waits for the job main() submitted to end; returns when it FINISHED, throws when it did not. */
    private static void awaitJob(String mainClass, CompletableFuture<JobClient> submitted)
            throws ProgramInvocationException {
        JobID id = null;
        try {
            JobClient client = submitted.get();
            id = client.getJobID();
            CompletableFuture<?> result = client.getJobExecutionResult();
            if (!result.isDone()) {
                LOG.info("{}'s main() returned; the JVM runs job {} until it ends", mainClass, id);
            }
            result.get();
            LOG.info("Job {} FINISHED", id);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProgramInvocationException("interrupted while waiting for the job of " + mainClass, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (id == null) {
                throw new ProgramInvocationException("the job " + mainClass + "'s main() submitted did not start",
                        cause);
            }
            throw new ProgramInvocationException("Job " + id + " did not finish", id, cause);
        }
    }

    /** One CLI run (`run -t local ...`): the configuration read from FLINK_CONF_DIR; returns the CLI's code. */
    private static int runOnce(String[] args) throws Exception {
        String confDir = CliFrontend.getConfigurationDirectoryFromEnv();
        Configuration configuration = GlobalConfiguration.loadConfiguration(confDir);
        List<CustomCommandLine> commandLines = new ArrayList<>();
        commandLines.add(new GenericCLI(configuration, confDir));
        commandLines.add(new DefaultCLI()); /* last: it is always active */
        FlinkletLauncher cli = new FlinkletLauncher(configuration, commandLines);
        SecurityUtils.install(new SecurityConfiguration(cli.getConfiguration()));
        return SecurityUtils.getInstalledContext().runSecured(() -> cli.parseAndRun(args));
    }

    /** Closes the MiniCluster of the job that ended and waits for it: the next one takes the same ports. */
    private static void closeCluster() throws Exception {
        MiniCluster cluster = CLUSTER.getAndSet(null);
        if (cluster != null) {
            cluster.closeAsync().get(CLOSE_TIMEOUT_S, TimeUnit.SECONDS);
        }
    }

    /** The first argument of a standby JVM (flinklet.recovery.standby-jvm), in place of the CLI's: it runs no job
     * until flinklet sends one (`run ...` on standard input), its optional second argument a directory of its own for
     * the RPC system's jar. */
    static final String STANDBY = "--standby";

    /** What a standby JVM does ahead of its job, none of it bound to a port or to the job's configuration (which is
     * read at `run`): the RPC system loaded (Pekko, in a class loader of its own: more than a second of a first
     * MiniCluster's start), its jar extracted into tmpDir (the JVM's own directory, which the scratch rotation of a
     * launch does not touch), and a local actor system started and closed once. Without tmpDir nothing is warmed. */
    private static void warmUp(String tmpDir) {
        if (tmpDir == null) {
            return;
        }
        long t0 = System.nanoTime();
        try {
            Configuration conf = new Configuration();
            conf.set(CoreOptions.TMP_DIRS, tmpDir);
            RpcSystem system = rpcSystem(conf).deref();
            long loaded = System.nanoTime();
            /* a local RPC service (an actor system without remoting: no port) started and closed: its classes
             * loaded and initialized, which a MiniCluster's start spends about a second on in a new JVM */
            RpcService service = system.localServiceBuilder(conf).createAndStart();
            service.closeAsync().get(CLOSE_TIMEOUT_S, TimeUnit.SECONDS);
            LOG.info("standby: the RPC system is loaded ({} ms) and a local RPC service was started and closed ({} ms)",
                    (loaded - t0) / 1_000_000, (System.nanoTime() - loaded) / 1_000_000);
        } catch (Throwable t) {
            LOG.warn("standby: the RPC system could not be loaded ahead of the job; its MiniCluster loads it", t);
        }
    }

    /** The CLI's main(), with this class in place of CliFrontend and without the YARN command line; then, while
     * flinklet holds the JVM (LauncherControl), the next jobs it sends. */
    public static void main(String[] args) {
        int code = INITIAL_RET_CODE;
        try {
            EnvironmentInformation.logEnvironmentInfo(ENVIRONMENT, "flinklet launcher", args);
            LauncherControl control = LauncherControl.start(System.in);
            if (args.length > 0 && args[0].equals(STANDBY)) {
                /* a standby JVM (issue 38, item 4): no job yet; flinklet hands it a crashed JVM's restore */
                warmUp(args.length > 1 ? args[1] : null);
                LauncherControl.say("standby: no job; waiting for one");
                String[] first = control.awaitFirst();
                if (first == null) {
                    LOG.info("the standby JVM is let go without a job: it exits");
                    code = 0;
                    return;
                }
                LauncherControl.say("submitting the job to this standby JVM");
                LOG.info("flinklet submits the job to this standby JVM: {}", String.join(" ", first));
                args = first;
            }
            code = runOnce(args);
            while (code == 0 && control.holding()) {
                closeCluster();
                LauncherControl.say("idle: the job ended and its MiniCluster is closed; waiting for the next job");
                String[] next = control.awaitNext();
                if (next == null) {
                    LOG.info("no next job: the JVM exits");
                    break;
                }
                LauncherControl.say("submitting the next job in this JVM");
                LOG.info("flinklet submits the next job to this JVM: {}", String.join(" ", next));
                code = INITIAL_RET_CODE;
                code = runOnce(next);
            }
        } catch (Throwable t) {
            LOG.error("Fatal error while running the flinklet launcher.", t);
            t.printStackTrace();
        } finally {
            System.exit(code);
        }
    }
}
