/* shbuf: an immutable byte buffer shared by reference count (src/base/shbuf.h). */
#include "shbuf.h"

#include <stdlib.h>

#include "util.h"

struct shbuf {
	char *data;
	size_t len;
	unsigned refs;
};

struct shbuf *shbuf_take(char *data, size_t len)
{
	struct shbuf *b = xmalloc(sizeof(*b));
	*b = (struct shbuf){.data = data, .len = len, .refs = 1};
	return b;
}

struct shbuf *shbuf_ref(struct shbuf *b)
{
	if (b)
		b->refs++;
	return b;
}

void shbuf_unref(struct shbuf *b)
{
	if (!b || --b->refs > 0)
		return;
	free(b->data);
	free(b);
}

const char *shbuf_data(const struct shbuf *b)
{
	return b->data;
}

size_t shbuf_len(const struct shbuf *b)
{
	return b->len;
}

unsigned shbuf_refs(const struct shbuf *b)
{
	return b->refs;
}
