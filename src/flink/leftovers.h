/* leftovers: what dead JVMs leave on the volume besides the restore points flinklet keeps, found by reading the
 * snapshots themselves while no JVM runs (before a launch: nothing is in flight, so nothing unfinished is a
 * checkpoint or savepoint still being written). Flink deletes only the checkpoints of its own JVM: every JVM that
 * dies (kill -9, a crash, a last-state stop, a savepoint past the budget) leaves its other retained checkpoints,
 * the chk-N of a checkpoint in flight (no _metadata), a partial savepoint directory, and the files of the job's
 * shared/ directory that only those referenced. Pure file-system reads: the caller removes what is listed.
 *
 * What stays, always: the newest `keep` complete checkpoints (by id), the point the launch restores, every
 * damaged or given-up (*.unreadable) point, every complete savepoint that was not claimed, and every file of
 * shared/ whose name appears in the _metadata of any of them (a checkpoint names its files by path; the search is
 * for the bytes of the name, so an unusual encoding can only keep a file, never lose one). A checkpoint directory
 * that a kept _metadata names a file in stays too. shared/ is left alone when a kept _metadata cannot be read in
 * full, or when there is more of it than max_metadata_bytes.
 *
 * A claimed savepoint (restored in claim mode: the job's checkpoints own it and share its files) counts as the
 * checkpoint it became: kept while it is among the newest `keep` or the restore point; beyond them, what a dead JVM
 * did not subsume goes: the whole directory when no kept _metadata names it, else its _metadata and the files no
 * kept _metadata names (Flink's own disposal of a subsumed point, done for a JVM that died first). A savepoint
 * directory without _metadata is removed whole only when no kept _metadata names it (what Flink leaves of a claimed
 * one it disposed of holds the files newer checkpoints share); when one does, only its unnamed files go.
 *
 * The subdirectories of shared/ and everything in taskowned/ are swept by the same rule, to any depth below them
 * (TREE_MAX_DEPTH): ForSt's working directories (shared/op_<operator>_<subtask>__attempt_<n>/db/, when its primary
 * directory is the checkpoint directory) and the file-merging directories (shared/<subtask>/, taskowned/<task
 * manager>/) hold the files a checkpoint names by path; every regular file there that no kept _metadata names
 * goes, and a directory goes whole once none of its files is named and it holds nothing else (a link, a device, a
 * dot file keep it, and are never removed). shared/ and taskowned/ themselves stay. Links are never followed. */
#ifndef FLINKLET_LEFTOVERS_H
#define FLINKLET_LEFTOVERS_H

#include <stdint.h>

#include "util.h"

struct leftovers_scan {
	const char *checkpoint_dir; /* execution.checkpointing.dir, a local path */
	const char *savepoint_dir;  /* execution.checkpointing.savepoint-dir, a local path */
	const char *job_id;
	unsigned keep;               /* the newest complete checkpoints kept (num-retained; at least 1) */
	const char *restore_path;    /* the point the launch restores (NULL: none), kept whatever its rank */
	uint64_t max_metadata_bytes; /* more kept _metadata than this: shared/ is not swept */
	const char *const *claimed;  /* savepoints restored in claim mode (local paths), NULL-terminated; may be NULL */
	const char *keep_path;       /* one more kept whatever its rank: an upgrade's base while it is on trial */
};

struct leftovers {
	/* chk-N directories to remove (beyond the kept ones, or without _metadata), and claimed savepoints beyond the
	 * kept ones that no kept _metadata names: complete points, renamed aside before they are removed */
	struct strv checkpoints;
	struct strv savepoints; /* savepoint-<jobId6>-X directories of the job without _metadata that nothing names */
	/* files of <checkpoint dir>/<jobId>/shared/ that no kept _metadata names; and of a claimed savepoint beyond
	 * the kept ones (or one without _metadata) that a kept _metadata names: its _metadata and unnamed files */
	struct strv shared;
	/* directories below shared/ and taskowned/ (ForSt's working directories, file merging's) none of whose files
	 * a kept _metadata names, holding only Flink's files and directories: renamed aside, then removed whole */
	struct strv dirs;
	struct strv claimed_gone; /* the claimed savepoints given that are gone, or go whole with this sweep */
	uint64_t bytes;           /* what all of it holds */
	unsigned kept_checkpoints, kept_shared;
	char *shared_skipped; /* why shared/ was not swept (NULL: it was) */
};

/* Fills out. Returns 0, or -errno when the job's checkpoint directory could not be read (then nothing is
 * listed: an unreadable directory is no evidence that its points are gone). */
int leftovers_find(const struct leftovers_scan *in, struct leftovers *out);
void leftovers_free(struct leftovers *l);

#endif
