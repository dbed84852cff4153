/* cds: class-data sharing (the JDK's dynamic AppCDS) for the MiniCluster JVM: which archive belongs to which
 * JDK and Flink jar set (the key), where it lies and whether it is whole, the JVM options of a launch with
 * it or without it, and what the JVM's output and memory map say about it. No processes, no event loop:
 * the supervisor's part is src/supervisor/sup_cds.c, the dump request src/flink/jattach.c. An archive is a cache, never
 * a condition of a launch: whatever is wrong with it, the JVM starts without it. */
#ifndef FLINKLET_CDS_H
#define FLINKLET_CDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

#define CDS_KEY_LEN 16 /* hex digits of the key in an archive's name */

/* The java launcher's real path: `java` looked up in path_env (a $PATH) when it has no '/', then every
 * symbolic link resolved (/usr/bin/java -> /usr/lib/jvm/.../bin/java). NULL when not found. */
char *cds_resolve_java(const char *java, const char *path_env);
/* The JDK home of a resolved launcher (<home>/bin/java -> <home>). */
char *cds_java_home(const char *java_real);
/* NULL when the JDK at home can make and use a dynamic archive; else why not (a static string): the
 * `release` file names a Java before 17 (VM.cds dynamic_dump), or there is no default CDS archive
 * (lib/server/classes.jsa), the base every dynamic archive lies on top of. */
const char *cds_jdk_unsupported(const char *home);
/* Do the user's JVM options already speak about class-data sharing (-Xshare, -XX:SharedArchiveFile,
 * -XX:ArchiveClassesAtExit, ...)? Then flinklet keeps out of it. */
bool cds_user_options(const char *jvm_options);
/* The key of a JDK and a jar set: the first CDS_KEY_LEN hex digits of a sha256 over the launcher's real
 * path, size and modification time, the same of the JDK's lib/server/libjvm.so and lib/modules, the JDK's
 * `release` file, and the name, size and modification time (ns) of every *.jar in lib_dir, by name. A
 * changed, added or removed jar, or another JDK, gives another key. Returns 0 or -errno. */
int cds_key(const char *java_real, const char *lib_dir, char ret[CDS_KEY_LEN + 1]);
/* "flink-<version>-<key>-": the start of the names of the archives of a key; an archive's whole name is
 * that, its size in bytes and ".jsa", so that a truncated or extended file is known without reading it. */
char *cds_archive_prefix(const char *flink_version, const char *key);
char *cds_archive_name(const char *prefix, uint64_t size);
/* The archive of a key in dir. Returns 0 with *ret_path (malloc'd) when it is there and its size is the
 * one in its name; -EBADMSG with *ret_path when its size is not (it must not be used: a JVM maps it and
 * dies of SIGBUS beyond the end of a truncated one); -ENOENT when there is none; other
 * -errno. An entry with an archive's name that is no regular file (a directory, a FIFO, a dangling link) is
 * passed over for a regular one; when there is none, -ENOTSUP with *ret_path naming it. */
int cds_find(const char *dir, const char *prefix, char **ret_path);
/* What one launch does about class-data sharing. */
enum cds_choice {
	CDS_NONE,   /* nothing */
	CDS_USE,    /* start from the archive */
	CDS_RECORD, /* no usable archive: record for a dump (when may_record) */
};
/* The choice for a launch given the archive directory and the key's prefix: CDS_USE with *ret_path when a
 * whole dynamic archive is there; else CDS_RECORD (or CDS_NONE when !may_record). An archive that is there
 * but must not be used is returned too, in *ret_path with *ret_bad saying why (the caller removes it and
 * says so once). *ret_path is malloc'd or NULL. */
/* What cds_choose says of an entry with an archive's name that is no regular file: left where it is (flinklet
 * did not make it), never used. */
#define CDS_NOT_A_FILE "it is not a regular file (a directory, a FIFO or a dangling link has the archive's name)"
enum cds_choice cds_choose(const char *dir, const char *prefix, bool may_record, char **ret_path, const char **ret_bad);
/* Removes the archives in dir other than keep (those of other keys and JDKs), and temporary dumps over an
 * hour old (what a dump cut short left). Returns how many were removed. */
int cds_remove_others(const char *dir, const char *keep);
/* Does the file start with the magic number of HotSpot's dynamic archive header (0xf00baba8)? */
bool cds_is_dynamic_archive(const char *path);
/* Is path (a real path) mapped into process pid? 1 yes, 0 no, -errno when the map cannot be read. */
int cds_mapped(pid_t pid, const char *path);
/* Is this line of the JVM's output a unified-logging warning or error about class-data sharing
 * ("[0.134s][warning][cds,dynamic] Unable to use shared archive...")? */
bool cds_line_is_warning(const char *line);
/* The JVM options of a launch: with an archive -XX:SharedArchiveFile=<archive>; recording for a dump
 * (-XX:+RecordDynamicDumpInfo, and -Xlog:cds=off: a dump prints a warning for each class it skips);
 * neither: nothing. */
void cds_jvm_options(const char *archive, bool record, struct strv *argv);
/* Is the JVM's answer to `VM.cds dynamic_dump` (the attach protocol's: a result code line, then the
 * command's output) a success? */
bool cds_dump_answer_ok(const char *answer);

#endif
