/* webpage: the files of web/ built into the binary, and the Content-Security-Policy of the status page, which
 * allows its inline script and style by their hashes (src/http/webpage.h). */
#include <string.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "util.h"
#include "webpage.h"

const struct web_asset *web_asset_find(const char *name)
{
	for (const struct web_asset *a = web_assets; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

/* 'sha256-<base64>' of each element's content, space-separated, into b. */
static void hashes(struct strbuf *b, const char *html, size_t len, const char *open, const char *close)
{
	size_t open_len = strlen(open), close_len = strlen(close);
	const char *p = html, *end = html + len;
	while ((size_t)(end - p) >= open_len) {
		const char *o = memmem(p, (size_t)(end - p), open, open_len);
		if (!o)
			break;
		const char *body = o + open_len;
		const char *c = memmem(body, (size_t)(end - body), close, close_len);
		if (!c)
			break;
		uint8_t md[SHA256_DIGEST_SIZE];
		char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
		struct sha256_ctx ctx;
		sha256_init(&ctx);
		sha256_update(&ctx, (size_t)(c - body), (const uint8_t *)body);
		sha256_digest(&ctx, sizeof(md), md);
		base64_encode_raw(b64, sizeof(md), md);
		b64[sizeof(b64) - 1] = '\0';
		strbuf_appendf(b, " 'sha256-%s'", b64);
		p = c + close_len;
	}
}

char *webpage_csp(const char *html, size_t len)
{
	struct strbuf b = {0};
	strbuf_append(&b, "default-src 'none'; connect-src 'self'; img-src 'self'; script-src");
	size_t at = b.len;
	hashes(&b, html, len, "<script>", "</script>");
	if (b.len == at)
		strbuf_append(&b, " 'none'");
	strbuf_append(&b, "; style-src");
	at = b.len;
	hashes(&b, html, len, "<style>", "</style>");
	if (b.len == at)
		strbuf_append(&b, " 'none'");
	strbuf_append(&b, "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
	return strbuf_steal(&b);
}
