/* sup_core: the supervisor's record keeping: events (log line + events.jsonl), the status document
 * (rewritten atomically, only when it changed), the lifecycle state it shows, and timers. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <systemd/sd-journal.h>

#include "redact.h"
#include "store.h"
#include "sup.h"

/* events kept in memory while the volume does not take them */
#define PENDING_EVENTS_MAX 256

static void sup_event_v(struct supervisor *s, enum log_level level, const char *type, const char *fmt, va_list ap)
{
	struct strbuf msg = {0};
	strbuf_vappendf(&msg, fmt, ap);
	if (redact_needed(msg.buf)) { /* the journal, stderr and events.jsonl never see a URI's secrets */
		char *clean = redact_text(msg.buf);
		strbuf_free(&msg);
		strbuf_append(&msg, clean);
		free(clean);
	}
	if (s->journald)
		/* structured: the journal gets the fields, and stderr would only repeat the message */
		sd_journal_send("MESSAGE=%s", msg.buf, "PRIORITY=%d", level >= LOG_LEVEL_ERROR ? 3 : 6,
		                "SYSLOG_IDENTIFIER=flinklet", "FLINKLET_EVENT=%s", type, "FLINKLET_JOB_ID=%s",
		                s->job_id, "FLINKLET_JOB_NAME=%s", s->spec->name, "FLINKLET_LIFECYCLE_STATE=%s",
		                lifecycle_to_string(s->status.lifecycle), NULL);
	else
		log_msg(level, "%s", msg.buf);

	usec_t now = now_realtime();
	char iso[40];
	format_iso8601(now, iso, sizeof(iso));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", iso);
	cJSON_AddNumberToObject(o, "timeMs", (double)(now / USEC_PER_MSEC));
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddStringToObject(o, "jobId", s->job_id);
	cJSON_AddStringToObject(o, "lifecycleState", lifecycle_to_string(s->status.lifecycle));
	cJSON_AddStringToObject(o, "level", level >= LOG_LEVEL_WARN ? "Warning" : "Normal");
	cJSON_AddStringToObject(o, "message", msg.buf);
	char *line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	strbuf_free(&msg);
	sup_observe_event(s, line); /* the status page's recent events, whether the volume takes it or not */
	/* events the volume did not take yet go first, in order */
	strv_push_take(&s->pending_events, line);
	size_t done = 0;
	int r = 0;
	while (done < s->pending_events.n && (r = store_append_event(s->state_dir, s->pending_events.v[done])) == 0)
		done++;
	for (size_t i = 0; i < done; i++)
		free(s->pending_events.v[i]);
	memmove(s->pending_events.v, s->pending_events.v + done, (s->pending_events.n - done) * sizeof(char *));
	s->pending_events.n -= done;
	s->pending_events.v[s->pending_events.n] = NULL;
	if (s->pending_events.n > PENDING_EVENTS_MAX) {
		free(s->pending_events.v[0]);
		memmove(s->pending_events.v, s->pending_events.v + 1, s->pending_events.n * sizeof(char *));
		s->pending_events.n--;
		s->events_dropped++;
	}
	sup_volume_write(s, "events.jsonl", r);
}

void sup_volume_write(struct supervisor *s, const char *file, int r)
{
	if (r < 0) {
		s->volume_write_errors++;
		if (s->volume_errno == -r)
			return; /* said already */
		s->volume_errno = -r;
		status_set_string(&s->volume_failed_file, file);
		char *why = xasprintf("unable to write %s on the state volume %s: %s; the last good copy stays, the "
		                      "job keeps running, and flinklet tries again",
		                      file, s->state_dir, strerror(-r));
		/* not an event: events.jsonl is on the same volume (it gets one once the volume works again) */
		if (s->journald)
			sd_journal_send("MESSAGE=%s", why, "PRIORITY=3", "SYSLOG_IDENTIFIER=flinklet",
			                "FLINKLET_EVENT=VolumeWriteFailed", "FLINKLET_JOB_ID=%s", s->job_id, NULL);
		else
			log_error("%s", why);
		status_set_string(&s->status.error, why);
		free(why);
		return;
	}
	if (s->volume_errno == 0)
		return;
	int was = s->volume_errno;
	char *what = s->volume_failed_file;
	s->volume_errno = 0;
	s->volume_failed_file = NULL;
	if (s->status.error && str_has_prefix(s->status.error, "unable to write ") &&
	    strstr(s->status.error, "on the state volume"))
		status_set_string(&s->status.error, NULL);
	sup_event(s, "VolumeWritable",
	          "the state volume %s takes writes again (%llu failed since %s could not be written: %s%s)",
	          s->state_dir, (unsigned long long)s->volume_write_errors, what ? what : "a file", strerror(was),
	          s->events_dropped ? "; some events were dropped" : "");
	s->events_dropped = 0;
	free(what);
}

void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_INFO, type, fmt, ap);
	va_end(ap);
}

void sup_warning(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_WARN, type, fmt, ap);
	va_end(ap);
}

void sup_alert(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_ERROR, type, fmt, ap);
	va_end(ap);
}

void sup_write_status(struct supervisor *s)
{
	char *text = status_render(&s->status);
	if (s->last_written && !strcmp(text, s->last_written)) {
		free(text);
		return;
	}
	char *path = path_join(s->state_dir, "status.json");
	int r = write_file_atomic(path, text, strlen(text));
	free(path);
	sup_volume_write(s, "status.json", r);
	if (r < 0) {
		/* the status error changed: the next write tries again with it */
		free(text);
		return;
	}
	free(s->last_written);
	s->last_written = text;
}

void sup_set_job_state(struct supervisor *s, const char *state)
{
	if (s->status.job_state && state && !strcmp(s->status.job_state, state))
		return;
	status_set_string(&s->status.job_state, state);
	s->status.update_time_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
}

void sup_set_intent(struct supervisor *s, const char *intent)
{
	status_set_string(&s->status.intent, intent);
	sup_write_status(s);
}

void sup_exit(struct supervisor *s, int code)
{
	s->exit_code = code;
	sd_event_exit(s->event, code);
}

sd_event_source *sup_disarm(sd_event_source *src)
{
	return sd_event_source_disable_unref(src);
}

int sup_arm(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn)
{
	*src = sup_disarm(*src);
	return sd_event_add_time(s->event, src, CLOCK_MONOTONIC, now_monotonic() + delay, 0, fn, s);
}

enum lifecycle_state sup_lifecycle(const struct supervisor *s)
{
	if (s->rolling_back && (s->state == SUP_STARTING || s->state == SUP_STOPPING || s->state == SUP_BACKOFF))
		return LIFECYCLE_ROLLING_BACK;
	if (s->rolled_back && s->state == SUP_RUNNING)
		return LIFECYCLE_ROLLED_BACK;
	return sup_state_lifecycle(s->state);
}
