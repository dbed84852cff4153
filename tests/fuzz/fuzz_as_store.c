/* fuzz_as_store: the file state store's loader as the supervisor meets it after a restart. The input is
 * written as <dir>/<job key>.json; a new autoscaler on that directory loads the job (the store's reader,
 * then every state kind's loader), runs one control-loop cycle on a fixed two-vertex job (so the loaded
 * history, delays and overrides are used), and flushes (the store's writer and its size bound). */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

#define KEY "00000000000000000000000000000001"

static char dir[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int realize(void *ud, const char *job_key, const struct as_pmap *overrides)
{
	return 0;
}

static void handle(void *ud, const char *job_key, enum as_event_type type, const char *reason, const char *message,
                   const char *message_key, int64_t interval_ms)
{
	FUZZ_ASSERT(reason && message);
}

static const char DETAILS[] =
    "{\"timestamps\": {\"RUNNING\": 1000}, \"vertices\": ["
    " {\"id\": \"src\", \"maxParallelism\": 128, \"parallelism\": 2, \"status\": \"RUNNING\","
    "  \"metrics\": {\"read-records\": 0, \"write-records\": 1000, \"accumulated-busy-time\": 0}},"
    " {\"id\": \"agg\", \"maxParallelism\": 128, \"parallelism\": 2, \"status\": \"RUNNING\","
    "  \"metrics\": {\"read-records\": 1000, \"write-records\": 0, \"accumulated-busy-time\": 0}}],"
    " \"plan\": {\"nodes\": [{\"id\": \"src\", \"parallelism\": 2},"
    "  {\"id\": \"agg\", \"parallelism\": 2, \"inputs\": [{\"id\": \"src\", \"ship_strategy\": \"HASH\"}]}]}}";

static void remove_dir(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/flinklet-fuzz-store-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_dir);
	}
	char path[128];
	snprintf(path, sizeof(path), "%s/%s.json", dir, KEY);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);

	struct as_realizer rz = {.realize = realize};
	struct as_event_handler ev = {.handle = handle};
	struct autoscaler *as = autoscaler_new(&rz, &ev, as_store_file_new(dir));
	struct as_job *job = autoscaler_job(as, KEY);
	cJSON *d = cJSON_Parse(DETAILS);
	as_collect_topology(job, d, NULL, NULL);
	cJSON_Delete(d);
	struct as_options o;
	as_options_defaults(&o);
	o.enabled = true;
	o.stabilization_ms = 0;
	o.metrics_window_ms = 1000;
	struct as_context ctx = {.job_key = KEY, .options = &o, .job_status = "RUNNING", .now_ms = 1767225600000};
	autoscaler_scale(as, &ctx);
	cJSON *ov = autoscaler_overrides_json(as, KEY);
	FUZZ_ASSERT(ov);
	cJSON_Delete(ov);
	cJSON *rep = autoscaler_report_json(as, KEY);
	FUZZ_ASSERT(rep);
	cJSON_Delete(rep);
	as_options_free(&o);
	autoscaler_free(as);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	mkdir(dir, 0700);
	return 0;
}
