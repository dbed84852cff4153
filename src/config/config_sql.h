/* config_sql: a SQL script as the job (spec.job.sqlScript: a file; spec.job.sql: the script itself), checked when the
 * configuration is loaded and turned into the launch of flinklet's SQL runner: the script read (a local file, at most
 * 1 MiB) and split and checked by sqlscript, its problems as diagnostics at the script's file, line and column (an
 * inline literal block's at the configuration file's); jarURI defaults to the launcher jar in Flink's lib/ (which
 * holds the runner; a jarURI of yours is a jar of UDFs or connectors the script uses) and entryClass is the runner. */
#ifndef FLINKLET_CONFIG_SQL_H
#define FLINKLET_CONFIG_SQL_H

#include "config.h"

/* flinklet's SQL runner (deps/launcher) and the jar that holds it, in Flink's lib/ */
#define SQL_RUNNER_CLASS "dev.flinklet.launcher.SqlScriptRunner"
#define SQL_RUNNER_JAR "flinklet-launcher.jar"
/* the file in the launch's conf/ directory an inline spec.job.sql is written to for the runner */
#define SQL_INLINE_FILE "job.sql"
/* where the runner keeps the script's compiled plans, under the state directory: plan-<script sha256>.json */
#define SQL_PLAN_DIR "sql"

/* Whether the job is a SQL script. */
bool config_sql_job(const struct spec *s);
/* Checks the script fields and the script itself (read from disk for sqlScript), its problems in d; records its
 * sha256 in s->job.sql_sha256. Nothing else in s changes. */
void config_sql_check(struct spec *s, struct diags *d);
/* Fills what a SQL script job defaults: jarURI (the runner's jar under flinklet.flink.home, which must be set and
 * absolute) and entryClass (the runner). */
void config_sql_defaults(struct spec *s);
/* The runner's arguments for a launch whose conf/ directory is conf_dir, appended to argv: where positions are
 * reported (--origin, --field), the script's sha256, where its compiled plans are kept (--plan-dir, under the state
 * directory), the script's path on this machine. */
void config_sql_runner_args(const struct spec *s, const char *conf_dir, struct strv *argv);

#endif
