/* sup_keepjvm: a job-only upgrade keeps the JVM (issue 38).
 * An upgrade that changes only the job (its jar, entry class, arguments, parallelism, the job-level options below)
 * need not start a new JVM: the launcher (java/launcher) is told "hold" on its standard input before the upgrade's
 * stop-with-savepoint; when the job has ended it closes its MiniCluster and says "flinklet-launcher: idle"
 * (EV_JVM_IDLE); the upgraded spec's launch then goes as any launch does (the restore point chosen, the intent and
 * Flink's configuration on the volume first) and, instead of a spawn, the new job's CLI arguments go to the JVM
 * ("run ..."), which runs them as it ran the first: config.yaml read again, the jar in a fresh user class loader, a
 * new per-job MiniCluster under the same job id. Whatever the JVM itself is started with (its options, memory, the
 * Flink installation, the log configuration, every other Flink option) takes a new JVM as before. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "artifacts.h"
#include "config_sql.h"
#include "flinkconf.h"
#include "preflight.h"
#include "sup_keepjvm.h"

/* Flink's options that only the job reads (its JobGraph, its checkpointing and restarts, the Table API's), and the
 * task slots, which flinklet derives from the job's parallelism: each job gets a MiniCluster of its own, which takes
 * any change of them (what they change of the JVM's memory shows in its flags, which the fingerprint holds). */
static bool job_level_key(const char *key)
{
	return str_has_prefix(key, "pipeline.") || !strcmp(key, "parallelism.default") ||
	       !strcmp(key, "taskmanager.numberOfTaskSlots") || str_has_prefix(key, "execution.") ||
	       str_has_prefix(key, "restart-strategy.") || str_has_prefix(key, "table.");
}

char *sup_keepjvm_fingerprint(struct supervisor *s, const struct spec *spec)
{
	struct launch l;
	flinkconf_fingerprint_launch(&l, s->conf_dir, s->scratch.tmp_dir, spec_get(spec, "flinklet.java.bin"),
	                             s->flink_version);
	l.launcher = true;
	/* Flink's configuration less the job-level options */
	struct spec jvm = *spec;
	jvm.conf = xcalloc(spec->nconf + 1, sizeof(*jvm.conf));
	jvm.nconf = 0;
	for (size_t i = 0; i < spec->nconf; i++)
		if (!job_level_key(spec->conf[i].key))
			jvm.conf[jvm.nconf++] = spec->conf[i];
	/* and the JVM's command line up to its main class (the job's arguments follow it); a Python job's JVM has the
	 * environment of one (flinkconf_build_envp) */
	char *fp = flinkconf_fingerprint(spec, &jvm, &l, FLINKCONF_LAUNCHER_CLASS);
	free(jvm.conf);
	char *ret = xasprintf("%s%s\n", fp, flink_python_entry(spec->job.entry_class) ? "python" : "jvm");
	free(fp);
	return ret;
}

static void control_close(struct supervisor *s)
{
	if (s->keepjvm.control_fd >= 0)
		close(s->keepjvm.control_fd);
	s->keepjvm.control_fd = -1;
	s->keepjvm.hold = s->keepjvm.idle = false;
}

/* One command to the launcher; 0, or -errno (the JVM is gone or going: its exit is on the way). */
static int control_send(struct supervisor *s, const char *line)
{
	if (s->keepjvm.control_fd < 0 || s->launch.jvm_pid <= 0)
		return -EPIPE;
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t n = write(s->keepjvm.control_fd, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			/* (a command is a few KiB and the launcher reads at once: a full pipe is a JVM that does not)
			 */
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		off += (size_t)n;
	}
	return 0;
}

/* Why the running JVM cannot take the desired spec's job (NULL: it can); with jar, its jar is looked at too. */
static const char *cannot_keep_jvm(struct supervisor *s, bool jar)
{
	if (!spec_bool(s->spec, "flinklet.upgrade.keep-jvm"))
		return "flinklet.upgrade.keep-jvm is false";
	if (s->keepjvm.control_fd < 0 || !s->keepjvm.fingerprint)
		return "the JVM runs Flink's CLI, not flinklet's launcher";
	if (s->memtune.relaunching)
		return "memory tuning relaunches the JVM";
	if (s->launch.next_fresh || s->spec->job.upgrade_mode != UPGRADE_SAVEPOINT)
		return "upgradeMode is not savepoint";
	if (config_sql_job(s->spec) || flink_python_entry(s->spec->job.entry_class))
		return "a SQL script or Python job starts in a JVM of its own";
	struct artifact a = {0};
	char *err = NULL;
	const char *why = NULL;
	if (artifact_plan(s->spec, s->state_dir, &a, &err) < 0 || a.remote) {
		why = "the job's jar is not a local file";
	} else if (jar) {
		char *jar_why = NULL;
		if (preflight_jar(a.local_path, s->spec->job.entry_class, &jar_why) < 0)
			why = "the job's jar is not usable";
		free(jar_why);
	}
	artifact_free(&a);
	free(err);
	if (why)
		return why;
	char *fp = sup_keepjvm_fingerprint(s, s->spec);
	bool same = !strcmp(fp, s->keepjvm.fingerprint);
	free(fp);
	return same ? NULL : "the JVM's own settings change (JVM options, memory, Flink's installation or options)";
}

void sup_keepjvm_hold(struct supervisor *s)
{
	const char *why = cannot_keep_jvm(s, false);
	if (why) {
		log_info("the upgrade of job %s starts a new JVM: %s", s->job_id, why);
		return;
	}
	if (control_send(s, "hold\n") < 0)
		return;
	s->keepjvm.hold = true;
	log_info("the upgrade of job %s changes the job alone: the JVM (pid %d) stays for it", s->job_id,
	         (int)s->launch.jvm_pid);
}

void sup_keepjvm_release(struct supervisor *s)
{
	if (!s->keepjvm.hold && !s->keepjvm.idle)
		return;
	s->keepjvm.hold = s->keepjvm.idle = false;
	control_send(s, "release\n"); /* (a JVM that cannot read it is gone already) */
}

bool sup_keepjvm_idle(const struct supervisor *s)
{
	return s->keepjvm.idle && s->launch.jvm_pid > 0;
}

bool sup_keepjvm_keep_idle(struct supervisor *s)
{
	if (!sup_keepjvm_idle(s))
		return false;
	const char *why = cannot_keep_jvm(s, true);
	if (why) {
		log_info("the JVM (pid %d) is let go, a new JVM starts the upgraded job: %s", (int)s->launch.jvm_pid,
		         why);
		sup_keepjvm_release(s);
		return false;
	}
	return true;
}

static char *base64(const char *in)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(in);
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
	const unsigned char *p = (const unsigned char *)in;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v =
		    (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = 0;
	return out;
}

void sup_keepjvm_line(struct supervisor *s, const char *line)
{
	if (!str_has_prefix(line, "flinklet-launcher: idle"))
		return;
	if (!s->keepjvm.hold || s->launch.jvm_pid <= 0)
		return; /* let go meanwhile: it exits */
	s->keepjvm.hold = false;
	s->keepjvm.idle = true;
	log_info("the JVM (pid %d) ended job %s and closed its MiniCluster; it waits for the upgraded job",
	         (int)s->launch.jvm_pid, s->job_id);
	sup_raise(s, EV_JVM_IDLE);
}

void sup_keepjvm_spawned(struct supervisor *s, int control_fd)
{
	control_close(s);
	s->keepjvm.control_fd = control_fd;
	free(s->keepjvm.fingerprint);
	s->keepjvm.fingerprint = control_fd >= 0 ? sup_keepjvm_fingerprint(s, s->spec) : NULL;
}

void sup_keepjvm_jvm_exited(struct supervisor *s)
{
	control_close(s);
}

int sup_keepjvm_submit(struct supervisor *s, const struct launch *l)
{
	struct strv argv = {0};
	flinkconf_build_argv(s->spec, l, &argv);
	struct strbuf cmd = {0};
	strbuf_append(&cmd, "run");
	bool after = false;
	for (size_t i = 0; i < argv.n; i++) {
		if (after) {
			char *b = base64(argv.v[i]);
			strbuf_append(&cmd, " ");
			strbuf_append(&cmd, b);
			free(b);
		}
		after = after || !strcmp(argv.v[i], FLINKCONF_LAUNCHER_CLASS);
	}
	strv_free(&argv);
	strbuf_append(&cmd, "\n");
	char *line = strbuf_steal(&cmd);
	s->keepjvm.idle = false;
	int r = control_send(s, line);
	free(line);
	return r;
}

void sup_keepjvm_free(struct supervisor *s)
{
	control_close(s);
	free(s->keepjvm.fingerprint);
	s->keepjvm.fingerprint = NULL;
}
