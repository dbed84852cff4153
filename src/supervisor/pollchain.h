/* pollchain: the bookkeeping of the supervisor's polls of Flink's REST API (src/supervisor/sup_poll.c), apart from the
 * requests themselves so that it can be tested alone. One poll is a chain of requests (the job's details,
 * then its checkpoints, the overview, the restart count), one request at a time. Several chains may be in
 * flight at once (at most POLL_CHAINS_MAX), so that a request that hangs (a REST server still coming up)
 * never keeps the next poll from going out. Chains are numbered in the order they start; a chain whose
 * job-details answer arrives after a newer chain's has been taken is superseded, and nothing it learns is
 * used any more: the supervisor's view of the job only moves forward. A chain of an earlier JVM (launch
 * generation) is stale the same way.
 *
 * While the job starts, each request gets a timeout shorter than the startup poll interval; one that runs
 * out makes the next ones longer (doubled, up to the steady client timeout), one that is answered makes
 * them shorter again, so a REST server that is merely slow is still heard. */
#ifndef FLINKLET_POLLCHAIN_H
#define FLINKLET_POLLCHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define POLL_CHAINS_MAX 3
/* the shortest request timeout while the job starts */
#define POLL_STARTUP_TIMEOUT_MIN (50 * USEC_PER_MSEC)

struct poll_chain {
	void *owner;    /* the supervisor: a chain is the userdata of its requests */
	bool active;    /* a request of this chain is in flight */
	unsigned gen;   /* the launch generation it was started for */
	uint64_t seq;   /* its number: higher is newer */
	usec_t timeout; /* the timeout of each of its requests */
	usec_t started; /* when it started (monotonic) */
};

struct poll_chains {
	struct poll_chain slot[POLL_CHAINS_MAX];
	uint64_t next_seq; /* the number of the next chain (the first is 1) */
	uint64_t taken;    /* the newest chain whose job-details answer was taken (0: none) */
	unsigned slow;     /* how many times over the startup timeout has been doubled */
	bool told_slow;    /* "still coming up" was said for this launch (once is enough) */
};

/* A new chain for launch generation gen, with requests of the given timeout; NULL when POLL_CHAINS_MAX are in
 * flight already. */
struct poll_chain *poll_chain_start(struct poll_chains *pc, void *owner, unsigned gen, usec_t timeout, usec_t now);
/* The chain is done (its last answer came, or a request could not be sent): its slot is free again. */
void poll_chain_end(struct poll_chains *pc, struct poll_chain *c);
/* Chains in flight. */
unsigned poll_chains_active(const struct poll_chains *pc);
/* Whether what chain c learns may still be used: it is of launch generation gen and no newer chain's job
 * details have been taken. */
bool poll_chain_current(const struct poll_chains *pc, const struct poll_chain *c, unsigned gen);
/* Chain c got the job's details: true when they are to be taken (c is current), and from now on every older
 * chain is superseded. */
bool poll_chain_take_details(struct poll_chains *pc, struct poll_chain *c, unsigned gen);
/* Forgets the order of an earlier JVM's chains: a new launch starts afresh (chains of the old one are stale
 * by their generation). */
void poll_chains_new_launch(struct poll_chains *pc);

/* The timeout of the next chain's requests: while the job starts (startup), three quarters of the startup
 * poll interval (at least POLL_STARTUP_TIMEOUT_MIN), doubled for every request that ran out of time since,
 * at most client_timeout; once it runs, client_timeout. */
usec_t poll_request_timeout(const struct poll_chains *pc, bool startup, usec_t interval, usec_t client_timeout);
/* What one request of a chain came to: it ran out of time (the next ones get longer), or an HTTP answer came
 * (the next ones get shorter again). A refused connection is neither. */
void poll_request_outcome(struct poll_chains *pc, bool timed_out, bool answered);

/* How many polls in a row a JVM's REST API may leave unanswered before it is hung: the hang window
 * (flinklet.health.rest-timeout) in polls of the interval, rounded up, at least 1. Counting polls rather than time
 * since the last answer, a stall of the supervisor (which sends none meanwhile) is never taken for the JVM's. */
unsigned poll_hang_polls(usec_t rest_timeout, usec_t interval);

#endif
