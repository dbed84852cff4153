/* sup_core: the supervisor's record keeping: events (log line + events.jsonl), the status document
 * (rewritten atomically, only when it changed), the lifecycle state it shows, and timers. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <systemd/sd-journal.h>

#include "store.h"
#include "sup.h"

static void sup_event_v(struct supervisor *s, enum log_level level, const char *type, const char *fmt, va_list ap)
{
	struct strbuf msg = {0};
	strbuf_vappendf(&msg, fmt, ap);
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
	cJSON_AddStringToObject(o, "level", level >= LOG_LEVEL_ERROR ? "Warning" : "Normal");
	cJSON_AddStringToObject(o, "message", msg.buf);
	char *line = cJSON_PrintUnformatted(o);
	int r = store_append_event(s->state_dir, line);
	if (r < 0)
		log_error("unable to append to events.jsonl: %s", strerror(-r));
	free(line);
	cJSON_Delete(o);
	strbuf_free(&msg);
}

void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_INFO, type, fmt, ap);
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
	if (r < 0) {
		log_error("unable to write status.json: %s", strerror(-r));
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
