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
import sys
from pathlib import Path

from . import options
from ..optionchecks import check_lang, check_threshold
from ..exits import BadInput, fail
from ..files import RUNS

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
    options.threshold(p, "the smallest change called faster or slower, as a fraction (default 0.10)")
    options.lang(p)
    options.env_backend(p, shown=False)
    return p


def validate(args) -> None:
    for name, folder in (("A", args.a), ("B", args.b)):
        if not (Path(folder) / RUNS).is_dir():
            fail(f"compare {name} {folder}: no runs/ folder there (not a frameval output folder)")
    if Path(args.a).resolve() == Path(args.b).resolve():
        fail(f"compare: A and B are the same folder ({args.a})")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        fail(f"--out {args.out}: is a file, not a folder")
    try:
        check_threshold(args.threshold)
        check_lang(args.lang)
    except BadInput as e:
        fail(str(e))


def main(argv) -> int:
    args = parser().parse_args(argv)
    validate(args)
    from ..bootstrap import ensure_runner
    ensure_runner(["compare", *argv], backend=args.env_backend)
    from ..report.folders import compare_folders  # the runner environment's (matplotlib, scipy)
    result = compare_folders(args.a, args.b, args.threshold, args.lang)
    print(result["markdown"])
    if args.out:
        from ..files import atomic_write_json
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(result["markdown"], encoding="utf-8")
        atomic_write_json(out / "compare.json", result["data"])
        print(f"frameval: comparison written: {out / 'compare.md'} and {out / 'compare.json'}", file=sys.stderr)
    return 0
