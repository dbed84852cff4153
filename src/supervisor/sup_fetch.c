/* sup_fetch: the job's remote artifacts, its jar (spec.job.jarURI) and its SQL script (spec.job.sqlScript), one after
 * the other: each one's download on the event loop (with retries), the check of a cached or downloaded one's sha256 and
 * its move into the cache on the worker thread, where a SQL script is also split and checked (config_sql_check_file:
 * a script with an error is refused at its line and column, and no JVM is started with it), and the launch (the ready
 * callback sup_launch.c gives) once every one is in place. */
#include "sup_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts.h"
#include "config_sql.h"
#include "redact.h"
#include "store.h"

#define ARTIFACTS 2 /* the jar, then the SQL script */

static void start_fetch(struct supervisor *s);
static void fetch_failed(struct supervisor *s, const char *why, bool retry);
static int on_fetch_retry(sd_event_source *src, uint64_t usec, void *userdata);
static void go_on(struct supervisor *s);

/* The artifact the fetch is at. */
static const struct artifact *fetched(struct supervisor *s)
{
	return s->fetch.artifacts[s->fetch.which];
}

void sup_fetch_cancel(struct supervisor *s)
{
	s->fetch.active = false;
	s->fetch.gen++;
	s->fetch.retry = sup_disarm(s->fetch.retry);
}

void sup_fetch_running(struct supervisor *s)
{
	sup_error_clear(s, STATUS_ERR_FETCH);
	sup_error_clear(s, STATUS_ERR_SQL_FETCH);
}

static void fetch_failed(struct supervisor *s, const char *why, bool retry)
{
	const struct artifact *a = fetched(s);
	int64_t retries = spec_int(s->spec, "flinklet.artifacts.retries");
	if (retry && s->fetch.attempts <= retries) {
		char *shown = redact_uri(a->uri);
		log_warn("unable to fetch %s (%s); trying again (%d of %lld)", shown, why, s->fetch.attempts,
		         (long long)retries);
		free(shown);
		s->fetch.active = true;
		sup_arm(s, &s->fetch.retry, (usec_t)s->fetch.attempts * USEC_PER_SEC, on_fetch_retry);
		return;
	}
	s->fetch.active = false;
	char *shown = redact_uri(a->uri);
	char *err = xasprintf("unable to fetch the job's %s %s: %s", a->what, shown, why);
	free(shown);
	if (a->kind == ARTIFACT_SQL)
		sup_error_set(s, STATUS_ERR_SQL_FETCH, err);
	else
		sup_error_set(s, STATUS_ERR_FETCH, err);
	sup_alert(s, "ArtifactFetchFailed", "%s", err);
	free(err);
	sup_raise(s, EV_LAUNCH_FAILED);
}

/* A SQL script (downloaded, or the cached copy) with an error in it: not launched, nor kept in the cache, as a
 * download whose checksum is wrong; the launch fails and backs off, and the next one downloads it again (a script
 * mended on the server is then taken). why names the URI, the line, the column and spec.job.sqlScript. */
static void script_refused(struct supervisor *s, const char *why)
{
	s->fetch.active = false;
	char *shown = redact_uri(fetched(s)->uri);
	char *err = xasprintf("the job's SQL script %s is refused, no JVM is started with it: %s", shown, why);
	free(shown);
	sup_error_set(s, STATUS_ERR_SQL_FETCH, err);
	sup_alert(s, "SqlScriptInvalid", "%s", err);
	free(err);
	sup_raise(s, EV_LAUNCH_FAILED);
}

/* ---- the checks on the worker thread ----
 *
 * The sha256 of a cached artifact and of a download, a SQL script's split and check, and the move of a download into
 * the cache (fsync, rename, fsync of the directory), read or write the whole file on the volume: they run on the
 * worker thread, and their end comes back to the loop. A job works on its own copies (the artifact may be planned
 * anew meanwhile); its end is used only while the fetch it belongs to is current (fetch.gen, fetch.active). */

struct artifact_job {
	struct supervisor *s;
	unsigned gen;
	struct artifact a; /* kind, sha_key, local_path and sha256 only, copied */
	char *shown;       /* the URI, redacted: where a SQL script's problems are said */
	char *tmp;         /* the download to move into the cache, or NULL: check the cache */
	bool cached;
	int r;
	bool refused;    /* a SQL script with an error in it (err says where): removed from the cache */
	char sha256[65]; /* a SQL script's, once checked */
	char *err;
};

static struct artifact_job *artifact_job_new(struct supervisor *s, char *tmp)
{
	const struct artifact *a = fetched(s);
	struct artifact_job *j = xcalloc(1, sizeof(*j));
	j->s = s;
	j->gen = s->fetch.gen;
	j->a.kind = a->kind;
	j->a.sha_key = a->sha_key;
	j->a.local_path = xstrdup(a->local_path);
	j->a.sha256 = a->sha256 ? xstrdup(a->sha256) : NULL;
	j->shown = redact_uri(a->uri);
	j->tmp = tmp;
	return j;
}

static bool artifact_job_end(struct artifact_job *j)
{
	bool current_fetch = j->gen == j->s->fetch.gen && j->s->fetch.active;
	free(j->a.local_path);
	free((char *)j->a.sha256);
	free(j->shown);
	free(j->tmp);
	free(j->err);
	free(j);
	return current_fetch;
}

/* A SQL script in the cache split and checked; one with an error leaves the cache. */
static void check_script(struct artifact_job *j)
{
	if (j->a.kind != ARTIFACT_SQL)
		return;
	j->r = config_sql_check_file(j->a.local_path, j->shown, j->sha256, &j->err);
	if (j->r < 0) {
		j->refused = true;
		if (unlink(j->a.local_path) == 0)
			fsync_parent(j->a.local_path);
	}
}

static void check_run(void *arg)
{
	struct artifact_job *j = arg;
	j->cached = artifact_cached(&j->a);
	if (j->cached)
		check_script(j);
}

/* What a job found, taken on the loop before the job is freed. */
struct job_end {
	bool current, cached, refused;
	int r;
	char *err;
	enum artifact_kind kind;
	char sha256[65];
};

static struct job_end take_end(struct artifact_job *j)
{
	struct job_end e = {.cached = j->cached, .refused = j->refused, .r = j->r, .err = j->err, .kind = j->a.kind};
	memcpy(e.sha256, j->sha256, sizeof(e.sha256));
	j->err = NULL;
	e.current = artifact_job_end(j);
	return e;
}

/* The artifact is in place and checked: a SQL script's sha256 for the runner, and on to the next. */
static void artifact_ready(struct supervisor *s, const struct job_end *e)
{
	if (e->kind == ARTIFACT_SQL)
		memcpy(s->fetch.sql_sha256, e->sha256, sizeof(s->fetch.sql_sha256));
	go_on(s);
}

static void check_done(void *arg)
{
	struct artifact_job *j = arg;
	struct supervisor *s = j->s;
	struct job_end e = take_end(j);
	if (e.current) {
		if (!e.cached)
			start_fetch(s);
		else if (e.refused)
			script_refused(s, e.err);
		else
			artifact_ready(s, &e);
	}
	free(e.err);
}

static void commit_run(void *arg)
{
	struct artifact_job *j = arg;
	j->r = artifact_commit(&j->a, j->tmp, &j->err);
	free(j->tmp);
	j->tmp = NULL;
	if (j->r == 0)
		check_script(j);
}

static void commit_done(void *arg)
{
	struct artifact_job *j = arg;
	struct supervisor *s = j->s;
	struct job_end e = take_end(j);
	if (!e.current) {
		free(e.err);
		return;
	}
	if (e.refused) {
		script_refused(s, e.err);
	} else if (e.r < 0) {
		fetch_failed(s, e.err, false); /* a wrong checksum does not get better by asking again */
	} else {
		const struct artifact *a = fetched(s);
		char *shown = redact_uri(a->uri);
		sup_event(s, "ArtifactFetched", "fetched %s into %s", shown, a->local_path);
		free(shown);
		artifact_ready(s, &e);
	}
	free(e.err);
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
	worker_submit(s->worker, commit_run, commit_done, artifact_job_new(s, tmp));
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
	const struct artifact *a = fetched(s);
	t->tmp = xasprintf("%s.part.%ld.%u.%d", a->local_path, (long)getpid(), s->fetch.gen, s->fetch.attempts);
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
	    .url = a->url,
	    .timeout = spec_duration(s->spec, "flinklet.artifacts.timeout"),
	    .connect_timeout = spec_duration(s->spec, "flinklet.artifacts.connect-timeout"),
	    .max_bytes = max_bytes,
	    .protocols = a->protocols,
	    .ca_file = spec_get(s->spec, "flinklet.artifacts.ca-file"),
	    .aws_sigv4 = a->sigv4,
	    .userpwd = a->userpwd,
	    .headers = (const char *const *)a->headers.v,
	};
	char *shown = redact_uri(a->uri);
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

/* On to the next remote artifact (the jar, then the SQL script): its cached copy checked (a SQL script always is, it
 * is split and checked; a jar when it has a sha256) or it downloaded; once none is left, the launch. Returns ready's
 * result when it was called (*readied), else 0. */
static int next_artifact(struct supervisor *s, bool *readied)
{
	s->fetch.active = false;
	s->fetch.attempts = 0;
	*readied = false;
	for (;;) {
		if (++s->fetch.which >= ARTIFACTS) {
			*readied = true;
			return s->fetch.ready(s);
		}
		const struct artifact *a = fetched(s);
		if (!a->remote)
			continue;
		if (access(a->local_path, R_OK) < 0) {
			start_fetch(s);
			return 0;
		}
		if (a->sha256 || a->kind == ARTIFACT_SQL) {
			/* read whole for its checksum, or split and checked: on the worker thread */
			s->fetch.active = true;
			worker_submit(s->worker, check_run, check_done, artifact_job_new(s, NULL));
			return 0;
		}
	}
}

/* An artifact is in place (from the worker, or a download): the next one, or the launch. */
static void go_on(struct supervisor *s)
{
	bool readied;
	if (next_artifact(s, &readied) < 0 && readied)
		sup_raise(s, EV_LAUNCH_FAILED);
}

int sup_fetch_artifacts(struct supervisor *s, const struct artifact *jar, const struct artifact *sql,
                        int (*ready)(struct supervisor *s))
{
	s->fetch.artifacts[0] = jar;
	s->fetch.artifacts[1] = sql;
	s->fetch.sql_sha256[0] = '\0';
	s->fetch.ready = ready;
	s->fetch.which = -1;
	bool readied;
	int r = next_artifact(s, &readied);
	if (readied)
		return r;
	return s->fetch.active || s->state != SUP_STARTING ? 0 : -EIO;
}
