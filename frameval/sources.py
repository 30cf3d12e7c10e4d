"""Which of frameval's own files a notebook's kernel runs: the closure of the
imports of `frameval.nb` and of the framework's support module, read with
`ast` (standard library only). The run cache key hashes exactly these, so a
change to any module the notebook side imports (the result schema, the
catalog, the file names, ...) runs the notebook again, and a change to the
runner's own code does not."""
from __future__ import annotations

import ast
from pathlib import Path

from .paths import REPO

PACKAGE = REPO / "frameval"


def _file(module: str) -> Path | None:
    rel = Path(*module.split("."))
    for p in (REPO / rel.with_suffix(".py"), REPO / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def _module_of(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set:
    """The frameval modules `path` imports, at any depth of its code."""
    mod = _module_of(path)
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
    return {m for m in out if m == "frameval" or m.startswith("frameval.")}


def closure(*roots: str) -> list:
    """The files of `roots` (dotted module names) and of every frameval module
    they import, directly or not (a package brings its __init__), sorted."""
    seen: dict = {}
    todo = list(roots)
    while todo:
        mod = todo.pop()
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            name = ".".join(parts[:i])
            p = _file(name)
            if p is None or name in seen:
                continue
            seen[name] = p
            todo.extend(_imports(p))
    return sorted(set(seen.values()))


def notebook_side(framework: str) -> list:
    """The files a `framework` notebook's kernel imports from frameval."""
    nb_modules = [_module_of(p) for p in sorted((PACKAGE / "nb").glob("*.py"))]
    return closure(*nb_modules, f"frameval.fw.{framework}_support")
