"""Reading notebooks as files (standard library only): the parameters cell,
tagged cells, output stripping, and a percent-format converter for authors.

The cell contract every framework notebook follows (docs/notebooks.md):
a Markdown teaching cell, then code cells tagged, in this order,
`parameters`, `setup`, `data`, `model`, `check`, `train`, `evaluate`, `record`.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

CELL_TAGS = ("parameters", "setup", "data", "model", "check", "train", "evaluate", "record")


class NotebookError(ValueError):
    pass


def read(path) -> dict:
    path = Path(path)
    try:
        return json.loads(path.read_text())
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


def has_outputs(nb) -> bool:
    return any(c.get("outputs") or c.get("execution_count") for c in code_cells(nb))


def strip_outputs(nb) -> dict:
    for c in code_cells(nb):
        c["outputs"] = []
        c["execution_count"] = None
    return nb


# ----------------------------------------------------------------- authoring
def from_percent(text: str, kernel: str, display: str, python: str = "3.11") -> dict:
    """Build a notebook from percent format: cells start with `# %% [tag]` (code,
    tagged) or `# %% [markdown]`; markdown lines keep a leading `# ` stripped."""
    cells = []
    for chunk in re.split(r"^# %%", text, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        m = re.match(r"\s*\[([\w-]+)\]", head)
        tag = m.group(1) if m else None
        body = body.strip("\n")
        if tag == "markdown":
            lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines()]
            cells.append({"cell_type": "markdown", "id": f"c{len(cells)}", "metadata": {},
                          "source": _lines("\n".join(lines))})
        else:
            cells.append({"cell_type": "code", "id": tag or f"c{len(cells)}", "execution_count": None,
                          "metadata": {"tags": [tag] if tag else []},
                          "outputs": [], "source": _lines(body)})
    return {"cells": cells, "metadata": {
        "kernelspec": {"display_name": display, "language": "python", "name": kernel},
        "language_info": {"name": "python", "version": python}}, "nbformat": 4, "nbformat_minor": 5}


def _lines(s: str) -> list:
    parts = s.splitlines(keepends=True)
    return parts


def write(nb: dict, path) -> None:
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def to_percent(nb: dict) -> str:
    """Inverse of from_percent, for editing a notebook as text."""
    out = []
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            out.append("# %% [markdown]\n" + "\n".join("# " + l if l else "#" for l in source(c).splitlines()))
        else:
            t = tags(c)
            out.append(f"# %% [{t[0]}]\n" + source(c) if t else "# %%\n" + source(c))
    return "\n\n".join(out) + "\n"


if __name__ == "__main__":  # python -m frameval.notebook SRC.py OUT.ipynb KERNEL "Display"
    import sys
    src, dst, kernel, display = sys.argv[1:5]
    py = sys.argv[5] if len(sys.argv) > 5 else "3.11"
    write(from_percent(Path(src).read_text(), kernel, display, py), dst)
