/* membudget: spec.resources.memory as a hard budget for the whole pod (flinklet and its MiniCluster JVM),
 * split into every JVM and Flink memory setting: heap, metaspace, code cache, direct memory (network buffers
 * and off-heap), managed memory (RocksDB only), the JVM's own native memory, and a reserve for flinklet.
 * Pure: it reads the spec and returns numbers (docs/configuration.md, "Memory", has the formula). */
#ifndef FLINKLET_MEMBUDGET_H
#define FLINKLET_MEMBUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define MB_MIB (1ULL << 20)
/* What flinklet itself may keep resident (measured: 2 MiB following a job, 12 MiB with the autoscaler). */
#define MB_FLINKLET (16 * MB_MIB)
/* The smallest heap of a MiniCluster: Flink's JobManager and TaskManager keep about 22 MiB live when idle. */
#define MB_MIN_HEAP (48 * MB_MIB)
/* The smallest managed memory RocksDB gets when flinklet sizes it. */
#define MB_MIN_MANAGED (16 * MB_MIB)
/* Budgets below this run C1 only and a small code cache; below MB_G1_FROM the serial collector. */
#define MB_C1_BELOW (512 * MB_MIB)
#define MB_G1_FROM (1024 * MB_MIB)
/* The largest budget the split is computed for (4 EiB): a smallest budget beyond it is reported as this. */
#define MB_MAX_BUDGET (1ULL << 62)

struct membudget {
	uint64_t budget;            /* spec.resources.memory; 0: not set, nothing below is derived */
	bool native_state;          /* the state backend keeps its state natively (rocksdb, forst) */
	uint64_t flinklet;          /* reserve for flinklet's own resident memory */
	uint64_t heap;              /* -Xmx and -Xms */
	uint64_t metaspace;         /* -XX:MaxMetaspaceSize (taskmanager.memory.jvm-metaspace.size when set) */
	uint64_t code_cache;        /* -XX:ReservedCodeCacheSize */
	uint64_t network;           /* taskmanager.memory.network.min/max: the network buffers */
	uint64_t framework_offheap; /* direct memory besides the network buffers: Netty, Flink's framework */
	uint64_t task_offheap;      /* taskmanager.memory.task.off-heap.size when set, else 0 */
	uint64_t direct;            /* -XX:MaxDirectMemorySize = network + framework_offheap + task_offheap */
	uint64_t managed;           /* taskmanager.memory.managed.size: RocksDB's block cache and write buffers */
	uint64_t jvm_native;        /* estimate of the JVM's own native memory: threads, symbols, CDS, GC, malloc */
	uint64_t state_native;      /* estimate of RocksDB's native memory beyond managed memory (its library) */
	bool serial_gc;             /* -XX:+UseSerialGC (at most 1 CPU, or a budget under 1 GiB) */
	bool c1_only;               /* -XX:TieredStopAtLevel=1 (a budget under 512 MiB) */
	uint64_t min_budget;        /* the smallest budget these settings fit in */
};

/* Derives the split of s->memory. Returns 0 (mb->budget is 0 when the spec sets no memory), or -EINVAL with
 * one message per culprit in d: the budget at spec.resources.memory when it is too small for the state
 * backend, or each user-set Flink memory key that makes it overflow. */
int membudget_compute(const struct spec *s, struct membudget *mb, struct diags *d);
/* Memory tuning's settings for a launch (src/config/memtune.h): each used only where the user set no value of
 * its own. 0: none. */
struct membudget_tuning {
	uint64_t metaspace;  /* taskmanager.memory.jvm-metaspace.size */
	uint64_t managed;    /* taskmanager.memory.managed.size (native state backends only) */
	uint64_t heap_floor; /* the heap the job needs: the split fits only with at least this much */
};
/* The split of s->memory with memory tuning's settings (t may be NULL: none); its min_budget is the smallest budget
 * that holds them (set with -ERANGE too). Returns 0, or -EINVAL (a user key is no size), -ERANGE (they do not fit
 * the budget). */
int membudget_compute_tuned(const struct spec *s, const struct membudget_tuning *t, struct membudget *mb);
/* Flink's spelling of a size in whole MiB ("62m"), malloc'd. */
char *membudget_mib(uint64_t bytes);

#endif
