/* supervisor: `flinklet run`. One sd-event loop owns everything: signals (TERM/INT/QUIT/HUP/CHLD), the
 * JVM's exit (SIGCHLD through a signalfd source: noticed at once, never polled), the REST poll timer,
 * libcurl's sockets, and the shutdown deadline. It keeps the status document and the event log on the
 * state volume up to date. */
#ifndef FLINKLET_SUPERVISOR_H
#define FLINKLET_SUPERVISOR_H

#include <signal.h>
#include <stdbool.h>

#include "config.h"

struct run_options {
	bool exit_on_finish;
	const struct config_args *cfg; /* to reload the configuration the same way */
	const char *config_path;       /* the configuration file, NULL in quick mode */
};

/* Exit codes of `flinklet run` beyond the contract's 0-3 (docs/operations.md): a stop that should have
 * taken a savepoint (upgradeMode savepoint, a JVM running) and did not; a stop that had to SIGKILL the JVM. */
#define SUP_EXIT_NO_SAVEPOINT 4
#define SUP_EXIT_KILLED 5

/* The signals `flinklet run`'s loop handles (TERM, INT, QUIT, HUP, CHLD), into *set: main() blocks them first thing,
 * so that one sent during the set-up waits for the loop instead of being lost. */
void supervisor_handled_signals(sigset_t *set);

/* Runs the job of spec until told to stop; takes ownership of spec (allocated with malloc). Returns the
 * process exit code (contract section 1). */
int supervisor_run(struct spec *spec, const struct run_options *opts);

#endif
