"""Which of frameval's own files a notebook's kernel runs: the closure of the
imports of `frameval.nb` and of the framework's kernel parts (its folder's
record, support and switches modules; every framework's record, which the
registry loads in every kernel), read with
`ast` (standard library only). The run cache key hashes exactly these, so a
change to any module the notebook side imports (the result schema, the
catalog, the file names, ...) runs the notebook again, and a change to the
runner's own code does not."""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

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


def _imports(path: Path, root: Path) -> set:
    """The frameval modules `path` imports, at any depth of its code. Parsed
    once per file version: every run's cache key asks for the closure, and
    parsing it again took 0.65 s a run (22 minutes for a 2,016-run plan)."""
    st = path.stat()
    return _parsed_imports(str(path), st.st_mtime_ns, st.st_size, str(root))


@functools.lru_cache(maxsize=1024)
def _parsed_imports(path_text: str, mtime_ns: int, size: int, root_text: str) -> frozenset:
    path, root = Path(path_text), Path(root_text)
    mod = _module_of(path, root)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def closure(*modules: str, root: Path = REPO) -> list:
    """The files of `modules` (dotted names) and of every frameval module they
    import, directly or not (a package brings its __init__), sorted."""
    seen: dict = {}
    todo = list(modules)
    while todo:
        mod = todo.pop()
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            name = ".".join(parts[:i])
            p = _file(name, root)
            if p is None or name in seen:
                continue
            seen[name] = p
            todo.extend(_imports(p, root))
    return sorted(set(seen.values()))


def notebook_side(framework: str, root: Path = REPO) -> list:
    """The files a `framework` notebook's kernel imports or reads from frameval:
    the modules, and the data files of `frameval.nb` (the DCGAN distance's
    classifier weights), which no import names but which change a result."""
    nb_modules = [_module_of(p, root) for p in sorted((root / "frameval" / "nb").glob("*.py"))]
    data = sorted((root / "frameval" / "nb").glob("*.npz"))
    # The registry imports every framework's record by name (no static import to follow),
    # and nb/determinism.py and nb/precision.py load this framework's switches the same way.
    records = [_module_of(d / "__init__.py", root) for d in folders(root / "frameval" / "frameworks")]
    parts = [f"frameval.frameworks.{framework}.{p}" for p in KERNEL_PARTS]
    return sorted(set(closure(*nb_modules, *records, *parts, root=root)) | set(data))


def digest(framework: str, root: Path = REPO) -> str:
    """The hash of those files, each by its path in the clone and its content."""
    h = hashlib.sha256()
    for p in notebook_side(framework, root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]
