/* SqlScript: a SQL script split into statements, the way flinklet's check-config splits it (src/config/sqlscript.c):
 * a statement ends at a ';' outside quotes ('...', "...", `...`) and comments (-- to the end of the line, slash-star
 * to star-slash); an EXECUTE STATEMENT SET BEGIN ... END; is one statement whose INSERTs end with ';' each. Every
 * statement keeps its text (from its first word to before its ';', comments inside kept) and the line and column of
 * its first character, so that Flink's own positions in a statement map back to the script. */
package dev.flinklet.launcher;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** A script's statements. */
final class SqlScript {
    /** What a statement is, by its first words (CTAS: CREATE [OR REPLACE] TABLE ... AS query, a job too). */
    enum Kind { SET, INSERT, STATEMENT_SET, CTAS, OTHER }

    /** One statement: its text, kind, position (1-based) and, for a statement set, its INSERTs. */
    static final class Statement {
        final String text;
        final Kind kind;
        final int line;
        final int col;
        final List<Statement> inner;

        Statement(String text, Kind kind, int line, int col, List<Statement> inner) {
            this.text = text;
            this.kind = kind;
            this.line = line;
            this.col = col;
            this.inner = inner;
        }

        /** The script's line and column of a 1-based position inside this statement's text. */
        int[] map(int l, int c) {
            return l <= 1 ? new int[] {line, col + c - 1} : new int[] {line + l - 1, c};
        }
    }

    /** A script that cannot be split: what and where. */
    static final class SplitException extends Exception {
        final int line;
        final int col;

        SplitException(int line, int col, String message) {
            super(message);
            this.line = line;
            this.col = col;
        }
    }

    private final String s;
    private int pos;
    private int line = 1;
    private int col = 1;

    private SqlScript(String s) {
        this.s = s;
    }

    /** The statements of a script, in order. */
    static List<Statement> split(String script) throws SplitException {
        return new SqlScript(script).run();
    }

    private void advance() {
        if (s.charAt(pos) == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
        pos++;
    }

    private static boolean wordChar(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '$';
    }

    private List<Statement> run() throws SplitException {
        List<Statement> out = new ArrayList<>();
        int start = -1, startLine = 0, startCol = 0, words = 0;
        String[] first = new String[3];
        boolean set = false, begun = false, ended = false, innerStart = false;
        int innerFrom = -1, innerLine = 0, innerCol = 0;
        List<Statement> inner = new ArrayList<>();
        while (pos < s.length()) {
            char c = s.charAt(pos);
            char next = pos + 1 < s.length() ? s.charAt(pos + 1) : 0;
            if (c == '-' && next == '-') {
                while (pos < s.length() && s.charAt(pos) != '\n') {
                    advance();
                }
                continue;
            }
            if (c == '/' && next == '*') {
                int l = line, k = col;
                advance();
                advance();
                while (pos < s.length() && !(s.charAt(pos) == '*' && pos + 1 < s.length() && s.charAt(pos + 1) == '/')) {
                    advance();
                }
                if (pos >= s.length()) {
                    throw new SplitException(l, k, "unterminated comment: /* without */");
                }
                advance();
                advance();
                continue;
            }
            if (Character.isWhitespace(c)) {
                advance();
                continue;
            }
            if (start < 0) {
                start = pos;
                startLine = line;
                startCol = col;
            }
            if (set && begun && !ended && innerStart && c != ';') {
                innerStart = false;
                innerFrom = pos;
                innerLine = line;
                innerCol = col;
            }
            if (c == '\'' || c == '"' || c == '`') {
                int l = line, k = col;
                advance();
                while (true) {
                    if (pos >= s.length()) {
                        throw new SplitException(l, k, "unterminated " + (c == '\'' ? "string" : "quoted identifier")
                                + ": " + c + " without its closing " + c);
                    }
                    char q = s.charAt(pos);
                    advance();
                    if (q == c) {
                        if (pos < s.length() && s.charAt(pos) == c) {
                            advance(); /* a doubled quote stands for itself */
                            continue;
                        }
                        break;
                    }
                }
                continue;
            }
            if (c == ';') {
                if (set && !begun) {
                    throw new SplitException(startLine, startCol,
                            "unterminated statement set: EXECUTE STATEMENT SET without BEGIN");
                }
                if (set && begun && !ended) {
                    if (innerFrom >= 0) {
                        String t = s.substring(innerFrom, pos);
                        inner.add(new Statement(t, kind(words(t, 3)), innerLine, innerCol, List.of()));
                    }
                    innerFrom = -1;
                    innerStart = true;
                    advance();
                    continue;
                }
                out.add(statement(start, startLine, startCol, first, inner));
                advance();
                start = -1;
                words = 0;
                first = new String[3];
                set = begun = ended = innerStart = false;
                innerFrom = -1;
                inner = new ArrayList<>();
                continue;
            }
            if (wordChar(c)) {
                int from = pos;
                while (pos < s.length() && wordChar(s.charAt(pos))) {
                    advance();
                }
                String w = s.substring(from, pos).toUpperCase(Locale.ROOT);
                if (words < 3) {
                    first[words] = w;
                }
                words++;
                if (words == 3 && "EXECUTE".equals(first[0]) && "STATEMENT".equals(first[1]) && "SET".equals(first[2])) {
                    set = true;
                } else if (set && !begun && "BEGIN".equals(w)) {
                    begun = true;
                    innerStart = true;
                } else if (set && begun && !ended && innerFrom == from && "END".equals(w)) {
                    ended = true;
                    innerFrom = -1;
                }
                continue;
            }
            advance();
        }
        if (start >= 0) {
            if (set && !ended) {
                throw new SplitException(startLine, startCol,
                        "unterminated statement set: EXECUTE STATEMENT SET needs BEGIN, its INSERTs each ending with ';', and END;");
            }
            out.add(statement(start, startLine, startCol, first, inner));
        }
        return out;
    }

    private Statement statement(int start, int l, int c, String[] first, List<Statement> inner) {
        String t = s.substring(start, pos).trim();
        Kind k = kind(first);
        if (k == Kind.OTHER && "CREATE".equals(first[0]) && ctasQuery(t) >= 0) {
            k = Kind.CTAS;
        }
        return new Statement(t, k, l, c, k == Kind.STATEMENT_SET ? inner : List.of());
    }

    private static String[] words(String t, int n) {
        String[] out = new String[n];
        String[] parts = t.trim().split("[^A-Za-z0-9_$]+", n + 1);
        for (int i = 0; i < n && i < parts.length; i++) {
            out[i] = parts[i].toUpperCase(Locale.ROOT);
        }
        return out;
    }

    /**
     * Where the query of a CREATE [OR REPLACE] TABLE ... AS query starts in t (the word after its AS, outside
     * parentheses, quotes and comments), or -1: not one (a computed column's AS is inside the column list). As
     * src/config/sqlscript.c's is_ctas.
     */
    static int ctasQuery(String t) {
        String[] w = words(t, 4);
        int i = "OR".equals(w[1]) && "REPLACE".equals(w[2]) ? 3 : 1;
        if (!"TABLE".equals(w[i])) {
            return -1;
        }
        int depth = 0;
        int asEnd = -1;
        for (int p = 0; p < t.length();) {
            char ch = t.charAt(p);
            char next = p + 1 < t.length() ? t.charAt(p + 1) : 0;
            if (ch == '-' && next == '-') {
                while (p < t.length() && t.charAt(p) != '\n') {
                    p++;
                }
            } else if (ch == '/' && next == '*') {
                int end = t.indexOf("*/", p + 2);
                p = end < 0 ? t.length() : end + 2;
            } else if (ch == '\'' || ch == '`' || ch == '"') {
                for (p++; p < t.length(); p++) {
                    if (t.charAt(p) == ch) {
                        if (p + 1 < t.length() && t.charAt(p + 1) == ch) {
                            p++;
                        } else {
                            break;
                        }
                    }
                }
                p++;
                asEnd = -1;
            } else if (ch == '(') {
                if (asEnd >= 0 && depth == 0) {
                    return p;
                }
                depth++;
                p++;
            } else if (ch == ')') {
                depth = Math.max(0, depth - 1);
                p++;
                asEnd = -1;
            } else if (Character.isLetterOrDigit(ch) || ch == '_' || ch == '$') {
                int from = p;
                while (p < t.length() && (Character.isLetterOrDigit(t.charAt(p)) || t.charAt(p) == '_'
                        || t.charAt(p) == '$')) {
                    p++;
                }
                String word = t.substring(from, p).toUpperCase(Locale.ROOT);
                if (depth == 0 && asEnd >= 0 && ("SELECT".equals(word) || "WITH".equals(word) || "VALUES".equals(word))) {
                    return from;
                }
                asEnd = depth == 0 && "AS".equals(word) ? p : -1;
            } else {
                p++;
            }
        }
        return -1;
    }

    private static Kind kind(String[] first) {
        if ("SET".equals(first[0])) {
            return Kind.SET;
        }
        if ("INSERT".equals(first[0])) {
            return Kind.INSERT;
        }
        if ("EXECUTE".equals(first[0]) && "STATEMENT".equals(first[1]) && "SET".equals(first[2])) {
            return Kind.STATEMENT_SET;
        }
        return Kind.OTHER;
    }
}
