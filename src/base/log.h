/* log: the supervisor's own log lines, one line per event, on stderr beside the JVM's output:
 *   2026-11-29 21:00:00,123 flinklet info: job 3f2a... is RUNNING (2/2 tasks)
 * The timestamp format matches Flink's console pattern so both streams sort together. */
#ifndef FLINKLET_LOG_H
#define FLINKLET_LOG_H

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR, LOG_LEVEL_FATAL };

void log_set_level(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_fatal(...) log_msg(LOG_LEVEL_FATAL, __VA_ARGS__)

#endif
