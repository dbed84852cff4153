/* route_table: flinklet's table of Flink's GET routes (src/flink/restroutes.c) and its answers, for
 * tests/restroutes/test_restroutes.py; built into build/restroutes/, never installed.
 *     route_table table <flink version>   one line per route the table has for that version: OPEN|TOKEN <path>
 *     route_table access                  a path per line on stdin, one answer per line: OPEN|TOKEN <path> */
#include <stdio.h>
#include <string.h>

#include "restroutes.h"

static const char *name(enum restroutes_access a)
{
	return a == RESTROUTES_OPEN ? "OPEN" : "TOKEN";
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "table")) {
		size_t n;
		const struct restroute *t = restroutes_table(&n);
		for (size_t i = 0; i < n; i++)
			if (restroutes_in_version(&t[i], argv[2]))
				printf("%s %s %s\n", name(t[i].access), t[i].method, t[i].path);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "access")) {
		char line[4096];
		while (fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = '\0';
			printf("%s %s\n", name(restroutes_get_access(line, NULL)), line);
		}
		return 0;
	}
	fprintf(stderr, "usage: route_table table <flink version> | route_table access < paths\n");
	return 64;
}
