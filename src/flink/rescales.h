/* rescales: Flink's own rescale history (Flink 2.3+, FLIP-495/FLIP-487, the adaptive scheduler with
 * web.adaptive-scheduler.rescale-history.size > 0), from its REST answers to a bounded digest. Two answers feed it:
 *
 *   GET /jobs/:id/rescales/history               a JSON array, newest first, of abbreviated records: rescaleUuid,
 *                                                resourceRequirementsUuid, rescaleAttemptId, triggerCause,
 *                                                terminalState, terminatedReason (null while in progress),
 *                                                startTimestampInMillis, endTimestampInMillis; empty vertices
 *   GET /jobs/:id/rescales/details/:rescaleuuid  one record with its vertices: per job vertex id, jobVertexName,
 *                                                desiredParallelism, sufficientParallelism, preRescaleParallelism,
 *                                                postRescaleParallelism
 *
 * (the shapes of flink-runtime 2.3.0's JobRescalesHistory and JobRescaleDetails). An answer that is not that shape
 * is refused whole, with a message saying what is wrong in it: nothing of it is kept. What is kept is bounded: the
 * newest RESCALES_KEPT records, RESCALE_VERTICES_KEPT vertices each, names cut to RESCALE_NAME_MAX bytes. Pure: no
 * I/O (src/supervisor/sup_rescales.c asks Flink). */
#ifndef FLINKLET_RESCALES_H
#define FLINKLET_RESCALES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

#define RESCALES_KEPT 20
#define RESCALE_VERTICES_KEPT 64
#define RESCALE_NAME_MAX 256
/* a record whose details could not be had waits 2^n - 1 history rounds after its n-th failure, at most this many */
#define RESCALE_DETAILS_WAIT_MAX 31

struct rescale_vertex {
	char id[33];
	char *name;
	/* -1: not given (null), as Flink leaves postRescaleParallelism while a rescale is in progress */
	int desired, sufficient, pre, post;
};

struct rescale {
	char uuid[33];              /* rescaleUuid: 32 hex digits */
	char requirements_uuid[33]; /* resourceRequirementsUuid ("" when null) */
	int64_t attempt;            /* rescaleAttemptId (-1: null) */
	int64_t start_ms, end_ms;   /* epoch ms (-1: null; no end while in progress) */
	char trigger[48];           /* triggerCause: INITIAL_SCHEDULE, UPDATE_REQUIREMENT, ... ("" when null) */
	char terminal[48];          /* terminalState: COMPLETED, FAILED, IGNORED ("": in progress) */
	char reason[48];            /* terminatedReason: SUCCEEDED, ... ("" when null) */
	bool details;               /* the vertices below are from its details (a terminal record's never change) */
	unsigned details_tries;     /* failed requests for its details */
	unsigned details_wait;      /* history rounds to let pass before they are asked again */
	struct rescale_vertex *vertices;
	size_t n_vertices;
	bool vertices_cut; /* Flink listed more than RESCALE_VERTICES_KEPT */
};

struct rescales {
	struct rescale *v; /* newest first, as Flink lists them */
	size_t n;
	bool cut; /* Flink listed more than RESCALES_KEPT */
};

/* The answer of GET /jobs/:id/rescales/history into ret (emptied first). 0, or -EINVAL with *err saying what is
 * wrong (malloc'd) and ret left empty. */
int rescales_parse_history(const struct cJSON *body, struct rescales *ret, char **err);
/* The answer of GET .../rescales/details/<r->uuid> into r: its vertices, and its states as the details say them.
 * 0, or -EINVAL with *err (malloc'd) and r unchanged. */
int rescales_parse_details(const struct cJSON *body, struct rescale *r, char **err);
/* Moves the details of old's terminal records to the same records (by uuid) in fresh, and the failed tries and the
 * wait of every one. */
void rescales_keep_details(struct rescales *fresh, struct rescales *old);
/* A new history was taken: one round less to wait for each record whose details failed. */
void rescales_new_round(struct rescales *rs);
/* Asking for r's details failed (an error, or an answer refused): it waits 2^n - 1 rounds (at most
 * RESCALE_DETAILS_WAIT_MAX) after its n-th failure. */
void rescales_details_failed(struct rescale *r);
/* The next record whose details are still to be asked (terminal, without them, not waiting), oldest first; NULL:
 * none. */
struct rescale *rescales_wanting_details(struct rescales *rs);
struct rescale *rescales_find(struct rescales *rs, const char *uuid);
/* The records as a JSON array, in Flink's field names (rescaleUuid, ..., vertices: {id: {jobVertexName, ...}}), and
 * "detailsKnown" per record. */
struct cJSON *rescales_to_json(const struct rescales *rs);
void rescales_free(struct rescales *rs);

#endif
