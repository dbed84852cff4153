/* promtext_parse: the time promtext_parse takes on the event loop for one scrape of Flink's reporter at its largest,
 * for bench/promtext.py: a generated scrape of <families> gauge families (HELP, TYPE and a sample with the labels
 * Flink's reporter writes for an operator's metric), as close to flinklet's 4 MiB cap as the families allow,
 * parsed <runs> times; prints the families, bytes, samples, the fastest, median and slowest parse in milliseconds of
 * wall clock and the median and slowest in CPU time of the thread (what a shared machine's other work leaves out),
 * one "name value" a line.
 *
 *   promtext_parse [families [runs]]      (defaults: 10000 families, 9 runs) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "promtext.h"
#include "util.h"

#define CAP (4u << 20) /* FLINKMETRICS_MAX_BYTES */

static double now_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One family as Flink's reporter writes an operator's gauge, its label values padded by pad bytes. */
static void family(struct strbuf *b, long i, size_t pad)
{
	strbuf_appendf(b,
	               "# HELP flink_taskmanager_job_task_operator_metric%ld metric%ld (scope: "
	               "taskmanager_job_task_operator)\n"
	               "# TYPE flink_taskmanager_job_task_operator_metric%ld gauge\n",
	               i, i, i);
	{
		strbuf_appendf(
		    b,
		    "flink_taskmanager_job_task_operator_metric%ld{job_id=\"4f1c9d2e8a7b6c5d4e3f2a1b0c9d8e7f\","
		    "task_name=\"Source:_clicks____Map____Filter\",operator_name=\"Map_%ld",
		    i, i % 97);
		for (size_t k = 0; k < pad; k++)
			strbuf_appendn(b, "x", 1);
		strbuf_appendf(b, "\",subtask_index=\"0\",} %ld.5\n", i);
	}
}

int main(int argc, char **argv)
{
	long families = argc > 1 ? atol(argv[1]) : 10000, runs = argc > 2 ? atol(argv[2]) : 9;
	if (families <= 0 || runs <= 0) {
		fprintf(stderr, "usage: promtext_parse [families [runs]]\n");
		return 2;
	}
	/* the padding that brings the whole just under the cap */
	struct strbuf probe = {0};
	family(&probe, families - 1, 0);
	size_t pad = 0;
	if ((size_t)families * probe.len < CAP)
		pad = (CAP - (size_t)families * probe.len) / (size_t)families;
	strbuf_free(&probe);
	struct strbuf b = {0};
	for (long i = 0; i < families; i++)
		family(&b, i, pad);
	double *ms = xcalloc((size_t)runs, sizeof(*ms)), *cpu = xcalloc((size_t)runs, sizeof(*cpu));
	long samples = 0;
	for (long r = 0; r < runs; r++) {
		char *why = NULL;
		double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
		samples = promtext_parse(b.buf, b.len, "flinklet_", NULL, NULL, &why);
		ms[r] = now_ms(CLOCK_MONOTONIC) - t0;
		cpu[r] = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (samples < 0) {
			fprintf(stderr, "promtext_parse: refused: %s\n", why);
			return 1;
		}
	}
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_double);
	qsort(cpu, (size_t)runs, sizeof(*cpu), cmp_double);
	printf("families %ld\nbytes %zu\nsamples %ld\nruns %ld\nfastest_ms %.3f\nmedian_ms %.3f\nslowest_ms %.3f\n"
	       "cpu_median_ms %.3f\ncpu_slowest_ms %.3f\n",
	       families, b.len, samples, runs, ms[0], ms[runs / 2], ms[runs - 1], cpu[runs / 2], cpu[runs - 1]);
	free(ms);
	free(cpu);
	strbuf_free(&b);
	return 0;
}
