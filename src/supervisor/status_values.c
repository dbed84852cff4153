/* status_values: the values of the status document in memory and their names (declared in
 * src/supervisor/status.h): the lifecycle's names, the names of the error and warning sources (each warning with
 * the event that says it), a string field set, snapshot references and their bounded histories, the memory tuning's
 * record cleared, the JVM's restarts. The slots of errors and warnings, the field table and the JSON are status.c's. */
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const lifecycle_names[] = {
    [LIFECYCLE_CREATED] = "CREATED",         [LIFECYCLE_DEPLOYED] = "DEPLOYED",
    [LIFECYCLE_STABLE] = "STABLE",           [LIFECYCLE_UPGRADING] = "UPGRADING",
    [LIFECYCLE_SUSPENDED] = "SUSPENDED",     [LIFECYCLE_ROLLING_BACK] = "ROLLING_BACK",
    [LIFECYCLE_ROLLED_BACK] = "ROLLED_BACK", [LIFECYCLE_FAILED] = "FAILED",
};

const char *lifecycle_to_string(enum lifecycle_state s)
{
	return (size_t)s < sizeof(lifecycle_names) / sizeof(lifecycle_names[0]) ? lifecycle_names[s] : "UNKNOWN";
}

int lifecycle_from_string(const char *s, enum lifecycle_state *ret)
{
	for (size_t i = 0; s && i < sizeof(lifecycle_names) / sizeof(lifecycle_names[0]); i++)
		if (!strcmp(s, lifecycle_names[i])) {
			*ret = (enum lifecycle_state)i;
			return 0;
		}
	return -EINVAL;
}

void status_memtuning_clear(struct status_memtuning *m)
{
	free(m->reason);
	free(m->suspended);
	*m = (struct status_memtuning){false, NULL, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, NULL, -1};
}

const char *status_error_source_name(enum status_error_source src)
{
	/* by name, not by position (a source reordered keeps its name) */
	static const char *const n[STATUS_ERR_MAX] = {
	    [STATUS_ERR_VOLUME] = "volume",
	    [STATUS_ERR_RESTORE] = "restore",
	    [STATUS_ERR_CRASH_LOOP] = "crashLoop",
	    [STATUS_ERR_STOP] = "stop",
	    [STATUS_ERR_STOP_SAVEPOINT] = "stopSavepoint",
	    [STATUS_ERR_DEMOTED] = "restorePointDemoted",
	    [STATUS_ERR_LAUNCH] = "launch",
	    [STATUS_ERR_JAR] = "jar",
	    [STATUS_ERR_FETCH] = "jarFetch",
	    [STATUS_ERR_SQL_FETCH] = "sqlScriptFetch",
	    [STATUS_ERR_JOB] = "job",
	    [STATUS_ERR_CONFIG] = "configuration",
	    [STATUS_ERR_SNAPSHOT] = "snapshot",
	    [STATUS_ERR_VOLUME_SPACE] = "volumeSpace",
	    [STATUS_ERR_PROGRESS] = "checkpointProgress",
	    [STATUS_ERR_FAILOVER] = "failover",
	};
	return (unsigned)src < STATUS_ERR_MAX && n[src] ? n[src] : "?";
}

int status_error_source_from_string(const char *name, enum status_error_source *ret)
{
	for (int i = 0; name && i < STATUS_ERR_MAX; i++)
		if (!strcmp(name, status_error_source_name((enum status_error_source)i))) {
			*ret = (enum status_error_source)i;
			return 0;
		}
	return -EINVAL;
}

/* by name, not by position; each with the event that says it */
static const char *const warning_names[STATUS_WARN_MAX][2] = {
    [STATUS_WARN_SCRATCH_SPACE] = {"scratchSpace", "ScratchSpaceLow"},
};

const char *status_warning_source_name(enum status_warning_source src)
{
	return (unsigned)src < STATUS_WARN_MAX && warning_names[src][0] ? warning_names[src][0] : "?";
}

const char *status_warning_event(enum status_warning_source src)
{
	return (unsigned)src < STATUS_WARN_MAX && warning_names[src][1] ? warning_names[src][1] : "?";
}

int status_warning_source_from_string(const char *name, enum status_warning_source *ret)
{
	for (int i = 0; name && i < STATUS_WARN_MAX; i++)
		if (!strcmp(name, status_warning_source_name((enum status_warning_source)i))) {
			*ret = (enum status_warning_source)i;
			return 0;
		}
	return -EINVAL;
}

int status_jvm_restarts(const struct status *st)
{
	return st->jvm_starts > 1 ? st->jvm_starts - 1 : 0;
}

void status_set_string(char **field, const char *value)
{
	if (*field && value && !strcmp(*field, value))
		return;
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

void snapshot_ref_set(struct snapshot_ref *r, const char *location, int64_t id, int64_t time_ms, const char *trigger)
{
	/* one spelling of local paths in the status document: Flink reports file:/x, flinklet writes file:///x */
	if (location && str_has_prefix(location, "file:/") && !str_has_prefix(location, "file://")) {
		char *uri = xasprintf("file:///%s", location + strlen("file:/"));
		status_set_string(&r->location, uri);
		free(uri);
	} else {
		status_set_string(&r->location, location);
	}
	status_set_string(&r->trigger_type, trigger);
	status_set_string(&r->format_type, NULL);
	r->id = id;
	r->time_ms = time_ms;
	r->claimed = false;
}

void snapshot_ref_free(struct snapshot_ref *r)
{
	free(r->location);
	free(r->trigger_type);
	free(r->format_type);
	memset(r, 0, sizeof(*r));
	r->id = -1;
}

struct snapshot_ref *snapshot_history_push(struct snapshot_ref *history, int *n, int max)
{
	if (*n >= max) {
		snapshot_ref_free(&history[0]);
		memmove(history, history + 1, sizeof(*history) * (size_t)(max - 1));
		memset(&history[max - 1], 0, sizeof(*history));
		*n = max - 1;
	}
	return &history[(*n)++];
}

struct snapshot_ref snapshot_history_take(struct snapshot_ref *history, int *n, int i)
{
	struct snapshot_ref r = history[i];
	memmove(&history[i], &history[i + 1], sizeof(*history) * (size_t)(*n - i - 1));
	(*n)--;
	memset(&history[*n], 0, sizeof(*history));
	return r;
}
