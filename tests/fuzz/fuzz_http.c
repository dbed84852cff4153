/* fuzz_http: the supervisor's HTTP endpoint as a client meets it. The input is the raw bytes a client sends on
 * one connection (one or more HTTP/1.1 requests, pipelined, possibly malformed). They go through the real
 * server (src/http/http.c: libmicrohttpd on the sd-event loop, its limits, the request body handling) and the real
 * routes and bearer-token check (src/supervisor/sup_http.c, started by sup_http_start as `flinklet run` does), on a
 * supervisor with a real spec and a state directory of its own.
 *
 * How: the server gets one end of a socketpair through http_add_connection (no TCP connection is made), the
 * input is written to the other end and the loop runs until nothing more happens; then the client shuts down
 * its write side and the loop runs until the server has closed the connection (or again nothing more happens:
 * then the server is replaced, so that the next input does not meet the connection). The responses are read
 * and dropped (FLINKLET_FUZZ_SHOW=1 prints them and the supervisor's log to stderr, to replay an input).
 *
 * The connection limit and the recovery from it: flinklet.http.max-connections is 3, and each input meets 0, 1
 * or 2 idle connections held open next to its own ((size / 6) % 3). With 2, the server is full once the input's
 * connection is in: one more connection is refused at once (checked). After the input the idle ones hang up,
 * and a probe on a new connection (GET /healthz) must be admitted and answered (200 or 503) through the same
 * event loop glue (MHD's epoll fd as an I/O source, its timeout as a timer): whatever the input did, a server
 * that was full serves again once its connections are gone.
 *
 * The supervisor: set up once per process like supervisor_run's set-up, without a JVM, REST client, signals or
 * lock (tests/support/sup_fixture.c, as the unit tests' supervisors built by hand): a state directory in a temp
 * dir (removed at exit; in $TMPDIR, else /dev/shm, else /tmp), flinklet.http.address 127.0.0.1:0 and the API token in
 * <state dir>/http.token (the token is in the seeds and in fuzz_http.dict, so authorized requests are found). Each
 * input starts in one of six states, picked by its length (size % 6: RUNNING, STARTING, BACKOFF, SUSPENDED, FINISHED,
 * FAILED), so every answer of /healthz, /readyz and /api/v1/ is reachable; its requests may then move the state machine
 * (suspend, resume) through the real lifecycle table. Afterwards everything the input changed is put back, so that each
 * input leaves the heap as it found it (libFuzzer's leak check runs when an input allocates more than it frees).
 *
 * Nothing is launched and nothing goes to the network (the listening socket sup_http_start binds on 127.0.0.1
 * is never connected to): no JVM runs (jvm_pid 0), so a savepoint or checkpoint request is only noted
 * (sup_snapshot_kick starts one only with a JVM) and a suspend stops nothing; upgradeMode is last-state, so a
 * suspend sends no stop-with-savepoint (there is no REST client); and the one action that would start
 * something, a resume, goes through sup_launch, whose first step (artifact_plan) refuses the jarURI this
 * target puts into the validated spec (scheme "fuzz-no-launch:"): the launch fails before anything is fetched
 * or spawned (ArtifactInvalid, a restart backoff). That swap of spec.job.jarURI is the only seam; should a
 * launch ever get further, flinklet.java.bin names no program, and the target checks after each input that no
 * JVM and no download was started. flinklet.restart.max-attempts is 0 (no limit), so repeated failed resumes
 * never reach FAILED, whose sup_exit would end the shared event loop. */
#include "fuzz.h"

#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "http.h"
#include "store.h"
#include "sup.h"
#include "sup_fixture.h"

/* the API token (at least 16 characters); also in the seeds and fuzz_http.dict */
#define TOKEN "f1ac5e7f00d5eed0f1ac5e7f00d5eed0"
#define MAX_ROUNDS 100000 /* event loop rounds per input */
#define IDLE_ROUNDS 3     /* rounds without progress that count as "nothing more happens" */
#define MAX_CONNECTIONS 3 /* flinklet.http.max-connections in CONF */

/* the spec's entries beyond those of every supervisor built by hand (tests/support/sup_fixture.c) */
static const char CONF[] = "    flinklet.http.address: 127.0.0.1:0\n"
                           "    flinklet.http.max-connections: \"3\"\n";

static const struct {
	enum sup_state state;
	const char *job_state; /* what Flink (or the supervisor) last said */
} STARTS[] = {
    {SUP_RUNNING, "RUNNING"},     {SUP_STARTING, "CREATED"},  {SUP_BACKOFF, NULL},
    {SUP_SUSPENDED, "SUSPENDED"}, {SUP_FINISHED, "FINISHED"}, {SUP_FAILED, "FAILED"},
};

static struct supervisor sup;
static char *http_address, *token_file; /* what sup_http_start put into the status */
static bool show;                       /* FLINKLET_FUZZ_SHOW=1: the responses go to stderr */

static void remove_dir(void)
{
	if (sup.state_dir)
		rm_rf(sup.state_dir);
}

/* The status as the set-up leaves it (every input starts from it again). */
static void status_baseline(struct supervisor *s)
{
	status_init(&s->status);
	memcpy(s->status.job_id, s->job_id, sizeof(s->job_id));
	status_set_string(&s->status.name, s->spec->name);
	status_set_string(&s->status.flink_version, s->flink_version);
	status_set_string(&s->status.http_address, http_address);
	status_set_string(&s->status.token_file, token_file);
	s->status.supervisor_pid = getpid();
}

static void setup(void)
{
	struct supervisor *s = &sup;
	show = getenv("FLINKLET_FUZZ_SHOW") != NULL;
	log_set_level(show ? LOG_LEVEL_DEBUG : LOG_LEVEL_FATAL);
	signal(SIGPIPE, SIG_IGN); /* as supervisor_run: a client that went away is an EPIPE */

	/* the seam (see the top): a jarURI artifact_plan refuses, so that no launch gets anywhere */
	if (sup_fixture_init(
	        s, &(struct sup_fixture){.name = "fuzz-http", .conf = CONF, .jar = "fuzz-no-launch:job.jar"}) < 0)
		abort();
	atexit(remove_dir);
	char *path = path_join(s->state_dir, "http.token");
	if (write_file_atomic_mode(path, TOKEN "\n", strlen(TOKEN) + 1, 0600) < 0)
		abort();
	free(path);
	sup_reload_apply_state_override(s, s->spec);
	if (sup_http_start(s) < 0 || !s->http.server || !s->http.token || strcmp(s->http.token, TOKEN))
		abort();
	http_address = xstrdup(s->status.http_address);
	token_file = xstrdup(s->status.token_file);
	status_free(&s->status);
	status_baseline(s);
}

/* Puts s in the input's starting state (only plain fields and the job state string, freed by finish). */
static void start(struct supervisor *s, size_t size)
{
	size_t i = size % (sizeof(STARTS) / sizeof(STARTS[0]));
	s->state = STARTS[i].state;
	s->spec->job.state = s->state == SUP_SUSPENDED ? JOB_STATE_SUSPENDED : JOB_STATE_RUNNING;
	s->reload.file_job_state = JOB_STATE_RUNNING;
	s->status.lifecycle = sup_lifecycle(s);
	status_set_string(&s->status.job_state, STARTS[i].job_state);
}

/* Checks what no input may cause, then undoes what the input changed. */
static void finish(struct supervisor *s)
{
	int code;
	FUZZ_ASSERT(s->launch.jvm_pid == 0 && !s->fetch.active && !s->snapshot.op.active);
	FUZZ_ASSERT(sd_event_get_exit_code(s->event, &code) == -ENODATA); /* nothing ended the loop */

	s->backoff_timer = sup_disarm(s->backoff_timer);
	s->launch.startup_timer = sup_disarm(s->launch.startup_timer);
	s->stop.kill_timer = sup_disarm(s->stop.kill_timer);
	s->stop.deadline_timer = sup_disarm(s->stop.deadline_timer);
	s->reload.readiness_timer = sup_disarm(s->reload.readiness_timer);
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
	s->snapshot.savepoint_poll_timer = sup_disarm(s->snapshot.savepoint_poll_timer);
	s->fetch.retry = sup_disarm(s->fetch.retry);
	artifact_free(&s->launch.jar);
	free(s->last_written);
	s->last_written = NULL;
	s->snapshot.want_savepoint = s->snapshot.want_checkpoint = false;
	s->snapshot.want_savepoint_trigger = s->snapshot.want_checkpoint_trigger = NULL;
	s->consecutive_failures = 0;
	s->stable_since = 0;
	s->stop.purpose = STOP_EXIT;
	s->snapshot.savepoint_recorded = s->launch.next_fresh = false;
	s->snapshot.savepoints = s->snapshot.savepoint_failures = s->snapshot.checkpoints = 0;
	s->snapshot.checkpoint_failures = s->http.unauthorized = s->autoscaler.scalings = 0;
	s->poll.flink_completed = s->poll.flink_failed = 0;
	status_free(&s->status);
	status_baseline(s);
	/* the files an input wrote (events.jsonl would grow without bound) */
	static const char *const files[] = {"events.jsonl", "status.json", "job-state.override"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *path = path_join(s->state_dir, files[i]);
		unlink(path);
		free(path);
	}
}

/* Moves bytes between the client's end and the input/the void. Returns whether any moved; sets *closed when
 * the server closed the connection. */
static bool pump(int fd, const uint8_t *data, size_t size, size_t *off, bool *closed)
{
	bool moved = false;
	while (*off < size) {
		ssize_t n = send(fd, data + *off, size - *off, MSG_NOSIGNAL);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				*off = size; /* the server is gone: the rest is never read */
			break;
		}
		*off += (size_t)n;
		moved = true;
	}
	char buf[16384];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			if (show)
				fwrite(buf, 1, (size_t)n, stderr);
			moved = true;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			*closed = true;
		break;
	}
	return moved;
}

/* A new connection to the server: the client's end (non-blocking), or -1 when the server refused it. */
static int client(struct supervisor *s)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (http_add_connection(s->http.server, sv[0]) < 0) {
		close(sv[1]);
		return -1;
	}
	return sv[1];
}

/* Runs the loop until nothing more happens (IDLE_ROUNDS rounds without a dispatch). */
static void settle(struct supervisor *s)
{
	for (int round = 0, idle = 0; round < MAX_ROUNDS && idle < IDLE_ROUNDS; round++) {
		int r = sd_event_run(s->event, 0);
		FUZZ_ASSERT(r >= 0);
		idle = r > 0 ? 0 : idle + 1;
	}
}

/* GET /healthz on a new connection: it must be admitted and answered. */
static void probe(struct supervisor *s)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n";
	int fd = client(s);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1));
	char head[16] = {0};
	size_t got = 0;
	bool closed = false;
	for (int round = 0, idle = 0; round < MAX_ROUNDS && !closed && idle < IDLE_ROUNDS; round++) {
		int r = sd_event_run(s->event, 0);
		FUZZ_ASSERT(r >= 0);
		idle = r > 0 ? 0 : idle + 1;
		for (;;) {
			char buf[4096];
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			if (n > 0) {
				size_t take = (size_t)n < sizeof(head) - 1 - got ? (size_t)n : sizeof(head) - 1 - got;
				memcpy(head + got, buf, take);
				got += take;
				idle = 0;
				continue;
			}
			closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
			break;
		}
	}
	close(fd);
	FUZZ_ASSERT(closed && (!strncmp(head, "HTTP/1.1 200 ", 13) || !strncmp(head, "HTTP/1.1 503 ", 13)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!sup.event)
		setup();
	struct supervisor *s = &sup;
	start(s, size);
	enum sup_state initial = s->state;

	/* idle connections next to the input's: with MAX_CONNECTIONS - 1 of them the server is full */
	int held[MAX_CONNECTIONS - 1];
	size_t nheld = (size / 6) % MAX_CONNECTIONS;
	for (size_t i = 0; i < nheld; i++) {
		held[i] = client(s);
		FUZZ_ASSERT(held[i] >= 0);
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	size_t off = 0;
	bool closed = false, shut = false;
	pump(sv[1], data, size, &off, &closed);
	FUZZ_ASSERT(http_add_connection(s->http.server, sv[0]) == 0);
	if (nheld == MAX_CONNECTIONS - 1)
		FUZZ_ASSERT(client(s) < 0); /* full: one more is refused */
	for (int round = 0, idle = 0; round < MAX_ROUNDS; round++) {
		int r = sd_event_run(s->event, 0);
		FUZZ_ASSERT(r >= 0);
		if (r > 0 || (!closed && pump(sv[1], data, size, &off, &closed))) {
			idle = 0;
			continue;
		}
		if (++idle < IDLE_ROUNDS)
			continue;
		if (closed || shut || off < size)
			break;
		/* everything sent and answered as far as it goes: the client shuts down its side only now, so
		 * that the server sees that as an event of its own (MHD reads a socket again only after a new
		 * epoll edge once a read came back short; data and EOF queued together would wait for the
		 * 10 s connection timeout) */
		shutdown(sv[1], SHUT_WR);
		shut = true;
		idle = 0;
	}
	close(sv[1]);
	/* the idle ones hang up; then the server must serve a new connection */
	for (size_t i = 0; i < nheld; i++)
		close(held[i]);
	settle(s);
	probe(s);
	if (!closed) {
		/* the server kept a connection open whose client has sent everything and shut down its side;
		 * a new server, so that the next input starts without it */
		sup_http_stop(s);
		FUZZ_ASSERT(sup_http_start(s) == 0);
		free(http_address);
		http_address = xstrdup(s->status.http_address);
	}

	/* without the token, no control request was accepted */
	if (!memmem(data, size, TOKEN, strlen(TOKEN)))
		FUZZ_ASSERT(!s->snapshot.want_savepoint && !s->snapshot.want_checkpoint && s->state == initial &&
		            s->spec->job.state == (initial == SUP_SUSPENDED ? JOB_STATE_SUSPENDED : JOB_STATE_RUNNING));
	finish(s);
	return 0;
}
