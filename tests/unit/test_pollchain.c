/* test_pollchain: the bookkeeping of the supervisor's polls of Flink's REST API (src/supervisor/pollchain.c): at most
 * POLL_CHAINS_MAX polls in flight and a slot free again when one ends; answers that arrive out of order (a
 * slow request overtaken by a newer poll) never move what the supervisor knows backwards; a new JVM makes
 * the old one's polls stale; the request timeouts while the job starts (shorter than the poll interval,
 * longer after requests ran out of time, shorter again after answers, never beyond the client timeout) and
 * once it runs (the client timeout). */
#include <limits.h>

#include "unit.h"

#include "pollchain.h"

#define MS USEC_PER_MSEC

static int owner; /* stands for the supervisor */

static void test_at_most_three_in_flight_and_a_slot_is_reused(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	struct poll_chain *c[POLL_CHAINS_MAX];
	for (int i = 0; i < POLL_CHAINS_MAX; i++) {
		c[i] = poll_chain_start(&pc, &owner, 1, 150 * MS, 1000);
		assert_non_null(c[i]);
		assert_ptr_equal(c[i]->owner, &owner);
		assert_int_equal(c[i]->timeout, 150 * MS);
		assert_int_equal(poll_chains_active(&pc), i + 1);
	}
	/* three hang: the fourth poll is skipped, not queued behind them */
	assert_null(poll_chain_start(&pc, &owner, 1, 150 * MS, 1000));
	assert_int_equal(poll_chains_active(&pc), POLL_CHAINS_MAX);
	/* the middle one times out: the next poll goes out in its slot, numbered after all the others */
	poll_chain_end(&pc, c[1]);
	assert_int_equal(poll_chains_active(&pc), POLL_CHAINS_MAX - 1);
	struct poll_chain *d = poll_chain_start(&pc, &owner, 1, 150 * MS, 2000);
	assert_ptr_equal(d, c[1]);
	assert_true(d->seq > c[0]->seq && d->seq > c[2]->seq);
	assert_int_equal(d->started, 2000);
}

static void test_an_overtaken_answer_is_not_taken(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	/* poll 1 hangs while Flink's REST server comes up; poll 2 is answered first: the job is RUNNING */
	struct poll_chain *old = poll_chain_start(&pc, &owner, 1, 10 * USEC_PER_SEC, 0);
	struct poll_chain *young = poll_chain_start(&pc, &owner, 1, 10 * USEC_PER_SEC, 0);
	assert_true(poll_chain_current(&pc, old, 1));
	assert_true(poll_chain_take_details(&pc, young, 1));
	/* then poll 1's answer arrives (the job CREATED, as it was when it was asked): not taken */
	assert_false(poll_chain_current(&pc, old, 1));
	assert_false(poll_chain_take_details(&pc, old, 1));
	poll_chain_end(&pc, old);
	/* poll 2 goes on (checkpoints, overview): still current */
	assert_true(poll_chain_current(&pc, young, 1));
	/* a poll started after it is current, and once it has its details, poll 2's later answers are not */
	struct poll_chain *next = poll_chain_start(&pc, &owner, 1, 10 * USEC_PER_SEC, 0);
	assert_true(poll_chain_current(&pc, next, 1));
	assert_true(poll_chain_current(&pc, young, 1));
	assert_true(poll_chain_take_details(&pc, next, 1));
	assert_false(poll_chain_current(&pc, young, 1));
	assert_true(poll_chain_current(&pc, next, 1));
}

static void test_answers_in_order_are_all_taken(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	/* the usual case, overlapping or not: each poll's details are newer than the last ones taken */
	for (int round = 0; round < 10; round++) {
		struct poll_chain *a = poll_chain_start(&pc, &owner, 1, 150 * MS, 0);
		struct poll_chain *b = poll_chain_start(&pc, &owner, 1, 150 * MS, 0);
		assert_true(poll_chain_take_details(&pc, a, 1));
		assert_true(poll_chain_current(&pc, a, 1)); /* its checkpoints may still come */
		assert_true(poll_chain_take_details(&pc, b, 1));
		assert_false(poll_chain_current(&pc, a, 1)); /* overtaken now */
		poll_chain_end(&pc, a);
		poll_chain_end(&pc, b);
	}
	assert_int_equal(poll_chains_active(&pc), 0);
}

static void test_polls_of_an_earlier_jvm_are_stale(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	struct poll_chain *before = poll_chain_start(&pc, &owner, 1, 150 * MS, 0);
	assert_true(poll_chain_take_details(&pc, before, 1));
	/* the JVM is restarted (launch generation 2): what the old one's poll learns is not about this JVM */
	poll_chains_new_launch(&pc);
	assert_false(poll_chain_current(&pc, before, 2));
	assert_false(poll_chain_take_details(&pc, before, 2));
	struct poll_chain *after = poll_chain_start(&pc, &owner, 2, 150 * MS, 0);
	assert_true(poll_chain_take_details(&pc, after, 2));
	/* nor does an ended chain count for anything */
	poll_chain_end(&pc, after);
	assert_false(poll_chain_current(&pc, after, 2));
}

static void test_startup_timeouts_follow_the_rest_server(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	const usec_t interval = 200 * MS, client = 10 * USEC_PER_SEC;
	/* shorter than the startup poll interval: a hung request ends before the next poll is due */
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 150 * MS);
	assert_true(poll_request_timeout(&pc, true, interval, client) < interval);
	/* once the job runs: the client timeout */
	assert_int_equal(poll_request_timeout(&pc, false, 2 * USEC_PER_SEC, client), client);
	/* a request that ran out of time makes the next ones longer: a slow server is still heard */
	poll_request_outcome(&pc, true, false);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 300 * MS);
	poll_request_outcome(&pc, true, false);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 600 * MS);
	/* a refused connection says nothing about it */
	poll_request_outcome(&pc, false, false);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 600 * MS);
	/* an answer makes them shorter again, one step at a time */
	poll_request_outcome(&pc, false, true);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 300 * MS);
	poll_request_outcome(&pc, false, true);
	poll_request_outcome(&pc, false, true);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 150 * MS);
	/* never beyond the client timeout, however many ran out */
	for (int i = 0; i < 100; i++)
		poll_request_outcome(&pc, true, false);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), client);
	/* a new JVM starts with the short ones again */
	poll_chains_new_launch(&pc);
	assert_int_equal(poll_request_timeout(&pc, true, interval, client), 150 * MS);
}

static void test_startup_timeout_bounds(void **state)
{
	(void)state;
	struct poll_chains pc = {0};
	/* a very short startup interval still leaves a localhost request time to be answered */
	assert_int_equal(poll_request_timeout(&pc, true, 10 * MS, 10 * USEC_PER_SEC), POLL_STARTUP_TIMEOUT_MIN);
	/* and a client timeout shorter than that wins */
	assert_int_equal(poll_request_timeout(&pc, true, 10 * MS, 20 * MS), 20 * MS);
	/* a long startup interval: three quarters of it */
	assert_int_equal(poll_request_timeout(&pc, true, 4 * USEC_PER_SEC, 10 * USEC_PER_SEC), 3 * USEC_PER_SEC);
}

/* The hang window in polls: a JVM is hung when this many polls in a row went unanswered, however long the
 * supervisor itself stood still between them. */
static void test_the_hang_window_is_counted_in_polls(void **state)
{
	(void)state;
	usec_t s = USEC_PER_SEC;
	assert_int_equal(poll_hang_polls(60 * s, 2 * s), 30); /* the defaults: 1 min, a poll every 2 s */
	assert_int_equal(poll_hang_polls(5 * s, 2 * s), 3);   /* rounded up: never shorter than the window */
	assert_int_equal(poll_hang_polls(4 * s, s), 4);
	assert_int_equal(poll_hang_polls(0, 2 * s), 1); /* at least one */
	assert_int_equal(poll_hang_polls(s, 10 * s), 1);
	assert_int_equal(poll_hang_polls(7200 * s, 0), UINT_MAX); /* no interval: as many as it holds */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_at_most_three_in_flight_and_a_slot_is_reused),
	    cmocka_unit_test(test_an_overtaken_answer_is_not_taken),
	    cmocka_unit_test(test_answers_in_order_are_all_taken),
	    cmocka_unit_test(test_polls_of_an_earlier_jvm_are_stale),
	    cmocka_unit_test(test_startup_timeouts_follow_the_rest_server),
	    cmocka_unit_test(test_startup_timeout_bounds),
	    cmocka_unit_test(test_the_hang_window_is_counted_in_polls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
