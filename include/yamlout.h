/* yamlout: YAML documents written with libyaml's emitter (block style, strings double-quoted, no line folding),
 * for `check-config`, `export` and Flink's config.yaml. */
#ifndef FLINKLET_YAMLOUT_H
#define FLINKLET_YAMLOUT_H

#include <stddef.h>

struct cJSON;

/* A JSON document as YAML: objects as block mappings (plain keys where the key is a plain word, else
 * double-quoted), arrays as block sequences, strings double-quoted, numbers, booleans and null plain; empty
 * objects and arrays as {} and []. Never NULL. */
char *yaml_from_json(const struct cJSON *root);

/* One flat mapping of n string pairs (kv[2i] -> kv[2i+1]), keys and values double-quoted, one pair a line.
 * Never NULL. */
char *yaml_string_pairs(const char *const *kv, size_t n);

#endif
