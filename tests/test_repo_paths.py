"""Every repository path the code, notebooks and docs cite exists, and nothing
cites the spec outside the repository: the spec a teacher needs ships with the
notebooks (docs/workloads.md)."""
import re

import pytest

from conftest import REPO

pytestmark = pytest.mark.fast

CITED = re.compile(r"`?((?:docs|frameval|notebooks|envs|bench|tests|templates)/[\w./-]+\.(?:md|py|ipynb|yml|json))")
FILES = [p for pattern in ("frameval/**/*.py", "notebooks/**/*.ipynb", "docs/**/*.md", "README.md", "bench/*.py")
         for p in REPO.glob(pattern) if "__pycache__" not in p.parts]


def test_cited_repo_paths_exist():
    missing = []
    for f in FILES:
        text = f.read_text(encoding="utf-8")
        for path in CITED.findall(text):
            path = path.rstrip(".")
            if "<" in path or "*" in path or "{" in path:
                continue
            if not (REPO / path).exists():
                missing.append(f"{f.relative_to(REPO)} cites {path}")
    assert not missing, "\n".join(missing)


def test_workloads_spec_cited_in_the_repo():
    assert (REPO / "docs" / "workloads.md").exists()
    bare = []
    for f in FILES:
        for m in re.finditer(r"[\w./-]*workloads\.md", f.read_text(encoding="utf-8")):
            if m.group(0) != "docs/workloads.md":
                bare.append(f"{f.relative_to(REPO)}: {m.group(0)}")
    assert not bare, "cite docs/workloads.md, the repository's copy:\n" + "\n".join(bare)


def test_no_long_functions_in_the_package():
    """Small functions that say what they do: none in frameval/ over 60 lines."""
    import ast
    long = []
    for path in sorted((REPO / "frameval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


@pytest.mark.fast
def test_architecture_module_table_lists_every_module():
    """Every module in frameval/ has its row in docs/architecture.md's table, and every row names a module that exists."""
    import re
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(frameval/[^`]+\.py)` \|", text, flags=re.M))
    # A frameworks/<fw>/ row stands for that file in every framework folder that has it.
    folders = sorted(p.name for p in (REPO / "frameval" / "frameworks").iterdir() if (p / "__init__.py").is_file())
    rows = {r for r in rows if "<fw>" not in r} | {
        r.replace("<fw>", fw) for r in rows if "<fw>" in r for fw in folders
        if (REPO / r.replace("<fw>", fw)).is_file() or r.endswith("/__init__.py")}
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "frameval").rglob("*.py")}
    assert not modules - rows, f"modules without a docs/architecture.md row: {sorted(modules - rows)}"
    assert not rows - modules, f"docs/architecture.md rows for modules that do not exist: {sorted(rows - modules)}"
