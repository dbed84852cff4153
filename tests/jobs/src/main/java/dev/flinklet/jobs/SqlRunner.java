package dev.flinklet.jobs;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.TableEnvironment;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * A SQL runner the way the Flink Kubernetes Operator's flink-sql-runner-example is written: the one argument is a
 * script file; its statements (separated by ';' at the end of a line, '--' comments dropped, an EXECUTE STATEMENT
 * SET block up to its END kept whole) are handed to {@code tableEnv.executeSql} one after another, and main()
 * returns. An INSERT (or a statement set) is submitted as a job and executeSql returns without waiting for it.
 */
public final class SqlRunner {

    private SqlRunner() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("SqlRunner: one argument, the SQL script's path");
        }
        String script = new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8);
        TableEnvironment tableEnv = TableEnvironment.create(new Configuration());
        for (String statement : statements(script)) {
            System.out.println("SqlRunner: executing\n" + statement);
            tableEnv.executeSql(statement);
        }
    }

    /** The script's statements, each without its final ';'. */
    static List<String> statements(String script) {
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        boolean statementSet = false;
        for (String line : script.split("\n")) {
            String t = line.trim();
            if (t.isEmpty() || t.startsWith("--")) {
                continue;
            }
            if (current.length() == 0 && t.toUpperCase().startsWith("EXECUTE STATEMENT SET")) {
                statementSet = true;
            }
            current.append(t).append('\n');
            boolean ends = t.endsWith(";") && (!statementSet || t.equalsIgnoreCase("END;"));
            if (ends) {
                String s = current.toString().trim();
                out.add(s.substring(0, s.length() - 1));
                current.setLength(0);
                statementSet = false;
            }
        }
        if (current.toString().trim().length() > 0) {
            out.add(current.toString().trim());
        }
        return out;
    }
}
