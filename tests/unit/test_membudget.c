/* test_membudget: spec.resources.memory as the whole pod's budget (src/config/membudget.c): the split at 256m with
 * the hashmap and the rocksdb backend, 1g and 4g, the parts never adding up to more than the budget, budgets too
 * small rejected at the memory field with the smallest that fits, and the user's own Flink memory keys either
 * respected and counted or rejected at their own line when they overflow the budget. */
#include "unit.h"

#include "membudget.h"

#define MIB (1ULL << 20)

/* A document with the backend, extra flinkConfiguration lines (4-space indent) and the memory at line 7 or
 * later, column 13. */
static char *doc(const char *backend, const char *extra, const char *memory, const char *resources_extra)
{
	return xasprintf("metadata: {name: j}\n"
	                 "spec:\n"
	                 "  flinkConfiguration:\n"
	                 "    state.backend.type: %s\n"
	                 "%s"
	                 "  resources:\n"
	                 "    memory: %s\n"
	                 "%s"
	                 "  job: {jarURI: /j.jar, parallelism: 2}\n",
	                 backend, extra, memory, resources_extra);
}

/* Finalizes the document and splits its budget; fails the test on any diagnostic. */
static void split_ok(const char *text, struct spec *s, struct membudget *mb)
{
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", text, s, &rc);
	if (rc)
		fail_msg("unexpected diagnostics:\n%s", diags);
	free(diags);
	struct diags d = {0};
	assert_int_equal(membudget_compute(s, mb, &d), 0);
	assert_int_equal(d.msgs.n, 0);
	diags_free(&d);
}

static char *split_fails(const char *text)
{
	int rc = 0;
	char *diags = parse_and_finalize("t.yaml", text, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	return diags;
}

/* Everything flinklet counts adds up to at most the budget. */
static uint64_t parts(const struct membudget *mb)
{
	return mb->flinklet + mb->heap + mb->metaspace + mb->code_cache + mb->direct + mb->managed + mb->jvm_native +
	       mb->state_native;
}

static void test_256m_hashmap(void **state)
{
	(void)state;
	struct spec s;
	struct membudget mb;
	char *text = doc("hashmap", "", "256m", "");
	split_ok(text, &s, &mb);
	assert_int_equal(mb.budget, 256 * MIB);
	assert_int_equal(mb.flinklet, 16 * MIB);
	assert_int_equal(mb.metaspace, 80 * MIB);
	assert_int_equal(mb.code_cache, 24 * MIB);
	assert_int_equal(mb.network, 8 * MIB);
	assert_int_equal(mb.framework_offheap, 16 * MIB);
	assert_int_equal(mb.direct, 24 * MIB);
	assert_int_equal(mb.jvm_native, 50 * MIB); /* 40m + 1m per slot + budget/32 */
	assert_int_equal(mb.state_native, 0);
	assert_int_equal(mb.managed, 0); /* the heap backend needs no managed memory */
	assert_int_equal(mb.heap, 62 * MIB);
	assert_true(mb.serial_gc);
	assert_true(mb.c1_only);
	assert_true(parts(&mb) <= mb.budget);
	assert_int_equal(mb.min_budget, 241 * MIB);
	/* the Flink side lands in the configuration Flink reads */
	assert_string_equal(spec_get(&s, "taskmanager.memory.managed.size"), "0m");
	assert_string_equal(spec_get(&s, "taskmanager.memory.network.min"), "8m");
	assert_string_equal(spec_get(&s, "taskmanager.memory.network.max"), "8m");
	spec_free(&s);
	free(text);
}

static void test_256m_rocksdb_too_small(void **state)
{
	(void)state;
	char *text = doc("rocksdb", "", "256m", "");
	char *diags = split_fails(text);
	assert_int_equal(diag_count(diags), 1);
	assert_diag(diags, "t.yaml:6:13: spec.resources.memory: 256m is too small for the whole pod with the rocksdb "
	                   "state backend: it must be at least 301m (then: flinklet 16m, JVM metaspace 80m, code cache "
	                   "24m, direct memory 27m, JVM native 51m, RocksDB native 24m, and a heap of at least 48m and "
	                   "managed memory of at least 16m)");
	free(diags);
	free(text);

	/* at that minimum it fits: heap and managed memory at least their floors */
	struct spec s;
	struct membudget mb;
	text = doc("rocksdb", "", "301m", "");
	split_ok(text, &s, &mb);
	assert_true(mb.heap >= MB_MIN_HEAP);
	assert_true(mb.managed >= MB_MIN_MANAGED);
	assert_int_equal(mb.state_native, 24 * MIB);
	assert_true(parts(&mb) <= mb.budget);
	assert_int_equal(mb.min_budget, 301 * MIB);
	spec_free(&s);
	free(text);
}

static void test_1g_and_4g(void **state)
{
	(void)state;
	struct spec s;
	struct membudget mb;
	char *text = doc("hashmap", "", "1g", "");
	split_ok(text, &s, &mb);
	assert_int_equal(mb.metaspace, 128 * MIB);
	assert_int_equal(mb.code_cache, 64 * MIB);
	assert_int_equal(mb.network, 32 * MIB);
	assert_int_equal(mb.direct, 96 * MIB);
	assert_int_equal(mb.jvm_native, 74 * MIB);
	assert_int_equal(mb.managed, 0);
	assert_int_equal(mb.heap, 646 * MIB);
	assert_false(mb.serial_gc); /* G1 from 1 GiB on, unless at most one CPU */
	assert_false(mb.c1_only);
	spec_free(&s);
	free(text);

	text = doc("rocksdb", "", "4g", "");
	split_ok(text, &s, &mb);
	assert_int_equal(mb.metaspace, 256 * MIB);  /* Flink's TaskManager default */
	assert_int_equal(mb.code_cache, 240 * MIB); /* the JVM's default */
	assert_int_equal(mb.network, 64 * MIB);     /* Flink's MiniCluster default */
	assert_int_equal(mb.direct, 192 * MIB);
	assert_int_equal(mb.jvm_native, 170 * MIB);
	assert_int_equal(mb.managed, 1279 * MIB); /* 0.4 of what is left, Flink's own fraction */
	assert_int_equal(mb.heap, 1919 * MIB);
	assert_true(parts(&mb) <= mb.budget);
	assert_string_equal(spec_get(&s, "taskmanager.memory.managed.size"), "1279m");
	spec_free(&s);
	free(text);

	/* one CPU: the serial collector at any budget */
	text = doc("hashmap", "", "4g", "    cpu: 1\n");
	split_ok(text, &s, &mb);
	assert_true(mb.serial_gc);
	spec_free(&s);
	free(text);
}

/* From the smallest budget that fits up to 64g, both backends: the parts never exceed the budget, the heap and
 * (RocksDB) managed memory are at least their floors, and one MiB less than the minimum is rejected. */
static void test_parts_fit_every_budget(void **state)
{
	(void)state;
	static const char *const backends[] = {"hashmap", "rocksdb", "forst"};
	for (size_t b = 0; b < 3; b++) {
		struct spec s;
		struct membudget mb;
		char *text = doc(backends[b], "", "64g", "");
		split_ok(text, &s, &mb);
		uint64_t min = mb.min_budget;
		spec_free(&s);
		free(text);
		for (uint64_t m = min / MIB; m <= 65536; m = m < 2048 ? m + 7 : m * 5 / 4) {
			char mem[32];
			snprintf(mem, sizeof(mem), "%llum", (unsigned long long)m);
			text = doc(backends[b], "", mem, "");
			split_ok(text, &s, &mb);
			if (parts(&mb) > mb.budget || mb.heap < MB_MIN_HEAP || (b > 0 && mb.managed < MB_MIN_MANAGED) ||
			    (b == 0 && mb.managed))
				fail_msg("%s %s: parts %llu of budget %llu, heap %llu, managed %llu", backends[b], mem,
				         (unsigned long long)parts(&mb), (unsigned long long)mb.budget,
				         (unsigned long long)mb.heap, (unsigned long long)mb.managed);
			spec_free(&s);
			free(text);
		}
		char less[32];
		snprintf(less, sizeof(less), "%llum", (unsigned long long)(min / MIB - 1));
		text = doc(backends[b], "", less, "");
		char *diags = split_fails(text);
		assert_contains(diags, "spec.resources.memory: ");
		assert_contains(diags, "is too small for the whole pod");
		free(diags);
		free(text);
	}
}

static void test_user_keys_respected(void **state)
{
	(void)state;
	struct spec s;
	struct membudget plain, mb;
	char *text = doc("hashmap", "", "512m", "");
	split_ok(text, &s, &plain);
	spec_free(&s);
	free(text);

	text = doc("hashmap",
	           "    taskmanager.memory.managed.size: 64m\n"
	           "    taskmanager.memory.network.max: 32m\n"
	           "    taskmanager.memory.jvm-metaspace.size: 128m\n"
	           "    taskmanager.memory.task.off-heap.size: 8m\n",
	           "512m", "");
	split_ok(text, &s, &mb);
	assert_int_equal(mb.managed, 64 * MIB);
	assert_int_equal(mb.network, 32 * MIB);
	assert_int_equal(mb.metaspace, 128 * MIB);
	assert_int_equal(mb.task_offheap, 8 * MIB);
	assert_int_equal(mb.direct, mb.network + mb.framework_offheap + 8 * MIB);
	/* every MiB the user gave elsewhere comes off the heap */
	uint64_t more = (64 + (32 - plain.network / MIB) + (128 - plain.metaspace / MIB) + 8) * MIB;
	assert_int_equal(mb.heap, plain.heap - more);
	assert_true(parts(&mb) <= mb.budget);
	/* the user's values stay in Flink's configuration; the network minimum is Flink's to derive */
	assert_string_equal(spec_get(&s, "taskmanager.memory.managed.size"), "64m");
	assert_string_equal(spec_get(&s, "taskmanager.memory.network.max"), "32m");
	assert_null(spec_get(&s, "taskmanager.memory.network.min"));
	spec_free(&s);
	free(text);
}

static void test_user_keys_rejected(void **state)
{
	(void)state;
	/* a managed memory that leaves no heap is blamed, at its own line, not the budget */
	char *text =
	    doc("rocksdb", "    taskmanager.memory.managed.size: 900m\n    taskmanager.memory.network.max: 16m\n", "1g",
	        "");
	char *diags = split_fails(text);
	assert_int_equal(diag_count(diags), 1);
	assert_diag(diags,
	            "t.yaml:5:38: spec.flinkConfiguration.taskmanager.memory.managed.size: 900m does not fit in "
	            "spec.resources.memory 1024m with the other settings: the heap would get 0m, at least 48m is "
	            "needed; lower it, or raise spec.resources.memory to at least 1452m");
	free(diags);
	free(text);

	/* not a memory size */
	text = doc("hashmap", "    taskmanager.memory.network.max: lots\n", "1g", "");
	diags = split_fails(text);
	assert_diag(diags, "t.yaml:5:37: spec.flinkConfiguration.taskmanager.memory.network.max: must be a memory size "
	                   "such as 64m or 1g (got \"lots\")");
	free(diags);
	free(text);

	/* too small on its own: the budget is named, not the keys */
	text = doc("hashmap", "    taskmanager.memory.managed.size: 1m\n", "128m", "");
	diags = split_fails(text);
	assert_int_equal(diag_count(diags), 1);
	assert_contains(diags, "t.yaml:7:13: spec.resources.memory: 128m is too small for the whole pod");
	free(diags);
	free(text);
}

static void test_no_budget_derives_nothing(void **state)
{
	(void)state;
	struct spec s;
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", "metadata: {name: j}\nspec:\n  job: {jarURI: /j.jar}\n", &s, &rc);
	assert_int_equal(rc, 0);
	struct membudget mb;
	assert_int_equal(membudget_compute(&s, &mb, NULL), 0);
	assert_int_equal(mb.budget, 0);
	assert_int_equal(mb.heap, 0);
	assert_null(spec_get(&s, "taskmanager.memory.managed.size"));
	assert_null(spec_get(&s, "taskmanager.memory.network.max"));
	spec_free(&s);
	free(diags);
}

/* Many slots need more network buffers than the budget's share: the MiniCluster's floor wins. */
static void test_network_floor_for_many_slots(void **state)
{
	(void)state;
	struct spec s;
	struct membudget mb;
	char *text = doc("hashmap", "    taskmanager.numberOfTaskSlots: 24\n", "1g", "");
	split_ok(text, &s, &mb);
	/* 3 exchanges x 24 x (24 + 2) buffers of 32 KiB = 58.5 MiB, above 1g/32 */
	assert_int_equal(mb.network, 59 * MIB);
	assert_int_equal(mb.jvm_native, (40 + 24 + 32) * MIB);
	spec_free(&s);
	free(text);
}

static void test_mib(void **state)
{
	(void)state;
	char *a = membudget_mib(62 * MIB), *b = membudget_mib(MIB + 1);
	assert_string_equal(a, "62m");
	assert_string_equal(b, "1048577b");
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_256m_hashmap),
	    cmocka_unit_test(test_256m_rocksdb_too_small),
	    cmocka_unit_test(test_1g_and_4g),
	    cmocka_unit_test(test_parts_fit_every_budget),
	    cmocka_unit_test(test_user_keys_respected),
	    cmocka_unit_test(test_user_keys_rejected),
	    cmocka_unit_test(test_no_budget_derives_nothing),
	    cmocka_unit_test(test_network_floor_for_many_slots),
	    cmocka_unit_test(test_mib),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
