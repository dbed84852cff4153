/* webpage: the files of web/ built into the binary (scripts/embed.sh writes build/gen/web_assets.c from them at
 * build time), and the Content-Security-Policy of the status page: its inline <script> and <style> allowed by
 * their SHA-256 hashes and nothing else, no resource from anywhere but the page's own JSON endpoints. */
#ifndef FLINKLET_WEBPAGE_H
#define FLINKLET_WEBPAGE_H

#include <stddef.h>

struct web_asset {
	const char *name; /* the file's name under web/ */
	const unsigned char *data;
	size_t len; /* data[len] is a NUL */
};

/* Every file of web/, then {NULL, NULL, 0} (build/gen/web_assets.c). */
extern const struct web_asset web_assets[];

/* The file of that name, or NULL. */
const struct web_asset *web_asset_find(const char *name);

/* The Content-Security-Policy for an HTML page: default-src 'none', connect-src 'self' (its fetches of the JSON
 * endpoints), and each <script>...</script> and <style>...</style> element (written exactly so, without
 * attributes) allowed by the sha256 of its content. malloc'd. */
char *webpage_csp(const char *html, size_t len);

#endif
