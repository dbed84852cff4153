/* fuzz_config: the configuration document parser (config_parse) and the validation that fills in every
 * default (config_finalize), then the two renderings check-config prints and the autoscaler's reading of
 * the spec. Input: the bytes of a flinklet.yaml. */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	struct spec s;
	struct diags d = {0};
	int r = config_parse("fuzz.yaml", (const char *)data, size, &s, &d);
	if (r == 0) {
		r = config_finalize(&s, &d);
		if (r == 0) {
			/* a spec that validated renders, and the autoscaler reads it */
			cJSON *j = spec_to_json(&s);
			FUZZ_ASSERT(j);
			cJSON_Delete(j);
			char *y = spec_to_yaml(&s);
			FUZZ_ASSERT(y);
			free(y);
			struct diags d2 = {0};
			autoscaler_validate(&s, &d2);
			diags_free(&d2);
			struct as_options o;
			as_options_from_spec(&s, &o);
			as_options_free(&o);
		} else {
			FUZZ_ASSERT(d.msgs.n > 0); /* a rejected document says why */
		}
	} else {
		FUZZ_ASSERT(d.msgs.n > 0);
	}
	spec_free(&s); /* config_parse fills s even when it fails (unit.h frees it the same way) */
	diags_free(&d);
	return 0;
}
