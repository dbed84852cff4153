/* preflight: checks before a JVM is started (see src/flink/preflight.h). The jar is read as a zip: its central
 * directory (names are stored plainly) for the entry class, and META-INF/MANIFEST.MF (usually deflated, zlib)
 * for Main-Class when no entryClass is given. */
#include "preflight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "config_sql.h"
#include "flinkconf.h"
#include "http.h"
#include "util.h"

#define EOCD_SIG 0x06054b50U
#define EOCD64_LOC_SIG 0x07064b50U
#define EOCD64_SIG 0x06064b50U
#define CEN_SIG 0x02014b50U
#define LOC_SIG 0x04034b50U
#define MANIFEST_MAX (1U << 20)
#define CEN_MAX (64U << 20)

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EBADMSG;
		done += (size_t)r;
	}
	return 0;
}

/* The central directory: where it is and how big. */
static int find_central_directory(int fd, uint64_t size, uint64_t *off, uint64_t *len)
{
	size_t tail = size < 65557 ? (size_t)size : 65557;
	if (tail < 22)
		return -EBADMSG;
	unsigned char *buf = xmalloc(tail);
	int r = read_at(fd, buf, tail, size - tail);
	if (r < 0) {
		free(buf);
		return r;
	}
	ssize_t at = -1;
	for (ssize_t i = (ssize_t)tail - 22; i >= 0; i--)
		if (le32(buf + i) == EOCD_SIG) {
			at = i;
			break;
		}
	if (at < 0) {
		free(buf);
		return -EBADMSG;
	}
	*len = le32(buf + at + 12);
	*off = le32(buf + at + 16);
	if ((*off == 0xffffffffU || *len == 0xffffffffU) && at >= 20 && le32(buf + at - 20) == EOCD64_LOC_SIG) {
		/* zip64: the locator points at the zip64 end record */
		uint64_t rec = le64(buf + at - 20 + 8);
		unsigned char z[56];
		if (read_at(fd, z, sizeof(z), rec) < 0 || le32(z) != EOCD64_SIG) {
			free(buf);
			return -EBADMSG;
		}
		*len = le64(z + 40);
		*off = le64(z + 48);
	}
	free(buf);
	return *off + *len <= size ? 0 : -EBADMSG;
}

struct zip_entry {
	uint16_t method;
	uint64_t csize, usize, local;
};

/* Walks the central directory: *found tells whether `name` is there (and where), *nested whether the jar
 * carries jars of its own under lib/ (Flink's client loads classes from those too). */
static int scan_entries(const unsigned char *cen, uint64_t len, const char *name, const char *name2,
                        struct zip_entry *found, bool *has_name, bool *has_name2, bool *nested)
{
	size_t nl = strlen(name), nl2 = name2 ? strlen(name2) : 0;
	uint64_t p = 0;
	while (p + 46 <= len && le32(cen + p) == CEN_SIG) {
		const unsigned char *h = cen + p;
		uint16_t n = le16(h + 28), extra = le16(h + 30), comment = le16(h + 32);
		if (p + 46 + n + extra + comment > len)
			return -EBADMSG;
		const char *fname = (const char *)h + 46;
		if (n == nl && !memcmp(fname, name, nl)) {
			*has_name = true;
			found->method = le16(h + 10);
			found->csize = le32(h + 20);
			found->usize = le32(h + 24);
			found->local = le32(h + 42);
			/* zip64 sizes and offset in the 0x0001 extra field, in this order when maxed out */
			const unsigned char *x = h + 46 + n, *end = x + extra;
			while (x + 4 <= end) {
				uint16_t id = le16(x), sz = le16(x + 2);
				const unsigned char *v = x + 4, *vend = v + sz;
				if (vend > end)
					break;
				if (id == 1) {
					if (found->usize == 0xffffffffU && v + 8 <= vend) {
						found->usize = le64(v);
						v += 8;
					}
					if (found->csize == 0xffffffffU && v + 8 <= vend) {
						found->csize = le64(v);
						v += 8;
					}
					if (found->local == 0xffffffffU && v + 8 <= vend)
						found->local = le64(v);
				}
				x = vend;
			}
		}
		if (name2 && n == nl2 && !memcmp(fname, name2, nl2))
			*has_name2 = true;
		if (n > 8 && !memcmp(fname, "lib/", 4) && !memcmp(fname + n - 4, ".jar", 4))
			*nested = true;
		p += 46 + (uint64_t)n + extra + comment;
	}
	return 0;
}

static int read_entry(int fd, uint64_t size, const struct zip_entry *e, char **ret)
{
	unsigned char lh[30];
	if (e->usize > MANIFEST_MAX || e->csize > MANIFEST_MAX || read_at(fd, lh, sizeof(lh), e->local) < 0 ||
	    le32(lh) != LOC_SIG)
		return -EBADMSG;
	uint64_t data = e->local + 30 + le16(lh + 26) + le16(lh + 28);
	if (data + e->csize > size)
		return -EBADMSG;
	unsigned char *c = xmalloc(e->csize + 1);
	if (read_at(fd, c, e->csize, data) < 0) {
		free(c);
		return -EBADMSG;
	}
	char *out = xmalloc(e->usize + 1);
	int r = 0;
	if (e->method == 0 && e->csize == e->usize) {
		memcpy(out, c, e->usize);
	} else if (e->method == 8) {
		z_stream z = {0};
		if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
			r = -ENOMEM;
		} else {
			z.next_in = c;
			z.avail_in = (uInt)e->csize;
			z.next_out = (unsigned char *)out;
			z.avail_out = (uInt)e->usize;
			int zr = inflate(&z, Z_FINISH);
			if (zr != Z_STREAM_END || z.total_out != e->usize)
				r = -EBADMSG;
			inflateEnd(&z);
		}
	} else {
		r = -ENOTSUP;
	}
	free(c);
	if (r < 0) {
		free(out);
		return r;
	}
	out[e->usize] = '\0';
	*ret = out;
	return 0;
}

/* The value of a main attribute of a manifest (lines of at most 72 bytes, continued with a leading space). */
static char *manifest_value(const char *mf, const char *attr)
{
	size_t al = strlen(attr);
	for (const char *line = mf; line && *line;) {
		const char *eol = line + strcspn(line, "\r\n");
		if ((size_t)(eol - line) > al && !strncasecmp(line, attr, al) && line[al] == ':') {
			struct strbuf b = {0};
			const char *v = line + al + 1;
			while (*v == ' ')
				v++;
			strbuf_appendn(&b, v, (size_t)(eol - v));
			for (;;) {
				const char *next = eol + (eol[0] == '\r' && eol[1] == '\n' ? 2 : *eol ? 1 : 0);
				if (*next != ' ')
					break;
				eol = next + 1 + strcspn(next + 1, "\r\n");
				strbuf_appendn(&b, next + 1, (size_t)(eol - next - 1));
			}
			char *value = strbuf_steal(&b);
			if (*value)
				return value;
			free(value);
			return NULL;
		}
		if (!*eol || (eol[0] == '\r' && eol[1] == '\n' && (eol[2] == '\r' || eol[2] == '\n')) ||
		    (eol[0] == '\n' && eol[1] == '\n'))
			break; /* the main section ends at the first empty line */
		line = eol + (eol[0] == '\r' && eol[1] == '\n' ? 2 : 1);
	}
	return NULL;
}

static char *class_file(const char *cls)
{
	char *f = xasprintf("%s.class", cls);
	for (char *p = f; *p; p++)
		if (*p == '.' && strcmp(p, ".class"))
			*p = '/';
	return f;
}

int preflight_jar(const char *path, const char *entry_class, char **why)
{
	*why = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			*why = xasprintf("%s does not exist", path);
		else if (e == EACCES)
			*why = xasprintf("%s is not readable by uid %u (permission denied)", path, (unsigned)geteuid());
		else
			*why = xasprintf("unable to open %s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = xasprintf("%s is not a file", path);
		return -EISDIR;
	}
	uint64_t off = 0, len = 0;
	int r = find_central_directory(fd, (uint64_t)st.st_size, &off, &len);
	unsigned char *cen = NULL;
	if (r == 0 && len > CEN_MAX)
		r = -EFBIG;
	if (r == 0) {
		cen = xmalloc(len + 1);
		r = read_at(fd, cen, len, off);
	}
	if (r < 0) {
		free(cen);
		close(fd);
		*why = xasprintf("%s is not a jar (no zip directory: %s)", path,
		                 r == -EBADMSG ? "truncated or another kind of file" : strerror(-r));
		return -EBADMSG;
	}
	struct zip_entry mf = {0};
	bool has_mf = false, has_class = false, nested = false;
	char *cls = entry_class ? class_file(entry_class) : NULL;
	r = scan_entries(cen, len, "META-INF/MANIFEST.MF", cls, &mf, &has_mf, &has_class, &nested);
	free(cen);
	char *main_class = NULL;
	if (r == 0 && !entry_class && has_mf) {
		char *text = NULL;
		if (read_entry(fd, (uint64_t)st.st_size, &mf, &text) == 0) {
			/* Flink's client: program-class first, then Main-Class */
			main_class = manifest_value(text, "program-class");
			if (!main_class)
				main_class = manifest_value(text, "Main-Class");
			free(text);
		}
	}
	close(fd);
	if (r < 0) {
		free(cls);
		*why = xasprintf("%s is not a jar (a damaged zip directory)", path);
		return -EBADMSG;
	}
	if (!entry_class && !main_class) {
		*why = xasprintf("%s has no Main-Class (nor program-class) in its manifest: set spec.job.entryClass",
		                 path);
		free(cls);
		return -ENOENT;
	}
	/* flinklet's SQL runner is in Flink's lib/ (flinklet-launcher.jar), which Flink's client loads the entry class
	 * from too: a jarURI beside a SQL script is a jar of the connectors or UDFs the script uses, without it */
	if (entry_class && !has_class && !nested && strcmp(entry_class, SQL_RUNNER_CLASS)) {
		*why = xasprintf("%s has no class %s (no %s in the jar)", path, entry_class, cls);
		free(cls);
		return -ESRCH;
	}
	free(cls);
	free(main_class);
	return 0;
}

static struct loc loc_of(const struct spec *s, const char *key);

int preflight_python(const char *flink_home, const char *entry_class, char **why)
{
	if (!flink_python_entry(entry_class))
		return 0;
	char *opt = path_join(flink_home ? flink_home : "/opt/flink", "opt");
	DIR *dir = opendir(opt);
	int found = 0;
	struct dirent *de;
	while (dir && (de = readdir(dir)))
		found += str_has_prefix(de->d_name, "flink-python");
	if (dir)
		closedir(dir);
	int r = 0;
	if (found != 1) {
		*why =
		    xasprintf("%s runs a Python job, which needs one flink-python-*.jar in %s (Flink's CLI adds it "
		              "to the job's class path, found through FLINK_OPT_DIR; Flink's distribution has it): %s",
		              entry_class, opt,
		              found ? "there are several"
		              : dir ? "there is none"
		                    : "no such directory");
		r = -ENOENT;
	}
	free(opt);
	return r;
}

int preflight_jar_diag(const struct spec *s, const char *jar_path, struct diags *d)
{
	char *why = NULL;
	int r = preflight_jar(jar_path, s->job.entry_class, &why);
	if (r == -ESRCH)
		diags_add(d, &s->job.entry_class_loc, "spec.job.entryClass", "%s", why);
	else if (r < 0)
		diags_add(d, &s->job.jar_uri_loc, "spec.job.jarURI", "%s", why);
	else if ((r = preflight_python(spec_get(s, "flinklet.flink.home"), s->job.entry_class, &why)) < 0) {
		struct loc home_loc = loc_of(s, "flinklet.flink.home");
		diags_add(d, &home_loc, "spec.flinkConfiguration.flinklet.flink.home", "%s", why);
	}
	free(why);
	return r;
}

/* address ("host:port", "[v6]:port") can be bound now, as a server would (SO_REUSEADDR): 0 or -errno. */
static int bind_test(const char *address)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	int r = http_parse_address(address, &sa, &salen);
	if (r < 0)
		return r;
	int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	r = bind(fd, (struct sockaddr *)&sa, salen) < 0 ? -errno : 0;
	close(fd);
	return r;
}

int preflight_port_free(const char *host, int port)
{
	char *addr = strchr(host, ':') ? xasprintf("[%s]:%d", host, port) : xasprintf("%s:%d", host, port);
	int r = bind_test(addr);
	free(addr);
	return r;
}

static struct loc loc_of(const struct spec *s, const char *key)
{
	const struct conf_entry *e = spec_entry(s, key);
	if (e && e->loc.file)
		return e->loc;
	return (struct loc){.file = s->file};
}

static void check_dir_writable(const struct spec *s, struct diags *d)
{
	const char *dir = spec_get(s, "flinklet.state.dir");
	if (!dir)
		return;
	struct loc l = loc_of(s, "flinklet.state.dir");
	const char *field = "spec.flinkConfiguration.flinklet.state.dir";
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			diags_add(d, &l, field, "%s is not a directory", dir);
		else if (access(dir, W_OK | X_OK) < 0)
			diags_add(d, &l, field, "%s is not writable by uid %u: %s", dir, (unsigned)geteuid(),
			          strerror(errno));
		return;
	}
	/* not there yet: flinklet creates it, so the nearest existing parent must be writable */
	char *p = xstrdup(dir);
	for (;;) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p) {
			p[slash == p ? 1 : 0] = '\0';
			break;
		}
		*slash = '\0';
		if (stat(p, &st) == 0)
			break;
	}
	const char *parent = *p ? p : ".";
	if (access(parent, W_OK | X_OK) < 0)
		diags_add(d, &l, field, "%s does not exist and %s is not writable by uid %u: %s", dir, parent,
		          (unsigned)geteuid(), strerror(errno));
	free(p);
}

int preflight_all(const struct spec *s, const char *jar_path, struct diags *d)
{
	size_t before = d->msgs.n;
	const char *home = spec_get(s, "flinklet.flink.home");
	char *lib = path_join(home ? home : "/opt/flink", "lib");
	char *version = NULL;
	struct loc home_loc = loc_of(s, "flinklet.flink.home");
	if (flink_detect_version(lib, &version) < 0)
		diags_add(
		    d, &home_loc, "spec.flinkConfiguration.flinklet.flink.home",
		    "no Flink jars in %s (flink-dist-*.jar or flink-clients-*.jar): set --flink-home, $FLINK_HOME "
		    "or flinklet.flink.home",
		    lib);
	else if (!flink_version_label(version))
		diags_add(d, &home_loc, "spec.flinkConfiguration.flinklet.flink.home",
		          "the jars in %s are Flink %s, which flinklet does not support (1.20, 2.0 .. 2.3)", lib,
		          version);
	free(version);
	free(lib);

	if (jar_path)
		preflight_jar_diag(s, jar_path, d);

	int64_t port = spec_int(s, "rest.port");
	const char *bind = spec_get(s, "rest.bind-address");
	if (port > 0 && port < 65536) {
		int r = preflight_port_free(bind ? bind : "127.0.0.1", (int)port);
		struct loc l = loc_of(s, "rest.port");
		if (r == -EADDRINUSE)
			diags_add(d, &l, "spec.flinkConfiguration.rest.port",
			          "port %lld on %s is in use by another process: Flink's REST server could not start",
			          (long long)port, bind ? bind : "127.0.0.1");
		else if (r < 0)
			diags_add(d, &l, "spec.flinkConfiguration.rest.port", "unable to bind %s port %lld: %s",
			          bind ? bind : "127.0.0.1", (long long)port, strerror(-r));
	}
	const char *http = spec_get(s, "flinklet.http.address");
	if (http && *http) {
		int r = bind_test(http);
		struct loc l = loc_of(s, "flinklet.http.address");
		if (r == -EADDRINUSE)
			diags_add(d, &l, "spec.flinkConfiguration.flinklet.http.address",
			          "%s is in use by another process (another flinklet?)", http);
		else if (r < 0 && r != -EINVAL)
			diags_add(d, &l, "spec.flinkConfiguration.flinklet.http.address", "unable to bind %s: %s", http,
			          strerror(-r));
	}
	check_dir_writable(s, d);
	return (int)(d->msgs.n - before);
}
