/* test_memtune: memory tuning inside the pod's budget (src/config/memtune.c): an oversized heap shrinks to what the
 * job used with the margin and managed memory gets the rest (maximize-managed-memory, RocksDB); without it the heap
 * keeps the rest; nothing below Flink's floors or what was used; a job that needs more than the budget is not tuned
 * and says the smallest budget that holds it; the user's own memory keys win; and the smallest spec.resources.memory
 * for the job as it runs. */
#include "unit.h"

#include <math.h>

#include "memtune.h"

#define MIB (1ULL << 20)

static void spec_of(struct spec *s, const char *backend, const char *memory, const char *extra)
{
	char *text = xasprintf("metadata: {name: j}\n"
	                       "spec:\n"
	                       "  flinkConfiguration:\n"
	                       "    state.backend.type: %s\n"
	                       "%s"
	                       "  resources: {memory: %s}\n"
	                       "  job: {jarURI: /j.jar, parallelism: 2}\n",
	                       backend, extra, memory);
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", text, s, &rc);
	if (rc)
		fail_msg("unexpected diagnostics:\n%s", diags);
	free(diags);
	free(text);
}

static uint64_t parts(const struct membudget *mb)
{
	return mb->flinklet + mb->heap + mb->metaspace + mb->code_cache + mb->direct + mb->managed + mb->jvm_native +
	       mb->state_native;
}

static void test_an_oversized_heap_gives_its_rest_to_managed_memory(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g", "");
	struct memtune m;
	struct memtune_in in = {.heap_used = 100.0 * MIB,
	                        .metaspace_used = 70.0 * MIB,
	                        .managed_used = 200.0 * MIB,
	                        .overhead = 0.2,
	                        .maximize_managed = true};
	memtune_compute(&s, &in, &m);
	assert_true(m.ok);
	assert_true(m.changed);
	assert_int_equal(m.heap_need, 120 * MIB);
	assert_int_equal(m.metaspace_need, 86 * MIB); /* 70 + 16: more than 70 * 1.2 */
	/* the heap is what the job used with the margin, managed memory grew by all the rest */
	assert_int_equal(m.after.heap, 120 * MIB);
	assert_int_equal(m.after.metaspace, 86 * MIB);
	assert_true(m.before.heap > m.after.heap);
	assert_true(m.after.managed > m.before.managed);
	assert_true(m.after.managed - m.before.managed >= m.before.heap - m.after.heap);
	/* never past the budget */
	assert_true(parts(&m.after) <= 1024 * MIB);
	assert_true(parts(&m.before) <= 1024 * MIB);
	assert_non_null(strstr(m.why, "heap "));
	assert_non_null(strstr(m.why, "-> 120m"));
	/* the smallest pod for the job as it runs (managed memory as it has now) is below the budget */
	assert_true(m.min_memory > 0 && m.min_memory < 1024 * MIB);
	assert_int_equal(m.t.metaspace, 86 * MIB);
	assert_int_equal(m.t.managed, m.after.managed);
	assert_int_equal(m.t.heap_floor, 120 * MIB);
	/* the tuned split, computed again for the launch, is the same */
	struct membudget again;
	assert_int_equal(membudget_compute_tuned(&s, &m.t, &again), 0);
	assert_int_equal(again.heap, m.after.heap);
	assert_int_equal(again.managed, m.after.managed);
	spec_free(&s);
}

static void test_without_maximize_the_heap_keeps_the_rest(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g", "");
	struct memtune m;
	struct memtune_in in = {.heap_used = 100.0 * MIB, .metaspace_used = 50.0 * MIB, .overhead = 0.2};
	memtune_compute(&s, &in, &m);
	assert_true(m.ok);
	assert_int_equal(m.after.managed, m.before.managed); /* not measurable: kept */
	assert_int_equal(m.after.metaspace, 80 * MIB);       /* 50 + 16, at least 80 */
	assert_true(m.after.heap > m.before.heap);           /* what the metaspace gave back */
	assert_true(parts(&m.after) <= 1024 * MIB);
	spec_free(&s);

	/* hashmap: no managed memory at all, the heap takes everything the metaspace does not need */
	spec_of(&s, "hashmap", "512m", "");
	memtune_compute(&s, &in, &m);
	assert_true(m.ok);
	assert_int_equal(m.before.managed, 0);
	assert_int_equal(m.after.managed, 0);
	assert_true(m.after.heap >= m.before.heap);
	assert_true(parts(&m.after) <= 512 * MIB);
	spec_free(&s);
}

static void test_floors_and_margins(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g", "");
	struct memtune m;
	/* a tiny use, no margin: the heap is never below 48m, the metaspace never below 80m or 16m over its use */
	struct memtune_in in = {
	    .heap_used = 5.0 * MIB, .metaspace_used = 10.0 * MIB, .overhead = 0, .maximize_managed = true};
	memtune_compute(&s, &in, &m);
	assert_true(m.ok);
	assert_int_equal(m.after.heap, MB_MIN_HEAP);
	assert_int_equal(m.after.metaspace, MEMTUNE_MIN_METASPACE);
	in.metaspace_used = 70.5 * MIB; /* 71m used: 87m */
	memtune_compute(&s, &in, &m);
	assert_int_equal(m.after.metaspace, 87 * MIB);
	/* a margin of 1 doubles what was used */
	in.heap_used = 200.0 * MIB;
	in.overhead = 1;
	memtune_compute(&s, &in, &m);
	assert_int_equal(m.after.heap, 400 * MIB);
	/* measured in a tuned JVM of 120m: never below it, however little it used there; more when it used more */
	in.overhead = 0.2;
	in.heap_used = 50.0 * MIB;
	in.tuned_heap = 120 * MIB;
	memtune_compute(&s, &in, &m);
	assert_int_equal(m.after.heap, 120 * MIB);
	in.heap_used = 150.0 * MIB;
	memtune_compute(&s, &in, &m);
	assert_int_equal(m.after.heap, 180 * MIB);
	spec_free(&s);
}

static void test_a_job_bigger_than_the_budget_is_not_tuned(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "512m", "");
	struct memtune m;
	struct memtune_in in = {
	    .heap_used = 600.0 * MIB, .metaspace_used = 80.0 * MIB, .overhead = 0.2, .maximize_managed = true};
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	assert_non_null(strstr(m.why, "more than spec.resources.memory 512m holds"));
	/* the budget it needs: more than 720m of heap and the rest */
	assert_true(m.min_memory > 720 * MIB + 96 * MIB);
	char *want = membudget_mib(m.min_memory);
	assert_non_null(strstr(m.why, want));
	free(want);
	/* at that budget it fits */
	struct spec big;
	char *mem = membudget_mib(m.min_memory);
	spec_of(&big, "rocksdb", mem, "");
	memtune_compute(&big, &in, &m);
	assert_true(m.ok);
	free(mem);
	spec_free(&big);
	spec_free(&s);
}

static void test_nothing_measured_or_no_budget(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g", "");
	struct memtune m;
	struct memtune_in in = {.heap_used = NAN, .metaspace_used = 80.0 * MIB, .overhead = 0.2};
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	assert_non_null(strstr(m.why, "no heap or metaspace usage"));
	in.heap_used = 0;
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	in.heap_used = 100.0 * MIB;
	in.metaspace_used = -1;
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	spec_free(&s);

	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", "metadata: {name: j}\nspec:\n  job: {jarURI: /j.jar}\n", &s, &rc);
	assert_int_equal(rc, 0);
	free(diags);
	in.metaspace_used = 80.0 * MIB;
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	assert_non_null(strstr(m.why, "spec.resources.memory is not set"));
	spec_free(&s);
}

static void test_the_users_own_keys_win(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g",
	        "    taskmanager.memory.jvm-metaspace.size: 128m\n"
	        "    taskmanager.memory.managed.size: 200m\n");
	struct memtune m;
	struct memtune_in in = {
	    .heap_used = 100.0 * MIB, .metaspace_used = 50.0 * MIB, .overhead = 0.2, .maximize_managed = true};
	memtune_compute(&s, &in, &m);
	assert_true(m.ok);
	assert_int_equal(m.after.metaspace, 128 * MIB);
	assert_int_equal(m.after.managed, 200 * MIB);
	assert_int_equal(m.after.heap, m.before.heap);
	assert_false(m.changed);
	spec_free(&s);
}

/* Figures past any budget (a heap of 1e20 bytes, a metaspace of 1e19) saturate: no wrap to a small need, and the
 * budget it needs is a lower bound past 1 TiB, said as beyond any budget. */
static void test_huge_figures_saturate(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "hashmap", "1g", "");
	const double figures[][2] = {{1e20, 6e7}, {1e8, 1e19}, {1e308, 6e7}, {1.8e19, 1.8e19}};
	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		struct memtune m;
		struct memtune_in in = {.heap_used = figures[i][0], .metaspace_used = figures[i][1], .overhead = 0.2};
		memtune_compute(&s, &in, &m);
		assert_false(m.ok);
		assert_true(m.heap_need >= 48 * MIB && m.metaspace_need >= 80 * MIB);
		assert_true(m.heap_need >= MEMTUNE_MAX_NEED || m.metaspace_need >= MEMTUNE_MAX_NEED);
		assert_true(m.min_memory > (1ULL << 40));
		assert_true(m.min_memory <= MB_MAX_BUDGET);
		char *want = xasprintf("it needs at least %llum (its figures are beyond any budget",
		                       (unsigned long long)(m.min_memory / MIB));
		if (!strstr(m.why, want))
			fail_msg("%s\nnot in: %s", want, m.why);
		free(want);
	}
	spec_free(&s);
}

/* RocksDB without maximize-managed-memory: a launch keeps the untuned managed memory of its own budget, which grows
 * with it; the smallest budget is the fixed point: it holds the job, one MiB less does not. */
static void test_min_memory_holds_the_job_with_managed_memory_growing(void **state)
{
	(void)state;
	struct spec s;
	spec_of(&s, "rocksdb", "1g", "");
	struct memtune m;
	struct memtune_in in = {.heap_used = 400.0 * MIB, .metaspace_used = 150.0 * MIB, .overhead = 0.2};
	memtune_compute(&s, &in, &m);
	assert_false(m.ok);
	uint64_t min = m.min_memory;
	assert_true(min > 1024 * MIB);
	char *mem = membudget_mib(min), *less = membudget_mib(min - MIB);
	struct spec at, below;
	spec_of(&at, "rocksdb", mem, "");
	spec_of(&below, "rocksdb", less, "");
	memtune_compute(&at, &in, &m);
	if (!m.ok)
		fail_msg("at minMemory %s: %s", mem, m.why);
	assert_int_equal(m.min_memory, min);
	memtune_compute(&below, &in, &m);
	assert_false(m.ok);
	assert_int_equal(m.min_memory, min);
	free(mem), free(less);
	spec_free(&at), spec_free(&below), spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_an_oversized_heap_gives_its_rest_to_managed_memory),
	    cmocka_unit_test(test_without_maximize_the_heap_keeps_the_rest),
	    cmocka_unit_test(test_floors_and_margins),
	    cmocka_unit_test(test_a_job_bigger_than_the_budget_is_not_tuned),
	    cmocka_unit_test(test_nothing_measured_or_no_budget),
	    cmocka_unit_test(test_the_users_own_keys_win),
	    cmocka_unit_test(test_huge_figures_saturate),
	    cmocka_unit_test(test_min_memory_holds_the_job_with_managed_memory_growing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
