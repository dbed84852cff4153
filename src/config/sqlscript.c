/* sqlscript: a job's SQL script split into statements and checked (see src/config/sqlscript.h). One pass over the
 * bytes, as SqlScript.java does it: quotes ('...', "...", `...`, a doubled quote inside standing for itself),
 * comments (-- to the end of the line, slash-star to star-slash), ';' ending a statement, and inside EXECUTE STATEMENT
 * SET BEGIN ... END the ';' of each INSERT ending only that INSERT. */
#include "sqlscript.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

static const char *const kind_names[] = {
    [SQL_SET] = "SET",
    [SQL_RESET] = "RESET",
    [SQL_CREATE] = "CREATE",
    [SQL_DROP] = "DROP",
    [SQL_ALTER] = "ALTER",
    [SQL_USE] = "USE",
    [SQL_LOAD] = "LOAD",
    [SQL_UNLOAD] = "UNLOAD",
    [SQL_INSERT] = "INSERT",
    [SQL_STATEMENT_SET] = "EXECUTE STATEMENT SET",
    [SQL_CTAS] = "CREATE TABLE AS",
    [SQL_QUERY] = "SELECT",
    [SQL_UNKNOWN] = "unknown",
};

const char *sqlscript_kind_name(enum sql_kind k)
{
	return k <= SQL_UNKNOWN ? kind_names[k] : "unknown";
}

struct cursor {
	const char *s;
	size_t len, pos;
	int line, col, col0;
};

static void advance(struct cursor *c)
{
	if (c->s[c->pos] == '\n') {
		c->line++;
		c->col = c->col0;
	} else {
		c->col++;
	}
	c->pos++;
}

static bool word_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_' || ch == '$';
}

static void problem(struct sqlscript *s, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void problem(struct sqlscript *s, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct strbuf b = {0};
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	char *msg = strbuf_steal(&b);
	s->problems = xrealloc(s->problems, (s->nproblems + 1) * sizeof(*s->problems));
	s->problems[s->nproblems++] = (struct sql_problem){line, col, msg};
}

/* The i-th word (0-based) of text[0..len), upper-cased into buf (empty when there is none); comments and quotes are
 * not words, which is all a statement's first words need. */
static const char *nth_word(const char *text, size_t len, int i, char *buf, size_t size)
{
	size_t p = 0;
	for (int k = 0;; k++) {
		while (p < len && !word_char(text[p]))
			p++;
		size_t from = p;
		while (p < len && word_char(text[p]))
			p++;
		if (from == p) {
			buf[0] = '\0';
			return buf;
		}
		if (k == i) {
			size_t n = p - from < size - 1 ? p - from : size - 1;
			for (size_t j = 0; j < n; j++)
				buf[j] = (char)toupper((unsigned char)text[from + j]);
			buf[n] = '\0';
			return buf;
		}
	}
}

/* Whether text[0..len) has, outside parentheses, quotes and comments, the word AS followed by a query (SELECT, WITH,
 * VALUES, or a parenthesis): a CREATE TABLE's AS SELECT, not a computed column's AS (inside the column list) nor
 * anything quoted. */
static bool has_top_level_as_query(const char *text, size_t len)
{
	int depth = 0;
	bool after_as = false;
	for (size_t p = 0; p < len;) {
		char ch = text[p], next = p + 1 < len ? text[p + 1] : 0;
		if (ch == '-' && next == '-') {
			while (p < len && text[p] != '\n')
				p++;
		} else if (ch == '/' && next == '*') {
			for (p += 2; p < len && !(text[p] == '*' && p + 1 < len && text[p + 1] == '/'); p++)
				;
			p += 2;
		} else if (ch == '\'' || ch == '`' || ch == '"') {
			for (p++; p < len; p++)
				if (text[p] == ch && !(p + 1 < len && text[p + 1] == ch))
					break;
				else if (text[p] == ch)
					p++; /* a doubled quote is one quote inside */
			p++;
			after_as = false;
		} else if (ch == '(') {
			if (after_as && depth == 0)
				return true;
			depth++;
			p++;
		} else if (ch == ')') {
			depth -= depth > 0;
			p++;
			after_as = false;
		} else if (word_char(ch)) {
			size_t from = p;
			while (p < len && word_char(text[p]))
				p++;
			char w[8];
			size_t n = p - from;
			if (n < sizeof(w)) {
				for (size_t j = 0; j < n; j++)
					w[j] = (char)toupper((unsigned char)text[from + j]);
				w[n] = '\0';
			} else {
				w[0] = '\0';
			}
			if (depth == 0 && after_as &&
			    (!strcmp(w, "SELECT") || !strcmp(w, "WITH") || !strcmp(w, "VALUES")))
				return true;
			after_as = depth == 0 && !strcmp(w, "AS");
		} else {
			p++;
		}
	}
	return false;
}

/* CREATE [OR REPLACE] TABLE ... AS <query> */
static bool is_ctas(const char *text, size_t len)
{
	char w[16];
	int i = 1;
	if (!strcmp(nth_word(text, len, i, w, sizeof(w)), "OR")) {
		if (strcmp(nth_word(text, len, i + 1, w, sizeof(w)), "REPLACE"))
			return false;
		i += 2;
	}
	return !strcmp(nth_word(text, len, i, w, sizeof(w)), "TABLE") && has_top_level_as_query(text, len);
}

static enum sql_kind classify(const char *text, size_t len)
{
	static const struct {
		const char *word;
		enum sql_kind kind;
	} first[] = {
	    {"SET", SQL_SET},       {"RESET", SQL_RESET},  {"CREATE", SQL_CREATE}, {"DROP", SQL_DROP},
	    {"ALTER", SQL_ALTER},   {"USE", SQL_USE},      {"LOAD", SQL_LOAD},     {"UNLOAD", SQL_UNLOAD},
	    {"INSERT", SQL_INSERT}, {"SELECT", SQL_QUERY}, {"WITH", SQL_QUERY},    {"VALUES", SQL_QUERY},
	};
	char w[32], w1[32], w2[32];
	nth_word(text, len, 0, w, sizeof(w));
	if (!strcmp(w, "EXECUTE"))
		return !strcmp(nth_word(text, len, 1, w1, sizeof(w1)), "STATEMENT") &&
		               !strcmp(nth_word(text, len, 2, w2, sizeof(w2)), "SET")
		           ? SQL_STATEMENT_SET
		           : SQL_UNKNOWN;
	if (!strcmp(w, "CREATE") && is_ctas(text, len))
		return SQL_CTAS;
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		if (!strcmp(w, first[i].word))
			return first[i].kind;
	return SQL_UNKNOWN;
}

/* A CREATE of something a job script creates: TABLE, VIEW, FUNCTION, CATALOG, DATABASE (after TEMPORARY, SYSTEM,
 * OR REPLACE); NULL when it is, else the word that is not. */
static const char *create_what(const char *text, size_t len, char *buf, size_t size)
{
	static const char *const skip[] = {"TEMPORARY", "SYSTEM", "OR", "REPLACE"};
	static const char *const ok[] = {"TABLE", "VIEW", "FUNCTION", "CATALOG", "DATABASE"};
	for (int i = 1; i < 6; i++) {
		nth_word(text, len, i, buf, size);
		bool skipped = false;
		for (size_t k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
			skipped |= !strcmp(buf, skip[k]);
		if (skipped)
			continue;
		for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
			if (!strcmp(buf, ok[k]))
				return NULL;
		return buf;
	}
	return buf;
}

/* SET 'key' = 'value' (or key = value): whether the statement has a key and an '=' after it, outside quotes. */
static bool set_has_assignment(const char *text, size_t len)
{
	size_t p = 3; /* after SET */
	while (p < len && isspace((unsigned char)text[p]))
		p++;
	if (p >= len)
		return false;
	char q = text[p] == '\'' || text[p] == '`' ? text[p] : 0;
	if (q) {
		for (p++; p < len && text[p] != q; p++)
			;
		p++;
	} else {
		while (p < len && !isspace((unsigned char)text[p]) && text[p] != '=')
			p++;
	}
	while (p < len && isspace((unsigned char)text[p]))
		p++;
	return p < len && text[p] == '=';
}

struct statement_state {
	bool open, set, begun, ended, inner_start, inner_open;
	int words;
	char first[3][16];
	size_t off;
	int line, col;
	size_t inner_off;
	int inner_line, inner_col;
	size_t ninserts;
};

static void push(struct sqlscript *s, struct statement_state *st, const struct cursor *c)
{
	size_t len = c->pos - st->off;
	while (len && isspace((unsigned char)c->s[st->off + len - 1]))
		len--;
	s->stmts = xrealloc(s->stmts, (s->n + 1) * sizeof(*s->stmts));
	s->stmts[s->n++] =
	    (struct sql_stmt){classify(c->s + st->off, len), st->off, len, st->line, st->col, st->ninserts};
	memset(st, 0, sizeof(*st));
}

/* The INSERT of a statement set that just ended at c->pos. */
static void inner_done(struct sqlscript *s, struct statement_state *st, const struct cursor *c)
{
	enum sql_kind k = classify(c->s + st->inner_off, c->pos - st->inner_off);
	if (k == SQL_INSERT)
		st->ninserts++;
	else
		problem(s, st->inner_line, st->inner_col,
		        "%s inside EXECUTE STATEMENT SET: a statement set has INSERT statements only",
		        k == SQL_UNKNOWN ? "an unknown statement" : sqlscript_kind_name(k));
	st->inner_open = false;
}

/* Splits the script; false (one problem added) when it cannot be split. */
static bool split(struct sqlscript *s, const char *text, size_t len, int line0, int col0)
{
	struct cursor c = {text, len, 0, line0, col0, col0};
	struct statement_state st = {0};
	while (c.pos < len) {
		char ch = text[c.pos], next = c.pos + 1 < len ? text[c.pos + 1] : 0;
		if (ch == '-' && next == '-') {
			while (c.pos < len && text[c.pos] != '\n')
				advance(&c);
			continue;
		}
		if (ch == '/' && next == '*') {
			int l = c.line, k = c.col;
			advance(&c);
			advance(&c);
			while (c.pos < len && !(text[c.pos] == '*' && c.pos + 1 < len && text[c.pos + 1] == '/'))
				advance(&c);
			if (c.pos >= len) {
				problem(s, l, k, "unterminated comment: /* without */");
				return false;
			}
			advance(&c);
			advance(&c);
			continue;
		}
		if (isspace((unsigned char)ch)) {
			advance(&c);
			continue;
		}
		if (!st.open) {
			st.open = true;
			st.off = c.pos;
			st.line = c.line;
			st.col = c.col;
		}
		if (st.set && st.begun && !st.ended && st.inner_start && ch != ';') {
			st.inner_start = false;
			st.inner_open = true;
			st.inner_off = c.pos;
			st.inner_line = c.line;
			st.inner_col = c.col;
		}
		if (ch == '\'' || ch == '"' || ch == '`') {
			int l = c.line, k = c.col;
			advance(&c);
			for (;;) {
				if (c.pos >= len) {
					problem(s, l, k, "unterminated %s: %c without its closing %c",
					        ch == '\'' ? "string" : "quoted identifier", ch, ch);
					return false;
				}
				char q = text[c.pos];
				advance(&c);
				if (q == ch) {
					if (c.pos < len && text[c.pos] == ch) {
						advance(&c); /* a doubled quote stands for itself */
						continue;
					}
					break;
				}
			}
			continue;
		}
		if (ch == ';') {
			if (st.set && !st.begun) {
				problem(s, st.line, st.col,
				        "unterminated statement set: EXECUTE STATEMENT SET without BEGIN");
				return false;
			}
			if (st.set && st.begun && !st.ended) {
				if (st.inner_open)
					inner_done(s, &st, &c);
				st.inner_start = true;
			} else {
				push(s, &st, &c);
			}
			advance(&c);
			continue;
		}
		if (word_char(ch)) {
			size_t from = c.pos;
			while (c.pos < len && word_char(text[c.pos]))
				advance(&c);
			size_t n = c.pos - from;
			char w[16] = "";
			if (n < sizeof(w))
				for (size_t j = 0; j < n; j++)
					w[j] = (char)toupper((unsigned char)text[from + j]);
			if (st.words < 3)
				memcpy(st.first[st.words], w, sizeof(w));
			st.words++;
			if (st.words == 3 && !strcmp(st.first[0], "EXECUTE") && !strcmp(st.first[1], "STATEMENT") &&
			    !strcmp(st.first[2], "SET")) {
				st.set = true;
			} else if (st.set && !st.begun && !strcmp(w, "BEGIN")) {
				st.begun = true;
				st.inner_start = true;
			} else if (st.set && st.begun && !st.ended && st.inner_open && st.inner_off == from &&
			           !strcmp(w, "END")) {
				st.ended = true;
				st.inner_open = false;
			}
			continue;
		}
		advance(&c);
	}
	if (st.open) {
		if (st.set && !st.ended) {
			problem(
			    s, st.line, st.col,
			    "unterminated statement set: EXECUTE STATEMENT SET needs BEGIN, its INSERTs each ending "
			    "with ';', and END;");
			return false;
		}
		push(s, &st, &c);
	}
	return true;
}

int sqlscript_parse(const char *text, size_t len, int line0, int col0, struct sqlscript *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->job = -1;
	if (!split(ret, text, len, line0, col0))
		return -EINVAL;
	char buf[64];
	for (size_t i = 0; i < ret->n; i++) {
		const struct sql_stmt *st = &ret->stmts[i];
		const char *t = text + st->off;
		if (st->kind == SQL_INSERT || st->kind == SQL_STATEMENT_SET || st->kind == SQL_CTAS) {
			if (st->kind == SQL_STATEMENT_SET && !st->ninserts)
				problem(ret, st->line, st->col, "EXECUTE STATEMENT SET without an INSERT");
			if (ret->job >= 0)
				problem(
				    ret, st->line, st->col,
				    "%s: a second job in the script (the first is the %s at line %d): one INSERT, "
				    "one EXECUTE STATEMENT SET BEGIN ... END; or one CREATE TABLE ... AS SELECT per "
				    "script (put the INSERTs in one statement set)",
				    sqlscript_kind_name(st->kind), sqlscript_kind_name(ret->stmts[ret->job].kind),
				    ret->stmts[ret->job].line);
			else
				ret->job = (int)i;
			continue;
		}
		if (ret->job >= 0)
			problem(ret, st->line, st->col,
			        "%s after the job's %s (line %d): the job (its INSERT, statement set or CREATE TABLE "
			        "AS) is the script's last statement",
			        sqlscript_kind_name(st->kind), sqlscript_kind_name(ret->stmts[ret->job].kind),
			        ret->stmts[ret->job].line);
		else if (st->kind == SQL_QUERY)
			problem(ret, st->line, st->col,
			        "a query alone (%s) is not a job: its rows go nowhere; INSERT INTO a sink table",
			        nth_word(t, st->len, 0, buf, sizeof(buf)));
		else if (st->kind == SQL_UNKNOWN)
			problem(ret, st->line, st->col,
			        "unknown statement kind \"%s\": a job script has SET, RESET, CREATE, DROP, ALTER, USE, "
			        "LOAD/UNLOAD MODULE, and one INSERT or EXECUTE STATEMENT SET",
			        nth_word(t, st->len, 0, buf, sizeof(buf)));
		else if (st->kind == SQL_SET && !set_has_assignment(t, st->len))
			problem(ret, st->line, st->col, "SET without a value: SET 'key' = 'value'");
		else if (st->kind == SQL_CREATE && create_what(t, st->len, buf, sizeof(buf)))
			problem(ret, st->line, st->col,
			        "CREATE %s: a job script creates a TABLE, VIEW, FUNCTION, CATALOG or DATABASE", buf);
	}
	if (ret->job < 0 && !ret->nproblems)
		problem(ret, ret->n ? ret->stmts[ret->n - 1].line : line0, ret->n ? ret->stmts[ret->n - 1].col : col0,
		        "no INSERT, EXECUTE STATEMENT SET or CREATE TABLE ... AS SELECT: the script has no job to "
		        "run");
	return ret->nproblems ? -EINVAL : 0;
}

void sqlscript_free(struct sqlscript *s)
{
	for (size_t i = 0; i < s->nproblems; i++)
		free(s->problems[i].msg);
	free(s->problems);
	free(s->stmts);
	memset(s, 0, sizeof(*s));
	s->job = -1;
}
