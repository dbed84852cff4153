/* test_export: the pieces of `flinklet export` a promotion relies on without a Flink around: the Kubernetes
 * name the operator's validator accepts ([a-z]([-a-z0-9]{0,43}[a-z0-9])?, whatever flinklet's own name was),
 * deprecated key spellings folded to the current one (so the old directory keys are left out as well), and
 * the operator versions --operator-version takes (anything else is refused). */
#include "unit.h"

#include <errno.h>
#include <regex.h>

#include "config.h"
#include "export.h"

static void check_name(const char *in, const char *want)
{
	char *got = export_k8s_name(in);
	regex_t re;
	assert_int_equal(regcomp(&re, "^[a-z]([-a-z0-9]{0,43}[a-z0-9])?$", REG_EXTENDED | REG_NOSUB), 0);
	if (regexec(&re, got, 0, NULL, 0))
		fail_msg("export_k8s_name(\"%s\") = \"%s\": not a name the operator accepts", in, got);
	regfree(&re);
	if (want && strcmp(got, want))
		fail_msg("export_k8s_name(\"%s\") = \"%s\", want \"%s\"", in, got, want);
	free(got);
}

static void test_names(void **state)
{
	(void)state;
	check_name("orders", "orders"); /* a good name stays as it is */
	check_name("clicks-2", "clicks-2");
	check_name("9lives", "job-9lives"); /* must start with a letter */
	check_name("-x-", "x");             /* no dash at either end */
	check_name("a--b", "a-b");
	check_name("Orders_EU.v2", "orders-eu-v2"); /* upper case, '_' and '.' */
	check_name("", "flinklet-job");
	check_name(NULL, "flinklet-job");
	check_name("---", "flinklet-job");
	/* 63 characters (flinklet's DNS label limit) become at most 45, never ending in a dash */
	check_name("a23456789-123456789-123456789-123456789-1234-6789-123456789-123", NULL);
	check_name("a2345678901234567890123456789012345678901234-6789", "a2345678901234567890123456789012345678901234");
	check_name("9-lives-of-a-job-whose-name-is-longer-than-the-operator-takes", NULL);
}

static void test_canonical_keys(void **state)
{
	(void)state;
	assert_string_equal(spec_canonical_key("state.checkpoints.dir"), "execution.checkpointing.dir");
	assert_string_equal(spec_canonical_key("state.backend.fs.checkpointdir"), "execution.checkpointing.dir");
	assert_string_equal(spec_canonical_key("state.savepoints.dir"), "execution.checkpointing.savepoint-dir");
	assert_string_equal(spec_canonical_key("execution.checkpointing.dir"), "execution.checkpointing.dir");
	assert_string_equal(spec_canonical_key("web.address"), "rest.bind-address");
	assert_string_equal(spec_canonical_key("pipeline.name"), "pipeline.name");
}

static void test_operator_versions(void **state)
{
	(void)state;
	enum export_operator op = EXPORT_OPERATOR_1_15;
	assert_int_equal(export_operator_parse("1.16", &op), 0);
	assert_int_equal(op, EXPORT_OPERATOR_1_16);
	assert_string_equal(export_operator_name(op), "1.16");
	assert_int_equal(export_operator_parse("1.15", &op), 0);
	assert_int_equal(op, EXPORT_OPERATOR_1_15);
	assert_string_equal(export_operator_name(op), "1.15");
	/* a patch release has its minor's CRD */
	assert_int_equal(export_operator_parse("1.16.1", &op), 0);
	assert_int_equal(op, EXPORT_OPERATOR_1_16);
	assert_int_equal(export_operator_parse("1.15.0", &op), 0);
	assert_int_equal(op, EXPORT_OPERATOR_1_15);
	/* the default is 1.16: a zeroed export_args asks for it */
	struct export_args a = {0};
	assert_int_equal(a.operator_version, EXPORT_OPERATOR_1_16);
	/* refused, and op left as it was */
	static const char *const bad[] = {"",      "1",       "1.1",   "1.14",  "1.17",  "2.0", "1.16.",
	                                  "1.16x", "1.16.1a", "v1.16", "1.160", " 1.16", NULL};
	for (size_t i = 0; bad[i]; i++) {
		op = EXPORT_OPERATOR_1_15;
		if (export_operator_parse(bad[i], &op) != -EINVAL)
			fail_msg("export_operator_parse(\"%s\") took it", bad[i]);
		assert_int_equal(op, EXPORT_OPERATOR_1_15);
	}
	assert_int_equal(export_operator_parse(NULL, &op), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_canonical_keys),
	    cmocka_unit_test(test_operator_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
