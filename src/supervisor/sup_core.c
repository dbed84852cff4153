/* sup_core: the supervisor's record keeping: events (log line + events.jsonl), the status document
 * (rewritten atomically, only when it changed), both written off the loop in grouped flushes on the worker
 * thread (a burst of events costs one fsync), the lifecycle state it shows, timers, and the supervisor's own time
 * (a heartbeat that notices the loop's stalls). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <systemd/sd-journal.h>

#include "redact.h"
#include "store.h"
#include "sup_core.h"
#include "sup_observe.h"
#include "sup_stop_budget.h"
#include "worker.h"

/* events kept in memory while the volume does not take them */
#define PENDING_EVENTS_MAX 256

static void schedule_flush(struct supervisor *s);

/* At most PENDING_EVENTS_MAX events wait for the volume: the oldest beyond go, counted as dropped. */
static void trim_pending_events(struct supervisor *s)
{
	while (s->pending_events.n > PENDING_EVENTS_MAX) {
		free(s->pending_events.v[0]);
		memmove(s->pending_events.v, s->pending_events.v + 1, s->pending_events.n * sizeof(char *));
		s->pending_events.n--;
		s->events_dropped++;
	}
}

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
	if (s->notify.journald)
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
	/* appended at the end of this loop iteration, with every other event of it: one write, one fdatasync */
	strv_push_take(&s->pending_events, line);
	trim_pending_events(s);
	schedule_flush(s);
}

void sup_error_set(struct supervisor *s, enum status_error_source src, const char *message)
{
	status_error_set(&s->status, src, message, (int64_t)(now_realtime() / USEC_PER_MSEC));
}

void sup_warning_set(struct supervisor *s, enum status_warning_source src, const char *message)
{
	status_warning_set(&s->status, src, message, (int64_t)(now_realtime() / USEC_PER_MSEC));
}

void sup_warning_clear(struct supervisor *s, enum status_warning_source src)
{
	status_warning_set(&s->status, src, NULL, 0);
}

void sup_error_clear(struct supervisor *s, enum status_error_source src)
{
	status_error_set(&s->status, src, NULL, 0);
}

const char *sup_error(const struct supervisor *s, enum status_error_source src)
{
	return (unsigned)src < STATUS_ERR_MAX ? s->status.errors[src].message : NULL;
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
		if (s->notify.journald)
			sd_journal_send("MESSAGE=%s", why, "PRIORITY=3", "SYSLOG_IDENTIFIER=flinklet",
			                "FLINKLET_EVENT=VolumeWriteFailed", "FLINKLET_JOB_ID=%s", s->job_id, NULL);
		else
			log_error("%s", why);
		sup_error_set(s, STATUS_ERR_VOLUME, why);
		free(why);
		return;
	}
	if (s->volume_errno == 0)
		return;
	if (s->volume_failed_file && strcmp(s->volume_failed_file, file))
		return; /* another file went through: the one that failed has not yet */
	int was = s->volume_errno;
	char *what = s->volume_failed_file;
	s->volume_errno = 0;
	s->volume_failed_file = NULL;
	if (sup_error(s, STATUS_ERR_VOLUME)) {
		sup_error_clear(s, STATUS_ERR_VOLUME);
		/* the copy just written was rendered while the error stood: replaced with the next flush, not left
		 * saying so until the status next changes */
		s->status_dirty = true;
	}
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
	s->status_dirty = true;
	schedule_flush(s);
}

void sup_set_job_state(struct supervisor *s, const char *state)
{
	if (s->status.job_state && state && !strcmp(s->status.job_state, state))
		return;
	status_set_string(&s->status.job_state, state);
	s->status.update_time_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
}

void sup_forget_job_state(struct supervisor *s)
{
	status_set_string(&s->status.job_state, NULL);
}

void sup_set_intent(struct supervisor *s, const char *intent)
{
	status_set_string(&s->status.intent, intent);
	sup_write_status(s);
}

void sup_set_lifecycle(struct supervisor *s, enum lifecycle_state ls)
{
	s->status.lifecycle = ls;
}

void sup_record_job_id(struct supervisor *s)
{
	memcpy(s->status.job_id, s->job_id, sizeof(s->status.job_id));
}

/* ---- the volume's records, written off the loop ----
 *
 * Events and the status document are kept in memory and written by one flush at the end of the loop iteration
 * that recorded them (a defer source): the event lines with one write and one fdatasync, status.json replaced
 * once (temp, fsync, rename, fsync of the directory) with its latest text. The flush runs on the worker thread,
 * one at a time: what is recorded while one runs goes with the next. So the loop never waits on the volume, and a
 * burst of events costs one fsync. Where an action must not go before its record is on the volume (the intent
 * before a launch or a stop-with-savepoint), sup_after_sync hands it to the end of the flush that carries the
 * record; the loop goes on meanwhile. Only the exit waits (sup_sync). */

struct flush {
	uint64_t seq; /* the how-many-th flush: the waiters registered before it started are served by its end */
	char *state_dir;
	struct strv lines; /* events to append, in order */
	char *status;      /* status.json's new text, or NULL */
	int events_r, status_r;
	struct supervisor *s;
};

static void flush_run(void *arg)
{
	struct flush *f = arg;
	f->events_r = f->lines.n ? store_append_events(f->state_dir, f->lines.v, f->lines.n) : 0;
	if (f->status) {
		char *path = path_join(f->state_dir, "status.json");
		f->status_r = write_file_atomic(path, f->status, strlen(f->status));
		free(path);
	}
}

/* Runs, in order, the waiters whose records went with flush number upto or an earlier one. Each is taken off the
 * list before it runs: it may record (and register) more. */
static void fire_waiters(struct supervisor *s, uint64_t upto)
{
	while (s->sync_waiters && s->sync_waiters->need <= upto) {
		struct sync_waiter *w = s->sync_waiters;
		s->sync_waiters = w->next;
		w->fn(s, w->arg);
		free(w);
	}
}

static void flush_done(void *arg)
{
	struct flush *f = arg;
	struct supervisor *s = f->s;
	s->flushing = false;
	bool had_lines = f->lines.n > 0, had_status = f->status != NULL;
	if (f->events_r < 0) {
		/* not appended: they go first with the next flush, in order, before what came since */
		struct strv back = {0};
		for (size_t i = 0; i < f->lines.n; i++)
			strv_push_take(&back, f->lines.v[i]);
		for (size_t i = 0; i < s->pending_events.n; i++)
			strv_push_take(&back, s->pending_events.v[i]);
		free(f->lines.v);
		free(s->pending_events.v);
		s->pending_events = back;
		trim_pending_events(s);
	} else {
		strv_free(&f->lines);
	}
	if (f->status) {
		if (f->status_r == 0) {
			free(s->last_written);
			s->last_written = f->status;
		} else {
			free(f->status);
			s->status_dirty =
			    true; /* tried again with the next flush (with the status error it gets now) */
		}
	}
	int events_r = f->events_r, status_r = f->status_r;
	uint64_t seq = f->seq;
	free(f->state_dir);
	free(f);
	if (had_lines || events_r < 0)
		sup_volume_write(s, "events.jsonl", events_r);
	if (had_status)
		sup_volume_write(s, "status.json", status_r);
	/* the actions that waited for what this flush wrote (or tried to: a failing volume does not hold them) */
	fire_waiters(s, seq);
	/* what was recorded meanwhile, and waiters registered since; a failing volume is not retried until something
	 * new is recorded */
	if (s->sync_waiters || ((s->pending_events.n || s->status_dirty) && events_r == 0 && status_r == 0))
		schedule_flush(s);
}

bool sup_status_recorded(const struct supervisor *s, const char *text)
{
	return !s->status_dirty && s->last_written && !strcmp(text, s->last_written);
}

/* What the next flush writes, taken from the supervisor (NULL: nothing to write). */
static struct flush *flush_take(struct supervisor *s)
{
	char *text = NULL;
	if (!s->state_dir)
		return NULL;
	if (s->status_dirty) {
		s->status_dirty = false;
		text = status_render(&s->status);
		if (s->last_written && !strcmp(text, s->last_written)) {
			free(text);
			text = NULL;
		}
	}
	/* nothing to write: still a flush (an empty one) when an action waits, so that it runs after every job
	 * handed to the worker before it (a demotion's rename, a new job id) */
	if (!text && !s->pending_events.n && !s->sync_waiters)
		return NULL;
	struct flush *f = xcalloc(1, sizeof(*f));
	f->seq = ++s->flush_started;
	f->s = s;
	f->state_dir = xstrdup(s->state_dir);
	f->lines = s->pending_events;
	s->pending_events = (struct strv){0};
	f->status = text;
	return f;
}

static int on_flush(sd_event_source *src, void *userdata)
{
	struct supervisor *s = userdata;
	if (s->flushing)
		return 0; /* the running flush's end schedules the next */
	struct flush *f = flush_take(s);
	if (!f)
		return 0;
	s->flushing = true;
	worker_submit(s->worker, flush_run, flush_done, f);
	return 0;
}

static void schedule_flush(struct supervisor *s)
{
	if (s->final_sync)
		return; /* sync_until takes what is left, round by round */
	if (!s->worker || !s->flush_source) {
		sup_sync(s); /* before the loop runs (and after it): written at once */
		return;
	}
	sd_event_source_set_enabled(s->flush_source, SD_EVENT_ONESHOT);
}

void sup_sync(struct supervisor *s)
{
	/* the flush in flight first (its end may put events back), then what is left, on this thread: again while
	 * writing records something new (VolumeWritable), not again when the volume refuses */
	worker_drain(s->worker);
	for (int round = 0; round < 3; round++) {
		struct flush *f = flush_take(s);
		if (!f)
			return;
		s->flushing = true;
		flush_run(f);
		bool ok = f->events_r == 0 && f->status_r == 0;
		flush_done(f);
		if (!ok)
			return;
	}
}

/* sup_sync bounded by a CLOCK_MONOTONIC deadline: the flushes go to the worker and this thread waits for them
 * until then. false: the volume has not taken them by the deadline (a job is still running on the worker). */
static bool sync_until(struct supervisor *s, usec_t deadline)
{
	s->final_sync = true;
	if (!worker_drain_until(s->worker, deadline))
		return false;
	for (int round = 0; round < 3; round++) {
		struct flush *f = flush_take(s);
		if (!f)
			break;
		s->flushing = true;
		worker_submit(s->worker, flush_run, flush_done, f);
		if (!worker_drain_until(s->worker, deadline))
			return false;
		if (s->volume_errno)
			break; /* the volume refuses: not again */
	}
	s->final_sync = false;
	return true;
}

void sup_after_sync(struct supervisor *s, sup_sync_fn fn, uintptr_t arg)
{
	struct sync_waiter *w = xcalloc(1, sizeof(*w));
	/* the next flush to start takes every record made so far, and is handed to the worker after every job given
	 * to it so far */
	w->need = s->flush_started + 1;
	w->fn = fn;
	w->arg = arg;
	struct sync_waiter **tail = &s->sync_waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	schedule_flush(s);
}

/* ---- other files replaced off the loop (the stable spec, the autoscaler's state) ---- */

struct file_write {
	struct supervisor *s;
	char *path, *text, *what;
	int r;
};

static void file_write_run(void *arg)
{
	struct file_write *w = arg;
	char *dir = path_dirname(w->path);
	w->r = mkdir_p(dir);
	if (w->r == 0)
		w->r = write_file_atomic(w->path, w->text, strlen(w->text));
	free(dir);
}

static void file_write_done(void *arg)
{
	struct file_write *w = arg;
	sup_volume_write(w->s, w->what, w->r);
	free(w->path);
	free(w->text);
	free(w->what);
	free(w);
}

void sup_write_file(struct supervisor *s, const char *path, char *text, const char *what)
{
	struct file_write *w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->path = xstrdup(path);
	w->text = text;
	w->what = xstrdup(what);
	worker_submit(s->worker, file_write_run, file_write_done, w);
}

/* ---- a rename or removal on the volume, off the loop ---- */

/* The metadata work itself (a rename, an unlink) waits on the volume as an fsync does: on a network volume it is a
 * round trip, held as long as the server holds it. So it runs on the worker, in the order it was asked for, and the
 * path stays "busy" (sup_volume_busy) until its done callback: whoever chooses among the directory's entries
 * meanwhile (a launch's restore point, its class-data-sharing archive) passes it over. */
struct volume_op {
	struct supervisor *s;
	char *from, *to; /* to NULL: unlink */
	char *busy;      /* the entry in s->volume_busy */
	sup_volume_done_fn done;
	void *arg;
	int r;
};

static void volume_op_run(void *arg)
{
	struct volume_op *o = arg;
	int q = o->to ? rename(o->from, o->to) : unlink(o->from);
	o->r = q < 0 ? -errno : fsync_parent(o->to ? o->to : o->from);
}

static void volume_op_done(void *arg)
{
	struct volume_op *o = arg;
	struct supervisor *s = o->s;
	for (size_t i = 0; i < s->volume_busy.n; i++)
		if (!strcmp(s->volume_busy.v[i], o->busy)) {
			free(s->volume_busy.v[i]);
			s->volume_busy.v[i] = s->volume_busy.v[--s->volume_busy.n];
			s->volume_busy.v[s->volume_busy.n] = NULL;
			break;
		}
	if (o->done)
		o->done(s, o->r, o->arg);
	else if (o->r < 0 && o->r != -ENOENT)
		log_warn("unable to %s %s%s%s: %s", o->to ? "rename" : "remove", o->from, o->to ? " to " : "",
		         o->to ? o->to : "", strerror(-o->r));
	free(o->from);
	free(o->to);
	free(o->busy);
	free(o);
}

void sup_volume_rename(struct supervisor *s, const char *from, const char *to, sup_volume_done_fn done, void *arg)
{
	struct volume_op *o = xcalloc(1, sizeof(*o));
	o->s = s;
	o->from = xstrdup(from);
	o->to = to ? xstrdup(to) : NULL;
	char *real = realpath(from, NULL);
	o->busy = real ? real : xstrdup(from);
	strv_push(&s->volume_busy, o->busy);
	o->done = done;
	o->arg = arg;
	worker_submit(s->worker, volume_op_run, volume_op_done, o);
}

void sup_volume_unlink(struct supervisor *s, const char *path, sup_volume_done_fn done, void *arg)
{
	sup_volume_rename(s, path, NULL, done, arg);
}

bool sup_volume_busy(const struct supervisor *s, const char *path)
{
	if (!path || s->volume_busy.n == 0)
		return false;
	char *real = realpath(path, NULL);
	bool busy = false;
	for (size_t i = 0; i < s->volume_busy.n && !busy; i++)
		busy = !strcmp(s->volume_busy.v[i], path) || (real && !strcmp(s->volume_busy.v[i], real));
	free(real);
	return busy;
}

int sup_journal_setup(struct supervisor *s)
{
	int r = worker_new(s->event, &s->worker);
	if (r < 0)
		return r;
	r = sd_event_add_defer(s->event, &s->flush_source, on_flush, s);
	if (r < 0)
		return r;
	sd_event_source_set_description(s->flush_source, "volume-flush");
	return sd_event_source_set_enabled(s->flush_source, SD_EVENT_OFF);
}

void sup_journal_free(struct supervisor *s)
{
	/* the loop is over: what waited for the volume (a launch, a stop's request) does not happen any more */
	while (s->sync_waiters) {
		struct sync_waiter *w = s->sync_waiters;
		s->sync_waiters = w->next;
		free(w);
	}
	s->flush_source = sup_disarm(s->flush_source);
	if (s->stop.signal && sup_stop_budget_armed(s) && s->worker) {
		/* a stop by signal ends within its budget (flinklet.shutdown.timeout), records or not: the platform's
		 * SIGKILL comes soon after, and a hung volume must not keep the pod from ending. The records left are
		 * lost; the volume's snapshots are as Flink left them, and the next start finds its restore point by
		 * reading them. Half a second at least, for a stop whose JVM took the whole budget. */
		usec_t now = now_monotonic(), left = sup_stop_budget_left(s, now), min = 500 * USEC_PER_MSEC;
		if (!sync_until(s, now + (left > min ? left : min))) {
			log_error("the state volume %s did not take the last records (events, status.json) within the "
			          "shutdown budget (flinklet.shutdown.timeout %s): exiting without them",
			          s->state_dir, sup_stop_budget_text(s));
			/* the worker thread is held by the volume: it cannot be joined, nor what it uses freed */
			_exit(s->exit_code);
		}
	}
	sup_sync(s);
	worker_free(s->worker);
	s->worker = NULL;
	strv_free(&s->volume_busy);
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

/* ---- the supervisor's own time ---- */

/* The heartbeat's period, and how much later than that a beat must come to be a stall: far beyond any scheduling
 * delay of a busy host and the timer's own slack, and short against every window a stall must not count in (the
 * startup and readiness timeouts, checkpoint progress: minutes). */
#define HEARTBEAT_USEC USEC_PER_SEC
#define STALL_MIN_USEC (5 * USEC_PER_SEC)

int sup_arm_deadline(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn)
{
	unsigned i = 0;
	while (i < s->clock.n_deadlines && s->clock.deadlines[i] != src)
		i++;
	if (i == s->clock.n_deadlines) {
		if (i == SUP_DEADLINES_MAX)
			abort(); /* a new deadline field wants SUP_DEADLINES_MAX raised */
		s->clock.deadlines[s->clock.n_deadlines++] = src;
	}
	return sup_arm(s, src, delay, fn);
}

usec_t sup_now(const struct supervisor *s)
{
	return now_monotonic() - s->clock.stalled;
}

/* A stall of the supervisor: every deadline still armed moves later by as long (sd_event_source_set_time also
 * takes back one that came due during the stall and waits to be dispatched in this iteration). */
static void stall_deadlines(struct supervisor *s, usec_t stall)
{
	for (unsigned i = 0; i < s->clock.n_deadlines; i++) {
		sd_event_source *src = *s->clock.deadlines[i];
		int enabled = SD_EVENT_OFF;
		uint64_t due = 0;
		if (src && sd_event_source_get_enabled(src, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
		    sd_event_source_get_time(src, &due) >= 0)
			sd_event_source_set_time(src, due + stall);
	}
}

/* The heartbeat runs before every other source of its loop iteration (the highest priority): after a stall, the
 * deadlines have moved before their own timers are dispatched, and sup_now() is right for everything that runs. */
static int on_heartbeat(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	usec_t now = now_monotonic(), last = s->clock.last_beat;
	s->clock.last_beat = now;
	sd_event_source_set_time(src, now + HEARTBEAT_USEC);
	/* (the first beat only starts the count: the set-up before the loop turns is no stall) */
	if (!last || now - last < HEARTBEAT_USEC + STALL_MIN_USEC)
		return 0;
	usec_t stall = now - last - HEARTBEAT_USEC;
	s->clock.stalled += stall;
	s->clock.stalls++;
	stall_deadlines(s, stall);
	sup_warning(s, "SupervisorStalled",
	            "the supervisor did not run for %.1f s (its container paused, SIGSTOP, a debugger, or a starved "
	            "host): it asked Flink nothing meanwhile, so the JVM's health is judged by the polls since, and "
	            "the timeouts that judge the JVM leave this time out",
	            (double)stall / USEC_PER_SEC);
	return 0;
}

int sup_clock_setup(struct supervisor *s)
{
	s->clock.last_beat = 0;
	int r = sd_event_add_time(s->event, &s->clock.heartbeat, CLOCK_MONOTONIC, now_monotonic(), 100 * USEC_PER_MSEC,
	                          on_heartbeat, s);
	if (r < 0)
		return r;
	sd_event_source_set_description(s->clock.heartbeat, "heartbeat");
	if ((r = sd_event_source_set_priority(s->clock.heartbeat, SD_EVENT_PRIORITY_IMPORTANT)) < 0)
		return r;
	return sd_event_source_set_enabled(s->clock.heartbeat, SD_EVENT_ON);
}

void sup_clock_free(struct supervisor *s)
{
	s->clock.heartbeat = sup_disarm(s->clock.heartbeat);
	s->clock.n_deadlines = 0;
}

const char *sup_upgrade_base(const struct supervisor *s)
{
	bool trial = s->reload.trial.on || s->reload.upgrading || s->reload.rolling_back;
	if (!trial || !s->reload.base.set || !spec_bool(s->spec, "kubernetes.operator.deployment.rollback.enabled"))
		return NULL;
	return s->reload.base.path;
}

bool sup_upgrade_on_trial(const struct supervisor *s)
{
	return (s->reload.trial.on || s->reload.upgrading || s->reload.rolling_back) &&
	       spec_bool(s->spec, "kubernetes.operator.deployment.rollback.enabled");
}

enum lifecycle_state sup_lifecycle(const struct supervisor *s)
{
	if (s->reload.rolling_back && (s->state == SUP_STARTING || s->state == SUP_STOPPING || s->state == SUP_BACKOFF))
		return LIFECYCLE_ROLLING_BACK;
	if (s->reload.trial.on && s->state == SUP_RUNNING) /* not proven yet */
		return s->reload.rolling_back ? LIFECYCLE_ROLLING_BACK : LIFECYCLE_DEPLOYED;
	if (s->reload.rolled_back && s->state == SUP_RUNNING)
		return LIFECYCLE_ROLLED_BACK;
	return sup_state_lifecycle(s->state);
}

const char *stop_purpose_text(enum stop_purpose p)
{
	static const char *const text[] = {"shut down", "suspend", "upgrade", "roll back"};
	return (unsigned)p < sizeof(text) / sizeof(text[0]) ? text[p] : "stop";
}

bool sup_follows_job(const struct supervisor *s)
{
	return s->state == SUP_STARTING || s->state == SUP_RUNNING || s->state == SUP_STOP_PENDING;
}

void sup_adopt_spec(struct supervisor *s, struct spec *n)
{
	if (s->spec != s->launched) {
		spec_free(s->spec);
		free(s->spec);
	}
	s->spec = n;
}
