/* test_autoscaler_docs: docs/autoscaler.md names every autoscaler option with its default, and the plan
 * examples it shows are real: each docs/examples/autoscaler-plan-*.json gives exactly the stored
 * .out.json, the outputs (and the samples input) appear verbatim in the document, and the replay input
 * is the first output's delayedScaleDown one hour later. Run from the repository root (make unit does). */
#include "unit.h"

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "store.h"

static char *slurp(const char *path)
{
	char *text = NULL;
	int r = read_file(path, 1u << 22, &text, NULL);
	if (r < 0 || !text) {
		print_error("cannot read %s: %s\n", path, strerror(-r));
		return xstrdup("");
	}
	return text;
}

static void test_every_option_documented_with_default(void **state)
{
	(void)state;
	char *docs = slurp("docs/autoscaler.md");
	for (const struct option_def *o = autoscaler_options; o->key; o++) {
		char *row = xasprintf("| `%s` |", o->key);
		const char *at = strstr(docs, row);
		if (!at)
			fail_msg("docs/autoscaler.md has no row for %s", o->key);
		const char *eol = strchr(at, '\n');
		char *line = xstrndup(at, eol ? (size_t)(eol - at) : strlen(at));
		char *def = !o->def ? xstrdup("(none)") : *o->def ? xasprintf("`%s`", o->def) : xstrdup("`\"\"`");
		if (!strstr(line, def))
			fail_msg("the row of %s does not give its default %s: %s", o->key, def, line);
		free(def);
		free(line);
		free(row);
	}
	free(docs);
}

/* Runs plan on docs/examples/<name>.json; returns the output. */
static char *run_example(const char *name)
{
	char *path = xasprintf("docs/examples/%s.json", name);
	char *input = slurp(path);
	struct strv errors = {0};
	char *out = NULL;
	if (autoscaler_plan(input, strlen(input), NULL, &out, &errors) < 0)
		fail_msg("%s: %s", path, errors.n ? errors.v[0] : "?");
	strv_free(&errors);
	free(input);
	free(path);
	return out;
}

static void check_example(const char *name, bool shown)
{
	char *out = run_example(name);
	char *path = xasprintf("docs/examples/%s.out.json", name);
	char *stored = slurp(path);
	if (strcmp(out, stored))
		fail_msg("%s is not what plan gives now:\n%s", path, out);
	if (shown) {
		char *docs = slurp("docs/autoscaler.md");
		char *block = xasprintf("```json\n%s```\n", out);
		if (!strstr(docs, block))
			fail_msg("docs/autoscaler.md does not show the output of %s verbatim", name);
		free(block);
		free(docs);
	}
	free(stored);
	free(path);
	free(out);
}

static void test_examples_are_real(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	check_example("autoscaler-plan-evaluated", true);
	check_example("autoscaler-plan-samples", true);
	check_example("autoscaler-plan-replay", false);
	/* the samples input is shown as it is */
	char *docs = slurp("docs/autoscaler.md"), *input = slurp("docs/examples/autoscaler-plan-samples.json");
	char *block = xasprintf("```json\n%s```\n", input);
	assert_non_null(strstr(docs, block));
	free(block);
	free(input);
	free(docs);
}

static void test_replay_input(void **state)
{
	(void)state;
	/* autoscaler-plan-replay.json = the samples input one hour later with the first output's
	 * delayedScaleDown, and its decision is the one the document shows */
	char *a = slurp("docs/examples/autoscaler-plan-samples.json");
	char *b = slurp("docs/examples/autoscaler-plan-samples.out.json");
	char *c = slurp("docs/examples/autoscaler-plan-replay.json");
	cJSON *in = cJSON_Parse(a), *first = cJSON_Parse(b), *replay = cJSON_Parse(c);
	cJSON *now = cJSON_GetObjectItem(in, "now");
	cJSON_SetNumberValue(now, now->valuedouble + 3600000);
	cJSON_AddItemToObject(in, "delayedScaleDown",
	                      cJSON_Duplicate(cJSON_GetObjectItem(first, "delayedScaleDown"), true));
	assert_true(cJSON_Compare(in, replay, true));
	char *out = run_example("autoscaler-plan-replay");
	cJSON *o = cJSON_Parse(out);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "scaling")));
	cJSON *v = cJSON_GetObjectItem(o, "vertices");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "src"), "newParallelism")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "win"), "newParallelism")->valueint, 4);
	char *docs = slurp("docs/autoscaler.md");
	assert_contains(docs, "\"src\": \"2 -> 1\",\n    \"win\": \"2 -> 4\"");
	free(docs);
	cJSON_Delete(o);
	free(out);
	cJSON_Delete(in);
	cJSON_Delete(first);
	cJSON_Delete(replay);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_option_documented_with_default),
	    cmocka_unit_test(test_examples_are_real),
	    cmocka_unit_test(test_replay_input),
	};
	return cmocka_run_group_tests_name("autoscaler_docs", tests, NULL, NULL);
}
