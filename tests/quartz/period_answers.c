/* period_answers: flinklet's answers for the autoscaler's excluded periods (src/autoscaler/as_periods.c), in the format of
 * the Quartz harness (PeriodAnswers.java, "answers" mode), for tests/quartz/parity.py. A test-only program:
 * built by `make quartz-parity` into build/quartz/, never installed.
 *
 * Input (stdin), one case a line: the expression, the unit separator 0x1F, instants in epoch milliseconds joined
 * by ",". Output, one line a case: "invalid", or "valid" TAB one '0' or '1' an instant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		char *sep = strchr(line, '\x1f');
		char *instants = NULL;
		if (sep) {
			*sep = '\0';
			instants = sep + 1;
		}
		char *err = NULL;
		if (as_period_check(line, &err) < 0) {
			free(err);
			fputs("invalid\n", stdout);
			continue;
		}
		fputs("valid\t", stdout);
		for (char *p = instants; p && *p;) {
			char *end;
			long long ms = strtoll(p, &end, 10);
			putchar(as_period_matches(line, (int64_t)ms) ? '1' : '0');
			p = *end == ',' ? end + 1 : end + strlen(end);
		}
		putchar('\n');
	}
	free(line);
	return ferror(stdout) ? 1 : 0;
}
