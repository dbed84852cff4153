/* test_sqlscript: what a user of a SQL script job relies on from check-config without a JVM: the script is split as
 * the runner splits it (';' inside strings, identifiers and comments does not end a statement; a statement set is one
 * statement), each statement is at the line and column where it starts, and every script the runner would refuse is
 * refused here with the position of the statement or of the unterminated part. */
#include "unit.h"

#include "sqlscript.h"

static struct sqlscript parse_ok(const char *text)
{
	struct sqlscript s;
	int r = sqlscript_parse(text, strlen(text), 1, 1, &s);
	if (r < 0)
		fail_msg("sqlscript_parse refused a valid script: %d:%d: %s", s.problems[0].line, s.problems[0].col,
		         s.problems[0].msg);
	return s;
}

/* The one problem of a script: at line:col, its message containing want. */
static void refused(const char *text, int line, int col, const char *want)
{
	struct sqlscript s;
	assert_int_equal(sqlscript_parse(text, strlen(text), 1, 1, &s), -EINVAL);
	assert_true(s.nproblems >= 1);
	if (s.problems[0].line != line || s.problems[0].col != col || !strstr(s.problems[0].msg, want))
		fail_msg("got %d:%d: %s; want %d:%d: ...%s...", s.problems[0].line, s.problems[0].col,
		         s.problems[0].msg, line, col, want);
	sqlscript_free(&s);
}

static void test_split_positions_and_kinds(void **state)
{
	(void)state;
	const char *text = "-- the job\n"
	                   "SET 'pipeline.name' = 'a;b';\n"
	                   "  CREATE TABLE `t;1` (x STRING COMMENT 'it''s; fine') WITH ('connector' = 'datagen');\n"
	                   "/* a ; in a\n comment */ CREATE TEMPORARY VIEW v AS SELECT * FROM `t;1`;\n"
	                   "USE CATALOG default_catalog;\n"
	                   "insert into out_t\n  select x from v";
	struct sqlscript s = parse_ok(text);
	assert_int_equal(s.n, 5);
	enum sql_kind kinds[] = {SQL_SET, SQL_CREATE, SQL_CREATE, SQL_USE, SQL_INSERT};
	int lines[] = {2, 3, 5, 6, 7}, cols[] = {1, 3, 13, 1, 1};
	for (size_t i = 0; i < s.n; i++) {
		assert_int_equal(s.stmts[i].kind, kinds[i]);
		assert_int_equal(s.stmts[i].line, lines[i]);
		assert_int_equal(s.stmts[i].col, cols[i]);
	}
	assert_int_equal(s.job, 4);
	/* a statement's text runs from its first word to before its ';' (the last one has none) */
	assert_int_equal(strncmp(text + s.stmts[0].off, "SET 'pipeline.name' = 'a;b'", s.stmts[0].len), 0);
	assert_int_equal(s.stmts[0].len, strlen("SET 'pipeline.name' = 'a;b'"));
	assert_int_equal(strncmp(text + s.stmts[4].off, "insert into out_t\n  select x from v", s.stmts[4].len), 0);
	sqlscript_free(&s);
}

static void test_statement_set_is_one_statement(void **state)
{
	(void)state;
	struct sqlscript s = parse_ok("CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n"
	                              "EXECUTE STATEMENT SET\nBEGIN\n"
	                              "  INSERT INTO b SELECT x FROM a; -- end; here is a comment\n"
	                              "  INSERT INTO c SELECT x FROM a WHERE 'END;' <> '';\n"
	                              "END;\n");
	assert_int_equal(s.n, 2);
	assert_int_equal(s.stmts[1].kind, SQL_STATEMENT_SET);
	assert_int_equal(s.stmts[1].ninserts, 2);
	assert_int_equal(s.stmts[1].line, 2);
	assert_int_equal(s.job, 1);
	sqlscript_free(&s);
	/* lower case, BEGIN on the same line, no ';' after END at the end of the script */
	s = parse_ok("execute statement set begin insert into b select 1; end");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.stmts[0].ninserts, 1);
	sqlscript_free(&s);
}

static void test_unterminated_parts(void **state)
{
	(void)state;
	refused("CREATE TABLE a (x INT);\nINSERT INTO b SELECT 'oops FROM a;\n", 2, 22, "unterminated string");
	refused("INSERT INTO `b SELECT 1;", 1, 13, "unterminated quoted identifier");
	refused("INSERT INTO b SELECT 1;\n  /* never closed ;\n", 2, 3, "unterminated comment");
	refused("CREATE TABLE a (x INT);\nEXECUTE STATEMENT SET BEGIN\n INSERT INTO b SELECT 1;\n", 2, 1,
	        "unterminated statement set");
	refused("EXECUTE STATEMENT SET;\n", 1, 1, "unterminated statement set");
}

static void test_positions_of_an_inline_script(void **state)
{
	(void)state;
	/* a script inline in flinklet.yaml, its first line at line 10, every line indented by 6: the file's positions,
	 * in the problem's place and in its message */
	const char *text = "CREATE TABLE a (x INT);\nINSERT INTO b SELECT x FROM a;\n  INSERT INTO c SELECT 'x;\n";
	struct sqlscript s;
	assert_int_equal(sqlscript_parse(text, strlen(text), 10, 7, &s), -EINVAL);
	assert_int_equal(s.problems[0].line, 12);
	assert_int_equal(s.problems[0].col, 30);
	sqlscript_free(&s);
	text = "CREATE TABLE a (x INT);\nINSERT INTO b SELECT x FROM a;\n  INSERT INTO c SELECT 1;\n";
	assert_int_equal(sqlscript_parse(text, strlen(text), 10, 7, &s), -EINVAL);
	assert_int_equal(s.problems[0].line, 12);
	assert_int_equal(s.problems[0].col, 9);
	assert_non_null(strstr(s.problems[0].msg, "the first is the INSERT at line 11"));
	assert_int_equal(s.stmts[0].line, 10);
	assert_int_equal(s.stmts[0].col, 7);
	sqlscript_free(&s);
}

static void test_job_count(void **state)
{
	(void)state;
	refused("CREATE TABLE a (x INT);\n", 1, 1, "no INSERT, EXECUTE STATEMENT SET or CREATE TABLE ... AS SELECT");
	refused("-- nothing\n", 1, 1, "no INSERT");
	refused("INSERT INTO b SELECT 1;\n\nINSERT INTO c SELECT 2;\n", 3, 1,
	        "a second job in the script (the first is "
	        "the INSERT at line 1)");
	refused("INSERT INTO b SELECT 1;\nEXECUTE STATEMENT SET BEGIN INSERT INTO c SELECT 1; END;", 2, 1,
	        "a second job");
	refused("INSERT INTO b SELECT 1;\nSET 'a' = 'b';\n", 2, 1, "SET after the job's INSERT (line 1)");
	refused("EXECUTE STATEMENT SET BEGIN END;", 1, 1, "without an INSERT");
	refused("CREATE TABLE b AS SELECT 1;\nINSERT INTO c SELECT 2;\n", 2, 1,
	        "INSERT: a second job in the script (the first is the CREATE TABLE AS at line 1)");
	refused("CREATE TABLE b AS SELECT 1;\nSET 'a' = 'b';\n", 2, 1, "SET after the job's CREATE TABLE AS (line 1)");
}

/* CREATE TABLE ... AS <query> is the job (Flink submits the query filling the table); an AS elsewhere is not */
static void test_create_table_as_is_the_job(void **state)
{
	(void)state;
	static const char *const jobs[] = {
	    "CREATE TABLE t WITH ('connector' = 'print') AS SELECT * FROM s",
	    "create or replace table t with ('connector' = 'print') as\n  select x from s",
	    "CREATE TABLE t AS WITH w AS (SELECT 1 AS x) SELECT x FROM w",
	    "CREATE TABLE t /* as select */ AS (SELECT x FROM s)",
	    "CREATE TABLE t (y INT, PRIMARY KEY (y) NOT ENFORCED) WITH ('k' = 'as select') AS SELECT y FROM s",
	    "CREATE TABLE t AS VALUES (1), (2)",
	};
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		struct sqlscript s = parse_ok(jobs[i]);
		assert_int_equal(s.n, 1);
		if (s.stmts[0].kind != SQL_CTAS)
			fail_msg("not a CREATE TABLE AS: %s", jobs[i]);
		assert_int_equal(s.job, 0);
		sqlscript_free(&s);
	}
	static const char *const not_jobs[] = {
	    "CREATE TABLE t (x INT, y AS x + 1) WITH ('connector' = 'datagen')",
	    "CREATE VIEW v AS SELECT * FROM s",
	    "CREATE TEMPORARY VIEW v AS SELECT * FROM s",
	    "CREATE TABLE t (x INT) WITH ('connector' = 'datagen') -- AS SELECT 1",
	    "CREATE TABLE t (x INT) COMMENT 'AS SELECT' WITH ('connector' = 'datagen')",
	    "CREATE TABLE t LIKE s",
	    "CREATE FUNCTION f AS 'com.example.F'",
	};
	for (size_t i = 0; i < sizeof(not_jobs) / sizeof(not_jobs[0]); i++) {
		struct sqlscript s;
		sqlscript_parse(not_jobs[i], strlen(not_jobs[i]), 1, 1, &s);
		assert_int_equal(s.n, 1);
		if (s.stmts[0].kind != SQL_CREATE)
			fail_msg("taken for a job: %s", not_jobs[i]);
		sqlscript_free(&s);
	}
}

static void test_statement_kinds_refused(void **state)
{
	(void)state;
	refused("SELECT * FROM a;\nINSERT INTO b SELECT 1;", 1, 1, "a query alone (SELECT) is not a job");
	refused("SHOW TABLES;\nINSERT INTO b SELECT 1;", 1, 1, "unknown statement kind \"SHOW\"");
	refused("CREATE TABLE a (x INT);\n  INSRT INTO b SELECT 1;", 2, 3, "unknown statement kind \"INSRT\"");
	refused("SET;\nINSERT INTO b SELECT 1;", 1, 1, "SET without a value");
	refused("CREATE INDEX i ON a (x);\nINSERT INTO b SELECT 1;", 1, 1, "CREATE INDEX");
	refused("EXECUTE STATEMENT SET BEGIN\n  INSERT INTO b SELECT 1;\n  DELETE FROM b;\nEND;", 3, 3,
	        "inside EXECUTE STATEMENT SET");
	struct sqlscript s =
	    parse_ok("SET execution.checkpointing.interval = 10s;\nCREATE OR REPLACE TEMPORARY FUNCTION f "
	             "AS 'x.F';\nDROP TABLE IF EXISTS a;\nINSERT OVERWRITE b SELECT 1");
	assert_int_equal(s.n, 4);
	sqlscript_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_split_positions_and_kinds),  cmocka_unit_test(test_statement_set_is_one_statement),
	    cmocka_unit_test(test_unterminated_parts),         cmocka_unit_test(test_job_count),
	    cmocka_unit_test(test_statement_kinds_refused),    cmocka_unit_test(test_positions_of_an_inline_script),
	    cmocka_unit_test(test_create_table_as_is_the_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
