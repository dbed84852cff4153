#!/usr/bin/env python3
"""flink-dist: makes build/flink-<version>/ a Flink distribution's runtime from the official release's lib/ and
opt/, which Apache publishes on PyPI as apache-flink-libraries (a wheel for 2.x, an sdist for 1.20.x; the same
jars as the binary release's lib/ and opt/: flink-dist-<version>.jar, the Table API's uber jar and planner loader,
flink-cep, flink-csv, flink-json, flink-connector-files, log4j; opt/flink-python and the SQL client).

    scripts/flink-dist.py VERSION HOME CACHE

fetches apache-flink-libraries==VERSION into CACHE once (`pip download --no-deps`: pip's own index and proxy
settings apply), and writes HOME/lib, HOME/opt and an empty HOME/plugins (as the binary release has it: the
wheel's plugins/ holds what the release keeps under opt/, and Flink loads every plugin it finds at start).
Added to lib/, where the distribution lacks them: flink-metrics-prometheus (the classes flinklet's reporter
extends: the release has it as a plugin only), and nothing for RocksDB and ForSt, which flink-dist has inside
(checked: a distribution without them is refused, so that state.backend.type: rocksdb never fails at run time).
flinklet's launcher and reporter are added by the Makefile. HOME is replaced whole (built beside, then renamed).
Exit codes: 0 done, 3 PyPI has no such release or cannot be reached (the Makefile says to use
FLINK_RUNTIME=modules), 1 anything else.
"""
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

PACKAGE = "apache-flink-libraries"


def say(msg):
    print(f"flink-dist: {msg}", file=sys.stderr)


def cached(cache, version):
    stem = PACKAGE.replace("-", "_") + "-" + version
    for pattern in (stem + "-*.whl", stem + ".tar.gz"):
        found = sorted(glob.glob(os.path.join(cache, pattern)))
        if found:
            return found[0]
    return None


def fetch(cache, version):
    path = cached(cache, version)
    if path:
        return path
    os.makedirs(cache, exist_ok=True)
    say(f"pip download {PACKAGE}=={version} (about 230 to 320 MB, once)")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", cache,
                        f"{PACKAGE}=={version}"])
    path = cached(cache, version)
    if r.returncode != 0 or not path:
        say(f"PyPI has no {PACKAGE}=={version} or cannot be reached: make flink-lib FLINK_RUNTIME=modules takes "
            "Flink's module jars from Maven Central instead")
        sys.exit(3)
    return path


def members(archive):
    """(name inside the distribution, reader) for each file of pyflink/{lib,opt,plugins} (wheel) or
    deps/{lib,opt,plugins} (sdist)."""
    if archive.endswith(".whl"):
        z = zipfile.ZipFile(archive)
        for info in z.infolist():
            if info.filename.startswith("pyflink/") and not info.is_dir():
                yield info.filename[len("pyflink/"):], (lambda i=info: z.open(i))
    else:
        t = tarfile.open(archive, "r:gz")
        for info in t:
            parts = info.name.split("/", 2)
            if len(parts) == 3 and parts[1] == "deps" and info.isfile():
                yield parts[2], (lambda i=info: t.extractfile(i))


def jar_has(path, suffixes):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    return {s: any(n.endswith(s) for n in names) for s in suffixes}


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    version, home, cache = sys.argv[1:]
    archive = fetch(cache, version)
    tmp = home + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for d in ("lib", "opt", "plugins"):
        os.makedirs(os.path.join(tmp, d))
    prometheus = None
    for name, reader in members(archive):
        top, _, rest = name.partition("/")
        base = os.path.basename(name)
        if top in ("lib", "opt") and "/" not in rest and base.endswith(".jar"):
            dest = os.path.join(tmp, top, base)
        elif top == "plugins" and base.startswith("flink-metrics-prometheus-") and base.endswith(".jar"):
            dest = prometheus = os.path.join(tmp, "lib", base)
        else:
            continue
        with reader() as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
    dist = glob.glob(os.path.join(tmp, "lib", f"flink-dist*-{version}.jar"))
    if not dist:
        say(f"{archive} has no lib/flink-dist-{version}.jar")
        sys.exit(1)
    if not prometheus:
        say(f"{archive} has no flink-metrics-prometheus: flinklet's reporter cannot load")
        sys.exit(1)
    want = {"EmbeddedRocksDBStateBackend.class": "RocksDB"}
    if not version.startswith("1."):
        want["ForStStateBackend.class"] = "ForSt"
    missing = [label for s, ok in jar_has(dist[0], want).items() if not ok for label in [want[s]]]
    if missing:
        say(f"{os.path.basename(dist[0])} lacks {' and '.join(missing)}: use FLINK_RUNTIME=modules")
        sys.exit(1)
    shutil.rmtree(home, ignore_errors=True)
    os.rename(tmp, home)
    jars = sorted(os.listdir(os.path.join(home, "lib")) + os.listdir(os.path.join(home, "opt")))
    say(f"{home}: lib/ and opt/ of Flink {version} from {os.path.basename(archive)} ({len(jars)} jars)")


if __name__ == "__main__":
    main()
