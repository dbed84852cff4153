/* as_realize: the pure part of the standalone Rescale API realizer (reference 3.10): from the job's
 * current GET /jobs/:id/resource-requirements and the parallelism overrides, the body of the PUT (every
 * overridden vertex gets lowerBound 1 and upperBound p), or nothing when no PUT is needed, so that
 * re-applying the overrides on every cycle is idempotent. It is not for the REST calls. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static bool bound_is(const cJSON *par, const char *name, int value)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(par, name);
	return cJSON_IsNumber(b) && b->valuedouble == (double)value;
}

bool as_resource_requirements_update(const cJSON *current, const struct as_pmap *overrides, cJSON **ret_body)
{
	*ret_body = NULL;
	if (!cJSON_IsObject(current))
		return false;
	cJSON *body = cJSON_Duplicate(current, true);
	bool changed = false;
	for (cJSON *v = body->child; v; v = v->next) {
		int p = as_pmap_get(overrides, v->string);
		if (p < 1 || !cJSON_IsObject(v))
			continue;
		cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		if (cJSON_IsObject(par) && bound_is(par, "lowerBound", 1) && bound_is(par, "upperBound", p))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(v, "parallelism");
		par = cJSON_AddObjectToObject(v, "parallelism");
		cJSON_AddNumberToObject(par, "lowerBound", 1);
		cJSON_AddNumberToObject(par, "upperBound", p);
		changed = true;
	}
	if (!changed) {
		cJSON_Delete(body);
		return false;
	}
	*ret_body = body;
	return true;
}
