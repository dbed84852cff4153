/* jvmout: the JVM's stdout and stderr passed on, split into lines, and the last lines kept (see
 * src/flink/jvmout.h). */
#include "jvmout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct stream {
	struct jvmout *o;
	int fd;     /* the pipe's read end, -1 once closed */
	int target; /* flinklet's own stdout or stderr */
	sd_event_source *src;
	char buf[JVMOUT_LINE_MAX + 1];
	size_t len;
};

struct jvmout {
	struct stream s[2];
	jvmout_line_fn fn;
	void *userdata;
	char *ring[JVMOUT_RING];
	size_t next; /* where the next line goes */
	size_t count;
};

static void emit_line(struct jvmout *o, const char *line, size_t n)
{
	char *copy = xstrndup(line, n);
	size_t len = strlen(copy);
	if (len > 0 && copy[len - 1] == '\r')
		copy[len - 1] = '\0';
	free(o->ring[o->next]);
	o->ring[o->next] = copy;
	o->next = (o->next + 1) % JVMOUT_RING;
	if (o->count < JVMOUT_RING)
		o->count++;
	if (o->fn)
		o->fn(o->userdata, copy);
}

static void split_lines(struct stream *st, bool flush)
{
	size_t start = 0;
	for (size_t i = 0; i < st->len; i++)
		if (st->buf[i] == '\n') {
			/* passed on a whole line per write(2), as flinklet writes its own: with stdout and stderr
			 * in one pipe (2>&1, a container's log) no line of one lands in the middle of the other's.
			 * If our own output is gone (closed, a full non-blocking pipe), the line is still seen */
			write_all(st->target, st->buf + start, i - start + 1);
			emit_line(st->o, st->buf + start, i - start);
			start = i + 1;
		}
	if (start > 0) {
		memmove(st->buf, st->buf + start, st->len - start);
		st->len -= start;
	}
	if (st->len == JVMOUT_LINE_MAX || (flush && st->len > 0)) {
		/* a line longer than the buffer goes on in pieces; the last one of a closed pipe gets its newline */
		if (flush)
			st->buf[st->len++] = '\n';
		write_all(st->target, st->buf, st->len);
		emit_line(st->o, st->buf, flush ? st->len - 1 : st->len);
		st->len = 0;
	}
}

static void close_stream(struct stream *st)
{
	split_lines(st, true);
	st->src = sd_event_source_disable_unref(st->src);
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
}

/* Reads what is there; returns false once the pipe is closed or broken. */
static bool read_some(struct stream *st)
{
	for (int rounds = 0; rounds < 16; rounds++) {
		size_t room = JVMOUT_LINE_MAX - st->len;
		ssize_t n = read(st->fd, st->buf + st->len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		st->len += (size_t)n;
		split_lines(st, false);
	}
	return true;
}

static int on_readable(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct stream *st = userdata;
	if (!read_some(st))
		close_stream(st);
	return 0;
}

void jvmout_set_line_fn(struct jvmout *o, jvmout_line_fn fn, void *userdata)
{
	o->fn = fn;
	o->userdata = userdata;
}

struct jvmout *jvmout_new(sd_event *event, int out_fd, int err_fd, jvmout_line_fn fn, void *userdata)
{
	struct jvmout *o = xcalloc(1, sizeof(*o));
	o->fn = fn;
	o->userdata = userdata;
	int fds[2] = {out_fd, err_fd};
	for (int i = 0; i < 2; i++) {
		struct stream *st = &o->s[i];
		st->o = o;
		st->fd = fds[i];
		st->target = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
		if (st->fd < 0)
			continue;
		int fl = fcntl(st->fd, F_GETFL);
		if (fl >= 0)
			fcntl(st->fd, F_SETFL, fl | O_NONBLOCK);
		if (sd_event_add_io(event, &st->src, st->fd, EPOLLIN, on_readable, st) < 0) {
			jvmout_free(o);
			return NULL;
		}
	}
	return o;
}

void jvmout_drain(struct jvmout *o)
{
	if (!o)
		return;
	for (int i = 0; i < 2; i++)
		if (o->s[i].fd >= 0 && !read_some(&o->s[i]))
			close_stream(&o->s[i]);
}

const char *jvmout_line(const struct jvmout *o, size_t n)
{
	if (!o || n >= o->count)
		return NULL;
	return o->ring[(o->next + JVMOUT_RING - 1 - n) % JVMOUT_RING];
}

static bool names_exception(const char *line)
{
	/* "java.io.EOFException: ...", "org.apache.flink...JobExecutionException: ...", "...Error: ..." */
	const char *colon = strstr(line, ": ");
	const char *p = line;
	while (*p == ' ' || *p == '\t')
		p++;
	if (str_has_prefix(p, "Exception in thread"))
		return true;
	if (str_has_prefix(p, "Terminating due to ")) /* HotSpot's -XX:+ExitOnOutOfMemoryError */
		return names_exception(p + strlen("Terminating due to "));
	if (str_has_prefix(p, "Aborting due to ")) /* HotSpot's -XX:+CrashOnOutOfMemoryError (then SIGABRT) */
		return names_exception(p + strlen("Aborting due to "));
	if (!colon || colon <= p)
		return false;
	for (const char *q = p; q < colon; q++)
		if (*q == ' ' || *q == '\t')
			return false;
	size_t n = (size_t)(colon - p);
	return (n > 9 && !strncmp(colon - 9, "Exception", 9)) || (n > 5 && !strncmp(colon - 5, "Error", 5));
}

char *jvmout_cause_of(const char *const *lines, size_t n, size_t max)
{
	const char *cause = NULL, *exception = NULL;
	for (size_t i = n; i-- > 0 && !cause;) {
		const char *l = lines[i];
		const char *p = l;
		while (*p == ' ' || *p == '\t')
			p++;
		if (str_has_prefix(p, "Caused by: "))
			cause = p + strlen("Caused by: ");
		else if (!exception && names_exception(p))
			exception = p;
		else if (exception && !str_has_prefix(p, "at ") && !str_has_prefix(p, "...") && !names_exception(p))
			break; /* above the newest trace: its own "Caused by" lines are all below */
	}
	const char *pick = cause ? cause : exception;
	if (!pick)
		return NULL;
	size_t len = strlen(pick);
	if (max >= 4 && len > max)
		return xasprintf("%.*s...", (int)(max - 3), pick);
	return xstrdup(pick);
}

char *jvmout_cause(const struct jvmout *o, size_t max)
{
	if (!o || o->count == 0)
		return NULL;
	const char *lines[JVMOUT_RING];
	for (size_t i = 0; i < o->count; i++)
		lines[i] = jvmout_line(o, o->count - 1 - i);
	return jvmout_cause_of(lines, o->count, max);
}

void jvmout_free(struct jvmout *o)
{
	if (!o)
		return;
	jvmout_drain(o);
	for (int i = 0; i < 2; i++)
		close_stream(&o->s[i]);
	for (size_t i = 0; i < JVMOUT_RING; i++)
		free(o->ring[i]);
	free(o);
}
