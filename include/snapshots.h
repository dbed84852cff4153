/* snapshots: restore points on the volume. Lists the complete checkpoints of the job
 * (<checkpoint dir>/<jobId>/chk-N/_metadata), its savepoints (savepoint-<jobId6>-X/_metadata in the
 * savepoint directory, plus those the status document records) and, on the very first start, the
 * initial savepoint; checks each _metadata header; and orders them newest first. Pure file-system reads:
 * no process, no network. */
#ifndef FLINKLET_SNAPSHOTS_H
#define FLINKLET_SNAPSHOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum restore_kind { RESTORE_NONE, RESTORE_CHECKPOINT, RESTORE_SAVEPOINT };
const char *restore_kind_to_string(enum restore_kind k);

struct restore_point {
	enum restore_kind kind;
	char *path;   /* the snapshot's directory, absolute */
	int64_t id;   /* checkpoint id from the metadata header, -1 when unknown */
	usec_t time;  /* when it completed (mtime of _metadata) */
	bool initial; /* spec.job.initialSavepointPath */
};

struct restore_scan {
	const char *checkpoint_dir; /* <execution.checkpointing.dir>, a local path */
	const char *savepoint_dir;  /* <execution.checkpointing.savepoint-dir>, a local path */
	const char *job_id;
	const char *const *recorded_savepoints; /* from status.json; NULL-terminated; may be NULL */
	const char *initial_savepoint;          /* NULL, or used only when first_start */
	bool first_start;
};

struct restore_list {
	struct restore_point *v;
	size_t n;
	struct strv skipped; /* "why" lines for snapshots that were passed over */
};

/* Fills list, newest first. Returns 0, or -errno when a directory could not be read (a missing one is
 * empty); the list then holds what the readable ones have, still sorted. */
int restore_points_scan(const struct restore_scan *scan, struct restore_list *list);
void restore_list_free(struct restore_list *list);

/* Checks a snapshot directory's _metadata: present, a regular file, Flink's magic number. Returns 0
 * with *ret_id (the checkpoint id in the header), or -errno / -EBADMSG with a reason in why. */
int snapshot_check(const char *dir, int64_t *ret_id, usec_t *ret_time, char **why);

/* The newest savepoint-<jobId6>-X/_metadata in dir completed at or after since (0: any). Returns a
 * malloc'd directory path or NULL. */
char *savepoint_find_newest(const char *dir, const char *job_id, usec_t since);

#endif
