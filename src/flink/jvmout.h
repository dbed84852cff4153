/* jvmout: the JVM's stdout and stderr, read through two pipes. Every byte is passed on unchanged to
 * flinklet's own stdout and stderr (Flink's console log stays where it always was: the container log, the
 * journal), and every complete line is handed to a callback (the supervisor's restore-failure check) and kept
 * in a ring of the last lines, from which the cause of a failed start is taken. One jvmout per JVM launch;
 * owned by the supervisor's launch part and freed once that JVM has exited and its pipes are drained. */
#ifndef FLINKLET_JVMOUT_H
#define FLINKLET_JVMOUT_H

#include <stddef.h>

#include <systemd/sd-event.h>

#define JVMOUT_LINE_MAX 4096 /* a longer line is handed on in pieces of this size */
#define JVMOUT_RING 128      /* lines kept for the cause of a failed start */

struct jvmout;

typedef void (*jvmout_line_fn)(void *userdata, const char *line);

/* Takes ownership of the pipes' read ends out_fd and err_fd (either may be -1). Returns NULL on failure
 * (the descriptors are closed then). */
struct jvmout *jvmout_new(sd_event *event, int out_fd, int err_fd, jvmout_line_fn fn, void *userdata);

/* The callback of the lines from now on (a standby JVM's output, once it runs the job). */
void jvmout_set_line_fn(struct jvmout *o, jvmout_line_fn fn, void *userdata);
/* Reads what the pipes hold now without waiting (before the JVM's exit is handled, so that its last words
 * are seen first). */
void jvmout_drain(struct jvmout *o);

/* The last `n`-th line (0: the newest), or NULL. */
const char *jvmout_line(const struct jvmout *o, size_t n);

/* The cause of a failure as the JVM printed it: the last "Caused by:" line of the newest stack trace, else
 * the newest line that names an exception or error. NULL when there is none. A malloc'd string, at most
 * `max` bytes. */
char *jvmout_cause(const struct jvmout *o, size_t max);

/* Drains, closes the pipes and frees. NULL is fine. */
void jvmout_free(struct jvmout *o);

/* The cause line of a list of lines (oldest first), as jvmout_cause: pure, for tests. */
char *jvmout_cause_of(const char *const *lines, size_t n, size_t max);

#endif
