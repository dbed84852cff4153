/* sup_scratch: the JVM's local scratch directory (flinklet.scratch.dir, else <state dir>/tmp on the volume):
 * opened at the start, with what earlier supervisors' JVMs left removed by a child; emptied before each launch by
 * renaming the earlier JVM's aside, its room measured on the worker thread against what the job's state wants
 * there (the ScratchSpaceLow warning), what was set aside removed by a child process; removed at exit when no JVM
 * holds it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch.h"
#include "store.h"
#include "sup_scratch.h"

/* The scratch's room against what the job's state needs there (scratch_need of the newest checkpoint's size Flink
 * reported, kept in status.json): short of it, a ScratchSpaceLow warning (the event once per need that grows; in
 * the status' warnings until a launch finds room), since a full scratch fails RocksDB and an emptyDir past its
 * sizeLimit has the pod evicted without a savepoint. The room is what the next JVM will have: the free space plus
 * what the earlier JVMs' scratch set aside still holds, which its removal frees (scratch_room). */
static void check_scratch_space(struct supervisor *s, int r, int64_t avail)
{
	int64_t need = scratch_need(s->status.state_size);
	if (r < 0) {
		log_warn("unable to read the free space of %s: %s", s->scratch.dir, strerror(-r));
		return;
	}
	if (avail >= need) {
		if (s->status.warnings[STATUS_WARN_SCRATCH_SPACE].message) {
			sup_warning_clear(s, STATUS_WARN_SCRATCH_SPACE);
			sup_write_status(s);
		}
		return;
	}
	char *msg = xasprintf(
	    "the JVM's scratch directory %s has %.0f MiB free, less than the %.0f MiB the job's state wants there "
	    "(twice the newest checkpoint's %s plus %.0f MiB): RocksDB fails once it is full, and a Kubernetes "
	    "emptyDir past its sizeLimit gets the pod evicted; give flinklet.scratch.dir more room "
	    "(docs/deployment.md, \"Scratch space\")",
	    s->scratch.dir, (double)avail / (1 << 20), (double)need / (1 << 20),
	    s->status.state_size >= 0 ? "state size" : "state size (none known yet)",
	    (double)SCRATCH_FIXED_BYTES / (1 << 20));
	sup_warning_set(s, STATUS_WARN_SCRATCH_SPACE, msg);
	sup_write_status(s);
	if (need > s->scratch.warned_need) {
		s->scratch.warned_need = need;
		sup_warning(s, "ScratchSpaceLow", "%s", msg);
	}
	free(msg);
}

/* The scratch measured on the worker thread (it walks what is set aside), then the earlier JVM's scratch removed. */
struct scratch_measure {
	struct supervisor *s;
	char *dir;
	char *old; /* the earlier JVM's scratch, set aside (NULL: none): removed once measured */
	int r;
	int64_t room;
};

static void scratch_measure_run(void *arg)
{
	struct scratch_measure *m = arg;
	m->r = scratch_room(m->dir, &m->room);
}

static void scratch_measure_done(void *arg)
{
	struct scratch_measure *m = arg;
	struct supervisor *s = m->s;
	/* (the loop over: the warning is moot, and what is set aside is the next start's leftover) */
	if (!s->closing) {
		check_scratch_space(s, m->r, m->room);
		if (m->old) {
			struct strv v = {0};
			strv_push_take(&v, m->old);
			m->old = NULL;
			pid_t pid = scratch_remove(&v);
			if (pid < 0)
				log_warn("unable to remove %s: %s", v.v[0], strerror((int)-pid));
			strv_free(&v);
		}
	}
	free(m->old);
	free(m->dir);
	free(m);
}

/* An empty scratch directory for the JVM: the earlier JVM's (RocksDB's working files, spills, BLOBs) is renamed
 * aside; its room is measured on the worker thread (ahead of the launch's intent in the worker's order, so the
 * warning comes before the JVM), and what was set aside is removed by a child process afterwards, off the loop. */
int sup_scratch_prepare(struct supervisor *s)
{
	char *old = NULL;
	int r = scratch_rotate(s->scratch.dir, s->launch.gen + 1, &old);
	if (r < 0) {
		log_error("unable to prepare the JVM's scratch directory %s: %s", s->scratch.tmp_dir, strerror(-r));
		return r;
	}
	struct scratch_measure *m = xcalloc(1, sizeof(*m));
	m->s = s;
	m->dir = xstrdup(s->scratch.dir);
	m->old = old;
	worker_submit(s->worker, scratch_measure_run, scratch_measure_done, m);
	return 0;
}

void sup_scratch_setup(struct supervisor *s)
{
	const char *dir = spec_get(s->spec, "flinklet.scratch.dir");
	char *def = scratch_default_dir(s->spec->name, s->state_dir);
	char *err = NULL;
	if (dir && scratch_open(dir, !strcmp(dir, def), &err) == 0) {
		s->scratch.dir = xstrdup(dir);
	} else {
		s->scratch.dir = path_join(s->state_dir, "tmp");
		log_warn("%s; the JVM's scratch space is %s on the state volume instead",
		         err ? err : "no scratch directory", s->scratch.dir);
		mkdir_p(s->scratch.dir);
	}
	free(err);
	free(def);
	s->scratch.tmp_dir = path_join(s->scratch.dir, "jvm");
	/* what earlier supervisors left: their JVMs' scratch directories (and their standby JVMs'), and <state dir>/tmp
	 * of the versions that kept it on the volume */
	struct strv old = {0};
	scratch_set_aside(s->scratch.dir, &old);
	scratch_standby_dirs(s->scratch.dir, &old);
	char *legacy = path_join(s->state_dir, "tmp");
	if (strcmp(legacy, s->scratch.dir) && access(legacy, F_OK) == 0)
		strv_push(&old, legacy);
	free(legacy);
	pid_t pid = scratch_remove(&old);
	if (pid < 0)
		log_warn("unable to remove the scratch directories earlier JVMs left: %s", strerror((int)-pid));
	strv_free(&old);
}

void sup_scratch_free(struct supervisor *s)
{
	/* nothing in it outlives the JVM; the loop is over, so this may wait (a JVM still running keeps it: the next
	 * launch puts it aside) */
	if (s->launch.jvm_pid <= 0 && s->scratch.tmp_dir) {
		rm_rf(s->scratch.tmp_dir);
		if (s->scratch.dir)
			rmdir(s->scratch.dir); /* when empty: not another's leftovers */
	}
	free(s->scratch.tmp_dir);
	free(s->scratch.dir);
	s->scratch.tmp_dir = s->scratch.dir = NULL;
}
