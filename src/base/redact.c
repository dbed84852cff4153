/* redact: credentials, query strings and fragments out of URIs (see src/base/redact.h). */
#include "redact.h"

#include <ctype.h>
#include <string.h>

#include "util.h"

#define MASK "***"

static bool scheme_char(char c)
{
	return isalnum((unsigned char)c) || c == '+' || c == '-' || c == '.';
}

/* Where a URI that starts at p ends inside free text: at whitespace, a quote or an angle bracket, less
 * the punctuation that ends a sentence around it ("... https://h/x.jar: refused", "(https://h/x)"). */
static size_t uri_len_in_text(const char *p)
{
	size_t n = 0;
	while (p[n] && !isspace((unsigned char)p[n]) && !strchr("\"'<>`", p[n]))
		n++;
	while (n > 0 && strchr(".,;:)]}", p[n - 1]))
		n--;
	return n;
}

/* Appends the redacted form of the n characters of uri (which starts with scheme://) to b. */
static void redact_one(struct strbuf *b, const char *uri, size_t n)
{
	const char *sep = strstr(uri, "://");
	size_t start = (size_t)(sep - uri) + 3;
	/* the authority ends at the first '/', '?' or '#'; the rest (path, query, fragment) follows */
	size_t auth_end = start;
	while (auth_end < n && !strchr("/?#", uri[auth_end]))
		auth_end++;
	/* the path ends at the query or the fragment: both are dropped whole */
	size_t path_end = auth_end;
	while (path_end < n && uri[path_end] != '?' && uri[path_end] != '#')
		path_end++;
	size_t at = 0; /* one past the userinfo's '@', 0: none */
	for (size_t i = start; i < auth_end; i++)
		if (uri[i] == '@')
			at = i + 1;
	if (!at) {
		/* a password with an unescaped '/' (https://user:pa/ss@host/) splits the authority early: a ':' not
		 * followed by a port, then an '@' before the query, is userinfo all the same */
		const char *colon = memchr(uri + start, ':', auth_end - start);
		bool port = colon && colon + 1 < uri + auth_end;
		for (const char *c = colon ? colon + 1 : NULL; c && c < uri + auth_end; c++)
			port = port && isdigit((unsigned char)*c);
		if (colon && !port)
			for (size_t i = auth_end; i < path_end; i++)
				if (uri[i] == '@')
					at = i + 1;
		if (at) {
			auth_end = at;
			while (auth_end < n && !strchr("/?#", uri[auth_end]))
				auth_end++;
		}
	}
	strbuf_appendn(b, uri, start);
	if (at) {
		strbuf_append(b, MASK "@");
		strbuf_appendn(b, uri + at, path_end - at);
	} else {
		strbuf_appendn(b, uri + start, path_end - start);
	}
	if (path_end < n)
		strbuf_append(b, uri[path_end] == '?' ? "?" MASK : "#" MASK);
}

/* The start of the next scheme://... at or after p (NULL: none), with *len its length. */
static const char *next_uri(const char *p, size_t *len)
{
	for (const char *sep = strstr(p, "://"); sep; sep = strstr(sep + 3, "://")) {
		const char *s = sep;
		while (s > p && scheme_char(s[-1]))
			s--;
		while (s < sep && !isalpha((unsigned char)*s)) /* a scheme starts with a letter */
			s++;
		if (s == sep)
			continue;
		*len = uri_len_in_text(s);
		if (*len > (size_t)(sep - s) + 3)
			return s;
	}
	return NULL;
}

static bool has_secret(const char *uri, size_t n)
{
	struct strbuf b = {0};
	redact_one(&b, uri, n);
	bool changed = b.len != n || memcmp(b.buf, uri, n);
	strbuf_free(&b);
	return changed;
}

bool redact_needed(const char *text)
{
	size_t len;
	for (const char *p = text, *u; text && (u = next_uri(p, &len)); p = u + len)
		if (has_secret(u, len))
			return true;
	return false;
}

char *redact_text(const char *text)
{
	if (!text)
		return NULL;
	struct strbuf b = {0};
	const char *p = text, *u;
	size_t len;
	while ((u = next_uri(p, &len))) {
		strbuf_appendn(&b, p, (size_t)(u - p));
		redact_one(&b, u, len);
		p = u + len;
	}
	strbuf_append(&b, p);
	return strbuf_steal(&b);
}

char *redact_uri(const char *uri)
{
	if (!uri)
		return NULL;
	const char *sep = strstr(uri, "://");
	if (!sep || sep == uri)
		return xstrdup(uri);
	for (const char *c = uri; c < sep; c++)
		if (!scheme_char(*c))
			return xstrdup(uri);
	struct strbuf b = {0};
	redact_one(&b, uri, strlen(uri));
	return strbuf_steal(&b);
}
