"""Import structure of frameval/, read with `ast` (nothing is imported):

- no import cycles: every import counts, a lazy one inside a function too (it
  only moves the cycle to the first call, where a half-initialised module
  fails or hides a wrong order);
- frameval/nb/ (imported by every notebook kernel, in every framework
  environment) reaches outside itself only into the few standard-library-only
  modules it uses today.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from frameval import workloads

REPO = Path(__file__).resolve().parent.parent

# What frameval/nb/ may import from the rest of frameval: the modules it uses
# today, each standard library only (checked below), so a kernel importing
# frameval.nb never pulls in the runner's own code and its dependencies.
# "frameval" is the package's __init__ (nb/record.py reads __version__ there).
# The workload records (issue #36) are among them: the check asks them for
# each workload's reference, and the catalog builds its tables from them.
NB_MAY_IMPORT = {"frameval", "frameval.files", "frameval.paths", "frameval.catalog", "frameval.notebook", "frameval.cpu",
                 "frameval.speed", "frameval.energy", "frameval.target", "frameval.arithmetic", "frameval.faults",
                 "frameval.result", "frameval.result.folder",
                 "frameval.workloads", "frameval.workloads.base", "frameval.workloads.datasets",
                 # the framework registry and its record type (each framework's record, which the
                 # registry loads by name, is checked in tests/test_frameworks.py)
                 "frameval.frameworks", "frameval.frameworks.record"}
# Every workload record the registry finds (a fourth folder is checked the day it is added). A record
# loads its own folder's reference, data and media lazily (numpy, or the runner's report): those
# imports stay inside its functions, never at the module level a kernel's registry import runs.
RECORDS = {f"frameval.workloads.{d.name}" for d in workloads.folders()}
NB_MAY_IMPORT |= RECORDS
# A record's standard-library-only description (the GPT's spec.py: shape, weight table, FLOPs), which
# the record reads at import: checked like the records, to import nothing beyond NB_MAY_IMPORT.
SPECS = {f"frameval.workloads.{d.name}.spec" for d in workloads.folders() if (d / "spec.py").is_file()}
NB_MAY_IMPORT |= SPECS


def module_files(root: Path, package: str) -> dict:
    """{dotted module name: file} for every module of root/package, subpackages
    included (a package's __init__.py is the package's own name)."""
    out = {}
    for f in sorted((Path(root) / package).rglob("*.py")):
        parts = f.relative_to(root).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from X import ...` names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    pkg = module.split(".") if is_package else module.split(".")[:-1]
    pkg = pkg[:len(pkg) - (node.level - 1)]
    return ".".join(pkg + ([node.module] if node.module else []))


def _ancestor(pkg: str, module: str) -> bool:
    """pkg is a package that holds module: already initialised (or initialising)
    when module runs, so importing it again runs nothing."""
    return module.startswith(pkg + ".")


def _targets(module: str, is_package: bool, node, known) -> set:
    """The modules of `known` that one import statement depends on. A package
    that holds `module` is already initialising when `module` runs, so importing
    it runs nothing: it counts only when a name is taken from its __init__."""
    if isinstance(node, ast.Import):
        found = set()
        for alias in node.names:  # import a.b.c runs a, a.b and a.b.c
            parts = alias.name.split(".")
            found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        return {m for m in found if m in known and not _ancestor(m, module)}
    base = _base(module, is_package, node)
    subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
    # from .pkg import name: pkg's __init__, and pkg.name where that is a
    # submodule; from . import sub (our own package): the submodule only
    needs_base = len(subs) < len(node.names) or not _ancestor(base, module)
    parents = {".".join(base.split(".")[:i]) for i in range(1, base.count(".") + 1)}
    found = subs | {m for m in parents if not _ancestor(m, module)} | ({base} if needs_base else set())
    return {m for m in found if m in known}


def module_graph(root: Path, package: str) -> dict:
    """{module: {modules it imports}} over root/package, top-level and lazy
    (inside functions, classes, conditions) imports alike."""
    files = module_files(root, package)
    graph = {}
    for module, f in files.items():
        is_package = f.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(module, is_package, node, files)
        graph[module] = edges - {module}
    return graph


def _components(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def find_cycles(root: Path, package: str, limit: int = 200) -> list:
    """Every elementary import cycle among root/package's modules, each as a
    list [a, b, ..., a] starting at its smallest module name, sorted."""
    graph = module_graph(root, package)
    cycles = []
    for comp in _components(graph):
        order = sorted(comp)
        for i, start in enumerate(order):  # cycles whose smallest module is `start`
            allowed = set(order[i:])
            stack = [(start, [start])]
            while stack and len(cycles) < limit:
                v, path = stack.pop()
                for w in sorted(graph[v] & allowed, reverse=True):
                    if w == start:
                        cycles.append(path + [start])
                    elif w not in path:
                        stack.append((w, path + [w]))
    return sorted(cycles)


def show(cycles) -> str:
    return "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.fast
def test_no_import_cycles_in_frameval():
    cycles = find_cycles(REPO, "frameval")
    groups = "\n".join("  " + ", ".join(sorted(c)) for c in _components(module_graph(REPO, "frameval")))
    assert not cycles, (f"{len(cycles)} import cycle(s) in frameval/ (lazy imports count):\n{show(cycles)}\n"
                        f"in these groups of modules that import one another:\n{groups}")


def _write(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.fast
def test_cycle_finder_finds_a_lazy_cycle(tmp_path):
    """The finder itself: a.py imports b at the top, b.py imports a inside a
    function; a subpackage closes a second cycle through its __init__."""
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def f():\n    from .a import thing\n    return thing\n",
        "pkg/c.py": "import pkg.sub.d\n",
        "pkg/sub/__init__.py": "from .. import c\n",
        "pkg/sub/d.py": "from . import e\n",   # our own package: no edge to pkg.sub
        "pkg/sub/e.py": "import os\n",
        "pkg/solo.py": "from pkg import a\nfrom .sub import e\n",  # imports, closes no cycle
    })
    assert find_cycles(tmp_path, "pkg") == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.c", "pkg.sub", "pkg.c"]]
    graph = module_graph(tmp_path, "pkg")
    assert graph["pkg.sub.d"] == {"pkg.sub.e"}
    assert graph["pkg.solo"] == {"pkg.a", "pkg.sub", "pkg.sub.e"}
    assert graph["pkg.c"] == {"pkg.sub", "pkg.sub.d"}


@pytest.mark.fast
def test_nb_imports_only_stdlib_only_modules_outside_itself():
    """frameval/nb/ runs in every framework kernel: outside nb/ it may import
    only NB_MAY_IMPORT, and those import nothing but the standard library and
    each other."""
    graph = module_graph(REPO, "frameval")
    outside = {(m, t) for m, ts in graph.items() if m.startswith("frameval.nb.") or m == "frameval.nb"
               for t in ts if not (t == "frameval.nb" or t.startswith("frameval.nb."))}
    bad = sorted(f"{m} -> {t}" for m, t in outside if t not in NB_MAY_IMPORT)
    assert not bad, "frameval/nb/ imports outside nb/ beyond NB_MAY_IMPORT:\n" + "\n".join(bad)
    files = module_files(REPO, "frameval")
    for m in sorted(NB_MAY_IMPORT):
        own = {t for t in graph[m] if m in RECORDS and t.startswith(m + ".") and t not in SPECS}  # its folder, loaded lazily
        assert graph[m] - own <= NB_MAY_IMPORT, f"{m} imports {graph[m] - own - NB_MAY_IMPORT} (outside NB_MAY_IMPORT)"
        top = [n for n in ast.parse(files[m].read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any(_targets(m, files[m].name == "__init__.py", n, files) & own for n in top), \
            f"{m} imports its own reference, data or media at module level: a kernel's registry import would run it"
        for name in _imported(ast.parse(files[m].read_text())):
            if name.startswith("."):
                continue  # within frameval: the graph check above
            assert name.split(".")[0] in (*sys.stdlib_module_names, "__future__"), \
                f"{files[m].relative_to(REPO)} imports {name!r}: NB_MAY_IMPORT modules are standard library only"


def _imported(tree) -> list:
    """Every module name an import statement in `tree` names ("." + name for a
    relative one, which is never the standard library)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


@pytest.mark.fast
def test_the_runners_papermill_leaves_out_the_slow_iri_checker_and_still_validates():
    # rfc3987_syntax builds ~35 Lark parsers at import (1.4 s of every command);
    # notebooks are still validated against nbformat's schema without it
    import subprocess
    code = """
import sys
from frameval import execute
execute.load_papermill()
import nbformat
assert "jsonschema" in sys.modules and sys.modules.get("rfc3987_syntax") is None
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
del nb.cells[0]["source"]
try:
    nbformat.validate(nb)
except nbformat.ValidationError:
    print("refused")
"""
    p = subprocess.run([sys.executable, "-c", code, str(REPO / "notebooks" / "torch" / "lenet.ipynb")],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "refused", p.stderr[-2000:]
