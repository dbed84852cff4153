"""flinklet's table of Flink's GET routes (src/flink/restroutes.c) against every REST route the real jars of each
Flink version declare (issue 36): RestRoutes.java makes each *Headers class of build/flink-<version>/lib and prints
its method and URL template. A GET route of Flink's that the table does not classify (open, or the token) fails, so
does an entry for a version that lacks it; flinklet's answer for each route (its template with a value in each
parameter) is the table's; the routes that act on a GET are the token's; any other method's routes are not open to
a GET. RESTROUTES_DIR holds RestRoutes.class and route_table, RESTROUTES_FLINK the Flink homes (space-separated)."""
import os
import re
import subprocess

import pytest

DIR = os.environ.get("RESTROUTES_DIR", "build/restroutes")
HOMES = os.environ.get("RESTROUTES_FLINK", "").split()

# specifications that wrap another one (its route is the other's): not routes of their own
DECORATORS = {"org.apache.flink.client.program.rest.UrlPrefixDecorator",
              "org.apache.flink.runtime.rest.messages.CustomHeadersDecorator"}
# what acts on a GET in every version flinklet runs
ACTING = {"/jobs/:jobid/yarn-cancel", "/jobs/:jobid/yarn-stop"}


def flink_version(home):
    """The version of a Flink home's jars: the distribution's flink-dist-<v>.jar, or the module jars' flink-runtime."""
    for name in sorted(os.listdir(os.path.join(home, "lib"))):
        m = re.match(r"flink-(?:dist|runtime)-(\d+\.\d+\.\d+)\.jar$", name)
        if m:
            return m.group(1)
    raise AssertionError(f"no flink-dist nor flink-runtime jar in {home}/lib")


def flinks_routes(home):
    """{(method, template)} of Flink's jars in home/lib, and the classes that could not be made."""
    out = subprocess.run(["java", "-cp", DIR, "RestRoutes", os.path.join(home, "lib")], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    routes, unmade = set(), set()
    for line in out.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "ROUTE":
            method, template, _cls = rest.split(" ")
            routes.add((method, template))
        else:
            unmade.add(rest.split(" ")[0])
    return routes, unmade


def table(version):
    out = subprocess.run([os.path.join(DIR, "route_table"), "table", version], capture_output=True, text=True,
                         check=True).stdout
    return {line.split(" ")[2]: line.split(" ")[0] for line in out.splitlines()}


def access(paths):
    out = subprocess.run([os.path.join(DIR, "route_table"), "access"], input="".join(p + "\n" for p in paths),
                         capture_output=True, text=True, check=True).stdout
    return dict(reversed(line.split(" ", 1)) for line in out.splitlines())


def instance(template):
    """A path of the template: each parameter a value like Flink's ids."""
    return re.sub(r":[A-Za-z]+", "0123456789abcdef0123456789abcdef", template)


@pytest.fixture(params=HOMES or [None], ids=lambda h: flink_version(h) if h else "none")
def flink(request):
    if request.param is None:
        pytest.fail("RESTROUTES_FLINK names no Flink home (make restroutes sets it)")
    return flink_version(request.param), flinks_routes(request.param)


def test_every_get_route_of_flinks_is_classified_and_no_entry_is_stale(flink):
    version, (routes, unmade) = flink
    assert unmade <= DECORATORS, f"specifications RestRoutes could not make: {sorted(unmade - DECORATORS)}"
    gets = {t for m, t in routes if m == "GET"}
    # the web UI's files: Flink's one catch-all route, served by its static file handler
    assert "/:*" in gets and not [t for t in gets - {"/:*"} if "*" in t]
    gets.discard("/:*")
    listed = table(version)
    assert len(gets) > 60
    assert sorted(gets - set(listed)) == [], f"Flink {version}'s GET routes the table does not classify"
    assert sorted(set(listed) - gets) == [], f"entries for Flink {version}, which has no such route"


def test_flinklets_answer_for_each_route_is_the_tables(flink):
    version, (routes, _) = flink
    listed = table(version)
    gets = {t for m, t in routes if m == "GET" and t != "/:*"}
    answers = access([instance(t) for t in gets])
    wrong = {t: (answers[instance(t)], listed.get(t)) for t in gets if answers[instance(t)] != listed.get(t)}
    assert wrong == {}
    # the versioned form too
    answers = access(["/v1" + instance(t) for t in gets])
    assert {t for t in gets if answers["/v1" + instance(t)] != listed.get(t)} == set()
    assert ACTING <= gets and all(listed[t] == "TOKEN" for t in ACTING)
    # a GET of another method's route (stop, savepoints, upload ...) is not open unless it is a GET route too
    others = {t for m, t in routes if m != "GET"} - gets
    answers = access([instance(t) for t in others])
    assert sorted(t for t in others if answers[instance(t)] != "TOKEN") == []
