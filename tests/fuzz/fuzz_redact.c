/* fuzz_redact: what flinklet shows of a URI (redact_text, redact_uri) on any text. Whatever the input, the
 * output has no secret left that a second pass would find (redact_needed is false, and redacting it again
 * changes nothing), it is never longer than the input by more than the masks, and what is not a URI is kept.
 * Input: any bytes (a log line, a jarURI). */
#include "fuzz.h"

#include "redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	char *text = fuzz_cstr(data, size);
	char *once = redact_text(text);
	FUZZ_ASSERT(once);
	FUZZ_ASSERT(!redact_needed(once));
	char *twice = redact_text(once);
	FUZZ_ASSERT(!strcmp(once, twice)); /* nothing left to redact */
	FUZZ_ASSERT(redact_needed(text) == (strcmp(text, once) != 0));
	if (!strstr(text, "://"))
		FUZZ_ASSERT(!strcmp(text, once)); /* no URI, no change */
	char *uri = redact_uri(text);
	FUZZ_ASSERT(uri);
	char *uri2 = redact_uri(uri);
	FUZZ_ASSERT(!strcmp(uri, uri2));
	free(uri2);
	free(uri);
	free(twice);
	free(once);
	free(text);
	return 0;
}
