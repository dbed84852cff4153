/* sup_flinkmetrics: Flink's own metrics through flinklet's /metrics (src/supervisor/sup_flinkmetrics.h).
 * A launch gets the reporter's port (a free one of 127.0.0.1 below the kernel's ephemeral range, where only servers
 * bind; the reporter binds it when the JVM starts, on loopback only), and a scrape that names another job (a job_id
 * label not this supervisor's: another JVM's reporter on that port) is refused as a bad one. While that JVM runs, every
 * poll of the job asks GET /metrics of it when the last scrape is FLINKMETRICS_INTERVAL_USEC old, with its own client
 * (rest_stream on a multi handle of the loop, so the loop never waits), bounded in time and size. The answer is kept
 * only when promtext finds it well-formed as a whole and free of flinklet's names, and served only while it is the last
 * scrape's and its JVM runs: a reporter that answers garbage, slowly, too much or not at all takes Flink's families out
 * of /metrics (flinklet_flink_metrics_up 0) and leaves flinklet's own. Memory: the kept scrape (up to 4 MiB) is one
 * shared buffer (shbuf) that every /metrics response sends from without a copy, however many clients read it and
 * however slowly. A scrape that replaces it while a response still sends it leaves it as the previous one (alive until
 * that response is done), and no new scrape starts while a previous one lives: at most two scrapes are in memory (the
 * kept one and the one being fetched, or it and the previous one), whatever the clients do; a client that reads slowly
 * only delays the next scrape. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flinkconf.h"
#include "promtext.h"
#include "store.h"
#include "sup_flinkmetrics.h"

/* Why a launch with spec gets no reporter (malloc'd), or NULL. */
static char *off_reason(const struct supervisor *s, const struct spec *spec)
{
	if (!spec_bool(spec, "flinklet.metrics.flink"))
		return xstrdup("flinklet.metrics.flink is false");
	const char *key = flinkconf_user_reporter_key(spec);
	if (key)
		return xasprintf("the configuration sets %s: Flink's reporters are the user's (scrape them where they "
		                 "listen), flinklet's /metrics has its own figures only",
		                 key);
	if (s->lib_dir) {
		char *jar = path_join(s->lib_dir, FLINKCONF_REPORTER_JAR);
		bool there = access(jar, R_OK) == 0;
		free(jar);
		if (!there)
			return xasprintf("%s has no %s (make flink-lib puts it there; the image has it)", s->lib_dir,
			                 FLINKCONF_REPORTER_JAR);
	}
	return NULL;
}

/* Whether port of 127.0.0.1 can be bound now. */
static bool port_free(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* A port of 127.0.0.1 free now, below the kernel's ephemeral range (ip_local_port_range): there only servers bind,
 * while any outgoing connection (flinklet's own REST polls, thousands an hour) may take a port of the range between
 * this choice and the reporter's bind. A random start, so that two supervisors on one host rarely probe the same
 * ports. Returns the port or -EADDRINUSE. */
static int free_loopback_port(void)
{
	int first = 32768;
	char *text = NULL;
	if (read_file("/proc/sys/net/ipv4/ip_local_port_range", 64, &text, NULL) == 0) {
		int v = atoi(text);
		if (v > 1024 && v < 65536)
			first = v;
	}
	free(text);
	int low = first > 11000 ? 10000 : first / 2, span = first - low;
	unsigned start = (unsigned)getpid() ^ (unsigned)now_monotonic();
	for (int i = 0; i < span && i < 4096; i++) {
		int port = low + (int)((start + (unsigned)i) % (unsigned)span);
		if (port_free(port))
			return port;
	}
	return -EADDRINUSE;
}

int sup_flinkmetrics_launch_port(struct supervisor *s, const struct spec *spec)
{
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	char *off = off_reason(s, spec);
	int port = 0;
	if (!off) {
		port = free_loopback_port();
		if (port <= 0) {
			off = xasprintf("no free loopback port for Flink's reporter: %s", strerror(-port));
			port = 0;
		}
	}
	if (off && (!fm->off || strcmp(off, fm->off)))
		log_info("Flink's metrics are not served on flinklet's /metrics: %s", off);
	else if (!off && (fm->off || !fm->port))
		log_info("Flink's metrics on flinklet's /metrics: each JVM gets flinklet's Prometheus reporter on "
		         "127.0.0.1 (port %d for this one), scraped at most every %d s while the job runs",
		         port, (int)(FLINKMETRICS_INTERVAL_USEC / USEC_PER_SEC));
	free(fm->off);
	fm->off = off;
	fm->port = port;
	char *said = off ? xasprintf("off: %s", off) : xasprintf("127.0.0.1:%d", port);
	status_set_string(&s->status.flink_metrics, said);
	free(said);
	if (!fm->timeline.cap)
		recent_init(&fm->timeline, FLINKMETRICS_TIMELINE);
	return port;
}

/* ---- what a good scrape says, for the status page: per vertex and for the job's checkpoints ---- */

#define TIMELINE_VERTICES 32
struct vertex_sum {
	char name[128];
	double in, out, busy, backpressured; /* records/s summed over subtasks; ms/s the highest subtask's */
	bool has_in, has_out, has_busy, has_bp;
};
struct digest {
	struct vertex_sum v[TIMELINE_VERTICES];
	size_t n;
	double ck_duration, ck_size;
	bool has_duration, has_size;
	const char *job_id; /* this supervisor's job */
	char other_job[40]; /* the first job_id label of another job ("": none), cut to fit */
};

static struct vertex_sum *vertex(struct digest *d, const struct promtext_sample *sm)
{
	char name[128];
	if (!promtext_label(sm, "task_name", name, sizeof(name)))
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].name, name))
			return &d->v[i];
	if (d->n == TIMELINE_VERTICES)
		return NULL;
	struct vertex_sum *v = &d->v[d->n++];
	memcpy(v->name, name, sizeof(name));
	return v;
}

static void take_sample(void *userdata, const struct promtext_sample *sm)
{
	struct digest *d = userdata;
	char job[40];
	if (!d->other_job[0] && promtext_label(sm, "job_id", job, sizeof(job)) && strcmp(job, d->job_id))
		snprintf(d->other_job, sizeof(d->other_job), "%s", job);
	if (!isfinite(sm->value))
		return;
	if (promtext_is(sm, "flink_jobmanager_job_lastCheckpointDuration")) {
		d->ck_duration = sm->value;
		d->has_duration = true;
		return;
	}
	if (promtext_is(sm, "flink_jobmanager_job_lastCheckpointSize")) {
		d->ck_size = sm->value;
		d->has_size = true;
		return;
	}
	static const char task[] = "flink_taskmanager_job_task_";
	if (sm->name_len <= sizeof(task) - 1 || memcmp(sm->name, task, sizeof(task) - 1))
		return;
	const char *m = sm->name + sizeof(task) - 1;
	size_t n = sm->name_len - (sizeof(task) - 1);
	bool in = n == 21 && !memcmp(m, "numRecordsInPerSecond", n),
	     out = n == 22 && !memcmp(m, "numRecordsOutPerSecond", n);
	bool busy = n == 19 && !memcmp(m, "busyTimeMsPerSecond", n);
	bool bp = n == 28 && !memcmp(m, "backPressuredTimeMsPerSecond", n);
	if (!in && !out && !busy && !bp)
		return;
	struct vertex_sum *v = vertex(d, sm);
	if (!v)
		return;
	if (in) {
		v->in += sm->value;
		v->has_in = true;
	} else if (out) {
		v->out += sm->value;
		v->has_out = true;
	} else if (busy) {
		v->busy = v->has_busy && v->busy > sm->value ? v->busy : sm->value;
		v->has_busy = true;
	} else {
		v->backpressured = v->has_bp && v->backpressured > sm->value ? v->backpressured : sm->value;
		v->has_bp = true;
	}
}

static void add_number(cJSON *o, const char *key, bool has, double v)
{
	if (has)
		cJSON_AddNumberToObject(o, key, v);
}

static void record_timeline(struct sup_flinkmetrics *fm, const struct digest *d, int64_t t_ms)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddNumberToObject(e, "t", (double)t_ms);
	cJSON *vs = cJSON_AddObjectToObject(e, "vertices");
	for (size_t i = 0; i < d->n; i++) {
		cJSON *v = cJSON_AddObjectToObject(vs, d->v[i].name);
		add_number(v, "recordsInPerSecond", d->v[i].has_in, d->v[i].in);
		add_number(v, "recordsOutPerSecond", d->v[i].has_out, d->v[i].out);
		add_number(v, "busyTimeMsPerSecond", d->v[i].has_busy, d->v[i].busy);
		add_number(v, "backPressuredTimeMsPerSecond", d->v[i].has_bp, d->v[i].backpressured);
	}
	add_number(e, "lastCheckpointDuration", d->has_duration, d->ck_duration);
	add_number(e, "lastCheckpointSize", d->has_size, d->ck_size);
	char *text = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	recent_push(&fm->timeline, text);
	free(text);
}

/* ---- the scrape ---- */

/* The kept scrape leaves: freed, or kept as prev while a /metrics response still sends it. */
static void retire(struct sup_flinkmetrics *fm)
{
	if (fm->text && shbuf_refs(fm->text) > 1 && !fm->prev)
		fm->prev = fm->text;
	else
		shbuf_unref(fm->text);
	fm->text = NULL;
}

/* Whether the previous scrape is still being sent (the next scrape waits: at most two in memory). */
static bool prev_alive(struct supervisor *s)
{
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	if (fm->prev && shbuf_refs(fm->prev) == 1) {
		shbuf_unref(fm->prev);
		fm->prev = NULL;
	}
	if (!fm->prev) {
		if (fm->held_said)
			log_info("Flink's metrics: the scrape before is sent; scraping again");
		fm->held_said = false;
		return false;
	}
	if (!fm->held_said)
		log_info("Flink's metrics: the next scrape waits until /metrics clients have read the one before (%u "
		         "responses still send it)",
		         shbuf_refs(fm->prev) - 1);
	fm->held_said = true;
	return true;
}

/* What was wrong with the scrape (taken), logged when it is news; Flink's families leave /metrics. */
static void scrape_failed(struct supervisor *s, char *what)
{
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	fm->failures++;
	retire(fm);
	/* a JVM that is still starting has no reporter yet: said once the job runs */
	if (s->state == SUP_RUNNING && (!fm->problem || strcmp(fm->problem, what) || !fm->said)) {
		fm->said = true;
		log_warn("Flink's metrics: %s (Flink's families are left out of /metrics until a scrape is good)",
		         what);
	}
	free(fm->problem);
	fm->problem = what;
}

static bool on_header(void *userdata, const char *line, size_t len)
{
	return true;
}

static bool on_data(void *userdata, const char *data, size_t len)
{
	struct supervisor *s = userdata;
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	if (fm->body.len + len > FLINKMETRICS_MAX_BYTES) {
		fm->too_large = true;
		return false;
	}
	strbuf_appendn(&fm->body, data, len);
	return true;
}

static void on_done(void *userdata, long code, const char *error)
{
	struct supervisor *s = userdata;
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	fm->req = NULL;
	size_t len = fm->body.len;
	char *body = strbuf_steal(&fm->body);
	bool current = s->launch.jvm_pid > 0 && fm->req_gen == s->launch.gen && !s->closing;
	if (!current) {
		free(body);
		return;
	}
	char *why = NULL;
	struct digest d = {.job_id = s->job_id};
	if (fm->too_large)
		why = xasprintf("the reporter's answer is over %u MiB", FLINKMETRICS_MAX_BYTES >> 20);
	else if (!code && rest_error_is_timeout(error))
		why = xasprintf("the reporter on 127.0.0.1:%d did not answer within %d s", fm->rest_port,
		                (int)(FLINKMETRICS_TIMEOUT_USEC / USEC_PER_SEC));
	else if (!code || error)
		why = xasprintf("GET http://127.0.0.1:%d/metrics: %s", fm->rest_port, error ? error : "no answer");
	else if (code != 200)
		why = xasprintf("GET http://127.0.0.1:%d/metrics answered %ld", fm->rest_port, code);
	else {
		char *bad = NULL;
		if (promtext_parse(body, len, "flinklet_", take_sample, &d, &bad) < 0) {
			why = xasprintf("the reporter's answer is not Prometheus text: %s", bad);
			free(bad);
		} else if (d.other_job[0]) {
			/* another JVM's reporter took the port (another supervisor's on a shared host network): its
			 * figures are not this job's, whatever else they say */
			why = xasprintf("the reporter on 127.0.0.1:%d is not this job's: it reports job %s, not %s",
			                fm->rest_port, d.other_job, s->job_id);
		}
	}
	if (why) {
		free(body);
		scrape_failed(s, why);
		return;
	}
	if (fm->said)
		log_info("Flink's metrics: the reporter on 127.0.0.1:%d answers well again", fm->rest_port);
	fm->said = false;
	free(fm->problem);
	fm->problem = NULL;
	retire(fm);
	fm->text = shbuf_take(body, len);
	fm->text_gen = fm->req_gen;
	fm->text_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
	record_timeline(fm, &d, fm->text_ms);
}

static const struct rest_stream scrape = {
    .method = "GET",
    .target = "/metrics",
    .timeout = FLINKMETRICS_TIMEOUT_USEC,
    .on_header = on_header,
    .on_data = on_data,
    .on_done = on_done,
};

void sup_flinkmetrics_poll(struct supervisor *s)
{
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	usec_t now = now_monotonic();
	if (fm->off || fm->port <= 0 || s->launch.jvm_pid <= 0 || fm->req || now < fm->next_at || prev_alive(s))
		return;
	if (!fm->rest || fm->rest_port != fm->port) {
		rest_free(fm->rest);
		fm->rest = NULL;
		char *url = xasprintf("http://127.0.0.1:%d", fm->port);
		int r = rest_new(s->event, url, FLINKMETRICS_TIMEOUT_USEC, &fm->rest);
		free(url);
		if (r < 0) {
			scrape_failed(s, xasprintf("no HTTP client for the reporter: %s", strerror(-r)));
			fm->next_at = now + FLINKMETRICS_INTERVAL_USEC;
			return;
		}
		fm->rest_port = fm->port;
	}
	strbuf_free(&fm->body);
	fm->too_large = false;
	fm->req_gen = s->launch.gen;
	fm->req_at = now;
	fm->next_at = now + FLINKMETRICS_INTERVAL_USEC;
	fm->req = rest_stream(fm->rest, &scrape, s);
	if (!fm->req)
		scrape_failed(s, xstrdup("the scrape could not be started"));
}

/* Flink's families are served: the last scrape was good and its JVM runs. */
static bool serving(const struct supervisor *s)
{
	const struct sup_flinkmetrics *fm = &s->flinkmetrics;
	return !fm->off && fm->text && s->launch.jvm_pid > 0 && fm->text_gen == s->launch.gen;
}

struct shbuf *sup_flinkmetrics_append(struct supervisor *s, struct strbuf *b)
{
	const struct sup_flinkmetrics *fm = &s->flinkmetrics;
	strbuf_append(b,
	              "# HELP flinklet_flink_metrics_up 1 while Flink's own metrics (flink_*) are in this answer: the "
	              "last scrape of the running JVM's loopback reporter was good.\n"
	              "# TYPE flinklet_flink_metrics_up gauge\n");
	strbuf_appendf(b, "flinklet_flink_metrics_up %d\n", serving(s) ? 1 : 0);
	strbuf_append(b, "# HELP flinklet_flink_metrics_scrape_failures_total Scrapes of Flink's reporter that failed "
	                 "(no answer in time, too large, not Prometheus text).\n"
	                 "# TYPE flinklet_flink_metrics_scrape_failures_total counter\n");
	strbuf_appendf(b, "flinklet_flink_metrics_scrape_failures_total %llu\n", (unsigned long long)fm->failures);
	return serving(s) ? shbuf_ref(fm->text) : NULL;
}

cJSON *sup_flinkmetrics_json(struct supervisor *s)
{
	const struct sup_flinkmetrics *fm = &s->flinkmetrics;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "enabled", !fm->off && fm->port > 0);
	if (fm->off)
		cJSON_AddStringToObject(o, "off", fm->off);
	else
		cJSON_AddNullToObject(o, "off");
	cJSON_AddBoolToObject(o, "up", serving(s));
	if (fm->port > 0)
		cJSON_AddNumberToObject(o, "port", fm->port);
	if (fm->text_ms > 0)
		cJSON_AddNumberToObject(o, "updated", (double)fm->text_ms);
	if (fm->problem)
		cJSON_AddStringToObject(o, "error", fm->problem);
	else
		cJSON_AddNullToObject(o, "error");
	char *tl = recent_array(&fm->timeline, 0);
	cJSON *arr = cJSON_Parse(tl);
	free(tl);
	cJSON_AddItemToObject(o, "timeline", arr ? arr : cJSON_CreateArray());
	return o;
}

void sup_flinkmetrics_free(struct supervisor *s)
{
	struct sup_flinkmetrics *fm = &s->flinkmetrics;
	rest_free(fm->rest); /* with the scrape in flight: no callback comes */
	fm->rest = NULL;
	fm->req = NULL;
	strbuf_free(&fm->body);
	shbuf_unref(fm->text);
	fm->text = NULL;
	shbuf_unref(fm->prev); /* a response still sending it holds its own reference */
	fm->prev = NULL;
	free(fm->problem);
	fm->problem = NULL;
	free(fm->off);
	fm->off = NULL;
	recent_free(&fm->timeline);
}
