/* SqlPlans: a SQL script job's compiled plans on flinklet's volume (<state dir>/sql/plan-<script sha256>.json). The
 * job runs from its script's plan: compiled (COMPILE PLAN) at the script's first launch and written whole (temp file,
 * fsync, rename, fsync of the directory), loaded (PlanReference.fromFile) at every later one, so that a restart, a
 * flinklet upgrade or a Flink patch upgrade restores the state into the same operators (the plan fixes their ids) and
 * a rollback to an earlier script finds its plan again. A new script's plan is compared with the newest one before it:
 * the operators that went away (their state is what allowNonRestoredState drops) and the new ones (they start empty)
 * are said on one "flinklet-sql: plan changed: ..." line, which flinklet turns into a SqlPlanChanged event. The newest
 * KEEP plans are kept. */
package dev.flinklet.launcher;

import org.apache.flink.table.api.CompiledPlan;
import org.apache.flink.table.api.PlanReference;
import org.apache.flink.table.api.TableEnvironment;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** The compiled plans of a script job. */
final class SqlPlans {
    private static final int KEEP = 5;
    /** An exec node of a plan: its id and its type (stream-exec-group-aggregate_1, ...), which name its operators. */
    private static final Pattern NODE = Pattern.compile("\\{\\s*\"id\"\\s*:\\s*(\\d+)\\s*,\\s*\"type\"\\s*:\\s*\"([^\"]+)\"");

    /** Compiles the job's plan (a supplier that may throw the runner's Failure). */
    interface Compiler {
        CompiledPlan compile() throws Exception;
    }

    private SqlPlans() {}

    /** The plan of the script whose sha256 is sha: loaded from dir, else compiled and written there. */
    static CompiledPlan plan(TableEnvironment tableEnv, Path dir, String sha, Compiler compiler) throws Exception {
        Path file = dir.resolve("plan-" + sha + ".json");
        if (Files.isRegularFile(file)) {
            System.out.println("flinklet-sql: running the compiled plan " + file + " (compiled at the script's first"
                    + " launch)");
            return tableEnv.loadPlan(PlanReference.fromFile(file.toFile()));
        }
        CompiledPlan plan = compiler.compile();
        String json = plan.asJsonString();
        Files.createDirectories(dir);
        Path previous = newest(dir);
        if (previous != null) {
            String change = change(Files.readString(previous, StandardCharsets.UTF_8), json);
            System.out.println("flinklet-sql: plan " + (change.isEmpty()
                    ? "unchanged: the edited script has the operators of " + previous.getFileName()
                    : "changed: from " + previous.getFileName() + " " + change));
        }
        write(dir, file, json);
        prune(dir);
        System.out.println("flinklet-sql: compiled the script's plan into " + file);
        return plan;
    }

    /** The exec nodes of a plan's JSON, "id:type" each, in order. */
    static Set<String> nodes(String json) {
        Set<String> out = new LinkedHashSet<>();
        Matcher m = NODE.matcher(json);
        while (m.find()) {
            out.add(m.group(1) + ":" + m.group(2));
        }
        return out;
    }

    /** What changed between two plans ("" when their nodes are the same). */
    static String change(String before, String after) {
        Set<String> a = nodes(before), b = nodes(after);
        List<String> gone = a.stream().filter(n -> !b.contains(n)).collect(Collectors.toList());
        List<String> added = b.stream().filter(n -> !a.contains(n)).collect(Collectors.toList());
        if (gone.isEmpty() && added.isEmpty()) {
            return "";
        }
        return "operators gone " + gone + " (their state is not restored: allowNonRestoredState drops it, else the"
                + " restore fails), operators new " + added + " (they start empty)";
    }

    private static Path newest(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(SqlPlans::isPlan)
                    .max(Comparator.comparingLong(SqlPlans::mtime)).orElse(null);
        }
    }

    private static boolean isPlan(Path p) {
        String n = p.getFileName().toString();
        return n.startsWith("plan-") && n.endsWith(".json");
    }

    private static long mtime(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    /** Writes the file whole: a temp file, fsync, rename over, fsync of the directory. */
    private static void write(Path dir, Path file, String text) throws IOException {
        Path tmp = dir.resolve("." + file.getFileName() + ".tmp");
        try (FileChannel c = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
            while (b.hasRemaining()) {
                c.write(b);
            }
            c.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    private static void prune(Path dir) throws IOException {
        List<Path> plans;
        try (Stream<Path> files = Files.list(dir)) {
            plans = files.filter(SqlPlans::isPlan).sorted(Comparator.comparingLong(SqlPlans::mtime).reversed())
                    .collect(Collectors.toCollection(ArrayList::new));
        }
        for (int i = KEEP; i < plans.size(); i++) {
            Files.deleteIfExists(plans.get(i));
        }
    }
}
