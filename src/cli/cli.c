/* cli: client commands against a running supervisor (see src/cli/cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "status.h"
#include "store.h"
#include "util.h"

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	strbuf_appendn(userdata, ptr, size * nmemb);
	return size * nmemb;
}

/* Notes whether the answer said its status document is on the volume already (Flinklet-Status-Recorded). */
static size_t note_recorded(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	static const char name[] = "flinklet-status-recorded:";
	size_t n = size * nmemb;
	if (n > sizeof(name) - 1 && !strncasecmp(ptr, name, sizeof(name) - 1)) {
		const char *v = ptr + sizeof(name) - 1;
		while (v < ptr + n && (*v == ' ' || *v == '\t'))
			v++;
		*(bool *)userdata = (size_t)(ptr + n - v) >= 4 && !strncmp(v, "true", 4);
	}
	return n;
}

/* One request; returns the HTTP status (0 when there was no answer) and the body in *body; *recorded (when not
 * NULL) says whether the supervisor's status.json already holds the status document answered. */
static long request_ex(const char *method, const char *url, const char *token, char **body, bool *recorded,
                       long timeout_s)
{
	CURL *c = curl_easy_init();
	if (!c)
		return 0;
	struct strbuf b = {0};
	struct curl_slist *h = NULL;
	char *auth = token ? xasprintf("Authorization: Bearer %s", token) : NULL;
	if (auth)
		h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "POST"))
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* the token goes to the address given and nowhere else: no proxy from the environment (it would see the
	 * token), no redirect followed */
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
	if (recorded) {
		*recorded = false;
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, note_recorded);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, recorded);
	}
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(auth);
	*body = strbuf_steal(&b);
	return code;
}

static long request(const char *method, const char *url, const char *token, char **body)
{
	return request_ex(method, url, token, body, NULL, 10L);
}

char *cli_endpoint_url(const char *addr)
{
	/* 0.0.0.0 and [::] are where it listens, not where to connect */
	if (str_has_prefix(addr, "0.0.0.0:"))
		return xasprintf("http://127.0.0.1%s", strchr(addr, ':'));
	if (str_has_prefix(addr, "[::]:"))
		return xasprintf("http://[::1]%s", strchr(addr, ']') + 1);
	return xasprintf("http://%s", addr);
}

int cli_fetch_status(const char *url, long timeout_s, char **ret_json)
{
	char *full = xasprintf("%s/status", url);
	char *body = NULL;
	long code = request_ex("GET", full, NULL, &body, NULL, timeout_s);
	free(full);
	if (code != 200) {
		fprintf(stderr, "flinklet: no status from %s (%s)\n", url, code ? "HTTP error" : "no answer");
		free(body);
		return 1;
	}
	*ret_json = body;
	return 0;
}

static char *read_token(const char *path)
{
	char *text = NULL;
	int r = read_file(path, 4096, &text, NULL);
	if (r < 0) {
		fprintf(stderr, "flinklet: unable to read the API token %s: %s\n", path, strerror(-r));
		return NULL;
	}
	text[strcspn(text, "\r\n \t")] = '\0';
	return text;
}

/* The status document (and whether status.json already holds it, when recorded is not NULL). */
static bool fetch(const char *url, struct status *st, bool *recorded)
{
	char *full = xasprintf("%s/status", url), *json = NULL;
	long code = request_ex("GET", full, NULL, &json, recorded, 10L);
	free(full);
	bool ok = code == 200 && status_parse(json, st) == 0;
	free(json);
	return ok;
}

static bool done(const char *action, const struct status *before, const struct status *now)
{
	if (!strcmp(action, "savepoint"))
		return now->last_savepoint.location && now->last_savepoint.time_ms > before->last_savepoint.time_ms;
	if (!strcmp(action, "checkpoint"))
		return now->n_checkpoint_history > 0 &&
		       (before->n_checkpoint_history == 0 ||
		        now->checkpoint_history[now->n_checkpoint_history - 1].time_ms >
		            before->checkpoint_history[before->n_checkpoint_history - 1].time_ms);
	if (!strcmp(action, "suspend"))
		return now->lifecycle == LIFECYCLE_SUSPENDED && now->jvm_pid == 0;
	return now->job_state && !strcmp(now->job_state, "RUNNING") &&
	       (now->lifecycle == LIFECYCLE_STABLE || now->lifecycle == LIFECYCLE_ROLLED_BACK);
}

int cli_control(const struct control_args *a)
{
	char *url = NULL, *token_file = a->token_file ? xstrdup(a->token_file) : NULL;
	if (a->url) {
		url = xstrdup(a->url);
	} else {
		/* the supervisor holds the state directory's lock: without it there is no one to ask */
		if (store_lock_held(a->state_dir) <= 0) {
			fprintf(stderr,
			        "flinklet: no flinklet is running for the state directory %s (give --url for one "
			        "elsewhere)\n",
			        a->state_dir);
			free(token_file);
			return 3;
		}
		char *path = path_join(a->state_dir, "status.json");
		char *text = NULL;
		int r = read_file(path, 4u << 20, &text, NULL);
		struct status st;
		if (r < 0 || status_parse(text, &st) < 0) {
			fprintf(stderr, "flinklet: unable to read %s: %s\n", path,
			        r < 0 ? strerror(-r) : "not a status document");
			free(path);
			free(text);
			free(token_file);
			return 3;
		}
		free(path);
		free(text);
		if (!st.http_address) {
			fprintf(stderr, "flinklet: the supervisor of %s serves no HTTP endpoint\n", a->state_dir);
			status_free(&st);
			free(token_file);
			return 3;
		}
		url = cli_endpoint_url(st.http_address);
		if (!token_file && st.token_file)
			token_file = xstrdup(st.token_file);
		status_free(&st);
	}
	char *token = token_file ? read_token(token_file) : NULL;
	free(token_file);
	if (!token) {
		if (!a->token_file)
			fprintf(stderr, "flinklet: no API token; give --token-file\n");
		free(url);
		return 3;
	}
	struct status before;
	status_init(&before);
	if (a->wait && !fetch(url, &before, NULL)) {
		fprintf(stderr, "flinklet: no status from %s\n", url);
		free(url);
		free(token);
		return 1;
	}
	char *endpoint = xasprintf("%s/api/v1/%s", url, a->action);
	char *body = NULL;
	long code = request("POST", endpoint, token, &body);
	free(endpoint);
	free(token);
	int exit_code = 0;
	if (code != 202 && code != 200) {
		fprintf(stderr, "flinklet: %s refused (%s): %s", a->action, code ? "HTTP error" : "no answer",
		        body && *body ? body : "\n");
		exit_code = code == 401 ? 3 : 1;
	} else if (a->wait) {
		exit_code = 1;
		for (int i = 0; i < 600; i++) {
			struct status now;
			bool recorded = false;
			if (fetch(url, &now, &recorded)) {
				/* done once the change shows, in status.json too: the answer comes before the file */
				bool ok = done(a->action, &before, &now) && recorded;
				if (ok && !strcmp(a->action, "savepoint"))
					printf("%s\n", now.last_savepoint.location);
				status_free(&now);
				if (ok) {
					exit_code = 0;
					break;
				}
			}
			struct timespec ts = {0, 500 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (exit_code)
			fprintf(stderr, "flinklet: %s did not complete within 5 minutes\n", a->action);
	} else {
		fputs(body, stdout);
	}
	status_free(&before);
	free(body);
	free(url);
	return exit_code;
}
