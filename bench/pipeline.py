#!/usr/bin/env python
"""The pipeline's own times, printed with the machine's core count:

1. a cold build of one framework environment (default: the small
   envs/mxnet.yml), into a throwaway FRAMEVAL_CACHE_DIR, plus preparing the
   data caches there (a fresh clone needs both);
2. the default quick report: `python3 run_all.py --out <tmp>`;
3. an unchanged rerun (every run reused, the report rebuilt);
4. a rerun after one parameter change: `-p lstm.lr=0.002` (only the LSTM runs execute).

Run it with the runner environment's python:

    $(python3 -c 'from frameval.bootstrap import runner_env; print(runner_env().python)') bench/pipeline.py
    ... bench/pipeline.py --frameworks torch          # limit the report to some frameworks
    ... bench/pipeline.py --env torch --skip-report   # only the cold build, of the torch env

Steps 2-4 use the normal per-user cache (environments built once, e.g. by
`python3 run_all.py --setup-only`), so step 2 measures the report, not builds.
The cold build does not register a kernel (that would point the shared
`frameval-<fw>` kernel at the throwaway environment) and installs with pip's
own cache off (PIP_NO_CACHE_DIR=1) unless --pip-cache is given; packages still
come from whatever index pip is configured with.
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

from frameval.bootstrap import runner_env  # noqa: E402
from frameval.nb.record import machine_info  # noqa: E402

COLD_BUILD = ("import sys; from frameval import envs; from frameval.envspec import parse_spec; "
              "e = envs.ensure_env(parse_spec(envs.spec_path(sys.argv[1])), envs.choose_backend(sys.argv[2]), "
              "echo=lambda m: print('  ' + m, flush=True)); print('  ->', e.prefix)")
PREPARE_DATA = "from frameval import data; data.prepare_all(None, False)"


def python() -> str:
    env = runner_env()
    return str(env.python) if env.ready else sys.executable


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
    ap.add_argument("--env", default="mxnet", help="framework whose environment is built cold (default mxnet)")
    ap.add_argument("--env-backend", default="auto", help="auto, venv or conda (as run_all.py)")
    ap.add_argument("--pip-cache", action="store_true", help="let pip use its cache for the cold build")
    ap.add_argument("--frameworks", default="", help="limit the report runs (run_all.py --frameworks)")
    ap.add_argument("--workloads", default="", help="limit the report runs (run_all.py --workloads)")
    ap.add_argument("--skip-build", action="store_true", help="skip the cold environment build")
    ap.add_argument("--skip-report", action="store_true", help="skip the three report runs")
    ap.add_argument("--keep", default="", help="keep the output folders here (default: temporary, removed)")
    a = ap.parse_args(argv)

    py = python()
    root = Path(a.keep or tempfile.mkdtemp(prefix="frameval-bench-pipeline-"))
    root.mkdir(parents=True, exist_ok=True)
    m = machine_info()
    print(f"bench/pipeline.py: {m['cores']} cores, {m['cpu']}, {m['memory_gb']} GB; python {py}", flush=True)
    rows = []

    if not a.skip_build:
        cache = root / "cold-cache"
        env = dict(os.environ, FRAMEVAL_CACHE_DIR=str(cache))
        if not a.pip_cache:
            env["PIP_NO_CACHE_DIR"] = "1"
        print(f"cold build of the {a.env} environment into {cache} ...", flush=True)
        s_env, p = timed([py, "-c", COLD_BUILD, a.env, a.env_backend], env, "cold build", root / "cold-build.log")
        print(p.stdout.rstrip(), flush=True)
        rows.append((f"cold build of envs/{a.env}.yml" + ("" if a.pip_cache else " (pip cache off)"), s_env,
                     "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"))
        s_data, p = timed([py, "-c", PREPARE_DATA], env, "data caches", root / "cold-data.log")
        rows.append(("data caches prepared in the cold cache", s_data,
                     "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"))
        if not a.keep:
            shutil.rmtree(cache, ignore_errors=True)

    if not a.skip_report:
        out = root / "report"
        base = [py, str(REPO / "run_all.py"), "--out", str(out)]
        if a.frameworks:
            base += ["--frameworks", a.frameworks]
        if a.workloads:
            base += ["--workloads", a.workloads]
        shown = "python3 run_all.py --out <tmp>" + (f" --frameworks {a.frameworks}" if a.frameworks else "") + \
            (f" --workloads {a.workloads}" if a.workloads else "")
        for label, extra in (("default quick report", []), ("unchanged rerun", []),
                             ("rerun after -p lstm.lr=0.002", ["-p", "lstm.lr=0.002"])):
            print(f"{label}: {shown} {' '.join(extra)} ...", flush=True)
            secs, p = timed(base + extra, None, label, root / f"{label.split()[0]}-{len(rows)}.log")
            summary = runs_summary(p.stdout)
            rows.append((label, secs, summary + ("" if p.returncode == 0 else f"; exit {p.returncode}")))
            print(f"  {secs:.1f} s: {summary}", flush=True)

    print()
    print(f"pipeline times on {m['cores']} cores ({m['cpu']}):")
    for label, secs, what in rows:
        print(f"  {label:<46} {secs:8.1f} s   {what}")
    print("  (an unchanged rerun that executes a run says why: `changed: frameval` means frameval/nb/*.py "
          "changed between the runs)")
    if a.keep:
        print(f"folders kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
