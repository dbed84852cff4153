/* export: `flinklet export --to flinkdeployment`, the promotion of a job from one pod to a distributed Flink
 * cluster run by the Flink Kubernetes Operator: a FlinkDeployment with the same job and Flink configuration
 * (without flinklet's own keys and the settings it derives for its volume), the resources split into a
 * JobManager and TaskManagers, and initialSavepointPath set to the newest savepoint on the volume. It is meant
 * to pass the operator's schema and admission rules (docs/deployment.md); what it cannot fill in is a note.
 * Two operator versions are spoken: 1.16 (the default), whose JobManager and TaskManager take Kubernetes'
 * `resources` (requests and limits, FLINK-33548), and 1.15, where they take the custom `resource: {cpu, memory}`. */
#ifndef FLINKLET_EXPORT_H
#define FLINKLET_EXPORT_H

#include "config.h"

struct cJSON;

/* The operator the document is for: what its CRD and validator accept. */
enum export_operator {
	EXPORT_OPERATOR_1_16 = 0, /* the default */
	EXPORT_OPERATOR_1_15,
};

/* "1.16" or "1.15", with or without a patch number ("1.16.1"); -EINVAL for any other. */
int export_operator_parse(const char *text, enum export_operator *ret);
const char *export_operator_name(enum export_operator op);

struct export_args {
	const char *savepoint;                 /* the savepoint to start from (file: URI or path); NULL: none */
	const char *savepoint_base;            /* rewrite the savepoint's directory to this URI (where it was copied) */
	const char *storage_base;              /* the cluster's shared storage: URI/checkpoints, URI/savepoints (and the
	                                        * savepoint's new directory unless savepoint_base says otherwise); NULL: none */
	const char *flink_version;             /* "2.2.1" when known, for image and flinkVersion defaults */
	const char *flink_version_from;        /* where flink_version was read when not from the jars (status.json) */
	enum export_operator operator_version; /* the operator the document is for (zero: 1.16) */
	struct strv *notes; /* out (may be NULL): what was left out, what the user must fill in or check */
};

/* Builds the FlinkDeployment. Pure: no file is read. */
struct cJSON *export_flinkdeployment(const struct spec *s, const struct export_args *a);

/* A name the operator accepts ([a-z]([-a-z0-9]{0,43}[a-z0-9])?) made from flinklet's metadata.name. */
char *export_k8s_name(const char *name);

#endif
