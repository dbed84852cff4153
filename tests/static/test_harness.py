"""The test harness is one (issue 39, item 5): tests/testkit.py holds the runners of `flinklet run` and the one
`wait_for`; the kits (tests/*/*kit.py, tests/e2e/operator_rules.py) import no conftest.py, so that a kit is the
same code whichever suite loads it; chaos and the benchmarks take what they share with the tests from testkit,
never from a suite's folder; the two parity harnesses' common Java lives once, in tests/parity/common/, which both
Maven builds compile. Reads the tree only."""
import ast
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTS = os.path.join(ROOT, "tests")
# what a runner of `flinklet run` is: a copy of one of these outside testkit.py is a second harness
RUNNER_METHODS = {"own_status", "new_events", "_read_status", "note_leftovers", "wait_exit"}


def python_files(*dirs):
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(ROOT, d)):
            subdirs[:] = [s for s in subdirs if s not in ("__pycache__", "fixtures", "corpus")]
            for f in sorted(files):
                if f.endswith(".py"):
                    yield os.path.relpath(os.path.join(base, f), ROOT)


def parse(path):
    with open(os.path.join(ROOT, path)) as fh:
        return ast.parse(fh.read(), path)


def defined_functions(tree):
    """The names of the functions a module defines, at any depth (methods too)."""
    return [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def imported_modules(tree):
    """The top-level names of the modules a module imports, at any depth."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name.split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module.split(".")[0])
    return out


def test_the_finders_see_definitions_and_imports():
    tree = ast.parse("import conftest\nfrom testkit import wait_for\nclass A:\n    def own_status(self):\n"
                     "        from conftest import BIN\n        def wait_for():\n            pass\n")
    assert defined_functions(tree) == ["own_status", "wait_for"]
    assert imported_modules(tree) == {"conftest", "testkit"}


def test_one_wait_for():
    """The one poll of the tests (its default interval 0.5 s; the fault tests pass interval=0.1)."""
    found = [p for p in python_files("tests") if "wait_for" in defined_functions(parse(p))]
    assert found == ["tests/testkit.py"], found


def test_runners_live_in_testkit():
    """Flinklet and Supervisor subclass testkit.Runner there; no suite keeps a copy of a runner's methods."""
    found = {p: sorted(RUNNER_METHODS & set(defined_functions(parse(p)))) for p in python_files("tests")
             if p != "tests/testkit.py"}
    found = {p: names for p, names in found.items() if names}
    assert not found, found


def kits():
    return [p for p in python_files("tests") if re.search(r"kit\.py$", p) and p != "tests/testkit.py"] + \
        ["tests/e2e/operator_rules.py"]


def test_kits_import_no_conftest():
    assert len(kits()) >= 7, kits()  # containerkit, docskit, httpkit, kafkakit, sqlkit, attack_kit, memtune_kit, ...
    found = {p: "conftest" for p in kits() if "conftest" in imported_modules(parse(p))}
    assert not found, found


def test_no_suite_reaches_into_another_suites_folder():
    """chaos and the benchmarks take the harness from tests/testkit.py: neither imports a conftest nor puts a suite's
    folder (tests/e2e, tests/faults) on sys.path."""
    found = {}
    for p in python_files("tests/chaos", "bench"):
        with open(os.path.join(ROOT, p)) as fh:
            text = fh.read()
        if "conftest" in imported_modules(ast.parse(text)) or re.search(r"""["'](e2e|faults)["']""", text):
            found[p] = "imports a suite's harness"
    assert not found, found


def test_parity_harnesses_share_their_common_code():
    """Both parity builds compile tests/parity/common/ (ParityCommon.java), and neither harness keeps its own copy
    of what it holds."""
    common = os.path.join(TESTS, "parity", "common", "src", "main", "java", "org", "apache", "flink", "autoscaler",
                          "ParityCommon.java")
    assert os.path.isfile(common)
    with open(common) as fh:
        shared = set(re.findall(r"^    static [\w<>\[\], ]+? (\w+)\(", fh.read(), re.M))
    assert {"serve", "num", "configValue", "topology", "sampledHistory", "givenEvaluated"} <= shared, shared
    for pom, harness in (("pom.xml", "src/main/java/org/apache/flink/autoscaler/ParityHarness.java"),
                         ("oracle-1.16/pom.xml",
                          "oracle-1.16/src/main/java/org/apache/flink/autoscaler/ParityHarness116.java")):
        with open(os.path.join(TESTS, "parity", pom)) as fh:
            assert re.search(r"<compileSourceRoot>[^<]*/common/src/main/java</compileSourceRoot>", fh.read()), pom
        with open(os.path.join(TESTS, "parity", harness)) as fh:
            own = set(re.findall(r"^    static [\w<>\[\], ]+? (\w+)\(", fh.read(), re.M))
        assert not own & shared, (harness, sorted(own & shared))


def test_no_test_patches_what_conftest_only_re_exports():
    """The runners read their defaults (JOBS_JAR, FLINK_HOME, BIN, ...) from testkit: a test that patched the name
    conftest re-exports would change nothing and test the wrong jar. A test hands its runner what differs
    (`flinklets(jar=...)`) instead."""
    pattern = re.compile(r"setattr\(\s*conftest\s*,|\bconftest\.[A-Z][A-Z_]*\s*=[^=]")
    found = []
    for path in python_files("tests"):
        if path == os.path.relpath(__file__, ROOT):
            continue
        with open(os.path.join(ROOT, path)) as fh:
            found += [f"{path}:{n}" for n, line in enumerate(fh, 1) if pattern.search(line)]
    assert not found, found
