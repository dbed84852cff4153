/* lifecycle: the (state x event) -> (action, next state) table and its names (see include/lifecycle.h). */
#include "lifecycle.h"

#define T(a, n)                                                                                                        \
	{                                                                                                              \
		ACT_##a, SUP_##n                                                                                       \
	}
#define IGNORE(s)                                                                                                      \
	{                                                                                                              \
		ACT_NONE, SUP_##s                                                                                      \
	}

/* clang-format off */
const struct transition lifecycle_table[SUP_STATE_MAX][SUP_EVENT_MAX] = {
	[SUP_STARTING] = {
		[EV_JOB_RUNNING]      = T(MARK_STABLE, RUNNING),
		[EV_JVM_EXITED_OK]    = T(FINISHED, FINISHED),
		[EV_JVM_EXITED_ERROR] = T(RESTORE_FAILED, BACKOFF),
		[EV_JVM_KILLED]       = T(RESTART, BACKOFF),
		[EV_STARTUP_TIMEOUT]  = T(KILL_JVM, STARTING),
		[EV_UNHEALTHY]        = T(KILL_JVM, STARTING),
		[EV_BACKOFF_DONE]     = IGNORE(STARTING),
		[EV_STOP]             = T(TERMINATE, STOPPING),
		[EV_SAVEPOINT_DONE]   = IGNORE(STARTING),
		[EV_SAVEPOINT_FAILED] = IGNORE(STARTING),
		[EV_DEADLINE]         = IGNORE(STARTING),
	},
	[SUP_RUNNING] = {
		[EV_JOB_RUNNING]      = IGNORE(RUNNING),
		[EV_JVM_EXITED_OK]    = T(FINISHED, FINISHED),
		[EV_JVM_EXITED_ERROR] = T(RESTART, BACKOFF),
		[EV_JVM_KILLED]       = T(RESTART, BACKOFF),
		[EV_STARTUP_TIMEOUT]  = IGNORE(RUNNING),
		[EV_UNHEALTHY]        = T(KILL_JVM, RUNNING),
		[EV_BACKOFF_DONE]     = IGNORE(RUNNING),
		[EV_STOP]             = T(STOP, SAVEPOINTING),
		[EV_SAVEPOINT_DONE]   = IGNORE(RUNNING),
		[EV_SAVEPOINT_FAILED] = IGNORE(RUNNING),
		[EV_DEADLINE]         = IGNORE(RUNNING),
	},
	[SUP_BACKOFF] = {
		[EV_JOB_RUNNING]      = IGNORE(BACKOFF),
		[EV_JVM_EXITED_OK]    = IGNORE(BACKOFF),
		[EV_JVM_EXITED_ERROR] = IGNORE(BACKOFF),
		[EV_JVM_KILLED]       = IGNORE(BACKOFF),
		[EV_STARTUP_TIMEOUT]  = IGNORE(BACKOFF),
		[EV_UNHEALTHY]        = IGNORE(BACKOFF),
		[EV_BACKOFF_DONE]     = T(LAUNCH, STARTING),
		[EV_STOP]             = T(EXIT, STOPPED),
		[EV_SAVEPOINT_DONE]   = IGNORE(BACKOFF),
		[EV_SAVEPOINT_FAILED] = IGNORE(BACKOFF),
		[EV_DEADLINE]         = IGNORE(BACKOFF),
	},
	[SUP_SAVEPOINTING] = {
		[EV_JOB_RUNNING]      = IGNORE(SAVEPOINTING),
		[EV_JVM_EXITED_OK]    = T(STOPPED_SAVEPOINT, STOPPED),
		[EV_JVM_EXITED_ERROR] = T(STOPPED_SAVEPOINT, STOPPED),
		[EV_JVM_KILLED]       = T(STOPPED_SAVEPOINT, STOPPED),
		[EV_STARTUP_TIMEOUT]  = IGNORE(SAVEPOINTING),
		[EV_UNHEALTHY]        = IGNORE(SAVEPOINTING),
		[EV_BACKOFF_DONE]     = IGNORE(SAVEPOINTING),
		[EV_STOP]             = T(KILL_NOW, STOPPING),
		[EV_SAVEPOINT_DONE]   = T(SAVEPOINT_RECORD, SAVEPOINTING),
		[EV_SAVEPOINT_FAILED] = T(SAVEPOINT_ABANDON, STOPPING),
		[EV_DEADLINE]         = T(KILL_NOW, STOPPING),
	},
	[SUP_STOPPING] = {
		[EV_JOB_RUNNING]      = IGNORE(STOPPING),
		[EV_JVM_EXITED_OK]    = T(STOPPED, STOPPED),
		[EV_JVM_EXITED_ERROR] = T(STOPPED, STOPPED),
		[EV_JVM_KILLED]       = T(STOPPED, STOPPED),
		[EV_STARTUP_TIMEOUT]  = IGNORE(STOPPING),
		[EV_UNHEALTHY]        = IGNORE(STOPPING),
		[EV_BACKOFF_DONE]     = IGNORE(STOPPING),
		[EV_STOP]             = T(KILL_NOW, STOPPING),
		[EV_SAVEPOINT_DONE]   = IGNORE(STOPPING),
		[EV_SAVEPOINT_FAILED] = IGNORE(STOPPING),
		[EV_DEADLINE]         = T(KILL_NOW, STOPPED),
	},
	[SUP_FINISHED] = {
		[EV_JOB_RUNNING]      = IGNORE(FINISHED),
		[EV_JVM_EXITED_OK]    = IGNORE(FINISHED),
		[EV_JVM_EXITED_ERROR] = IGNORE(FINISHED),
		[EV_JVM_KILLED]       = IGNORE(FINISHED),
		[EV_STARTUP_TIMEOUT]  = IGNORE(FINISHED),
		[EV_UNHEALTHY]        = IGNORE(FINISHED),
		[EV_BACKOFF_DONE]     = IGNORE(FINISHED),
		[EV_STOP]             = T(EXIT, STOPPED),
		[EV_SAVEPOINT_DONE]   = IGNORE(FINISHED),
		[EV_SAVEPOINT_FAILED] = IGNORE(FINISHED),
		[EV_DEADLINE]         = IGNORE(FINISHED),
	},
	[SUP_FAILED] = {
		[EV_JOB_RUNNING]      = IGNORE(FAILED),
		[EV_JVM_EXITED_OK]    = IGNORE(FAILED),
		[EV_JVM_EXITED_ERROR] = IGNORE(FAILED),
		[EV_JVM_KILLED]       = IGNORE(FAILED),
		[EV_STARTUP_TIMEOUT]  = IGNORE(FAILED),
		[EV_UNHEALTHY]        = IGNORE(FAILED),
		[EV_BACKOFF_DONE]     = IGNORE(FAILED),
		[EV_STOP]             = T(EXIT, STOPPED),
		[EV_SAVEPOINT_DONE]   = IGNORE(FAILED),
		[EV_SAVEPOINT_FAILED] = IGNORE(FAILED),
		[EV_DEADLINE]         = IGNORE(FAILED),
	},
	[SUP_STOPPED] = {
		[EV_JOB_RUNNING]      = IGNORE(STOPPED),
		[EV_JVM_EXITED_OK]    = IGNORE(STOPPED),
		[EV_JVM_EXITED_ERROR] = IGNORE(STOPPED),
		[EV_JVM_KILLED]       = IGNORE(STOPPED),
		[EV_STARTUP_TIMEOUT]  = IGNORE(STOPPED),
		[EV_UNHEALTHY]        = IGNORE(STOPPED),
		[EV_BACKOFF_DONE]     = IGNORE(STOPPED),
		[EV_STOP]             = IGNORE(STOPPED),
		[EV_SAVEPOINT_DONE]   = IGNORE(STOPPED),
		[EV_SAVEPOINT_FAILED] = IGNORE(STOPPED),
		[EV_DEADLINE]         = IGNORE(STOPPED),
	},
};
/* clang-format on */

const char *sup_state_name(enum sup_state s)
{
	static const char *const n[] = {"STARTING", "RUNNING",  "BACKOFF", "SAVEPOINTING",
	                                "STOPPING", "FINISHED", "FAILED",  "STOPPED"};
	return (size_t)s < SUP_STATE_MAX ? n[s] : "?";
}

const char *sup_event_name(enum sup_event e)
{
	static const char *const n[] = {"JOB_RUNNING",     "JVM_EXITED_OK",    "JVM_EXITED_ERROR", "JVM_KILLED",
	                                "STARTUP_TIMEOUT", "UNHEALTHY",        "BACKOFF_DONE",     "STOP",
	                                "SAVEPOINT_DONE",  "SAVEPOINT_FAILED", "DEADLINE"};
	return (size_t)e < SUP_EVENT_MAX ? n[e] : "?";
}

const char *sup_action_name(enum sup_action a)
{
	static const char *const n[] = {
	    "NONE", "MARK_STABLE", "FINISHED", "RESTART",          "RESTORE_FAILED",    "KILL_JVM", "LAUNCH",
	    "STOP", "TERMINATE",   "KILL_NOW", "SAVEPOINT_RECORD", "SAVEPOINT_ABANDON", "STOPPED",  "STOPPED_SAVEPOINT",
	    "EXIT"};
	return (size_t)a < SUP_ACTION_MAX ? n[a] : "?";
}

enum lifecycle_state sup_state_lifecycle(enum sup_state s)
{
	switch (s) {
	case SUP_STARTING:
	case SUP_BACKOFF:
		return LIFECYCLE_DEPLOYED;
	case SUP_RUNNING:
	case SUP_FINISHED:
		return LIFECYCLE_STABLE;
	case SUP_SAVEPOINTING:
	case SUP_STOPPING:
		return LIFECYCLE_UPGRADING;
	case SUP_FAILED:
		return LIFECYCLE_FAILED;
	default:
		return LIFECYCLE_SUSPENDED;
	}
}

usec_t backoff_delay(unsigned n, usec_t initial, usec_t max, double multiplier)
{
	double d = (double)initial;
	for (unsigned i = 1; i < n && d < (double)max; i++)
		d *= multiplier;
	if (d >= (double)max)
		return max;
	return (usec_t)d;
}
