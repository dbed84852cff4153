/* flinkproxy: Flink's web UI and REST API under /flink/ (see src/supervisor/flinkproxy.h). */
#include "flinkproxy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "log.h"
#include "util.h"

/* The bytes held for answers: shared by the proxy and the answers the HTTP server still sends after the
 * proxy is gone (the server releases them last, in http_stop). */
struct budget {
	size_t held;
	unsigned refs;
};

struct flinkproxy {
	struct rest *rest;
	char *flink_address;
	struct budget *budget;
	struct fwd *fwds; /* requests waiting for Flink */
	unsigned n_fwds;
};

/* One forwarded request. */
struct fwd {
	struct flinkproxy *p;
	struct fwd *prev, *next;
	struct http_exchange *x;
	struct rest_req *rq;
	struct rest_stream st; /* what rest_stream reads until the end */
	char *method, *target;
	struct strv req_headers;
	/* the answer as it arrives */
	char *content_type;
	struct strv headers, connection_tokens;
	struct strbuf body;
	bool too_large, over_budget; /* the answer is over FLINKPROXY_MAX_RESPONSE; all are over _MAX_HELD */
};

/* An answer handed to the HTTP server: released when it has been sent. */
struct held {
	struct budget *b;
	size_t n;
	char *buf;
};

static void budget_unref(struct budget *b)
{
	if (b && --b->refs == 0)
		free(b);
}

static void release_held(void *cls)
{
	struct held *h = cls;
	h->b->held -= h->n;
	budget_unref(h->b);
	free(h->buf);
	free(h);
}

static char *json_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *json_error(const char *fmt, ...)
{
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "error", b.buf ? b.buf : "");
	strbuf_free(&b);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *out = xasprintf("%s\n", text);
	free(text);
	return out;
}

static void error_response(struct http_response *resp, int code, char *body)
{
	resp->code = code;
	resp->content_type = "application/json";
	resp->body = body;
	if (code == 503)
		strv_push(&resp->headers, "Retry-After: 1");
}

struct flinkproxy *flinkproxy_new(struct rest *rest, const char *flink_address)
{
	struct flinkproxy *p = xcalloc(1, sizeof(*p));
	p->rest = rest;
	p->flink_address = xstrdup(flink_address);
	p->budget = xcalloc(1, sizeof(*p->budget));
	p->budget->refs = 1;
	return p;
}

static void fwd_free(struct fwd *f)
{
	struct flinkproxy *p = f->p;
	LIST_REMOVE(p->fwds, f);
	p->n_fwds--;
	p->budget->held -= f->body.len;
	strbuf_free(&f->body);
	strv_free(&f->req_headers);
	strv_free(&f->headers);
	strv_free(&f->connection_tokens);
	free(f->content_type);
	free(f->method);
	free(f->target);
	free(f);
}

void flinkproxy_free(struct flinkproxy *p)
{
	if (!p)
		return;
	while (p->fwds) {
		struct fwd *f = p->fwds;
		rest_cancel(p->rest, f->rq);
		struct http_response resp = {0};
		error_response(&resp, 503, json_error("flinklet is shutting down"));
		http_answer(f->x, &resp);
		fwd_free(f);
	}
	budget_unref(p->budget);
	free(p->flink_address);
	free(p);
}

bool flinkproxy_owns(const char *path)
{
	size_t n = strlen(FLINKPROXY_PREFIX);
	return path && !strncmp(path, FLINKPROXY_PREFIX, n) && (path[n] == '\0' || path[n] == '/');
}

/* Headers of Flink's answer that do not go on: hop-by-hop ones (RFC 9110 7.6.1), what the server sets itself
 * (length, date, caching: flinklet's answers are not cached), and CORS (flinklet's endpoint allows no other
 * origin to read it, whatever Flink's web.access-control-allow-origin says). */
static bool dropped_header(const char *name)
{
	static const char *const DROP[] = {
	    "Connection",
	    "Keep-Alive",
	    "Proxy-Connection",
	    "Proxy-Authenticate",
	    "Proxy-Authorization",
	    "TE",
	    "Trailer",
	    "Trailers",
	    "Transfer-Encoding",
	    "Upgrade",
	    "Content-Length",
	    "Date",
	    "Server",
	    "Cache-Control",
	    "Expires",
	    "Pragma",
	    "Set-Cookie",
	    "Content-Type",
	};
	for (size_t i = 0; i < sizeof(DROP) / sizeof(DROP[0]); i++)
		if (!strcasecmp(name, DROP[i]))
			return true;
	return !strncasecmp(name, "Access-Control-", 15);
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			return false;
	return true;
}

static bool on_header(void *userdata, const char *line, size_t len)
{
	struct fwd *f = userdata;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* a status line: a new block of headers (after a 1xx) */
		strv_free(&f->headers);
		strv_free(&f->connection_tokens);
		free(f->content_type);
		f->content_type = NULL;
		return true;
	}
	if (!len)
		return true;
	const char *colon = memchr(line, ':', len);
	if (!colon || colon == line || line[0] == ' ' || line[0] == '\t' || !printable(line, len))
		return true; /* no name, an obsolete folded line, control characters: not passed on */
	char *name = xstrndup(line, (size_t)(colon - line));
	const char *v = colon + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	char *value = xstrndup(v, (size_t)(end - v));
	bool ok = true;
	if (!strcasecmp(name, "Content-Type")) {
		free(f->content_type);
		f->content_type = xstrdup(value);
	} else if (!strcasecmp(name, "Content-Length")) {
		int64_t n;
		if (parse_int64(value, &n) == 0 && n > (int64_t)FLINKPROXY_MAX_RESPONSE) {
			f->too_large = true;
			ok = false;
		}
	} else if (!strcasecmp(name, "Connection")) {
		/* the headers it names are hop-by-hop too */
		for (char *save = NULL, *t = strtok_r(value, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
			strv_push(&f->connection_tokens, t);
	}
	if (ok && !dropped_header(name)) {
		if (!strcasecmp(name, "Location") && value[0] == '/' && value[1] != '/')
			strv_push_take(&f->headers, xasprintf("%s: %s%s", name, FLINKPROXY_PREFIX, value));
		else
			strv_push_take(&f->headers, xasprintf("%s: %s", name, value));
	}
	free(name);
	free(value);
	return ok;
}

static bool on_data(void *userdata, const char *data, size_t len)
{
	struct fwd *f = userdata;
	struct budget *b = f->p->budget;
	if (f->body.len + len > FLINKPROXY_MAX_RESPONSE) {
		f->too_large = true;
		return false;
	}
	if (b->held + len > FLINKPROXY_MAX_HELD) {
		f->over_budget = true;
		return false;
	}
	strbuf_appendn(&f->body, data, len);
	b->held += len;
	return true;
}

/* Whether the answer's header line "Name: value" is one the Connection header named. */
static bool named_by_connection(const struct fwd *f, const char *line)
{
	size_t n = strcspn(line, ":");
	for (size_t i = 0; i < f->connection_tokens.n; i++)
		if (strlen(f->connection_tokens.v[i]) == n && !strncasecmp(line, f->connection_tokens.v[i], n))
			return true;
	return false;
}

static void on_done(void *userdata, long http_status, const char *error)
{
	struct fwd *f = userdata;
	struct flinkproxy *p = f->p;
	struct http_response resp = {0};
	if (f->too_large) {
		error_response(&resp, 502,
		               json_error("Flink's answer to %s %s is larger than %u MiB", f->method, f->target,
		                          FLINKPROXY_MAX_RESPONSE >> 20));
	} else if (f->over_budget) {
		error_response(&resp, 503, json_error("too many answers of Flink's are being sent; try again"));
	} else if (error || http_status < 200 || http_status > 599) {
		bool timeout = error && (strstr(error, "timed out") || strstr(error, "Timeout"));
		error_response(&resp, timeout ? 504 : 502,
		               json_error("Flink's REST API on %s did not answer %s %s: %s", p->flink_address,
		                          f->method, f->target, error ? error : "no valid status"));
	} else {
		resp.code = (int)http_status;
		resp.content_type = f->content_type ? f->content_type : "application/octet-stream";
		for (size_t i = 0; i < f->headers.n; i++)
			if (!named_by_connection(f, f->headers.v[i]))
				strv_push(&resp.headers, f->headers.v[i]);
		/* the body goes to the server as it is; its bytes stay counted until the server has sent them */
		struct held *h = xcalloc(1, sizeof(*h));
		h->b = p->budget;
		h->b->refs++;
		h->n = f->body.len;
		resp.body_len = f->body.len;
		h->buf = resp.body = strbuf_steal(&f->body);
		resp.release = release_held;
		resp.release_cls = h;
	}
	http_answer(f->x, &resp);
	fwd_free(f);
}

/* Whether target (as sent) can go on the wire to Flink: visible ASCII only. */
static bool valid_target(const char *t)
{
	for (; *t; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f || *t == '#')
			return false;
	return true;
}

void flinkproxy_handle(struct flinkproxy *p, const struct http_request *req, struct http_response *resp,
                       const char *down)
{
	const char *target = req->target ? req->target : req->path;
	size_t plen = strlen(FLINKPROXY_PREFIX);
	resp->content_type = "application/json";
	if (!strncmp(target, FLINKPROXY_PREFIX, plen) && (target[plen] == '\0' || target[plen] == '?')) {
		/* the UI's relative URLs need the trailing slash */
		resp->code = 301;
		strv_push_take(&resp->headers, xasprintf("Location: %s/%s", FLINKPROXY_PREFIX, target + plen));
		resp->body = json_error("moved to %s/", FLINKPROXY_PREFIX);
		return;
	}
	if (strncmp(target, FLINKPROXY_PREFIX "/", plen + 1)) {
		/* the decoded path is below /flink/, the target as sent is not (/%66link/...): not forwarded */
		error_response(resp, 404, json_error("not found"));
		return;
	}
	if (!valid_target(target)) {
		error_response(resp, 400, json_error("the request target has characters that cannot go on to Flink"));
		return;
	}
	if (down || !p) {
		error_response(resp, 503, json_error("%s", down ? down : "Flink's REST API is not reachable"));
		return;
	}
	if (p->n_fwds >= FLINKPROXY_MAX_REQUESTS || p->budget->held >= FLINKPROXY_MAX_HELD) {
		error_response(resp, 503, json_error("too many requests to Flink at once; try again"));
		return;
	}
	struct fwd *f = xcalloc(1, sizeof(*f));
	f->p = p;
	f->method = xstrdup(req->method);
	f->target = xstrdup(target + plen);
	/* what the client accepts; the body's type; nothing else of the client's (no Authorization: the token
	 * is flinklet's, not Flink's; no cookies) */
	const char *accept = http_request_header(req, "Accept");
	strv_push_take(&f->req_headers,
	               xasprintf("Accept: %s", accept && printable(accept, strlen(accept)) ? accept : "*/*"));
	const char *type = http_request_header(req, "Content-Type");
	bool get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
	if (!get && type && printable(type, strlen(type)))
		strv_push_take(&f->req_headers, xasprintf("Content-Type: %s", type));
	else
		strv_push(&f->req_headers, "Content-Type:");
	f->st = (struct rest_stream){
	    /* HEAD goes to Flink as GET: the server then says the body's true length and sends no body */
	    .method = get ? "GET" : f->method,
	    .target = f->target,
	    .headers = (const char *const *)f->req_headers.v,
	    .body = get ? NULL : req->body,
	    .body_len = get ? 0 : req->body_len,
	    .timeout = FLINKPROXY_TIMEOUT,
	    .on_header = on_header,
	    .on_data = on_data,
	    .on_done = on_done,
	};
	LIST_PREPEND(p->fwds, f);
	p->n_fwds++;
	f->rq = rest_stream(p->rest, &f->st, f);
	if (!f->rq) {
		fwd_free(f);
		error_response(resp, 502, json_error("unable to send the request to Flink"));
		return;
	}
	f->x = http_defer(req);
}
