/* artifacts: the job's jar from spec.job.jarURI, and its SQL script from spec.job.sqlScript (the same schemes, options
 * and cache; flinklet.job.sql-script.sha256 in place of flinklet.job.jar.sha256, <state dir>/artifacts/...sql).
 * local:// and file:// (and bare absolute paths) are used where they are; https:// (TLS verified), s3:// (AWS SigV4
 * with the usual AWS_* environment variables) and http:// (only when listed) are downloaded, when
 * flinklet.artifacts.allowed-schemes lists their scheme (the URL, the S3 endpoint and every redirect keep to the
 * protocols it allows), into <state dir>/artifacts/, named by their sha256 when flinklet.job.jar.sha256 is given (a
 * download must match it) and by the URI's hash otherwise, so a restart needs no network. This module plans and
 * verifies; the download itself runs on the supervisor's event loop (rest_download), the checks of a cached or
 * downloaded jar (its sha256) and the move into the cache on its worker thread (src/supervisor/sup_launch.c): both
 * touch nothing but the file system and their arguments. */
#ifndef FLINKLET_ARTIFACTS_H
#define FLINKLET_ARTIFACTS_H

#include <stdbool.h>

#include "config.h"
#include "schemes.h"
#include "digest.h"
#include "util.h"

/* What an artifact is the job's: its jar (spec.job.jarURI) or its SQL script (spec.job.sqlScript). */
enum artifact_kind { ARTIFACT_JAR, ARTIFACT_SQL };

struct artifact {
	enum artifact_kind kind;
	const char *field; /* "spec.job.jarURI", "spec.job.sqlScript" */
	const char *what;  /* "jar", "SQL script": for messages */
	const char
	    *sha_key;     /* the option of its checksum: "flinklet.job.jar.sha256", "flinklet.job.sql-script.sha256" */
	char *uri;        /* as the spec has it (with its credentials: redact_uri before it is shown) */
	char *local_path; /* where the jar is (or will be, once downloaded) */
	bool remote;      /* needs a download into local_path */
	char *url;        /* http(s) URL to fetch */
	char *protocols;  /* the protocols it and its redirects may use (libcurl's list: "https", "http,https") */
	char *sigv4;      /* "aws:amz:<region>:s3" or NULL */
	char *userpwd;    /* AWS credentials with sigv4 */
	struct strv headers;
	const char *sha256; /* expected, lowercase hex; NULL: not checked */
};

/* Plans where the jar comes from. Returns 0, or -EINVAL with a message in *err (a is then empty). */
int artifact_plan(const struct spec *s, const char *state_dir, struct artifact *a, char **err);
/* Plans where the SQL script of spec.job.sqlScript comes from, as artifact_plan the jar: a local one is used where it
 * is (local_path; NULL for an inline spec.job.sql or no script), a remote one downloaded into
 * <state dir>/artifacts/<sha256>.sql or uri-<the URI's hash>.sql. */
int artifact_plan_sql(const struct spec *s, const char *state_dir, struct artifact *a, char **err);
void artifact_free(struct artifact *a);
/* Whether a downloaded jar is already in the cache (and matches the checksum when one is given). */
bool artifact_cached(const struct artifact *a);
/* Removes the unfinished downloads (<jar or script>.part.<pid>.<n>.<attempt>) a flinklet killed during one left in
 * <state dir>/artifacts (they are never used: a download is renamed into place only once whole). Returns how many,
 * or -errno. Only while the state directory's lock is held. */
int artifact_clean_parts(const char *state_dir);
/* Moves a finished download into the cache after checking it (fsync, rename, fsync of the directory). Returns 0,
 * or -EBADMSG (checksum) or -errno with *err. */
int artifact_commit(const struct artifact *a, const char *tmp_path, char **err);

#endif
