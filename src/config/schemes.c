/* schemes: which URI schemes flinklet downloads a job's jar over (https, http, s3), and the list
 * flinklet.artifacts.allowed-schemes that admits them. Pure string work, shared by the configuration check (which
 * refuses a jarURI whose scheme the list does not admit) and the artifact planner (src/flink/artifacts.c). */
#include "schemes.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define ALLOWED_SCHEMES "flinklet.artifacts.allowed-schemes"

const char *artifact_remote_scheme(const char *uri)
{
	static const char *const schemes[] = {"https", "http", "s3", NULL};
	for (size_t i = 0; schemes[i]; i++) {
		size_t n = strlen(schemes[i]);
		if (!strncasecmp(uri, schemes[i], n) && !strncmp(uri + n, "://", 3))
			return schemes[i];
	}
	return NULL;
}

const char *artifact_allowed_schemes(const struct spec *s)
{
	const char *v = spec_get(s, ALLOWED_SCHEMES);
	const struct option_def *o = v ? NULL : option_find(ALLOWED_SCHEMES);
	return v ? v : (o && o->def ? o->def : "");
}

/* Calls f with each entry of the list, trimmed, until it returns true; returns whether one did. */
static bool each_scheme(const char *list, bool (*f)(const char *entry, size_t len, const void *arg), const void *arg)
{
	const char *p = list;
	while (*p) {
		size_t len = strcspn(p, ",;");
		const char *e = p, *end = p + len;
		while (e < end && isspace((unsigned char)*e))
			e++;
		while (end > e && isspace((unsigned char)end[-1]))
			end--;
		if (end > e && f(e, (size_t)(end - e), arg))
			return true;
		p += len;
		if (*p)
			p++;
	}
	return false;
}

static bool is_scheme(const char *entry, size_t len, const void *arg)
{
	return strlen(arg) == len && !strncasecmp(entry, arg, len);
}

bool artifact_scheme_listed(const char *list, const char *scheme)
{
	return each_scheme(list, is_scheme, scheme);
}

static bool unknown_scheme(const char *entry, size_t len, const void *arg)
{
	char **first = (char **)arg;
	if (is_scheme(entry, len, "https") || is_scheme(entry, len, "http") || is_scheme(entry, len, "s3"))
		return false;
	*first = xstrndup(entry, len);
	return true;
}

char *artifact_schemes_unknown(const char *list)
{
	char *first = NULL;
	each_scheme(list, unknown_scheme, &first);
	return first;
}
