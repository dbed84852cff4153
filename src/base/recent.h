/* recent: a bounded ring of the newest small JSON documents, kept as text, the oldest dropped first. The
 * supervisor keeps two for the status page: the recent events (GET /events) and the autoscaler's timeline, one
 * entry per control-loop cycle (GET /autoscaler). Pure: no I/O. */
#ifndef FLINKLET_RECENT_H
#define FLINKLET_RECENT_H

#include <stddef.h>

struct recent {
	char **v;   /* cap slots; v[(head + i) % cap] is the i-th oldest of the n entries */
	size_t cap; /* 0: not set up, pushes are dropped */
	size_t n, head;
};

void recent_init(struct recent *r, size_t cap);
void recent_free(struct recent *r);
/* Keeps a copy of json (one JSON value as text); the oldest entry goes when the ring is full. */
void recent_push(struct recent *r, const char *json);
/* The newest limit entries (0: all), oldest first, as the text of one JSON array (malloc'd). */
char *recent_array(const struct recent *r, size_t limit);
/* Pushes every line of text (JSON lines, such as the end of events.jsonl) that is a JSON object, in order;
 * anything else (a line cut in two where the text starts, a torn last line) is skipped. Returns the number
 * pushed. */
size_t recent_push_lines(struct recent *r, const char *text, size_t len);

#endif
