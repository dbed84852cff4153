/* sup_stop_budget: the stop's shutdown budget and its shares (see sup_stop_budget.h): the one reader of
 * flinklet.shutdown.timeout and of the deadline sup_stop.c arms. */
#include "sup_stop_budget.h"

#define SHUTDOWN_BUDGET_KEY "flinklet.shutdown.timeout"

usec_t sup_stop_budget_total(const struct supervisor *s)
{
	return spec_duration(s->spec, SHUTDOWN_BUDGET_KEY);
}

const char *sup_stop_budget_text(const struct supervisor *s)
{
	return spec_get(s->spec, SHUTDOWN_BUDGET_KEY);
}

usec_t sup_stop_budget_grace_period(const struct supervisor *s)
{
	usec_t budget = sup_stop_budget_total(s);
	usec_t grace = spec_duration(s->spec, "flinklet.jvm.stop-grace-period");
	return grace < budget ? grace : budget;
}

usec_t sup_stop_budget_exit_reserve(const struct supervisor *s)
{
	usec_t r = 5 * USEC_PER_SEC;
	if (s->status.stop_exit_ms >= 0) {
		usec_t took = (usec_t)s->status.stop_exit_ms * USEC_PER_MSEC;
		r = took + took / 2 + USEC_PER_SEC / 2;
		if (r < 2 * USEC_PER_SEC)
			r = 2 * USEC_PER_SEC;
	}
	usec_t grace = sup_stop_budget_grace_period(s);
	return r < grace ? r : grace;
}

bool sup_stop_budget_armed(const struct supervisor *s)
{
	return s->stop.deadline != 0;
}

usec_t sup_stop_budget_left(const struct supervisor *s, usec_t now)
{
	return s->stop.deadline > now ? s->stop.deadline - now : 0;
}
