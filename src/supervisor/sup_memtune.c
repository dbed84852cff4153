/* sup_memtune: memory tuning (job.autoscaler.memory.tuning.*, docs/autoscaler.md "Memory tuning") in the
 * supervisor. After each evaluation of the autoscaler, src/config/memtune.c tunes spec.resources.memory's split
 * from the evaluated heap, metaspace and managed memory use; status.json keeps the recommendation, the smallest
 * budget for the job and, with tuning enabled, the settings the next launch uses (autoscaler.memoryTuning), and a
 * MemoryTuning event says each recommendation that moves. The next launch flinklet makes anyway (a crash restart,
 * an upgrade, a resume) uses them. A tuned JVM that dies of memory (OutOfMemoryError, GC overhead) or fails twice
 * in a row before the next evaluation undoes them: the next launch is untuned, and tuning stays off until
 * spec.resources.memory changes. */
#include "sup_memtune.h"

#include <stdlib.h>
#include <string.h>

#include "memtune.h"

/* Two tuned JVMs in a row that ended on their own before an evaluation: the tuning is the likelier cause. */
#define TUNED_FAILURES_MAX 2

/* A recommendation moved from the last one said (-1: none said yet). */
static bool moved(int64_t was, uint64_t now)
{
	return was < 0 || memtune_moved((uint64_t)was, now);
}

/* Tuning suspended for an earlier budget resumes once spec.resources.memory changed. */
static void resume_if_budget_changed(struct supervisor *s)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	if (!mt->suspended || (int64_t)s->spec->memory == mt->suspended_memory)
		return;
	sup_event(s, "MemoryTuningResumed",
	          "spec.resources.memory changed since memory tuning was undone (%s): tuning "
	          "resumes with the next evaluation",
	          mt->suspended);
	free(mt->suspended);
	mt->suspended = NULL;
	mt->suspended_memory = -1;
}

void sup_memtune_evaluated(struct supervisor *s, const struct as_evaluation *ev, const struct as_options *o)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	resume_if_budget_changed(s);
	s->memtune.tuned_failures = 0; /* the job ran for a whole metric window */
	struct memtune_in in = {
	    .heap_used = ev->g[AS_EG_HEAP_MEMORY_USED].average,
	    .metaspace_used = ev->g[AS_EG_METASPACE_MEMORY_USED].average,
	    .managed_used = ev->g[AS_EG_MANAGED_MEMORY_USED].average,
	    .overhead = o->memory_tuning_overhead,
	    .maximize_managed = o->memory_tuning_maximize_managed,
	    .tuned_heap = mt->run_heap > 0 ? (uint64_t)mt->run_heap : 0,
	};
	struct memtune m;
	memtune_compute(s->spec, &in, &m);
	mt->enabled = o->memory_tuning;
	mt->min_memory = m.min_memory ? (int64_t)m.min_memory : -1;
	/* said: a recommendation that moves a pool by MEMTUNE_MIN_CHANGE (not said again until it moves as much from
	 * the last one), or why there is none when that changed; status.json has it all the same */
	bool said = m.ok ? m.changed && (moved(mt->rec_heap, m.after.heap) || moved(mt->rec_managed, m.after.managed) ||
	                                 moved(mt->rec_metaspace, m.after.metaspace))
	                 : !mt->reason || strcmp(mt->reason, m.why);
	status_set_string(&mt->reason, m.why);
	mt->rec_heap = m.ok ? (int64_t)m.after.heap : -1;
	mt->rec_managed = m.ok ? (int64_t)m.after.managed : -1;
	mt->rec_metaspace = m.ok ? (int64_t)m.after.metaspace : -1;
	bool apply = o->memory_tuning && m.ok && m.changed && !mt->suspended;
	mt->next_metaspace = apply ? (int64_t)m.t.metaspace : -1;
	mt->next_managed = apply ? (int64_t)m.t.managed : -1;
	mt->next_heap_floor = apply ? (int64_t)m.t.heap_floor : -1;
	uint64_t above = 0, running = mt->run_heap > 0 ? (uint64_t)mt->run_heap : m.before.heap;
	if (parse_memory(spec_get(s->spec, "flinklet.memory-tuning.relaunch-above"), &above) < 0)
		above = 0;
	uint64_t gain = m.after.heap > running ? m.after.heap - running : running - m.after.heap;
	uint64_t held = s->memtune.held_heap,
	         from_held = m.after.heap > held ? m.after.heap - held : held - m.after.heap;
	bool relaunch = apply && above > 0 && gain >= above && s->state == SUP_RUNNING && (!held || from_held >= above);
	if (said && s->spec->memory) { /* without a budget there is nothing to say more than once: status only */
		char *min = m.min_memory ? membudget_mib(m.min_memory) : xstrdup("unknown");
		if (!m.ok)
			sup_event(s, "MemoryTuning", "no memory tuning: %s", m.why);
		else
			sup_event(
			    s, "MemoryTuning",
			    "memory tuning recommends %s (the job used a heap of %.0f MiB and a metaspace of %.0f MiB; "
			    "the smallest spec.resources.memory for it: %s)%s",
			    m.why, in.heap_used / MB_MIB, in.metaspace_used / MB_MIB, min,
			    !o->memory_tuning ? "; automatic tuning is disabled (job.autoscaler.memory.tuning.enabled)"
			    : mt->suspended   ? "; not applied: tuning is undone for this budget"
			                      : "; applied at the next launch");
		free(min);
	}
	if (relaunch) {
		/* once tuned, the heap only grows (memtune_in.tuned_heap): this cannot repeat on its own figures */
		char *g = membudget_mib(gain), *a = membudget_mib(above);
		sup_event(
		    s, "MemoryTuningRelaunch",
		    "memory tuning moves %s into or out of the heap (flinklet.memory-tuning.relaunch-above is %s): "
		    "relaunching job %s to apply it, as an upgrade does with upgradeMode %s (%s)",
		    g, a, s->job_id, upgrade_mode_to_string(s->spec->job.upgrade_mode),
		    s->spec->job.upgrade_mode == UPGRADE_SAVEPOINT    ? "through a savepoint"
		    : s->spec->job.upgrade_mode == UPGRADE_LAST_STATE ? "from the newest checkpoint"
		                                                      : "empty: no state is kept");
		free(g), free(a);
		s->memtune.relaunching = true;
		s->memtune.held_heap = 0;
		sup_raise(s, EV_UPGRADE);
	}
	sup_write_status(s);
}

bool sup_memtune_for_launch(struct supervisor *s, struct membudget_tuning *t)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	resume_if_budget_changed(s);
	mt->run_heap = mt->run_managed = mt->run_metaspace = -1;
	s->memtune.relaunching = false;
	struct as_options o;
	as_options_from_spec(s->spec, &o);
	bool enabled = o.memory_tuning;
	as_options_free(&o);
	if (!enabled || mt->suspended || mt->next_heap_floor < 0)
		return false;
	*t = (struct membudget_tuning){(uint64_t)mt->next_metaspace, (uint64_t)mt->next_managed,
	                               (uint64_t)mt->next_heap_floor};
	struct membudget tuned, plain;
	if (membudget_compute_tuned(s->spec, t, &tuned) < 0 || membudget_compute(s->spec, &plain, NULL) < 0) {
		log_info("memory tuning's settings do not fit spec.resources.memory now: launching untuned");
		return false;
	}
	mt->run_heap = (int64_t)tuned.heap;
	mt->run_managed = (int64_t)tuned.managed;
	mt->run_metaspace = (int64_t)tuned.metaspace;
	char *h = membudget_mib(tuned.heap), *mg = membudget_mib(tuned.managed), *ms = membudget_mib(tuned.metaspace),
	     *ph = membudget_mib(plain.heap), *pm = membudget_mib(plain.managed), *pms = membudget_mib(plain.metaspace);
	sup_event(s, "MemoryTuned",
	          "launching with tuned memory inside spec.resources.memory: heap %s, managed %s, metaspace %s "
	          "(untuned: %s, %s, %s)",
	          h, mg, ms, ph, pm, pms);
	free(h), free(mg), free(ms), free(ph), free(pm), free(pms);
	return true;
}

void sup_memtune_upgrade_aborted(struct supervisor *s)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	if (!s->memtune.relaunching)
		return;
	s->memtune.relaunching = false;
	if (mt->rec_heap <= 0)
		return;
	s->memtune.held_heap = (uint64_t)mt->rec_heap;
	char *h = membudget_mib(s->memtune.held_heap);
	sup_event(s, "MemoryTuningRelaunchHeld",
	          "the relaunch to apply memory tuning (heap %s) was aborted: no relaunch for it again until a "
	          "recommendation moves the heap by flinklet.memory-tuning.relaunch-above from it, or the file changes "
	          "or SIGHUP; the next launch flinklet makes anyway still uses it",
	          h);
	free(h);
}

void sup_memtune_reloaded(struct supervisor *s)
{
	s->memtune.held_heap = 0;
}

static void undo(struct supervisor *s, const char *why)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	status_set_string(&mt->suspended, why);
	mt->suspended_memory = (int64_t)s->spec->memory;
	mt->next_metaspace = mt->next_managed = mt->next_heap_floor = -1;
	sup_alert(s, "MemoryTuningUndone",
	          "%s: the next launch uses the untuned memory settings, and tuning stays off until "
	          "spec.resources.memory changes",
	          why);
}

void sup_memtune_jvm_ended(struct supervisor *s, const char *cause, bool stopped)
{
	struct status_memtuning *mt = &s->status.memory_tuning;
	if (mt->run_heap < 0)
		return; /* an untuned JVM */
	char *h = membudget_mib((uint64_t)mt->run_heap), *mg = membudget_mib((uint64_t)mt->run_managed),
	     *ms = membudget_mib((uint64_t)mt->run_metaspace);
	mt->run_heap = mt->run_managed = mt->run_metaspace = -1;
	bool memory = cause && (strstr(cause, "OutOfMemoryError") || strstr(cause, "GC overhead limit") ||
	                        strstr(cause, "Could not allocate enough memory"));
	if (!stopped && (memory || ++s->memtune.tuned_failures >= TUNED_FAILURES_MAX)) {
		char *why =
		    memory ? xasprintf("the tuned JVM (heap %s, managed %s, metaspace %s) ran out of memory: %s", h, mg,
		                       ms, cause)
		           : xasprintf("the tuned JVM (heap %s, managed %s, metaspace %s) failed %d times in a row "
		                       "(the last: %s)",
		                       h, mg, ms, s->memtune.tuned_failures, cause ? cause : "no cause printed");
		undo(s, why);
		free(why);
		s->memtune.tuned_failures = 0;
	}
	free(h), free(mg), free(ms);
	sup_write_status(s);
}

/* The split of spec.resources.memory, once per launch: what the JVM was given (docs/configuration.md, Memory). */
void sup_memtune_log_split(const struct spec *spec)
{
	struct membudget mb;
	if (membudget_compute(spec, &mb, NULL) < 0 || !mb.budget)
		return;
	log_info("memory %llum: heap %llum, metaspace %llum, code cache %llum, direct %llum (network %llum), managed "
	         "%llum, JVM native %llum, flinklet %llum; %s collector%s",
	         (unsigned long long)(mb.budget >> 20), (unsigned long long)(mb.heap >> 20),
	         (unsigned long long)(mb.metaspace >> 20), (unsigned long long)(mb.code_cache >> 20),
	         (unsigned long long)(mb.direct >> 20), (unsigned long long)(mb.network >> 20),
	         (unsigned long long)(mb.managed >> 20), (unsigned long long)((mb.jvm_native + mb.state_native) >> 20),
	         (unsigned long long)(mb.flinklet >> 20), mb.serial_gc ? "serial" : "G1",
	         mb.c1_only ? ", C1 only" : "");
}
