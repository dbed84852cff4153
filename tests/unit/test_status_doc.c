/* test_status_doc: the status document's shape held to goldens (issue 39, item 3). Each
 * tests/unit/fixtures/status/NAME.json (status.json files of real runs, and synthetic ones with every field set, a
 * legacy document with wrong types and out-of-range values, one over every list's cap, and {}) is read back
 * (status_parse) and rendered (status_render): the text must be golden/NAME.rendered.json byte for byte, and
 * rendering it again after a second parse must give the same text; and what it carries over to the next run
 * (status_carry_over into a fresh document, as the supervisor does at its start) must render as
 * golden/NAME.carried.json. The goldens were written by the code before the field table (bd03b7c: status_render,
 * and supervisor.c's adopt_old_status), so the table is proven not to change the document. */
#include "unit.h"

#include <dirent.h>

#include "status.h"
#include "store.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *fixture_dir(void)
{
	const char *base = getenv("FLINKLET_FIXTURES");
	return xasprintf("%s/status", base ? base : "tests/unit/fixtures");
}

/* The fixtures' names (NAME of NAME.json), sorted. */
static struct strv fixture_names(const char *dir)
{
	struct strv names = {0};
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (n > 5 && !strcmp(de->d_name + n - 5, ".json"))
			strv_push_take(&names, xstrndup(de->d_name, n - 5));
	}
	if (d)
		closedir(d);
	qsort(names.v, names.n, sizeof(names.v[0]), by_name);
	if (names.n < 10) {
		print_error("too few status documents (*.json) in %s: %zu\n", dir, names.n);
		fail();
	}
	return names;
}

static char *slurp(const char *dir, const char *name, const char *suffix)
{
	char *path = xasprintf("%s/%s%s", dir, name, suffix);
	char *text = NULL;
	if (read_file(path, 1u << 20, &text, NULL) < 0) {
		print_error("unable to read %s\n", path);
		fail();
	}
	free(path);
	return text;
}

/* text against the golden NAME+suffix; says which differs (the first differing line) */
static bool same_as_golden(const char *dir, const char *name, const char *suffix, const char *text)
{
	char *want = slurp(dir, name, suffix);
	bool same = !strcmp(want, text);
	if (!same) {
		size_t i = 0, line = 1;
		for (; want[i] && want[i] == text[i]; i++)
			line += want[i] == '\n';
		print_error("%s%s differs at line %zu:\n--- golden\n%.200s\n--- now\n%.200s\n", name, suffix, line,
		            want + i - (i > 40 ? 40 : i), text + i - (i > 40 ? 40 : i));
	}
	free(want);
	return same;
}

/* Read back and rendered: the golden text, and stable through a second round trip. */
static void test_rendered_as_before(void **state)
{
	(void)state;
	char *dir = fixture_dir();
	char *golden = xasprintf("%s/golden", dir);
	struct strv names = fixture_names(dir);
	size_t wrong = 0;
	for (size_t i = 0; i < names.n; i++) {
		char *text = slurp(dir, names.v[i], ".json");
		struct status st, again;
		assert_int_equal(status_parse(text, &st), 0);
		char *out = status_render(&st);
		wrong += !same_as_golden(golden, names.v[i], ".rendered.json", out);
		assert_int_equal(status_parse(out, &again), 0);
		char *out2 = status_render(&again);
		if (strcmp(out, out2)) {
			print_error("%s: a second round trip changes the document\n", names.v[i]);
			wrong++;
		}
		free(out2);
		status_free(&again);
		free(out);
		status_free(&st);
		free(text);
	}
	strv_free(&names);
	free(golden);
	free(dir);
	assert_int_equal(wrong, 0);
}

/* Carried over into a fresh document: what the next run starts from, as before. */
static void test_carried_over_as_before(void **state)
{
	(void)state;
	char *dir = fixture_dir();
	char *golden = xasprintf("%s/golden", dir);
	struct strv names = fixture_names(dir);
	size_t wrong = 0;
	for (size_t i = 0; i < names.n; i++) {
		char *text = slurp(dir, names.v[i], ".json");
		struct status old, st;
		assert_int_equal(status_parse(text, &old), 0);
		status_init(&st);
		status_carry_over(&st, &old);
		char *out = status_render(&st);
		wrong += !same_as_golden(golden, names.v[i], ".carried.json", out);
		free(out);
		status_free(&st);
		status_free(&old);
		free(text);
	}
	strv_free(&names);
	free(golden);
	free(dir);
	assert_int_equal(wrong, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rendered_as_before),
	    cmocka_unit_test(test_carried_over_as_before),
	};
	return cmocka_run_group_tests_name("status_doc", tests, NULL, NULL);
}
