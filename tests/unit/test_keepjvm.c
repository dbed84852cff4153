/* test_keepjvm: which upgrades the running JVM can take (src/supervisor/sup_keepjvm.c, issue 38 item 3): two specs
 * whose JVM fingerprints are equal differ in the job alone (its jar, entry class, arguments, parallelism and Flink's
 * job-level options); anything the JVM itself is started with (a memory option, JVM options, the log configuration,
 * another Flink option) changes the fingerprint, and so takes a new JVM. On the test supervisor of
 * tests/support/sup_fixture.c (no JVM). */
#include "unit.h"

#include "sup_fixture.h"

static const char BASE[] = "apiVersion: flink.apache.org/v1beta1\n"
                           "kind: FlinkMiniCluster\n"
                           "metadata:\n"
                           "  name: keep\n"
                           "spec:\n"
                           "  flinkConfiguration:\n"
                           "    execution.checkpointing.interval: 1s\n"
                           "    flinklet.state.dir: /var/lib/flinklet\n"
                           "%s"
                           "%s"
                           "  job:\n"
                           "    jarURI: local://%s\n"
                           "    entryClass: %s\n"
                           "    args: [%s]\n"
                           "    parallelism: %d\n";

struct variant {
	const char *conf;    /* more flinkConfiguration lines */
	bool without_memory; /* no spec.resources.memory (else 1536m) */
	const char *jar, *entry, *args;
	int parallelism;
};

static char *fingerprint(struct supervisor *s, const struct variant *v)
{
	char *text =
	    xasprintf(BASE, v->conf ? v->conf : "", v->without_memory ? "" : "  resources:\n    memory: 1536m\n",
	              v->jar ? v->jar : "/opt/job/a.jar", v->entry ? v->entry : "com.example.Job",
	              v->args ? v->args : "\"--rate\", \"200\"", v->parallelism ? v->parallelism : 2);
	struct spec spec;
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", text, &spec, &rc);
	if (rc)
		print_error("%s\n", diags);
	assert_int_equal(rc, 0);
	free(diags);
	free(text);
	char *fp = sup_keepjvm_fingerprint(s, &spec);
	spec_free(&spec);
	return fp;
}

static void test_the_job_alone_keeps_the_jvm(void **state)
{
	(void)state;
	struct supervisor s;
	struct sup_fixture f = {.name = "keep", .jar = "test-no-launch:job.jar"};
	assert_int_equal(sup_fixture_init(&s, &f), 0);
	const struct variant base = {0};
	char *fp = fingerprint(&s, &base);
	/* the job: another jar, entry class, arguments, parallelism, job-level options */
	const struct variant same[] = {
	    {.jar = "/opt/job/b.jar"},
	    {.entry = "com.example.Other"},
	    {.args = "\"--rate\", \"200\", \"--work\", \"0\""},
	    {.conf = "    pipeline.name: another\n"},
	    {.conf = "    execution.checkpointing.timeout: 5 min\n"},
	    {.conf = "    restart-strategy.type: fixed-delay\n"},
	    {.conf = "    table.exec.state.ttl: 1h\n"},
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		char *other = fingerprint(&s, &same[i]);
		if (strcmp(fp, other))
			print_error("variant %zu changed the JVM\n", i);
		assert_string_equal(fp, other);
		free(other);
	}
	/* the JVM: memory, JVM options, another Flink option, the log configuration */
	const struct variant differ[] = {
	    {.conf = "    taskmanager.memory.managed.size: 96m\n"}, {.conf = "    flinklet.jvm.options: -Dx=1\n"},
	    {.conf = "    state.backend.type: rocksdb\n"},          {.conf = "    rest.bind-address: 0.0.0.0\n"},
	    {.conf = "    metrics.latency.interval: 1000\n"},
	};
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
		char *other = fingerprint(&s, &differ[i]);
		if (!strcmp(fp, other))
			print_error("variant %zu kept the JVM\n", i);
		assert_string_not_equal(fp, other);
		free(other);
	}
	free(fp);
	/* the parallelism is the job's, and the task slots flinklet derives from it; with spec.resources.memory the
	 * split of the JVM's memory depends on the slots (the heap, by a MiB here): a new JVM */
	const struct variant bare = {.without_memory = true}, bare1 = {.without_memory = true, .parallelism = 1};
	fp = fingerprint(&s, &bare);
	char *other = fingerprint(&s, &bare1);
	assert_string_equal(fp, other);
	free(other);
	free(fp);
	const struct variant p1 = {.parallelism = 1};
	fp = fingerprint(&s, &base);
	other = fingerprint(&s, &p1);
	assert_string_not_equal(fp, other);
	free(other);
	free(fp);
	sup_fixture_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_job_alone_keeps_the_jvm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
