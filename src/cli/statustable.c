/* statustable: the table `flinklet status` prints for a person (see src/cli/statustable.h): the status document
 * line by line, each snapshot with its age, every error that stands and the warnings in force, and without a
 * supervisor what `flinklet run` would start from. */
#include "statustable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshots.h"

static void print_age(const char *label, const struct snapshot_ref *r)
{
	if (!r->location) {
		printf("%-16s -\n", label);
		return;
	}
	long long age = ((long long)(now_realtime() / USEC_PER_MSEC) - (long long)r->time_ms) / 1000;
	printf("%-16s %s (%llds ago%s%s)\n", label, r->location, age, r->trigger_type ? ", " : "",
	       r->trigger_type ? r->trigger_type : "");
}

/* What `flinklet run` on this state directory would start from: the newest restore point, as the supervisor
 * picks it (the highest checkpoint id of the job's checkpoints and savepoints). */
static void print_next_start(const char *dir, const struct status *st)
{
	if (!dir || !st->job_id[0]) {
		printf("%-16s -\n", "next start");
		return;
	}
	char *ck = path_join(dir, "checkpoints"), *sp = path_join(dir, "savepoints");
	const char *recorded[SAVEPOINT_HISTORY_MAX + 2] = {0};
	size_t n = 0;
	if (st->last_savepoint.location && !st->last_savepoint.claimed)
		recorded[n++] = st->last_savepoint.location;
	for (int i = 0; i < st->n_savepoint_history && n < SAVEPOINT_HISTORY_MAX + 1; i++)
		recorded[n++] = st->savepoint_history[i].location;
	struct restore_scan scan = {ck, sp, st->job_id, recorded, NULL, false};
	struct restore_list list;
	restore_points_scan(&scan, &list);
	if (list.n) {
		char *uri = file_uri_from_path(list.v[0].path);
		printf("%-16s restores %s %s (checkpoint id %lld)\n", "next start",
		       restore_kind_to_string(list.v[0].kind), uri, (long long)list.v[0].id);
		free(uri);
	} else {
		printf("%-16s starts the job with empty state (no checkpoint or savepoint in %s)\n", "next start", dir);
	}
	restore_list_free(&list);
	free(ck);
	free(sp);
}

void status_table_print(const struct status *st, bool supervised, const char *dir)
{
	printf("%-16s %s\n", "name", st->name ? st->name : "-");
	printf("%-16s %s (pid %d)\n", "supervisor", supervised ? "running" : "not running", (int)st->supervisor_pid);
	printf("%-16s %s\n", "lifecycle", lifecycle_to_string(st->lifecycle));
	printf("%-16s %s\n", "job id", st->job_id[0] ? st->job_id : "-");
	if (supervised && st->jvm_pid > 0)
		printf("%-16s %s (%d/%d tasks running, %d finished)\n", "job state",
		       st->job_state ? st->job_state : "-", st->tasks_running, st->tasks_total, st->tasks_finished);
	else
		printf("%-16s %s (no JVM runs%s%s)\n", "job state", st->job_state ? st->job_state : "-",
		       st->job_state ? ": the last state Flink reported" : "", supervised ? "" : ", no supervisor");
	printf("%-16s %s %s", "restored from", st->restored_kind ? st->restored_kind : "none",
	       st->restored_location ? st->restored_location : "");
	if (st->restored_location && st->restored_id >= 0)
		printf(" (checkpoint id %lld)", (long long)st->restored_id);
	printf("\n");
	print_age("last checkpoint", &st->last_checkpoint);
	print_age("last savepoint", &st->last_savepoint);
	char pid[24] = "-", last[48] = "none yet";
	if (supervised && st->jvm_pid > 0)
		snprintf(pid, sizeof(pid), "%d", (int)st->jvm_pid);
	if (st->last_exit_signal >= 0)
		snprintf(last, sizeof(last), "signal %d", st->last_exit_signal);
	else if (st->last_exit_code >= 0)
		snprintf(last, sizeof(last), "code %d", st->last_exit_code);
	printf("%-16s pid %s, %d restarts, last exit %s\n", "jvm", pid, status_jvm_restarts(st), last);
	printf("%-16s %s (REST port %d)\n", "flink", st->flink_version ? st->flink_version : "-", st->rest_port);
	printf("%-16s %s\n", "endpoint", st->http_address ? st->http_address : "-");
	printf("%-16s %s\n", "error", st->error ? st->error : "-");
	/* every other error that stands, then the warnings in force: what the newest events said and still holds */
	for (int i = 0; i < STATUS_ERR_MAX; i++)
		if (st->errors[i].message && (!st->error || strcmp(st->errors[i].message, st->error)))
			printf("%-16s %s\n", "error", st->errors[i].message);
	long long now_ms = (long long)(now_realtime() / USEC_PER_MSEC);
	for (int i = 0; i < STATUS_WARN_MAX; i++)
		if (st->warnings[i].message)
			printf("%-16s %s (for %llds): %s\n", "warning",
			       status_warning_event((enum status_warning_source)i),
			       (now_ms - (long long)st->warnings[i].since_ms) / 1000, st->warnings[i].message);
	if (!supervised)
		print_next_start(dir, st);
}
