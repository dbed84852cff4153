/* digest: sha256 as lowercase hex, of bytes or of a file (nettle), for the jar cache, the class-data-sharing key
 * and the scratch directory's name (see src/base/digest.h). */
#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <nettle/sha2.h>

static void hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char out[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(d), d);
	hex(d, sizeof(d), out);
}

int sha256_file(const char *path, char out[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	int r = 0;
	unsigned char buf[65536];
	while (r == 0) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		sha256_update(&ctx, (size_t)n, buf);
	}
	if (r == 0) {
		uint8_t d[SHA256_DIGEST_SIZE];
		sha256_digest(&ctx, sizeof(d), d);
		hex(d, sizeof(d), out);
	}
	close(fd);
	return r;
}
