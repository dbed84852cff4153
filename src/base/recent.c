/* recent: a bounded ring of the newest small JSON documents (src/base/recent.h): the status page's recent
 * events and the autoscaler's timeline. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "recent.h"
#include "util.h"

void recent_init(struct recent *r, size_t cap)
{
	recent_free(r);
	r->v = xcalloc(cap ? cap : 1, sizeof(char *));
	r->cap = cap;
}

void recent_free(struct recent *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[(r->head + i) % r->cap]);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void recent_push(struct recent *r, const char *json)
{
	if (r->cap == 0 || !json)
		return;
	if (r->n == r->cap) {
		free(r->v[r->head]);
		r->v[r->head] = xstrdup(json);
		r->head = (r->head + 1) % r->cap;
		return;
	}
	r->v[(r->head + r->n) % r->cap] = xstrdup(json);
	r->n++;
}

char *recent_array(const struct recent *r, size_t limit)
{
	size_t skip = limit && limit < r->n ? r->n - limit : 0;
	struct strbuf b = {0};
	strbuf_append(&b, "[");
	for (size_t i = skip; i < r->n; i++) {
		if (i > skip)
			strbuf_append(&b, ",");
		strbuf_append(&b, r->v[(r->head + i) % r->cap]);
	}
	strbuf_append(&b, "]");
	return strbuf_steal(&b);
}

size_t recent_push_lines(struct recent *r, const char *text, size_t len)
{
	size_t pushed = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* no newline: torn, or still being written */
		char *line = xstrndup(p, (size_t)(nl - p));
		cJSON *j = cJSON_ParseWithOpts(line, NULL, true); /* the whole line, nothing after the object */
		if (cJSON_IsObject(j)) {
			/* as one line again, whatever whitespace it had */
			char *flat = cJSON_PrintUnformatted(j);
			recent_push(r, flat);
			free(flat);
			pushed++;
		}
		cJSON_Delete(j);
		free(line);
		p = nl + 1;
	}
	return pushed;
}
