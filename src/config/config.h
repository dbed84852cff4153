/* config: the configuration document (contract section 2) parsed with libyaml into a typed spec, plus
 * `-D key=value` overrides, the no-file quick mode, validation with file:line:col: field: problem
 * messages, and every default filled in. It also owns the table of flinklet.* options and of the
 * operator's kubernetes.operator.* options that flinklet honours, which docs/configuration.md mirrors.
 * It does not touch the state directory, the JVM or the network. */
#ifndef FLINKLET_CONFIG_H
#define FLINKLET_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct cJSON;

enum upgrade_mode { UPGRADE_STATELESS, UPGRADE_SAVEPOINT, UPGRADE_LAST_STATE };
enum job_state { JOB_STATE_RUNNING, JOB_STATE_SUSPENDED };

const char *upgrade_mode_to_string(enum upgrade_mode m);
const char *job_state_to_string(enum job_state s);

/* Where a value came from: file, 1-based line and column (line 0: no position, e.g. a -D flag). */
struct loc {
	const char *file;
	int line, col;
};

/* Collected error messages, each "file:line:col: field: problem". */
struct diags {
	struct strv msgs;
};
void diags_add(struct diags *d, const struct loc *loc, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diags_free(struct diags *d);

enum conf_origin { ORIGIN_FILE, ORIGIN_OVERRIDE, ORIGIN_DEFAULT };

struct conf_entry {
	char *key;
	char *value;
	struct loc loc;
	enum conf_origin origin;
};

struct job_spec {
	char *jar_uri;
	char *entry_class;
	struct strv args;
	int64_t parallelism;
	enum upgrade_mode upgrade_mode;
	enum job_state state;
	int64_t savepoint_trigger_nonce;
	int64_t checkpoint_trigger_nonce;
	char *initial_savepoint_path;
	bool allow_non_restored_state;
	/* where jarURI, entryClass and initialSavepointPath were given, for messages */
	struct loc jar_uri_loc, entry_class_loc, initial_savepoint_loc;
	/* a SQL script as the job (src/config/config_sql.h): spec.job.sqlScript (a path or local:// / file:// URI) or
	 * spec.job.sql (the script itself); sql_loc is where the inline script's first line and column are in the
	 * file when sql_mapped (a literal block, `sql: |`), else where the value starts */
	char *sql_script, *sql;
	struct loc sql_script_loc, sql_loc;
	bool sql_mapped;
	char sql_sha256[65]; /* the script's sha256 once config_sql_check read it ("": no script) */
	char *sql_text;      /* a local sqlScript's text as config_sql_check read it (the stable spec keeps it) */
};

struct spec {
	char *file; /* the document's path as given, or "<command line>" in quick mode */
	char *api_version;
	char *kind;
	char *name;
	char *flink_version; /* v1_20, v2_0 ..; NULL: detect from the jars */
	char *image;
	struct conf_entry *conf;
	size_t nconf;
	uint64_t memory;       /* bytes; 0: not set */
	struct loc memory_loc; /* where spec.resources.memory was given, for messages */
	double cpu;            /* 0: not set */
	char *log4j_console;   /* logConfiguration["log4j-console.properties"] */
	struct job_spec job;
};

/* What the command line says about the configuration. */
struct config_args {
	const char *file;    /* NULL: none given (use $FLINKLET_CONFIG, then the default path) */
	struct strv defines; /* "key=value" */
	const char *jar;
	const char *entry_class;
	const char *parallelism;
	bool have_args;
	struct strv args;
	const char *state_dir;
	const char *flink_home;
};

#define FLINKLET_DEFAULT_CONFIG "/etc/flinklet/flinklet.yaml"

/* The configuration file the arguments name: -c, else $FLINKLET_CONFIG, else the default path when it
 * exists; NULL in quick mode (--jar and no file). */
const char *config_resolve_path(const struct config_args *a);
/* Parses one document held in memory. Returns 0, or -EINVAL with messages in d. */
int config_parse(const char *file, const char *text, size_t len, struct spec *ret, struct diags *d);
/* The whole path from the command line to a validated spec with defaults: file (or quick mode),
 * overrides, validation. Returns 0, or -EINVAL with messages in d. */
int config_load(const struct config_args *a, struct spec *ret, struct diags *d);
/* Validates the spec and inserts every default. Returns 0 or -EINVAL. */
int config_finalize(struct spec *s, struct diags *d);
/* Valid settings that open the job to the network (a listener of the JVM off loopback, jar upload, the
 * UI's cancel button), or that cannot stop with a savepoint or make every checkpoint a full one (forst with
 * CANONICAL savepoints; rocksdb or forst without incremental checkpoints), one "file:line:col: warning: field:
 * why" message each, in w. */
void config_warnings(const struct spec *s, struct diags *w);
/* Sets (or adds) one flinkConfiguration entry. */
void spec_set(struct spec *s, const char *key, const char *value, enum conf_origin origin, const struct loc *loc);
void spec_free(struct spec *s);

/* The current spelling of a Flink key that flinklet knows deprecated spellings of; any other key as it is. */
const char *spec_canonical_key(const char *key);
/* The flinkConfiguration entry of a key (following Flink's deprecated spellings), or NULL. */
const struct conf_entry *spec_entry(const struct spec *s, const char *key);
/* Effective value of a flinkConfiguration key (following Flink's deprecated spellings), or NULL. */
const char *spec_get(const struct spec *s, const char *key);
/* Whether the key is set by the user (the file or -D), not a default flinklet derived. */
bool spec_user_set(const struct spec *s, const char *key);
usec_t spec_duration(const struct spec *s, const char *key); /* 0 when unset */
int64_t spec_int(const struct spec *s, const char *key);
bool spec_bool(const struct spec *s, const char *key);

/* The state backend state.backend.type names: hashmap when unset (Flink's default, 1.20 and 2.x), one of Flink's
 * shortcuts or its factory class; BACKEND_OTHER for any other class. A backend the job's code sets is not seen. */
enum state_backend { BACKEND_HASHMAP, BACKEND_ROCKSDB, BACKEND_FORST, BACKEND_OTHER };
enum state_backend spec_state_backend(const struct spec *s);
const char *state_backend_name(enum state_backend b);
/* Who a savepoint is for: a stop's (shutdown, suspend, upgrade: restored by the spec's own backend next), or one kept
 * for its own sake (manual, periodic: restored anywhere, perhaps by another backend). */
enum savepoint_use { SAVEPOINT_STOP, SAVEPOINT_KEPT };
/* The format flinklet asks Flink for, "NATIVE" or "CANONICAL": kubernetes.operator.savepoint.format.type when the
 * configuration sets it; else NATIVE when the running backend is forst (the only format ForSt takes) or, for a stop,
 * when both the running backend and s's (the one that restores it) are rocksdb; else CANONICAL. */
const char *spec_savepoint_format(const struct spec *s, enum state_backend running, enum savepoint_use use);

/* The normalized document as JSON (check-config --json) and as YAML (check-config). */
struct cJSON *spec_to_json(const struct spec *s);
char *spec_to_yaml(const struct spec *s);
/* Any JSON object as block YAML (scalars in JSON's quoting, which YAML reads the same). */
char *json_to_yaml(const struct cJSON *root);

/* The option table (config_options.c), for docs and tests. */
enum opt_type { OPT_STRING, OPT_PATH, OPT_DURATION, OPT_INT, OPT_BOOL, OPT_MEMORY, OPT_ENUM, OPT_HOSTPORT };
struct option_def {
	const char *key;
	enum opt_type type;
	const char *def;         /* default, NULL: none */
	int64_t min, max;        /* OPT_INT range; the least OPT_DURATION in ms, OPT_MEMORY in bytes (0: none) */
	const char *enum_values; /* OPT_ENUM: comma-separated */
	const char *doc;
};
extern const struct option_def flinklet_options[];
const struct option_def *option_find(const char *key);

#endif
