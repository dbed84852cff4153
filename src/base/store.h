/* store: files on the state volume that survive a crash at any instant. Every file is replaced
 * atomically (temp file in the same directory, fsync, rename, fsync of the directory); the lock keeps a
 * second supervisor off the volume; events.jsonl is appended one whole line per write(2). */
#ifndef FLINKLET_STORE_H
#define FLINKLET_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* mkdir -p with mode FSMODE_DIR (0770, less the umask) for the missing parts. Returns 0 or -errno. */
int mkdir_p(const char *path);
/* Replaces path with data atomically and durably. Returns 0 or -errno. */
int write_file_atomic(const char *path, const char *data, size_t len);
/* The same, with the file's permission bits (write_file_atomic uses FSMODE_FILE, 0660, less the umask). */
int write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode);
/* write_file_atomic, but nothing is written when the file already holds exactly data (so that a full or
 * read-only volume does not stop what needs no change). */
int write_file_if_changed(const char *path, const char *data, size_t len);
/* Removes the temp files a crash between write and rename left in dir (.<name>.tmp.<pid>).
 * Returns how many, or -errno. */
int store_clean_temps(const char *dir);
/* Removes the regular files of dir (not links, not directories) whose name match() accepts. Returns how many, or
 * -errno when dir cannot be read (0 when it does not exist). */
int store_remove_files(const char *dir, bool (*match)(const char *name));
/* Reads a whole (small) file into a NUL-terminated buffer. Returns 0 or -errno (-EFBIG over max). */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Removes a directory tree (no symlinks followed). Returns 0 or -errno. */
int rm_rf(const char *path);
/* rm -rf of each path in a child process, so that the caller never waits for a tree to be removed: returns its pid
 * (the caller's reaper reaps it: exit 0 when everything was removed), 0 when paths is empty, or -errno. The child
 * has default signals, dies with its parent (what it did not finish is left), and touches nothing but the paths. */
pid_t rm_rf_child(const struct strv *paths);

/* Takes the exclusive lock of directory dir itself (flock on the directory: no file in it can be removed or
 * replaced to let another in), held while the returned fd is open (close-on-exec), and writes who (one line) into
 * the file name in dir, a new file renamed over whatever is there, for the next one's message. Returns the fd,
 * -EBUSY when another process holds it (*ret_who, when ret_who is given: the holder's line, malloc'd, NULL when it
 * wrote none within half a second), or another -errno (the note could not be written: the lock is not held). */
int store_lock_dir(const char *dir, const char *name, const char *who, char **ret_who);
/* Takes the exclusive lock of a state directory (the file "lock", holding the owner's pid).
 * Returns the lock fd (kept open for the life of the process), -EBUSY with *ret_owner set when another
 * process holds it, or another -errno. */
int store_lock(const char *state_dir, long *ret_owner);
/* Whether a process holds that lock, found without taking it and without writing anything (the lock holders
 * of /proc/locks, by the lock file's device and inode): what read-only probes use. Returns 1 held, 0 not
 * (no lock file counts as not held), or -errno. */
int store_lock_held(const char *state_dir);

/* The job id of this deployment: read from <state_dir>/job-id, or generated (32 hex) and persisted.
 * Returns 0 or -errno. */
int store_job_id(const char *state_dir, char ret[33]);
/* A new job id (32 lowercase hex, random) in ret, not written anywhere. 0 or -EIO. */
int store_new_job_id(char ret[33]);

/* fsyncs the directory that holds path (after a rename in it). Returns 0 or -errno. */
int fsync_parent(const char *path);

/* Appends lines (JSON objects without the newline) to <state_dir>/events.jsonl with one write(2) and one
 * fdatasync, however many: all of them or, when that fails, none (a partial write is cut off again). Returns 0 or
 * -errno. Safe on the worker thread (it touches nothing but the file). */
int store_append_events(const char *state_dir, char *const *lines, size_t n);
/* The same for one line. */
int store_append_event(const char *state_dir, const char *json_line);

/* fsync (data_only: fdatasync) counted: every sync of the volume store.c does goes through here. */
int store_sync(int fd, bool data_only);
/* How many syncs store.c made since the start (for /metrics and the tests of grouping). */
uint64_t store_syncs(void);
/* Cuts a torn last line (a crash in mid-append) off events.jsonl. */
int store_repair_events(const char *state_dir);
/* The whole lines among the last max_bytes of events.jsonl (malloc'd, NUL-terminated; "" when there is no
 * file). Returns 0 or -errno. */
int store_events_tail(const char *state_dir, size_t max_bytes, char **ret, size_t *ret_len);

#endif
