/* SqlPlans: a SQL script job's compiled plans on flinklet's volume (<state dir>/sql/plan-<script sha256>.json). The
 * job runs from its script's plan: compiled (COMPILE PLAN) at the script's first launch and written whole (temp file,
 * fsync, rename, fsync of the directory), loaded (PlanReference.fromFile) at every later one, so that a restart, a
 * flinklet upgrade or a Flink patch upgrade restores the state into the same operators (the plan fixes their ids) and
 * a rollback to an earlier script finds its plan again. A new script's plan is compared with the newest one before it:
 * the operators that went away (their state is what allowNonRestoredState drops) and the new ones (they start empty)
 * are said on one "flinklet-sql: plan changed: ..." line, which flinklet turns into a SqlPlanChanged event. The newest
 * KEEP plans are kept. A plan of an older Flink loads (an upgrade keeps the operators); one of a newer Flink (a
 * downgrade), which Flink cannot load, is refused saying so. */
package dev.flinklet.launcher;

import org.apache.flink.FlinkVersion;
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
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** The compiled plans of a script job. */
final class SqlPlans {
    private static final int KEEP = 5;
    /** The Flink release that compiled a plan ("2.3"): its top-level "flinkVersion", the JSON's first. */
    private static final Pattern COMPILED_BY = Pattern.compile("\"flinkVersion\"\\s*:\\s*\"([^\"]+)\"");
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
            loadable(file, Files.readString(file, StandardCharsets.UTF_8));
            System.out.println("flinklet-sql: running the compiled plan " + file + " (compiled at the script's first"
                    + " launch)");
            return tableEnv.loadPlan(PlanReference.fromFile(file.toFile()));
        }
        CompiledPlan plan = compiler.compile();
        String json = plan.asJsonString();
        Files.createDirectories(dir);
        Path previous = newest(dir);
        if (previous != null) {
            String before = Files.readString(previous, StandardCharsets.UTF_8);
            String change = change(before, json);
            String versions = versions(before, json);
            System.out.println("flinklet-sql: plan " + (change.isEmpty()
                    ? "unchanged: the edited script has the operators of " + previous.getFileName()
                    : "changed: from " + previous.getFileName() + " " + change)
                    + (versions.isEmpty() ? "" : "; " + versions));
        }
        write(dir, file, json);
        prune(dir);
        System.out.println("flinklet-sql: compiled the script's plan into " + file);
        return plan;
    }

    /** Throws, saying so, when the plan was compiled by a newer Flink than this one (a downgrade: 2.3's plan on 1.20),
     *  which Flink's loadPlan refuses as an "Unknown Flink version"; a plan of an older Flink loads (an upgrade). */
    static void loadable(Path file, String json) {
        Matcher m = COMPILED_BY.matcher(json);
        if (!m.find()) {
            return; /* Flink's own error then */
        }
        String by = m.group(1);
        FlinkVersion current = FlinkVersion.current();
        Optional<FlinkVersion> v = FlinkVersion.byCode(by);
        if (v.isEmpty() || v.get().isNewerVersionThan(current)) {
            throw new IllegalStateException(file.getFileName() + " was compiled by Flink " + by + ", newer than this"
                    + " Flink (" + current + "): a compiled plan loads on the Flink that compiled it and on later ones;"
                    + " run Flink " + by + " or later, or remove the file to have the script compiled again");
        }
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

    /** An exec node without its version ("5:stream-exec-sink" of "5:stream-exec-sink_2"): what its operator's uid
     *  (table.exec.uid.format, "<id>_<transformation>") is made of. Flink raises a node's version between its minor
     *  releases (stream-exec-sink_1 in 1.20 to 2.2, _2 in 2.3): the same operator, not a new one. */
    static String kind(String node) {
        int u = node.lastIndexOf('_');
        boolean versioned = u > node.indexOf(':') && u + 1 < node.length()
                && node.substring(u + 1).chars().allMatch(Character::isDigit);
        return versioned ? node.substring(0, u) : node;
    }

    private static Map<String, String> byKind(Set<String> nodes) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String n : nodes) {
            out.put(kind(n), n);
        }
        return out;
    }

    /** What changed between two plans ("" when their nodes are the same, whatever their versions). */
    static String change(String before, String after) {
        Map<String, String> a = byKind(nodes(before)), b = byKind(nodes(after));
        List<String> gone = a.entrySet().stream().filter(e -> !b.containsKey(e.getKey())).map(Map.Entry::getValue)
                .collect(Collectors.toList());
        List<String> added = b.entrySet().stream().filter(e -> !a.containsKey(e.getKey())).map(Map.Entry::getValue)
                .collect(Collectors.toList());
        if (gone.isEmpty() && added.isEmpty()) {
            return "";
        }
        return "operators gone " + gone + " (their state is not restored: allowNonRestoredState drops it, else the"
                + " restore fails), operators new " + added + " (they start empty)";
    }

    /** The operators both plans have at another version (a plan compiled by another Flink minor release), "" when
     *  none: their uids are the same, so their state restores into them. */
    static String versions(String before, String after) {
        Map<String, String> a = byKind(nodes(before)), b = byKind(nodes(after));
        List<String> moved = a.entrySet().stream().filter(e -> b.containsKey(e.getKey())
                && !b.get(e.getKey()).equals(e.getValue())).map(e -> e.getValue() + " -> " + b.get(e.getKey()))
                .collect(Collectors.toList());
        return moved.isEmpty() ? "" : "operators at another version of Flink's planner " + moved
                + " (the same operator ids: Flink restores their state into them)";
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
