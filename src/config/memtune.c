/* memtune: memory tuning inside the pod's budget (see src/config/memtune.h). */
#include "memtune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool measured(double v)
{
	return isfinite(v) && v >= 0;
}

/* v bytes in whole MiB, rounded up; at most MEMTUNE_MAX_NEED (figures past it, up to infinity, saturate there). */
static uint64_t mib_up(double v)
{
	if (!(v > 0))
		return 0;
	if (v >= (double)MEMTUNE_MAX_NEED)
		return MEMTUNE_MAX_NEED;
	uint64_t b = (uint64_t)ceil(v);
	return (b + MB_MIB - 1) / MB_MIB * MB_MIB;
}

/* Whether the job's needs fit budget b as a launch at b has it: the untuned split of b fits, and the tuned one with
 * managed memory as the untuned split of b has it (it grows with the budget: Flink's share of what is left). */
static bool holds_at(const struct spec *s, uint64_t b, const struct memtune *m)
{
	struct spec at = *s;
	at.memory = b;
	struct membudget u, t;
	if (membudget_compute_tuned(&at, NULL, &u) < 0)
		return false;
	struct membudget_tuning need = {m->metaspace_need, u.managed, m->heap_need};
	return membudget_compute_tuned(&at, &need, &t) == 0;
}

/* The smallest budget in whole MiB that holds_at, by bisection up to MB_MAX_BUDGET (0: none does): the fixed point
 * of "the budget the job needs at budget b" (the heap grows with b faster than managed memory takes from it). */
static uint64_t min_holding(const struct spec *s, const struct memtune *m)
{
	uint64_t lo = 1, hi = MB_MAX_BUDGET / MB_MIB;
	if (!holds_at(s, hi * MB_MIB, m))
		return 0;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (holds_at(s, mid * MB_MIB, m))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo * MB_MIB;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;
	return m > c ? m : c;
}

bool memtune_moved(uint64_t a, uint64_t b)
{
	return (a > b ? a - b : b - a) >= MEMTUNE_MIN_CHANGE;
}

static void describe(struct memtune *m)
{
	char *hb = membudget_mib(m->before.heap), *ha = membudget_mib(m->after.heap),
	     *mb = membudget_mib(m->before.managed), *ma = membudget_mib(m->after.managed),
	     *sb = membudget_mib(m->before.metaspace), *sa = membudget_mib(m->after.metaspace);
	snprintf(m->why, sizeof(m->why), "heap %s -> %s, managed %s -> %s, metaspace %s -> %s", hb, ha, mb, ma, sb, sa);
	free(hb), free(ha), free(mb), free(ma), free(sb), free(sa);
}

void memtune_compute(const struct spec *s, const struct memtune_in *in, struct memtune *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->memory) {
		snprintf(out->why, sizeof(out->why),
		         "spec.resources.memory is not set: there is no budget to tune inside");
		return;
	}
	if (membudget_compute_tuned(s, NULL, &out->before) < 0) {
		snprintf(out->why, sizeof(out->why), "the memory settings do not fit spec.resources.memory");
		return;
	}
	if (!measured(in->heap_used) || !measured(in->metaspace_used) || in->heap_used <= 0 ||
	    in->metaspace_used <= 0) {
		snprintf(out->why, sizeof(out->why), "no heap or metaspace usage measured yet");
		return;
	}
	double o = measured(in->overhead) ? in->overhead : 0.2;
	out->heap_need = mib_up(in->heap_used * (1 + o));
	if (out->heap_need < MB_MIN_HEAP)
		out->heap_need = MB_MIN_HEAP;
	if (out->heap_need < in->tuned_heap)
		out->heap_need =
		    in->tuned_heap; /* once tuned, the heap only grows (no spiral down on its own figures) */
	out->metaspace_need = max3(mib_up(in->metaspace_used * (1 + o)),
	                           mib_up(in->metaspace_used) + MEMTUNE_METASPACE_SLACK, MEMTUNE_MIN_METASPACE);
	bool native = out->before.native_state;

	/* the smallest pod for the job as it runs: what it used with the margins, managed memory as it has now (with
	 * maximize-managed-memory), or as the pod's own untuned split has it (without: a launch keeps that) */
	if (native && !in->maximize_managed) {
		out->min_memory = min_holding(s, out);
	} else {
		struct membudget_tuning as_runs = {out->metaspace_need, native ? out->before.managed : 0,
		                                   out->heap_need};
		struct membudget m;
		membudget_compute_tuned(s, &as_runs, &m);
		out->min_memory = m.min_budget;
	}
	if (!out->min_memory)
		out->min_memory = MB_MAX_BUDGET; /* none up to the largest budget holds it: at least that */
	/* saturated: the smallest budget is a lower bound of what figures this large would need */
	bool beyond = out->heap_need >= MEMTUNE_MAX_NEED || out->metaspace_need >= MEMTUNE_MAX_NEED ||
	              out->min_memory >= MB_MAX_BUDGET;

	struct membudget_tuning t = {out->metaspace_need, 0, out->heap_need};
	if (native && in->maximize_managed) {
		/* the heap gets what it needs, managed memory the rest */
		struct membudget_tuning probe = {out->metaspace_need, MB_MIN_MANAGED, out->heap_need};
		struct membudget p;
		if (membudget_compute_tuned(s, &probe, &p) == 0)
			t.managed = p.managed + (p.heap - out->heap_need) / MB_MIB * MB_MIB;
		else
			t.managed = MB_MIN_MANAGED;
	} else if (native) {
		t.managed = out->before.managed; /* its use is not measurable (RocksDB reserves it whole): kept */
	}
	if (membudget_compute_tuned(s, &t, &out->after) < 0) {
		char *h = membudget_mib(out->heap_need), *ms = membudget_mib(out->metaspace_need),
		     *b = membudget_mib(s->memory), *w = membudget_mib(out->min_memory);
		snprintf(
		    out->why, sizeof(out->why),
		    "the job needs a heap of %s and a metaspace of %s (what it used, with the margin): more than "
		    "spec.resources.memory %s holds; it needs at least %s%s",
		    h, ms, b, w,
		    beyond ? " (its figures are beyond any budget flinklet sizes: the measurement is wrong, or the job "
		             "cannot run in any pod)"
		           : "");
		free(h), free(ms), free(b), free(w);
		memset(&out->after, 0, sizeof(out->after));
		return;
	}
	out->t = t;
	out->ok = true;
	out->changed = memtune_moved(out->after.heap, out->before.heap) ||
	               memtune_moved(out->after.managed, out->before.managed) ||
	               memtune_moved(out->after.metaspace, out->before.metaspace);
	describe(out);
}
