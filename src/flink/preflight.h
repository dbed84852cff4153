/* preflight: what can be known to fail before a JVM is started, said in the contract's message format
 * (file:line:col: field: why) instead of a Java stack trace after the launch: the Flink jars, the job's jar
 * (there, readable, a jar) and its entry class (in the jar, or the jar's Main-Class / program-class), Flink's
 * REST port and flinklet's HTTP address free, the state directory writable. `flinklet check-config --preflight`
 * runs them all; `run` runs the jar check before the first launch (exit 2) and before every relaunch (a jar
 * that went missing is waited for, not launched in a loop). Reading the jar needs zlib for its manifest. */
#ifndef FLINKLET_PREFLIGHT_H
#define FLINKLET_PREFLIGHT_H

#include <stdbool.h>

#include "config.h"

/* The jar at path (a local file) as Flink's client would take it: 0, or -errno with *why (allocated) saying
 * what is wrong: missing, unreadable, not a jar, no Main-Class and no entryClass; -ESRCH: no such entry class
 * (never for flinklet's SQL runner, which is in Flink's lib/: a SQL script's jar is one of connectors or UDFs). */
int preflight_jar(const char *path, const char *entry_class, char **why);

/* For a Python job (entry class Flink's PythonDriver or PythonGatewayServer): the one opt/flink-python*.jar of
 * flink_home that Flink's CLI puts beside the job (PackagedProgramUtils.getPythonJar, through FLINK_OPT_DIR) is
 * there. 0 (also for any other entry class), or -ENOENT with *why (malloc'd): none, or more than one. */
int preflight_python(const char *flink_home, const char *entry_class, char **why);

/* preflight_jar for the job's jar at jar_path, then preflight_python for its Flink home; the problem (if any)
 * one message in d naming the field to change: spec.job.entryClass for a class the jar lacks, flinklet.flink.home
 * for a Python job's missing opt/flink-python jar, spec.job.jarURI for anything else. Returns its r. */
int preflight_jar_diag(const struct spec *s, const char *jar_path, struct diags *d);

/* host:port can be bound now (SO_REUSEADDR, as a server would): 0, or -errno (-EADDRINUSE: taken). */
int preflight_port_free(const char *host, int port);

/* Every check for `check-config --preflight`, one message per problem in d; jar_path is where the job's jar
 * is on this machine (NULL: remote, fetched at start). Returns the number of problems. */
int preflight_all(const struct spec *s, const char *jar_path, struct diags *d);

#endif
