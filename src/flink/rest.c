/* rest: Flink REST calls on curl multi + sd-event (see src/flink/rest.h). */
#include "rest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#ifdef FLINKLET_SYSTEM_CURL
#include <libssh2.h>
#endif

#define MAX_RESPONSE_BYTES (16u << 20)

struct rest {
	sd_event *event;
	CURLM *multi;
	sd_event_source *timer;
	char *base_url;
	usec_t timeout;
	unsigned in_flight;
	struct req *reqs; /* running requests, to abandon them on free */
};

struct req {
	struct rest *rest;
	struct req *prev, *next;
	CURL *easy;
	struct curl_slist *headers;
	struct strbuf response;
	char *body;
	rest_cb cb;
	void *userdata;
	char error[CURL_ERROR_SIZE];
	bool too_large;
	/* downloads: the body goes to a file instead */
	FILE *out;
	uint64_t out_bytes, max_bytes;
	int64_t announced; /* the current answer's Content-Length, -1: none */
	/* when it began, its budget and its connect timeout (0: the budget's) */
	usec_t started, timeout, connect_timeout;
	size_t max_response; /* the most a JSON answer may be (0: MAX_RESPONSE_BYTES) */
	rest_download_cb dcb;
	/* streams: the answer is passed on as it arrives */
	const struct rest_stream *stream;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct req *q = userdata;
	size_t n = size * nmemb;
	if (q->stream)
		return q->stream->on_data(q->userdata, ptr, n) ? n : 0;
	if (q->out) {
		if (q->out_bytes + n > q->max_bytes) {
			q->too_large = true;
			return 0;
		}
		q->out_bytes += n;
		return fwrite(ptr, 1, n, q->out);
	}
	if (q->response.len + n > (q->max_response ? q->max_response : MAX_RESPONSE_BYTES)) {
		q->too_large = true;
		return 0;
	}
	strbuf_appendn(&q->response, ptr, n);
	return n;
}

static void req_free(struct req *q)
{
	LIST_REMOVE(q->rest->reqs, q);
	curl_slist_free_all(q->headers);
	if (q->easy)
		curl_easy_cleanup(q->easy);
	strbuf_free(&q->response);
	free(q->body);
	free(q);
}

/* A download's end, with the limit it ran into named for the caller (who knows the options behind them). */
static void download_done(struct req *q, CURLcode res)
{
	struct download_result d = {.announced = q->announced, .received = q->out_bytes};
	char *url = NULL;
	curl_easy_getinfo(q->easy, CURLINFO_EFFECTIVE_URL, &url);
	d.url = url;
	if (res == CURLE_OK) {
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &d.http_status);
		q->dcb(q->userdata, &d);
		return;
	}
	d.error = q->error[0] ? q->error : curl_easy_strerror(res);
	long redirects = 0;
	curl_easy_getinfo(q->easy, CURLINFO_REDIRECT_COUNT, &redirects);
	if (q->too_large || res == CURLE_FILESIZE_EXCEEDED) {
		d.limit = DOWNLOAD_TOO_LARGE;
	} else if (res == CURLE_OPERATION_TIMEDOUT) {
		/* curl's timer ends both: the connect timeout when the budget was not spent yet */
		bool spent = now_monotonic() - q->started + 100 * USEC_PER_MSEC >= q->timeout;
		d.limit = q->connect_timeout && !spent ? DOWNLOAD_CONNECT_TIMEOUT : DOWNLOAD_TIMEOUT;
	} else if (res == CURLE_UNSUPPORTED_PROTOCOL && redirects > 0) {
		d.limit = DOWNLOAD_SCHEME_REFUSED; /* the URL was allowed: its redirect was not */
	}
	q->dcb(q->userdata, &d);
}

static void check_done(struct rest *r)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(r->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct req *q = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&q);
		CURLcode res = msg->data.result;
		curl_multi_remove_handle(r->multi, msg->easy_handle);
		r->in_flight--;
		long code = 0;
		cJSON *json = NULL;
		const char *err = NULL;
		if (q->stream) {
			if (res == CURLE_OK)
				curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
			else
				err = q->error[0] ? q->error : curl_easy_strerror(res);
			q->stream->on_done(q->userdata, code, err);
			req_free(q);
			continue;
		}
		if (q->dcb) {
			download_done(q, res);
			req_free(q);
			continue;
		}
		if (res == CURLE_OK) {
			curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
			if (q->response.len)
				json = cJSON_ParseWithLength(q->response.buf, q->response.len);
			if (q->response.len && !json)
				err = "response is not JSON";
		} else {
			err = q->too_large ? "response too large" : (q->error[0] ? q->error : curl_easy_strerror(res));
			if (res == CURLE_OPERATION_TIMEDOUT && !rest_error_is_timeout(err))
				err = curl_easy_strerror(res); /* rest_error_is_timeout() knows it by its words */
		}
		q->cb(q->userdata, code, json, err);
		cJSON_Delete(json);
		req_free(q);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct rest *r = userdata;
	int action = 0, running;
	if (revents & EPOLLIN)
		action |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		action |= CURL_CSELECT_OUT;
	if (revents & (EPOLLERR | EPOLLHUP))
		action |= CURL_CSELECT_ERR;
	curl_multi_socket_action(r->multi, fd, action, &running);
	check_done(r);
	return 0;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct rest *r = userp;
	sd_event_source *src = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (src) {
			sd_event_source_disable_unref(src);
			curl_multi_assign(r->multi, fd, NULL);
		}
		return 0;
	}
	uint32_t events = 0;
	if (what & CURL_POLL_IN)
		events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		events |= EPOLLOUT;
	if (src) {
		sd_event_source_set_io_events(src, events);
		return 0;
	}
	if (sd_event_add_io(r->event, &src, fd, events, on_io, r) < 0)
		return -1;
	sd_event_source_set_description(src, "curl-socket");
	curl_multi_assign(r->multi, fd, src);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct rest *r = userdata;
	int running;
	curl_multi_socket_action(r->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(r);
	return 0;
}

static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
	struct rest *r = userp;
	if (timeout_ms < 0)
		return sd_event_source_set_enabled(r->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
	usec_t when = now_monotonic() + (usec_t)timeout_ms * USEC_PER_MSEC;
	if (sd_event_source_set_time(r->timer, when) < 0)
		return -1;
	return sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT) < 0 ? -1 : 0;
}

int rest_new(sd_event *event, const char *base_url, usec_t timeout, struct rest **ret)
{
	static bool global_init;
	if (!global_init) {
#ifdef FLINKLET_SYSTEM_CURL
		/* Debian's libcurl (make CURL=system) initialises libssh2 (SCP, SFTP) in curl_global_init, and libssh2
		 * then initialises its crypto library, OpenSSL's libcrypto (ENGINE_load_builtin_engines and the rest:
		 * about 1.5 MiB resident for good). flinklet's transfers are http and https only
		 * (CURLOPT_PROTOCOLS_STR on every handle), so libssh2 is initialised first without crypto: curl's own
		 * libssh2_init only counts it then. The bundled libcurl (the default, scripts/curl.sh) has no ssh at
		 * all. docs/performance.md has the figures. */
		if (libssh2_init(LIBSSH2_INIT_NO_CRYPTO) != 0)
			return -EIO;
#endif
		/* TLS is GnuTLS, shared with libmicrohttpd, in both builds */
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -EIO;
		global_init = true;
	}
	struct rest *r = xcalloc(1, sizeof(*r));
	r->event = sd_event_ref(event);
	r->base_url = xstrdup(base_url);
	r->timeout = timeout;
	r->multi = curl_multi_init();
	/* curl's timeouts on time to the millisecond (sd-event's default accuracy is 250 ms) */
	int q = sd_event_add_time(event, &r->timer, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_timer, r);
	if (!r->multi || q < 0) {
		rest_free(r);
		return q < 0 ? q : -ENOMEM;
	}
	sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
	sd_event_source_set_description(r->timer, "curl-timer");
	curl_multi_setopt(r->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(r->multi, CURLMOPT_SOCKETDATA, r);
	curl_multi_setopt(r->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(r->multi, CURLMOPT_TIMERDATA, r);
	*ret = r;
	return 0;
}

void rest_free(struct rest *r)
{
	if (!r)
		return;
	if (r->multi) {
		/* abandon running requests without calling back */
		while (r->reqs) {
			curl_multi_remove_handle(r->multi, r->reqs->easy);
			req_free(r->reqs);
		}
		curl_multi_cleanup(r->multi);
	}
	sd_event_source_disable_unref(r->timer);
	sd_event_unref(r->event);
	free(r->base_url);
	free(r);
}

unsigned rest_in_flight(const struct rest *r)
{
	return r ? r->in_flight : 0;
}

/* A request with what every request has: the URL, the response sink, the error buffer, timeouts. */
static struct req *req_new(struct rest *r, const char *url, usec_t timeout, void *userdata)
{
	struct req *q = xcalloc(1, sizeof(*q));
	q->rest = r;
	q->userdata = userdata;
	q->easy = curl_easy_init();
	if (!q->easy) {
		free(q);
		return NULL;
	}
	curl_easy_setopt(q->easy, CURLOPT_URL, url);
	curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
	curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_ERRORBUFFER, q->error);
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, (long)(timeout / USEC_PER_MSEC));
	curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout / USEC_PER_MSEC));
	curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L);
	return q;
}

/* Hands the request to the multi handle; it is tracked so that rest_free can abandon it. */
static int req_start(struct rest *r, struct req *q)
{
	if (q->headers)
		curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, q->headers);
	LIST_PREPEND(r->reqs, q);
	if (curl_multi_add_handle(r->multi, q->easy) != CURLM_OK) {
		req_free(q);
		return -EIO;
	}
	r->in_flight++;
	return 0;
}

/* A download's headers: each answer's Content-Length (a redirect's answer has its own), for the size cap's message;
 * curl itself refuses an answer announcing more than the cap (CURLOPT_MAXFILESIZE_LARGE). */
static size_t on_download_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct req *q = userdata;
	size_t n = size * nmemb;
	static const char cl[] = "content-length:";
	if (n > 5 && !strncmp(ptr, "HTTP/", 5)) {
		q->announced = -1; /* a new answer */
	} else if (n > sizeof(cl) - 1 && !strncasecmp(ptr, cl, sizeof(cl) - 1)) {
		char *line = xstrndup(ptr + sizeof(cl) - 1, n - (sizeof(cl) - 1));
		char *end;
		errno = 0;
		long long v = strtoll(line, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		q->announced = errno == ERANGE || v < 0 ? INT64_MAX : (*end ? -1 : (int64_t)v);
		free(line);
	}
	return n;
}

int rest_download(struct rest *r, const struct download *d, FILE *out, rest_download_cb cb, void *userdata)
{
	struct req *q = req_new(r, d->url, d->timeout, userdata);
	if (!q)
		return -ENOMEM;
	q->dcb = cb;
	q->out = out;
	q->max_bytes = d->max_bytes ? d->max_bytes : (1ULL << 31);
	q->announced = -1;
	q->started = now_monotonic();
	q->timeout = d->timeout;
	if (d->connect_timeout && d->connect_timeout < d->timeout) {
		q->connect_timeout = d->connect_timeout;
		curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(d->connect_timeout / USEC_PER_MSEC));
	}
	/* an answer that announces more is refused before its body; one that brings more is cut off (on_data) */
	curl_easy_setopt(q->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)q->max_bytes);
	curl_easy_setopt(q->easy, CURLOPT_HEADERFUNCTION, on_download_header);
	curl_easy_setopt(q->easy, CURLOPT_HEADERDATA, q);
	/* the jar comes from outside: the environment's proxy (https_proxy, no_proxy) is honoured here, and only
	 * here; credentials are not sent on to another host after a redirect (libcurl's default, kept). The URL and
	 * every redirect use the protocols allowed (the redirect's own list: otherwise libcurl allows http on one) */
	const char *protocols = d->protocols ? d->protocols : "https";
	curl_easy_setopt(q->easy, CURLOPT_PROTOCOLS_STR, protocols);
	curl_easy_setopt(q->easy, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
	curl_easy_setopt(q->easy, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(q->easy, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(q->easy, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(q->easy, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(q->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(q->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	if (d->ca_file)
		curl_easy_setopt(q->easy, CURLOPT_CAINFO, d->ca_file);
	if (d->aws_sigv4) {
		curl_easy_setopt(q->easy, CURLOPT_AWS_SIGV4, d->aws_sigv4);
		curl_easy_setopt(q->easy, CURLOPT_USERPWD, d->userpwd);
	}
	for (size_t i = 0; d->headers && d->headers[i]; i++)
		q->headers = curl_slist_append(q->headers, d->headers[i]);
	return req_start(r, q);
}

bool rest_error_is_timeout(const char *error)
{
	/* curl's own words: "Operation timed out after ...", "Connection timed out after ...", or its
	 * curl_easy_strerror(CURLE_OPERATION_TIMEDOUT) "Timeout was reached" when the error buffer is empty */
	return error && (strstr(error, "timed out") || strstr(error, "Timeout was reached"));
}

int rest_request(struct rest *r, const char *method, const char *path, const char *body, rest_cb cb, void *userdata)
{
	return rest_request_within(r, method, path, body, 0, cb, userdata);
}

/* A request to path on Flink's REST server, not started yet (NULL: none could be made). Flink is on this machine:
 * http_proxy and friends are for the outside world (a dead proxy would hide a healthy job; a live one would see every
 * call), and no redirect is followed either. */
static struct req *loopback_request(struct rest *r, const char *path, usec_t timeout, void *userdata)
{
	char *url = xasprintf("%s%s", r->base_url, path);
	struct req *q = req_new(r, url, timeout, userdata);
	free(url);
	if (!q)
		return NULL;
	curl_easy_setopt(q->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(q->easy, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(q->easy, CURLOPT_FOLLOWLOCATION, 0L);
	return q;
}

/* A request to Flink's REST API, not started yet (NULL: none could be made). */
static struct req *api_request(struct rest *r, const char *method, const char *path, const char *body, usec_t timeout,
                               rest_cb cb, void *userdata)
{
	struct req *q = loopback_request(r, path, timeout ? timeout : r->timeout, userdata);
	if (!q)
		return NULL;
	q->cb = cb;
	curl_easy_setopt(q->easy, CURLOPT_CUSTOMREQUEST, method);
	q->headers = curl_slist_append(q->headers, "Accept: application/json");
	if (body) {
		q->body = xstrdup(body);
		q->headers = curl_slist_append(q->headers, "Content-Type: application/json");
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
	}
	return q;
}

int rest_request_within(struct rest *r, const char *method, const char *path, const char *body, usec_t timeout,
                        rest_cb cb, void *userdata)
{
	struct req *q = api_request(r, method, path, body, timeout, cb, userdata);
	return q ? req_start(r, q) : -ENOMEM;
}

int rest_get_capped(struct rest *r, const char *path, usec_t timeout, size_t max_bytes, rest_cb cb, void *userdata)
{
	struct req *q = api_request(r, "GET", path, NULL, timeout, cb, userdata);
	if (!q)
		return -ENOMEM;
	q->max_response = max_bytes < MAX_RESPONSE_BYTES ? max_bytes : MAX_RESPONSE_BYTES;
	return req_start(r, q);
}

static size_t on_stream_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct req *q = userdata;
	size_t n = size * nmemb;
	return q->stream->on_header(q->userdata, ptr, n) ? n : 0;
}

struct rest_req *rest_stream(struct rest *r, const struct rest_stream *st, void *userdata)
{
	struct req *q = loopback_request(r, st->target, st->timeout, userdata);
	if (!q)
		return NULL;
	q->stream = st;
	curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->timeout / USEC_PER_MSEC));
	curl_easy_setopt(q->easy, CURLOPT_HEADERFUNCTION, on_stream_header);
	curl_easy_setopt(q->easy, CURLOPT_HEADERDATA, q);
	if (!strcmp(st->method, "HEAD")) {
		curl_easy_setopt(q->easy, CURLOPT_NOBODY, 1L);
	} else if (strcmp(st->method, "GET")) {
		/* every other method sends its body, an empty one too (Content-Length: 0) */
		size_t n = st->body ? st->body_len : 0;
		q->body = xmalloc(n + 1);
		if (n)
			memcpy(q->body, st->body, n);
		q->body[n] = '\0';
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)n);
		curl_easy_setopt(q->easy, CURLOPT_CUSTOMREQUEST, st->method);
	}
	/* no "Expect: 100-continue" round trip; the caller's headers replace curl's defaults of the same name */
	q->headers = curl_slist_append(q->headers, "Expect:");
	for (size_t i = 0; st->headers && st->headers[i]; i++)
		q->headers = curl_slist_append(q->headers, st->headers[i]);
	/* the handle is the request itself, under the public name */
	return req_start(r, q) < 0 ? NULL : (struct rest_req *)q;
}

void rest_cancel(struct rest *r, struct rest_req *handle)
{
	struct req *q = (struct req *)handle;
	if (!r || !q)
		return;
	curl_multi_remove_handle(r->multi, q->easy);
	r->in_flight--;
	req_free(q);
}
