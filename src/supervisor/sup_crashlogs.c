/* sup_crashlogs: the JVMs' fatal-error logs (hs_err_pid<N>.log in <state dir>/jvm-crashes, src/flink/crashlogs.c):
 * after each JVM, the log it left is said (a JvmCrashLog warning) and only those of the newest crashes stay
 * (flinklet.jvm.crash-logs), on the worker thread: a directory scan and unlinks on the volume. It owns no state of
 * the supervisor. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "crashlogs.h"
#include "jvm.h"
#include "sup_crashlogs.h"

struct crash_prune {
	struct supervisor *s;
	char *dir, *state_dir;
	unsigned keep;
	pid_t pid;
	int exit_signal;
	struct crashlogs_pruned p;
};

static void crash_prune_run(void *arg)
{
	struct crash_prune *c = arg;
	crashlogs_prune(c->dir, c->state_dir, c->keep, c->pid, &c->p);
}

static void crash_prune_done(void *arg)
{
	struct crash_prune *c = arg;
	if (c->p.log)
		sup_warning(c->s, "JvmCrashLog", "the JVM (pid %d%s%s) left its fatal-error log: %s", (int)c->pid,
		            c->exit_signal >= 0 ? ", signal " : "",
		            c->exit_signal >= 0 ? strsignal(c->exit_signal) : "", c->p.log);
	if (c->p.removed)
		log_info("removed %u fatal-error log file(s) of older JVM crashes (flinklet.jvm.crash-logs: %u kept)",
		         c->p.removed, c->keep);
	if (c->p.r < 0)
		log_warn("the JVM's fatal-error logs in %s: %s", c->dir, strerror(-c->p.r));
	if (c->p.skipped)
		log_warn("%s %s: flinklet removes no fatal-error logs there (flinklet.jvm.crash-logs does not apply)",
		         c->dir, c->p.skipped);
	free(c->p.log);
	free(c->dir);
	free(c->state_dir);
	free(c);
}

void sup_crashlogs_jvm_exited(struct supervisor *s, const struct reaped *r)
{
	if (!s->state_dir)
		return;
	struct crash_prune *c = xcalloc(1, sizeof(*c));
	c->s = s;
	c->dir = path_join(s->state_dir, CRASHLOGS_DIR);
	c->state_dir = xstrdup(s->state_dir); /* where JVMs wrote them before (their working directory) */
	c->keep = (unsigned)spec_int(s->spec, "flinklet.jvm.crash-logs");
	c->pid = r->pid;
	c->exit_signal = r->exit_signal;
	worker_submit(s->worker, crash_prune_run, crash_prune_done, c);
}
