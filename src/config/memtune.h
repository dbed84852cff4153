/* memtune: the operator's memory tuning (job.autoscaler.memory.tuning.*, the autoscaler's MemoryTuning) for one
 * pod. From what the JVM used (heap, metaspace and managed memory, averaged over the autoscaler's metric window) to
 * the memory settings of the next launch, always inside spec.resources.memory: the metaspace and the heap get what
 * was used plus job.autoscaler.memory.tuning.overhead (never below Flink's floors: a heap of 48m, a metaspace of 80m
 * and 16m over what was used), and what is left goes to the heap, or with maximize-managed-memory and a native state
 * backend (RocksDB, ForSt) to managed memory. Also the smallest spec.resources.memory that holds the job as it runs,
 * with the same margins. Pure: numbers in, numbers out (docs/autoscaler.md, "Memory tuning"). */
#ifndef FLINKLET_MEMTUNE_H
#define FLINKLET_MEMTUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "membudget.h"

/* The smallest metaspace tuning sets, and what it keeps over the metaspace used (classes of a restarted job load
 * again before the old ones are unloaded). */
/* 80m: the metaspace of the plain split's smallest budgets, which a MiniCluster starts in without its class-data
 * sharing archive too (the archive keeps its classes out of the metaspace use measured with it) */
#define MEMTUNE_MIN_METASPACE (80 * MB_MIB)
#define MEMTUNE_METASPACE_SLACK (16 * MB_MIB)
/* The most a pool's need is taken to be (1 EiB): larger figures (up to infinity) saturate here, and a job needing it
 * says it needs at least MB_MAX_BUDGET. */
#define MEMTUNE_MAX_NEED (1ULL << 60)
/* A tuning that moves no pool by at least this much changes nothing. */
#define MEMTUNE_MIN_CHANGE (8 * MB_MIB)

struct memtune_in {
	double heap_used, metaspace_used, managed_used; /* bytes; NaN or negative: not measured */
	double overhead;                                /* job.autoscaler.memory.tuning.overhead, in [0, 1] */
	bool maximize_managed;                          /* job.autoscaler.memory.tuning.maximize-managed-memory */
	/* the heap of the running JVM when it runs tuned (0: untuned): a heap measured there is never tuned below it
	 * (a smaller heap keeps less garbage, so its use would recommend a smaller heap again, down to the floor) */
	uint64_t tuned_heap;
};

struct memtune {
	bool ok;       /* false: no tuning (why says why; min_memory may still be known) */
	char why[320]; /* ok: what changes, as "heap 180m -> 96m, managed 40m -> 124m, metaspace 80m -> 72m" */
	struct membudget_tuning t;          /* what the next launch uses */
	struct membudget before, after;     /* the split untuned, and tuned */
	uint64_t heap_need, metaspace_need; /* used, with the margin and the floors */
	uint64_t min_memory; /* the smallest spec.resources.memory holding the job as it runs; 0: unknown */
	bool changed;        /* a pool moves by at least MEMTUNE_MIN_CHANGE */
};

/* Whether a pool of a bytes and one of b differ by at least MEMTUNE_MIN_CHANGE. */
bool memtune_moved(uint64_t a, uint64_t b);
/* Tunes s's memory (s->memory set) from what was used. */
void memtune_compute(const struct spec *s, const struct memtune_in *in, struct memtune *out);

#endif
