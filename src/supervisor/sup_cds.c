/* sup_cds: class-data sharing in the supervisor's lifecycle. Before each launch: the archive of this JDK and
 * Flink jar set when there is a whole one (-XX:SharedArchiveFile), else -XX:+RecordDynamicDumpInfo. Once the
 * job of a recording JVM has run for flinklet.jvm.class-data-sharing.dump-delay, that JVM is asked (over the
 * attach protocol, src/flink/jattach.c) to dump the classes it loaded into a temporary file, which is fsynced (by the
 * helper) and renamed into place, the older archives removed (on the worker thread, like a removal: never on the loop).
 * An archive the JVM did not use (its warning, or not in its memory map once the job runs), one that is not whole, or
 * one the JVM crashed with before RUNNING is said once and removed; the next recording JVM makes a new one. Nothing
 * here ever holds a launch back. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cds.h"
#include "flinkconf.h"
#include "jattach.h"
#include "jvm.h"
#include "store.h"
#include "sup_cds.h"
#include "sup_standby.h"

#define CDS_MAX_DUMPS 3          /* dumps one supervisor starts at most (each pauses the job) */
#define CDS_DUMP_TIMEOUT_SEC 600 /* the longest wait for the JVM's answer to a dump */
/* The smallest spec.resources.memory under which a JVM records for a dump: the dump builds the archive in the JVM's
 * native memory and writes it through the page cache, both charged to the pod (Flink 2.2's archive is 56 MiB, so
 * about 110 MiB beyond the job's own use), and at 256m that got the JVM OOM-killed 30 s into every run */
#define CDS_MIN_DUMP_MEMORY (512ULL << 20)
/* What a dump takes beyond the pod's resident memory at its start; one that lacks it is not asked for (at 512m the
 * dump took the pod from 422 MiB on average to 516 MiB at its peak) */
#define CDS_DUMP_ROOM (128ULL << 20)

static bool said_before(struct supervisor *s, const char *subject)
{
	for (size_t i = 0; i < s->cds.said.n; i++)
		if (!strcmp(s->cds.said.v[i], subject))
			return true;
	strv_push(&s->cds.said, subject);
	return false;
}

static void turn_off(struct supervisor *s, const char *why)
{
	s->cds.off = true;
	sup_warning(s, "ClassDataSharingOff", "class-data sharing is off: %s; the JVM starts without an archive", why);
}

/* Once: can this JDK, these options and this directory do it at all? */
static bool setup(struct supervisor *s)
{
	if (s->cds.checked)
		return !s->cds.off;
	s->cds.checked = true;
	if (cds_user_options(spec_get(s->spec, "flinklet.jvm.options"))) {
		turn_off(s, "flinklet.jvm.options has class-data-sharing options of its own");
		return false;
	}
	s->cds.java_real = cds_resolve_java(spec_get(s->spec, "flinklet.java.bin"), getenv("PATH"));
	char *home = s->cds.java_real ? cds_java_home(s->cds.java_real) : NULL;
	const char *why = home ? cds_jdk_unsupported(home) : "the java launcher was not found";
	free(home);
	if (why) {
		turn_off(s, why);
		return false;
	}
	const char *dir = spec_get(s->spec, "flinklet.jvm.class-data-sharing.archive-dir");
	s->cds.dir = dir ? xstrdup(dir) : path_join(s->state_dir, "cds");
	if (strpbrk(s->cds.dir, " \t\n\"'")) {
		/* the dump command takes the path as one word */
		turn_off(s, "the archive directory's path has white space or quotes");
		return false;
	}
	int r = mkdir_p(s->cds.dir);
	if (r < 0) {
		char *w = xasprintf("unable to create %s: %s", s->cds.dir, strerror(-r));
		turn_off(s, w);
		free(w);
		return false;
	}
	return true;
}

/* An archive that must not be used again: said once, removed. */
static void reject(struct supervisor *s, const char *path, const char *why)
{
	char *p = xstrdup(path);
	bool not_a_file = !strcmp(why, CDS_NOT_A_FILE); /* not flinklet's to remove */
	if (!said_before(s, p))
		sup_warning(s, "ClassDataSharingArchiveUnusable",
		            "class-data-sharing archive %s: %s; %s: the JVM starts without it, and a later one "
		            "makes a new archive",
		            p, why, not_a_file ? "left in place" : "removed");
	/* on the worker (a network volume's round trip is not the loop's); until it is gone, a launch's choice passes
	 * it over (sup_cds_prepare) */
	if (!not_a_file && !sup_volume_busy(s, p))
		sup_volume_unlink(s, p, NULL, NULL);
	if (s->cds.archive && !strcmp(s->cds.archive, p)) {
		free(s->cds.archive);
		s->cds.archive = NULL;
	}
	free(p);
}

void sup_cds_prepare(struct supervisor *s, struct launch *l)
{
	free(s->cds.archive);
	s->cds.archive = NULL;
	free(s->cds.warning);
	s->cds.warning = NULL;
	s->cds.record = s->cds.init_error = s->cds.ran = false;
	s->cds.dump_timer = sup_disarm(s->cds.dump_timer);
	const char *mode = spec_get(s->spec, "flinklet.jvm.class-data-sharing");
	if ((mode && !strcmp(mode, "off")) || !setup(s))
		return;
	char key[CDS_KEY_LEN + 1];
	int r = cds_key(s->cds.java_real, s->lib_dir, key);
	if (r < 0) {
		if (!said_before(s, "key"))
			log_warn("unable to read the Flink jars in %s for the class-data-sharing key: %s", s->lib_dir,
			         strerror(-r));
		return;
	}
	free(s->cds.prefix);
	s->cds.prefix = cds_archive_prefix(s->flink_version, key);
	char *path = NULL;
	const char *bad = NULL;
	enum cds_choice c = cds_choose(s->cds.dir, s->cds.prefix, s->cds.dumps < CDS_MAX_DUMPS, &path, &bad);
	if (c == CDS_USE && sup_volume_busy(s, path)) {
		/* rejected, its removal still on the worker: not used; a later recording makes a new one */
		free(path);
		path = NULL;
		c = s->cds.dumps < CDS_MAX_DUMPS ? CDS_RECORD : CDS_NONE;
	}
	if (c == CDS_USE) {
		s->cds.archive = path;
		l->cds_archive = path;
		return;
	}
	if (bad)
		reject(s, path, bad);
	free(path);
	if (c == CDS_RECORD && s->spec->memory && s->spec->memory < CDS_MIN_DUMP_MEMORY) {
		if (!said_before(s, "budget"))
			log_info(
			    "no class-data-sharing archive is made at spec.resources.memory %llu MiB: the dump takes "
			    "about twice the archive's size (~110 MiB) beyond the job's own memory, which a budget "
			    "under "
			    "%llu MiB does not have; an archive made under a larger budget is used",
			    (unsigned long long)(s->spec->memory >> 20), CDS_MIN_DUMP_MEMORY >> 20);
		c = CDS_NONE;
	}
	s->cds.record = l->cds_record = c == CDS_RECORD;
}

void sup_cds_standby(struct supervisor *s, struct launch *l, const char *archive)
{
	free(s->cds.archive);
	s->cds.archive = archive ? xstrdup(archive) : NULL;
	free(s->cds.warning);
	s->cds.warning = NULL;
	s->cds.record = s->cds.init_error = s->cds.ran = false;
	s->cds.dump_timer = sup_disarm(s->cds.dump_timer);
	l->cds_archive = s->cds.archive;
	l->cds_record = false;
}

void sup_cds_line(struct supervisor *s, const char *line)
{
	if (!s->cds.archive && !s->cds.record)
		return;
	if (strstr(line, "Error occurred during initialization of VM"))
		s->cds.init_error = true;
	else if (s->cds.archive && !s->cds.warning && cds_line_is_warning(line))
		s->cds.warning = xstrdup(line);
}

/* The dump's temporary file of an earlier JVM of the same pid is removed (on the worker) before the JVM is asked:
 * what the helper finds there afterwards is this JVM's. */
static void dump_tmp_cleared(struct supervisor *s, int r, void *arg)
{
	unsigned gen = (unsigned)(uintptr_t)arg;
	if (s->closing || s->state != SUP_RUNNING || s->launch.jvm_pid <= 0 || s->launch.gen != gen || !s->cds.record ||
	    s->cds.helper > 0)
		return;
	if (r < 0 && r != -ENOENT) {
		log_warn("unable to remove %s: %s; no class-data-sharing dump", s->cds.tmp, strerror(-r));
		return;
	}
	char *cmd = xasprintf("VM.cds dynamic_dump %s", s->cds.tmp);
	pid_t pid;
	int fd;
	int q = jattach_spawn(s->launch.jvm_pid, cmd, s->cds.tmp, CDS_DUMP_TIMEOUT_SEC, &pid, &fd);
	free(cmd);
	if (q < 0) {
		log_warn("unable to start the class-data-sharing dump: %s", strerror(-q));
		return;
	}
	s->cds.helper = pid;
	s->cds.helper_fd = fd;
	s->cds.dump_gen = s->launch.gen;
	s->cds.dump_started = now_monotonic();
	sup_event(s, "ClassDataSharingDump",
	          "asking the JVM (pid %d) to write the classes it loaded into a class-data-sharing archive for the "
	          "next launches (the job pauses while it does)",
	          (int)s->launch.jvm_pid);
}

/* Whether the pod's budget has room for the dump now: its budget less what flinklet and the JVM hold resident. */
static bool room_for_dump(struct supervisor *s)
{
	if (!s->spec->memory)
		return true;
	uint64_t used = proc_resident_bytes(getpid()) + proc_resident_bytes(s->launch.jvm_pid);
	if (used + CDS_DUMP_ROOM <= s->spec->memory)
		return true;
	if (!said_before(s, "room"))
		log_info(
		    "no class-data-sharing dump now: flinklet and the JVM hold %llu MiB of spec.resources.memory %llu "
		    "MiB, and the dump takes about %llu MiB more; an archive made under a larger budget is used",
		    (unsigned long long)(used >> 20), (unsigned long long)(s->spec->memory >> 20), CDS_DUMP_ROOM >> 20);
	return false;
}

static void start_dump(struct supervisor *s)
{
	if (!room_for_dump(s)) {
		s->cds.record = false; /* this JVM's recording is not used */
		return;
	}
	s->cds.dumps++;
	free(s->cds.tmp);
	s->cds.tmp = xasprintf("%s/.%sdump-%d.tmp", s->cds.dir, s->cds.prefix, (int)s->launch.jvm_pid);
	sup_volume_unlink(s, s->cds.tmp, dump_tmp_cleared, (void *)(uintptr_t)s->launch.gen);
}

static int on_dump_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->cds.dump_timer = sup_disarm(s->cds.dump_timer);
	if (s->state == SUP_RUNNING && s->launch.jvm_pid > 0 && s->cds.record && s->cds.helper <= 0)
		start_dump(s);
	return 0;
}

void sup_cds_running(struct supervisor *s)
{
	s->cds.ran = true;
	if (s->cds.archive) {
		char *real = realpath(s->cds.archive, NULL);
		int m = real ? cds_mapped(s->launch.jvm_pid, real) : 0;
		free(real);
		if (m == 1) {
			log_info("the JVM (pid %d) started from the class-data-sharing archive %s",
			         (int)s->launch.jvm_pid, s->cds.archive);
		} else if (m == 0) {
			char *why = xasprintf("the JVM did not use it (%s)",
			                      s->cds.warning ? s->cds.warning : "it said nothing about it");
			reject(s, s->cds.archive, why);
			free(why);
		}
		return;
	}
	if (s->cds.record && s->cds.helper <= 0)
		sup_arm(s, &s->cds.dump_timer, spec_duration(s->spec, "flinklet.jvm.class-data-sharing.dump-delay"),
		        on_dump_timer);
}

void sup_cds_jvm_exited(struct supervisor *s, const struct reaped *r)
{
	s->cds.dump_timer = sup_disarm(s->cds.dump_timer);
	if (s->cds.dumps > 0 && s->cds.dump_gen == s->launch.gen) {
		/* the attach socket of a JVM that was killed stays behind */
		char sock[64];
		snprintf(sock, sizeof(sock), "/tmp/.java_pid%d", (int)r->pid);
		unlink(sock);
	}
	if (s->cds.ran)
		return;
	/* a crash is a signal the JVM gave itself (SIGSEGV, SIGBUS, SIGABRT after hs_err), not one sent to it */
	bool crashed = r->exit_signal > 0 && r->exit_signal != SIGKILL && r->exit_signal != SIGTERM &&
	               r->exit_signal != SIGINT && r->exit_signal != SIGQUIT;
	if (s->cds.archive && (crashed || s->cds.init_error || s->cds.warning)) {
		char *why = s->cds.warning ? xasprintf("the JVM said: %s", s->cds.warning)
		            : crashed ? xasprintf("the JVM that started from it crashed (signal %d) before the job "
		                                  "was RUNNING: it may be the cause",
		                                  r->exit_signal)
		                      : xstrdup("the JVM that started from it failed to initialize");
		reject(s, s->cds.archive, why);
		free(why);
	} else if (s->cds.record && s->cds.init_error) {
		turn_off(s, "the JVM failed to initialize with -XX:+RecordDynamicDumpInfo");
	}
}

static void dump_failed(struct supervisor *s, char *why, double secs)
{
	for (char *c = why; *c; c++)
		if (*c == '\n')
			*c = ' ';
	sup_warning(s, "ClassDataSharingDumpFailed", "no class-data-sharing archive after %.1f s: %s; %s", secs, why,
	            s->cds.dumps < CDS_MAX_DUMPS ? "a later JVM tries again" : "no more tries until flinklet restarts");
	free(why);
}

/* A dump's archive put into place, on the worker thread. */
struct install {
	struct supervisor *s;
	char *tmp, *final, *dir;
	off_t size;
	double secs;
	int r, sync_r, removed;
};

static void install_run(void *arg)
{
	struct install *in = arg;
	if (rename(in->tmp, in->final) < 0) {
		in->r = -errno;
		unlink(in->tmp);
		return;
	}
	in->sync_r = fsync_parent(in->final);
	in->removed = cds_remove_others(in->dir, in->final);
	if (in->removed > 0 && in->sync_r == 0)
		in->sync_r = fsync_parent(in->final);
}

static void install_done(void *arg)
{
	struct install *in = arg;
	struct supervisor *s = in->s;
	if (in->sync_r < 0)
		log_warn("unable to sync the directory of %s: %s", in->final, strerror(-in->sync_r));
	if (in->r < 0 && !s->closing) {
		dump_failed(s, xasprintf("unable to rename %s to %s: %s", in->tmp, in->final, strerror(-in->r)),
		            in->secs);
	} else if (in->r == 0 && !s->closing) {
		s->cds.record = false;
		sup_event(
		    s, "ClassDataSharingArchived",
		    "wrote the class-data-sharing archive %s (%.1f MiB) in %.1f s: the next JVMs of this JDK and these "
		    "Flink jars start from it%s",
		    in->final, (double)in->size / (1 << 20), in->secs,
		    in->removed > 0 ? " (older archives removed)" : "");
		sup_standby_archived(s);
	}
	free(in->tmp);
	free(in->final);
	free(in->dir);
	free(in);
}

/* The dump helper exited: the archive is renamed into place, or the dump is said to have failed. */
static void dump_done(struct supervisor *s, const struct reaped *r)
{
	char answer[JATTACH_ANSWER_MAX + 1];
	size_t n = 0;
	for (;;) {
		ssize_t k = read(s->cds.helper_fd, answer + n, sizeof(answer) - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (n += (size_t)k) >= sizeof(answer) - 1)
			break;
	}
	answer[n] = '\0';
	close(s->cds.helper_fd);
	s->cds.helper = 0;
	s->cds.helper_fd = -1;
	double secs = (double)(now_monotonic() - s->cds.dump_started) / USEC_PER_SEC;
	bool same_jvm = s->launch.jvm_pid > 0 && s->launch.gen == s->cds.dump_gen;
	struct stat st;
	char *why = NULL;
	if (r->exit_code != JATTACH_ANSWERED)
		why = xstrdup(r->exit_signal >= 0 ? "the helper was killed" : jattach_strexit(r->exit_code));
	else if (!cds_dump_answer_ok(answer))
		why = xasprintf("the JVM answered: %.300s", answer);
	else if (!same_jvm)
		why = xstrdup("the JVM ended during the dump");
	else if (stat(s->cds.tmp, &st) < 0 || st.st_size == 0 || !cds_is_dynamic_archive(s->cds.tmp))
		why = xstrdup("the JVM wrote no archive");
	if (why) {
		sup_volume_unlink(s, s->cds.tmp, NULL, NULL);
		dump_failed(s, why, secs);
		return;
	}
	/* the rename into place and the removal of the others, on the worker (the archive itself was fsynced by the
	 * helper) */
	struct install *in = xcalloc(1, sizeof(*in));
	in->s = s;
	in->tmp = xstrdup(s->cds.tmp);
	in->dir = xstrdup(s->cds.dir);
	char *name = cds_archive_name(s->cds.prefix, (uint64_t)st.st_size);
	in->final = path_join(s->cds.dir, name);
	free(name);
	in->size = st.st_size;
	in->secs = secs;
	worker_submit(s->worker, install_run, install_done, in);
}

bool sup_cds_reaped(struct supervisor *s, const struct reaped *r)
{
	if (s->cds.helper <= 0 || r->pid != s->cds.helper)
		return false;
	dump_done(s, r);
	return true;
}

void sup_cds_free(struct supervisor *s)
{
	sup_disarm(s->cds.dump_timer);
	if (s->cds.helper > 0) {
		kill(s->cds.helper, SIGKILL);
		close(s->cds.helper_fd);
		if (s->cds.tmp)
			unlink(s->cds.tmp);
	}
	free(s->cds.dir);
	free(s->cds.prefix);
	free(s->cds.java_real);
	free(s->cds.archive);
	free(s->cds.warning);
	free(s->cds.tmp);
	strv_free(&s->cds.said);
}
