/* fuzz_plan_window: plan's metric window read straight from the text (as_plan_samples_from_text, as_jsonin.c)
 * against cJSON and as_samples_from_json_at on the same bytes: whenever the text reader accepts a document that
 * cJSON parses, both give the same window bit for bit, and the span it reports is the samples' array. Input: a plan
 * input document (not NUL-terminated: the reader must keep within its length). */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "as_internal.h"

static bool same(const struct as_samples *a, const struct as_samples *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct as_sample *x = &a->s[i], *y = &b->s[i];
		if (x->ts != y->ts || x->n != y->n || memcmp(x->g, y->g, sizeof(x->g)))
			return false;
		for (size_t k = 0; k < x->n; k++)
			if (strcmp(x->v[k].id, y->v[k].id) || memcmp(x->v[k].m, y->v[k].m, sizeof(x->v[k].m)))
				return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	char *text = malloc(size ? size : 1); /* exactly size bytes: no terminator to lean on */
	if (!text)
		abort();
	memcpy(text, data, size);
	struct as_samples fast;
	size_t begin = 0, end = 0;
	if (as_plan_samples_from_text(text, size, &fast, &begin, &end) == 1) {
		FUZZ_ASSERT(begin < end && end <= size && text[begin] == '[' && text[end - 1] == ']');
		cJSON *root = cJSON_ParseWithLengthOpts(text, size, NULL, false);
		if (root) { /* (what the reader skips cJSON may still refuse: an unknown escape; plan then reads it all) */
			struct as_samples ref;
			char *err = NULL;
			FUZZ_ASSERT(as_samples_from_json_at(cJSON_GetObjectItemCaseSensitive(root, "samples"), "samples", &ref,
			                                    &err) == 0);
			FUZZ_ASSERT(same(&fast, &ref));
			as_samples_free(&ref);
			free(err);
			cJSON_Delete(root);
		}
		as_samples_free(&fast);
	} else {
		FUZZ_ASSERT(fast.n == 0 && fast.s == NULL);
	}
	free(text);
	return 0;
}
