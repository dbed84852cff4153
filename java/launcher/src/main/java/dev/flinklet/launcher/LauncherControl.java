/* LauncherControl: the JVM's standard input, flinklet's control channel to its launcher (issue 38, a job-only
 * upgrade keeps the JVM). One command a line:
 *   hold             when the job ends FINISHED (its stop-with-savepoint), keep the JVM for a next job
 *   release          forget the hold: the JVM exits when the job ends (at once when it already ended)
 *   run B64 B64 ...  the next job: the CLI's arguments (`run -t local -s ... -c ... jar args`), each Base64 (UTF-8)
 * The end of standard input (flinklet is gone) is a release. A pipe rather than a file the launcher watches: only
 * the supervisor that started the JVM holds its write end (nothing else can submit a job, and nothing is left on
 * the volume for a later JVM to misread), the commands arrive in order and at once (no polling), and its end tells
 * the launcher that the supervisor is gone. The launcher answers on standard output with lines that start with
 * "flinklet-launcher: ", which flinklet reads with the JVM's log. */
package dev.flinklet.launcher;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Reads flinklet's commands from standard input on a daemon thread. */
final class LauncherControl {
    /** How long an idle JVM waits for its next job before it exits as the job's end asked. */
    private static final long IDLE_TIMEOUT_S = 600;
    private static final String[] RELEASE = new String[0];

    private final LinkedBlockingQueue<String[]> next = new LinkedBlockingQueue<>();
    private volatile boolean hold;

    private LauncherControl() {}

    static LauncherControl start(InputStream in) {
        LauncherControl c = new LauncherControl();
        Thread t = new Thread(() -> c.read(in), "flinklet-launcher-control");
        t.setDaemon(true);
        t.start();
        return c;
    }

    /** A line to flinklet (standard output, flushed). */
    static void say(String what) {
        System.out.println("flinklet-launcher: " + what);
        System.out.flush();
    }

    private void read(InputStream in) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                line = line.trim();
                if (line.equals("hold")) {
                    next.clear(); /* a release before it was for an earlier hold */
                    hold = true;
                    say("holding: a next job may follow this one in this JVM");
                } else if (line.equals("release")) {
                    hold = false;
                    next.offer(RELEASE);
                } else if (line.startsWith("run ") || line.equals("run")) {
                    String[] words = line.substring(3).trim().split(" ");
                    String[] args = new String[words.length];
                    try {
                        for (int i = 0; i < words.length; i++) {
                            args[i] = new String(Base64.getDecoder().decode(words[i]), StandardCharsets.UTF_8);
                        }
                    } catch (IllegalArgumentException e) {
                        say("refused: a run command that is not Base64");
                        continue;
                    }
                    next.offer(args);
                } else if (!line.isEmpty()) {
                    say("refused: unknown command");
                }
            }
        } catch (Exception e) {
            /* the end of the channel, as EOF */
        }
        hold = false;
        next.offer(RELEASE);
    }

    /** A standby JVM's first job: its arguments, or null once released or at the end of the channel (flinklet is
     * gone). No timeout: a standby waits as long as flinklet keeps it. */
    String[] awaitFirst() throws InterruptedException {
        String[] args = next.take();
        hold = false;
        return args.length == 0 ? null : args;
    }

    /** Whether flinklet asked to keep the JVM when the job ends. */
    boolean holding() {
        return hold;
    }

    /** The next job's arguments, or null: released, the channel ended, or none came within the idle timeout. */
    String[] awaitNext() throws InterruptedException {
        String[] args = next.poll(IDLE_TIMEOUT_S, TimeUnit.SECONDS);
        hold = false;
        return args == null || args.length == 0 ? null : args;
    }
}
