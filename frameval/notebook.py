"""Reading notebooks as files (standard library only): the parameters cell,
tagged cells, code size, whether outputs are saved.

The cell contract every framework notebook follows (docs/notebooks.md):
a Markdown teaching cell, then code cells tagged, in this order,
`parameters`, `setup`, `data`, `model`, `check`, `train`, `evaluate`, `record`.
"""
from __future__ import annotations

import ast
from pathlib import Path

from .files import read_json

CELL_TAGS = ("parameters", "setup", "data", "model", "check", "train", "evaluate", "record")


class NotebookError(ValueError):
    pass


def read(path) -> dict:
    path = Path(path)
    try:
        return read_json(path)
    except (OSError, ValueError) as e:
        raise NotebookError(f"{path}: cannot read notebook ({e})") from None


def tags(cell) -> list:
    return list(cell.get("metadata", {}).get("tags", []))


def source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def code_cells(nb) -> list:
    return [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]


def tagged(nb, tag) -> list:
    return [c for c in code_cells(nb) if tag in tags(c)]


def parameters(path_or_nb) -> dict:
    """{name: default} from the cell tagged `parameters` (literal assignments only)."""
    nb = read(path_or_nb) if not isinstance(path_or_nb, dict) else path_or_nb
    cells = tagged(nb, "parameters")
    if len(cells) != 1:
        raise NotebookError(f"expected exactly one cell tagged 'parameters', found {len(cells)}")
    out = {}
    for node in ast.parse(source(cells[0])).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                raise NotebookError(f"parameter {node.targets[0].id} must be a literal") from None
    return out


def code_hash_text(nb) -> str:
    """The code cells' sources joined, for cache keys (outputs and metadata ignored)."""
    return "\n# ---- cell ----\n".join(source(c) for c in code_cells(nb))


def count_code_lines(nb, tags_=("model", "train")) -> int:
    """Lines of code in the tagged cells, not counting blanks or comments."""
    n = 0
    for c in code_cells(nb):
        if set(tags(c)) & set(tags_):
            n += sum(1 for line in source(c).splitlines() if line.strip() and not line.strip().startswith("#"))
    return n


def imported_modules(nb) -> list:
    """The modules a notebook's code cells import by name (`import a.b`, `from a.b import c`), in order, once each;
    cells that are not Python (magics) are skipped."""
    out = []
    for cell in code_cells(nb):
        try:
            tree = ast.parse(source(cell))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            out += [n for n in names if n not in out]
    return out


def has_outputs(nb) -> bool:
    return any(c.get("outputs") or c.get("execution_count") for c in code_cells(nb))
