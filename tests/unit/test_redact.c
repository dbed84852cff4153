/* test_redact: what a user with a presigned or credentialed jarURI relies on: the password, the signature
 * and any other query value never survive redact_uri / redact_text, while the host and the path (what tells
 * which jar it is) stay readable, and text without such URIs comes back byte for byte. */
#include "unit.h"

#include "redact.h"

static void check_uri(const char *in, const char *want)
{
	char *got = redact_uri(in);
	if (strcmp(got, want))
		fail_msg("redact_uri(\"%s\") = \"%s\", want \"%s\"", in, got, want);
	free(got);
}

static void check_text(const char *in, const char *want)
{
	char *got = redact_text(in);
	if (strcmp(got, want))
		fail_msg("redact_text(\"%s\") = \"%s\", want \"%s\"", in, got, want);
	assert_int_equal(redact_needed(in), strcmp(in, want) != 0);
	free(got);
}

static void test_credentials(void **state)
{
	(void)state;
	check_uri("https://user:s3cret@example.com/jobs/job.jar", "https://***@example.com/jobs/job.jar");
	check_uri("https://token@example.com:8443/job.jar", "https://***@example.com:8443/job.jar");
	check_uri("https://user:p%40ss@example.com/a@b/job.jar", "https://***@example.com/a@b/job.jar");
	/* an unescaped '/' in the password must not leave the rest of it readable */
	check_uri("https://user:pa/ss@example.com/job.jar", "https://***@example.com/job.jar");
	check_uri("https://u:p@[2001:db8::1]:8443/x.jar", "https://***@[2001:db8::1]:8443/x.jar");
	check_uri("https://user:pw@host", "https://***@host");
}

static void test_presigned_queries(void **state)
{
	(void)state;
	check_uri("https://b.s3.eu-west-1.amazonaws.com/job.jar?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
	          "AKIAXXX%2F20250101%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Signature=abcdef0123",
	          "https://b.s3.eu-west-1.amazonaws.com/job.jar?***");
	check_uri("https://acct.blob.core.windows.net/c/job.jar?sv=2022-11-02&sig=Zm9v%3D",
	          "https://acct.blob.core.windows.net/c/job.jar?***");
	check_uri("https://storage.googleapis.com/b/job.jar?X-Goog-Signature=00ff",
	          "https://storage.googleapis.com/b/job.jar?***");
	check_uri("https://h/job.jar?token=t0k3n#frag", "https://h/job.jar?***");
	check_uri("https://h/job.jar#access_token=t0k3n", "https://h/job.jar#***");
	check_uri("https://u:p@h?Signature=x", "https://***@h?***");
	check_uri("s3://bucket/key/job.jar?versionId=abc", "s3://bucket/key/job.jar?***");
}

static void test_harmless_unchanged(void **state)
{
	(void)state;
	check_uri("local:///opt/flink/usrlib/job.jar", "local:///opt/flink/usrlib/job.jar");
	check_uri("file:///tmp/a@b/job.jar", "file:///tmp/a@b/job.jar");
	check_uri("https://example.com:8443/repo/@scope/job.jar", "https://example.com:8443/repo/@scope/job.jar");
	check_uri("s3://bucket/key.jar", "s3://bucket/key.jar");
	check_uri("/opt/job.jar", "/opt/job.jar");
	check_uri("not a uri: user:pass@host", "not a uri: user:pass@host");
	check_uri("", "");
	assert_null(redact_uri(NULL));
	assert_null(redact_text(NULL));
	assert_false(redact_needed(NULL));
}

static void test_text(void **state)
{
	(void)state;
	check_text("fetching https://user:pw@h/job.jar?sig=abc (attempt 1)",
	           "fetching https://***@h/job.jar?*** (attempt 1)");
	check_text("unable to fetch the job's jar https://h/j.jar?X-Amz-Signature=abc: refused",
	           "unable to fetch the job's jar https://h/j.jar?***: refused");
	check_text("two: \"https://a:b@h1/x\" and <http://h2/y?token=z>, done.",
	           "two: \"https://***@h1/x\" and <http://h2/y?***>, done.");
	check_text("(https://u:p@h/x)", "(https://***@h/x)");
	check_text("-https://u:p@h/x", "-https://***@h/x");
	check_text("savepoint file:///var/lib/flinklet/savepoints/savepoint-ab-cd completed",
	           "savepoint file:///var/lib/flinklet/savepoints/savepoint-ab-cd completed");
	check_text("no uri here: key=value?x=1 user@host", "no uri here: key=value?x=1 user@host");
	check_text("dangling https:// and ://x", "dangling https:// and ://x");
	check_text("", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_credentials),
	    cmocka_unit_test(test_presigned_queries),
	    cmocka_unit_test(test_harmless_unchanged),
	    cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
