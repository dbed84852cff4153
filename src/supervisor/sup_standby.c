/* sup_standby: the standby JVM (flinklet.recovery.standby-jvm, issue 38 item 4): a restart after the job's JVM died
 * (kill -9, a crash) runs the job in a JVM started ahead of need instead of a new one. Once the job is RUNNING (not
 * before: a standby never competes with a start for the CPU), a second launcher JVM is started as the job's JVM would
 * be (the same command line up to the main class: JVM options, memory, class-data-sharing archive, the same process
 * group handling and parent-death signal, none of flinklet's descriptors), with `--standby` for arguments: it loads
 * the RPC system, its jar in a directory of its own in the scratch (which a launch's rotation of the scratch does not
 * touch), starts and closes a local actor system once, and waits on its standard input, with no job, no MiniCluster and
 * no port (Flink's configuration, with the REST and reporter ports, is read when it is sent a job). When the job's JVM
 * dies and the restart is decided (the backoff and the crash-loop limit as without it), the launch goes as any (the
 * newest complete checkpoint chosen, the intent on the volume first) and its CLI arguments go to the standby ("run
 * ..."), which becomes the job's JVM (sup_launch.c); a new standby follows once the job is RUNNING again. A standby
 * that dies is made again after a backoff; one the spec no longer fits (a reload changed the JVM's settings) is
 * discarded when the restart would take it, and every stop of the job (SIGTERM, a suspend, an upgrade) discards it at
 * once. Its cost is its memory: an idle JVM's resident set (docs/operations.md, "The standby JVM"). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cds.h"
#include "config_sql.h"
#include "crashlogs.h"
#include "flinkconf.h"
#include "scratch.h"
#include "store.h"
#include "sup_keepjvm.h"
#include "sup_standby.h"

extern char **environ;

#define STANDBY_DELAY_FIRST (1 * USEC_PER_SEC)
#define STANDBY_DELAY_MAX (300 * USEC_PER_SEC)

usec_t sup_standby_delay(unsigned failures)
{
	usec_t d = STANDBY_DELAY_FIRST;
	for (unsigned i = 1; i < failures && d < STANDBY_DELAY_MAX; i++)
		d *= 2;
	return d < STANDBY_DELAY_MAX ? d : STANDBY_DELAY_MAX;
}

static bool option_on(const struct supervisor *s)
{
	return spec_bool(s->spec, "flinklet.recovery.standby-jvm");
}

/* Its directory removed by a child process (off the loop). */
static void remove_dir(char **dir)
{
	if (!*dir)
		return;
	struct strv v = {0};
	strv_push_take(&v, *dir);
	*dir = NULL;
	pid_t pid = rm_rf_child(&v);
	if (pid < 0)
		log_warn("unable to remove %s: %s", v.v[0], strerror((int)-pid));
	strv_free(&v);
}

/* Forgets the standby (its exit, if any, is reaped as an orphan's). */
static void release(struct supervisor *s)
{
	if (s->standby.control_fd >= 0)
		close(s->standby.control_fd);
	s->standby.control_fd = -1;
	jvmout_free(s->standby.out);
	s->standby.out = NULL;
	free(s->standby.fingerprint);
	free(s->standby.archive);
	s->standby.fingerprint = s->standby.archive = NULL;
	s->standby.pid = 0;
	s->standby.ready = false;
	s->status.standby_pid = 0;
	remove_dir(&s->standby.dir);
}

static void discard(struct supervisor *s, const char *why)
{
	if (s->standby.pid <= 0)
		return;
	sup_event(s, "StandbyDiscarded", "the standby JVM (pid %d) is stopped: %s", (int)s->standby.pid, why);
	jvm_kill_group(s->standby.pid);
	release(s);
	sup_write_status(s);
}

/* Why no standby can be made now (NULL: it can). */
static const char *cannot_make(const struct supervisor *s)
{
	if (s->state != SUP_RUNNING || s->launch.jvm_pid <= 0)
		return "the job is not RUNNING";
	if (s->keepjvm.control_fd < 0)
		return "the job's JVM runs Flink's CLI, not flinklet's launcher (a standby is one)";
	if (config_sql_job(s->spec) || flink_python_entry(s->spec->job.entry_class))
		return "a SQL script or Python job starts in a JVM of its own";
	return NULL;
}

/* The archive the next launch would start from (as sup_cds_prepare chooses it, without recording), or NULL. */
static char *choose_archive(const struct supervisor *s)
{
	const char *mode = spec_get(s->spec, "flinklet.jvm.class-data-sharing");
	if ((mode && !strcmp(mode, "off")) || s->cds.off || !s->cds.dir || !s->cds.prefix)
		return NULL;
	char *path = NULL;
	const char *bad = NULL;
	if (cds_choose(s->cds.dir, s->cds.prefix, false, &path, &bad) == CDS_USE && !bad)
		return path;
	free(path);
	return NULL;
}

/* The standby's output: its launcher says when it waits; everything passes on to flinklet's own output as the job's
 * JVM's does. */
static void on_line(void *userdata, const char *line)
{
	struct supervisor *s = userdata;
	if (s->standby.ready || !str_has_prefix(line, "flinklet-launcher: standby:"))
		return;
	s->standby.ready = true;
	log_info("the standby JVM (pid %d) waits for a job, %.1f s after its start", (int)s->standby.pid,
	         (double)(sup_now(s) - s->standby.started_at) / USEC_PER_SEC);
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata);

static void schedule(struct supervisor *s, usec_t delay)
{
	if (!s->closing && option_on(s))
		sup_arm(s, &s->standby.timer, delay, on_timer);
}

static void make(struct supervisor *s)
{
	const char *why = cannot_make(s);
	if (why) {
		log_info("no standby JVM now: %s", why);
		return;
	}
	s->standby.n++;
	char *dir = xasprintf("%s/" SCRATCH_STANDBY_PREFIX "%ld-%u", s->scratch.dir, (long)getpid(), s->standby.n);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		log_warn("unable to create %s: %s; the standby JVM loads nothing ahead of its job", dir,
		         strerror(errno));
		free(dir);
		dir = NULL;
	}
	char *archive = choose_archive(s);
	char *crash_dir = path_join(s->state_dir, CRASHLOGS_DIR);
	struct membudget_tuning memory = s->launch.spawn.memory;
	/* the job's JVM's command line up to the main class: the running launch's memory, the archive of the next
	 * launch */
	struct launch l = {
	    .job_id = s->job_id,
	    .conf_dir = s->conf_dir,
	    .tmp_dir = s->scratch.tmp_dir,
	    .java = spec_get(s->spec, "flinklet.java.bin"),
	    .cds_archive = archive,
	    .crash_dir = crash_dir,
	    .memory = s->launch.spawn.tuned ? &memory : NULL,
	    .launcher = true,
	};
	struct strv argv = {0}, envp = {0};
	flinkconf_build_standby_argv(s->spec, &l, dir, &argv);
	flinkconf_build_envp(s->spec, &l, environ, &envp);
	free(crash_dir);
	pid_t pid;
	int in_fd = -1, out_fd = -1, err_fd = -1;
	int r = jvm_spawn_piped(argv.v, envp.v, s->state_dir, &pid, &in_fd, &out_fd, &err_fd);
	strv_free(&argv);
	strv_free(&envp);
	if (r < 0) {
		s->standby.dir = dir;
		remove_dir(&s->standby.dir);
		free(archive);
		s->standby.failures++;
		usec_t delay = sup_standby_delay(s->standby.failures);
		sup_warning(s, "StandbyFailed", "unable to start a standby JVM: %s; trying again in %.0f s",
		            strerror(-r), (double)delay / USEC_PER_SEC);
		schedule(s, delay);
		return;
	}
	s->standby.pid = pid;
	s->standby.control_fd = in_fd;
	s->standby.out = jvmout_new(s->event, out_fd, err_fd, on_line, s);
	s->standby.fingerprint = sup_keepjvm_fingerprint(s, s->spec);
	s->standby.archive = archive;
	s->standby.dir = dir;
	s->standby.tuned = s->launch.spawn.tuned;
	s->standby.memory = memory;
	s->standby.ready = false;
	s->standby.started_at = sup_now(s);
	s->status.standby_pid = pid;
	sup_event(
	    s, "StandbyStarted",
	    "started a standby JVM (pid %d%s%s): it waits with no job and no port, and takes the restore of job %s "
	    "when its JVM (pid %d) dies (flinklet.recovery.standby-jvm)",
	    (int)pid, archive ? ", from the class-data-sharing archive " : "", archive ? archive : "", s->job_id,
	    (int)s->launch.jvm_pid);
	sup_write_status(s);
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->standby.timer = sup_disarm(s->standby.timer);
	if (s->standby.pid <= 0 && option_on(s))
		make(s);
	return 0;
}

void sup_standby_state(struct supervisor *s, enum sup_state before, enum sup_state next)
{
	if (next == SUP_RUNNING || next == SUP_BACKOFF || next == SUP_STARTING) {
		if (s->standby.pid > 0 && !option_on(s))
			discard(s, "flinklet.recovery.standby-jvm is false");
		if (next == SUP_RUNNING && before != SUP_RUNNING && s->standby.pid <= 0 && !s->standby.timer)
			schedule(s, 0);
		return;
	}
	s->standby.timer = sup_disarm(s->standby.timer);
	if (s->standby.pid > 0) {
		char *why = xasprintf("the job is stopped on purpose or given up (%s), and a standby serves only the "
		                      "restart after a crash",
		                      sup_state_name(next));
		discard(s, why);
		free(why);
	}
}

bool sup_standby_running(const struct supervisor *s)
{
	return s->standby.pid > 0;
}

bool sup_standby_fits(struct supervisor *s, bool tuned, const struct membudget_tuning *memory)
{
	if (s->standby.pid <= 0)
		return false;
	const char *why = NULL;
	char *fp = NULL;
	if (!option_on(s))
		why = "flinklet.recovery.standby-jvm is false";
	else if (tuned != s->standby.tuned || (tuned && memcmp(memory, &s->standby.memory, sizeof(*memory))))
		why = "memory tuning gives the next JVM other memory settings";
	else if (strcmp((fp = sup_keepjvm_fingerprint(s, s->spec)), s->standby.fingerprint))
		why = "the JVM's own settings changed since it started (JVM options, memory, Flink's installation or "
		      "options): a new JVM starts the job";
	free(fp);
	if (why) {
		discard(s, why);
		return false;
	}
	return true;
}

const char *sup_standby_archive(const struct supervisor *s)
{
	return s->standby.archive;
}

bool sup_standby_take(struct supervisor *s, pid_t *pid, int *control_fd, struct jvmout **out)
{
	if (s->standby.pid <= 0)
		return false;
	*pid = s->standby.pid;
	*control_fd = s->standby.control_fd;
	*out = s->standby.out;
	s->standby.control_fd = -1;
	s->standby.out = NULL;
	/* its directory stays while it runs the job (the RPC system's jar is in it) */
	remove_dir(&s->standby.job_dir);
	s->standby.job_dir = s->standby.dir;
	s->standby.job_pid = s->standby.pid;
	s->standby.dir = NULL;
	s->standby.failures = 0;
	release(s);
	return true;
}

void sup_standby_reloaded(struct supervisor *s)
{
	if (s->standby.pid > 0) {
		char *fp = sup_keepjvm_fingerprint(s, s->spec);
		if (!option_on(s))
			discard(s, "flinklet.recovery.standby-jvm is false");
		else if (strcmp(fp, s->standby.fingerprint))
			discard(s, "a reload changed the JVM's own settings: another is started as the spec says");
		free(fp);
	}
	if (s->standby.pid <= 0 && !s->standby.timer && s->state == SUP_RUNNING)
		schedule(s, 0);
}

void sup_standby_archived(struct supervisor *s)
{
	if (s->standby.pid > 0 && !s->standby.archive) {
		discard(s,
		        "it started without the class-data-sharing archive, which exists now: another starts from it");
		schedule(s, 0);
	}
}

bool sup_standby_reaped(struct supervisor *s, const struct reaped *r)
{
	if (s->standby.job_pid > 0 && r->pid == s->standby.job_pid) {
		s->standby.job_pid = 0;
		remove_dir(&s->standby.job_dir);
		return false;
	}
	if (s->standby.pid <= 0 || r->pid != s->standby.pid)
		return false;
	jvmout_drain(s->standby.out);
	char *cause = jvmout_cause(s->standby.out, SUP_CAUSE_MAX);
	jvm_kill_group(r->pid); /* what is left of its process group */
	/* one that lived long is no crash loop: counted as the first */
	if (sup_now(s) - s->standby.started_at >= STANDBY_DELAY_MAX)
		s->standby.failures = 0;
	s->standby.failures++;
	usec_t delay = sup_standby_delay(s->standby.failures);
	char how[64];
	if (r->exit_signal >= 0)
		snprintf(how, sizeof(how), "was killed by signal %d (%s)", r->exit_signal, strsignal(r->exit_signal));
	else
		snprintf(how, sizeof(how), "exited with code %d", r->exit_code);
	sup_warning(s, "StandbyExited", "the standby JVM (pid %d) %s%s%s; another starts in %.0f s", (int)r->pid, how,
	            cause ? ": " : "", cause ? cause : "", (double)delay / USEC_PER_SEC);
	free(cause);
	release(s);
	sup_write_status(s);
	if (s->state == SUP_RUNNING)
		schedule(s, delay);
	return true;
}

void sup_standby_free(struct supervisor *s)
{
	s->standby.timer = sup_disarm(s->standby.timer);
	if (s->standby.pid > 0)
		jvm_kill_group(s->standby.pid);
	/* the loop is over: this may wait (its parent-death signal would end it all the same) */
	char *dir = s->standby.dir;
	s->standby.dir = NULL;
	release(s);
	if (dir)
		rm_rf(dir);
	free(dir);
	if (s->standby.job_dir && s->launch.jvm_pid <= 0)
		rm_rf(s->standby.job_dir);
	free(s->standby.job_dir);
	s->standby.job_dir = NULL;
}
