/* snapshots: restore points on the volume. Lists the complete checkpoints of the job
 * (<checkpoint dir>/<jobId>/chk-N/_metadata), its savepoints (savepoint-<jobId6>-X/_metadata in the
 * savepoint directory, plus those the status document records) and, on the very first start, the
 * initial savepoint; checks each _metadata header; and orders them newest first, by the checkpoint id in
 * the header (never by file times, which a copy or a clock step changes). Pure file-system reads:
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
	int64_t id;   /* checkpoint id from the metadata header: what orders them */
	usec_t time;  /* mtime of _metadata: only breaks a tie of ids (copies lose it, clocks step) */
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

/* A snapshot whose _metadata is there but is not Flink's (truncated, foreign, not a regular file): not an
 * incomplete one a crash left (those have no _metadata), a damaged one. */
struct corrupt_point {
	enum restore_kind kind;
	char *path;
	int64_t id;  /* from the chk-N name; -1 for a savepoint (its header is what cannot be read) */
	usec_t time; /* mtime of _metadata */
	char *why;
};

struct restore_list {
	struct restore_point *v;
	size_t n;
	struct strv skipped; /* "why" lines for snapshots that were passed over */
	struct corrupt_point *corrupt;
	size_t ncorrupt;
	size_t given_up; /* directories renamed *.unreadable by an earlier start (Flink could not read them) */
};

/* Whether c is newer than p (NULL: no restore point at all): by id when both are known, else by time. */
bool corrupt_point_is_newer(const struct corrupt_point *c, const struct restore_point *p);

/* Fills list, newest first: the highest checkpoint id first; on the same id a checkpoint before a
 * savepoint, then the newer _metadata, then the path. Recorded savepoints of another job id (an earlier
 * job before a stateless start) are not the job's and are left out. Returns 0, or -errno when a
 * directory could not be read (a missing one is empty); the list then holds what the readable ones
 * have, still sorted. */
int restore_points_scan(const struct restore_scan *scan, struct restore_list *list);
void restore_list_free(struct restore_list *list);

/* Whether two snapshot locations (file: URIs or local paths) are the same directory (resolved when they exist). */
bool snapshot_same(const char *a, const char *b);

/* Checks a snapshot directory's _metadata: present, a regular file, Flink's magic number. Returns 0
 * with *ret_id (the checkpoint id in the header), or -errno / -EBADMSG with a reason in why. */
int snapshot_check(const char *dir, int64_t *ret_id, usec_t *ret_time, char **why);

/* What retention renames a savepoint it disposes of before removing it (src/supervisor/sup_snapshot.c): a name no
 * scan takes for a restore point, so a directory half removed (a crash meanwhile) is never restored from. */
#define SAVEPOINT_DISPOSING_SUFFIX ".disposing"
/* a savepoint a rejected (rolled-back) spec took: kept for a look, never a restore point */
#define REJECTED_SUFFIX ".rejected"
/* Appends the savepoint-*.disposing directories in dir (of any job) to out: what a disposal left unfinished. */
void savepoints_disposing(const char *dir, struct strv *out);

/* Appends the complete savepoint-<jobId6>-X directories in dir to out (paths as the scan gives them). */
void savepoints_present(const char *dir, const char *job_id, struct strv *out);

/* The complete savepoint-<jobId6>-X in dir with the highest checkpoint id that is not in before (NULL: any):
 * with before taken when a savepoint was asked for, the savepoint that request wrote, told apart without
 * trusting any clock. NULL too when its id is no higher than above (the newest checkpoint on the volume: the next
 * start would restore that one, not it). Returns a malloc'd directory path or NULL. */
char *savepoint_find_newest(const char *dir, const char *job_id, const struct strv *before, int64_t above);
/* The highest checkpoint id of the job's complete checkpoints (<checkpoint_dir>/<job_id>/chk-N with Flink's
 * _metadata), or -1 with none. */
int64_t checkpoints_newest_id(const char *checkpoint_dir, const char *job_id);

/* What a stop may call its restore point, checked on the volume rather than taken from Flink's REST answer. */
/* location (a file: URI or a local path) is checkpoint id of the job: <checkpoint_dir>/<job_id>/chk-<id> with
 * Flink's _metadata holding that id. Returns 0, or -errno (-EXDEV: elsewhere; -ESTALE: another id; -EBADMSG:
 * damaged) with why (malloc'd). */
int checkpoint_verify(const char *location, const char *checkpoint_dir, const char *job_id, int64_t id, char **why);
/* location is a savepoint of the job the next start restores: savepoint-<jobId6>-X directly in savepoint_dir, not
 * being disposed of, with Flink's _metadata holding an id above `above` (the newest checkpoint on the volume).
 * Returns 0 with *ret_id, or -errno with why (malloc'd). */
int savepoint_verify(const char *location, const char *savepoint_dir, const char *job_id, int64_t above,
                     int64_t *ret_id, char **why);
#endif
