/* config_warn: the settings of a valid configuration that flinklet warns about (config_warnings, for
 * check-config and run): a listener of the JVM off loopback, Flink's jar upload or cancel button on, a state
 * backend that cannot stop with a savepoint (ForSt with CANONICAL), checkpoints that copy the whole state every
 * time, and upgradeMode last-state with checkpointing off. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

/* ---- warnings: settings that are valid but open the job to the network (config_warnings, below) ---- */

static bool loopback_host(const char *v)
{
	char host[256];
	size_t n = strlen(v);
	if (n >= 2 && v[0] == '[' && v[n - 1] == ']') { /* [::1] */
		v++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(host))
		return false;
	memcpy(host, v, n);
	host[n] = '\0';
	if (!strcasecmp(host, "localhost") || !strcasecmp(host, "ip6-localhost") || !strcasecmp(host, "ip6-loopback"))
		return true;
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127); /* ::ffff:127.0.0.1 */
	return false;
}

/* ---- warnings: a state backend that cannot stop with a savepoint, or whose every checkpoint is a full one ---- */

static char *field_of(const struct conf_entry *e)
{
	return xasprintf("spec.flinkConfiguration.%s", e->key);
}

/* ForSt takes NATIVE savepoints only: CANONICAL set by the user makes every savepoint fail. */
static void warn_forst_canonical(const struct spec *s, struct diags *w)
{
	const struct conf_entry *fmt = spec_entry(s, "kubernetes.operator.savepoint.format.type");
	if (spec_state_backend(s) != BACKEND_FORST || !fmt || strcmp(fmt->value, "CANONICAL"))
		return;
	char *field = field_of(fmt);
	diags_add(w, &fmt->loc, "warning",
	          "%s: CANONICAL with state.backend.type forst: ForSt takes NATIVE savepoints only, so every savepoint "
	          "flinklet asks for fails: a stop with upgradeMode savepoint ends without one (exit code 4), an "
	          "upgrade or suspend goes on from the newest checkpoint (with "
	          "kubernetes.operator.job.upgrade.last-state-fallback.enabled false: the job keeps running on its "
	          "old spec); leave it unset (NATIVE with forst) or set NATIVE",
	          field);
	free(field);
}

/* RocksDB and ForSt write only the files new since the last checkpoint when checkpoints are incremental; Flink's
 * default (execution.checkpointing.incremental: false) writes the whole state every time. */
static void warn_full_checkpoints(const struct spec *s, struct diags *w)
{
	enum state_backend b = spec_state_backend(s);
	const struct conf_entry *inc = spec_entry(s, "execution.checkpointing.incremental");
	bool on = false;
	if ((b != BACKEND_ROCKSDB && b != BACKEND_FORST) || (inc && parse_bool(inc->value, &on) == 0 && on))
		return;
	static const char cost[] = "every checkpoint copies the whole state to the volume, not just the files new "
	                           "since the previous one";
	const struct conf_entry *at = inc ? inc : spec_entry(s, "state.backend.type");
	char *field = field_of(at);
	if (inc)
		diags_add(w, &at->loc, "warning", "%s: %s with the %s state backend: %s; set it to true", field,
		          inc->value, state_backend_name(b), cost);
	else
		diags_add(w, &at->loc, "warning",
		          "%s: %s without incremental checkpoints (execution.checkpointing.incremental is false by "
		          "default): %s; set execution.checkpointing.incremental: true",
		          field, at->value, cost);
	free(field);
}

/* upgradeMode last-state carries the state in checkpoints: with checkpointing off there are none (FLINK-41283: the
 * operator fails every reconcile of such an upgrade); flinklet's stops and upgrades take a savepoint instead. */
static void warn_last_state_without_checkpoints(const struct spec *s, struct diags *w)
{
	if (s->job.upgrade_mode != UPGRADE_LAST_STATE || spec_duration(s, "execution.checkpointing.interval") > 0)
		return;
	const struct conf_entry *at = spec_entry(s, "execution.checkpointing.interval");
	if (!at)
		return;
	char *field = field_of(at);
	diags_add(w, &at->loc, "warning",
	          "%s: %s turns checkpointing off, and upgradeMode last-state carries the job's state in its "
	          "checkpoints: a stop, a suspend or an upgrade takes a savepoint instead, and a crash restarts "
	          "from the newest savepoint, or empty",
	          field, at->value);
	free(field);
}

void config_warnings(const struct spec *s, struct diags *w)
{
	static const char rest[] = "Flink's REST API and web UI, which cancel, stop, savepoint and rescale the job "
	                           "for anyone without a credential,";
	static const char *const listeners[][2] = {
	    {"rest.bind-address", rest},
	    {"web.address", rest},
	    {"jobmanager.web.address", rest},
	    {"jobmanager.bind-host", "Flink's BLOB server (the job's jar and artifacts, no credential)"},
	    {"taskmanager.bind-host", "the TaskManager's sockets (collect sinks; shuffle and RPC with several "
	                              "TaskManagers)"},
	};
	for (size_t i = 0; i < s->nconf; i++) {
		const struct conf_entry *e = &s->conf[i];
		if (e->origin == ORIGIN_DEFAULT)
			continue;
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		for (size_t k = 0; k < sizeof(listeners) / sizeof(listeners[0]); k++)
			if (!strcmp(e->key, listeners[k][0]) && !loopback_host(e->value))
				diags_add(w, &e->loc, "warning",
				          "%s: \"%s\" is not a loopback address: %s listens there, open to whoever "
				          "reaches it; leave it unset for 127.0.0.1 (docs/operations.md, Security)",
				          field, e->value, listeners[k][1]);
		bool on = false;
		if (!strcmp(e->key, "web.submit.enable") && parse_bool(e->value, &on) == 0 && on)
			diags_add(w, &e->loc, "warning",
			          "%s: jar upload and run through Flink's REST API is on: whoever reaches Flink's REST "
			          "port can run any code in the JVM (docs/operations.md, Security)",
			          field);
		if (!strcmp(e->key, "web.cancel.enable") && parse_bool(e->value, &on) == 0 && on)
			diags_add(w, &e->loc, "warning",
			          "%s: Flink's web UI offers to cancel the job to whoever reaches it "
			          "(docs/operations.md, Security)",
			          field);
		free(field);
	}
	warn_forst_canonical(s, w);
	warn_full_checkpoints(s, w);
	warn_last_state_without_checkpoints(s, w);
}
