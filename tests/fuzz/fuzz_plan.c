/* fuzz_plan: the input document of `flinklet autoscaler plan` (autoscaler_plan): topology, samples,
 * history, config overrides, evaluated metrics. On success the output is JSON; on failure each problem is
 * named. Input: the bytes of a plan input document (docs/examples/autoscaler-plan-*.json). */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "as_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	char *out = NULL;
	struct strv errors = {0};
	int r = autoscaler_plan((const char *)data, size, NULL, &out, &errors);
	if (r == 0) {
		FUZZ_ASSERT(out);
		cJSON *j = cJSON_Parse(out);
		FUZZ_ASSERT(j); /* the output is JSON */
		cJSON_Delete(j);
	} else {
		FUZZ_ASSERT(errors.n > 0 && !out);
	}
	free(out);
	strv_free(&errors);
	return 0;
}
