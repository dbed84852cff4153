/* test_flinkversion: the claim gate on the version a running Flink reports (GET /config's flink-version): only a
 * release with FLINK-39964 (2.2.2, 2.3.1, 2.4.0 and later) restores flinklet's own NATIVE savepoints in claim mode;
 * a snapshot, a vendor's build, a 1.20 of any kind, an empty or unreadable version never does. */
#include "unit.h"

#include "flinkversion.h"

static void test_claim_only_on_a_release_with_the_fix(void **state)
{
	(void)state;
	const char *claims[] = {"2.2.2", "2.2.10", "2.3.1", "2.3.2", "2.4.0", "2.4.1", "2.10.0", "3.0.0", NULL};
	const char *never[] = {
	    /* releases without the fix: 1.x (no 1.20 backport), 2.0, 2.1, 2.2 before .2, 2.3.0 */
	    "1.20.0", "1.20.1", "1.20.5", "1.20.9", "1.19.3", "2.0.2", "2.1.3", "2.2.0", "2.2.1", "2.3.0",
	    /* snapshots: built from a branch at an unknown commit */
	    "2.3-SNAPSHOT", "2.4-SNAPSHOT", "2.3.1-SNAPSHOT", "3.0-SNAPSHOT",
	    /* vendors' builds: what they carry is theirs to say */
	    "1.20.1-vvr-8.0.11", "1.20-vvr-8.0.11", "2.2.1-custom", "2.2.2-custom", "2.4.0-rc1", "2.4.0.1",
	    /* empty and garbage */
	    "", " ", "2", "2.4", "2.4.", ".2.4", "v2.4.0", "2.4.0 ", " 2.4.0", "2.4.x", "2..4", "+2.4.0", "-2.4.0",
	    "2.4.-1", "02.4.0", "2.04.0", "2.4.00", "9999999.0.0", "unknown", "<unknown>", "2.4.0\n", NULL};
	for (size_t i = 0; claims[i]; i++) {
		if (!flinkversion_claims_native_savepoints(claims[i]))
			fail_msg("%s does not claim", claims[i]);
	}
	for (size_t i = 0; never[i]; i++) {
		if (flinkversion_claims_native_savepoints(never[i]))
			fail_msg("%s claims", never[i]);
	}
	assert_false(flinkversion_claims_native_savepoints(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claim_only_on_a_release_with_the_fix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
