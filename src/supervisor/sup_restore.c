/* sup_restore: the restore part: where a launch starts from (the newest complete checkpoint or savepoint that has
 * not failed to restore; never empty while one exists), what the JVM's output says about it, giving a restore
 * point up only on evidence (a demotion: renamed aside, said with the next launch), and whether it is restored in
 * claim mode, which for flinklet's own savepoints depends on the version the running Flink reports of itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "flinkversion.h"
#include "sup_restore.h"
#include "sup_snapshot.h"

#define VERSION_MAX_LEN 64 /* a longer "flink-version" is no release's */

static bool strv_contains(const struct strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return true;
	return false;
}

/* The demotion's rename is done (or failed: then the point keeps its name, and failed_points still passes it over
 * for this supervisor's launches). */
static void put_aside_done(struct supervisor *s, int r, void *arg)
{
	char *aside = arg;
	if (r < 0 && r != -ENOENT)
		log_warn("unable to rename a restore point to %s: %s", aside, strerror(-r));
	free(aside);
}

/* Whether point (a local path) is a directory right inside flinklet's own savepoint directory. */
static bool in_savepoint_dir(struct supervisor *s, const char *point)
{
	size_t splen = strlen(s->sp_dir);
	return !strncmp(point, s->sp_dir, splen) && point[splen] == '/' && !strchr(point + splen + 1, '/');
}

void sup_restore_put_aside(struct supervisor *s, enum restore_kind kind, const char *point)
{
	if (kind != RESTORE_CHECKPOINT && !in_savepoint_dir(s, point))
		return;
	if (sup_volume_busy(s, point))
		return; /* already on its way aside */
	/* on the worker, before the next launch's intent (the worker's order); until it is done, the next launch's
	 * choice passes the point over (sup_volume_busy) */
	char *aside = xasprintf("%s.unreadable", point);
	sup_volume_rename(s, point, aside, put_aside_done, aside);
}

/* A launch that must not happen: the restore point it would use is older than one that is damaged (with
 * flinklet.restore.fallback: never), or every restore point of the job was given up (never start empty
 * then: that is the furthest rewind of all). The status says why; the supervisor goes FAILED. */
static int refuse_launch(struct supervisor *s, char *why)
{
	sup_error_set(s, STATUS_ERR_RESTORE, why);
	sup_alert(s, "RestoreFailed", "%s", why);
	free(why);
	s->restore.fatal = true;
	return -ENOTRECOVERABLE;
}

/* A rollback's launch: every point of the job newer than the one the rejected spec started from (all of them when
 * it started empty) is the rejected spec's, and never a restore point of the stable spec: a checkpoint is renamed
 * chk-N.disposing (the sweep removes it), a savepoint <name>.rejected (kept for a look, as it may be one the user
 * took). On the worker, ahead of the launch's intent; until then sup_volume_busy passes them over. */
static void reject_newer(struct supervisor *s, const struct restore_list *list)
{
	if (!s->reload.base.reject_pending)
		return;
	const char *base = s->reload.base.path;
	int64_t above = base ? s->reload.base.id : -1;
	unsigned n = 0;
	for (size_t i = 0; i < list->n; i++) {
		const struct restore_point *p = &list->v[i];
		if (p->initial || (base && snapshot_same(p->path, base)) || p->id <= above ||
		    sup_volume_busy(s, p->path))
			continue;
		if (p->kind == RESTORE_SAVEPOINT && !in_savepoint_dir(s, p->path))
			continue;
		char *aside = xasprintf("%s%s", p->path,
		                        p->kind == RESTORE_CHECKPOINT ? SAVEPOINT_DISPOSING_SUFFIX : REJECTED_SUFFIX);
		sup_event(s, "RestorePointRejected", "%s %s (checkpoint id %lld) was written by the rejected spec: %s",
		          restore_kind_to_string(p->kind), p->path, (long long)p->id,
		          p->kind == RESTORE_CHECKPOINT ? "removed" : "renamed aside, never restored");
		sup_volume_rename(s, p->path, aside, put_aside_done, aside);
		n++;
	}
	if (n)
		log_info("the rollback set aside %u restore point(s) of the rejected spec", n);
}

/* Chooses where the next launch starts from: the newest complete checkpoint or savepoint that has not
 * failed to restore, never empty while one exists. */
static int choose(struct supervisor *s)
{
	const char *recorded[SAVEPOINT_HISTORY_MAX + 2] = {0};
	size_t n = 0;
	if (!s->launch.fresh_start) {
		/* a claimed one is Flink's to dispose of: gone is no news (in the savepoint directory, the scan finds
		 * it while it is there) */
		if (s->status.last_savepoint.location && !s->status.last_savepoint.claimed)
			recorded[n++] = s->status.last_savepoint.location;
		for (int i = 0; i < s->status.n_savepoint_history && n < SAVEPOINT_HISTORY_MAX + 1; i++)
			recorded[n++] = s->status.savepoint_history[i].location;
	}
	struct restore_scan scan = {
	    .checkpoint_dir = s->ckpt_dir,
	    .savepoint_dir = s->sp_dir,
	    .job_id = s->job_id,
	    .recorded_savepoints = recorded,
	    .initial_savepoint = s->spec->job.initial_savepoint_path,
	    .first_start = s->launch.first_start,
	};
	struct restore_list list;
	int r = restore_points_scan(&scan, &list);
	for (size_t i = 0; i < list.skipped.n; i++)
		if (!strv_contains(&s->restore.reported_skips, list.skipped.v[i])) {
			strv_push(&s->restore.reported_skips, list.skipped.v[i]);
			/* a checkpoint a crash interrupted (no _metadata yet) is normal and said at info; a damaged
			 * or vanished one is an error */
			if (strstr(list.skipped.v[i], "no _metadata (incomplete)"))
				sup_event(s, "RestorePointSkipped", "%s", list.skipped.v[i]);
			else
				sup_alert(s, "RestorePointSkipped", "%s", list.skipped.v[i]);
		}
	reject_newer(s, &list);
	/* a point on its way aside (a demotion's rename, a disposal's, still on the worker) is never chosen: it is
	 * renamed, or removed, under the JVM */
	const struct restore_point *pick = NULL, *again = NULL;
	for (size_t i = 0; i < list.n && !pick; i++) {
		if (sup_volume_busy(s, list.v[i].path))
			continue;
		if (!again)
			again = &list.v[i];
		if (!strv_contains(&s->restore.failed_points, list.v[i].path))
			pick = &list.v[i];
	}
	if (!pick && again) {
		sup_alert(s, "RestorePointsExhausted", "every restore point failed once; trying the newest again (%s)",
		          again->path);
		strv_free(&s->restore.failed_points);
		pick = again;
	}
	/* a damaged snapshot newer than the pick: skipping it is a rewind, said like a demotion */
	const char *fallback = spec_get(s->spec, "flinklet.restore.fallback");
	bool never = fallback && !strcmp(fallback, "never");
	for (size_t i = 0; r == 0 && i < list.ncorrupt; i++) {
		const struct corrupt_point *c = &list.corrupt[i];
		if (!corrupt_point_is_newer(c, pick) || sup_volume_busy(s, c->path))
			continue;
		if (never) {
			char *why = xasprintf("%s %s is damaged (%s) and newer than %s; flinklet.restore.fallback is "
			                      "never: not rewinding job %s to an older restore point",
			                      restore_kind_to_string(c->kind), c->path, c->why,
			                      pick ? pick->path : "any other restore point", s->job_id);
			restore_list_free(&list);
			return refuse_launch(s, why);
		}
		sup_restore_put_aside(s, c->kind, c->path);
		free(s->restore.demoted_note);
		s->restore.demoted_note = xasprintf("%s %s was given up: its _metadata is damaged (%s)",
		                                    restore_kind_to_string(c->kind), c->path, c->why);
	}
	if (r == 0 && !pick && (list.given_up > 0 || s->restore.failed_points.n > 0)) {
		char *why = xasprintf("every restore point of job %s was given up (renamed *.unreadable in %s and %s): "
		                      "not starting it empty, which would rewind it to nothing; look at them, then "
		                      "rename one back or remove them to start the job empty",
		                      s->job_id, s->ckpt_dir, s->sp_dir);
		restore_list_free(&list);
		return refuse_launch(s, why);
	}
	free(s->restore.path);
	s->restore.path = pick ? xstrdup(pick->path) : NULL;
	s->restore.kind = pick ? pick->kind : RESTORE_NONE;
	s->restore.id = pick ? pick->id : -1;
	restore_list_free(&list);
	if (r < 0) {
		sup_alert(s, "RestorePointsUnreadable",
		          "unable to read the snapshot directories (%s): not starting until "
		          "they can be read",
		          strerror(-r));
		return r;
	}
	return 0;
}

/* The history entry of flinklet's own stop savepoint in the native format at path, or -1. */
static int own_native_stop_savepoint(struct supervisor *s, const char *path)
{
	for (int i = s->status.n_savepoint_history - 1; i >= 0; i--) {
		const struct snapshot_ref *h = &s->status.savepoint_history[i];
		if (h->trigger_type && !strcmp(h->trigger_type, "UPGRADE") && h->format_type &&
		    !strcmp(h->format_type, "NATIVE") && snapshot_same(h->location, path))
			return i;
	}
	return -1;
}

static int claimed_index(struct supervisor *s, const char *path)
{
	for (int i = 0; i < s->status.n_claimed_savepoints; i++)
		if (snapshot_same(s->status.claimed_savepoints[i].location, path))
			return i;
	return -1;
}

/* Whether the launch restores its point in claim mode: a checkpoint always (flinklet's own, Flink cleans it up
 * once subsumed); a savepoint when it is one flinklet took itself to stop the job (trigger UPGRADE), in the native
 * format, in its own savepoint directory, or one claimed already (a launch that died before it checkpointed),
 * flinklet.restore.claim-savepoints is auto and the Flink version restores what comes after (FLINK-39964). Then the
 * first checkpoint after the restore is incremental: it shares the savepoint's files instead of uploading the whole
 * state again. A manual or periodic savepoint, a canonical one (restored by re-inserting every key: its first
 * checkpoint is a full one either way) and one from elsewhere are never Flink's to delete. */
static bool claim_restore(struct supervisor *s)
{
	if (s->restore.kind != RESTORE_NONE && sup_upgrade_on_trial(s)) {
		log_info("restoring %s in no_claim mode: the spec is on trial with rollback on, and its rollback may "
		         "need the point it started from",
		         s->restore.path);
		return false;
	}
	if (s->restore.kind == RESTORE_CHECKPOINT)
		return true;
	const char *mode = spec_get(s->spec, "flinklet.restore.claim-savepoints");
	if (s->restore.kind != RESTORE_SAVEPOINT || !s->restore.path || (mode && !strcmp(mode, "never")) ||
	    !in_savepoint_dir(s, s->restore.path))
		return false;
	bool claimed = claimed_index(s, s->restore.path) >= 0;
	if (!claimed && own_native_stop_savepoint(s, s->restore.path) < 0)
		return false;
	if (!claimed && s->status.n_claimed_savepoints >= CLAIMED_SAVEPOINTS_MAX) {
		/* the list would drop its oldest claim, which nothing would then dispose of or keep from export */
		log_info("restoring savepoint %s in no_claim mode: %d claimed savepoints are not disposed of yet",
		         s->restore.path, s->status.n_claimed_savepoints);
		return false;
	}
	/* before FLINK-39964 the checkpoints after such a restore name the savepoint's files relative to their own
	 * directory: the next restore from one of them fails (FileNotFoundException). What counts is the version the
	 * Flink of these jars said it is when it last ran (never the jars' names); before any said it, no claim. Also
	 * for one claimed by an earlier launch on a fixed version (the jars went back): no_claim leaves it where it
	 * is, still on the claimed list for the sweep. */
	const struct sup_restore *r = &s->restore;
	bool same_jars = r->lib_reported && r->lib_launched && !strcmp(r->lib_reported, r->lib_launched);
	if (!same_jars || !r->flink_reported) {
		log_info(
		    "restoring flinklet's own NATIVE savepoint %s in no_claim mode: no JVM of these Flink jars (%s) "
		    "has said its version yet (GET /config), and claim mode needs a Flink with FLINK-39964 (fixed in "
		    "2.2.2, 2.3.1 and 2.4); the first checkpoint after the restore is a full one",
		    s->restore.path, r->lib_launched ? r->lib_launched : "unreadable");
		return false;
	}
	if (!flinkversion_claims_native_savepoints(r->flink_reported)) {
		log_info("restoring flinklet's own NATIVE savepoint %s in no_claim mode: with Flink %s (as it said of "
		         "itself) the checkpoints after a claim-mode restore of it could not be restored (FLINK-39964, "
		         "fixed in the releases 2.2.2, 2.3.1 and 2.4; a snapshot or a vendor's build counts as without "
		         "it); the first checkpoint after the restore is a full one",
		         s->restore.path, r->flink_reported);
		return false;
	}
	return true;
}

/* The Flink jars a launch with spec runs (malloc'd): flinklet.flink.home's lib/ and that directory's identity
 * (device, inode, modification time: a jar added, removed or renamed there changes it); NULL when unreadable. */
static char *lib_identity(const struct spec *spec)
{
	char *lib = path_join(spec_get(spec, "flinklet.flink.home"), "lib");
	struct stat st;
	char *id = stat(lib, &st) == 0 ? xasprintf("%s, directory %llu:%llu modified %lld.%09ld", lib,
	                                           (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	                                           (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec)
	                               : NULL;
	free(lib);
	return id;
}

static void ask_version(struct supervisor *s);

/* GET /config answered: its "flink-version" is the version of the running JVM's Flink, which gates the next
 * launch's claim (with the jars this launch ran); anything else leaves the next launch without a version. */
static void on_config(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	struct sup_restore *r = &s->restore;
	r->version_asking = false;
	if (s->closing || s->launch.jvm_pid <= 0)
		return;
	if (r->version_gen != s->launch.gen) {
		/* an earlier JVM's answer: the one that runs now asks its own */
		if (s->state == SUP_RUNNING)
			ask_version(s);
		return;
	}
	const cJSON *v = code == 200 && !error ? cJSON_GetObjectItemCaseSensitive(body, "flink-version") : NULL;
	char *version = cJSON_IsString(v) && strlen(v->valuestring) <= VERSION_MAX_LEN ? xstrdup(v->valuestring) : NULL;
	bool news = !version != !r->flink_reported || (version && strcmp(version, r->flink_reported));
	if (!version)
		log_warn("Flink did not say its version (GET /config: %s): flinklet's own savepoints are restored in "
		         "no_claim mode",
		         error         ? error
		         : code != 200 ? "not 200"
		                       : "no flink-version of at most 64 characters");
	else if (news)
		log_info("Flink says it is version %s: flinklet's own NATIVE stop savepoints are restored in %s mode "
		         "while it runs these jars (FLINK-39964)",
		         version, flinkversion_claims_native_savepoints(version) ? "claim" : "no_claim");
	free(r->flink_reported);
	r->flink_reported = version;
	free(r->lib_reported);
	r->lib_reported = r->lib_launched ? xstrdup(r->lib_launched) : NULL;
}

/* Asks the running JVM its version (one request at a time, never waited for). */
static void ask_version(struct supervisor *s)
{
	struct sup_restore *r = &s->restore;
	if (r->version_asking || !s->rest)
		return;
	if (rest_get_capped(s->rest, "/config", spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"),
	                    64 * 1024, on_config, s) < 0)
		return;
	r->version_asking = true;
	r->version_gen = s->launch.gen;
}

/* The savepoint restored in claim mode leaves the history: Flink's checkpoints own it from this launch on, and
 * Flink deletes it (its _metadata, and its files once no checkpoint shares them) when newer checkpoints subsume
 * it, so retention must never count or dispose of it. It is kept in the status's claimed list (what the sweep
 * disposes of once a dead JVM left it behind), and lastSavepoint, when it is that one, says claimed. */
static void claim_savepoint(struct supervisor *s)
{
	if (claimed_index(s, s->restore.path) >= 0)
		return; /* claimed by an earlier launch already */
	int h = own_native_stop_savepoint(s, s->restore.path);
	if (h < 0)
		return;
	struct status *st = &s->status;
	struct snapshot_ref *c =
	    snapshot_history_push(st->claimed_savepoints, &st->n_claimed_savepoints, CLAIMED_SAVEPOINTS_MAX);
	*c = sup_snapshot_claimed(s, h);
	c->id = s->restore.id;
	c->claimed = true;
	sup_event(s, "SavepointClaimed",
	          "savepoint %s (checkpoint id %lld, NATIVE) is restored in claim mode: the job's checkpoints own it "
	          "from now on and share its files (the next checkpoint is incremental); it leaves the savepoint "
	          "history, and Flink disposes of it once newer checkpoints subsume it",
	          c->location, (long long)c->id);
	sup_write_status(s);
}

int sup_restore_choose(struct supervisor *s)
{
	int r = choose(s);
	if (r < 0)
		return r;
	free(s->restore.lib_launched);
	s->restore.lib_launched = lib_identity(s->spec);
	s->restore.claim = claim_restore(s);
	if (s->restore.claim && s->restore.kind == RESTORE_SAVEPOINT)
		claim_savepoint(s);
	/* the changelog state backend takes a savepoint in claim or legacy mode only: its first checkpoint after a
	 * no_claim restore fails, and so does every one after it (FLINK-40476). Legacy leaves the savepoint where it
	 * is, Flink's neither to delete nor to copy; flinklet's own savepoints are canonical with changelog
	 * (spec_savepoint_format), so no checkpoint after the restore shares their files. */
	s->restore.legacy = !s->restore.claim &&
	                    (s->restore.kind == RESTORE_SAVEPOINT ||
	                     (s->restore.kind == RESTORE_CHECKPOINT && sup_upgrade_on_trial(s))) &&
	                    spec_bool(s->spec, "state.changelog.enabled");
	s->restore.reached = false;
	free(s->restore.evidence);
	s->restore.evidence = NULL;
	free((char *)s->restore.scan.job_ckpt_dir);
	s->restore.scan = (struct restorelog){
	    .restore_path = s->restore.path,
	    .kind = s->restore.kind,
	    .job_ckpt_dir = path_join(s->ckpt_dir, s->job_id),
	};
	return 0;
}

void sup_restore_line(struct supervisor *s, const char *line)
{
	if (!s->restore.path || (s->state != SUP_STARTING && s->state != SUP_STOP_PENDING))
		return;
	switch (restorelog_feed(&s->restore.scan, line)) {
	case RESTORELOG_STARTED:
		s->restore.reached = true;
		break;
	case RESTORELOG_UNREADABLE:
		s->restore.reached = true;
		if (s->restore.evidence)
			break;
		s->restore.evidence = xstrdup(s->restore.scan.evidence[0] ? s->restore.scan.evidence : line);
		log_warn("Flink cannot read the restore point %s: %s", s->restore.path, s->restore.evidence);
		sup_raise(s, EV_RESTORE_UNREADABLE);
		break;
	case RESTORELOG_NONE:
		break;
	}
}

/* Says, with the launch that follows it, which restore point was given up, why, and what it means. */
void sup_restore_say_demotion(struct supervisor *s, const char *uri)
{
	if (!s->restore.demoted_note) {
		/* a demotion is said while the launch it came with runs, not after */
		sup_error_clear(s, STATUS_ERR_DEMOTED);
		return;
	}
	char *msg = uri ? xasprintf("%s; restoring job %s from %s %s instead: output committed after it may be "
	                            "repeated",
	                            s->restore.demoted_note, s->job_id, restore_kind_to_string(s->restore.kind), uri)
	                : xasprintf("%s; no other restore point is left", s->restore.demoted_note);
	sup_error_set(s, STATUS_ERR_DEMOTED, msg);
	sup_alert(s, "RestorePointDemoted", "%s", msg);
	free(msg);
	free(s->restore.demoted_note);
	s->restore.demoted_note = NULL;
}

void sup_restore_forget_failures(struct supervisor *s)
{
	strv_free(&s->restore.failed_points);
}

bool sup_restore_take_fatal(struct supervisor *s)
{
	bool fatal = s->restore.fatal;
	s->restore.fatal = false;
	return fatal;
}

void sup_restore_running(struct supervisor *s)
{
	s->restore.fail_count = 0;
	free(s->restore.fail_path);
	s->restore.fail_path = NULL;
	if (s->restore.version_gen != s->launch.gen)
		ask_version(s);
}

/* The JVM is gone before the job was RUNNING. The restore point is given up only on evidence: Flink said it
 * cannot read it, or flinklet.restore.max-failures launches in a row got as far as restoring it and exited on
 * their own. Slowness is never evidence: a launch the startup timeout stopped counts neither way (a large state
 * on a slow volume restores slowly from every point, and an older one would rewind the job). Anything else (a
 * port clash, a missing jar, a kill from outside) tries the same point again after the backoff. */
bool sup_restore_start_failed(struct supervisor *s, bool timed_out)
{
	const char *point = s->restore.path;
	if (!point)
		return false;
	const char *kind = restore_kind_to_string(s->restore.kind);
	const char *cause = s->launch.start_cause ? s->launch.start_cause : "no cause printed";
	/* the JVM ran out of memory: the state does not fit it, an older point would not either (and would rewind) */
	bool no_memory = strstr(cause, "OutOfMemoryError") || strstr(cause, "Could not allocate enough memory");
	bool on_its_own = s->status.last_exit_signal < 0 && !timed_out && !no_memory;
	char *why = NULL;
	if (s->restore.evidence) {
		why = xasprintf("Flink cannot read it: %s", s->restore.evidence);
	} else if (no_memory && s->restore.reached) {
		sup_event(
		    s, "RestoreRetry",
		    "the JVM ran out of memory while it restored job %s from %s %s (%s); that is no evidence that the "
		    "point is unreadable (it is never given up for it): restoring the same point again",
		    s->job_id, kind, point, cause);
	} else if (timed_out && s->restore.reached) {
		sup_event(s, "RestoreRetry",
		          "the startup timeout stopped the JVM while it restored job %s from %s %s; a timeout is no "
		          "evidence that the point is unreadable (it is never given up for one): restoring the same "
		          "point again",
		          s->job_id, kind, point);
	} else if (on_its_own && s->restore.reached) {
		if (s->restore.fail_path && !strcmp(s->restore.fail_path, point)) {
			s->restore.fail_count++;
		} else {
			free(s->restore.fail_path);
			s->restore.fail_path = xstrdup(point);
			s->restore.fail_count = 1;
		}
		int64_t max = spec_int(s->spec, "flinklet.restore.max-failures");
		if (s->restore.fail_count >= (unsigned)max)
			why = xasprintf(
			    "%u launches in a row failed while restoring it (flinklet.restore.max-failures is "
			    "%lld); the last one: %s",
			    s->restore.fail_count, (long long)max, cause);
		else
			sup_event(
			    s, "RestoreRetry",
			    "the JVM failed while restoring job %s from %s %s (%s); restoring the same point again "
			    "(%u of %lld failed launches before it is given up)",
			    s->job_id, kind, point, cause, s->restore.fail_count, (long long)max);
	} else {
		sup_event(s, "RestoreRetry",
		          "the JVM %s before job %s was RUNNING (%s); nothing says %s %s is unreadable: restoring the "
		          "same point again",
		          s->status.last_exit_signal >= 0 && !timed_out ? "was killed" : "failed", s->job_id,
		          timed_out ? "startup timeout" : cause, kind, point);
	}
	if (!why)
		return false;
	s->restore.fail_count = 0;
	free(s->restore.fail_path);
	s->restore.fail_path = NULL;
	const char *fallback = spec_get(s->spec, "flinklet.restore.fallback");
	if (fallback && !strcmp(fallback, "never")) {
		char *err =
		    xasprintf("%s %s cannot be restored (%s); flinklet.restore.fallback is never: not rewinding "
		              "job %s to an older restore point",
		              kind, point, why, s->job_id);
		sup_error_set(s, STATUS_ERR_RESTORE, err);
		sup_set_job_state(s, "FAILED");
		sup_alert(s, "RestoreFailed", "%s", err);
		free(err);
		free(why);
		return true;
	}
	strv_push(&s->restore.failed_points, point);
	sup_restore_put_aside(s, s->restore.kind, point);
	free(s->restore.demoted_note);
	s->restore.demoted_note = xasprintf("%s %s was given up: %s", kind, point, why);
	sup_alert(s, "RestoreFailed",
	          "job %s cannot restore from %s %s: %s; the next start uses the next older "
	          "restore point",
	          s->job_id, kind, point, why);
	free(why);
	return false;
}

void sup_restore_forget_claimed(struct supervisor *s, const struct strv *gone)
{
	struct status *st = &s->status;
	int kept = 0;
	for (int i = 0; i < st->n_claimed_savepoints; i++) {
		struct snapshot_ref *c = &st->claimed_savepoints[i];
		char *path = local_path_from_uri(c->location);
		bool drop = false;
		for (size_t k = 0; path && k < gone->n && !drop; k++)
			drop = !strcmp(gone->v[k], path);
		free(path);
		if (drop) {
			snapshot_ref_free(c);
			continue;
		}
		if (kept != i) {
			st->claimed_savepoints[kept] = *c;
			memset(c, 0, sizeof(*c));
		}
		kept++;
	}
	if (kept == st->n_claimed_savepoints)
		return;
	st->n_claimed_savepoints = kept;
	sup_write_status(s);
}

void sup_restore_free(struct supervisor *s)
{
	strv_free(&s->restore.failed_points);
	strv_free(&s->restore.reported_skips);
	free(s->restore.path);
	free(s->restore.evidence);
	free(s->restore.fail_path);
	free((char *)s->restore.scan.job_ckpt_dir);
	free(s->restore.demoted_note);
	free(s->restore.flink_reported);
	free(s->restore.lib_reported);
	free(s->restore.lib_launched);
}
