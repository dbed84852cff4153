/* fuzz_as_state: the autoscaler's persisted state documents (as_*_from_json, src/autoscaler/as_state.c). The input is
 * one JSON document; each state kind's loader reads the member of its name (as in the file store's
 * document) and, for good measure, the whole document. A value that loads is written out again and must
 * load again (the store writes what it can read back). */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "as_internal.h"

#define ROUND_TRIP(type, from, to, freefn, j)                                                                          \
	do {                                                                                                           \
		type v;                                                                                                \
		memset(&v, 0, sizeof(v));                                                                              \
		char *err = NULL;                                                                                      \
		if (from((j), &v, &err) == 0) {                                                                        \
			FUZZ_ASSERT(err == NULL);                                                                      \
			cJSON *out = to(&v);                                                                           \
			FUZZ_ASSERT(out);                                                                              \
			type w;                                                                                        \
			memset(&w, 0, sizeof(w));                                                                      \
			char *err2 = NULL;                                                                             \
			FUZZ_ASSERT(from(out, &w, &err2) == 0);                                                        \
			freefn(&w);                                                                                    \
			free(err2);                                                                                    \
			cJSON_Delete(out);                                                                             \
			freefn(&v);                                                                                    \
		} else {                                                                                               \
			FUZZ_ASSERT(err != NULL); /* a rejected value names its path */                                \
			free(err);                                                                                     \
		}                                                                                                      \
	} while (0)

static void load_all(const cJSON *j)
{
	ROUND_TRIP(struct as_samples, as_samples_from_json, as_samples_to_json, as_samples_free, j);
	ROUND_TRIP(struct as_scaling_history, as_scaling_history_from_json, as_scaling_history_to_json,
	           as_scaling_history_free, j);
	ROUND_TRIP(struct as_tracking, as_tracking_from_json, as_tracking_to_json, as_tracking_free, j);
	ROUND_TRIP(struct as_pmap, as_pmap_from_json, as_pmap_to_json, as_pmap_free, j);
	ROUND_TRIP(struct as_delayed, as_delayed_from_json, as_delayed_to_json, as_delayed_free, j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	if (!doc)
		return 0;
	load_all(doc);
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, as_state_kind_name(k));
		if (m)
			load_all(m);
	}
	/* plan's flat history entries and the samples of a plan input */
	const cJSON *e;
	const cJSON *hist = cJSON_GetObjectItemCaseSensitive(doc, "history");
	cJSON_ArrayForEach (e, hist) {
		struct as_history_entry h;
		memset(&h, 0, sizeof(h));
		char *err = NULL;
		as_history_entry_from_json(e, "history[]", &h, &err);
		free(err);
	}
	const cJSON *samples = cJSON_GetObjectItemCaseSensitive(doc, "samples");
	if (samples) {
		struct as_samples s = {0};
		char *err = NULL;
		if (as_samples_from_json_at(samples, "samples", &s, &err) == 0)
			as_samples_free(&s);
		free(err);
	}
	/* the state bound the file store applies before each write */
	cJSON *copy = cJSON_Duplicate(doc, 1);
	if (copy) {
		as_state_bound(copy, 2048);
		cJSON_Delete(copy);
	}
	cJSON_Delete(doc);
	return 0;
}
