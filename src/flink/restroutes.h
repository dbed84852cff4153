/* restroutes: pure: which of Flink's REST routes a client without flinklet's token may GET (or HEAD) through
 * /flink/. Reading is open for what Flink's web UI shows of the job (its graph, metrics, checkpoints, exceptions,
 * the TaskManagers' figures) and for the UI's own files; everything else needs the token: the routes that act on a
 * GET (Flink's yarn-cancel and yarn-stop cancel and stop the job, whatever web.cancel.enable says; a jar's plan
 * runs the job's main; a flame graph samples the threads), those that show what may hold secrets (the JVM's
 * options and environment, the configuration, the job's user configuration, logs, stdout, thread dumps,
 * profiles), and any path this table does not know. The table lists every GET route Flink 1.20, 2.2 and 2.3
 * register, each with the versions that have it (tests/restroutes checks it against the *Headers classes of the
 * real jars: a route Flink adds fails that test until it is put here). Paths are matched as Flink's router
 * matches them, segment by segment; a path Flink might read otherwise than flinklet (percent-encoded, with a dot
 * segment, a ';' or a backslash) needs the token. */
#ifndef FLINKLET_RESTROUTES_H
#define FLINKLET_RESTROUTES_H

#include <stdbool.h>
#include <stddef.h>

enum restroutes_access {
	RESTROUTES_OPEN,  /* reads what the UI shows: anyone who reaches the endpoint */
	RESTROUTES_TOKEN, /* acts, shows secrets, or is not known to only read: with the token only */
};

struct restroute {
	const char *method; /* "GET"; the table also names the routes of other methods a reader might guess */
	const char *path;   /* Flink's template, "/jobs/:jobid/vertices/:vertexid/metrics" */
	const char *since;  /* the first Flink version ("major.minor") that has it; NULL: every one flinklet runs */
	const char *until;  /* the first that no longer has it; NULL: none */
	enum restroutes_access access;
	const char *why; /* for the token's routes: what it does or shows, for the 401's message */
};

/* The table, in order; *n its length. */
const struct restroute *restroutes_table(size_t *n);
/* Whether Flink version ("2.2.1", "1.20.5") has route r by the table's since/until. */
bool restroutes_in_version(const struct restroute *r, const char *version);
/* Who may GET or HEAD path: the path of a request target as sent to Flink, not decoded, from its first '/' up to
 * the query (a '?' and what follows are ignored). *why (may be NULL) is set to a sentence saying why the token
 * is needed (static), or NULL for an open route. Every entry of the table counts, whatever the Flink version: a
 * route a version lacks answers 404 there anyway. */
enum restroutes_access restroutes_get_access(const char *path, const char **why);

#endif
