/* http: libmicrohttpd on the sd-event loop (see include/http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "log.h"
#include "util.h"

#define MAX_CONNECTIONS 32
#define CONNECTION_MEMORY (64 * 1024)
#define CONNECTION_TIMEOUT_S 10

struct http_server {
	sd_event *event;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer;
	http_handler handler;
	void *userdata;
	int port;
	struct pending *waiting; /* deferred requests not answered yet (their connections suspended) */
};

/* Per-request state: the request target as sent, the body while it arrives, and an answer that comes later
 * (http_defer: the connection is suspended until http_answer resumes it). */
struct pending {
	struct http_server *h;
	struct MHD_Connection *c;
	char *target;
	struct strbuf body;
	bool started, too_large;
	bool deferred, answered;
	struct http_response answer;
	char *answer_type; /* answer.content_type, owned: the answerer's string may be gone by the time it is sent */
	struct pending *prev, *next; /* in h->waiting while deferred and not answered */
};

static void rearm_timer(struct http_server *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time(h->timer, now_monotonic() + (usec_t)ms * USEC_PER_MSEC);
		sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct http_server *h = userdata;
	MHD_run(h->mhd);
	rearm_timer(h);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct http_server *h = userdata;
	MHD_run(h->mhd);
	rearm_timer(h);
	return 0;
}

/* libmicrohttpd's own messages (a broken request, the connection limit, a socket option it could not set) as
 * lines of the supervisor's log, instead of bare lines on stderr. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct strbuf b = {0};
	strbuf_vappendf(&b, fmt, ap);
	while (b.len && (b.buf[b.len - 1] == '\n' || b.buf[b.len - 1] == '\r'))
		b.buf[--b.len] = '\0';
	log_warn("http: %s", b.buf ? b.buf : "");
	strbuf_free(&b);
}

static enum MHD_Result reply(struct MHD_Connection *c, int code, const char *type, const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

static void response_free(struct http_response *resp)
{
	if (resp->release)
		resp->release(resp->release_cls);
	else
		free(resp->body);
	strv_free(&resp->headers);
	resp->body = NULL;
	resp->release = NULL;
}

/* Queues resp (its code, Content-Type, body and further headers) on c; what resp owns is released. */
static enum MHD_Result queue(struct MHD_Connection *c, struct http_response *resp)
{
	const char *body = resp->body ? resp->body : "";
	size_t len = resp->body_len ? resp->body_len : strlen(body);
	struct MHD_Response *r;
	if (resp->release) {
		/* the body stays where it is until MHD is done sending it */
		r = MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)body, resp->release,
		                                                           resp->release_cls);
		if (r) {
			/* MHD owns it now: its release runs when MHD is done with it */
			resp->release = NULL;
			resp->body = NULL;
		}
	} else {
		r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	}
	enum MHD_Result ret = MHD_NO;
	if (r) {
		MHD_add_response_header(r, "Content-Type",
		                        resp->content_type ? resp->content_type : "application/json");
		MHD_add_response_header(r, "Cache-Control", "no-store");
		for (size_t i = 0; i < resp->headers.n; i++) {
			char *name = resp->headers.v[i], *colon = strchr(name, ':');
			if (!colon)
				continue;
			*colon = '\0';
			MHD_add_response_header(r, name, colon + 1 + strspn(colon + 1, " \t"));
		}
		ret = MHD_queue_response(c, (unsigned)resp->code, r);
		MHD_destroy_response(r);
	}
	response_free(resp);
	return ret;
}

/* The path of a request target: the absolute form (http://host:port/path, RFC 9112 3.2.2, which a server
 * must accept) names the same resource as its path. */
static const char *origin_path(const char *url)
{
	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return url;
	const char *p = strchr(url, ':') + 3;
	p = strchr(p, '/');
	return p ? p : "/";
}

/* MHD's first look at a request: its target as sent (before MHD splits off the query and decodes the path)
 * becomes the request's state. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct pending *p = xcalloc(1, sizeof(*p));
	p->h = cls;
	p->c = c;
	p->target = xstrdup(origin_path(uri));
	return p;
}

static void unlink_waiting(struct pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else if (p->h->waiting == p)
		p->h->waiting = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->prev = p->next = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	struct http_server *h = cls;
	struct pending *p = *con_cls;
	if (!p)
		*con_cls = p = on_uri(h, url, c);
	if (p->deferred) {
		/* resumed by http_answer (or, should MHD call before that, suspended again) */
		if (!p->answered) {
			MHD_suspend_connection(c);
			return MHD_YES;
		}
		p->deferred = false;
		return queue(c, &p->answer);
	}
	if (!p->started) {
		/* the first call carries only the headers */
		p->started = true;
		/* a body announced too large is refused before it is read (and before any 100 Continue): a client
		 * that keeps sending would otherwise hold a connection */
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		int64_t n;
		if (cl && parse_int64(cl, &n) == 0 && n > HTTP_MAX_BODY) {
			static const char msg[] = "{\"error\":\"request body too large\"}\n";
			return reply(c, 413, "application/json", msg, sizeof(msg) - 1);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (p->body.len + *upload_data_size > HTTP_MAX_BODY)
			p->too_large = true;
		else
			strbuf_appendn(&p->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (p->too_large) {
		static const char msg[] = "{\"error\":\"request body too large\"}\n";
		return reply(c, 413, "application/json", msg, sizeof(msg) - 1);
	}
	struct http_request req = {
	    .method = method,
	    .path = origin_path(url),
	    .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
	    .body = p->body.buf ? p->body.buf : "",
	    .body_len = p->body.len,
	    .target = p->target,
	    .exchange = (struct http_exchange *)p,
	};
	struct http_response resp = {.code = 404, .content_type = "application/json"};
	h->handler(h->userdata, &req, &resp);
	if (p->deferred) {
		/* the answer comes later (http_answer); the connection waits without taking turns of the loop */
		response_free(&resp);
		p->next = h->waiting;
		if (h->waiting)
			h->waiting->prev = p;
		h->waiting = p;
		MHD_suspend_connection(c);
		return MHD_YES;
	}
	return queue(c, &resp);
}

const char *http_request_header(const struct http_request *req, const char *name)
{
	const struct pending *p = (const struct pending *)req->exchange;
	return p ? MHD_lookup_connection_value(p->c, MHD_HEADER_KIND, name) : NULL;
}

struct http_exchange *http_defer(const struct http_request *req)
{
	struct pending *p = (struct pending *)req->exchange;
	p->deferred = true;
	return req->exchange;
}

void http_answer(struct http_exchange *x, struct http_response *resp)
{
	struct pending *p = (struct pending *)x;
	if (!p->deferred || p->answered) {
		response_free(resp);
		return;
	}
	p->answer = *resp;
	p->answer_type = xstrdup(resp->content_type ? resp->content_type : "application/json");
	p->answer.content_type = p->answer_type;
	memset(resp, 0, sizeof(*resp));
	p->answered = true;
	unlink_waiting(p);
	MHD_resume_connection(p->c);
	/* MHD takes it up in its next run: at once */
	sd_event_source_set_time(p->h->timer, 0);
	sd_event_source_set_enabled(p->h->timer, SD_EVENT_ONESHOT);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct pending *p = *con_cls;
	if (p) {
		if (p->deferred && !p->answered)
			unlink_waiting(p);
		if (p->answered && p->deferred)
			response_free(&p->answer);
		strbuf_free(&p->body);
		free(p->answer_type);
		free(p->target);
		free(p);
		*con_cls = NULL;
	}
}

static int parse_address(const char *address, struct sockaddr_in *sa)
{
	const char *colon = strrchr(address, ':');
	if (!colon)
		return -EINVAL;
	int64_t port;
	if (parse_int64(colon + 1, &port) < 0 || port < 0 || port > 65535)
		return -EINVAL;
	char *host = xstrndup(address, (size_t)(colon - address));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	int ok = inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &sa->sin_addr);
	free(host);
	return ok == 1 ? 0 : -EINVAL;
}

int http_start(sd_event *event, const char *address, http_handler handler, void *userdata, struct http_server **ret)
{
	struct sockaddr_in sa;
	int r = parse_address(address, &sa);
	if (r < 0)
		return r;
	struct http_server *h = xcalloc(1, sizeof(*h));
	h->event = sd_event_ref(event);
	h->handler = handler;
	h->userdata = userdata;
	errno = 0;
	h->mhd =
	    MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, h,
	                     MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
	                     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
	                     (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
	                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
	                     on_completed, h, MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
	if (!h->mhd) {
		r = errno ? -errno : -EADDRINUSE;
		http_stop(h);
		return r;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	const union MHD_DaemonInfo *port = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = port ? port->port : ntohs(sa.sin_port);
	r = info ? sd_event_add_io(event, &h->io, info->epoll_fd, EPOLLIN, on_io, h) : -EIO;
	if (r >= 0)
		r = sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, h);
	if (r < 0) {
		http_stop(h);
		return r;
	}
	sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	rearm_timer(h);
	*ret = h;
	return 0;
}

int http_port(const struct http_server *h)
{
	return h ? h->port : 0;
}

int http_add_connection(struct http_server *h, int fd)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	memset(&peer, 0, sizeof(peer));
	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0)
		len = 0;
	errno = 0;
	if (MHD_add_connection(h->mhd, fd, (struct sockaddr *)&peer, len) != MHD_YES)
		return errno ? -errno : -EIO;
	/* the new connection may want a turn before its socket signals anything: MHD's timeout says when */
	rearm_timer(h);
	return 0;
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	/* MHD must not be stopped with a suspended connection: requests still deferred get a 503 */
	while (h->waiting) {
		struct http_response resp = {.code = 503,
		                             .content_type = "application/json",
		                             .body = xstrdup("{\"error\":\"shutting down\"}\n")};
		http_answer((struct http_exchange *)h->waiting, &resp);
	}
	/* one last turn: answers given just now (here, or by the caller before) go out if the sockets take them */
	if (h->mhd)
		MHD_run(h->mhd);
	sd_event_source_disable_unref(h->io);
	sd_event_source_disable_unref(h->timer);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	sd_event_unref(h->event);
	free(h);
}
