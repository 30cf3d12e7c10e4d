"""`run_all.py compare A B`'s comparison of two existing output folders (two
dates, two machines, before and after a driver update): runs paired by their
run folder under runs/ (framework with its pinned version, workload, mode,
device), the verdict table of report/comparison.py, and what exists in only
one folder. Runs in the runner environment (scipy)."""
from __future__ import annotations

import json
from pathlib import Path

from ..files import RUNS
from ..results import load_runs
from ..stats import P_THRESHOLD
from .comparison import comparison_table, notes
from .i18n import Strings
from .model import make_rows
from .spec import framework_name


def rows_by_run(folder, S) -> dict:
    """{run folder relative to runs/: row} of one output folder, repeats folded in."""
    runs = load_runs(folder, repeats=True)
    out = {}
    for w in make_rows(runs, S):
        try:
            rel = Path(str(w.result.dir)).relative_to(Path(folder) / RUNS).as_posix()
        except ValueError:
            rel = w["id"]
        out[rel] = w
    return out


def compare_folders(a, b, threshold=0.10, lang="en") -> dict:
    """{"markdown": the verdict table and notes, "data": the same as numbers}."""
    S = Strings(lang)
    ra, rb = rows_by_run(a, S), rows_by_run(b, S)
    both = [k for k in ra if k in rb]
    lines = [{"framework": framework_name(ra[k]["fw"]), "fw": ra[k]["fw"], "workload": ra[k]["workload"],
              "mode": ra[k]["mode"], "device": ra[k]["device"], "a": ra[k]["version"] or "?",
              "b": rb[k]["version"] or "?", "runs_a": [ra[k].result, *ra[k].extra],
              "runs_b": [rb[k].result, *rb[k].extra], "run": k} for k in both]
    table = comparison_table(lines, S, threshold, "table-compare")
    only = {"A": sorted(set(ra) - set(rb)), "B": sorted(set(rb) - set(ra))}
    md = [f"# {S('compare_title')}", "",
          *S("compare_intro", a=str(Path(a).resolve()), b=str(Path(b).resolve()),
             pct=f"{threshold * 100:g}%").split("\n"), ""]
    md += markdown_table(table) if lines else [S("compare_none")]
    md += [""] + [f"> ⚠️ {n}\n" for n in notes(table["lines"], S, threshold)]
    for side, folder in (("A", a), ("B", b)):
        if only[side]:
            md.append("- " + S("compare_only", side=side, folder=folder, items=", ".join(only[side])))
    keep = ("run", "framework", "workload", "mode", "device", "a", "b", "n_a", "n_b", "sps_a", "sps_b", "ratio", "p",
            "mem_ratio", "quality_ratio", "verdict", "check")
    data = {"a": str(a), "b": str(b), "threshold": threshold, "p_threshold": P_THRESHOLD,
            "pairs": [dict({k: c.get(k) for k in keep}, run=ln["run"]) for c, ln in zip(table["lines"], lines)],
            "only_in_a": only["A"], "only_in_b": only["B"]}
    return {"markdown": "\n".join(md) + "\n", "data": json.loads(json.dumps(data, default=str))}


def markdown_table(t) -> list:
    esc = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = ["| " + " | ".join(esc(h["t"]) for h in t["headers"]) + " |",
           "|" + "|".join("---:" if h["num"] else "---" for h in t["headers"]) + "|"]
    out += ["| " + " | ".join(esc(c["t"]) for c in row) + " |" for row in t["rows"]]
    return out
