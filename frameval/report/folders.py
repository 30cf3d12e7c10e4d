"""`run_all.py compare A B`'s comparison of two existing output folders (two
dates, two machines, before and after a driver update): runs paired by their
run folder under runs/ (framework with its pinned version, workload, mode,
device), the verdict table of report/comparison.py, and what exists in only
one folder. Runs in the runner environment (scipy)."""
from __future__ import annotations

import json
from pathlib import Path

from ..files import RUNS
from ..result.store import load_runs, run_base
from .. import stats
from ..catalog import WORKLOAD_BY_KEY
from ..stats import P_THRESHOLD
from .analysis import analyse
from .cells import cell, header
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
            rel = Path(run_base(w.result.dir)).relative_to(Path(folder) / RUNS).as_posix()  # its seeds' folder
        except ValueError:
            rel = w.id
        out[rel] = w
    return out


def compare_folders(a, b, threshold=0.10, lang="en") -> dict:
    """{"markdown": the verdict table and notes, "data": the same as numbers}."""
    S = Strings(lang)
    ra, rb = rows_by_run(a, S), rows_by_run(b, S)
    both = [k for k in ra if k in rb]
    lines = [{"framework": framework_name(ra[k].fw), "fw": ra[k].fw, "workload": ra[k].workload,
              "mode": ra[k].mode, "device": ra[k].device, "a": ra[k].version or "?",
              "b": rb[k].version or "?", "runs_a": [ra[k].result, *ra[k].extra],
              "runs_b": [rb[k].result, *rb[k].extra], "run": k} for k in both]
    table = comparison_table(lines, S, threshold, "table-compare")
    only = {"A": sorted(set(ra) - set(rb)), "B": sorted(set(rb) - set(ra))}
    md = [f"# {S('compare_title')}", "",
          *S("compare_intro", a=str(Path(a).resolve()), b=str(Path(b).resolve()),
             pct=f"{threshold * 100:g}%").split("\n"), ""]
    md += markdown_table(table) if lines else [S("compare_none")]
    md += [""] + [f"> ⚠️ {n}\n" for n in notes(table["lines"], S, threshold)]
    quality = quality_lines(ra, rb, both, S)
    if quality:
        md += ["", f"## {S('compare_quality_title')}", "", S("compare_quality_intro", n=stats.MIN_SEEDS), ""]
        md += markdown_table(quality_table(quality, S)) + [""]
    for side, folder in (("A", a), ("B", b)):
        if only[side]:
            md.append("- " + S("compare_only", side=side, folder=folder, items=", ".join(only[side])))
    keep = ("run", "framework", "workload", "mode", "device", "a", "b", "n_a", "n_b", "sps_a", "sps_b", "ratio", "p",
            "mem_ratio", "quality_ratio", "verdict", "check")
    data = {"a": str(a), "b": str(b), "threshold": threshold, "p_threshold": P_THRESHOLD,
            "pairs": [dict({k: c.get(k) for k in keep}, run=ln["run"]) for c, ln in zip(table["lines"], lines)],
            "only_in_a": only["A"], "only_in_b": only["B"],
            "quality": [{k: v for k, v in q.items() if k != "show"} for q in quality]}
    return {"markdown": "\n".join(md) + "\n", "data": json.loads(json.dumps(data, default=str))}


def markdown_table(t) -> list:
    esc = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = ["| " + " | ".join(esc(h["t"]) for h in t["headers"]) + " |",
           "|" + "|".join("---:" if h["num"] else "---" for h in t["headers"]) + "|"]
    out += ["| " + " | ".join(esc(c["t"]) for c in row) + " |" for row in t["rows"]]
    return out


# ------------------------------------------------------------------ quality over seeds
def quality_lines(ra, rb, both, S) -> list:
    """Per run in both folders whose workload has a score: B's quality minus
    A's over their seeds (stats.seed_difference: paired by seed where both ran
    the same seeds, else unpaired) and the verdict, "better", "worse", "same"
    (within seed noise) or "too_few" (under stats.MIN_SEEDS seeds a side)."""
    an_a, an_b = analyse(list(ra.values())), analyse(list(rb.values()))
    out = []
    for k in both:
        wl = WORKLOAD_BY_KEY.get(ra[k].workload)
        if wl is None or wl.quality.higher_is_better is None:
            continue
        qa, qb = an_a.quality(ra[k]), an_b.quality(rb[k])
        d = stats.seed_difference(qa.by_seed, qb.by_seed)
        better = "higher" if wl.quality.higher_is_better else "lower"
        verdict = {"higher": "better" if better == "higher" else "worse",
                   "lower": "better" if better == "lower" else "worse"}.get(d["verdict"], d["verdict"])
        out.append({"run": k, "framework": framework_name(ra[k].fw), "workload": ra[k].workload, "metric": wl.quality.key,
                    "a": {"mean": qa.mean, "lo": qa.lo, "hi": qa.hi, "n": qa.n},
                    "b": {"mean": qb.mean, "lo": qb.lo, "hi": qb.hi, "n": qb.n},
                    "diff": d["diff"], "lo": d["lo"], "hi": d["hi"], "paired": d["paired"], "verdict": verdict})
    return out


def _mean_text(side, show) -> str:
    if side["mean"] is None:
        return "n/a"
    iv = f" ({show(side['lo'])}–{show(side['hi'])})" if side["lo"] is not None else ""
    return f"{show(side['mean'])}{iv}, n={side['n']}"


def quality_table(lines, S) -> dict:
    from .tables import QUALITY_DIFF, QUALITY_FORMAT
    heads = [header(h) for h in (S("col_run"), S("col_cmp_metric"), "A", "B", S("col_cmp_quality_diff"),
                                 S("col_verdict"), S("col_cmp_pairing"))]
    rows = []
    for q in lines:
        show, diff = QUALITY_FORMAT.get(q["metric"], str), QUALITY_DIFF.get(q["metric"], str)
        d = "n/a" if q["diff"] is None else (f"{'+' if q['diff'] >= 0 else '−'}{diff(abs(q['diff']))}" + (
            f" ({diff(q['lo']) if q['lo'] >= 0 else '−' + diff(-q['lo'])} – "
            f"{diff(q['hi']) if q['hi'] >= 0 else '−' + diff(-q['hi'])})" if q["lo"] is not None else ""))
        rows.append([cell(q["run"]), cell(q["metric"]), cell(_mean_text(q["a"], show)), cell(_mean_text(q["b"], show)),
                     cell(d, q["diff"]), cell(S("cmp_quality_" + q["verdict"])),
                     cell(S("quality_paired") if q["paired"] else S("quality_unpaired") if q["lo"] is not None else "—")])
    return {"id": "table-compare-quality", "headers": heads, "rows": rows}
