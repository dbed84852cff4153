/* config_sql: a SQL script as the job, from the configuration to the runner's arguments (see src/config/config_sql.h).
 */
#include "config_sql.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "redact.h"
#include "schemes.h"
#include "sqlscript.h"

#define SQL_MAX_BYTES (1u << 20)

bool config_sql_job(const struct spec *s)
{
	return s->job.sql_script || s->job.sql;
}

bool config_sql_remote(const struct spec *s)
{
	if (!s->job.sql_script)
		return false;
	char *p = local_path_from_uri(s->job.sql_script);
	free(p);
	return !p;
}

/* A sqlScript that is no local path: a URI flinklet downloads, as a jarURI (its scheme known and allowed). Nothing is
 * read here: the script is split and checked once it is downloaded, before the launch (src/supervisor/sup_fetch.c).
 * Returns whether it is one. */
static bool check_remote(const struct spec *s, const struct loc *at, struct diags *d)
{
	const char *uri = s->job.sql_script;
	const char *scheme = artifact_remote_scheme(uri);
	char *shown = redact_uri(uri);
	if (!scheme)
		diags_add(d, at, "spec.job.sqlScript",
		          "must be a local path, local:///path, file:///path (the script in the image or a mounted "
		          "ConfigMap), https://..., s3://bucket/key or http://... (got \"%s\")",
		          shown);
	else if (!artifact_scheme_listed(artifact_allowed_schemes(s), scheme))
		diags_add(d, at, "spec.job.sqlScript",
		          "the scheme %s is not in flinklet.artifacts.allowed-schemes (\"%s\"): list it there to "
		          "download scripts over it (got \"%s\")",
		          scheme, artifact_allowed_schemes(s), shown);
	free(shown);
	return scheme != NULL;
}

/* The whole file at path (at most SQL_MAX_BYTES), malloc'd, NUL-terminated: 0 or -errno (-EFBIG: too large). */
static int read_script(const char *path, char **ret, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int r = S_ISDIR(st.st_mode) ? -EISDIR : -errno;
		close(fd);
		return r ? r : -EINVAL;
	}
	if ((uint64_t)st.st_size > SQL_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	char *buf = xmalloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*ret = buf;
	*len = n;
	return 0;
}

/* The script's problems as diagnostics: at the script file's positions (or the configuration file's, for an inline
 * literal block: sqlscript_parse mapped them), else at the value with the script's line and column in the message. */
static void report(const struct spec *s, const struct sqlscript *q, const char *script_path, struct diags *d)
{
	const struct job_spec *j = &s->job;
	for (size_t i = 0; i < q->nproblems; i++) {
		const struct sql_problem *p = &q->problems[i];
		struct loc l = {j->sql_script ? script_path : j->sql_loc.file, p->line, p->col};
		if (j->sql_script || j->sql_mapped)
			diags_add(d, &l, j->sql_script ? "spec.job.sqlScript" : "spec.job.sql", "%s", p->msg);
		else
			diags_add(d, &j->sql_loc, "spec.job.sql", "line %d, column %d of the script: %s", p->line,
			          p->col, p->msg);
	}
}

void config_sql_check(struct spec *s, struct diags *d)
{
	struct job_spec *j = &s->job;
	struct loc whole = {s->file, 0, 0};
	j->sql_sha256[0] = '\0';
	free(j->sql_text);
	j->sql_text = NULL;
	if (!config_sql_job(s))
		return;
	const struct loc *at = j->sql_script ? &j->sql_script_loc : &j->sql_loc;
	const char *field = j->sql_script ? "spec.job.sqlScript" : "spec.job.sql";
	if (j->sql_script && j->sql) {
		diags_add(d, &j->sql_loc, "spec.job.sql",
		          "not with spec.job.sqlScript (line %d): the job is one script, in a file or inline",
		          j->sql_script_loc.line);
		return;
	}
	if (j->entry_class && strcmp(j->entry_class, SQL_RUNNER_CLASS))
		diags_add(d, j->entry_class_loc.file ? &j->entry_class_loc : &whole, "spec.job.entryClass",
		          "not with %s: flinklet's SQL runner (" SQL_RUNNER_CLASS ") runs the script; a runner of your "
		          "own takes the script in spec.job.args instead",
		          field);
	if (j->args.n)
		diags_add(d, at, "spec.job.args", "not with %s: the script is the job's program and has no arguments",
		          field);
	char *text = NULL, *path = NULL;
	size_t len = 0;
	if (j->sql_script) {
		path = local_path_from_uri(j->sql_script);
		if (!path) {
			check_remote(s, at, d);
			return;
		}
		int r = read_script(path, &text, &len);
		if (r < 0) {
			diags_add(d, at, field, "unable to read %s: %s", path,
			          r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
			free(path);
			return;
		}
	} else {
		text = xstrdup(j->sql);
		len = strlen(text);
	}
	if (memchr(text, '\0', len)) {
		diags_add(d, at, field, "not a SQL script (contains a NUL byte)");
	} else {
		struct sqlscript q;
		bool mapped = !j->sql_script && j->sql_mapped;
		if (sqlscript_parse(text, len, mapped ? j->sql_loc.line : 1, mapped ? j->sql_loc.col : 1, &q) < 0)
			report(s, &q, path, d);
		sqlscript_free(&q);
		sha256_hex(text, len, j->sql_sha256);
		if (j->sql_script) { /* what ran, whatever the file says later (a rollback to it: sup_reload) */
			j->sql_text = text;
			text = NULL;
		}
	}
	free(text);
	free(path);
}

int config_sql_check_file(const char *path, const char *name, char sha256[65], char **err)
{
	char *text = NULL;
	size_t len = 0;
	int r = read_script(path, &text, &len);
	if (r < 0) {
		*err = xasprintf("%s: spec.job.sqlScript: unable to read %s: %s", name, path,
		                 r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return r;
	}
	struct strbuf b = {0};
	if (memchr(text, '\0', len)) {
		strbuf_appendf(&b, "%s: spec.job.sqlScript: not a SQL script (contains a NUL byte)", name);
	} else {
		struct sqlscript q;
		if (sqlscript_parse(text, len, 1, 1, &q) < 0)
			for (size_t i = 0; i < q.nproblems; i++)
				strbuf_appendf(&b, "%s%s:%d:%d: spec.job.sqlScript: %s", i ? "; " : "", name,
				               q.problems[i].line, q.problems[i].col, q.problems[i].msg);
		sqlscript_free(&q);
		sha256_hex(text, len, sha256);
	}
	free(text);
	if (b.len) {
		*err = strbuf_steal(&b);
		return -EINVAL;
	}
	strbuf_free(&b);
	return 0;
}

void config_sql_defaults(struct spec *s)
{
	if (!config_sql_job(s))
		return;
	if (!s->job.jar_uri) {
		char *lib = path_join(spec_get(s, "flinklet.flink.home"), "lib/" SQL_RUNNER_JAR);
		s->job.jar_uri = xasprintf("local://%s", lib);
		free(lib);
	}
	if (!s->job.entry_class)
		s->job.entry_class = xstrdup(SQL_RUNNER_CLASS);
}

void config_sql_runner_args(const struct spec *s, const char *conf_dir, const char *script, const char *sha256,
                            struct strv *argv)
{
	const struct job_spec *j = &s->job;
	if (!config_sql_job(s))
		return;
	bool remote = config_sql_remote(s);
	if (remote) {
		/* the runner's positions name the URI (without its credentials), not the cache's file */
		char *shown = redact_uri(j->sql_script);
		strv_push_take(argv, xasprintf("--origin=%s:1:1", shown));
		free(shown);
		strv_push(argv, "--field=spec.job.sqlScript");
	} else if (j->sql) {
		int line = j->sql_mapped ? j->sql_loc.line : 1, col = j->sql_mapped ? j->sql_loc.col : 1;
		strv_push_take(argv,
		               xasprintf("--origin=%s:%d:%d", j->sql_mapped ? s->file : "spec.job.sql", line, col));
		strv_push(argv, "--field=spec.job.sql");
	} else {
		strv_push(argv, "--field=spec.job.sqlScript");
	}
	if (!sha256 && j->sql_sha256[0])
		sha256 = j->sql_sha256;
	if (sha256)
		strv_push_take(argv, xasprintf("--sha256=%s", sha256));
	char *plans = path_join(spec_get(s, "flinklet.state.dir"), SQL_PLAN_DIR);
	strv_push_take(argv, xasprintf("--plan-dir=%s", plans));
	free(plans);
	if (script)
		strv_push(argv, script);
	else if (j->sql)
		strv_push_take(argv, path_join(conf_dir, SQL_INLINE_FILE));
	else if (remote) {
		/* not fetched (a fingerprint of the launch): the URI, told apart from another by its whole text's hash
		 * as its copy in the cache is, and shown without its credentials */
		char *shown = redact_uri(j->sql_script), h[65];
		sha256_hex(j->sql_script, strlen(j->sql_script), h);
		strv_push_take(argv, xasprintf("%s#uri-%s", shown, h));
		free(shown);
	} else
		strv_push_take(argv, local_path_from_uri(j->sql_script));
}
