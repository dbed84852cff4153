/* test_rest: the REST client (src/flink/rest.c) on the supervisor's kind of event loop, against a loopback server
 * made here (in a thread, like a real one) that takes its first connection and never answers it (a REST server still
 * coming up), and answers the next ones at once. A request that hangs does not hold back the one sent after it; a
 * request's own timeout (rest_request_within) ends it although the client's default is an hour, and its error is known
 * as a timeout; a refused connection is not a timeout. The answers map to what the supervisor acts on: an HTTP error
 * status with its JSON body, a body that is not JSON, a connection closed without an answer, a redirect not
 * followed; and the proxy settings of the environment are never used for Flink's REST API (issue 17). A download
 * (the job's jar) names the limit it ran into: the size cap (announced or received), a redirect to a protocol not
 * allowed, the total budget (issue 27). The libcurl
 * linked (the bundled one, scripts/curl.sh, or Debian's) has what all this relies on (issue 15, item 4). */
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <systemd/sd-event.h>

#include "rest.h"

/* The server runs in a thread of its own, as Flink's would: the client's loop never waits for it. */
struct server {
	int fd;
	int port;
	int hang;           /* how many connections to take and never answer before answering the rest */
	atomic_bool taken;  /* one was taken and not answered */
	int held[8], nheld; /* those connections */
	const char *reply;  /* the whole answer (NULL: 200 with a small JSON object; "": close without one) */
	atomic_int served;  /* connections answered (or closed) */
	pthread_t thread;
};

struct outcome {
	bool done;
	long code;
	char error[256];
	int order; /* in which order the callbacks ran */
};

static int calls;

static void on_done(void *userdata, long code, struct cJSON *body, const char *error)
{
	struct outcome *o = userdata;
	o->done = true;
	o->code = code;
	o->order = ++calls;
	snprintf(o->error, sizeof(o->error), "%s", error ? error : "");
}

static void *serve(void *arg)
{
	struct server *sv = arg;
	for (;;) {
		int c = accept4(sv->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL; /* the listening socket was shut down */
		if (sv->hang > 0 && sv->nheld < 8) {
			sv->hang--;
			sv->held[sv->nheld++] = c;
			atomic_store(&sv->taken, true);
			continue;
		}
		/* read the request's head, answer, close */
		char buf[4096];
		size_t len = 0;
		while (len < sizeof(buf) - 1) {
			ssize_t n = recv(c, buf + len, sizeof(buf) - 1 - len, 0);
			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n"
		                         "Connection: close\r\n\r\n{\"state\":\"RUN\"}\n";
		const char *reply = sv->reply ? sv->reply : ok;
		ssize_t w = write(c, reply, strlen(reply));
		(void)w;
		atomic_fetch_add(&sv->served, 1);
		close(c);
	}
}

static void server_start_with(struct server *sv, int hang, const char *reply)
{
	memset(sv, 0, sizeof(*sv));
	sv->hang = hang;
	sv->reply = reply;
	sv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(sv->fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(sv->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(sv->fd, 16), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(sv->fd, (struct sockaddr *)&a, &len), 0);
	sv->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&sv->thread, NULL, serve, sv), 0);
}

static void server_start(struct server *sv, int hang)
{
	server_start_with(sv, hang, NULL);
}

static void server_stop(struct server *sv)
{
	shutdown(sv->fd, SHUT_RDWR); /* accept() returns */
	pthread_join(sv->thread, NULL);
	for (int i = 0; i < sv->nheld; i++)
		close(sv->held[i]);
	close(sv->fd);
}

/* Runs the loop until *flag is set (or a minute has passed: then the test fails). */
static void run_until(sd_event *ev, const bool *flag)
{
	usec_t deadline = now_monotonic() + 60 * USEC_PER_SEC;
	while (!*flag && now_monotonic() < deadline)
		assert_true(sd_event_run(ev, 100 * USEC_PER_MSEC) >= 0);
	assert_true(*flag);
}

/* Waits until the server holds a connection, running the loop meanwhile (curl connects from it). */
static void run_until_taken(sd_event *ev, struct server *sv)
{
	usec_t deadline = now_monotonic() + 60 * USEC_PER_SEC;
	while (!atomic_load(&sv->taken) && now_monotonic() < deadline)
		assert_true(sd_event_run(ev, 10 * USEC_PER_MSEC) >= 0);
	assert_true(atomic_load(&sv->taken));
}

static void test_a_hung_request_holds_back_nothing_and_ends_at_its_own_timeout(void **state)
{
	(void)state;
	sd_event *ev = NULL;
	assert_true(sd_event_new(&ev) >= 0);
	struct server sv;
	server_start(&sv, 1); /* the first connection gets no answer, the next ones do */
	/* the client's own timeout is an hour: only the request's own can end the hung one */
	char *base = xasprintf("http://127.0.0.1:%d", sv.port);
	struct rest *r = NULL;
	assert_int_equal(rest_new(ev, base, 3600 * USEC_PER_SEC, &r), 0);
	free(base);
	calls = 0;
	struct outcome hung = {0}, answered = {0};
	assert_int_equal(rest_request_within(r, "GET", "/jobs/x", NULL, 2 * USEC_PER_SEC, on_done, &hung), 0);
	run_until_taken(ev, &sv); /* the server holds it */
	/* the next request goes out while the first one hangs, and is answered */
	assert_int_equal(rest_request(r, "GET", "/jobs/x", NULL, on_done, &answered), 0);
	assert_int_equal(rest_in_flight(r), 2);
	run_until(ev, &answered.done);
	assert_int_equal(answered.code, 200);
	assert_false(hung.done); /* still waiting: the answer did not wait for it */
	assert_int_equal(rest_in_flight(r), 1);
	run_until(ev, &hung.done);
	assert_int_equal(hung.code, 0);
	assert_true(rest_error_is_timeout(hung.error));
	assert_true(answered.order < hung.order);
	assert_int_equal(rest_in_flight(r), 0);
	rest_free(r);
	server_stop(&sv);
	sd_event_unref(ev);
}

static void test_a_refused_connection_is_not_a_timeout(void **state)
{
	(void)state;
	sd_event *ev = NULL;
	assert_true(sd_event_new(&ev) >= 0);
	/* a port that was just free: nothing listens there */
	struct server gone;
	server_start(&gone, 0);
	int port = gone.port;
	server_stop(&gone);
	char *base = xasprintf("http://127.0.0.1:%d", port);
	struct rest *r = NULL;
	assert_int_equal(rest_new(ev, base, 3600 * USEC_PER_SEC, &r), 0);
	free(base);
	struct outcome o = {0};
	assert_int_equal(rest_request_within(r, "GET", "/jobs/x", NULL, 5 * USEC_PER_SEC, on_done, &o), 0);
	run_until(ev, &o.done);
	assert_int_equal(o.code, 0);
	assert_true(o.error[0] != '\0');
	assert_false(rest_error_is_timeout(o.error));
	rest_free(r);
	sd_event_unref(ev);
}

static void test_timeout_words(void **state)
{
	(void)state;
	assert_true(rest_error_is_timeout("Operation timed out after 150 milliseconds with 0 bytes received"));
	assert_true(rest_error_is_timeout("Connection timed out after 150 milliseconds"));
	assert_true(rest_error_is_timeout("Timeout was reached"));
	assert_false(rest_error_is_timeout("Failed to connect to 127.0.0.1 port 1: Couldn't connect to server"));
	assert_false(rest_error_is_timeout(NULL));
}

/* One request to a server that gives the answer reply; the outcome and the body's "state" (or ""). */
struct answer {
	struct outcome o;
	char state[64];
};

static void on_answer(void *userdata, long code, struct cJSON *body, const char *error)
{
	struct answer *a = userdata;
	const cJSON *st = body ? cJSON_GetObjectItemCaseSensitive(body, "state") : NULL;
	snprintf(a->state, sizeof(a->state), "%s", cJSON_IsString(st) ? st->valuestring : "");
	on_done(&a->o, code, body, error);
}

/* cap: 0 asks with rest_request; otherwise with rest_get_capped and that cap */
static struct answer ask_capped(const char *reply, size_t cap)
{
	sd_event *ev = NULL;
	assert_true(sd_event_new(&ev) >= 0);
	struct server sv;
	server_start_with(&sv, 0, reply);
	char *base = xasprintf("http://127.0.0.1:%d", sv.port);
	struct rest *r = NULL;
	assert_int_equal(rest_new(ev, base, 30 * USEC_PER_SEC, &r), 0);
	free(base);
	struct answer a = {0};
	if (cap)
		assert_int_equal(rest_get_capped(r, "/jobs/x", 0, cap, on_answer, &a), 0);
	else
		assert_int_equal(rest_request(r, "GET", "/jobs/x", NULL, on_answer, &a), 0);
	run_until(ev, &a.o.done);
	rest_free(r);
	server_stop(&sv);
	sd_event_unref(ev);
	return a;
}

static struct answer ask(const char *reply)
{
	return ask_capped(reply, 0);
}

/* rest_get_capped (Flink's rescale history): an answer longer than its cap ends the request as "too large"; one
 * within it is read as any other. */
static void test_a_capped_answer_over_its_cap_is_too_large(void **state)
{
	(void)state;
	struct strbuf b = {0};
	strbuf_append(&b, "{\"state\":\"RUN\",\"pad\":\"");
	for (int i = 0; i < 4000; i++)
		strbuf_append(&b, "x");
	strbuf_append(&b, "\"}");
	char *reply = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
	                        "Connection: close\r\n\r\n%s",
	                        b.len, b.buf);
	struct answer a = ask_capped(reply, 1024);
	assert_int_equal(a.o.code, 0);
	assert_string_equal(a.o.error, "response too large");
	assert_string_equal(a.state, "");
	a = ask_capped(reply, 8192);
	assert_int_equal(a.o.code, 200);
	assert_string_equal(a.o.error, "");
	assert_string_equal(a.state, "RUN");
	free(reply);
	strbuf_free(&b);
}

static void test_an_http_error_comes_with_its_status_and_json_body(void **state)
{
	(void)state;
	struct answer a = ask("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
	                      "Content-Length: 31\r\nConnection: close\r\n\r\n{\"state\":\"x\",\"errors\":[\"boom\"]}");
	assert_int_equal(a.o.code, 500);
	assert_string_equal(a.o.error, ""); /* an answer: the status says what went wrong */
	assert_string_equal(a.state, "x");  /* and the body is there to read Flink's errors from */
}

static void test_an_answer_that_is_not_json_is_an_error_with_its_status(void **state)
{
	(void)state;
	struct answer a = ask("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 15\r\n"
	                      "Connection: close\r\n\r\n<html>hi</html>");
	assert_int_equal(a.o.code, 200);
	assert_string_equal(a.o.error, "response is not JSON");
	assert_string_equal(a.state, "");
}

static void test_a_connection_closed_without_an_answer_is_no_status_and_no_timeout(void **state)
{
	(void)state;
	struct answer a = ask("");
	assert_int_equal(a.o.code, 0);
	assert_true(a.o.error[0] != '\0');
	assert_false(rest_error_is_timeout(a.o.error));
}

static void test_a_redirect_is_not_followed(void **state)
{
	(void)state;
	struct answer a = ask("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n"
	                      "Connection: close\r\n\r\n");
	assert_int_equal(a.o.code, 302);
	assert_string_equal(a.o.error, "");
}

/* http_proxy, HTTPS_PROXY and ALL_PROXY point at a "proxy" that would answer for Flink: none of it is used. */
static void test_proxies_in_the_environment_are_not_used(void **state)
{
	(void)state;
	struct server proxy;
	server_start_with(&proxy, 0,
	                  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
	                  "Connection: close\r\n\r\n{\"state\":\"PROXY\"}");
	char *url = xasprintf("http://127.0.0.1:%d", proxy.port);
	static const char *const vars[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
	                                   "HTTPS_PROXY", "ALL_PROXY",  "all_proxy"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		setenv(vars[i], url, 1);
	unsetenv("NO_PROXY");
	unsetenv("no_proxy");
	struct answer a = ask(NULL);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	free(url);
	assert_int_equal(a.o.code, 200);
	assert_string_equal(a.state, "RUN"); /* Flink's answer, not the proxy's */
	assert_int_equal(atomic_load(&proxy.served), 0);
	server_stop(&proxy);
}

/* ---- downloads (the job's jar): the limit a failed one ran into, for the supervisor to name its option ---- */

struct fetched {
	bool done;
	struct download_result res;
	char error[256], url[256];
};

static void on_fetched(void *userdata, const struct download_result *res)
{
	struct fetched *f = userdata;
	f->done = true;
	f->res = *res;
	snprintf(f->error, sizeof(f->error), "%s", res->error ? res->error : "");
	snprintf(f->url, sizeof(f->url), "%s", res->url ? res->url : "");
	f->res.error = f->error;
	f->res.url = f->url;
}

/* One download over plain http (allowed here) from a server that answers reply (or holds the connection: hang),
 * into a temp file whose length is given back in *kept. */
static struct fetched fetch(const char *reply, int hang, struct download d, long *kept)
{
	sd_event *ev = NULL;
	assert_true(sd_event_new(&ev) >= 0);
	struct server sv;
	server_start_with(&sv, hang, reply);
	setenv("no_proxy", "127.0.0.1", 1); /* downloads honour the environment's proxy: none for this server */
	char *url = xasprintf("http://127.0.0.1:%d/job.jar", sv.port);
	struct rest *r = NULL;
	assert_int_equal(rest_new(ev, "http://127.0.0.1:1", 30 * USEC_PER_SEC, &r), 0);
	d.url = url;
	if (!d.protocols)
		d.protocols = "http";
	if (!d.timeout)
		d.timeout = 30 * USEC_PER_SEC;
	FILE *out = tmpfile();
	assert_non_null(out);
	struct fetched f = {0};
	assert_int_equal(rest_download(r, &d, out, on_fetched, &f), 0);
	run_until(ev, &f.done);
	fflush(out);
	*kept = ftell(out);
	fclose(out);
	rest_free(r);
	server_stop(&sv);
	unsetenv("no_proxy");
	free(url);
	sd_event_unref(ev);
	return f;
}

static void test_a_download_within_its_limits_is_whole(void **state)
{
	(void)state;
	long kept = 0;
	struct fetched f = fetch("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789", 0,
	                         (struct download){.max_bytes = 10}, &kept);
	assert_int_equal(f.res.http_status, 200);
	assert_string_equal(f.error, "");
	assert_int_equal(f.res.limit, DOWNLOAD_OK_OR_OTHER);
	assert_int_equal(f.res.announced, 10);
	assert_int_equal(f.res.received, 10);
	assert_int_equal(kept, 10);
}

/* An answer announcing more than the cap is refused before its body; one without a Content-Length is cut off at it. */
static void test_a_download_over_the_size_cap(void **state)
{
	(void)state;
	long kept = 0;
	struct fetched f = fetch("HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\nConnection: close\r\n\r\nxxxx", 0,
	                         (struct download){.max_bytes = 1000}, &kept);
	assert_int_equal(f.res.limit, DOWNLOAD_TOO_LARGE);
	assert_int_equal(f.res.announced, 5000000);
	assert_int_equal(f.res.received, 0);
	assert_int_equal(kept, 0);

	char body[4001];
	memset(body, 'x', 4000);
	body[4000] = '\0';
	char *reply = xasprintf("HTTP/1.0 200 OK\r\n\r\n%s", body);
	f = fetch(reply, 0, (struct download){.max_bytes = 1000}, &kept);
	free(reply);
	assert_int_equal(f.res.limit, DOWNLOAD_TOO_LARGE);
	assert_int_equal(f.res.announced, -1);
	assert_true(f.res.received <= 1000);
	assert_true(kept <= 1000);
}

/* A redirect to a protocol not allowed is not followed, and where it pointed is said; one to an allowed one is. */
static void test_a_redirect_keeps_to_the_protocols_allowed(void **state)
{
	(void)state;
	long kept = 0;
	struct fetched f =
	    fetch("HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1:1/other.jar\r\nContent-Length: 0\r\n"
	          "Connection: close\r\n\r\n",
	          0, (struct download){.protocols = "http"}, &kept);
	assert_int_equal(f.res.limit, DOWNLOAD_SCHEME_REFUSED);
	assert_string_equal(f.url, "https://127.0.0.1:1/other.jar");
	/* allowed: followed (to a port where nothing listens), an ordinary failure */
	f = fetch("HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1:1/other.jar\r\nContent-Length: 0\r\n"
	          "Connection: close\r\n\r\n",
	          0, (struct download){.protocols = "http,https"}, &kept);
	assert_int_equal(f.res.limit, DOWNLOAD_OK_OR_OTHER);
	assert_true(f.error[0] != '\0');
	/* the URL's own protocol must be allowed too */
	f = fetch(NULL, 0, (struct download){.protocols = "https"}, &kept);
	assert_int_equal(f.res.http_status, 0);
	assert_true(f.error[0] != '\0');
	assert_int_equal(kept, 0);
}

/* A server that takes the request and never answers: the total budget ends it, named as such although a connect
 * timeout is set too (the connection was made at once). */
static void test_a_download_that_hangs_ends_at_its_budget(void **state)
{
	(void)state;
	long kept = 0;
	struct fetched f = fetch(
	    NULL, 1, (struct download){.timeout = 500 * USEC_PER_MSEC, .connect_timeout = 200 * USEC_PER_MSEC}, &kept);
	assert_int_equal(f.res.limit, DOWNLOAD_TIMEOUT);
	assert_true(rest_error_is_timeout(f.error));
	assert_int_equal(f.res.http_status, 0);
}

/* http and https with TLS (GnuTLS in both builds, the library libmicrohttpd loads; bench/footprint.py shows it); a
 * resolver that never blocks the event loop (AsynchDNS: each name lookup runs in a thread of its own); and libcurl's
 * words for its errors, which rest_error_is_timeout reads (a libcurl built without verbose strings says "Error" for
 * every one). */
static void test_the_linked_libcurl_has_what_flinklet_relies_on(void **state)
{
	(void)state;
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
	bool http = false, https = false;
	for (const char *const *p = v->protocols; *p; p++) {
		http = http || strcmp(*p, "http") == 0;
		https = https || strcmp(*p, "https") == 0;
	}
	assert_true(http);
	assert_true(https);
	assert_true(v->features & CURL_VERSION_SSL);
	assert_true(v->features & CURL_VERSION_ASYNCHDNS);
	assert_true(rest_error_is_timeout(curl_easy_strerror(CURLE_OPERATION_TIMEDOUT)));
	assert_string_equal(curl_easy_strerror(CURLE_COULDNT_CONNECT), "Couldn't connect to server");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_hung_request_holds_back_nothing_and_ends_at_its_own_timeout),
	    cmocka_unit_test(test_a_refused_connection_is_not_a_timeout),
	    cmocka_unit_test(test_timeout_words),
	    cmocka_unit_test(test_a_capped_answer_over_its_cap_is_too_large),
	    cmocka_unit_test(test_an_http_error_comes_with_its_status_and_json_body),
	    cmocka_unit_test(test_an_answer_that_is_not_json_is_an_error_with_its_status),
	    cmocka_unit_test(test_a_connection_closed_without_an_answer_is_no_status_and_no_timeout),
	    cmocka_unit_test(test_a_redirect_is_not_followed),
	    cmocka_unit_test(test_proxies_in_the_environment_are_not_used),
	    cmocka_unit_test(test_a_download_within_its_limits_is_whole),
	    cmocka_unit_test(test_a_download_over_the_size_cap),
	    cmocka_unit_test(test_a_redirect_keeps_to_the_protocols_allowed),
	    cmocka_unit_test(test_a_download_that_hangs_ends_at_its_budget),
	    cmocka_unit_test(test_the_linked_libcurl_has_what_flinklet_relies_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
