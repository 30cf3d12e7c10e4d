#!/usr/bin/env python3
"""The pipeline's own times, printed with the machine's core count and the
load average (os.getloadavg) beside every figure:

1. a cold build: the runner environment and every framework environment from
   an empty frameval cache (a throwaway FRAMEVAL_CACHE_DIR and Jupyter folder,
   so no shared kernel is repointed), started the way a user starts it: a
   plain Python 3 running `run_all.py --setup-only` (data caches included);
   target <= 60 s on 2 cores. Then the same command again: everything cached
   (target: ~0 s of building).
2. the default quick report: `python3 run_all.py --out <tmp>`;
3. an unchanged rerun (every run reused, the report rebuilt);
4. a rerun after one parameter change: `-p lstm.lr=0.002` (only the LSTM runs execute).

    python3 run_all.py bench pipeline                       (or: python3 bench/pipeline.py)
    python3 run_all.py bench pipeline --skip-report         only the cold build
    python3 run_all.py bench pipeline --uv-cache cold       uv's download cache empty too (network-bound)
    python3 run_all.py bench pipeline --installer pip       the same cold build with pip, to compare
    python3 run_all.py bench pipeline --smoke --frameworks jax --workloads lstm
                                                            tiny runs: the test suite's check that it runs

It re-executes itself in the runner environment, as run_all.py does. Steps
2-4 use the normal per-user cache (environments built once, e.g. by
`python3 run_all.py --setup-only`), so step 2 measures the report, not builds.
By default uv's own download cache is left as it is (like pip's cache: a
fresh clone on a machine that has downloaded the wheels before); `--uv-cache
cold` empties it for the build (and pip's, with --installer pip).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from frameval.bootstrap import bootstrap_script  # standard library only
    bootstrap_script(__file__)  # returns inside the runner environment

from frameval import envs  # noqa: E402
from frameval.nb.record import machine_info  # noqa: E402


# --smoke: the report runs at tiny sizes (two epochs, a few batches), so that
# tests/test_bench.py can run every step in seconds; the figures are then only
# a sign that the bench works, not measurements.
SMOKE_PARAMS = ["-p", "epochs=2", "-p", "lenet.max_train_samples=256", "-p", "dcgan.batch_size=16",
                "-p", "dcgan.max_train_samples=32", "-p", "lstm.max_train_samples=128"]


def load() -> float:
    return os.getloadavg()[0]


def base_python() -> str:
    """A plain Python 3 outside the runner env, as a user would start run_all.py with."""
    base = getattr(sys, "_base_executable", "") or ""
    if base and Path(base).exists() and Path(base).resolve() != Path(sys.executable).resolve():
        return base
    found = envs.find_python(f"{sys.version_info[0]}.{sys.version_info[1]}")
    return str(found or sys.executable)


def timed(cmd, env=None, label="", log: Path | None = None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if log:
        log.write_text(p.stdout + "\n---- stderr ----\n" + p.stderr)
    if p.returncode != 0:
        print(f"  {label}: exit {p.returncode}\n{p.stdout[-2500:]}\n{p.stderr[-2500:]}", flush=True)
    return secs, p


def runs_summary(stdout: str) -> str:
    executed = re.search(r"(\d+) run\(s\) executed, (\d+) reused or skipped", stdout)
    failed = len(re.findall(r": FAILED", stdout)) + len(re.findall(r"failed \(environment", stdout))
    if not executed:
        return "no run summary printed"
    # why each executed run executed: "[1/3] torch/lenet-graph: running (changed: frameval) ..."
    why = re.findall(r"\] (\S+): running \(([^)]*)\)", stdout)
    reasons = {}
    for name, reason in why:
        reasons.setdefault(reason, []).append(name)
    text = f"{executed.group(1)} executed, {executed.group(2)} reused" + (f", {failed} FAILED" if failed else "")
    if reasons and len(why) < 6:
        text += " (" + "; ".join(f"{', '.join(n)}: {r}" for r, n in reasons.items()) + ")"
    elif reasons:
        text += " (" + "; ".join(f"{len(n)} {r}" for r, n in reasons.items()) + ")"
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env-backend", default="auto", help="auto, venv or conda (as run_all.py)")
    ap.add_argument("--installer", default="uv", choices=("uv", "pip"),
                    help="uv (default, pip where uv cannot be had) or pip (FRAMEVAL_INSTALLER=pip), for the cold build")
    ap.add_argument("--uv-cache", default="warm", choices=("warm", "cold"),
                    help="warm (default): uv's / pip's download cache as it is; cold: empty, for the cold build")
    ap.add_argument("--frameworks", default="", help="limit the cold build and the report runs (run_all.py --frameworks)")
    ap.add_argument("--workloads", default="", help="limit the report runs (run_all.py --workloads)")
    ap.add_argument("--skip-build", action="store_true", help="skip the cold build")
    ap.add_argument("--skip-report", action="store_true", help="skip the three report runs")
    ap.add_argument("--keep", default="", help="keep the output folders here (default: temporary, removed)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny report runs (2 epochs, few samples): checks that the bench runs, measures nothing")
    a = ap.parse_args(argv)

    py = sys.executable
    root = Path(a.keep or tempfile.mkdtemp(prefix="frameval-bench-pipeline-"))
    root.mkdir(parents=True, exist_ok=True)
    m = machine_info()
    print(f"bench/pipeline.py: {m['cores']} cores, {m['cpu']}, {m['memory_gb']} GB; runner python {py}; "
          f"load {load():.1f}", flush=True)
    rows = []
    limit = ["--frameworks", a.frameworks] if a.frameworks else []

    if not a.skip_build:
        cache = root / "cold-cache"
        env = dict(os.environ, FRAMEVAL_CACHE_DIR=str(cache), FRAMEVAL_JUPYTER_DIR=str(root / "cold-jupyter"))
        env.pop("FRAMEVAL_NO_BOOTSTRAP", None)
        if a.installer == "pip":
            env["FRAMEVAL_INSTALLER"] = "pip"
        if a.uv_cache == "cold":
            env["UV_CACHE_DIR"] = str(root / "cold-uv-cache")
            env["PIP_NO_CACHE_DIR"] = "1"
        base = base_python()
        cmd = [base, str(REPO / "run_all.py"), "--setup-only", "--env-backend", a.env_backend,
               "--out", str(root / "cold-out"), *limit]
        what = f"runner + {a.frameworks or 'all six'} environment(s)"
        print(f"cold build of the {what} ({a.installer}, {a.uv_cache} download cache) into {cache}:\n"
              f"  {' '.join(cmd)}", flush=True)
        l0 = load()
        secs, p = timed(cmd, env, "cold build", root / "cold-build.log")
        print("\n".join("  " + ln for ln in p.stdout.rstrip().splitlines()), flush=True)
        rows.append((f"cold build: {what}, data caches included", secs,
                     "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})", (l0, load())))
        l0 = load()
        secs, p = timed(cmd, env, "cached", root / "cached-build.log")
        rows.append(("the same again, everything cached", secs,
                     "ok" if p.returncode == 0 and "built" not in p.stdout else f"exit {p.returncode}", (l0, load())))
        if not a.keep:
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(root / "cold-uv-cache", ignore_errors=True)

    if not a.skip_report:
        out = root / "report"
        base = [py, str(REPO / "run_all.py"), "--out", str(out), "--env-backend", a.env_backend, *limit]
        if a.workloads:
            base += ["--workloads", a.workloads]
        if a.smoke:
            base += SMOKE_PARAMS
        shown = "python3 run_all.py --out <tmp>" + (f" --frameworks {a.frameworks}" if a.frameworks else "") + \
            (f" --workloads {a.workloads}" if a.workloads else "") + (" (--smoke sizes)" if a.smoke else "")
        for label, extra in (("default quick report", []), ("unchanged rerun", []),
                             ("rerun after -p lstm.lr=0.002", ["-p", "lstm.lr=0.002"])):
            print(f"{label}: {shown} {' '.join(extra)} ...", flush=True)
            l0 = load()
            secs, p = timed(base + extra, None, label, root / f"{label.split()[0]}-{len(rows)}.log")
            summary = runs_summary(p.stdout)
            rows.append((label, secs, summary + ("" if p.returncode == 0 else f"; exit {p.returncode}"), (l0, load())))
            print(f"  {secs:.1f} s: {summary}   (load {l0:.1f}-{load():.1f})", flush=True)

    print()
    print(f"pipeline times on {m['cores']} cores ({m['cpu']}), 1-minute load average before-after each:")
    for label, secs, what, (l0, l1) in rows:
        print(f"  {label:<52} {secs:8.1f} s   load {l0:4.1f}-{l1:4.1f}   {what}")
    if not a.skip_build:
        print("  (cold build target: <= 60 s on 2 cores; the machine's other load counts against it)")
    print("  (an unchanged rerun that executes a run says why: `changed: frameval` means frameval/nb/*.py "
          "changed between the runs)")
    if a.keep:
        print(f"folders kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
