/* test_autoscaler_scale: the per-vertex decision (reference 3.2 - 3.8): clamping ceil(f x p) to the
 * min/max parallelism and the key groups, alignment (BALANCED, EVENLY_SPREAD, OFF, and the legacy blocking
 * modes with their ScalingLimited events), the observed scalability coefficient, ineffective-scaling
 * detection, the delayed scale-down window over several cycles, and computeScaleTargetParallelism with
 * +Infinity and NaN rates. Expected values are worked out in the comments. */
#include "unit.h"

#include <math.h>

#include "as_internal.h"

/* ---- an emitter that records events ---- */

struct rec {
	struct strv reasons, messages, keys;
};

static void rec_emit(void *ud, enum as_event_type type, const char *reason, const char *message,
                     const char *message_key, int64_t interval_ms)
{
	struct rec *r = ud;
	strv_push_take(&r->reasons, xasprintf("%s:%s", as_event_type_name(type), reason));
	strv_push(&r->messages, message);
	strv_push(&r->keys, message_key ? message_key : "(none)");
}

static void rec_free(struct rec *r)
{
	strv_free(&r->reasons);
	strv_free(&r->messages);
	strv_free(&r->keys);
}

static int scale(const struct as_options *o, int p, double f, int max_p, int partitions, bool hash, struct rec *r)
{
	struct as_emitter em = {rec_emit, r};
	int lower = p < o->vertex_min_parallelism ? p : o->vertex_min_parallelism;
	int upper = p > o->vertex_max_parallelism ? p : o->vertex_max_parallelism;
	return as_scale_parallelism(o, "v1", p, f, lower, upper, max_p, partitions, hash, &em);
}

static void test_clamps(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o);
	struct rec r = {0};
	/* no partitions, no keyBy input: ceil(1.3 * 4) = ceil(5.2) = 6, unaligned */
	assert_int_equal(scale(&o, 4, 1.3, 128, 0, false, &r), 6);
	/* ceil(f * p) with f * p = 3.0000000000000004 (0.1 * 3 * 10) is 4 */
	assert_int_equal(scale(&o, 10, 0.30000000000000004, 128, 0, false, &r), 4);
	/* the vertex's max parallelism (128 key groups) caps; then vertex.max-parallelism (default 200) */
	assert_int_equal(scale(&o, 4, 100, 128, 0, false, &r), 128);
	o.vertex_max_parallelism = 8;
	assert_int_equal(scale(&o, 4, 100, 128, 0, false, &r), 8);
	/* a vertex already above vertex.max-parallelism (10 > 8) is not forced down: upper = max(10, 8) */
	assert_int_equal(scale(&o, 10, 2, 128, 0, false, &r), 10);
	assert_int_equal(scale(&o, 10, 0.5, 128, 0, false, &r), 5);
	/* vertex.min-parallelism 2: ceil(0.1 * 4) = 1 is raised to 2, but a vertex at 1 may stay below */
	o.vertex_min_parallelism = 2;
	assert_int_equal(scale(&o, 4, 0.1, 128, 0, false, &r), 2);
	assert_int_equal(scale(&o, 1, 0.4, 128, 0, false, &r), 1);
	/* min-parallelism above the key groups: lower = min(p, 300) = 4 never exceeds p <= maxP, so the
	 * result stays within the key groups: ceil(1.5 * 4) = 6, and ceil(0.5 * 4) = 2 is raised to 4 */
	o.vertex_min_parallelism = 300;
	o.vertex_max_parallelism = 400;
	assert_int_equal(scale(&o, 4, 1.5, 128, 0, false, &r), 6);
	assert_int_equal(scale(&o, 4, 0.5, 128, 0, false, &r), 4);
	/* NaN f: (int) NaN = 0, raised to the lower limit */
	o.vertex_min_parallelism = 1;
	assert_int_equal(scale(&o, 4, NAN, 128, 0, false, &r), 1);
	/* an enormous factor saturates at INT32_MAX before the caps */
	assert_int_equal(scale(&o, 4, 1e300, 128, 0, false, &r), 128);
	assert_int_equal(r.reasons.n, 0);
	as_options_free(&o);
	rec_free(&r);
}

static void test_alignment_modes(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o);
	struct rec r = {0};
	/* keyBy input, 128 key groups, p = 1, f = 2.5: newP = 3, search [3, 128]. 128 % 3 != 0 and
	 * 128/3 = 42 is not < 42; 4 divides 128. BALANCED and EVENLY_SPREAD: 4; OFF: 3 */
	assert_int_equal(scale(&o, 1, 2.5, 128, 0, true, &r), 4);
	o.alignment = AS_ALIGN_EVENLY_SPREAD;
	assert_int_equal(scale(&o, 1, 2.5, 128, 0, true, &r), 4);
	o.alignment = AS_ALIGN_OFF;
	assert_int_equal(scale(&o, 1, 2.5, 128, 0, true, &r), 3);
	/* newP = 5: BALANCED takes the first q that lowers floor(128/q) below floor(128/5) = 25, q = 6
	 * (128/6 = 21); EVENLY_SPREAD takes the first divisor, 8 */
	o.alignment = AS_ALIGN_BALANCED;
	assert_int_equal(scale(&o, 1, 5, 128, 0, true, &r), 6);
	o.alignment = AS_ALIGN_EVENLY_SPREAD;
	assert_int_equal(scale(&o, 1, 5, 128, 0, true, &r), 8);
	/* without a keyBy input or partitions nothing is aligned */
	assert_int_equal(scale(&o, 1, 5, 128, 0, false, &r), 5);
	/* scale-down p = 8, f = 0.7: newP = ceil(5.6) = 6, search [6, min(8, 128)] upward.
	 * BALANCED: 6 (128/6 = 21, not < 21), 7 (128/7 = 18 < 21) -> 7. EVENLY_SPREAD: 8, which is p: no change */
	o.alignment = AS_ALIGN_BALANCED;
	assert_int_equal(scale(&o, 8, 0.7, 128, 0, true, &r), 7);
	o.alignment = AS_ALIGN_EVENLY_SPREAD;
	assert_int_equal(scale(&o, 8, 0.7, 128, 0, true, &r), 8);
	/* a source with 15 partitions: p = 2, f = 2 -> newP 4, search [4, 15]: BALANCED 4 (15/4 = 3, not < 3;
	 * 15 % 4 != 0), 5 divides 15 -> 5 */
	o.alignment = AS_ALIGN_BALANCED;
	assert_int_equal(scale(&o, 2, 2, 128, 15, false, &r), 5);
	/* 15 partitions, maxP 720, target 20: a source is never scaled above its partitions (operator 1.16;
	 * issue 27, defect 5: HEAD before it kept 20 here, the search [20, 15] being empty), in every mode */
	assert_int_equal(scale(&o, 10, 2, 720, 15, false, &r), 15);
	o.alignment = AS_ALIGN_EVENLY_SPREAD;
	assert_int_equal(scale(&o, 10, 2, 720, 15, false, &r), 15);
	o.alignment = AS_ALIGN_OFF;
	assert_int_equal(scale(&o, 10, 2, 720, 15, false, &r), 15);
	/* 4 partitions, maxP 8, p 1, target 6 (the defect's Kafka source): 4 */
	o.alignment = AS_ALIGN_BALANCED;
	assert_int_equal(scale(&o, 1, 5.5, 8, 4, false, &r), 4);
	/* a source already above its partitions comes back to them even when it wants more: p 7, target 14 */
	assert_int_equal(scale(&o, 7, 2, 8, 4, false, &r), 4);
	/* partitions above maxP: maxP still caps (8 of 16), and 8 divides 16 */
	assert_int_equal(scale(&o, 2, 5, 8, 16, false, &r), 8);
	assert_int_equal(r.reasons.n, 0); /* the built-in modes never emit */
	as_options_free(&o);
	rec_free(&r);
}

static void test_legacy_alignment(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o);
	o.alignment = AS_ALIGN_LEGACY_EVENLY_SPREAD;
	struct rec r = {0};
	/* a source above its partitions is capped to them before the alignment (operator 1.16): 15
	 * partitions, maxP 720, p = 10, target 20 -> 15, a divisor, no ScalingLimited (before the cap, the
	 * legacy fallback reached the same 15 with one) */
	assert_int_equal(scale(&o, 10, 2, 720, 15, false, &r), 15);
	assert_int_equal(r.reasons.n, 0);
	/* 13 partitions and maxP 10, p = 7, f = 1.3 -> newP 10: no divisor in [10, 10]; the fallback walks
	 * down from 10 to the first d with 13/d > 13/10 = 1: 6, and 13 % 6 != 0 -> 7, which is not above
	 * p: blocked, p stays, ScalingLimited (expected 10, actual 7) */
	assert_int_equal(scale(&o, 7, 1.3, 10, 13, false, &r), 7);
	assert_int_equal(r.reasons.n, 1);
	assert_string_equal(r.reasons.v[0], "Warning:ScalingLimited");
	assert_string_equal(r.keys.v[0], "ScalingLimitedv1");
	assert_string_equal(r.messages.v[0],
	                    "Scaling limited for vertex v1: expected parallelism 10, actual 7, because "
	                    "the number of key groups or source partitions is 13, the upper limit is "
	                    "10 and the lower limit is 1");
	/* a prime number of partitions on scale-down: 7 partitions, p = 4, f = 0.5 -> newP 2; no divisor in
	 * [2, 4]; the fallback: d = 2 (7/2 = 3, not > 3), d = 1 (7 > 3), 7 % 1 == 0 -> 1, below p: allowed,
	 * but not newP: ScalingLimited (expected 2, actual 1) */
	assert_int_equal(scale(&o, 4, 0.5, 128, 7, false, &r), 1);
	assert_int_equal(r.reasons.n, 2);
	assert_contains(r.messages.v[1], "expected parallelism 2, actual 1");
	/* the legacy MAXIMIZE_UTILISATION accepts load-reducing values like BALANCED: 128 key groups,
	 * newP 5 -> 6 */
	o.alignment = AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION;
	assert_int_equal(scale(&o, 1, 5, 128, 0, true, &r), 6);
	assert_int_equal(r.reasons.n, 2);
	as_options_free(&o);
	rec_free(&r);
}

static struct as_history_entry entry(int64_t ts, int cur, int next, double tpr, double expected)
{
	struct as_history_entry e;
	memset(&e, 0, sizeof(e));
	for (int k = 0; k < AS_EM_COUNT; k++)
		e.m[k].current = e.m[k].average = NAN;
	e.ts = ts;
	e.current_parallelism = cur;
	e.new_parallelism = next;
	e.m[AS_EM_TRUE_PROCESSING_RATE].average = tpr;
	e.m[AS_EM_EXPECTED_PROCESSING_RATE].current = expected;
	return e;
}

static void test_scalability_coefficient(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o);
	struct as_history_entry e1[] = {entry(1, 1, 2, 100, 200), entry(2, 2, 4, 180, 360), entry(3, 4, 8, 320, 640)};
	struct as_vertex_history vh = {"v", e1, 3};
	/* baseline: the entry at p = 1, beta = 100. alpha = (1*100 + 2*180 + 4*320) / (100 * (1 + 4 + 16))
	 * = 1740 / 2100 = 0.8285.. -> rounded up to 0.83 */
	assert_true(as_scalability_coefficient(&o, &vh) == 0.83);
	/* no entry at 1: the smallest p, newest first on a tie: (p 2, 200) -> beta = 100.
	 * alpha = (2*180 + 4*320 + 2*200) / (100 * (4 + 16 + 4)) = 2040 / 2400 = 0.85 */
	struct as_history_entry e2[] = {entry(1, 2, 4, 180, 0), entry(2, 4, 2, 320, 0), entry(3, 2, 4, 200, 0)};
	vh.e = e2;
	assert_true(as_scalability_coefficient(&o, &vh) == 0.85);
	/* poor scaling is clamped at coefficient-min: (100 + 400 + 800) / (100 * 81) = 0.16 -> 0.5 */
	struct as_history_entry e3[] = {entry(1, 1, 4, 100, 0), entry(2, 4, 8, 100, 0), entry(3, 8, 9, 100, 0)};
	vh.e = e3;
	assert_true(as_scalability_coefficient(&o, &vh) == 0.5);
	/* superlinear scaling is clamped at 1: (100 + 600 + 3200) / 2100 = 1.857 -> 1 */
	struct as_history_entry e4[] = {entry(1, 1, 2, 100, 0), entry(2, 2, 4, 300, 0), entry(3, 4, 8, 800, 0)};
	vh.e = e4;
	assert_true(as_scalability_coefficient(&o, &vh) == 1.0);
	/* fewer entries than min-observations (3), a NaN rate, or no history: 1 */
	vh.e = e1;
	vh.n = 2;
	assert_true(as_scalability_coefficient(&o, &vh) == 1.0);
	vh.n = 3;
	e1[1].m[AS_EM_TRUE_PROCESSING_RATE].average = NAN;
	assert_true(as_scalability_coefficient(&o, &vh) == 1.0);
	assert_true(as_scalability_coefficient(&o, NULL) == 1.0);
	as_options_free(&o);
}

static void test_ineffective_detection(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o);
	struct rec r = {0};
	struct as_emitter em = {rec_emit, &r};
	struct as_history_entry e[] = {entry(1000, 2, 4, 1000, 2000)};
	struct as_vertex_history vh = {"v1", e, 1};
	struct as_eval_metric m[AS_EM_COUNT];
	m[AS_EM_TRUE_PROCESSING_RATE].average = 1200;
	/* expected increase 2000 - 1000 = 1000, actual 1200 - 1000 = 200: 0.2 >= 0.1, effective */
	assert_false(as_block_ineffective(&o, "v1", m, &vh, &em));
	assert_int_equal(r.reasons.n, 0);
	/* actual 50: 0.05 < 0.1: the event, but no block while detection is off */
	m[AS_EM_TRUE_PROCESSING_RATE].average = 1050;
	assert_false(as_block_ineffective(&o, "v1", m, &vh, &em));
	assert_int_equal(r.reasons.n, 1);
	assert_string_equal(r.reasons.v[0], "Normal:IneffectiveScaling");
	assert_string_equal(r.keys.v[0], "ineffectivev11000.0");
	assert_string_equal(r.messages.v[0], "Ineffective scaling detected for v1 (expected increase: 1000.0, actual "
	                                     "increase 50.0). Blocking of ineffective scaling decisions is disabled");
	o.effectiveness_detection = true;
	assert_true(as_block_ineffective(&o, "v1", m, &vh, &em));
	assert_contains(r.messages.v[1], "is enabled");
	/* an unknown expected rate makes the ratio NaN: not >= threshold, so ineffective */
	e[0].m[AS_EM_EXPECTED_PROCESSING_RATE].current = NAN;
	m[AS_EM_TRUE_PROCESSING_RATE].average = 5000;
	assert_true(as_block_ineffective(&o, "v1", m, &vh, &em));
	assert_string_equal(r.keys.v[2], "ineffectivev1NaN");
	as_options_free(&o);
	rec_free(&r);
}

static void test_delayed_scale_down(void **state)
{
	(void)state;
	struct as_options o;
	as_options_defaults(&o); /* scale-down.interval 1 h = 3 600 000 ms */
	struct as_delayed d = {0};
	bool out = false;
	/* t = 0: the first trigger (6); the interval has not elapsed since it: no change */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 10, 6, true, 0, &out), -1);
	assert_true(d.updated);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].first_trigger_time, 0);
	/* t = 20 min: 8 replaces 6 at the back (6 <= 8): [(20 min, 8)] */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 10, 8, false, 1200000, &out), -1);
	assert_int_equal(d.v[0].n, 1);
	assert_int_equal(d.v[0].r[0].parallelism, 8);
	/* t = 40 min: 5 joins behind: [(20 min, 8), (40 min, 5)] */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 10, 5, true, 2400000, &out), -1);
	assert_int_equal(d.v[0].n, 2);
	/* t = 60 min: 7 pops 5: [(20, 8), (60, 7)]; the window [0, 60 min] has elapsed since the first
	 * trigger (0): the front, the maximum of the last hour, is 8 (outside: false) */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 10, 7, true, 3600000, &out), 8);
	assert_false(out);
	/* t = 81 min 40 s: 6 joins; the window starts at 21 min 40 s, so (20 min, 8) leaves; front (60, 7) */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 10, 6, false, 4900000, &out), 7);
	assert_true(out);
	/* the front equal to the current parallelism means no change */
	assert_int_equal(as_delayed_scale_down(&o, &d, "v", 7, 6, false, 4900001, &out), -1);
	/* an interval of 0 scales down at once, without an entry */
	o.scale_down_interval_ms = 0;
	assert_int_equal(as_delayed_scale_down(&o, &d, "w", 10, 3, true, 0, &out), 3);
	assert_true(out);
	assert_int_equal(d.n, 1);
	as_delayed_clear_vertex(&d, "v");
	assert_int_equal(d.n, 0);
	as_delayed_free(&d);
	as_options_free(&o);
}

/* ---- computeScaleTargetParallelism ---- */

struct vt {
	struct as_options o;
	struct as_topology t;
	struct as_evaluation ev;
	struct as_delayed delayed;
	struct rec r;
	struct as_emitter em;
};

static void vt_init(struct vt *x, int p, int maxp, bool hash, double tdr, double tpr)
{
	memset(x, 0, sizeof(*x));
	as_options_defaults(&x->o);
	x->t.n = hash ? 2 : 1;
	x->t.v = xcalloc(2, sizeof(*x->t.v));
	x->t.v[0].id = xstrdup("v1");
	x->t.v[0].parallelism = p;
	x->t.v[0].max_parallelism = maxp;
	if (hash) {
		x->t.v[1].id = xstrdup("up");
		x->t.v[1].parallelism = 1;
		x->t.v[1].max_parallelism = maxp;
		x->t.v[0].inputs = xcalloc(1, sizeof(struct as_edge));
		x->t.v[0].inputs[0] = (struct as_edge){1, AS_SHIP_HASH};
		x->t.v[0].ninputs = 1;
	}
	assert_int_equal(as_topology_link(&x->t), 0);
	x->ev.n = x->t.n;
	x->ev.v = xcalloc(x->t.n, sizeof(*x->ev.v));
	struct as_eval_metric *m = x->ev.v[0].m;
	for (int k = 0; k < AS_EM_COUNT; k++)
		m[k].current = m[k].average = NAN;
	m[AS_EM_PARALLELISM].current = p;
	m[AS_EM_MAX_PARALLELISM].current = maxp;
	m[AS_EM_NUM_SOURCE_PARTITIONS].current = 0;
	m[AS_EM_TARGET_DATA_RATE].average = tdr;
	m[AS_EM_CATCH_UP_DATA_RATE].current = 0;
	m[AS_EM_TRUE_PROCESSING_RATE].average = tpr;
	as_thresholds(&x->o, m, false, 300);
	x->em = (struct as_emitter){rec_emit, &x->r};
}

static void vt_free(struct vt *x)
{
	as_options_free(&x->o);
	as_topology_free(&x->t);
	as_evaluation_free(&x->ev);
	as_delayed_free(&x->delayed);
	rec_free(&x->r);
}

static void run(struct vt *x, const struct as_vertex_history *vh, int64_t now, struct as_vertex_decision *d)
{
	as_vertex_target(&x->o, &x->t, 0, &x->ev, vh, &x->delayed, now, 300, &x->em, d);
}

static void test_vertex_target(void **state)
{
	(void)state;
	struct vt x;
	struct as_vertex_decision d;
	/* TPR +Infinity: f = 0, clamped to 1 - 0.6 = 0.4: ceil(0.4 * 10) = 4; a scale-down, delayed */
	vt_init(&x, 10, 128, false, 1000, INFINITY);
	run(&x, NULL, 0, &d);
	assert_true(d.computed);
	assert_int_equal(d.target, 4);
	assert_false(d.change);
	assert_int_equal(x.delayed.n, 1);
	/* EXPECTED_PROCESSING_RATE = TPR / p * newP = +Infinity; outside: +Infinity > SCALE_DOWN (2667) */
	assert_true(isinf(x.ev.v[0].m[AS_EM_EXPECTED_PROCESSING_RATE].current));
	assert_true(as_outside_bounds(x.ev.v[0].m));
	/* with no delay: a change to 4, outside its bounds */
	x.o.scale_down_interval_ms = 0;
	run(&x, NULL, 1000, &d);
	assert_true(d.change && d.outside);
	assert_int_equal(d.new_p, 4);
	/* NaN TPR: no change, nothing computed */
	x.ev.v[0].m[AS_EM_TRUE_PROCESSING_RATE].average = NAN;
	run(&x, NULL, 2000, &d);
	assert_false(d.change);
	assert_int_equal(d.target, 10);
	/* the target equal to p clears the vertex's delayed entry: TDR 1000, TPR 160 at p 10:
	 * cap = jround(1000 * 300 / 1800 + 1000 / 0.7) = 1595, f = 1595 / 160 = 9.97 -> clamp? no (<= 100001);
	 * ceil(99.7) = 100 > 10 -> a scale-up, which also clears the entry */
	x.ev.v[0].m[AS_EM_TRUE_PROCESSING_RATE].average = 160;
	run(&x, NULL, 3000, &d);
	assert_int_equal(d.new_p, 100);
	assert_int_equal(x.delayed.n, 0);
	/* EXPECTED = 160 / 10 * 100 = 1600 */
	assert_true(x.ev.v[0].m[AS_EM_EXPECTED_PROCESSING_RATE].current == 1600);
	/* TPR 1595 at p 10: f = 1, ceil(10) = 10: no change */
	x.ev.v[0].m[AS_EM_TRUE_PROCESSING_RATE].average = 1595;
	run(&x, NULL, 4000, &d);
	assert_false(d.change);
	assert_int_equal(d.target, 10);
	vt_free(&x);
}

static void test_vertex_target_keyed_and_scalability(void **state)
{
	(void)state;
	struct vt x;
	struct as_vertex_decision d;
	/* keyed, p 2, TDR 1000, TPR 500: f = 1595 / 500 = 3.19, ceil(6.38) = 7, aligned to 128 key groups:
	 * BALANCED: 7 (128/7 = 18, not < 18), 8 divides -> 8 */
	vt_init(&x, 2, 128, true, 1000, 500);
	run(&x, NULL, 0, &d);
	assert_true(d.change);
	assert_int_equal(d.new_p, 8);
	/* EXPECTED = 500 / 2 * 8 = 2000; outside: 500 < SCALE_UP (jround(1000 / 1.0) = 1000) */
	assert_true(x.ev.v[0].m[AS_EM_EXPECTED_PROCESSING_RATE].current == 2000);
	assert_true(d.outside);
	/* observed scalability with alpha 0.83 (see test_scalability_coefficient): f = 3.19 / 0.83 = 3.843,
	 * ceil(7.687) = 8 -> 8 (aligned) */
	x.o.observed_scalability = true;
	struct as_history_entry e[] = {entry(1, 1, 2, 100, 200), entry(2, 2, 4, 180, 360), entry(3, 4, 2, 320, 160)};
	struct as_vertex_history vh = {"v1", e, 3};
	run(&x, &vh, 10, &d);
	assert_int_equal(d.new_p, 8);
	/* without alignment the difference shows: 7 without the coefficient, 8 with it */
	x.o.alignment = AS_ALIGN_OFF;
	run(&x, &vh, 20, &d);
	assert_int_equal(d.new_p, 8);
	x.o.observed_scalability = false;
	run(&x, &vh, 30, &d);
	assert_int_equal(d.new_p, 7);
	vt_free(&x);
}

static void test_vertex_target_ineffective(void **state)
{
	(void)state;
	struct vt x;
	struct as_vertex_decision d;
	/* p 4 after a scale-up 2 -> 4 that expected 2000 from 1000 and got 1050. TDR 2000:
	 * cap = jround(2000 * 300 / 1800 + 2000 / 0.7) = jround(333.333 + 2857.143) = 3190;
	 * f = 3190 / 1050 = 3.038, ceil(12.15) = 13: another scale-up */
	vt_init(&x, 4, 128, false, 2000, 1050);
	struct as_history_entry e[] = {entry(1000, 2, 4, 1000, 2000)};
	struct as_vertex_history vh = {"v1", e, 1};
	run(&x, &vh, 5000, &d);
	assert_true(d.change);
	assert_int_equal(d.new_p, 13);
	assert_int_equal(x.r.reasons.n, 1); /* IneffectiveScaling, not blocking */
	x.o.effectiveness_detection = true;
	run(&x, &vh, 6000, &d);
	assert_false(d.change);
	assert_int_equal(d.target, 13);
	/* only when p is the last entry's new parallelism and that was a scale-up */
	e[0].new_parallelism = 3;
	run(&x, &vh, 7000, &d);
	assert_true(d.change);
	e[0].new_parallelism = 4;
	e[0].current_parallelism = 8; /* a scale-down 8 -> 4 */
	run(&x, &vh, 8000, &d);
	assert_true(d.change);
	vt_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clamps),
	    cmocka_unit_test(test_alignment_modes),
	    cmocka_unit_test(test_legacy_alignment),
	    cmocka_unit_test(test_scalability_coefficient),
	    cmocka_unit_test(test_ineffective_detection),
	    cmocka_unit_test(test_delayed_scale_down),
	    cmocka_unit_test(test_vertex_target),
	    cmocka_unit_test(test_vertex_target_keyed_and_scalability),
	    cmocka_unit_test(test_vertex_target_ineffective),
	};
	return cmocka_run_group_tests_name("autoscaler_scale", tests, NULL, NULL);
}
