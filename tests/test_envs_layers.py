"""frameval/envs/ is layered: each module imports only the modules below it
(no cycle, counting imports inside functions too), none imports the package's
own __init__ (which re-exports for the callers outside), and
frameval/versions.py sits above the package: nothing in it imports versions."""
import ast

import pytest

from conftest import REPO

pytestmark = pytest.mark.fast

PACKAGE = REPO / "frameval" / "envs"


def _module(path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path) -> list:
    """(imported frameval module, line, inside a function) for every import in `path`."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            # `from . import x` names a submodule x where there is one
            names = [f"{mod}.{a.name}" if _exists(f"{mod}.{a.name}") else mod for a in node.names]
        else:
            continue
        out += [(n, node.lineno, id(node) in in_function) for n in names if n.split(".")[0] == "frameval"]
    return out


def _exists(module: str) -> bool:
    p = REPO.joinpath(*module.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _graph() -> dict:
    return {_module(p): _imports(p) for p in sorted((REPO / "frameval").rglob("*.py"))
            if "__pycache__" not in p.parts}


def test_no_module_in_the_package_imports_its_init():
    bad = [f"{m} line {line}: {target}" for m, imps in _graph().items() if m.startswith("frameval.envs.")
           for target, line, _ in imps if target == "frameval.envs"]
    assert not bad, bad


def test_envs_and_versions_form_no_import_cycle():
    graph = _graph()
    edges = {m: {t for t, _, _ in imps if t in graph and t != m} for m, imps in graph.items()}
    start = [m for m in graph if m == "frameval.versions" or m.startswith("frameval.envs")]
    state: dict = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path[path.index(m):] + [m])
        state[m] = "open"
        for t in sorted(edges[m]):
            visit(t, path + [m])
        state[m] = "done"

    for m in start:
        visit(m, [])


def test_nothing_in_the_package_imports_versions():
    bad = [f"{m}: {t}" for m, imps in _graph().items() if m.startswith("frameval.envs")
           for t, _, _ in imps if t == "frameval.versions"]
    assert not bad, bad


def test_versions_imports_at_the_top_only():
    inside = [(t, line) for t, line, in_function in _imports(REPO / "frameval" / "versions.py") if in_function]
    assert not inside, inside
