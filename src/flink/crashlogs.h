/* crashlogs: the JVM's fatal-error logs. HotSpot writes hs_err_pid<N>.log (and, for a JIT crash,
 * replay_pid<N>.log) into its working directory, the state directory, where nothing would ever remove them:
 * flinklet points them at one folder of the state directory (-XX:ErrorFile, -XX:ReplayDataFile) and keeps the
 * logs of the newest few crashes there. No event loop: the pruning is a directory scan for the worker thread. */
#ifndef FLINKLET_CRASHLOGS_H
#define FLINKLET_CRASHLOGS_H

#include <sys/types.h>

#include "util.h"

#define CRASHLOGS_DIR "jvm-crashes" /* under the state directory */

/* The JVM options that put its fatal-error logs into dir (which must exist before the JVM starts: HotSpot falls
 * back to its working directory, then /tmp, when it cannot create the file). */
void crashlogs_jvm_options(const char *dir, struct strv *argv);

/* Is name one of the JVM's crash files (hs_err_pid<digits>.log, replay_pid<digits>.log)? Its pid in *ret_pid. */
int crashlogs_parse_name(const char *name, long *ret_pid);

struct crashlogs_pruned {
	char *log;           /* <dir>/hs_err_pid<pid>.log when the JVM of pid left one, else NULL */
	unsigned kept;       /* crashes whose logs are kept */
	unsigned removed;    /* files removed */
	int r;               /* 0, or the first error (-errno) of the scan or of a removal */
	const char *skipped; /* why dir was not pruned ("is a symbolic link", "is not a directory"), or NULL */
};

/* Keeps the crash files of the newest `keep` crashes (a crash: the files of one pid, as new as its newest file)
 * in dir and in legacy_dir (where JVMs before this folder wrote them; NULL: none) together, removes the rest, and
 * finds the log of the JVM `pid` (0: none). A missing dir is no error. dir is never followed through a symbolic
 * link (nor is any file: a link named like a crash file is left alone), so nothing outside is removed; only its
 * JVM's log is looked for there. On the worker: metadata of the volume. */
void crashlogs_prune(const char *dir, const char *legacy_dir, unsigned keep, pid_t pid, struct crashlogs_pruned *ret);

#endif
