/* sup_fetch: the job's jar when spec.job.jarURI is remote: its download on the event loop (with retries), the
 * check of a cached or downloaded jar's sha256 and its move into the cache on the worker thread, and the launch
 * (the ready callback sup_launch.c gives) once the jar is in place. */
#include "sup_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts.h"
#include "redact.h"
#include "store.h"

static void start_fetch(struct supervisor *s);
static void fetch_failed(struct supervisor *s, const char *why, bool retry);
static int on_fetch_retry(sd_event_source *src, uint64_t usec, void *userdata);

void sup_fetch_cancel(struct supervisor *s)
{
	s->fetch.active = false;
	s->fetch.gen++;
	s->fetch.retry = sup_disarm(s->fetch.retry);
}

void sup_fetch_running(struct supervisor *s)
{
	sup_error_clear(s, STATUS_ERR_FETCH);
}

static void fetch_failed(struct supervisor *s, const char *why, bool retry)
{
	int64_t retries = spec_int(s->spec, "flinklet.artifacts.retries");
	if (retry && s->fetch.attempts <= retries) {
		char *shown = redact_uri(s->spec->job.jar_uri);
		log_warn("unable to fetch %s (%s); trying again (%d of %lld)", shown, why, s->fetch.attempts,
		         (long long)retries);
		free(shown);
		s->fetch.active = true;
		sup_arm(s, &s->fetch.retry, (usec_t)s->fetch.attempts * USEC_PER_SEC, on_fetch_retry);
		return;
	}
	s->fetch.active = false;
	char *shown = redact_uri(s->spec->job.jar_uri);
	char *err = xasprintf("unable to fetch the job's jar %s: %s", shown, why);
	free(shown);
	sup_error_set(s, STATUS_ERR_FETCH, err);
	sup_alert(s, "ArtifactFetchFailed", "%s", err);
	free(err);
	sup_raise(s, EV_LAUNCH_FAILED);
}

/* ---- the jar's checks on the worker thread ----
 *
 * The sha256 of a cached jar and of a download, and the move of a download into the cache (fsync, rename, fsync
 * of the directory), read or write the whole jar on the volume: they run on the worker thread, and their end
 * comes back to the loop. A job works on its own copies (the artifact may be planned anew meanwhile); its end is
 * used only while the fetch it belongs to is current (fetch.gen, fetch.active). */

struct jar_job {
	struct supervisor *s;
	unsigned gen;
	struct artifact a; /* local_path and sha256 only, copied */
	char *tmp;         /* the download to move into the cache, or NULL: check the cache */
	bool cached;
	int r;
	char *err;
};

static struct jar_job *jar_job_new(struct supervisor *s, char *tmp)
{
	struct jar_job *j = xcalloc(1, sizeof(*j));
	j->s = s;
	j->gen = s->fetch.gen;
	j->a.local_path = xstrdup(s->launch.jar.local_path);
	j->a.sha256 = s->launch.jar.sha256 ? xstrdup(s->launch.jar.sha256) : NULL;
	j->tmp = tmp;
	return j;
}

static bool jar_job_end(struct jar_job *j)
{
	bool current = j->gen == j->s->fetch.gen && j->s->fetch.active;
	free(j->a.local_path);
	free((char *)j->a.sha256);
	free(j->tmp);
	free(j->err);
	free(j);
	return current;
}

static void check_run(void *arg)
{
	struct jar_job *j = arg;
	j->cached = artifact_cached(&j->a);
}

static void check_done(void *arg)
{
	struct jar_job *j = arg;
	struct supervisor *s = j->s;
	bool cached = j->cached;
	if (!jar_job_end(j))
		return;
	if (!cached) {
		start_fetch(s);
		return;
	}
	s->fetch.active = false;
	if (s->fetch.ready(s) < 0)
		sup_raise(s, EV_LAUNCH_FAILED);
}

static void commit_run(void *arg)
{
	struct jar_job *j = arg;
	j->r = artifact_commit(&j->a, j->tmp, &j->err);
	free(j->tmp);
	j->tmp = NULL;
}

static void commit_done(void *arg)
{
	struct jar_job *j = arg;
	struct supervisor *s = j->s;
	int r = j->r;
	char *err = j->err;
	j->err = NULL;
	if (!jar_job_end(j)) {
		free(err);
		return;
	}
	if (r < 0) {
		fetch_failed(s, err, false); /* a wrong checksum does not get better by asking again */
		free(err);
		return;
	}
	s->fetch.active = false;
	char *shown = redact_uri(s->spec->job.jar_uri);
	sup_event(s, "ArtifactFetched", "fetched %s into %s", shown, s->launch.jar.local_path);
	free(shown);
	if (s->fetch.ready(s) < 0)
		sup_raise(s, EV_LAUNCH_FAILED);
}

struct fetch_ticket {
	struct supervisor *s;
	unsigned gen;
	FILE *out;
	char *tmp;
	uint64_t max_bytes; /* flinklet.artifacts.max-size, for the message */
};

/* An option's value for a message (always set once the configuration is loaded). */
static const char *shown_option(const struct spec *spec, const char *key)
{
	const char *v = spec_get(spec, key);
	return v ? v : "?";
}

/* Why a download failed, naming the option whose limit it ran into (with its value), and whether asking again may
 * help: not when the answer is too large or a redirect leaves the allowed schemes. */
static char *fetch_failure(const struct spec *spec, const struct download_result *res, uint64_t max_bytes, bool *retry)
{
	*retry = true;
	const char *curl_says = res->error ? res->error : "";
	switch (res->limit) {
	case DOWNLOAD_TIMEOUT:
		return xasprintf("gave up after flinklet.artifacts.timeout (%s), the budget of one download, with %llu "
		                 "bytes received (%s)",
		                 shown_option(spec, "flinklet.artifacts.timeout"), (unsigned long long)res->received,
		                 curl_says);
	case DOWNLOAD_CONNECT_TIMEOUT:
		return xasprintf("no connection within flinklet.artifacts.connect-timeout (%s) (%s)",
		                 shown_option(spec, "flinklet.artifacts.connect-timeout"), curl_says);
	case DOWNLOAD_TOO_LARGE:
		*retry = false;
		if (res->announced >= 0 && (uint64_t)res->announced > max_bytes)
			return xasprintf("the server announces %lld bytes (Content-Length), more than "
			                 "flinklet.artifacts.max-size (%s, %llu bytes): refused before the body",
			                 (long long)res->announced, shown_option(spec, "flinklet.artifacts.max-size"),
			                 (unsigned long long)max_bytes);
		return xasprintf("more than flinklet.artifacts.max-size (%s, %llu bytes) arrived: cut off there",
		                 shown_option(spec, "flinklet.artifacts.max-size"), (unsigned long long)max_bytes);
	case DOWNLOAD_SCHEME_REFUSED: {
		*retry = false;
		char *to = redact_uri(res->url ? res->url : "?");
		char *why = xasprintf("redirected to \"%s\", a scheme flinklet.artifacts.allowed-schemes (\"%s\") does "
		                      "not allow: not followed",
		                      to, shown_option(spec, "flinklet.artifacts.allowed-schemes"));
		free(to);
		return why;
	}
	case DOWNLOAD_OK_OR_OTHER:
		break;
	}
	return res->error ? xstrdup(res->error) : xasprintf("HTTP status %ld", res->http_status);
}

static void on_fetched(void *userdata, const struct download_result *res)
{
	struct fetch_ticket *t = userdata;
	struct supervisor *s = t->s;
	bool ok = fclose(t->out) == 0 && !res->error && res->http_status == 200;
	char *tmp = t->tmp;
	bool current = t->gen == s->fetch.gen && s->fetch.active;
	uint64_t max_bytes = t->max_bytes;
	free(t);
	if (!current) {
		sup_volume_unlink(s, tmp, NULL, NULL);
		free(tmp);
		return;
	}
	if (!ok) {
		sup_volume_unlink(s, tmp, NULL, NULL);
		free(tmp);
		bool retry;
		char *why = fetch_failure(s->spec, res, max_bytes, &retry);
		fetch_failed(s, why, retry);
		free(why);
		return;
	}
	/* the checksum, the fsync and the rename: off the loop */
	worker_submit(s->worker, commit_run, commit_done, jar_job_new(s, tmp));
}

static int on_fetch_retry(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->fetch.retry = sup_disarm(s->fetch.retry);
	if (s->fetch.active)
		start_fetch(s);
	return 0;
}

static void start_fetch(struct supervisor *s)
{
	s->fetch.active = true;
	s->fetch.attempts++;
	char *dir = path_join(s->state_dir, "artifacts");
	mkdir_p(dir);
	free(dir);
	struct fetch_ticket *t = xcalloc(1, sizeof(*t));
	t->s = s;
	t->gen = s->fetch.gen;
	/* a name of its own per attempt: the removal of a failed attempt's file is on the worker, maybe still queued */
	t->tmp =
	    xasprintf("%s.part.%ld.%u.%d", s->launch.jar.local_path, (long)getpid(), s->fetch.gen, s->fetch.attempts);
	t->out = fopen(t->tmp, "we");
	if (!t->out) {
		char *why = xasprintf("unable to create %s: %s", t->tmp, strerror(errno));
		free(t->tmp);
		free(t);
		fetch_failed(s, why, false);
		free(why);
		return;
	}
	uint64_t max_bytes = 0;
	const char *cap = spec_get(s->spec, "flinklet.artifacts.max-size");
	if (!cap || parse_memory(cap, &max_bytes) < 0 || !max_bytes)
		max_bytes = 1ULL << 31; /* checked at load: not reached */
	t->max_bytes = max_bytes;
	struct download d = {
	    .url = s->launch.jar.url,
	    .timeout = spec_duration(s->spec, "flinklet.artifacts.timeout"),
	    .connect_timeout = spec_duration(s->spec, "flinklet.artifacts.connect-timeout"),
	    .max_bytes = max_bytes,
	    .protocols = s->launch.jar.protocols,
	    .ca_file = spec_get(s->spec, "flinklet.artifacts.ca-file"),
	    .aws_sigv4 = s->launch.jar.sigv4,
	    .userpwd = s->launch.jar.userpwd,
	    .headers = (const char *const *)s->launch.jar.headers.v,
	};
	char *shown = redact_uri(s->spec->job.jar_uri);
	sup_event(s, "ArtifactFetching", "fetching %s (attempt %d)", shown, s->fetch.attempts);
	free(shown);
	if (rest_download(s->rest, &d, t->out, on_fetched, t) < 0) {
		fclose(t->out);
		sup_volume_unlink(s, t->tmp, NULL, NULL);
		free(t->tmp);
		free(t);
		fetch_failed(s, "unable to start the download", true);
	}
}

int sup_fetch_jar(struct supervisor *s, int (*ready)(struct supervisor *s))
{
	s->fetch.ready = ready;
	s->fetch.attempts = 0;
	if (access(s->launch.jar.local_path, R_OK) < 0) {
		start_fetch(s);
	} else if (s->launch.jar.sha256) {
		/* a cached jar is read whole for its checksum: on the worker thread */
		s->fetch.active = true;
		worker_submit(s->worker, check_run, check_done, jar_job_new(s, NULL));
	} else {
		return ready(s);
	}
	return s->fetch.active || s->state != SUP_STARTING ? 0 : -EIO;
}
