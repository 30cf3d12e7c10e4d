"""The command line: parse and validate (standard library only), bootstrap the
runner environment, then hand over to the pipeline.

    python3 run_all.py [options]        plan -> environments -> runs -> report
    python3 run_all.py test [pytest args]
    python3 run_all.py lab  [--frameworks ...] [--ip --port]
    python3 run_all.py bench <overhead|pipeline|seed_parity> [args]
    python3 run_all.py defects [--frameworks ...]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from . import files
from .exits import fail
from .paths import REPO
from .plan import PlanError, build_plan
from .catalog import FRAMEWORKS, PROFILES, WORKLOADS


EPILOG = """examples:
  python3 run_all.py                                  the default quick report, all frameworks, graph mode
  python3 run_all.py --frameworks torch,tensorflow --mode both -p lenet.epochs=5
  python3 run_all.py --profile full --data-dir ~/mnist --lang zh --title "评测报告"
  python3 run_all.py --report-only --from reports/a --from reports/b --out reports/merged
  python3 run_all.py --frameworks torch --python torch=~/venvs/torch/bin/python   your own environment
  python3 run_all.py test                             the test suite (CI); test --fast: the unit-level tests
  python3 run_all.py lab                              JupyterLab on notebooks/ with every kernel
  python3 run_all.py --frameworks paddle==3.2.2,paddle --workloads lenet --repeats 7   two versions, with a verdict
  python3 run_all.py compare reports/before reports/after   did it get faster? (docs/compare.md)
  python3 run_all.py bench overhead                   a benchmark (bench/), in the runner environment
  python3 run_all.py defects                          each framework defect's reproduction: present / fixed
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_all.py", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="frameval: run the framework x workload notebooks with papermill, each in its "
                    "framework's own environment, and write report.md / report.html.")
    p.add_argument("--frameworks", default="all", metavar="LIST",
                   help=f"comma-separated frameworks, or all (default): {', '.join(FRAMEWORKS)}; "
                        "FW==VERSION runs another version of FW beside its spec's, e.g. paddle==3.2.2,paddle "
                        "(docs/compare.md)")
    p.add_argument("--workloads", default="all", metavar="LIST",
                   help=f"comma-separated workloads, or all (default): {', '.join(WORKLOADS)}")
    p.add_argument("--mode", default="graph", help="graph (compiled, default), eager, or both")
    p.add_argument("--device", default="cpu", help="cpu (default) or gpu")
    p.add_argument("--profile", default="quick",
                   help=f"run sizes: {', '.join(PROFILES)} (default quick: the whole default matrix in ~10 min "
                        "on 2 cores; full: the spec's sizes)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a notebook parameter for all workloads (epochs=2) or one (lenet.lr=0.002); "
                        "checked against each notebook's parameters cell")
    p.add_argument("--out", default=str(REPO / "reports" / "default"), metavar="DIR",
                   help="output folder (default reports/default): runs/<fw>/<workload>-<mode>/ and the report")
    p.add_argument("--name", default="report", help="report file name without extension (default report)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="run each notebook N times, each in a fresh kernel (default 1)")
    p.add_argument("--threshold", type=float, default=0.10, metavar="F",
                   help="version comparison: call a change faster/slower only when it is larger than this "
                        "fraction (default 0.10) and significant across repeats (docs/compare.md)")
    p.add_argument("--timeout", type=float, default=1800, metavar="S",
                   help="kill a run after S seconds and record it as failed (default 1800)")
    p.add_argument("--force", nargs="?", const="all", default=None, metavar="RUNS",
                   help="execute even if a cached result matches: all, or e.g. torch/lenet,mxnet")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and whether each run executes or is reused, and why; run nothing")
    p.add_argument("--setup-only", action="store_true",
                   help="build the environments and data caches the plan needs, register kernels, and stop")
    p.add_argument("--report-only", action="store_true", help="rebuild the report from existing runs")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="DIR",
                   help="with --report-only: merge the runs of these output folders (repeatable)")
    p.add_argument("--lang", default="en", help="report language: en (default) or zh")
    p.add_argument("--title", default="", help="report title")
    p.add_argument("--author", default="", help="report author")
    p.add_argument("--notes", default="", metavar="FILE", help="Markdown file with your own words for the summary")
    p.add_argument("--data-dir", default="", metavar="DIR",
                   help="folder with the four MNIST IDX files: use the full MNIST (sets dataset=full)")
    p.add_argument("--download-mnist", action="store_true",
                   help="download the full MNIST IDX files (MD5-checked) into the data cache and use them")
    p.add_argument("--env-backend", default=os.environ.get("FRAMEVAL_ENV_BACKEND", "auto"),
                   help="auto (conda/mamba if on PATH, else venv), conda or venv; for every environment, the "
                        "runner's included (default $FRAMEVAL_ENV_BACKEND, else auto). venv installs with uv "
                        "(pip where uv cannot be had; FRAMEVAL_INSTALLER=pip forces pip)")
    p.add_argument("--python", dest="pythons", action="append", default=[], metavar="FW=PYTHON",
                   help="run framework FW in an environment you already have, e.g. torch=~/venvs/t/bin/python "
                        "(repeatable). The framework must import there; frameval adds only ipykernel and numpy "
                        "if they are missing, registers a kernel and records the environment's pip freeze")
    slurm_options(p.add_argument_group("Slurm (--executor slurm; docs/slurm.md)"))
    return p


def slurm_options(s) -> None:
    s.add_argument("--executor", default="local",
                   help="local (default: one run after another on this machine) or slurm (the runs that must "
                        "execute as one Slurm job array, submitted with submitit; environments must be on a "
                        "shared filesystem: build them with --setup-only first)")
    s.add_argument("--slurm-partition", default="", metavar="NAME", help="sbatch --partition")
    s.add_argument("--slurm-time", default="", metavar="TIME",
                   help="sbatch --time per run: minutes, or [D-]HH:MM[:SS] (default 60)")
    s.add_argument("--slurm-gpus-per-task", default="", metavar="N", help="sbatch --gpus-per-task")
    s.add_argument("--slurm-cpus-per-task", default="", metavar="N", help="sbatch --cpus-per-task")
    s.add_argument("--slurm-array-parallelism", default="", metavar="N",
                   help="at most N runs at once (the array's %%N; default all)")
    s.add_argument("--slurm-account", default="", metavar="NAME", help="sbatch --account")
    s.add_argument("--slurm-exclusive", dest="slurm_exclusive", action="store_true", default=None,
                   help="whole nodes per run, so timings are not shared with other jobs (the default)")
    s.add_argument("--no-slurm-exclusive", dest="slurm_exclusive", action="store_false",
                   help="share nodes with other jobs")
    s.add_argument("--slurm-extra", action="append", default=[], metavar="KEY=VALUE",
                   help="any other sbatch option, e.g. --slurm-extra constraint=a100 (repeatable)")


SLURM_SET = {"partition": "--slurm-partition", "time": "--slurm-time", "gpus-per-task": "--slurm-gpus-per-task",
             "cpus-per-task": "--slurm-cpus-per-task", "account": "--slurm-account",
             "exclusive": "--slurm-exclusive", "array": "--slurm-array-parallelism", "output": None,
             "error": None, "job-name": None, "open-mode": None, "wrap": None, "parsable": None}
SLURM_TIME = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2})$")


def validate_slurm(args) -> None:
    """--executor and the --slurm-* options (standard library only)."""
    if args.executor not in ("local", "slurm"):
        fail(f"--executor {args.executor!r}: choose local or slurm")
    given = [o for o, v in (("--slurm-partition", args.slurm_partition), ("--slurm-time", args.slurm_time),
                            ("--slurm-gpus-per-task", args.slurm_gpus_per_task),
                            ("--slurm-cpus-per-task", args.slurm_cpus_per_task),
                            ("--slurm-array-parallelism", args.slurm_array_parallelism),
                            ("--slurm-account", args.slurm_account),
                            ("--slurm-exclusive/--no-slurm-exclusive", args.slurm_exclusive is not None),
                            ("--slurm-extra", args.slurm_extra)) if v]
    if args.executor == "local":
        if given:
            fail(f"{given[0]} is only used with --executor slurm")
        return
    for opt, v in (("--slurm-partition", args.slurm_partition), ("--slurm-account", args.slurm_account)):
        if v and not re.fullmatch(r"[A-Za-z0-9_.,+-]+", v):
            fail(f"{opt} {v!r}: not a Slurm name (letters, digits, _ . , + -)")
    if args.slurm_time and (not SLURM_TIME.match(args.slurm_time.strip())
                            or not any(c not in "0:-" for c in args.slurm_time)):
        fail(f"--slurm-time {args.slurm_time!r}: expected minutes or [D-]HH:MM[:SS], more than zero (e.g. 30, 2:00:00)")
    for opt, v, low in (("--slurm-gpus-per-task", args.slurm_gpus_per_task, 0),
                        ("--slurm-cpus-per-task", args.slurm_cpus_per_task, 1),
                        ("--slurm-array-parallelism", args.slurm_array_parallelism, 1)):
        if v and (not v.strip().isdigit() or int(v) < low):
            fail(f"--{opt.lstrip('-')} {v!r}: expected an integer of at least {low}")
    keys = set()
    for item in args.slurm_extra:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key) or not value.strip():
            fail(f"--slurm-extra {item!r}: expected KEY=VALUE, an sbatch option without its dashes, "
                 "e.g. constraint=a100")
        if key.replace("_", "-") in SLURM_SET:
            own = SLURM_SET[key.replace("_", "-")]
            fail(f"--slurm-extra {item!r}: " + (f"use {own}" if own else "frameval sets this one itself"))
        if key in keys:
            fail(f"--slurm-extra {key}= given twice")
        keys.add(key)
    if args.device == "gpu" and not args.slurm_gpus_per_task and not any(
            k in keys for k in ("gres", "gpus", "gpus-per-node", "gpus_per_node")):
        fail("--executor slurm --device gpu: ask for a GPU with --slurm-gpus-per-task 1 (or --slurm-extra gres=...)")
    if not (args.dry_run or args.setup_only or args.report_only):
        import shutil
        for tool in ("sbatch", "squeue", "scancel"):
            if not shutil.which(tool):
                fail(f"--executor slurm: {tool} is not on PATH (run on the cluster's login node, or --dry-run)")


PROBES_VAR = "FRAMEVAL_USER_PYTHON_PROBES"  # the checks done before the re-exec into the runner env


def check_user_pythons(args, runs) -> dict:
    """--python FW=PATH: each framework planned, each interpreter working, the
    framework importable there, kernel-side packages present or installable."""
    from .envs import UserEnvError, probe_user_python
    from .catalog import canonical_framework
    planned = {r.framework for r in runs}
    done = {}
    try:
        done = json.loads(os.environ.pop(PROBES_VAR, "") or "{}")
    except ValueError:
        pass
    out, probes = {}, {}
    for item in args.pythons:
        fw, sep, path = item.partition("=")
        if not sep or not fw.strip() or not path.strip():
            fail(f"--python {item!r}: expected FRAMEWORK=PATH, e.g. torch=/path/to/venv/bin/python")
        fw = canonical_framework(fw.strip())
        if fw not in FRAMEWORKS:
            fail(f"--python {item}: unknown framework {fw!r}; choose one of {', '.join(FRAMEWORKS)}")
        if fw in out:
            fail(f"--python {fw}= given twice")
        if fw not in planned:
            fail(f"--python {item}: {fw} is not among the planned frameworks ({', '.join(sorted(planned))})")
        path = str(Path(path.strip()).expanduser().absolute())
        prev = done.get(fw)
        if prev and prev.get("python") == path:
            probes[fw] = prev
        else:
            try:
                probes[fw] = probe_user_python(fw, path)
            except UserEnvError as e:
                fail(str(e))
        out[fw] = path
    os.environ[PROBES_VAR] = json.dumps(probes)  # read once by the re-executed runner, then dropped
    return {"pythons": out, "probes": probes}


def validate(args) -> list:
    """Every check that needs no third-party package, before anything is built."""
    if args.lang not in ("en", "zh"):
        fail(f"--lang {args.lang!r}: choose en or zh")
    if os.sep in args.name or "/" in args.name or args.name in ("", ".", ".."):
        fail(f"--name {args.name!r}: a report name cannot contain a path separator")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: is a file, not a folder")
    if args.env_backend not in ("auto", "conda", "venv"):
        fail(f"--env-backend {args.env_backend!r}: choose auto, conda or venv")
    if args.env_backend == "conda":
        from .envs import BACKENDS
        if not BACKENDS["conda"].available():
            fail("--env-backend conda: none of mamba, micromamba, conda is on PATH (or use venv)")
    if args.timeout <= 0:
        fail(f"--timeout {args.timeout:g}: must be positive")
    validate_slurm(args)
    if args.notes and not Path(args.notes).is_file():
        fail(f"--notes {args.notes}: no such file")
    for s in args.sources:
        if not (Path(s) / files.RUNS).is_dir():
            fail(f"--from {s}: no runs/ folder there (not a frameval output folder)")
    if args.sources and not args.report_only:
        fail("--from is only used with --report-only")
    params = list(args.param)
    if args.data_dir or args.download_mnist:
        if args.data_dir:
            from .data import DataError, validate_idx_folder
            try:
                validate_idx_folder(args.data_dir)
            except DataError as e:
                fail(str(e))
        params.append("dataset=full") if not any(p.split("=")[0].split(".")[-1] == "dataset" for p in params) else None
    try:
        runs = build_plan(args.frameworks, args.workloads, args.mode, args.device, args.profile, params, args.repeats)
    except PlanError as e:
        fail(str(e))
    if not args.report_only:  # a pinned version the index does not have: one line, before anything is built
        from .versions import check_pins
        why = check_pins([(r.framework, r.pin) for r in runs if r.pin], args.device, args.env_backend)
        if why:
            fail(why)
    if not 0 < args.threshold < 10:
        fail(f"--threshold {args.threshold:g}: a fraction between 0 and 10, e.g. 0.1 for 10%")
    users = check_user_pythons(args, runs) if args.pythons else {"pythons": {}, "probes": {}}
    args.user_pythons, args.user_probes = users["pythons"], users["probes"]
    if args.force and args.force != "all":
        names = ({r.framework for r in runs} | {r.fw_key for r in runs} | {f"{r.fw_key}/{r.workload}" for r in runs}
                 | {f"{r.framework}/{r.workload}" for r in runs} | {r.name for r in runs})
        for f in args.force.split(","):
            if f.strip() not in names:
                fail(f"--force {f.strip()!r}: matches no planned run (e.g. torch or torch/lenet)")
    return runs


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["test"]:
        from .bootstrap import run_tests
        return run_tests(argv[1:])
    if argv[:1] == ["bench"]:
        from .bootstrap import run_bench
        return run_bench(argv[1:])
    if argv[:1] == ["defects"]:
        from .defects import main as defects_main
        return defects_main(argv[1:])
    if argv[:1] == ["compare"]:
        from .compare_cli import main as compare_main
        return compare_main(argv[1:])
    if argv[:1] == ["lab"]:
        from .lab import main as lab_main
        return lab_main(argv[1:])
    args = parser().parse_args(argv)
    runs = validate(args)
    from .bootstrap import ensure_runner
    prebuild = [] if (args.dry_run or args.report_only) else [
        (fw, args.device) for fw in dict.fromkeys(r.fw_key for r in runs) if fw not in args.user_pythons]
    # re-executes inside the runner env if needed (building it, and the framework envs beside it)
    ensure_runner(argv, backend=args.env_backend, prebuild=prebuild)
    os.environ.pop(PROBES_VAR, None)
    from .pipeline import Pipeline
    return Pipeline(args, runs, argv).run()
