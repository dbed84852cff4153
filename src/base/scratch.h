/* scratch: the JVM's local scratch space, flinklet.scratch.dir (Flink's io.tmp.dirs and java.io.tmpdir: RocksDB's
 * working files, spills, BLOBs, the extracted RPC jar). It is local disk, not the state volume: nothing there must
 * survive the JVM, and nothing there should cost the volume's fsyncs or bandwidth. Each launch gets an empty
 * <scratch>/jvm: the previous one is renamed aside at once (<scratch>/.old-<pid>-<n>) and removed by a child
 * process, so the loop never waits for a tree of RocksDB files to be deleted. */
#ifndef FLINKLET_SCRATCH_H
#define FLINKLET_SCRATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* The default of flinklet.scratch.dir: $TMPDIR (else /tmp) / flinklet-<name>-<8 hex of the state directory's
 * sha256>: local, and one per deployment on a machine that runs several (malloc'd). */
char *scratch_default_dir(const char *name, const char *state_dir);
/* Creates dir (mode 0750 for what is created) and checks that it is a directory (not a symlink); with strict (the
 * default directory, in a /tmp others write to) also that it is flinklet's own: owned by this user and writable by
 * no one else. Returns 0, or -errno with *err set (malloc'd). */
int scratch_open(const char *dir, bool strict, char **err);
/* Makes <dir>/jvm empty for the next JVM: an existing one is renamed to <dir>/.old-<pid>-<n> (returned in *old,
 * malloc'd, for scratch_remove; NULL when there was none), then <dir>/jvm is created. Returns 0 or -errno. */
int scratch_rotate(const char *dir, unsigned n, char **old);
/* The directories set aside in dir by earlier launches and not yet removed (.old-* entries), appended to out as
 * paths. */
void scratch_set_aside(const char *dir, struct strv *out);
/* The name a standby JVM's own directory in the scratch starts with (src/supervisor/sup_standby.c), and those in dir
 * (what earlier flinklets' standby JVMs left, at a start), appended to out as paths. */
#define SCRATCH_STANDBY_PREFIX ".standby-"
void scratch_standby_dirs(const char *dir, struct strv *out);
/* Removes the trees (rm -rf) in a child process; returns its pid (reaped by the supervisor's reaper), or -errno.
 * Nothing to remove: 0. The child dies with the supervisor; what it did not finish stays set aside until the next
 * start. */
pid_t scratch_remove(const struct strv *paths);

/* The fixed part of what a JVM puts in its scratch directory whatever the state: the extracted RPC jar, RocksDB's
 * native library, the job's jar as a BLOB (38 MB idle with RocksDB, 51 MB with a 30 MB jar). */
#define SCRATCH_FIXED_BYTES (INT64_C(128) << 20)
/* Pure: the free space a JVM's scratch directory wants for a state of state_bytes (Flink's full size of the newest
 * checkpoint; < 0 unknown): RocksDB's working directory holds the restored state and, while it compacts, new files
 * next to the old ones, so twice the state, plus SCRATCH_FIXED_BYTES. */
int64_t scratch_need(int64_t state_bytes);
/* The space an unprivileged user may still write in the file system of dir (statvfs: f_bavail * f_frsize) into
 * *free. Returns 0 or -errno. */
int scratch_free(const char *dir, int64_t *free_bytes);
/* The room the next JVM has in dir once what is set aside there (the .old-* trees of earlier JVMs, removed by a
 * child) is gone: scratch_free's figure plus the blocks those trees hold on dir's file system. It walks the trees:
 * for the worker thread, not the loop. Returns 0 or -errno. */
int scratch_room(const char *dir, int64_t *room);

#endif
