/* SqlScriptRunner: a SQL script as the job, no jar to build (spec.job.sqlScript, spec.job.sql; docs/configuration.md).
 * The script's statements (SqlScript) run in order: SET into the table configuration, the others (CREATE, USE, ...)
 * through tableEnv.executeSql, and the one INSERT or EXECUTE STATEMENT SET, the job, last of all. Under flinklet's
 * launcher the job then runs until it ends, with its savepoints and restores. An error names the script, the line
 * and the column of the statement (or of the spot Flink's parser or validator points at) and the statement's kind.
 *
 * Arguments: [--validate] [--origin=NAME:LINE:COL] [--field=FIELD] [--sha256=HEX] [--plan-dir=DIR] SCRIPT.
 * --plan-dir: the job runs from the script's compiled plan kept there (SqlPlans), so that a restart, a flinklet or a
 * Flink patch upgrade restores into the same operators. --validate submits nothing: it runs SET
 * and the other statements, then has the planner explain the INSERT (or the statement set's INSERTs), and prints
 * every problem as one "flinklet-sql: NAME:LINE:COL: FIELD: problem" line (exit 1), or "flinklet-sql: ok" (exit 0):
 * `flinklet check-config --preflight`. --sha256 is the script's as flinklet checked it (a warning when the file
 * changed since). --origin says where the script's first line and column are in the file the
 * user wrote (an inline spec.job.sql: the configuration file), so that positions are that file's. */
package dev.flinklet.launcher;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.CompiledPlan;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The SQL script runner's main class. */
public final class SqlScriptRunner {
    private static final Pattern FLINK_POSITION = Pattern.compile("line (\\d+), column (\\d+)");
    private static final Pattern SET_QUOTED = Pattern.compile(
            "(?is)SET\\s+'((?:[^']|'')*)'\\s*=\\s*'((?:[^']|'')*)'\\s*");
    private static final Pattern SET_PLAIN = Pattern.compile("(?is)SET\\s+([^\\s=']+)\\s*=\\s*([^\\s']*)\\s*");

    private String name;
    private int lineOrigin = 1;
    private int colOrigin = 1;
    private String field = "";
    private String planDir;
    private String scriptSha256;

    private SqlScriptRunner() {}

    /** A problem at a statement (or at the spot inside it Flink names), in the script's (or origin's) terms. */
    final class Failure extends Exception {
        Failure(SqlScript.Statement st, String kind, Throwable cause) {
            super(where(st, cause) + ": " + kind + ": " + message(cause), cause);
        }

        Failure(int line, int col, String message) {
            super(at(line, col) + ": " + message);
        }

        /** f without its cause (whose message f's has), for the JVM's exit: flinklet names the exit's cause by the
         *  innermost "Caused by" of the JVM's last trace (src/flink/jvmout.c), which is then f's message with the
         *  script's position, not Flink's exception without it. */
        Failure(Failure f) {
            super(f.getMessage());
            setStackTrace(f.getStackTrace());
        }
    }

    /** The failure the runner's main() ends with: f alone, Flink's exception (its trace) printed before it. */
    private Failure alone(Failure f) {
        if (f.getCause() == null) {
            return f;
        }
        System.err.println("flinklet-sql: " + f.getMessage() + "; Flink's exception:");
        f.getCause().printStackTrace();
        return new Failure(f);
    }

    private String at(int line, int col) {
        return name + ":" + (line + lineOrigin - 1) + ":" + (col + colOrigin - 1) + ":" + (field.isEmpty() ? "" : " " + field + ":");
    }

    private String where(SqlScript.Statement st, Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            Matcher m = FLINK_POSITION.matcher(String.valueOf(t.getMessage()));
            if (m.find()) {
                int[] p = st.map(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
                return at(p[0], p[1]).replaceAll(":$", "");
            }
        }
        return at(st.line, st.col).replaceAll(":$", "");
    }

    private static String message(Throwable cause) {
        if (cause == null) {
            return "";
        }
        String m = String.valueOf(cause.getMessage());
        Throwable root = cause;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        if (root != cause && root.getMessage() != null && !m.contains(root.getMessage())) {
            m = m + ": " + root.getMessage();
        }
        m = m.replace('\n', ' ').replaceAll("\\s+", " ").trim();
        return m.length() > 600 ? m.substring(0, 600) + "..." : m;
    }

    private static String kindName(SqlScript.Statement st) {
        String[] w = st.text.trim().split("\\s+", 3);
        switch (st.kind) {
            case STATEMENT_SET:
                return "EXECUTE STATEMENT SET";
            case CTAS:
                return "CREATE TABLE AS";
            case OTHER:
                return w[0].toUpperCase(Locale.ROOT) + (w.length > 1 && w[0].equalsIgnoreCase("CREATE")
                        ? " " + w[1].toUpperCase(Locale.ROOT) : "");
            default:
                return st.kind.name();
        }
    }

    private void set(TableEnvironment tableEnv, SqlScript.Statement st) throws Failure {
        Matcher m = SET_QUOTED.matcher(st.text);
        if (!m.matches()) {
            m = SET_PLAIN.matcher(st.text);
        }
        if (!m.matches()) {
            throw new Failure(st.line, st.col, "SET: expected SET 'key' = 'value'");
        }
        tableEnv.getConfig().set(m.group(1).replace("''", "'"), m.group(2).replace("''", "'"));
    }

    /** Runs (or, validating, checks) the script; throws the first problem. */
    private void run(List<SqlScript.Statement> statements, boolean validate) throws Failure {
        SqlScript.Statement job = null;
        for (SqlScript.Statement st : statements) {
            if (st.kind == SqlScript.Kind.INSERT || st.kind == SqlScript.Kind.STATEMENT_SET
                    || st.kind == SqlScript.Kind.CTAS) {
                if (job != null) {
                    throw new Failure(st.line, st.col, kindName(st) + ": a second job in the script (the first at line "
                            + (job.line + lineOrigin - 1) + "): put the INSERTs in one EXECUTE STATEMENT SET BEGIN ... END;");
                }
                job = st;
            } else if (job != null) {
                throw new Failure(st.line, st.col, kindName(st) + ": after the job's " + kindName(job) + " (line "
                        + (job.line + lineOrigin - 1) + "): the job (its INSERT, statement set or CREATE TABLE AS) is the"
                        + " script's last statement");
            }
        }
        if (job == null) {
            throw new Failure(1, 1, "no INSERT, EXECUTE STATEMENT SET or CREATE TABLE ... AS SELECT: the script has"
                    + " no job to run");
        }
        TableEnvironment tableEnv = validate
                ? TableEnvironment.create(EnvironmentSettings.inStreamingMode())
                : TableEnvironment.create(new Configuration());
        for (SqlScript.Statement st : statements) {
            if (st == job) {
                continue;
            }
            try {
                if (st.kind == SqlScript.Kind.SET) {
                    set(tableEnv, st);
                } else {
                    tableEnv.executeSql(st.text);
                }
            } catch (Failure e) {
                throw e;
            } catch (Exception e) {
                throw new Failure(st, kindName(st), e);
            }
        }
        // a CREATE TABLE AS has no compiled plan (Flink compiles INSERTs and statement sets): it is planned from its
        // SQL at every start, the same SQL into the same operators
        if (!validate && (planDir == null || job.kind == SqlScript.Kind.CTAS)) {
            System.out.println("flinklet-sql: submitting the " + kindName(job) + " at " + where(job, null)
                    + (planDir != null ? " from its SQL (a CREATE TABLE AS has no compiled plan)" : ""));
            try {
                tableEnv.executeSql(job.text);
            } catch (Exception e) {
                throw new Failure(job, kindName(job), e);
            }
            return;
        }
        if (!validate) {
            final SqlScript.Statement theJob = job;
            CompiledPlan plan;
            try {
                plan = SqlPlans.plan(tableEnv, Paths.get(planDir), scriptSha256, () -> compile(tableEnv, theJob));
            } catch (Failure e) {
                throw e;
            } catch (Exception e) {
                throw new Failure(job, kindName(job) + " (its compiled plan in " + planDir + ")", e);
            }
            System.out.println("flinklet-sql: submitting the " + kindName(job) + " at " + where(job, null)
                    + " from its compiled plan");
            try {
                plan.execute();
            } catch (Exception e) {
                throw new Failure(job, kindName(job), e);
            }
            return;
        }
        if (job.kind == SqlScript.Kind.CTAS) {
            // the planner checks the query that fills the table (the table itself is created by the job)
            // (what comes before it blanked, newlines kept: Flink's positions in the query are the statement's)
            int q = SqlScript.ctasQuery(job.text);
            String query = job.text.substring(0, q).replaceAll("[^\n]", " ") + job.text.substring(q);
            try {
                tableEnv.explainSql(query);
            } catch (Exception e) {
                throw new Failure(job, kindName(job), e);
            }
            return;
        }
        if (job.kind == SqlScript.Kind.INSERT) {
            try {
                tableEnv.explainSql(job.text);
            } catch (Exception e) {
                throw new Failure(job, kindName(job), e);
            }
            return;
        }
        StatementSet set = tableEnv.createStatementSet();
        for (SqlScript.Statement st : job.inner) {
            try {
                set.addInsertSql(st.text);
            } catch (Exception e) {
                throw new Failure(st, "EXECUTE STATEMENT SET: INSERT", e);
            }
        }
        try {
            set.explain();
        } catch (Exception e) {
            throw new Failure(job, kindName(job), e);
        }
    }

    private static String hex(byte[] b) {
        StringBuilder out = new StringBuilder();
        for (byte x : b) {
            out.append(String.format("%02x", x));
        }
        return out.toString();
    }

    /** The job's compiled plan, its errors at the script's positions. */
    private CompiledPlan compile(TableEnvironment tableEnv, SqlScript.Statement job) throws Failure {
        if (job.kind == SqlScript.Kind.INSERT) {
            try {
                return tableEnv.compilePlanSql(job.text);
            } catch (Exception e) {
                throw new Failure(job, kindName(job), e);
            }
        }
        StatementSet set = tableEnv.createStatementSet();
        for (SqlScript.Statement st : job.inner) {
            try {
                set.addInsertSql(st.text);
            } catch (Exception e) {
                throw new Failure(st, "EXECUTE STATEMENT SET: INSERT", e);
            }
        }
        try {
            return set.compilePlan();
        } catch (Exception e) {
            throw new Failure(job, kindName(job), e);
        }
    }

    public static void main(String[] args) throws Exception {
        SqlScriptRunner r = new SqlScriptRunner();
        boolean validate = false;
        String script = null;
        String sha256 = null;
        for (String arg : args) {
            if ("--validate".equals(arg)) {
                validate = true;
            } else if (arg.startsWith("--origin=")) {
                String o = arg.substring("--origin=".length());
                int b = o.lastIndexOf(':'), a = o.lastIndexOf(':', b - 1);
                r.name = o.substring(0, a);
                r.lineOrigin = Integer.parseInt(o.substring(a + 1, b));
                r.colOrigin = Integer.parseInt(o.substring(b + 1));
            } else if (arg.startsWith("--field=")) {
                r.field = arg.substring("--field=".length());
            } else if (arg.startsWith("--plan-dir=")) {
                r.planDir = arg.substring("--plan-dir=".length());
            } else if (arg.startsWith("--sha256=")) {
                sha256 = arg.substring("--sha256=".length());
            } else if (script == null && !arg.startsWith("--")) {
                script = arg;
            } else {
                throw new IllegalArgumentException("SqlScriptRunner: [--validate] [--origin=NAME:LINE:COL] [--field=F]"
                        + " [--sha256=HEX] [--plan-dir=DIR] SCRIPT (got " + String.join(" ", args) + ")");
            }
        }
        if (script == null) {
            throw new IllegalArgumentException("SqlScriptRunner: the SQL script's path is its argument");
        }
        if (r.name == null) {
            r.name = script;
        }
        byte[] bytes = Files.readAllBytes(Paths.get(script));
        String text = new String(bytes, StandardCharsets.UTF_8);
        r.scriptSha256 = hex(MessageDigest.getInstance("SHA-256").digest(bytes));
        if (sha256 != null && !sha256.equals(r.scriptSha256)) {
            System.err.println("flinklet-sql: warning: " + script + " changed since flinklet read it (its sha256 is not"
                    + " the configuration's): running it as it is now; a reload of the configuration checks it");
        }
        try {
            r.run(SqlScript.split(text), validate);
        } catch (SqlScript.SplitException e) {
            Failure f = r.new Failure(e.line, e.col, e.getMessage());
            if (!validate) {
                throw f;
            }
            System.out.println("flinklet-sql: " + f.getMessage());
            System.exit(1);
        } catch (Failure f) {
            if (!validate) {
                throw r.alone(f);
            }
            System.out.println("flinklet-sql: " + f.getMessage());
            System.exit(1);
        }
        if (validate) {
            System.out.println("flinklet-sql: ok");
            System.exit(0);
        }
    }
}
