/* stopfit: a savepoint or the next checkpoint, for a stop inside its budget (see src/supervisor/stopfit.h). */
#include "stopfit.h"

#include <stdio.h>

/* the estimate is a guess: it must fit with a quarter to spare, and a second more */
#define MARGIN 1.25
#define SLACK_S 1.0

void stopfit_decide(const struct stopfit_in *in, struct stopfit *out)
{
	double share = (double)in->share / USEC_PER_SEC;
	double ckpt = in->checkpoint_ms >= 0 ? (double)in->checkpoint_ms / 1000.0 : 1.0;
	double interval = (double)in->interval / USEC_PER_SEC;
	out->savepoint_s = 0;
	out->checkpoint_s = in->interval ? interval + ckpt * MARGIN : 0;
	if (in->state_bytes < 0) {
		out->savepoint = true;
		snprintf(out->why, sizeof(out->why), "no checkpoint tells the state's size yet: a savepoint");
		return;
	}
	double bps = in->sp_bytes_per_sec > 0 ? in->sp_bytes_per_sec : STOPFIT_DEFAULT_BYTES_PER_SEC;
	out->savepoint_s = ckpt + (double)in->state_bytes / bps;
	bool sp_fits = out->savepoint_s * MARGIN + SLACK_S <= share;
	bool ck_fits = in->interval && out->checkpoint_s + SLACK_S <= share;
	/* neither fits for sure: the shorter of the two is the better chance */
	out->savepoint = sp_fits || !in->interval || (!ck_fits && out->savepoint_s <= out->checkpoint_s);
	snprintf(out->why, sizeof(out->why),
	         "a savepoint of %.0f MB takes about %.1f s (%.0f MB/s%s, the last checkpoint took %.1f s), the next "
	         "checkpoint at most %.1f s; %.1f s of the budget are left for it",
	         (double)in->state_bytes / 1e6, out->savepoint_s, bps / 1e6,
	         in->sp_bytes_per_sec > 0 ? ", as the job's last savepoint" : ", assumed: no savepoint measured yet",
	         ckpt, out->checkpoint_s, share);
}
