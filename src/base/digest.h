/* digest: sha256 as lowercase hex (nettle). */
#ifndef FLINKLET_DIGEST_H
#define FLINKLET_DIGEST_H

#include <stddef.h>

/* The sha256 of len bytes, as 64 lowercase hex characters. */
void sha256_hex(const void *data, size_t len, char out[65]);
/* The sha256 of a file, as 64 lowercase hex characters. Returns 0 or -errno. */
int sha256_file(const char *path, char out[65]);

#endif
