"""Which of frameval's own files a notebook's kernel runs: the closure of the
imports of `frameval.nb` and of the framework's kernel parts (its folder's
record, support and switches modules; every framework's record, which the
registry loads in every kernel), read with `ast` (standard library only),
every workload record's module body (the registry imports them all) and the
run's own workload folder (its reference and data, which the registry's
dynamic import hides from `ast`; not the runner-side media and prepare
modules). The run cache key hashes exactly these, so a
change to any module the notebook side imports (the result schema, the
catalog, the file names, ...) runs the notebook again, and a change to the
runner's own code does not."""
from __future__ import annotations

import ast
import functools
import hashlib
import os
from pathlib import Path

from . import workloads
from .frameworks import KERNEL_PARTS, folders
from .paths import REPO

def _file(module: str, root: Path) -> Path | None:
    rel = Path(*module.split("."))
    for p in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def _module_of(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path, root: Path, top_only: bool = False) -> set:
    """The frameval modules `path` imports, at any depth of its code. Parsed
    once per file version: every run's cache key asks for the closure, and
    parsing it again took 0.65 s a run (22 minutes for a 2,016-run plan)."""
    st = path.stat()
    return _parsed_imports(str(path), st.st_mtime_ns, st.st_size, str(root), top_only)


@functools.lru_cache(maxsize=1024)
def _parsed_imports(path_text: str, mtime_ns: int, size: int, root_text: str, top_only: bool = False) -> frozenset:
    path, root = Path(path_text), Path(root_text)
    mod = _module_of(path, root)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), top_only):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # `from . import x`: x may be a module
    return frozenset(m for m in out if m == "frameval" or m.startswith("frameval."))


def _nodes(tree, top_only: bool):
    """Every node, or (top_only) those an import of the module runs: not the
    bodies of functions, where a workload record loads its reference lazily."""
    if not top_only:
        yield from ast.walk(tree)
        return
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def closure(*modules: str, root: Path = REPO, skip=lambda name: False, top_only: bool = False) -> list:
    """The files of `modules` (dotted names) and of every frameval module they
    import, directly or not (a package brings its __init__), sorted; a module
    `skip(name)` holds is not followed; `top_only`: the imports a module's
    import runs, not those in its functions."""
    seen: dict = {}
    todo = list(modules)
    while todo:
        mod = todo.pop()
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            name = ".".join(parts[:i])
            p = None if skip(name) else _file(name, root)
            if p is None or name in seen:
                continue
            seen[name] = p
            todo.extend(_imports(p, root, top_only))
    return sorted(set(seen.values()))


# The modules of a workload folder that the runner runs, never a kernel: its
# report media and the preparation of its data caches (whose checksum the key holds).
RUNNER_SIDE = ("media", "prepare")
RUNNER_FOLDERS = {"strings", "__pycache__"}  # its report words (report/i18n.py)


def _workload_names(root: Path) -> list:
    """The workload folders of the clone `root`, by the registry's own rule (workloads.folders)."""
    home = root / "frameval" / "workloads"
    return [d.name for d in workloads.folders(home)] if home.is_dir() else []


def _inside_workload(name: str, workloads: list) -> bool:
    return any(name.startswith(f"frameval.workloads.{w}.") for w in workloads)


def _workload_files(workload: str, names: list, root: Path) -> set:
    """A run's own workload folder: every module in it but the runner's
    (RUNNER_SIDE), what they import outside the other workloads' folders, and
    its data files."""
    home = root / "frameval" / "workloads" / workload
    runner = {f"frameval.workloads.{workload}.{m}" for m in RUNNER_SIDE}
    mods = [_module_of(p, root) for p in sorted(home.rglob("*.py")) if "__pycache__" not in p.parts]
    others = [w for w in names if w != workload]
    out = closure(*[m for m in mods if m not in runner], root=root,
                  skip=lambda n: n in runner or _inside_workload(n, others))
    return set(out) | {p for p in home.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
                       and not RUNNER_FOLDERS.intersection(p.relative_to(home).parts)}


def notebook_side(framework: str, root: Path = REPO, workload: str | None = None) -> list:
    """The files a `framework` notebook of `workload` (None: of any) runs or
    reads from frameval: the modules; the data files of `frameval.nb` (the
    DCGAN distance's classifier weights), which no import names but which
    change a result; every workload record's module body (the registry imports
    them all); and the run's own workload folder (its reference and data
    loading, which the registry's dynamic import hides from `ast`)."""
    names = _workload_names(root)
    nb_modules = [_module_of(p, root) for p in sorted((root / "frameval" / "nb").glob("*.py"))]
    data = sorted((root / "frameval" / "nb").glob("*.npz"))  # none today: the DCGAN's classifier is in its folder
    # The registry imports every framework's record by name (no static import to follow),
    # and nb/determinism.py and nb/precision.py load this framework's switches the same way.
    records = [_module_of(d / "__init__.py", root) for d in folders(root / "frameval" / "frameworks")]
    parts = [f"frameval.frameworks.{framework}.{p}" for p in KERNEL_PARTS]
    out = set(closure(*nb_modules, *records, *parts, root=root, skip=lambda n: _inside_workload(n, names)))
    out |= set(closure(*[f"frameval.workloads.{w}" for w in names], root=root, top_only=True))
    for w in (names if workload is None else [workload]):
        out |= _workload_files(w, names, root)
    return sorted(out | set(data))


def digest(framework: str, root: Path = REPO, workload: str | None = None) -> str:
    """The hash of those files, each by its path in the clone and its content.
    Worked out once per framework, workload and state of the clone's frameval/
    folder (every file's path, size and modification time): every run's cache
    key asks, and the same closure again for each repeat and sweep value took
    0.1 s a run (a 2,016-run dry run took 92 s; 11 s with this)."""
    return _digest(framework, str(root), workload, _tree_stamp(Path(root) / "frameval"))


def _tree_stamp(folder: Path) -> tuple:
    """Every file under `folder` (no __pycache__) with its size and modification
    time: 1.5 ms for frameval/'s 210 files, where the closure takes 100."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:  # removed meanwhile: the next call sees the folder without it
                continue
            out.append((dirpath, name, st.st_mtime_ns, st.st_size))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _digest(framework: str, root_text: str, workload: str | None, stamp: tuple) -> str:
    root = Path(root_text)
    h = hashlib.sha256()
    for p in notebook_side(framework, root, workload):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]
