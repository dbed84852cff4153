/* util: allocation, strings, strict parsers and clocks used by every module (see src/base/util.h).
 * Allocation failure aborts: the supervisor's allocations are small and bounded, and a half-built
 * state after ENOMEM would be worse than a restart by the platform. */
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
	static const char msg[] = "flinklet: fatal: out of memory\n";
	fwrite(msg, 1, sizeof(msg) - 1, stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	return strbuf_steal(&b);
}

static void strbuf_grow(struct strbuf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->buf = xrealloc(b->buf, cap);
	b->cap = cap;
}

void strbuf_appendn(struct strbuf *b, const char *s, size_t n)
{
	strbuf_grow(b, n);
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void strbuf_append(struct strbuf *b, const char *s)
{
	strbuf_appendn(b, s, strlen(s));
}

void strbuf_vappendf(struct strbuf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	strbuf_grow(b, (size_t)n);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void strbuf_appendf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(b, fmt, ap);
	va_end(ap);
}

char *strbuf_steal(struct strbuf *b)
{
	char *s = b->buf ? b->buf : xstrdup("");
	b->buf = NULL;
	b->len = b->cap = 0;
	return s;
}

void strbuf_free(struct strbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

void strv_push_take(struct strv *s, char *str)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = xrealloc(s->v, s->cap * sizeof(char *));
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
}

void strv_push(struct strv *s, const char *str)
{
	strv_push_take(s, xstrdup(str));
}

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int parse_int64(const char *s, int64_t *ret)
{
	if (str_empty(s))
		return -EINVAL;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0' || isspace((unsigned char)*s))
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_bool(const char *s, bool *ret)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "true") || !strcmp(s, "TRUE") || !strcmp(s, "True")) {
		*ret = true;
		return 0;
	}
	if (!strcmp(s, "false") || !strcmp(s, "FALSE") || !strcmp(s, "False")) {
		*ret = false;
		return 0;
	}
	return -EINVAL;
}

/* Splits "<digits>[ ]<unit>" into a non-negative integer and a unit word. */
static int split_number_unit(const char *s, uint64_t *num, const char **unit)
{
	if (str_empty(s))
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	uint64_t v = 0;
	while (isdigit((unsigned char)*s)) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
		s++;
	}
	while (isspace((unsigned char)*s))
		s++;
	*num = v;
	*unit = s;
	/* trailing space after the unit is not allowed */
	size_t n = strlen(s);
	if (n && isspace((unsigned char)s[n - 1]))
		return -EINVAL;
	return 0;
}

struct unit {
	const char *name;
	uint64_t mult;
};

static int apply_unit(uint64_t num, const char *unit, const struct unit *units, uint64_t *ret)
{
	for (const struct unit *u = units; u->name; u++) {
		if (strcasecmp(unit, u->name))
			continue;
		if (u->mult && num > UINT64_MAX / u->mult)
			return -ERANGE;
		*ret = num * u->mult;
		return 0;
	}
	return -EINVAL;
}

int parse_duration(const char *s, usec_t *ret)
{
	/* Flink's TimeUtils: nanoseconds are accepted but rounded down to microseconds here. */
	static const struct unit units[] = {
	    {"", USEC_PER_MSEC},
	    {"ms", USEC_PER_MSEC},
	    {"milli", USEC_PER_MSEC},
	    {"millis", USEC_PER_MSEC},
	    {"millisecond", USEC_PER_MSEC},
	    {"milliseconds", USEC_PER_MSEC},
	    {"us", 1},
	    {"micro", 1},
	    {"micros", 1},
	    {"microsecond", 1},
	    {"microseconds", 1},
	    {"s", USEC_PER_SEC},
	    {"sec", USEC_PER_SEC},
	    {"secs", USEC_PER_SEC},
	    {"second", USEC_PER_SEC},
	    {"seconds", USEC_PER_SEC},
	    {"m", 60 * USEC_PER_SEC},
	    {"min", 60 * USEC_PER_SEC},
	    {"mins", 60 * USEC_PER_SEC},
	    {"minute", 60 * USEC_PER_SEC},
	    {"minutes", 60 * USEC_PER_SEC},
	    {"h", 3600 * USEC_PER_SEC},
	    {"hour", 3600 * USEC_PER_SEC},
	    {"hours", 3600 * USEC_PER_SEC},
	    {"d", 86400 * USEC_PER_SEC},
	    {"day", 86400 * USEC_PER_SEC},
	    {"days", 86400 * USEC_PER_SEC},
	    {NULL, 0},
	};
	uint64_t num;
	const char *unit;
	int r = split_number_unit(s, &num, &unit);
	if (r < 0)
		return r;
	static const char *const nanos[] = {"ns", "nano", "nanos", "nanosecond", "nanoseconds", NULL};
	for (size_t i = 0; nanos[i]; i++)
		if (!strcasecmp(unit, nanos[i])) {
			*ret = num / 1000;
			return 0;
		}
	return apply_unit(num, unit, units, ret);
}

int parse_memory(const char *s, uint64_t *ret)
{
	static const struct unit units[] = {
	    {"", 1},
	    {"b", 1},
	    {"bytes", 1},
	    {"k", 1ULL << 10},
	    {"kb", 1ULL << 10},
	    {"ki", 1ULL << 10},
	    {"kibibytes", 1ULL << 10},
	    {"m", 1ULL << 20},
	    {"mb", 1ULL << 20},
	    {"mi", 1ULL << 20},
	    {"mebibytes", 1ULL << 20},
	    {"g", 1ULL << 30},
	    {"gb", 1ULL << 30},
	    {"gi", 1ULL << 30},
	    {"gibibytes", 1ULL << 30},
	    {"t", 1ULL << 40},
	    {"tb", 1ULL << 40},
	    {"ti", 1ULL << 40},
	    {"tebibytes", 1ULL << 40},
	    {NULL, 0},
	};
	uint64_t num;
	const char *unit;
	int r = split_number_unit(s, &num, &unit);
	if (r < 0)
		return r;
	return apply_unit(num, unit, units, ret);
}

int parse_cpu(const char *s, double *ret)
{
	if (str_empty(s) || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	size_t n = strlen(s);
	bool milli = n > 1 && s[n - 1] == 'm';
	char *copy = xstrndup(s, milli ? n - 1 : n);
	char *end;
	errno = 0;
	double v = strtod(copy, &end);
	bool ok = errno == 0 && *end == '\0' && end != copy && isfinite(v) && v >= 0 && copy[0] != 'n' &&
	          copy[0] != 'i' && copy[0] != 'N' && copy[0] != 'I';
	free(copy);
	if (!ok)
		return -EINVAL;
	*ret = milli ? v / 1000.0 : v;
	return 0;
}

usec_t now_realtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000;
}

usec_t now_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000;
}

void format_iso8601(usec_t t, char *buf, size_t size)
{
	time_t sec = (time_t)(t / USEC_PER_SEC);
	struct tm tm;
	gmtime_r(&sec, &tm);
	char date[24];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03uZ", date, (unsigned)((t / USEC_PER_MSEC) % 1000));
}

size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *prev = xcalloc(lb + 1, sizeof(size_t)), *cur = xcalloc(lb + 1, sizeof(size_t));
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
			size_t best = prev[j - 1] + cost;
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			cur[j] = best;
		}
		size_t *t = prev;
		prev = cur;
		cur = t;
	}
	size_t d = prev[lb];
	free(prev);
	free(cur);
	return d;
}

int64_t double_to_i64(double v, int64_t lo, int64_t hi, int64_t def)
{
	if (!isfinite(v) || v < (double)lo || v > (double)hi)
		return def;
	return (int64_t)v;
}

const char *did_you_mean(const char *got, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(got, candidates[i]);
		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	size_t len = strlen(got);
	size_t limit = len > 9 ? len / 3 : 2;
	return best && best_d <= limit ? best : NULL;
}

bool str_has_prefix(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_has_suffix(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);
	return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

void dir_entries(const char *dir, const char *prefix, const char *suffix, struct strv *out)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if ((!prefix || str_has_prefix(de->d_name, prefix)) && (!suffix || str_has_suffix(de->d_name, suffix)))
			strv_push_take(out, path_join(dir, de->d_name));
	}
	closedir(d);
}

bool str_empty(const char *s)
{
	return !s || !*s;
}

char *local_path_from_uri(const char *uri)
{
	const char *p = NULL;
	if (str_has_prefix(uri, "local://"))
		p = uri + strlen("local://");
	else if (str_has_prefix(uri, "file://"))
		p = uri + strlen("file://");
	else if (str_has_prefix(uri, "file:"))
		p = uri + strlen("file:");
	else
		p = uri;
	if (!p || p[0] != '/')
		return NULL;
	/* "file:///x" leaves "/x"; "file:////x" is still one absolute path */
	while (p[0] == '/' && p[1] == '/')
		p++;
	return xstrdup(p);
}

char *file_uri_from_path(const char *path)
{
	return xasprintf("file://%s", path);
}

char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	while (*name == '/')
		name++;
	if (n == 1 && dir[0] == '/')
		return xasprintf("/%s", name);
	return xasprintf("%.*s/%s", (int)n, dir, name);
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	return slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
}

int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint64_t proc_resident_bytes(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	FILE *f = fopen(path, "re");
	unsigned long size = 0, resident = 0;
	int n = f ? fscanf(f, "%lu %lu", &size, &resident) : 0;
	if (f)
		fclose(f);
	return n == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}
