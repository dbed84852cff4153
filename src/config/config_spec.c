/* config_spec: a parsed spec's flinkConfiguration map (its options and Flink's keys), read and set by key: the
 * typed getters every part of flinklet uses (spec_get, spec_duration, spec_int, spec_bool), the old names Flink
 * still accepts for a key (read through the new one), and spec_free. The document's walkers are in config.c. */
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* Flink keys flinklet reads, with the deprecated spellings Flink still honours. */
static const char *const key_aliases[][4] = {
    {"execution.checkpointing.dir", "state.checkpoints.dir", "state.backend.fs.checkpointdir", NULL},
    {"execution.checkpointing.savepoint-dir", "state.savepoints.dir", "savepoints.state.backend.fs.dir", NULL},
    {"execution.checkpointing.num-retained", "state.checkpoints.num-retained", NULL, NULL},
    {"execution.state-recovery.path", "execution.savepoint.path", NULL, NULL},
    {"execution.state-recovery.claim-mode", "execution.savepoint-restore-mode", NULL, NULL},
    {"execution.state-recovery.ignore-unclaimed-state", "execution.savepoint.ignore-unclaimed-state", NULL, NULL},
    {"state.backend.type", "state.backend", NULL, NULL},
    {"rest.port", "web.port", "jobmanager.web.port", NULL},
    {"rest.bind-address", "web.address", "jobmanager.web.address", NULL},
    {"web.refresh-interval", "jobmanager.web.refresh-interval", NULL, NULL},
    {NULL, NULL, NULL, NULL},
};

/* ---- the spec's flinkConfiguration map ---- */

static struct conf_entry *spec_find_exact(const struct spec *s, const char *key)
{
	for (size_t i = 0; i < s->nconf; i++)
		if (!strcmp(s->conf[i].key, key))
			return &s->conf[i];
	return NULL;
}

static const char *const *aliases_of(const char *key)
{
	for (size_t i = 0; key_aliases[i][0]; i++)
		if (!strcmp(key_aliases[i][0], key))
			return key_aliases[i];
	return NULL;
}

static struct conf_entry *spec_find(const struct spec *s, const char *key)
{
	struct conf_entry *e = spec_find_exact(s, key);
	if (e)
		return e;
	const char *const *al = aliases_of(key);
	for (size_t i = 1; al && i < 4 && al[i]; i++)
		if ((e = spec_find_exact(s, al[i])))
			return e;
	return NULL;
}

const char *spec_canonical_key(const char *key)
{
	for (size_t i = 0; key_aliases[i][0]; i++)
		for (size_t j = 0; j < 4 && key_aliases[i][j]; j++)
			if (!strcmp(key_aliases[i][j], key))
				return key_aliases[i][0];
	return key;
}

const struct conf_entry *spec_entry(const struct spec *s, const char *key)
{
	return spec_find(s, key);
}

const char *spec_get(const struct spec *s, const char *key)
{
	const struct conf_entry *e = spec_find(s, key);
	return e ? e->value : NULL;
}

usec_t spec_duration(const struct spec *s, const char *key)
{
	usec_t v = 0;
	const char *str = spec_get(s, key);
	if (str && parse_duration(str, &v) < 0)
		v = 0;
	return v;
}

int64_t spec_int(const struct spec *s, const char *key)
{
	int64_t v = 0;
	const char *str = spec_get(s, key);
	if (str && parse_int64(str, &v) < 0)
		v = 0;
	return v;
}

bool spec_bool(const struct spec *s, const char *key)
{
	bool v = false;
	const char *str = spec_get(s, key);
	if (str && parse_bool(str, &v) < 0)
		v = false;
	return v;
}

void spec_set(struct spec *s, const char *key, const char *value, enum conf_origin origin, const struct loc *loc)
{
	struct conf_entry *e = spec_find_exact(s, key);
	if (!e) {
		s->conf = xrealloc(s->conf, (s->nconf + 1) * sizeof(*s->conf));
		e = &s->conf[s->nconf++];
		e->key = xstrdup(key);
		e->value = NULL;
	}
	free(e->value);
	e->value = xstrdup(value);
	e->origin = origin;
	e->loc = loc ? *loc : (struct loc){0};
}

void spec_free(struct spec *s)
{
	free(s->file);
	free(s->api_version);
	free(s->kind);
	free(s->name);
	free(s->flink_version);
	free(s->image);
	for (size_t i = 0; i < s->nconf; i++) {
		free(s->conf[i].key);
		free(s->conf[i].value);
	}
	free(s->conf);
	free(s->log4j_console);
	free(s->job.jar_uri);
	free(s->job.entry_class);
	strv_free(&s->job.args);
	free(s->job.initial_savepoint_path);
	memset(s, 0, sizeof(*s));
}
