/* artifacts: where the job's jar and SQL script come from, and the cache on the volume (see src/flink/artifacts.h). */
#include "artifacts.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "redact.h"
#include "schemes.h"
#include "store.h"

#define ALLOWED_SCHEMES "flinklet.artifacts.allowed-schemes"

static int plan_s3(const struct spec *s, const char *uri, struct artifact *a, char **err)
{
	const char *field = a->field;
	const char *rest = uri + strlen("s3://");
	const char *slash = strchr(rest, '/');
	if (!slash || slash == rest || !slash[1]) {
		char *shown = redact_uri(uri);
		*err = xasprintf("%s: an s3 URI must be s3://bucket/key (got \"%s\")", field, shown);
		free(shown);
		return -EINVAL;
	}
	char *bucket = xstrndup(rest, (size_t)(slash - rest));
	const char *key = slash + 1;
	const char *region = spec_get(s, "flinklet.artifacts.s3.region");
	if (str_empty(region))
		region = getenv("AWS_REGION");
	if (str_empty(region))
		region = getenv("AWS_DEFAULT_REGION");
	if (str_empty(region))
		region = "us-east-1";
	const char *endpoint = spec_get(s, "flinklet.artifacts.s3.endpoint");
	if (!str_empty(endpoint)) /* path-style, for S3-compatible stores */
		a->url = xasprintf("%s/%s/%s", endpoint, bucket, key);
	else
		a->url = xasprintf("https://%s.s3.%s.amazonaws.com/%s", bucket, region, key);
	free(bucket);
	/* s3 is signed requests over https; a plain http endpoint only when http is listed too */
	bool http = artifact_scheme_listed(artifact_allowed_schemes(s), "http");
	if (!str_empty(endpoint) && !str_has_prefix(endpoint, "https://") &&
	    !(http && str_has_prefix(endpoint, "http://"))) {
		char *shown = redact_uri(endpoint);
		const char *alt = http ? " or http://host:port" : " (http:// when " ALLOWED_SCHEMES " lists http)";
		*err = xasprintf("flinklet.artifacts.s3.endpoint must be https://host:port%s (got \"%s\")", alt, shown);
		free(shown);
		return -EINVAL;
	}
	a->protocols = xstrdup(http ? "https,http" : "https");
	const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
	if (str_empty(id) || str_empty(secret)) {
		char *shown = redact_uri(uri);
		*err = xasprintf("%s: %s needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", field, shown);
		free(shown);
		return -EINVAL;
	}
	a->sigv4 = xasprintf("aws:amz:%s:s3", region);
	a->userpwd = xasprintf("%s:%s", id, secret);
	const char *token = getenv("AWS_SESSION_TOKEN");
	if (!str_empty(token))
		strv_push_take(&a->headers, xasprintf("x-amz-security-token: %s", token));
	return 0;
}

/* Plans the download of a remote artifact (a->uri, a->kind and its names set): its URL, protocols, signature and its
 * place in the cache. */
static int plan_remote(const struct spec *s, const char *state_dir, struct artifact *a, char **err)
{
	const char *uri = a->uri;
	a->remote = true;
	const char *sum = spec_get(s, a->sha_key);
	a->sha256 = !str_empty(sum) ? sum : NULL;
	const char *scheme = artifact_remote_scheme(uri);
	const char *allowed = artifact_allowed_schemes(s);
	int r = 0;
	if (!scheme) {
		char *shown = redact_uri(uri);
		*err = xasprintf("%s: unsupported scheme (got \"%s\")", a->field, shown);
		free(shown);
		r = -EINVAL;
	} else if (!artifact_scheme_listed(allowed, scheme)) {
		char *shown = redact_uri(uri);
		*err = xasprintf("%s: the scheme %s of \"%s\" is not in %s (\"%s\"); list it there to "
		                 "download %ss over it",
		                 a->field, scheme, shown, ALLOWED_SCHEMES, allowed,
		                 a->kind == ARTIFACT_SQL ? "script" : "jar");
		free(shown);
		r = -EINVAL;
	} else if (!strcmp(scheme, "s3")) {
		r = plan_s3(s, uri, a, err);
	} else {
		/* the URL's own scheme, and a redirect only to a scheme that is listed too */
		bool http = artifact_scheme_listed(allowed, "http"), https = artifact_scheme_listed(allowed, "https");
		a->url = xstrdup(uri);
		a->protocols = xstrdup(http && https ? "https,http" : scheme);
	}
	if (r < 0) {
		artifact_free(a); /* nothing half-planned is left to free */
		return r;
	}
	const char *ext = a->kind == ARTIFACT_SQL ? "sql" : "jar";
	char *dir = path_join(state_dir, "artifacts");
	char name[80];
	if (a->sha256) {
		char lower[65];
		for (size_t i = 0; i < 64; i++)
			lower[i] = (char)tolower((unsigned char)a->sha256[i]);
		lower[64] = '\0';
		snprintf(name, sizeof(name), "%s.%s", lower, ext);
	} else {
		char h[65];
		sha256_hex(uri, strlen(uri), h);
		snprintf(name, sizeof(name), "uri-%s.%s", h, ext);
	}
	a->local_path = path_join(dir, name);
	free(dir);
	return 0;
}

static void name_artifact(struct artifact *a, enum artifact_kind kind, const char *uri)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->field = kind == ARTIFACT_SQL ? "spec.job.sqlScript" : "spec.job.jarURI";
	a->what = kind == ARTIFACT_SQL ? "SQL script" : "jar";
	a->sha_key = kind == ARTIFACT_SQL ? "flinklet.job.sql-script.sha256" : "flinklet.job.jar.sha256";
	a->uri = uri ? xstrdup(uri) : NULL;
}

int artifact_plan(const struct spec *s, const char *state_dir, struct artifact *a, char **err)
{
	name_artifact(a, ARTIFACT_JAR, s->job.jar_uri);
	char *local = local_path_from_uri(s->job.jar_uri);
	if (local) {
		a->local_path = local;
		return 0;
	}
	return plan_remote(s, state_dir, a, err);
}

int artifact_plan_sql(const struct spec *s, const char *state_dir, struct artifact *a, char **err)
{
	name_artifact(a, ARTIFACT_SQL, s->job.sql_script);
	if (!s->job.sql_script)
		return 0; /* an inline script (conf/job.sql) or none */
	char *local = local_path_from_uri(s->job.sql_script);
	if (local) {
		a->local_path = local;
		return 0;
	}
	return plan_remote(s, state_dir, a, err);
}

void artifact_free(struct artifact *a)
{
	free(a->uri);
	free(a->local_path);
	free(a->url);
	free(a->protocols);
	free(a->sigv4);
	free(a->userpwd);
	strv_free(&a->headers);
	memset(a, 0, sizeof(*a));
}

static bool matches(const char *path, const char *want)
{
	char got[65];
	return sha256_file(path, got) == 0 && !strcasecmp(got, want);
}

bool artifact_cached(const struct artifact *a)
{
	if (access(a->local_path, R_OK) < 0)
		return false;
	return !a->sha256 || matches(a->local_path, a->sha256);
}

int artifact_commit(const struct artifact *a, const char *tmp_path, char **err)
{
	if (a->sha256) {
		char got[65];
		int r = sha256_file(tmp_path, got);
		if (r < 0 || strcasecmp(got, a->sha256)) {
			*err = r < 0 ? xasprintf("unable to read the download: %s", strerror(-r))
			             : xasprintf("checksum mismatch: %s is %s, the download's is %s",
			                         a->sha_key ? a->sha_key : "flinklet.job.jar.sha256", a->sha256, got);
			unlink(tmp_path);
			return -EBADMSG;
		}
	}
	/* temp file, fsync, rename, fsync of the directory */
	int fd = open(tmp_path, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? -errno : store_sync(fd, false);
	if (fd >= 0)
		close(fd);
	if (r == 0 && rename(tmp_path, a->local_path) < 0)
		r = -errno;
	if (r < 0) {
		*err = xasprintf("unable to move the download into %s: %s", a->local_path, strerror(-r));
		unlink(tmp_path);
		return r;
	}
	return fsync_parent(a->local_path);
}

static bool is_part_name(const char *name)
{
	return strstr(name, ".jar.part.") != NULL || strstr(name, ".sql.part.") != NULL;
}

int artifact_clean_parts(const char *state_dir)
{
	char *dir = path_join(state_dir, "artifacts");
	int r = store_remove_files(dir, is_part_name);
	free(dir);
	return r;
}
