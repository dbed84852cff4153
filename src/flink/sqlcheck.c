/* sqlcheck: the SQL runner's --validate in a JVM for check-config --preflight (see src/flink/sqlcheck.h). */
#include "sqlcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config_sql.h"
#include "store.h"

#define SQLCHECK_TIMEOUT_MS (3 * 60 * 1000)
#define SQLCHECK_OUTPUT_MAX (1u << 20)
#define PREFIX "flinklet-sql: "

/* Runs argv with stdout and stderr into *out (malloc'd, at most SQLCHECK_OUTPUT_MAX kept), killed at the deadline.
 * Returns its exit status (-1 when killed or not started). */
static int run_captured(char *const *argv, char **out)
{
	struct strbuf b = {0};
	int p[2];
	*out = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		setpgid(0, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool killed = false;
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left =
		    SQLCHECK_TIMEOUT_MS - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pfd = {p[0], POLLIN, 0};
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			kill(-pid, SIGKILL);
			killed = true;
			break;
		}
		char buf[4096];
		ssize_t n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (b.len < SQLCHECK_OUTPUT_MAX)
			strbuf_appendn(&b, buf, (size_t)n);
	}
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*out = strbuf_steal(&b);
	return killed || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
}

int sqlcheck_validate(const struct spec *s, const char *jar_path, struct diags *d)
{
	size_t before = d->msgs.n;
	const struct loc *at = s->job.sql_script ? &s->job.sql_script_loc : &s->job.sql_loc;
	const char *field = s->job.sql_script ? "spec.job.sqlScript" : "spec.job.sql";
	const char *tmp = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/flinklet-sqlcheck-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	const char *tmpdir = NULL;
	if (s->job.sql) { /* the runner reads a file: the inline script written where config_sql_runner_args names it */
		tmpdir = mkdtemp(tmpl);
		char *path = tmpdir ? path_join(tmpdir, SQL_INLINE_FILE) : NULL;
		int r = path ? write_file_atomic(path, s->job.sql, strlen(s->job.sql)) : -errno;
		if (r < 0) {
			diags_add(d, at, field, "unable to write the script for the planner's check: %s", strerror(-r));
			free(path);
			free(tmpl);
			if (tmpdir)
				rmdir(tmpdir);
			return (int)(d->msgs.n - before);
		}
		free(path);
	}
	const char *home = spec_get(s, "flinklet.flink.home");
	char *lib = path_join(home, "lib/*");
	bool own_jar = jar_path && !strstr(jar_path, "/lib/" SQL_RUNNER_JAR);
	struct strv argv = {0};
	strv_push(&argv, spec_get(s, "flinklet.java.bin"));
	strv_push(&argv, "-XX:TieredStopAtLevel=1"); /* a short run: the quick compiler is enough */
	strv_push(&argv, "-Dlog4j2.level=OFF");
	strv_push(&argv, "-cp");
	strv_push_take(&argv, own_jar ? xasprintf("%s:%s", jar_path, lib) : xstrdup(lib));
	strv_push(&argv, SQL_RUNNER_CLASS);
	strv_push(&argv, "--validate");
	config_sql_runner_args(s, tmpdir ? tmpdir : "/", NULL, NULL, &argv);
	char *out = NULL;
	int rc = run_captured(argv.v, &out);
	int found = 0;
	for (char *line = out, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, PREFIX, strlen(PREFIX)) && strcmp(line + strlen(PREFIX), "ok")) {
			strv_push(&d->msgs, line + strlen(PREFIX));
			found++;
		}
		if (!next)
			break;
	}
	if (rc != 0 && !found)
		diags_add(d, at, field, "the planner's check of the script (%s --validate) %s", SQL_RUNNER_CLASS,
		          rc < 0
		              ? "did not finish within 3 min, or was killed"
		              : "failed without saying where: run check-config --preflight again, or the job, to see "
		                "Flink's own message");
	free(out);
	strv_free(&argv);
	free(lib);
	if (tmpdir) {
		char *path = path_join(tmpdir, SQL_INLINE_FILE);
		unlink(path);
		free(path);
		rmdir(tmpdir);
	}
	free(tmpl);
	return (int)(d->msgs.n - before);
}
