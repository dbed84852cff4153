/* http: libmicrohttpd on the sd-event loop (see src/http/http.h).
 *
 * Why flinklet accepts connections itself: in external-epoll mode libmicrohttpd takes its listening socket out
 * of its epoll set when it reaches its connection limit and puts it back only at the start of a later MHD_run.
 * When the connections that filled the limit all close inside one MHD_run (their clients hang up together, or
 * their timeouts expire together), nothing ever calls MHD_run again: no connection is left to wake the loop or
 * to have a timeout, and new connections wait in the backlog for good. Here the listening socket is a
 * level-triggered I/O source of the loop that never leaves it (but for a pause after EMFILE, ended by a
 * timer), and MHD never sees it (MHD_USE_NO_LISTEN_SOCKET): each accepted connection over a limit is closed
 * at once, the others go to MHD_add_connection. MHD's epoll fd (connections only) is another I/O source; its
 * timer is re-armed from MHD_get_timeout after every MHD_run and every added connection. The HTTP sources run
 * at a lower priority than the supervisor's own (signals, the JVM's exit, its timers): whatever clients do,
 * those are dispatched first. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <nettle/memops.h>

#include "log.h"
#include "util.h"

#define CONNECTION_MEMORY (64 * 1024)
#define LISTEN_BACKLOG 128
#define ACCEPT_BATCH 32                          /* accepts per turn of the loop; the source stays pending */
#define ACCEPT_PAUSE_USEC (250 * USEC_PER_MSEC)  /* after EMFILE and the like */
#define PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10) /* after the supervisor's own sources */
#define LOG_WINDOW_USEC (10 * USEC_PER_SEC)      /* at most LOG_BURST warnings per window */
#define LOG_BURST 5
#define TAIL_BLOCK (16 * 1024) /* the bytes of a response with a tail read per call (MHD's buffer of it) */

struct http_server {
	sd_event *event;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *listen, *resume;
	int listen_fd;
	http_handler handler;
	void *userdata;
	struct http_limits limits;
	int port;
	uint64_t refused;
	struct pending *waiting; /* deferred requests not answered yet (their connections suspended) */
	/* open connections per client address (at most one entry per open connection; n == 0: a free entry) */
	struct peer_count *peers;
	size_t npeers;
	/* the warning rate limit: a hostile client must not flood the log */
	usec_t log_window;
	unsigned log_count, log_suppressed;
};

/* A client address (IPv4, or IPv6 but for IPv4-mapped ones, which count as their IPv4 address) and how many
 * connections from it are open. */
struct peer_count {
	int family;
	unsigned char addr[16];
	unsigned n;
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
	bool in_handler; /* the handler is running: an answer given now is sent when it returns (no suspend, no resume)
	                  */
	struct http_response answer;
	char *answer_type; /* answer.content_type, owned: the answerer's string may be gone by the time it is sent */
	struct pending *prev, *next; /* in h->waiting while deferred and not answered */
};

static bool log_allowed(struct http_server *h)
{
	usec_t now = now_monotonic();
	if (now - h->log_window >= LOG_WINDOW_USEC) {
		if (h->log_suppressed)
			log_warn("http: %u more warnings were suppressed", h->log_suppressed);
		h->log_window = now;
		h->log_count = h->log_suppressed = 0;
	}
	if (h->log_count < LOG_BURST) {
		h->log_count++;
		return true;
	}
	if (h->log_suppressed++ == 0)
		log_warn("http: more warnings in the next %d s are only counted",
		         (int)(LOG_WINDOW_USEC / USEC_PER_SEC));
	return false;
}

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

static void run(struct http_server *h)
{
	if (MHD_run(h->mhd) != MHD_YES && log_allowed(h))
		log_warn("http: libmicrohttpd could not run its connections");
	rearm_timer(h);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	run(userdata);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	run(userdata);
	return 0;
}

/* libmicrohttpd's own messages (a broken request, a refused connection, a socket option it could not set) as
 * lines of the supervisor's log, instead of bare lines on stderr, rate limited. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *h = cls;
	if (!log_allowed(h))
		return;
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
	shbuf_unref(resp->tail);
	resp->body = NULL;
	resp->release = NULL;
	resp->tail = NULL;
}

/* A response's body and tail while MHD sends them: read from where they are, a block at a time, so that no
 * connection holds a copy of the tail. */
struct tailed {
	struct http_response parts; /* body (with its release) and tail; headers none */
	size_t body_len;
};

static ssize_t read_tailed(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct tailed *t = cls;
	size_t tail_len = shbuf_len(t->parts.tail), n = 0;
	if (pos >= t->body_len + tail_len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (pos < t->body_len) {
		n = t->body_len - (size_t)pos < max ? t->body_len - (size_t)pos : max;
		memcpy(buf, t->parts.body + pos, n);
	}
	if (n < max) {
		/* the body is all sent: the tail from where this block is */
		size_t off = (size_t)pos + n - t->body_len, m = max - n < tail_len - off ? max - n : tail_len - off;
		memcpy(buf + n, shbuf_data(t->parts.tail) + off, m);
		n += m;
	}
	return (ssize_t)n;
}

static void free_tailed(void *cls)
{
	struct tailed *t = cls;
	response_free(&t->parts);
	free(t);
}

/* The MHD response of resp's body (len bytes) followed by its tail; what it owns of resp is taken. */
static struct MHD_Response *tailed_response(struct http_response *resp, size_t len)
{
	struct tailed *t = xcalloc(1, sizeof(*t));
	t->parts.body = resp->body;
	t->parts.release = resp->release;
	t->parts.release_cls = resp->release_cls;
	t->parts.tail = resp->tail;
	t->body_len = resp->body ? len : 0;
	resp->body = NULL;
	resp->release = NULL;
	resp->tail = NULL;
	struct MHD_Response *r = MHD_create_response_from_callback(t->body_len + shbuf_len(t->parts.tail), TAIL_BLOCK,
	                                                           read_tailed, t, free_tailed);
	if (!r)
		free_tailed(t);
	return r;
}

/* Queues resp (its code, Content-Type, body and further headers) on c; what resp owns is released. */
static enum MHD_Result queue(struct MHD_Connection *c, struct http_response *resp)
{
	const char *body = resp->body ? resp->body : "";
	size_t len = resp->body_len ? resp->body_len : strlen(body);
	struct MHD_Response *r;
	if (resp->tail) {
		r = tailed_response(resp, len);
	} else if (resp->release) {
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
	LIST_REMOVE(p->h->waiting, p);
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
	p->in_handler = true;
	h->handler(h->userdata, &req, &resp);
	p->in_handler = false;
	if (p->deferred && p->answered) {
		/* deferred, then answered before the handler returned (the answer's condition already held): sent now;
		 * the connection was never suspended, so it must not be resumed */
		response_free(&resp);
		p->deferred = false;
		return queue(c, &p->answer);
	}
	if (p->deferred) {
		/* the answer comes later (http_answer); the connection waits without taking turns of the loop */
		response_free(&resp);
		LIST_PREPEND(h->waiting, p);
		MHD_suspend_connection(c);
		return MHD_YES;
	}
	return queue(c, &resp);
}

bool http_bearer_authorized(const char *token, const char *header)
{
	/* credentials = auth-scheme 1*SP token68, the scheme case-insensitive */
	if (!token || !header || strncasecmp(header, "Bearer", 6) || header[6] != ' ')
		return false;
	const char *got = header + 6 + strspn(header + 6, " ");
	size_t n = strlen(token);
	/* a different length fails after the same work */
	bool same_len = strlen(got) == n;
	const char *cmp = same_len ? got : token;
	return memeql_sec(cmp, token, n) && same_len;
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
	if (p->in_handler)
		return; /* on_request sends it when the handler returns */
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

/* The client address of sa, or false for one that is not an IP address (a local socket of the fuzzer). */
static bool peer_key(const struct sockaddr *sa, struct peer_count *key)
{
	memset(key, 0, sizeof(*key));
	if (sa && sa->sa_family == AF_INET) {
		key->family = AF_INET;
		memcpy(key->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key->family = AF_INET;
			memcpy(key->addr, a->s6_addr + 12, 4);
		} else {
			key->family = AF_INET6;
			memcpy(key->addr, a->s6_addr, 16);
		}
		return true;
	}
	return false;
}

/* The entry of key's address; with create, a free one when there is none (NULL when none is free). */
static struct peer_count *peer_find(struct http_server *h, const struct peer_count *key, bool create)
{
	struct peer_count *free_entry = NULL;
	for (size_t i = 0; i < h->npeers; i++) {
		struct peer_count *p = &h->peers[i];
		if (p->n && p->family == key->family && !memcmp(p->addr, key->addr, sizeof(p->addr)))
			return p;
		if (!p->n && !free_entry)
			free_entry = p;
	}
	if (!create || !free_entry)
		return NULL;
	*free_entry = *key;
	return free_entry;
}

/* MHD's notice of a connection it took (in MHD_add_connection) or freed (in MHD_run, or in the daemon info
 * query of open_connections): the count of its client address. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct peer_count key;
	if (!info || !peer_key(info->client_addr, &key))
		return;
	struct peer_count *p = peer_find(h, &key, code == MHD_CONNECTION_NOTIFY_STARTED);
	if (!p)
		return;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		p->n++;
	else if (p->n)
		p->n--;
}

static unsigned open_connections(struct http_server *h)
{
	/* MHD frees the connections closed since its last run first */
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return info ? info->num_connections : 0;
}

static void peer_string(const struct sockaddr *sa, socklen_t len, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
	if (len >= (socklen_t)sizeof(*v4) && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
	else if (len >= (socklen_t)sizeof(*v6) && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
	else
		snprintf(host, sizeof(host), "a local socket");
	snprintf(out, size, "%s", host);
}

/* Closes fd, over a limit: open connections (what: "in all" or "from that address") and the option. */
static int refuse(struct http_server *h, int fd, const struct sockaddr *peer, socklen_t len, unsigned open,
                  const char *what, const char *option)
{
	close(fd);
	h->refused++;
	if (log_allowed(h)) {
		char who[INET6_ADDRSTRLEN + 16];
		peer_string(peer, len, who, sizeof(who));
		log_warn("http: refused a connection from %s: %u connections %s are open, the limit (%s)", who, open,
		         what, option);
	}
	return -ENFILE;
}

/* Hands fd (connected, non-blocking) to MHD, or closes it when a limit is reached. Returns 0 or -errno. */
static int admit(struct http_server *h, int fd, const struct sockaddr *peer, socklen_t len)
{
	unsigned open = open_connections(h); /* first: MHD frees the closed ones, their addresses count down */
	if (open >= h->limits.max_connections)
		return refuse(h, fd, peer, len, open, "in all", "flinklet.http.max-connections");
	struct peer_count key, *p;
	if (h->limits.max_connections_per_ip && peer_key(peer, &key) && (p = peer_find(h, &key, false)) &&
	    p->n >= h->limits.max_connections_per_ip)
		return refuse(h, fd, peer, len, p->n, "from that address", "flinklet.http.max-connections-per-ip");
	errno = 0;
	if (MHD_add_connection(h->mhd, fd, peer, len) != MHD_YES) {
		/* MHD closed fd (no memory, or its own limits, which the checks above keep it from reaching) */
		int r = errno ? -errno : -EIO;
		h->refused++;
		return r;
	}
	/* a new connection may want a turn before its socket signals anything: MHD's timeout says when */
	rearm_timer(h);
	return 0;
}

static int on_resume(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct http_server *h = userdata;
	sd_event_source_set_enabled(h->listen, SD_EVENT_ON);
	return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct http_server *h = userdata;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		int c = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c >= 0) {
			admit(h, c, (struct sockaddr *)&peer, len);
			continue;
		}
		switch (errno) {
		case EAGAIN:
#if EWOULDBLOCK != EAGAIN
		case EWOULDBLOCK:
#endif
			return 0;
		case EINTR:
		case ECONNABORTED:
		case EPROTO:
		case ENETDOWN:
		case ENOPROTOOPT:
		case EHOSTDOWN:
		case ENONET:
		case EHOSTUNREACH:
		case EOPNOTSUPP:
		case ENETUNREACH:
		case EPERM:
			/* this one connection failed (accept(2) reports some network errors of the new socket) */
			continue;
		default:
			/* out of descriptors or memory: the socket would stay readable and the loop spin; accepting
			 * pauses a moment, the backlog keeps the clients meanwhile */
			if (log_allowed(h))
				log_warn("http: unable to accept a connection (%s); pausing for %d ms", strerror(errno),
				         (int)(ACCEPT_PAUSE_USEC / USEC_PER_MSEC));
			sd_event_source_set_enabled(h->listen, SD_EVENT_OFF);
			sd_event_source_set_time(h->resume, now_monotonic() + ACCEPT_PAUSE_USEC);
			sd_event_source_set_enabled(h->resume, SD_EVENT_ONESHOT);
			return 0;
		}
	}
	return 0;
}

int http_parse_address(const char *address, struct sockaddr_storage *sa, socklen_t *len)
{
	const char *colon = address ? strrchr(address, ':') : NULL;
	if (!colon)
		return -EINVAL;
	const char *port_text = colon + 1;
	size_t digits = strspn(port_text, "0123456789");
	int64_t port;
	if (digits == 0 || digits > 5 || port_text[digits] || parse_int64(port_text, &port) < 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	size_t hlen = (size_t)(colon - address);
	if (hlen >= 2 && address[0] == '[' && address[hlen - 1] == ']') {
		char host[INET6_ADDRSTRLEN + 1];
		if (hlen - 2 >= sizeof(host))
			return -EINVAL;
		memcpy(host, address + 1, hlen - 2);
		host[hlen - 2] = '\0';
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
		if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1)
			return -EINVAL;
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*v6);
		return 0;
	}
	char host[INET_ADDRSTRLEN + 1];
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, address, hlen);
	host[hlen] = '\0';
	struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
	if (inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &v4->sin_addr) != 1)
		return -EINVAL;
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	*len = sizeof(*v4);
	return 0;
}

/* A listening socket on sa. SO_REUSEADDR only lets a restart bind while connections of the previous process
 * are in TIME_WAIT; on Linux it never lets two sockets listen on one address (SO_REUSEPORT would: flinklet never
 * sets it, so a second process on the same address fails with EADDRINUSE instead of taking a share of the
 * connections). IPv6's any address also takes IPv4 where the system allows it (IPV6_V6ONLY off). */
static int listen_on(const struct sockaddr_storage *sa, socklen_t len, int *ret_fd)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int on = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		log_warn("http: unable to set SO_REUSEADDR: %s", strerror(errno));
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
		int v6only = !IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0 && !v6only)
			log_warn("http: IPv6 only: the system does not let [::] take IPv4 too (%s)", strerror(errno));
	}
	if (bind(fd, (const struct sockaddr *)sa, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int bound_port(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return 0;
	if (sa.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
	return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

int http_start(sd_event *event, const char *address, const struct http_limits *limits, http_handler handler,
               void *userdata, struct http_server **ret)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	int r = http_parse_address(address, &sa, &salen);
	if (r < 0)
		return r;
	struct http_server *h = xcalloc(1, sizeof(*h));
	h->event = sd_event_ref(event);
	h->handler = handler;
	h->userdata = userdata;
	h->listen_fd = -1;
	h->limits = *limits;
	if (h->limits.max_connections < 1)
		h->limits.max_connections = 1;
	h->npeers = h->limits.max_connections;
	h->peers = xcalloc(h->npeers, sizeof(*h->peers));
	if (h->limits.timeout_s < 1)
		h->limits.timeout_s = 1;
	r = listen_on(&sa, salen, &h->listen_fd);
	if (r < 0) {
		http_stop(h);
		return r;
	}
	h->port = bound_port(h->listen_fd);
	errno = 0;
	h->mhd = MHD_start_daemon(
	    MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
	    on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
	    MHD_OPTION_CONNECTION_LIMIT, h->limits.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    h->limits.max_connections_per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
	    MHD_OPTION_CONNECTION_TIMEOUT, h->limits.timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->mhd) {
		r = errno ? -errno : -EIO;
		http_stop(h);
		return r;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	r = info ? sd_event_add_io(event, &h->io, info->epoll_fd, EPOLLIN, on_io, h) : -EIO;
	if (r >= 0)
		r = sd_event_add_io(event, &h->listen, h->listen_fd, EPOLLIN, on_listen, h);
	/* accuracy 1 ms: MHD's "run again now" must not wait for sd-event's default 250 ms slack */
	if (r >= 0)
		r = sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_timer, h);
	if (r >= 0)
		r = sd_event_add_time(event, &h->resume, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_resume, h);
	sd_event_source *sources[] = {h->io, h->listen, h->timer, h->resume};
	for (size_t i = 0; r >= 0 && i < sizeof(sources) / sizeof(sources[0]); i++)
		r = sd_event_source_set_priority(sources[i], PRIORITY);
	if (r < 0) {
		http_stop(h);
		return r;
	}
	sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	sd_event_source_set_enabled(h->resume, SD_EVENT_OFF);
	rearm_timer(h);
	*ret = h;
	return 0;
}

int http_port(const struct http_server *h)
{
	return h ? h->port : 0;
}

void http_stats(struct http_server *h, unsigned *open, uint64_t *refused)
{
	*open = h ? open_connections(h) : 0;
	*refused = h ? h->refused : 0;
}

int http_add_connection(struct http_server *h, int fd)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	memset(&peer, 0, sizeof(peer));
	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0 || len < (socklen_t)sizeof(sa_family_t))
		len = sizeof(sa_family_t); /* AF_UNSPEC: MHD reads the family of what it is given */
	return admit(h, fd, (struct sockaddr *)&peer, len);
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
	sd_event_source_disable_unref(h->listen);
	sd_event_source_disable_unref(h->timer);
	sd_event_source_disable_unref(h->resume);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	sd_event_unref(h->event);
	free(h->peers);
	free(h);
}
