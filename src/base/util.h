/* util: small building blocks shared by every module: allocation that aborts on exhaustion, a growable
 * string buffer, string vectors, the links of a doubly linked list, strict number/duration/memory parsing with
 * Flink's syntax, clocks, and the edit distance behind "did you mean" hints. Nothing here knows about Flink or the
 * supervisor. */
#ifndef FLINKLET_UTIL_H
#define FLINKLET_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef uint64_t usec_t;
#define USEC_PER_MSEC ((usec_t)1000)
#define USEC_PER_SEC ((usec_t)1000000)

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A doubly linked list of structs that carry their own links (members prev and next); head points to the first.
 * LIST_PREPEND puts item first; LIST_REMOVE takes it out wherever it is (head follows) and clears its links. */
#define LIST_PREPEND(head, item)                                                                                       \
	do {                                                                                                           \
		(item)->prev = NULL;                                                                                   \
		(item)->next = (head);                                                                                 \
		if (head)                                                                                              \
			(head)->prev = (item);                                                                         \
		(head) = (item);                                                                                       \
	} while (0)
#define LIST_REMOVE(head, item)                                                                                        \
	do {                                                                                                           \
		if ((item)->prev)                                                                                      \
			(item)->prev->next = (item)->next;                                                             \
		else if ((head) == (item))                                                                             \
			(head) = (item)->next;                                                                         \
		if ((item)->next)                                                                                      \
			(item)->next->prev = (item)->prev;                                                             \
		(item)->prev = (item)->next = NULL;                                                                    \
	} while (0)

struct strbuf {
	char *buf;
	size_t len, cap;
};
void strbuf_append(struct strbuf *b, const char *s);
void strbuf_appendn(struct strbuf *b, const char *s, size_t n);
void strbuf_appendf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vappendf(struct strbuf *b, const char *fmt, va_list ap);
char *strbuf_steal(struct strbuf *b); /* returns the string (never NULL) and resets b */
void strbuf_free(struct strbuf *b);

/* NULL-terminated vector of owned strings. */
struct strv {
	char **v;
	size_t n, cap;
};
void strv_push(struct strv *s, const char *str);
void strv_push_take(struct strv *s, char *str);
void strv_free(struct strv *s);

/* Strict parsers: the whole string must be consumed; return 0 or -EINVAL / -ERANGE. */
int parse_int64(const char *s, int64_t *ret);
int parse_bool(const char *s, bool *ret);
/* Flink's Duration syntax ("10s", "1 min", "500ms", a bare number is milliseconds). */
int parse_duration(const char *s, usec_t *ret);
/* Flink's MemorySize syntax ("2048m", "1g", "512 mb", bytes when bare) and Kubernetes' ("2Gi", "512Mi"). */
int parse_memory(const char *s, uint64_t *ret);
/* A non-negative decimal number such as a CPU share ("0.5", "2"), or Kubernetes millicores ("500m"). */
int parse_cpu(const char *s, double *ret);

usec_t now_realtime(void);
usec_t now_monotonic(void);
/* ISO-8601 UTC with milliseconds into buf (at least 32 bytes). */
void format_iso8601(usec_t t, char *buf, size_t size);

/* "local:///p", "file:///p", "file:/p" or "/p" -> "/p" (malloc'd); NULL for any other scheme or a
 * relative path. */
char *local_path_from_uri(const char *uri);
/* "/p" -> "file:///p" (malloc'd). */
char *file_uri_from_path(const char *path);
/* Writes all of data to fd, again after EINTR: 0, or -errno at the first failing write (-EIO when a write
 * takes nothing; a full non-blocking pipe gives -EAGAIN). */
int write_all(int fd, const void *data, size_t len);
/* Joins a directory and a name with exactly one '/'. */
char *path_join(const char *dir, const char *name);
/* The directory part of a path, as dirname(3) without touching path (malloc'd): "/a/b" -> "/a", "/a" -> "/",
 * "a" -> ".". */
char *path_dirname(const char *path);

/* A number from outside (JSON, a REST answer) as an integer: its integral part when it is finite and within
 * [lo, hi], else def. Never the undefined behaviour of a plain cast. */
int64_t double_to_i64(double v, int64_t lo, int64_t hi, int64_t def);

size_t edit_distance(const char *a, const char *b);
/* The closest of the candidates when it is near enough to be a likely typo, else NULL. */
const char *did_you_mean(const char *got, const char *const *candidates, size_t n);
bool str_has_prefix(const char *s, const char *prefix);
bool str_has_suffix(const char *s, const char *suffix);
/* Appends to out the paths (dir/name) of dir's entries whose name starts with prefix and ends with suffix (either
 * NULL: any); nothing when dir cannot be read. */
void dir_entries(const char *dir, const char *prefix, const char *suffix, struct strv *out);
bool str_empty(const char *s);
/* The resident set of a process in bytes (its /proc/<pid>/statm), 0 when it cannot be read. */
uint64_t proc_resident_bytes(pid_t pid);

#endif
