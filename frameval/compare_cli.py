"""`python3 run_all.py compare A B [--out DIR]`: the version comparison's
verdict table for any two existing output folders (two dates, two machines,
before and after a driver update). Runs are paired by framework (with its
pinned version, if any), workload, mode and device, i.e. by their run
folder under runs/; what exists in only one folder is listed.

The arguments are checked with the standard library (bad input exits 2 with
one line, before the runner environment is built); the comparison itself runs
in the runner environment (scipy).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .exits import fail
from .files import RUNS

EPILOG = """examples:
  python3 run_all.py compare reports/before reports/after
  python3 run_all.py compare reports/a reports/b --out reports/a-vs-b --threshold 0.05 --lang zh
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_all.py compare", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Compare the runs of two frameval output folders: per framework, "
                                            "workload, mode and device, the ratios of samples/s, peak memory and "
                                            "final quality, and a verdict (faster, slower, no significant change).")
    p.add_argument("a", metavar="A", help="the earlier output folder (with runs/)")
    p.add_argument("b", metavar="B", help="the later output folder (with runs/)")
    p.add_argument("--out", default="", metavar="DIR", help="also write DIR/compare.md and DIR/compare.json")
    p.add_argument("--threshold", type=float, default=0.10, metavar="F",
                   help="the smallest change called faster or slower, as a fraction (default 0.10)")
    p.add_argument("--lang", default="en", help="en (default) or zh")
    p.add_argument("--env-backend", default="auto", help=argparse.SUPPRESS)
    return p


def validate(args) -> None:
    for name, folder in (("A", args.a), ("B", args.b)):
        if not (Path(folder) / RUNS).is_dir():
            fail(f"compare {name} {folder}: no runs/ folder there (not a frameval output folder)")
    if Path(args.a).resolve() == Path(args.b).resolve():
        fail(f"compare: A and B are the same folder ({args.a})")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        fail(f"--out {args.out}: is a file, not a folder")
    if not 0 < args.threshold < 10:
        fail(f"--threshold {args.threshold:g}: a fraction between 0 and 10, e.g. 0.1 for 10%")
    if args.lang not in ("en", "zh"):
        fail(f"--lang {args.lang!r}: choose en or zh")


def main(argv) -> int:
    args = parser().parse_args(argv)
    validate(args)
    from .bootstrap import ensure_runner
    ensure_runner(["compare", *argv], backend=args.env_backend)
    result = compare_folders(args.a, args.b, args.threshold, args.lang)
    print(result["markdown"])
    if args.out:
        from .files import atomic_write_json
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(result["markdown"], encoding="utf-8")
        atomic_write_json(out / "compare.json", result["data"])
        print(f"frameval: comparison written: {out / 'compare.md'} and {out / 'compare.json'}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------ runner side
def _rows(folder, S) -> dict:
    """{run folder relative to runs/: row} of one output folder, repeats folded in."""
    from .report.model import make_rows
    from .results import load_runs
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
    from .report.comparison import comparison_table, notes
    from .report.i18n import Strings
    from .report.spec import framework_name
    S = Strings(lang)
    ra, rb = _rows(a, S), _rows(b, S)
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
    data = {"a": str(a), "b": str(b), "threshold": threshold, "p_threshold": 0.002,
            "pairs": [dict({k: c.get(k) for k in keep}, run=ln["run"]) for c, ln in zip(table["lines"], lines)],
            "only_in_a": only["A"], "only_in_b": only["B"]}
    return {"markdown": "\n".join(md) + "\n", "data": json.loads(json.dumps(data, default=str))}


def markdown_table(t) -> list:
    esc = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = ["| " + " | ".join(esc(h["t"]) for h in t["headers"]) + " |",
           "|" + "|".join("---:" if h["num"] else "---" for h in t["headers"]) + "|"]
    out += ["| " + " | ".join(esc(c["t"]) for c in row) + " |" for row in t["rows"]]
    return out
