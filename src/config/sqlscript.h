/* sqlscript: a job's SQL script (spec.job.sqlScript, spec.job.sql) split into statements and checked, without a JVM:
 * the split flinklet's SQL runner (java/sqlrunner SqlScript.java) makes, each statement classified by its first words,
 * and what would stop the runner said with the script's line and column: an unterminated string, quoted identifier,
 * comment or statement set; a statement kind a job script does not have (a SELECT, SHOW, EXPLAIN, an unknown word);
 * no job, or more than one (one INSERT, one EXECUTE STATEMENT SET BEGIN ... END; or one CREATE [OR REPLACE] TABLE ...
 * AS <query> per script, its last statement).
 * Pure: text in, statements and problems out. */
#ifndef FLINKLET_SQLSCRIPT_H
#define FLINKLET_SQLSCRIPT_H

#include <stddef.h>

enum sql_kind {
	SQL_SET,
	SQL_RESET,
	SQL_CREATE,
	SQL_DROP,
	SQL_ALTER,
	SQL_USE,
	SQL_LOAD,
	SQL_UNLOAD,
	SQL_INSERT,
	SQL_STATEMENT_SET,
	SQL_CTAS,  /* CREATE [OR REPLACE] TABLE ... AS <query>: a table and the job that fills it */
	SQL_QUERY, /* SELECT, WITH, VALUES: rows that go nowhere in a job */
	SQL_UNKNOWN,
};

/* One statement: where its text is (from its first word to before its ';'), where it starts (1-based line and
 * column, in bytes), its kind and, for a statement set, how many INSERTs it has. */
struct sql_stmt {
	enum sql_kind kind;
	size_t off, len;
	int line, col;
	size_t ninserts;
};

/* One problem: where and what (malloc'd). */
struct sql_problem {
	int line, col;
	char *msg;
};

struct sqlscript {
	struct sql_stmt *stmts;
	size_t n;
	struct sql_problem *problems;
	size_t nproblems;
	int job; /* index of the INSERT, statement set or CTAS in stmts, -1: none */
};

/* Splits and checks a script of len bytes whose first line and column are at line0 and col0 of the file that holds
 * it (1 and 1 for a file of its own; an inline script's lines all start at col0): every position in ret is the file's.
 * Returns 0, or -EINVAL with the problems in ret (in the order of the script; a script that cannot be split has one,
 * where the unterminated part starts). sqlscript_free frees ret. */
int sqlscript_parse(const char *text, size_t len, int line0, int col0, struct sqlscript *ret);
void sqlscript_free(struct sqlscript *s);

/* The kind as a script says it: "SET", "CREATE", "INSERT", "EXECUTE STATEMENT SET", ... */
const char *sqlscript_kind_name(enum sql_kind k);

#endif
