/* config_sql: a SQL script as the job (spec.job.sqlScript: a file; spec.job.sql: the script itself), checked when the
 * configuration is loaded and turned into the launch of flinklet's SQL runner: the script read (a local file, at most
 * 1 MiB; a remote sqlScript, https://, s3:// or http:// as a jarURI, is not read then: its URI is checked as a
 * jarURI's, and the script itself once the supervisor downloaded it, config_sql_check_file) and split and checked by
 * sqlscript, its problems as diagnostics at the script's file, line and column (an
 * inline literal block's at the configuration file's); jarURI defaults to the launcher jar in Flink's lib/ (which
 * holds the runner; a jarURI of yours is a jar of UDFs or connectors the script uses) and entryClass is the runner. */
#ifndef FLINKLET_CONFIG_SQL_H
#define FLINKLET_CONFIG_SQL_H

#include "config.h"

/* flinklet's SQL runner (java/sqlrunner) and the jar that holds it (the launcher's), in Flink's lib/ */
#define SQL_RUNNER_CLASS "dev.flinklet.launcher.SqlScriptRunner"
#define SQL_RUNNER_JAR "flinklet-launcher.jar"
/* the file in the launch's conf/ directory an inline spec.job.sql is written to for the runner */
#define SQL_INLINE_FILE "job.sql"
/* where the runner keeps the script's compiled plans, under the state directory: plan-<script sha256>.json */
#define SQL_PLAN_DIR "sql"

/* Whether the job is a SQL script. */
bool config_sql_job(const struct spec *s);
/* Whether spec.job.sqlScript is remote (no local path: a URI the supervisor downloads, src/flink/artifacts.c). */
bool config_sql_remote(const struct spec *s);
/* Checks the script fields and the script itself (read from disk for sqlScript), its problems in d; records its
 * sha256 in s->job.sql_sha256. Nothing else in s changes. */
void config_sql_check(struct spec *s, struct diags *d);
/* Fills what a SQL script job defaults: jarURI (the runner's jar under flinklet.flink.home, which must be set and
 * absolute) and entryClass (the runner). */
void config_sql_defaults(struct spec *s);
/* Splits and checks a downloaded script (the file at path, at most 1 MiB), its problems said at name (its URI,
 * redacted): "name:line:col: spec.job.sqlScript: why", joined by "; " in *err (malloc'd). Returns 0 with the
 * script's sha256 in sha256, -EINVAL (its problems), or -errno (unreadable; -EFBIG: larger than 1 MiB). */
int config_sql_check_file(const char *path, const char *name, char sha256[65], char **err);
/* The runner's arguments for a launch whose conf/ directory is conf_dir, appended to argv: where positions are
 * reported (--origin, --field; a remote script's are its URI's, redacted), the script's sha256 (sha256, else the one
 * config_sql_check recorded), where its compiled plans are kept (--plan-dir, under the state directory), the script's
 * path on this machine (script, else the spec's; a remote script not given its downloaded copy: its redacted URI). */
void config_sql_runner_args(const struct spec *s, const char *conf_dir, const char *script, const char *sha256,
                            struct strv *argv);

#endif
