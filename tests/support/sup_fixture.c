/* sup_fixture: a supervisor built by hand for tests (see sup_fixture.h). */
#include "sup_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "store.h"

static const char SPEC[] = "apiVersion: flink.apache.org/v1beta1\n"
                           "kind: FlinkMiniCluster\n"
                           "metadata:\n"
                           "  name: %s\n"
                           "spec:\n"
                           "  flinkConfiguration:\n"
                           "    flinklet.state.dir: %s\n"
                           "    flinklet.restart.max-attempts: \"0\"\n"
                           "    flinklet.java.bin: /nonexistent/flinklet-test-no-java\n"
                           "%s"
                           "  job:\n"
                           "    jarURI: local:///opt/flink/usrlib/job.jar\n"
                           "    entryClass: com.example.Job\n"
                           "    parallelism: 1\n"
                           "    upgradeMode: last-state\n"
                           "    state: running\n";

static const struct run_options run_opts;

static char *make_state_dir(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char *dir = xasprintf("%s/flinklet-fixture-XXXXXX", base);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "sup_fixture: mkdtemp(%s): %s\n", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

static struct spec *parse_spec(const struct sup_fixture *f, const char *dir)
{
	char *yaml = xasprintf(SPEC, f->name, dir, f->conf ? f->conf : "");
	struct spec *spec = xcalloc(1, sizeof(*spec));
	struct diags d = {0};
	int r = config_parse("sup_fixture.yaml", yaml, strlen(yaml), spec, &d);
	if (r == 0)
		r = config_finalize(spec, &d);
	for (size_t i = 0; i < d.msgs.n; i++)
		fprintf(stderr, "sup_fixture: %s\n", d.msgs.v[i]);
	diags_free(&d);
	free(yaml);
	if (r < 0) {
		spec_free(spec);
		free(spec);
		return NULL;
	}
	free(spec->job.jar_uri);
	spec->job.jar_uri = xstrdup(f->jar);
	return spec;
}

int sup_fixture_init(struct supervisor *s, const struct sup_fixture *f)
{
	memset(s, 0, sizeof(*s));
	unsetenv("NOTIFY_SOCKET"); /* sup_notify_state would talk to systemd */
	char *dir = make_state_dir();
	struct spec *spec = dir ? parse_spec(f, dir) : NULL;
	if (!spec) {
		if (dir)
			rm_rf(dir);
		free(dir);
		return -1;
	}
	s->spec = s->launched = spec;
	s->opts = &run_opts;
	s->lock_fd = s->reload.inotify_fd = -1;
	s->standby.control_fd = -1;
	s->state_dir = dir;
	s->conf_dir = path_join(dir, "conf");
	s->scratch.tmp_dir = path_join(dir, "tmp");
	s->ckpt_dir = local_path_from_uri(spec_get(spec, "execution.checkpointing.dir"));
	s->sp_dir = local_path_from_uri(spec_get(spec, "execution.checkpointing.savepoint-dir"));
	s->flink_version = xstrdup("2.2.0");
	memcpy(s->job_id, "0000000000000000000000000000d15a", sizeof(s->job_id));
	status_init(&s->status);
	int r = sd_event_new(&s->event);
	if (r < 0 || !s->ckpt_dir || !s->sp_dir) {
		fprintf(stderr, "sup_fixture: %s\n",
		        r < 0 ? "sd_event_new failed" : "the checkpoint and savepoint directories are not local paths");
		sup_fixture_free(s);
		return -1;
	}
	return 0;
}

void sup_fixture_free(struct supervisor *s)
{
	char *dir = s->state_dir ? xstrdup(s->state_dir) : NULL;
	sup_free(s);
	if (dir)
		rm_rf(dir);
	free(dir);
	memset(s, 0, sizeof(*s));
}
