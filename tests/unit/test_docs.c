/* test_docs: docs/configuration.md names every option of the option table together with its default,
 * so the reference cannot fall behind the code. Run from the repository root (make unit does). */
#include "unit.h"

#include <string.h>

#include "config.h"
#include "store.h"

static void test_every_option_documented_with_default(void **state)
{
	(void)state;
	char *docs = NULL;
	assert_int_equal(read_file("docs/configuration.md", 1u << 20, &docs, NULL), 0);
	for (const struct option_def *o = flinklet_options; o->key; o++) {
		char *row = xasprintf("| `%s` |", o->key);
		const char *at = strstr(docs, row);
		if (!at)
			fail_msg("docs/configuration.md has no row for %s", o->key);
		if (o->def) {
			const char *eol = strchr(at, '\n');
			char *line = xstrndup(at, eol ? (size_t)(eol - at) : strlen(at));
			char *def = *o->def ? xasprintf("`%s`", o->def) : xstrdup("`\"\"`");
			if (!strstr(line, def))
				fail_msg("the row of %s does not give its default %s: %s", o->key, def, line);
			free(def);
			free(line);
		}
		free(row);
	}
	free(docs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_option_documented_with_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
