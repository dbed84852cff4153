/* cli: the commands that talk to a running supervisor over its HTTP endpoint: `flinklet savepoint|checkpoint
 * [--wait]`, `suspend`, `resume`, and `status --url`. The endpoint and the token are found through the state
 * directory's status.json (supervisor.httpAddress, supervisor.tokenFile) unless --url is given. Blocking
 * libcurl calls: these are short-lived client commands, not the supervisor. */
#ifndef FLINKLET_CLI_H
#define FLINKLET_CLI_H

#include <stdbool.h>

struct control_args {
	const char *action;    /* savepoint, checkpoint, suspend, resume */
	const char *state_dir; /* where status.json is */
	const char *url;       /* http://host:port, overrides the state directory's */
	const char *token_file;
	bool wait;
};

/* Returns the process exit code. */
int cli_control(const struct control_args *a);
/* GET <url>/status; prints it (--json) or returns the probe result. Returns the exit code. */
int cli_fetch_status(const char *url, char **ret_json);

#endif
