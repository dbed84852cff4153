/* config_spec: a parsed spec's flinkConfiguration map (its options and Flink's keys), read and set by key: the
 * typed getters every part of flinklet uses (spec_get, spec_duration, spec_int, spec_bool), the old names Flink
 * still accepts for a key (read through the new one), what the map says about the state backend and so the
 * savepoint format flinklet asks for, and spec_free. The document's walkers are in config.c. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

/* Flink keys flinklet reads, with the deprecated spellings Flink still honours (scripts/check_option_keys.py holds
 * every key the C code reads by name to what src/config/ knows: a Flink key read here belongs in this table). */
static const char *const key_aliases[][4] = {
    {"execution.checkpointing.dir", "state.checkpoints.dir", "state.backend.fs.checkpointdir", NULL},
    {"execution.checkpointing.savepoint-dir", "state.savepoints.dir", "savepoints.state.backend.fs.dir", NULL},
    {"execution.checkpointing.num-retained", "state.checkpoints.num-retained", NULL, NULL},
    {"execution.state-recovery.path", "execution.savepoint.path", NULL, NULL},
    {"execution.state-recovery.claim-mode", "execution.savepoint-restore-mode", NULL, NULL},
    {"execution.state-recovery.ignore-unclaimed-state", "execution.savepoint.ignore-unclaimed-state", NULL, NULL},
    {"state.backend.type", "state.backend", NULL, NULL},
    {"execution.checkpointing.incremental", "state.backend.incremental", NULL, NULL},
    {"rest.port", "web.port", "jobmanager.web.port", NULL},
    {"rest.bind-address", "web.address", "jobmanager.web.address", NULL},
    {"web.refresh-interval", "jobmanager.web.refresh-interval", NULL, NULL},
    {"io.tmp.dirs", NULL, NULL, NULL},
    {"execution.checkpointing.tolerable-failed-checkpoints", NULL, NULL, NULL},
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

bool spec_user_set(const struct spec *s, const char *key)
{
	const struct conf_entry *e = spec_find(s, key);
	return e && e->origin != ORIGIN_DEFAULT;
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

/* ---- the state backend and the savepoint format ---- */

enum state_backend spec_state_backend(const struct spec *s)
{
	static const struct {
		const char *name;
		enum state_backend b;
	} names[] = {
	    {"hashmap", BACKEND_HASHMAP},
	    {"org.apache.flink.runtime.state.hashmap.HashMapStateBackendFactory", BACKEND_HASHMAP},
	    {"rocksdb", BACKEND_ROCKSDB},
	    {"org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackendFactory", BACKEND_ROCKSDB}, /* 1.x */
	    {"org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackendFactory", BACKEND_ROCKSDB},           /* 2.x */
	    {"forst", BACKEND_FORST},
	    {"org.apache.flink.state.forst.ForStStateBackendFactory", BACKEND_FORST},
	};
	const char *v = spec_get(s, "state.backend.type");
	if (!v)
		return BACKEND_HASHMAP;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(v, names[i].name))
			return names[i].b;
	return BACKEND_OTHER;
}

const char *state_backend_name(enum state_backend b)
{
	switch (b) {
	case BACKEND_HASHMAP:
		return "hashmap";
	case BACKEND_ROCKSDB:
		return "rocksdb";
	case BACKEND_FORST:
		return "forst";
	case BACKEND_OTHER:
		break;
	}
	return "a factory class";
}

const char *spec_savepoint_format(const struct spec *s, enum state_backend running, enum savepoint_use use)
{
	const char *set = spec_get(s, "kubernetes.operator.savepoint.format.type");
	if (set)
		return !strcmp(set, "NATIVE") ? "NATIVE" : "CANONICAL";
	if (running == BACKEND_FORST)
		return "NATIVE";
	/* with the changelog state backend a savepoint is restored in legacy mode (sup_restore.c): a canonical one
	 * shares no file with the checkpoints after it, so its disposal never breaks them */
	if (spec_bool(s, "state.changelog.enabled"))
		return "CANONICAL";
	/* a backend change (an upgrade to another one) needs the canonical format to be restored from */
	if (use == SAVEPOINT_STOP && running == BACKEND_ROCKSDB && spec_state_backend(s) == BACKEND_ROCKSDB)
		return "NATIVE";
	return "CANONICAL";
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
	free(s->job.sql_script);
	free(s->job.sql_text);
	free(s->job.sql);
	strv_free(&s->job.args);
	free(s->job.initial_savepoint_path);
	memset(s, 0, sizeof(*s));
}
