/* test_webpage: what the status page relies on. The ring of recent events and autoscaler cycles keeps the newest
 * entries in order and drops the oldest; seeding it from the end of events.jsonl takes whole JSON lines only (a
 * line cut where the tail starts, a torn last line, garbage are skipped); the Content-Security-Policy allows
 * exactly the page's inline script and style by their SHA-256 (as browsers compute it) and nothing from
 * elsewhere; the page built into the binary is web/status.html byte for byte, and its policy hashes what it
 * holds. */
#include "unit.h"

#include <cjson/cJSON.h>

#include "recent.h"
#include "store.h"
#include "webpage.h"

static void test_ring_keeps_newest_in_order(void **state)
{
	(void)state;
	struct recent r = {0};
	recent_push(&r, "{\"n\":0}"); /* not set up: dropped, not a crash */
	recent_init(&r, 3);
	char *a = recent_array(&r, 0);
	assert_string_equal(a, "[]");
	free(a);
	for (int i = 1; i <= 5; i++) {
		char *doc = xasprintf("{\"n\":%d}", i);
		recent_push(&r, doc);
		free(doc);
	}
	a = recent_array(&r, 0);
	assert_string_equal(a, "[{\"n\":3},{\"n\":4},{\"n\":5}]");
	free(a);
	a = recent_array(&r, 2);
	assert_string_equal(a, "[{\"n\":4},{\"n\":5}]");
	free(a);
	a = recent_array(&r, 10);
	assert_string_equal(a, "[{\"n\":3},{\"n\":4},{\"n\":5}]");
	free(a);
	recent_free(&r);
	recent_free(&r); /* twice is harmless */
}

static void test_ring_from_json_lines(void **state)
{
	(void)state;
	struct recent r = {0};
	recent_init(&r, 10);
	const char *tail = "ge\":\"cut\"}\n" /* the end of a line the tail starts inside */
	                   "{\"type\":\"A\", \"message\":\"<img src=x onerror=alert(1)>\"}\n"
	                   "not json\n"
	                   "[1,2]\n"                     /* JSON, but not an object */
	                   "{\"type\":\"B\"} trailing\n" /* not one whole object */
	                   "{\"type\":\"C\"}\n"
	                   "{\"type\":\"D\""; /* torn: no newline */
	assert_int_equal(recent_push_lines(&r, tail, strlen(tail)), 2);
	char *a = recent_array(&r, 0);
	cJSON *j = cJSON_Parse(a);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(j), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "type")->valuestring, "A");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "message")->valuestring,
	                    "<img src=x onerror=alert(1)>");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "type")->valuestring, "C");
	cJSON_Delete(j);
	free(a);
	recent_free(&r);
}

static void test_events_tail_whole_lines(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *text = NULL;
	size_t len = 99;
	assert_int_equal(store_events_tail(dir, 100, &text, &len), 0); /* no file yet */
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	free(text);
	struct strbuf b = {0};
	for (int i = 0; i < 50; i++)
		strbuf_appendf(&b, "{\"n\":%02d}\n", i); /* 9 bytes a line */
	free(write_text(dir, "events.jsonl", b.buf));
	/* the last 40 bytes: 4 whole lines and the end of one before them */
	assert_int_equal(store_events_tail(dir, 40, &text, &len), 0);
	assert_string_equal(text, "{\"n\":46}\n{\"n\":47}\n{\"n\":48}\n{\"n\":49}\n");
	assert_int_equal(len, strlen(text));
	free(text);
	/* a window that starts exactly at a line: that line is whole and kept */
	assert_int_equal(store_events_tail(dir, 36, &text, &len), 0);
	assert_string_equal(text, "{\"n\":46}\n{\"n\":47}\n{\"n\":48}\n{\"n\":49}\n");
	free(text);
	assert_int_equal(store_events_tail(dir, 1u << 20, &text, &len), 0);
	assert_int_equal(len, b.len);
	free(text);
	strbuf_free(&b);
	remove_tree(dir);
}

static void test_csp_hashes_inline_script_and_style(void **state)
{
	(void)state;
	const char *html = "<!doctype html><style>\nbody { color: red; }\n</style><p>x</p><script>alert(1)</script>";
	char *csp = webpage_csp(html, strlen(html));
	assert_string_equal(csp, "default-src 'none'; connect-src 'self'; img-src 'self'; "
	                         "script-src 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='; "
	                         "style-src 'sha256-6BtAJHRccEFconKgYZxx3ALoONCc3uWtAQ7oTAu9LLs='; "
	                         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
	assert_null(strstr(csp, "unsafe"));
	free(csp);
	/* nothing inline: nothing allowed; an unclosed element is not hashed */
	const char *bare = "<p>no script</p><script>never closed";
	csp = webpage_csp(bare, strlen(bare));
	assert_non_null(strstr(csp, "script-src 'none'; style-src 'none';"));
	free(csp);
}

static void test_built_in_page_is_web_status_html(void **state)
{
	(void)state;
	const struct web_asset *page = web_asset_find("status.html");
	assert_non_null(page);
	assert_null(web_asset_find("nope.html"));
	char *file = NULL;
	size_t len = 0;
	assert_int_equal(read_file("web/status.html", 1u << 20, &file, &len), 0);
	assert_int_equal(page->len, len);
	assert_memory_equal(page->data, file, len);
	assert_int_equal(page->data[page->len], 0);
	/* one script and one style, each allowed by its hash, nothing fetched from elsewhere */
	char *csp = webpage_csp((const char *)page->data, page->len);
	assert_non_null(strstr(csp, "script-src 'sha256-"));
	assert_non_null(strstr(csp, "style-src 'sha256-"));
	assert_null(strstr(csp, "unsafe"));
	/* no URL but the SVG namespace (a name, never fetched) */
	for (const char *u = strstr(file, "http"); u; u = strstr(u + 1, "http"))
		if (!strncmp(u, "http://", 7) || !strncmp(u, "https://", 8))
			assert_true(!strncmp(u, "http://www.w3.org/2000/svg", 26));
	assert_null(strstr(file, "innerHTML"));
	assert_null(strstr(file, "style=\""));
	free(csp);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_keeps_newest_in_order),
	    cmocka_unit_test(test_ring_from_json_lines),
	    cmocka_unit_test(test_events_tail_whole_lines),
	    cmocka_unit_test(test_csp_hashes_inline_script_and_style),
	    cmocka_unit_test(test_built_in_page_is_web_status_html),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
