/* pollchain: which polls of Flink's REST API are in flight, which of their answers may still be used, and
 * how long their requests may take (see src/supervisor/pollchain.h). */
#include "pollchain.h"

#include <limits.h>

/* more doublings than any client timeout needs: 50 ms << 20 is over 14 hours */
#define SLOW_MAX 20

struct poll_chain *poll_chain_start(struct poll_chains *pc, void *owner, unsigned gen, usec_t timeout, usec_t now)
{
	for (unsigned i = 0; i < POLL_CHAINS_MAX; i++) {
		struct poll_chain *c = &pc->slot[i];
		if (c->active)
			continue;
		*c = (struct poll_chain){.owner = owner,
		                         .active = true,
		                         .gen = gen,
		                         .seq = ++pc->next_seq,
		                         .timeout = timeout,
		                         .started = now};
		return c;
	}
	return NULL;
}

void poll_chain_end(struct poll_chains *pc, struct poll_chain *c)
{
	(void)pc;
	c->active = false;
}

unsigned poll_chains_active(const struct poll_chains *pc)
{
	unsigned n = 0;
	for (unsigned i = 0; i < POLL_CHAINS_MAX; i++)
		n += pc->slot[i].active;
	return n;
}

bool poll_chain_current(const struct poll_chains *pc, const struct poll_chain *c, unsigned gen)
{
	return c->active && c->gen == gen && c->seq >= pc->taken;
}

bool poll_chain_take_details(struct poll_chains *pc, struct poll_chain *c, unsigned gen)
{
	if (!poll_chain_current(pc, c, gen))
		return false;
	pc->taken = c->seq;
	return true;
}

void poll_chains_new_launch(struct poll_chains *pc)
{
	pc->taken = 0;
	pc->slow = 0;
	pc->told_slow = false;
}

usec_t poll_request_timeout(const struct poll_chains *pc, bool startup, usec_t interval, usec_t client_timeout)
{
	if (!startup)
		return client_timeout;
	usec_t t = interval / 4 * 3;
	if (t < POLL_STARTUP_TIMEOUT_MIN)
		t = POLL_STARTUP_TIMEOUT_MIN;
	for (unsigned i = 0; i < pc->slow && t < client_timeout; i++)
		t *= 2;
	return t < client_timeout ? t : client_timeout;
}

void poll_request_outcome(struct poll_chains *pc, bool timed_out, bool answered)
{
	if (timed_out) {
		if (pc->slow < SLOW_MAX)
			pc->slow++;
	} else if (answered && pc->slow > 0) {
		pc->slow--;
	}
}

unsigned poll_hang_polls(usec_t rest_timeout, usec_t interval)
{
	if (interval == 0)
		interval = 1;
	usec_t n = rest_timeout / interval + (rest_timeout % interval != 0);
	return n < 1 ? 1 : n > UINT_MAX ? UINT_MAX : (unsigned)n;
}
