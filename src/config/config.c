/* config: the configuration document -> typed spec (see src/config/config.h).
 *
 * The document is loaded with libyaml's document API (one tree, aliases resolved, marks on every
 * node) and walked level by level; every error names file:line:col and the field's path. Inputs are
 * bounded (size, node count) so that a hostile document cannot exhaust memory or time. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include <cjson/cJSON.h>

#define MAX_DOCUMENT_BYTES (1u << 20)
#define MAX_NODES 20000
#define MAX_CONF_DEPTH 16

const char *upgrade_mode_to_string(enum upgrade_mode m)
{
	switch (m) {
	case UPGRADE_STATELESS:
		return "stateless";
	case UPGRADE_SAVEPOINT:
		return "savepoint";
	case UPGRADE_LAST_STATE:
		return "last-state";
	}
	return "?";
}

const char *job_state_to_string(enum job_state s)
{
	return s == JOB_STATE_SUSPENDED ? "suspended" : "running";
}

void diags_add(struct diags *d, const struct loc *loc, const char *field, const char *fmt, ...)
{
	struct strbuf b = {0};
	if (loc && loc->file && loc->line > 0)
		strbuf_appendf(&b, "%s:%d:%d: ", loc->file, loc->line, loc->col);
	else if (loc && loc->file)
		strbuf_appendf(&b, "%s: ", loc->file);
	if (field)
		strbuf_appendf(&b, "%s: ", field);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	strv_push_take(&d->msgs, strbuf_steal(&b));
}

void diags_free(struct diags *d)
{
	strv_free(&d->msgs);
}

/* ---- YAML walking ---- */

/* The entry of exactly this key (not an alias of it): a key given twice in the document. */
static bool has_key(const struct spec *s, const char *key)
{
	for (size_t i = 0; i < s->nconf; i++)
		if (!strcmp(s->conf[i].key, key))
			return true;
	return false;
}

struct walker {
	yaml_document_t *doc;
	struct spec *spec;
	struct diags *d;
	const char *file;
	size_t visited;
	const char *text; /* the document's bytes, for where an inline script's lines start */
	size_t len;
};

static struct loc node_loc(const struct walker *w, const yaml_node_t *n)
{
	return (struct loc){w->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *v = scalar(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	default:
		return is_null(n) ? "null" : "a scalar";
	}
}

static bool walk_budget(struct walker *w, const yaml_node_t *n)
{
	if (++w->visited <= MAX_NODES)
		return true;
	if (w->visited == MAX_NODES + 1) {
		struct loc l = node_loc(w, n);
		diags_add(w->d, &l, NULL, "document too large (more than %d nodes, aliases included)", MAX_NODES);
	}
	return false;
}

static void unknown_field(struct walker *w, const yaml_node_t *key, const char *parent, const char *const *known,
                          size_t nknown)
{
	struct loc l = node_loc(w, key);
	char *field = xasprintf("%s%s%s", parent, *parent ? "." : "", scalar(key));
	const char *hint = did_you_mean(scalar(key), known, nknown);
	if (hint)
		diags_add(w->d, &l, field, "unknown field (did you mean \"%s\"?)", hint);
	else
		diags_add(w->d, &l, field, "unknown field");
	free(field);
}

typedef void (*field_fn)(struct walker *w, const char *path, yaml_node_t *value);

struct field {
	const char *name;
	field_fn fn; /* NULL: accepted and not used in-process */
};

static void walk_mapping(struct walker *w, yaml_node_t *map, const char *path, const struct field *fields)
{
	if (map->type != YAML_MAPPING_NODE) {
		struct loc l = node_loc(w, map);
		diags_add(w->d, &l, *path ? path : "(document)", "must be a mapping (got %s)", node_kind(map));
		return;
	}
	size_t nknown = 0;
	while (fields[nknown].name)
		nknown++;
	const char **known = xcalloc(nknown, sizeof(char *));
	for (size_t i = 0; i < nknown; i++)
		known[i] = fields[i].name;

	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		if (!k || !v || !walk_budget(w, k))
			break;
		if (k->type != YAML_SCALAR_NODE) {
			struct loc l = node_loc(w, k);
			diags_add(w->d, &l, *path ? path : "(document)", "keys must be strings (got %s)", node_kind(k));
			continue;
		}
		/* duplicate keys are an error, as in Kubernetes' strict decoding */
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *qk = yaml_document_get_node(w->doc, q->key);
			if (qk && qk->type == YAML_SCALAR_NODE && !strcmp(scalar(qk), scalar(k))) {
				struct loc l = node_loc(w, k);
				char *field = xasprintf("%s%s%s", path, *path ? "." : "", scalar(k));
				diags_add(w->d, &l, field, "duplicate key (first defined at line %d)",
				          (int)qk->start_mark.line + 1);
				free(field);
				goto next;
			}
		}
		const struct field *f = NULL;
		for (size_t i = 0; i < nknown; i++)
			if (!strcmp(fields[i].name, scalar(k)))
				f = &fields[i];
		if (!f) {
			unknown_field(w, k, path, known, nknown);
			continue;
		}
		if (f->fn) {
			char *sub = xasprintf("%s%s%s", path, *path ? "." : "", f->name);
			f->fn(w, sub, v);
			free(sub);
		}
	next:;
	}
	free(known);
}

/* A scalar string field; null leaves *out as it is. */
static bool want_string(struct walker *w, const char *path, yaml_node_t *v, char **out)
{
	if (is_null(v))
		return false;
	if (v->type != YAML_SCALAR_NODE) {
		struct loc l = node_loc(w, v);
		diags_add(w->d, &l, path, "must be a string (got %s)", node_kind(v));
		return false;
	}
	free(*out);
	*out = xstrdup(scalar(v));
	return true;
}

static bool want_int(struct walker *w, const char *path, yaml_node_t *v, int64_t min, int64_t max, int64_t *out)
{
	struct loc l = node_loc(w, v);
	if (v->type != YAML_SCALAR_NODE || is_null(v)) {
		diags_add(w->d, &l, path, "must be an integer (got %s)", node_kind(v));
		return false;
	}
	int64_t x;
	int r = parse_int64(scalar(v), &x);
	if (r < 0 || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		diags_add(w->d, &l, path, "must be an integer (got \"%s\")", scalar(v));
		return false;
	}
	if (x < min || x > max) {
		diags_add(w->d, &l, path, "must be between %lld and %lld (got %lld)", (long long)min, (long long)max,
		          (long long)x);
		return false;
	}
	*out = x;
	return true;
}

static void want_bool(struct walker *w, const char *path, yaml_node_t *v, bool *out)
{
	struct loc l = node_loc(w, v);
	if (v->type != YAML_SCALAR_NODE || parse_bool(scalar(v), out) < 0 ||
	    v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		diags_add(w->d, &l, path, "must be true or false (got %s%s%s)", v->type == YAML_SCALAR_NODE ? "\"" : "",
		          v->type == YAML_SCALAR_NODE ? scalar(v) : node_kind(v),
		          v->type == YAML_SCALAR_NODE ? "\"" : "");
}

static void f_api_version(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!want_string(w, path, v, &w->spec->api_version))
		return;
	if (strcmp(w->spec->api_version, "flink.apache.org/v1beta1")) {
		struct loc l = node_loc(w, v);
		diags_add(w->d, &l, path, "must be flink.apache.org/v1beta1 (got \"%s\")", w->spec->api_version);
	}
}

static void f_kind(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!want_string(w, path, v, &w->spec->kind))
		return;
	if (strcmp(w->spec->kind, "FlinkMiniCluster") && strcmp(w->spec->kind, "FlinkDeployment")) {
		struct loc l = node_loc(w, v);
		diags_add(w->d, &l, path, "must be FlinkMiniCluster or FlinkDeployment (got \"%s\")", w->spec->kind);
	}
}

static bool is_dns1123_label(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i < n - 1);
		if (!ok)
			return false;
	}
	return true;
}

static void f_name(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!want_string(w, path, v, &w->spec->name))
		return;
	if (!is_dns1123_label(w->spec->name)) {
		struct loc l = node_loc(w, v);
		diags_add(w->d, &l, path,
		          "must be a DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', starting and ending "
		          "with a letter or digit (got \"%s\")",
		          w->spec->name);
	}
}

static void f_metadata(struct walker *w, const char *path, yaml_node_t *v)
{
	static const struct field fields[] = {
	    {"name", f_name}, {"namespace", NULL}, {"labels", NULL}, {"annotations", NULL}, {NULL, NULL},
	};
	walk_mapping(w, v, path, fields);
}

static void f_flink_version(struct walker *w, const char *path, yaml_node_t *v)
{
	static const char *const versions[] = {"v1_20", "v2_0", "v2_1", "v2_2", "v2_3"};
	if (!want_string(w, path, v, &w->spec->flink_version))
		return;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(versions[i], w->spec->flink_version))
			return;
	struct loc l = node_loc(w, v);
	diags_add(w->d, &l, path, "must be one of v1_20, v2_0, v2_1, v2_2, v2_3 (got \"%s\")", w->spec->flink_version);
}

static void f_image(struct walker *w, const char *path, yaml_node_t *v)
{
	want_string(w, path, v, &w->spec->image);
}

/* flinkConfiguration: nested mappings are flattened with '.', as Flink's own YAML parser does. */
static void conf_walk(struct walker *w, const char *prefix, const char *path, yaml_node_t *v, int depth)
{
	if (!walk_budget(w, v))
		return;
	struct loc l = node_loc(w, v);
	if (depth > MAX_CONF_DEPTH) {
		/* also what stops a self-referencing alias (x: &a {y: *a}) */
		diags_add(w->d, &l, path, "nested too deeply (more than %d levels)", MAX_CONF_DEPTH);
		return;
	}
	if (v->type == YAML_MAPPING_NODE) {
		if (*prefix && v->data.mapping.pairs.start == v->data.mapping.pairs.top) {
			diags_add(w->d, &l, path, "must not be an empty mapping");
			return;
		}
		for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
			yaml_node_t *val = yaml_document_get_node(w->doc, p->value);
			if (!k || !val)
				break;
			if (k->type != YAML_SCALAR_NODE || !*scalar(k)) {
				struct loc kl = node_loc(w, k);
				diags_add(w->d, &kl, path, "keys must be non-empty strings");
				continue;
			}
			char *key = xasprintf("%s%s%s", prefix, *prefix ? "." : "", scalar(k));
			char *sub = xasprintf("spec.flinkConfiguration.%s", key);
			if (has_key(w->spec, key)) {
				struct loc kl = node_loc(w, k);
				diags_add(w->d, &kl, sub, "duplicate key");
			} else {
				conf_walk(w, key, sub, val, depth + 1);
			}
			free(key);
			free(sub);
		}
		return;
	}
	if (!*prefix) {
		diags_add(w->d, &l, path, "must be a mapping (got %s)", node_kind(v));
		return;
	}
	if (v->type == YAML_SEQUENCE_NODE) {
		/* Flink's list values: joined with ';' as in its flat format */
		struct strbuf b = {0};
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *item = yaml_document_get_node(w->doc, *it);
			if (!item || item->type != YAML_SCALAR_NODE) {
				diags_add(w->d, &l, path, "list items must be scalars");
				strbuf_free(&b);
				return;
			}
			if (b.len)
				strbuf_append(&b, ";");
			strbuf_append(&b, scalar(item));
		}
		char *s = strbuf_steal(&b);
		spec_set(w->spec, prefix, s, ORIGIN_FILE, &l);
		free(s);
		return;
	}
	if (is_null(v)) {
		diags_add(w->d, &l, path, "must have a value (got null)");
		return;
	}
	spec_set(w->spec, prefix, scalar(v), ORIGIN_FILE, &l);
}

static void f_flink_configuration(struct walker *w, const char *path, yaml_node_t *v)
{
	if (is_null(v))
		return;
	conf_walk(w, "", path, v, 0);
}

static void f_memory(struct walker *w, const char *path, yaml_node_t *v)
{
	struct loc l = node_loc(w, v);
	uint64_t bytes;
	if (is_null(v))
		return; /* not set */
	if (v->type != YAML_SCALAR_NODE || is_null(v) || parse_memory(scalar(v), &bytes) < 0) {
		diags_add(w->d, &l, path, "must be a memory size such as 2048m, 2g or 2Gi (got %s%s%s)",
		          v->type == YAML_SCALAR_NODE ? "\"" : "",
		          v->type == YAML_SCALAR_NODE ? scalar(v) : node_kind(v),
		          v->type == YAML_SCALAR_NODE ? "\"" : "");
		return;
	}
	/* too small is judged with the rest of the spec (membudget: it depends on the state backend) */
	w->spec->memory = bytes;
	w->spec->memory_loc = l;
}

static void f_cpu(struct walker *w, const char *path, yaml_node_t *v)
{
	struct loc l = node_loc(w, v);
	double cpu;
	if (is_null(v))
		return; /* not set */
	if (v->type != YAML_SCALAR_NODE || is_null(v) || parse_cpu(scalar(v), &cpu) < 0 || cpu <= 0 || cpu > 1024) {
		diags_add(w->d, &l, path, "must be a positive number of cores such as 1, 0.5 or 500m (got %s%s%s)",
		          v->type == YAML_SCALAR_NODE ? "\"" : "",
		          v->type == YAML_SCALAR_NODE ? scalar(v) : node_kind(v),
		          v->type == YAML_SCALAR_NODE ? "\"" : "");
		return;
	}
	w->spec->cpu = cpu;
}

static void f_resources(struct walker *w, const char *path, yaml_node_t *v)
{
	static const struct field fields[] = {
	    {"memory", f_memory},
	    {"cpu", f_cpu},
	    {"ephemeralStorage", NULL},
	    {NULL, NULL},
	};
	walk_mapping(w, v, path, fields);
}

static void f_log4j_console(struct walker *w, const char *path, yaml_node_t *v)
{
	want_string(w, path, v, &w->spec->log4j_console);
}

static void f_log_configuration(struct walker *w, const char *path, yaml_node_t *v)
{
	static const struct field fields[] = {
	    {"log4j-console.properties", f_log4j_console},
	    {"logback-console.xml", NULL},
	    {NULL, NULL},
	};
	walk_mapping(w, v, path, fields);
}

static void f_jar_uri(struct walker *w, const char *path, yaml_node_t *v)
{
	if (want_string(w, path, v, &w->spec->job.jar_uri))
		w->spec->job.jar_uri_loc = node_loc(w, v);
}

static void f_entry_class(struct walker *w, const char *path, yaml_node_t *v)
{
	if (want_string(w, path, v, &w->spec->job.entry_class))
		w->spec->job.entry_class_loc = node_loc(w, v);
}

static void f_sql_script(struct walker *w, const char *path, yaml_node_t *v)
{
	if (want_string(w, path, v, &w->spec->job.sql_script))
		w->spec->job.sql_script_loc = node_loc(w, v);
}

/* spec.job.sql: a literal block (`sql: |`) keeps the script's lines as they are in the file, so that a position in
 * the script is one in the file: its first line follows the indicator's, every line at the first one's indent. */
static void f_sql(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!want_string(w, path, v, &w->spec->job.sql))
		return;
	struct job_spec *j = &w->spec->job;
	j->sql_loc = node_loc(w, v);
	j->sql_mapped = false;
	if (v->data.scalar.style != YAML_LITERAL_SCALAR_STYLE)
		return;
	size_t p = v->start_mark.index;
	while (p < w->len && w->text[p] != '\n')
		p++;
	for (size_t start = ++p; p < w->len; start = ++p) {
		while (p < w->len && w->text[p] == ' ')
			p++;
		if (p < w->len && w->text[p] != '\n') { /* the first line with text: the block's indent */
			j->sql_loc = (struct loc){w->file, (int)v->start_mark.line + 2, (int)(p - start) + 1};
			j->sql_mapped = true;
			return;
		}
	}
}

static void f_args(struct walker *w, const char *path, yaml_node_t *v)
{
	if (is_null(v))
		return;
	struct loc l = node_loc(w, v);
	if (v->type != YAML_SEQUENCE_NODE) {
		diags_add(w->d, &l, path, "must be a list of strings (got %s)", node_kind(v));
		return;
	}
	strv_free(&w->spec->job.args);
	int i = 0;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
		yaml_node_t *item = yaml_document_get_node(w->doc, *it);
		if (!item || !walk_budget(w, item))
			break;
		if (item->type != YAML_SCALAR_NODE || is_null(item)) {
			struct loc il = node_loc(w, item);
			char *field = xasprintf("%s[%d]", path, i);
			diags_add(w->d, &il, field, "must be a string (got %s)", node_kind(item));
			free(field);
			continue;
		}
		strv_push(&w->spec->job.args, scalar(item));
	}
}

static void f_parallelism(struct walker *w, const char *path, yaml_node_t *v)
{
	want_int(w, path, v, 1, 32768, &w->spec->job.parallelism);
}

static void f_upgrade_mode(struct walker *w, const char *path, yaml_node_t *v)
{
	struct loc l = node_loc(w, v);
	const char *s = v->type == YAML_SCALAR_NODE ? scalar(v) : NULL;
	if (s && !strcmp(s, "stateless"))
		w->spec->job.upgrade_mode = UPGRADE_STATELESS;
	else if (s && !strcmp(s, "savepoint"))
		w->spec->job.upgrade_mode = UPGRADE_SAVEPOINT;
	else if (s && !strcmp(s, "last-state"))
		w->spec->job.upgrade_mode = UPGRADE_LAST_STATE;
	else if (s) {
		static const char *const modes[] = {"stateless", "savepoint", "last-state"};
		const char *hint = did_you_mean(s, modes, 3);
		diags_add(w->d, &l, path, "must be one of stateless, savepoint, last-state (got \"%s\")%s%s%s", s,
		          hint ? "; did you mean \"" : "", hint ? hint : "", hint ? "\"?" : "");
	} else
		diags_add(w->d, &l, path, "must be one of stateless, savepoint, last-state (got %s)", node_kind(v));
}

static void f_state(struct walker *w, const char *path, yaml_node_t *v)
{
	struct loc l = node_loc(w, v);
	const char *s = v->type == YAML_SCALAR_NODE ? scalar(v) : NULL;
	if (s && !strcmp(s, "running"))
		w->spec->job.state = JOB_STATE_RUNNING;
	else if (s && !strcmp(s, "suspended"))
		w->spec->job.state = JOB_STATE_SUSPENDED;
	else
		diags_add(w->d, &l, path, "must be running or suspended (got %s%s%s)", s ? "\"" : "",
		          s ? s : node_kind(v), s ? "\"" : "");
}

static void f_savepoint_nonce(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!is_null(v))
		want_int(w, path, v, INT64_MIN, INT64_MAX, &w->spec->job.savepoint_trigger_nonce);
}

static void f_checkpoint_nonce(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!is_null(v))
		want_int(w, path, v, INT64_MIN, INT64_MAX, &w->spec->job.checkpoint_trigger_nonce);
}

static void f_initial_savepoint(struct walker *w, const char *path, yaml_node_t *v)
{
	if (!want_string(w, path, v, &w->spec->job.initial_savepoint_path))
		return;
	w->spec->job.initial_savepoint_loc = node_loc(w, v);
	if (!*w->spec->job.initial_savepoint_path) {
		free(w->spec->job.initial_savepoint_path);
		w->spec->job.initial_savepoint_path = NULL;
	}
}

static void f_allow_non_restored(struct walker *w, const char *path, yaml_node_t *v)
{
	want_bool(w, path, v, &w->spec->job.allow_non_restored_state);
}

static void f_job(struct walker *w, const char *path, yaml_node_t *v)
{
	static const struct field fields[] = {
	    {"jarURI", f_jar_uri},
	    {"entryClass", f_entry_class},
	    {"args", f_args},
	    {"sqlScript", f_sql_script},
	    {"sql", f_sql},
	    {"parallelism", f_parallelism},
	    {"upgradeMode", f_upgrade_mode},
	    {"state", f_state},
	    {"savepointTriggerNonce", f_savepoint_nonce},
	    {"checkpointTriggerNonce", f_checkpoint_nonce},
	    {"initialSavepointPath", f_initial_savepoint},
	    {"allowNonRestoredState", f_allow_non_restored},
	    {"savepointRedeployNonce", NULL},
	    {NULL, NULL},
	};
	walk_mapping(w, v, path, fields);
}

static void f_spec(struct walker *w, const char *path, yaml_node_t *v)
{
	static const struct field fields[] = {
	    {"flinkVersion", f_flink_version},
	    {"image", f_image},
	    {"imagePullPolicy", NULL},
	    {"serviceAccount", NULL},
	    {"flinkConfiguration", f_flink_configuration},
	    {"resources", f_resources},
	    {"logConfiguration", f_log_configuration},
	    {"podTemplate", NULL},
	    {"ingress", NULL},
	    {"jobManager", NULL},
	    {"taskManager", NULL},
	    {"mode", NULL},
	    {"restartNonce", NULL},
	    {"job", f_job},
	    {NULL, NULL},
	};
	walk_mapping(w, v, path, fields);
}

static void f_status(struct walker *w, const char *path, yaml_node_t *v)
{
	(void)w, (void)path, (void)v; /* a status block copied from kubectl output is ignored */
}

static void spec_init(struct spec *s)
{
	memset(s, 0, sizeof(*s));
	s->job.upgrade_mode = UPGRADE_SAVEPOINT;
	s->job.state = JOB_STATE_RUNNING;
}

int config_parse(const char *file, const char *text, size_t len, struct spec *ret, struct diags *d)
{
	size_t before = d->msgs.n;
	spec_init(ret);
	ret->file = xstrdup(file);
	struct loc whole = {file, 0, 0};
	if (len > MAX_DOCUMENT_BYTES) {
		diags_add(d, &whole, NULL, "document too large (%zu bytes, at most %u)", len, MAX_DOCUMENT_BYTES);
		return -EINVAL;
	}
	if (memchr(text, '\0', len)) {
		diags_add(d, &whole, NULL, "not a YAML document (contains a NUL byte)");
		return -EINVAL;
	}

	yaml_parser_t parser;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&parser)) {
		diags_add(d, &whole, NULL, "unable to initialize the YAML parser");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		struct loc l = {file, (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1};
		diags_add(d, &l, NULL, "invalid YAML: %s%s%s", parser.problem ? parser.problem : "syntax error",
		          parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || is_null(root)) {
		diags_add(d, &whole, NULL, "empty document (expected a FlinkMiniCluster mapping)");
	} else {
		struct walker w = {&doc, ret, d, ret->file, 0, text, len};
		static const struct field fields[] = {
		    {"apiVersion", f_api_version}, {"kind", f_kind}, {"metadata", f_metadata}, {"spec", f_spec},
		    {"status", f_status},          {NULL, NULL},
		};
		if (root->type != YAML_MAPPING_NODE) {
			struct loc l = node_loc(&w, root);
			diags_add(d, &l, NULL,
			          "the document must be a mapping with apiVersion, kind, metadata and spec (got %s)",
			          node_kind(root));
		} else {
			walk_mapping(&w, root, "", fields);
		}
		/* a second document in the same file is almost certainly a mistake */
		yaml_document_t next;
		if (yaml_parser_load(&parser, &next)) {
			yaml_node_t *r2 = yaml_document_get_root_node(&next);
			if (r2) {
				struct loc l = node_loc(&w, r2);
				diags_add(d, &l, NULL, "more than one YAML document; flinklet reads exactly one");
			}
			yaml_document_delete(&next);
		} else {
			struct loc l = {ret->file, (int)parser.problem_mark.line + 1,
			                (int)parser.problem_mark.column + 1};
			diags_add(d, &l, NULL, "invalid YAML: %s%s%s", parser.problem ? parser.problem : "syntax error",
			          parser.context ? " " : "", parser.context ? parser.context : "");
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return d->msgs.n > before ? -EINVAL : 0;
}
