/* fuzz_promtext: what flinklet takes of Flink's reporter before serving it in /metrics (promtext_parse), on any
 * bytes, read in place (an exact copy, not NUL-terminated, so that a read past the end is caught). Whatever the
 * input: the callback sees exactly the samples counted, each inside the text, with a name outside flinklet's
 * namespace; each label the sample has is found again by name; a refusal says which line; and text accepted once
 * is accepted again with the same count (nothing depends on state left over). */
#include "fuzz.h"

#include "promtext.h"

struct seen {
	const char *text;
	size_t len;
	long n;
};

static void take(void *userdata, const struct promtext_sample *sm)
{
	struct seen *s = userdata;
	s->n++;
	FUZZ_ASSERT(sm->name >= s->text && sm->name + sm->name_len <= s->text + s->len && sm->name_len > 0);
	FUZZ_ASSERT(sm->labels >= s->text && sm->labels + sm->labels_len <= s->text + s->len);
	FUZZ_ASSERT(!(sm->name_len >= 9 && !memcmp(sm->name, "flinklet_", 9)));
	/* every label name of the sample is found again, its value cut to the buffer */
	const char *p = sm->labels, *end = sm->labels + sm->labels_len;
	while (p < end) {
		const char *eq = memchr(p, '=', (size_t)(end - p));
		FUZZ_ASSERT(eq);
		char name[64], value[8];
		size_t n = (size_t)(eq - p);
		if (n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			FUZZ_ASSERT(promtext_label(sm, name, value, sizeof(value)));
			FUZZ_ASSERT(strlen(value) < sizeof(value));
		}
		p = eq + 2; /* =" */
		while (p < end && *p != '"')
			p += *p == '\\' ? 2 : 1;
		p++;
		if (p < end && *p == ',')
			p++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	char *text = malloc(size ? size : 1);
	FUZZ_ASSERT(text);
	memcpy(text, data, size);
	struct seen s = {.text = text, .len = size};
	char *why = NULL;
	long r = promtext_parse(text, size, "flinklet_", take, &s, &why);
	if (r >= 0) {
		FUZZ_ASSERT(r == s.n && !why);
		FUZZ_ASSERT(size == 0 || text[size - 1] == '\n');
		struct seen again = {.text = text, .len = size};
		FUZZ_ASSERT(promtext_parse(text, size, "flinklet_", take, &again, NULL) == r && again.n == r);
	} else {
		FUZZ_ASSERT(r == -EBADMSG && why && !strncmp(why, "line ", 5));
		free(why);
	}
	free(text);
	return 0;
}
