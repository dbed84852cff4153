/* membudget: spec.resources.memory split into every JVM and Flink memory setting (see src/config/membudget.h and
 * docs/configuration.md, "Memory"). All of it is arithmetic on the spec: budget B, state backend, slots, CPUs
 * and the Flink memory keys the user set; the smallest budget that fits is found by bisection. */
#include "membudget.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The user's value of one Flink memory key (and Flink's deprecated spelling of it). */
struct user_key {
	const char *key, *deprecated;
	const struct conf_entry *e; /* NULL: not set by the user */
	uint64_t bytes;
};

enum { U_MANAGED, U_NET_MIN, U_NET_MAX, U_TASK_OFFHEAP, U_FW_OFFHEAP, U_METASPACE, U_N };

struct inputs {
	bool native_state;
	int64_t slots;
	double cpu;
	struct user_key u[U_N];
	uint64_t tuned[U_N]; /* memory tuning's value of a key the user did not set (0: none) */
	uint64_t heap_floor; /* the heap must hold at least this (what the job uses, with tuning's margin) */
};

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* a + b, at most UINT64_MAX (a user's key may be any size) */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mib_down(uint64_t v)
{
	return v / MB_MIB * MB_MIB;
}

static uint64_t mib_up(uint64_t v)
{
	return (v + MB_MIB - 1) / MB_MIB * MB_MIB;
}

char *membudget_mib(uint64_t bytes)
{
	if (bytes % MB_MIB)
		return xasprintf("%llub", (unsigned long long)bytes);
	return xasprintf("%llum", (unsigned long long)(bytes / MB_MIB));
}

static bool is_set(const struct inputs *in, int k)
{
	return in->u[k].e != NULL || in->tuned[k] > 0;
}

/* The value of a key that is set: the user's, else memory tuning's. */
static uint64_t value_of(const struct inputs *in, int k)
{
	return in->u[k].e ? in->u[k].bytes : in->tuned[k];
}

/* The split of budget b; returns whether it fits (heap and managed memory at least their minimum). */
static bool split(uint64_t b, const struct inputs *in, struct membudget *mb)
{
	memset(mb, 0, sizeof(*mb));
	mb->budget = b;
	mb->native_state = in->native_state;
	mb->flinklet = MB_FLINKLET;
	mb->c1_only = b < MB_C1_BELOW;
	mb->serial_gc = b < MB_G1_FROM || (in->cpu > 0 && in->cpu <= 1);
	mb->metaspace =
	    is_set(in, U_METASPACE) ? value_of(in, U_METASPACE) : clamp(mib_down(b / 8), 80 * MB_MIB, 256 * MB_MIB);
	mb->code_cache = mb->c1_only ? 24 * MB_MIB : clamp(mib_down(b / 16), 48 * MB_MIB, 240 * MB_MIB);
	/* the buffers a MiniCluster needs at least: per all-to-all exchange, each of the `slots` subtasks' result
	 * partitions needs a buffer per subpartition and one more, each input gate one; three exchanges */
	uint64_t slots = in->slots > 0 ? (uint64_t)in->slots : 1;
	uint64_t floor = mib_up(3 * slots * (slots + 2) * 32 * 1024);
	if (is_set(in, U_NET_MAX))
		mb->network = value_of(in, U_NET_MAX);
	else if (is_set(in, U_NET_MIN))
		mb->network = value_of(in, U_NET_MIN);
	else
		mb->network = clamp(mib_down(b / 32), 8 * MB_MIB, 64 * MB_MIB) > floor
		                  ? clamp(mib_down(b / 32), 8 * MB_MIB, 64 * MB_MIB)
		                  : floor;
	mb->framework_offheap =
	    is_set(in, U_FW_OFFHEAP) ? value_of(in, U_FW_OFFHEAP) : clamp(mib_down(b / 16), 16 * MB_MIB, 128 * MB_MIB);
	mb->task_offheap = is_set(in, U_TASK_OFFHEAP) ? value_of(in, U_TASK_OFFHEAP) : 0;
	mb->direct = sat_add(sat_add(mb->network, mb->framework_offheap), mb->task_offheap);
	mb->jvm_native = 40 * MB_MIB + slots * MB_MIB + mib_down(b / 32);
	mb->state_native = in->native_state ? 24 * MB_MIB : 0;

	uint64_t fixed = sat_add(sat_add(sat_add(mb->flinklet, mb->metaspace), sat_add(mb->code_cache, mb->direct)),
	                         sat_add(mb->jvm_native, mb->state_native));
	if (fixed >= b)
		return false;
	uint64_t rest = b - fixed;
	bool ok = true;
	if (is_set(in, U_MANAGED)) {
		mb->managed = value_of(in, U_MANAGED);
	} else if (in->native_state) {
		mb->managed = mib_down(rest / 5 * 2); /* Flink's own share: 0.4 of what is left */
		ok = mb->managed >= MB_MIN_MANAGED;
	}
	if (mb->managed >= rest)
		return false;
	mb->heap = mib_down(rest - mb->managed);
	return ok && mb->heap >= MB_MIN_HEAP && mb->heap >= in->heap_floor;
}

/* The smallest budget in whole MiB that fits, 0 when none up to MB_MAX_BUDGET does. */
static uint64_t min_budget(const struct inputs *in)
{
	struct membudget t;
	uint64_t lo = 1, hi = MB_MAX_BUDGET / MB_MIB; /* MiB */
	if (!split(hi * MB_MIB, in, &t))
		return 0;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (split(mid * MB_MIB, in, &t))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo * MB_MIB;
}

static bool native_backend(const char *b)
{
	if (!b)
		return false;
	return !strcasecmp(b, "rocksdb") || !strcasecmp(b, "forst") || strcasestr(b, "rocksdb") ||
	       strcasestr(b, "forst");
}

static const struct conf_entry *user_entry(const struct spec *s, const char *key)
{
	for (size_t i = 0; key && i < s->nconf; i++)
		if (!strcmp(s->conf[i].key, key) && s->conf[i].origin != ORIGIN_DEFAULT)
			return &s->conf[i];
	return NULL;
}

static int read_inputs(const struct spec *s, struct inputs *in, struct diags *d)
{
	static const char *const keys[U_N][2] = {
	    [U_MANAGED] = {"taskmanager.memory.managed.size", "taskmanager.memory.size"},
	    [U_NET_MIN] = {"taskmanager.memory.network.min", "taskmanager.network.memory.min"},
	    [U_NET_MAX] = {"taskmanager.memory.network.max", "taskmanager.network.memory.max"},
	    [U_TASK_OFFHEAP] = {"taskmanager.memory.task.off-heap.size", NULL},
	    [U_FW_OFFHEAP] = {"taskmanager.memory.framework.off-heap.size", NULL},
	    [U_METASPACE] = {"taskmanager.memory.jvm-metaspace.size", NULL},
	};
	int r = 0;
	memset(in, 0, sizeof(*in));
	in->native_state = native_backend(spec_get(s, "state.backend.type"));
	in->slots = spec_int(s, "taskmanager.numberOfTaskSlots");
	if (in->slots < s->job.parallelism)
		in->slots = s->job.parallelism;
	in->cpu = s->cpu;
	for (int k = 0; k < U_N; k++) {
		struct user_key *u = &in->u[k];
		u->key = keys[k][0];
		u->deprecated = keys[k][1];
		u->e = user_entry(s, u->key);
		if (!u->e)
			u->e = user_entry(s, u->deprecated);
		if (u->e && parse_memory(u->e->value, &u->bytes) < 0) {
			if (d) {
				char *field = xasprintf("spec.flinkConfiguration.%s", u->e->key);
				diags_add(d, &u->e->loc, field, "must be a memory size such as 64m or 1g (got \"%s\")",
				          u->e->value);
				free(field);
			}
			r = -EINVAL;
		}
	}
	return r;
}

static void too_small(const struct spec *s, const struct inputs *in, struct diags *d)
{
	uint64_t want = min_budget(in);
	struct membudget at_min, *mb = &at_min; /* the split of the smallest budget that fits */
	split(want ? want : s->memory, in, mb);
	char *b = membudget_mib(s->memory), *w = membudget_mib(want), *meta = membudget_mib(mb->metaspace),
	     *code = membudget_mib(mb->code_cache), *direct = membudget_mib(mb->direct),
	     *native = membudget_mib(mb->jvm_native), *heap = membudget_mib(MB_MIN_HEAP);
	struct loc whole = {s->file, 0, 0};
	diags_add(d, s->memory_loc.file ? &s->memory_loc : &whole, "spec.resources.memory",
	          "%s is too small for the whole pod with the %s state backend: it must be at least %s (then: flinklet "
	          "16m, JVM metaspace %s, code cache %s, direct memory %s, JVM native %s%s, and a heap of at least "
	          "%s%s)",
	          b, in->native_state ? "rocksdb" : "hashmap", w, meta, code, direct, native,
	          in->native_state ? ", RocksDB native 24m" : "", heap,
	          in->native_state ? " and managed memory of at least 16m" : "");
	free(b), free(w), free(meta), free(code), free(direct), free(native), free(heap);
}

int membudget_compute_tuned(const struct spec *s, const struct membudget_tuning *t, struct membudget *mb)
{
	memset(mb, 0, sizeof(*mb));
	if (!s->memory)
		return 0;
	struct inputs in;
	if (read_inputs(s, &in, NULL) < 0)
		return -EINVAL;
	in.tuned[U_METASPACE] = t ? t->metaspace : 0;
	in.tuned[U_MANAGED] = t && in.native_state ? t->managed : 0;
	in.heap_floor = t ? t->heap_floor : 0;
	bool fits = split(s->memory, &in, mb);
	mb->min_budget = min_budget(&in);
	return fits ? 0 : -ERANGE;
}

int membudget_compute(const struct spec *s, struct membudget *mb, struct diags *d)
{
	memset(mb, 0, sizeof(*mb));
	if (!s->memory)
		return 0;
	struct inputs in;
	if (read_inputs(s, &in, d) < 0)
		return -EINVAL;
	if (split(s->memory, &in, mb)) {
		mb->min_budget = min_budget(&in);
		return 0;
	}
	if (!d)
		return -EINVAL;
	/* without the user's memory keys, would it fit? then they are the culprits */
	struct inputs plain = in;
	bool any = false;
	for (int k = 0; k < U_N; k++) {
		any = any || plain.u[k].e;
		plain.u[k].e = NULL;
	}
	struct membudget t;
	if (!any || !split(s->memory, &plain, &t)) {
		too_small(s, &in, d);
		return -EINVAL;
	}
	uint64_t want = min_budget(&in);
	char *b = membudget_mib(s->memory), *w = membudget_mib(want), *heap = membudget_mib(mb->heap),
	     *min = membudget_mib(MB_MIN_HEAP);
	/* the keys whose removal alone makes it fit; when none does on its own, all of them */
	bool culprit[U_N] = {false}, single = false;
	for (int k = 0; k < U_N; k++) {
		struct inputs without = in;
		without.u[k].e = NULL;
		culprit[k] = in.u[k].e && split(s->memory, &without, &t);
		single = single || culprit[k];
	}
	for (int k = 0; k < U_N; k++) {
		const struct conf_entry *e = in.u[k].e;
		if (!e || (single && !culprit[k]))
			continue;
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		diags_add(d, &e->loc, field,
		          "%s does not fit in spec.resources.memory %s with the other settings: the heap would get %s, "
		          "at least %s is needed; lower it, or raise spec.resources.memory to at least %s",
		          e->value, b, heap, min, w);
		free(field);
	}
	free(b), free(w), free(heap), free(min);
	return -EINVAL;
}
