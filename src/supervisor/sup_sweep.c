/* sup_sweep: the sweep part: the leftovers of dead JVMs on the volume, found and set aside before a launch on the
 * worker thread (src/flink/leftovers.h says what is a leftover and what always stays), removed by a child process
 * while the new JVM starts. The worker runs the sweep ahead of the launch's intent (its order), so the renames are
 * done before the JVM is spawned and the list is fixed while no JVM writes: nothing the new JVM writes is on it. A
 * complete checkpoint is renamed chk-N.disposing before it is removed (a crash in the middle leaves a name no scan
 * restores from; the next sweep removes it); unfinished checkpoints and savepoints (no _metadata) and shared/ files
 * are never restore points and are removed where they are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvm.h"
#include "leftovers.h"
#include "store.h"
#include "sup_restore.h"
#include "sup_sweep.h"

#define SWEEP_MAX_METADATA (256ULL << 20)

struct sweep_job {
	struct supervisor *s; /* touched on the loop only (the done callback) */
	unsigned gen;
	char *ckpt_dir, *sp_dir, *job_id, *restore, *keep_path;
	struct strv claimed; /* the claimed savepoints, local paths */
	unsigned keep;
	struct leftovers found;
	struct strv remove; /* what the child removes: the renamed checkpoints, the savepoints, the files */
	int r;
	unsigned not_renamed, dirs_not_renamed;
};

static void sweep_job_free(struct sweep_job *j)
{
	leftovers_free(&j->found);
	strv_free(&j->remove);
	strv_free(&j->claimed);
	free(j->ckpt_dir);
	free(j->sp_dir);
	free(j->job_id);
	free(j->restore);
	free(j->keep_path);
	free(j);
}

/* On the worker thread: find, and rename the checkpoints aside (one directory fsync for them all). */
/* Each path of list onto the removal list, renamed aside to *.disposing first (a name no scan restores from) unless
 * it has that name already; one that cannot be renamed stays where it is and counts in *not_renamed. Returns how many
 * were renamed. */
static size_t rename_aside(struct sweep_job *j, const struct strv *list, unsigned *not_renamed)
{
	size_t renamed = 0;
	for (size_t i = 0; i < list->n; i++) {
		const char *p = list->v[i];
		if (str_has_suffix(p, SAVEPOINT_DISPOSING_SUFFIX)) {
			strv_push(&j->remove, p);
			continue;
		}
		char *aside = xasprintf("%s%s", p, SAVEPOINT_DISPOSING_SUFFIX);
		if (rename(p, aside) == 0) {
			strv_push(&j->remove, aside);
			renamed++;
		} else {
			(*not_renamed)++;
		}
		free(aside);
	}
	return renamed;
}

static void sweep_run(void *arg)
{
	struct sweep_job *j = arg;
	struct leftovers_scan in = {
	    .checkpoint_dir = j->ckpt_dir,
	    .savepoint_dir = j->sp_dir,
	    .job_id = j->job_id,
	    .keep = j->keep,
	    .restore_path = j->restore,
	    .keep_path = j->keep_path,
	    .max_metadata_bytes = SWEEP_MAX_METADATA,
	    .claimed = (const char *const *)j->claimed.v,
	};
	j->r = leftovers_find(&in, &j->found);
	if (j->r < 0)
		return;
	/* complete checkpoints (all in the job's directory: one fsync of it), and directories of shared/ or taskowned/
	 * that go whole (the new JVM may make one of the same name, ForSt's working directory of the same subtask,
	 * while the child removes) */
	if (rename_aside(j, &j->found.checkpoints, &j->not_renamed) > 0)
		fsync_parent(j->found.checkpoints.v[0]);
	for (size_t i = 0; i < j->found.dirs.n; i++) {
		struct strv one = {.v = &j->found.dirs.v[i], .n = 1};
		if (rename_aside(j, &one, &j->dirs_not_renamed) > 0)
			fsync_parent(j->found.dirs.v[i]);
	}
	for (size_t i = 0; i < j->found.savepoints.n; i++)
		strv_push(&j->remove, j->found.savepoints.v[i]);
	for (size_t i = 0; i < j->found.shared.n; i++)
		strv_push(&j->remove, j->found.shared.v[i]);
}

static void sweep_done(void *arg)
{
	struct sweep_job *j = arg;
	struct supervisor *s = j->s;
	if (s->closing || j->gen != s->sweep.gen) {
		sweep_job_free(j);
		return;
	}
	s->sweep.finding = false;
	sup_restore_forget_claimed(s, &j->found.claimed_gone);
	if (j->r < 0)
		log_warn("unable to look for what dead JVMs left in %s/%s: %s", j->ckpt_dir, j->job_id,
		         strerror(-j->r));
	if (j->found.shared_skipped)
		log_info("shared/ of job %s is not swept: %s", j->job_id, j->found.shared_skipped);
	if (j->not_renamed)
		log_warn("%u checkpoint(s) of earlier JVMs could not be renamed aside and stay", j->not_renamed);
	if (j->dirs_not_renamed)
		log_warn("%u directories of earlier JVMs in shared/ or taskowned/ could not be renamed aside and stay",
		         j->dirs_not_renamed);
	if (j->remove.n == 0) {
		sweep_job_free(j);
		return;
	}
	pid_t pid = rm_rf_child(&j->remove);
	if (pid < 0) {
		log_warn("unable to remove what dead JVMs left: %s; the next launch tries again", strerror((int)-pid));
		sweep_job_free(j);
		return;
	}
	s->sweep.remover = pid;
	s->sweep.bytes = j->found.bytes;
	s->sweep.items = (unsigned)j->remove.n;
	log_info("removing what dead JVMs left of job %s: %zu checkpoint(s) (beyond the %u kept, or unfinished), %zu "
	         "unfinished savepoint(s), %zu file(s) and %zu directories of shared/ and taskowned/ that no kept "
	         "snapshot names (%.1f MB; %u shared file(s) stay)",
	         j->job_id, j->found.checkpoints.n - j->not_renamed, j->found.kept_checkpoints, j->found.savepoints.n,
	         j->found.shared.n, j->found.dirs.n - j->dirs_not_renamed, (double)j->found.bytes / 1e6,
	         j->found.kept_shared);
	sweep_job_free(j);
}

void sup_sweep_before_launch(struct supervisor *s, const char *restore_path)
{
	if (!spec_bool(s->spec, "flinklet.leftovers.cleanup") || s->sweep.finding || s->sweep.remover > 0)
		return;
	struct sweep_job *j = xcalloc(1, sizeof(*j));
	j->s = s;
	j->gen = ++s->sweep.gen;
	j->ckpt_dir = xstrdup(s->ckpt_dir);
	j->sp_dir = xstrdup(s->sp_dir);
	j->job_id = xstrdup(s->job_id);
	j->restore = restore_path ? xstrdup(restore_path) : NULL;
	const char *base = sup_upgrade_base(s);
	j->keep_path = base ? xstrdup(base) : NULL;
	for (int i = 0; i < s->status.n_claimed_savepoints; i++) {
		char *p = local_path_from_uri(s->status.claimed_savepoints[i].location);
		if (p)
			strv_push_take(&j->claimed, p);
	}
	int64_t keep = spec_int(s->spec, "execution.checkpointing.num-retained");
	j->keep = keep > 0 ? (unsigned)keep : 1;
	s->sweep.finding = true;
	s->sweep.started = now_monotonic();
	worker_submit(s->worker, sweep_run, sweep_done, j);
}

bool sup_sweep_reaped(struct supervisor *s, const struct reaped *r)
{
	if (s->sweep.remover <= 0 || r->pid != s->sweep.remover)
		return false;
	s->sweep.remover = 0;
	if (r->exit_code == 0) {
		s->sweep.removed_bytes_total += s->sweep.bytes;
		sup_event(s, "LeftoversRemoved",
		          "removed %u checkpoint(s), savepoint(s) and shared file(s) that dead JVMs left of job %s "
		          "(%.1f MB) in %.1f s; every kept restore point and the files it names stay",
		          s->sweep.items, s->job_id, (double)s->sweep.bytes / 1e6,
		          (double)(now_monotonic() - s->sweep.started) / USEC_PER_SEC);
	} else {
		sup_warning(s, "LeftoversRemoveFailed",
		            "the removal of what dead JVMs left of job %s %s; the next launch tries again", s->job_id,
		            r->exit_signal >= 0 ? "was killed" : "could not remove every file");
	}
	return true;
}

void sup_sweep_free(struct supervisor *s)
{
	s->sweep.gen++; /* a find still on the worker is dropped when it comes back */
}
