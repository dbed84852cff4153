package dev.flinklet.jobs;

import java.util.HashMap;
import java.util.Map;

/**
 * Tiny "--key value" argument parser. Flink's ParameterTool moved packages between 1.20 and 2.x,
 * so the jobs use this instead. A "--flag" followed by nothing or by another "--option" is a
 * boolean flag with value "true".
 */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    private Args() {}

    static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (!arg.startsWith("--") || arg.length() == 2) {
                throw new IllegalArgumentException("unexpected argument: " + arg);
            }
            String key = arg.substring(2);
            int eq = key.indexOf('=');
            if (eq >= 0) {
                a.values.put(key.substring(0, eq), key.substring(eq + 1));
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                a.values.put(key, argv[++i]);
            } else {
                a.values.put(key, "true");
            }
        }
        return a;
    }

    boolean has(String key) {
        return values.containsKey(key);
    }

    String get(String key, String def) {
        return values.getOrDefault(key, def);
    }

    String getRequired(String key) {
        String v = values.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing required argument --" + key);
        }
        return v;
    }

    long getLong(String key, long def) {
        String v = values.get(key);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " expects an integer, got: " + v);
        }
    }

    boolean getFlag(String key) {
        String v = values.get(key);
        return v != null && !v.equalsIgnoreCase("false");
    }
}
