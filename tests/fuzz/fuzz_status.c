/* fuzz_status: reading status.json back after a restart (status_parse). A document that parses is
 * rendered again, and the rendering must parse too (what flinklet writes it can read back). Input: the
 * bytes of a status.json. */
#include "fuzz.h"

#include "status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	char *text = fuzz_cstr(data, size);
	struct status st;
	status_init(&st);
	if (status_parse(text, &st) == 0) {
		char *again = status_render(&st);
		FUZZ_ASSERT(again);
		struct status st2;
		status_init(&st2);
		FUZZ_ASSERT(status_parse(again, &st2) == 0);
		char *third = status_render(&st2);
		FUZZ_ASSERT(third && !strcmp(again, third)); /* the round trip is stable */
		free(third);
		status_free(&st2);
		free(again);
	}
	status_free(&st);
	free(text);
	return 0;
}
