"""The "Tensor behaviour against NumPy" section (#40): a matrix of the
behaviour cases x the frameworks that ran them (`<out>/behaviour.json`,
frameval/behaviour.py), each cell ✓ (same as NumPy), ≠ (differs: both values
in the HTML's hover text and in the details table), ✗ (raises: the exception
and its first line) or – (not applicable: why); a count per framework; each
case linked to its code; where several versions of a framework ran, the cases
whose outcome changed between them.
"""
from __future__ import annotations

import os
import re

from .. import behaviour
from ..catalog import framework_name
from ..envscripts.behaviour_cases import CASES, GROUPS
from ..paths import REPO
from .cells import cell, header

SYMBOL = {"same": "✓", "differs": "≠", "raises": "✗", "na": "–"}
CLASS = {"same": "ok", "differs": "warn", "raises": "flag", "na": "na"}
CASES_FILE = REPO / "frameval" / "envscripts" / "behaviour_cases.py"


def merged(sources) -> dict | None:
    """The behaviour files of every source folder in one: the first reference, every framework key
    (a later folder's key is kept under its folder's name when it repeats)."""
    out = None
    for src in sources:
        m = behaviour.read(src)
        if not m:
            continue
        if out is None:
            out = {"reference": m.get("reference") or {}, "frameworks": {}}
        for key, got in (m.get("frameworks") or {}).items():
            out["frameworks"][key if key not in out["frameworks"] else f"{key} ({os.path.basename(str(src))})"] = got
    return out


def case_lines(path=CASES_FILE) -> dict:
    """{case id: its line in behaviour_cases.py} (the link's anchor)."""
    lines = {}
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = re.search(r'Case\("(\w+)"', text)
        if found:
            lines.setdefault(found.group(1), n)
    return lines


def column_name(key: str, got: dict) -> str:
    fw, _, pinned = key.partition("==")
    return f"{framework_name(fw)} {(got or {}).get('version') or pinned}".strip()


def _cell(j: dict, S) -> dict:
    v = j["verdict"]
    tip = S("bh_tip_" + v, numpy=j["numpy"], got=j["got"])
    return cell(SYMBOL[v], v, CLASS[v], tip, md=SYMBOL[v])


def matrix(m: dict, out_dir, S) -> dict:
    """Cases x frameworks: the table, its counts row and the link to each case's code."""
    judged = behaviour.judged(m)
    keys = list(judged)
    lines = case_lines()
    rel = os.path.relpath(CASES_FILE, out_dir)
    rows, ids = [], []
    for c in CASES:
        link = f"{rel}#L{lines.get(c.id, 1)}"
        row = [cell(c.id, c.id) | {"link": link}, cell(S("bh_group_" + c.group), c.group)]
        rows.append(row + [_cell(judged[k][c.id], S) for k in keys])
        ids.append(c.id)
    heads = [header(S("bh_col_case")), header(S("bh_col_group"))]
    heads += [header(column_name(k, m["frameworks"][k]), False, (m["frameworks"][k] or {}).get("api") or "") for k in keys]
    return {"id": "table-behaviour", "sortable": True, "rows": rows, "row_ids": ids, "headers": heads}


def count_table(m: dict, S) -> dict:
    """Per framework: its version and API, and how many cases are ✓, ≠, ✗ and –."""
    judged = behaviour.judged(m)
    rows = []
    for key, row in judged.items():
        got = m["frameworks"][key] or {}
        n = {v: sum(1 for j in row.values() if j["verdict"] == v) for v in behaviour.VERDICTS}
        note = got.get("error") or ""
        rows.append([cell(framework_name(key.split("==")[0]), key), cell(got.get("version") or S("na"), None, "" if got.get("version") else "na"),
                     cell(got.get("api") or S("na"))]
                    + [cell(str(n[v]), n[v], CLASS[v] if n[v] and v != "same" else "") for v in behaviour.VERDICTS]
                    + [cell(note, None, "flag" if note else "")])
    heads = [header(S("col_framework")), header(S("col_version")), header(S("bh_col_api"))]
    heads += [header(f"{SYMBOL[v]} {S('bh_verdict_' + v)}", True) for v in behaviour.VERDICTS] + [header(S("col_notes"))]
    return {"id": "table-behaviour-counts", "sortable": True, "rows": rows, "headers": heads}


def details(m: dict, S) -> dict:
    """Every cell that is not ✓: the case, the framework, what NumPy gave and what it gave."""
    judged = behaviour.judged(m)
    rows = []
    for c in CASES:
        for key, row in judged.items():
            j = row[c.id]
            if j["verdict"] == "same":
                continue
            rows.append([cell(c.id, c.id), cell(column_name(key, m["frameworks"][key])),
                         cell(f"{SYMBOL[j['verdict']]} {S('bh_verdict_' + j['verdict'])}", j["verdict"], CLASS[j["verdict"]]),
                         cell(j["numpy"]), cell(j["got"])])
    heads = [header(S("bh_col_case")), header(S("col_framework")), header(S("bh_col_verdict")),
             header(S("bh_col_numpy")), header(S("bh_col_got"))]
    return {"id": "table-behaviour-details", "sortable": True, "rows": rows, "headers": heads}


def changed(m: dict, S) -> list:
    """Per framework with several versions: the cases whose outcome differs between them."""
    judged, by_fw = behaviour.judged(m), {}
    for key in judged:
        by_fw.setdefault(key.split("==")[0].split(" (")[0], []).append(key)
    out = []
    for fw, keys in by_fw.items():
        if len(keys) < 2:
            continue
        moved = [c.id for c in CASES if len({(judged[k][c.id]["verdict"], judged[k][c.id]["got"]) for k in keys}) > 1]
        names = S.join(column_name(k, m["frameworks"][k]) for k in keys)
        out.append(S("bh_changed", versions=names, n=len(moved), cases=S.join(moved) or S("bh_changed_none")))
    return out


def behaviour_section(sources, out_dir, S) -> dict | None:
    """The section's parts, or None where no source folder has a behaviour.json (the flag was not given)."""
    m = merged(sources)
    if not m or not m["frameworks"]:
        return None
    ref = m.get("reference") or {}
    return {"intro": S("bh_intro", n=len(CASES), groups=S.join(S("bh_group_" + g) for g in GROUPS),
                       numpy=ref.get("numpy") or S("na")),
            "counts": count_table(m, S), "matrix": matrix(m, out_dir, S), "details": details(m, S),
            "changed": changed(m, S)}
