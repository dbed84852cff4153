/* restroutes: pure: which of Flink's REST routes may be read without the token (see src/flink/restroutes.h). */
#include "restroutes.h"

#include <stdio.h>
#include <string.h>

#define O RESTROUTES_OPEN
#define T RESTROUTES_TOKEN

/* Secrets: Flink masks the values of keys it takes for secrets in its configuration answers, not in the JVM's
 * options (-D...password=...), the process environment, program arguments in the job's user configuration or
 * whatever a log line holds. */
#define WHY_CONFIG "shows the configuration, whose values may hold secrets"
#define WHY_ENV "shows the JVM's options and environment, which may hold secrets"
#define WHY_LOG "shows a log or the process output, which may hold secrets"
#define WHY_DUMP "takes a thread dump of the JVM"
#define WHY_PROFILE "starts or reads a profile of the JVM"

static const struct restroute TABLE[] = {
    /* the dashboard's own settings (refresh interval, time zone, Flink's version, which features are on):
     * what the UI reads first */
    {"GET", "/config", NULL, NULL, O, NULL},
    {"GET", "/overview", NULL, NULL, O, NULL},
    {"GET", "/jobs", NULL, NULL, O, NULL},
    {"GET", "/jobs/overview", NULL, NULL, O, NULL},
    {"GET", "/jobs/metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/accumulators", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/checkpoints", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/checkpoints/config", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/checkpoints/details/:checkpointid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/checkpoints/:triggerid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/exceptions", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/execution-result", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/jobmanager/log-url", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/plan", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescaling/:triggerid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/resource-requirements", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/savepoints/:triggerid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/status", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/taskmanagers/:taskmanagerid/log-url", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/accumulators", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/backpressure", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/jm-operator-metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/accumulators", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/attempts/:attempt", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/attempts/:attempt/accumulators", NULL, NULL, O,
     NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/subtasktimes", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/taskmanagers", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/vertices/:vertexid/watermarks", NULL, NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescales/config", "2.3", NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescales/overview", "2.3", NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescales/history", "2.3", NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescales/summary", "2.3", NULL, O, NULL},
    {"GET", "/jobs/:jobid/rescales/details/:rescaleuuid", "2.3", NULL, O, NULL},
    {"GET", "/applications/overview", "2.3", NULL, O, NULL},
    {"GET", "/applications/:applicationid", "2.3", NULL, O, NULL},
    {"GET", "/applications/:applicationid/exceptions", "2.3", NULL, O, NULL},
    {"GET", "/jobmanager/metrics", NULL, NULL, O, NULL},
    {"GET", "/taskmanagers", NULL, NULL, O, NULL},
    {"GET", "/taskmanagers/metrics", NULL, NULL, O, NULL},
    {"GET", "/taskmanagers/:taskmanagerid", NULL, NULL, O, NULL},
    {"GET", "/taskmanagers/:taskmanagerid/metrics", NULL, NULL, O, NULL},
    {"GET", "/savepoint-disposal/:triggerid", NULL, NULL, O, NULL},
    {"GET", "/datasets", NULL, NULL, O, NULL},
    {"GET", "/datasets/delete/:triggerid", NULL, NULL, O, NULL},
    {"GET", "/jars", NULL, NULL, O, NULL},

    /* act on a GET */
    {"GET", "/jobs/:jobid/yarn-cancel", NULL, NULL, T, "cancels the job"},
    {"GET", "/jobs/:jobid/yarn-stop", NULL, NULL, T, "stops the job"},
    {"GET", "/jars/:jarid/plan", NULL, NULL, T, "runs the main method of an uploaded jar"},
    {"GET", "/jobs/:jobid/vertices/:vertexid/flamegraph", NULL, NULL, T, "samples the threads of the tasks"},
    /* show what may hold secrets */
    {"GET", "/jobs/:jobid/config", NULL, NULL, T, "shows the job's user configuration (its global parameters)"},
    {"GET", "/jobs/:jobid/jobmanager/config", NULL, NULL, T, WHY_CONFIG},
    {"GET", "/jobs/:jobid/jobmanager/environment", NULL, NULL, T, WHY_ENV},
    {"GET", "/applications/:applicationid/jobmanager/config", "2.3", NULL, T, WHY_CONFIG},
    {"GET", "/jobmanager/config", NULL, NULL, T, WHY_CONFIG},
    {"GET", "/jobmanager/environment", NULL, NULL, T, WHY_ENV},
    {"GET", "/jobmanager/log", NULL, NULL, T, WHY_LOG},
    {"GET", "/jobmanager/stdout", NULL, NULL, T, WHY_LOG},
    {"GET", "/jobmanager/logs", NULL, NULL, T, WHY_LOG},
    {"GET", "/jobmanager/logs/:filename", NULL, NULL, T, WHY_LOG},
    {"GET", "/jobmanager/thread-dump", NULL, NULL, T, WHY_DUMP},
    {"GET", "/jobmanager/profiler", NULL, NULL, T, WHY_PROFILE},
    {"GET", "/jobmanager/profiler/:filename", NULL, NULL, T, WHY_PROFILE},
    {"GET", "/taskmanagers/:taskmanagerid/log", NULL, NULL, T, WHY_LOG},
    {"GET", "/taskmanagers/:taskmanagerid/stdout", NULL, NULL, T, WHY_LOG},
    {"GET", "/taskmanagers/:taskmanagerid/logs", NULL, NULL, T, WHY_LOG},
    {"GET", "/taskmanagers/:taskmanagerid/logs/:filename", NULL, NULL, T, WHY_LOG},
    {"GET", "/taskmanagers/:taskmanagerid/thread-dump", NULL, NULL, T, WHY_DUMP},
    {"GET", "/taskmanagers/:taskmanagerid/profiler", NULL, NULL, T, WHY_PROFILE},
    {"GET", "/taskmanagers/:taskmanagerid/profiler/:filename", NULL, NULL, T, WHY_PROFILE},
};

#undef O
#undef T

const struct restroute *restroutes_table(size_t *n)
{
	*n = sizeof(TABLE) / sizeof(TABLE[0]);
	return TABLE;
}

static unsigned version_number(const char *v)
{
	unsigned major = 0, minor = 0;
	if (!v || sscanf(v, "%u.%u", &major, &minor) < 2)
		return 0;
	return major * 1000 + minor;
}

bool restroutes_in_version(const struct restroute *r, const char *version)
{
	unsigned v = version_number(version);
	return (!r->since || v >= version_number(r->since)) && (!r->until || v < version_number(r->until));
}

#define MAX_SEGMENTS 16

struct segs {
	const char *s[MAX_SEGMENTS];
	size_t len[MAX_SEGMENTS];
	size_t n;
};

/* Splits p (up to end) as Flink's router does: slashes at both ends removed, then split at each '/' (an empty
 * segment between two slashes stays one). False when there are more segments than MAX_SEGMENTS. */
static bool split(const char *p, const char *end, struct segs *out)
{
	while (p < end && *p == '/')
		p++;
	while (end > p && end[-1] == '/')
		end--;
	out->n = 0;
	for (;;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *e = slash ? slash : end;
		if (out->n == MAX_SEGMENTS)
			return false;
		out->s[out->n] = p;
		out->len[out->n++] = (size_t)(e - p);
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* Whether the segments from first on match template t (":name" matches any one segment, an empty one too, as in
 * Flink's PathPattern). */
static bool matches(const struct segs *g, size_t first, const char *t)
{
	struct segs ts;
	if (!split(t, t + strlen(t), &ts) || ts.n != g->n - first)
		return false;
	for (size_t i = 0; i < ts.n; i++) {
		if (ts.len[i] && ts.s[i][0] == ':')
			continue;
		if (ts.len[i] != g->len[first + i] || memcmp(ts.s[i], g->s[first + i], ts.len[i]))
			return false;
	}
	return true;
}

/* The web UI's files: index.html and the scripts, styles, fonts and images it loads, named by their extension. */
static bool ui_file(const char *name, size_t len)
{
	static const char *const EXT[] = {".html", ".js",    ".css", ".ico", ".png", ".svg", ".jpg",  ".gif",
	                                  ".woff", ".woff2", ".ttf", ".eot", ".map", ".txt", ".json", ".xml"};
	for (size_t i = 0; i < sizeof(EXT) / sizeof(EXT[0]); i++) {
		size_t n = strlen(EXT[i]);
		if (len > n && !memcmp(name + len - n, EXT[i], n))
			return true;
	}
	return false;
}

enum restroutes_access restroutes_get_access(const char *path, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	const char *end = path + strcspn(path, "?");
	/* Flink decodes the path twice (Netty's decoder, then its router per segment), libcurl removes dot
	 * segments before sending, and servers differ on what ';' and '\\' mean in a path: such a path is not
	 * surely read as written, so it is not classified */
	for (const char *c = path; c < end; c++)
		if (*c == '%' || *c == ';' || *c == '\\') {
			*why = "a path with '%', ';' or '\\'";
			return RESTROUTES_TOKEN;
		}
	struct segs g;
	if (!split(path, end, &g)) {
		*why = "a path of this many segments is no route of Flink's";
		return RESTROUTES_TOKEN;
	}
	bool empty = false;
	for (size_t i = 0; i < g.n; i++) {
		if ((g.len[i] == 1 && g.s[i][0] == '.') || (g.len[i] == 2 && !memcmp(g.s[i], "..", 2))) {
			*why = "a path with a dot segment";
			return RESTROUTES_TOKEN;
		}
		empty |= g.len[i] == 0;
	}
	/* Flink serves each route under its REST API version too: /v1/jobs/... is /jobs/... */
	size_t first = 0;
	if (g.n > 1 && g.len[0] >= 2 && g.s[0][0] == 'v' && strspn(g.s[0] + 1, "0123456789") == g.len[0] - 1)
		first = 1;
	/* every entry that matches counts, and one that needs the token wins: what Flink's router picks among
	 * several matches does not matter */
	bool open = false;
	for (size_t i = 0; i < sizeof(TABLE) / sizeof(TABLE[0]); i++) {
		if (strcmp(TABLE[i].method, "GET") || !matches(&g, first, TABLE[i].path))
			continue;
		if (TABLE[i].access == RESTROUTES_TOKEN) {
			*why = TABLE[i].why;
			return RESTROUTES_TOKEN;
		}
		open = true;
	}
	if (open)
		return RESTROUTES_OPEN;
	/* no route: Flink's static file handler, which serves the web UI's files (the index at the root) */
	if ((g.n == 1 && g.len[0] == 0) || (!empty && ui_file(g.s[g.n - 1], g.len[g.n - 1])))
		return RESTROUTES_OPEN;
	*why = "not a route of Flink's known to only read";
	return RESTROUTES_TOKEN;
}
