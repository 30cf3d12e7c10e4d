"""`python3 run_all.py reproduce REPORT_DIR [--out DIR] [--offline BUNDLE]`:
make a report again from its own record and say whether it agrees (issue #41).

1. The record (REPORT_DIR/provenance.json) is checked: bad input is one line
   and exit 2, before anything is built (frameval/reproduce.py).
2. A warning where this clone is not the report's commit, naming the files
   that differ under frameval/ and notebooks/.
3. Every environment rebuilt from the record: the report's locks, your
   interpreter or a venv from its freeze (frameval/envs/recorded.py).
4. The same plan run again into DIR (the run command, every run executed).
5. The comparison, per run (frameval/report/reproduction.py), written to
   DIR/reproduce.md and DIR/reproduce.json, and its verdict as the last line:
   "reproduced: 21 of 21 runs agree", or what differs and where. Exit 0
   where every run agrees, 1 where one differs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from . import options
from ..optionchecks import check_lang, check_threshold
from ..exits import BadInput, fail

EPILOG = """examples:
  python3 run_all.py reproduce reports/default                      into reports/default-reproduction
  python3 run_all.py reproduce ~/received/report --out ~/repro --lang zh
  python3 run_all.py reproduce reports/a --out reports/a-again --offline ~/bundle   a machine with no network
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_all.py reproduce", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Rebuild every environment of a frameval report from its own record "
                                            "(provenance.json), run its plan again, and compare each run with the "
                                            "original: the check, the quality figure, the speed (docs/reproduce.md).")
    p.add_argument("report", metavar="REPORT_DIR", help="the output folder to reproduce (with provenance.json)")
    p.add_argument("--out", default="", metavar="DIR",
                   help="where the reproduction goes (default: REPORT_DIR-reproduction)")
    p.add_argument("--offline", default="", metavar="BUNDLE",
                   help="build the environments from this bundle alone (`run_all.py bundle`; docs/offline.md)")
    p.add_argument("--compare-only", action="store_true",
                   help="compare with the reproduction already in --out; build and run nothing")
    options.threshold(p, "the smallest speed change called faster or slower (default 0.10, as compare)")
    options.lang(p)
    options.env_backend(p, shown=False)
    return p


def validate(args) -> tuple:
    """(the report's record, the reproduction's folder); bad input exits 2 with one line."""
    from ..config import check_out_folder
    from ..files import RUNS
    from ..reproduce import load
    try:
        record = load(args.report)
        check_threshold(args.threshold)
        check_lang(args.lang)
        out = Path(args.out or str(Path(args.report).absolute()).rstrip("/") + "-reproduction").absolute()
        if out.resolve() == Path(args.report).resolve():
            raise BadInput(f"reproduce: --out {out} is the report's own folder; the reproduction needs its own")
        check_out_folder(out, create=False)
        if args.compare_only and not (out / RUNS).is_dir():
            raise BadInput(f"reproduce --compare-only: {out} holds no reproduction (no runs/ folder)")
        if args.offline and not Path(args.offline).is_dir():
            raise BadInput(f"--offline {args.offline}: no such folder (a bundle made by `run_all.py bundle`)")
    except BadInput as e:
        fail(str(e))
    return record, out


def planned_runs(argv) -> list:
    """The runs the run command plans from `argv` here (validated, nothing prepared)."""
    from ..config import RunConfig
    from ..executors import slurm_config
    from .run import parser as run_parser
    args = run_parser().parse_args(argv)
    opts = {k: v for k, v in vars(args).items() if not k.startswith("slurm_") and k != "executor"}
    return RunConfig(argv=list(argv), executor=args.executor, slurm=slurm_config.SlurmConfig.from_args(args),
                     **opts).runs


def rerun(record, out: Path, args, notes: list, S) -> int:
    """Environments from the record, then the run command on the same plan into `out`; its exit status."""
    from ..envs import recorded
    from ..paths import REPO
    from ..report.reproduction import said
    from ..reproduce import plan_differences, run_argv
    rebuild = recorded.plan_rebuild(record, out / ".reproduce")
    for fw, version, freeze in rebuild.venvs:
        where = out / ".reproduce" / f"venv-{fw}"
        print(f"frameval: reproduce: building a venv for {fw} from the report's freeze in {where}", flush=True)
        rebuild.pythons[fw] = str(recorded.build_venv(fw, version, freeze, where))
    notes += rebuild.notes
    argv = run_argv(record, out, rebuild.pythons, args.offline)
    try:
        notes += plan_differences(record, planned_runs(argv))
    except (BadInput, SystemExit) as e:
        print(f"frameval: reproduce: the report's command does not plan here: {e}", file=sys.stderr)
        return 2
    for n in notes[1:] if notes and notes[0].get("warning") else notes:  # the warning is said already
        print(f"frameval: reproduce: {said(n, S)}", flush=True)
    env = dict(os.environ)
    if rebuild.spec_dir:
        env["FRAMEVAL_ENV_SPECS"] = str(rebuild.spec_dir)
    cwd = (record.get("command") or {}).get("cwd") or ""  # the recorded command's relative paths
    t0 = time.perf_counter()
    code = subprocess.run([sys.executable, str(REPO / "run_all.py"), *argv], env=env,
                          cwd=cwd if cwd and Path(cwd).is_dir() else None).returncode
    print(f"frameval: reproduce: the plan ran again in {time.perf_counter() - t0:.0f} s (exit {code})", flush=True)
    return code


def main(argv) -> int:
    args = parser().parse_args(argv)
    record, out = validate(args)
    from ..bootstrap import ensure_runner
    ensure_runner(["reproduce", *argv], backend=args.env_backend)
    from ..report.i18n import Strings
    from ..report.reproduction import said
    from ..reproduce import code_changes, warning
    S = Strings(args.lang)
    changes = code_changes(record)
    warned = warning(changes)
    notes = [dict(warned, warning=True)] if warned else []
    if warned:
        print(f"frameval: {said(warned, S)}", file=sys.stderr, flush=True)
    if not args.compare_only:
        code = rerun(record, out, args, notes, S)
        if code == 2 or not (out / "runs").is_dir():
            print(f"frameval: error: the reproduction did not run (exit {code}); nothing to compare",
                  file=sys.stderr)
            return 2 if code == 2 else 1
    from ..files import atomic_write, atomic_write_json
    from ..report.reproduction import compare_reproduction
    result = compare_reproduction(args.report, out, args.threshold, args.lang, notes)
    atomic_write(out / "reproduce.md", result["markdown"])
    # the warning names the first 20 changed files; the record keeps them all
    atomic_write_json(out / "reproduce.json", dict(result["data"], changed_files=list(changes.get("files") or [])))
    print(result["markdown"])
    print(f"frameval: comparison written: {out / 'reproduce.md'} and {out / 'reproduce.json'}", file=sys.stderr)
    print(result["verdict"], flush=True)
    return 0 if result["data"]["agree"] == result["data"]["runs"] else 1
