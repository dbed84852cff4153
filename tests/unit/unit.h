/* unit.h: shared helpers of flinklet's cmocka unit tests (tests/unit/test_*.c).
 *
 * Every test binary is one test_*.c linked with all of src/ except main.c (see the Makefile's unit and
 * unit-asan targets). The helpers here are static inline so that a test file that does not use one of
 * them still compiles under -Werror:
 *   - parse_and_finalize(): config_parse + config_finalize of a YAML string, diagnostics joined by '\n';
 *   - assert_contains() / assert_not_contains() / assert_diag(): substring checks that print the text;
 *   - assert_double(): the same double, NaN included, printed to the last digit when not;
 *   - diag_count(): the number of diagnostic lines in a joined string;
 *   - make_tempdir() / remove_tree() / write_text(): scratch directories for file-based tests.
 * No helper touches anything outside the temporary directories it creates.
 *
 */
#ifndef FLINKLET_TESTS_UNIT_H
#define FLINKLET_TESTS_UNIT_H

/* clang-format off: cmocka needs these four first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

/* Joins the messages of d with '\n' (no trailing newline); "" when there are none. */
static inline char *diags_join(const struct diags *d)
{
	struct strbuf b = {0};
	for (size_t i = 0; i < d->msgs.n; i++) {
		if (i)
			strbuf_append(&b, "\n");
		strbuf_append(&b, d->msgs.v[i]);
	}
	return strbuf_steal(&b);
}

/* Parses text as the document `file`, then (when the parse succeeded) finalizes it. Returns the joined
 * diagnostics (malloc'd, "" when none). The spec lands in *out when out is non-NULL (the caller frees it
 * with spec_free), else it is freed here. *rc (when non-NULL) gets the first failing return code or 0. */
static inline char *parse_and_finalize_n(const char *file, const char *text, size_t len, struct spec *out, int *rc)
{
	struct spec s;
	struct diags d = {0};
	int r = config_parse(file, text, len, &s, &d);
	if (r == 0)
		r = config_finalize(&s, &d);
	if (rc)
		*rc = r;
	if (out)
		*out = s;
	else
		spec_free(&s);
	char *joined = diags_join(&d);
	diags_free(&d);
	return joined;
}

static inline char *parse_and_finalize(const char *file, const char *text, struct spec *out, int *rc)
{
	return parse_and_finalize_n(file, text, strlen(text), out, rc);
}

/* The number of lines in a joined diagnostics string. */
static inline size_t diag_count(const char *joined)
{
	if (!joined || !*joined)
		return 0;
	size_t n = 1;
	for (const char *p = joined; *p; p++)
		if (*p == '\n')
			n++;
	return n;
}

static inline void assert_contains_at(const char *hay, const char *needle, const char *file, int line)
{
	if (hay && needle && strstr(hay, needle))
		return;
	print_error("expected to find\n    %s\nin\n    %s\n", needle ? needle : "(null)", hay ? hay : "(null)");
	_fail(file, line);
}

static inline void assert_not_contains_at(const char *hay, const char *needle, const char *file, int line)
{
	if (!hay || !strstr(hay, needle))
		return;
	print_error("did not expect to find\n    %s\nin\n    %s\n", needle, hay);
	_fail(file, line);
}

/* One line of the joined diagnostics must be exactly `line_text`. */
static inline void assert_diag_at(const char *joined, const char *line_text, const char *file, int line)
{
	size_t n = strlen(line_text);
	for (const char *p = joined; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len == n && !strncmp(p, line_text, n))
			return;
		p = nl ? nl + 1 : p + len;
	}
	print_error("expected the diagnostic\n    %s\namong\n    %s\n", line_text, joined ? joined : "(null)");
	_fail(file, line);
}

/* Two doubles are the same number, NaN included (the exact value: the expected one is worked out to the bit). */
static inline void assert_double_at(double got, double want, const char *file, int line)
{
	if ((isnan(got) && isnan(want)) || got == want)
		return;
	print_error("expected %.17g, got %.17g\n", want, got);
	_fail(file, line);
}

#define assert_double(got, want) assert_double_at((got), (want), __FILE__, __LINE__)
#define assert_contains(hay, needle) assert_contains_at((hay), (needle), __FILE__, __LINE__)
#define assert_not_contains(hay, needle) assert_not_contains_at((hay), (needle), __FILE__, __LINE__)
#define assert_diag(joined, text) assert_diag_at((joined), (text), __FILE__, __LINE__)

/* ---- scratch directories ---- */

/* A fresh directory under $TMPDIR (or /tmp); the caller removes it with remove_tree. */
static inline char *make_tempdir(void)
{
	const char *base = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/flinklet-unit-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpl)) {
		print_error("mkdtemp(%s): %s\n", tmpl, strerror(errno));
		free(tmpl);
		fail();
	}
	return tmpl;
}

static inline int remove_tree_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

/* Removes dir recursively (symlinks are not followed) and frees the string. */
static inline void remove_tree(char *dir)
{
	if (!dir)
		return;
	if (nftw(dir, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		print_error("cleanup of %s: %s\n", dir, strerror(errno));
	free(dir);
}

/* Writes text into dir/name and returns the path (malloc'd). */
static inline char *write_text_n(const char *dir, const char *name, const char *text, size_t len)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static inline char *write_text(const char *dir, const char *name, const char *text)
{
	return write_text_n(dir, name, text, strlen(text));
}

/* The environment variables that change defaults: tests start without them. */
static inline void unit_clean_env(void)
{
	unsetenv("FLINKLET_CONFIG");
	unsetenv("FLINK_HOME");
	unsetenv("JAVA_HOME");
}

#endif
