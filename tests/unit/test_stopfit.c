/* test_stopfit: a stop with upgradeMode savepoint takes the savepoint when it fits what the budget leaves, and
 * otherwise stops on the next checkpoint (src/supervisor/stopfit.c). */
#include "unit.h"

#include "stopfit.h"

#define S(x) ((usec_t)((x)*USEC_PER_SEC))
#define MB 1000000LL

static struct stopfit decide(int64_t bytes, int64_t ckpt_ms, double bps, double interval_s, double share_s)
{
	struct stopfit_in in = {bytes, ckpt_ms, bps, S(interval_s), S(share_s)};
	struct stopfit out;
	stopfit_decide(&in, &out);
	return out;
}

static void test_small_state_takes_the_savepoint(void **state)
{
	(void)state;
	struct stopfit f = decide(100 * 1000, 120, 0, 5, 20);
	assert_true(f.savepoint);
	assert_true(f.savepoint_s < 1.0);
}

static void test_nothing_known_takes_the_savepoint(void **state)
{
	(void)state;
	assert_true(decide(-1, -1, 0, 5, 20).savepoint);
	assert_true(decide(-1, -1, 0, 5, 0.5).savepoint); /* nothing to estimate from: as before */
}

static void test_gigabytes_stop_on_the_next_checkpoint(void **state)
{
	(void)state;
	/* 2 GB at the assumed 50 MB/s: 40 s of savepoint, the default budget leaves 20 s; the next incremental
	 * checkpoint comes within 5 s + 1.25 x 0.8 s */
	struct stopfit f = decide(2000 * MB, 800, 0, 5, 20);
	assert_false(f.savepoint);
	assert_double(f.savepoint_s, 40.8);
	assert_double(f.checkpoint_s, 6.0);
	assert_contains(f.why, "2000 MB");
	assert_contains(f.why, "assumed");
}

static void test_a_measured_savepoint_speed_decides(void **state)
{
	(void)state;
	/* 1 GB at a measured 200 MB/s fits 20 s; at the assumed 50 MB/s it would not */
	assert_true(decide(1000 * MB, 500, 200e6, 5, 20).savepoint);
	assert_false(decide(1000 * MB, 500, 0, 5, 20).savepoint);
	assert_contains(decide(1000 * MB, 500, 200e6, 5, 20).why, "the job's last savepoint");
}

static void test_the_margin(void **state)
{
	(void)state;
	/* 10 s estimated: 1.25 x 10 + 1 = 13.5 s needed */
	assert_false(decide(450 * MB, 1000, 0, 2, 13.4).savepoint);
	assert_true(decide(450 * MB, 1000, 0, 2, 13.6).savepoint);
}

static void test_without_periodic_checkpoints_the_savepoint_is_the_only_chance(void **state)
{
	(void)state;
	assert_true(decide(5000 * MB, 800, 0, 0, 20).savepoint);
}

static void test_neither_fits_the_shorter_wins(void **state)
{
	(void)state;
	/* a 60 s interval and a 30 s savepoint in 20 s: the savepoint is the better chance */
	assert_true(decide(1450 * MB, 1000, 0, 60, 20).savepoint);
	/* a 30 s interval and a 100 s savepoint: the checkpoint */
	assert_false(decide(5000 * MB, 1000, 0, 30, 20).savepoint);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_state_takes_the_savepoint),
	    cmocka_unit_test(test_nothing_known_takes_the_savepoint),
	    cmocka_unit_test(test_gigabytes_stop_on_the_next_checkpoint),
	    cmocka_unit_test(test_a_measured_savepoint_speed_decides),
	    cmocka_unit_test(test_the_margin),
	    cmocka_unit_test(test_without_periodic_checkpoints_the_savepoint_is_the_only_chance),
	    cmocka_unit_test(test_neither_fits_the_shorter_wins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
