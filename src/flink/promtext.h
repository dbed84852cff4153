/* promtext: pure: Prometheus' text exposition (format 0.0.4) as Flink's Prometheus reporter writes it, read line by
 * line before flinklet serves it beside its own families on one /metrics: each line checked (a comment, HELP, TYPE
 * or a sample with a well-formed name, labels and value), no family declared twice or split in two, no name in
 * flinklet's own namespace; the samples handed to a callback with their labels. No I/O. */
#ifndef FLINKLET_PROMTEXT_H
#define FLINKLET_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* One sample: name and labels (the text between the braces, escapes kept; "" without) point into the text, with
 * their lengths; value is the number (NaN and the infinities included). */
struct promtext_sample {
	const char *name;
	size_t name_len;
	const char *labels;
	size_t labels_len;
	double value;
};
typedef void (*promtext_sample_fn)(void *userdata, const struct promtext_sample *sm);

/* Checks text (len bytes, its last line ended by '\n') and calls fn (may be NULL) for each sample, in order.
 * reserved: a name prefix no family or sample may have (NULL: none). Returns the number of samples, or -EBADMSG
 * with *why (malloc'd) naming the line and what is wrong with it (or a text over 4 GiB); fn may have been called for
 * the lines before. Time linear in len, whatever the number of families. */
long promtext_parse(const char *text, size_t len, const char *reserved, promtext_sample_fn fn, void *userdata,
                    char **why);
/* Whether the sample's name is exactly name. */
bool promtext_is(const struct promtext_sample *sm, const char *name);
/* The value of label name in the sample's labels, unescaped, into buf (size bytes, cut to fit and NUL-ended).
 * Returns false when the sample has no such label. */
bool promtext_label(const struct promtext_sample *sm, const char *name, char *buf, size_t size);

#endif
