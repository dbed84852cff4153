/* restorelog: reads the JVM's output lines for what they say about the restore: that the launch got as far
 * as restoring (Flink's own "Restoring job ... from ..." / "Starting job ... from savepoint ..." lines), and
 * evidence that Flink cannot read the restore point (an exception that names the snapshot or one of its
 * files, or a stack trace through the code that reads a snapshot's metadata). Pure: no I/O; one scanner per
 * JVM launch, fed the lines in order. The patterns are Flink's own messages for 1.20 and 2.x, listed in
 * docs/operations.md and checked against recorded output in tests/unit/fixtures/jvm-output/. */
#ifndef FLINKLET_RESTORELOG_H
#define FLINKLET_RESTORELOG_H

#include <stdbool.h>

#include "snapshots.h"

enum restorelog_verdict {
	RESTORELOG_NONE,
	RESTORELOG_STARTED,    /* Flink began restoring the point */
	RESTORELOG_UNREADABLE, /* Flink says it cannot read the point or its files */
};

struct restorelog {
	/* set by the caller */
	const char *restore_path; /* the snapshot's directory (absolute, no trailing '/') */
	enum restore_kind kind;   /* a checkpoint also owns files under its job's shared/ and taskowned/ */
	const char *job_ckpt_dir; /* <checkpoint dir>/<job id> */
	/* the scanner's own */
	bool in_trace;          /* the lines seen since the last exception line are its stack frames */
	bool trace_names_point; /* that trace's exception lines named the point or its files */
	char exception[400];    /* the newest exception line of that trace */
	char evidence[1024];    /* with RESTORELOG_UNREADABLE: what Flink said (an exception line without its
	                         * "Caused by: "), after "<point>/_metadata: " when the line does not name it */
};

/* Feeds one line (no newline); returns what it says. UNREADABLE is returned once per trace. */
enum restorelog_verdict restorelog_feed(struct restorelog *r, const char *line);

#endif
