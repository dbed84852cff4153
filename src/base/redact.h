/* redact: secrets out of what flinklet shows. A URI's credentials (https://user:pass@host/...) and its
 * query and fragment (presigned URLs carry their signature there: ?X-Amz-Signature=..., ?sig=...,
 * ?token=...) never reach a log line, an event, the status document or check-config's output: the
 * userinfo becomes three stars before the '@', the query (or fragment) three stars after the '?' (or '#').
 * Pure functions, no I/O. */
#ifndef FLINKLET_REDACT_H
#define FLINKLET_REDACT_H

#include <stdbool.h>

/* One URI, redacted (malloc'd). A string that is not scheme://... comes back unchanged. */
char *redact_uri(const char *uri);
/* Free text with every scheme://... in it redacted (malloc'd). */
char *redact_text(const char *text);
/* Whether redact_text would change text (the fast path of the log and event writers). */
bool redact_needed(const char *text);

#endif
