/* yamlout: YAML documents through libyaml's emitter, so that quoting and escaping are libyaml's and not ours:
 * check-config's normalized document, export's FlinkDeployment (both from cJSON) and Flink's config.yaml
 * (string pairs). Strings are always double-quoted (a value such as "true", "1" or "no" stays a string for every
 * reader); lines are never folded. A string that is not UTF-8 (a path from the command line, say) is written with
 * U+FFFD for each byte that is not, as a YAML document must be UTF-8. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "log.h"
#include "util.h"
#include "yamlout.h"

struct out {
	yaml_emitter_t e;
	struct strbuf b;
	bool failed;
};

static int on_write(void *data, unsigned char *buffer, size_t size)
{
	struct out *o = data;
	strbuf_appendn(&o->b, (const char *)buffer, size);
	return 1;
}

static void emit(struct out *o, yaml_event_t *ev)
{
	if (o->failed)
		yaml_event_delete(ev);
	else if (!yaml_emitter_emit(&o->e, ev))
		o->failed = true; /* the emitter deletes the event either way */
}

/* The length of the UTF-8 sequence at s (of at most n bytes), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80             ? 1
	             : (s[0] & 0xE0) == 0xC0 ? 2
	             : (s[0] & 0xF0) == 0xE0 ? 3
	             : (s[0] & 0xF8) == 0xF0 ? 4
	                                     : 0;
	if (!len || len > n || (len == 2 && s[0] < 0xC2))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

static char *valid_utf8(const char *s)
{
	struct strbuf b = {0};
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		size_t l = utf8_len((const unsigned char *)s + i, n - i);
		if (l) {
			strbuf_appendn(&b, s + i, l);
			i += l;
		} else {
			strbuf_append(&b, "\xEF\xBF\xBD");
			i++;
		}
	}
	return strbuf_steal(&b);
}

static void scalar(struct out *o, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	bool plain = style == YAML_PLAIN_SCALAR_STYLE;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain, !plain, style)) {
		char *fixed = valid_utf8(s);
		if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)fixed, (int)strlen(fixed), plain,
		                                  !plain, style))
			o->failed = true;
		free(fixed);
		if (o->failed)
			return;
	}
	emit(o, &ev);
}

static void begin(struct out *o)
{
	memset(o, 0, sizeof(*o));
	yaml_emitter_initialize(&o->e);
	yaml_emitter_set_output(&o->e, on_write, o);
	yaml_emitter_set_unicode(&o->e, 1);
	yaml_emitter_set_width(&o->e, -1);
	yaml_emitter_set_indent(&o->e, 2);
	yaml_event_t ev;
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	emit(o, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	emit(o, &ev);
}

static char *end(struct out *o)
{
	yaml_event_t ev;
	yaml_document_end_event_initialize(&ev, 1);
	emit(o, &ev);
	yaml_stream_end_event_initialize(&ev);
	emit(o, &ev);
	yaml_emitter_flush(&o->e);
	yaml_emitter_delete(&o->e);
	if (o->failed) {
		log_error("unable to write a YAML document (libyaml: %s)", o->e.problem ? o->e.problem : "unknown");
		strbuf_free(&o->b);
		return xstrdup("");
	}
	return o->b.len ? strbuf_steal(&o->b) : xstrdup("");
}

static bool plain_key(const char *k)
{
	if (!*k)
		return false;
	for (const char *p = k; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		          c == '_' || c == '-' || c == '/';
		if (!ok)
			return false;
	}
	return true;
}

static void node(struct out *o, const cJSON *j)
{
	yaml_event_t ev;
	if (cJSON_IsObject(j)) {
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
		                                    j->child ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE);
		emit(o, &ev);
		for (const cJSON *c = j->child; c; c = c->next) {
			scalar(o, c->string,
			       plain_key(c->string) ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
			node(o, c);
		}
		yaml_mapping_end_event_initialize(&ev);
		emit(o, &ev);
	} else if (cJSON_IsArray(j)) {
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
		                                     j->child ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE);
		emit(o, &ev);
		for (const cJSON *c = j->child; c; c = c->next)
			node(o, c);
		yaml_sequence_end_event_initialize(&ev);
		emit(o, &ev);
	} else if (cJSON_IsString(j)) {
		scalar(o, j->valuestring, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	} else {
		/* numbers as cJSON prints them (the shortest form that reads back), true, false, null */
		char *text = cJSON_IsRaw(j) ? NULL : cJSON_PrintUnformatted(j);
		scalar(o, text ? text : "null", YAML_PLAIN_SCALAR_STYLE);
		free(text);
	}
}

char *yaml_from_json(const cJSON *root)
{
	struct out o;
	begin(&o);
	node(&o, root);
	return end(&o);
}

char *yaml_string_pairs(const char *const *kv, size_t n)
{
	struct out o;
	begin(&o);
	yaml_event_t ev;
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, n ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE);
	emit(&o, &ev);
	for (size_t i = 0; i < n; i++) {
		scalar(&o, kv[2 * i], YAML_DOUBLE_QUOTED_SCALAR_STYLE);
		scalar(&o, kv[2 * i + 1], YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	}
	yaml_mapping_end_event_initialize(&ev);
	emit(&o, &ev);
	return end(&o);
}
