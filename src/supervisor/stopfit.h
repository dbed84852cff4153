/* stopfit: pure: how a stop with upgradeMode savepoint keeps inside the shutdown budget. Before it asks Flink for a
 * stop-with-savepoint, the supervisor (src/supervisor/sup_stop.c) estimates how long the savepoint takes from what
 * Flink reports (the newest checkpoint's full state size and duration, the throughput of a savepoint Flink took
 * earlier) and compares it with what the budget leaves once the JVM's exit is set aside. When it does not fit, the
 * stop waits for the next periodic checkpoint instead (Flink's incremental one: its cost does not grow with the
 * state) and ends the JVM on it: that checkpoint is the restore point, no older than one interval. */
#ifndef FLINKLET_STOPFIT_H
#define FLINKLET_STOPFIT_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* What a savepoint writes per second when no savepoint of the job was measured yet: a RocksDB savepoint of 1.08 GB
 * took about 16 s on a local disk (issue 26); lower than that, so that a guess errs towards the checkpoint. */
#define STOPFIT_DEFAULT_BYTES_PER_SEC 50e6

struct stopfit_in {
	int64_t state_bytes;     /* Flink's full size of the newest checkpoint; < 0: not known */
	int64_t checkpoint_ms;   /* its end-to-end duration; < 0: not known */
	double sp_bytes_per_sec; /* a savepoint Flink took of this job: its size over its duration; 0: none */
	usec_t interval;         /* execution.checkpointing.interval; 0: no periodic checkpoints */
	usec_t share;            /* what the budget leaves for the snapshot once the JVM's exit is set aside */
};

struct stopfit {
	bool savepoint;      /* take the savepoint (else: stop on the next checkpoint) */
	double savepoint_s;  /* the savepoint's estimated duration (0: not known) */
	double checkpoint_s; /* the longest wait for the next checkpoint (interval + its duration) */
	char why[320];       /* the decision, said in the events */
};

void stopfit_decide(const struct stopfit_in *in, struct stopfit *out);

#endif
