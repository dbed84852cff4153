/* jobfailure: what Flink's REST API says the job failed of (see src/flink/jobfailure.h). */
#include "jobfailure.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jvmout.h"
#include "util.h"

/* a stack trace longer than this is read from its end only: the root cause is at the end */
#define TRACE_LINES_MAX 2048

char *job_failure_cause_of_trace(const char *trace, size_t max)
{
	if (!trace || !*trace)
		return NULL;
	char *copy = xstrdup(trace);
	size_t n = 1;
	for (const char *p = copy; *p; p++)
		n += *p == '\n';
	const char **lines = xcalloc(n, sizeof(*lines));
	size_t count = 0;
	for (char *line = copy, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		lines[count++] = line;
	}
	size_t from = count > TRACE_LINES_MAX ? count - TRACE_LINES_MAX : 0;
	char *cause = jvmout_cause_of(lines + from, count - from, max);
	if (!cause && lines[0][0]) {
		/* no line that looks like one (an exception class not named *Exception or *Error): the first line is
		 * the failure's own */
		size_t len = strlen(lines[0]);
		cause = max >= 4 && len > max ? xasprintf("%.*s...", (int)(max - 3), lines[0]) : xstrdup(lines[0]);
	}
	free(lines);
	free(copy);
	return cause;
}

static int64_t timestamp_of(const cJSON *o)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timestamp");
	return cJSON_IsNumber(t) ? double_to_i64(t->valuedouble, 0, INT64_C(1) << 53, 0) : 0;
}

int job_failure_parse(const cJSON *body, size_t max, struct job_failure *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!cJSON_IsObject(body))
		return -ENOENT;
	const cJSON *history = cJSON_GetObjectItemCaseSensitive(body, "exceptionHistory");
	const cJSON *e, *newest = NULL;
	/* newest first as Flink lists them; the greatest timestamp wins all the same */
	cJSON_ArrayForEach (e, cJSON_GetObjectItemCaseSensitive(history, "entries")) {
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(e, "stacktrace");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "exceptionName");
		if (!cJSON_IsString(trace) && !cJSON_IsString(name))
			continue;
		if (!newest || timestamp_of(e) > timestamp_of(newest))
			newest = e;
	}
	if (newest) {
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(newest, "stacktrace");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(newest, "exceptionName");
		ret->cause = job_failure_cause_of_trace(cJSON_GetStringValue(trace), max);
		if (!ret->cause && cJSON_IsString(name) && name->valuestring[0])
			ret->cause = job_failure_cause_of_trace(name->valuestring, max);
		ret->timestamp = timestamp_of(newest);
	} else {
		/* Flink 1.20's deprecated fields (2.x removed them): the job's failure cause, when it has one */
		ret->cause = job_failure_cause_of_trace(
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "root-exception")), max);
		ret->timestamp = timestamp_of(body);
	}
	return ret->cause ? 0 : -ENOENT;
}

void job_failure_free(struct job_failure *f)
{
	free(f->cause);
	memset(f, 0, sizeof(*f));
}
