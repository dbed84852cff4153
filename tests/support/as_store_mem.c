/* as_store_mem: an in-memory autoscaler state store for the tests (the standalone autoscaler's default): one JSON
 * value per (job key, state kind), lost when the process ends; flush does nothing. It is not for
 * persistence (as_store_file.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_store_mem.h"

struct mem_job {
	char *key;
	cJSON *v[AS_STATE_KIND_COUNT];
};

struct mem_store {
	struct mem_job *jobs;
	size_t n;
};

static struct mem_job *mem_find(struct mem_store *m, const char *key, bool create)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->jobs[i].key, key))
			return &m->jobs[i];
	if (!create)
		return NULL;
	m->jobs = xrealloc(m->jobs, (m->n + 1) * sizeof(*m->jobs));
	struct mem_job *j = &m->jobs[m->n++];
	memset(j, 0, sizeof(*j));
	j->key = xstrdup(key);
	return j;
}

static int mem_get(void *impl, const char *job_key, enum as_state_kind kind, cJSON **ret, char **ret_error)
{
	struct mem_job *j = mem_find(impl, job_key, false);
	*ret = j && j->v[kind] ? cJSON_Duplicate(j->v[kind], true) : NULL;
	return 0;
}

static int mem_put(void *impl, const char *job_key, enum as_state_kind kind, cJSON *value)
{
	struct mem_job *j = mem_find(impl, job_key, true);
	cJSON_Delete(j->v[kind]);
	j->v[kind] = value;
	return 0;
}

static int mem_remove(void *impl, const char *job_key, enum as_state_kind kind)
{
	struct mem_job *j = mem_find(impl, job_key, false);
	if (j) {
		cJSON_Delete(j->v[kind]);
		j->v[kind] = NULL;
	}
	return 0;
}

static void mem_job_free(struct mem_job *j)
{
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++)
		cJSON_Delete(j->v[k]);
	free(j->key);
}

static int mem_clear_all(void *impl, const char *job_key)
{
	struct mem_store *m = impl;
	struct mem_job *j = mem_find(m, job_key, false);
	if (j) {
		mem_job_free(j);
		*j = m->jobs[--m->n];
	}
	return 0;
}

static int mem_flush(void *impl, const char *job_key, char **ret_error)
{
	return 0;
}

static void mem_free(void *impl)
{
	struct mem_store *m = impl;
	for (size_t i = 0; i < m->n; i++)
		mem_job_free(&m->jobs[i]);
	free(m->jobs);
	free(m);
}

static const struct as_state_store_ops mem_ops = {
    .get = mem_get,
    .put = mem_put,
    .remove = mem_remove,
    .clear_all = mem_clear_all,
    .flush = mem_flush,
    .free = mem_free,
};

struct as_state_store as_store_memory_new(void)
{
	return (struct as_state_store){&mem_ops, xcalloc(1, sizeof(struct mem_store))};
}
