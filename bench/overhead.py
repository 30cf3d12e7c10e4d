#!/usr/bin/env python3
"""The harness's own cost: the same training code run (A) as a plain Python
script and (B) through the full frameval path (papermill, Jupyter kernel,
recorder), alternating A B A B ...

    python3 run_all.py bench overhead                 (or: python3 bench/overhead.py)
    python3 run_all.py bench overhead --pairs 7 --epochs 3 --samples 256

It re-executes itself in the runner environment (built first if needed), as
run_all.py does; the framework environment is built if missing. Default
workload: PyTorch DCGAN in eager mode, 3 epochs x 256 samples, batch 64, so
that an epoch takes over a second, 5 pairs.

(A) is the notebook itself: its code cells, in order, with the parameters
injected after the parameters cell as papermill does, executed by the
framework environment's python as one script. Only the recorder is swapped
for a plain stand-in (perf_counter around each epoch, no files), so the model,
the step and the loop are literally the same code. (B) is
`frameval.execute.execute` on a `frameval.plan.build_plan` Run, exactly what
the pipeline runs (papermill imported once per invocation, outside the runs).

Printed, each with the 1-minute load average (os.getloadavg) beside it:
- the steady-epoch ratio B / A: median over pairs and fastest / fastest
  (target <= 1.02);
- the fixed per-run cost beyond the framework import: wall time minus the
  epochs' training time minus the import, for B and for A; the harness's own
  part is B's minus A's (target <= 0.25 s, issue #50; 2.7 s before papermill ran in a
  forked child with immediate kernel shutdown);
- where B's time outside the cells goes (papermill's own timestamps);
- the recorder's own cost: time inside the timed region of an empty epoch,
  the bookkeeping per epoch (result.partial.json written atomically), the
  memory probes (no sampling thread: getrusage and /proc), and whether any
  thread is started.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from frameval.bootstrap import bootstrap_script  # standard library only
    bootstrap_script(__file__)  # returns inside the runner environment

from frameval import data, envs, execute, notebook as nbfile  # noqa: E402
from frameval.files import read_json  # noqa: E402
from frameval.result import load as load_result  # noqa: E402
from frameval.plan import build_plan  # noqa: E402

# The harness's own fixed cost per run (B - A) may be at most this (issue #50).
HARNESS_TARGET_S = 0.25


def load() -> float:
    return os.getloadavg()[0]


def span(values) -> str:
    """The load averages seen over a measurement, as "load 1.2-3.4"."""
    lo, hi = min(values), max(values)
    return f"load {lo:.1f}" if abs(hi - lo) < 0.05 else f"load {lo:.1f}-{hi:.1f}"


# The plain stand-in for nb.Recorder in (A): same thread pinning (before the
# framework import), same clock (perf_counter, device sync before each read),
# nothing else. The other methods of the real Recorder the notebook calls are
# no-ops; a name the real Recorder lacks raises, as it would in (B).
# The figures reach this process through plain.json, written by write(), which
# the notebook reaches through its last line, rec.finish(): finish must stay a
# real method here (when it fell to the no-op catch-all, nothing was written).
PRELUDE = textwrap.dedent('''
    import json as _json, os as _os, time as _time
    from pathlib import Path as _Path
    import frameval.nb as _nb
    from frameval.nb.record import THREAD_VARS as _THREAD_VARS, Recorder as _RealRecorder

    class _PlainEpoch(dict):
        def update(self, **kw):
            super().update(kw)
            return self

        def timed(self, batches):  # a plain loop times whole epochs only: the windows are frameval's cost
            return batches

    class _PlainTimer:
        def __init__(self, rec, samples):
            self.rec, self.samples = rec, samples
        def __enter__(self):
            self.ep = _PlainEpoch(epoch=len(self.rec.epochs) + 1, samples=self.samples)
            if self.rec.sync:
                self.rec.sync()
            self.t0 = _time.perf_counter()
            return self.ep
        def __exit__(self, et, e, tb):
            if self.rec.sync:
                self.rec.sync()
            secs = _time.perf_counter() - self.t0
            if et is None:
                self.ep["seconds"] = secs
                self.rec.epochs.append(self.ep)
            return False

    class PlainRecorder:
        def __init__(self, framework, workload, params, out_dir="", threads=None, chdir=True):
            self.t_created = _time.perf_counter()
            # what nb.serve reads (it returns at once where the parameters say serve=False)
            self.framework, self.workload, self.params = framework, workload, dict(params)
            self.device = params.get("device", "cpu")
            self.threads = int(threads or params.get("threads") or _os.cpu_count() or 1)
            for v in _THREAD_VARS:
                _os.environ[v] = str(self.threads)
            self.out = _Path(out_dir or ".")
            self.out.mkdir(parents=True, exist_ok=True)
            self.result = {"notes": [], "settings": {}}
            self.epochs, self.sync, self.import_s = [], None, None
        def after_import(self, version, sync=None, **kw):
            self.import_s = _time.perf_counter() - self.t_created
            self.sync = sync
        def epoch(self, samples=None):
            return _PlainTimer(self, samples)
        def write(self, status="ok"):
            p = self.out / "plain.json"
            p.write_text(_json.dumps({"import_s": self.import_s, "status": status,
                                      "epochs": [e["seconds"] for e in self.epochs]}))
            return p
        def finish(self):  # the notebooks' last line; returns nothing, as the real one
            print(self.write())
        def fail(self, exc):
            return self.write(status="failed")
        def work_file(self, name):  # the LSTM notebooks save their model there
            (self.out / "work").mkdir(exist_ok=True)
            return self.out / "work" / name
        def summary(self):
            return ""
        def set_amp(self, amp):  # the AMP object the notebook uses (nb/amp.py), returned as the real one does
            return amp
        def check_done(self, check, key="check"):
            pass
        def __getattr__(self, name):  # set_data, settings, set_param_counts, set, note, workaround ...
            if name.startswith("_") or not callable(getattr(_RealRecorder, name, None)):
                raise AttributeError(f"PlainRecorder: the real Recorder has no method {name!r} either")
            return lambda *a, **k: None

    _nb.Recorder = PlainRecorder
''')


def plain_script(notebook: Path, params: dict) -> str:
    """The notebook's code cells as one script, parameters injected after the
    parameters cell (what papermill does)."""
    nb = nbfile.read(notebook)
    parts = [PRELUDE]
    for cell in nbfile.code_cells(nb):
        parts.append(nbfile.source(cell))
        if "parameters" in nbfile.tags(cell):
            parts.append("\n".join(f"{k} = {v!r}" for k, v in params.items()))
    return "\n\n".join(parts) + "\n"


def steady(secs):
    return statistics.median(secs[1:]) if len(secs) > 1 else None


def run_plain(env, run, d: Path) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    script = d / "plain.py"
    script.write_text(plain_script(run.notebook, dict(run.params, out_dir=str(d))))
    # the kernel's own environment variables (kernel.json), so A and B differ only in the harness
    kernel = env.kernel or envs.kernel_name(run.framework, run.device)
    try:
        kenv = read_json(envs.kernels.JUPYTER_DIR / "kernels" / kernel / "kernel.json")["env"]
    except (OSError, ValueError, KeyError):
        kenv = {**envs.kernel_env(), **envs.framework_kernel_env(run.framework)}
    penv = dict(os.environ, **kenv)
    l0 = load()
    t0 = time.perf_counter()
    p = subprocess.run([str(env.python), str(script)], cwd=d, env=penv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"plain script failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    if not (d / "plain.json").exists():  # the stand-in's write() was never reached
        raise SystemExit(f"plain script ran but wrote no plain.json: the notebook's last cell no longer reaches "
                         f"PlainRecorder.write (see PRELUDE in bench/overhead.py); script {script}")
    r = read_json(d / "plain.json")
    return {"wall": wall, "import": r["import_s"], "epochs": r["epochs"], "load": (l0, load())}


def run_frameval(env, run, d: Path) -> dict:
    parts = execute.key_parts(run, env.key_text)
    l0 = load()
    t_launch = time.time()
    out = execute.execute(run, d, env.kernel or envs.kernel_name(run.framework, run.device), parts)
    t_exit = time.time()
    r = load_result(d / "result.json")
    if out.status != "ok":
        raise SystemExit(f"frameval run failed: {out.error}\nsee {d}")
    return {"wall": out.seconds, "import": r["import_s"], "epochs": [e["seconds"] for e in r["epochs"]],
            "timeline": timeline(d / "output.ipynb", t_launch, t_exit), "load": (l0, load())}


def timeline(output_nb: Path, t_launch: float, t_exit: float) -> dict:
    """Where B's time outside the cells goes, from papermill's own timestamps
    (UTC, in the executed notebook's metadata)."""
    from datetime import datetime, timezone

    def ts(s):
        return datetime.fromisoformat(s).replace(tzinfo=timezone.utc).timestamp()
    try:
        nb = read_json(output_nb)
        meta = nb["metadata"]["papermill"]
        cells = [c["metadata"]["papermill"] for c in nb["cells"] if c["metadata"].get("papermill", {}).get("start_time")]
        first = ts(cells[0]["start_time"])
        last_end = ts(cells[-1]["end_time"])
        start, end = ts(meta["start_time"]), ts(meta["end_time"])
        return {"papermill_start": start - t_launch,   # fork + reading and parameterising the notebook
                "kernel_start": first - start,           # kernel launch until the first cell runs
                "cells": sum(c["duration"] for c in cells),
                "between_cells": (last_end - first) - sum(c["duration"] for c in cells),
                "kernel_stop": end - last_end,           # kernel shutdown (immediate: SIGKILL)
                "save_exit": t_exit - end}               # writing output.ipynb, the child's exit
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}


def fixed_cost(r: dict) -> float:
    return r["wall"] - sum(r["epochs"]) - r["import"]


RECORDER_COST = textwrap.dedent('''
    import json, statistics, sys, tempfile, threading, time
    from frameval.nb import measure
    from frameval.nb.record import Recorder
    n = int(sys.argv[1])
    threads0 = threading.active_count()
    rec = Recorder("torch", "lenet", {"mode": "eager", "device": "cpu"}, out_dir=tempfile.mkdtemp(), chdir=False)
    rec.after_import("none")
    inside, outside = [], []
    for i in range(n):
        t0 = time.perf_counter()
        with rec.epoch(samples=1024) as ep:
            pass
        ep.update(train_loss=0.5, train_acc=0.9, test_loss=0.4, test_acc=0.91)
        outside.append(time.perf_counter() - t0 - ep["seconds"])
        inside.append(ep["seconds"])
    def per_call(f, k=2000):
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        return (time.perf_counter() - t0) / k
    t0 = time.perf_counter(); rec.write(); write_s = time.perf_counter() - t0
    print(json.dumps({"inside_s": statistics.median(inside), "inside_max_s": max(inside),
                      "bookkeeping_s": statistics.median(outside), "bookkeeping_max_s": max(outside),
                      "peak_rss_call_s": per_call(measure.peak_rss_mb), "rss_call_s": per_call(measure.rss_mb),
                      "write_s": write_s, "n": n, "threads_before": threads0, "threads_after": threading.active_count()}))
''')


def recorder_cost(env, n=30) -> dict:
    p = subprocess.run([str(env.python), "-c", RECORDER_COST, str(n)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    if p.returncode != 0:
        return {"error": p.stderr[-1500:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", default="torch")
    ap.add_argument("--workload", default="dcgan")
    ap.add_argument("--mode", default="eager")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3, help="epochs per run (the first is the warm-up)")
    ap.add_argument("--samples", type=int, default=256, help="max_train_samples")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--env-backend", default="auto", help="auto, venv or conda (as run_all.py)")
    ap.add_argument("--keep", default="", help="keep the run folders here (default: a temporary folder, removed)")
    a = ap.parse_args(argv)
    if a.epochs < 2:
        ap.error("--epochs must be 2 or more (the first is the warm-up)")
    try:
        import papermill  # noqa: F401
    except ImportError:
        sys.exit("bench/overhead.py runs in the runner environment (papermill missing); see the docstring")

    env = envs.ensure_framework(a.framework, backend=a.env_backend)
    data.prepare_all()  # the notebooks read the prepared caches, which a fresh clone does not have yet
    run = build_plan(a.framework, a.workload, mode=a.mode, overrides={None: {
        "epochs": str(a.epochs), "max_train_samples": str(a.samples), "batch_size": str(a.batch_size)}})[0]
    root = Path(a.keep or tempfile.mkdtemp(prefix="frameval-overhead-"))
    l0 = load()
    t0 = time.perf_counter()
    execute.load_papermill()
    pm_import = time.perf_counter() - t0
    print(f"bench/overhead.py: {run.name}, {a.epochs} epochs x {a.samples} samples, batch {a.batch_size}; "
          f"{os.cpu_count()} cores; {a.pairs} pairs A (plain script) / B (frameval); folders in {root}", flush=True)
    print(f"papermill imported once for the invocation in {pm_import:.2f} s ({span([l0, load()])})", flush=True)
    pairs = []
    for k in range(1, a.pairs + 1):
        A = run_plain(env, run, root / f"A{k}")
        B = run_frameval(env, run, root / f"B{k}")
        pairs.append((A, B))
        print(f"  pair {k}: A steady {steady(A['epochs']):.3f} s (first {A['epochs'][0]:.2f}, wall {A['wall']:.1f}, "
              f"import {A['import']:.1f}, fixed {fixed_cost(A):.2f})   B steady {steady(B['epochs']):.3f} s "
              f"(first {B['epochs'][0]:.2f}, wall {B['wall']:.1f}, import {B['import']:.1f}, fixed "
              f"{fixed_cost(B):.2f})   B/A {steady(B['epochs']) / steady(A['epochs']):.3f}   "
              f"({span([*A['load'], *B['load']])})", flush=True)

    loads = [x for A, B in pairs for x in (*A["load"], *B["load"])]
    where = span(loads)
    ratios = [steady(B["epochs"]) / steady(A["epochs"]) for A, B in pairs]
    fastest = min(s for _, B in pairs for s in B["epochs"][1:]) / min(s for A, _ in pairs for s in A["epochs"][1:])
    cost_a = [fixed_cost(A) for A, _ in pairs]
    cost_b = [fixed_cost(B) for _, B in pairs]
    extra = [b - c for b, c in zip(cost_b, cost_a)]
    ratio, harness = statistics.median(ratios), statistics.median(extra)
    shortest = min(s for A, _ in pairs for s in A["epochs"][1:])
    print()
    print(f"steady epoch time B/A, median of {len(ratios)} pairs: {ratio:.3f}   (per pair: "
          f"{', '.join(f'{r:.3f}' for r in ratios)})   target <= 1.02: {'met' if ratio <= 1.02 else 'MISSED'}"
          f"   ({where})")
    print(f"steady epoch time, fastest B / fastest A (less sensitive to a loaded machine): {fastest:.3f}"
          f"   target <= 1.02: {'met' if fastest <= 1.02 else 'MISSED'}   ({where})")
    if shortest < 1.0:
        print(f"  note: the shortest steady epoch was {shortest:.2f} s; the ratios need epochs of 1 s or more "
              "(raise --samples)")
    print(f"fixed per-run cost beyond the import (wall - training - import), median: "
          f"A {statistics.median(cost_a):.2f} s, B {statistics.median(cost_b):.2f} s   ({where})")
    print(f"harness's own fixed cost per run (B - A), median: {harness:.2f} s   (per pair: "
          f"{', '.join(f'{x:.2f}' for x in extra)}; fastest B - fastest A: {min(cost_b) - min(cost_a):.2f} s)   "
          f"target <= {HARNESS_TARGET_S} s: {'met' if harness <= HARNESS_TARGET_S else 'MISSED'}   ({where})")
    tl = [B["timeline"] for _, B in pairs if B.get("timeline")]
    if tl:
        print("B's time outside the notebook's cells, median: " + ", ".join(
            f"{k.replace('_', ' ')} {statistics.median(t[k] for t in tl):.2f} s" for k in tl[0] if k != "cells")
            + f"   ({where})")
    print(f"import (recorder created -> after_import), median: A {statistics.median(A['import'] for A, _ in pairs):.2f} s, "
          f"B {statistics.median(B['import'] for _, B in pairs):.2f} s   ({where})")

    l1 = load()
    rc = recorder_cost(env)
    print()
    if "error" in rc:
        print(f"recorder cost: could not measure: {rc['error']}")
    else:
        where = span([l1, load()])
        sa = statistics.median(steady(A["epochs"]) for A, _ in pairs)
        print(f"recorder's own cost (framework env python, empty epochs; {where}):")
        print(f"  inside the timed region per epoch: {rc['inside_s'] * 1e6:.1f} us median "
              f"(max {rc['inside_max_s'] * 1e6:.1f} us)  = {rc['inside_s'] / sa * 100:.4f} % of A's steady epoch")
        print(f"  bookkeeping per epoch outside it (Epoch record, result.partial.json written atomically "
              f"with fsync): {rc['bookkeeping_s'] * 1e3:.2f} ms median (max {rc['bookkeeping_max_s'] * 1e3:.2f} ms)")
        print(f"  host memory: no sampling thread; peak_rss_mb() (getrusage) {rc['peak_rss_call_s'] * 1e6:.1f} us "
              f"a call, rss_mb() (/proc/self/statm) {rc['rss_call_s'] * 1e6:.1f} us a call")
        print(f"  threads in the process: {rc['threads_before']} before the recorder, {rc['threads_after']} after "
              f"{rc['n']} epochs (CPU run: no NVML sampler)")
        print(f"  final write (summary + result.json): {rc['write_s'] * 1e3:.2f} ms")
    if not a.keep:
        import shutil
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
