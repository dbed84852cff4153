/* flinkconf: everything one JVM launch needs, derived from the spec: the Flink configuration file
 * (config.yaml, standard YAML, read by 1.20 and 2.x), the console log4j configuration, the JVM's
 * options and the argv of the launcher (or Flink's CLI), and the environment. Pure: it renders text and vectors and
 * touches no file; the supervisor writes them atomically and execs. */
#ifndef FLINKLET_FLINKCONF_H
#define FLINKLET_FLINKCONF_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "membudget.h"
#include "util.h"

#define FLINK_CLI_CLASS "org.apache.flink.client.cli.CliFrontend"
/* flinklet's launcher (java/launcher): the CLI's `run` with the same arguments, whose JVM stays while the job main()
 * submitted runs, whatever main() does after submitting it (docs/architecture.md, "Launch"); its jar in Flink's lib/ */
#define FLINKCONF_LAUNCHER_CLASS "dev.flinklet.launcher.FlinkletLauncher"
#define FLINKCONF_LAUNCHER_JAR "flinklet-launcher.jar"

struct launch {
	const char *job_id;       /* 32 lowercase hex, fixed for the deployment */
	const char *conf_dir;     /* FLINK_CONF_DIR: holds config.yaml and log4j-console.properties */
	const char *tmp_dir;      /* io.tmp.dirs and java.io.tmpdir, wiped before each launch */
	const char *java;         /* the java launcher */
	const char *restore_path; /* NULL: start empty */
	bool restore_claim;       /* claim (own checkpoints) or no_claim (savepoints) */
	bool restore_legacy;      /* legacy instead of no_claim (a savepoint with the changelog state backend) */
	const char *jar_path;     /* the jar on disk; NULL: spec.job.jarURI's local path */
	/* a remote spec.job.sqlScript's downloaded copy and its sha256 (NULL: the spec's script, as config_sql has it)
	 */
	const char *sql_path, *sql_sha256;
	const char *cds_archive; /* the class-data-sharing archive to start from, or NULL */
	bool cds_record;         /* no archive: record what a dump of the running JVM needs */
	const char *crash_dir;   /* where the JVM writes its fatal-error logs (crashlogs.h), or NULL: its cwd */
	/* pipeline.jobvertex-parallelism-overrides for this launch ("vertex:p,..."), in place of the spec's;
	 * NULL: the spec's (the autoscaler's overrides in force, merged with the user's: sup_autoscaler.c) */
	const char *parallelism_overrides;
	/* the version of Flink's jars ("2.3.0"), for the defaults that depend on it (NULL: none of them) */
	const char *flink_version;
	/* memory tuning's settings for this launch (src/config/memtune.h), NULL: the untuned split of
	 * spec.resources.memory; the user's own memory keys win either way */
	const struct membudget_tuning *memory;
	/* the loopback port of flinklet's Prometheus reporter for this JVM (flinklet.metrics.flink), 0: none */
	int metrics_port;
	/* the JVM's main class is flinklet's launcher (its jar is in lib/), else Flink's CLI, whose JVM ends when the
	 * job's main() returns */
	bool launcher;
};

char *flinkconf_render_config(const struct spec *s, const struct launch *l);
char *flinkconf_render_log4j(const struct spec *s);
/* The sha256 (64 hex) of what a launch fingerprint (flinkconf_render_config, "\n--\n", the log4j configuration,
 * "\n--\n", the command line) says of the job: the configuration's keys in any order (a file whose keys were written
 * in another order launches the same job) and without those that only say where the JVM listens or keeps scratch
 * files (rest.*, web.*, the bind hosts, metrics reporters, io.tmp.dirs), then the rest as it is. */
void flinkconf_job_digest(const char *fingerprint, char hex[65]);
void flinkconf_build_argv(const struct spec *s, const struct launch *l, struct strv *argv);
/* A standby JVM's command line (flinklet.recovery.standby-jvm): the launch's, up to and with the launcher's main
 * class (l->launcher must be set), then FLINKCONF_STANDBY_ARG and dir (NULL: none), where the launcher loads the RPC
 * system's jar ahead of its job. It runs no job until it is sent one on its standard input (`run ...`). */
#define FLINKCONF_STANDBY_ARG "--standby"
void flinkconf_build_standby_argv(const struct spec *s, const struct launch *l, const char *dir, struct strv *argv);
/* What a launch is, as text to compare: Flink's configuration rendered from conf (s itself, or s less some keys),
 * the log configuration and the command line of s, the latter up to and with the argument until (NULL: all). */
char *flinkconf_fingerprint(const struct spec *s, const struct spec *conf, const struct launch *l, const char *until);
/* The launch a fingerprint is taken of: the same for every spec (a fixed job id, no restore, no archive), so that
 * only what the spec decides differs (sup_launch.c's and sup_keepjvm.c's fingerprints). */
void flinkconf_fingerprint_launch(struct launch *l, const char *conf_dir, const char *tmp_dir, const char *java,
                                  const char *flink_version);
/* The JVM's environment: the supervisor's, with FLINK_CONF_DIR (and FLINK_HOME) set, and MALLOC_ARENA_MAX=2
 * unless the supervisor's environment sets it. */
void flinkconf_build_envp(const struct spec *s, const struct launch *l, char *const *environ_in, struct strv *envp);

/* flinklet's Prometheus reporter for Flink (java/reporter): its jar in Flink's lib/, its factory, and the name
 * of the reporter in Flink's configuration (metrics.reporter.flinklet.*). */
#define FLINKCONF_REPORTER_JAR "flinklet-metrics-reporter.jar"
#define FLINKCONF_REPORTER_FACTORY "org.apache.flink.metrics.prometheus.FlinkletLoopbackReporterFactory"
#define FLINKCONF_REPORTER_NAME "flinklet"
/* The first key of the spec's Flink configuration that configures Flink's metric reporters (metrics.reporter.* or
 * metrics.reporters), or NULL: with one, the user's reporters win and flinklet adds none. */
const char *flinkconf_user_reporter_key(const struct spec *s);

/* The REST port the MiniCluster will listen on. */
int flinkconf_rest_port(const struct spec *s);
/* Where the supervisor reaches Flink's REST API: http://<rest.bind-address>:<port>, or 127.0.0.1 when the
 * address is a wildcard (malloc'd). */
char *flinkconf_rest_url(const struct spec *s);
/* The version of the Flink jars in lib_dir ("2.2.1"), from flink-clients-*.jar or flink-dist-*.jar.
 * Returns 0, or -ENOENT when there are no Flink jars. */
int flink_detect_version(const char *lib_dir, char **ret);

/* Whether entry_class is Flink's entry point of a Python job (PythonDriver, or PythonGatewayServer), which Flink's
 * CLI runs with opt/flink-python*.jar on the job's class path. */
bool flink_python_entry(const char *entry_class);
/* "2.2.1" -> "v2_2"; NULL when not one of the versions flinklet knows. */
const char *flink_version_label(const char *version);
/* Whether this Flink version keeps a rescale history (2.3 and later: GET /jobs/:id/rescales/..., FLIP-495).
 * NULL or an unreadable version: false. */
bool flink_has_rescale_history(const char *version);
/* flinklet's default of web.adaptive-scheduler.rescale-history.size (Flink's is 0: none kept) */
#define RESCALE_HISTORY_DEFAULT 10
/* The web.adaptive-scheduler.rescale-history.size a JVM of this version is launched with, when it keeps one: the
 * spec's value, else RESCALE_HISTORY_DEFAULT with the adaptive scheduler (jobmanager.scheduler: adaptive); 0 below
 * Flink 2.3, with another scheduler, or when the spec says 0 or less. */
int64_t flinkconf_rescale_history_size(const struct spec *s, const char *version);

#endif
