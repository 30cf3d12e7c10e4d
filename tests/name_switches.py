"""The one finder of name switches, for the framework and the workload guards
(tests/test_frameworks.py, tests/test_workloads.py): code that compares a
registered name, or keys a dict by one, instead of asking the record."""
from __future__ import annotations

import ast


def _is_name(node, names) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # fw in ("paddle", "mxnet"); {("torch", id): ...}
        return any(_is_name(e, names) for e in node.elts)
    return False


def find(source: str, names, kind: str) -> list:
    """[(line, what)]: each comparison with one of `names`, each dict keyed by one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_is_name(n, names) for n in (node.left, *node.comparators)):
            found.append((node.lineno, f"compares a {kind}'s name"))
        elif isinstance(node, ast.Dict) and any(k is not None and _is_name(k, names) for k in node.keys):
            found.append((node.lineno, f"a dict keyed by a {kind}'s name"))
    return found
