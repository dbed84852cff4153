/* test_rest: the REST client (src/rest.c) on the supervisor's kind of event loop, against a loopback server
 * made here (in a thread, like a real one) that takes its first connection and never answers it (a REST server still
 * coming up), and answers the next ones at once. A request that hangs does not hold back the one sent after it; a
 * request's own timeout (rest_request_within) ends it although the client's default is an hour, and its error is known
 * as a timeout; a refused connection is not a timeout. */
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <systemd/sd-event.h>

#include "rest.h"

/* The server runs in a thread of its own, as Flink's would: the client's loop never waits for it. */
struct server {
	int fd;
	int port;
	int hang;           /* how many connections to take and never answer before answering the rest */
	atomic_bool taken;  /* one was taken and not answered */
	int held[8], nheld; /* those connections */
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
		static const char reply[] =
		    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n"
		    "Connection: close\r\n\r\n{\"state\":\"RUN\"}\n";
		ssize_t w = write(c, reply, sizeof(reply) - 1);
		(void)w;
		close(c);
	}
}

static void server_start(struct server *sv, int hang)
{
	memset(sv, 0, sizeof(*sv));
	sv->hang = hang;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_hung_request_holds_back_nothing_and_ends_at_its_own_timeout),
	    cmocka_unit_test(test_a_refused_connection_is_not_a_timeout),
	    cmocka_unit_test(test_timeout_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
