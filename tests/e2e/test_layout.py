"""The source tree as docs/architecture.md's "Layout" draws it (issue 17): one folder per module group, each .c beside
its .h, and every #include between folders one the table allows (a folder never reaches into a folder above it)."""
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
