/* test_http: the HTTP glue (src/http/http.c) driven through real sockets on 127.0.0.1 and a real sd-event loop, the
 * test pumping the loop while it talks: what a handler sees of a request (method, decoded path, target with its
 * query, headers, body) and how its answer goes out; a body too large (413); a deferred answer; the connection
 * limits, in total and per client address (a connection over one is closed at once, and counted); the idle
 * timeout; an answer with a shared tail (sent from one buffer by every response); the bearer-token check of the control
 * API (http_bearer_authorized); and the endpoint's routing (sup_http_route, src/supervisor/sup_http.c) on a supervisor
 * at rest: which route answers, with which code, and that nothing that changes the job passes without the token. */
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "http.h"
#include "sup.h"

/* the loop is pumped in steps of 10 ms; a test that needs more than this many steps has failed (no timing is
 * asserted: the bound only keeps a broken test from hanging) */
#define MAX_STEPS 3000

struct seen {
	int calls;
	char method[16], path[128], target[128], auth[64], hdr[64], body[HTTP_MAX_BODY + 1];
	struct http_exchange *deferred;
	bool defer, answer_at_once;
	struct shbuf *tail; /* sent after the body of each answer, when set */
};

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "(null)");
}

static void handler(void *userdata, const struct http_request *req, struct http_response *resp)
{
	struct seen *s = userdata;
	s->calls++;
	copy(s->method, sizeof(s->method), req->method);
	copy(s->path, sizeof(s->path), req->path);
	copy(s->target, sizeof(s->target), req->target);
	copy(s->auth, sizeof(s->auth), req->authorization);
	copy(s->hdr, sizeof(s->hdr), http_request_header(req, "X-Test"));
	snprintf(s->body, sizeof(s->body), "%.*s", (int)req->body_len, req->body);
	if (s->defer) {
		s->deferred = http_defer(req);
		if (s->answer_at_once) {
			/* what the supervisor does when the answer's condition already holds (a write done without a
			 * worker thread): deferred, then answered before the handler returns */
			struct http_response now = {
			    .code = 202, .content_type = "application/json", .body = xstrdup("{}")};
			http_answer(s->deferred, &now);
		}
		return;
	}
	resp->code = 200;
	resp->content_type = "text/plain";
	resp->body = xasprintf("hello %s", req->path);
	strv_push(&resp->headers, "X-Answer: 42");
	resp->tail = shbuf_ref(s->tail);
}

struct fixture {
	sd_event *e;
	struct http_server *h;
	struct seen seen;
};

static struct fixture *start(unsigned max, unsigned per_ip, unsigned timeout_s)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	assert_int_equal(sd_event_new(&f->e), 0);
	struct http_limits limits = {max, per_ip, timeout_s};
	assert_int_equal(http_start(f->e, "127.0.0.1:0", &limits, handler, &f->seen, &f->h), 0);
	assert_true(http_port(f->h) > 0);
	return f;
}

static void stop(struct fixture *f)
{
	http_stop(f->h);
	sd_event_unref(f->e);
	free(f);
}

static int client(struct fixture *f)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_port(f->h))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0); /* the kernel completes it */
	return fd;
}

static void pump(struct fixture *f)
{
	sd_event_run(f->e, 10000);
}

/* Pumps the loop until fd has been closed by the server; returns all it received (or NULL when the step bound
 * ran out). */
static char *until_closed(struct fixture *f, int fd)
{
	struct strbuf b = {0};
	for (int step = 0; step < MAX_STEPS; step++) {
		pump(f);
		struct pollfd p = {fd, POLLIN, 0};
		while (poll(&p, 1, 0) > 0) {
			char buf[4096];
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n > 0) {
				strbuf_appendn(&b, buf, (size_t)n);
				continue;
			}
			if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(fd);
				return strbuf_steal(&b); /* EOF or reset: closed */
			}
			break;
		}
	}
	close(fd);
	strbuf_free(&b);
	return NULL;
}

static void send_all(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

static void test_request_and_answer(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 10);
	int fd = client(f);
	send_all(fd, "POST /api/v1/a%20b?x=1&y=%2F HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret\r\n"
	             "X-Test: yes\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
	char *got = until_closed(f, fd);
	assert_non_null(got);
	assert_int_equal(f->seen.calls, 1);
	assert_string_equal(f->seen.method, "POST");
	assert_string_equal(f->seen.path, "/api/v1/a b");               /* decoded, without the query */
	assert_string_equal(f->seen.target, "/api/v1/a%20b?x=1&y=%2F"); /* as sent */
	assert_string_equal(f->seen.auth, "Bearer s3cret");
	assert_string_equal(f->seen.hdr, "yes");
	assert_string_equal(f->seen.body, "hello");
	assert_contains(got, "HTTP/1.1 200 OK\r\n");
	assert_contains(got, "Content-Type: text/plain\r\n");
	assert_contains(got, "X-Answer: 42\r\n");
	assert_contains(got, "\r\n\r\nhello /api/v1/a b");
	free(got);
	stop(f);
}

static void test_body_too_large(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 10);
	/* announced too large: refused before the body is read, the handler never called */
	int fd = client(f);
	char *req = xasprintf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
	                      HTTP_MAX_BODY + 1);
	send_all(fd, req);
	free(req);
	char *got = until_closed(f, fd);
	assert_non_null(got);
	assert_contains(got, "HTTP/1.1 413 ");
	assert_int_equal(f->seen.calls, 0);
	free(got);
	/* the largest body that is allowed reaches the handler whole */
	fd = client(f);
	char *body = xcalloc(1, HTTP_MAX_BODY + 1);
	memset(body, 'b', HTTP_MAX_BODY);
	req = xasprintf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
	                HTTP_MAX_BODY, body);
	send_all(fd, req);
	free(req);
	got = until_closed(f, fd);
	assert_non_null(got);
	assert_contains(got, "HTTP/1.1 200 OK");
	assert_string_equal(f->seen.body, body);
	free(got);
	free(body);
	stop(f);
}

static void test_deferred_answer(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 1);
	f->seen.defer = true;
	int fd = client(f);
	send_all(fd, "GET /flink/jobs HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	for (int step = 0; step < MAX_STEPS && !f->seen.deferred; step++)
		pump(f);
	assert_non_null(f->seen.deferred);
	/* the connection waits, past its idle timeout of 1 s: pump a while, nothing comes, it stays open */
	for (int step = 0; step < 150; step++)
		pump(f);
	char c;
	assert_int_equal(recv(fd, &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	struct http_response resp = {.code = 202, .content_type = "application/json", .body = xstrdup("{}")};
	http_answer(f->seen.deferred, &resp);
	char *got = until_closed(f, fd);
	assert_non_null(got);
	assert_contains(got, "HTTP/1.1 202 Accepted\r\n");
	assert_contains(got, "\r\n\r\n{}");
	free(got);
	stop(f);
}

/* Deferred and answered before the handler returns: the answer is sent as an ordinary one; the connection is never
 * suspended nor resumed (resuming one MHD never suspended freed the request under the handler: found by fuzz_http) */
static void test_deferred_and_answered_at_once(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 1);
	f->seen.defer = true;
	f->seen.answer_at_once = true;
	for (int i = 0; i < 3; i++) {
		int fd = client(f);
		send_all(
		    fd, "POST /api/v1/suspend HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
		char *got = until_closed(f, fd);
		assert_non_null(got);
		assert_contains(got, "HTTP/1.1 202 Accepted\r\n");
		assert_contains(got, "\r\n\r\n{}");
		free(got);
	}
	assert_int_equal(f->seen.calls, 3);
	stop(f);
}

/* An answer with a tail: its body, then the tail, which every response sends from the one shared buffer (each holds
 * a reference while it is sent, never a copy) and lets go of once it is sent, or once its client went away. */
static void test_shared_tail(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 10);
	size_t n = 2u << 20; /* more than loopback takes into its buffers unread */
	char *data = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 23);
	f->seen.tail = shbuf_take(data, n);
	int fds[4];
	for (int i = 0; i < 4; i++) {
		fds[i] = client(f);
		send_all(fds[i], "GET /m HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	}
	for (int step = 0; step < MAX_STEPS && f->seen.calls < 4; step++)
		pump(f);
	assert_int_equal(f->seen.calls, 4);
	assert_int_equal(shbuf_refs(f->seen.tail), 5); /* the test's and one per response being sent */
	/* one client goes away unread: its response lets go of the tail */
	close(fds[3]);
	for (int step = 0; step < MAX_STEPS && shbuf_refs(f->seen.tail) > 4; step++)
		pump(f);
	assert_int_equal(shbuf_refs(f->seen.tail), 4);
	for (int i = 0; i < 3; i++) {
		char *got = until_closed(f, fds[i]);
		assert_non_null(got);
		char *head_end = strstr(got, "\r\n\r\n");
		assert_non_null(head_end);
		*head_end = '\0';
		char *want = xasprintf("\r\nContent-Length: %zu", strlen("hello /m") + n);
		assert_contains(got, want);
		free(want);
		const char *text = head_end + 4;
		assert_int_equal(strlen(text), 8 + n);
		assert_int_equal(memcmp(text, "hello /m", 8), 0);
		assert_int_equal(memcmp(text + 8, data, n), 0);
		free(got);
	}
	assert_int_equal(shbuf_refs(f->seen.tail), 1);
	shbuf_unref(f->seen.tail);
	stop(f);
}

/* A connection over a limit is closed without a byte, counted in http_stats; the others are served. */
static void test_connection_limits(void **state)
{
	(void)state;
	struct fixture *f = start(2, 0, 10);
	int a = client(f), b = client(f);
	for (int i = 0; i < 20; i++)
		pump(f);
	unsigned open = 0;
	uint64_t refused = 0;
	http_stats(f->h, &open, &refused);
	assert_int_equal(open, 2);
	int c = client(f);
	char *got = until_closed(f, c);
	assert_non_null(got); /* closed by the server */
	assert_string_equal(got, "");
	free(got);
	http_stats(f->h, &open, &refused);
	assert_int_equal(refused, 1);
	/* the two are still served */
	send_all(a, "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	got = until_closed(f, a);
	assert_non_null(got);
	assert_contains(got, "hello /a");
	free(got);
	/* and with one closed, a new one gets in */
	int d = client(f);
	send_all(d, "GET /d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	got = until_closed(f, d);
	assert_non_null(got);
	assert_contains(got, "hello /d");
	free(got);
	close(b);
	stop(f);

	/* per client address: one from 127.0.0.1, however many in total */
	f = start(10, 1, 10);
	a = client(f);
	for (int i = 0; i < 20; i++)
		pump(f);
	b = client(f);
	got = until_closed(f, b);
	assert_non_null(got);
	assert_string_equal(got, "");
	free(got);
	http_stats(f->h, &open, &refused);
	assert_int_equal(open, 1);
	assert_int_equal(refused, 1);
	close(a);
	stop(f);
}

static void test_idle_timeout(void **state)
{
	(void)state;
	struct fixture *f = start(8, 8, 1);
	int fd = client(f);
	send_all(fd, "GET /slow HTTP/1.1\r\nHost: t\r\n"); /* a request that never ends */
	char *got = until_closed(f, fd);                   /* closed by the server once idle */
	assert_non_null(got);
	assert_int_equal(f->seen.calls, 0);
	free(got);
	unsigned open = 1;
	uint64_t refused = 0;
	for (int step = 0; step < MAX_STEPS && open; step++) { /* MHD counts it gone on its next turn */
		pump(f);
		http_stats(f->h, &open, &refused);
	}
	assert_int_equal(open, 0);
	stop(f);
}

static void test_bearer_token(void **state)
{
	(void)state;
	const char *t = "0123456789abcdef";
	assert_true(http_bearer_authorized(t, "Bearer 0123456789abcdef"));
	assert_true(http_bearer_authorized(t, "bearer 0123456789abcdef")); /* the scheme in any case */
	assert_true(http_bearer_authorized(t, "BEARER    0123456789abcdef"));
	assert_false(http_bearer_authorized(t, "Bearer 0123456789abcdeF"));
	assert_false(http_bearer_authorized(t, "Bearer 0123456789abcde"));   /* a prefix */
	assert_false(http_bearer_authorized(t, "Bearer 0123456789abcdef0")); /* longer */
	assert_false(http_bearer_authorized(t, "Bearer0123456789abcdef"));
	assert_false(http_bearer_authorized(t, "Basic 0123456789abcdef"));
	assert_false(http_bearer_authorized(t, "Bearer "));
	assert_false(http_bearer_authorized(t, ""));
	assert_false(http_bearer_authorized(t, NULL));
	assert_false(http_bearer_authorized(NULL, "Bearer 0123456789abcdef")); /* no token: nothing passes */
}

struct routed {
	int code;
	char *body;
	struct strv headers;
};

static struct routed route(struct supervisor *sup, const char *method, const char *path, const char *auth)
{
	struct http_request req = {.method = method, .path = path, .authorization = auth, .body = "", .target = path};
	struct http_response resp = {.code = 404, .content_type = "application/json"};
	sup_http_route(sup, &req, &resp);
	struct routed r = {resp.code, resp.body ? resp.body : xstrdup(""), resp.headers};
	return r;
}

static void routed_free(struct routed *r)
{
	free(r->body);
	strv_free(&r->headers);
}

static bool has_header(const struct routed *r, const char *h)
{
	for (size_t i = 0; i < r->headers.n; i++)
		if (!strcmp(r->headers.v[i], h))
			return true;
	return false;
}

#define EXPECT(sup, method, path, auth, want_code, want_body)                                                          \
	do {                                                                                                           \
		struct routed r_ = route(sup, method, path, auth);                                                     \
		if (r_.code != (want_code))                                                                            \
			fail_msg("%s %s: %d, not %d (%s)", method, path, r_.code, want_code, r_.body);                 \
		assert_contains(r_.body, want_body);                                                                   \
		routed_free(&r_);                                                                                      \
	} while (0)

static void test_routes(void **state)
{
	(void)state;
	struct supervisor *sup = xcalloc(1, sizeof(*sup));
	sup->http.token = xstrdup("the-token");
	sup->state = SUP_RUNNING;
	sup->status.lifecycle = LIFECYCLE_STABLE;
	sup->status.job_state = xstrdup("RUNNING");
	EXPECT(sup, "GET", "/healthz", NULL, 200, "\"lifecycleState\":\"STABLE\"");
	EXPECT(sup, "HEAD", "/healthz", NULL, 200, "STABLE");
	EXPECT(sup, "GET", "/readyz", NULL, 200, "\"jobState\":\"RUNNING\"");
	EXPECT(sup, "GET", "/nothing-here", NULL, 404, "not found");
	EXPECT(sup, "POST", "/healthz", "Bearer the-token", 405, "use GET");
	EXPECT(sup, "GET", "/api/v1/savepoint", "Bearer the-token", 405, "use POST");
	/* the control API: nothing without the right token, whatever the action */
	static const char *const actions[] = {"/api/v1/savepoint", "/api/v1/checkpoint", "/api/v1/suspend",
	                                      "/api/v1/resume", "/api/v1/nonsense"};
	static const char *const bad[] = {
	    NULL, "", "Bearer", "Bearer the-toke", "Bearer the-token2", "Basic the-token"};
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++)
			EXPECT(sup, "POST", actions[i], bad[j], 401, "Authorization: Bearer <token>");
	assert_int_equal(sup->http.unauthorized, 30);
	/* with it, on a job that has ended: refused by the job's state, not by the token */
	sup->state = SUP_FINISHED;
	EXPECT(sup, "POST", "/api/v1/savepoint", "Bearer the-token", 409, "the job is not running");
	EXPECT(sup, "POST", "/api/v1/suspend", "bearer   the-token", 409, "the job has ended");
	EXPECT(sup, "POST", "/api/v1/nonsense", "Bearer the-token", 404, "no such action");
	/* not ready unless RUNNING; not healthy once FAILED */
	EXPECT(sup, "GET", "/readyz", NULL, 503, "jobState");
	sup->state = SUP_FAILED;
	sup->status.lifecycle = LIFECYCLE_FAILED;
	EXPECT(sup, "GET", "/healthz", NULL, 503, "FAILED");
	/* Flink's API: reading is open, changing needs the token (401 without one, 403 with a wrong one) */
	sup->http.unauthorized = 0;
	struct routed r = route(sup, "PATCH", "/flink/jobs/0123/", NULL);
	assert_int_equal(r.code, 401);
	assert_true(has_header(&r, "WWW-Authenticate: Bearer realm=\"flinklet\""));
	routed_free(&r);
	EXPECT(sup, "POST", "/flink/jobs/0123/stop", "Bearer nope", 403, "the token is not valid");
	EXPECT(sup, "DELETE", "/flink/jars/x", "Bearer nope", 403, "the token is not valid");
	assert_int_equal(sup->http.unauthorized, 3);
	/* what flinklet answers itself says its content type is meant */
	r = route(sup, "GET", "/healthz", NULL);
	assert_true(has_header(&r, "X-Content-Type-Options: nosniff"));
	routed_free(&r);
	/* without a token configured nothing passes */
	free(sup->http.token);
	sup->http.token = NULL;
	sup->state = SUP_RUNNING;
	EXPECT(sup, "POST", "/api/v1/savepoint", "Bearer ", 401, "Authorization");
	free(sup->status.job_state);
	free(sup);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_and_answer), cmocka_unit_test(test_body_too_large),
	    cmocka_unit_test(test_deferred_answer),    cmocka_unit_test(test_deferred_and_answered_at_once),
	    cmocka_unit_test(test_connection_limits),  cmocka_unit_test(test_idle_timeout),
	    cmocka_unit_test(test_bearer_token),       cmocka_unit_test(test_routes),
	    cmocka_unit_test(test_shared_tail),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
