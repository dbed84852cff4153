/* shbuf: an immutable byte buffer shared by reference count: one copy of a large text (the last scrape of Flink's
 * metrics) read by many at once (every /metrics response still being sent), freed with its last reference. For
 * one thread (the event loop): the count is not atomic. */
#ifndef FLINKLET_SHBUF_H
#define FLINKLET_SHBUF_H

#include <stddef.h>

struct shbuf;

/* A buffer of the len bytes at data (malloc'd: taken, freed with the last reference), with one reference. */
struct shbuf *shbuf_take(char *data, size_t len);
/* One more reference to b (returned); NULL stays NULL. */
struct shbuf *shbuf_ref(struct shbuf *b);
/* Drops one reference (NULL: nothing); the last frees the buffer. */
void shbuf_unref(struct shbuf *b);
const char *shbuf_data(const struct shbuf *b);
size_t shbuf_len(const struct shbuf *b);
/* The references held now (at least 1). */
unsigned shbuf_refs(const struct shbuf *b);

#endif
