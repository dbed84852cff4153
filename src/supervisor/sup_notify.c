/* sup_notify: systemd integration. With NOTIFY_SOCKET set: READY=1 once the supervisor does what the spec says
 * (the job first RUNNING, or no JVM on purpose: suspended, finished), STATUS= with the lifecycle state at every
 * transition, WATCHDOG=1 (every half of WATCHDOG_USEC) only while the job is healthy, not merely while the loop turns,
 * and STOPPING=1 with EXTEND_TIMEOUT_USEC while a shutdown savepoint runs. Under journald (JOURNAL_STREAM naming our
 * stderr) events also go to the journal with structured fields (sup_core.c). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "sup_notify.h"
#include "sup_stop_budget.h"

/* Healthy for the watchdog: the job runs as it should, or is down on purpose. */
static bool watchdog_healthy(struct supervisor *s)
{
	switch (s->state) {
	case SUP_RUNNING: /* not hung: fewer polls in a row unanswered than the hang window holds (sup_poll.c) */
		return !s->poll.last_rest_ok ||
		       s->poll.unanswered < poll_hang_polls(spec_duration(s->spec, "flinklet.health.rest-timeout"),
		                                            spec_duration(s->spec, "flinklet.rest.poll-interval"));
	case SUP_STARTING:
		/* waiting for a jar that cannot start (JarUnusable) is a job that is down, not one that starts */
		return !s->launch.jar_problem;
	case SUP_SAVEPOINTING:
	case SUP_STOPPING:
	case SUP_SUSPENDED:
	case SUP_FINISHED:
		return true;
	default:
		return false; /* crash-looping or failed: let systemd see it */
	}
}

static int on_watchdog(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	if (watchdog_healthy(s))
		sd_notify(0, "WATCHDOG=1");
	sup_arm(s, &s->notify.watchdog_timer, s->notify.watchdog_usec / 2, on_watchdog);
	return 0;
}

/* JOURNAL_STREAM is "<dev>:<inode>" of the stream systemd connected; it counts only if it is our stderr. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void sup_notify_setup(struct supervisor *s)
{
	s->notify.journald = stderr_is_journal();
	if (!getenv("NOTIFY_SOCKET"))
		return;
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		s->notify.watchdog_usec = usec;
		sup_arm(s, &s->notify.watchdog_timer, s->notify.watchdog_usec / 2, on_watchdog);
	}
	sd_notifyf(0, "STATUS=%s: starting", s->spec->name);
}

void sup_notify_state(struct supervisor *s)
{
	if (!getenv("NOTIFY_SOCKET"))
		return;
	const char *life = lifecycle_to_string(s->status.lifecycle);
	/* READY in systemd's sense: started, and doing what the spec says. A job that is down on purpose is that as
	 * much as a running one, else `systemctl start` of a suspended job would wait for the start timeout and
	 * fail; whether the job runs is the STATUS= line's (and /readyz's) to say. */
	const char *settled = s->state == SUP_RUNNING     ? "RUNNING"
	                      : s->state == SUP_SUSPENDED ? "SUSPENDED, no JVM on purpose (resume it to run)"
	                      : s->state == SUP_FINISHED  ? "FINISHED, not started again"
	                                                  : NULL;
	if (settled && !s->notify.notified_ready) {
		s->notify.notified_ready = true;
		sd_notifyf(0, "READY=1\nSTATUS=%s: %s, job %s %s", s->spec->name, life, s->job_id, settled);
		return;
	}
	if (s->state == SUP_SUSPENDED || s->state == SUP_FINISHED) {
		sd_notifyf(0, "STATUS=%s: %s, job %s %s", s->spec->name, life, s->job_id, settled);
		return;
	}
	if ((s->state == SUP_SAVEPOINTING || s->state == SUP_STOPPING) && s->stop.purpose == STOP_EXIT) {
		/* what is left of the stop's budget (sup_stop.c armed its deadline) */
		usec_t left = sup_stop_budget_left(s, now_monotonic());
		sd_notifyf(0, "STOPPING=1\nEXTEND_TIMEOUT_USEC=%llu\nSTATUS=%s: %s, stopping%s",
		           (unsigned long long)left, s->spec->name, life,
		           s->state == SUP_SAVEPOINTING ? " with a savepoint" : "");
		return;
	}
	sd_notifyf(0, "STATUS=%s: %s, job %s", s->spec->name, life, s->status.job_state ? s->status.job_state : "-");
}

void sup_notify_free(struct supervisor *s)
{
	s->notify.watchdog_timer = sup_disarm(s->notify.watchdog_timer);
}
