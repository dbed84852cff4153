/* sqlcheck: `check-config --preflight` for a SQL script job: flinklet's SQL runner in a JVM of its own with
 * --validate (java/sqlrunner SqlScriptRunner), which runs the script's SET and CREATE statements and has the planner
 * explain its INSERTs without submitting anything: an unknown table, column or function, a type error, a connector
 * that is not on the classpath, each said at the script's line and column (an inline script's at the configuration
 * file's). Blocking, bounded in time: for the command line, never for the supervisor's loop. */
#ifndef FLINKLET_SQLCHECK_H
#define FLINKLET_SQLCHECK_H

#include "config.h"

/* Runs the runner's validation of s's script with Flink's jars (and the job's own jar, when it is not the runner's)
 * on the classpath; every problem it reports is one message in d. Returns the number of problems. */
int sqlcheck_validate(const struct spec *s, const char *jar_path, struct diags *d);

#endif
