/* sup_fixture: a supervisor built by hand for the tests that drive the real supervisor without a JVM
 * (tests/unit/test_dispatch.c, tests/fuzz/fuzz_http.c): a real, validated spec, a state directory of its own, the
 * paths and fields supervisor_run's set-up fills in, and an sd-event loop; no lock, REST client, signals, journal,
 * HTTP server or JVM (a test starts what it needs).
 *
 * Nothing is launched: the validated spec's jarURI is swapped for one the caller names whose scheme artifact_plan
 * refuses (e.g. "test-no-launch:job.jar"), so a launch fails before anything is fetched or spawned; should one
 * get further, flinklet.java.bin names no program. flinklet.restart.max-attempts is 0 (no limit), so repeated
 * failed launches never reach FAILED, whose sup_exit would end the loop.
 *
 * Linked into the unit, unit-asan and fuzz binaries (the Makefile's SUPPORT_SRCS); it depends on no test framework:
 * a failure is returned and said on stderr, and the caller asserts. */
#ifndef FLINKLET_TESTS_SUP_FIXTURE_H
#define FLINKLET_TESTS_SUP_FIXTURE_H

#include "sup.h"

struct sup_fixture {
	const char *name; /* metadata.name */
	const char *conf; /* more flinkConfiguration entries, each "    key: value\n" (NULL: none) */
	const char *jar;  /* the jarURI put into the validated spec (see the top) */
};

/* Makes a fresh state directory (in $TMPDIR, else /dev/shm when writable, else /tmp: the supervisor fsyncs every
 * event and status) and builds s on it (s is zeroed first). Returns 0, or -1 after saying why on stderr. */
int sup_fixture_init(struct supervisor *s, const struct sup_fixture *f);

/* Frees what s holds (sup_free) and removes its state directory with everything in it. */
void sup_fixture_free(struct supervisor *s);

#endif
