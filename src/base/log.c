/* log: one-line, timestamped supervisor messages on stderr (see src/base/log.h). Each line is written
 * with a single write(2) so it never interleaves with the JVM's output mid-line, and URIs in it are
 * redacted (src/base/redact.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redact.h"
#include "util.h"

static enum log_level min_level = LOG_LEVEL_INFO;

void log_set_level(enum log_level level)
{
	min_level = level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error", "fatal"};
	if (level < min_level)
		return;
	usec_t now = now_realtime();
	time_t sec = (time_t)(now / USEC_PER_SEC);
	struct tm tm;
	localtime_r(&sec, &tm);
	char ts[32];
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);

	struct strbuf b = {0};
	strbuf_appendf(&b, "%s,%03u flinklet %s: ", ts, (unsigned)((now / USEC_PER_MSEC) % 1000), names[level]);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	/* no credentials or presigned query strings in a log line, whoever formatted it */
	if (redact_needed(b.buf)) {
		char *clean = redact_text(b.buf);
		strbuf_free(&b);
		strbuf_append(&b, clean);
		free(clean);
	}
	/* keep it one line */
	for (size_t i = 0; i < b.len; i++)
		if (b.buf[i] == '\n' || b.buf[i] == '\r')
			b.buf[i] = ' ';
	strbuf_append(&b, "\n");
	size_t off = 0;
	while (off < b.len) {
		ssize_t n = write(STDERR_FILENO, b.buf + off, b.len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	strbuf_free(&b);
}
