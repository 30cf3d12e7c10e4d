#!/usr/bin/env python3
"""The between-run noise of this machine (#67): the same runs made again in
fresh kernels, their samples/s compared pair by pair, and the log SD per run
kept for every later report made here (frameval/noise.py).

    python3 run_all.py bench noise                      (the default matrix twice: 21 pairs, about 13 minutes)
    python3 run_all.py bench noise --frameworks torch,jax --workloads lenet --rounds 3
    python3 run_all.py bench noise --threads 1

Each round is `run_all.py --force` into its own folder, one after the other,
so every run executes in a fresh kernel, as a user's two reports would. A run
in round k and the same run in round k+1 make one pair: log(samples/s ratio).
The pairs are added to this machine's record for the thread count (a later
command adds more; so does every command run with --repeats 2 or more), and
the record's SD per run, sqrt(sum d² / 2n), is printed with its chi-square
95% interval and the load average before each round. Run it on an idle
machine: a figure taken beside other work is that work's noise, not the
machine's. Reports made here afterwards use it (and say so) instead of the
spread imported from another machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from frameval.bootstrap import bootstrap_script  # standard library only
    bootstrap_script(__file__)  # returns inside the runner environment

from frameval import noise  # noqa: E402


def load() -> str:
    """The 1-minute load average."""
    return f"{os.getloadavg()[0]:.2f}"


def rates(folder: Path) -> dict:
    """{run folder: samples/s} of the ok runs under <folder>/runs."""
    out = {}
    for f in sorted((folder / "runs").glob("*/*/result.json")):
        r = json.loads(f.read_text())
        if r.get("status") == "ok" and r.get("samples_per_s"):
            out[f.parent.relative_to(folder / "runs").as_posix()] = r["samples_per_s"]
    return out


def one_round(out: Path, passthrough: list, k: int) -> dict:
    before = load()
    cmd = [sys.executable, str(REPO / "run_all.py"), "--force", "--out", str(out), *passthrough]
    p = subprocess.run(cmd, capture_output=True, text=True)
    got = rates(out)
    print(f"round {k}: {len(got)} runs ok (exit {p.returncode}; load {before} before it, {load()} after)", flush=True)
    if p.returncode not in (0, 1) or not got:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="fresh runs of each planned run (pairs: rounds - 1 each)")
    ap.add_argument("--frameworks", default="", help="as run_all.py (default: its default matrix)")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads every run is asked for (0: all cores)")
    ap.add_argument("--keep", default="", metavar="DIR", help="keep the rounds' folders under DIR")
    ap.add_argument("-p", dest="params", action="append", default=[], help="a parameter, as run_all.py -p")
    a = ap.parse_args(argv)
    if a.rounds < 2:
        print("bench noise: --rounds must be 2 or more (a pair needs two runs)", file=sys.stderr)
        return 2
    passthrough = ([f"--frameworks={a.frameworks}"] if a.frameworks else []) + (
        [f"--workloads={a.workloads}"] if a.workloads else []) + (
        [f"--threads={a.threads}"] if a.threads else []) + [x for p in a.params for x in ("-p", p)]
    threads = a.threads or noise.threads_all()
    base = Path(a.keep or tempfile.mkdtemp(prefix="frameval-noise-"))
    rounds = [one_round(base / f"round-{k}", passthrough, k) for k in range(1, a.rounds + 1)]
    pairs = [(run, noise.pair_ratio(x[run], y[run])) for x, y in zip(rounds, rounds[1:]) for run in x if run in y]
    if not pairs:
        print("bench noise: no run finished in two rounds; nothing recorded", file=sys.stderr)
        return 1
    m = noise.add_pairs(pairs, threads, "bench noise", load=os.getloadavg()[0])
    for run, d in pairs:
        print(f"  {run}: log ratio {d:+.4f}")
    fresh = noise.spread([d for _, d in pairs])
    print(f"this invocation: {fresh['n']} pairs, log SD per run {fresh['sd']:.4f} "
          f"(95% interval {fresh['lo']:.4f}-{fresh['hi']:.4f}); load {load()}")
    print(f"this machine's record ({threads} threads, {noise.cache_path(threads)}): {len(m['pairs'])} "
          f"pairs, log SD per run {m['sd']:.4f} (95% interval {m['lo']:.4f}-{m['hi']:.4f}); the imported figure: "
          f"{noise_imported():.4f}" + ("" if len(m["pairs"]) >= noise.MIN_PAIRS else
                                         f"; reports use it from {noise.MIN_PAIRS} pairs on"))
    return 0


def noise_imported() -> float:
    from frameval.speed import BETWEEN_RUN_SD
    return BETWEEN_RUN_SD


if __name__ == "__main__":
    sys.exit(main())
