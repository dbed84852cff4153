/* as_store_file: the autoscaler state store on the volume: one JSON document per job,
 * <dir>/<job key>.json ({"version": 1, "jobKey", and one member per state kind}), read once, kept in
 * memory, and replaced atomically (store.h's write_file_atomic) on flush; bounded to AS_STATE_MAX_BYTES by
 * dropping the oldest collected samples. An unreadable document is moved aside to <job key>.json.corrupt
 * and reported once (get returns -EBADMSG); the job then starts with empty state. It is not for what the
 * state means (as_state.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "store.h"

#define MAX_READ (4u << 20)
#define VERSION 1

struct file_job {
	char *key;
	cJSON *v[AS_STATE_KIND_COUNT];
	bool loaded, dirty;
	char *load_error; /* reported once through get */
};

struct file_store {
	char *dir;
	as_file_writer writer; /* NULL: write_file_atomic here */
	void *writer_ctx;
	struct file_job *jobs;
	size_t n;
};

/* Job keys become file names: letters, digits, '-', '_' and '.', not starting with '.'. */
static bool valid_key(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > 128 || k[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '-' && k[i] != '_' && k[i] != '.')
			return false;
	return true;
}

static char *job_path(const struct file_store *fs, const char *key)
{
	char *name = xasprintf("%s.json", key);
	char *p = path_join(fs->dir, name);
	free(name);
	return p;
}

static void load(struct file_store *fs, struct file_job *j)
{
	j->loaded = true;
	char *path = job_path(fs, j->key), *text = NULL;
	size_t len = 0;
	int r = read_file(path, MAX_READ, &text, &len);
	if (r == -ENOENT) {
		free(path);
		return;
	}
	cJSON *doc = NULL;
	if (r < 0)
		j->load_error = xasprintf("cannot read %s: %s", path, strerror(-r));
	else if (!(doc = cJSON_ParseWithLength(text, len)) || !cJSON_IsObject(doc))
		j->load_error = xasprintf("%s is not a JSON object", path);
	else {
		const cJSON *ver = cJSON_GetObjectItemCaseSensitive(doc, "version");
		const cJSON *key = cJSON_GetObjectItemCaseSensitive(doc, "jobKey");
		if (!cJSON_IsNumber(ver) || ver->valuedouble != VERSION)
			j->load_error = xasprintf("%s: unknown version (expected %d)", path, VERSION);
		else if (!cJSON_IsString(key) || strcmp(key->valuestring, j->key))
			j->load_error = xasprintf("%s: belongs to another job", path);
	}
	if (!j->load_error)
		for (int k = 0; k < AS_STATE_KIND_COUNT; k++)
			j->v[k] = cJSON_DetachItemFromObjectCaseSensitive(doc, as_state_kind_name(k));
	if (j->load_error) {
		char *aside = xasprintf("%s.corrupt", path);
		if (rename(path, aside) < 0 && errno != ENOENT)
			unlink(path); /* it is replaced on the next flush anyway */
		free(aside);
	}
	cJSON_Delete(doc);
	free(text);
	free(path);
}

static struct file_job *file_find(struct file_store *fs, const char *key, bool create)
{
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->jobs[i].key, key)) {
			if (!fs->jobs[i].loaded)
				load(fs, &fs->jobs[i]);
			return &fs->jobs[i];
		}
	if (!create || !valid_key(key))
		return NULL;
	fs->jobs = xrealloc(fs->jobs, (fs->n + 1) * sizeof(*fs->jobs));
	struct file_job *j = &fs->jobs[fs->n++];
	memset(j, 0, sizeof(*j));
	j->key = xstrdup(key);
	load(fs, j);
	return j;
}

static int file_get(void *impl, const char *job_key, enum as_state_kind kind, cJSON **ret, char **ret_error)
{
	*ret = NULL;
	struct file_job *j = file_find(impl, job_key, true);
	if (!j)
		return -EINVAL;
	if (j->load_error) {
		if (ret_error)
			*ret_error = j->load_error;
		else
			free(j->load_error);
		j->load_error = NULL;
		j->dirty = true; /* the next flush replaces the file that was moved aside */
		return -EBADMSG;
	}
	*ret = j->v[kind] ? cJSON_Duplicate(j->v[kind], true) : NULL;
	return 0;
}

static int file_put(void *impl, const char *job_key, enum as_state_kind kind, cJSON *value)
{
	struct file_job *j = file_find(impl, job_key, true);
	if (!j) {
		cJSON_Delete(value);
		return -EINVAL;
	}
	cJSON_Delete(j->v[kind]);
	j->v[kind] = value;
	j->dirty = true;
	return 0;
}

static int file_remove(void *impl, const char *job_key, enum as_state_kind kind)
{
	struct file_job *j = file_find(impl, job_key, true);
	if (!j)
		return -EINVAL;
	if (j->v[kind]) {
		cJSON_Delete(j->v[kind]);
		j->v[kind] = NULL;
		j->dirty = true;
	}
	return 0;
}

static int file_clear_all(void *impl, const char *job_key)
{
	struct file_job *j = file_find(impl, job_key, true);
	if (!j)
		return -EINVAL;
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++) {
		if (j->v[k])
			j->dirty = true;
		cJSON_Delete(j->v[k]);
		j->v[k] = NULL;
	}
	free(j->load_error);
	j->load_error = NULL;
	return 0;
}

/* {"version", "jobKey", and one member per state kind}: copies of the values, or references to them */
static cJSON *document(const struct file_job *j, bool copy)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "version", VERSION);
	cJSON_AddStringToObject(doc, "jobKey", j->key);
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++) {
		if (!j->v[k])
			continue;
		if (copy)
			cJSON_AddItemToObject(doc, as_state_kind_name(k), cJSON_Duplicate(j->v[k], true));
		else
			cJSON_AddItemReferenceToObject(doc, as_state_kind_name(k), j->v[k]);
	}
	return doc;
}

static int file_flush(void *impl, const char *job_key, char **ret_error)
{
	struct file_store *fs = impl;
	struct file_job *j = file_find(fs, job_key, false);
	if (!j || !j->dirty)
		return 0;
	char *path = job_path(fs, j->key);
	bool empty = true;
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++)
		empty &= j->v[k] == NULL;
	int r = 0;
	if (empty) {
		if (unlink(path) < 0 && errno != ENOENT)
			r = -errno;
	} else {
		/* the document refers to the kept values; only one too large to store is copied and trimmed */
		cJSON *doc = document(j, false);
		char *text = as_json_unformatted(doc);
		cJSON_Delete(doc);
		if (strlen(text) > AS_STATE_MAX_BYTES) {
			free(text);
			doc = document(j, true);
			as_state_bound(doc, AS_STATE_MAX_BYTES);
			text = as_json_unformatted(doc);
			cJSON_Delete(doc);
		}
		if (fs->writer) {
			fs->writer(fs->writer_ctx, path, text); /* it creates dir too */
		} else {
			r = mkdir_p(fs->dir);
			if (r == 0)
				r = write_file_atomic(path, text, strlen(text));
			free(text);
		}
	}
	if (r < 0 && ret_error)
		*ret_error = xasprintf("cannot write %s: %s", path, strerror(-r));
	if (r == 0)
		j->dirty = false;
	free(path);
	return r;
}

static void file_free(void *impl)
{
	struct file_store *fs = impl;
	for (size_t i = 0; i < fs->n; i++) {
		for (int k = 0; k < AS_STATE_KIND_COUNT; k++)
			cJSON_Delete(fs->jobs[i].v[k]);
		free(fs->jobs[i].key);
		free(fs->jobs[i].load_error);
	}
	free(fs->jobs);
	free(fs->dir);
	free(fs);
}

static const struct as_state_store_ops file_ops = {
    .get = file_get,
    .put = file_put,
    .remove = file_remove,
    .clear_all = file_clear_all,
    .flush = file_flush,
    .free = file_free,
};

struct as_state_store as_store_file_new(const char *dir)
{
	return as_store_file_new_with_writer(dir, NULL, NULL);
}

struct as_state_store as_store_file_new_with_writer(const char *dir, as_file_writer writer, void *ctx)
{
	struct file_store *fs = xcalloc(1, sizeof(*fs));
	fs->dir = xstrdup(dir);
	fs->writer = writer;
	fs->writer_ctx = ctx;
	return (struct as_state_store){&file_ops, fs};
}
