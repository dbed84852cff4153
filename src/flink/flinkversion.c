/* flinkversion: what a running Flink's reported version allows (src/flink/flinkversion.h). */
#include "flinkversion.h"

#include <stddef.h>

/* One number of a release: 1 to 6 digits, no sign, no leading zero (but "0"). Returns the characters read, 0 when
 * none could be. */
static size_t number(const char *p, unsigned *v)
{
	size_t n = 0;
	*v = 0;
	while (p[n] >= '0' && p[n] <= '9' && n < 6)
		*v = *v * 10 + (unsigned)(p[n++] - '0');
	if (!n || (p[n] >= '0' && p[n] <= '9') || (n > 1 && p[0] == '0'))
		return 0;
	return n;
}

/* MAJOR.MINOR.PATCH and nothing else. */
static bool release(const char *v, unsigned *major, unsigned *minor, unsigned *patch)
{
	size_t n;
	if (!v || !(n = number(v, major)) || v[n] != '.')
		return false;
	v += n + 1;
	if (!(n = number(v, minor)) || v[n] != '.')
		return false;
	v += n + 1;
	return (n = number(v, patch)) && v[n] == '\0';
}

bool flinkversion_claims_native_savepoints(const char *version)
{
	unsigned major, minor, patch;
	if (!release(version, &major, &minor, &patch))
		return false;
	if (major != 2)
		return major > 2;
	return minor >= 4 || (minor == 3 && patch >= 1) || (minor == 2 && patch >= 2);
}
