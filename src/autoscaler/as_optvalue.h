/* as_optvalue: what as_options.c and as_optvalue.c share: the typed view of the option table (kinds, fields), a
 * set of key/value entries, and the parse and check of one entry's value by its field's kind. Internal to the
 * option parsing (see src/autoscaler/as_optvalue.c). */
#ifndef FLINKLET_AS_OPTVALUE_H
#define FLINKLET_AS_OPTVALUE_H

#include <stddef.h>

#include "as_internal.h"

enum kind {
	K_BOOL,
	K_DURATION,
	K_INT,
	K_DOUBLE,
	K_LIST,
	K_PERIODS,
	K_BUSY,
	K_ALIGN,
	K_LEGACY_ALIGN,
	K_MEMORY,
	K_PLUGINS,
};

/* The typed view of autoscaler_options, in the same order. */
struct field {
	const char *key;
	enum kind kind;
	size_t offset;
	double min, max; /* K_DOUBLE range (inclusive) */
	const char *deprecated;
	/* the other spellings in the order Flink's Configuration tries them after the key (fallback keys
	 * first, in their declared order, then deprecated keys); NULL: only the old-prefix fallback */
	const char *const *alternatives;
};

/* ---- a set of key/value entries (the spec's flinkConfiguration, maybe overlaid with plan's config) ---- */

struct kv {
	char *key;
	char *value;
	struct loc loc;
};
struct kvset {
	struct kv *e;
	size_t n;
};

/* The entry of key in s, or NULL. */
const struct kv *as_kv_find(const struct kvset *s, const char *key);

typedef void (*report_fn)(void *ud, const struct kv *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses one entry's value for field f into o (when o is non-NULL), checking it by the field's kind (types,
 * ranges, enum names, excluded periods, the operator's rules); def is f's row of the option table (an integer's
 * range), handed in by as_options.c, which owns the table, so that this file calls nothing of it; all is the whole
 * set, for the rules that look at another key. Returns 0, or -EINVAL after report. */
int as_option_value(const struct field *f, const struct option_def *def, const struct kv *e, const struct kvset *all,
                    struct as_options *o, report_fn report, void *ud);

#endif
