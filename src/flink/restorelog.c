/* restorelog: what the JVM's output says about the restore (see src/flink/restorelog.h). */
#include "restorelog.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

/* Flink's lines when a restore begins (CheckpointCoordinator, 1.20 and 2.x):
 *   "Restoring job <id> from Checkpoint <n> @ <ts> for <id> located at <path>."
 *   "Starting job <id> from savepoint <path> (...)"  */
static const char *const started_markers[] = {"Restoring job ", "Starting job ", NULL};

/* Exception lines that say a file cannot be read (not that the job changed) */
static const char *const unreadable_words[] = {"FileNotFoundException",
                                               "NoSuchFileException",
                                               "EOFException",
                                               "No such file or directory",
                                               "UTFDataFormatException",
                                               "StreamCorruptedException",
                                               "Could not read",
                                               "Cannot read",
                                               "Failed to read",
                                               "Unexpected magic number",
                                               "Unknown metadata version",
                                               "corrupt",
                                               "Corrupt",
                                               NULL};

/* a restore that fails because the job no longer matches the snapshot: another point would not help */
static const char *const incompatible_words[] = {"Cannot map checkpoint/savepoint state",
                                                 "allowNonRestoredState",
                                                 "StateMigrationException",
                                                 "incompatible",
                                                 "Incompatible",
                                                 NULL};

/* Frames of the code that reads a snapshot's metadata: a trace through them is about the restore point */
static const char *const metadata_frames[] = {"org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata",
                                              "org.apache.flink.runtime.checkpoint.metadata.Metadata", NULL};

/* Whether the line has one of words outside its paths: a word inside a path ("/tmp/test_corrupt_x/...")
 * says nothing. Tokens with a '/' in them are left out. */
static bool has_any(const char *line, const char *const *words)
{
	char buf[1024];
	size_t n = strlen(line);
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && buf[j] != ' ' && buf[j] != '\t' && buf[j] != '(' && buf[j] != ')' && buf[j] != '\'')
			j++;
		if (memchr(buf + i, '/', j - i))
			memset(buf + i, ' ', j - i);
		i = j + 1;
	}
	for (size_t i = 0; words[i]; i++)
		if (strstr(buf, words[i]))
			return true;
	return false;
}

/* Whether the line names path itself or something inside it (not a longer sibling such as chk-12 for
 * chk-1). */
static bool names_path(const char *line, const char *path)
{
	size_t n = path ? strlen(path) : 0;
	if (n < 2)
		return false;
	for (const char *p = strstr(line, path); p; p = strstr(p + 1, path)) {
		char c = p[n];
		if (c == '\0' || c == '/' || c == ' ' || c == ',' || c == ')' || c == '\'' || c == '"' || c == ':' ||
		    c == '.' || c == ';' || c == ']')
			return true;
	}
	return false;
}

static bool names_point(const struct restorelog *r, const char *line)
{
	if (names_path(line, r->restore_path))
		return true;
	if (r->kind != RESTORE_CHECKPOINT || !r->job_ckpt_dir)
		return false;
	/* an incremental checkpoint's files live beside it, in its job's shared/ and taskowned/ */
	static const char *const owned[] = {"/shared/", "/taskowned/"};
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(r->job_ckpt_dir);
		for (const char *p = strstr(line, r->job_ckpt_dir); p; p = strstr(p + 1, r->job_ckpt_dir))
			if (str_has_prefix(p + n, owned[i]))
				return true;
	}
	return false;
}

static bool is_frame(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return str_has_prefix(line, "at ") || str_has_prefix(line, "...");
}

static bool is_exception_line(const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	if (str_has_prefix(line, "Caused by: ") || str_has_prefix(line, "Suppressed: "))
		return true;
	/* "java.io.EOFException", "org.apache...JobInitializationException: Could not start the JobMaster." */
	const char *end = line + strcspn(line, ": \t");
	if (end == line)
		return false;
	size_t n = (size_t)(end - line);
	bool dotted = memchr(line, '.', n) != NULL;
	return dotted && ((n > 9 && !strncmp(end - 9, "Exception", 9)) || (n > 5 && !strncmp(end - 5, "Error", 5)));
}

static void keep(char *dst, size_t size, const char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	snprintf(dst, size, "%s", line);
}

/* The evidence: the exception line without its "Caused by: ", after the metadata file's path when the line
 * itself does not name the point (a trace through the metadata reader: "java.io.EOFException"). */
static void keep_evidence(struct restorelog *r, const char *line, bool with_path)
{
	while (*line == ' ' || *line == '\t')
		line++;
	if (str_has_prefix(line, "Caused by: "))
		line += strlen("Caused by: ");
	if (with_path)
		snprintf(r->evidence, sizeof(r->evidence), "%s/_metadata: %s", r->restore_path, line);
	else
		snprintf(r->evidence, sizeof(r->evidence), "%s", line);
}

enum restorelog_verdict restorelog_feed(struct restorelog *r, const char *line)
{
	if (!r->restore_path)
		return RESTORELOG_NONE;
	if (is_exception_line(line)) {
		if (!r->in_trace)
			r->trace_names_point = false;
		r->in_trace = true;
		keep(r->exception, sizeof(r->exception), line);
		if (has_any(line, incompatible_words)) {
			r->trace_names_point = true; /* the job changed: nothing in this trace is evidence */
			return RESTORELOG_NONE;
		}
		if (names_point(r, line) && has_any(line, unreadable_words)) {
			r->trace_names_point = true;
			keep_evidence(r, line, false);
			return RESTORELOG_UNREADABLE;
		}
		return RESTORELOG_NONE;
	}
	if (r->in_trace && is_frame(line)) {
		if (!r->trace_names_point && has_any(line, metadata_frames)) {
			r->trace_names_point = true; /* once per trace */
			keep_evidence(r, r->exception, true);
			return RESTORELOG_UNREADABLE;
		}
		return RESTORELOG_NONE;
	}
	r->in_trace = false;
	r->trace_names_point = false;
	/* a log line (not a trace): Flink's own report of a file it cannot read, naming it */
	if (names_point(r, line) && has_any(line, unreadable_words) && !has_any(line, incompatible_words)) {
		keep_evidence(r, line, false);
		return RESTORELOG_UNREADABLE;
	}
	if (names_point(r, line) || has_any(line, started_markers)) {
		for (size_t i = 0; started_markers[i]; i++)
			if (strstr(line, started_markers[i]) && (strstr(line, " from ")))
				return RESTORELOG_STARTED;
	}
	return RESTORELOG_NONE;
}
