/* sup_setup: the driver's set-up of the state directory before the loop starts, step by step: made and checked
 * writable, locked (one supervisor per volume), its event log writable, the records' and the scratch directory's
 * set-up, what interrupted writes left removed, the checkpoint and savepoint directories found and locked, the last
 * run's status carried over, a stateless restart after a suspend given a new job id, and the job id kept. It writes
 * the core's fields of the state directory as the driver does (tests/static/test_layout.py: CORE_WRITERS). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts.h"
#include "store.h"
#include "sup_launch.h"
#include "sup_observe.h"
#include "sup_poll.h"
#include "sup_scratch.h"
#include "sup_setup.h"

/* The sweep (sup_sweep.c) removes files from the checkpoint and the savepoint directory, which may lie outside the
 * state directory (execution.checkpointing.dir elsewhere, or checkpoints/ a link to a bigger disk): a copied volume
 * would give two supervisors one of them, and one's sweep would remove the other JVM's files. Each directory, as it
 * resolves, is locked itself (flock of the directory, which no file in it can undo) for the supervisor's life, with
 * the holder's pid and state directory in .flinklet-lock beside it (Flink's scans never list it); a second supervisor
 * there refuses to start (3), naming the holder. Returns 0 or 3. */
static int lock_swept_dirs(struct supervisor *s)
{
	const char *dirs[2] = {s->ckpt_dir, s->sp_dir};
	const char *what[2] = {"checkpoint", "savepoint"};
	char *real[2] = {NULL, NULL};
	int ret = 0;
	char *who = xasprintf("%ld %s\n", (long)getpid(), s->state_dir);
	for (int i = 0; i < 2 && !ret; i++) {
		int r = mkdir_p(dirs[i]);
		real[i] = r < 0 ? NULL : realpath(dirs[i], NULL);
		if (!real[i]) {
			log_fatal("unable to create the %s directory %s: %s", what[i], dirs[i],
			          strerror(r < 0 ? -r : errno));
			ret = 3;
			break;
		}
		if (i == 1 && !strcmp(real[0], real[1]))
			break; /* one directory for both: one lock */
		char *holder = NULL;
		s->dir_lock_fd[i] = store_lock_dir(real[i], ".flinklet-lock", who, &holder);
		if (s->dir_lock_fd[i] == -EBUSY) {
			char *pid_end = NULL;
			long pid = holder ? strtol(holder, &pid_end, 10) : 0;
			log_fatal(
			    "the %s directory %s%s%s is used by another flinklet (pid %ld, state directory %s): two "
			    "supervisors must not share a job's %ss (a copied volume?); refusing to start",
			    what[i], dirs[i], strcmp(dirs[i], real[i]) ? ", that is " : "",
			    strcmp(dirs[i], real[i]) ? real[i] : "", pid,
			    pid_end && *pid_end == ' ' ? pid_end + 1 : "unknown", what[i]);
			ret = 3;
		} else if (s->dir_lock_fd[i] < 0) {
			log_fatal("unable to lock the %s directory %s: %s", what[i], real[i],
			          strerror(-s->dir_lock_fd[i]));
			ret = 3;
		}
		free(holder);
	}
	free(real[0]);
	free(real[1]);
	free(who);
	return ret;
}

/* The state directory, made if need be: it must be writable. 0, or the exit code. */
static int make_state_dir(struct supervisor *s)
{
	s->state_dir = xstrdup(spec_get(s->spec, "flinklet.state.dir"));
	int r = mkdir_p(s->state_dir);
	if (r < 0) {
		log_fatal("unable to create the state directory %s: %s", s->state_dir, strerror(-r));
		return 3;
	}
	if (access(s->state_dir, W_OK) < 0) {
		log_fatal("the state directory %s is not writable: %s", s->state_dir, strerror(errno));
		return 3;
	}
	return 0;
}

/* The state directory's lock: one supervisor per volume. 0, or the exit code. */
static int lock_state_dir(struct supervisor *s)
{
	long owner = 0;
	s->lock_fd = store_lock(s->state_dir, &owner);
	if (s->lock_fd == -EBUSY) {
		log_fatal("the state directory %s is locked by another flinklet (pid %ld); refusing to start",
		          s->state_dir, owner);
		return 3;
	}
	if (s->lock_fd < 0) {
		log_fatal("unable to lock the state directory %s: %s", s->state_dir, strerror(-s->lock_fd));
		return 3;
	}
	return 0;
}

/* The event log is appended in place (not replaced as status.json is): one this uid cannot write (a chmod, another
 * uid's file outside the group) would lose every event while the job runs. 0, or the exit code. */
static int check_event_log(struct supervisor *s)
{
	char *ev = path_join(s->state_dir, "events.jsonl");
	int q = access(ev, W_OK) < 0 && errno != ENOENT ? -errno : 0;
	if (q < 0) {
		log_fatal("the event log %s is not writable by uid %u: %s (make it writable, e.g. chmod g+w, or "
		          "remove it); refusing to start",
		          ev, (unsigned)geteuid(), strerror(-q));
		free(ev);
		return 3;
	}
	free(ev);
	return 0;
}

/* What a crash between a write and its rename left behind (the files themselves are intact), and the jar
 * downloads an earlier flinklet did not finish. */
static void clean_interrupted_writes(struct supervisor *s)
{
	char *as_dir = path_join(s->state_dir, "autoscaler");
	const char *dirs[] = {s->state_dir, s->conf_dir, as_dir};
	int removed = 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		int q = store_clean_temps(dirs[i]);
		removed += q > 0 ? q : 0;
	}
	if (removed > 0)
		log_info("removed %d temporary file%s an interrupted write left in %s", removed,
		         removed == 1 ? "" : "s", s->state_dir);
	free(as_dir);
	int parts = artifact_clean_parts(s->state_dir);
	if (parts > 0)
		log_info("removed %d unfinished jar download%s an earlier flinklet left in %s/artifacts", parts,
		         parts == 1 ? "" : "s", s->state_dir);
}

/* The checkpoint and savepoint directories, which must be local paths. 0, or the exit code. */
static int find_snapshot_dirs(struct supervisor *s)
{
	s->ckpt_dir = local_path_from_uri(spec_get(s->spec, "execution.checkpointing.dir"));
	s->sp_dir = local_path_from_uri(spec_get(s->spec, "execution.checkpointing.savepoint-dir"));
	if (!s->ckpt_dir || !s->sp_dir) {
		log_fatal("the checkpoint and savepoint directories must be local paths");
		return 3;
	}
	return 0;
}

/* What the last run knew (savepoints, restart counts, a finished job) carries over; returns the lifecycle it
 * left (CREATED when there was none). */
static enum lifecycle_state carry_over_status(struct supervisor *s)
{
	char *path = path_join(s->state_dir, "status.json");
	char *text = NULL;
	bool first_start = true;
	enum lifecycle_state old_lifecycle = LIFECYCLE_CREATED;
	if (read_file(path, 4u << 20, &text, NULL) == 0) {
		struct status old;
		if (status_parse(text, &old) == 0) {
			status_carry_over(&s->status, &old);
			old_lifecycle = old.lifecycle;
			first_start = old.start_time_ms == 0;
		} else {
			log_warn("status.json in %s is unreadable; starting a new one", s->state_dir);
		}
		status_free(&old);
		free(text);
	}
	free(path);
	sup_launch_first_start(s, first_start);
	return old_lifecycle;
}

/* upgradeMode stateless after a suspend: a new job id; the old job's checkpoints stay where they are, untouched
 * and unused. */
static void start_as_new_job(struct supervisor *s)
{
	char *idpath = path_join(s->state_dir, "job-id");
	unlink(idpath);
	free(idpath);
	sup_launch_fresh_start(s);
	sup_forget_job_state(s);
	sup_poll_new_job(s);
}

/* The job id on the volume (kept, or made and written) and in the records. 0, or the exit code. */
static int keep_job_id(struct supervisor *s)
{
	int r = store_job_id(s->state_dir, s->job_id);
	if (r < 0) {
		log_fatal("unable to keep the job id in %s: %s", s->state_dir, strerror(-r));
		return 3;
	}
	sup_record_job_id(s);
	return 0;
}

int sup_setup_state_dir(struct supervisor *s)
{
	int r;
	if ((r = make_state_dir(s)) || (r = lock_state_dir(s)) || (r = check_event_log(s)))
		return r;
	store_repair_events(s->state_dir);
	sup_observe_setup(s);
	s->conf_dir = path_join(s->state_dir, "conf");
	sup_scratch_setup(s);
	clean_interrupted_writes(s);
	if ((r = find_snapshot_dirs(s)) || (r = lock_swept_dirs(s)))
		return r;
	enum lifecycle_state old_lifecycle = carry_over_status(s);
	if (s->spec->job.upgrade_mode == UPGRADE_STATELESS && old_lifecycle == LIFECYCLE_SUSPENDED)
		start_as_new_job(s);
	return keep_job_id(s);
}
