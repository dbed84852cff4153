/* cds: class-data sharing for the MiniCluster JVM: the key, the archive on disk, the JVM options, and what
 * the JVM says about the archive (see src/flink/cds.h). Not the dump itself (src/flink/jattach.c) nor when it is
 * made (src/supervisor/sup_cds.c). */
#include "cds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

char *cds_resolve_java(const char *java, const char *path_env)
{
	if (str_empty(java))
		return NULL;
	if (strchr(java, '/'))
		return realpath(java, NULL);
	const char *p = path_env;
	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *dir = n ? xstrndup(p, n) : xstrdup(".");
		char *cand = path_join(dir, java);
		free(dir);
		if (access(cand, X_OK) == 0) {
			char *real = realpath(cand, NULL);
			free(cand);
			return real;
		}
		free(cand);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

char *cds_java_home(const char *java_real)
{
	char *home = xstrdup(java_real);
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(home, '/');
		if (!slash || slash == home) {
			free(home);
			return NULL;
		}
		*slash = '\0';
	}
	return home;
}

/* JAVA_VERSION="17.0.15" (or "1.8.0_...") in the release file: the major version, 0 when not said. */
static int release_major(const char *release)
{
	const char *v = strstr(release, "JAVA_VERSION=\"");
	if (!v)
		return 0;
	v += strlen("JAVA_VERSION=\"");
	int major = atoi(v);
	if (major == 1 && v[1] == '.')
		major = atoi(v + 2);
	return major;
}

static char *read_small(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = xmalloc(max + 1);
	ssize_t n = read(fd, buf, max);
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

const char *cds_jdk_unsupported(const char *home)
{
	char *release_path = path_join(home, "release");
	char *release = read_small(release_path, 8192);
	free(release_path);
	int major = release ? release_major(release) : 0;
	free(release);
	if (major > 0 && major < 17)
		return "the JDK is older than 17 (it cannot dump a dynamic archive of a running JVM)";
	char *base = path_join(home, "lib/server/classes.jsa");
	bool ok = access(base, R_OK) == 0;
	free(base);
	return ok ? NULL : "the JDK has no default CDS archive (lib/server/classes.jsa) to build on";
}

bool cds_user_options(const char *jvm_options)
{
	static const char *const words[] = {"-Xshare",
	                                    "SharedArchiveFile",
	                                    "ArchiveClassesAtExit",
	                                    "DynamicDump",
	                                    "AutoCreateSharedArchive",
	                                    "SharedClassListFile",
	                                    "DumpLoadedClassList",
	                                    NULL};
	for (size_t i = 0; jvm_options && words[i]; i++)
		if (strstr(jvm_options, words[i]))
			return true;
	return false;
}

static void digest_stat(struct sha256_ctx *ctx, const char *label, const char *path)
{
	struct stat st;
	char line[PATH_MAX + 128];
	int n;
	if (stat(path, &st) == 0)
		n = snprintf(line, sizeof(line), "%s %s %lld %lld.%09ld\n", label, path, (long long)st.st_size,
		             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	else
		n = snprintf(line, sizeof(line), "%s %s missing\n", label, path);
	if (n > 0)
		sha256_update(ctx, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1, (const uint8_t *)line);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cds_key(const char *java_real, const char *lib_dir, char ret[CDS_KEY_LEN + 1])
{
	DIR *dir = opendir(lib_dir);
	if (!dir)
		return -errno;
	struct strv jars = {0};
	struct dirent *de;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".jar"))
			strv_push(&jars, de->d_name);
	}
	closedir(dir);
	if (jars.n)
		qsort(jars.v, jars.n, sizeof(jars.v[0]), cmp_str);
	struct sha256_ctx ctx_s, *ctx = &ctx_s;
	sha256_init(ctx);
	digest_stat(ctx, "java", java_real);
	char *home = cds_java_home(java_real);
	if (home) {
		static const char *const parts[] = {"lib/server/libjvm.so", "lib/modules", NULL};
		for (size_t i = 0; parts[i]; i++) {
			char *p = path_join(home, parts[i]);
			digest_stat(ctx, "jdk", p);
			free(p);
		}
		char *rp = path_join(home, "release");
		char *release = read_small(rp, 8192);
		if (release)
			sha256_update(ctx, strlen(release), (const uint8_t *)release);
		free(release);
		free(rp);
		free(home);
	}
	for (size_t i = 0; i < jars.n; i++) {
		char *p = path_join(lib_dir, jars.v[i]);
		digest_stat(ctx, "jar", p);
		free(p);
	}
	strv_free(&jars);
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(ctx, sizeof(d), d);
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < CDS_KEY_LEN / 2; i++) {
		ret[2 * i] = digits[d[i] >> 4];
		ret[2 * i + 1] = digits[d[i] & 15];
	}
	ret[CDS_KEY_LEN] = '\0';
	return 0;
}

char *cds_archive_prefix(const char *flink_version, const char *key)
{
	return xasprintf("flink-%s-%s-", flink_version ? flink_version : "unknown", key);
}

char *cds_archive_name(const char *prefix, uint64_t size)
{
	return xasprintf("%s%llu.jsa", prefix, (unsigned long long)size);
}

/* "<prefix><digits>.jsa": the size in the name, or false. */
static bool archive_name_size(const char *name, const char *prefix, uint64_t *ret)
{
	if (prefix && !str_has_prefix(name, prefix))
		return false;
	const char *p = prefix ? name + strlen(prefix) : name;
	const char *dot = strrchr(p, '.');
	if (!dot || strcmp(dot, ".jsa") || dot == p)
		return false;
	uint64_t v = 0;
	for (const char *c = p; c < dot; c++) {
		if (*c < '0' || *c > '9' || v > UINT64_MAX / 10)
			return false;
		v = v * 10 + (uint64_t)(*c - '0');
	}
	*ret = v;
	return true;
}

int cds_find(const char *dir, const char *prefix, char **ret_path)
{
	*ret_path = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ENOENT : -errno;
	int r = -ENOENT;
	char *odd = NULL; /* an entry with an archive's name that is no regular file */
	struct dirent *de;
	while ((de = readdir(d)) && r == -ENOENT) {
		uint64_t size;
		if (!archive_name_size(de->d_name, prefix, &size))
			continue;
		char *path = path_join(dir, de->d_name);
		struct stat st;
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (!odd)
				odd = path;
			else
				free(path);
			continue;
		}
		*ret_path = path;
		r = (uint64_t)st.st_size == size ? 0 : -EBADMSG;
	}
	closedir(d);
	if (r == -ENOENT && odd) {
		*ret_path = odd;
		return -ENOTSUP;
	}
	free(odd);
	return r;
}

enum cds_choice cds_choose(const char *dir, const char *prefix, bool may_record, char **ret_path, const char **ret_bad)
{
	*ret_bad = NULL;
	int r = cds_find(dir, prefix, ret_path);
	if (r == 0 && cds_is_dynamic_archive(*ret_path))
		return CDS_USE;
	if (r == 0)
		*ret_bad = "it does not start with the header of a dynamic archive";
	else if (r == -EBADMSG)
		*ret_bad = "its size is not the one it was written with (truncated or overwritten)";
	else if (r == -ENOTSUP)
		*ret_bad = CDS_NOT_A_FILE;
	return may_record ? CDS_RECORD : CDS_NONE;
}

int cds_remove_others(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	const char *keep_name = keep ? strrchr(keep, '/') : NULL;
	keep_name = keep_name ? keep_name + 1 : keep;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		bool archive = n > 4 && !strcmp(de->d_name + n - 4, ".jsa");
		bool dump = de->d_name[0] == '.' && n > 4 && !strcmp(de->d_name + n - 4, ".tmp");
		if ((!archive && !dump) || (keep_name && !strcmp(de->d_name, keep_name)))
			continue;
		/* a dump another flinklet may be writing into a shared directory is left alone for an hour */
		struct stat st;
		if (dump && (fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
		             (time_t)(now_realtime() / USEC_PER_SEC) - st.st_mtim.tv_sec < 3600))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

bool cds_is_dynamic_archive(const char *path)
{
	unsigned char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, m, sizeof(m));
	close(fd);
	/* 0xf00baba8, little-endian (the x86-64 and aarch64 JDKs flinklet runs on) */
	return n == 4 && m[0] == 0xa8 && m[1] == 0xab && m[2] == 0x0b && m[3] == 0xf0;
}

int cds_mapped(pid_t pid, const char *path)
{
	char maps[64];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	size_t plen = strlen(path);
	int found = 0;
	ssize_t n;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		/* the path is the last field, after the inode */
		found = (size_t)n >= plen && !strcmp(line + n - plen, path) && (size_t)n > plen &&
		        line[n - plen - 1] == ' ';
	}
	free(line);
	fclose(f);
	return found;
}

bool cds_line_is_warning(const char *line)
{
	/* unified logging's default decorations: [uptime][level][tags] */
	const char *lvl = strstr(line, "][warning][cds");
	if (!lvl)
		lvl = strstr(line, "][error][cds");
	if (!lvl)
		return false;
	const char *tags = strchr(lvl + 2, '[');
	return tags && (tags[4] == ']' || tags[4] == ',');
}

void cds_jvm_options(const char *archive, bool record, struct strv *argv)
{
	if (archive) {
		strv_push_take(argv, xasprintf("-XX:SharedArchiveFile=%s", archive));
		return;
	}
	if (record) {
		strv_push(argv, "-XX:+RecordDynamicDumpInfo");
		strv_push(argv, "-Xlog:cds=off");
	}
}

bool cds_dump_answer_ok(const char *answer)
{
	if (!answer || strncmp(answer, "0\n", 2))
		return false;
	return !strstr(answer, "Exception") && !strstr(answer, "Error") && !strstr(answer, "error");
}
