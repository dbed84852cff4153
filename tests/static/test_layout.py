"""The source tree as docs/architecture.md draws it (issues 17 and 39): one folder per module group, each .c beside its
.h and each file with a row, every #include between folders one the table allows (a folder never reaches into a
folder above it), no #include cycle, one call loop (through sup_raise, which a part calls last), and the supervisor's
parts as their table says: what each owns and what each includes; and java/, flinklet's Java, a row per Maven
module and each built by java/pom.xml."""
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SRC = os.path.join(ROOT, "src")

# folder -> the folders its files may include headers of (docs/architecture.md, "Layout")
ALLOWED = {
    "base": set(),
    "http": {"base"},
    "config": {"base", "http", "autoscaler"},
    "autoscaler": {"base", "config"},
    "flink": {"base", "config", "http"},
    "supervisor": {"base", "http", "config", "autoscaler", "flink"},
    "cli": {"base", "http", "config", "autoscaler", "flink", "supervisor"},
}


def _tree():
    return {d: sorted(os.listdir(os.path.join(SRC, d))) for d in sorted(os.listdir(SRC))}


def test_every_source_is_in_a_documented_folder_and_no_file_is_outside_one():
    assert not [f for f in os.listdir(SRC) if os.path.isfile(os.path.join(SRC, f))], "a file directly under src/"
    assert set(_tree()) == set(ALLOWED), "a folder the architecture document does not name"
    with open(os.path.join(ROOT, "docs", "architecture.md")) as fh:
        doc = fh.read()
    for folder in ALLOWED:
        assert f"| `src/{folder}/` |" in doc, folder


def test_includes_between_folders_follow_the_layers():
    home = {f: d for d, files in _tree().items() for f in files if f.endswith(".h")}
    bad = []
    for d, files in _tree().items():
        for f in files:
            with open(os.path.join(SRC, d, f), errors="replace") as fh:
                for h in re.findall(r'#include "([^"]+)"', fh.read()):
                    other = home.get(h)
                    assert other is not None, f"src/{d}/{f} includes {h}, which is in no folder"
                    if other != d and other not in ALLOWED[d]:
                        bad.append(f"src/{d}/{f} -> src/{other}/{h}")
    assert not bad, bad


# ---- inside src/supervisor/ (issue 17, item 2): one header per part, and no cycle between the parts ----

SUP = os.path.join(SRC, "supervisor")


def _sup_includes():
    """file -> the supervisor headers it includes (by their #include lines)."""
    out = {}
    for f in sorted(os.listdir(SUP)):
        with open(os.path.join(SUP, f), errors="replace") as fh:
            incs = re.findall(r'^\s*#\s*include\s+"([^"]+)"', fh.read(), re.M)
        out[f] = [h for h in incs if os.path.exists(os.path.join(SUP, h))]
    return out


def _part_graph():
    """part -> the parts it may call: a part is a .c of src/supervisor/ with its .h; an edge is an #include of
    another part's header by the part's .c (a part's header includes sup_core.h at most, so edges are direct)."""
    graph = {}
    for f, incs in _sup_includes().items():
        part = f[:-2]
        if f.endswith(".c") or (f.endswith(".h") and part not in graph):
            graph.setdefault(part, set())
        if f.endswith(".c"):
            graph[part] |= {h[:-2] for h in incs if h[:-2] != part}
    return graph


def _cycle(graph):
    """A cycle of graph as a list of nodes, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in graph}
    stack = []

    def visit(n):
        color[n] = GREY
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if color.get(m, BLACK) == GREY:
                return stack[stack.index(m):] + [m]
            if color.get(m) == WHITE:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        color[n] = BLACK
        return None

    for n in sorted(graph):
        if color[n] == WHITE:
            found = visit(n)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) is None


def test_each_part_has_its_own_header_and_only_the_driver_sees_them_all():
    incs = _sup_includes()
    parts = [f[:-2] for f in incs if f.startswith("sup_") and f.endswith(".c")]
    for p in parts:
        assert f"{p}.h" in incs, f"src/supervisor/{p}.c has no header of its own"
        assert f"{p}.h" in incs[f"{p}.c"], f"src/supervisor/{p}.c does not include its own header"
    for f, hs in incs.items():
        # sup.h (every part's header) is the table's driver's (supervisor.c), not a part's
        if f.startswith("sup_"):
            assert "sup.h" not in hs, f"src/supervisor/{f} includes sup.h: include the parts' headers it calls"
        # a part's header says what the part offers and needs nothing of another part: edges are the .c files'
        if f.startswith("sup_") and f.endswith(".h"):
            assert not [h for h in hs if (h.startswith("sup_") or h == "sup.h") and h != "sup_core.h"], f"src/supervisor/{f} includes {hs}"


def test_no_cycle_between_the_files_of_the_supervisor():
    graph = _part_graph()
    # the driver calls every part; nothing calls into the driver but sup_raise (declared in sup_core.h, defined by
    # the driver: the table's one entry point)
    assert not [p for p, deps in graph.items() if p != "supervisor" and deps & {"sup", "supervisor"}]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_table_has_one_entry_point_called_directly():
    """sup_raise is the one way into the lifecycle table: declared in the core's header, defined by the driver, called
    directly (no dispatcher registered through a function pointer or a constructor)."""
    defs = {}
    for f in sorted(os.listdir(SUP)):
        with open(os.path.join(SUP, f), errors="replace") as fh:
            text = fh.read()
        assert "__attribute__((constructor))" not in text, f"src/supervisor/{f} has a constructor"
        assert not re.search(r"\bsup_dispatch\w*|\bsup_set_dispatcher\b", text), f"src/supervisor/{f} names a second entry point"
        if re.search(r"^void sup_raise\(struct supervisor \*s, enum sup_event ev\)\n\{", text, re.M):
            defs[f] = True
    assert list(defs) == ["supervisor.c"], defs
    with open(os.path.join(SUP, "sup_core.h")) as fh:
        assert "void sup_raise(struct supervisor *s, enum sup_event ev);" in fh.read()


def test_no_part_declares_another_parts_function_itself():
    """A part reaches another only through that part's header: no prototype of a sup_ function in a .c file."""
    bad = []
    for f in os.listdir(SUP):
        if f.endswith(".c"):
            with open(os.path.join(SUP, f), errors="replace") as fh:
                for m in re.finditer(r"^(?!static)[a-z][\w \*]*\b(sup_\w+)\([^;{]*\);", fh.read(), re.M):
                    bad.append(f"{f}: {m.group(1)}")
    assert not bad, bad


# the part -> the file that owns (alone writes) its sub-struct of struct supervisor (src/supervisor/sup_core.h)
OWNER = {
    "launch": "sup_launch.c",
    "scratch": "sup_scratch.c",
    "keepjvm": "sup_keepjvm.c",
    "standby": "sup_standby.c",
    "fetch": "sup_fetch.c",
    "restore": "sup_restore.c",
    "poll": "sup_poll.c",
    "snapshot": "sup_snapshot.c",
    "dispose": "sup_dispose.c",
    "stop": "sup_stop.c",
    "reload": "sup_reload.c",
    "http": "sup_http.c",
    "notify": "sup_notify.c",
    "autoscaler": "sup_autoscaler.c",
    "observe": "sup_observe.c",
    "rescales": "sup_rescales.c",
    "cds": "sup_cds.c",
    "sweep": "sup_sweep.c",
    "memtune": "sup_memtune.c",
    "flinkmetrics": "sup_flinkmetrics.c",
}
# the core's fields are written by the table's driver (supervisor.c, and its set-up of the state directory,
# sup_setup.c) and the records; the status document is the one record every part fills in (its own fields of it:
# FIELD_OWNER below), except its errors: those are one slot per source, each with one owner (ERROR_OWNER), written
# through sup_error_set/sup_error_clear only
CORE_WRITERS = {"supervisor.c", "sup_setup.c", "sup_core.c"}
CORE_SHARED = {"status"}
STATUS_OWNED = {"error", "errors", "warnings"}

# the source of an error of the status document -> the one file that sets and clears it (src/supervisor/status.h)
ERROR_OWNER = {
    "STATUS_ERR_VOLUME": "sup_core.c",
    "STATUS_ERR_RESTORE": "sup_restore.c",
    "STATUS_ERR_CRASH_LOOP": "supervisor.c",
    "STATUS_ERR_STOP": "sup_stop.c",
    "STATUS_ERR_STOP_SAVEPOINT": "sup_snapshot.c",
    "STATUS_ERR_DEMOTED": "sup_restore.c",
    "STATUS_ERR_LAUNCH": "supervisor.c",
    "STATUS_ERR_JAR": "sup_launch.c",
    "STATUS_ERR_FETCH": "sup_fetch.c",
    "STATUS_ERR_SQL_FETCH": "sup_fetch.c",
    "STATUS_ERR_JOB": "sup_poll.c",
    "STATUS_ERR_CONFIG": "sup_reload.c",
    "STATUS_ERR_SNAPSHOT": "sup_snapshot.c",
    "STATUS_ERR_VOLUME_SPACE": "sup_snapshot.c",
    "STATUS_ERR_PROGRESS": "sup_poll.c",
    "STATUS_ERR_FAILOVER": "sup_poll.c",
}
# the source of a warning of the status document -> the one file that sets and clears it (sup_warning_set/clear)
WARNING_OWNER = {
    "STATUS_WARN_SCRATCH_SPACE": "sup_scratch.c",
}

_PATH = r"\b(?:s|sup)->(\w+)((?:\.\w+|\[[^\]]*\])*)"
_WRITES = [
    re.compile(_PATH + r"\s*(?:=(?!=)|\+\+|--|[-+*/|&^]=|<<=|>>=)"),  # an assignment, ++, --
    re.compile(r"(?:\+\+|--)\s*" + _PATH),  # ++s->x
    re.compile(r"(?<![&\w)\]])&\s*" + _PATH),  # &s->x: handed to something that may change it
    re.compile(r"\b\w*free\(\s*(?:\([\w ]+\*\)\s*)?" + _PATH),  # free(s->x), strv_free(&s->x) above
]


def _writes(text):
    """(line, field of struct supervisor) for each write of text."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for rx in _WRITES:
            out += [(n, m.group(1)) for m in rx.finditer(line)]
    return out


def test_the_write_finder_sees_writes():
    found = {f for _, f in _writes("s->poll.timer = x; s->launch.gen++; strv_free(&s->restore.failed_points);\n"
                                   "free(s->http.token); ++s->stop.signal; x = s->reload.upgrading == y;")}
    assert found == {"poll", "launch", "restore", "http", "stop"}
    assert not _writes("if (s->state == SUP_RUNNING && s->launch.jvm_pid > 0 || s->cds.helper <= 0) f(s->poll.n);")


def test_each_part_alone_writes_its_state():
    """A part's sub-struct is written only by its own file; the core only by the driver and the records."""
    bad = []
    for f in sorted(os.listdir(SUP)):
        if not f.endswith(".c") or not (f.startswith("sup") or f in CORE_WRITERS):
            continue
        with open(os.path.join(SUP, f), errors="replace") as fh:
            for n, field in _writes(fh.read()):
                if field in OWNER:
                    if OWNER[field] != f:
                        bad.append(f"src/supervisor/{f}:{n} writes s->{field} ({OWNER[field]}'s)")
                elif f not in CORE_WRITERS and field not in CORE_SHARED:
                    bad.append(f"src/supervisor/{f}:{n} writes the core's s->{field}")
    assert not bad, "\n".join(bad)


def _status_error_writes(text):
    """(line, what) for each write of the status document's errors or warnings other than through sup_error_set/clear
    and sup_warning_set/clear."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for rx in _WRITES:
            out += [(n, m.group(0)) for m in rx.finditer(line)
                    if m.group(1) == "status" and re.match(r"\.(\w+)", m.group(2) or "")
                    and re.match(r"\.(\w+)", m.group(2)).group(1) in STATUS_OWNED]
        # the supervisor as a value (supervisor_run's s.status.error)
        out += [(n, m.group(0)) for m in re.finditer(
            r"(?:&\s*\bs\.status\.errors?\b|\bs\.status\.errors?\b(?:\[[^\]]*\])?(?:\.\w+)?\s*=(?!=))", line)]
        out += [(n, m.group(0)) for m in re.finditer(r"\bstatus_(?:error|warning)_set\(", line)]
    return out


_ERROR_CALL = re.compile(r"\bsup_error_(?:set|clear)\(\s*&?\w+\s*,\s*([^,)]*)")


def test_the_error_finders_see_writes():
    found = _status_error_writes("status_set_string(&s->status.error, x); s->status.errors[i].message = y;\n"
                                 "status_error_set(&s->status, STATUS_ERR_JOB, m, 0); status_set_string(&s.status.error, 0);")
    assert [n for n, _ in found] == [1, 1, 2, 2], found
    assert not _status_error_writes("if (s->status.error) f(s->status.errors[1].message); s->status.intent = x;")
    got = [m.group(1) for m in _ERROR_CALL.finditer("sup_error_set(s, STATUS_ERR_JOB, why); "
                                                    "sup_error_clear(&s, STATUS_ERR_FAILOVER); sup_error(s, X)")]
    assert got == ["STATUS_ERR_JOB", "STATUS_ERR_FAILOVER"], got


def test_each_error_of_the_status_has_one_owner():
    """The status document's errors are one slot per source (src/supervisor/status.h); a slot is set and cleared only
    by its owner, through sup_error_set/sup_error_clear (sup_core.c), never by writing the fields or by matching the
    text another part put there."""
    with open(os.path.join(SUP, "status.h")) as fh:
        body = fh.read()
    body = body[body.index("enum status_error_source {"):]
    sources = re.findall(r"^\t(STATUS_ERR_\w+)", body[: body.index("};")], re.M)
    sources = [x for x in sources if x != "STATUS_ERR_MAX"]
    assert set(sources) == set(ERROR_OWNER), set(sources) ^ set(ERROR_OWNER)
    bad, sets = [], {}
    for f in sorted(os.listdir(SUP)):
        if not f.endswith(".c") or f == "status.c":
            continue
        with open(os.path.join(SUP, f), errors="replace") as fh:
            text = fh.read()
        for n, what in _status_error_writes(text):
            if not (f == "sup_core.c" and what.startswith(("status_error_set", "status_warning_set"))):
                bad.append(f"src/supervisor/{f}:{n} writes the status errors directly: {what}")
        for n, line in enumerate(text.splitlines(), 1):
            for m in _ERROR_CALL.finditer(line):
                src = m.group(1).strip()
                if f == "sup_core.c" and src == "src":
                    continue  # the functions themselves
                if src not in ERROR_OWNER:
                    bad.append(f"src/supervisor/{f}:{n} sets an error of no named source: {src}")
                elif ERROR_OWNER[src] != f:
                    bad.append(f"src/supervisor/{f}:{n} sets or clears {src} ({ERROR_OWNER[src]}'s)")
                elif "sup_error_set" in m.group(0):
                    sets[src] = True
    assert not bad, "\n".join(bad)
    assert set(sets) == set(ERROR_OWNER), f"sources no owner ever sets: {set(ERROR_OWNER) - set(sets)}"


_WARNING_CALL = re.compile(r"\bsup_warning_(?:set|clear)\(\s*&?\w+\s*,\s*([^,)]*)")


def test_each_warning_of_the_status_has_one_owner():
    """The status document's warnings in force are one slot per source as its errors are (src/supervisor/status.h):
    set and cleared only by the source's owner, through sup_warning_set/sup_warning_clear (sup_core.c)."""
    with open(os.path.join(SUP, "status.h")) as fh:
        body = fh.read()
    body = body[body.index("enum status_warning_source {"):]
    sources = [x for x in re.findall(r"^\t(STATUS_WARN_\w+)", body[: body.index("};")], re.M) if x != "STATUS_WARN_MAX"]
    assert set(sources) == set(WARNING_OWNER), set(sources) ^ set(WARNING_OWNER)
    bad, sets = [], set()
    for f in sorted(os.listdir(SUP)):
        if not f.endswith(".c") or f == "status.c":
            continue
        with open(os.path.join(SUP, f), errors="replace") as fh:
            text = fh.read()
        for n, line in enumerate(text.splitlines(), 1):
            for m in _WARNING_CALL.finditer(line):
                src = m.group(1).strip()
                if f == "sup_core.c" and src == "src":
                    continue  # the functions themselves
                if WARNING_OWNER.get(src) != f:
                    bad.append(f"src/supervisor/{f}:{n} sets or clears {src} ({WARNING_OWNER.get(src, 'no source')}'s)")
                elif "sup_warning_set" in m.group(0):
                    sets.add(src)
    assert not bad, "\n".join(bad)
    assert sets == set(WARNING_OWNER), f"sources no owner ever sets: {set(WARNING_OWNER) - sets}"


# the fields of the status document (struct status, src/supervisor/status.h) -> the one file that writes each (issue 39,
# item 3); status.c's field table names the same owner beside each field's path, kind and carry-over. Every other file
# asks the owner's header (sup_poll_new_job, sup_set_intent, ...). A list's count is its list's. The errors and
# warnings are the core's records, each slot with its own owner (ERROR_OWNER, WARNING_OWNER above).
FIELD_OWNER = {
    "lifecycle": "sup_core.c",
    "name": "supervisor.c",
    "job_id": "sup_core.c",
    "job_state": "sup_core.c",
    "start_time_ms": "sup_poll.c",
    "update_time_ms": "sup_core.c",
    "tasks_total": "sup_poll.c",
    "tasks_running": "sup_poll.c",
    "tasks_finished": "sup_poll.c",
    "last_savepoint": "sup_snapshot.c",
    "savepoint_history": "sup_snapshot.c",
    "n_savepoint_history": "sup_snapshot.c",
    "claimed_savepoints": "sup_restore.c",
    "n_claimed_savepoints": "sup_restore.c",
    "last_checkpoint": "sup_poll.c",
    "state_size": "sup_poll.c",
    "checkpoint_history": "sup_snapshot.c",
    "n_checkpoint_history": "sup_snapshot.c",
    "savepoint_trigger_nonce": "sup_snapshot.c",
    "checkpoint_trigger_nonce": "sup_snapshot.c",
    "restored_kind": "sup_launch.c",
    "restored_location": "sup_launch.c",
    "restored_id": "sup_launch.c",
    "jvm_pid": "sup_launch.c",
    "standby_pid": "sup_standby.c",
    "jvm_starts": "sup_launch.c",
    "last_exit_code": "supervisor.c",
    "last_exit_signal": "supervisor.c",
    "stop_exit_ms": "sup_stop.c",
    "flink_version": "supervisor.c",
    "rest_port": "supervisor.c",
    "intent": "sup_core.c",
    "autoscaler_overrides": "sup_autoscaler.c",
    "memory_tuning": "sup_memtune.c",
    "supervisor_pid": "supervisor.c",
    "http_address": "sup_http.c",
    "token_file": "sup_http.c",
    "flink_metrics": "sup_flinkmetrics.c",
    "error": "sup_core.c",
    "errors": "sup_core.c",
    "warnings": "sup_core.c",
}
# the whole document handed to a function (not one field of it): what may, and which file (None: any file, it reads)
STATUS_WHOLE = {
    "status_render": None,
    "status_error_set": "sup_core.c",  # sup_error_set, sup_warning_set: the slots' owners call those
    "status_warning_set": "sup_core.c",
    "status_init": "supervisor.c",  # the context's life: made, the last run's carried over, freed
    "status_carry_over": "sup_setup.c",  # the driver's set-up of the state directory reads the last run's
    "status_free": "supervisor.c",
}

_DOC = r"(?:\b(?:s|sup)(?:->|\.)status\.|\b(?:{aliases})->)(\w+)((?:\.\w+|\[[^\]]*\])*)"
_ALIAS = re.compile(r"(?<!const )\bstruct status \*\s*(\w+)\s*=\s*&\s*(?:s|sup)->status\s*;")
_WHOLE = re.compile(r"&\s*\b(?:s|sup)(?:->|\.)status\b(?!\s*(?:\.|->))")


def _status_field_writes(text):
    """(line, field of struct status) for each write of the status document's fields in text: an assignment, ++/--,
    its address taken (handed to something that may change it; not into a pointer to const), free() or a mem*()
    into it, through s->status, sup->status, s.status or a local `struct status *x = &s->status`."""
    aliases = "|".join(sorted(set(_ALIAS.findall(text)))) or "(?!)"
    doc = _DOC.format(aliases=aliases)
    writes = [
        re.compile(doc + r"\s*(?:=(?!=)|\+\+|--|[-+*/|&^]=|<<=|>>=)"),
        re.compile(r"(?:\+\+|--)\s*" + doc),
        re.compile(r"(?<![&\w)\]])&\s*" + doc),
        re.compile(r"\b(?:\w*free|mem(?:cpy|move|set))\(\s*(?:\([\w ]+\*\)\s*)?&?\s*" + doc),
    ]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        const_decl = re.match(r"\s*const\b[\w ]*\*", line)
        seen = {}  # where the field is named on the line -> the field (free(&s->status.x) is one write)
        for i, rx in enumerate(writes):
            if i == 2 and const_decl:
                continue  # const struct snapshot_ref *cp = &s->status.last_checkpoint: a read
            seen.update({m.start(1): m.group(1) for m in rx.finditer(line)})
        out += [(n, seen[at]) for at in sorted(seen)]
    return out


def _status_whole_uses(text):
    """(line, the function the whole document is handed to, or None when it goes elsewhere) for each &s->status
    that is not a field of it and not a local alias (whose writes _status_field_writes follows)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in _WHOLE.finditer(line):
            before = line[: m.start()]
            if re.search(r"\bstruct status \*\s*\w+\s*=\s*$", before):
                continue  # an alias: its writes are the fields'
            call = re.search(r"\b(\w+)\(\s*$", before)
            out.append((n, call.group(1) if call else None))
    return out


def _status_field_violations(sources):
    """The writes of the status document's fields, and hand-overs of it whole, that break the owners' rule, in sources
    ({file name: its text}, src/supervisor/'s .c files but status.c, the document's own code)."""
    bad = []
    for f, text in sorted(sources.items()):
        for n, field in _status_field_writes(text):
            owner = FIELD_OWNER.get(field)
            if owner != f:
                bad.append(f"src/supervisor/{f}:{n} writes status.{field} ({owner or 'no owner named'}'s): ask its owner")
        for n, fn in _status_whole_uses(text):
            if fn not in STATUS_WHOLE or STATUS_WHOLE[fn] not in (None, f):
                bad.append(f"src/supervisor/{f}:{n} hands the whole status document to {fn or 'something'}")
    return bad


def test_the_field_finders_see_writes():
    planted = ("s->status.jvm_pid = 0; s->status.jvm_starts++; snapshot_ref_free(&s->status.last_checkpoint);\n"
               "memcpy(s->status.job_id, id, 33); free(s->status.intent); s.status.supervisor_pid = getpid();\n"
               "struct status *st = &s->status;\n"
               "st->n_claimed_savepoints = kept; snapshot_history_push(st->checkpoint_history, &st->n_checkpoint_history, 9);\n"
               "struct status_memtuning *mt = &s->status.memory_tuning; s->status.last_savepoint.claimed |= same;\n")
    found = _status_field_writes(planted)
    assert found == [(1, "jvm_pid"), (1, "jvm_starts"), (1, "last_checkpoint"), (2, "job_id"), (2, "intent"),
                     (2, "supervisor_pid"), (4, "n_claimed_savepoints"), (4, "n_checkpoint_history"),
                     (5, "memory_tuning"), (5, "last_savepoint")], found
    reads = ("if (s->status.jvm_pid > 0 && s->status.job_state) f(s->status.tasks_total == 1, st->intent);\n"
             "const struct snapshot_ref *cp = &s->status.last_checkpoint, *sp = &s->status.last_savepoint;\n"
             "const struct status *st = &s->status; x = st->n_savepoint_history; text = status_render(&s->status);\n")
    assert not _status_field_writes(reads)
    assert _status_whole_uses(reads) == [(3, "status_render")]
    assert _status_whole_uses("struct status *st = &s->status; sup_x(&s->status); p = &s->status;\n") == \
        [(1, "sup_x"), (1, None)]
    # the rule on a planted write and hand-over: the owner may, any other file may not
    assert not _status_field_violations({"sup_poll.c": "s->status.tasks_running = 0;",
                                         "supervisor.c": "status_free(&s->status);"})
    assert _status_field_violations({"sup_stop.c": "s->status.tasks_running = 0;",
                                     "sup_http.c": "status_free(&s->status);"}) == [
        "src/supervisor/sup_http.c:1 hands the whole status document to status_free",
        "src/supervisor/sup_stop.c:1 writes status.tasks_running (sup_poll.c's): ask its owner"]


def _struct_status_fields():
    """The members of struct status (src/supervisor/status.h), in order."""
    with open(os.path.join(SUP, "status.h")) as fh:
        text = re.sub(r"/\*.*?\*/", "", fh.read(), flags=re.S)
    body = text[text.index("struct status {") + len("struct status {"):]
    body = body[: body.index("\n};")]
    names = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            names += [re.match(r"\**\s*(\w+)", d.strip().split()[-1] if i == 0 else d.strip()).group(1)
                      for i, d in enumerate(decl.split(","))]
    return names


def _field_table():
    """status.c's field table: field -> its owner there (a list's count: its list's)."""
    with open(os.path.join(SUP, "status.c")) as fh:
        text = fh.read()
    table = text[text.index("static const struct status_field fields[] = {"):]
    table = table[: table.index("\n};")]
    out = {}
    for row in re.findall(r"\{ROW\((.*?)\}(?:,\n|,$|$)", table, re.S):
        m = re.match(r'\s*"[^"]*",\s*\w+,\s*(\w+),\s*"([^"]+)"', row)
        out[m.group(1)] = m.group(2)
        count = re.search(r"\bLIST\((\w+),", row)
        if count:
            out[count.group(1)] = m.group(2)
    return out


def test_each_field_of_the_status_has_one_owner():
    """Each field of the status document is written by its owner only (FIELD_OWNER; status.c's field table names the
    same): every other file asks the owner's header. The field table holds every field of struct status (it renders,
    reads back and carries over the document: a field is added there once)."""
    fields = _struct_status_fields()
    assert "jvm_pid" in fields and "n_savepoint_history" in fields and "warnings" in fields, fields
    assert set(fields) == set(FIELD_OWNER), set(fields) ^ set(FIELD_OWNER)
    table = _field_table()
    assert set(table) == set(fields), f"fields of struct status not in status.c's table: {set(fields) - set(table)}"
    assert table == FIELD_OWNER, {k: (v, FIELD_OWNER.get(k)) for k, v in table.items() if FIELD_OWNER.get(k) != v}
    for f in set(FIELD_OWNER.values()):
        assert os.path.exists(os.path.join(SUP, f)), f
    sources = {}
    for f in sorted(os.listdir(SUP)):
        if f.endswith(".c") and f != "status.c":
            with open(os.path.join(SUP, f), errors="replace") as fh:
                sources[f] = fh.read()
    bad = _status_field_violations(sources)
    assert not bad, "\n".join(bad)


def test_every_part_of_the_context_has_an_owner():
    with open(os.path.join(SUP, "sup_core.h")) as fh:
        text = fh.read()
    body = text[text.index("struct supervisor {"):]
    body = body[: body.index("\n};")]
    parts = set(re.findall(r"^\tstruct sup_\w+ (\w+);", body, re.M))
    assert parts == set(OWNER), parts ^ set(OWNER)
    for part, f in OWNER.items():
        assert os.path.exists(os.path.join(SUP, f)), f


# the stop's shutdown budget (issue 39, item 2): sup_stop.c arms its deadline (the one write), sup_stop_budget.c alone
# reads it; every other file asks sup_stop_budget.h (what is left of the budget, the grace period, the exit's share)
BUDGET_DEADLINE_READER = "sup_stop_budget.c"
_DEADLINE = re.compile(r"\bstop\.deadline\b(\s*=(?!=))?")


def _deadline_uses(text):
    """(line, "read" or "write") for each use of the stop's deadline (s->stop.deadline) in text."""
    return [(n, "write" if m.group(1) else "read")
            for n, line in enumerate(text.splitlines(), 1) for m in _DEADLINE.finditer(line)]


def test_the_deadline_finder_sees_reads_and_writes():
    found = _deadline_uses("s->stop.deadline = now + b;\nif (s->stop.deadline > now && s->stop.deadline_timer)\n"
                           "x = s->stop.deadline == 0; y = sup->stop.deadline - now;")
    assert found == [(1, "write"), (2, "read"), (3, "read"), (3, "read")], found


def test_only_the_stop_budget_reads_the_stops_deadline():
    bad = []
    for d, files in _tree().items():
        for f in files:
            with open(os.path.join(SRC, d, f), errors="replace") as fh:
                for n, use in _deadline_uses(fh.read()):
                    if use == "read" and f != BUDGET_DEADLINE_READER:
                        bad.append(f"src/{d}/{f}:{n} reads s->stop.deadline: ask sup_stop_budget.h")
                    if use == "write" and f != OWNER["stop"]:
                        bad.append(f"src/{d}/{f}:{n} writes s->stop.deadline ({OWNER['stop']}'s)")
    assert not bad, "\n".join(bad)


def test_no_source_file_over_800_lines():
    long = {}
    for d, files in _tree().items():
        for f in files:
            with open(os.path.join(SRC, d, f), errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > 800:
                long[f"src/{d}/{f}"] = n
    assert not long, long


def test_the_architecture_document_draws_the_parts_as_they_are():
    with open(os.path.join(ROOT, "docs", "architecture.md")) as fh:
        doc = fh.read()
    for part, f in OWNER.items():
        assert f"| {part} | `{f}` | `s->{part}`" in doc, part


def test_a_parts_functions_carry_its_prefix():
    """What a part's header declares is named after the part (sup_launch_spawn, not sup_spawn): a call says which
    part it goes to (docs/CODE_STYLE.md)."""
    bad = []
    for f in sorted(os.listdir(SUP)):
        if not (f.startswith("sup_") and f.endswith(".h")) or f == "sup_core.h":
            continue
        part = f[:-2]
        with open(os.path.join(SUP, f), errors="replace") as fh:
            for m in re.finditer(r"^[a-z][\w \*]*?\b(sup_\w+)\(", fh.read(), re.M):
                if m.group(1) != part and not m.group(1).startswith(part + "_"):
                    bad.append(f"src/supervisor/{f}: {m.group(1)}")
    assert not bad, bad


TEST_IMPORT = re.compile(r"^\s*(?:from\s+(test_\w+)\s+import|import\s+(test_\w+))", re.M)


def imported_test_modules(text):
    """The test modules a Python file imports (`from test_x import ...`, `import test_x`, at any indentation)."""
    return sorted({a or b for a, b in TEST_IMPORT.findall(text)})


def test_the_import_finder_sees_imports():
    text = "import os\nfrom test_kafka import Broker\n    from test_container import podman\nimport test_x\n" \
           "from testkit import norm\n"
    assert imported_test_modules(text) == ["test_container", "test_kafka", "test_x"]


def test_no_test_file_imports_another():
    """What two test files share lives in a kit (tests/testkit.py, tests/e2e/*kit.py, tests/faults/*_kit.py or
    *kit.py): a test file that imports another runs, and depends on, the other's module and fixtures."""
    found = {}
    for sub in ("e2e", "faults", "parity", "chaos"):
        d = os.path.join(ROOT, "tests", sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".py"):
                with open(os.path.join(d, f)) as fh:
                    names = imported_test_modules(fh.read())
                if names:
                    found[f"tests/{sub}/{f}"] = names
    assert not found, found


# ---- calls (issue 39, item 1): the map draws calls too, not only #includes ----
# docs/architecture.md, "Includes and calls": no #include cycle anywhere in src/; one call loop, through sup_raise
# (a part raises an event, the driver dispatches it at once and runs an action, which calls parts); nothing else of
# the driver (supervisor.c) is called from another file but its entry points (supervisor.h, from main.c).

DRIVER = "supervisor/supervisor.c"
# file of src/ -> the functions of the driver it may call
DRIVER_CALLERS = {"cli/main.c": {"supervisor_run", "supervisor_handled_signals"}}
RAISE = "sup_raise"


def strip_c(text):
    """text with its comments blanked and its string and character literals emptied (offsets and lines kept)."""
    def keep(m):
        s = m.group(0)
        if s.startswith("/"):
            return re.sub(r"[^\n]", " ", s)
        return s[0] + " " * (len(s) - 2) + s[-1]
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', keep, text, flags=re.S)


def _close(t, i, o="{", c="}"):
    """The index just past the bracket that closes the one at t[i]."""
    depth = 0
    for j in range(i, len(t)):
        if t[j] == o:
            depth += 1
        elif t[j] == c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(t)


_FUNC = re.compile(r"^[a-z][\w \t\*]*?\b(\w+)\((?:[^()]|\([^()]*\))*\)\s*\{", re.M)
_NOT_CALLS = {"if", "for", "while", "switch", "return", "sizeof", "_Static_assert", "defined", "__attribute__",
              "offsetof", "alignof", "_Alignof", "typeof"}


def functions(text):
    """(name, static, body) of each function defined in a C text (comments and strings out)."""
    t = strip_c(text)
    out = []
    for m in _FUNC.finditer(t):
        start = m.end() - 1
        out.append((m.group(1), m.group(0).startswith("static"), t[start:_close(t, start)]))
    return out


def calls(body):
    """The names a function body calls (by name: a callback handed over as a pointer is no call)."""
    return {n for n in re.findall(r"\b([A-Za-z_]\w*)\s*\(", body) if n not in _NOT_CALLS}


def call_graph(files):
    """files: path -> C text. Returns {caller path: {callee path: {names}}}: who calls a function another file defines
    (a static one only from its own file; a header's static inline one from any file)."""
    defs, local = {}, {}
    for path, text in files.items():
        for name, static, _ in functions(text):
            if static and path.endswith(".c"):
                local.setdefault(path, set()).add(name)
            else:
                defs.setdefault(name, path)
    graph = {}
    for path, text in files.items():
        for _, _, body in functions(text):
            for n in calls(body) - local.get(path, set()):
                if n in defs and defs[n] != path:
                    graph.setdefault(path, {}).setdefault(defs[n], set()).add(n)
    return graph


def _src_files():
    out = {}
    for d, names in _tree().items():
        for f in names:
            if f.endswith((".c", ".h")):
                with open(os.path.join(SRC, d, f), errors="replace") as fh:
                    out[f"{d}/{f}"] = fh.read()
    return out


def driver_calls(graph):
    """The calls into the driver the map does not allow: a part (or any file) calling something of supervisor.c other
    than sup_raise, and anything outside src/supervisor/ calling it but main.c's entry points."""
    bad = []
    for caller, callees in sorted(graph.items()):
        names = callees.get(DRIVER, set())
        allowed = {RAISE} if caller.startswith("supervisor/") else DRIVER_CALLERS.get(caller, set())
        bad += [f"src/{caller} calls {n} (src/{DRIVER})" for n in sorted(names - allowed)]
    return bad


def _file_cycle(graph, drop_raise):
    g = {a: {b for b, names in callees.items() if not (drop_raise and b == DRIVER and names == {RAISE})}
         for a, callees in graph.items()}
    return _cycle(g)


PLANTED = {
    "supervisor/supervisor.c": "void sup_raise(struct supervisor *s, enum sup_event ev)\n{\n\tsup_x_do(s);\n}\n"
                               "const char *sup_invariant_violation(const struct supervisor *s)\n{\n\treturn 0;\n}\n",
    "supervisor/sup_x.c": "/* sup_invariant_violation(s) in a comment */\nvoid sup_x_do(struct supervisor *s)\n{\n"
                         "\tlog_info(\"sup_invariant_violation(\");\n\tsup_raise(s, EV_X);\n}\n"
                         "static void helper(struct supervisor *s)\n{\n\tif (sup_invariant_violation(s))\n"
                         "\t\tsup_x_do(s);\n}\n",
    "supervisor/sup_y.h": "const char *sup_invariant_violation(const struct supervisor *s);\n",
    "cli/main.c": "int main(void)\n{\n\treturn supervisor_run(0, 0) + sup_x_peek(0);\n}\n",
    "autoscaler/as_a.c": "int as_a(void)\n{\n\treturn as_b();\n}\n",
    "autoscaler/as_b.c": "int as_b(void)\n{\n\treturn 1;\n}\nint as_c(void)\n{\n\treturn as_a();\n}\n",
}


def test_the_call_finder_sees_calls():
    graph = call_graph(PLANTED)
    assert graph["supervisor/sup_x.c"]["supervisor/supervisor.c"] == {"sup_raise", "sup_invariant_violation"}
    assert graph["supervisor/supervisor.c"] == {"supervisor/sup_x.c": {"sup_x_do"}}
    assert "supervisor/sup_y.h" not in graph  # a prototype is no call, nor is a comment or a string
    assert driver_calls(graph) == ["src/supervisor/sup_x.c calls sup_invariant_violation (src/supervisor/supervisor.c)"]
    # the loop through sup_raise is the one allowed; as_a.c <-> as_b.c is one more
    assert _file_cycle(graph, drop_raise=False) is not None
    assert _file_cycle(graph, drop_raise=True) == ["autoscaler/as_a.c", "autoscaler/as_b.c", "autoscaler/as_a.c"]
    # without it, the part's call of another function of the driver is a second loop; without that, none is left
    planted = {k: v for k, v in PLANTED.items() if k != "autoscaler/as_b.c"}
    assert _file_cycle(call_graph(planted), drop_raise=True) == [
        "supervisor/sup_x.c", "supervisor/supervisor.c", "supervisor/sup_x.c"]
    planted["supervisor/sup_x.c"] = planted["supervisor/sup_x.c"].replace("if (sup_invariant_violation(s))", "if (s)")
    assert _file_cycle(call_graph(planted), drop_raise=True) is None
    assert not driver_calls(call_graph(planted))


def test_sup_raise_is_the_one_call_into_the_driver():
    graph = call_graph(_src_files())
    assert not driver_calls(graph), "\n".join(driver_calls(graph))
    # and the parts do raise: the loop the document draws is there
    raisers = sorted(c for c, callees in graph.items() if RAISE in callees.get(DRIVER, ()))
    assert raisers and all(r.startswith("supervisor/sup_") for r in raisers), raisers


def test_the_one_call_loop_is_through_sup_raise():
    """Without the calls to sup_raise, the calls between the files of src/ have no cycle (as_options.c <->
    as_optvalue.c and sup_core.c <-> sup_stop_budget.c were two more)."""
    graph = call_graph(_src_files())
    assert _file_cycle(graph, drop_raise=False), "no loop through sup_raise: docs/architecture.md says there is one"
    loop = _file_cycle(graph, drop_raise=True)
    assert loop is None, " -> ".join(loop)


def test_no_include_cycle_in_src():
    """No header includes itself through others, and with each .c and its own header as one node (an edge for each
    other header a .c includes), the files of src/ have no cycle either."""
    headers, units = {}, {}
    for path, text in _src_files().items():
        incs = [h for h in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)]
        name = os.path.basename(path)
        if name.endswith(".h"):
            headers[name] = set(incs)
        units.setdefault(name[:-2], set())
        if name.endswith(".c"):
            units[name[:-2]] |= {h[:-2] for h in incs if h[:-2] != name[:-2]}
    assert _cycle(headers) is None, " -> ".join(_cycle(headers))
    assert _cycle(units) is None, " -> ".join(_cycle(units))


# ---- a part raises last (docs/architecture.md, "One owner of transitions") ----
# sup_raise dispatches at once: when it returns, the action ran, and may have changed the raising part's own state
# (the action calls parts, the raiser too). So in a part's function nothing runs after a raise but another raise,
# the status document's write, the release of a local, or the return. A static function that raises (or calls one
# that does) is a raise for its callers in the same file.

_WS = re.compile(r"\s*")
_AFTER_RAISE_OK = re.compile(r"return\b[^;()]*;|sup_write_status\(\s*s\s*\)\s*;|\w*free\(\s*&?(?!s\b)\w+(?:\.\w+)*\s*\)\s*;")


def _statement_end(t, i):
    """Past the one statement at t[i]: a block, an if with its else, a loop with its body, or up to its ;."""
    i = _WS.match(t, i).end()
    if t.startswith("{", i):
        return _close(t, i)
    m = re.compile(r"(if|for|while|switch|\w+_ForEach)\s*\(").match(t, i)
    if m:
        j = _statement_end(t, _close(t, m.end() - 1, "(", ")"))
        k = _WS.match(t, j).end()
        if m.group(1) == "if" and re.compile(r"else\b").match(t, k):
            j = _statement_end(t, k + 4)
        return j
    depth = 0
    for j in range(i, len(t)):
        if t[j] in "([":
            depth += 1
        elif t[j] in ")]":
            depth -= 1
        elif t[j] == ";" and depth == 0:
            return j + 1
    return len(t)


def _only_raises(stmt, raisers):
    """Whether a statement does nothing but raise, write the status, release a local or return (its conditions
    aside)."""
    stmt = stmt.strip()
    if not stmt:
        return True
    if stmt.startswith("{"):
        inner, i = stmt[1:-1], 0
        while _WS.match(inner, i).end() < len(inner):
            j = _statement_end(inner, i)
            if not _only_raises(inner[i:j], raisers):
                return False
            i = j
        return True
    m = re.match(r"if\s*\(", stmt)
    if m:
        cond_end = _close(stmt, m.end() - 1, "(", ")")
        then_end = _statement_end(stmt, cond_end)
        rest = stmt[then_end:].strip()
        return _only_raises(stmt[cond_end:then_end], raisers) and _only_raises(rest[4:] if rest.startswith("else") else rest, raisers)
    if _AFTER_RAISE_OK.fullmatch(stmt):
        return True
    m = re.fullmatch(r"(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*;", stmt)
    return bool(m and m.group(1) in raisers)


def _after(t, i, end, raisers):
    """What runs after the statement that ends at t[i], up to end (the function's closing brace), other than raises,
    the status's write, a local's release and the return: None, or the first such statement."""
    while True:
        i = _WS.match(t, i).end()
        if i >= end:
            return None
        if t[i] == "}":
            depth, o = 0, i
            while o >= 0:
                depth += {"}": 1, "{": -1}.get(t[o], 0)
                if depth == 0:
                    break
                o -= 1
            head = t[:o].rstrip().splitlines()[-1] if t[:o].strip() else ""
            if re.search(r"\b(?:for|while|do)\b|_ForEach\b", head):
                return "the loop goes on: " + head.strip()
            i = _WS.match(t, i + 1).end()
            if re.compile(r"else\b").match(t, i):
                i = _statement_end(t, i + 4)
            continue
        if re.compile(r"else\b").match(t, i):
            i = _statement_end(t, i + 4)
            continue
        if re.compile(r"return\b").match(t, i) and _AFTER_RAISE_OK.match(t, i):
            return None
        if re.compile(r"break\s*;").match(t, i):
            # out of the innermost switch: on after its closing brace (a break out of a loop is caught above)
            depth = 0
            for j in range(i, end):
                depth += {"{": 1, "}": -1}.get(t[j], 0)
                if depth < 0:
                    o = j
                    d = 0
                    while o >= 0:
                        d += {"}": 1, "{": -1}.get(t[o], 0)
                        if d == 0:
                            break
                        o -= 1
                    if re.search(r"\bswitch\s*\((?:[^()]|\([^()]*\))*\)\s*$", t[:o]):
                        i = j + 1
                        break
                    depth = 0
            else:
                return None
            continue
        j = _statement_end(t, i)
        if not _only_raises(t[i:j], raisers):
            return " ".join(t[i:j].split())
        i = j


def raises_not_last(text):
    """(function, raise, what runs after it) for each raise in a C text that is not the last thing its function
    does."""
    funcs = functions(text)
    raisers = {RAISE}
    while True:
        more = {n for n, static, body in funcs if static and n not in raisers and calls(body) & raisers}
        if not more:
            break
        raisers |= more
    out = []
    for name, _, body in funcs:
        for m in re.finditer(r"\b(\w+)\s*\(", body):
            if m.group(1) in raisers and m.group(1) != name:
                what = _after(body, _statement_end(body, m.start()), len(body) - 1, raisers)
                if what is not None:
                    out.append((name, m.group(1), what))
    return out


def test_the_raise_finder_sees_what_runs_after_a_raise():
    ok = """
static void fail(struct supervisor *s, const char *why)
{
	sup_error_set(s, STATUS_ERR_X, why);
	sup_raise(s, EV_FAILED);
}
static void on_answer(void *userdata, long code)
{
	struct supervisor *s = userdata;
	char *why = xasprintf("%ld", code);
	if (code != 200) {
		fail(s, why);
		free(why);
		return;
	}
	if (code == 200)
		sup_raise(s, EV_DONE);
	else if (s->x.retry)
		sup_raise(s, EV_RETRY);
	else {
		s->x.n++;
	}
	sup_write_status(s);
	if (why)
		sup_raise(s, EV_MORE);
	free(why);
}
void sup_x_line(struct supervisor *s, int kind)
{
	switch (kind) {
	case 1:
		sup_raise(s, EV_ONE); /* "sup_raise(" in a comment */
		break;
	default:
		break;
	}
}
"""
    assert raises_not_last(ok) == []
    bad = """
static void fail(struct supervisor *s)
{
	sup_raise(s, EV_FAILED);
}
static void on_answer(void *userdata, long code, cJSON *body)
{
	struct supervisor *s = userdata;
	if (code != 200)
		fail(s);
	s->x.answered++;
}
void sup_x_each(struct supervisor *s)
{
	for (int i = 0; i < 3; i++) {
		if (s->x.v[i])
			sup_raise(s, EV_ONE);
	}
}
void sup_x_then(struct supervisor *s, cJSON *body)
{
	sup_raise(s, EV_PROGRESS);
	record(s, body);
}
void sup_x_switch(struct supervisor *s, int kind)
{
	switch (kind) {
	case 1:
		sup_raise(s, EV_ONE);
		break;
	}
	s->x.kind = kind;
}
"""
    found = [(f, r) for f, r, _ in raises_not_last(bad)]
    assert found == [("on_answer", "fail"), ("sup_x_each", "sup_raise"), ("sup_x_then", "sup_raise"),
                     ("sup_x_switch", "sup_raise")], raises_not_last(bad)


def test_a_part_raises_last():
    bad = []
    for f in sorted(os.listdir(SUP)):
        if f.endswith(".c") and f != "supervisor.c":
            with open(os.path.join(SUP, f), errors="replace") as fh:
                bad += [f"src/supervisor/{f}: {fn}: {r}(...) is followed by {what}" for fn, r, what in raises_not_last(fh.read())]
    assert not bad, "\n".join(bad)


# ---- the map's tables against the tree (issue 39, item 1) ----

def _doc():
    with open(os.path.join(ROOT, "docs", "architecture.md")) as fh:
        return fh.read()


def _section(doc, heading):
    start = doc.index(heading)
    end = re.compile(r"^#{2,3} ", re.M).search(doc, start + len(heading))
    return doc[start: end.start() if end else len(doc)]


def test_every_file_of_src_has_a_row():
    """Each file of src/<folder>/ is named in the first column of a row of its folder's table under "Modules": a
    .c (and its header) by its name without the extension, a header without a .c of its own as itself."""
    doc = _doc()
    missing = []
    for d, names in _tree().items():
        firsts = " ".join(re.findall(r"^\| ([^|]+) \|", _section(doc, f"### `src/{d}/`"), re.M))
        for f in names:
            stem = f.rsplit(".", 1)[0]
            if f"`{stem}`" not in firsts and f"`{f}`" not in firsts:
                missing.append(f"src/{d}/{f}")
    assert not missing, missing


def _parts_table(doc):
    """file -> (the parts its row says it may call, the row's last column), from the table under "Each part owns its
    state"."""
    body = doc[doc.index("**Each part owns its state**"):]
    body = body[: body.index("\n\n", body.index("| part | file |"))]
    rows = {}
    for m in re.finditer(r"^\| [^|]+ \| `(\w+\.c)` \| [^|]+ \| ([^|]+) \|$", body, re.M):
        rows[m.group(1)] = ({n for n in re.findall(r"`(sup_?\w*)(?:\.h)?`", m.group(2))}, m.group(2))
    return rows


def test_the_parts_table_says_what_each_file_includes():
    """A row for each file of the supervisor that is a part or the driver, and its "may call" is what the file
    includes of the other parts (the driver: sup.h, every part's header)."""
    rows = _parts_table(_doc())
    incs = _sup_includes()
    files = sorted(f for f in incs if f.endswith(".c") and (f.startswith("sup_") or f == "supervisor.c"))
    assert sorted(rows) == files, set(rows) ^ set(files)
    bad = []
    for f in files:
        said, text = rows[f]
        has = {h[:-2] for h in incs[f] if (h.startswith("sup_") or h == "sup.h") and h not in (f"{f[:-2]}.h", "sup_core.h")}
        if said != has:
            bad.append(f"{f}: the table says {sorted(said)} ({text.strip()}), the file includes {sorted(has)}")
    assert not bad, "\n".join(bad)


def test_sup_core_h_points_to_the_table_instead_of_repeating_it():
    with open(os.path.join(SUP, "sup_core.h")) as fh:
        head = fh.read().split("#ifndef", 1)[0]
    assert "docs/architecture.md" in head
    rows = [line for line in head.splitlines() if re.search(r"\bsup_\w+\.c\b.*\bs->\w+", line)]
    assert not rows, rows


NEWCOMER_TOPICS = ["the stop", "the restore point", "the sweep", "memory tuning", "Flink's metrics", "the launcher",
                   "the SQL runner"]


def test_a_newcomer_reaches_the_deciding_code_in_three_files():
    """docs/architecture.md, "Where to start": for each topic at most three files, each one that exists."""
    section = _section(_doc(), "## Where to start")
    rows = dict(re.findall(r"^\| ([^|]+?) \| ([^|]+) \|$", section, re.M))
    assert [t for t in NEWCOMER_TOPICS if t not in rows] == []
    for topic in NEWCOMER_TOPICS:
        paths = re.findall(r"`((?:src|java|deps)/[^`]+)`", rows[topic])
        assert 1 <= len(paths) <= 3, (topic, paths)
        for p in paths:
            assert os.path.isfile(os.path.join(ROOT, p)), f"{topic}: {p} does not exist"


# ---- the Java side (issue 39, item 1): java/ holds flinklet's Maven modules, one row each, one build ----

JAVA = os.path.join(ROOT, "java")


def _java_modules(java=JAVA):
    """The folders of java/ that are Maven modules (a pom.xml of their own)."""
    return sorted(d for d in os.listdir(java) if os.path.isfile(os.path.join(java, d, "pom.xml")))


def _aggregated_modules():
    with open(os.path.join(JAVA, "pom.xml")) as fh:
        pom = fh.read()
    return re.findall(r"<module>([^<]+)</module>", pom[pom.index("<modules>"): pom.index("</modules>")])


def test_every_java_module_has_a_row_and_is_built():
    """docs/architecture.md, "The Java side": each module folder of java/ is the first column of a row of its table
    (and each row a folder that is there), and java/pom.xml's <modules> names each, so that `make flink-lib`'s one
    Maven invocation builds it. Code outside java/ is not flinklet's Java: deps/ only fetches jars."""
    modules = _java_modules()
    assert modules, "no Maven module under java/"
    rows = re.findall(r"^\| `java/([^`/]+)/` \|", _section(_doc(), "## The Java side"), re.M)
    assert sorted(rows) == modules, f"rows {sorted(rows)}, modules {modules}"
    assert sorted(_aggregated_modules()) == modules, f"java/pom.xml builds {_aggregated_modules()}, modules {modules}"
    stray = [root for root, _, files in os.walk(os.path.join(ROOT, "deps")) if any(f.endswith(".java") for f in files)]
    assert not stray, f"Java code under deps/ (it belongs in a module of java/): {stray}"


def test_the_java_module_finder_sees_a_new_module(tmp_path):
    """A module folder added without a row is seen (a folder with no pom.xml is no module): the finder is the one
    the test above uses."""
    for m in ("reporter", "newone"):
        (tmp_path / m).mkdir()
        (tmp_path / m / "pom.xml").write_text("<project/>")
    (tmp_path / "notes").mkdir()
    assert _java_modules(str(tmp_path)) == ["newone", "reporter"]


# the autoscaler's internals (as_internal.h, beside the public autoscaler.h) used outside src/autoscaler/: name -> files
AS_INTERNALS_OUTSIDE = {
    "as_json_double": {"sup_metrics.c", "sup_observe.c"},
    "as_evaluation": {"sup_memtune.c", "sup_memtune.h"},
}


def test_the_autoscalers_internals_stay_inside_it():
    """What as_internal.h declares (and autoscaler.h, the public header, does not) is used outside src/autoscaler/
    only where its banner says."""
    with open(os.path.join(SRC, "autoscaler", "autoscaler.h")) as fh:
        public = strip_c(fh.read())
    with open(os.path.join(SRC, "autoscaler", "as_internal.h")) as fh:
        internal = strip_c(fh.read())
    names = set(re.findall(r"\b(as_\w+)\s*\(", internal)) | set(re.findall(r"\bstruct (as_\w+) \{", internal))
    names -= set(re.findall(r"\b(as_\w+)\b", public))
    assert "as_json_double" in names and "as_evaluation" in names, "the internals' finder finds nothing"
    used = {}
    for d, files in _tree().items():
        if d == "autoscaler":
            continue
        for f in files:
            with open(os.path.join(SRC, d, f), errors="replace") as fh:
                body = strip_c(fh.read())
            for n in names:
                if re.search(r"\b" + n + r"\b", body):
                    used.setdefault(n, set()).add(f)
    assert used == AS_INTERNALS_OUTSIDE, used
