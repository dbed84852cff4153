"""docskit: the project's documents as the tests read them (their paths, fenced code blocks, sections) and what
make would run for a target, for the tests that hold the README, container/README.md and docs/deployment.md to
what they say (test_readme.py, test_deployment_docs.py)."""
import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOYMENT = os.path.join(ROOT, "docs", "deployment.md")
README = os.path.join(ROOT, "README.md")
CONTAINER_README = os.path.join(ROOT, "container", "README.md")


def read(path):
    with open(path) as f:
        return f.read()


def blocks(text, lang):
    """The fenced code blocks of one language, indentation removed (a block inside a list item is indented)."""
    out = []
    for m in re.finditer(r"^( *)```" + lang + r"\n(.*?)^\1```", text, re.S | re.M):
        indent = len(m.group(1))
        out.append("\n".join(line[indent:] for line in m.group(2).splitlines()) + "\n")
    return out


def section(text, heading):
    return text.split(heading, 1)[1]


def make_dry(*targets):
    r = subprocess.run(["make", "-n", *targets], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout
