/* main: the command line (contract section 1): parses arguments, dispatches to run, check-config,
 * status and version, and maps outcomes to the contract's exit codes (0 ok, 1 failed / not ready,
 * 2 bad usage or configuration, 3 unusable environment). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "autoscaler.h"
#include "cli.h"
#include "config.h"
#include "config_sql.h"
#include "artifacts.h"
#include "export.h"
#include "fsmode.h"
#include "hookproc.h"
#include "preflight.h"
#include "sqlcheck.h"
#include "flinkconf.h"
#include "snapshots.h"
#include "log.h"
#include "redact.h"
#include "status.h"
#include "statustable.h"
#include "store.h"
#include "supervisor.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_ENV 3

static const char usage[] =
    "usage: flinklet run          [-c FILE] [--state-dir DIR] [--flink-home DIR] [-D key=value]...\n"
    "                             [--exit-on-finish] [--jar URI --class NAME [--parallelism N] [-- ARGS...]]\n"
    "       flinklet check-config [-c FILE] [-D key=value]... [--json] [--preflight]\n"
    "       flinklet status       [-c FILE] [--state-dir DIR | --url URL] [--json] [--ready | --live | --started]\n"
    "       flinklet savepoint    [--wait] [-c FILE] [--state-dir DIR | --url URL] [--token-file FILE]\n"
    "                             (also: checkpoint, suspend, resume)\n"
    "       flinklet autoscaler plan --input FILE [-c FILE] [--hook PATH | --no-hook] [--hook-timeout DURATION]\n"
    "       flinklet export       --to flinkdeployment [-c FILE] [--state-dir DIR] [--flink-home DIR]\n"
    "                             [--storage-base URI] [--savepoint-base URI] [--operator-version 1.16|1.15]\n"
    "       flinklet version\n"
    "\n"
    "The configuration file is -c FILE, else $FLINKLET_CONFIG, else " FLINKLET_DEFAULT_CONFIG ".\n"
    "See docs/configuration.md for every field and option.\n";

struct cli {
	const char *command;
	struct config_args cfg;
	const char *url, *token_file, *to, *savepoint_base, *storage_base, *input, *operator_version;
	const char *subcommand, *hook, *hook_timeout;
	bool json, ready, live, started, exit_on_finish, help, wait, preflight, no_hook;
};

static int need_value(int argc, char **argv, int *i, const char **out)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "flinklet: %s needs a value\n%s", argv[*i], usage);
		return -1;
	}
	*out = argv[++*i];
	return 0;
}

static int parse_cli(int argc, char **argv, struct cli *c)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return -1;
	}
	c->command = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			c->cfg.have_args = true;
			for (int j = i + 1; j < argc; j++)
				strv_push(&c->cfg.args, argv[j]);
			break;
		} else if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
			if (need_value(argc, argv, &i, &c->cfg.file) < 0)
				return -1;
		} else if (!strcmp(a, "--state-dir")) {
			if (need_value(argc, argv, &i, &c->cfg.state_dir) < 0)
				return -1;
		} else if (!strcmp(a, "--flink-home")) {
			if (need_value(argc, argv, &i, &c->cfg.flink_home) < 0)
				return -1;
		} else if (!strcmp(a, "--jar")) {
			if (need_value(argc, argv, &i, &c->cfg.jar) < 0)
				return -1;
		} else if (!strcmp(a, "--class")) {
			if (need_value(argc, argv, &i, &c->cfg.entry_class) < 0)
				return -1;
		} else if (!strcmp(a, "--parallelism")) {
			if (need_value(argc, argv, &i, &c->cfg.parallelism) < 0)
				return -1;
		} else if (!strcmp(a, "-D")) {
			const char *v;
			if (need_value(argc, argv, &i, &v) < 0)
				return -1;
			strv_push(&c->cfg.defines, v);
		} else if (str_has_prefix(a, "-D") && a[2]) {
			strv_push(&c->cfg.defines, a + 2);
		} else if (!strcmp(a, "--url")) {
			if (need_value(argc, argv, &i, &c->url) < 0)
				return -1;
		} else if (!strcmp(a, "--token-file")) {
			if (need_value(argc, argv, &i, &c->token_file) < 0)
				return -1;
		} else if (!strcmp(a, "--input")) {
			if (need_value(argc, argv, &i, &c->input) < 0)
				return -1;
		} else if (!strcmp(a, "--hook")) {
			if (need_value(argc, argv, &i, &c->hook) < 0)
				return -1;
		} else if (!strcmp(a, "--hook-timeout")) {
			if (need_value(argc, argv, &i, &c->hook_timeout) < 0)
				return -1;
		} else if (!strcmp(a, "--no-hook")) {
			c->no_hook = true;
		} else if (!strcmp(a, "plan") && !strcmp(c->command, "autoscaler") && !c->subcommand) {
			c->subcommand = a;
		} else if (!strcmp(a, "--to")) {
			if (need_value(argc, argv, &i, &c->to) < 0)
				return -1;
		} else if (!strcmp(a, "--storage-base")) {
			if (need_value(argc, argv, &i, &c->storage_base) < 0)
				return -1;
		} else if (!strcmp(a, "--savepoint-base")) {
			if (need_value(argc, argv, &i, &c->savepoint_base) < 0)
				return -1;
		} else if (!strcmp(a, "--operator-version")) {
			if (need_value(argc, argv, &i, &c->operator_version) < 0)
				return -1;
		} else if (!strcmp(a, "--wait")) {
			c->wait = true;
		} else if (!strcmp(a, "--json")) {
			c->json = true;
		} else if (!strcmp(a, "--preflight")) {
			c->preflight = true;
		} else if (!strcmp(a, "--ready")) {
			c->ready = true;
		} else if (!strcmp(a, "--live")) {
			c->live = true;
		} else if (!strcmp(a, "--started")) {
			c->started = true;
		} else if (!strcmp(a, "--exit-on-finish")) {
			c->exit_on_finish = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			c->help = true;
		} else {
			fprintf(stderr, "flinklet: unknown argument \"%s\"\n%s", a, usage);
			return -1;
		}
	}
	return 0;
}

static void print_diags(const struct diags *d)
{
	for (size_t i = 0; i < d->msgs.n; i++)
		fprintf(stderr, "%s\n", d->msgs.v[i]);
}

static int cmd_check_config(struct cli *c)
{
	struct spec spec;
	struct diags d = {0};
	int r = config_load(&c->cfg, &spec, &d);
	if (r < 0) {
		print_diags(&d);
		diags_free(&d);
		spec_free(&spec);
		return EXIT_USAGE;
	}
	struct diags w = {0};
	config_warnings(&spec, &w);
	print_diags(&w);
	diags_free(&w);
	if (c->preflight) {
		/* what would stop the launch, checked on this machine now: nothing is printed but the problems */
		struct artifact jar = {0};
		char *err = NULL;
		const char *state = spec_get(&spec, "flinklet.state.dir");
		if (artifact_plan(&spec, state ? state : ".", &jar, &err) < 0) {
			diags_add(&d, &spec.job.jar_uri_loc, "spec.job.jarURI", "%s", err);
			free(err);
		} else {
			/* a SQL script: the planner's check, in a JVM, once the jars it needs are there (a remote
			 * script is not fetched here: the supervisor checks it once downloaded, before the launch) */
			if (preflight_all(&spec, jar.remote ? NULL : jar.local_path, &d) == 0 &&
			    config_sql_job(&spec) && !config_sql_remote(&spec))
				sqlcheck_validate(&spec, jar.local_path, &d);
		}
		artifact_free(&jar);
		int problems = (int)d.msgs.n;
		/* asked before spec_free, which clears the spec */
		bool sql = config_sql_job(&spec), remote_sql = config_sql_remote(&spec);
		print_diags(&d);
		diags_free(&d);
		spec_free(&spec);
		if (!problems)
			fprintf(stderr,
			        "flinklet: preflight: the Flink jars, the job's jar and entry class, the ports%s and "
			        "the state directory are fine\n",
			        remote_sql
			            ? ", the SQL script's URI (the script is checked once downloaded, before the "
			              "launch)"
			        : sql ? ", the SQL script (the planner's check)"
			              : "");
		return problems ? EXIT_USAGE : 0;
	}
	cJSON *j = spec_to_json(&spec);
	/* the output is shown and pasted: the jar's URI without its credentials or signature */
	cJSON *job = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "spec"), "job");
	char *shown = redact_uri(spec.job.jar_uri);
	if (shown)
		cJSON_ReplaceItemInObjectCaseSensitive(job, "jarURI", cJSON_CreateString(shown));
	free(shown);
	shown = spec.job.sql_script ? redact_uri(spec.job.sql_script) : NULL;
	if (shown)
		cJSON_ReplaceItemInObjectCaseSensitive(job, "sqlScript", cJSON_CreateString(shown));
	free(shown);
	char *text = c->json ? cJSON_Print(j) : json_to_yaml(j);
	fputs(text, stdout);
	if (c->json)
		fputs("\n", stdout);
	free(text);
	cJSON_Delete(j);
	diags_free(&d);
	spec_free(&spec);
	return 0;
}

static int cmd_run(struct cli *c)
{
	struct spec *spec = xcalloc(1, sizeof(*spec));
	struct diags d = {0};
	int r = config_load(&c->cfg, spec, &d);
	if (r < 0) {
		print_diags(&d);
		diags_free(&d);
		spec_free(spec);
		free(spec);
		return EXIT_USAGE;
	}
	diags_free(&d);
	struct diags w = {0};
	config_warnings(spec, &w);
	for (size_t i = 0; i < w.msgs.n; i++)
		log_warn("%s", w.msgs.v[i]);
	diags_free(&w);
	/* the state volume is shared with its group (src/base/fsmode.h); the JVM inherits the umask */
	fsmode_apply_umask();
	struct run_options opts = {
	    .exit_on_finish = c->exit_on_finish,
	    .cfg = &c->cfg,
	    .config_path = config_resolve_path(&c->cfg),
	};
	return supervisor_run(spec, &opts); /* it owns the spec */
}

/* The state directory from the command line or configuration, without requiring a job. */
static char *resolve_state_dir(struct cli *c)
{
	if (c->cfg.state_dir)
		return xstrdup(c->cfg.state_dir);
	const char *file = c->cfg.file ? c->cfg.file : getenv("FLINKLET_CONFIG");
	if (!file && access(FLINKLET_DEFAULT_CONFIG, F_OK) == 0)
		file = FLINKLET_DEFAULT_CONFIG;
	if (file) {
		struct spec spec;
		struct diags d = {0};
		c->cfg.file = file;
		char *dir = NULL;
		if (config_load(&c->cfg, &spec, &d) == 0)
			dir = xstrdup(spec_get(&spec, "flinklet.state.dir"));
		else
			print_diags(&d);
		diags_free(&d);
		spec_free(&spec);
		return dir;
	}
	return xstrdup("/var/lib/flinklet");
}

/* `--started`: a supervisor runs and does what the spec says: the job RUNNING, or no JVM on purpose (suspended,
 * FINISHED). What systemd's READY=1 means, for podman's startup health check (Notify=healthy); `--ready` stays the
 * job's readiness (/readyz). */
static bool started(const struct status *st, bool supervised)
{
	if (!supervised || st->lifecycle == LIFECYCLE_FAILED || !st->job_state)
		return false;
	if (st->lifecycle == LIFECYCLE_SUSPENDED || !strcmp(st->job_state, "FINISHED"))
		return true;
	return st->lifecycle == LIFECYCLE_STABLE && !strcmp(st->job_state, "RUNNING");
}

/* How long a probe (--ready, --live, --started) waits for the endpoint's answer: well inside a health check's own
 * timeout (the image's is 15 s), so that a hung supervisor is a failed probe, not a timed-out one. */
#define PROBE_TIMEOUT_S 5L

enum { PROBE_FAILS, PROBE_BY_STATE_DIR, PROBE_ELSEWHERE };

/* A probe whose --url did not answer: a hung supervisor, or one that serves elsewhere or not at all
 * (flinklet.http.address another port, or off). The supervisor holding the state directory's lock says in its
 * status.json: no endpoint, PROBE_BY_STATE_DIR (answered from the state directory, as without --url); another
 * address, PROBE_ELSEWHERE with its URL in *other (malloc'd); the address given, or no supervisor, PROBE_FAILS. */
static int probe_fallback(struct cli *c, const char *url, char **other)
{
	char *dir = resolve_state_dir(c), *path = dir ? path_join(dir, "status.json") : NULL, *text = NULL;
	bool held = dir && store_lock_held(dir) > 0;
	int verdict = PROBE_FAILS;
	struct status st;
	status_init(&st);
	if (held && read_file(path, 4u << 20, &text, NULL) == 0 && status_parse(text, &st) == 0) {
		if (!st.http_address) {
			fprintf(stderr,
			        "flinklet: the supervisor of %s serves no HTTP endpoint (flinklet.http.address off): "
			        "answered from the state directory\n",
			        dir);
			verdict = PROBE_BY_STATE_DIR;
		} else {
			char *there = cli_endpoint_url(st.http_address);
			size_t n = strlen(url);
			while (n > 0 && url[n - 1] == '/')
				n--;
			if (strlen(there) != n || strncmp(there, url, n)) {
				fprintf(stderr, "flinklet: the supervisor of %s serves on %s: asking there\n", dir,
				        there);
				*other = there;
				verdict = PROBE_ELSEWHERE;
			} else {
				free(there);
			}
		}
	}
	status_free(&st);
	free(text);
	free(path);
	free(dir);
	return verdict;
}

static int cmd_status_dir(struct cli *c);

static int cmd_status(struct cli *c)
{
	if (c->url) {
		bool probe = c->ready || c->live || c->started;
		char *json = NULL, *other = NULL;
		if (cli_fetch_status(c->url, probe ? PROBE_TIMEOUT_S : 10L, &json) != 0) {
			if (!probe)
				return EXIT_ENV;
			switch (probe_fallback(c, c->url, &other)) {
			case PROBE_BY_STATE_DIR:
				return cmd_status_dir(c);
			case PROBE_ELSEWHERE: {
				int r = cli_fetch_status(other, PROBE_TIMEOUT_S, &json);
				free(other);
				if (r != 0)
					return EXIT_FAILED;
				break;
			}
			default:
				return EXIT_FAILED;
			}
		}
		struct status st;
		int code = 0;
		if (status_parse(json, &st) < 0)
			code = EXIT_ENV;
		else if (c->ready)
			code = st.lifecycle == LIFECYCLE_STABLE && st.job_state && !strcmp(st.job_state, "RUNNING")
			           ? 0
			           : EXIT_FAILED;
		else if (c->live)
			code = st.lifecycle != LIFECYCLE_FAILED ? 0 : EXIT_FAILED;
		else if (c->started)
			code = started(&st, true) ? 0 : EXIT_FAILED;
		else if (c->json)
			fputs(json, stdout);
		else
			status_table_print(&st, true, NULL);
		status_free(&st);
		free(json);
		return code;
	}
	return cmd_status_dir(c);
}

/* `flinklet status` from the state directory: status.json, and whether a supervisor holds the lock. */
static int cmd_status_dir(struct cli *c)
{
	char *dir = resolve_state_dir(c);
	if (!dir)
		return EXIT_USAGE;
	char *path = path_join(dir, "status.json");
	char *text = NULL;
	int r = read_file(path, 4u << 20, &text, NULL);
	if (r < 0) {
		fprintf(stderr, "flinklet: unable to read %s: %s\n", path, strerror(-r));
		free(path);
		free(dir);
		return c->ready || c->live || c->started ? EXIT_FAILED : EXIT_ENV;
	}
	struct status st;
	int pr = status_parse(text, &st);
	/* live: a supervisor holds the state directory's lock. Only looked at: a probe takes no lock (a supervisor
	 * starting at that instant would find the directory locked) and writes nothing on the volume. */
	bool supervised = store_lock_held(dir) > 0;
	int code = 0;
	if (pr < 0) {
		fprintf(stderr, "flinklet: %s is not a status document\n", path);
		code = c->ready || c->live || c->started ? EXIT_FAILED : EXIT_ENV;
	} else if (c->ready) {
		code = supervised && st.lifecycle == LIFECYCLE_STABLE && st.job_state &&
		               !strcmp(st.job_state, "RUNNING") && st.tasks_total > 0 && st.tasks_running > 0 &&
		               st.tasks_running + st.tasks_finished == st.tasks_total
		           ? 0
		           : EXIT_FAILED;
	} else if (c->live) {
		code = supervised && st.lifecycle != LIFECYCLE_FAILED ? 0 : EXIT_FAILED;
	} else if (c->started) {
		code = started(&st, supervised) ? 0 : EXIT_FAILED;
	} else if (c->json) {
		fputs(text, stdout);
	} else {
		status_table_print(&st, supervised, dir);
	}
	status_free(&st);
	free(text);
	free(path);
	free(dir);
	return code;
}

/* The newest complete savepoint of the job on the volume (its directory and the ones status.json records), not
 * one restored in claim mode. */
static char *newest_savepoint(const struct spec *spec)
{
	const char *state = spec_get(spec, "flinklet.state.dir");
	char *idpath = path_join(state, "job-id"), *id = NULL;
	char *statuspath = path_join(state, "status.json"), *text = NULL;
	char *best = NULL;
	struct status st;
	status_init(&st);
	if (read_file(idpath, 256, &id, NULL) == 0) {
		id[strcspn(id, "\r\n")] = '\0';
		if (read_file(statuspath, 4u << 20, &text, NULL) == 0)
			status_parse(text, &st);
		const char *recorded[SAVEPOINT_HISTORY_MAX + 2] = {0};
		size_t n = 0;
		if (st.last_savepoint.location && !st.last_savepoint.claimed)
			recorded[n++] = st.last_savepoint.location;
		for (int i = 0; i < st.n_savepoint_history; i++)
			recorded[n++] = st.savepoint_history[i].location;
		char *ck = local_path_from_uri(spec_get(spec, "execution.checkpointing.dir"));
		char *sp = local_path_from_uri(spec_get(spec, "execution.checkpointing.savepoint-dir"));
		struct restore_scan scan = {ck, sp, id, recorded, NULL, false};
		struct restore_list list;
		restore_points_scan(&scan, &list);
		for (size_t i = 0; i < list.n && !best; i++) {
			/* a claimed one is the job's checkpoints' now: Flink or the sweep may dispose of it any time */
			bool claimed =
			    st.last_savepoint.claimed && snapshot_same(st.last_savepoint.location, list.v[i].path);
			for (int k = 0; k < st.n_claimed_savepoints && !claimed; k++)
				claimed = snapshot_same(st.claimed_savepoints[k].location, list.v[i].path);
			if (list.v[i].kind == RESTORE_SAVEPOINT && !claimed)
				best = file_uri_from_path(list.v[i].path);
		}
		restore_list_free(&list);
		free(ck);
		free(sp);
	}
	status_free(&st);
	free(text);
	free(id);
	free(idpath);
	free(statuspath);
	return best;
}

/* plan's scaling hook, run as the supervisor runs it (src/flink/hookproc.c), but blocking */
struct plan_hook {
	int64_t timeout_ms;
	struct hookproc proc;
	char *failure, *errors;
};

static void run_plan_hook(void *ud, const char *proposal, struct as_hook_result *ret)
{
	struct plan_hook *h = ud;
	hookproc_run(&h->proc, ret->hook, proposal, strlen(proposal), h->timeout_ms, &h->failure);
	h->errors = hookproc_errors_tail(&h->proc, 300);
	ret->failure = h->failure;
	ret->answer = h->proc.answer.buf ? h->proc.answer.buf : "";
	ret->answer_len = h->proc.answer.len;
	ret->errors = h->errors;
}

/* The hook of the plan: --no-hook, --hook, else the configuration's flinklet.autoscaler.hook; its timeout
 * --hook-timeout, else the configuration's. Returns 0, or -EINVAL (said) for a bad --hook-timeout. */
static int plan_hook(const struct cli *c, const struct spec *sp, struct as_hook_runner *ret, struct plan_hook *h)
{
	const char *path = c->no_hook ? NULL : c->hook ? c->hook : sp ? spec_get(sp, "flinklet.autoscaler.hook") : NULL;
	usec_t timeout = sp ? spec_duration(sp, "flinklet.autoscaler.hook.timeout") : 0;
	if (c->hook_timeout && (parse_duration(c->hook_timeout, &timeout) < 0 || timeout < 100 * USEC_PER_MSEC)) {
		fprintf(stderr,
		        "flinklet: --hook-timeout: must be a duration of at least 100 ms such as 10 s (got \"%s\")\n",
		        c->hook_timeout);
		return -EINVAL;
	}
	memset(h, 0, sizeof(*h));
	h->proc.in = h->proc.out = h->proc.err = -1;
	h->timeout_ms = timeout ? (int64_t)(timeout / USEC_PER_MSEC) : 10000;
	*ret = (struct as_hook_runner){path, h->timeout_ms, path && *path ? run_plan_hook : NULL, h};
	return 0;
}

static int cmd_autoscaler_plan(struct cli *c)
{
	if (!c->subcommand || !c->input) {
		fprintf(stderr,
		        "flinklet: usage: flinklet autoscaler plan --input FILE [-c FILE] [--hook PATH | --no-hook] "
		        "[--hook-timeout DURATION]\n");
		return EXIT_USAGE;
	}
	char *text = NULL;
	size_t len = 0;
	int r = read_file(c->input, 16u << 20, &text, &len);
	if (r < 0) {
		fprintf(stderr, "flinklet: unable to read %s: %s\n", c->input, strerror(-r));
		return EXIT_USAGE;
	}
	struct spec spec, *sp = NULL;
	memset(&spec, 0, sizeof(spec));
	if (c->cfg.file || !str_empty(getenv("FLINKLET_CONFIG"))) {
		struct diags d = {0};
		if (config_load(&c->cfg, &spec, &d) < 0) {
			print_diags(&d);
			diags_free(&d);
			spec_free(&spec);
			free(text);
			return EXIT_USAGE;
		}
		diags_free(&d);
		sp = &spec;
	}
	char *out = NULL;
	struct strv errors = {0};
	struct as_hook_runner hook;
	struct plan_hook ph;
	if (plan_hook(c, sp, &hook, &ph) < 0) {
		spec_free(&spec);
		free(text);
		return EXIT_USAGE;
	}
	r = autoscaler_plan_hooked(text, len, sp, hook.run ? &hook : NULL, &out, &errors);
	if (r < 0) {
		for (size_t i = 0; i < errors.n; i++)
			fprintf(stderr, "%s: %s\n", c->input, errors.v[i]);
	} else {
		fputs(out, stdout);
	}
	hookproc_close(&ph.proc);
	free(ph.failure);
	free(ph.errors);
	free(out);
	strv_free(&errors);
	spec_free(&spec);
	free(text);
	return r < 0 ? EXIT_USAGE : 0;
}

/* The Flink version the job last ran with, as the state directory's status.json records it ("2.2.1"); NULL when
 * there is none. *where is the file it was read from. */
static char *recorded_flink_version(const struct spec *spec, char **where)
{
	char *path = path_join(spec_get(spec, "flinklet.state.dir"), "status.json"), *text = NULL, *version = NULL;
	struct status st;
	status_init(&st);
	if (read_file(path, 4u << 20, &text, NULL) == 0 && status_parse(text, &st) == 0 && !str_empty(st.flink_version))
		version = xstrdup(st.flink_version);
	status_free(&st);
	free(text);
	if (version)
		*where = path;
	else
		free(path);
	return version;
}

static int cmd_export(struct cli *c)
{
	if (!c->to || strcmp(c->to, "flinkdeployment")) {
		fprintf(stderr, "flinklet: export needs --to flinkdeployment\n%s", usage);
		return EXIT_USAGE;
	}
	enum export_operator op = EXPORT_OPERATOR_1_16;
	if (c->operator_version && export_operator_parse(c->operator_version, &op) < 0) {
		fprintf(stderr,
		        "flinklet: --operator-version: \"%s\" is not an operator version export writes for: 1.16 "
		        "(the default: resources with requests and limits) or 1.15 (resource: {cpu, memory})\n",
		        c->operator_version);
		return EXIT_USAGE;
	}
	struct spec spec;
	struct diags d = {0};
	if (config_load(&c->cfg, &spec, &d) < 0) {
		print_diags(&d);
		diags_free(&d);
		spec_free(&spec);
		return EXIT_USAGE;
	}
	diags_free(&d);
	char *sp = newest_savepoint(&spec);
	char *lib = path_join(spec_get(&spec, "flinklet.flink.home"), "lib");
	char *version = NULL, *from = NULL;
	/* the jars flinklet runs, else the version the job last ran with (the volume outlives the image) */
	char *recorded = recorded_flink_version(&spec, &from);
	struct strv notes = {0};
	bool from_state = false;
	if (flink_detect_version(lib, &version) < 0) {
		version = recorded;
		recorded = NULL;
		from_state = version != NULL;
	} else if (recorded && strcmp(recorded, version)) {
		strv_push_take(&notes, xasprintf("the job last ran on Flink %s (%s); flinkVersion and image follow the "
		                                 "jars in %s (Flink %s)",
		                                 recorded, from, lib, version));
	}
	struct export_args a = {
	    .savepoint = sp,
	    .savepoint_base = c->savepoint_base,
	    .storage_base = c->storage_base,
	    .flink_version = version,
	    .flink_version_from = from_state ? from : NULL,
	    .operator_version = op,
	    .notes = &notes,
	};
	cJSON *fd = export_flinkdeployment(&spec, &a);
	char *yaml = json_to_yaml(fd);
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fd, "spec"), "job");
	const char *initial = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job, "initialSavepointPath"));
	printf("# The FlinkDeployment of %s for the Flink Kubernetes Operator %s, made by flinklet %s.\n", spec.name,
	       export_operator_name(op), FLINKLET_VERSION);
	printf("# Steps (docs/deployment.md, Promotion):\n");
	int step = 1;
	if (sp && initial && strcmp(sp, initial))
		printf("#   %d. copy the savepoint directory %s to %s\n", step++, sp, initial);
	if (notes.n)
		printf("#   %d. fill in or check what the notes below say\n", step++);
	printf("#   %d. stop flinklet, then: kubectl apply -f <this file>\n", step);
	for (size_t i = 0; i < notes.n; i++) {
		printf("# note: %s\n", notes.v[i]);
		fprintf(stderr, "flinklet: export: %s\n", notes.v[i]);
	}
	fputs(yaml, stdout);
	free(yaml);
	cJSON_Delete(fd);
	strv_free(&notes);
	free(version);
	free(recorded);
	free(from);
	free(lib);
	free(sp);
	spec_free(&spec);
	return 0;
}

int main(int argc, char **argv)
{
	/* first thing, before any I/O: the signals the supervisor handles wait in the mask until its event loop
	 * takes them (as PID 1 a TERM during the set-up would be lost otherwise, and the JVM started anyway).
	 * Other commands take them back at once (a pending one then acts as usual). */
	sigset_t handled;
	supervisor_handled_signals(&handled);
	sigprocmask(SIG_BLOCK, &handled, NULL);
	if (argc < 2 || strcmp(argv[1], "run"))
		sigprocmask(SIG_UNBLOCK, &handled, NULL);
	struct cli c = {0};
	if (parse_cli(argc, argv, &c) < 0)
		return EXIT_USAGE;
	int code;
	if (c.help || !strcmp(c.command, "help") || !strcmp(c.command, "--help") || !strcmp(c.command, "-h")) {
		fputs(usage, stdout);
		code = 0;
	} else if (!strcmp(c.command, "version") || !strcmp(c.command, "--version")) {
		printf("flinklet %s\n", FLINKLET_VERSION);
		code = 0;
	} else if (!strcmp(c.command, "check-config")) {
		code = cmd_check_config(&c);
	} else if (!strcmp(c.command, "run")) {
		code = cmd_run(&c);
	} else if (!strcmp(c.command, "status")) {
		code = cmd_status(&c);
	} else if (!strcmp(c.command, "autoscaler")) {
		code = cmd_autoscaler_plan(&c);
	} else if (!strcmp(c.command, "export")) {
		code = cmd_export(&c);
	} else if (!strcmp(c.command, "savepoint") || !strcmp(c.command, "checkpoint") ||
	           !strcmp(c.command, "suspend") || !strcmp(c.command, "resume")) {
		char *dir = c.url ? NULL : resolve_state_dir(&c);
		struct control_args a = {c.command, dir, c.url, c.token_file, c.wait};
		code = c.url || dir ? cli_control(&a) : EXIT_USAGE;
		free(dir);
	} else {
		fprintf(stderr, "flinklet: unknown command \"%s\"\n%s", c.command, usage);
		code = EXIT_USAGE;
	}
	strv_free(&c.cfg.defines);
	strv_free(&c.cfg.args);
	return code;
}
