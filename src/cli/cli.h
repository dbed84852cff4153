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
/* GET <url>/status within timeout_s seconds: 0 with the body in *ret_json (malloc'd), else 1 (said on stderr). */
int cli_fetch_status(const char *url, long timeout_s, char **ret_json);
/* The URL that reaches a supervisor's endpoint recorded as addr (supervisor.httpAddress: host:port; 0.0.0.0 and
 * [::] become the loopback address). malloc'd. */
char *cli_endpoint_url(const char *addr);

#endif
